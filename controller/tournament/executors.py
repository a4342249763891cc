"""Where games run: local child processes, or Ray tasks on a cluster.

An executor starts games and reports what happened; the runner alone decides what a
result means and writes the manifest. Both executors run each game through
`process.run_game_process`, so a game is the same `mineamongus play` process either way.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from controller.tournament.process import GameJob, ProcessReport, run_game_process


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
    """K games at once on this machine, each a child process watched by one thread.

    Args:
        slots: Games at once (`--workers`).
    """

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._queue: queue.Queue[Message] = queue.Queue()
        self._threads: dict[str, threading.Thread] = {}
        self._stop = threading.Event()

    def submit(self, job: GameJob, folder: Path) -> None:
        """Start one game in its own thread and process."""

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
        return out

    def running(self) -> int:
        """Games started and not reported finished."""
        return len(self._threads)

    def stop_all(self) -> None:
        """Terminate every running game."""
        self._stop.set()

    def close(self) -> None:
        """Wait for the game threads (after `stop_all` they end within seconds)."""
        for t in list(self._threads.values()):
            t.join(timeout=30)
