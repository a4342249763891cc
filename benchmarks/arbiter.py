"""What streaming rule events to the arbiter costs on the real server.

Starts the Node bot runtime with the embedded server, joins eight bots on a small
floor, then runs `--rounds` batches in which every bot emits `--marks` `mark` events
back to back, once without an arbiter and once with one (an arbiter that answers
every event with an empty directive). Each event with an arbiter is a round trip
(Node -> Python -> Node) during which the acting bot's program waits, so the
difference per event is the latency a rule event adds. Prints the median batch time
of both runs, the overhead per event, and the largest sample gap seen.

Run: python benchmarks/arbiter.py [--rounds 10] [--marks 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from controller.bridge import BotSpec, NodeBridge, free_port
from controller.protocol import (
    BlockPlacement,
    LowProgram,
    MarkStep,
    PlayerPose,
    ProgramEvent,
    RuleDirective,
    WaitStep,
)

IDS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
HOST = "127.0.0.1"
VERSION = "1.20.1"
Y = 65.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="batches per mode")
    parser.add_argument("--marks", type=int, default=10, help="mark events per bot per batch")
    args = parser.parse_args(argv)
    floor = [
        BlockPlacement(x=x, y=64, z=z, block="stone_bricks")
        for x in range(-8, 9)
        for z in range(-8, 9)
    ]
    calls = 0

    def arbiter(
        agent: str, event: ProgramEvent, poses: dict[str, PlayerPose]
    ) -> RuleDirective | None:
        nonlocal calls
        calls += 1
        return None

    with tempfile.TemporaryDirectory(prefix="mau-arbiter-") as tmp:
        bridge = NodeBridge(log_path=Path(tmp) / "node.log")
        bridge.start()
        try:
            port = bridge.start_server(HOST, free_port(HOST), VERSION, (0.5, Y, 0.5), 2)
            bridge.set_blocks(floor)
            bots = [
                BotSpec(id=a, username=a.capitalize(), pos=(-7.5 + 2 * i, Y, 0.5))
                for i, a in enumerate(IDS)
            ]
            bridge.connect(HOST, port, VERSION, bots)
            print("8 bots joined; measuring", file=sys.stderr)
            programs = {
                a: LowProgram(steps=[MarkStep(tag=f"m{i}") for i in range(args.marks)]) for a in IDS
            }
            plain: list[float] = []
            with_arbiter: list[float] = []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                bridge.run_programs(programs, 10000)
                plain.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                bridge.run_programs(programs, 10000, arbiter=arbiter)
                with_arbiter.append((time.perf_counter() - t0) * 1000)
            walk = bridge.run_programs(
                {a: LowProgram(steps=[WaitStep(ticks=100)]) for a in IDS},
                10000,
                sample_interval=10,
            )
        finally:
            bridge.close()
    events = len(IDS) * args.marks
    assert calls == events * args.rounds, (calls, events * args.rounds)
    ticks = [s.tick for s in walk.samples]
    gap = max(b - a for a, b in zip(ticks, ticks[1:], strict=False))
    median_plain = statistics.median(plain)
    median_arbiter = statistics.median(with_arbiter)
    # The eight bots' events overlap in time, so the batch grows by one bot's chain.
    per_event = (median_arbiter - median_plain) / args.marks
    print(f"batch of {events} marks, no arbiter: median {median_plain:.1f} ms")
    print(f"batch of {events} marks, arbiter:    median {median_arbiter:.1f} ms")
    print(f"added latency per rule event (one bot's chain): {per_event:.2f} ms")
    print(f"largest sample gap over a 100-tick batch (interval 10): {gap} ticks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
