"""One game read back from its run folder, in the shapes annotation needs.

`load_game(folder)` reads `events.jsonl` (and `summary.json` when present) once and
indexes it: roles, steps and their phases, the five arc phases, pose samples per
step (from `trace` events, else from end-of-step `positions`), visibility records,
kills, reports, meetings, speech, votes and decisions. `game_facts` is the single
place per-game facts (winner, kills, tasks, arm, axes) are derived when a tournament's
Parquet tables are absent, so the two can never disagree.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from controller.events import (
    EVENT_ADAPTER,
    SCHEMA_VERSION,
    Decision,
    Emergency,
    Event,
    GameEnd,
    GameStart,
    Kill,
    LogVersionError,
    MeetingEnd,
    MeetingStart,
    Positions,
    ProgramRun,
    Report,
    Speech,
    StepStart,
    TaskDone,
    TaskStart,
    Trace,
    Vec3,
    Visibility,
    Vote,
    read_events,
)

PoseSource = Literal["trace", "positions"]
IMPOSTOR_AXES = ("state", "memory", "planning", "reflection", "prompt")
"""The ARIA ablation axes read from each side's spec."""


@dataclass(frozen=True)
class Pose:
    """A player's position at a tick."""

    tick: int
    pos: Vec3


@dataclass
class StepPoses:
    """Pose samples of one step for every player, and where they came from."""

    source: PoseSource
    """`trace` (samples while programs ran) or `positions` (end of step only)."""
    players: dict[str, list[Pose]] = field(default_factory=dict)


@dataclass
class Game:
    """One game's log, indexed."""

    folder: Path
    game_id: str
    start: GameStart
    end: GameEnd | None
    events: list[Event]
    content_sha256: str
    """sha256 of `events.jsonl` as stored (the judge cache's game key)."""
    summary: dict[str, Any]
    step_phase: dict[int, str]
    """Step -> `free_roam`/`meeting`/`voting`."""
    step_ticks: dict[int, tuple[int, int]]
    """Step -> (first tick, last tick) seen in its events."""
    meeting_steps: dict[int, int]
    """Meeting index -> its first step."""
    poses: dict[int, StepPoses]
    end_positions: dict[int, Positions]
    """Step -> its `step_end` positions."""
    visibility: dict[int, list[Visibility]]
    kills: list[Kill]
    reports: list[Report]
    emergencies: list[Emergency]
    meetings: list[MeetingStart]
    meeting_ends: list[MeetingEnd]
    speeches: list[Speech]
    votes: list[Vote]
    decisions: dict[tuple[int, str], Decision]
    programs: dict[tuple[int, str], ProgramRun]
    task_starts: list[TaskStart]
    task_dones: list[TaskDone]

    @property
    def roles(self) -> dict[str, str]:
        """Seat -> role."""
        return dict(self.start.roles)

    @property
    def impostors(self) -> list[str]:
        """The impostor seats, in seat order."""
        return [a for a in self.start.agents if self.start.roles.get(a) == "impostor"]

    @property
    def steps(self) -> list[int]:
        """Every step number, in order."""
        return sorted(self.step_phase)

    def phase_of(self, step: int) -> str:
        """The arc phase (`pre_m1`, `m1`, `m1_m2`, `m2`, `post_m2`) a step falls in."""
        starts = sorted(self.meeting_steps.items())
        ends = {m.index: m.step for m in self.meeting_ends}
        for index, first in starts:
            last = ends.get(index, first)
            if first <= step <= last:
                return "m1" if index == 1 else "m2" if index == 2 else "post_m2"
        m1 = self.meeting_steps.get(1)
        if m1 is None or step < m1:
            return "pre_m1"
        m2 = self.meeting_steps.get(2)
        if m2 is None or step < m2:
            return "m1_m2"
        return "post_m2"

    def pose_at(self, agent: str, tick: int, step: int) -> Vec3 | None:
        """The agent's sampled position nearest `tick` within `step` (None if unsampled)."""
        sp = self.poses.get(step)
        if sp is None or agent not in sp.players or not sp.players[agent]:
            return None
        return min(sp.players[agent], key=lambda p: abs(p.tick - tick)).pos

    def alive_at(self, step: int, tick: int) -> set[str]:
        """Seats alive at (step, tick): not killed at or before it, not ejected before it."""
        dead = {k.victim for k in self.kills if (k.step, k.tick) <= (step, tick)}
        for m in self.meeting_ends:
            if m.ejected and m.step < step:
                dead.add(m.ejected)
        return {a for a in self.start.agents if a not in dead}


def distance(a: Vec3, b: Vec3) -> float:
    """Horizontal (x, z) distance in blocks: heights on one deck do not matter."""
    return math.hypot(a[0] - b[0], a[2] - b[2])


def content_hash(path: Path) -> str:
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def find_runs(paths: list[Path]) -> list[Path]:
    """Every run folder (a folder holding `events.jsonl`) at or under the given paths.

    Raises:
        FileNotFoundError: A path does not exist or holds no run folder.
    """
    found: list[Path] = []
    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such run or tournament folder")
        if (p / "events.jsonl").is_file():
            found.append(p)
            continue
        runs = sorted(e.parent for e in p.rglob("events.jsonl"))
        if not runs:
            raise FileNotFoundError(
                f"{p}: no events.jsonl at or under it; pass a run folder (from "
                "`mineamongus play --out`) or a tournament folder holding run folders"
            )
        found.extend(runs)
    seen: set[Path] = set()
    unique = []
    for r in found:
        key = r.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique


FACT_KINDS = frozenset(
    {"game_start", "game_end", "kill", "meeting_start", "meeting_end", "task_done", "step_start"}
)
"""The event kinds `game_facts` needs (a light load reads only these)."""


_KIND = re.compile(r'"kind":\s*"(\w+)"')


def _read(path: Path, only: frozenset[str] | None) -> list[Event]:
    if only is None:
        return read_events(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Event] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        # The writer puts `kind` right after the common fields: skip unwanted kinds
        # (e.g. large `trace` lines) without decoding them.
        m = _KIND.search(line, 0, 240)
        if m is not None and m.group(1) not in only and i < len(lines) - 1:
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break  # a crash mid-write, as the full reader tolerates
            raise
        if isinstance(data.get("v", 1), int) and data.get("v", 1) > SCHEMA_VERSION:
            raise LogVersionError(f"{path}: line {i + 1} has a newer schema version {data['v']}")
        if data.get("kind") in only:
            out.append(EVENT_ADAPTER.validate_python(data))
    return out


def load_game(folder: Path | str, *, only: frozenset[str] | None = None) -> Game:
    """Read and index one run folder.

    Args:
        folder: The run folder.
        only: Read only events of these kinds (e.g. `FACT_KINDS` for statistics over
            many games); everything by default.

    Raises:
        ValueError: The log has no `game_start` event.
    """
    folder = Path(folder)
    path = folder / "events.jsonl"
    events = _read(path, only)
    start = next((e for e in events if isinstance(e, GameStart)), None)
    if start is None:
        raise ValueError(f"{path}: no game_start event; not a game log")
    summary: dict[str, Any] = {}
    if (folder / "summary.json").is_file():
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    g = Game(
        folder=folder,
        game_id=start.game_id or summary.get("game_id", folder.name),
        start=start,
        end=None,
        events=events,
        content_sha256=content_hash(path),
        summary=summary,
        step_phase={},
        step_ticks={},
        meeting_steps={},
        poses={},
        end_positions={},
        visibility={},
        kills=[],
        reports=[],
        emergencies=[],
        meetings=[],
        meeting_ends=[],
        speeches=[],
        votes=[],
        decisions={},
        programs={},
        task_starts=[],
        task_dones=[],
    )
    traced: dict[int, StepPoses] = {}
    called: set[int] = set()  # steps in which a meeting was called
    for ev in events:
        if ev.step > 0:
            lo, hi = g.step_ticks.get(ev.step, (ev.tick, ev.tick))
            g.step_ticks[ev.step] = (min(lo, ev.tick), max(hi, ev.tick))
        if isinstance(ev, StepStart):
            g.step_phase[ev.step] = ev.phase
        elif isinstance(ev, GameEnd):
            g.end = ev
        elif isinstance(ev, Trace):
            sp = traced.setdefault(ev.step, StepPoses(source="trace"))
            for agent, samples in ev.players.items():
                sp.players.setdefault(agent, []).extend(
                    Pose(tick=t, pos=(s[0], s[1], s[2]))
                    for t, s in zip(ev.ticks, samples, strict=False)
                )
        elif isinstance(ev, Positions):
            # Logs written before the `meeting_seats` cause label the snapshot taken after
            # the meeting teleport `step_end` too; it comes after `meeting_start`. Read as
            # the end of the step it would turn the teleport into flight.
            if ev.cause == "step_end" and ev.step not in called and ev.step not in g.end_positions:
                g.end_positions[ev.step] = ev
        elif isinstance(ev, Visibility):
            if ev.step in called and ev.cause == "step_end":
                ev = ev.model_copy(update={"cause": "meeting_seats"})
            g.visibility.setdefault(ev.step, []).append(ev)
        elif isinstance(ev, Kill):
            g.kills.append(ev)
        elif isinstance(ev, Report):
            g.reports.append(ev)
        elif isinstance(ev, Emergency):
            g.emergencies.append(ev)
        elif isinstance(ev, MeetingStart):
            g.meetings.append(ev)
            called.add(ev.step)
        elif isinstance(ev, MeetingEnd):
            g.meeting_ends.append(ev)
        elif isinstance(ev, Speech):
            g.speeches.append(ev)
        elif isinstance(ev, Vote):
            g.votes.append(ev)
        elif isinstance(ev, Decision):
            g.decisions[(ev.step, ev.agent)] = ev
        elif isinstance(ev, ProgramRun):
            g.programs[(ev.step, ev.agent)] = ev
        elif isinstance(ev, TaskStart):
            g.task_starts.append(ev)
        elif isinstance(ev, TaskDone):
            g.task_dones.append(ev)
    # A meeting's talk begins at the step after the one in which it was called.
    for m in g.meetings:
        later = [s for s, ph in g.step_phase.items() if s > m.step and ph != "free_roam"]
        g.meeting_steps[m.index] = min(later) if later else m.step + 1
    for step, phase in g.step_phase.items():
        if phase != "free_roam":
            continue
        if step in traced:
            g.poses[step] = traced[step]
            continue
        sp = StepPoses(source="positions")
        end = g.end_positions.get(step)
        if end is not None:
            for agent, snap in end.players.items():
                if snap.status == "alive":
                    sp.players[agent] = [Pose(tick=end.tick, pos=snap.pos)]
        g.poses[step] = sp
    return g


def previous_end(game: Game, step: int) -> Positions | None:
    """The latest `step_end` positions strictly before `step` (where a step began)."""
    earlier = [s for s in game.end_positions if s < step]
    if not earlier:
        return None
    return game.end_positions[max(earlier)]


def seen_by(vis: Visibility, agent: str) -> list[str]:
    """Who had `agent` in their field of view in a visibility record."""
    return sorted(other for other, seen in vis.sees.items() if agent in seen and other != agent)


@dataclass(frozen=True)
class GameFacts:
    """Per-game facts the statistics need (one row of the games table)."""

    game_id: str
    folder: str
    arm: str
    seed: int
    status: str
    winner: str | None
    ending: str
    impostor_win: int
    """1 when the impostors won (a timeout counts as theirs, as in the paper), else 0."""
    steps: int
    kills: int
    meetings: int
    ejections: int
    tasks_done: int
    tasks_total: int
    cost_usd: float
    impostor_model: str
    crew_model: str
    axes: dict[str, str]
    """`impostor.<axis>` and `crew.<axis>` -> value."""


def _side_model(config: dict[str, Any], side: str) -> str:
    s = config.get(side, {}) or {}
    return str(s.get("backend", "unknown"))


def game_facts(game: Game) -> GameFacts:
    """Derive one game's facts from `summary.json` and `game_start` alone.

    The arm is the impostor side's model and spec joined with the crew's, so games of
    one configuration share it. A timeout ending counts as an impostor win.
    """
    cfg = game.start.config or game.summary.get("config", {})
    axes: dict[str, str] = {}
    for side in ("impostor", "crew"):
        spec = (cfg.get(side, {}) or {}).get("spec", {}) or {}
        for axis in IMPOSTOR_AXES:
            if axis in spec:
                axes[f"{side}.{axis}"] = str(spec[axis])
    imp_model = _side_model(cfg, "impostor")
    crew_model = _side_model(cfg, "crew")
    arm = (
        f"imp={imp_model}/"
        + "/".join(axes.get(f"impostor.{a}", "?") for a in IMPOSTOR_AXES)
        + f" crew={crew_model}/"
        + "/".join(axes.get(f"crew.{a}", "?") for a in IMPOSTOR_AXES)
    )
    s = game.summary
    end = game.end
    winner = end.winner if end else s.get("winner")
    ending = end.ending if end else s.get("ending", "invalid")
    status = end.status if end else s.get("status", "invalid")
    tasks = s.get("tasks", {}) or {}
    counts = s.get("counts", {}) or {}
    done = tasks.get("done")
    if done is None:
        done = len({(t.agent, t.station) for t in game.task_dones if not t.fake})
    total = tasks.get("total")
    if total is None:
        total = sum(
            len(v) for a, v in game.start.tasks.items() if game.start.roles.get(a) == "crewmate"
        )
    return GameFacts(
        game_id=game.game_id,
        folder=str(game.folder),
        arm=arm,
        seed=int(game.start.seed),
        status=str(status),
        winner=winner,
        ending=str(ending),
        impostor_win=int(winner == "impostors"),
        steps=int(s.get("steps", len(game.step_phase))),
        kills=len(game.kills),
        meetings=len(game.meetings),
        ejections=int(counts.get("ejections", sum(1 for m in game.meeting_ends if m.ejected))),
        tasks_done=int(done),
        tasks_total=int(total),
        cost_usd=float(s.get("cost_usd", 0.0) or 0.0),
        impostor_model=imp_model,
        crew_model=crew_model,
        axes=axes,
    )
