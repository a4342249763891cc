"""A warm server on the real embedded world: reused across a worker's games, reset and
checked between them, refused (and replaced by a fresh one) when any trace is left.

- Two games in one warm worker process (`controller.tournament.warm`): the second is
  played on the first one's server, reset and found clean; the set-up between them is
  measured and printed, and its record passes `controller.logcheck`.
- On one server: a fresh server passes the check; each kind of leftover (a block, a
  body marker, an item on the ground and one in an inventory, an effect, lost health,
  a moved bot, a chat line, a clock that is not at zero) is planted, seen by the check,
  and gone after a reset. Then every kind is planted between the reset and the check
  of a game's start: the warm server is refused, the game is played on a fresh one,
  and its record says why.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from controller.agents.scripted import ScriptedAgent
from controller.bridge import BotSpec, NodeBridge
from controller.checks import log_violations
from controller.config import resolve_config
from controller.events import GameStart, read_events
from controller.game import Game
from controller.protocol import BlockPlacement, Teleport
from controller.tournament.process import GameJob, ProcessReport
from controller.tournament.warm import WarmWorker
from controller.worlds.base import Seat
from controller.worlds.minecraft import MinecraftWorld
from world.builder import build_blocks, marker_block
from world.geometry import ShipGeometry
from world.spec import load_map

pytestmark = pytest.mark.integration

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)
CONFIG = resolve_config("quick", overrides={"seed": 1, "frames": "off"})
BLOCKS = build_blocks(SPEC)
SEATS = [
    Seat(a, a.capitalize(), GEOMETRY.seat_pos(i), round(GEOMETRY.seat_yaw(i), 1))
    for i, a in enumerate(CONFIG.agent_ids())
]
BOTS = [BotSpec(id=s.agent, username=s.username, pos=s.pos, yaw=s.yaw) for s in SEATS]
SETUP_LIMIT_S = 10.0
"""A generous bound for the set-up between two warm games in this test (the figure
itself is printed; `benchmarks/tournament.py` measures it for the docs)."""


def _air_cells() -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Two cells the map leaves empty next to the first seat: one above the floor (for a
    stray block), one on it (for a body marker)."""
    taken = {(b.x, b.y, b.z) for b in BLOCKS}
    x, _y, z = (int(v // 1) for v in SEATS[0].pos)
    for dx in range(1, 6):
        if (x + dx, 65, z) not in taken and (x + dx, 66, z) not in taken:
            return (x + dx, 66, z), (x + dx, 65, z)
    raise AssertionError("no free cell next to the first seat")


STRAY, MARKER = _air_cells()


def _game(config_seed: int, max_steps: int) -> dict[str, object]:
    return {
        "preset": "quick",
        "seed": config_seed,
        "frames": "off",
        "crew": {"agent": "scripted"},
        "impostor": {"agent": "scripted"},
        "rules": {"max_steps": max_steps},
    }


def test_two_games_in_one_warm_worker(tmp_path: Path) -> None:
    reports: dict[str, ProcessReport | None] = {}
    done = threading.Event()

    def finished(key: str, report: ProcessReport | None, error: str) -> None:
        reports[key] = report
        assert report is not None, error
        done.set()

    worker = WarmWorker("w", finished)
    try:
        for key, seed in (("first", 1), ("second", 2)):
            done.clear()
            worker.submit(GameJob(key, _game(seed, 3), "minecraft", 600), tmp_path / key)
            assert done.wait(600), f"the {key} game never finished"
    finally:
        worker.close()
    first, second = reports["first"], reports["second"]
    assert first is not None and second is not None
    assert first.returncode == 0 and second.returncode == 0
    assert first.worker == second.worker and worker.started == 1
    assert first.world_start == {"warm": False}
    assert second.world_start is not None and second.world_start["warm"] is True
    assert second.world_start["games_before"] == 1
    assert second.between_s is not None and second.setup_s is not None
    print(
        f"\nset-up between two games of one worker: {second.between_s:.2f} s "
        f"(job to first step {second.setup_s:.2f} s; reset {second.world_start['reset_ms']} ms, "
        f"check {second.world_start['check_ms']} ms); the first game's set-up "
        f"{first.setup_s:.2f} s"
    )
    assert second.between_s < SETUP_LIMIT_S
    events = read_events(tmp_path / "second" / "events.jsonl")
    start = events[0]
    assert isinstance(start, GameStart) and start.world_start == second.world_start
    assert log_violations(events) == []
    # each game's slice of the worker's Node log: the second starts with its reset
    log_text = (tmp_path / "second" / "logs" / "node.log").read_text()
    assert "reset 1:" in log_text and "connect:" not in log_text
    assert "connect:" in (tmp_path / "first" / "logs" / "node.log").read_text()


class PlantingWorld(MinecraftWorld):
    """A MinecraftWorld that plants leftovers between its reset and its check."""

    plant: Callable[[NodeBridge], None] | None = None

    def _reset_world(self, blocks: list[BlockPlacement], bots: list[BotSpec]) -> None:
        super()._reset_world(blocks, bots)
        if self.plant is not None:
            self.plant(self._b())


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlantingWorld]:
    w = PlantingWorld(
        CONFIG.server, tmp_path_factory.mktemp("warm-world"), GEOMETRY.seat_pos(0), frames=False
    )
    try:
        w.start(BLOCKS, SEATS)
        yield w
    finally:
        w.close()


def _traces(bridge: NodeBridge) -> list[str]:
    check = bridge.verify_clean()
    assert check.clean == (check.found == 0)
    return check.traces


LEFTOVERS: dict[str, tuple[Callable[[NodeBridge], object], str]] = {
    "block": (
        lambda b: b.set_blocks([BlockPlacement(x=STRAY[0], y=STRAY[1], z=STRAY[2], block="stone")]),
        f"block at ({STRAY[0]}, {STRAY[1]}, {STRAY[2]}) is stone, the map says air",
    ),
    "marker": (
        lambda b: b.set_blocks(
            [BlockPlacement(x=MARKER[0], y=MARKER[1], z=MARKER[2], block=marker_block("red"))]
        ),
        f"block at ({MARKER[0]}, {MARKER[1]}, {MARKER[2]}) is red_carpet, the map says air",
    ),
    "item on the ground": (lambda b: b.debug_plant("item"), "the server has an item entity"),
    "item in an inventory": (
        lambda b: b.debug_plant("inventory", "blue"),
        "Blue holds stone x1 in slot 36",
    ),
    "effect": (lambda b: b.debug_plant("effect", "green"), "Green has effect 1"),
    "health": (lambda b: b.debug_plant("health", "pink"), "Pink has health 10"),
    "moved bot": (
        lambda b: b.teleport({"red": Teleport(pos=(SEATS[0].pos[0] + 2, 65.0, SEATS[0].pos[2]))}),
        "Red stands at",
    ),
    "chat line": (lambda b: b.broadcast("a line from the last game"), "a line from the last game"),
    "clock": (lambda b: b.advance_clock(7), "the game clock stands at tick 7"),
}


def test_a_fresh_server_passes_the_check(world: PlantingWorld) -> None:
    assert _traces(world._b()) == []


@pytest.mark.parametrize("kind", list(LEFTOVERS))
def test_each_leftover_is_seen_and_the_reset_removes_it(world: PlantingWorld, kind: str) -> None:
    bridge = world._b()
    plant, expected = LEFTOVERS[kind]
    plant(bridge)
    traces = _traces(bridge)
    assert any(expected in t for t in traces), traces
    bridge.reset(BLOCKS, BOTS)
    assert _traces(bridge) == [], f"the reset left a trace of the {kind}"


def test_a_leftover_after_the_reset_refuses_the_warm_server(
    world: PlantingWorld, tmp_path: Path
) -> None:
    def plant_all(bridge: NodeBridge) -> None:
        for plant, _expected in LEFTOVERS.values():
            plant(bridge)
        time.sleep(0.3)  # the chat line and the moves reach the bots

    world.plant = plant_all
    old_pid = world._b().pid
    config = resolve_config(
        "quick", overrides={"seed": 3, "frames": "off", "rules": {"max_steps": 2}}
    )
    agents = {a: ScriptedAgent(a, GEOMETRY, 3) for a in config.agent_ids()}
    try:
        result = Game(config, SPEC, world, agents, tmp_path / "game").run()
    finally:
        world.plant = None
    assert result.status == "ok", result.reason
    assert world._b().pid != old_pid  # played on a fresh server
    events = read_events(tmp_path / "game" / "events.jsonl")
    start = events[0]
    assert isinstance(start, GameStart) and start.world_start is not None
    record = start.world_start
    assert record["warm"] is False and record["refused"].startswith(
        "the game clock stands at tick 7"
    )
    for kind, (_plant, expected) in LEFTOVERS.items():
        assert any(expected in t for t in record["traces"]), (kind, record["traces"])
    assert log_violations(events) == []
