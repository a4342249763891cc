"""What an agent gets each step: only what its player could know.

An `Observation` is built for every living agent at the end of every step (after
programs finish, before decisions). It carries the first-person frame (when
frames are on), the scoreboard, the chat since the agent's last observation with
every line typed by origin, its own pose and room, and what it can see now and
has seen before. The state views in `controller.views` choose what of it a model
is shown.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from controller.events import Role, Vec3

FRAME_SHAPE = (360, 640, 3)
"""Height, width, channels of every first-person frame."""


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


class Scoreboard(BaseModel):
    """The signals a player has on screen besides the picture."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    phase: Literal["free_roam", "meeting", "voting", "over"]
    """Game phase."""
    kill_ready: bool
    """Impostors: the kill cooldown has run out (always false for crewmates)."""
    task_bits: list[bool]
    """Completion of each of this player's own tasks, in task order."""
    dead: bool
    """This player is a ghost (killed or ejected)."""
    meeting_countdown: int | None
    """Ticks of talk left in the current meeting; None outside meetings."""
    speaker: str | None
    """Whose turn it is to talk (meetings only)."""
    game_over: bool
    """The game has ended."""
    area: str
    """The room (or `hallway`) this player stands in."""
    task_in_progress: int | None
    """Station whose task this player started but did not finish last step."""
    reported_body: str | None
    """Whose body was reported to call the current meeting."""
    emergency_ready: bool
    """This player could press the emergency button now."""


class Sighting(BaseModel):
    """Where and when an agent last saw a player or a body."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: int
    tick: int
    pos: Vec3
    room: str


class Observation(BaseModel):
    """One living agent's view at the end of a step, before it decides."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

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
    scoreboard: Scoreboard
    last_seen: dict[str, Sighting] = Field(default_factory=dict)
    bodies_seen: dict[str, Sighting] = Field(default_factory=dict)
    chat: list[ChatEntry] = Field(default_factory=list)
    meeting: MeetingView | None = None
    rgb: np.ndarray | None = None
    """First-person frame, uint8 of shape (360, 640, 3); None when frames are off."""
    jpeg: bytes | None = None
    """The same frame JPEG-encoded (what models are sent); None when frames are off."""
    frame_path: str | None = None
    """Where the frame was saved under the run folder, if it was."""
