"""The atoms a hand label may name, from the project's deception codebook."""

from __future__ import annotations

import importlib
from typing import Any

LETTERS = tuple("ABCDEFGHIJKLMNOPQRSTUVW")
"""The 23 atoms' letters (the paper's letters)."""


def codebook() -> list[dict[str, Any]]:
    """Every atom as {letter, name, cluster, channel} (names when the codebook is there)."""
    try:
        mod = importlib.import_module("annotation.deception.codebook")
        book = mod.load_codebook()
    except (ImportError, AttributeError):
        return [{"letter": x, "name": "", "cluster": "", "channel": ""} for x in LETTERS]
    out = []
    for atom in book.atoms:
        channel = getattr(atom, "channel", None)
        if channel is None and hasattr(book, "channel"):
            channel = book.channel(atom.letter)
        out.append(
            {
                "letter": atom.letter,
                "name": atom.name,
                "cluster": atom.cluster,
                "channel": channel or "",
            }
        )
    return out


def atom_letters() -> list[str]:
    """The letters a label may use."""
    return [a["letter"] for a in codebook()]
