"""SURVEILLANCE: look around after an action; what was seen goes into memory."""

from __future__ import annotations

from harness_aria.modules.base import ModuleResult, reader
from harness_aria.toolkit import Choice, Toolkit

SUSPECT_DELTA = 0.1


class SurveillanceModule:
    """Turn around (this step) and judge the view (next step)."""

    name = "SURVEILLANCE"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Look behind; the next observation's frame is judged by `observe`."""
        return ModuleResult(
            actions=[{"op": "look", "behind": True}],
            reasoning=choice.reasoning or "look around",
            memo="looked around",
        )

    async def observe(self, tk: Toolkit) -> None:
        """Judge the current frame (what is behind after the turn) into memory.

        With no frame to judge (frames off, text-only) and `module_calls: needed`, what
        is in sight is already in the state view the planner reads this step; it is
        noted from the view without a call."""
        if tk.image is None and tk.spec.module_calls == "needed":
            seen = sorted(tk.obs.visible_players)
            tk.memory.note(tk.obs.step, f"looked around: saw {', '.join(seen) or 'nobody'}.")
            return
        answer = await tk.ask("surveillance", tk.prompt("surveillance"), image=True)
        if answer is None:
            return
        read = reader(tk, answer)
        names = ", ".join(read.names("players_seen", tk.obs.players))
        detail = read.text("detail")
        tk.memory.note(tk.obs.step, f"looked around: saw {names or 'nobody'}. {detail}".strip())
        suspect = read.choice("suspect", tk.obs.players)
        if suspect is not None and suspect != tk.obs.agent:
            tk.memory.adjust(suspect, SUSPECT_DELTA, "suspicious when I looked around")
