"""MEETING: speak in turn (at most three times a meeting)."""

from __future__ import annotations

from controller.actions import Say, build_action
from harness_aria.modules.base import ModuleResult, failed, reader
from harness_aria.modules.registry import register_module
from harness_aria.toolkit import Choice, Toolkit

BLAME_DELTA = 0.15


@register_module("MEETING", budgets={"meeting": (0.7, 256)}, phase="meeting", number=4)
class MeetingModule:
    """Say one line in the meeting."""

    name = "MEETING"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Ask for an utterance and say it."""
        obs = tk.obs
        m = obs.meeting
        if m is None or m.utterances_left <= 0:
            return ModuleResult(actions=[], reasoning="no turn left", memo="passed")
        role = "impostor" if tk.impostor else "crewmate"
        roster = ", ".join(p for p in m.order)
        answer = await tk.ask("meeting", tk.prompt(f"meeting_{role}"), roster=roster)
        if answer is None:
            return failed(tk, "meeting")
        read = reader(tk, answer)
        said = " ".join(read.text("response_text").split())[:256]
        if not said:
            return ModuleResult(invalid="meeting answer has no response_text", memo="said nothing")
        blamed = read.choice("suspicion_cast_on", m.order)
        if blamed and blamed != obs.agent:
            tk.memory.adjust(blamed, BLAME_DELTA, "I accused them in the meeting")
        say = build_action(Say, text=said)
        if isinstance(say, str):  # a line the chat rule refuses: the model's to answer for
            return ModuleResult(invalid=f"meeting answer: {say}", memo="said nothing")
        return ModuleResult(
            actions=[say],
            reasoning=read.text("reasoning"),
            narration=read.text("intent"),
            memo=f'said: "{said}"',
        )
