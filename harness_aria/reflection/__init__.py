"""Reflection settings (`off`, `on`), registered by name."""

from harness_aria.reflection.base import Reflector, Skill
from harness_aria.reflection.meeting import MeetingReflection
from harness_aria.reflection.off import NoReflection

__all__ = ["MeetingReflection", "NoReflection", "Reflector", "Skill"]
