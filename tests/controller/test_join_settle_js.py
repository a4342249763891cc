"""A bot placed right after joining an external server must stay placed (bots/fleet.js).

flying-squid ends a player's login by re-sending the join position, which undoes an
operator `/tp` made before it; the runtime cannot see that moment on a server that is
not its own. Here a fake server confirms the first teleport and then moves the bot back
to its spawn point, as that login does. A placement that only waits for the teleport's
confirmation ends at the spawn point (the fault); the join placement (`settleMs`)
notices the move and places the bot again. A bot that merely falls where it was placed
(a game on an external server places the bots before it builds the map, so they stand
in the air) is not moved away: it keeps its place across the ground, and is placed once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = r"""
const { EventEmitter } = require('events')
const { Fleet, Agent } = require(process.argv[1])
const settleMs = Number(process.argv[2])
const falls = process.argv[3] === 'falls'
const bot = Object.assign(new EventEmitter(), {
  entity: { position: { x: 0.5, y: 65, z: 0.5 } },
  look: async () => {},
})
const moveTo = (x, y, z) => { bot.entity.position = { x, y, z }; bot.emit('forcedMove') }
let tps = 0
const fleet = new Fleet(() => {})
fleet.ops = {
  kind: 'external',
  teleport: async (name, pos) => {
    tps++
    setTimeout(() => moveTo(pos.x, pos.y, pos.z), 20)
    if (falls) setTimeout(() => moveTo(pos.x, pos.y - 12, pos.z), 150) // nothing under it
    else if (tps === 1) setTimeout(() => moveTo(0.5, 65, 0.5), 150) // the end of login
  },
}
const agent = new Agent('e1', 'Ext_One')
agent.bot = bot
agent.connected = true
fleet._teleportAgent(agent, { x: -6.5, y: 65, z: 0.5 }, 270, 0, settleMs).then(async () => {
  await new Promise(resolve => setTimeout(resolve, 400)) // past the login's move
  console.log(JSON.stringify({ teleports: tps, x: bot.entity.position.x }))
}, (err) => { console.log(JSON.stringify({ error: err.message })) })
"""


def _place(settle_ms: int, how: str = "login") -> dict[str, float]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed")
    out = subprocess.run(
        [node, "-e", _SCRIPT, str(ROOT / "bots" / "fleet.js"), str(settle_ms), how],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd=ROOT,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_a_placement_undone_by_the_end_of_login_is_made_again() -> None:
    assert _place(300) == {"teleports": 2, "x": -6.5}


def test_without_the_settle_the_fake_login_undoes_the_placement() -> None:
    """The planted fault is real: confirmation alone ends with the bot at its spawn point."""
    assert _place(0) == {"teleports": 1, "x": 0.5}


def test_a_bot_falling_where_it_was_placed_is_placed_once() -> None:
    """Before the map is built on an external server, a placed bot falls: that is no
    move away (placing it again and again would fail the join)."""
    assert _place(300, "falls") == {"teleports": 1, "x": -6.5}
