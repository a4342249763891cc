"""The labels a judge emits, normalised to the paper's letters as the reference does.

The authors' judge accepts a codebook letter, one of the mnemonics its codebook was
developed with (e.g. `CAP`, `TUB`, `SPI`), or either with a numeric suffix (`A2` is
`A`); a label that is none of these maps to no atom and is dropped. Their codebook's
own letters are a permutation of the paper's; our prompts speak the paper's letters, so
a bare letter (with or without a suffix) is read as the paper's letter, and a mnemonic
is read through their codebook's letter to the paper's.
"""

from __future__ import annotations

import re

PAPER_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVW"
NONVERBAL = frozenset("ABCDEFGHIJK")
"""The paper's non-verbal letters (pass 1)."""
VERBAL = frozenset("LMNOPQRSTUVW")
"""The paper's verbal letters (pass 2)."""

CODEBOOK_TO_PAPER: dict[str, str] = dict(
    zip("ABCDEFGHIJKLMNOPQRSTUVW", "CDEFGAHIJBLMKNOPVTUQRSW", strict=True)
)
"""The authors' codebook letter -> the paper's letter (only N, O, P and W agree)."""

MNEMONICS: dict[str, str] = {
    "A-JS": "B",
    "ACS": "R",
    "AD": "R",
    "BEC": "L",
    "CAP": "B",
    "CaD": "R",
    "DAE": "L",
    "DTA": "K",
    "EA": "O",
    "FEA": "N",
    "FET": "N",
    "HCM": "S",
    "LCF": "L",
    "MWC": "V",
    "NoRep": "G",
    "PC": "R",
    "PGC": "O",
    "RE": "O",
    "RFMC": "K",
    "RT": "L",
    "SDA": "R",
    "SDT": "T",
    "SPI": "M",
    "STI": "T",
    "SaS": "L",
    "TUB": "T",
    "VCI": "W",
    "WBA": "K",
    "WF": "L",
}
"""The mnemonics the authors' judge accepts, each with its *codebook* letter (as their
alias table gives it; `CODEBOOK_TO_PAPER` turns it into the paper's). Their table's
letter-and-number entries (`A2`, `K4`, ...) are sub-patterns of their own lettering;
here a letter with a number is always the paper's letter it starts with."""

_SUFFIXED = re.compile(r"^([A-Za-z-]+?)([0-9]+)$")


def normalize_label(raw: object) -> str | None:
    """The paper letter a judge's label stands for, or None when it stands for none.

    Accepts a paper letter (any case), a mnemonic (as spelled in `MNEMONICS`), or either
    followed by a number (`L2` -> `L`, `TUB2` -> `Q`).
    """
    if raw is None:
        return None
    label = str(raw).strip()
    if not label:
        return None
    direct = _one(label)
    if direct is not None:
        return direct
    m = _SUFFIXED.match(label)
    return _one(m.group(1)) if m else None


def _one(label: str) -> str | None:
    if len(label) == 1 and label.upper() in PAPER_LETTERS:
        return label.upper()
    letter = MNEMONICS.get(label)
    return CODEBOOK_TO_PAPER[letter] if letter is not None else None
