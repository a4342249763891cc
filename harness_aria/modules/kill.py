"""KILL: look ahead and behind for witnesses, then kill, defer or stalk.

Two steps: at the first, the model judges the current view (ahead) and the bot turns
around; at the next, the model judges the view behind. The bot strikes only when

* both judgements say, clearly, that there is no witness: any answer other than a clear
  "no" (`true`, `"yes"`, a missing key, `"maybe"`, an unreadable value) counts as a
  witness, so a sloppy answer defers the kill instead of sending it ahead;
* it still stands where both scans were made (within `SCAN_TOLERANCE`), so the check
  that cleared the strike was made at the strike's position;
* the target is within `STRIKE_REACH` of it (where it is seen or heard now, else where it
  was at the ahead scan); the kill program's approach is leashed to
  `STRIKE_REACH + APPROACH_SLACK` (the program gives up rather than chase the target
  across the map, and its outcome says so).

A target farther than the spec's `kill_defer_distance` is stalked from a distance; a
nearer one out of reach is closed in on, and the scan starts again from there. A target
the planner named that is not a living crewmate is an invalid answer, never replaced by
the nearest crewmate (with no target named, the nearest crewmate in view is taken, as
the reference does). Every answer carries the impostor's private intent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from controller.events import Vec3
from controller.observation import Observation
from harness_aria.modules.base import ModuleResult, failed, reader
from harness_aria.parsing import AnswerReader
from harness_aria.toolkit import Choice, Toolkit

STRIKE_REACH = 4.0
"""Blocks: the target must be this close to where both scans were made for a strike."""
APPROACH_SLACK = 1.0
"""Blocks the target may drift during the strike's approach before the program gives up."""
SCAN_TOLERANCE = 1.5
"""Blocks the bot may have moved between the two scans (turning in place drifts a bit)."""


@dataclass(frozen=True)
class PendingScan:
    """An ahead scan that cleared the way; the behind scan is due at the next step."""

    target: str
    step: int
    pos: Vec3
    """Where the impostor stood for the ahead scan."""
    target_pos: Vec3
    """Where the target was at the ahead scan."""


def _target_pos(obs: Observation, target: str) -> Vec3 | None:
    """Where the target is now, as far as the agent can tell (in view, or close by)."""
    return obs.visible_players.get(target) or obs.nearby_players.get(target)


def witness(read: AnswerReader) -> bool:
    """Whether a scan answer reports a witness: anything but a clear "no" does."""
    return read.flag("witnesses_visible") != "no"


class KillModule:
    """Witness-aware kill."""

    name = "KILL"

    def __init__(self) -> None:
        self.pending: PendingScan | None = None

    def scanning(self, step: int) -> str | None:
        """The target whose behind-view check is due at `step` (the ahead check was at
        the step before), or None."""
        if self.pending is not None and self.pending.step == step - 1:
            return self.pending.target
        return None

    def _target(self, tk: Toolkit, choice: Choice) -> tuple[str | None, str]:
        """The target and, when there is none, why ('' for "nobody in view")."""
        obs = tk.obs
        if choice.target:
            read = AnswerReader({"target": choice.target})
            t = read.choice("target", obs.players)
            if t is None:
                return None, f"kill target {choice.target!r} is not a player"
            if t in obs.teammates or t == obs.agent:
                return None, f"kill target {t!r} is not a crewmate"
            if t in obs.known_dead:
                return None, f"kill target {t!r} is dead"
            return t, ""
        crew_seen = [a for a in obs.visible_players if a not in obs.teammates]
        if crew_seen:
            return min(crew_seen, key=lambda a: math.dist(obs.pos, obs.visible_players[a])), ""
        return None, ""

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """One stage of the scan, then the strike."""
        obs = tk.obs
        pending = self.pending if self.scanning(obs.step) is not None else None
        self.pending = None
        if pending is not None:
            return await self._behind(tk, pending)
        target, why = self._target(tk, choice)
        if why:
            return ModuleResult(invalid=why, memo=f"no kill ({why})")
        if target is None or not obs.kill_ready:
            return ModuleResult(
                actions=[{"op": "wait", "ticks": 20}],
                reasoning="no target in sight" if target is None else "kill not ready",
                narration=choice.intent or "waiting for a chance to kill",
                memo="DEFER: no target or cooldown",
            )
        pos = _target_pos(obs, target)
        if pos is None or target not in obs.visible_players:
            seen = obs.last_seen.get(target)
            actions = (
                [{"op": "go_to", "pos": list(seen.pos)}]
                if seen
                else [{"op": "go_to", "room": tk.geometry.rooms[obs.step % len(tk.geometry.rooms)]}]
            )
            return ModuleResult(
                actions=actions,
                reasoning=f"{target} not in sight; stalk",
                narration=choice.intent or f"hunting {target}",
                memo=f"stalk {target} (not in sight)",
            )
        distance = math.dist(obs.pos, pos)
        if distance > tk.spec.kill_defer_distance:
            return ModuleResult(
                actions=[{"op": "follow", "agent": target, "distance": 3.0, "ticks": 60}],
                reasoning=f"{target} is {distance:.0f} blocks away; stalk",
                narration=choice.intent or f"closing in on {target}",
                memo=f"stalk {target} ({distance:.0f} blocks)",
            )
        if distance > STRIKE_REACH:
            # The scans must be made where the strike will happen: close in first.
            return ModuleResult(
                actions=[{"op": "follow", "agent": target, "distance": 2.0, "ticks": 40}],
                reasoning=f"{target} is {distance:.1f} blocks away; close in before scanning",
                narration=choice.intent or f"closing in on {target}",
                memo=f"close in on {target} ({distance:.0f} blocks)",
            )
        answer = await self._scan(tk, target, "ahead of you")
        if answer is None:
            return failed(tk, "kill scan ahead")
        read = reader(tk, answer)
        intent = read.text("intent") or choice.intent
        if witness(read):
            return ModuleResult(
                actions=[{"op": "follow", "agent": target, "distance": 5.0, "ticks": 40}],
                reasoning=read.text("detail") or "witness ahead (or no clear answer)",
                narration=intent,
                memo=f"DEFER kill of {target}: witness ahead",
            )
        if read.flag("target_visible") != "yes":
            return ModuleResult(
                actions=[{"op": "follow", "agent": target, "distance": 3.0, "ticks": 40}],
                reasoning="target not clearly visible ahead; stalk",
                narration=intent,
                memo=f"stalk {target}",
            )
        self.pending = PendingScan(target=target, step=obs.step, pos=obs.pos, target_pos=pos)
        return ModuleResult(
            actions=[{"op": "look", "behind": True}],
            reasoning="no witness ahead; check behind",
            narration=intent,
            memo=f"scan behind before killing {target}",
        )

    @staticmethod
    async def _scan(tk: Toolkit, target: str, direction: str) -> dict[str, Any] | None:
        """Ask the model about the current frame: who is seen, any witness, the target."""
        return await tk.ask(
            "kill_scan",
            tk.prompt("kill_scan"),
            image=True,
            target=target,
            teammates=", ".join(tk.obs.teammates) or "none",
            direction=direction,
        )

    async def _behind(self, tk: Toolkit, pending: PendingScan) -> ModuleResult:
        obs = tk.obs
        target = pending.target
        answer = await self._scan(tk, target, "behind you")
        if answer is None:
            return failed(tk, "kill scan behind")
        read = reader(tk, answer)
        intent = read.text("intent")
        if witness(read):
            return ModuleResult(
                actions=[{"op": "wait", "ticks": 20}],
                reasoning=read.text("detail") or "witness behind (or no clear answer)",
                narration=intent,
                memo=f"DEFER kill of {target}: witness behind",
            )
        if target in obs.known_dead or not obs.kill_ready:
            return ModuleResult(actions=[], reasoning="target gone or cooldown", narration=intent)
        moved = math.dist(obs.pos, pending.pos)
        # Facing away after the turn, the target may be out of view: then its position at
        # the ahead scan stands, and the program's leash stops a chase if it has left.
        pos = _target_pos(obs, target) or pending.target_pos
        reach = math.dist(pending.pos, pos)
        if moved > SCAN_TOLERANCE or reach > STRIKE_REACH:
            # The scans cleared another place than where the strike would land: defer.
            why = (
                f"moved {moved:.1f} blocks since the ahead scan"
                if moved > SCAN_TOLERANCE
                else f"{target} is {reach:.1f} blocks from where the scans were made"
            )
            return ModuleResult(
                actions=[{"op": "follow", "agent": target, "distance": 2.0, "ticks": 40}],
                reasoning=f"DEFER: {why}; close in and scan again",
                narration=intent,
                memo=f"DEFER kill of {target}: {why}",
            )
        return ModuleResult(
            actions=[
                {
                    "op": "kill",
                    "target": target,
                    "max_distance": STRIKE_REACH + APPROACH_SLACK,
                }
            ],
            reasoning="no witnesses ahead or behind",
            narration=intent,
            memo=f"kill {target}",
        )
