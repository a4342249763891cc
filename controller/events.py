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
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from controller.upgrade import upgrade_event
from controller.vocabulary import ModelCall, SideFacts

SCHEMA_VERSION = 3
"""The log's schema version. A line of this version is validated as it is (a key the
schema does not know is an error); a line of an older version is first brought to this
one by its upgraders (`controller.upgrade.EVENT_UPGRADES`); a newer one is refused."""

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
    sides: dict[str, SideFacts]
    """`crew` and `impostor` -> the facts the side's agent kind declared (kind, model,
    profile, every resolved setting; `controller.players.declared_sides`). Required: a
    current-version `game_start` without them is refused. Readers take a side from here,
    never from its kind's arguments in `config` (older logs: derived by
    `controller.upgrade`)."""
    map_spec: dict[str, Any] = Field(default_factory=dict)
    """The whole map spec as played (so editing a map file never changes an old replay)."""
    map_sha256: str = ""
    """sha256 of the canonical JSON of `map_spec`."""
    source_revision: str = ""
    """The project's source revision (git commit, `+dirty` if modified), or `unknown`."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Python, Python packages, Node and npm packages in use."""
    sample_interval_ticks: int = 10
    """Interval of the free-roam pose samples in `trace` events."""
    names: dict[str, str] = Field(default_factory=dict)
    """Each seat's player name (`GameConfig.names`; a seat without one is its capitalised
    colour), e.g. the reference's roster (`red: James`). A record for comparison with
    the reference: in play players are still addressed by colour. Empty in older logs."""
    world_start: dict[str, Any] | None = None
    """How the world came to this game's start (the real world only): `{"warm": false}`
    for a fresh server, with `refused` (the first trace of the last game the check
    found, or why the running server could not be reused) and `traces` when a warm one
    was refused; `{"warm": true, "games_before": N, "reset_ms", "check_ms"}` when a
    worker's running server was reset and found clean. None in older logs and on the
    fake world."""


StepPhase = Literal["free_roam", "meeting", "voting"]


class StepStart(EventBase):
    """A step begins in a phase (`free_roam`, `meeting` or `voting`)."""

    kind: Literal["step_start"] = "step_start"
    phase: StepPhase
    speaker: str | None = None


class PlayerSnapshot(BaseModel):
    """One player's ground truth at the end of a step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pos: Vec3
    yaw: float
    room: str
    status: Status


SnapshotCause = Literal["setup", "step_end", "meeting_call", "meeting_seats", "vote_end"]


class Positions(EventBase):
    """Every player's position, heading, room and status at one moment.

    `cause` says which moment: `step_end` (where everyone was when the step's programs
    ended; at a report or button press this is where they were when the meeting was
    called), `meeting_seats` (after the teleport to the cafeteria), `setup`, `vote_end`.
    """

    kind: Literal["positions"] = "positions"
    players: dict[str, PlayerSnapshot]
    cause: SnapshotCause = "step_end"


class Trace(EventBase):
    """Poses sampled while a free-roam step's programs ran.

    `ticks[i]` is the tick of sample `i`; `players[agent][i]` is `[x, y, z, yaw]` at
    that tick (living, connected players only). Samples are at most
    `interval` ticks apart.
    """

    kind: Literal["trace"] = "trace"
    interval: int
    ticks: list[int]
    players: dict[str, list[tuple[float, float, float, float]]]


VisibilityCause = Literal["step_end", "kill", "report", "emergency", "meeting_seats", "setup"]


class Visibility(EventBase):
    """Who could perceive whom, and which bodies, at one moment.

    `sees`/`bodies` are the field of view (what the first-person frame shows: a cone
    of the renderer's horizontal FOV, the vision range, line of sight); `near`/
    `bodies_near` are 360 degree proximity (range and line of sight whatever the
    player faces). `cause` names the moment; for a rule event (`kill`, `report`,
    `emergency`) `subject` is the killer, reporter or caller and the tick is the
    event's tick.
    """

    kind: Literal["visibility"] = "visibility"
    sees: dict[str, list[str]]
    bodies: dict[str, list[str]]
    near: dict[str, list[str]] = Field(default_factory=dict)
    bodies_near: dict[str, list[str]] = Field(default_factory=dict)
    cause: VisibilityCause = "step_end"
    subject: str | None = None


ErrorKind = Literal["", "rules", "model", "infrastructure", "harness"]


class FrameRef(BaseModel):
    """A frame file in the run folder and its content hash."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """Relative to the run folder, e.g. `frames/0007/red.jpg`."""
    sha256: str


DEFERRALS: dict[str, str] = {
    "no_target": "no crewmate to kill is known (nobody in view, none remembered)",
    "hunting": "no crewmate in reach: walking towards one the agent knows of",
    "too_far": "the target is in view but beyond the strike distance: closing in",
    "cooldown": "the kill cooldown is still running",
    "witness": "a witness is (or may be) in view",
    "target_lost": "the target is no longer where a strike could reach it",
    "out_of_leash": "the target is beyond the strike's leash from where the scans were made",
    "scan": "the witness scan is not finished (looking behind before striking)",
    "unclear": "the model's witness answer was not a clear no",
    "invalid_target": "the named target is not a living crewmate",
}
"""Why a KILL decision sent no strike (`Decision.deferral`), for counting conversions."""


class Decision(EventBase):
    """What an agent decided, before validation and dispatch."""

    kind: Literal["decision"] = "decision"
    agent: str
    phase: StepPhase
    module: str = ""
    program: Any = Field(default_factory=list)
    vote: str | None = None
    valid: bool = True
    error: str = ""
    raw: str = ""
    reasoning: str = ""
    narration: str = ""
    latency_ms: float = 0.0
    error_kind: ErrorKind = ""
    """Where `error` came from: the rules refused the program, the model's answer was
    unusable, the infrastructure failed after retries, or the harness (agent code)
    raised."""
    calls: list[ModelCall] = Field(default_factory=list)
    """Model calls behind the decision: purpose, prompt refs (style/name@hash), model,
    raw output, parsed answer, tokens in/out/cached, latency, cost, attempts, error class."""
    spec: dict[str, Any] = Field(default_factory=dict)
    """The deciding agent's ablation spec."""
    frame: FrameRef | None = None
    """The first-person frame the agent was given (None when frames are off)."""
    view_text: str = ""
    """The state-view text the agent was given (empty for agents that take none)."""
    deferral: str = ""
    """For a KILL decision that sent no strike: why (one of `DEFERRALS`); empty otherwise.
    A strike that was sent and did not land says why in its `program` event instead."""


class Continuation(EventBase):
    """An agent that was not asked this step: its program was still running (a task in
    progress, a walk not yet arrived) and nothing it can see had changed, so the rest of
    that program was dispatched again. Not a decision the agent made: no model was
    called, and `decision_step` names the step whose decision set the program going."""

    kind: Literal["continuation"] = "continuation"
    agent: str
    module: str = ""
    """The module of the decision whose program continues."""
    program: Any = Field(default_factory=list)
    """The program dispatched again."""
    decision_step: int = -1
    """The step of the decision that set the program going."""
    running: str = ""
    """What was still running, e.g. `task at station 3 in progress`, `walk to admin`."""
    valid: bool = True
    error: str = ""
    """Why the program could not be dispatched again (the rules refused it); the bot
    stands still."""
    error_kind: ErrorKind = ""
    spec: dict[str, Any] = Field(default_factory=dict)
    """The agent's ablation spec."""


ProgramStatus = Literal["ok", "timeout", "invalid", "failed", "cancelled"]


class ProgramRun(EventBase):
    """How an agent's dispatched program ended in the world.

    `cancelled` means the rules stopped it: its player was killed, or a meeting was
    called (`reason` says which).
    """

    kind: Literal["program"] = "program"
    agent: str
    status: ProgramStatus
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


class KillReady(EventBase):
    """The first tick at which impostors may kill, as the rules just set it.

    Logged at the game's start (every impostor: `initial_kill_cooldown_ticks`), after an
    impostor's kill (the killer: the kill's tick + `kill_cooldown_ticks`) and at a
    meeting's end (every impostor still in play: no earlier than the end's tick +
    `kill_cooldown_ticks`). Between two of them an impostor's readiness does not change,
    so a reader never replays the cooldown rules (`controller.readiness`)."""

    kind: Literal["kill_ready"] = "kill_ready"
    ready: dict[str, int]
    """Impostor -> the first tick its kill is allowed."""
    cause: Literal["start", "kill", "meeting_end"]


class ActionRejected(EventBase):
    """An attempted rule action (kill, report, emergency, task) that the rules refused."""

    kind: Literal["action_rejected"] = "action_rejected"
    agent: str
    action: str
    target: str | None = None
    reason: str


class TaskStart(EventBase):
    """A player began standing at one of its stations (or an impostor at any, faking)."""

    kind: Literal["task_start"] = "task_start"
    agent: str
    station: int
    room: str
    fake: bool = False


class TaskInterrupted(EventBase):
    """A task in progress was lost: its player left the station, was killed, or a
    meeting was called. Progress is never carried over; the task starts again."""

    kind: Literal["task_interrupted"] = "task_interrupted"
    agent: str
    station: int
    reason: Literal["left_station", "meeting", "killed", "step_end"]
    held_ticks: int


class TaskDone(EventBase):
    """A player stood at a station for the full task time (`fake` for impostors)."""

    kind: Literal["task_done"] = "task_done"
    agent: str
    station: int
    room: str
    fake: bool
    done: int
    total: int
    start_tick: int | None = None
    """Tick at which the player started standing at the station."""


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
    """A player spoke in a meeting, passed its turn (`passed`, `text` empty), or its
    turn failed (`failed`: the agent could not produce a usable turn; never a pass)."""

    kind: Literal["speech"] = "speech"
    speaker: str
    text: str
    utterance: int
    passed: bool = False
    failed: bool = False
    error_kind: ErrorKind = ""
    error: str = ""


class Vote(EventBase):
    """A ballot: a player's id or `skip`; or an abstention (`target` None).

    A ballot the agent failed to cast (`failed`, with `error_kind` and `error`) is an
    abstention: it counts for nobody and never as a skip.
    """

    kind: Literal["vote"] = "vote"
    voter: str
    target: str | None
    failed: bool = False
    error_kind: ErrorKind = ""
    error: str = ""
    replaced: str = ""
    """The ballot the rules refused and why, when they cast `target` in its place
    (`skip: impostors may not skip ...` under `rules.impostors_may_skip: false`: the
    ballot goes to the first other living non-impostor in seat order); empty when the
    voter's own ballot counts."""


MeetingOutcome = Literal["ejected", "tie", "skipped", "no_votes"]


class MeetingEnd(EventBase):
    """The vote's result."""

    kind: Literal["meeting_end"] = "meeting_end"
    index: int
    tally: dict[str, int]
    ejected: str | None
    outcome: MeetingOutcome
    abstained: list[str] = Field(default_factory=list)
    """Voters whose ballot counted for nobody (failed or abstained)."""


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


EndingName = Literal["impostors_outnumber", "impostors_ejected", "tasks_done", "timeout", "invalid"]


class GameEnd(EventBase):
    """The game is over."""

    kind: Literal["game_end"] = "game_end"
    winner: Literal["crew", "impostors"] | None
    ending: EndingName
    status: Literal["ok", "invalid"]
    reason: str = ""
    flags: list[str] = Field(default_factory=list)
    """Reasons to distrust an `ok` game's numbers, e.g. `harness_errors` (agent code
    raised during the game)."""


Event = Annotated[
    GameStart
    | StepStart
    | Positions
    | Trace
    | Visibility
    | Decision
    | Continuation
    | ProgramRun
    | Kill
    | KillReady
    | ActionRejected
    | TaskStart
    | TaskInterrupted
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
KNOWN_KINDS: frozenset[str] = frozenset(
    m.model_fields["kind"].default for m in typing.get_args(typing.get_args(Event)[0])
)
"""Every event kind of this schema, read off the `Event` union."""


class LogVersionError(ValueError):
    """The log was written by a newer schema than this reader understands."""


class LogExistsError(FileExistsError):
    """An event log is already there: a game never appends to another game's log."""


class EventLog:
    """Appends events to `events.jsonl`, one line each.

    Each line is written whole and flushed at once, so a crash of the program loses at
    most the event being written; the session forces the file onto the disk at the end
    of every step (`Session.end_step` calls `sync`), so a crash of the machine loses at
    most the step in progress.
    """

    def __init__(self, path: Path, game_id: str) -> None:
        self.path = path
        self.game_id = game_id
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._fh: IO[str] = path.open("x", encoding="utf-8")
        except FileExistsError as exc:
            raise LogExistsError(
                f"{path} already holds a game's log; use a new --out folder "
                "(a game never appends to an existing log)"
            ) from exc
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
    A line of an older version is upgraded first (`controller.upgrade`); a field or a
    kind this version does not know is an error; a log of a newer schema version raises
    `LogVersionError`. (`controller.record.iter_log` is the reader that names the file
    and line of a fault; this one is for a log known to be whole.)
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
        v = data.get("v", 1)
        if isinstance(v, int) and v > SCHEMA_VERSION:
            raise LogVersionError(
                f"{path}: line {i + 1} has schema version {v}, newer than this reader's "
                f"{SCHEMA_VERSION}; upgrade mineamongus to read it"
            )
        yield EVENT_ADAPTER.validate_python(upgrade_event(data))


def read_events(path: str | Path) -> list[Event]:
    """Read a whole log as a list of typed events."""
    return list(iter_events(path))
