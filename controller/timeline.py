"""Rebuild where everyone was, from the event log alone.

`rebuild_timeline` gives each step's room, status and position of every player:
where they were when the step's programs ended (`positions` with cause
`step_end`), so the step that calls a meeting keeps where everyone was when it was
called, not the meeting table. `pose_track` gives each player's dense free-roam
path from the `trace` events (falling back on the `positions` snapshots for a log
that has no trace).

Both say where players really were, ghosts included (`rules.ghost_tasks`: crewmates
out of play who walk on to do their tasks, unseen by the living): a ghost's snapshot
carries its status (`dead`, `ejected`) and its track points are marked `ghost`, so
nothing built on them takes a ghost for company or a witness. Who saw whom is in the
`visibility` events, where ghosts never appear.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.events import (
    Eject,
    Event,
    GameStart,
    Kill,
    Positions,
    Status,
    Trace,
    Vec3,
)
from controller.record import events_of


@dataclass(frozen=True)
class PlayerAtStep:
    """A player's room, status and position at the end of a step."""

    room: str
    status: Status
    pos: Vec3


Timeline = dict[int, dict[str, PlayerAtStep]]

_PREFERENCE = {"step_end": 3, "vote_end": 2, "setup": 2, "meeting_seats": 1, "meeting_call": 0}
"""Which snapshot of a step stands for the step: where its programs ended first."""


def rebuild_timeline(events: list[Event] | str | Path) -> Timeline:
    """Each step's room, status and position of every player.

    Within a step the `step_end` snapshot wins over the meeting table's
    (`meeting_seats`); a log without causes keeps the step's last snapshot. Status
    comes from `kill` and `eject` events (not from the snapshots), so the result
    checks the snapshots rather than repeating them.
    """
    evs = events_of(events)
    status: dict[str, Status] = {}
    out: Timeline = {}
    rank: dict[int, int] = {}
    for ev in evs:
        if isinstance(ev, GameStart):
            status = dict.fromkeys(ev.agents, "alive")
        elif isinstance(ev, Kill):
            status[ev.victim] = "dead"
        elif isinstance(ev, Eject):
            status[ev.agent] = "ejected"
        elif isinstance(ev, Positions):
            r = _PREFERENCE.get(ev.cause, 0)
            if ev.step in rank and r < rank[ev.step]:
                continue
            rank[ev.step] = r
            out[ev.step] = {
                agent: PlayerAtStep(room=snap.room, status=status.get(agent, "alive"), pos=snap.pos)
                for agent, snap in ev.players.items()
            }
    return out


@dataclass(frozen=True)
class TrackPoint:
    """One pose of a player at a tick."""

    tick: int
    step: int
    pos: Vec3
    yaw: float
    ghost: bool = False
    """A ghost's pose: out of play since an earlier step, walking unseen by the living."""


def pose_track(events: list[Event] | str | Path) -> dict[str, list[TrackPoint]]:
    """Every player's free-roam poses in tick order, from `trace` events.

    A step without a `trace` (an older log, or a step in which no program ran)
    contributes its `step_end` snapshot instead.
    """
    evs = events_of(events)
    traced = {ev.step for ev in evs if isinstance(ev, Trace)}
    out: dict[str, list[TrackPoint]] = {}
    left: dict[str, int] = {}  # player -> the step it left play in
    for ev in evs:
        if isinstance(ev, Kill):
            left.setdefault(ev.victim, ev.step)
        elif isinstance(ev, Eject):
            left.setdefault(ev.agent, ev.step)
        elif isinstance(ev, Trace):
            for agent, samples in ev.players.items():
                track = out.setdefault(agent, [])
                ghost = agent in left and ev.step > left[agent]
                for tick, (x, y, z, yaw) in zip(ev.ticks, samples, strict=False):
                    track.append(TrackPoint(tick, ev.step, (x, y, z), yaw, ghost))
        elif isinstance(ev, Positions) and ev.cause == "step_end" and ev.step not in traced:
            for agent, snap in ev.players.items():
                if snap.status == "alive":
                    out.setdefault(agent, []).append(
                        TrackPoint(ev.tick, ev.step, snap.pos, snap.yaw)
                    )
    for track in out.values():
        track.sort(key=lambda p: p.tick)
    return out
