"""Where games run: local child processes, or Ray tasks on a cluster.

An executor starts games and reports what happened; the runner alone decides what a
result means and writes the manifest. A game is what `mineamongus play` plays either
way: in a process of its own (`process.run_game_process`, the Ray tasks, and the local
executor's cold games), or, on the embedded Minecraft world, by one of the local
executor's warm workers (`warm.WarmWorker`), which keep their server, bots and Python
start-up across games and reset the world between them.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from controller.tournament.process import GameJob, ProcessReport, run_game_process
from controller.tournament.warm import WarmWorker

WARM_WORLDS = frozenset({"minecraft", "fake"})
"""Worlds the local executor plays on warm workers by default: both. A fake-world game
is a fraction of a second after its Python start-up, so a warm worker halves a study of
short fake games (8 games: 20.3 s in a process each, 10.7 s on warm workers), with the
same rule events and tables (apart from `game_id` and `wall_seconds`)."""


@dataclass(frozen=True)
class Message:
    """News of one game from an executor."""

    kind: Literal["processes", "finished"]
    key: str
    processes: list[tuple[int, float, str]] | None = None
    """`processes`: the game's process tree so far."""
    report: ProcessReport | None = None
    """`finished`: how the process ended (None when it could not run at all)."""
    error: str = ""
    """`finished` without a report: why the game could not run."""
    shipped: bool = False
    """`finished`: the record came back as an archive from a node without the folder."""


class Executor(Protocol):
    """Starts games and reports on them."""

    slots: int
    """Games it runs at once."""

    def submit(self, job: GameJob, folder: Path) -> None:
        """Start one game writing its record to `folder` (fresh)."""
        ...

    def messages(self, timeout_s: float) -> list[Message]:
        """News since the last call, waiting up to `timeout_s` for the first."""
        ...

    def running(self) -> int:
        """Games started and not yet reported finished."""
        ...

    def stop_all(self) -> None:
        """Ask every running game to end (their `finished` messages follow)."""
        ...

    def close(self) -> None:
        """Release the executor's resources."""
        ...


class LocalExecutor:
    """K games at once on this machine.

    On the embedded Minecraft world (`warm_worlds`) each of the K slots is a warm worker
    (`warm.WarmWorker`): one long-lived process that plays one game after another on one
    world, reset and checked between games; a worker that crashes or passes a game's
    time limit is ended and replaced for the next game. Otherwise (`warm=False`, or the
    fake world) each game is a child process of its own, watched by one thread.

    Args:
        slots: Games at once (`--workers`).
        warm: Play on warm workers (default); False plays every game in a new process.
        warm_worlds: The worlds `warm` applies to.
    """

    def __init__(
        self, slots: int, *, warm: bool = True, warm_worlds: frozenset[str] = WARM_WORLDS
    ) -> None:
        self.slots = slots
        self.warm = warm
        self.warm_worlds = warm_worlds
        self._queue: queue.Queue[Message] = queue.Queue()
        self._threads: dict[str, threading.Thread] = {}
        self._active: set[str] = set()
        self._workers: list[WarmWorker] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()

    @property
    def workers(self) -> list[WarmWorker]:
        """The warm workers started so far (at most `slots`)."""
        return list(self._workers)

    def submit(self, job: GameJob, folder: Path) -> None:
        """Start one game: on an idle warm worker, or in its own thread and process."""
        with self._lock:
            self._active.add(job.key)
        if self.warm and job.world in self.warm_worlds:
            self._worker().submit(job, folder)
            return

        def work() -> None:
            try:
                report = run_game_process(
                    job,
                    folder,
                    on_processes=lambda procs: self._queue.put(
                        Message("processes", job.key, processes=procs)
                    ),
                    should_stop=self._stop.is_set,
                )
                self._queue.put(Message("finished", job.key, report=report))
            except Exception as exc:  # reported as a failed game, never swallowed
                self._queue.put(Message("finished", job.key, error=f"{type(exc).__name__}: {exc}"))

        t = threading.Thread(target=work, name=f"game {job.key}", daemon=True)
        self._threads[job.key] = t
        t.start()

    def _worker(self) -> WarmWorker:
        """An idle warm worker, started when every one so far is busy."""
        for w in self._workers:
            if not w.busy:
                return w
        if len(self._workers) >= self.slots:
            raise RuntimeError(f"all {self.slots} warm workers are busy")
        w = WarmWorker(
            f"worker {len(self._workers) + 1}",
            finished=self._finished,
            on_processes=lambda key, procs: self._queue.put(
                Message("processes", key, processes=procs)
            ),
            should_stop=self._stop.is_set,
        )
        self._workers.append(w)
        return w

    def _finished(self, key: str, report: ProcessReport | None, error: str) -> None:
        self._queue.put(Message("finished", key, report=report, error=error))

    def messages(self, timeout_s: float) -> list[Message]:
        """News since the last call."""
        out: list[Message] = []
        try:
            out.append(self._queue.get(timeout=timeout_s))
            while True:
                out.append(self._queue.get_nowait())
        except queue.Empty:
            pass
        for m in out:
            if m.kind == "finished":
                self._threads.pop(m.key, None)
                with self._lock:
                    self._active.discard(m.key)
        return out

    def running(self) -> int:
        """Games started and not reported finished."""
        with self._lock:
            return len(self._active)

    def stop_all(self) -> None:
        """Terminate every running game (a warm worker playing one is ended with it)."""
        self._stop.set()

    def close(self) -> None:
        """Wait for the game threads (after `stop_all` they end within seconds) and end
        the warm workers (each closes its world first)."""
        for t in list(self._threads.values()):
            t.join(timeout=30)
        workers, self._workers = self._workers, []
        closers = [threading.Thread(target=w.close, daemon=True) for w in workers]
        for t in closers:
            t.start()
        for t in closers:
            t.join(timeout=60)
