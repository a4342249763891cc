"""State views: what of an observation a model is shown.

`ego` is the first-person frame, the agent's own position, the scoreboard and the
chat, nothing else. `privileged` adds a structured text view: the map's rooms and
adjacency, the agent's own tasks and where they are, the last-known position and
step of every player this agent has seen, and the bodies it has seen. Neither
view holds anything the agent could not have perceived: no hidden roles (an
impostor knows its teammates), no positions of players it has not seen.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from controller.events import Vec3
from controller.observation import ChatEntry, Observation, Scoreboard, Sighting
from world.geometry import ShipGeometry

StateMode = Literal["ego", "privileged"]


class TaskLocation(BaseModel):
    """One of the agent's own tasks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    station: int
    room: str
    pos: Vec3
    done: bool


class StateView(BaseModel):
    """What a model may be told about the game state (plus the frame, sent apart)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: StateMode
    agent: str
    role: str
    teammates: list[str]
    step: int
    pos: Vec3
    yaw: float
    room: str
    scoreboard: Scoreboard
    chat: list[ChatEntry]
    rooms: dict[str, list[str]] | None = None
    tasks: list[TaskLocation] | None = None
    last_seen: dict[str, Sighting] | None = None
    bodies_seen: dict[str, Sighting] | None = None

    def to_text(self) -> str:
        """The view as the plain text a prompt includes."""
        sb = self.scoreboard
        lines = [
            f"You are {self.agent.capitalize()}, a {self.role}"
            + (f" (fellow impostors: {', '.join(self.teammates)})" if self.teammates else "")
            + ".",
            f"Step {self.step}. Phase: {sb.phase}. You are in {self.room} at "
            f"({self.pos[0]:.1f}, {self.pos[2]:.1f}), facing {self.yaw:.0f} degrees.",
            f"Your tasks done: {sum(sb.task_bits)}/{len(sb.task_bits)}."
            + (" Your kill is ready." if sb.kill_ready else "")
            + (" You can call an emergency meeting." if sb.emergency_ready else ""),
        ]
        if sb.speaker:
            lines.append(
                f"Meeting: {sb.speaker.capitalize()} is speaking; "
                f"{sb.meeting_countdown} ticks of talk left."
            )
        if sb.reported_body:
            lines.append(f"This meeting was called over {sb.reported_body.capitalize()}'s body.")
        if self.rooms is not None:
            lines.append("Map (room: connected rooms):")
            lines += [f"  {room}: {', '.join(adj)}" for room, adj in self.rooms.items()]
        if self.tasks is not None:
            lines.append("Your tasks:")
            lines += [
                f"  station {t.station} in {t.room} at ({t.pos[0]:.1f}, {t.pos[2]:.1f})"
                f"{' (done)' if t.done else ''}"
                for t in self.tasks
            ]
        if self.last_seen is not None:
            lines.append("Players you have seen (last position, step):")
            lines += [
                f"  {who.capitalize()}: {s.room} ({s.pos[0]:.1f}, {s.pos[2]:.1f}), step {s.step}"
                for who, s in sorted(self.last_seen.items())
            ] or ["  nobody yet"]
        if self.bodies_seen is not None:
            lines.append("Bodies you have seen:")
            lines += [
                f"  {who.capitalize()}: {s.room} ({s.pos[0]:.1f}, {s.pos[2]:.1f}), step {s.step}"
                for who, s in sorted(self.bodies_seen.items())
            ] or ["  none"]
        if self.chat:
            lines.append("Chat:")
            for c in self.chat:
                who = "[Server]" if c.kind == "server" else f"<{(c.speaker or '?').capitalize()}>"
                lines.append(f"  {who} {c.text}")
        return "\n".join(lines)


def build_view(obs: Observation, mode: StateMode, geometry: ShipGeometry) -> StateView:
    """The `ego` or `privileged` state view of an observation."""
    base = StateView(
        mode=mode,
        agent=obs.agent,
        role=obs.role,
        teammates=list(obs.teammates),
        step=obs.step,
        pos=obs.pos,
        yaw=obs.yaw,
        room=obs.room,
        scoreboard=obs.scoreboard,
        chat=list(obs.chat),
    )
    if mode == "ego":
        return base
    done = set(obs.tasks_done)
    return base.model_copy(
        update={
            "rooms": geometry.adjacency(),
            "tasks": [
                TaskLocation(
                    station=s,
                    room=geometry.station_room(s),
                    pos=geometry.station_pos(s),
                    done=s in done,
                )
                for s in obs.tasks
            ],
            "last_seen": dict(obs.last_seen),
            "bodies_seen": dict(obs.bodies_seen),
        }
    )
