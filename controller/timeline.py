"""Rebuild every player's room and status at every step from the event log alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.events import Eject, Event, GameStart, Kill, Positions, Status, Vec3, read_events


@dataclass(frozen=True)
class PlayerAtStep:
    """A player's room, status and position at the end of a step."""

    room: str
    status: Status
    pos: Vec3


Timeline = dict[int, dict[str, PlayerAtStep]]


def rebuild_timeline(events: list[Event] | str | Path) -> Timeline:
    """Each step's last known room, status and position of every player.

    Status comes from `kill` and `eject` events (not from the snapshots), so the
    result checks the snapshots rather than repeating them.
    """
    evs = read_events(events) if isinstance(events, str | Path) else events
    status: dict[str, Status] = {}
    out: Timeline = {}
    for ev in evs:
        if isinstance(ev, GameStart):
            status = dict.fromkeys(ev.agents, "alive")
        elif isinstance(ev, Kill):
            status[ev.victim] = "dead"
        elif isinstance(ev, Eject):
            status[ev.agent] = "ejected"
        elif isinstance(ev, Positions):
            out[ev.step] = {
                agent: PlayerAtStep(room=snap.room, status=status.get(agent, "alive"), pos=snap.pos)
                for agent, snap in ev.players.items()
            }
    return out
