"""Deception annotation, statistics and grounding audits (in progress)."""
