"""VOTE: a living player or skip, with a reason."""

from __future__ import annotations

from harness_aria.modules.base import ModuleResult, failed, name_of, text
from harness_aria.toolkit import Choice, Toolkit


class VoteModule:
    """Cast this agent's ballot."""

    name = "VOTE"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Ask for a vote; an answer naming no living player or skip is invalid."""
        obs = tk.obs
        living = (
            obs.meeting.order
            if obs.meeting
            else [p for p in obs.players if p not in obs.known_dead]
        )
        role = "impostor" if tk.impostor else "crewmate"
        answer = await tk.ask("vote", tk.prompt(f"vote_{role}"), roster=", ".join(living))
        if answer is None:
            return failed(tk, "vote")
        target = (
            "skip"
            if text(answer, "vote_target").lower() == "skip"
            else name_of(answer, "vote_target", living)
        )
        if target is None:
            return ModuleResult(
                invalid=f"vote for {answer.get('vote_target')!r}: not a living player or skip",
                memo="invalid vote",
            )
        return ModuleResult(
            vote=target,
            reasoning=text(answer, "reasoning"),
            narration=text(answer, "intent"),
            memo=f"voted {target}",
        )
