"""One game as its own process: `python -m controller.cli play --config FILE --out DIR`.

A game runs in a child process of its own session, so a crash, a hang or a SIGKILL of
the runner never takes another game with it, and each game starts its own server,
ports, display and temporary files exactly as `mineamongus play` does. The child gets
SIGTERM when the thread that started it dies (Linux `PR_SET_PDEATHSIG`), so a killed
runner leaves no game behind; `play` turns SIGTERM into a clean shutdown of its
server and bots, which carry the same guard.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

import controller

log = logging.getLogger(__name__)

CONFIG_FILE = "game-config.yaml"
PLAY_LOG = "play.log"
SAMPLE_S = 0.5
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class GameJob:
    """What one game process needs."""

    key: str
    """`arm/seedN`."""
    data: dict[str, Any]
    """GameConfig file data (preset, base, arm overrides, seed)."""
    world: str
    """`minecraft` or `fake`."""
    timeout_s: float
    """Wall-clock limit; past it the game is killed and counted failed."""


@dataclass
class ProcessReport:
    """How a game process ended and what it used."""

    returncode: int | None
    timed_out: bool
    wall_s: float
    host: str
    peak_rss_mb: float
    processes: list[tuple[int, float, str]] = field(default_factory=list)
    cpu_s: dict[str, float] = field(default_factory=dict)
    """CPU seconds by process name, spent during this game (a warm worker's processes
    count only what they used while it played)."""
    setup_s: float | None = None
    """A warm worker's game: seconds from the job's arrival to the first step's start."""
    between_s: float | None = None
    """A warm worker's game: seconds from the end of its worker's previous game to this
    game's first step (None for the worker's first game)."""
    world_start: dict[str, Any] | None = None
    """A warm worker's game: how its world started (`game_start.world_start`)."""
    worker: int | None = None
    """A warm worker's game: the worker's process id."""


def _in_child() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def play_command(folder: Path, world: str) -> list[str]:
    """The command line of one game."""
    return [
        sys.executable,
        "-m",
        "controller.cli",
        "play",
        "--config",
        str(folder / CONFIG_FILE),
        "--out",
        str(folder),
        "--world",
        world,
        "--quiet",
    ]


def _env() -> dict[str, str]:
    # The child imports the same code as the runner, wherever it is started from.
    root = str(Path(controller.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


class _Tree:
    """Samples a process tree: memory, CPU time and every process seen."""

    def __init__(self, root: psutil.Process) -> None:
        self.root = root
        self.seen: dict[tuple[int, float], str] = {}
        self.cpu: dict[tuple[int, float], tuple[str, float]] = {}
        self.peak_rss = 0

    def sample(self) -> bool:
        """Record the tree now; True when a new process appeared."""
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return False
        rss = 0
        new = False
        for p in procs:
            try:
                with p.oneshot():
                    ident = (p.pid, p.create_time())
                    name = p.name()
                    rss += p.memory_info().rss
                    t = p.cpu_times()
                    self.cpu[ident] = (name, t.user + t.system)
            except psutil.Error:
                continue
            if ident not in self.seen:
                self.seen[ident] = name
                new = True
        self.peak_rss = max(self.peak_rss, rss)
        return new

    def processes(self) -> list[tuple[int, float, str]]:
        return [(pid, ctime, name) for (pid, ctime), name in self.seen.items()]

    def cpu_by_name(self, since: dict[tuple[int, float], float] | None = None) -> dict[str, float]:
        """CPU seconds by process name; with `since`, less each process's seconds then."""
        out: dict[str, float] = {}
        for ident, (name, seconds) in self.cpu.items():
            used = seconds - (since or {}).get(ident, 0.0)
            out[name] = round(out.get(name, 0.0) + used, 3)
        return out

    def cpu_now(self) -> dict[tuple[int, float], float]:
        """Each process's CPU seconds at the last sample (a baseline for `cpu_by_name`)."""
        return {ident: seconds for ident, (_name, seconds) in self.cpu.items()}


def terminate_tree(processes: list[tuple[int, float, str]], wait_s: float = 10.0) -> int:
    """End every still-running process of a list (matched by pid and start time).

    SIGTERM first (so a game shuts its server down), SIGKILL after `wait_s`.

    Returns:
        How many processes were still running.
    """
    alive = []
    for pid, ctime, _name in processes:
        try:
            p = psutil.Process(pid)
            if abs(p.create_time() - ctime) < 0.01:
                alive.append(p)
        except psutil.Error:
            continue
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _gone, still = psutil.wait_procs(alive, timeout=wait_s)
    for p in still:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(still, timeout=wait_s)
    return len(alive)


def run_game_process(
    job: GameJob,
    folder: Path,
    on_processes: Callable[[list[tuple[int, float, str]]], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> ProcessReport:
    """Play one game in a child process and wait for it (blocking).

    Args:
        job: The game.
        folder: Its fresh run folder (created here; must not hold a record yet).
        on_processes: Called with the tree's processes whenever a new one appears
            (the runner records them so a later resume can clean up after a crash).
        should_stop: Polled; when it returns True the game is terminated.

    Returns:
        Exit code, timing and resource use of the game's process tree.
    """
    folder.mkdir(parents=True, exist_ok=False)
    (folder / CONFIG_FILE).write_text(yaml.safe_dump(job.data, sort_keys=False))
    t0 = time.monotonic()
    with open(folder / PLAY_LOG, "wb") as out:
        proc = subprocess.Popen(
            play_command(folder, job.world),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_env(),
            start_new_session=True,
            preexec_fn=_in_child,
        )
    root = psutil.Process(proc.pid)
    tree = _Tree(root)
    timed_out = False
    while proc.poll() is None:
        if tree.sample() and on_processes is not None:
            on_processes(tree.processes())
        if time.monotonic() - t0 > job.timeout_s:
            timed_out = True
            log.warning("%s: past its %.0f s limit; ending it", job.key, job.timeout_s)
        if timed_out or (should_stop is not None and should_stop()):
            terminate_tree(tree.processes())
            break
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=SAMPLE_S)
    proc.wait()
    # A child that outlived its parent (it should not: each carries PDEATHSIG) is ended too.
    terminate_tree(tree.processes(), wait_s=5.0)
    return ProcessReport(
        returncode=proc.returncode,
        timed_out=timed_out,
        wall_s=round(time.monotonic() - t0, 3),
        host=socket.gethostname(),
        peak_rss_mb=round(tree.peak_rss / 2**20, 1),
        processes=tree.processes(),
        cpu_s=tree.cpu_by_name(),
    )


def read_summary(folder: Path) -> dict[str, Any] | None:
    """A game's `summary.json`, or None when it wrote none."""
    path = folder / "summary.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def log_tail(folder: Path, lines: int = 3) -> str:
    """The last lines of a game's `play.log` (for a failure's reason)."""
    path = folder / PLAY_LOG
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:])
