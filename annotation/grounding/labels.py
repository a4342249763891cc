"""People's judgements of the grounding audit: claim labels and missed-claim counts.

A person reads an audited claim beside the utterance it came from and the evidence its
rule book used, and says whether the verdict is right (`verdict_ok`) and whether the
claim was extracted faithfully from the utterance (`extraction_ok`); for an utterance
as a whole, how many claims it makes that the extractor did not extract (`missed`).
From these, `annotation.report.claims_validity` computes, per rule book, the verdict
precision per verdict kind, the extraction precision and QUACK's extraction recall.

Labels live beside the study, never inside a game's record: one JSONL file per
annotator in `<STUDY>/labels/claims/` (`claim_labels_dir`; for a single run,
`<RUN>/labels/claims/`, under the `labels/` folder the viewer keeps hand labels in).
Each line is one of

```json
{"kind": "claim", "annotator": "ann1", "game": "<game_id>", "rules": "mineamongus",
 "claim": "1:red:2:4be1c0a9d2", "verdict": "false", "verdict_ok": true,
 "extraction_ok": null, "time": 1796112649.7}
{"kind": "utterance", "annotator": "ann1", "game": "<game_id>", "rules": "mineamongus",
 "utterance": "1:red:2", "extracted": 3, "missed": 1, "time": 1796112650.2}
```

A label is keyed by (annotator, game, rule book, claim or utterance id); the last line
of a key wins (a person changes their mind by labelling again; `null` withdraws a
judgement). A line that is not such an object is refused with its file and line.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from annotation.grounding.audit import Verdict
from annotation.grounding.claims import Claim
from annotation.grounding.rules import RULE_BOOKS

LABELS_FOLDER = "labels"
"""The folder beside a study's games (or inside a run) that holds hand labels."""
CLAIMS_FOLDER = "claims"
"""Its subfolder for claim labels (deception labels sit in `labels/` itself)."""
ANNOTATOR_PATTERN = r"^[A-Za-z0-9_.-]{1,40}$"
"""An annotator's name: it is also the file's name."""
CLAIM_ID_PATTERN = r"^\d+:[^:\s]+:\d+:[0-9a-f]{10}$"
"""`<meeting>:<speaker>:<utterance>:<hash>` (`claim_id`)."""
UTTERANCE_ID_PATTERN = r"^\d+:[^:\s]+:\d+$"
"""`<meeting>:<speaker>:<utterance>` (`utterance_id`)."""


class ClaimLabelError(ValueError):
    """A label line or a label the store refuses; the message names the file and line
    (or the field)."""


class _Label(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    annotator: str = Field(pattern=ANNOTATOR_PATTERN)
    """Who labelled (the file's name)."""
    game: str = Field(min_length=1)
    """The game's id (`game_start.game_id`, the `game` of the audited claim)."""
    rules: str
    """The rule book whose audit was labelled (`annotation.grounding.rules.RULE_BOOKS`)."""
    time: float
    """When it was saved (Unix seconds)."""

    @field_validator("rules")
    @classmethod
    def _known_book(cls, v: str) -> str:
        if v not in RULE_BOOKS:
            raise ValueError(f"{v!r} is not a rule book ({', '.join(RULE_BOOKS)})")
        return v


class ClaimLabel(_Label):
    """A person's judgement of one audited claim."""

    kind: Literal["claim"]
    claim: str = Field(pattern=CLAIM_ID_PATTERN)
    """The claim's id (`claim_id`)."""
    verdict: Verdict
    """The verdict the person judged (the audit's, as shown when labelled)."""
    verdict_ok: bool | None = None
    """The verdict is right (True), wrong (False), or not judged (None)."""
    extraction_ok: bool | None = None
    """The claim says what the utterance says (True), misreads it (False), or not judged."""

    @property
    def item(self) -> str:
        """What the label is about: the claim id."""
        return self.claim

    @property
    def utterance(self) -> str:
        """The id of the utterance the claim came from."""
        return self.claim.rsplit(":", 1)[0]


class UtteranceLabel(_Label):
    """A person's count of the claims an utterance makes that the extractor missed."""

    kind: Literal["utterance"]
    utterance: str = Field(pattern=UTTERANCE_ID_PATTERN)
    """The utterance's id (`utterance_id`)."""
    extracted: int = Field(ge=0)
    """How many claims the audit extracted from it (as shown when labelled)."""
    missed: int | None = Field(default=None, ge=0)
    """Claims it makes that none of the extracted ones states; None: not judged."""

    @property
    def item(self) -> str:
        """What the label is about: the utterance id."""
        return self.utterance


Label = Annotated[ClaimLabel | UtteranceLabel, Field(discriminator="kind")]
"""One line of a label file."""
LABEL_ADAPTER: TypeAdapter[ClaimLabel | UtteranceLabel] = TypeAdapter(Label)
LabelKey = tuple[str, str, str, str, str]
"""(annotator, game, rule book, kind, claim or utterance id): the last line of a key wins."""


def label_key(label: ClaimLabel | UtteranceLabel) -> LabelKey:
    """The key a label is stored under."""
    return (label.annotator, label.game, label.rules, label.kind, label.item)


def utterance_id(meeting: int, speaker: str, utterance: int) -> str:
    """The id of a speaker's `utterance`-th turn in meeting `meeting`."""
    return f"{meeting}:{speaker}:{utterance}"


def claim_id(claim: Claim) -> str:
    """A claim's id: its utterance's id and a hash of what it claims.

    The same claim of the same utterance gets the same id on every audit of the game
    (by either rule book), so labels survive a re-run of the audit; a claim extracted
    differently is another claim.
    """
    digest = hashlib.sha256(
        json.dumps(list(claim.key()), default=str, separators=(",", ":")).encode()
    ).hexdigest()[:10]
    return f"{utterance_id(claim.meeting, claim.speaker, claim.utterance)}:{digest}"


def claim_labels_dir(folder: str | Path) -> Path:
    """Where the claim labels of a study (or of a run viewed alone) are kept."""
    return Path(folder) / LABELS_FOLDER / CLAIMS_FOLDER


def label_file(labels_dir: str | Path, annotator: str) -> Path:
    """The file holding one annotator's claim labels."""
    return Path(labels_dir) / f"{annotator}.jsonl"


def parse_label(data: Any) -> ClaimLabel | UtteranceLabel:
    """A label from its JSON object.

    Raises:
        ClaimLabelError: it is not a valid label (the message names the field).
    """
    try:
        return LABEL_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise ClaimLabelError(_first_error(exc)) from exc


def _first_error(exc: ValidationError) -> str:
    """The first problem of a refused label, named by its field."""
    err = exc.errors()[0]
    parts = [str(p) for p in err["loc"]]
    if parts and parts[0] in ("claim", "utterance"):
        parts = parts[1:]  # the union's tag (`kind`) comes first in the location
    return f"{'.'.join(parts) or 'kind'}: {err['msg']}"


def read_label_file(path: str | Path) -> list[ClaimLabel | UtteranceLabel]:
    """Every label of one annotator's file, in order (blank lines skipped).

    Raises:
        ClaimLabelError: a line that is not JSON, not a label, or names another
            annotator than the file's; the message names the file and the line.
    """
    p = Path(path)
    owner = p.stem
    out: list[ClaimLabel | UtteranceLabel] = []
    with p.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ClaimLabelError(f"{p}: line {number}: not JSON ({exc.msg})") from exc
            try:
                label = parse_label(data)
            except ClaimLabelError as exc:
                raise ClaimLabelError(f"{p}: line {number}: {exc}") from exc
            if label.annotator != owner:
                raise ClaimLabelError(
                    f"{p}: line {number}: annotator {label.annotator!r} in the file of {owner!r}"
                )
            out.append(label)
    return out


def read_labels(labels_dir: str | Path) -> list[ClaimLabel | UtteranceLabel]:
    """Every label line of every annotator in the folder (none if it is missing).

    Raises:
        ClaimLabelError: a bad line (file and line named).
    """
    d = Path(labels_dir)
    if not d.is_dir():
        return []
    out: list[ClaimLabel | UtteranceLabel] = []
    for path in sorted(d.glob("*.jsonl")):
        out.extend(read_label_file(path))
    return out


def latest(
    labels: Iterable[ClaimLabel | UtteranceLabel],
) -> dict[LabelKey, ClaimLabel | UtteranceLabel]:
    """The standing label of each key: the last line wins."""
    out: dict[LabelKey, ClaimLabel | UtteranceLabel] = {}
    for label in labels:
        out[label_key(label)] = label
    return out


def current_labels(labels_dir: str | Path) -> list[ClaimLabel | UtteranceLabel]:
    """The standing labels of a folder, one per key, in file and line order.

    Raises:
        ClaimLabelError: a bad line (file and line named).
    """
    return list(latest(read_labels(labels_dir)).values())


def new_label(data: Mapping[str, Any], now: float | None = None) -> ClaimLabel | UtteranceLabel:
    """A label from what a page sent, stamped with the time of saving.

    Raises:
        ClaimLabelError: a field is missing or wrong (the message names it).
    """
    if not isinstance(data, Mapping):
        raise ClaimLabelError("body: expected a JSON object")
    return parse_label({**data, "time": round(time.time() if now is None else now, 3)})


def append_label(labels_dir: str | Path, label: ClaimLabel | UtteranceLabel) -> Path:
    """Add one label line to its annotator's file (created with its folder if needed)."""
    path = label_file(labels_dir, label.annotator)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"kind": label.kind, **label.model_dump(mode="json")}) + "\n")
    return path


__all__ = [
    "ClaimLabel",
    "ClaimLabelError",
    "Label",
    "LabelKey",
    "UtteranceLabel",
    "append_label",
    "claim_id",
    "claim_labels_dir",
    "current_labels",
    "label_file",
    "label_key",
    "latest",
    "new_label",
    "parse_label",
    "read_label_file",
    "read_labels",
    "utterance_id",
]
