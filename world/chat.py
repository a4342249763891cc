"""The one chat-line rule, shared with the Node bots through `chat_rules.json`.

A line is first normalised (every run of whitespace, newlines included, becomes one
space; both ends are trimmed) and then checked: not empty, at most `max_length`
UTF-16 code units (how Minecraft and JavaScript count), no forbidden character, not
starting with `/`. `bots/programs.js` reads the same file and applies the same steps,
so a line accepted here is never refused by a bot.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources


class ChatRuleError(ValueError):
    """A chat line that may not be said; the message says why."""


@dataclass(frozen=True)
class ChatRules:
    """The rules of `chat_rules.json`, compiled."""

    max_length: int
    whitespace: re.Pattern[str]
    forbidden: re.Pattern[str]
    forbidden_start: str


@cache
def chat_rules() -> ChatRules:
    """The shared rules (read once from the package's `chat_rules.json`)."""
    raw = json.loads(resources.files("world").joinpath("chat_rules.json").read_text("utf-8"))
    return ChatRules(
        max_length=int(raw["max_length"]),
        whitespace=re.compile(raw["whitespace"]),
        forbidden=re.compile(raw["forbidden"]),
        forbidden_start=str(raw["forbidden_start"]),
    )


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units (a character outside the BMP counts twice)."""
    return sum(2 if ord(c) > 0xFFFF else 1 for c in text)


def normalise_chat(text: str) -> str:
    """Whitespace runs (newlines too) become one space; the ends are trimmed."""
    return chat_rules().whitespace.sub(" ", text).strip(" ")


def check_chat(text: str) -> str:
    """Normalise a chat line and check it against the shared rules.

    Args:
        text: The line as an agent wrote it.

    Returns:
        The normalised line (what is said and logged).

    Raises:
        ChatRuleError: naming the rule the line breaks.
    """
    rules = chat_rules()
    line = normalise_chat(text)
    if not line:
        raise ChatRuleError("chat line is empty (after whitespace is normalised)")
    n = utf16_length(line)
    if n > rules.max_length:
        raise ChatRuleError(
            f"chat line is {n} characters (UTF-16 units) long; at most {rules.max_length}"
        )
    bad = rules.forbidden.search(line)
    if bad is not None:
        raise ChatRuleError(
            f"chat line contains a forbidden character U+{ord(bad.group()):04X} at {bad.start()}"
            " (no control characters, no section sign)"
        )
    if line.startswith(rules.forbidden_start):
        raise ChatRuleError(
            f"chat line may not start with {rules.forbidden_start!r} (it would run a command)"
        )
    return line
