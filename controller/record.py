"""One typed reader of a run folder: the only module that reads `events.jsonl`.

A game writes its record with `controller.events.EventLog` (the writer) and
`summary.json`; everything that reads a finished or running game goes through here:

- `RunRecord.read(folder)`: the typed events, the typed set-up (`GameSetup`: each side's
  agent kind, backend, model and every ARIA axis; each seat's agent), the typed
  `summary.json` (`RunSummary`) and the sha256 of the log as stored.
- `read_log(path, kinds=...)`: the typed events alone (optionally only some kinds, which
  skips e.g. the large `trace` lines undecoded).
- `calls_of(decision)`: a decision's model calls as typed `CallRecord`s.
- `LogFollower`: the lines a growing log gained since the last look (the viewer).
- `log_progress(path)`: the latest step and whether the game ended, from the log's tail.
- `find_runs(paths)`, `log_path(run)`: where run folders and their logs are;
  `finished_runs(paths)`: those whose game finished (the unfinished are named).

Facts the rules decide (who is out of play and when, when a kill is ready) are read
from the events the engine logged (`kill`, `eject`, `kill_ready`), never re-derived
from positions or rules (`RunRecord.alive_at`, `RunRecord.kill_ready_at`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from controller.events import (
    EVENT_ADAPTER,
    KNOWN_KINDS,
    SCHEMA_VERSION,
    Decision,
    Eject,
    Event,
    GameEnd,
    GameStart,
    Kill,
    LogVersionError,
)
from controller.readiness import kill_readiness

if TYPE_CHECKING:
    from world.geometry import ShipGeometry

LOG_FILE = "events.jsonl"
"""The event log's file name inside a run folder."""
SUMMARY_FILE = "summary.json"
"""The summary's file name inside a run folder."""
ARIA_AXES = ("state", "memory", "planning", "reflection", "prompt")
"""The five ARIA ablation axes (`harness_aria.spec.AXES`; a test keeps them equal)."""
SIDES = ("crew", "impostor")

E = TypeVar("E", bound=BaseModel)


class RecordError(ValueError):
    """A run's record cannot be trusted as it is: the message names the file, the line
    (when one is at fault) and the fix. No tool reads around it."""

    def __init__(self, file: Path, problem: str, fix: str, line: int | None = None) -> None:
        where = f"{file}: line {line}" if line is not None else f"{file}"
        super().__init__(f"{where}: {problem}; {fix}")
        self.file = file
        self.line = line
        self.problem = problem
        self.fix = fix


class NotAGameLog(RecordError):
    """A log without a `game_start` event (not a game's record)."""


class PartialRecord(RecordError):
    """A log without `game_end` and no summary: the game did not finish (killed) or is
    still running. Tools that measure finished games refuse it; `view` follows it live."""


_RESTORE = "restore the file from a copy or re-run the game (`mineamongus play --config`)"


# ---------------------------------------------------------------------- where
def log_path(run: str | Path) -> Path:
    """The event log of a run folder (a path to the log itself, or to any existing file
    or `*.jsonl` path, is returned as is, so a missing log is named as given)."""
    p = Path(run)
    return p if p.name == LOG_FILE or p.suffix == ".jsonl" or p.is_file() else p / LOG_FILE


def has_log(folder: str | Path) -> bool:
    """Whether a folder holds an event log (is a run folder)."""
    return (Path(folder) / LOG_FILE).is_file()


def find_runs(paths: Iterable[str | Path]) -> list[Path]:
    """Every run folder (a folder holding `events.jsonl`) at or under the given paths,
    each once, in path order.

    Raises:
        FileNotFoundError: A path does not exist or holds no run folder.
    """
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such run or tournament folder")
        if has_log(p):
            found.append(p)
            continue
        runs = sorted(e.parent for e in p.rglob(LOG_FILE))
        if not runs:
            raise FileNotFoundError(
                f"{p}: no {LOG_FILE} at or under it; pass a run folder (from "
                "`mineamongus play --out`) or a tournament folder holding run folders"
            )
        found.extend(runs)
    seen: set[Path] = set()
    unique = []
    for r in found:
        key = r.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique


def finished_runs(
    paths: Iterable[str | Path], note: Callable[[str], None] | None = None
) -> list[Path]:
    """The run folders at or under `paths` whose game finished, for tools that measure
    games (`annotate`, `audit`, `analyze`).

    A run without `game_end` and without `summary.json` did not finish (its process was
    killed, or it is still running): it is left out and named through `note`, never
    mixed with the finished games; when every run found is unfinished, the first is
    refused. A run that is broken in another way (a cut log beside a summary, a line
    that is not JSON, a file that is not text) is not judged here: `RunRecord.read`
    refuses it when the tool reads it.

    Raises:
        FileNotFoundError: A path does not exist or holds no run folder.
        PartialRecord: Every run found is unfinished.
    """
    runs = find_runs(paths)
    done: list[Path] = []
    unfinished: list[Path] = []
    for run in runs:
        _, over = log_progress(run)
        if over or (run / SUMMARY_FILE).is_file():
            done.append(run)
        else:
            unfinished.append(run)
    if unfinished and not done:
        RunRecord.read(unfinished[0])  # raises PartialRecord (or the record's own fault)
    if unfinished and note is not None:
        shown = ", ".join(str(r) for r in unfinished[:5])
        more = f" and {len(unfinished) - 5} more" if len(unfinished) > 5 else ""
        note(
            f"left out {len(unfinished)} unfinished game(s) (no game_end, no summary: "
            f"killed or still running): {shown}{more}"
        )
    return done


_ATTEMPT = re.compile(r"^seed(-?\d+)-try(\d+)$")


@dataclass(frozen=True)
class StudyPlace:
    """Where a run folder sits in a study (`games/<arm>/seed<N>-try<K>`)."""

    arm: str
    seed: int
    attempt: int


def study_place(folder: str | Path) -> StudyPlace | None:
    """The arm, seed and attempt a study's folder layout gives a run folder, or None
    for a folder outside that layout."""
    p = Path(folder)
    m = _ATTEMPT.match(p.name)
    if m is None or p.parent.parent.name != "games":
        return None
    return StudyPlace(arm=p.parent.name, seed=int(m.group(1)), attempt=int(m.group(2)))


def content_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes (of `events.jsonl`: the game's content key)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------- events
_KIND = re.compile(r'"kind":\s*"(\w+)"')


def iter_log(path: str | Path, kinds: Iterable[str] | None = None) -> Iterator[Event]:
    """The typed events of a log, in order.

    A truncated last line (a crash mid-write) is skipped; any other bad line raises.
    Fields and kinds this reader does not know are ignored (a newer minor revision of
    the same schema); a log of a newer schema version raises `LogVersionError`.

    Args:
        path: A run folder or its `events.jsonl`.
        kinds: Only events of these kinds (lines of other kinds are skipped without
            being decoded: the writer puts `kind` among the first fields).
    """
    file = log_path(path)
    only = frozenset(kinds) if kinds is not None else None
    text = _log_text(file)
    lines = text.splitlines()
    last = len(lines) - 1
    # A line cut by a crash mid-write has no newline after it; a complete line that is
    # not JSON is damage, wherever it is.
    cut = not text.endswith("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if only is not None and i < last:
            m = _KIND.search(line, 0, 240)
            if m is not None and m.group(1) not in only:
                continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == last and cut:
                return  # a crash mid-write
            raise RecordError(
                file, f"not a JSON event ({exc.msg}: {line[:60]!r})", _RESTORE, i + 1
            ) from exc
        if not isinstance(data, dict):
            raise RecordError(
                file, f"a JSON {type(data).__name__}, not an event object", _RESTORE, i + 1
            )
        v = data.get("v", 1)
        if isinstance(v, int) and v > SCHEMA_VERSION:
            raise LogVersionError(
                f"{file}: line {i + 1} has schema version {v}, newer than this reader's "
                f"{SCHEMA_VERSION}; upgrade mineamongus to read it"
            )
        kind = data.get("kind")
        if kind not in KNOWN_KINDS or (only is not None and kind not in only):
            continue
        try:
            yield EVENT_ADAPTER.validate_python(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"][1:]) or "(event)"
            raise RecordError(
                file, f"a `{kind}` event whose {field} is wrong ({err['msg']})", _RESTORE, i + 1
            ) from exc


def _log_text(file: Path) -> str:
    """The log's text; a file that is not UTF-8 text is refused with where it breaks."""
    raw = file.read_bytes()
    if not raw.endswith(b"\n"):
        # The last line is still being written (or was cut by a crash): it may stop
        # inside a multi-byte character, which is no fault of the file.
        head, _, tail = raw.rpartition(b"\n")
        raw = head + b"\n" + tail.decode("utf-8", errors="ignore").encode() if head else raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise RecordError(
            file,
            f"not a text file (byte {raw[exc.start]:#04x} at offset {exc.start})",
            _RESTORE,
            line,
        ) from exc
    nul = text.find("\0")
    if nul >= 0:
        raise RecordError(
            file,
            f"not a text file (a NUL byte at offset {nul})",
            _RESTORE,
            text.count("\n", 0, nul) + 1,
        )
    return text


def read_log(path: str | Path, kinds: Iterable[str] | None = None) -> list[Event]:
    """`iter_log` as a list."""
    return list(iter_log(path, kinds))


def events_of(events: list[Event] | str | Path) -> list[Event]:
    """Events as given, or read from a run folder or log path."""
    return read_log(events) if isinstance(events, str | Path) else events


class LogFollower:
    """Reads a log that may still be growing: each `poll` returns the lines completed
    since the last one, as plain JSON objects (a newer revision's fields carried
    through untouched). An unfinished last line waits for the next poll; a complete
    line that is not a JSON object raises `RecordError` with its number.

    Args:
        path: A run folder or its `events.jsonl`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = log_path(path)
        self._size = -1
        self._offset = 0
        self._pending = b""
        self._lines = 0

    def poll(self) -> list[dict[str, Any]] | None:
        """The new complete lines, or None when the log is absent or has not changed.

        Raises:
            RecordError: A complete line is not a JSON event object.
        """
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return None
        if size == self._size:
            return None
        self._size = size
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
        self._offset += len(chunk)
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        out: list[dict[str, Any]] = []
        for raw in lines:
            self._lines += 1
            if not raw.strip():
                continue
            try:
                ev = json.loads(raw)
            except ValueError as exc:  # not JSON, or not UTF-8 text
                raise RecordError(
                    self.path, f"not a JSON event ({exc})", _RESTORE, self._lines
                ) from exc
            if not isinstance(ev, dict):
                raise RecordError(self.path, "not an event object", _RESTORE, self._lines)
            out.append(ev)
        return out


TAIL_BYTES = 1 << 16


def log_progress(path: str | Path, tail_bytes: int = TAIL_BYTES) -> tuple[int | None, bool]:
    """(latest step, whether the game has ended) from the end of a log."""
    try:
        with log_path(path).open("rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - tail_bytes))
            lines = fh.read().splitlines()
    except OSError:
        return None, False
    step: int | None = None
    over = False
    for raw in reversed(lines):
        try:
            e = json.loads(raw)
        except ValueError:
            continue  # cut by the tail window, or still being written
        if not isinstance(e, dict):
            continue
        over = over or e.get("kind") == "game_end"
        if step is None and isinstance(e.get("step"), int):
            step = int(e["step"])
        if step is not None:
            break
    return step, over


# ---------------------------------------------------------------------- sides
def _str_or_empty(v: Any) -> Any:
    return "" if v is None else v


def _zero_if_none(v: Any) -> Any:
    return 0 if v is None else v


Text = Annotated[str, BeforeValidator(_str_or_empty)]
Count = Annotated[int, BeforeValidator(_zero_if_none)]


class _Typed(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Side(_Typed):
    """Who played one side, as the resolved config says: an agent kind and its args."""

    agent: str
    """The agent kind (`scripted`, `aria`, a plugin's), or `unknown` if not recorded."""
    backend: str
    """The model backend address (`openai:gpt-4.1-mini`, `fake`, ...); the kind's name
    for agents without a model (`scripted`)."""
    base_url: str | None = None
    text_only: bool = False
    spec: dict[str, Any] = Field(default_factory=dict)
    """The ARIA spec (every axis and knob) as resolved; empty for other kinds."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The kind's arguments as recorded."""

    @property
    def model(self) -> str:
        """The model name (the address without its provider), e.g. `gpt-4.1-mini`."""
        return self.backend.split(":", 1)[1] if ":" in self.backend else self.backend

    @property
    def axes(self) -> dict[str, str]:
        """The ARIA axes this side played with (empty for agents without them)."""
        return {a: str(self.spec[a]) for a in ARIA_AXES if a in self.spec}

    @classmethod
    def from_config(cls, side: Any) -> Side:
        """Read one side of a config: `{agent, args: {backend, spec, ...}}` (what games
        write today) or the older `{backend, spec}` (read as the `aria` kind, or the
        `scripted` kind for `backend: scripted`)."""
        if not isinstance(side, dict) or not side:
            return cls(agent="unknown", backend="unknown")
        if "agent" not in side and "args" not in side:
            legacy = {k: side[k] for k in ("backend", "base_url", "text_only", "spec") if k in side}
            backend = legacy.get("backend")
            if backend == "scripted":
                side = {"agent": "scripted", "args": {}}
            elif backend is not None:
                side = {"agent": "aria", "args": legacy}
            else:
                return cls(agent="unknown", backend="unknown")
        agent = str(side.get("agent") or "scripted")
        args = side.get("args") or {}
        if not isinstance(args, dict):
            args = {}
        backend = args.get("backend")
        spec = args.get("spec") or {}
        return cls(
            agent=agent,
            backend=str(backend) if backend else agent,
            base_url=args.get("base_url"),
            text_only=bool(args.get("text_only") or False),
            spec=dict(spec) if isinstance(spec, dict) else {},
            args=dict(args),
        )


class SeatAgent(_Typed):
    """One seat's agent as it described itself (`game_start.agent_specs`)."""

    kind: str
    backend: str
    """The backend address, or the kind's name for agents without a model."""
    vision: bool | None = None
    spec: dict[str, Any] = Field(default_factory=dict)

    @property
    def model(self) -> str:
        """The model name (the address without its provider)."""
        return self.backend.split(":", 1)[1] if ":" in self.backend else self.backend

    @property
    def axes(self) -> dict[str, str]:
        """The ARIA axes of this seat (empty for agents without them)."""
        return {a: str(self.spec[a]) for a in ARIA_AXES if a in self.spec}

    @classmethod
    def from_description(cls, desc: Any) -> SeatAgent:
        """Read an `Agent.describe()` record (`{kind, backend, vision, spec}`)."""
        if not isinstance(desc, dict) or not desc:
            return cls(kind="unknown", backend="unknown")
        kind = str(desc.get("kind") or "unknown")
        backend = desc.get("backend")
        spec = desc.get("spec") or {}
        return cls(
            kind=kind,
            backend=str(backend) if backend else kind,
            vision=desc.get("vision"),
            spec=dict(spec) if isinstance(spec, dict) else {},
        )


class GameSetup(_Typed):
    """The `game_start` event with its sides and seats typed."""

    model_config = ConfigDict(extra="ignore", frozen=True, arbitrary_types_allowed=True)

    event: GameStart
    crew: Side
    impostor: Side
    seats: dict[str, SeatAgent]
    """Seat -> its agent (seats that described nothing read as `unknown`)."""

    def geometry(self) -> ShipGeometry | None:
        """The map as played (`map_spec`), else the packaged map of its name; None when
        neither can be read."""
        spec = json.dumps(self.event.map_spec, sort_keys=True) if self.event.map_spec else ""
        return _geometry(spec, self.event.map)

    @property
    def rules(self) -> dict[str, Any]:
        """The resolved rules config."""
        rules = self.event.config.get("rules", {})
        return dict(rules) if isinstance(rules, dict) else {}

    @property
    def rules_sha256(self) -> str:
        """sha256 of the canonical JSON of the rules config (games of one rule set share it)."""
        text = json.dumps(self.rules, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def side(self, name: Literal["crew", "impostor"]) -> Side:
        """One side by name."""
        return self.crew if name == "crew" else self.impostor

    def side_of(self, seat: str) -> Side:
        """The side a seat played on (by its secret role)."""
        return self.impostor if self.event.roles.get(seat) == "impostor" else self.crew

    @property
    def axes(self) -> dict[str, str]:
        """`impostor.<axis>` and `crew.<axis>` -> value, for the sides that have them."""
        out: dict[str, str] = {}
        for name in ("impostor", "crew"):
            for axis, value in self.side(name).axes.items():
                out[f"{name}.{axis}"] = value
        return out

    @classmethod
    def from_start(cls, start: GameStart, config: dict[str, Any] | None = None) -> GameSetup:
        """Type a `game_start` (`config`: the summary's, for a start that has none)."""
        cfg = start.config or config or {}
        return cls(
            event=start,
            crew=Side.from_config(cfg.get("crew")),
            impostor=Side.from_config(cfg.get("impostor")),
            seats={
                a: SeatAgent.from_description(start.agent_specs.get(a, {})) for a in start.agents
            },
        )


@functools.lru_cache(maxsize=8)
def _geometry(spec_json: str, name: str) -> ShipGeometry | None:
    # Imported here: reading a log needs no map unless a caller asks for its geometry.
    from world.geometry import ShipGeometry
    from world.spec import MapSpec, MapSpecError, load_map, parse_map

    spec: MapSpec | None = None
    try:
        spec = parse_map(json.loads(spec_json), "game_start.map_spec") if spec_json else None
    except MapSpecError:
        spec = None
    if spec is None:
        try:
            spec = load_map(name)
        except (MapSpecError, OSError):
            return None
    return ShipGeometry(spec)


# ---------------------------------------------------------------------- calls
class CallRecord(_Typed):
    """One model call of a decision, as the harness logged it (`Decision.calls`)."""

    purpose: Text = ""
    prompts: list[str] = Field(default_factory=list)
    """Template references (`style/name@hash`)."""
    model: Text = ""
    image: bool = False
    sent: dict[str, Any] | None = None
    raw: Text = ""
    parsed: dict[str, Any] | None = None
    parse_error: Text = ""
    normalised: list[str] = Field(default_factory=list)
    finish_reason: Text = ""
    truncated: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)
    tokens_in: Count = 0
    tokens_out: Count = 0
    tokens_cached: Count = 0
    latency_ms: float = 0.0
    cost_usd: float | None = 0.0
    """None when the model has no known price: unknown, never $0 (a record without the
    field is a call that cost nothing, e.g. the offline `fake` backend's)."""
    attempts: Count = 0
    error_class: Text = ""
    error: Text = ""

    @property
    def failed(self) -> bool:
        """The call failed (the backend gave up, or the answer was unusable)."""
        return bool(self.error_class)


def calls_of(decision: Decision) -> list[CallRecord]:
    """A decision's model calls, typed (a record that cannot be read is kept as a failed
    call naming why, never dropped)."""
    out = []
    for raw in decision.calls:
        try:
            out.append(CallRecord.model_validate(raw))
        except ValidationError as exc:
            out.append(
                CallRecord(
                    error_class="unreadable_record",
                    error=str(exc).splitlines()[0],
                    cost_usd=None,
                )
            )
    return out


def total_cost(calls: Iterable[CallRecord]) -> float | None:
    """The cost of some calls: None as soon as one is unpriced (unknown, never a lower
    sum), as `controller.accounting.cost_from_events` counts a game."""
    total = 0.0
    for c in calls:
        if c.cost_usd is None:
            return None
        total += c.cost_usd
    return round(total, 6)


# ---------------------------------------------------------------------- summary
class TaskTally(_Typed):
    """Real tasks done and assigned."""

    done: int | None = None
    total: int | None = None


class RunSummary(_Typed):
    """`summary.json`, typed (fields the game did not write keep their defaults)."""

    version: int = 1
    game_id: str = ""
    status: str = "invalid"
    reason: str = ""
    flags: list[str] = Field(default_factory=list)
    winner: str | None = None
    """`crew`, `impostors`, or None (an invalid game)."""
    ending: str | None = None
    steps: int | None = None
    ticks: int | None = None
    seed: int | None = None
    roles: dict[str, str] = Field(default_factory=dict)
    final_status: dict[str, str] = Field(default_factory=dict)
    tasks: TaskTally = TaskTally()
    resumable: bool = False
    counts: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    """None when any call's model had no price (or the summary predates the field)."""
    wall_seconds: float | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    agents: dict[str, dict[str, Any]] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)


def read_summary(folder: str | Path) -> RunSummary | None:
    """A run folder's `summary.json`, typed; None when it wrote none or it is unreadable."""
    path = Path(folder) / SUMMARY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return RunSummary.model_validate(data)
    except ValidationError:
        return None


def _check_summary(
    path: Path, folder: Path, end: GameEnd | None, summary: RunSummary | None
) -> None:
    """Refuse a `summary.json` that tells another game than the log does."""
    spath = folder / SUMMARY_FILE
    if summary is None:
        if spath.is_file():
            raise RecordError(
                spath,
                "not a readable summary (not JSON, or not the summary's fields)",
                "delete it and rebuild it by re-running the game; the log is the record",
            )
        return
    if end is None:
        raise RecordError(
            path,
            f"no game_end, but {SUMMARY_FILE} says the game ended ({summary.status}, "
            f"winner {summary.winner}): the log was cut after it was written",
            _RESTORE,
            len(path.read_bytes().splitlines()),
        )
    for name, logged, summed in (
        ("status", end.status, summary.status),
        ("winner", end.winner, summary.winner),
        ("ending", end.ending, summary.ending),
    ):
        if logged != summed:
            raise RecordError(
                spath,
                f"{name} is {summed!r} but the log's game_end says {logged!r}",
                "the two files are of different games or one was edited; " + _RESTORE,
            )


# ---------------------------------------------------------------------- the record
@dataclass
class RunRecord:
    """One run folder read back: typed events, set-up, end and summary."""

    folder: Path
    events: list[Event]
    setup: GameSetup
    end: GameEnd | None
    summary: RunSummary | None
    content_sha256: str
    """sha256 of `events.jsonl` as stored (a cache key for anything derived from it)."""
    kinds: frozenset[str] | None = None
    """The event kinds read (None: all of them)."""
    _gone: dict[str, tuple[int, int, str]] | None = field(default=None, repr=False)

    @classmethod
    def read(
        cls, run: str | Path, *, kinds: Iterable[str] | None = None, partial: bool = False
    ) -> RunRecord:
        """Read a run folder (or its `events.jsonl`), refusing a record that lies.

        Args:
            run: The run folder.
            kinds: Read only events of these kinds (`game_start` and `game_end` are
                always read).
            partial: Accept a log without `game_end` (a killed or running game, with
                no summary); `RunRecord.partial` then says so. Off by default: tools
                that measure games read only finished ones.

        Raises:
            FileNotFoundError: No event log there.
            NotAGameLog: The log is empty or has no `game_start` event.
            PartialRecord: No `game_end` and `partial` is off.
            RecordError: A line that is not a JSON event, a file that is not text, or a
                `summary.json` that disagrees with the log (the message names the file,
                the line and the fix).
            LogVersionError: The log is of a newer schema version.
        """
        path = log_path(run)
        folder = path.parent
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no event log (expected a run folder with {LOG_FILE})")
        only = frozenset(kinds) | {"game_start", "game_end"} if kinds is not None else None
        events = read_log(path, only)
        start = next((e for e in events if isinstance(e, GameStart)), None)
        if start is None:
            if path.stat().st_size == 0:
                raise NotAGameLog(
                    path,
                    "the log is empty (the game wrote nothing: it never started)",
                    "re-run the game, or remove the folder",
                    1,
                )
            raise NotAGameLog(
                path, "no game_start event; not a game log", "point the tool at a run folder"
            )
        summary = read_summary(folder)
        end = next((e for e in reversed(events) if isinstance(e, GameEnd)), None)
        _check_summary(path, folder, end, summary)
        if end is None and not partial:
            raise PartialRecord(
                path,
                f"no game_end after {len(path.read_bytes().splitlines())} line(s): the game "
                "did not finish (its process was killed) or is still running",
                "finished-game tools read only finished games; re-run it, or watch a running "
                "game with `mineamongus view`",
            )
        return cls(
            folder=folder,
            events=events,
            setup=GameSetup.from_start(start, summary.config if summary else None),
            end=end,
            summary=summary,
            content_sha256=content_sha256(path),
            kinds=only,
        )

    @property
    def start(self) -> GameStart:
        """The `game_start` event."""
        return self.setup.event

    @property
    def partial(self) -> bool:
        """The game did not finish (no `game_end`): only when read with `partial=True`."""
        return self.end is None

    @property
    def game_id(self) -> str:
        """The game's id (the log's, else the summary's, else the folder's name)."""
        return (
            self.start.game_id
            or (self.summary.game_id if self.summary else "")
            or (self.folder.name)
        )

    def of_kind(self, cls: type[E]) -> list[E]:
        """Every event of one type, in log order."""
        return [e for e in self.events if isinstance(e, cls)]

    def calls(self) -> Iterator[tuple[Decision, CallRecord]]:
        """Every model call with its decision, in log order."""
        for d in self.of_kind(Decision):
            for c in calls_of(d):
                yield d, c

    def _need(self, kind: str) -> None:
        if self.kinds is not None and kind not in self.kinds:
            raise ValueError(
                f"{self.folder}: `{kind}` events were not read (kinds={sorted(self.kinds)})"
            )

    def out_of_play(self) -> dict[str, tuple[int, int, str]]:
        """Seat -> (step, tick, `dead`/`ejected`) of leaving play, from the engine's
        `kill` and `eject` events."""
        if self._gone is None:
            self._need("kill")
            self._need("eject")
            gone: dict[str, tuple[int, int, str]] = {}
            for e in self.events:
                if isinstance(e, Kill):
                    gone.setdefault(e.victim, (e.step, e.tick, "dead"))
                elif isinstance(e, Eject):
                    gone.setdefault(e.agent, (e.step, e.tick, "ejected"))
            self._gone = gone
        return self._gone

    def alive_at(self, step: int, tick: int) -> set[str]:
        """Seats in play at (step, tick): a kill counts from its own (step, tick) on, an
        ejection from the step after its vote."""
        out = set()
        gone = self.out_of_play()
        for a in self.start.agents:
            g = gone.get(a)
            killed_later = g is not None and g[2] == "dead" and (g[0], g[1]) > (step, tick)
            ejected_later = g is not None and g[2] == "ejected" and g[0] >= step
            if g is None or killed_later or ejected_later:
                out.add(a)
        return out

    def kill_ready_at(self, tick: int) -> dict[str, int]:
        """Impostor -> the first tick its kill is allowed, as the engine had set it by
        `tick` (its `kill_ready` events; `controller.readiness`). An impostor out of
        play keeps its last value; read `alive_at` for who may still kill."""
        now: dict[str, int] = {}
        for e in kill_readiness(self.events):
            if e.tick > tick:
                break
            now.update(e.ready)
        return now


__all__ = [
    "ARIA_AXES",
    "LOG_FILE",
    "SUMMARY_FILE",
    "CallRecord",
    "GameSetup",
    "LogFollower",
    "NotAGameLog",
    "PartialRecord",
    "RecordError",
    "RunRecord",
    "RunSummary",
    "SeatAgent",
    "Side",
    "StudyPlace",
    "TaskTally",
    "calls_of",
    "content_sha256",
    "events_of",
    "find_runs",
    "finished_runs",
    "has_log",
    "iter_log",
    "log_path",
    "log_progress",
    "read_log",
    "read_summary",
    "study_place",
    "total_cost",
]
