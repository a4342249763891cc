"""KILL: look ahead and behind for witnesses, then kill, defer or stalk.

Two steps: at the first, the model judges the current view (ahead) and the bot
turns around; at the next, the model judges the view behind. Only with no witness
in either view does the bot strike. Every answer carries the impostor's private
intent.
"""

from __future__ import annotations

import math
from typing import Any

from harness_aria.modules.base import ModuleResult, failed, text
from harness_aria.toolkit import Choice, Toolkit


class KillModule:
    """Witness-aware kill."""

    name = "KILL"

    def __init__(self) -> None:
        self.pending: tuple[str, int] | None = None

    def scanning(self, step: int) -> str | None:
        """The target whose behind-view check is due at `step` (the ahead check was at
        the step before), or None."""
        if self.pending is not None and self.pending[1] == step - 1:
            return self.pending[0]
        return None

    def _target(self, tk: Toolkit, choice: Choice) -> str | None:
        obs = tk.obs
        crew_seen = [a for a in obs.visible_players if a not in obs.teammates]
        if choice.target and choice.target.lower() in obs.players:
            t = choice.target.lower()
            if t not in obs.teammates and t != obs.agent and t not in obs.known_dead:
                return t
        if crew_seen:
            return min(crew_seen, key=lambda a: math.dist(obs.pos, obs.visible_players[a]))
        return None

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """One stage of the scan, then the strike."""
        obs = tk.obs
        pending_target = self.scanning(obs.step)
        self.pending = None
        if pending_target is not None:
            return await self._behind(tk, pending_target)
        target = self._target(tk, choice)
        if target is None or not obs.kill_ready:
            return ModuleResult(
                actions=[{"op": "wait", "ticks": 20}],
                reasoning="no target in sight" if target is None else "kill not ready",
                narration=choice.intent or "waiting for a chance to kill",
                memo="DEFER: no target or cooldown",
            )
        if target not in obs.visible_players:
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
        distance = math.dist(obs.pos, obs.visible_players[target])
        if distance > tk.spec.kill_defer_distance:
            return ModuleResult(
                actions=[{"op": "follow", "agent": target, "distance": 3.0, "ticks": 60}],
                reasoning=f"{target} is {distance:.0f} blocks away; stalk",
                narration=choice.intent or f"closing in on {target}",
                memo=f"stalk {target} ({distance:.0f} blocks)",
            )
        answer = await self._scan(tk, target, "ahead of you")
        if answer is None:
            return failed(tk, "kill scan ahead")
        intent = text(answer, "intent") or choice.intent
        if answer.get("witnesses_visible") is True:
            return ModuleResult(
                actions=[{"op": "follow", "agent": target, "distance": 5.0, "ticks": 40}],
                reasoning=text(answer, "detail") or "witness ahead",
                narration=intent,
                memo=f"DEFER kill of {target}: witness ahead",
            )
        if answer.get("target_visible") is False:
            return ModuleResult(
                actions=[{"op": "follow", "agent": target, "distance": 3.0, "ticks": 40}],
                reasoning="target not visible ahead; stalk",
                narration=intent,
                memo=f"stalk {target}",
            )
        self.pending = (target, obs.step)
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

    async def _behind(self, tk: Toolkit, target: str) -> ModuleResult:
        obs = tk.obs
        answer = await self._scan(tk, target, "behind you")
        if answer is None:
            return failed(tk, "kill scan behind")
        intent = text(answer, "intent")
        if answer.get("witnesses_visible") is True:
            return ModuleResult(
                actions=[{"op": "wait", "ticks": 20}],
                reasoning=text(answer, "detail") or "witness behind",
                narration=intent,
                memo=f"DEFER kill of {target}: witness behind",
            )
        if target in obs.known_dead or not obs.kill_ready:
            return ModuleResult(actions=[], reasoning="target gone or cooldown", narration=intent)
        return ModuleResult(
            actions=[{"op": "kill", "target": target}],
            reasoning="no witnesses ahead or behind",
            narration=intent,
            memo=f"kill {target}",
        )
