"""Simulation speed of the embedded world: the same scripted games at speed 1 and `max`.

Plays, each at `server.speed` 1 (real time) and at `max` (as fast as the bots can be
simulated), with scripted agents on the embedded server:

- the `quick` game of `--seed` (the whole game, or `--quick-steps` steps);
- a short `paper` game (`--paper-seed`, `--paper-steps` steps);
- two `quick` games at once (`--seed` and the next seed), one per core.

For every game it prints the game ticks per wall second over its free-roam steps
(read step to step from the log: `step_start` ticks and wall times, so the frames,
decisions and rules between batches count, as a game spends them), the wall seconds
of the game (process start to exit) and of its start-up (process start to the first
step), and the CPU seconds of each of its processes (the python controller, node with
the server and the bots, Xvfb), sampled from /proc while it runs. Then the ratio of
ticks per wall second at `max` to those at 1, and last the line

    sim speed: A x one game, B x two games

(A for the quick game alone, B for the two quick games at once, each figure the mean
ticks per wall second of the games). Every game's record is checked by
`controller.logcheck` and the number of violations printed (0 is right).

Run it from the repository root on a machine with nothing else running (it says what
load it found):

    python -m benchmarks.sim_speed [--seed 1] [--paper-seed 11] [--paper-steps 6]
        [--quick-steps N] [--frames jpg|off] [--keep DIR] [--only one,paper,pair]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.checks import log_violations  # noqa: E402
from controller.events import StepStart, read_events  # noqa: E402
from controller.logcheck import free_roam_pace  # noqa: E402

SPEEDS = ("1", "max")
PARTS = ("one", "paper", "pair")
_TICK_S = os.sysconf("SC_CLK_TCK")


@dataclass(eq=False)
class Played:
    """One game played by this benchmark."""

    label: str
    out: Path
    wall_s: float = 0.0
    cpu_s: dict[str, float] = field(default_factory=dict)
    started: float = 0.0


def _cpu(pid: int) -> tuple[str, int, float] | None:
    """(process name, parent pid, CPU seconds) of a live process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    return name, int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK_S


class TreeSampler:
    """Samples the CPU time of every process under some roots until stopped; keeps the
    last reading of each process (a process is read until it exits)."""

    def __init__(self, roots: dict[int, str], every_s: float = 0.2) -> None:
        self.roots = roots
        self.every_s = every_s
        self.last: dict[int, tuple[str, str, float]] = {}  # pid -> (root label, name, cpu)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every_s)

    def sample(self) -> None:
        procs: dict[int, tuple[str, int, float]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and (info := _cpu(int(entry.name))) is not None:
                procs[int(entry.name)] = info
        for pid, (name, _, cpu) in procs.items():
            label = self._root_of(pid, procs)
            if label is not None:
                self.last[pid] = (label, name, cpu)

    def _root_of(self, pid: int, procs: dict[int, tuple[str, int, float]]) -> str | None:
        seen = 0
        while pid in procs and seen < 32:
            if pid in self.roots:
                return self.roots[pid]
            pid = procs[pid][1]
            seen += 1
        return None

    def by_process(self, label: str) -> dict[str, float]:
        """CPU seconds per process name (python, node, Xvfb) under one root."""
        out: dict[str, float] = defaultdict(float)
        for root, name, cpu in self.last.values():
            if root == label:
                out[_kind(name)] += cpu
        return dict(out)


def _kind(name: str) -> str:
    if name.startswith("python"):
        return "python"
    if name.startswith("node"):
        return "node"
    return name


def _config(root: Path, speed: str) -> Path:
    path = root / f"speed-{speed}.yaml"
    path.write_text(f"server:\n  speed: {speed}\n")
    return path


def play(
    root: Path, runs: list[tuple[str, str, int, str, int | None]], frames: str
) -> list[Played]:
    """Play games at once, each `(label, preset, seed, speed, max_steps)`; return them
    when all have ended."""
    started: list[tuple[Played, subprocess.Popen[bytes]]] = []
    for label, preset, seed, speed, steps in runs:
        out = root / label
        cmd = [sys.executable, "-m", "controller.cli", "play", "--preset", preset]
        cmd += ["--agents", "scripted", "--seed", str(seed), "--frames", frames]
        cmd += ["--config", str(_config(root, speed)), "--out", str(out), "--quiet"]
        if steps is not None:
            cmd += ["--max-steps", str(steps)]
        log = open(root / f"{label}.log", "wb")  # noqa: SIM115 - closed with the process
        game = Played(label, out, started=time.time())
        started.append((game, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)))
    sampler = TreeSampler({proc.pid: game.label for game, proc in started})
    sampler.start()
    try:
        running = dict(started)
        while running:
            for game, proc in list(running.items()):
                if proc.poll() is not None:
                    game.wall_s = time.time() - game.started
                    del running[game]
            time.sleep(0.1)
    finally:
        sampler.stop()
    for game, _ in started:
        game.cpu_s = sampler.by_process(game.label)
    return [game for game, _ in started]


def pace(game: Played) -> float:
    """Free-roam ticks per wall second of a played game (0 without a log)."""
    log = game.out / "events.jsonl"
    return free_roam_pace(read_events(log)).ticks_per_s if log.exists() else 0.0


def report(game: Played) -> str:
    """One game's figures as a printable line."""
    log = game.out / "events.jsonl"
    if not log.exists():
        return f"{game.label}: no log (see {game.out.parent / (game.label + '.log')})"
    events = read_events(log)
    p = free_roam_pace(events)
    first = next((ev for ev in events if isinstance(ev, StepStart)), None)
    setup = f"{first.wall - game.started:.1f} s" if first is not None else "?"
    steps = sum(isinstance(ev, StepStart) for ev in events)
    cpu = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(game.cpu_s.items()))
    return (
        f"{game.label}: {p.ticks} free-roam ticks in {p.wall_s:.1f} s = "
        f"{p.ticks_per_s:.1f} ticks/s; {steps} steps, {game.wall_s:.1f} s wall "
        f"(start-up {setup}); cpu: {cpu}; {len(log_violations(events))} violations"
    )


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def main(argv: list[str] | None = None) -> int:
    """Play the games at both speeds and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1, help="the quick game's seed")
    parser.add_argument("--quick-steps", type=int, default=None, help="quick step budget")
    parser.add_argument("--paper-seed", type=int, default=11)
    parser.add_argument("--paper-steps", type=int, default=6)
    parser.add_argument("--frames", default="jpg", choices=["jpg", "off"])
    parser.add_argument("--only", default=",".join(PARTS), help="one, paper, pair")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs here")
    args = parser.parse_args(argv)
    parts = [p for p in args.only.split(",") if p]
    for p in parts:
        if p not in PARTS:
            parser.error(f"--only: {p!r} is not one of {', '.join(PARTS)}")
    print(f"{os.cpu_count()} cores; {_load()} before the run; frames {args.frames}")
    ratios: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        quick, paper = args.quick_steps, args.paper_steps
        if "one" in parts:
            speeds = {}
            for speed in SPEEDS:
                runs = [(f"quick-{speed}", "quick", args.seed, speed, quick)]
                (game,) = play(root, runs, args.frames)
                print(report(game), flush=True)
                speeds[speed] = pace(game)
            ratios["one"] = speeds["max"] / speeds["1"] if speeds["1"] else 0.0
            print(f"quick: max / 1 = {ratios['one']:.2f} ({_load()})", flush=True)
        if "paper" in parts:
            speeds = {}
            for speed in SPEEDS:
                label = f"paper-{speed}"
                (game,) = play(root, [(label, "paper", args.paper_seed, speed, paper)], args.frames)
                print(report(game), flush=True)
                speeds[speed] = pace(game)
            ratio = speeds["max"] / speeds["1"] if speeds["1"] else 0.0
            print(f"paper: max / 1 = {ratio:.2f} ({_load()})", flush=True)
        if "pair" in parts:
            speeds = {}
            for speed in SPEEDS:
                runs = [
                    (f"pair-{speed}-seed{s}", "quick", s, speed, quick)
                    for s in (args.seed, args.seed + 1)
                ]
                games = play(root, runs, args.frames)
                for game in games:
                    print(report(game), flush=True)
                speeds[speed] = statistics.mean(pace(g) for g in games)
            ratios["pair"] = speeds["max"] / speeds["1"] if speeds["1"] else 0.0
            print(f"two games at once: max / 1 = {ratios['pair']:.2f} ({_load()})", flush=True)
    one = f"{ratios['one']:.1f}" if "one" in ratios else "-"
    pair = f"{ratios['pair']:.1f}" if "pair" in ratios else "-"
    print(f"sim speed: {one} x one game, {pair} x two games")
    return 0


if __name__ == "__main__":
    sys.exit(main())
