"""Human atom labels: the documented CSV/JSONL format, its reader and how labels find games.

One label per row/line with the fields `annotator, game, atom, step, actor, evidence`.
`game` is the game id (from `summary.json`/`game_start`; what the viewer writes). A run
folder's name, or the tail of its path (`armA/seed1-try1`), is accepted only when it names
exactly one analysed game: a name shared by several (the same `seed1-try1` in two arms) is
refused with the candidates listed, never given to one of them. `step` may be empty;
`evidence` is free text. A file may hold several annotators.

A row whose `atom` is `none` (`step` and `actor` empty) says the annotator read that
game and found nothing: the game counts in agreement with every atom absent, instead of
dropping out as an unread game would. `none` and a label for the same annotator and game
contradict each other and are refused.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from annotation.deception.codebook import codebook

FIELDS = ("annotator", "game", "atom", "step", "actor", "evidence")
"""The columns of a label file, in order."""
NOTHING_FOUND = "none"
"""The `atom` of a row that marks a game as read with nothing found."""


class HumanLabel(BaseModel):
    """One human-labelled atom occurrence, or a game read with nothing found."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    annotator: str
    """Who labelled it (e.g. `h1`)."""
    game: str
    """The game id (or a run folder name that names exactly one game)."""
    atom: str
    """The paper's letter, or `none` for a game read with nothing found."""
    step: int | None = None
    """The step, when given."""
    actor: str = ""
    """The impostor seat (empty for a `none` row)."""
    evidence: str = ""
    """What in the log shows it."""

    @field_validator("atom", mode="before")
    @classmethod
    def _known(cls, v: object) -> str:
        text = str(v if v is not None else "").strip()
        if text.lower() == NOTHING_FOUND:
            return NOTHING_FOUND
        text = text.upper()
        if text not in codebook().letters:
            raise ValueError(
                f"unknown atom letter {text!r}; use one of {''.join(codebook().letters)}, or "
                f"{NOTHING_FOUND!r} for a game read with nothing found"
            )
        return text

    @field_validator("step", mode="before")
    @classmethod
    def _step(cls, v: object) -> object:
        return None if v in ("", None) else v

    @field_validator("annotator", "game")
    @classmethod
    def _nonempty(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("must not be empty")
        return v

    @field_validator("actor", mode="before")
    @classmethod
    def _seat(cls, v: object) -> str:
        return str(v if v is not None else "").strip().lower()

    @model_validator(mode="after")
    def _actor_unless_nothing(self) -> HumanLabel:
        if not self.nothing_found and not self.actor:
            raise ValueError(f"actor must not be empty (only a {NOTHING_FOUND!r} row has none)")
        return self

    @property
    def nothing_found(self) -> bool:
        """This row marks its game as read with nothing found."""
        return self.atom == NOTHING_FOUND


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
            where = ".".join(str(x) for x in err["loc"]) or "row"
            raise ValueError(f"{path}: line {line}: field {where!r}: {err['msg']}") from exc
    return out


def resolve_games(keys: set[str], games: pd.DataFrame) -> tuple[dict[str, str], list[str]]:
    """Map each label's `game` to an analysed game id.

    A key is a game id; else the name of a run folder, or the tail of its path, that
    matches exactly one analysed game.

    Args:
        keys: The `game` values of the labels.
        games: The analysed games (`game_id`, `folder`).

    Returns:
        key -> game id for the keys that name a game, and the keys that name none.

    Raises:
        ValueError: A key that matches several games (the candidates are listed).
    """
    ids = set(games["game_id"].astype(str))
    folders = [
        (str(gid), PurePosixPath(Path(str(f)).as_posix()))
        for gid, f in zip(games["game_id"], games["folder"], strict=True)
    ]
    mapping: dict[str, str] = {}
    unknown: list[str] = []
    for key in sorted(keys):
        if key in ids:
            mapping[key] = key
            continue
        tail = PurePosixPath(key.strip("/")).parts
        hits = [
            (gid, f)
            for gid, f in folders
            if tail and len(f.parts) >= len(tail) and f.parts[-len(tail) :] == tail
        ]
        if len(hits) == 1:
            mapping[key] = hits[0][0]
        elif hits:
            listed = "; ".join(f"{gid} ({f})" for gid, f in hits)
            raise ValueError(
                f"human labels: game {key!r} matches {len(hits)} games: {listed}. Key the "
                "labels by game id (summary.json), or by a longer path that names one run"
            )
        else:
            unknown.append(key)
    return mapping, unknown


@dataclass
class LabelSet:
    """Human labels matched to the analysed games."""

    counts: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Annotator -> per-game atom counts over the games that annotator read (games marked
    `none` are all-zero rows)."""
    nothing_found: dict[str, list[str]] = field(default_factory=dict)
    """Annotator -> games read with nothing found."""
    unmatched: list[str] = field(default_factory=list)
    """Label `game` values that name no analysed game (their labels are not used)."""


def label_counts(labels: list[HumanLabel], games: pd.DataFrame) -> LabelSet:
    """Per annotator, per-game atom counts over the games they read.

    Raises:
        ValueError: A game key matching several games, or a game both labelled and
            marked `none` by one annotator.
    """
    from annotation.stats import counts_table

    mapping, unknown = resolve_games({lab.game for lab in labels}, games)
    out = LabelSet(unmatched=unknown)
    for who in sorted({lab.annotator for lab in labels}):
        mine = [lab for lab in labels if lab.annotator == who and lab.game in mapping]
        read = sorted({mapping[lab.game] for lab in mine})
        empty = sorted({mapping[lab.game] for lab in mine if lab.nothing_found})
        found = [
            {"game_id": mapping[lab.game], "atom": lab.atom}
            for lab in mine
            if not lab.nothing_found
        ]
        both = sorted(set(empty) & {r["game_id"] for r in found})
        if both:
            raise ValueError(
                f"human labels: annotator {who!r} marks game(s) {', '.join(both)} both "
                f"{NOTHING_FOUND!r} and with atoms"
            )
        df = pd.DataFrame(found, columns=["game_id", "atom"])
        out.counts[who] = counts_table(df, read)
        out.nothing_found[who] = empty
    return out
