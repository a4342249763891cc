"""Human atom labels: the documented CSV/JSONL format and its reader.

One label per row/line with the fields `annotator, game, atom, step, actor, evidence`
(`game` is the game id from `summary.json`/`game_start`, or the run folder's name;
`step` may be empty; `evidence` is free text). A file may hold several annotators.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from annotation.codebook import codebook

FIELDS = ("annotator", "game", "atom", "step", "actor", "evidence")
"""The columns of a label file, in order."""


class HumanLabel(BaseModel):
    """One human-labelled atom occurrence."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    annotator: str
    """Who labelled it (e.g. `h1`)."""
    game: str
    """The game id (or run folder name)."""
    atom: str
    """The paper's letter."""
    step: int | None = None
    """The step, when given."""
    actor: str
    """The impostor seat."""
    evidence: str = ""
    """What in the log shows it."""

    @field_validator("atom")
    @classmethod
    def _known(cls, v: str) -> str:
        v = v.strip().upper()
        if v not in codebook().letters:
            raise ValueError(f"unknown atom letter {v!r}; use one of {''.join(codebook().letters)}")
        return v

    @field_validator("step", mode="before")
    @classmethod
    def _step(cls, v: object) -> object:
        return None if v in ("", None) else v

    @field_validator("annotator", "game", "actor")
    @classmethod
    def _nonempty(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("must not be empty")
        return v

    @field_validator("actor")
    @classmethod
    def _seat(cls, v: str) -> str:
        return v.lower()


def read_labels(path: Path) -> list[HumanLabel]:
    """Read a `.csv` (header row with the `FIELDS`) or `.jsonl` label file.

    Raises:
        ValueError: A missing column, or a bad row (naming the file, line and field).
    """
    rows: list[tuple[int, dict[str, object]]] = []
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [f for f in FIELDS if f not in (reader.fieldnames or []) and f != "evidence"]
            if missing:
                raise ValueError(
                    f"{path}: missing column(s) {', '.join(missing)}; the header must be "
                    f"{','.join(FIELDS)}"
                )
            rows = [(i + 2, dict(r)) for i, r in enumerate(reader)]
    elif path.suffix.lower() in {".jsonl", ".json"}:
        for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if text.strip():
                rows.append((i, json.loads(text)))
    else:
        raise ValueError(f"{path}: human labels must be a .csv or .jsonl file")
    out = []
    for line, row in rows:
        try:
            out.append(HumanLabel.model_validate(row))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise ValueError(f"{path}: line {line}: field {where!r}: {err['msg']}") from exc
    return out
