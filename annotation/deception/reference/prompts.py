"""The reference judge's prompts: one system text for both passes, and per pass a user
text of the codebook table for its letters, the disambiguation and tightening rules of
all 23 atoms, the pass's own rules, the roles and the log in a code fence.

The texts are `annotation/deception/prompts/reference/*.txt`, in our words, carrying the
facts of the authors' codebook and prompt rules with the paper's letters.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from annotation.deception.reference.labels import NONVERBAL, VERBAL
from annotation.deception.reference.transcript import TRANSCRIPT_VERSION, TranscriptLine, text_of

Pass = Literal["nonverbal", "verbal"]
PROMPT_DIR = Path(__file__).resolve().parents[1] / "prompts" / "reference"
TEMPLATES = ("system", "codebook", "disambiguation", "tightening", "nonverbal", "verbal", "user")
PASS_LETTERS: dict[Pass, frozenset[str]] = {"nonverbal": NONVERBAL, "verbal": VERBAL}
TITLES: dict[Pass, str] = {
    "nonverbal": "## Codebook: the non-verbal atoms (A to K)",
    "verbal": "## Codebook: the verbal atoms (L to W)",
}


def template(name: str) -> str:
    """One prompt file's text (without its final newline)."""
    return (PROMPT_DIR / f"{name}.txt").read_text(encoding="utf-8").rstrip("\n")


def codebook_rows(letters: frozenset[str]) -> str:
    """The codebook table with the rows of these letters only."""
    rows = template("codebook").splitlines()
    head, body = rows[:2], rows[2:]
    chosen = [r for r in body if r.split("|")[1].strip().strip("*") in letters]
    return "\n".join(head + chosen)


def prompt_sha256() -> str:
    """Hash of everything in the prompts but the game: every template and the
    transcript's version (part of the cache key)."""
    fixed = "\n".join([*(template(n) for n in TEMPLATES), f"transcript v{TRANSCRIPT_VERSION}"])
    return hashlib.sha256(fixed.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ReferencePrompt:
    """One pass's prompt for one game."""

    pass_: Pass
    system: str
    user: str
    lines: tuple[TranscriptLine, ...]
    """The transcript lines the pass reads (what a quote is checked against)."""
    prompt_sha256: str

    @property
    def log(self) -> str:
        """The log text the pass reads."""
        return text_of(self.lines)


def build_reference_prompt(pass_: Pass, lines: list[TranscriptLine], roles: str) -> ReferencePrompt:
    """The system and user text of one pass.

    Args:
        pass_: `nonverbal` (pass 1) or `verbal` (pass 2).
        lines: The transcript lines the pass reads (the whole transcript, or its
            meeting chunks).
        roles: The roles object as JSON (`transcript.roles_json`).
    """
    user = (
        template("user")
        .replace("{title}", TITLES[pass_])
        .replace("{table}", codebook_rows(PASS_LETTERS[pass_]))
        .replace("{disambiguation}", template("disambiguation"))
        .replace("{tightening}", template("tightening"))
        .replace("{pass_rules}", template(pass_))
        .replace("{roles}", roles)
        .replace("{log}", text_of(lines))
    )
    return ReferencePrompt(
        pass_=pass_,
        system=template("system"),
        user=user,
        lines=tuple(lines),
        prompt_sha256=prompt_sha256(),
    )
