"""One game read back from its run folder, in the shapes annotation needs.

`load_game(folder)` reads the run through `controller.record.RunRecord` (the one
reader of `events.jsonl` and `summary.json`) once and indexes it: roles, steps and
their phases, the five arc phases, pose samples per step (from `trace` events, else
from end-of-step `positions`; a ghost's samples, `rules.ghost_tasks`, kept apart),
visibility records, kills, reports, meetings, speech, votes, decisions and task events.
`game_facts` is the single place per-game facts (winner, kills, tasks, arm, models,
axes) are derived from the record: each side's agent, model and ARIA axes come from the
typed set-up (`GameSetup`), in the layout games write today and in the older one, so a
tournament's tables and the logs agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from controller.events import (
    Decision,
    Eject,
    Emergency,
    Event,
    GameEnd,
    GameStart,
    Kill,
    MeetingEnd,
    MeetingStart,
    Positions,
    ProgramRun,
    Report,
    Speech,
    StepStart,
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Trace,
    Vec3,
    Visibility,
    Vote,
)
from controller.record import ARIA_AXES, GameSetup, RunRecord, study_place
from controller.record import find_runs as find_runs

PoseSource = Literal["trace", "positions"]
IMPOSTOR_AXES = ARIA_AXES
"""The ARIA ablation axes read from each side's spec."""


@dataclass(frozen=True)
class Pose:
    """A player's position at a tick."""

    tick: int
    pos: Vec3
    yaw: float | None = None
    """The heading (degrees, Minecraft convention) when the sample has one (`trace`)."""


@dataclass
class StepPoses:
    """Pose samples of one step for every player, and where they came from."""

    source: PoseSource
    """`trace` (samples while programs ran) or `positions` (end of step only)."""
    players: dict[str, list[Pose]] = field(default_factory=dict)
    """The players in play (and a victim, in the step it was killed)."""
    ghosts: dict[str, list[Pose]] = field(default_factory=dict)
    """Ghosts (`rules.ghost_tasks`: crewmates out of play doing their tasks) in a step
    after the one they left play in: where they really walked, which no living player
    could see, so never anyone's whereabouts, company or witness."""


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
    """Step -> its `step_end` positions (a ghost's real position, with its status
    `dead` or `ejected`: read the living by status)."""
    snapshots: list[Positions]
    """Every `positions` snapshot, in log order (set-up, step ends, meeting seats, vote ends)."""
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
    task_interrupts: list[TaskInterrupted]
    record: RunRecord
    """The typed record the index was built from (sides, seats, calls, summary)."""

    @property
    def setup(self) -> GameSetup:
        """The typed set-up: each side's agent, model and axes; each seat's agent."""
        return self.record.setup

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
        """Seats alive at (step, tick): not killed at or before it, not ejected before it
        (from the engine's `kill` and `eject` events)."""
        return self.record.alive_at(step, tick)


def distance(a: Vec3, b: Vec3) -> float:
    """Horizontal (x, z) distance in blocks: heights on one deck do not matter."""
    return math.hypot(a[0] - b[0], a[2] - b[2])


FACT_KINDS = frozenset(
    {
        "game_start",
        "game_end",
        "kill",
        "eject",
        "meeting_start",
        "meeting_end",
        "task_done",
        "step_start",
    }
)
"""The event kinds `game_facts` needs (a light load reads only these)."""


def load_game(
    folder: Path | str, *, only: frozenset[str] | None = None, partial: bool = False
) -> Game:
    """Read and index one run folder.

    Args:
        folder: The run folder.
        only: Read only events of these kinds (e.g. `FACT_KINDS` for statistics over
            many games); everything by default.
        partial: Accept a game that did not finish (no `game_end`); off by default.

    Raises:
        controller.record.RecordError: The record is broken, cut, or unfinished (a
            `ValueError`; the message names the file, the line and the fix).
    """
    record = RunRecord.read(folder, kinds=only, partial=partial)
    events = record.events
    start = record.start
    summary: dict[str, Any] = record.summary.model_dump() if record.summary else {}
    g = Game(
        folder=record.folder,
        game_id=record.game_id,
        start=start,
        end=None,
        events=events,
        content_sha256=record.content_sha256,
        summary=summary,
        record=record,
        step_phase={},
        step_ticks={},
        meeting_steps={},
        poses={},
        end_positions={},
        snapshots=[],
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
        task_interrupts=[],
    )
    traced: dict[int, StepPoses] = {}
    called: set[int] = set()  # steps in which a meeting was called
    left: dict[str, int] = {}  # player -> the step it left play in (killed or ejected)
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
                ghost = agent in left and ev.step > left[agent]
                (sp.ghosts if ghost else sp.players).setdefault(agent, []).extend(
                    Pose(tick=t, pos=(s[0], s[1], s[2]), yaw=s[3] if len(s) > 3 else None)
                    for t, s in zip(ev.ticks, samples, strict=False)
                )
        elif isinstance(ev, Positions):
            g.snapshots.append(ev)
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
            left.setdefault(ev.victim, ev.step)
        elif isinstance(ev, Eject):
            left.setdefault(ev.agent, ev.step)
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
        elif isinstance(ev, TaskInterrupted):
            g.task_interrupts.append(ev)
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


def start_positions(game: Game, step: int) -> Positions | None:
    """Where everyone stood as `step` began: the last snapshot logged before it (the
    previous step's end, or for a round's first step the meeting table after the vote,
    or the set-up), never a position from before a meeting's teleport."""
    before = [s for s in game.snapshots if s.step < step and s.cause != "meeting_call"]
    return before[-1] if before else None


def round_first_steps(game: Game) -> set[int]:
    """The free-roam steps that begin a round: the game's first, and the first after each
    meeting (everyone leaves the spawn or the meeting table together)."""
    out: set[int] = set()
    fresh = True
    for step in game.steps:
        if game.step_phase[step] != "free_roam":
            fresh = True
        elif fresh:
            out.add(step)
            fresh = False
    return out


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
    """1 when the recorded winner is the impostors, else 0."""
    steps: int
    kills: int
    meetings: int
    ejections: int
    tasks_done: int
    tasks_total: int
    cost_usd: float | None
    """None when a model call had no known price (unknown, never $0)."""
    impostor_model: str
    """The impostor side's backend address (`openai:gpt-4.1-mini`, `fake`, `scripted`)."""
    crew_model: str
    impostor_agent: str
    """The impostor side's agent kind (`aria`, `scripted`, ...)."""
    crew_agent: str
    axes: dict[str, str]
    """`impostor.<axis>` and `crew.<axis>` -> value."""


def arm_label(setup: GameSetup) -> str:
    """A name of a configuration from the record alone: each side's model and ARIA axes
    and a hash of the rules, so games of one configuration share it and arms that differ
    in anything the record names (an axis, a model, a rule) never do."""
    axes = setup.axes
    parts = []
    for side in ("impostor", "crew"):
        s = setup.impostor if side == "impostor" else setup.crew
        short = "imp" if side == "impostor" else "crew"
        values = [axes.get(f"{side}.{a}", "") for a in IMPOSTOR_AXES]
        label = (
            f"{short}={s.backend}"
            if s.agent in ("aria", s.backend)
            else f"{short}={s.agent}:{s.backend}"
        )
        if any(values):
            label += "/" + "/".join(v or "?" for v in values)
        parts.append(label)
    return " ".join(parts) + f" rules={setup.rules_sha256[:8]}"


def game_facts(game: Game) -> GameFacts:
    """Derive one game's facts from the record alone (`summary.json` and `game_start`,
    read by `controller.record`).

    The arm is the study's arm when the run sits in a study's folder layout
    (`games/<arm>/seed<N>-try<K>`, as `collect` names it), else `arm_label`. Impostor
    win is the winner the engine recorded (its `timeout_winner` rule decides timeouts).
    """
    setup = game.setup
    place = study_place(game.folder)
    summary = game.record.summary
    end = game.end
    winner = end.winner if end else (summary.winner if summary else None)
    ending = end.ending if end else (summary.ending if summary and summary.ending else "invalid")
    status = end.status if end else (summary.status if summary else "invalid")
    done = summary.tasks.done if summary else None
    if done is None:
        done = len({(t.agent, t.station) for t in game.task_dones if not t.fake})
    total = summary.tasks.total if summary else None
    if total is None:
        total = sum(
            len(v) for a, v in game.start.tasks.items() if game.start.roles.get(a) == "crewmate"
        )
    counts = summary.counts if summary else {}
    steps = summary.steps if summary and summary.steps is not None else len(game.step_phase)
    return GameFacts(
        game_id=game.game_id,
        folder=str(game.folder),
        arm=place.arm if place is not None else arm_label(setup),
        seed=int(game.start.seed),
        status=str(status),
        winner=winner,
        ending=str(ending),
        impostor_win=int(winner == "impostors"),
        steps=int(steps),
        kills=len(game.kills),
        meetings=len(game.meetings),
        ejections=int(counts.get("ejections", sum(1 for m in game.meeting_ends if m.ejected))),
        tasks_done=int(done),
        tasks_total=int(total),
        cost_usd=summary.cost_usd if summary else None,
        impostor_model=setup.impostor.backend,
        crew_model=setup.crew.backend,
        impostor_agent=setup.impostor.agent,
        crew_agent=setup.crew.agent,
        axes=setup.axes,
    )
