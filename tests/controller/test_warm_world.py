"""When a kept Minecraft world is reused, and what the record says (no Node needed).

`MinecraftWorld.start` on a world left open resets the running server and checks it;
any trace the check reports, a failed reset, changed settings or changed seats refuse
the warm server, which is closed and replaced by a fresh one. The bridge here is a
stand-in that says what the real one would; tests/integration/test_warm_server.py does
the same against the real embedded server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.bridge import BotSpec, BridgeError, BridgeState, CleanCheck
from controller.config import ServerConfig, resolve_config
from controller.events import GameStart, read_events
from controller.game import Game
from controller.protocol import BlockPlacement, PlayerPose
from controller.worlds.base import Seat
from controller.worlds.fake import FakeWorld
from controller.worlds.minecraft import MinecraftWorld
from world.geometry import ShipGeometry
from world.spec import load_map

SEATS = [Seat("red", "Red", (3.5, 65.0, 0.5), 90.0), Seat("blue", "Blue", (5.5, 65.0, 0.5), 90.0)]
BLOCKS = [BlockPlacement(x=0, y=64, z=0, block="stone")]


class _Proc:
    def poll(self) -> int | None:
        return None


class StubBridge:
    """What a running Node runtime answers: the check's traces are set by the test."""

    def __init__(self) -> None:
        self.proc = _Proc()
        self.traces: list[str] = []
        self.reset_error: BridgeError | None = None
        self.resets: list[list[BotSpec]] = []
        self.closed = False

    def reset(self, blocks: list[BlockPlacement], bots: list[BotSpec]) -> None:
        if self.reset_error is not None:
            raise self.reset_error
        self.resets.append(bots)

    def verify_clean(self) -> CleanCheck:
        return CleanCheck(not self.traces, list(self.traces), len(self.traces), 5.0)

    def state(self) -> BridgeState:
        return BridgeState(0, {s.agent: PlayerPose(pos=s.pos, yaw=s.yaw) for s in SEATS})

    def drain_events(self) -> list[dict[str, Any]]:
        return []

    def close(self) -> None:
        self.closed = True


class World(MinecraftWorld):
    """A MinecraftWorld whose cold start makes a stub bridge instead of Node."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(ServerConfig(), tmp, (3.5, 65.0, 0.5), frames=False)
        self.cold = 0
        self.stubs: list[StubBridge] = []

    def _cold_start(self, blocks: Any, seats: Any, say: Any) -> dict[str, PlayerPose]:
        self.cold += 1
        stub = StubBridge()
        self.stubs.append(stub)
        self.bridge = stub  # type: ignore[assignment]
        return {s.agent: PlayerPose(pos=s.pos, yaw=s.yaw) for s in SEATS}


def test_a_clean_reset_is_played_warm(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.start(BLOCKS, SEATS)
    assert w.start_record == {"warm": False} and w.games_started == 1
    w.hidden = frozenset({"red"})  # the last game's ghosts
    poses = w.start(BLOCKS, SEATS)
    assert w.cold == 1 and set(poses) == {"red", "blue"}
    assert w.start_record is not None
    assert w.start_record["warm"] is True and w.start_record["games_before"] == 1
    assert w.hidden == frozenset()  # no ghost of the last game is hidden in the next
    assert [b.id for b in w.stubs[0].resets[0]] == ["red", "blue"]
    w.start(BLOCKS, SEATS)
    assert w.start_record["games_before"] == 2 and w.games_started == 3


def test_a_trace_refuses_the_warm_server_and_the_record_says_so(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.start(BLOCKS, SEATS)
    traces = ["block at (3, 65, 5) is stone, the map says air", "Red holds stone x1 in slot 36"]
    w.stubs[0].traces = traces
    w.start(BLOCKS, SEATS)
    assert w.cold == 2 and w.stubs[0].closed
    assert w.start_record == {
        "warm": False,
        "refused": "block at (3, 65, 5) is stone, the map says air (+1 more)",
        "traces": traces,
    }
    assert w.games_started == 1  # counted afresh on the new server


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("seats", "the seats changed"),
        ("speed", "the server settings changed"),
        ("spawn", "the server settings changed"),
        ("reset", "the reset failed: [visibility_timeout] Red does not see Blue"),
    ],
)
def test_what_else_refuses_a_warm_server(tmp_path: Path, change: str, reason: str) -> None:
    w = World(tmp_path)
    w.start(BLOCKS, SEATS)
    seats = SEATS
    if change == "seats":
        seats = [SEATS[0], Seat("blue", "Bleu", SEATS[1].pos, 90.0)]
    elif change == "speed":
        w.prepare(ServerConfig(speed=1), w.spawn, frames=False, jpeg_quality=85)
    elif change == "spawn":
        w.prepare(w.server, (9.5, 65.0, 0.5), frames=False, jpeg_quality=85)
    else:
        w.stubs[0].reset_error = BridgeError("visibility_timeout", "Red does not see Blue")
    w.start(BLOCKS, seats)
    assert w.cold == 2 and w.stubs[0].closed
    assert w.start_record is not None and w.start_record["refused"] == reason


def test_an_external_server_is_never_reused(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.start(BLOCKS, SEATS)
    w.server = ServerConfig(external="127.0.0.1:25565", speed=1)
    w.start(BLOCKS, SEATS)
    assert w.cold == 2 and w.start_record is not None
    assert w.start_record["refused"] == "an external server is never reused"


class _RecordedFake(FakeWorld):
    start_record = {"warm": True, "games_before": 3, "reset_ms": 300, "check_ms": 90}


def test_game_start_carries_world_start_and_old_records_read_without_it(
    tmp_path: Path,
) -> None:
    from controller.agents.scripted import ScriptedAgent

    spec = load_map("skeld")
    geometry = ShipGeometry(spec)
    config = resolve_config("quick", overrides={"seed": 1, "rules": {"max_steps": 2}})
    for name, world in (("warm", _RecordedFake(geometry)), ("plain", FakeWorld(geometry))):
        agents = {a: ScriptedAgent(a, geometry, 1) for a in config.agent_ids()}
        Game(config, spec, world, agents, tmp_path / name).run()
    (warm,) = [e for e in read_events(tmp_path / "warm" / "events.jsonl") if e.kind == "game_start"]
    (plain,) = [
        e for e in read_events(tmp_path / "plain" / "events.jsonl") if e.kind == "game_start"
    ]
    assert isinstance(warm, GameStart) and warm.world_start == _RecordedFake.start_record
    assert isinstance(plain, GameStart) and plain.world_start is None
    old = plain.model_dump(mode="json")
    del old["world_start"]
    assert GameStart.model_validate(old).world_start is None
