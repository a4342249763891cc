"""Planners (`reactive`, `hierarchical`), registered by name (`register_planner`)."""

from harness_aria.planner.base import PLANNERS, Planner, register_planner
from harness_aria.planner.hierarchical import HierarchicalPlanner
from harness_aria.planner.reactive import ReactivePlanner

__all__ = ["PLANNERS", "HierarchicalPlanner", "Planner", "ReactivePlanner", "register_planner"]
