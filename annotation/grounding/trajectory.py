"""Every player's trajectory, read from the game's one index: the audit's ground truth.

Where everyone was and who saw whom come from `controller.timeline.GameIndex` (its
`trace` poses, its classified snapshots and visibility records, its kill readiness);
this module adds what the audit needs on top: rooms (the map's geometry), task
attempts, meetings and rounds.

For each player and step the trajectory holds the room (or `hallway` for a corridor),
position, whether the player was alive, its task activity and whom it could see. Within a
free-roam step the rooms passed through come from the `trace` pose samples (at most
`sample_interval_ticks` apart) together with the program `mark` positions; a log without
`trace` events falls back to the `positions` snapshots and the marks, which are coarser
(a room entered and left between two of them is missed).

Sight comes from the `visibility` events only (`sees`: the camera's field of view;
`near`: 360 degree proximity), never from room co-location. A rule event's visibility
(`cause` `kill`, `report`, `emergency`) carries that event's tick. Visibility written after
a meeting's teleport (`cause` `meeting_seats`, or in a log that predates the cause field,
any snapshot that follows `meeting_start` in the same step) is kept apart: everyone sits
in the cafeteria then, which says nothing about free roam.

With `rules.ghost_tasks` a crewmate out of play walks on as a ghost, unseen by the
living: its `trace` samples and program marks from the steps after the one it left play
in are kept apart (`Trajectory.ghost_samples`), never among the samples that say where
a player was; its task attempts stay among the attempts.

Every sample, sighting and rule event keeps the step it was logged in (a round's first
positions and sight, written at set-up or at the end of a vote, belong to the round's
first free-roam step), and a round is the run of free-roam steps a meeting closes.
Windows are chosen by step and round (`Trajectory.samples_in`, `round_of`), never by
tick alone: ticks are shared across a round boundary whenever the clock did not move
during a meeting, so a tick range would also hold the previous round's position at
the call and the meeting seats.
"""

from __future__ import annotations

import bisect
import functools
import json
from collections.abc import Iterable, Sequence
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
    ProgramRun,
    Report,
    Speech,
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Vote,
)
from controller.record import LOG_FILE, RunRecord, SeatAgent, log_path
from controller.timeline import GameIndex
from world.geometry import GHOST_AREA, HALLWAY, ShipGeometry
from world.spec import MapSpec, MapSpecError, load_map, parse_map

Vec3 = tuple[float, float, float]
TaskState = Literal["started", "in_progress", "done", "faked", "interrupted"]
"""A task's state within one step: `started` (began this step, still held at its end),
`in_progress` (began earlier, still held), `done` (a real task completed), `faked` (an
impostor stood a station's full time), `interrupted` (lost: left, killed, meeting)."""
SampleSource = Literal["trace", "positions", "mark", "kill"]

UNKNOWN_ROOM = "unknown"
"""Room of a sample whose position no map could place."""
NOT_ROOMS = frozenset({HALLWAY, GHOST_AREA, "outside", UNKNOWN_ROOM})
"""Region names that are not rooms of the ship (excluded from room counts)."""


@dataclass(frozen=True)
class Sample:
    """One pose of one player at one tick."""

    tick: int
    step: int
    pos: Vec3
    yaw: float | None
    room: str
    source: SampleSource


@dataclass(frozen=True)
class Sighting:
    """At `tick`, `viewer` perceived `target` (a player, or a body when `body`)."""

    tick: int
    step: int
    viewer: str
    target: str
    fov: bool
    """Inside the viewer's field of view (the `sees`/`bodies` lists)."""
    near: bool
    """Within 360 degree proximity (the `near`/`bodies_near` lists)."""
    cause: str
    """The visibility event's cause (`step_end`, `kill`, `report`, ...)."""
    subject: str | None
    """The killer, reporter or caller of a rule event's visibility."""
    body: bool = False
    round_start: bool = False
    """Seen as a round began (set-up or the end of a vote), before anyone moved."""


@dataclass
class TaskAttempt:
    """One stretch a player spent at one station."""

    agent: str
    station: int
    room: str
    start_tick: int
    start_step: int
    fake: bool
    end_tick: int | None = None
    end_step: int | None = None
    outcome: Literal["done", "faked", "interrupted", "in_progress"] = "in_progress"
    reason: str = ""


@dataclass(frozen=True)
class StepInfo:
    """One step's phase and tick span."""

    step: int
    phase: str
    start_tick: int
    end_tick: int


@dataclass
class PlayerStep:
    """One player during one step."""

    step: int
    phase: str
    room: str
    """Room at the step's end (`hallway` in a corridor); once out of play, the room of
    its first snapshot out of play (where its body lies, or its seat when ejected),
    even while it walks on as a ghost."""
    pos: Vec3
    alive: bool
    """Alive at the step's end."""
    rooms: list[str] = field(default_factory=list)
    """Rooms (and `hallway`) passed through in order, consecutive repeats merged."""
    room_ticks: dict[str, int] = field(default_factory=dict)
    """Ticks spent in each room during the step (each sample holds until the next)."""
    tasks: dict[int, TaskState] = field(default_factory=dict)
    """Station -> the task's state in this step."""
    sees: list[str] = field(default_factory=list)
    """Players in the field of view at any free-roam visibility moment of the step."""
    near: list[str] = field(default_factory=list)
    """Players within 360 degree proximity at any free-roam visibility moment."""
    bodies_seen: list[str] = field(default_factory=list)
    """Victims whose bodies were in the field of view."""


@dataclass(frozen=True)
class KillRecord:
    step: int
    tick: int
    killer: str
    victim: str
    room: str
    pos: Vec3


@dataclass(frozen=True)
class ReportRecord:
    step: int
    tick: int
    reporter: str
    victim: str
    room: str


@dataclass(frozen=True)
class SpeechRecord:
    meeting: int
    step: int
    speaker: str
    utterance: int
    text: str
    passed: bool
    failed: bool
    error_kind: str


@dataclass(frozen=True)
class VoteRecord:
    meeting: int
    step: int
    tick: int
    voter: str
    target: str | None
    failed: bool
    error_kind: str


@dataclass
class MeetingRecord:
    """A meeting and the free-roam round that led to it."""

    index: int
    step: int
    """The free-roam step in which the meeting was called."""
    tick: int
    """Tick of the report or button press."""
    trigger: str
    caller: str
    victim: str | None
    order: list[str]
    dead: list[str]
    round_first_step: int
    """First free-roam step of the round the meeting closes."""
    round_start_tick: int
    speeches: list[SpeechRecord] = field(default_factory=list)
    votes: list[VoteRecord] = field(default_factory=list)
    ejected: str | None = None
    outcome: str = ""
    end_step: int | None = None
    end_tick: int | None = None
    """Tick of the vote's result (`meeting_end`): where the engine restarts kill cooldowns."""


@dataclass
class Trajectory:
    """A whole game's ground truth, indexed for the audit."""

    game_id: str
    agents: list[str]
    roles: dict[str, str]
    tasks: dict[str, list[int]]
    config: dict[str, Any]
    agent_specs: dict[str, dict[str, Any]]
    map_name: str
    geometry: ShipGeometry | None
    sample_interval: int
    has_trace: bool = False
    steps: dict[int, StepInfo] = field(default_factory=dict)
    players: dict[str, dict[int, PlayerStep]] = field(default_factory=dict)
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    ghost_samples: dict[str, list[Sample]] = field(default_factory=dict)
    """A ghost's samples (`rules.ghost_tasks`) from the steps after the one it left play
    in: where it really walked, which no living player could see."""
    sightings: list[Sighting] = field(default_factory=list)
    seat_sightings: list[Sighting] = field(default_factory=list)
    """Visibility at set-up and after meeting teleports (not free roam)."""
    attempts: list[TaskAttempt] = field(default_factory=list)
    kills: list[KillRecord] = field(default_factory=list)
    reports: list[ReportRecord] = field(default_factory=list)
    emergencies: list[tuple[int, int, str]] = field(default_factory=list)
    meetings: list[MeetingRecord] = field(default_factory=list)
    kill_ready: list[tuple[int, str, int]] = field(default_factory=list)
    """(tick, impostor, ready tick): each change of an impostor's kill readiness, as the
    engine logged it (`controller.readiness.kill_readiness`)."""
    ejections: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Ejected agent -> (step, tick)."""
    deaths: dict[str, int] = field(default_factory=dict)
    """Killed agent -> kill tick."""
    decisions_failed: dict[str, int] = field(default_factory=dict)
    """Error kind -> count of decisions that carried an error."""
    winner: str | None = None
    ending: str = ""
    status: str = "ok"
    end_tick: int = 0
    flags: list[str] = field(default_factory=list)
    step_round: dict[int, int] = field(default_factory=dict)
    """Free-roam step -> its round (1-based: round k ends with meeting k's calling step;
    the steps after the last meeting are round `len(meetings) + 1`)."""
    _roam_cache: dict[str, list[Sample]] = field(default_factory=dict, repr=False)
    _step_cache: dict[tuple[str, int], list[Sample]] = field(default_factory=dict, repr=False)
    _by_step: dict[str, dict[int, list[Sample]]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ queries
    def model_of(self, agent: str) -> str:
        """The model address a seat played with (`scripted` for the control agents)."""
        return SeatAgent.from_description(self.agent_specs.get(agent, {})).backend

    def gone_tick(self, agent: str) -> int | None:
        """Tick at which the agent left play (killed or ejected), or None."""
        if agent in self.deaths:
            return self.deaths[agent]
        if agent in self.ejections:
            return self.ejections[agent][1]
        return None

    def alive_at(self, agent: str, tick: int) -> bool:
        """Whether the agent was in play at `tick` (a kill at `tick` already counts)."""
        gone = self.gone_tick(agent)
        return gone is None or tick < gone

    def free_roam_steps(self, first: int, last: int) -> list[StepInfo]:
        """Free-roam steps with `first <= step <= last`, in order."""
        return [
            s
            for n, s in sorted(self.steps.items())
            if first <= n <= last and s.phase == "free_roam"
        ]

    def round_of(self, step: int) -> int | None:
        """The round a free-roam step belongs to, None for any other step."""
        return self.step_round.get(step)

    def round_steps(self, round_no: int) -> list[int]:
        """The free-roam steps of a round, in order."""
        return sorted(n for n, r in self.step_round.items() if r == round_no)

    def step_samples(self, agent: str, step: int) -> list[Sample]:
        """The agent's samples of one free-roam step, alive only, in tick order.

        The step's own samples (a round's first step also holds the round's first
        positions: the set-up or vote-end snapshot). A step whose own samples start
        after its first tick (a log without `trace`) also gets the previous step's last
        pose where it began, when that step is of the same round; never one from
        another round.
        """
        key = (agent, step)
        cached = self._step_cache.get(key)
        if cached is not None:
            return cached
        info = self.steps.get(step)
        out: list[Sample] = []
        if info is not None and info.phase == "free_roam":
            if agent not in self._by_step:
                index: dict[int, list[Sample]] = {}
                for s in self.samples.get(agent, []):
                    index.setdefault(s.step, []).append(s)
                self._by_step[agent] = index
            gone = self.gone_tick(agent)
            out = [s for s in self._by_step[agent].get(step, []) if gone is None or s.tick <= gone]
            rnd = self.round_of(step)
            prev = self.steps.get(step - 1)
            if (
                (not out or out[0].tick > info.start_tick)
                and prev is not None
                and rnd is not None
                and self.round_of(prev.step) == rnd
            ):
                prior = self.step_samples(agent, prev.step)
                before = [s for s in prior if s.tick <= info.start_tick]
                if before:
                    out = [before[-1], *out]
        self._step_cache[key] = out
        return out

    def samples_in(
        self,
        agent: str,
        first_step: int,
        last_step: int,
        first_tick: int | None = None,
        last_tick: int | None = None,
    ) -> list[Sample]:
        """The agent's free-roam samples of the steps `first_step..last_step`, alive only.

        Samples are chosen by the step they were logged in (`step_samples`); the ticks,
        when given, only narrow that choice further (a tick phrase, the calling step's
        end), they never add a sample of another step.
        """
        out: list[Sample] = []
        for n in range(first_step, last_step + 1):
            for s in self.step_samples(agent, n):
                if first_tick is not None and s.tick < first_tick:
                    continue
                if last_tick is not None and s.tick > last_tick:
                    continue
                out.append(s)
        return out

    def dwell_in(
        self,
        agent: str,
        first_step: int,
        last_step: int,
        first_tick: int | None = None,
        last_tick: int | None = None,
    ) -> dict[str, int]:
        """Ticks per room over the steps `first_step..last_step` (as `samples_in`).

        Each step is counted on its own: its last sample holds until the step's end (or
        `last_tick`), never across a meeting into the next round.
        """
        out: dict[str, int] = {}
        for n in range(first_step, last_step + 1):
            info = self.steps.get(n)
            if info is None or info.phase != "free_roam":
                continue
            own = self.samples_in(agent, n, n, first_tick, last_tick)
            end = info.end_tick if last_tick is None else min(info.end_tick, last_tick)
            for room, ticks in dwell_ticks(own, end).items():
                out[room] = out.get(room, 0) + ticks
        return out

    def _roam_samples(self, agent: str) -> list[Sample]:
        cache = self._roam_cache
        if agent not in cache:
            cache[agent] = [
                s
                for s in self.samples.get(agent, [])
                if self.steps.get(s.step) is None
                or self.steps[s.step].phase in ("free_roam", "setup")
            ]
        return cache[agent]

    def _sample_at(self, agent: str, tick: int, step: int | None) -> Sample | None:
        if step is not None and self.round_of(step) is not None:
            # The step's own samples, then the earlier steps of the same round only.
            rnd = self.round_of(step)
            for n in range(step, 0, -1):
                if self.round_of(n) != rnd:
                    break
                own = [s for s in self.step_samples(agent, n) if n != step or s.tick <= tick]
                if own:
                    return own[-1]
            return None
        samples = self._roam_samples(agent)
        i = bisect.bisect_right([s.tick for s in samples], tick) - 1
        return samples[i] if i >= 0 else None

    def room_at(self, agent: str, tick: int, step: int | None = None) -> str | None:
        """The room of the agent's last free-roam sample at or before `tick`.

        With `step` (a free-roam step) only that step and the earlier steps of its round
        are looked at: a round's start and the previous round's end can share a tick.
        Without it, the last sample by tick (a point query, never a claim's window).
        """
        s = self._sample_at(agent, tick, step)
        return s.room if s else None

    def pos_at(self, agent: str, tick: int, step: int | None = None) -> Vec3 | None:
        """The position of the agent's last free-roam sample at or before `tick` (as
        `room_at`)."""
        s = self._sample_at(agent, tick, step)
        return s.pos if s else None

    def meeting(self, index: int) -> MeetingRecord | None:
        """The meeting with this index, or None."""
        for m in self.meetings:
            if m.index == index:
                return m
        return None


# ---------------------------------------------------------------------- building


def _geometry(start: GameStart) -> ShipGeometry | None:
    # The map as played (`map_spec`) wins over today's packaged map of the same name.
    key = json.dumps(start.map_spec, sort_keys=True) if start.map_spec else ""
    return _geometry_cached(key, start.map)


@functools.lru_cache(maxsize=8)
def _geometry_cached(spec_json: str, name: str) -> ShipGeometry | None:
    spec: MapSpec | None = None
    try:
        spec = parse_map(json.loads(spec_json), "game_start.map_spec") if spec_json else None
    except MapSpecError:
        spec = None
    if spec is None:
        try:
            spec = load_map(name)
        except MapSpecError:
            return None
    return ShipGeometry(spec)


def _station_room(geo: ShipGeometry | None, station: int) -> str:
    if geo is None:
        return UNKNOWN_ROOM
    try:
        return geo.station_room(station)
    except KeyError:
        return UNKNOWN_ROOM


def _dedupe(seq: Iterable[str]) -> list[str]:
    out: list[str] = []
    for x in seq:
        if not out or out[-1] != x:
            out.append(x)
    return out


def _tag_station(tag: str) -> tuple[str, int] | None:
    name, _, rest = tag.partition(":")
    if name in ("task_start", "task_resume", "task_done") and rest.isdigit():
        return name, int(rest)
    return None


def build_trajectory(events: Sequence[Event]) -> Trajectory:
    """Rebuild the trajectory of every player from a game's events.

    Args:
        events: The game's events in log order (schema v1 or v2).

    Returns:
        The trajectory.

    Raises:
        ValueError: the events hold no `game_start`.
    """
    start = next((e for e in events if isinstance(e, GameStart)), None)
    if start is None:
        raise ValueError("the log has no game_start event; it is not a game's event log")
    geo = _geometry(start)
    traj = Trajectory(
        game_id=start.game_id,
        agents=list(start.agents),
        roles=dict(start.roles),
        tasks={a: list(t) for a, t in start.tasks.items()},
        config=dict(start.config),
        agent_specs={a: dict(s) for a, s in start.agent_specs.items()},
        map_name=start.map,
        geometry=geo,
        sample_interval=start.sample_interval_ticks,
    )

    def room_of(pos: Vec3, given: str | None = None) -> str:
        if geo is not None:
            return geo.room_at(pos)
        return given or UNKNOWN_ROOM

    index = GameIndex.of(events if isinstance(events, list) else list(events))
    # (sort key, sample): the log's order breaks ties of equal ticks
    keyed: dict[str, list[tuple[tuple[int, bool, int], Sample]]] = {a: [] for a in start.agents}
    ghosts: dict[str, list[tuple[tuple[int, int], Sample]]] = {}

    def add_sample(agent: str, sample: Sample, seq: int) -> None:
        """File a sample of `agent` logged at `seq`: a ghost's apart."""
        if index.is_ghost(agent, sample.step):
            ghosts.setdefault(agent, []).append(((sample.tick, seq), sample))
        else:
            key = (sample.tick, sample.source != "positions", seq)
            keyed.setdefault(agent, []).append((key, sample))

    # Where everyone was: the index's trace poses and its step-end, set-up and vote-end
    # snapshots (never the meeting table, never the moment of the call).
    traj.has_trace = bool(index.traced_steps)
    if index.sample_interval is not None:
        traj.sample_interval = index.sample_interval
    for agent, track in index.trace_poses.items():
        for p in track:
            add_sample(agent, Sample(p.tick, p.step, p.pos, p.yaw, room_of(p.pos), "trace"), p.seq)
    for snapshot in index.end_snapshots():
        shot = snapshot.event
        for agent, snap in shot.players.items():
            if snap.status == "alive":
                sample = Sample(
                    shot.tick,
                    snapshot.at,
                    snap.pos,
                    snap.yaw,
                    room_of(snap.pos, snap.room),
                    "positions",
                )
                keyed.setdefault(agent, []).append(((shot.tick, False, snapshot.seq), sample))
    phase_of: dict[int, str] = {0: "setup", **index.step_phase}
    step_start_tick: dict[int, int] = {0: 0, **index.step_start_tick}
    step_end_tick: dict[int, int] = {0: 0}
    end_snapshot: dict[int, dict[str, tuple[Vec3, str, bool]]] = {}
    for n, (tick, players) in index.end_players().items():
        step_end_tick[n] = tick
        end_snapshot[n] = {}
        for agent, snap in players.items():
            alive = snap.status == "alive"
            pos, room = snap.pos, room_of(snap.pos, snap.room)
            gone = None if alive else index.out_of_play_snapshot(agent)
            if gone is not None:
                # out of play it stays where it left play, as the living know it, even
                # when it walks on as a ghost (`rules.ghost_tasks`)
                pos, room = gone.pos, room_of(gone.pos, gone.room)
            end_snapshot[n][agent] = (pos, room, alive)
    # Who saw whom: the index's visibility records, the meeting table's kept apart.
    for sight in index.sightings:
        vis = sight.event
        target_list = traj.seat_sightings if sight.seats else traj.sightings
        for fov_map, near_map, body in (
            (vis.sees, vis.near, False),
            (vis.bodies, vis.bodies_near, True),
        ):
            for viewer in sorted(set(fov_map) | set(near_map)):
                fov = set(fov_map.get(viewer, []))
                near = set(near_map.get(viewer, []))
                for target in sorted(fov | near):
                    target_list.append(
                        Sighting(
                            vis.tick,
                            sight.at,
                            viewer,
                            target,
                            target in fov,
                            target in near,
                            vis.cause,
                            vis.subject,
                            body=body,
                            round_start=sight.at != vis.step,
                        )
                    )

    open_attempts: dict[tuple[str, int], TaskAttempt] = {}
    seen_starts: set[tuple[str, int, int]] = set()
    current_meeting: MeetingRecord | None = None
    last_meeting_end_step = 0
    last_meeting_end_tick = 0

    def open_attempt(agent: str, station: int, tick: int, step: int, fake: bool) -> None:
        key = (agent, station)
        # The same start is reported by `task_start` and by the program's `mark`, in
        # either order (v2 logs rule events before the program that caused them).
        if key in open_attempts or (agent, station, tick) in seen_starts:
            return
        seen_starts.add((agent, station, tick))
        att = TaskAttempt(
            agent=agent,
            station=station,
            room=_station_room(geo, station),
            start_tick=tick,
            start_step=step,
            fake=fake,
        )
        open_attempts[key] = att
        traj.attempts.append(att)

    def close_attempt(
        agent: str, station: int, tick: int, step: int, outcome: Any, reason: str = ""
    ) -> None:
        att = open_attempts.pop((agent, station), None)
        if att is None:
            return
        att.end_tick, att.end_step, att.outcome, att.reason = tick, step, outcome, reason

    for seq, ev in enumerate(events):
        step = ev.step
        if isinstance(ev, ProgramRun):
            for pe in ev.events:
                if pe.get("kind") != "mark":
                    continue
                tick = int(pe.get("tick", ev.end_tick))
                raw_pos = pe.get("pos")
                if isinstance(raw_pos, list | tuple) and len(raw_pos) == 3:
                    pos = (float(raw_pos[0]), float(raw_pos[1]), float(raw_pos[2]))
                    add_sample(ev.agent, Sample(tick, step, pos, None, room_of(pos), "mark"), seq)
                parsed = _tag_station(str(pe.get("tag", "")))
                if parsed and parsed[0] in ("task_start", "task_resume"):
                    fake = traj.roles.get(ev.agent) == "impostor"
                    open_attempt(ev.agent, parsed[1], tick, step, fake)
        elif isinstance(ev, TaskStart):
            open_attempt(ev.agent, ev.station, ev.tick, step, ev.fake)
        elif isinstance(ev, TaskInterrupted):
            close_attempt(ev.agent, ev.station, ev.tick, step, "interrupted", ev.reason)
        elif isinstance(ev, TaskDone):
            if (ev.agent, ev.station) not in open_attempts:
                # v1 logs have no task_start: the program's mark (logged earlier) opened
                # the attempt, or nothing did and the task's own start tick is used.
                begin = ev.start_tick if ev.start_tick is not None else ev.tick
                open_attempt(ev.agent, ev.station, begin, step, ev.fake)
            close_attempt(ev.agent, ev.station, ev.tick, step, "faked" if ev.fake else "done")
        elif isinstance(ev, Kill):
            traj.kills.append(KillRecord(step, ev.tick, ev.killer, ev.victim, ev.room, ev.pos))
            traj.deaths[ev.victim] = ev.tick
            kill_sample = Sample(ev.tick, step, ev.pos, None, room_of(ev.pos, ev.room), "kill")
            keyed.setdefault(ev.victim, []).append(((ev.tick, True, seq), kill_sample))
            for (agent, station), _att in list(open_attempts.items()):
                if agent == ev.victim:
                    close_attempt(agent, station, ev.tick, step, "interrupted", "killed")
        elif isinstance(ev, Report):
            traj.reports.append(ReportRecord(step, ev.tick, ev.reporter, ev.victim, ev.room))
        elif isinstance(ev, Emergency):
            traj.emergencies.append((step, ev.tick, ev.caller))
        elif isinstance(ev, MeetingStart):
            first = min(
                (n for n, p in phase_of.items() if p == "free_roam" and n > last_meeting_end_step),
                default=step,
            )
            current_meeting = MeetingRecord(
                index=ev.index,
                step=step,
                tick=ev.tick,
                trigger=ev.trigger,
                caller=ev.caller,
                victim=ev.victim,
                order=list(ev.order),
                dead=list(ev.dead),
                round_first_step=first,
                round_start_tick=last_meeting_end_tick,
            )
            traj.meetings.append(current_meeting)
            for (agent, station), _att in list(open_attempts.items()):
                close_attempt(agent, station, ev.tick, step, "interrupted", "meeting")
        elif isinstance(ev, Speech) and current_meeting is not None:
            current_meeting.speeches.append(
                SpeechRecord(
                    current_meeting.index,
                    step,
                    ev.speaker,
                    ev.utterance,
                    ev.text,
                    ev.passed,
                    ev.failed,
                    ev.error_kind,
                )
            )
        elif isinstance(ev, Vote) and current_meeting is not None:
            current_meeting.votes.append(
                VoteRecord(
                    current_meeting.index,
                    step,
                    ev.tick,
                    ev.voter,
                    ev.target,
                    ev.failed,
                    ev.error_kind,
                )
            )
        elif isinstance(ev, MeetingEnd) and current_meeting is not None:
            current_meeting.ejected = ev.ejected
            current_meeting.outcome = ev.outcome
            current_meeting.end_step = step
            current_meeting.end_tick = ev.tick
            last_meeting_end_step = step
            last_meeting_end_tick = ev.tick
            current_meeting = None
        elif isinstance(ev, Eject):
            traj.ejections[ev.agent] = (step, ev.tick)
        elif isinstance(ev, Decision):
            if ev.error_kind:
                traj.decisions_failed[ev.error_kind] = (
                    traj.decisions_failed.get(ev.error_kind, 0) + 1
                )
        elif isinstance(ev, GameEnd):
            traj.winner = ev.winner
            traj.ending = ev.ending
            traj.status = ev.status
            traj.end_tick = ev.tick
            traj.flags = list(ev.flags)

    for agent, items in keyed.items():
        traj.samples[agent] = [x for _, x in sorted(items, key=lambda item: item[0])]
    for agent, ghost_items in ghosts.items():
        traj.ghost_samples[agent] = [x for _, x in sorted(ghost_items, key=lambda item: item[0])]

    steps = sorted(set(phase_of) | set(step_end_tick))
    for n in steps:
        begin = step_start_tick.get(n, step_end_tick.get(n - 1, 0))
        end = step_end_tick.get(n, begin)
        traj.steps[n] = StepInfo(n, phase_of.get(n, "free_roam"), begin, end)
    if not traj.end_tick:
        traj.end_tick = max((s.end_tick for s in traj.steps.values()), default=0)
    calls = {m.step for m in traj.meetings}
    round_no = 1
    for n, info in sorted(traj.steps.items()):
        if info.phase == "free_roam":
            traj.step_round[n] = round_no
            if n in calls:
                round_no += 1
    _fill_player_steps(traj, end_snapshot)
    traj.kill_ready = [
        (e.tick, agent, ready) for e in index.kill_ready for agent, ready in e.ready.items()
    ]
    return traj


def _fill_player_steps(
    traj: Trajectory, end_snapshot: dict[int, dict[str, tuple[Vec3, str, bool]]]
) -> None:
    for agent in traj.agents:
        per: dict[int, PlayerStep] = {}
        prev: tuple[Vec3, str, bool] = ((0.0, 0.0, 0.0), UNKNOWN_ROOM, True)
        for n, info in sorted(traj.steps.items()):
            snap = end_snapshot.get(n, {}).get(agent, prev)
            prev = snap
            pos, room, alive = snap
            alive = alive and traj.alive_at(agent, info.end_tick)
            ps = PlayerStep(step=n, phase=info.phase, room=room, pos=pos, alive=alive)
            if info.phase == "free_roam":
                window = traj.step_samples(agent, n)
                ps.rooms = _dedupe(s.room for s in window)
                ps.room_ticks = traj.dwell_in(agent, n, n)
            per[n] = ps
        traj.players[agent] = per
    for att in traj.attempts:
        for n, info in traj.steps.items():
            if info.phase != "free_roam":
                continue
            if att.start_step > n or (att.end_step is not None and att.end_step < n):
                continue
            rec = traj.players.get(att.agent, {}).get(n)
            if rec is None:
                continue
            ended_here = att.end_step == n
            if ended_here and att.outcome in ("done", "faked", "interrupted"):
                state: TaskState = att.outcome
            elif att.start_step == n:
                state = "started"
            else:
                state = "in_progress"
            rec.tasks[att.station] = state
    for s in traj.sightings:
        seer = traj.players.get(s.viewer, {}).get(s.step)
        if seer is None:
            continue
        if s.body:
            if s.fov and s.target not in seer.bodies_seen:
                seer.bodies_seen.append(s.target)
        else:
            if s.fov and s.target not in seer.sees:
                seer.sees.append(s.target)
            if s.near and s.target not in seer.near:
                seer.near.append(s.target)


def dwell_ticks(samples: Sequence[Sample], end_tick: int) -> dict[str, int]:
    """Ticks spent per room: each sample's room holds until the next sample (or `end_tick`).

    Args:
        samples: Samples in tick order.
        end_tick: Where the last sample's stay ends.

    Returns:
        Room -> ticks.
    """
    out: dict[str, int] = {}
    for i, s in enumerate(samples):
        nxt = samples[i + 1].tick if i + 1 < len(samples) else max(end_tick, s.tick)
        out[s.room] = out.get(s.room, 0) + max(0, nxt - s.tick)
    return out


def load_trajectory(run: str | Path) -> Trajectory:
    """Read a run folder (or an `events.jsonl`) and rebuild its trajectory.

    Args:
        run: A run folder holding `events.jsonl`, or the log file itself.

    Returns:
        The trajectory.

    Raises:
        FileNotFoundError: no event log there.
    """
    path = log_path(run)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no event log (expected a run folder with {LOG_FILE})")
    return build_trajectory(RunRecord.read(path).events)
