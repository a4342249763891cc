"""Warm workers: one long-lived game process that plays many games on one world.

A cold game (`process.run_game_process`) pays for a Python start-up, a Node process, an
embedded server, the map, eight bots joining and (frames on) Xvfb and the renderers,
every game. A warm worker is started once per slot of the local executor and keeps all
of that: `python -m controller.tournament.warm` reads one job per line on stdin (a
game folder holding its `game-config.yaml`), plays it exactly as `mineamongus play
--config FILE --out DIR --quiet` would, and answers one JSON line per game. Between
games its `MinecraftWorld` stays open, so the next game's `start` resets the server and
checks it against a fresh one (`controller.worlds.minecraft`); a game whose check
finds any trace of the last game is played on a fresh server, and its record says so
(`game_start.world_start`).

A game stays isolated from the others: the runner side (`WarmWorker`) watches the
worker's process tree as `run_game_process` watches a game's, and a worker that
crashes, hangs past the game's time limit or is stopped is ended by its process ids
(SIGTERM, then SIGKILL) and replaced by a fresh one for the next game; only the game it
was playing counts as failed. Each game's `play.log` gets the worker's output while it
played, and its `logs/` the slice of the worker's Node and Xvfb logs written meanwhile.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import psutil
import yaml

from controller.cli import build_parser
from controller.commands.play import checked_config, make_world, out_refused, print_outcome
from controller.config import GameConfig
from controller.game import Game
from controller.players import agent_factory
from controller.tournament.process import (
    CONFIG_FILE,
    PLAY_LOG,
    SAMPLE_S,
    GameJob,
    ProcessReport,
    _env,
    _in_child,
    _Tree,
    terminate_tree,
)
from controller.worlds.base import World
from controller.worlds.minecraft import MinecraftWorld
from world.geometry import ShipGeometry

log = logging.getLogger(__name__)

WORKER_LOG = "worker.log"
"""The worker's own output between games, in its log folder."""
WORLD_LOGS = ("node.log", "xvfb.log")
"""The world's logs a worker keeps in its log folder; each game gets its slice."""
CLOSE_WAIT_S = 20.0
"""How long a worker told to stop (end of its input) may take to close its world."""


# ------------------------------------------------------------------ the worker process
def worker_command(log_dir: Path) -> list[str]:
    """The command line of one warm worker."""
    return [sys.executable, "-m", "controller.tournament.warm", "--log-dir", str(log_dir)]


@contextlib.contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors 1 and 2) to `path`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    finally:
        os.close(fd)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in saved:
            os.close(f)


class _Worker:
    """The state a worker keeps across games: its Minecraft world."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.world: MinecraftWorld | None = None

    def play(self, job: dict[str, Any]) -> dict[str, Any]:
        """Play one job; the answer line's content."""
        received = time.monotonic()
        folder = Path(str(job["folder"]))
        kind = str(job.get("world", "minecraft"))
        timing: dict[str, Any] = {}
        with _output_to(folder / PLAY_LOG):
            try:
                code = self._play(folder, kind, received, timing)
            except Exception:
                # as `play` would end: the traceback in the game's log, then the worker
                # exits (the runner counts the game failed and starts a fresh worker)
                traceback.print_exc()
                raise
        return {"folder": str(folder), "returncode": code, **timing}

    def _play(self, folder: Path, kind: str, received: float, timing: dict[str, Any]) -> int:
        """What `mineamongus play --config FILE --out DIR --quiet` does, on a kept world."""
        args = build_parser().parse_args(
            ["play", "--config", str(folder / CONFIG_FILE), "--out", str(folder)]
            + ["--world", kind, "--quiet"]
        )
        checked = checked_config(args)
        if checked is None or out_refused(folder):
            return 2
        config, spec = checked
        geometry = ShipGeometry(spec)
        agents = agent_factory(config, geometry, folder)
        world = self._world(kind, config, geometry, folder)
        first_step: list[float] = []

        class TimedGame(Game):
            """The game, noting when its set-up ended (its first `after_step`)."""

            def after_step(self) -> None:
                if not first_step:
                    first_step.append(time.monotonic())

        kept = world is self.world
        try:
            game = TimedGame(config, spec, world, agents, folder)
            result = game.run()
        except KeyboardInterrupt:
            print(f"mineamongus: interrupted; the partial record is in {folder}", file=sys.stderr)
            raise
        finally:
            if not kept:
                world.close()
        timing["world_start"] = getattr(world, "start_record", None)
        if first_step:
            timing["setup_s"] = round(first_step[0] - received, 3)
        return print_outcome(result, folder)

    def _world(self, kind: str, config: GameConfig, geometry: ShipGeometry, folder: Path) -> World:
        """The game's world: the kept Minecraft world, ready for this game's settings
        (the fake world and an external server are new for every game)."""
        spawn = geometry.seat_pos(0)
        frames = config.frames != "off"
        if kind == "fake" or config.server.external_address() is not None:
            return make_world(kind, config, geometry, folder)
        if self.world is None:
            self.world = MinecraftWorld(config.server, self.log_dir, spawn, frames=frames)
        else:
            self.world.prepare(
                config.server, spawn, frames=frames, jpeg_quality=self.world.jpeg_quality
            )
        return self.world

    def close(self) -> None:
        """Close the kept world."""
        if self.world is not None:
            self.world.close()
            self.world = None


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    """`python -m controller.tournament.warm --log-dir DIR`: play the games read on stdin.

    Each input line is a JSON object `{"folder": DIR, "world": "minecraft" | "fake"}`;
    each game's answer is one JSON line `{"folder", "returncode", "setup_s",
    "world_start"}` on the original stdout (`returncode` as `play`'s exit code: 0 ok,
    1 invalid, 2 refused configuration). Ends at the end of its input, or on SIGTERM.
    """
    parser = argparse.ArgumentParser(prog="python -m controller.tournament.warm")
    parser.add_argument("--log-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    # Answers go to a private copy of stdout; anything printed goes to the log instead.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    signal.signal(signal.SIGTERM, _terminate)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    worker = _Worker(args.log_dir)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            answer = worker.play(json.loads(line))
            answers.write(json.dumps(answer) + "\n")
    except KeyboardInterrupt:
        return 130
    finally:
        worker.close()
    return 0


# ------------------------------------------------------------------ the runner's side
class WarmWorker:
    """The runner's end of one warm worker: a thread that starts the worker process,
    hands it one game at a time and watches its process tree while it plays.

    The worker process is started from this object's own thread, which lives as long as
    the worker, so the process gets SIGTERM when that thread dies (Linux
    `PR_SET_PDEATHSIG` follows the thread that forked), and never with the end of one
    game's thread.

    Args:
        name: For logs (`worker 1`).
        finished: Called with `(key, report, error)` when a game ends.
        on_processes: Called with `(key, processes)` when the tree gains a process.
        should_stop: Polled while a game plays; when True the worker is ended.
    """

    def __init__(
        self,
        name: str,
        finished: Callable[[str, ProcessReport | None, str], None],
        on_processes: Callable[[str, list[tuple[int, float, str]]], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.name = name
        self.finished = finished
        self.on_processes = on_processes
        self.should_stop = should_stop or (lambda: False)
        self.busy = False
        self.log_dir = Path(tempfile.mkdtemp(prefix="mineamongus-worker-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0
        """How many worker processes this slot has started (a crash starts another)."""
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._jobs: queue.Queue[tuple[GameJob, Path] | None] = queue.Queue()
        self._last_end: float | None = None
        self._thread = threading.Thread(target=self._loop, name=f"warm {name}", daemon=True)
        self._thread.start()

    # ---- the runner's calls
    def submit(self, job: GameJob, folder: Path) -> None:
        """Play one game (the worker must be idle)."""
        if self.busy:
            raise RuntimeError(f"{self.name} is already playing a game")
        self.busy = True
        self._jobs.put((job, folder))

    def close(self, timeout_s: float = CLOSE_WAIT_S + 15.0) -> None:
        """End the worker once its game (if any) is over, and remove its log folder."""
        self._jobs.put(None)
        self._thread.join(timeout=timeout_s)
        shutil.rmtree(self.log_dir, ignore_errors=True)

    @property
    def pid(self) -> int | None:
        """The worker process's id (None when none runs)."""
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    # ---- its thread
    def _loop(self) -> None:
        try:
            while True:
                item = self._jobs.get()
                if item is None:
                    return
                job, folder = item
                report: ProcessReport | None = None
                error = ""
                try:
                    report = self.play(job, folder)
                except Exception as exc:  # reported as a failed game, never swallowed
                    error = f"{type(exc).__name__}: {exc}"
                self.busy = False
                self.finished(job.key, report, error)
        finally:
            self._stop_process()

    def _start_process(self) -> subprocess.Popen[bytes]:
        with open(self.log_dir / WORKER_LOG, "ab") as err:
            proc = subprocess.Popen(
                worker_command(self.log_dir),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=_env(),
                start_new_session=True,
                preexec_fn=_in_child,
            )
        self.started += 1
        self._last_end = None
        self._answers = queue.Queue()
        stdout = proc.stdout
        assert stdout is not None
        answers = self._answers

        def read() -> None:
            for raw in stdout:
                try:
                    answers.put(json.loads(raw))
                except json.JSONDecodeError:
                    log.warning("%s: unreadable answer %r", self.name, raw[:200])
            answers.put(None)  # the worker ended

        threading.Thread(target=read, name=f"warm {self.name} answers", daemon=True).start()
        return proc

    def _stop_process(self) -> None:
        """End the worker: the end of its input first (it closes its world), then by PID."""
        proc = self.proc
        self.proc = None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout=CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            log.warning("%s (pid %d) did not stop; ending it", self.name, proc.pid)
        with contextlib.suppress(psutil.Error):
            tree = _Tree(psutil.Process(proc.pid))
            tree.sample()
            terminate_tree(tree.processes(), wait_s=5.0)
        proc.wait()

    def play(self, job: GameJob, folder: Path) -> ProcessReport:
        """Play one game on the worker (starting one first if none runs); blocking."""
        folder.mkdir(parents=True, exist_ok=False)
        (folder / CONFIG_FILE).write_text(yaml.safe_dump(job.data, sort_keys=False))
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start_process()
        proc = self.proc
        offsets = {name: _size(self.log_dir / name) for name in WORLD_LOGS}
        t0 = time.monotonic()
        idle = t0 - self._last_end if self._last_end is not None else None
        tree = _Tree(psutil.Process(proc.pid))
        tree.sample()
        baseline = tree.cpu_now()
        if self.on_processes is not None:
            self.on_processes(job.key, tree.processes())
        assert proc.stdin is not None
        answer: dict[str, Any] | None = None
        timed_out = stopped = False
        try:
            proc.stdin.write(
                (json.dumps({"folder": str(folder), "world": job.world}) + "\n").encode()
            )
            proc.stdin.flush()
        except OSError as exc:
            log.warning("%s: cannot hand it a game: %s", self.name, exc)
        else:
            while True:
                try:
                    answer = self._answers.get(timeout=SAMPLE_S)
                    break
                except queue.Empty:
                    pass
                if tree.sample() and self.on_processes is not None:
                    self.on_processes(job.key, tree.processes())
                if time.monotonic() - t0 > job.timeout_s:
                    timed_out = True
                    log.warning("%s: past its %.0f s limit; ending it", job.key, job.timeout_s)
                stopped = self.should_stop()
                if timed_out or stopped:
                    break
        tree.sample()
        returncode = proc.returncode
        if answer is None:
            # Crashed, timed out or stopped: the worker goes, with its server and bots.
            if not (timed_out or stopped):  # its output ended: it is exiting
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5.0)
            # read the exit status before the tree is reaped (by psutil, not Popen)
            returncode = proc.poll()
            terminate_tree(tree.processes())
            proc.wait()
            if returncode is None:
                returncode = proc.returncode
            self.proc = None
        else:
            returncode = int(answer["returncode"])
            self._last_end = time.monotonic()
        _copy_slices(self.log_dir, offsets, folder / "logs")
        setup = answer.get("setup_s") if answer else None
        return ProcessReport(
            returncode=returncode,
            timed_out=timed_out,
            wall_s=round(time.monotonic() - t0, 3),
            host=socket.gethostname(),
            peak_rss_mb=round(tree.peak_rss / 2**20, 1),
            processes=tree.processes(),
            cpu_s=tree.cpu_by_name(since=baseline),
            setup_s=float(setup) if setup is not None else None,
            between_s=round(idle + float(setup), 3)
            if idle is not None and setup is not None
            else None,
            world_start=answer.get("world_start") if answer else None,
            worker=proc.pid,
        )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _copy_slices(log_dir: Path, offsets: dict[str, int], dest: Path) -> None:
    """Copy what each world log gained since `offsets` into `dest` (one game's logs)."""
    for name, start in offsets.items():
        src = log_dir / name
        if _size(src) <= start:
            continue
        dest.mkdir(parents=True, exist_ok=True)
        with open(src, "rb") as fin, open(dest / name, "ab") as fout:
            fin.seek(start)
            shutil.copyfileobj(fin, fout)


if __name__ == "__main__":
    sys.exit(main())
