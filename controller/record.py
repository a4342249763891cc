"""One typed reader of a run folder: the only module that reads `events.jsonl`.

A game writes its record with `controller.events.EventLog` (the writer) and
`summary.json`; everything that reads a finished or running game goes through here:

- `RunRecord.read(folder)`: the typed events, the typed set-up (`GameSetup`: each side
  as its agent kind declared it in `game_start.sides`, with its ablation axes; each seat's
  agent), the typed `summary.json` (`RunSummary`) and the sha256 of the log as stored.
- `read_log(path, kinds=...)`: the typed events alone (optionally only some kinds, which
  skips e.g. the large `trace` lines undecoded).
- `calls_of(decision)`: a decision's model calls (`ModelCall`s, as the log holds them).
- `LogFollower`: the lines a growing log gained since the last look (the viewer).
- `log_progress(path)`: the latest step and whether the game ended, from the log's tail.
- `find_runs(paths)`, `log_path(run)`: where run folders and their logs are;
  `finished_runs(paths)`: those whose game finished (the unfinished are named).

The record's types are `controller.vocabulary`'s (events: `controller.events`); a line or
summary of the current version with a key they do not know is refused naming the key,
and one of an older version is first brought to the current one by the upgraders of
`controller.upgrade`.

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
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

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
from controller.upgrade import side_facts_from_config, upgrade_event, upgrade_summary
from controller.vocabulary import SUMMARY_VERSION, ModelCall, RunSummary, SideFacts, TaskTally

if TYPE_CHECKING:
    from world.geometry import ShipGeometry

LOG_FILE = "events.jsonl"
"""The event log's file name inside a run folder."""
SUMMARY_FILE = "summary.json"
"""The summary's file name inside a run folder."""
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
    A line of an older version is upgraded first (`controller.upgrade`); a field or a
    kind the current version does not know is refused (`RecordError` naming it, the
    file and the line); a log of a newer schema version raises `LogVersionError`.

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
        if only is not None and kind not in only:
            continue
        if kind not in KNOWN_KINDS:
            raise RecordError(
                file,
                f"an event of unknown kind {kind!r} (schema version {v})",
                "the log was edited or written by another program; " + _RESTORE,
                i + 1,
            )
        try:
            event = EVENT_ADAPTER.validate_python(upgrade_event(data))
        except ValidationError as exc:
            raise RecordError(
                file, f"a `{kind}` event {_fault(exc.errors()[0], 1)}", _RESTORE, i + 1
            ) from exc
        if isinstance(event, GameStart) and set(event.sides) != set(SIDES):
            raise RecordError(
                file,
                f"a `game_start` event whose sides are {sorted(event.sides)} (schema version "
                f"{SCHEMA_VERSION} records the facts of exactly `crew` and `impostor`)",
                _RESTORE,
                i + 1,
            )
        yield event


def _fault(err: ErrorDetails, skip: int = 0) -> str:
    """A validation error as words: an unknown key by name, else the field and why."""
    loc = [str(x) for x in err["loc"][skip:]]
    where = f" in {'.'.join(loc[:-1])}" if len(loc) > 1 else ""
    if err["type"] == "extra_forbidden":
        return f"with an unknown key `{loc[-1] if loc else '?'}`{where}"
    if err["type"] == "missing":
        return f"without the key `{loc[-1] if loc else '?'}`{where}"
    return f"whose {'.'.join(loc) or '(event)'} is wrong ({err['msg']})"


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
class _Typed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Side(_Typed):
    """Who played one side: the facts its agent kind declared (`game_start.sides`)."""

    facts: SideFacts

    @property
    def agent(self) -> str:
        """The agent kind (`scripted`, `aria`, a plugin's), or `unknown` if not recorded."""
        return self.facts.kind

    @property
    def backend(self) -> str:
        """The model backend address (`openai:gpt-4.1-mini`, `fake`, ...); the kind's name
        for agents without a model (`scripted`)."""
        return self.facts.backend

    @property
    def text_only(self) -> bool:
        """Whether the side's model was sent no images."""
        return self.facts.text_only

    @property
    def spec(self) -> dict[str, Any]:
        """Every resolved setting of the side (for `aria`: its spec); empty for kinds
        without settings."""
        return dict(self.facts.settings)

    @property
    def model(self) -> str:
        """The model name (the address without its provider), e.g. `gpt-4.1-mini`."""
        return self.backend.split(":", 1)[1] if ":" in self.backend else self.backend

    @property
    def axes(self) -> dict[str, str]:
        """The side's ablation axes and their values, as its kind named them (empty for
        agents without them)."""
        settings = self.facts.settings
        return {a: str(settings[a]) for a in self.facts.axes if a in settings}

    @classmethod
    def from_config(cls, side: Any) -> Side:
        """A side of an older record's config (`{agent, args}` or the flat `{backend,
        spec}`), read by the upgrader that knows those forms
        (`controller.upgrade.side_facts_from_config`)."""
        return cls(facts=side_facts_from_config(side))


class SeatAgent(_Typed):
    """One seat's agent as it described itself (`game_start.agent_specs`)."""

    kind: str
    backend: str
    """The backend address, or the kind's name for agents without a model."""
    vision: bool | None = None
    spec: dict[str, Any] = Field(default_factory=dict)
    axes_of: tuple[str, ...] = ()
    """The names of its side's ablation axes (`SideFacts.axes`)."""

    @property
    def model(self) -> str:
        """The model name (the address without its provider)."""
        return self.backend.split(":", 1)[1] if ":" in self.backend else self.backend

    @property
    def axes(self) -> dict[str, str]:
        """The ablation axes of this seat (empty for agents without them)."""
        return {a: str(self.spec[a]) for a in self.axes_of if a in self.spec}

    @classmethod
    def from_description(cls, desc: Any, axes: Iterable[str] = ()) -> SeatAgent:
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
            axes_of=tuple(axes),
        )


class GameSetup(_Typed):
    """The `game_start` event with its sides and seats typed."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

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
    def from_start(cls, start: GameStart) -> GameSetup:
        """Type a `game_start`: each side from the facts its kind declared (`sides`; an
        older log's are derived when it is read, by `controller.upgrade`).

        Raises:
            ValueError: The start does not hold the facts of both sides.
        """
        missing = [name for name in SIDES if name not in start.sides]
        if missing:
            raise ValueError(
                f"game_start holds no declared facts for {', '.join(missing)} "
                "(`sides`: every current-version game_start records both)"
            )
        crew, impostor = Side(facts=start.sides["crew"]), Side(facts=start.sides["impostor"])

        def seat(a: str) -> SeatAgent:
            side = impostor if start.roles.get(a) == "impostor" else crew
            return SeatAgent.from_description(start.agent_specs.get(a, {}), side.facts.axes)

        return cls(
            event=start,
            crew=crew,
            impostor=impostor,
            seats={a: seat(a) for a in start.agents},
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
CallRecord = ModelCall
"""The name readers knew a model call by (`controller.vocabulary.ModelCall`)."""


def calls_of(decision: Decision) -> list[ModelCall]:
    """A decision's model calls, as the log holds them (typed when read; an older log's
    call record that could not be read is a failed call naming why: see
    `controller.upgrade`)."""
    return list(decision.calls)


def total_cost(calls: Iterable[ModelCall]) -> float | None:
    """The cost of some calls: None as soon as one is unpriced (unknown, never a lower
    sum), as `controller.accounting.cost_from_events` counts a game."""
    total = 0.0
    for c in calls:
        if c.cost_usd is None:
            return None
        total += c.cost_usd
    return round(total, 6)


# ---------------------------------------------------------------------- summary
def load_summary(folder: str | Path) -> RunSummary | None:
    """A run folder's `summary.json`, typed (an older version upgraded first); None when
    the game wrote none.

    Raises:
        RecordError: The file is not JSON, or not a summary (a key this version does not
            know, named; a field of the wrong type), or of a newer version.
    """
    path = Path(folder) / SUMMARY_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(path, f"not a readable summary ({exc})", _REBUILD) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(path, f"not a readable summary (not JSON: {exc.msg})", _REBUILD) from exc
    if not isinstance(data, dict):
        raise RecordError(path, f"not a readable summary (a JSON {type(data).__name__})", _REBUILD)
    version = data.get("version", 1)
    if isinstance(version, int) and version > SUMMARY_VERSION:
        raise RecordError(
            path,
            f"summary version {version}, newer than this reader's {SUMMARY_VERSION}",
            "upgrade mineamongus to read it",
        )
    try:
        return RunSummary.model_validate(upgrade_summary(data))
    except ValidationError as exc:
        raise RecordError(
            path, f"not a readable summary: one {_fault(exc.errors()[0])}", _REBUILD
        ) from exc


def read_summary(folder: str | Path) -> RunSummary | None:
    """A run folder's `summary.json`, typed; None when it wrote none or it is unreadable
    (`load_summary` says why)."""
    try:
        return load_summary(folder)
    except RecordError:
        return None


_REBUILD = "delete it and rebuild it by re-running the game; the log is the record"


def _check_summary(
    path: Path, folder: Path, end: GameEnd | None, summary: RunSummary | None
) -> None:
    """Refuse a `summary.json` that tells another game than the log does."""
    spath = folder / SUMMARY_FILE
    if summary is None:
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
        summary = load_summary(folder)
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
            setup=GameSetup.from_start(start),
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

    def calls(self) -> Iterator[tuple[Decision, ModelCall]]:
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
    "LOG_FILE",
    "SUMMARY_FILE",
    "CallRecord",
    "GameSetup",
    "LogFollower",
    "ModelCall",
    "NotAGameLog",
    "PartialRecord",
    "RecordError",
    "RunRecord",
    "RunSummary",
    "SeatAgent",
    "Side",
    "SideFacts",
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
    "load_summary",
    "study_place",
    "total_cost",
]
