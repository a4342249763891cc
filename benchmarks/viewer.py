"""How fast the viewer opens a large game, and whether watching a game slows it.

1. Page open: writes a synthetic 200-step game that follows the event schema (eight
   players, pose samples every 10 ticks, a decision per player per step, and eight
   640x360 JPEG frames per step: 1600 files), serves it, and times headless
   Chromium from navigation until the page has drawn its first step (target under
   2 s). Frames load lazily: only the chosen step's eight are fetched.
2. Step overhead: plays the same fake-world scripted game twice, once alone and once
   with the viewer serving it live and a browser connected to the live stream, and
   prints the median controller time per step (decisions excluded) for each and
   their ratio.
3. A study's page: writes a study folder of `--games` games (the size of rq2) with a
   short log each, serves it as `tournament --view` does, and times `/api/study` (the
   list the page is pushed every second) and the page open in headless Chromium.

Run: python -m benchmarks.viewer [--steps 200] [--repeat 3] [--games 1152]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from annotation.viewer.server import start_background
from controller.agents.scripted import ScriptedAgent
from controller.config import resolve_config
from controller.game import Game
from controller.worlds.fake import FakeWorld
from testkit.browser import headless_chromium, open_viewer, wait_for
from world.geometry import ShipGeometry
from world.spec import load_map

AGENTS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]


def _jpeg(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    img = np.zeros((360, 640, 3), np.uint8)
    img[:180] = (135, 180, 235)
    img[180:] = rng.integers(60, 200, size=3, dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=80)
    return buf.getvalue()


def synthetic_run(out: Path, steps: int) -> Path:
    """A schema-following game of `steps` free-roam steps with frames."""
    spec = load_map("skeld")
    geometry = ShipGeometry(spec)
    frames = [_jpeg(i) for i in range(16)]
    roles = {a: ("impostor" if a in ("red", "blue") else "crewmate") for a in AGENTS}
    lines: list[dict[str, Any]] = [
        {
            "v": 2,
            "kind": "game_start",
            "game_id": "synthetic",
            "step": 0,
            "tick": 0,
            "seed": 0,
            "agents": AGENTS,
            "roles": roles,
            "tasks": {a: [] for a in AGENTS},
            "map": "skeld",
            "preset": "quick",
            "config": {},
            "map_spec": spec.model_dump(mode="json"),
        }
    ]
    cells = geometry.walkable_cells_in("cafeteria")
    tick = 0
    for step in range(1, steps + 1):
        lines.append(
            {"v": 2, "kind": "step_start", "step": step, "tick": tick, "phase": "free_roam"}
        )
        folder = out / "frames" / f"{step:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        for i, a in enumerate(AGENTS):
            (folder / f"{a}.jpg").write_bytes(frames[(step + i) % len(frames)])
            lines.append(
                {
                    "v": 2,
                    "kind": "decision",
                    "step": step,
                    "tick": tick,
                    "agent": a,
                    "phase": "free_roam",
                    "module": "MOVE",
                    "program": [{"op": "go_to", "room": "admin"}],
                    "reasoning": "synthetic",
                    "frame": {"path": f"frames/{step:04d}/{a}.jpg", "sha256": ""},
                }
            )
        samples = {}
        for i, a in enumerate(AGENTS):
            cx, cz = cells[(step * 7 + i * 13) % len(cells)]
            samples[a] = [[cx + 0.5 + math.sin(k / 3), 65.0, cz + 0.5, 0.0] for k in range(30)]
        lines.append(
            {
                "v": 2,
                "kind": "trace",
                "step": step,
                "tick": tick,
                "interval": 10,
                "ticks": [tick + 10 * k for k in range(30)],
                "players": samples,
            }
        )
        tick += 300
        lines.append(
            {
                "v": 2,
                "kind": "positions",
                "step": step,
                "tick": tick,
                "cause": "step_end",
                "players": {
                    a: {"pos": s[-1][:3], "yaw": 0.0, "room": "cafeteria", "status": "alive"}
                    for a, s in samples.items()
                },
            }
        )
    lines.append(
        {
            "v": 2,
            "kind": "game_end",
            "step": steps,
            "tick": tick,
            "winner": "impostors",
            "ending": "timeout",
            "status": "ok",
        }
    )
    (out / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return out


def page_open(steps: int, repeat: int) -> list[float]:
    """Seconds from navigation to the first drawn step, `repeat` times."""
    with tempfile.TemporaryDirectory(prefix="mau-viewer-bench-") as tmp:
        run = synthetic_run(Path(tmp), steps)
        viewer = start_background(run)
        times: list[float] = []
        try:
            with headless_chromium() as driver:
                for _ in range(repeat):
                    driver.delete_all_cookies()
                    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
                    times.append(open_viewer(driver, f"{viewer.url}?step={steps // 2}"))
                    fetched = driver.execute_script(
                        "return performance.getEntriesByType('resource')"
                        ".filter(e => e.name.includes('/run/frames/')).length"
                    )
                    if fetched > len(AGENTS):
                        print(f"warning: {fetched} frames fetched on open", file=sys.stderr)
        finally:
            viewer.stop()
    return times


def synthetic_study(out: Path, games: int) -> Path:
    """A study folder of `games` games: all done but four running, each a short log."""
    from controller.tournament.manifest import Attempt, Entry, Manifest, write_manifest

    entries = {}
    arms = [f"arm{i}" for i in range(max(1, games // 8))]
    for i in range(games):
        arm, seed = arms[i % len(arms)], i // len(arms)
        run = f"games/{arm}/seed{seed}-try1"
        (out / run).mkdir(parents=True)
        running = i < 4
        lines = [{"v": 2, "kind": "step_start", "step": s, "tick": 300 * s} for s in range(20)]
        if not running:
            lines.append({"v": 2, "kind": "game_end", "step": 20, "tick": 6000})
        (out / run / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        attempt = Attempt(run=run, started=1.0, ended=None if running else 2.0)
        status = "running" if running else "done"
        entries[f"{arm}/seed{seed}"] = Entry(arm=arm, seed=seed, status=status, attempts=[attempt])
    seeds = sorted({e.seed for e in entries.values()})
    manifest = Manifest(
        name="bench", world="fake", arms=dict.fromkeys(arms, ""), seeds=seeds, games=entries
    )
    write_manifest(out, manifest)
    return out


def study_open(games: int, repeat: int) -> tuple[list[float], list[float]]:
    """Seconds for `/api/study` and for the study page to draw, `repeat` times each."""
    import urllib.request

    with tempfile.TemporaryDirectory(prefix="mau-viewer-bench-") as tmp:
        viewer = start_background(synthetic_study(Path(tmp), games))
        api: list[float] = []
        page: list[float] = []
        try:
            for _ in range(repeat):
                t0 = time.perf_counter()
                with urllib.request.urlopen(viewer.url + "api/study", timeout=60) as res:
                    listed = len(json.loads(res.read())["games"])
                api.append(time.perf_counter() - t0)
                assert listed == games, listed
            with headless_chromium() as driver:
                for _ in range(repeat):
                    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
                    page.append(open_viewer(driver, viewer.url, timeout=60))
        finally:
            viewer.stop()
    return api, page


def _play(watch: bool, seed: int, out: Path) -> list[float]:
    spec = load_map("skeld")
    geometry = ShipGeometry(spec)
    config = resolve_config("quick", overrides={"seed": seed, "frames": "off"})
    agents = {a: ScriptedAgent(a, geometry, config.seed) for a in config.agent_ids()}
    game = Game(config, spec, FakeWorld(geometry), agents, out)
    if not watch:
        game.run()
    else:
        viewer = start_background(out)
        done = threading.Event()

        def watcher() -> None:
            with headless_chromium() as driver:
                driver.get(viewer.url)
                wait_for(driver, "document.body.dataset.ready === '1'", timeout=30)
                done.wait()

        t = threading.Thread(target=watcher, daemon=True)
        t.start()
        time.sleep(3)  # the browser is connected (and waiting) before the game starts
        try:
            game.run()
        finally:
            done.set()
            t.join(timeout=30)
            viewer.stop()
    return [t.total_ms - t.decide_ms for t in game.timings]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--games", type=int, default=1152, help="games of the study page")
    args = parser.parse_args()

    times = page_open(args.steps, args.repeat)
    print(
        f"page open, {args.steps} steps x 8 frames: median {statistics.median(times):.2f} s "
        f"(runs: {', '.join(f'{t:.2f}' for t in times)}; target < 2 s)"
    )
    with tempfile.TemporaryDirectory(prefix="mau-viewer-bench-") as tmp:
        alone = _play(False, args.seed, Path(tmp) / "alone")
        watched = _play(True, args.seed, Path(tmp) / "watched")
    a, w = statistics.median(alone), statistics.median(watched)
    print(f"step overhead without viewer: median {a:.2f} ms over {len(alone)} steps")
    print(f"step overhead with a connected viewer: median {w:.2f} ms over {len(watched)} steps")
    print(f"ratio watched/alone: {w / a:.2f}")
    api, page = study_open(args.games, args.repeat)
    print(
        f"study of {args.games} games: /api/study median {statistics.median(api):.3f} s "
        f"(runs: {', '.join(f'{t:.3f}' for t in api)}), page open median "
        f"{statistics.median(page):.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
