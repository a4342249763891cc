"""The tournament runner: schedules games, records their outcome, resumes after a crash.

The runner only schedules, records and collects. Each game is a `mineamongus play`
process whose `summary.json` and `events.jsonl` are the record; the manifest points
at them. The same command resumes a study: finished games are kept, games that were
running when the runner died are cleaned up (by the process ids it recorded) and
restarted from scratch in a fresh folder.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from controller.checks import log_violations
from controller.record import LOG_FILE, SUMMARY_FILE, log_path
from controller.tournament.collect import CollectError, Tables, collect, remove_tables
from controller.tournament.executors import Executor, Message
from controller.tournament.manifest import (
    MANIFEST,
    Attempt,
    Entry,
    Manifest,
    ManifestError,
    new_manifest,
    read_manifest,
    reconcile,
    write_manifest,
)
from controller.tournament.process import (
    GameJob,
    ProcessReport,
    log_tail,
    read_summary,
    terminate_tree,
)
from controller.tournament.spec import Arm, ExperimentSpec, SpecError, expand_arms, load_spec

log = logging.getLogger(__name__)

SPEC_COPY = "spec.yaml"

# Exit codes of `mineamongus tournament`.
EXIT_DONE = 0
EXIT_INCOMPLETE = 1  # games left invalid or failed after their retries
EXIT_PAUSED = 3  # quota, credentials or --max-cost: fix, then run the same command
EXIT_INTERRUPTED = 130

PLAY_REFUSED = 2
"""Exit code of `mineamongus play` when it refuses its configuration or credentials."""


@dataclass
class RunOptions:
    """The runner's options (command line over the spec's `runner` defaults)."""

    workers: int
    retries: int
    game_timeout_s: float
    max_cost_usd: float | None = None
    extend: bool = False

    def __post_init__(self) -> None:
        """Refuse values the spec's `runner` section refuses too, naming the value.

        Raises:
            ValueError: A value out of range (the message names the option and its
                command-line flag).
        """
        if self.workers < 1:
            raise ValueError(f"workers (--workers) {self.workers}: run at least 1 game at a time")
        if self.retries < 0:
            raise ValueError(f"retries (--retries) {self.retries}: give 0 or more")
        if not math.isfinite(self.game_timeout_s) or self.game_timeout_s <= 0:
            raise ValueError(
                f"game_timeout_s (--game-timeout) {self.game_timeout_s:g}: give a number of "
                "seconds above 0 (a game past it is killed)"
            )
        if self.max_cost_usd is not None and (
            not math.isfinite(self.max_cost_usd) or self.max_cost_usd < 0
        ):
            raise ValueError(
                f"max_cost_usd (--max-cost) {self.max_cost_usd:g}: give a spend in USD of 0 or more"
            )


@dataclass
class RunResult:
    """How a run ended."""

    exit_code: int
    counts: dict[str, int]
    message: str
    spent_usd: float
    notes: list[str] = field(default_factory=list)
    tables: Tables | None = None
    """The result tables written at the end (None when they could not be)."""


Notify = Callable[[str], None]


def games_folder(out: Path, arm: str, seed: int, attempt: int) -> Path:
    """The run folder of one attempt of one game."""
    return out / "games" / arm / f"seed{seed}-try{attempt}"


_RECORD_FILES = (LOG_FILE, SUMMARY_FILE)


def study_out_refusal(out: Path) -> str | None:
    """Why a study must not be written into `out`, or None when it may.

    A study folder (one with a manifest) is resumed or extended; any other folder that
    holds a game record (a run's `events.jsonl` or `summary.json`, at any depth) is
    refused, as `play` refuses it: `annotate` and `analyze` read every record under a
    folder, so the study's games would be mixed with the stray ones.
    """
    if not out.exists():
        return None
    if not out.is_dir():
        return "is not a folder"
    if (out / MANIFEST).is_file():
        for name in _RECORD_FILES:
            if (out / name).is_file():
                return f"holds a study and a game record of its own ({out / name})"
        return None
    for root, _dirs, files in os.walk(out):
        for name in _RECORD_FILES:
            if name in files:
                return f"holds a game record ({Path(root) / name}) but no study"
    return None


def open_study(
    spec_path: Path, out: Path, extend: bool
) -> tuple[ExperimentSpec, list[Arm], Manifest, list[str]]:
    """Load a spec, and create or reconcile the study folder's manifest.

    Returns:
        The spec, its arms, the manifest (written) and what `--extend` added.

    Raises:
        SpecError: the spec is invalid.
        ManifestError: the spec changed and `extend` is off, or an arm changed, or `out`
            is not a study folder but holds a game record (`study_out_refusal`).
    """
    spec = load_spec(spec_path)
    arms = expand_arms(spec)
    taken = study_out_refusal(out)
    if taken is not None:
        raise ManifestError(f"--out {out} {taken}; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(out)
    notes: list[str] = []
    if manifest is None:
        manifest = new_manifest(spec.name, spec.world, arms, spec.seed_list())
    else:
        if manifest.world != spec.world:
            raise ManifestError(
                f"world: this study plays {manifest.world!r}, the spec says {spec.world!r}; "
                "use a new --out folder"
            )
        notes = reconcile(manifest, arms, spec.seed_list(), extend)
        if notes:
            # New arms or seeds: the tables no longer describe the study.
            for path in remove_tables(out):
                notes.append(f"removed {path} (out of date; rebuilt when the run ends)")
    text = spec_path.read_text()
    (out / SPEC_COPY).write_text(text)
    write_manifest(out, manifest)
    return spec, arms, manifest, notes


def study_spec(out: Path) -> Path:
    """The spec copy a study folder keeps (so `tournament DIR` resumes it).

    Raises:
        SpecError: the folder holds no study.
    """
    path = out / SPEC_COPY
    if not path.is_file():
        raise SpecError(
            f"{out}: no {SPEC_COPY} here; is it a study folder (`--out` of tournament)?"
        )
    return path


def cleanup_interrupted(out: Path, manifest: Manifest, notify: Notify) -> int:
    """Make every game left `running` by a dead runner pending again.

    Any process the runner recorded for it that still runs is ended first. A game
    whose record is complete (`summary.json` says ok) was finished before the crash
    and is kept; any other is restarted from scratch in a fresh folder.

    Returns:
        How many games were found running.
    """
    found = 0
    for entry in manifest.games.values():
        if entry.status != "running":
            continue
        found += 1
        attempt = entry.attempts[-1]
        # Process ids mean something only on the machine that recorded them.
        local = attempt.host in ("", socket.gethostname())
        killed = terminate_tree(attempt.processes) if local else 0
        if killed:
            notify(f"{entry.key}: ended {killed} leftover process(es) of the interrupted run")
        summary = read_summary(out / attempt.run)
        attempt.ended = attempt.ended or time.time()
        if summary is not None and summary.get("status") == "ok":
            attempt.outcome = "done"
            attempt.cost_usd = float(summary.get("cost_usd") or 0.0)
            attempt.violations = log_violations(log_path(out / attempt.run))
            entry.status = "done"
        else:
            attempt.outcome = "interrupted"
            attempt.reason = "the runner stopped while the game ran"
            entry.status = "pending"
    return found


def classify(folder: Path, report: ProcessReport | None, error: str) -> tuple[str, str, float]:
    """What a finished game process means: (outcome, reason, measured cost)."""
    summary = read_summary(folder)
    cost = float(summary.get("cost_usd") or 0.0) if summary else 0.0
    if report is None:
        return "failed", error or "the game could not start", cost
    if report.timed_out:
        return "failed", "no end within the game time limit (killed)", cost
    if summary is None and report.returncode == PLAY_REFUSED:
        # `play` refused before any server started (a missing API key, a bad base URL or
        # map): every other game would be refused alike, so pause instead of burning them.
        return "paused", f"the game refused to start: {log_tail(folder)}", cost
    if summary is None:
        return "failed", f"exit code {report.returncode}, no summary.json: {log_tail(folder)}", cost
    status = summary.get("status")
    reason = str(summary.get("reason") or "")
    if status == "ok":
        return "done", "", cost
    if summary.get("resumable"):
        return "paused", reason, cost
    return "invalid", reason or f"exit code {report.returncode}", cost


class Runner:
    """Runs the pending games of a study folder through an executor.

    Args:
        out: The study folder.
        spec: The experiment spec.
        arms: Its arms.
        manifest: The folder's manifest (the runner writes it after every change).
        executor: Where games run.
        options: Workers, retries, time limit, cost limit.
        on_change: Called after every manifest change (the progress display).
        notify: Called with one line per notable event.
        shared_dir: Whether game folders are written directly (False: the executor
            ships them back and places them itself).
    """

    def __init__(
        self,
        out: Path,
        spec: ExperimentSpec,
        arms: list[Arm],
        manifest: Manifest,
        executor: Executor,
        options: RunOptions,
        on_change: Callable[[Manifest, int], None] | None = None,
        notify: Notify | None = None,
    ) -> None:
        self.out = out
        self.spec = spec
        self.arms = {a.name: a for a in arms}
        self.manifest = manifest
        self.executor = executor
        self.options = options
        self.on_change = on_change or (lambda _m, _r: None)
        self.notify = notify or (lambda line: log.info("%s", line))
        self._interrupted = threading.Event()

    def _save(self) -> None:
        write_manifest(self.out, self.manifest)
        self.on_change(self.manifest, self.executor.running())

    def _next(self) -> Entry | None:
        for e in self.manifest.entries():
            if e.status == "pending" and e.arm in self.arms:
                return e
        return None

    def _cost_stop(self) -> str | None:
        limit = self.options.max_cost_usd
        if limit is None:
            return None
        spent = self.manifest.spent_usd()
        finished = [
            a
            for e in self.manifest.games.values()
            for a in e.attempts
            if a.outcome in ("done", "invalid", "failed", "paused")
        ]
        per_game = spent / len(finished) if finished else 0.0
        # Running games will spend about as much as finished ones did: count them too.
        projected = spent + per_game * (self.executor.running() + 1)
        if projected > limit:
            return (
                f"--max-cost ${limit:.2f}: measured spend ${spent:.2f} over {len(finished)} "
                f"game(s) (${per_game:.3f} each) would pass the limit with one more game; "
                "no new games started (raise --max-cost and run the same command to go on)"
            )
        return None

    def _start(self, entry: Entry) -> None:
        arm = self.arms[entry.arm]
        attempt_no = len(entry.attempts) + 1
        folder = games_folder(self.out, entry.arm, entry.seed, attempt_no)
        entry.attempts.append(Attempt(run=str(folder.relative_to(self.out)), started=time.time()))
        entry.status = "running"
        self._save()
        job = GameJob(
            key=entry.key,
            data=arm.game_data(entry.seed),
            world=self.spec.world,
            timeout_s=self.options.game_timeout_s,
        )
        self.executor.submit(job, folder)

    def _finish(self, m: Message) -> None:
        entry = self.manifest.games[m.key]
        attempt = entry.attempts[-1]
        folder = self.out / attempt.run
        r = m.report
        if r is not None:
            attempt.returncode = r.returncode
            attempt.host = r.host
            attempt.peak_rss_mb = r.peak_rss_mb
            attempt.cpu_s = r.cpu_s
            attempt.wall_s = r.wall_s
            attempt.processes = r.processes
        attempt.shipped = m.shipped
        attempt.ended = time.time()
        if self._interrupted.is_set():
            attempt.outcome, attempt.reason = "interrupted", "the runner was stopped"
            entry.status = "pending"
            return
        outcome, reason, cost = classify(folder, r, m.error)
        attempt.outcome = outcome  # type: ignore[assignment]
        attempt.reason = reason
        attempt.cost_usd = cost
        if outcome == "done":
            entry.status = "done"
            attempt.violations = log_violations(log_path(folder))
            if attempt.violations:
                self.notify(
                    f"{entry.key}: the record breaks the rules: {attempt.violations[0]} "
                    f"(+{len(attempt.violations) - 1} more); kept as played, see manifest"
                )
        elif outcome == "paused":
            entry.status = "pending"
            self.manifest.paused = f"{entry.key}: {reason}"
            self.notify(f"{entry.key}: paused the run: {reason}")
        else:
            if entry.counted_failures() <= self.options.retries:
                entry.status = "pending"
                self.notify(f"{entry.key}: {outcome} ({reason}); retrying with the same seed")
            else:
                entry.status = "invalid" if outcome == "invalid" else "failed"
                self.notify(f"{entry.key}: {outcome} ({reason}); no retries left")

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._interrupted.set()
        self.executor.stop_all()

    def run(self) -> RunResult:
        """Run every pending game; return when all are finished or the run stops.

        SIGINT or SIGTERM stops the run cleanly: running games are ended and left
        pending, so the same command resumes them.
        """
        # The records are about to change: no table may outlive them (a killed runner
        # leaves none rather than a stale one). They are rebuilt when the run ends.
        remove_tables(self.out)
        found = cleanup_interrupted(self.out, self.manifest, self.notify)
        if found:
            self.notify(f"resuming: {found} game(s) were running when the last run stopped")
        self.manifest.paused = None
        self.manifest.stopped = None
        self._save()
        in_main = threading.current_thread() is threading.main_thread()
        previous = {}
        if in_main:
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            self._loop()
        finally:
            self.executor.close()
            if in_main:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
            self._save()
        result = self._result()
        result.tables = self._tables()
        return result

    def _tables(self) -> Tables | None:
        """Rebuild the result tables from the run folders (what `mineamongus collect` does)."""
        if not (self.out / "games").is_dir():
            return None
        try:
            return collect(self.out)
        except (CollectError, OSError, ValueError) as exc:
            self.notify(
                f"result tables not written: {exc}; rebuild them with: mineamongus collect "
                f"{self.out}"
            )
            return None

    def _result(self) -> RunResult:
        counts = self.manifest.counts()
        spent = self.manifest.spent_usd()
        if self._interrupted.is_set():
            return RunResult(
                EXIT_INTERRUPTED, counts, "interrupted; run the same command to resume", spent
            )
        if self.manifest.paused or self.manifest.stopped:
            why = self.manifest.paused or self.manifest.stopped or ""
            return RunResult(EXIT_PAUSED, counts, f"paused: {why}", spent)
        if counts["invalid"] or counts["failed"]:
            return RunResult(
                EXIT_INCOMPLETE,
                counts,
                f"{counts['invalid']} invalid and {counts['failed']} failed game(s) after "
                f"{self.options.retries} retr{'y' if self.options.retries == 1 else 'ies'}",
                spent,
            )
        return RunResult(EXIT_DONE, counts, "all games done", spent)

    def _loop(self) -> None:
        while True:
            halted = (
                self._interrupted.is_set()
                or self.manifest.paused is not None
                or self.manifest.stopped is not None
            )
            while not halted and self.executor.running() < self.executor.slots:
                entry = self._next()
                if entry is None:
                    break
                stop = self._cost_stop()
                if stop is not None:
                    self.manifest.stopped = stop
                    self.notify(stop)
                    self._save()
                    break
                self._start(entry)
            if self.executor.running() == 0:
                return
            changed = False
            for m in self.executor.messages(timeout_s=1.0):
                if m.kind == "processes" and m.processes is not None:
                    self.manifest.games[m.key].attempts[-1].processes = m.processes
                else:
                    self._finish(m)
                changed = True
            if changed:
                self._save()
            else:
                self.on_change(self.manifest, self.executor.running())
