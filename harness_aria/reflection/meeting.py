"""Reflection on: after each meeting, plus a skill memory of what worked."""

from __future__ import annotations

from collections import deque

from harness_aria.modules.base import text
from harness_aria.reflection.base import Skill
from harness_aria.toolkit import Toolkit

MAX_DELTA = 0.3
SHOWN = 5


class MeetingReflection:
    """Reflects after every meeting; keeps up to `cap` skills, first in, first out."""

    def __init__(self, cap: int = 50) -> None:
        self.skills: deque[Skill] = deque(maxlen=cap)

    def skills_text(self) -> str:
        """The last five skills."""
        if not self.skills:
            return ""
        lines = ["Skills that worked before:"]
        lines += [
            f"  when {s.situation}: {s.behavior} -> {s.outcome} ({s.source})"
            for s in list(self.skills)[-SHOWN:]
        ]
        return "\n".join(lines)

    async def after_meeting(self, tk: Toolkit, recap: str) -> None:
        """Insights into memory, suspicion deltas (clamped to ±0.3), one observed skill."""
        answer = await tk.ask("reflection", tk.prompt("reflection"), extra=recap)
        if answer is None:
            return
        insight = text(answer, "insights")
        if insight:
            tk.memory.note(tk.obs.step, f"reflection: {insight}")
        deltas = answer.get("suspicion_deltas")
        if isinstance(deltas, dict):
            for name, delta in deltas.items():
                who = str(name).lower()
                if who in tk.obs.players and isinstance(delta, int | float):
                    tk.memory.adjust(
                        who,
                        max(-MAX_DELTA, min(MAX_DELTA, float(delta))),
                        "reflection after the meeting",
                    )
        skill = answer.get("skill")
        if isinstance(skill, dict):
            self.skills.append(
                Skill(
                    "observed",
                    text(skill, "situation"),
                    text(skill, "behavior"),
                    text(skill, "outcome"),
                )
            )

    def succeeded(self, situation: str, behavior: str, outcome: str) -> None:
        """A program of this agent's that achieved its aim."""
        self.skills.append(Skill("self", situation, behavior, outcome))
