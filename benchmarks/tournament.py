"""Tournament throughput: the smoke games cold at real time and on warm workers at `max`.

Runs `configs/experiments/smoke.yaml` (scripted quick games on the embedded server)
twice through the tournament runner with 2 workers, in fresh study folders: first as
games were played before warm workers and `server.speed` (a process per game, a new
server per game, `server.speed: 1`), then on warm workers (one process and server per
worker, reset and checked between games) at the default speed `max`. It prints:

- games per hour of each, and their ratio (a line with `ratio`);
- the set-up between two games of one warm worker (the end of its last game to the
  next game's first step: median and max over the games that were played warm), and,
  for comparison, a cold game's process start to its first step;
- the runner's own overhead per game: its CPU time (scheduling, manifest writes,
  process-tree sampling) and the gap between a game's process start and the game's
  first event (interpreter start-up and imports), in milliseconds;
- where a game's wall time goes: set-up (server start, map build, bots joining),
  movement (programs played in the world), rendering (frames), decisions (the
  slowest agent of each step) and the rest (rules, logging, observation building),
  from each game's event log and the bot runtime's request timings in `logs/node.log`;
- the CPU share of each process of a game (python controller, node server and bots,
  Xvfb) from the runner's process-tree samples.

Run it alone on the machine (it starts real servers):

    flock /tmp/mau-integration.lock python benchmarks/tournament.py [--frames jpg] [--seeds N]

`--compare workers` plays the smoke games with 1 and with 2 workers instead (the
executor's defaults: warm workers, `max`) and prints their ratio.

With `--backend ray --nodes N` it starts a Ray cluster on this machine (a head with no
CPUs and N worker nodes of 1 CPU each, every one its own raylet, as `ray start`
processes), plays the games there as Ray tasks, then with the local runner and N
workers, and prints games per hour of both and their ratio (the cost of Ray's
scheduling and of shipping records back when the folder is not shared):

    python -m benchmarks.tournament --backend ray --nodes 2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.tournament.executors import Executor, LocalExecutor, Message  # noqa: E402
from controller.tournament.manifest import Manifest  # noqa: E402
from controller.tournament.process import ProcessReport  # noqa: E402
from controller.tournament.runner import Runner, RunOptions, open_study  # noqa: E402

SMOKE = ROOT / "configs" / "experiments" / "smoke.yaml"
_REQUEST = re.compile(r"request \d+ \((\w+)\) done in ([\d.]+) ms")
SETUP_REQUESTS = {"hello", "start_server", "set_blocks", "connect", "reset", "teleport"}
MOVE_REQUESTS = {"run_programs"}
RENDER_REQUESTS = {"render", "render_setup", "prepare_render"}


class RecordingExecutor(LocalExecutor):
    """The local executor, keeping every finished game's process report (the warm
    workers' set-up figures are in the reports, not in the manifest)."""

    def __init__(self, slots: int, *, warm: bool) -> None:
        super().__init__(slots, warm=warm)
        self.reports: dict[str, ProcessReport] = {}

    def messages(self, timeout_s: float) -> list[Message]:
        """News since the last call (reports kept)."""
        out = super().messages(timeout_s)
        for m in out:
            if m.kind == "finished" and m.report is not None:
                self.reports[m.key] = m.report
        return out


def run_study(
    spec: Path, out: Path, workers: int, executor: Executor | None = None
) -> tuple[Manifest, float, float]:
    """Run a study; return its manifest, wall seconds and the runner's CPU seconds."""
    spec_obj, arms, manifest, _ = open_study(spec, out, extend=False)
    runner = Runner(
        out,
        spec_obj,
        arms,
        manifest,
        executor or LocalExecutor(workers),
        RunOptions(workers=workers, retries=0, game_timeout_s=spec_obj.runner.game_timeout_s),
        notify=lambda line: print(f"  {line}", file=sys.stderr),
    )
    cpu0, t0 = time.process_time(), time.monotonic()
    result = runner.run()
    wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
    if result.exit_code != 0:
        print(f"warning: {result.message}", file=sys.stderr)
    return runner.manifest, wall, cpu


def breakdown(run: Path) -> dict[str, float]:
    """Seconds of one game by where they went."""
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    summary = json.loads((run / "summary.json").read_text())
    end = events[-1]["wall"]
    # The game's own start (the world's start-up comes before its game_start event).
    start = end - float(summary.get("wall_seconds", 0.0))
    first_step = next((e["wall"] for e in events if e["kind"] == "step_start"), start)
    per_step: dict[int, float] = defaultdict(float)
    for e in events:
        if e["kind"] == "decision":
            per_step[e["step"]] = max(per_step[e["step"]], float(e.get("latency_ms", 0.0)))
    requests: dict[str, float] = defaultdict(float)
    node_log = run / "logs" / "node.log"
    if node_log.is_file():
        for m in _REQUEST.finditer(node_log.read_text(errors="replace")):
            requests[m.group(1)] += float(m.group(2)) / 1000
    movement = sum(v for k, v in requests.items() if k in MOVE_REQUESTS)
    rendering = sum(v for k, v in requests.items() if k in RENDER_REQUESTS)
    decisions = sum(per_step.values()) / 1000
    play = end - first_step
    return {
        "setup": first_step - start,
        "movement": movement,
        "rendering": rendering,
        "decisions": decisions,
        "rest": max(0.0, play - movement - rendering - decisions),
        "game": float(summary.get("wall_seconds", end - start)),
        "steps": float(summary.get("steps", 0)),
        "first_step": first_step,
    }


def report(label: str, out: Path, manifest: Manifest, wall: float, cpu: float) -> dict[str, Any]:
    """Print one study's figures and return them."""
    done = [(e, a) for e in manifest.games.values() for a in e.attempts if a.outcome == "done"]
    games = len(done)
    gph = games / wall * 3600 if wall > 0 else 0.0
    print(f"{label}: {games} games in {wall:.1f} s -> {gph:.1f} games per hour")
    startup = []
    parts: dict[str, list[float]] = defaultdict(list)
    cpu_by: dict[str, float] = defaultdict(float)
    proc_wall = 0.0
    for _e, a in done:
        b = breakdown(out / a.run)
        for k, v in b.items():
            if k != "first_step":
                parts[k].append(v)
        if a.wall_s is not None:
            startup.append(a.wall_s - b["game"])
            proc_wall += a.wall_s
        for name, seconds in a.cpu_s.items():
            cpu_by[name] += seconds
    print(
        f"{label}: runner overhead per game: {cpu / max(games, 1) * 1000:.0f} ms runner CPU; "
        f"{statistics.mean(startup) * 1000 if startup else 0:.0f} ms from process start to "
        "game start and after its end (interpreter, imports, summary)"
    )
    mean = {k: statistics.mean(v) for k, v in parts.items()}
    total = mean.get("setup", 0) + sum(
        mean.get(k, 0) for k in ("movement", "rendering", "decisions", "rest")
    )
    print(
        f"{label}: per game (mean, {mean.get('steps', 0):.0f} steps): "
        + ", ".join(
            f"{k} {mean.get(k, 0):.1f} s ({mean.get(k, 0) / total:.0%})"
            for k in ("setup", "movement", "rendering", "decisions", "rest")
        )
        if total
        else f"{label}: no finished game to break down"
    )
    all_cpu = sum(cpu_by.values()) + cpu
    shares = sorted(cpu_by.items(), key=lambda kv: -kv[1])
    print(
        f"{label}: CPU share: "
        + ", ".join(
            f"{n} {s:.0f} s ({s / all_cpu:.0%}; "
            f"{s / max(proc_wall, 1e-9):.0%} of a core over the games)"
            for n, s in shares
        )
        + f", runner {cpu:.1f} s ({cpu / all_cpu:.0%})"
    )
    return {"games": games, "wall": wall, "gph": gph}


def _tree(pid: int) -> list[Any]:
    import psutil

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


@contextmanager
def ray_cluster(nodes: int) -> Iterator[str]:
    """A head (0 CPUs) and `nodes` worker nodes of 1 CPU on this machine; yields its address.

    Every process is a descendant of a `ray start --block` started here, and all are
    ended by pid when the block exits.
    """
    import psutil

    temp = Path(tempfile.mkdtemp(prefix="maur-", dir="/tmp"))  # Ray's socket paths stay short
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    address = f"127.0.0.1:{port}"
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    common = ["ray", "start", "--node-ip-address=127.0.0.1", "--disable-usage-stats", "--block"]
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, args: list[str]) -> None:
        with open(temp / f"{name}.log", "wb") as log:
            procs.append(
                subprocess.Popen(
                    [*common, *args],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    env=env,
                )
            )

    def alive_nodes() -> int:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import ray; ray.init(address={address!r}, log_to_driver=False); "
                "print(sum(1 for n in ray.nodes() if n['Alive']))",
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        tail = out.stdout.strip().splitlines()[-1:] if out.returncode == 0 else []
        return int(tail[0]) if tail and tail[0].isdigit() else 0

    try:
        # One node at a time: raylets starting together on one machine can time out.
        for i in range(nodes + 1):
            if i == 0:
                start("head", ["--head", f"--port={port}", "--num-cpus=0", f"--temp-dir={temp}"])
            else:
                start(f"node{i}", [f"--address={address}", "--num-cpus=1"])
            deadline = time.monotonic() + 120
            while alive_nodes() < i + 1:
                if time.monotonic() > deadline or procs[-1].poll() is not None:
                    raise RuntimeError(f"the cluster did not come up; logs in {temp}")
                time.sleep(1)
        os.environ["RAY_AUTH_MODE"] = "disabled"  # this process is the driver
        yield address
    finally:
        every = [q for p in procs for q in _tree(p.pid)]
        for q in every:
            with contextlib.suppress(psutil.Error):
                q.send_signal(signal.SIGTERM)
        _gone, still = psutil.wait_procs(every, timeout=10)
        for q in still:
            with contextlib.suppress(psutil.Error):
                q.kill()


def ray_versus_local(spec: Path, base: Path, nodes: int) -> int:
    """Games per hour on an N-node Ray cluster and with the local runner's N workers."""
    import ray

    from controller.tournament.ray_backend import RayExecutor

    figures = {}
    with ray_cluster(nodes) as address:
        out = base / f"ray{nodes}"
        print(f"running the games on {nodes} Ray node(s) into {out}", file=sys.stderr)
        runner_spec = yaml.safe_load(spec.read_text()).get("runner", {})
        executor = RayExecutor(
            out,
            address=address,
            slots=nodes,
            cpus_per_game=1.0,
            memory_gb=float(runner_spec.get("memory_gb_per_game", 1.6)),
        )
        try:
            manifest, wall, cpu = run_study(spec, out, nodes, executor)
        finally:
            if ray.is_initialized():
                ray.shutdown()
        figures["ray"] = report(f"ray, {nodes} node(s)", out, manifest, wall, cpu)
    out = base / f"local{nodes}"
    print(f"running the games with {nodes} local worker(s) into {out}", file=sys.stderr)
    manifest, wall, cpu = run_study(spec, out, nodes)
    figures["local"] = report(f"local, {nodes} worker(s)", out, manifest, wall, cpu)
    on_ray, local = figures["ray"]["gph"], figures["local"]["gph"]
    print(
        f"ratio ray {nodes} node(s) / local {nodes} worker(s): "
        f"{on_ray / local if local else float('nan'):.2f} "
        f"({on_ray:.1f} vs {local:.1f} games per hour)"
    )
    return 0


def _load() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())


def _spec_with(base: Path, name: str, data: dict[str, Any], speed: int | str) -> Path:
    """A copy of the spec whose games play at `speed`."""
    copy = json.loads(json.dumps(data))
    copy.setdefault("base", {}).setdefault("server", {})["speed"] = speed
    path = base / f"{name}.yaml"
    path.write_text(yaml.safe_dump(copy))
    return path


def cold_versus_warm(data: dict[str, Any], base: Path, workers: int) -> int:
    """The smoke games cold at real time, then on warm workers at `max`; their ratio."""
    figures = {}
    reports: dict[str, dict[str, ProcessReport]] = {}
    manifests: dict[str, Manifest] = {}
    for label, speed, warm in (("cold, speed 1", 1, False), ("warm, speed max", "max", True)):
        name = "cold1" if not warm else "warmmax"
        spec = _spec_with(base, name, data, speed)
        out = base / name
        print(
            f"running the smoke games {label}, {workers} workers, into {out} ({_load()})",
            file=sys.stderr,
        )
        executor = RecordingExecutor(workers, warm=warm)
        manifest, wall, cpu = run_study(spec, out, workers, executor)
        figures[label] = report(f"{label}, {workers} workers", out, manifest, wall, cpu)
        reports[label] = executor.reports
        manifests[label] = manifest
    warm_reports = list(reports["warm, speed max"].values())
    between = sorted(r.between_s for r in warm_reports if r.between_s is not None)
    refused = [r for r in warm_reports if r.world_start and r.world_start.get("refused")]
    if between:
        print(
            f"warm, speed max: set-up between two games of one worker: median "
            f"{statistics.median(between):.2f} s, max {max(between):.2f} s over "
            f"{len(between)} warm game(s); refused warm servers: {len(refused)}"
        )
    else:
        print("warm, speed max: no worker played a second game (give more --seeds)")
    first = [r.setup_s for r in warm_reports if r.between_s is None and r.setup_s is not None]
    if first:
        print(
            f"warm, speed max: a worker's first game, job to first step: median "
            f"{statistics.median(first):.2f} s (Python start-up, a fresh server, map, bots)"
        )
    for label, name in (("cold, speed 1", "cold1"), ("warm, speed max", "warmmax")):
        # from the runner's start of the attempt to the game's first step, from the record
        starts = [
            breakdown(base / name / a.run)["first_step"] - a.started
            for e in manifests[label].games.values()
            for a in e.attempts
            if a.outcome == "done"
        ]
        if starts:
            print(
                f"{label}: a game's start by the runner to its first step: median "
                f"{statistics.median(starts):.2f} s, max {max(starts):.2f} s"
            )
    cold, warm = figures["cold, speed 1"]["gph"], figures["warm, speed max"]["gph"]
    print(
        f"ratio warm max / cold real-time, {workers} workers: "
        f"{warm / cold if cold else float('nan'):.2f} ({warm:.1f} vs {cold:.1f} games per hour; "
        f"{_load()})"
    )
    return 0


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", choices=["off", "jpg"], default="off", help="render frames")
    parser.add_argument("--keep", type=Path, default=None, help="keep the study folders here")
    parser.add_argument(
        "--backend", choices=["local", "ray"], default="local", help="ray: a cluster vs local"
    )
    parser.add_argument("--nodes", type=int, default=2, help="--backend ray: worker nodes")
    parser.add_argument(
        "--spec", type=Path, default=SMOKE, help="experiment spec (default: the smoke games)"
    )
    parser.add_argument(
        "--compare",
        choices=["warm", "workers"],
        default="warm",
        help="warm: cold real-time vs warm max games (2 workers); workers: 1 vs 2 workers",
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="play this many seeds per arm (default: the spec's)"
    )
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="mau-bench-tournament-"))
    spec_data = yaml.safe_load(args.spec.read_text())
    spec_data.setdefault("base", {})["frames"] = args.frames
    if args.seeds is not None:
        spec_data.pop("seeds", None)
        spec_data["repetitions"] = args.seeds
        spec_data.setdefault("seed_start", 1)
    spec = base / "smoke.yaml"
    base.mkdir(parents=True, exist_ok=True)
    spec.write_text(yaml.safe_dump(spec_data))
    print(f"{_load()} at the start", file=sys.stderr)
    if args.backend == "ray":
        return ray_versus_local(spec, base, args.nodes)
    if args.compare == "warm":
        return cold_versus_warm(spec_data, base, 2)
    figures = {}
    for workers in (1, 2):
        out = base / f"workers{workers}"
        print(f"running the smoke games with {workers} worker(s) into {out}", file=sys.stderr)
        manifest, wall, cpu = run_study(spec, out, workers)
        figures[workers] = report(f"{workers} worker(s)", out, manifest, wall, cpu)
    one, two = figures[1]["gph"], figures[2]["gph"]
    print(
        f"ratio 2 workers / 1 worker: {two / one if one else float('nan'):.2f} "
        f"({two:.1f} vs {one:.1f} games per hour)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
