"""Does the real-server record hold under load? Movement, sample gaps, freezes and marks.

Plays real-server quick games (scripted agents, the embedded server) in three
settings and prints, per game and per setting, the figures of
`controller.logcheck.record_figures`: the worst per-tick speed between pose samples,
the samples faster than walking, the largest sample gap, the largest freeze overshoot
past a meeting call and the largest distance between a mark or strike and the trace
at its tick, and how many rule violations `log_violations` finds.

Settings: `idle` (one game alone), `pair` (two games at once on this machine) and
`hog` (one game beside a busy-loop process pinned to the first core).

Run from the repository root:
    python -m benchmarks.record_under_load [--settings idle,pair,hog] [--seed 21]
        [--frames off|jpg] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from controller.checks import log_violations
from controller.events import read_events
from controller.logcheck import record_figures

SETTINGS = ("idle", "pair", "hog")


def _game(seed: int, out: Path, frames: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "controller.cli", "play", "--preset", "quick"]
    cmd += ["--seed", str(seed), "--frames", frames, "--out", str(out)]
    log = open(out.parent / f"{out.name}.log", "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


def _hog() -> subprocess.Popen[bytes]:
    code = "import os\nos.sched_setaffinity(0, {0})\nwhile True:\n    pass\n"
    return subprocess.Popen([sys.executable, "-c", code])


def run_setting(setting: str, seed: int, root: Path, frames: str) -> list[Path]:
    """Play one setting's games; return their folders."""
    outs = [root / f"{setting}-seed{seed}"]
    if setting == "pair":
        outs.append(root / f"{setting}-seed{seed + 1}")
    hog = _hog() if setting == "hog" else None
    t0 = time.monotonic()
    try:
        games = [_game(seed + i, out, frames) for i, out in enumerate(outs)]
        for g in games:
            g.wait()
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"{setting}: {len(outs)} game(s) in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return outs


def figures_line(out: Path) -> str:
    """One game's record figures as a printable line."""
    log = out / "events.jsonl"
    if not log.exists():
        return f"{out.name}: no log (see {out.parent / (out.name + '.log')})"
    events = read_events(log)
    f = record_figures(events)
    violations = log_violations(events)
    return (
        f"{out.name}: worst speed {f.worst_speed:.3f} blocks/tick, "
        f"{len(f.fast)} of {f.moving_pairs} moving sample pairs too fast, "
        f"largest gap {f.largest_gap} ticks, freeze overshoot {f.largest_overshoot} ticks, "
        f"mark-to-trace {f.largest_mark_distance:.2f} blocks ({len(f.marks)} marks), "
        f"{len(violations)} rule violations"
    )


def main(argv: list[str] | None = None) -> int:
    """Play the settings and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--frames", default="off", choices=["off", "jpg"])
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs here")
    args = parser.parse_args(argv)
    settings = [s for s in args.settings.split(",") if s]
    for s in settings:
        if s not in SETTINGS:
            parser.error(f"--settings: {s!r} is not one of {', '.join(SETTINGS)}")
    print(f"{os.cpu_count()} cores; frames {args.frames}")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        for setting in settings:
            for out in run_setting(setting, args.seed, root, args.frames):
                print(f"{setting}: {figures_line(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
