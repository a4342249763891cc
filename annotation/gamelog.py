"""One game read back from its run folder, in the shapes annotation needs.

`load_game(folder)` reads the run through `controller.record.RunRecord` (the one
reader of `events.jsonl` and `summary.json`) once and takes who was where, who saw
whom, steps, phases and rounds from the game's one index (`controller.timeline.
GameIndex`): roles, steps and their phases, the five arc phases, pose samples per step
(the index's `trace` poses, else end-of-step `positions`; a ghost's samples,
`rules.ghost_tasks`, kept apart), each step's end positions and visibility records (a
calling step's own end included; a meeting table reads as `meeting_seats`), kills,
reports, meetings, speech, votes, decisions and task events.
`game_facts` is the single place per-game facts (winner, kills, tasks, arm, models,
axes) are derived from the record: each side's agent, model and the ablation axes its
kind declared come from the typed set-up (`GameSetup`), in the layout games write today
and in the older one, so a tournament's tables and the logs agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from controller.events import (
    Decision,
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
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Vec3,
    Visibility,
    Vote,
)
from controller.record import GameSetup, RunRecord, study_place
from controller.record import find_runs as find_runs
from controller.timeline import GameIndex

PoseSource = Literal["trace", "positions"]


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
    """Step -> its `step_end` positions (`GameIndex.step_ends`: a calling step's too, never
    a meeting table; a ghost's real position, with its status `dead` or `ejected`: read
    the living by status)."""
    snapshots: list[Positions]
    """Every `positions` snapshot, in log order (set-up, step ends, meeting seats, vote ends)."""
    visibility: dict[int, list[Visibility]]
    """Step -> its visibility records in log order (a `step_end` record the index reads
    as the meeting table, an older log's, relabelled `meeting_seats`)."""
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
    index: GameIndex
    """The one index of the game (`controller.timeline`): positions, sight, phases."""

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
        return self.index.arc_phase(step)

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
        index=GameIndex.of(events),
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
    index = g.index
    g.step_phase = dict(index.step_phase)
    g.step_ticks = dict(index.step_ticks)
    g.meeting_steps = index.meeting_steps()
    g.snapshots = [s.event for s in index.snapshots]
    # Where a step ended and what was seen there as the index classifies them: a calling
    # step's own end (logged after its `meeting_start`, as every log does) is its end; a
    # meeting table an older log labelled `step_end` reads as the seats it was.
    g.end_positions = index.step_ends()
    for sight in index.sightings:
        vis = sight.event
        if sight.seats and vis.cause == "step_end":
            vis = vis.model_copy(update={"cause": "meeting_seats"})
        g.visibility.setdefault(vis.step, []).append(vis)
    for ev in events:
        if isinstance(ev, GameEnd):
            g.end = ev
        elif isinstance(ev, Kill):
            g.kills.append(ev)
        elif isinstance(ev, Report):
            g.reports.append(ev)
        elif isinstance(ev, Emergency):
            g.emergencies.append(ev)
        elif isinstance(ev, MeetingStart):
            g.meetings.append(ev)
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
    for step, phase in g.step_phase.items():
        if phase != "free_roam":
            continue
        if step in index.traced_steps:
            sp = StepPoses(source="trace")
            for agent, track in index.trace_of(step).items():
                (sp.ghosts if index.is_ghost(agent, step) else sp.players)[agent] = [
                    Pose(tick=p.tick, pos=p.pos, yaw=p.yaw) for p in track
                ]
        else:
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
    return game.index.round_first_steps()


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
    """A name of a configuration from the record alone: each side's model, the values of
    the ablation axes its kind declared (`SideFacts.axes`, in their order; `?` for one
    without a value) and a hash of the rules, so games of one configuration share it and
    arms that differ in anything the record names (an axis, a model, a rule) never do."""
    parts = []
    for side in ("impostor", "crew"):
        s = setup.impostor if side == "impostor" else setup.crew
        short = "imp" if side == "impostor" else "crew"
        values = [s.axes.get(a, "") for a in s.facts.axes]
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
