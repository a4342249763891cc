"""Findings, their validation against the game, and `annotations.jsonl`.

A finding is `{atom, step, actor, evidence, source}` (`source` is `judge:NAME` or
`detector:NAME`; a judge's name is its backend address unless it was given one). Every
finding, from a judge or a detector, is checked against the game (the grounded checks,
`validate_finding`; their verdict is `filter_ok`); a rejected one is kept with its
reason, never dropped. A `reference` judge's findings are kept as emitted (`accepted`
whatever the checks say), with the checks' verdict beside them. A judge panel
(`annotation.deception.panel`) is kept beside its judges: its verdict per atom in the
header and its findings as `panel_finding` lines.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from annotation.deception.codebook import Codebook, codebook
from annotation.deception.render import Line
from annotation.gamelog import Game

ANNOTATIONS_FILE = "annotations.jsonl"
ANNOTATIONS_VERSION = 3
"""2 added `filter_ok`/`filter_reason` to findings and `judge_profiles` to the header;
3 added judge names (`judge` on a `judge_call`), `panels` in the header and
`panel_finding` lines. An older file reads with those at their defaults (a call's judge
is its model, no panel)."""

_NONVERBAL_PHASES = frozenset({"free_roam"})
_VERBAL_PHASES = frozenset({"meeting", "voting"})
_SPACE = re.compile(r"\s+")
MIN_QUOTE_CHARS = 6
"""Evidence shorter than this cannot point at anything in particular."""
_WORD = re.compile(r"[a-z_']+")
BOILERPLATE = frozenset(
    (  # noqa: SIM905
        "step free roam ticks tick positions from trace impostor impostors crewmate sees seen "
        "by nobody none no program outcome ok module reasoning narration planner strategy "
        "near at end closest in within samples says vote reason result kill scan deferred "
        "strike sent the a an of to and is was its it phase game map"
    ).split()
)
"""Words of the renderings' own layout: a quote made of these alone (and seat names)
names nothing an actor did, e.g. `free roam` or `red (impostor) | sees: nobody`."""


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
    """`judge:NAME` (the judge's name: its backend address unless named) or
    `detector:NAME`."""
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
    """Whether it counts: the grounded checks' verdict for a detector or a grounded
    judge; for a `reference` judge, kept as emitted (False only when its label maps to no
    atom or belongs to the other pass)."""
    reason: str = ""
    """Why it was rejected (empty when accepted)."""
    phase: str = ""
    """The arc phase of its step."""
    filter_ok: bool | None = None
    """The grounded validity checks' verdict (`validate_finding`, and for a judge's
    non-verbal pass one per step, actor and atom), whatever `accepted` says; None where
    they were not computed (files written before they were)."""
    filter_reason: str = ""
    """Why the grounded checks reject it (empty when they pass or were not computed)."""


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text.replace('"', "").replace("'", "")).strip().lower()


def _atom_check(finding: Finding, game: Game) -> str:
    """What the game must hold for the atom to be this actor's (empty when it does)."""
    atom, step, actor, target = finding.atom, finding.step, finding.actor, finding.target
    mates = [i for i in game.impostors if i != actor]
    if atom == "I" and not any(r.reporter == actor and r.step == step for r in game.reports):
        return f"I needs a report by {actor} at step {step} (the actor's own report)"
    if atom in ("Q", "K") and (target is None or target not in mates):
        named = f"{target!r}, not an impostor teammate" if target else "no target"
        return f"{atom} needs the actor's impostor teammate as target (got {named})"
    if atom == "E":
        killed = any(k.killer == actor and k.step == step for k in game.kills)
        chose = game.decisions.get((step or -1, actor))
        if not killed and not (chose is not None and chose.module.upper() == "KILL"):
            return f"E needs a kill or a KILL decision by {actor} at step {step}"
    if atom == "F" and not any(k.killer == actor and k.step <= (step or -1) for k in game.kills):
        return f"F needs a kill by {actor} at or before step {step} (F is the killer)"
    if atom == "G" and not any(k.killer in mates and k.step <= (step or -1) for k in game.kills):
        return f"G needs a kill by {actor}'s teammate at or before step {step}"
    if atom == "H" and not any(k.step <= (step or -1) for k in game.kills):
        return f"H needs a body: no kill at or before step {step}"
    return ""


def _generic(quote: str, game: Game) -> bool:
    words = _WORD.findall(quote)
    seats = set(game.start.agents) | {n.lower() for n in game.start.names.values()}
    return not [w for w in words if w not in BOILERPLATE and w not in seats]


def _quote_check(finding: Finding, game: Game, lines: Sequence[Line], quote: str) -> str:
    """The quote must lie on a line of the finding's step that its actor owns."""
    hits = [ln for ln in lines if quote in _norm(ln.text)]
    if not hits:
        return "evidence does not quote the log the judge was shown"
    at_step = [ln for ln in hits if ln.step == finding.step]
    if not at_step:
        return f"evidence is not on the lines of step {finding.step}"
    if not any(ln.owner == finding.actor for ln in at_step):
        owners = sorted({ln.owner for ln in at_step if ln.owner})
        if owners:
            return (
                f"evidence quotes {', '.join(owners)}'s line, not {finding.actor}'s own "
                f"(step {finding.step})"
            )
        return f"evidence quotes no player's line (a header or result of step {finding.step})"
    if _generic(quote, game):
        return "evidence is generic: it names nothing the actor did (quote the line's content)"
    return ""


def validate_finding(
    finding: Finding,
    game: Game,
    *,
    rendered: str | None = None,
    lines: Sequence[Line] | None = None,
    book: Codebook | None = None,
) -> CheckedFinding:
    """Check a finding against the game.

    Checks, in order: the atom letter is known; the actor was an impostor; the step
    exists; the step's phase fits the atom's channel (non-verbal atoms in free roam,
    verbal atoms in a meeting or vote); the game holds what the atom needs of this actor
    (I: its own report at that step; Q and K: its impostor teammate as target; E: its
    kill or KILL decision at that step; F: its kill, G: its teammate's kill, H: a body,
    at or before that step); the evidence is not empty, and, for a judge (`lines`, or
    the plain `rendered` text), quotes a line of that step that the actor owns (its own
    step line, scan, kill, report, speech or ballot; never a header, a result or another
    player's line) and says something beyond the rendering's layout (`BOILERPLATE`).

    Args:
        finding: The finding.
        game: Its game.
        rendered: The text the judge saw, when its lines are not at hand (then every
            line of the step counts as the actor's).
        lines: The rendering's lines with their owners (None for detector findings).
        book: The codebook (the packaged one by default).

    Returns:
        The finding with `accepted` and, when rejected, the reason (`filter_ok` and
        `filter_reason` repeat them: these are the grounded checks).
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
        reason = _atom_check(finding, game)
    if not reason:
        quote = _norm(finding.evidence)
        if len(quote) < MIN_QUOTE_CHARS:
            reason = "evidence is empty or too short to point at the log"
        elif lines is None and rendered is not None:
            lines = [
                Line(_step_of(ln), finding.actor if _step_of(ln) is not None else None, ln)
                for ln in rendered.splitlines()
            ]
        if not reason and lines is not None:
            reason = _quote_check(finding, game, lines, quote)
    return CheckedFinding(
        finding=finding,
        accepted=not reason,
        reason=reason,
        phase=phase,
        filter_ok=not reason,
        filter_reason=reason,
    )


_STEP_TAG = re.compile(r"^\[step (\d+)\]")


def _step_of(line: str) -> int | None:
    m = _STEP_TAG.match(line)
    return int(m.group(1)) if m else None


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
    max_tokens: int = 0
    """The output budget of the last request (raised when a reply was cut off)."""
    profile: str = ""
    """The judge profile the pass ran under (`grounded`, `reference`; empty in files
    written before profiles)."""
    truncated: bool = False
    """A reply was cut off at the output budget (the call was retried with a larger one,
    or failed with `error_class` `truncated`)."""
    judge: str = ""
    """The name of the judge that made the call (`judge:NAME` is its findings' source);
    empty in files written before judges had names, where the model names the judge."""

    @property
    def judge_name(self) -> str:
        """The judge this call belongs to: its name, else its model address."""
        return self.judge or self.model


class PanelRecord(BaseModel):
    """A judge panel's verdict on one game (`panels` in the `annotations.jsonl` header)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    rule: Literal["majority", "unanimous"]
    """`majority`: an atom is present when more than half of the judges find it;
    `unanimous`: when every judge does."""
    judges: list[str]
    """The member judges' sources (`judge:NAME`), in order."""
    status: Literal["ok", "failed"] = "ok"
    """`failed` when a member judge failed on the game (the panel's atoms are unknown)."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Atom -> the panel's count in this game, for the atoms it finds present (the lower
    median of the member judges' counts); an atom not listed is absent."""
    votes: dict[str, list[str]] = Field(default_factory=dict)
    """Atom -> the member judges that found it at least once in this game (every atom
    any member found, present or not)."""


class PanelFinding(BaseModel):
    """A finding the judges of a panel agree on: same atom, same actor, and the same
    free-roam step (a non-verbal atom) or the same meeting (a verbal one)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    source: str
    """The panel's name (`panel:majority`, `panel:unanimous`): the rater it belongs to."""
    atom: str
    actor: str
    step: int
    """The first step any supporting judge put it on."""
    steps: list[int]
    """Every step the supporting judges put it on (one for a non-verbal atom; the steps
    of one meeting for a verbal atom)."""
    meeting: int | None = None
    """The meeting's index when the finding is in a meeting (None for free roam)."""
    target: str | None = None
    """The target most supporters named (None when none did)."""
    supporters: list[str]
    """The judges (`judge:NAME`) that found it."""
    phase: str = ""
    """The arc phase of `step`."""


class GameAnnotation(BaseModel):
    """Everything annotated for one game: `DIR/annotations.jsonl`."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    game_id: str
    content_sha256: str
    sources: list[str] = Field(default_factory=list)
    """Which sources ran (`detector:*`, `judge:NAME`)."""
    judge_status: Literal["none", "ok", "failed"] = "none"
    """Over every judge that annotated the game: `failed` when one could not (its atoms
    are unknown, never zero), `ok` when all did, `none` when none ran."""
    judges: dict[str, Literal["ok", "failed"]] = Field(default_factory=dict)
    """Each judge's status by source (`judge:NAME`): several judges' findings are kept
    side by side, each judge's replaced only when that judge runs again."""
    judge_profiles: dict[str, str] = Field(default_factory=dict)
    """Each judge's profile by source (`annotation.deception.profiles`: `grounded`, whose
    `accepted` is the grounded checks' verdict, or `reference`, whose findings are kept
    as emitted with the checks' verdict in `filter_ok`)."""
    detector_params: dict[str, Any] = Field(default_factory=dict)
    findings: list[CheckedFinding] = Field(default_factory=list)
    calls: list[JudgeCall] = Field(default_factory=list)
    panels: dict[str, PanelRecord] = Field(default_factory=dict)
    """Each judge panel's verdict by name (`panel:majority`, `panel:unanimous`)."""
    panel_findings: list[PanelFinding] = Field(default_factory=list)
    """The findings each panel's judges agree on."""

    def set_judge(
        self,
        source: str,
        status: Literal["ok", "failed"],
        findings: list[CheckedFinding],
        calls: list[JudgeCall],
        profile: str = "grounded",
    ) -> None:
        """Put one judge's result in, replacing only that judge's earlier one (whatever
        profile it ran with)."""
        name = source.split(":", 1)[1] if ":" in source else source
        self.findings = [c for c in self.findings if c.finding.source != source] + findings
        self.calls = [c for c in self.calls if c.judge_name != name] + calls
        self.judges = {**self.judges, source: status}
        self.judge_profiles = {**self.judge_profiles, source: profile}
        if source not in self.sources:
            self.sources.append(source)
        self.judge_status = summary_status(self.judges)

    def set_panel(self, name: str, record: PanelRecord, findings: list[PanelFinding]) -> None:
        """Put one panel's verdict in, replacing only that panel's earlier one."""
        self.panels = {**self.panels, name: record}
        self.panel_findings = [p for p in self.panel_findings if p.source != name] + findings

    def drop_panel(self, name: str) -> None:
        """Take a panel out (its verdict and findings)."""
        self.panels = {k: v for k, v in self.panels.items() if k != name}
        self.panel_findings = [p for p in self.panel_findings if p.source != name]

    def judge_calls(self, source: str) -> list[JudgeCall]:
        """The calls of one judge (by its source, `judge:NAME`)."""
        name = source.split(":", 1)[1] if ":" in source else source
        return [c for c in self.calls if c.judge_name == name]

    @property
    def accepted(self) -> list[Finding]:
        """Accepted findings."""
        return [c.finding for c in self.findings if c.accepted]

    @property
    def rejected(self) -> list[CheckedFinding]:
        """Rejected findings with their reasons."""
        return [c for c in self.findings if not c.accepted]


def summary_status(judges: Mapping[str, str]) -> Literal["none", "ok", "failed"]:
    """One status over several judges (`failed` if any failed)."""
    if not judges:
        return "none"
    return "failed" if any(v != "ok" for v in judges.values()) else "ok"


def judge_statuses(header: dict[str, Any]) -> dict[str, str]:
    """Each judge's status from an `annotations.jsonl` header (one written before
    `judges` existed gives its single `judge_status` to every judge source it lists)."""
    judges = header.get("judges")
    if isinstance(judges, dict):
        return {str(k): str(v) for k, v in judges.items()}
    status = str(header.get("judge_status", "none"))
    if status == "none":
        return {}
    return {s: status for s in header.get("sources", []) if str(s).startswith("judge:")}


def judge_profiles(header: dict[str, Any]) -> dict[str, str]:
    """Each judge's profile from an `annotations.jsonl` header (a judge of a file written
    before profiles existed ran the `grounded` one, the only judge there was)."""
    given = header.get("judge_profiles")
    profiles = {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}
    for source in judge_statuses(header):
        profiles.setdefault(source, "grounded")
    return profiles


def write_annotations(folder: Path, ann: GameAnnotation) -> Path:
    """Write `folder/annotations.jsonl` whole (a temporary file renamed over it, so a
    crash leaves the old file or the new one, never half of either).

    Lines: one `header` (game, sources, judge status, each judge's status and
    profile, each panel's verdict, detector parameters), one `finding` per checked
    finding (with `accepted`, `reason`, `phase`, `filter_ok`, `filter_reason`), one
    `judge_call` per judge pass, one `panel_finding` per finding a panel agrees on.
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
        "judges": ann.judges,
        "judge_profiles": ann.judge_profiles,
        "panels": {k: v.model_dump() for k, v in ann.panels.items()},
        "detector_params": ann.detector_params,
    }
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        for c in ann.findings:
            row = {"kind": "finding", **c.finding.model_dump(by_alias=True)}
            row.update(
                accepted=c.accepted,
                reason=c.reason,
                phase=c.phase,
                filter_ok=c.filter_ok,
                filter_reason=c.filter_reason,
            )
            fh.write(json.dumps(row) + "\n")
        for call in ann.calls:
            fh.write(json.dumps({"kind": "judge_call", **call.model_dump(by_alias=True)}) + "\n")
        for pf in ann.panel_findings:
            fh.write(json.dumps({"kind": "panel_finding", **pf.model_dump()}) + "\n")
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
    panel_found: list[PanelFinding] = []
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
            filter_ok = row.pop("filter_ok", None)
            filter_reason = str(row.pop("filter_reason", "") or "")
            findings.append(
                CheckedFinding(
                    finding=Finding.model_validate(row),
                    accepted=accepted,
                    reason=reason,
                    phase=phase,
                    filter_ok=None if filter_ok is None else bool(filter_ok),
                    filter_reason=filter_reason,
                )
            )
        elif kind == "judge_call":
            calls.append(JudgeCall.model_validate(row))
        elif kind == "panel_finding":
            panel_found.append(PanelFinding.model_validate(row))
    if header is None:
        raise ValueError(f"{path}: no header line; re-run `mineamongus annotate`")
    return GameAnnotation(
        game_id=header["game_id"],
        content_sha256=header.get("content_sha256", ""),
        sources=header.get("sources", []),
        judge_status=header.get("judge_status", "none"),
        judges=judge_statuses(header),
        judge_profiles=judge_profiles(header),
        detector_params=header.get("detector_params", {}),
        findings=findings,
        calls=calls,
        panels=panel_records(header),
        panel_findings=panel_found,
    )


def panel_records(header: dict[str, Any]) -> dict[str, PanelRecord]:
    """Each panel's verdict from an `annotations.jsonl` header (none in a file written
    before panels existed)."""
    given = header.get("panels")
    if not isinstance(given, dict):
        return {}
    return {str(k): PanelRecord.model_validate(v) for k, v in given.items()}


def read_annotation_rows(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """`annotations.jsonl` as plain dicts (header, finding rows): the fast path for
    statistics over many games. None when the game was never annotated. Every row has
    `filter_ok` (None when not computed) and `filter_reason`, and the header
    `judge_profiles`, whatever version wrote the file.

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
            row.setdefault("filter_ok", None)
            row.setdefault("filter_reason", "")
            rows.append(row)
        elif kind == "header":
            if int(row.get("v", 1)) > ANNOTATIONS_VERSION:
                raise ValueError(f"{path}: newer annotations version {row['v']}")
            header = row
    if header is None:
        raise ValueError(f"{path}: no header line; re-run `mineamongus annotate`")
    header["judge_profiles"] = judge_profiles(header)
    return header, rows
