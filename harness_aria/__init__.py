"""ARIA, the ablatable agent harness (in progress)."""
