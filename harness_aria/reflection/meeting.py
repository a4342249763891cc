"""Reflection on: after each meeting, plus a skill memory of what worked.

The reflection answer is read like every other (`harness_aria.parsing`): each liberty is
noted on the call's `normalised` list and nothing is dropped silently. A player key is
matched leniently (`"Yellow."` -> `yellow`, noted); a delta written as text (`"0.2"`,
`"+0.2"`) is read as its number (noted) and clamped to ±`MAX_DELTA` (noted when clamped).
A key that names no player (or the agent itself), a delta that is not a finite number,
a second delta for the same player, and fields of the wrong shape are left out, each
noted as `dropped` with the reason.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from harness_aria.modules.base import reader
from harness_aria.parsing import AnswerReader, finite_number
from harness_aria.reflection.base import Skill, register_reflector
from harness_aria.reflection.beliefs import update_beliefs
from harness_aria.toolkit import Toolkit

MAX_DELTA = 0.3
SHOWN = 5
SKILL_FIELDS = ("situation", "behavior", "outcome")


@register_reflector(
    "on", budgets={"reflection": (0.3, 256)}, args=lambda spec: {"cap": spec.skill_cap}
)
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
        """Insights into memory, suspicion deltas (clamped to ±0.3), one observed skill;
        then the model's belief update where the memory takes one (`belief_update: llm`,
        `harness_aria.reflection.beliefs`), as the reference runs it after reflection."""
        await self._reflect(tk, recap)
        await update_beliefs(tk)

    async def _reflect(self, tk: Toolkit, recap: str) -> None:
        answer = await tk.ask("reflection", tk.prompt("reflection"), extra=recap)
        if answer is None:
            return
        read = reader(tk, answer)
        insight = _text(read, "insights", answer.get("insights"))
        if insight:
            tk.memory.note(tk.obs.step, f"reflection: {insight}")
        for who, delta in _deltas(read, answer.get("suspicion_deltas"), tk).items():
            tk.memory.adjust(who, delta, "reflection after the meeting")
        skill = _skill(read, answer.get("skill"))
        if skill is not None:
            self.skills.append(skill)

    def succeeded(self, situation: str, behavior: str, outcome: str) -> None:
        """A program of this agent's that achieved its aim."""
        self.skills.append(Skill("self", situation, behavior, outcome))


def _text(read: AnswerReader, key: str, raw: Any) -> str:
    """A free-text field: a string as it is; a number or a list of strings joined into
    text (noted); anything else but a missing field or null dropped (noted)."""
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        read.note(key, raw, str(raw))
        return str(raw)
    if isinstance(raw, list) and raw and all(isinstance(x, str) for x in raw):
        joined = " ".join(x.strip() for x in raw if x.strip())
        read.note(key, raw, joined)
        return joined
    read.dropped(key, raw, "not text")
    return ""


def _deltas(read: AnswerReader, raw: Any, tk: Toolkit) -> dict[str, float]:
    """The suspicion deltas by player, each read, clamped and noted as described above."""
    key = "suspicion_deltas"
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        read.dropped(key, raw, "not an object of player: delta")
        return {}
    players = [p for p in tk.obs.players if p != tk.obs.agent]
    out: dict[str, float] = {}
    for name, value in raw.items():
        who = AnswerReader({key: name}).choice(key, players) if isinstance(name, str) else None
        if who is None:
            why = "the agent itself" if _is_self(name, tk.obs.agent) else "not a player"
            read.dropped(key, name, why)
            continue
        if who != name:
            read.note(key, name, who)
        field = f"{key}.{who}"
        if who in out:
            read.dropped(field, value, "a second delta for the same player")
            continue
        number = finite_number(value)
        if number is None:
            read.dropped(field, value, "not a number")
            continue
        if not (isinstance(value, int | float) and not isinstance(value, bool)):
            read.note(field, value, number)
        clamped = max(-MAX_DELTA, min(MAX_DELTA, number))
        if clamped != number:
            read.note(field, number, f"{clamped} (clamped to ±{MAX_DELTA})")
        out[who] = clamped
    return out


def _is_self(name: Any, me: str) -> bool:
    return isinstance(name, str) and AnswerReader({"k": name}).choice("k", [me]) is not None


def _skill(read: AnswerReader, raw: Any) -> Skill | None:
    """The observed skill: an object with text fields (each read like `_text`)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        read.dropped("skill", raw, "not an object of situation, behavior, outcome")
        return None
    if "behavior" not in raw and "behaviour" in raw:
        read.note("skill", "behaviour", "behavior")
        raw = {**raw, "behavior": raw["behaviour"]}
    fields = [_text(read, f"skill.{f}", raw.get(f)) for f in SKILL_FIELDS]
    if not any(fields):
        read.dropped("skill", raw, "no situation, behavior or outcome")
        return None
    return Skill("observed", *fields)
