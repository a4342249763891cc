"""SURVEILLANCE: look around after an action; what was seen goes into memory."""

from __future__ import annotations

from collections.abc import Sequence

from controller.actions import AnyAction, Look
from controller.observation import Observation
from harness_aria.modules.base import ModuleResult, reader
from harness_aria.modules.registry import register_module
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit

SUSPECT_DELTA = 0.1


def offered(obs: Observation, spec: AriaSpec) -> bool:
    """Offered to crewmates."""
    return obs.role == "crewmate"


def look_ran(obs: Observation) -> bool:
    """Whether the last program's look behind was carried out: the program ended `ok`
    (a program cut off at the step's end never reached its closing look, so its frame
    is not the view behind). With no outcome reported, it is taken to have run."""
    ended = [a for a in obs.own_actions if a.kind == "program_ended"]
    return not ended or ended[-1].detail.startswith("ok")


@register_module(
    "SURVEILLANCE",
    budgets={"surveillance": (0.2, 256)},
    offered=offered,
    rank=60,
    number=2,
)
class SurveillanceModule:
    """Turn around (this step) and judge the view (next step)."""

    name = "SURVEILLANCE"

    async def follow_up(self, tk: Toolkit, last: Sequence[AnyAction]) -> None:
        """A crewmate's last free-roam program looked behind (SURVEILLANCE, or the look
        MOVE and MISSION end with) and the look ran: judge the frame it turned to."""
        looked = any(isinstance(a, Look) and a.behind for a in last)
        if looked and tk.obs.role == "crewmate" and look_ran(tk.obs):
            await self.observe(tk)

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Look behind; the next observation's frame is judged by `observe`."""
        return ModuleResult(
            actions=[Look(behind=True)],
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
