"""How much time the controller and the bridge add to an 8-bot step.

Plays steps in which every agent answers at once with a program that takes no
game time (`wait 0`), on the real embedded server, so that what remains of a
step's wall time is the controller's and the bridge's own work: building
observations, validating and compiling programs, the round trip to Node and back,
applying rules, computing visibility and writing the log. Frames are off here:
rendering is measured on its own by `benchmarks/render.py`. The same is measured on
the in-process fake world for comparison. Then a quick scripted game is played
and its wall time printed.

Run: python benchmarks/step_overhead.py [--steps 40] [--seed 1] [--fake-only]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from controller.agents.base import AgentDecision
from controller.cli import make_world, play_game
from controller.config import GameConfig, resolve_config
from controller.game import Game
from controller.observation import Observation
from world.geometry import ShipGeometry
from world.spec import load_map


class Idle:
    """An agent that decides instantly on a program that takes no game time."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self.turn = 0

    def describe(self) -> dict[str, Any]:
        return {"kind": "benchmark-idle"}

    async def decide(self, obs: Observation) -> AgentDecision:
        self.turn += 1
        return AgentDecision(program=[{"op": "wait", "ticks": 0}])


def overhead(world_kind: str, config: GameConfig, out: Path) -> list[float]:
    """Per-step milliseconds not spent deciding, for `steps` idle steps."""
    spec = load_map(config.map)
    geometry = ShipGeometry(spec)
    world = make_world(world_kind, config, geometry, out)
    try:
        agents = {a: Idle(a) for a in config.agent_ids()}
        game = Game(config, spec, world, agents, out)
        game.run()
        return [t.total_ms - t.decide_ms for t in game.timings if t.phase == "free_roam"]
    finally:
        world.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-game", action="store_true", help="only the overhead figures")
    parser.add_argument(
        "--fake-only", action="store_true", help="only the fake world (no Minecraft server)"
    )
    args = parser.parse_args()
    config = resolve_config(
        "quick",
        overrides={
            "seed": args.seed,
            "frames": "off",
            "rules": {
                "max_steps": args.steps,
                "initial_kill_cooldown_ticks": 10**9,
                "emergency_initial_lockout_ticks": 10**9,
            },
        },
    )
    with tempfile.TemporaryDirectory() as tmp:
        fake = overhead("fake", config, Path(tmp) / "fake")
        if args.fake_only:
            print(f"steps measured: {len(fake) - 1} (8 agents, first step excluded)")
            print(
                "median overhead per 8-agent step (fake world, controller only): "
                f"{statistics.median(fake[1:]):.1f} ms "
                f"(p90 {statistics.quantiles(fake[1:], n=10)[-1]:.1f} ms)"
            )
            return 0
        t0 = time.monotonic()
        real = overhead("minecraft", config, Path(tmp) / "real")
        setup_and_steps = time.monotonic() - t0
    med_real, med_fake = statistics.median(real[1:]), statistics.median(fake[1:])
    print(f"steps measured: {len(real) - 1} (8 bots, first step excluded)")
    print(
        f"median overhead per 8-bot step (real server): {med_real:.1f} ms "
        f"(p90 {statistics.quantiles(real[1:], n=10)[-1]:.1f} ms; target <= 50 ms)"
    )
    print(f"median overhead per 8-bot step (fake world, controller only): {med_fake:.1f} ms")
    print(
        f"bridge + Minecraft share of the overhead: {med_real - med_fake:.1f} ms "
        f"(ratio real/fake {med_real / max(med_fake, 1e-9):.1f}x)"
    )
    print(f"server start + join + {len(real)} steps: {setup_and_steps:.1f} s")
    if not args.skip_game:
        game_config = resolve_config("quick", overrides={"seed": args.seed})
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            result = play_game(game_config, load_map(game_config.map), "minecraft", Path(tmp))
            wall = time.monotonic() - t0
        print(
            f"quick scripted game wall time: {wall:.1f} s ({result.steps} steps, "
            f"{result.ending}, winner {result.winner}, status {result.status})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
