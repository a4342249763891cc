"""The bots' game clock (bots/util.js) under a busy event loop.

Mineflayer catches up missed physics steps several at a time in one callback when
Node is busy. A step deadline must act on its own tick even then: the record's check
(`_check_step_deadlines`) flags a program that ended a tick late.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Two fake bots; each "callback" emits several physicsTick events synchronously, as
# mineflayer's physics loop does when it catches up.
_SCRIPT = r"""
const { EventEmitter } = require('events')
const { GameClock } = require(process.argv[1])
const bot = () => Object.assign(new EventEmitter(), {
  entity: { position: { x: 0, y: 0, z: 0 }, yaw: 0, pitch: 0 },
})
const clock = new GameClock()
const a = bot(); const b = bot()
clock.start(new Map([['a', a], ['b', b]]))
const seen = {}
clock.at(3, () => { seen.at = clock.tick() })
clock.until(3).then(() => { seen.until = clock.tick() })
clock.at(0, () => { seen.already = clock.tick() })
setImmediate(() => {
  // one busy callback: b has run ahead, then a catches up five steps at once
  for (let i = 0; i < 5; i++) b.emit('physicsTick')
  for (let i = 0; i < 5; i++) a.emit('physicsTick')
  setImmediate(() => { seen.end = clock.tick(); console.log(JSON.stringify(seen)) })
})
"""


def _run() -> dict[str, int]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed")
    out = subprocess.run(
        [node, "-e", _SCRIPT, str(ROOT / "bots" / "util.js")],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    seen: dict[str, int] = json.loads(out.stdout)
    return seen


def test_a_deadline_acts_on_its_own_tick_when_steps_come_in_a_burst() -> None:
    seen = _run()
    assert seen["end"] == 5
    assert seen["at"] == 3, seen
    assert seen["already"] == 0, seen


def test_a_promise_wait_settles_late_in_a_burst() -> None:
    """The fault `at` exists for: a promise's callback runs after the whole burst,
    so a deadline stamped from it would read a later tick (what made programs end
    401 ticks into a 400-tick step on a loaded machine)."""
    seen = _run()
    assert seen["until"] > 3, seen
