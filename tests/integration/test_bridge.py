"""End-to-end tests of the Node bridge: embedded server, eight real bots, programs.

One server and one set of bots are shared by the whole module (joining takes a few
seconds); tests run in file order and each leaves the bots standing still. The server
runs at the embedded server's default simulation speed (`max`), as games do: every
guarantee checked here holds at any speed.
Run: python -m pytest tests/integration/test_bridge.py -q -o log_cli=true
"""

from __future__ import annotations

import logging
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.bridge import BotSpec, BridgeError, NodeBridge, free_port, step_report
from controller.config import EMBEDDED_SPEED
from controller.logcheck import RECENTRE_SLACK, SPEED_LIMIT
from controller.protocol import (
    ApproachStep,
    BlockPlacement,
    ChatStep,
    FollowStep,
    GotoStep,
    LookStep,
    LowProgram,
    MarkStep,
    PlayerPose,
    ProgramEvent,
    RuleDirective,
    StepReport,
    Teleport,
    TurnStep,
    WaitStep,
)

pytestmark = pytest.mark.integration

log = logging.getLogger("test_bridge")

ROOT = Path(__file__).resolve().parents[2]
VERSION = "1.20.1"
HOST = "127.0.0.1"
IDS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
FLOOR_Y = 64
Y = 65.0  # feet of a player standing on the floor
SPEED = EMBEDDED_SPEED  # the simulation speed games on the embedded server play at

# Layout (x grows east, z south): an open hall x in [-8, 3], then a corridor 3 blocks
# wide (z in [-1, 1]) between two walls from x = 4 to x = 30, then an open end.
HALL = (-8, 3)
CORRIDOR = (4, 30)
FLOOR = ((-8, 34), (-6, 6))


def start_positions() -> dict[str, tuple[float, float, float]]:
    """Two rows of four in the hall."""
    out = {}
    for i, agent in enumerate(IDS):
        out[agent] = (-7.5 + 2 * (i % 4), Y, -3.5 if i < 4 else 3.5)
    return out


def map_blocks() -> list[BlockPlacement]:
    blocks = [
        BlockPlacement(x=x, y=FLOOR_Y, z=z, block="stone_bricks")
        for x in range(FLOOR[0][0], FLOOR[0][1] + 1)
        for z in range(FLOOR[1][0], FLOOR[1][1] + 1)
    ]
    for x in range(CORRIDOR[0], CORRIDOR[1] + 1):
        for y in (65, 66):
            blocks.append(BlockPlacement(x=x, y=y, z=-2, block="white_concrete"))
            blocks.append(BlockPlacement(x=x, y=y, z=2, block="white_concrete"))
    return blocks


def dist(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    return math.dist(a, b)


def yaw_diff(a: float, b: float) -> float:
    d = (a - b) % 360
    return min(d, 360 - d)


@dataclass
class World:
    bridge: NodeBridge
    port: int
    log_path: Path
    join_s: float
    metrics: dict[str, Any] = field(default_factory=dict)

    def run(self, programs: dict[str, list[Any]], timeout_ms: int = 20000) -> StepReport:
        return self.bridge.run_programs(
            {a: LowProgram(steps=steps) for a, steps in programs.items()}, timeout_ms
        )

    def pose(self, agent: str) -> tuple[float, float, float]:
        return self.bridge.state().players[agent].pos


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    log_path = tmp_path_factory.mktemp("bridge") / "node.log"
    bridge = NodeBridge(log_path=log_path)
    bridge.start()
    try:
        port = bridge.start_server(
            HOST, free_port(HOST), VERSION, (0.5, Y, 0.5), 4, ops=["MAU_Admin"], speed=SPEED
        )
        t0 = time.monotonic()
        n = bridge.set_blocks(map_blocks())
        log.info("set_blocks: %d blocks in %.0f ms", n, (time.monotonic() - t0) * 1000)
        starts = start_positions()
        bots = [BotSpec(id=a, username=a.capitalize(), pos=starts[a], yaw=0.0) for a in IDS]
        t0 = time.monotonic()
        poses = bridge.connect(HOST, port, VERSION, bots)
        join_s = time.monotonic() - t0
        log.info("connect: 8 bots joined, visible and placed in %.2f s", join_s)
        for a in IDS:
            assert dist(poses[a].pos, starts[a]) < 0.1, (a, poses[a])
        w = World(bridge, port, log_path, join_s)
        yield w
        log.info("metrics: %s", w.metrics)
    finally:
        bridge.close()


def test_hello_reports_pinned_versions(world: World) -> None:
    hello = world.bridge.hello()
    assert hello["node"].startswith("v")
    assert hello["packages"] == {
        "flying-squid": "1.12.0",
        "mineflayer": "4.39.0",
        "mineflayer-pathfinder": "2.4.5",
        "minecraft-protocol": "1.68.0",
        "minecraft-data": "3.119.0",
    }


def test_every_bot_sees_the_other_seven(world: World) -> None:
    info = world.bridge.inspect()
    starts = start_positions()
    for a in IDS:
        sees = info["bots"][a]["sees"]
        assert sorted(sees) == sorted(set(IDS) - {a}), (a, sorted(sees))
        for b, seen in sees.items():
            assert dist(tuple(seen["pos"]), starts[b]) < 0.5, (a, b, seen)
    world.metrics["join_s"] = round(world.join_s, 2)


def test_goto_through_the_corridor_and_mark(world: World) -> None:
    target = (26.5, Y, 0.5)
    start = world.pose("red")
    t0 = time.monotonic()
    report = world.run(
        {"red": [MarkStep(tag="start"), GotoStep(pos=target, range=1.0), MarkStep(tag="end")]}
    )
    elapsed = time.monotonic() - t0
    world.metrics["goto_blocks"] = round(dist(start, target), 1)
    world.metrics["goto_s"] = round(elapsed, 2)
    out = report.outcomes["red"]
    assert out.status == "ok", out
    assert out.steps_done == 3
    assert set(report.outcomes) == {"red"}  # bots without a program do nothing
    assert dist(report.players["red"].pos, target) <= 1.0
    start_ev, end_ev = out.events
    assert (start_ev.kind, start_ev.tag, end_ev.kind, end_ev.tag) == (
        "mark",
        "start",
        "mark",
        "end",
    )
    assert out.start_tick <= start_ev.tick <= end_ev.tick <= out.end_tick <= report.tick
    assert dist(start_ev.pos, start) < 0.5
    assert dist(end_ev.pos, target) <= 1.0
    # The walk took as many ticks as walking that far takes: not faster than the
    # record's speed limit, and not slower than half walking speed (0.216 blocks a
    # tick) along the straight line. Game time, not wall time: on a busy machine
    # mineflayer catches up physics steps after a stall, so ticks and seconds differ.
    ticks = end_ev.tick - start_ev.tick
    straight = dist(start, target)
    assert straight / SPEED_LIMIT <= ticks <= straight / 0.108, (ticks, straight, elapsed)


def test_goto_already_in_range_is_immediate(world: World) -> None:
    here = world.pose("blue")
    report = world.run({"blue": [GotoStep(pos=(here[0] + 0.5, here[1], here[2]), range=1.0)]})
    out = report.outcomes["blue"]
    assert out.status == "ok"
    assert out.end_tick - out.start_tick <= 2


def test_approach_emits_reached(world: World) -> None:
    report = world.run({"green": [ApproachStep(agent="red", range=2.0)]})
    out = report.outcomes["green"]
    assert out.status == "ok", out
    (ev,) = out.events
    assert ev.kind == "reached" and ev.agent == "red"
    assert ev.target_pos is not None
    assert dist(ev.pos, ev.target_pos) <= 2.0
    assert dist(ev.target_pos, report.players["red"].pos) < 0.5


def test_look_yaw_270_faces_east(world: World) -> None:
    # An emerald block 3 east of pink at eye height: looking at yaw 270 must hit it.
    x, _, z = world.pose("pink")
    marker = (math.floor(x) + 3, 66, math.floor(z))
    world.bridge.set_blocks(
        [BlockPlacement(x=marker[0], y=marker[1], z=marker[2], block="emerald_block")]
    )
    report = world.run({"pink": [LookStep(yaw=270.0, pitch=0.0)]})
    assert report.outcomes["pink"].status == "ok"
    assert yaw_diff(report.players["pink"].yaw, 270.0) < 0.5
    assert abs(report.players["pink"].pitch) < 0.5
    time.sleep(0.3)  # other bots get the head rotation a tick later
    info = world.bridge.inspect()
    assert info["bots"]["pink"]["cursor"] == {"block": "emerald_block", "pos": list(marker)}
    # Others see pink facing east too (entity yaw travels as a byte: 1.4 degree steps).
    assert yaw_diff(info["bots"]["blue"]["sees"]["pink"]["yaw"], 270.0) < 2.0
    report = world.run({"pink": [LookStep(yaw=90.0, pitch=30.0)]})
    assert yaw_diff(report.players["pink"].yaw, 90.0) < 0.5
    assert abs(report.players["pink"].pitch - 30.0) < 0.5
    assert world.bridge.inspect()["bots"]["pink"]["cursor"] != {
        "block": "emerald_block",
        "pos": list(marker),
    }
    world.bridge.set_blocks([BlockPlacement(x=marker[0], y=marker[1], z=marker[2], block="air")])


def test_a_stopped_clock_meets_the_wall_guard(world: World) -> None:
    # A deadline far off in game time (a million ticks: beyond what any speed plays in
    # a second); the wall guard (1 s) ends the program first, and says so, so a
    # stopped clock cannot hang a batch.
    report = world.bridge.run_programs(
        {"orange": LowProgram(steps=[WaitStep(ticks=1_000_000)])},
        60_000_000,
        wall_guard_ms=1000,
    )
    out = report.outcomes["orange"]
    assert out.status == "timeout", out
    assert out.reason.startswith("wall guard: 1000 ms passed at tick "), out
    assert " of 1200000 during step 0 (wait)" in out.reason, out


def test_timeout_cancels_for_real(world: World) -> None:
    far = (30.5, Y, 0.5)
    before = {a: world.pose(a) for a in ("orange", "yellow")}
    t0 = time.monotonic()
    report = world.run(
        {
            # A long wait then a walk: the walk must never start.
            "orange": [WaitStep(ticks=400), GotoStep(pos=far)],
            # A walk cut short: the bot must stop where it is.
            "yellow": [GotoStep(pos=far)],
        },
        timeout_ms=1500,
    )
    elapsed = time.monotonic() - t0
    assert elapsed < 4.0
    for a in ("orange", "yellow"):
        out = report.outcomes[a]
        assert out.status == "timeout", out
        assert out.steps_done == 0
        # game time, as the fake world counts it: 1500 ms is 30 ticks, however busy Node is
        assert out.reason.startswith("step timeout after 30 ticks during step 0"), out
        assert out.end_tick - out.start_tick == 30, out
    assert dist(report.players["orange"].pos, before["orange"]) < 0.2
    assert dist(report.players["yellow"].pos, before["yellow"]) > 2.0  # it did walk
    time.sleep(0.3)  # momentum after the keys are released
    settled = {a: world.pose(a) for a in ("orange", "yellow")}
    time.sleep(2.0)
    for a in ("orange", "yellow"):
        assert dist(world.pose(a), settled[a]) < 0.05, a
    # The next request works normally.
    report = world.run({"orange": [MarkStep(tag="after")], "yellow": [MarkStep(tag="after")]})
    assert all(o.status == "ok" for o in report.outcomes.values())


def test_invalid_step_shapes(world: World) -> None:
    before = world.pose("black")
    raw = world.bridge.request(
        "run_programs",
        {
            "programs": {
                "black": [{"op": "mark", "tag": "never"}, {"op": "goto", "pos": [1, 2]}],
                "white": [{"op": "fly", "to": [0, 0, 0]}],
                "blue": [{"op": "wait", "ticks": 5, "extra": 1}],
                "green": [{"op": "chat", "text": "/kill Red"}],
                "pink": [{"op": "approach", "agent": "nobody", "range": 2}],
                "ghost": [{"op": "mark", "tag": "x"}],
            },
            "timeout_ms": 5000,
        },
    )
    report = step_report(raw)
    for a in ("black", "white", "blue", "green", "pink", "ghost"):
        out = report.outcomes[a]
        assert out.status == "invalid", (a, out)
        assert out.reason
        assert out.steps_done == 0 and out.events == []
    assert "pos" in report.outcomes["black"].reason
    assert dist(world.pose("black"), before) < 0.05


def test_chat_reaches_others_attributed(world: World) -> None:
    text = "hello & goodbye"
    report = world.run({"red": [ChatStep(text=text)]})
    (ev,) = report.outcomes["red"].events
    assert ev.kind == "chat" and ev.text == text
    time.sleep(0.5)
    msgs = world.bridge.inspect()["bots"]["blue"]["messages"]
    assert {"from": "Red", "text": text} in [{"from": m["from"], "text": m["text"]} for m in msgs]


def test_a_newline_in_chat_is_normalised_and_spoken(world: World) -> None:
    # Straight to Node (Python would normalise first): the bots apply the same rule.
    raw = world.bridge.request(
        "run_programs",
        {
            "programs": {
                "red": [{"op": "chat", "text": "I saw Blue\n\nnear  the body "}],
                "blue": [{"op": "chat", "text": " \n/kill Red"}],
            },
            "timeout_ms": 5000,
        },
    )
    report = step_report(raw)
    (ev,) = report.outcomes["red"].events
    assert ev.text == "I saw Blue near the body"
    refused = report.outcomes["blue"]
    assert refused.status == "invalid" and "may not start with '/'" in refused.reason
    time.sleep(0.5)
    msgs = world.bridge.inspect()["bots"]["green"]["messages"]
    assert {"from": "Red", "text": "I saw Blue near the body"} in [
        {"from": m["from"], "text": m["text"]} for m in msgs
    ]


def test_broadcast_is_a_server_message(world: World) -> None:
    text = "Emergency meeting! Everyone to the cafeteria & vote."
    world.bridge.broadcast(text)
    time.sleep(0.5)
    bots = world.bridge.inspect()["bots"]
    for a in IDS:
        got = [m for m in bots[a]["messages"] if m["text"] == text]
        assert got, (a, bots[a]["messages"][-3:])
        assert got[-1]["from"] is None


def test_teleport_moves_a_bot(world: World) -> None:
    target = (20.5, Y, 0.5)
    poses = world.bridge.teleport({"pink": Teleport(pos=target, yaw=90.0)})
    assert dist(poses["pink"].pos, target) < 0.05
    assert yaw_diff(poses["pink"].yaw, 90.0) < 0.5
    time.sleep(0.5)
    seen = world.bridge.inspect()["bots"]["red"]["sees"]["pink"]
    assert dist(tuple(seen["pos"]), target) < 0.2


def test_drop_then_reconnect(world: World) -> None:
    world.bridge.drain_events()
    world.bridge.drop("white")
    deadline = time.monotonic() + 5
    events: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        events += world.bridge.drain_events()
        if any(e.get("event") == "disconnect" and e.get("agent") == "white" for e in events):
            break
        time.sleep(0.05)
    assert any(e.get("event") == "disconnect" and e.get("agent") == "white" for e in events), events
    state = world.bridge.state()
    assert state.players["white"].connected is False
    # A program for a disconnected bot fails cleanly.
    report = world.run({"white": [MarkStep(tag="x")]})
    assert report.outcomes["white"].status == "failed"
    time.sleep(0.5)
    assert "white" not in world.bridge.inspect()["bots"]["red"]["sees"]
    target = (-1.5, Y, 0.5)
    t0 = time.monotonic()
    poses = world.bridge.reconnect("white", target)
    world.metrics["reconnect_s"] = round(time.monotonic() - t0, 2)
    assert poses["white"].connected
    assert dist(poses["white"].pos, target) < 0.05
    info = world.bridge.inspect()
    for a in IDS:
        if a != "white":
            assert "white" in info["bots"][a]["sees"], a
    assert len(info["bots"]["white"]["sees"]) == 7
    report = world.run({"white": [MarkStep(tag="back")]})
    assert report.outcomes["white"].status == "ok"


def test_state_answers_while_programs_run(world: World) -> None:
    # A batch that lasts 1.5 s of wall time at any speed (its wall guard ends it).
    def run() -> StepReport:
        return world.bridge.run_programs(
            {"red": LowProgram(steps=[WaitStep(ticks=1_000_000)])},
            60_000_000,
            wall_guard_ms=1500,
        )

    result: dict[str, StepReport] = {}
    thread = threading.Thread(target=lambda: result.setdefault("r", run()))
    thread.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    state = world.bridge.state()
    assert time.monotonic() - t0 < 0.5
    assert thread.is_alive()
    thread.join(10)
    assert result["r"].outcomes["red"].reason.startswith("wall guard"), result["r"].outcomes
    assert state.tick < result["r"].tick


def test_trivial_program_round_trip(world: World) -> None:
    """Bridge overhead of one 8-bot batch, once the join traffic has settled."""
    times = []
    for _ in range(10):
        t0 = time.monotonic()
        report = world.run({a: [MarkStep(tag="x")] for a in IDS}, timeout_ms=5000)
        times.append((time.monotonic() - t0) * 1000)
        assert all(o.status == "ok" for o in report.outcomes.values())
    world.metrics["trivial_run_programs_ms_median"] = round(sorted(times)[len(times) // 2], 1)
    world.metrics["trivial_run_programs_ms_max"] = round(max(times), 1)
    pid = world.bridge.pid
    assert pid is not None
    rss_kb = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    world.metrics["node_rss_mb"] = round(rss_kb / 1024)


def test_follow_and_turn(world: World) -> None:
    report = world.run(
        {
            # red walks back through the corridor (~33 blocks, ~6 s) and waits there;
            # blue follows it the whole time.
            "red": [GotoStep(pos=(-6.5, Y, 0.5), range=0.5), WaitStep(ticks=60)],
            "blue": [FollowStep(agent="red", distance=2.0, ticks=180)],
            "green": [LookStep(yaw=270.0), TurnStep(yaw=100.0)],
        }
    )
    assert all(o.status == "ok" for o in report.outcomes.values()), report.outcomes
    assert dist(report.players["blue"].pos, report.players["red"].pos) <= 3.0
    assert yaw_diff(report.players["green"].yaw, 10.0) < 0.5  # 270 + 100 = 370 = 10


def test_unreachable_goal_fails_fast(world: World) -> None:
    t0 = time.monotonic()
    report = world.run({"orange": [GotoStep(pos=(10.5, 70.0, 0.5), range=0.5)]})
    out = report.outcomes["orange"]
    assert out.status == "failed", out
    assert "no path" in out.reason
    assert time.monotonic() - t0 < 5.0


def test_uncaught_exception_answers_and_keeps_serving(world: World) -> None:
    with pytest.raises(BridgeError) as err:
        world.bridge.request("debug_fault", {"kind": "uncaught"}, timeout_s=10)
    assert err.value.type == "uncaught_exception"
    report = world.run({a: [MarkStep(tag="still here")] for a in IDS})
    assert all(o.status == "ok" for o in report.outcomes.values())


def _home(world: World, agents: list[str]) -> None:
    """Put these bots back at their start positions (server-side, no game time)."""
    starts = start_positions()
    world.bridge.teleport({a: Teleport(pos=starts[a]) for a in agents})
    time.sleep(0.3)  # let momentum from the teleport die out


def test_a_wall_pause_between_batches_is_not_game_time(world: World) -> None:
    first = world.run({"red": [WaitStep(ticks=10), MarkStep(tag="end")]})
    assert first.outcomes["red"].status == "ok"
    tick = world.bridge.state().tick
    assert tick == first.tick
    time.sleep(2.0)  # a model thinking
    assert world.bridge.state().tick == tick
    world.bridge.teleport({"red": Teleport(pos=start_positions()["red"])})
    assert world.bridge.state().tick == tick  # a teleport is no game time either
    second = world.run({"red": [MarkStep(tag="start"), WaitStep(ticks=10)]})
    out = second.outcomes["red"]
    assert out.start_tick == tick and out.events[0].tick == tick
    assert 10 <= second.tick - tick <= 12


def test_a_cancel_directive_stops_one_bot_mid_walk(world: World) -> None:
    _home(world, ["red", "blue", "white"])
    calls: list[tuple[str, ProgramEvent, dict[str, PlayerPose]]] = []

    def arbiter(
        agent: str, event: ProgramEvent, poses: dict[str, PlayerPose]
    ) -> RuleDirective | None:
        calls.append((agent, event, poses))
        return RuleDirective(cancel=["red"], reason="killed") if event.tag == "kill" else None

    far = (26.5, Y, 0.5)
    report = world.bridge.run_programs(
        {
            "red": LowProgram(steps=[GotoStep(pos=far), MarkStep(tag="arrived")]),
            "blue": LowProgram(steps=[GotoStep(pos=(-0.5, Y, -4.5), range=0.5)]),
            "white": LowProgram(steps=[WaitStep(ticks=40), MarkStep(tag="kill")]),
        },
        20000,
        arbiter=arbiter,
        sample_interval=5,
    )
    (agent, event, poses) = calls[0]
    assert (agent, event.tag) == ("white", "kill") and len(calls) == 1
    assert set(poses) == set(IDS)
    red = report.outcomes["red"]
    assert red.status == "cancelled" and red.reason == "killed", red
    assert red.events == []  # the walk never reached its end mark
    assert event.tick <= red.end_tick <= event.tick + 1
    at_kill = poses["red"].pos
    assert dist(at_kill, start_positions()["red"]) > 3.0  # it was mid-walk
    assert dist(report.players["red"].pos, at_kill) < 1.0  # and stopped there
    assert report.outcomes["white"].status == "ok"
    assert report.outcomes["blue"].status == "ok"  # the others played on
    time.sleep(0.5)
    assert dist(world.pose("red"), report.players["red"].pos) < 0.3
    # Samples: dense, from the batch's start to its end, and they follow the walk.
    ticks = [s.tick for s in report.samples]
    assert ticks[0] == red.start_tick and ticks[-1] == report.tick
    assert all(0 < b - a <= 5 for a, b in zip(ticks, ticks[1:], strict=False)), ticks
    for a, b in zip(report.samples, report.samples[1:], strict=False):
        step = dist(a.players["red"].pos, b.players["red"].pos)
        assert step <= 0.45 * (b.tick - a.tick) + 0.2, (a.tick, b.tick, step)
    near_kill = min(report.samples, key=lambda smp: abs(smp.tick - event.tick))
    assert dist(near_kill.players["red"].pos, at_kill) < 1.5
    assert dist(report.samples[-1].players["red"].pos, report.players["red"].pos) < 0.1
    assert set(report.samples[0].players) == set(IDS)


def test_freeze_stops_every_bot_and_the_clock(world: World) -> None:
    _home(world, ["red", "blue", "green", "white"])
    seen: dict[str, Any] = {}

    def arbiter(
        agent: str, event: ProgramEvent, poses: dict[str, PlayerPose]
    ) -> RuleDirective | None:
        if event.tag != "report":
            return None
        seen.update(tick=event.tick, poses=poses)
        return RuleDirective(freeze=True, reason="meeting")

    t0 = time.monotonic()
    report = world.bridge.run_programs(
        {
            "red": LowProgram(steps=[GotoStep(pos=(26.5, Y, 0.5))]),
            "blue": LowProgram(steps=[FollowStep(agent="red", ticks=400)]),
            "green": LowProgram(steps=[WaitStep(ticks=400)]),
            "white": LowProgram(
                steps=[WaitStep(ticks=30), MarkStep(tag="report"), WaitStep(ticks=5)]
            ),
        },
        20000,
        arbiter=arbiter,
    )
    assert time.monotonic() - t0 < 5.0
    assert {o.status for o in report.outcomes.values()} == {"cancelled"}, report.outcomes
    assert {o.reason for o in report.outcomes.values()} == {"meeting"}
    assert report.tick == seen["tick"]  # the meeting's tick ends the batch's game time
    assert all(o.end_tick == seen["tick"] for o in report.outcomes.values())
    assert world.bridge.state().tick == seen["tick"]
    for a in ("red", "blue"):
        assert dist(report.players[a].pos, seen["poses"][a].pos) < 1.0, a
    time.sleep(0.5)
    assert dist(world.pose("red"), report.players["red"].pos) < 0.3


def test_an_arbiter_error_freezes_the_batch_and_is_raised(world: World) -> None:
    def arbiter(
        agent: str, event: ProgramEvent, poses: dict[str, PlayerPose]
    ) -> RuleDirective | None:
        raise ValueError("rules crashed")

    with pytest.raises(ValueError, match="rules crashed"):
        world.bridge.run_programs(
            {
                "red": LowProgram(steps=[MarkStep(tag="x"), WaitStep(ticks=200)]),
                "blue": LowProgram(steps=[WaitStep(ticks=200)]),
            },
            20000,
            arbiter=arbiter,
        )
    report = world.run({"red": [MarkStep(tag="after")]})  # the runtime serves on
    assert report.outcomes["red"].status == "ok"


def test_the_world_plays_faster_than_real_time_one_step_per_tick(world: World) -> None:
    """At `max`, eight bots walking play far more ticks than real time would in the
    same wall time, each bot one physics step a tick: samples taken every tick never
    show a bot covering more than one step of walking."""
    assert world.bridge.hello()["speed"] == SPEED
    _home(world, IDS)
    far = {a: (26.5 if i % 2 == 0 else 28.5, Y, -0.5 + (i % 3) * 0.5) for i, a in enumerate(IDS)}
    t0 = time.monotonic()
    report = world.bridge.run_programs(
        {a: LowProgram(steps=[GotoStep(pos=far[a], range=1.0), WaitStep(ticks=400)]) for a in IDS},
        10000,
        sample_interval=1,
    )
    wall = time.monotonic() - t0
    ticks = report.tick - report.samples[0].tick
    assert ticks == 200, ticks  # every program met its 10 s deadline
    world.metrics["walk_ticks_per_s"] = round(ticks / wall, 1)
    if SPEED == "max":
        assert ticks / wall > 40, (ticks, wall)  # real time is 20
    walked = 0.0
    jumps: dict[str, int] = dict.fromkeys(IDS, 0)
    for a, b in zip(report.samples, report.samples[1:], strict=False):
        assert b.tick == a.tick + 1
        for agent in IDS:
            step = math.dist(a.players[agent].pos[::2], b.players[agent].pos[::2])
            # the pathfinder's stop may put an arriving bot on its block's centre
            # within the tick (once per walk); otherwise never more than one step
            assert step <= SPEED_LIMIT + RECENTRE_SLACK, (agent, a.tick, step)
            jumps[agent] += step > SPEED_LIMIT
            walked += step
    assert max(jumps.values()) <= 1, jumps
    assert walked > 8 * 20  # they did walk (sprinting is ~0.28 blocks a tick)
    physics = world.bridge.inspect()["physics"]
    assert physics["speed"] == SPEED and physics["extra_steps"] == 0, physics
    _home(world, IDS)


def test_the_map_survives_every_bot_walking_away_from_it(world: World) -> None:
    """A column every bot's view has left stays in the world: flying-squid would drop
    it and, with nothing saved, generate bare ground there when a bot comes back (the
    blocks set_blocks placed would be gone)."""
    far = (-60, 66, 0)  # in view from the spawn and the hall, out of view from x = 26
    world.bridge.set_blocks([BlockPlacement(x=far[0], y=far[1], z=far[2], block="gold_block")])
    assert _block_seen(world, far) == "gold_block"
    _home(world, IDS)
    report = world.bridge.run_programs(
        {a: LowProgram(steps=[GotoStep(pos=(26.5, Y, 0.5), range=3.0)]) for a in IDS}, 20000
    )
    assert all(report.players[a].pos[0] > 16 for a in IDS), report.players
    _home(world, IDS)
    assert _block_seen(world, far) == "gold_block"
    world.bridge.set_blocks([BlockPlacement(x=far[0], y=far[1], z=far[2], block="air")])


def _block_seen(world: World, pos: tuple[int, int, int], wait_s: float = 10.0) -> str | None:
    """The block at `pos` as the first bot sees it, once its chunk has arrived."""
    deadline = time.monotonic() + wait_s
    while True:
        block: str | None = world.bridge.inspect(blocks=[pos])["blocks"][0]
        if block is not None or time.monotonic() > deadline:
            return block
        time.sleep(0.2)


def test_a_bot_walking_at_its_deadline_stands_where_the_report_says(world: World) -> None:
    """Stopped mid-walk by the step's deadline, every bot stays exactly where the
    report puts it: between batches (whatever wall time passes) and at the next
    batch's first sample."""
    for attempt in range(3):
        _home(world, IDS)
        far = (26.5 if attempt % 2 == 0 else 30.5, Y, 0.5)
        report = world.bridge.run_programs(
            {a: LowProgram(steps=[GotoStep(pos=far, range=0.5)]) for a in IDS}, 1500
        )
        assert {o.status for o in report.outcomes.values()} == {"timeout"}, report.outcomes
        moving = [a for a in IDS if dist(report.players[a].pos, start_positions()[a]) > 2.0]
        assert moving, "nobody was walking at the deadline"
        time.sleep(0.4)
        now = world.bridge.state().players
        nxt = world.run({a: [MarkStep(tag="here")] for a in IDS})
        first = nxt.samples[0]
        assert first.tick == report.tick
        for a in IDS:
            said = report.players[a].pos
            assert math.dist(said[::2], now[a].pos[::2]) <= 0.01, (attempt, a, said, now[a])
            assert math.dist(said[::2], first.players[a].pos[::2]) <= 0.01, (attempt, a)
    _home(world, IDS)


def test_a_speed_above_real_time_is_refused_on_an_external_server(
    world: World, tmp_path: Path
) -> None:
    with NodeBridge(log_path=tmp_path / "node-fast.log") as other:
        with pytest.raises(BridgeError) as err:
            other.start_server(HOST, 0, VERSION, (0.5, Y, 0.5), 4, speed=0)
        assert err.value.type == "bad_request"
        other.start_server(HOST, 0, VERSION, (0.5, Y, 0.5), 4, speed="max")
        bots = [BotSpec(id="e1", username="Fast_One", pos=(-6.5, Y, 0.5))]
        with pytest.raises(BridgeError) as err:
            other.connect(HOST, world.port, VERSION, bots, external=True)
        assert err.value.type == "bad_request"
        assert "needs the embedded server" in str(err.value)


def test_external_mode_through_operator_commands(world: World, tmp_path: Path) -> None:
    """A second runtime joins the same server as if it were external (commands only).

    flying-squid has /tp and /setblock but neither /fill (set_blocks falls back to
    /setblock, as it would on any server without /fill) nor /tellraw, so broadcast in
    external mode is not covered here.
    """
    with NodeBridge(log_path=tmp_path / "node-ext.log") as ext:
        bots = [
            BotSpec(id="e1", username="Ext_One", pos=(-6.5, Y, 0.5), yaw=270.0),
            BotSpec(id="e2", username="Ext_Two", pos=(-4.5, Y, 0.5), yaw=90.0),
        ]
        poses = ext.connect(HOST, world.port, VERSION, bots, external=True, admin="MAU_Admin")
        assert dist(poses["e1"].pos, (-6.5, Y, 0.5)) < 0.05
        assert yaw_diff(poses["e1"].yaw, 270.0) < 0.5
        blocks = [BlockPlacement(x=x, y=65, z=5, block="gold_block") for x in range(-8, -3)]
        assert ext.set_blocks(blocks) == len(blocks)
        assert ext.inspect(blocks=[(b.x, b.y, b.z) for b in blocks])["blocks"] == ["gold_block"] * 5
        poses = ext.teleport({"e2": Teleport(pos=(-2.5, Y, -0.5), yaw=180.0)})
        assert dist(poses["e2"].pos, (-2.5, Y, -0.5)) < 0.05
        assert yaw_diff(poses["e2"].yaw, 180.0) < 0.5
        report = ext.run_programs(
            {"e1": LowProgram(steps=[GotoStep(pos=(-6.5, Y, -2.5), range=0.5)])}, 10000
        )
        assert report.outcomes["e1"].status == "ok", report.outcomes["e1"]
        with pytest.raises(BridgeError) as err:
            ext.set_blocks([BlockPlacement(x=0, y=70, z=0, block="no_such_block")])
        assert err.value.type == "unknown_block"


def test_node_dies_with_its_python_parent(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from controller.bridge import NodeBridge
        b = NodeBridge(log_path=Path({str(tmp_path / "orphan.log")!r}))
        b.start()
        print(b.pid, flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    node_pid: int | None = None
    try:
        assert proc.stdout is not None
        node_pid = int(proc.stdout.readline())
        assert _alive(node_pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
        deadline = time.monotonic() + 5
        while _alive(node_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(node_pid), f"node pid {node_pid} survived its parent"
    finally:
        if proc.poll() is None:
            proc.kill()
        if node_pid is not None and _alive(node_pid):
            os.kill(node_pid, signal.SIGKILL)  # do not leave an orphan behind a failure


def _alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next((ln for ln in status.splitlines() if ln.startswith("State:")), "")
    return "Z" not in state.split(":", 1)[1][:3] if state else True


def test_failed_join_is_reported_and_leaves_nothing(tmp_path: Path) -> None:
    closed_port = free_port(HOST)  # nothing listens there
    with NodeBridge(log_path=tmp_path / "node.log") as bridge:
        bots = [BotSpec(id="a", username="Alone", pos=(0.5, Y, 0.5))]
        with pytest.raises(BridgeError) as err:
            bridge.connect(HOST, closed_port, VERSION, bots, external=True, timeout_s=30)
        assert err.value.type == "join_failed"
        with pytest.raises(BridgeError) as err:
            bridge.connect(HOST, closed_port, VERSION, bots, external=True, timeout_s=30)
        assert err.value.type == "join_failed"  # not "already connected"
        assert bridge.state().players == {}
        with pytest.raises(BridgeError) as err:
            bridge.start_server("0.0.0.0", 0, VERSION, (0.5, Y, 0.5), 4)
        assert err.value.type == "bad_request"
        with pytest.raises(BridgeError) as err:
            bridge.connect(HOST, closed_port, VERSION, bots)  # embedded, but no server
        assert err.value.type == "bad_state"
