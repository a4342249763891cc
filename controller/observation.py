"""What an agent gets each step: only what its player could know."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.events import Role, Vec3


class ChatEntry(BaseModel):
    """One line of the chat log, typed by origin.

    `server` entries come from the engine only; anything a player says is `speech`,
    whatever its text looks like.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int
    step: int
    tick: int
    kind: Literal["speech", "server"]
    speaker: str | None = None
    text: str


class MeetingView(BaseModel):
    """The meeting as seen by a participant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int
    trigger: Literal["report", "emergency"]
    caller: str
    victim: str | None
    body_room: str | None
    body_pos: Vec3 | None
    order: list[str]
    speaker: str | None
    utterances_left: int
    talk_ticks_left: int


class Observation(BaseModel):
    """One living agent's view at the end of a step, before it decides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str
    role: Role
    step: int
    tick: int
    phase: Literal["free_roam", "meeting", "voting"]
    pos: Vec3
    yaw: float
    room: str
    tasks: list[int]
    tasks_done: list[int]
    teammates: list[str]
    kill_ready: bool
    emergency_ready: bool
    known_dead: list[str]
    players: list[str]
    visible_players: dict[str, Vec3]
    visible_bodies: dict[str, Vec3]
    chat: list[ChatEntry] = Field(default_factory=list)
    meeting: MeetingView | None = None
