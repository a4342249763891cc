"""The physics scheduler (bots/util.js): one step per tick per bot, at any speed.

The scheduler steps every bot's physics in rounds: while a batch plays, one round per
tick of the game clock, paced by the speed (1 = real time, 50 ms a round; `max` = as
fast as the rounds run), and no bot runs ahead of the slowest. The mineflayer driver
takes mineflayer's own 50 ms physics timer over and makes each step exactly one
mineflayer physics step. These run small node scripts: fake bots for the scheduler,
and mineflayer's real physics plugin on a stand-in bot for the driver.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Fake bots: each driver step emits one physicsTick (a bot in `stuck` emits none for its
# first `stuck[id]` steps, as a bot whose chunk is not loaded). A batch of `ticks` ticks
# is played at `speed`; every tick the clock reaches, every bot's step count is noted.
_SCHEDULER = r"""
const { EventEmitter } = require('events')
const { GameClock, PhysicsScheduler } = require(process.argv[1])
const opts = JSON.parse(process.argv[2])
const clock = new GameClock()
const sched = new PhysicsScheduler(clock)
sched.setSpeed(opts.speed)
const bots = new Map()
const steps = {}
for (let i = 0; i < opts.bots; i++) {
  const id = 'b' + i
  const entity = { position: { x: 0, y: 0, z: 0 }, yaw: 0, pitch: 0 }
  const bot = Object.assign(new EventEmitter(), { entity })
  let refusals = (opts.stuck || {})[id] || 0
  steps[id] = 0
  const step = () => {
    steps[id]++
    if (clock.running && refusals > 0) refusals--
    else bot.emit('physicsTick')
    return 0
  }
  sched.attach({ bot, step })
  bots.set(id, bot)
}
const out = { spread: 0, behind: 0, idle_steps: 0 }
clock.onTick.push((t) => {
  const counts = Object.values(steps)
  out.spread = Math.max(out.spread, Math.max(...counts) - Math.min(...counts))
})
// idle first: no batch, rounds every 50 ms, the clock stands
setTimeout(() => {
  out.idle_steps = steps.b0
  out.idle_tick = clock.tick()
  for (const id of Object.keys(steps)) steps[id] = 0
  const t0 = Date.now()
  clock.start(bots)
  if (opts.hold_at !== undefined) {
    clock.at(opts.hold_at, () => {
      clock.pause()
      const held = clock.tick()
      setTimeout(() => { out.held_moved = clock.tick() - held; clock.resume() }, 200)
    })
  }
  clock.until(opts.ticks).then(() => {
    out.ms = Date.now() - t0
    out.tick = clock.tick()
    out.steps = { ...steps }
    clock.stop()
    sched.wake()
    setTimeout(() => {
      out.after_stop = clock.tick()
      console.log(JSON.stringify(out))
      process.exit(0)
    }, 120)
  })
}, 260)
"""

# mineflayer's physics plugin on a stand-in bot standing on a stone floor at y = 64,
# walking forward; the driver plugin takes its timer over. Every physicsTick notes the
# bot's x and what performance.now() reads inside the step.
_DRIVER = r"""
const { EventEmitter } = require('events')
const path = require('path')
const { performance } = require('perf_hooks')
const root = process.argv[1]
const mod = (...parts) => require(path.join(root, ...parts))
const { PhysicsScheduler, GameClock, physicsDriver } = mod('bots', 'util.js')
const mineflayerPhysics = mod('node_modules', 'mineflayer', 'lib', 'plugins', 'physics.js')
const registry = mod('node_modules', 'prismarine-registry')('1.20.1')
const Block = mod('node_modules', 'prismarine-block')(registry)
const { Vec3 } = mod('node_modules', 'vec3')
const bot = new EventEmitter()
Object.assign(bot, {
  registry, version: '1.20.1', supportFeature: registry.supportFeature, isAlive: true,
  inventory: { slots: [] },
  _client: Object.assign(new EventEmitter(), { state: 'play', write () {} }),
  entity: {
    position: new Vec3(0.5, 65, 0.5), velocity: new Vec3(0, 0, 0), onGround: true,
    yaw: Math.PI / 2 * 3, pitch: 0, effects: {}, attributes: {}, height: 1.8, eyeHeight: 1.62
  }
})
const stone = registry.blocksByName.stone.defaultState
const air = registry.blocksByName.air.defaultState
bot.blockAt = (p) => {
  const b = Block.fromStateId(Math.floor(p.y) <= 64 ? stone : air, 0)
  b.position = p.floored()
  return b
}
const sched = new PhysicsScheduler(new GameClock())
mineflayerPhysics(bot, {})
physicsDriver(sched)(bot)
let ticks = 0
const reads = []
const xs = []
bot.on('physicsTick', () => {
  ticks++
  reads.push(performance.now())
  xs.push(bot.entity.position.x)
})
bot.emit('login')
bot._client.emit('position', { x: 0.5, y: 65, z: 0.5, yaw: 270, pitch: 0, flags: 0, teleportId: 1 })
const driver = bot.driver
sched.detach(driver) // stepped by hand below, not by the scheduler's idle rounds
setTimeout(() => {
  const idle = ticks // mineflayer's own timer must not have stepped
  bot.setControlState('forward', true)
  let extra = 0
  const t0 = Date.now()
  const n = Number(process.argv[2])
  for (let i = 0; i < n; i++) extra += driver.step()
  const gaps = reads.slice(1).map((r, i) => r - reads[i])
  console.log(JSON.stringify({ captured: driver.doPhysics !== null, idle, ticks, extra, n,
    span: reads[reads.length - 1] - reads[0], wall: Date.now() - t0,
    gap_min: Math.min(...gaps), gap_median: gaps.sort((a, b) => a - b)[gaps.length >> 1],
    x0: xs[0], x_end: xs[xs.length - 1],
    step_last: xs[xs.length - 1] - xs[xs.length - 2] }))
  process.exit(0)
}, 300)
"""


def _node(script: str, *args: str) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed")
    out = subprocess.run(
        [node, "-e", script, *args], capture_output=True, text=True, timeout=60, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _batch(**opts: Any) -> dict[str, Any]:
    return _node(_SCHEDULER, str(ROOT / "bots" / "util.js"), json.dumps(opts))


def test_every_bot_steps_once_per_tick_at_max() -> None:
    out = _batch(bots=8, ticks=300, speed="max")
    assert out["tick"] == 300
    assert set(out["steps"].values()) == {300}, out["steps"]
    assert out["spread"] <= 1, out  # within a round, never a step ahead of another bot
    assert out["ms"] < 3000, out  # far faster than the 15 s real time would take


def test_speed_one_paces_a_round_every_50_ms() -> None:
    out = _batch(bots=3, ticks=20, speed=1)
    assert out["tick"] == 20 and set(out["steps"].values()) == {20}
    assert 900 <= out["ms"] <= 1600, out


def test_speed_n_paces_n_times_faster() -> None:
    out = _batch(bots=3, ticks=40, speed=4)
    assert 400 <= out["ms"] <= 900, out  # 40 ticks of 12.5 ms


def test_the_clock_stands_at_the_slowest_bot_and_nobody_runs_ahead() -> None:
    """b2 cannot step for its first 5 tries: the clock waits for it, and the others
    wait with the clock (a bot ahead of the clock is not stepped)."""
    out = _batch(bots=4, ticks=30, speed="max", stuck={"b2": 5})
    assert out["tick"] == 30
    assert out["steps"]["b2"] == 35, out  # its 5 failed tries and 30 steps
    assert all(out["steps"][b] <= 31 for b in ("b0", "b1", "b3")), out
    assert out["spread"] <= 6, out


def test_a_hold_stops_every_round_until_it_is_released() -> None:
    out = _batch(bots=2, ticks=60, speed="max", hold_at=20)
    assert out["held_moved"] == 0, out  # 200 ms held, not a tick
    assert out["tick"] == 60 and set(out["steps"].values()) == {60}, out


def test_between_batches_the_bots_idle_at_real_time_and_the_clock_stands() -> None:
    out = _batch(bots=2, ticks=10, speed="max")
    assert out["idle_tick"] == 0
    assert 3 <= out["idle_steps"] <= 7, out  # 260 ms of 50 ms idle rounds
    assert out["after_stop"] == out["tick"]


def test_the_driver_makes_each_step_one_mineflayer_physics_step() -> None:
    """Over thousands of steps, driven as fast as they can run: exactly one physics
    step each (never none, never two from mineflayer's accumulator), none from
    mineflayer's own timer, and `performance.now()` inside a step reads the bot's
    physics time (50 ms a step), not the wall clock."""
    n = 3000
    out = _node(_DRIVER, str(ROOT), str(n))
    assert out["captured"], out
    assert out["idle"] == 0, out  # mineflayer's 50 ms timer never ran
    assert out["ticks"] == n and out["extra"] == 0, out
    # physics time inside the steps: 50 ms a step (plus the wall time spent within a
    # step, which a busy machine may stretch now and then), however fast the steps
    # were driven
    assert 49.5 <= out["gap_median"] <= 50.5, out
    assert out["gap_min"] > 0, out
    assert abs(out["span"] - 50 * (n - 1)) < 2000, out
    assert out["wall"] < out["span"] / 5, out
    # it walked: forward at walking speed, one step's worth per tick (not 0, not 2)
    assert 0.2 < out["step_last"] < 0.23, out
    assert out["x_end"] - out["x0"] > 0.2 * (n - 20), out


def test_an_unknown_speed_is_refused() -> None:
    script = (
        "const { parseSpeed } = require(process.argv[1]);"
        "const out = [];"
        "for (const s of [0, 1.5, 'fast', 1001]) { try { parseSpeed(s); out.push('ok') }"
        " catch (e) { out.push(e.type) } }"
        "out.push(parseSpeed('max'), parseSpeed(1), parseSpeed(undefined), parseSpeed(7));"
        "console.log(JSON.stringify(out))"
    )
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed")
    out = subprocess.run(
        [node, "-e", script, str(ROOT / "bots" / "util.js")],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert json.loads(out.stdout) == ["bad_request"] * 4 + [None, 1, 1, 7]
