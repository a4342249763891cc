"""The one index of a game's log: who was where, who saw whom, seats, phases, rule state.

`GameIndex.of(events)` folds a game's typed events (read through `controller.record`)
once and answers, at any step or tick, what every reader of a log used to rebuild for
itself (`annotation.gamelog`, `annotation.grounding.trajectory`, the tests):

* positions: every `positions` snapshot classified once (`Snapshot.role`): `end` (a
  step's end, the set-up or a vote's end), `seats` (after the teleport to the meeting
  table) or `call` (at the call, before the teleport); the step each one stands for
  (`Snapshot.at`: a round's first positions, written at set-up or at a vote's end, belong
  to the next step); each step's end (`step_end`, `timeline`) and each player's
  position where it left play (`out_of_play_snapshot`);
* dense poses: the `trace` samples (`trace_poses`), a ghost's marked
  (`rules.ghost_tasks`: a crewmate out of play walking on, unseen by the living), with the
  step-end fallback of a log without trace (`pose_track`);
* sight: every `visibility` record classified as free roam or meeting seats
  (`sightings`); ghosts never appear in them;
* phases: each step's phase and tick span, the meetings' first talking steps, the arc
  phase of a step, the steps that begin a round;
* rule state: who left play when (`left_play`), kill readiness as the engine logged it
  (`kill_ready`, `controller.readiness`).

Old logs are read the same way everywhere: a log written before the `meeting_seats`
cause labels the snapshot (and visibility) taken after the meeting teleport `step_end`
too; it is the second such record of the calling step, after `meeting_start`, and is
classified as seats, never as where the step ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from controller.events import (
    Eject,
    Event,
    GameStart,
    Kill,
    KillReady,
    MeetingEnd,
    MeetingStart,
    PlayerSnapshot,
    Positions,
    Status,
    StepStart,
    Trace,
    Vec3,
    Visibility,
)
from controller.readiness import kill_readiness
from controller.record import events_of

SnapshotRole = Literal["end", "seats", "call"]


@dataclass(frozen=True)
class Snapshot:
    """One `positions` event, classified once."""

    event: Positions
    role: SnapshotRole
    """`end` (a step's end, the set-up, a vote's end), `seats` (after the meeting
    teleport) or `call` (at the call, before the teleport)."""
    at: int
    """The step the snapshot stands for: a round's first positions (set-up, vote end)
    belong to the next step, every other one to its own."""
    seq: int = 0
    """Position of the event in the log."""


@dataclass(frozen=True)
class Sight:
    """One `visibility` event, classified once."""

    event: Visibility
    seats: bool
    """Taken at the meeting table (after the teleport, or during talk): not free roam."""
    at: int
    """The step the record stands for (a round's first sight belongs to the next step)."""


@dataclass(frozen=True)
class PlayerAtStep:
    """A player's room, status and position at the end of a step."""

    room: str
    status: Status
    pos: Vec3


Timeline = dict[int, dict[str, PlayerAtStep]]


@dataclass(frozen=True)
class TrackPoint:
    """One pose of a player at a tick."""

    tick: int
    step: int
    pos: Vec3
    yaw: float
    ghost: bool = False
    """A ghost's pose: out of play since an earlier step, walking unseen by the living."""
    seq: int = field(default=0, compare=False, repr=False)
    """Position in the log of the event the pose came from (orders equal ticks)."""


_RANK = {"step_end": 3, "vote_end": 2, "setup": 2, "meeting_seats": 1, "meeting_call": 0}
"""Which snapshot of a step stands for the step in `timeline`: where its programs ended
first (a `step_end` classified as seats ranks as seats)."""


@dataclass
class GameIndex:
    """A game's log, folded once; see the module docstring for what it answers."""

    start: GameStart
    events: list[Event]
    snapshots: list[Snapshot] = field(default_factory=list)
    sightings: list[Sight] = field(default_factory=list)
    trace_poses: dict[str, list[TrackPoint]] = field(default_factory=dict)
    """Every player's `trace` samples in log order, a ghost's marked `ghost`."""
    traced_steps: set[int] = field(default_factory=set)
    sample_interval: int | None = None
    """The last `trace` event's sample interval (None for a log without trace)."""
    step_phase: dict[int, str] = field(default_factory=dict)
    """Step -> `free_roam`/`meeting`/`voting` (from `step_start`)."""
    step_start_tick: dict[int, int] = field(default_factory=dict)
    step_ticks: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Step (> 0) -> (first tick, last tick) seen in its events."""
    left_play: dict[str, tuple[int, int, Status]] = field(default_factory=dict)
    """Seat -> (step, tick, `dead`/`ejected`) of leaving play (`kill`, `eject`)."""
    meeting_starts: list[MeetingStart] = field(default_factory=list)
    meeting_ends: list[MeetingEnd] = field(default_factory=list)
    _statuses: list[dict[str, Status]] = field(default_factory=list, repr=False)
    _ends: dict[int, dict[str, PlayerSnapshot]] = field(default_factory=dict, repr=False)
    _end_tick: dict[int, int] = field(default_factory=dict, repr=False)
    _kill_ready: list[KillReady] | None = field(default=None, repr=False)
    _step_end_cache: dict[int, Positions] | None = field(default=None, repr=False)
    _phase: dict[int, str] = field(default_factory=lambda: {0: "setup"}, repr=False)
    _called: set[int] = field(default_factory=set, repr=False)
    """Steps in which a meeting was called (so far)."""
    _end_seen: set[int] = field(default_factory=set, repr=False)
    """Free-roam steps whose step-end sight is logged (so far)."""
    _status: dict[str, Status] = field(default_factory=dict, repr=False)
    _best: dict[int, tuple[int, int]] = field(default_factory=dict, repr=False)
    """Step -> (rank, snapshot number) of the snapshot that stands for it."""
    _by_step: dict[int, dict[str, list[TrackPoint]]] = field(default_factory=dict, repr=False)
    """Step -> player -> its `trace` samples of the step (a player traced with none too)."""

    def __post_init__(self) -> None:
        self._status = dict.fromkeys(self.start.agents, "alive")

    # ------------------------------------------------------------------ building
    @classmethod
    def of(cls, events: list[Event] | str | Path) -> GameIndex:
        """The index of a game's events (or of the log at a path), built once per list
        (a list is a game's log as read: one changed in place afterwards is not seen)."""
        evs = events_of(events)
        key = (id(evs), len(evs))
        hit = _MEMO.get(key)
        if hit is not None and hit[0] is evs:
            return hit[1]
        index = cls.build(evs)
        _MEMO[key] = (evs, index)
        while len(_MEMO) > _MEMO_SIZE:
            del _MEMO[next(iter(_MEMO))]
        return index

    @classmethod
    def build(cls, events: Sequence[Event]) -> GameIndex:
        """Fold the events (in log order) into a new index.

        Raises:
            ValueError: the events hold no `game_start`.
        """
        start = next((e for e in events if isinstance(e, GameStart)), None)
        if start is None:
            raise ValueError("the log has no game_start event; it is not a game's event log")
        index = cls(start=start, events=list(events))
        index._fold()
        return index

    def add(self, ev: Event) -> None:
        """Fold one more event (the next in log order) into the index: a log still
        being written (the viewer) is followed event by event."""
        seq = len(self.events)
        self.events.append(ev)
        self._fold_one(seq, ev)

    def _fold(self) -> None:
        for seq, ev in enumerate(self.events):
            self._fold_one(seq, ev)

    def _fold_one(self, seq: int, ev: Event) -> None:
        step = ev.step
        self._step_end_cache = None
        self._kill_ready = None
        if step > 0:
            lo, hi = self.step_ticks.get(step, (ev.tick, ev.tick))
            self.step_ticks[step] = (min(lo, ev.tick), max(hi, ev.tick))
        if isinstance(ev, StepStart):
            self._phase[step] = ev.phase
            self.step_phase[step] = ev.phase
            self.step_start_tick[step] = ev.tick
        elif isinstance(ev, GameStart):
            self._status = dict.fromkeys(ev.agents, "alive")
        elif isinstance(ev, Kill):
            self._status[ev.victim] = "dead"
            self.left_play.setdefault(ev.victim, (step, ev.tick, "dead"))
        elif isinstance(ev, Eject):
            self._status[ev.agent] = "ejected"
            self.left_play.setdefault(ev.agent, (step, ev.tick, "ejected"))
        elif isinstance(ev, MeetingStart):
            self._called.add(step)
            self.meeting_starts.append(ev)
        elif isinstance(ev, MeetingEnd):
            self.meeting_ends.append(ev)
        elif isinstance(ev, Trace):
            self.traced_steps.add(step)
            self.sample_interval = ev.interval
            by_agent = self._by_step.setdefault(step, {})
            for agent, samples in ev.players.items():
                ghost = self.is_ghost(agent, step)
                points = [
                    TrackPoint(tick, step, (x, y, z), yaw, ghost, seq)
                    for tick, (x, y, z, yaw) in zip(ev.ticks, samples, strict=False)
                ]
                self.trace_poses.setdefault(agent, []).extend(points)
                by_agent.setdefault(agent, []).extend(points)
        elif isinstance(ev, Positions):
            self._add_snapshot(ev, seq)
        elif isinstance(ev, Visibility):
            here = self._phase.get(step, "free_roam")
            called = step in self._called
            seats = (
                ev.cause == "meeting_seats"
                or here == "meeting"
                or (ev.cause == "step_end" and called and step in self._end_seen)
            )
            at = step + 1 if (here in ("setup", "voting") or ev.cause == "setup") else step
            if not seats and ev.cause == "step_end" and here == "free_roam":
                self._end_seen.add(step)
            self.sightings.append(Sight(ev, seats, at))

    def _add_snapshot(self, ev: Positions, seq: int) -> None:
        step = ev.step
        after = step in self._called
        if ev.cause == "meeting_call":
            shot = Snapshot(ev, "call", step, seq)
        elif ev.cause == "meeting_seats" or (after and step in self._ends):
            shot = Snapshot(ev, "seats", step, seq)
        else:
            phase = self._phase.get(step, "free_roam")
            at = step + 1 if (phase in ("setup", "voting") or ev.cause == "vote_end") else step
            shot = Snapshot(ev, "end", at, seq)
            # A vote's end logged in a step that already ended keeps that step's end
            # tick; its players' positions are the latest.
            if ev.cause != "vote_end" or step not in self._ends:
                self._ends[step] = {}
                self._end_tick[step] = ev.tick
            self._ends[step].update(ev.players)
        self.snapshots.append(shot)
        self._statuses.append(dict(self._status))
        rank = 1 if shot.role == "seats" else _RANK.get(ev.cause, 0)
        if step not in self._best or rank >= self._best[step][0]:
            self._best[step] = (rank, len(self.snapshots) - 1)

    # ------------------------------------------------------------------ who was where
    def is_ghost(self, agent: str, step: int) -> bool:
        """Whether the agent was out of play since an earlier step than `step` (a ghost's
        pose there is where it really walked, unseen by the living)."""
        gone = self.left_play.get(agent)
        return gone is not None and step > gone[0]

    def end_snapshots(self) -> list[Snapshot]:
        """The snapshots that say where a step ended or a round began, in log order."""
        return [s for s in self.snapshots if s.role == "end"]

    def step_end(self, step: int) -> Positions | None:
        """The step's first `step_end` snapshot that is no meeting table (None if none)."""
        return self._step_ends().get(step)

    def step_ends(self) -> dict[int, Positions]:
        """Step -> `step_end`, for every step that has one."""
        return dict(self._step_ends())

    def _step_ends(self) -> dict[int, Positions]:
        if self._step_end_cache is None:
            cached: dict[int, Positions] = {}
            for s in self.snapshots:
                if s.role == "end" and s.event.cause == "step_end":
                    cached.setdefault(s.event.step, s.event)
            self._step_end_cache = cached
        return self._step_end_cache

    def end_players(self) -> dict[int, tuple[int, dict[str, PlayerSnapshot]]]:
        """Step -> (tick, player -> snapshot) of where the step ended (or, for the set-up
        and a vote, where the next round begins): the step's latest `end` snapshot,
        a vote's end merged into a step that had already ended."""
        return {n: (self._end_tick[n], dict(p)) for n, p in self._ends.items()}

    def out_of_play_snapshot(self, agent: str) -> PlayerSnapshot | None:
        """The agent's first `end` snapshot out of play (where its body lies, or its seat
        when ejected): where the living know it to be from then on."""
        for s in self.snapshots:
            if s.role == "end":
                snap = s.event.players.get(agent)
                if snap is not None and snap.status != "alive":
                    return snap
        return None

    def timeline(self) -> Timeline:
        """Each step's room, status and position of every player.

        Within a step the `step_end` snapshot wins over the meeting table's
        (`meeting_seats`); of equal ones the later wins (a log without causes keeps the
        step's last snapshot). Status comes from `kill` and `eject` events (not from the
        snapshots), so the result checks the snapshots rather than repeating them.
        """
        out: Timeline = {}
        for step, (_, n) in self._best.items():
            status = self._statuses[n]
            out[step] = {
                agent: PlayerAtStep(room=snap.room, status=status.get(agent, "alive"), pos=snap.pos)
                for agent, snap in self.snapshots[n].event.players.items()
            }
        return out

    def step_snapshot(self, step: int) -> Snapshot | None:
        """The snapshot that stands for a step (as in `timeline`), None if it has none."""
        best = self._best.get(step)
        return self.snapshots[best[1]] if best is not None else None

    def pose_track(self) -> dict[str, list[TrackPoint]]:
        """Every player's free-roam poses in tick order, from `trace` events; a step
        without a `trace` (an older log, or a step in which no program ran) contributes
        the living players' `step_end` snapshot instead."""
        out: dict[str, list[TrackPoint]] = {a: list(t) for a, t in self.trace_poses.items()}
        for s in self.snapshots:
            ev = s.event
            if s.role != "end" or ev.cause != "step_end" or ev.step in self.traced_steps:
                continue
            for agent, snap in ev.players.items():
                if snap.status == "alive":
                    out.setdefault(agent, []).append(
                        TrackPoint(ev.tick, ev.step, snap.pos, snap.yaw, seq=s.seq)
                    )
        for track in out.values():
            track.sort(key=lambda p: (p.tick, p.seq))
        return out

    def trace_of(self, step: int) -> dict[str, list[TrackPoint]]:
        """The step's `trace` samples per player, in log order (ghosts' marked; a player
        a trace named without samples has an empty list)."""
        return {a: list(t) for a, t in self._by_step.get(step, {}).items()}

    # ------------------------------------------------------------------ who saw whom
    def sight_of(self, step: int) -> list[Sight]:
        """The visibility records logged in `step`, in log order."""
        return [s for s in self.sightings if s.event.step == step]

    # ------------------------------------------------------------------ phases
    def meeting_steps(self) -> dict[int, int]:
        """Meeting index -> its first talking step (the first non-free-roam step after
        the one it was called in)."""
        out: dict[int, int] = {}
        for m in self.meeting_starts:
            later = [s for s, ph in self.step_phase.items() if s > m.step and ph != "free_roam"]
            out[m.index] = min(later) if later else m.step + 1
        return out

    def arc_phase(self, step: int) -> str:
        """The arc phase (`pre_m1`, `m1`, `m1_m2`, `m2`, `post_m2`) a step falls in."""
        firsts = self.meeting_steps()
        ends = {m.index: m.step for m in self.meeting_ends}
        for index, first in sorted(firsts.items()):
            if first <= step <= ends.get(index, first):
                return "m1" if index == 1 else "m2" if index == 2 else "post_m2"
        m1 = firsts.get(1)
        if m1 is None or step < m1:
            return "pre_m1"
        m2 = firsts.get(2)
        if m2 is None or step < m2:
            return "m1_m2"
        return "post_m2"

    def round_first_steps(self) -> set[int]:
        """The free-roam steps that begin a round: the game's first, and the first after
        each meeting (everyone leaves the spawn or the meeting table together)."""
        out: set[int] = set()
        fresh = True
        for step in sorted(self.step_phase):
            if self.step_phase[step] != "free_roam":
                fresh = True
            elif fresh:
                out.add(step)
                fresh = False
        return out

    # ------------------------------------------------------------------ rule state
    @property
    def kill_ready(self) -> list[KillReady]:
        """Every change of kill readiness, as the engine logged it (`kill_ready` events;
        derived beside the engine for a log that predates them)."""
        if self._kill_ready is None:
            self._kill_ready = kill_readiness(self.events)
        return self._kill_ready

    def kill_ready_at(self, tick: int) -> dict[str, int]:
        """Impostor -> the first tick its kill is allowed, as set by `tick`."""
        now: dict[str, int] = {}
        for e in self.kill_ready:
            if e.tick > tick:
                break
            now.update(e.ready)
        return now


_MEMO: dict[tuple[int, int], tuple[list[Event], GameIndex]] = {}
_MEMO_SIZE = 8
"""The last few indexes built by `GameIndex.of`, keyed by their event list (kept alive
here, so an id is never reused while cached)."""


def rebuild_timeline(events: list[Event] | str | Path) -> Timeline:
    """Each step's room, status and position of every player (`GameIndex.timeline`)."""
    return GameIndex.of(events).timeline()


def pose_track(events: list[Event] | str | Path) -> dict[str, list[TrackPoint]]:
    """Every player's free-roam poses in tick order (`GameIndex.pose_track`)."""
    return GameIndex.of(events).pose_track()
