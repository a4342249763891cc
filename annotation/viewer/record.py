"""A run folder, indexed step by step for the viewer.

The viewer reads only the record: `events.jsonl`, `summary.json`, the frames on disk,
and (when present) `annotations.jsonl` and `claims.jsonl`. The index is rebuilt
whenever the log has grown, so the same code serves a finished game and one that is
still being played. Lines are read as plain JSON (a newer minor revision's fields are
carried through untouched); a last line still being written waits for the next refresh.

A record that cannot be trusted is never shown around its fault: the viewer asks the
reading path every tool uses (`controller.record.RunRecord.read`) and keeps its
`RecordError` (file, line, fix) as the record's `problem`. The rule that tells a
broken record from a game still being written:

- a complete line that is not a JSON object (a garbage line, a file that is not text)
  is broken at once, whether or not a process still writes the log;
- a log with `summary.json` but no `game_end` is broken (it was cut after the game);
- a log that is empty (or has no `game_start`) is a game still setting up while a
  process holds it open for writing, or while it changed less than `STALE_S` seconds
  ago; past that, with no writer, it is broken (`NotAGameLog`);
- a log with `game_start` but no `game_end` and no summary is a game in progress and
  is followed live; when no process writes it any more it is shown with a notice
  (`stopped`): the game was stopped before it ended.

Whether a process holds the log open is read from `/proc` (Linux: processes of this
user); elsewhere, the newest change in the run folder stands in for it.

A game a person plays (a seat of kind `human`) is *sealed* while it runs: without the
analyst token (`unlocked`) the record answers no role, no step, no frame and no
finding, whatever the analyst switch says, since the person could read them too. Once
the game has ended (`game_end` logged, or `summary.json` written) it is served like
any other.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from controller.events import EVENT_ADAPTER, GameStart, LogVersionError
from controller.record import (
    SUMMARY_FILE,
    NotAGameLog,
    RecordError,
    log_path,
)
from controller.record import RunRecord as LogRecord
from controller.timeline import GameIndex
from controller.upgrade import upgrade_event
from world.spec import MapSpec, MapSpecError, load_map, parse_map

log = logging.getLogger(__name__)

SECRET_DECISION_FIELDS = ("narration",)
"""Decision fields shown only with the analyst switch (an impostor's private intent)."""


@dataclass
class StepInfo:
    """What the viewer shows for one step."""

    step: int
    phase: str
    tick: int
    speaker: str | None = None
    players: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Agent -> {pos: [x, y, z], yaw, room, status} at the end of the step."""
    trail: dict[str, list[list[float]]] = field(default_factory=dict)
    """Agent -> [[x, z], ...] sampled while the step's programs ran."""
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    programs: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    """Rule events, chat, votes and meeting outcomes of this step, in log order."""
    bodies: dict[str, list[float]] = field(default_factory=dict)
    """Victim -> body position, for bodies lying at the end of the step."""


TRANSCRIPT_KINDS = frozenset(
    {"server_message", "speech", "vote", "meeting_start", "meeting_end", "eject"}
)
RULE_KINDS = frozenset(
    {"kill", "report", "emergency", "task_done", "task_start", "task_interrupted"}
)
INDEXED_KINDS = frozenset(
    {
        "game_start",
        "step_start",
        "positions",
        "trace",
        "kill",
        "eject",
        "meeting_start",
        "meeting_end",
        "visibility",
    }
)
"""The kinds the game's one index (`controller.timeline.GameIndex`) folds: each step's
players and trails are read from it, never rebuilt here."""


class SealedError(PermissionError):
    """A live game a person plays was asked for without the analyst token."""


SEALED_MESSAGE = (
    "a person plays a seat of this game: its roles, steps, frames and findings stay "
    "hidden until it ends (open the analyst address the viewer printed at start to "
    "see them now)"
)


STALE_S = 5.0
"""Seconds a log without `game_start` (or a game's log without `game_end`) may go
unchanged, with no process holding it open for writing, before the viewer stops
waiting for it: an empty log is then broken, an unfinished game `stopped`."""
WRITER_CACHE_S = 2.0
"""How long one look at who holds a log open is trusted (it scans `/proc`)."""
FIX_REWRITE = "restore the file from a copy or re-run the game (`mineamongus play --config`)"
"""The fix named when the viewer finds a fault the shared reader did not (a race)."""
STOPPED_MESSAGE = (
    "this game has no game_end and no summary, and no process is writing its log any "
    "more: it stopped before it ended (its process was killed or crashed); it is shown "
    "as far as it got"
)
ENDINGS = {
    "impostors_outnumber": "crewmates outnumbered",
    "impostors_ejected": "all impostors ejected",
    "tasks_done": "all tasks done",
    "timeout": "the step limit was reached",
    "invalid": "the game was declared invalid",
}
"""How the banner words each ending (`controller.events.EndingName`)."""

ProblemKind = Literal["broken", "not_a_game", "newer"]
EXCERPT_PROBLEM = "not a JSON event"
"""How the shared reader's message for a line that is not JSON begins (an excerpt of
the line follows in parentheses)."""
WHY_WITHHELD = "a person may be playing this game; open the analyst address to see it"


@dataclass(frozen=True)
class RecordProblem:
    """Why a record cannot be shown: the shared reader's error, in parts.

    Attributes:
        kind: `broken` (a line, the text or the summary), `not_a_game` (empty, or no
            `game_start`), `newer` (a newer schema version).
        file: The file at fault.
        line: The line at fault, when one is.
        problem: What is wrong.
        fix: What to do about it.
    """

    kind: ProblemKind
    file: str
    line: int | None
    problem: str
    fix: str

    @classmethod
    def of(cls, err: RecordError | LogVersionError, file: Path) -> RecordProblem:
        """The problem an exception of the shared reader names."""
        if isinstance(err, RecordError):
            kind: ProblemKind = "not_a_game" if isinstance(err, NotAGameLog) else "broken"
            return cls(kind, str(err.file), err.line, err.problem, err.fix)
        return cls("newer", str(file), None, str(err), "upgrade mineamongus to read it")

    @property
    def message(self) -> str:
        """The error as the shared reader words it: `FILE: line N: PROBLEM; FIX`."""
        where = f"{self.file}: line {self.line}" if self.line is not None else self.file
        return f"{where}: {self.problem}; {self.fix}"

    def json(self, redact: bool = False) -> dict[str, Any]:
        """The problem for the page; `redact` leaves out the excerpt of a line that is
        not JSON, for a game whose secrets are kept (a person may play it): a torn
        event line can hold the game id, which carries the seed."""
        shown = self
        if redact and self.problem.startswith(EXCERPT_PROBLEM):
            shown = replace(
                self, problem=f"{EXCERPT_PROBLEM} (its text is withheld: {WHY_WITHHELD})"
            )
        return {
            "kind": shown.kind,
            "file": shown.file,
            "line": shown.line,
            "problem": shown.problem,
            "fix": shown.fix,
            "message": shown.message,
        }


class RecordBroken(ValueError):
    """The record cannot be shown (its `problem` says why)."""

    def __init__(self, problem: RecordProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def check_record(run: Path) -> RecordProblem | None:
    """What the shared reader refuses in this run folder (an unfinished game is
    accepted), or None. Reads the whole log as text but decodes only its
    `game_start` and `game_end` lines (and any line that does not name its kind). A
    log cut beside its summary, which the reader names no line of, is given its last
    line (where it was cut)."""
    path = log_path(run)
    try:
        LogRecord.read(run, kinds=(), partial=True)
    except (RecordError, LogVersionError) as exc:
        problem = RecordProblem.of(exc, path)
        if problem.line is None and problem.kind == "broken" and problem.file == str(path):
            # A log cut beside its summary: name its last line, where it was cut.
            return replace(problem, line=_line_count(path))
        return problem
    except OSError:
        return None
    return None


def _line_count(path: Path) -> int | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def log_writers(path: Path) -> bool | None:
    """Whether a process holds `path` open for writing, read from `/proc` (the
    processes this user may look into); None where `/proc` cannot tell."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    try:
        target = os.path.realpath(path)
    except OSError:
        return False
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        fd_dir = f"{entry.path}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{fd_dir}/{fd}") != target:
                    continue
                with open(f"{entry.path}/fdinfo/{fd}", encoding="ascii") as fh:
                    flags = next((int(x.split()[1], 8) for x in fh if x.startswith("flags:")), 0)
            except (OSError, ValueError, IndexError):
                continue
            if flags & (os.O_WRONLY | os.O_RDWR):
                return True
    return False


def recent_activity(run: Path) -> float:
    """Seconds since anything in the run folder (or one folder down) last changed."""
    newest = 0.0
    try:
        entries = list(os.scandir(run))
    except OSError:
        return float("inf")
    for e in entries:
        try:
            newest = max(newest, e.stat().st_mtime)
            if e.is_dir() and e.name not in ("frames", "human"):
                for sub in os.scandir(e.path):
                    newest = max(newest, sub.stat().st_mtime)
        except OSError:
            continue
    return time.time() - newest


def abandoned(run: Path, cache: list[float | bool] | None = None) -> bool:
    """Whether nothing writes this run's log: it has not changed for `STALE_S`
    seconds and no process holds it open for writing (where `/proc` cannot tell, the
    run folder has not changed for `STALE_S` seconds either).

    Args:
        run: The run folder.
        cache: `[time, answer]` of the last look at the writers, reused for
            `WRITER_CACHE_S` seconds (updated in place).
    """
    path = log_path(run)
    try:
        age = time.time() - path.stat().st_mtime
    except OSError:
        return False
    if age < STALE_S:
        return False
    now = time.monotonic()
    if cache is not None and len(cache) == 2 and now - float(cache[0]) < WRITER_CACHE_S:
        return bool(cache[1])
    held = log_writers(path)
    answer = not held if held is not None else recent_activity(Path(run)) >= STALE_S
    if cache is not None:
        cache[:] = [now, answer]
    return answer


def record_problem(run: Path) -> RecordProblem | None:
    """Why `mineamongus view` cannot show this run folder now, or None (a finished
    game, or one still being written, which the viewer follows live)."""
    path = log_path(run)
    try:
        empty = path.stat().st_size == 0
    except OSError:
        return None
    if empty and not abandoned(run):
        return None  # a game setting up: its log is open, game_start comes next
    problem = check_record(run)
    if problem is not None and problem.kind == "not_a_game" and not abandoned(run):
        return None  # its first line is being written
    return problem


def _event(raw: bytes) -> dict[str, Any] | None:
    """A complete log line as an event object; None when it is not one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\0" in text:
        return None
    try:
        ev = json.loads(text)
    except ValueError:
        return None
    return ev if isinstance(ev, dict) else None


def result_line(end: Mapping[str, Any]) -> str:
    """The banner's words for a game's end: `Impostors win: crewmates outnumbered`."""
    ending = str(end.get("ending", ""))
    how = ENDINGS.get(ending, ending.replace("_", " "))
    winner = end.get("winner")
    if end.get("status") == "invalid" or winner not in ("crew", "impostors"):
        return f"No winner: {how}"
    return f"{'Impostors win' if winner == 'impostors' else 'Crew wins'}: {how}"


class _Lines:
    """The complete lines a log gained since the last look, numbered as in the file
    (an unfinished last line waits for the next look)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._size = -1
        self._offset = 0
        self._pending = b""
        self.count = 0

    def poll(self) -> list[tuple[int, bytes]] | None:
        """New complete lines as (line number, bytes); None when the log is absent or
        unchanged.

        Raises:
            _Rewritten: The log is shorter than what was read (it was replaced).
        """
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return None
        if size == self._size:
            return None
        if size < self._offset:
            raise _Rewritten(self.path)
        self._size = size
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
        self._offset += len(chunk)
        parts = (self._pending + chunk).split(b"\n")
        self._pending = parts.pop()
        out = []
        for raw in parts:
            self.count += 1
            out.append((self.count, raw))
        return out


class _Rewritten(RuntimeError):
    """A log that shrank: a log is only ever appended to, so it was replaced."""


class RunRecord:
    """The viewer's index of one run folder.

    Args:
        run: The folder `mineamongus play --out` wrote.
        report: Called once with the record's `problem` when it is first found (the
            `view` command prints it).
    """

    def __init__(self, run: Path, report: Callable[[RecordProblem], None] | None = None) -> None:
        self.run = Path(run)
        self._lock = threading.Lock()
        self._report = report
        self._clear()
        self.refresh()

    def _clear(self) -> None:
        self._lines = _Lines(log_path(self.run))
        self.game: dict[str, Any] = {}
        self.end: dict[str, Any] | None = None
        self.steps: dict[int, StepInfo] = {}
        self.transcript: list[dict[str, Any]] = []
        self._bodies: dict[str, list[float]] = {}
        self.index: GameIndex | None = None
        """The game's index, fed event by event as the log grows."""
        self.map_spec: MapSpec | None = None
        self.map_error: str | None = None
        """Why the record has no map (its `game_start` names none, or it cannot be read)."""
        self.problem: RecordProblem | None = None
        """Why the record cannot be shown (then nothing else of it is)."""
        self.stopped: str | None = None
        """Set when an unfinished game's log is written no more (`STOPPED_MESSAGE`)."""
        self._verified: tuple[int, int, int] | None = None
        self._writers: list[float | bool] = []

    @property
    def events_path(self) -> Path:
        """The run's event log."""
        return log_path(self.run)

    # ------------------------------------------------------------------ reading
    def refresh(self) -> bool:
        """Read what the log gained since the last call; True if anything was new
        (lines, or a verdict: broken, or stopped)."""
        with self._lock:
            if self.problem is not None:
                return False
            try:
                new = self._lines.poll()
            except _Rewritten:
                self._clear()
                new = self._lines.poll()
            changed = False
            for n, raw in new or []:
                if not raw.strip():
                    continue
                ev = _event(raw)
                if ev is None:
                    self._fail(n, "not a JSON event object")
                    return True
                if not self.game and ev.get("kind") != "game_start":
                    found = check_record(self.run)
                    if found is not None:
                        self._broken(found)
                        return True
                try:
                    self._add(ev)
                except ValidationError:
                    self._fail(n, f"a `{ev.get('kind')}` event the log's reader refuses")
                    return True
                changed = True
            was = self.stopped
            self._judge()
            return changed or self.problem is not None or self.stopped != was

    def _fail(self, line: int, problem: str) -> None:
        """A complete line that is no event: the shared reader's words for it (or ours,
        should the file have changed under it meanwhile)."""
        found = check_record(self.run)
        self._broken(
            found or RecordProblem("broken", str(self.events_path), line, problem, FIX_REWRITE)
        )

    def _broken(self, problem: RecordProblem) -> None:
        self.problem = problem
        self.stopped = None
        if self._report is not None:
            self._report(problem)
        else:
            log.warning("%s", problem.message)

    def _judge(self) -> None:
        """Verify a finished record once (again when it changes); call an empty log
        nobody writes broken, and an unfinished game nobody writes `stopped`."""
        try:
            st = self.events_path.stat()
        except OSError:
            return  # not written yet (`play --view` starts before its game)
        summary = self.run / SUMMARY_FILE
        if self.end is not None or summary.is_file():
            self.stopped = None
            try:
                sst = summary.stat().st_mtime_ns
            except OSError:
                sst = 0
            key = (st.st_size, st.st_mtime_ns, sst)
            if key != self._verified:
                found = check_record(self.run)
                if found is not None:
                    self._broken(found)
                    return
                self._verified = key
            return
        if not abandoned(self.run, self._writers):
            self.stopped = None
            return
        if not self.game:
            found = check_record(self.run)
            if found is not None:
                self._broken(found)
            return
        self.stopped = STOPPED_MESSAGE

    def _step(self, n: int, phase: str = "free_roam", tick: int = 0) -> StepInfo:
        info = self.steps.get(n)
        if info is None:
            info = StepInfo(step=n, phase=phase, tick=tick)
            prev = self.steps.get(n - 1)
            if prev is not None:
                info.players = {a: dict(p) for a, p in prev.players.items()}
            info.bodies = dict(self._bodies)
            self.steps[n] = info
        return info

    def _add(self, ev: dict[str, Any]) -> None:
        """Take in one event line.

        Raises:
            pydantic.ValidationError: An event the index folds that the log's typed
                reader refuses.
        """
        kind = ev.get("kind")
        step = int(ev.get("step", 0))
        if kind in INDEXED_KINDS:
            typed = EVENT_ADAPTER.validate_python(upgrade_event(dict(ev)))
            if self.index is None:
                if not isinstance(typed, GameStart):
                    return
                self.index = GameIndex(start=typed, events=[])
            self.index.add(typed)
        if kind == "game_start":
            self.game = ev
            self._load_map(ev)
            self._show(self._step(0, "setup", int(ev.get("tick", 0))))
            return
        if kind == "game_end":
            self.end = ev
            self.transcript.append(ev)
            return
        if kind == "step_start":
            info = self._step(step, str(ev.get("phase", "")), int(ev.get("tick", 0)))
            info.phase = str(ev.get("phase", info.phase))
            info.tick = int(ev.get("tick", info.tick))
            info.speaker = ev.get("speaker")
            return
        info = self._step(step)
        if kind in INDEXED_KINDS:
            self._show(info)
        if kind == "decision":
            info.decisions[str(ev.get("agent"))] = ev
        elif kind == "program":
            info.programs[str(ev.get("agent"))] = ev
        elif kind == "kill":
            self._bodies[str(ev["victim"])] = list(ev.get("pos", [0, 0, 0]))
            info.bodies = dict(self._bodies)
            info.events.append(ev)
        elif kind == "meeting_start":
            self._bodies = {}
            info.events.append(ev)
            self.transcript.append(ev)
        elif kind in TRANSCRIPT_KINDS:
            info.events.append(ev)
            self.transcript.append(ev)
        elif kind in RULE_KINDS or kind == "action_rejected":
            info.events.append(ev)

    def _show(self, info: StepInfo) -> None:
        """The step's players and trails as the index has them so far: the snapshot
        that stands for the step (where its programs ended wins over the meeting
        table), over what the step took over from the one before; the `trace` poses."""
        if self.index is None:
            return
        shot = self.index.step_snapshot(info.step)
        if shot is not None:
            for agent, snap in shot.event.players.items():
                info.players[agent] = {
                    "pos": list(snap.pos),
                    "yaw": snap.yaw,
                    "room": snap.room,
                    "status": snap.status,
                }
        for agent, track in self.index.trace_of(info.step).items():
            info.trail[agent] = [[round(p.pos[0], 2), round(p.pos[2], 2)] for p in track]

    def _load_map(self, start: dict[str, Any]) -> None:
        """The map as played (`map_spec`), else the map `game_start.map` (or the
        record's `config.map`) names. A record that names none gets no map and a
        `map_error` naming the field: no map is ever guessed."""
        self.map_spec, self.map_error = None, None
        spec = start.get("map_spec")
        problem = ""
        if spec:
            try:
                self.map_spec = parse_map(spec, "game_start.map_spec")
                return
            except MapSpecError as exc:
                problem = f"{exc}; "
        config = start.get("config")
        name = start.get("map") or (config.get("map") if isinstance(config, dict) else None)
        if not name:
            self.map_error = (
                f"{problem}game_start names no map: it has no `map` field (nor `map_spec` or "
                "`config.map`), so the viewer cannot tell which map was played"
            )
        else:
            try:
                self.map_spec = load_map(str(name))
            except (MapSpecError, OSError) as exc:
                self.map_error = f"{problem}game_start.map {name!r}: {exc}"
        if self.map_error is not None:
            log.warning("%s: %s", self.run, self.map_error)

    # ------------------------------------------------------------------ sealing
    def human_seats(self) -> list[str]:
        """The seats a person plays (`game_start.agent_specs` kind `human`, or a
        `config.seats` entry of agent `human`)."""
        seats: list[str] = []
        specs = self.game.get("agent_specs")
        if isinstance(specs, dict):
            seats += [
                a for a, s in specs.items() if isinstance(s, dict) and s.get("kind") == "human"
            ]
        config = self.game.get("config")
        chosen = config.get("seats") if isinstance(config, dict) else None
        if isinstance(chosen, dict):
            seats += [
                a for a, s in chosen.items() if isinstance(s, dict) and s.get("agent") == "human"
            ]
        return sorted(set(seats))

    @property
    def over(self) -> bool:
        """Whether the game has ended (`game_end` logged or `summary.json` written)."""
        return self.end is not None or (self.run / "summary.json").is_file()

    def _sealed(self, unlocked: bool) -> bool:
        return not unlocked and bool(self.human_seats()) and not self.over

    def private(self, unlocked: bool = False) -> bool:
        """Whether the run's files (frames, labels) are withheld from this asker: the
        game is sealed, or its start is not logged yet (so it may turn out sealed)."""
        self.refresh()
        with self._lock:
            return not self.game or self._sealed(unlocked)

    def _secret(self, unlocked: bool) -> bool:
        """Whether a problem's detail is kept from this asker: the game is sealed, or
        its start cannot be read (so it may be a sealed one)."""
        return not unlocked and (not self.game or self._sealed(False))

    def problem_json(self, unlocked: bool = False) -> dict[str, Any] | None:
        """The record's problem as the page shows it (None when it has none)."""
        self.refresh()
        with self._lock:
            if self.problem is None:
                return None
            return self.problem.json(redact=self._secret(unlocked))

    # ------------------------------------------------------------------ answers
    @property
    def last_step(self) -> int:
        """The highest step the log has reached."""
        return max(self.steps) if self.steps else 0

    def meta(self, analyst: bool, unlocked: bool = False) -> dict[str, Any]:
        """The game as a whole: seats, map, steps, and per-step positions for the map.

        Args:
            analyst: Include the roles and the game's result.
            unlocked: The asker holds the analyst token; without it a live game a
                person plays answers only its seats, its map and how far it has got.
        """
        self.refresh()
        with self._lock:
            if self.problem is not None:
                return self._broken_meta(self.problem.json(redact=self._secret(unlocked)))
            if self._sealed(unlocked):
                return self._sealed_meta()
            return self._meta(analyst)

    def _broken_meta(self, problem: dict[str, Any]) -> dict[str, Any]:
        # Nothing of a record that cannot be trusted is shown beside its fault.
        return {
            "game_id": "",
            "seed": None,
            "agents": [],
            "roles": {},
            "map": {},
            "steps": [],
            "last_step": 0,
            "over": False,
            "end": None,
            "result": None,
            "annotations": [],
            "claims": [],
            "sealed": False,
            "stopped": None,
            "problem": problem,
        }

    def _sealed_meta(self) -> dict[str, Any]:
        # No game id or seed either: the id carries the seed, and the seed derives the roles.
        return {
            "game_id": "",
            "seed": None,
            "agents": list(self.game.get("agents", [])),
            "roles": {},
            "map": self._map_json(),
            "steps": [],
            "last_step": self.last_step,
            "over": False,
            "end": None,
            "result": None,
            "annotations": [],
            "claims": [],
            "sealed": True,
            "sealed_message": SEALED_MESSAGE,
            "stopped": self.stopped,
            "problem": None,
        }

    def _meta(self, analyst: bool) -> dict[str, Any]:
        agents = list(self.game.get("agents", []))
        roles = self.game.get("roles", {}) if analyst else {}
        steps = []
        for n in sorted(self.steps):
            s = self.steps[n]
            steps.append(
                {
                    "step": n,
                    "phase": s.phase,
                    "tick": s.tick,
                    "speaker": s.speaker,
                    "players": s.players,
                    "trail": s.trail,
                    "bodies": s.bodies,
                }
            )
        return {
            "game_id": self.game.get("game_id", ""),
            "seed": self.game.get("seed"),
            "agents": agents,
            "roles": roles,
            "map": self._map_json(),
            "steps": steps,
            "last_step": self.last_step,
            "over": self.end is not None,
            "end": self.end if self.end is None or analyst else _public_end(self.end),
            "result": self._result(analyst),
            "annotations": self._annotations(),
            "claims": self._claims(),
            "sealed": False,
            "stopped": self.stopped,
            "problem": None,
        }

    def _result(self, analyst: bool) -> dict[str, Any] | None:
        """The banner of an ended game: the winning side and the ending for everyone
        (what every player is shown when a game ends); the impostors' names and an
        invalid game's reason only for the analyst."""
        end = self.end
        if end is None:
            return None
        out: dict[str, Any] = {**_public_end(end), "headline": result_line(end)}
        if analyst:
            roles = self.game.get("roles", {})
            out["impostors"] = [
                a for a in self.game.get("agents", []) if roles.get(a) == "impostor"
            ]
            out["reason"] = end.get("reason", "")
        return out

    def step(self, n: int, analyst: bool, unlocked: bool = False) -> dict[str, Any]:
        """Everything about one step: frames, decisions, outcomes and the transcript.

        Raises:
            KeyError: No such step.
            SealedError: A person plays this game, it is live, and `unlocked` is False.
            RecordBroken: The record cannot be shown (`problem`).
        """
        self.refresh()
        with self._lock:
            if self.problem is not None:
                raise RecordBroken(self.problem)
            if self._sealed(unlocked):
                raise SealedError(SEALED_MESSAGE)
            return self._step_json(n, analyst)

    def _step_json(self, n: int, analyst: bool) -> dict[str, Any]:
        info = self.steps.get(n)
        if info is None:
            raise KeyError(n)
        decisions = {}
        for agent, d in info.decisions.items():
            shown = {k: v for k, v in d.items() if analyst or k not in SECRET_DECISION_FIELDS}
            decisions[agent] = shown
        frames = {}
        for agent in self.game.get("agents", []):
            path = self.frame_path(n, agent)
            if path is not None:
                frames[agent] = f"run/{path}"  # relative: the page may sit under a prefix
        upto = [
            e
            for e in self.transcript
            if int(e.get("step", 0)) <= n and (e.get("kind") != "game_end" or analyst)
        ]
        return {
            "step": n,
            "phase": info.phase,
            "tick": info.tick,
            "speaker": info.speaker,
            "players": info.players,
            "bodies": info.bodies,
            "frames": frames,
            "decisions": decisions,
            "programs": info.programs,
            "events": info.events,
            "transcript": upto,
        }

    def frame_path(self, step: int, agent: str) -> str | None:
        """The frame an agent decided `step` on, relative to the run folder, if saved."""
        info = self.steps.get(step)
        d = info.decisions.get(agent) if info else None
        ref = d.get("frame") if d else None
        if isinstance(ref, dict) and ref.get("path"):
            return str(ref["path"])
        for ext in ("jpg", "png"):
            rel = f"frames/{step:04d}/{agent}.{ext}"
            if (self.run / rel).is_file():
                return rel
        return None

    def _map_json(self) -> dict[str, Any]:
        spec = self.map_spec
        if spec is None:
            return {"error": self.map_error} if self.map_error else {}
        return {
            "name": spec.name,
            "rooms": [{"name": r.name, "rect": r.rect.model_dump()} for r in spec.rooms],
            "corridors": [{"name": c.name, "rect": c.rect.model_dump()} for c in spec.corridors],
            "stations": [
                {"id": s.id, "name": s.name, "room": s.room, "cell": list(s.cell)}
                for s in spec.stations
            ],
            "button": list(spec.emergency_button),
            "meeting_room": spec.meeting_room,
        }

    def _jsonl(self, name: str) -> list[dict[str, Any]]:
        path = self.run / name
        if not path.is_file():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return out

    def _annotations(self) -> list[dict[str, Any]]:
        return self._jsonl("annotations.jsonl")

    def _claims(self) -> list[dict[str, Any]]:
        return self._jsonl("claims.jsonl")


def _public_end(end: dict[str, Any]) -> dict[str, Any]:
    return {k: end[k] for k in ("winner", "ending", "status", "step") if k in end}


__all__ = [
    "ENDINGS",
    "SEALED_MESSAGE",
    "STALE_S",
    "STOPPED_MESSAGE",
    "RecordBroken",
    "RecordProblem",
    "RunRecord",
    "SealedError",
    "StepInfo",
    "abandoned",
    "check_record",
    "log_writers",
    "record_problem",
    "result_line",
]
