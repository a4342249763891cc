"""Reflection settings (`off`, `on`), registered by name (`register_reflector`)."""

from harness_aria.reflection.base import REFLECTORS, Reflector, Skill, register_reflector
from harness_aria.reflection.meeting import MeetingReflection
from harness_aria.reflection.off import NoReflection

__all__ = [
    "REFLECTORS",
    "MeetingReflection",
    "NoReflection",
    "Reflector",
    "Skill",
    "register_reflector",
]
