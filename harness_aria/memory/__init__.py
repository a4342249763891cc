"""Memories: what an agent keeps between steps (`window` or `semantic`), registered by
name (`register_memory`)."""

from harness_aria.memory.base import MEMORIES, Memory, register_memory
from harness_aria.memory.semantic import SemanticMemory
from harness_aria.memory.window import WindowMemory

__all__ = ["MEMORIES", "Memory", "SemanticMemory", "WindowMemory", "register_memory"]
