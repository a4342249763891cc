"""The event log: one tagged union of events, one JSON object per line.

Every event shares a base (`v`, `game_id`, `step`, `tick`, `wall`) and a literal
`kind`. Fields are only ever added; `v` is bumped when they are. The log is the
single source of truth: replays, statistics, annotation and audits read it
alone. The schema is documented in `docs/event-log.md`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

SCHEMA_VERSION = 1

Vec3 = tuple[float, float, float]
Role = Literal["crewmate", "impostor"]
Status = Literal["alive", "dead", "ejected"]


class EventBase(BaseModel):
    """Fields every event carries."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: int = SCHEMA_VERSION
    game_id: str = ""
    step: int
    tick: int
    wall: float = 0.0


class GameStart(EventBase):
    """The game's set-up: seats, secret roles, task assignment and resolved config."""

    kind: Literal["game_start"] = "game_start"
    seed: int
    agents: list[str]
    roles: dict[str, Role]
    tasks: dict[str, list[int]]
    map: str
    preset: str
    config: dict[str, Any]
    agent_specs: dict[str, dict[str, Any]] = Field(default_factory=dict)


class StepStart(EventBase):
    """A step begins in a phase (`free_roam`, `meeting` or `voting`)."""

    kind: Literal["step_start"] = "step_start"
    phase: str
    speaker: str | None = None


class PlayerSnapshot(BaseModel):
    """One player's ground truth at the end of a step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pos: Vec3
    yaw: float
    room: str
    status: Status


class Positions(EventBase):
    """Every player's position, heading, room and status at the end of a step."""

    kind: Literal["positions"] = "positions"
    players: dict[str, PlayerSnapshot]


class Visibility(EventBase):
    """Who could see whom, and which bodies, at the end of a step."""

    kind: Literal["visibility"] = "visibility"
    sees: dict[str, list[str]]
    bodies: dict[str, list[str]]


class Decision(EventBase):
    """What an agent decided, before validation and dispatch."""

    kind: Literal["decision"] = "decision"
    agent: str
    phase: str
    module: str = ""
    program: Any = Field(default_factory=list)
    vote: str | None = None
    valid: bool = True
    error: str = ""
    raw: str = ""
    reasoning: str = ""
    narration: str = ""
    latency_ms: float = 0.0
    error_kind: Literal["", "rules", "model", "infrastructure"] = ""
    """Where `error` came from: the rules refused the program, the model's answer was
    unusable, or the infrastructure failed after retries."""
    calls: list[dict[str, Any]] = Field(default_factory=list)
    """Model calls behind the decision: purpose, prompt refs (style/name@hash), model,
    raw output, parsed answer, tokens in/out/cached, latency, cost, attempts, error class."""
    spec: dict[str, Any] = Field(default_factory=dict)
    """The deciding agent's ablation spec."""


class ProgramRun(EventBase):
    """How an agent's dispatched program ended in the world."""

    kind: Literal["program"] = "program"
    agent: str
    status: str
    reason: str = ""
    start_tick: int
    end_tick: int
    steps_done: int = 0
    low_steps: int = 0
    events: list[dict[str, Any]] = Field(default_factory=list)
    """What the program did at which tick: `mark` (with `tag`: task_start/task_resume/
    task_done:STATION, button, report:VICTIM), `reached` (a strike's positions), `chat`."""


class Kill(EventBase):
    """An impostor killed a crewmate; a body now lies at `pos`."""

    kind: Literal["kill"] = "kill"
    killer: str
    victim: str
    pos: Vec3
    room: str
    distance: float


class ActionRejected(EventBase):
    """An attempted rule action (kill, report, emergency, task) that the rules refused."""

    kind: Literal["action_rejected"] = "action_rejected"
    agent: str
    action: str
    target: str | None = None
    reason: str


class TaskDone(EventBase):
    """A player stood at a station for the full task time (`fake` for impostors)."""

    kind: Literal["task_done"] = "task_done"
    agent: str
    station: int
    room: str
    fake: bool
    done: int
    total: int


class Report(EventBase):
    """A player reported a body."""

    kind: Literal["report"] = "report"
    reporter: str
    victim: str
    pos: Vec3
    room: str
    distance: float = 0.0


class Emergency(EventBase):
    """A player pressed the emergency button."""

    kind: Literal["emergency"] = "emergency"
    caller: str


class MeetingStart(EventBase):
    """A meeting begins; everyone alive is brought to the cafeteria."""

    kind: Literal["meeting_start"] = "meeting_start"
    index: int
    trigger: Literal["report", "emergency"]
    caller: str
    victim: str | None = None
    order: list[str]
    dead: list[str]


class Speech(EventBase):
    """A player spoke in a meeting (or passed its turn, `text` empty)."""

    kind: Literal["speech"] = "speech"
    speaker: str
    text: str
    utterance: int
    passed: bool = False


class Vote(EventBase):
    """A ballot: a player's id or `skip`."""

    kind: Literal["vote"] = "vote"
    voter: str
    target: str


class MeetingEnd(EventBase):
    """The vote's result."""

    kind: Literal["meeting_end"] = "meeting_end"
    index: int
    tally: dict[str, int]
    ejected: str | None
    outcome: Literal["ejected", "tie", "skipped", "no_votes"]


class Eject(EventBase):
    """A player was voted out."""

    kind: Literal["eject"] = "eject"
    agent: str
    role: Role


class ServerMessage(EventBase):
    """A message the engine announced to every player as the server."""

    kind: Literal["server_message"] = "server_message"
    text: str


class Disconnect(EventBase):
    """A bot lost its connection (an infrastructure fault, not an agent's choice)."""

    kind: Literal["disconnect"] = "disconnect"
    agent: str
    reason: str


class Reconnect(EventBase):
    """A reconnection attempt for a bot."""

    kind: Literal["reconnect"] = "reconnect"
    agent: str
    ok: bool
    reason: str = ""


class GameEnd(EventBase):
    """The game is over."""

    kind: Literal["game_end"] = "game_end"
    winner: Literal["crew", "impostors"] | None
    ending: str
    status: Literal["ok", "invalid"]
    reason: str = ""


Event = Annotated[
    GameStart
    | StepStart
    | Positions
    | Visibility
    | Decision
    | ProgramRun
    | Kill
    | ActionRejected
    | TaskDone
    | Report
    | Emergency
    | MeetingStart
    | Speech
    | Vote
    | MeetingEnd
    | Eject
    | ServerMessage
    | Disconnect
    | Reconnect
    | GameEnd,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


class EventLog:
    """Appends events to `events.jsonl`, one line each, flushed and fsynced per step.

    Each line is written whole and flushed at once, so a crash loses at most the
    event being written.
    """

    def __init__(self, path: Path, game_id: str) -> None:
        self.path = path
        self.game_id = game_id
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = path.open("a", encoding="utf-8")
        self.events: list[Event] = []

    def write(self, event: EventBase) -> EventBase:
        """Stamp the event with the game id and wall time, append it, and return it."""
        stamped = event.model_copy(update={"game_id": self.game_id, "wall": time.time()})
        self._fh.write(stamped.model_dump_json() + "\n")
        self._fh.flush()
        self.events.append(stamped)  # type: ignore[arg-type]
        return stamped

    def sync(self) -> None:
        """Force what was written onto the disk."""
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the file."""
        if not self._fh.closed:
            self.sync()
            self._fh.close()


def iter_events(path: str | Path) -> Iterator[Event]:
    """Read a log back as typed events.

    A truncated last line (a crash mid-write) is skipped; any other bad line raises.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                return
            raise
        yield EVENT_ADAPTER.validate_python(data)


def read_events(path: str | Path) -> list[Event]:
    """Read a whole log as a list of typed events."""
    return list(iter_events(path))
