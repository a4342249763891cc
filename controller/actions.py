"""Actions: the whitelisted primitives a program is made of, as typed values.

Every builder of a program (the scripted agents, ARIA's modules and its codegen
translator, the environment's action codec) makes these classes directly; only the
reading of untrusted data (`controller.programs.parse_program`) starts from dicts. A
program is logged as `dump_actions` writes it: each action's `op` and the fields its
builder gave, no filled-in defaults.

This module imports nothing of the project above `controller.protocol`, so every
layer may build actions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from controller.protocol import ChatText, Vec3

MAX_ACTIONS = 8
StrikeGuard = Literal["none", "sight", "around"]
"""How a strike re-checks for witnesses at its tick (see `KillTarget.guard`)."""
MAX_WAIT_TICKS = 1200


class _Action(BaseModel):
    # An instance handed to a Program is validated again, so one built around the checks
    # (`model_construct`) or otherwise broken is refused where the program is formed.
    model_config = ConfigDict(extra="forbid", frozen=True, revalidate_instances="always")


class GoTo(_Action):
    """Walk to a room, a station or a position (exactly one of them)."""

    op: Literal["go_to"] = "go_to"
    room: str | None = None
    station: int | None = None
    pos: Vec3 | None = None

    @model_validator(mode="after")
    def _one_target(self) -> GoTo:
        given = [x for x in (self.room, self.station, self.pos) if x is not None]
        if len(given) != 1:
            raise ValueError("go_to needs exactly one of room, station, pos")
        return self


class Follow(_Action):
    """Follow a player at a distance for a number of ticks."""

    op: Literal["follow"] = "follow"
    agent: str
    distance: float = Field(default=3.0, gt=0, le=16)
    ticks: int = Field(default=100, ge=1, le=MAX_WAIT_TICKS)


class Look(_Action):
    """Turn to an absolute yaw and pitch (degrees), or look behind (`behind=True`)."""

    op: Literal["look"] = "look"
    yaw: float | None = None
    pitch: float = Field(default=0.0, ge=-90, le=90)
    behind: bool = False

    @model_validator(mode="after")
    def _one_way(self) -> Look:
        if self.behind == (self.yaw is not None):
            raise ValueError("look needs either yaw or behind=true")
        return self


class UseStation(_Action):
    """Go to a task station and stand at it for the task time."""

    op: Literal["use_station"] = "use_station"
    station: int


class PressButton(_Action):
    """Go to the emergency button and press it."""

    op: Literal["press_button"] = "press_button"


class ReportBody(_Action):
    """Go to a body and report it."""

    op: Literal["report"] = "report"
    body: str


class KillTarget(_Action):
    """Close in on a player and strike, within a bounded distance.

    The approach is leashed: it gives up (the program fails with a reason saying so)
    once the target is farther than the leash from where the approach began, so a
    strike never lands far from the place the agent judged safe. The leash is
    `max_distance` when given, capped by the rules' `kill_defer_distance`.
    """

    op: Literal["kill"] = "kill"
    target: str
    max_distance: float | None = Field(default=None, gt=0)
    """Blocks from the approach's start beyond which the target is let go."""
    guard: StrikeGuard = "none"
    """Re-check for witnesses at the strike's own tick, from the killer's own perception
    at that tick: `sight` withholds the strike if any other living crewmate is in the
    killer's field of view (what its camera shows), `around` also if one is within
    sight range all around it (what a privileged state view knows); `none` strikes
    regardless. A withheld strike ends the program `cancelled` with reason
    `strike withheld: witness ...`, and no kill is attempted."""


class Say(_Action):
    """Say one line in a meeting.

    The line is normalised and checked by the rule the bots apply too
    (`world.chat.check_chat`): a newline becomes a space and is spoken; a line the
    server would refuse is refused here, before dispatch, with the rule it breaks.
    """

    op: Literal["say"] = "say"
    text: ChatText


class Wait(_Action):
    """Stand still for a number of ticks."""

    op: Literal["wait"] = "wait"
    ticks: int = Field(ge=0, le=MAX_WAIT_TICKS)


AnyAction = GoTo | Follow | Look | UseStation | PressButton | ReportBody | KillTarget | Say | Wait
"""Any one action (the plain union, for `isinstance` and type parameters)."""
Action = Annotated[AnyAction, Field(discriminator="op")]
"""Any one action, read from data by its `op`."""
_ACTIONS: TypeAdapter[list[Action]] = TypeAdapter(list[Action])


class Program(BaseModel):
    """A list of actions for one bot in one step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    actions: list[Action] = Field(default_factory=list, max_length=MAX_ACTIONS)


A = TypeVar("A", bound=_Action)


def build_action(kind: type[A], **fields: Any) -> A | str:
    """An action of `kind` from values that may come from a model (a chat line, a name),
    or why they make none: the message `controller.programs.parse_program` gives for the
    same values as a program's first action. A builder whose values came from a model
    reports the message as that model's error; values the harness chose itself are
    built directly, so a bad one raises as the harness bug it is.
    """
    try:
        return kind(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        op = kind.model_fields["op"].default
        where = ".".join(str(p) for p in (0, op, *err["loc"]))
        return f"action {where}: {err['msg']}"


def dump_actions(actions: Iterable[AnyAction]) -> list[dict[str, Any]]:
    """Actions as the log writes them: each one's `op` first, then exactly the fields its
    builder set (no filled-in defaults), so a logged program reads as its builder wrote
    it; a `say` carries its line as the chat rule normalised it."""
    # `op` is every action's first field, so it leads the dump even where it went unset
    return [a.model_dump(mode="json", include={"op", *a.model_fields_set}) for a in actions]
