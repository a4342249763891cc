"""Memories: what an agent keeps between steps (`window` or `semantic`)."""

from harness_aria.memory.base import Memory
from harness_aria.memory.semantic import SemanticMemory
from harness_aria.memory.window import WindowMemory

MEMORIES: dict[str, type[WindowMemory] | type[SemanticMemory]] = {
    "window": WindowMemory,
    "semantic": SemanticMemory,
}

__all__ = ["MEMORIES", "Memory", "SemanticMemory", "WindowMemory"]
