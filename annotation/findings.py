"""Findings, their validation against the game, and `annotations.jsonl`.

A finding is `{atom, step, actor, evidence, source}` (`source` is `judge:MODEL` or
`detector:NAME`). Every finding, from a judge or a detector, is checked against the
game; a rejected one is kept with its reason, never dropped.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from annotation.codebook import Codebook, codebook
from annotation.gamelog import Game

ANNOTATIONS_FILE = "annotations.jsonl"
ANNOTATIONS_VERSION = 1

_NONVERBAL_PHASES = frozenset({"free_roam"})
_VERBAL_PHASES = frozenset({"meeting", "voting"})
_SPACE = re.compile(r"\s+")
MIN_QUOTE_CHARS = 6
"""Evidence shorter than this cannot point at anything in particular."""


class Finding(BaseModel):
    """One atom occurrence."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    atom: str
    """The paper's letter."""
    step: int | None
    """The step it happened in."""
    actor: str
    """The impostor seat that did it."""
    evidence: str
    """A verbatim quote of the log rendering (judge) or the log facts (detector)."""
    source: str
    """`judge:MODEL` or `detector:NAME`."""
    target: str | None = None
    """The player acted on, when there is one."""
    rationale: str = ""
    """Why (judge), or the threshold that decided (detector)."""
    pass_: str = Field(default="", alias="pass")
    """The judge pass (`nonverbal`/`verbal`) or empty for a detector."""


class CheckedFinding(BaseModel):
    """A finding with its verdict."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    finding: Finding
    accepted: bool
    reason: str = ""
    """Why it was rejected (empty when accepted)."""
    phase: str = ""
    """The arc phase of its step."""


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text.replace('"', "").replace("'", "")).strip().lower()


def validate_finding(
    finding: Finding,
    game: Game,
    *,
    rendered: str | None = None,
    book: Codebook | None = None,
) -> CheckedFinding:
    """Check a finding against the game.

    Checks, in order: the atom letter is known; the actor was an impostor; the step
    exists; the step's phase fits the atom's channel (non-verbal atoms in free roam,
    verbal atoms in a meeting or vote); the evidence quotes the lines of that step in
    the text the judge was shown (`rendered`, when given) or, for detectors, is not
    empty.

    Args:
        finding: The finding.
        game: Its game.
        rendered: The text the judge saw (None for detector findings).
        book: The codebook (the packaged one by default).

    Returns:
        The finding with `accepted` and, when rejected, the reason.
    """
    book = book or codebook()
    reason = ""
    phase = ""
    if finding.atom not in book.letters:
        reason = f"unknown atom letter {finding.atom!r}"
    elif game.roles.get(finding.actor) != "impostor":
        role = game.roles.get(finding.actor)
        reason = (
            f"actor {finding.actor!r} is not an impostor"
            if role
            else f"actor {finding.actor!r} is not a seat of this game"
        )
    elif finding.step is None or finding.step not in game.step_phase:
        reason = f"step {finding.step} does not exist in this game"
    else:
        step_phase = game.step_phase[finding.step]
        channel = book.channel(finding.atom)
        allowed = _NONVERBAL_PHASES if channel == "nonverbal" else _VERBAL_PHASES
        if step_phase not in allowed:
            reason = (
                f"{channel} atom {finding.atom} at step {finding.step}, a {step_phase} step "
                f"(needs {'/'.join(sorted(allowed))})"
            )
        phase = game.phase_of(finding.step)
    if not reason:
        quote = _norm(finding.evidence)
        if len(quote) < MIN_QUOTE_CHARS:
            reason = "evidence is empty or too short to point at the log"
        elif rendered is not None:
            tag = f"[step {finding.step}]"
            at_step = "\n".join(ln for ln in rendered.splitlines() if ln.startswith(tag))
            if quote not in _norm(at_step):
                reason = (
                    "evidence does not quote the log the judge was shown"
                    if quote not in _norm(rendered)
                    else f"evidence is not on the lines of step {finding.step}"
                )
    return CheckedFinding(finding=finding, accepted=not reason, reason=reason, phase=phase)


class JudgeCall(BaseModel):
    """Accounting of one judge pass for one game."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    pass_: str = Field(alias="pass")
    model: str
    status: Literal["ok", "failed"]
    cached: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0
    attempts: int = 0
    latency_ms: float = 0.0
    error_class: str = ""
    error: str = ""
    prompt_sha256: str = ""


class GameAnnotation(BaseModel):
    """Everything annotated for one game: `DIR/annotations.jsonl`."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    game_id: str
    content_sha256: str
    sources: list[str] = Field(default_factory=list)
    """Which sources ran (`detector:*`, `judge:MODEL`)."""
    judge_status: Literal["none", "ok", "failed"] = "none"
    """`failed` means the judge could not annotate this game: its atoms are unknown,
    never zero."""
    detector_params: dict[str, Any] = Field(default_factory=dict)
    findings: list[CheckedFinding] = Field(default_factory=list)
    calls: list[JudgeCall] = Field(default_factory=list)

    @property
    def accepted(self) -> list[Finding]:
        """Accepted findings."""
        return [c.finding for c in self.findings if c.accepted]

    @property
    def rejected(self) -> list[CheckedFinding]:
        """Rejected findings with their reasons."""
        return [c for c in self.findings if not c.accepted]


def write_annotations(folder: Path, ann: GameAnnotation) -> Path:
    """Write `folder/annotations.jsonl` whole (a temporary file renamed over it, so a
    crash leaves the old file or the new one, never half of either).

    Lines: one `header` (game, sources, judge status, detector parameters), one
    `finding` per checked finding, one `judge_call` per judge pass.
    """
    path = folder / ANNOTATIONS_FILE
    tmp = path.with_suffix(".jsonl.tmp")
    header = {
        "kind": "header",
        "v": ANNOTATIONS_VERSION,
        "game_id": ann.game_id,
        "content_sha256": ann.content_sha256,
        "sources": ann.sources,
        "judge_status": ann.judge_status,
        "detector_params": ann.detector_params,
    }
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        for c in ann.findings:
            row = {"kind": "finding", **c.finding.model_dump(by_alias=True)}
            row.update(accepted=c.accepted, reason=c.reason, phase=c.phase)
            fh.write(json.dumps(row) + "\n")
        for call in ann.calls:
            fh.write(json.dumps({"kind": "judge_call", **call.model_dump(by_alias=True)}) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    return path


def read_annotations(folder: Path) -> GameAnnotation | None:
    """Read `folder/annotations.jsonl` (None when the game was never annotated).

    Raises:
        ValueError: The file is newer than this reader or has no header.
    """
    path = folder / ANNOTATIONS_FILE
    if not path.is_file():
        return None
    header: dict[str, Any] | None = None
    findings: list[CheckedFinding] = []
    calls: list[JudgeCall] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        kind = row.pop("kind", None)
        if kind == "header":
            if int(row.get("v", 1)) > ANNOTATIONS_VERSION:
                raise ValueError(f"{path}: line {n}: newer annotations version {row['v']}")
            header = row
        elif kind == "finding":
            accepted = bool(row.pop("accepted"))
            reason = str(row.pop("reason", ""))
            phase = str(row.pop("phase", ""))
            findings.append(
                CheckedFinding(
                    finding=Finding.model_validate(row),
                    accepted=accepted,
                    reason=reason,
                    phase=phase,
                )
            )
        elif kind == "judge_call":
            calls.append(JudgeCall.model_validate(row))
    if header is None:
        raise ValueError(f"{path}: no header line; re-run `mineamongus annotate`")
    return GameAnnotation(
        game_id=header["game_id"],
        content_sha256=header.get("content_sha256", ""),
        sources=header.get("sources", []),
        judge_status=header.get("judge_status", "none"),
        detector_params=header.get("detector_params", {}),
        findings=findings,
        calls=calls,
    )


def read_annotation_rows(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """`annotations.jsonl` as plain dicts (header, finding rows): the fast path for
    statistics over many games. None when the game was never annotated.

    Raises:
        ValueError: The file is newer than this reader or has no header.
    """
    path = folder / ANNOTATIONS_FILE
    if not path.is_file():
        return None
    header: dict[str, Any] | None = None
    rows: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        kind = row.get("kind")
        if kind == "finding":
            rows.append(row)
        elif kind == "header":
            if int(row.get("v", 1)) > ANNOTATIONS_VERSION:
                raise ValueError(f"{path}: newer annotations version {row['v']}")
            header = row
    if header is None:
        raise ValueError(f"{path}: no header line; re-run `mineamongus annotate`")
    return header, rows
