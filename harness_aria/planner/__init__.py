"""Planners (`reactive`, `hierarchical`), registered by name."""

from harness_aria.planner.base import Planner
from harness_aria.planner.hierarchical import HierarchicalPlanner
from harness_aria.planner.reactive import ReactivePlanner

__all__ = ["HierarchicalPlanner", "Planner", "ReactivePlanner"]
