"""Typed shapes exchanged between the controller and a world (real or fake).

The controller compiles each agent's high-level program into *low-level steps*
(`LowStep`) that carry only coordinates, agent ids and tick counts. A world runs
them and answers with one `ProgramOutcome` per agent plus every player's pose.
The Node bot runtime (`bots/`) speaks the same shapes as JSON, one object per
line; see `docs/bridge-protocol.md`.

Conventions:
    * Positions are Minecraft block coordinates `[x, y, z]` (floats; y is feet).
    * Yaw is in degrees, Minecraft convention: 0 faces +Z (south), 90 faces -X
      (west), 180 faces -Z (north), 270 faces +X (east). Pitch is in degrees,
      positive looks down.
    * Ticks are 1/20 s of *game time*: a world's clock advances only while it plays
      a batch of programs (`World.run_programs`), never while agents decide, frames
      render or the controller waits, so a slow model cannot burn cooldowns,
      lockouts or meeting time.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from world.chat import check_chat

# Defined by the world package (which imports nothing of the controller); re-exported.
from world.shapes import BlockPlacement as BlockPlacement
from world.shapes import Vec3 as Vec3

ChatText = Annotated[str, AfterValidator(check_chat)]
"""A chat line under the rules shared with the bots (`world/chat_rules.json`): whitespace
runs become one space, ends trimmed; then 1..256 UTF-16 units, no control characters or
section sign, no leading `/`. Validation returns the normalised line."""


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GotoStep(_Shape):
    """Pathfind (no digging, no placing) until within `range` blocks of `pos`."""

    op: Literal["goto"] = "goto"
    pos: Vec3
    range: float = Field(default=1.0, ge=0.0)


class FollowStep(_Shape):
    """Keep within `distance` blocks of a living player for `ticks` ticks."""

    op: Literal["follow"] = "follow"
    agent: str
    distance: float = Field(default=3.0, gt=0.0)
    ticks: int = Field(ge=1)


class ApproachStep(_Shape):
    """Chase a (moving) player until within `range`, then emit a `reached` event."""

    op: Literal["approach"] = "approach"
    agent: str
    range: float = Field(gt=0.0)
    leash: float | None = Field(default=None, gt=0.0)
    """Give up (the program fails, reason `approach: ... beyond leash`) once the target is
    farther than this from where the approach began; None chases without bound."""


class LookStep(_Shape):
    """Turn the head to an absolute yaw/pitch (degrees)."""

    op: Literal["look"] = "look"
    yaw: float
    pitch: float = 0.0


class TurnStep(_Shape):
    """Turn the head by `yaw` degrees relative to the current heading."""

    op: Literal["turn"] = "turn"
    yaw: float


class WaitStep(_Shape):
    """Stand still for `ticks` ticks."""

    op: Literal["wait"] = "wait"
    ticks: int = Field(ge=0)


class ChatStep(_Shape):
    """Send one chat line as this player (normalised and checked as `ChatText`)."""

    op: Literal["chat"] = "chat"
    text: ChatText


class MarkStep(_Shape):
    """Emit a `mark` event carrying the current tick and position."""

    op: Literal["mark"] = "mark"
    tag: str


LowStep = Annotated[
    GotoStep | FollowStep | ApproachStep | LookStep | TurnStep | WaitStep | ChatStep | MarkStep,
    Field(discriminator="op"),
]


class LowProgram(_Shape):
    """A sequence of low-level steps for one bot."""

    steps: list[LowStep]


class ProgramEvent(_Shape):
    """Something a program did at a given tick.

    `kind` is `mark` (from a MarkStep: `tag` set), `reached` (from an ApproachStep:
    `agent` and `target_pos` set) or `chat` (from a ChatStep: `text` set).
    """

    kind: Literal["mark", "reached", "chat"]
    tick: int
    pos: Vec3
    tag: str | None = None
    agent: str | None = None
    target_pos: Vec3 | None = None
    text: str | None = None


ProgramStatus = Literal["ok", "timeout", "invalid", "failed", "cancelled"]
"""`cancelled`: the rules stopped the program mid-run (its player was killed, or a
meeting was called); `reason` says which."""


class ProgramOutcome(_Shape):
    """How one bot's program ended."""

    status: ProgramStatus
    reason: str = ""
    start_tick: int
    end_tick: int
    steps_done: int = 0
    events: list[ProgramEvent] = Field(default_factory=list)


class PlayerPose(_Shape):
    """Where a player is and where it looks."""

    pos: Vec3
    yaw: float = 0.0
    pitch: float = 0.0
    connected: bool = True


class PoseSample(_Shape):
    """Every connected player's pose at one tick while a batch ran."""

    tick: int
    players: dict[str, PlayerPose]


class ClockStall(_Shape):
    """A bot whose physics stopped mid-batch, so the game clock stopped waiting for it."""

    agent: str
    tick: int


class StepReport(_Shape):
    """What a world returns after running one batch of programs."""

    tick: int
    outcomes: dict[str, ProgramOutcome]
    players: dict[str, PlayerPose]
    samples: list[PoseSample] = Field(default_factory=list)
    """Poses at most `sample_interval` ticks apart while the batch ran (first at the
    batch's start, last at its end), and at the tick of every rule event."""
    clock_stalls: list[ClockStall] = Field(default_factory=list)
    """Bots the game clock stopped waiting for (their poses after that tick are not
    step-exact); empty in a healthy batch."""


class RuleDirective(_Shape):
    """The rules' answer to a program event reported mid-batch."""

    cancel: list[str] = Field(default_factory=list)
    """Stop these players' programs at once (status `cancelled`), e.g. a kill's victim."""
    freeze: bool = False
    """A meeting was called: stop every program in the batch at once."""
    reason: str = ""
    """Why (goes into each cancelled outcome's `reason`)."""


class Teleport(_Shape):
    """Server-side move of one player."""

    pos: Vec3
    yaw: float = 0.0


class FrameFiles(_Shape):
    """Where one bot's frame is written (absolute paths; a kind left None is not)."""

    raw: str | None = None
    """RGB24, height x width x 3 bytes, top row first."""
    jpg: str | None = None
    png: str | None = None


class RenderRequest(_Shape):
    """The `render` request: one first-person frame per listed bot."""

    agents: list[str]
    files: dict[str, FrameFiles] = Field(default_factory=dict)
    """Per bot, where its frame goes."""
    quality: int = 85
    """JPEG quality 1..100 (checked by Node, which answers `bad_request`)."""
    hidden: dict[str, list[str]] = Field(default_factory=dict)
    """Per bot, the other bots (agent ids) its frame must not show: the ghosts in a
    living player's frame (`rules.ghost_tasks`). A bot left out hides nobody; the
    field is left out of the request when no frame hides anyone."""
