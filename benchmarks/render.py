"""How long a round of eight first-person observations takes on the real map.

Starts a private Xvfb, the Node bot runtime with the embedded server, builds the
Skeld map, joins eight bots at the eight meeting seats (a ring around the
cafeteria's emergency button, each facing it), then renders `--rounds` rounds of
eight 640x360 frames, each written as raw RGB24 and JPEG. Between rounds every bot
turns (a `turn` program, not timed) so that the rounds see different parts of the
ship. Prints the median and p90 milliseconds per round (target <= 400 ms), the
first-frame set-up time, and the peak memory (VmHWM) of the Node process (server,
bots and renderers) and of Xvfb (target <= 2 GB together).

Run: python benchmarks/render.py [--rounds 20] [--view-distance 3] [--montage PNG]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from controller.bridge import PROJECT_ROOT, BotSpec, NodeBridge, free_port
from controller.protocol import LowProgram, TurnStep
from controller.xvfb import Xvfb
from world.builder import build_blocks
from world.geometry import ShipGeometry
from world.spec import load_map

IDS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
HOST = "127.0.0.1"
VERSION = "1.20.1"
TARGET_ROUND_MS = 400.0
TARGET_MEMORY_MB = 2048.0
WIDTH, HEIGHT = 640, 360


def vm_hwm_mb(pid: int | None) -> float:
    """Peak resident set size (VmHWM) of a live process, in MiB (0 if unknown)."""
    if pid is None:
        return 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def save_montage(paths: dict[str, Path], out: Path, columns: int = 4) -> None:
    """Tile the frames (JPEG files) into one labelled PNG."""
    from PIL import Image, ImageDraw, ImageFont

    rows = math.ceil(len(paths) / columns)
    sheet = Image.new("RGB", (WIDTH * columns, HEIGHT * rows), "black")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=24)
    for i, (agent, path) in enumerate(paths.items()):
        x, y = (i % columns) * WIDTH, (i // columns) * HEIGHT
        with Image.open(path) as frame:
            sheet.paste(frame.convert("RGB"), (x, y))
        label = f"{agent}'s view"
        left, top, right, bottom = draw.textbbox((x + 6, y + 4), label, font=font)
        draw.rectangle((x, y, right + 6, bottom + 4), fill="black")
        draw.text((x + 6, y + 4), label, fill="white", font=font)
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out)


def run(args: argparse.Namespace, tmp: Path) -> int:
    spec = load_map("skeld")
    geometry = ShipGeometry(spec)
    blocks = build_blocks(spec)
    files = {
        a: {"raw": str(tmp / f"{a}.rgb"), "jpg": str(tmp / f"{a}.jpg"), "png": None} for a in IDS
    }
    with Xvfb(tmp / "xvfb.log") as xvfb:
        bridge = NodeBridge(log_path=tmp / "node.log", root=args.root, env=xvfb.env())
        with bridge:
            spawn = geometry.button_pos()
            port = bridge.start_server(HOST, free_port(HOST), VERSION, spawn, 4)
            bridge.set_blocks(blocks)
            bots = [
                BotSpec(
                    id=a,
                    username=a.capitalize(),
                    pos=geometry.seat_pos(i),
                    yaw=geometry.seat_yaw(i),
                )
                for i, a in enumerate(IDS)
            ]
            t0 = time.monotonic()
            bridge.connect(HOST, port, VERSION, bots)
            join_s = time.monotonic() - t0
            time.sleep(0.3)  # headings reach the other clients a tick after the teleports

            t0 = time.monotonic()
            init = bridge.render_init(view_distance=args.view_distance)
            init_s = time.monotonic() - t0
            if init["errors"]:
                print(f"render_init errors: {init['errors']}")
                return 1
            t0 = time.monotonic()
            first = bridge.render(IDS, files, quality=args.quality)
            first_ms = (time.monotonic() - t0) * 1000
            if first["errors"]:
                print(f"render errors: {first['errors']}")
                return 1
            if args.montage is not None:
                save_montage({a: Path(files[a]["jpg"] or "") for a in IDS}, args.montage)
                print(f"montage of the first round: {args.montage}")

            node_ms: list[float] = []
            wall_ms: list[float] = []
            per_frame: list[float] = []
            turn = {a: LowProgram(steps=[TurnStep(yaw=args.turn)]) for a in IDS}
            for _ in range(args.rounds):
                bridge.run_programs(turn, timeout_ms=5000)
                t0 = time.monotonic()
                result: dict[str, Any] = bridge.render(IDS, files, quality=args.quality)
                wall_ms.append((time.monotonic() - t0) * 1000)
                if result["errors"]:
                    print(f"render errors: {result['errors']}")
                    return 1
                node_ms.append(float(result["ms"]))
                per_frame.extend(float(f["ms"]) for f in result["frames"].values())
            for a in IDS:
                assert Path(files[a]["raw"] or "").stat().st_size == WIDTH * HEIGHT * 3

            node_mb = vm_hwm_mb(bridge.pid)
            xvfb_mb = vm_hwm_mb(xvfb.pid)

    med = statistics.median(wall_ms)
    p90 = statistics.quantiles(wall_ms, n=10)[-1] if len(wall_ms) >= 2 else wall_ms[0]
    print(
        f"8 bots joined in {join_s:.1f} s; view distance {args.view_distance}; "
        f"{WIDTH}x{HEIGHT}; raw RGB24 + JPEG q{args.quality}; {args.rounds} rounds"
    )
    print(
        f"render round of 8 observations: median {med:.0f} ms, p90 {p90:.0f} ms "
        f"(wall time seen by Python; Node-reported median {statistics.median(node_ms):.0f} ms; "
        f"per frame median {statistics.median(per_frame):.0f} ms)"
    )
    print(
        f"ratio of the median round to the {TARGET_ROUND_MS:.0f} ms target: "
        f"{med / TARGET_ROUND_MS:.2f}"
    )
    setup = init["ready"]
    print(
        f"first-frame set-up: render_init {init_s:.1f} s for 8 renderers in parallel "
        f"(per bot {min(setup.values()) / 1000:.1f}-{max(setup.values()) / 1000:.1f} s), "
        f"then the first round {first_ms:.0f} ms"
    )
    total_mb = node_mb + xvfb_mb
    print(
        f"peak memory (VmHWM): node (server + 8 bots + 8 renderers) {node_mb:.0f} MB + "
        f"Xvfb {xvfb_mb:.0f} MB = {total_mb:.0f} MB (target <= {TARGET_MEMORY_MB:.0f} MB)"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--view-distance", type=int, default=3)
    parser.add_argument("--quality", type=int, default=85, help="JPEG quality")
    parser.add_argument("--turn", type=float, default=45.0, help="degrees turned per round")
    parser.add_argument("--montage", type=Path, default=None, help="save the first round here")
    parser.add_argument("--out", type=Path, default=None, help="keep frames and logs here")
    parser.add_argument("--root", type=Path, default=PROJECT_ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        return run(args, args.out.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        return run(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
