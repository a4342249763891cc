"""What an agent gets each step: only what its player could know.

An `Observation` is built for every agent asked to decide at the end of every step
(after programs finish, before decisions): the living, and in free roam the ghosts
(`rules.ghost_tasks`). It carries the first-person frame (when
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

FAR_SIGHT_RANGE = 36.0
"""How far (blocks) `Observation.far_players`/`far_bodies` reach: the reference
implementation's egocentric range (`controller.views.REFERENCE_EGO_RANGE`)."""


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


class TaskProgress(BaseModel):
    """A task the player is standing at and has not finished."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    station: int
    room: str
    ticks_done: int
    ticks_needed: int


class MeetingRecord(BaseModel):
    """An earlier meeting, as every participant saw it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int
    step: int
    trigger: Literal["report", "emergency"]
    caller: str
    victim: str | None
    body_room: str | None
    ejected: str | None
    outcome: Literal["ejected", "tie", "skipped", "no_votes"]
    votes: dict[str, str | None]
    """Voter -> target (`skip`, a player, or None for an abstention)."""
    ejected_role: Role | None = None
    """Only when the rules announce ejected roles (`rules.confirm_ejects`)."""


class OwnAction(BaseModel):
    """Something this agent itself did (its own memory of its actions)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: int
    tick: int
    kind: Literal[
        "moved",
        "task_started",
        "task_done",
        "task_interrupted",
        "killed",
        "reported",
        "pressed_button",
        "spoke",
        "voted",
        "program_ended",
    ]
    room: str | None = None
    target: str | None = None
    station: int | None = None
    detail: str = ""
    """e.g. the rooms passed through for `moved`, the program's status and reason."""


class Observation(BaseModel):
    """One agent's view at the end of a step, before it decides: a living player's, or,
    with `rules.ghost_tasks`, a ghost's (`ghost`).

    Perception comes in two strengths (see `controller.perception`): `visible_*`
    is what is inside the camera's field of view now; `nearby_*` is everything in
    range all around (line of sight permitting). `last_seen`/`bodies_seen` hold only
    field-of-view sightings made in free roam: the meeting teleport never overwrites
    them. `roster` is every player's last position as the server knows it (what a
    privileged view may show; an ego view never does). `far_players`/`far_bodies` reach
    farther than both sight sets (`FAR_SIGHT_RANGE`, all around) for the reference's
    egocentric view alone (`controller.views.Knowledge` with `ego_view: reference`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    agent: str
    role: Role
    ghost: bool = False
    """This player is out of play (killed or ejected) but still does its tasks
    (`rules.ghost_tasks`): it may walk, look, wait and use its stations, nothing else;
    the living neither see nor hear it, and it sees them and the other ghosts."""
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
    """Chat since this agent's previous observation."""
    meeting: MeetingView | None = None
    nearby_players: dict[str, Vec3] = Field(default_factory=dict)
    """Players in range all around (360 degrees, line of sight), whatever it faces."""
    nearby_bodies: dict[str, Vec3] = Field(default_factory=dict)
    """Bodies in range all around (360 degrees, line of sight)."""
    roster: dict[str, Sighting] = Field(default_factory=dict)
    """Every other player's current position as the server knows it (privileged only)."""
    meeting_chat: list[ChatEntry] = Field(default_factory=list)
    """The whole chat of the current meeting (empty outside meetings)."""
    past_meetings: list[MeetingRecord] = Field(default_factory=list)
    """Every earlier meeting's outcome and votes, oldest first."""
    task_progress: TaskProgress | None = None
    """The task this player is standing at, if one is in progress."""
    own_actions: list[OwnAction] = Field(default_factory=list)
    """What this agent did since its previous observation (route, tasks, kills, ...)."""
    dead_bodies_rooms: dict[str, str] = Field(default_factory=dict)
    """Victim -> room of the body, for bodies this agent has been told about (the
    reported body in a meeting) or has seen."""
    frame_sha256: str | None = None
    """sha256 of the saved frame file, if one was saved."""
    rgb: np.ndarray | None = None
    """First-person frame, uint8 of shape (360, 640, 3); None when frames are off."""
    jpeg: bytes | None = None
    """The same frame JPEG-encoded (what models are sent); None when frames are off."""
    frame_path: str | None = None
    """Where the frame was saved under the run folder, if it was."""
    far_players: dict[str, Vec3] = Field(default_factory=dict)
    """Living players (never this agent, never a ghost: the living learn nothing of the
    crewmates out of play under `rules.ghost_tasks`) within `FAR_SIGHT_RANGE` blocks all
    around and in line of sight (`ShipGeometry.can_see`), whatever the player faces. For
    the reference's egocentric view only (`ego_view: reference`: it keeps what lies
    within 60 degrees of the heading); every other view and the environment's codecs
    drop it. Filled for a living player in free roam; empty at the meeting table (whose
    sight sets already hold the seated, all within `vision_radius`) and for a ghost.
    Never logged as a `visibility`: every reader of the log takes a viewer there for a
    witness, and 36 blocks is no witness's reach (the log's poses recompute it)."""
    far_bodies: dict[str, Vec3] = Field(default_factory=dict)
    """Uncleared bodies within `FAR_SIGHT_RANGE` blocks all around and in line of sight;
    filled, read and never logged as `far_players` is."""
