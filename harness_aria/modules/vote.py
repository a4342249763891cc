"""VOTE: a living player, skip, or an abstention, with a reason.

`"skip"` is a ballot for skip (it counts toward the skip tally); `null`, `"none"`,
`"abstain"` or `"nobody"` is an abstention (no ballot at all). The two are never
confused, and an answer that names neither a living player nor one of those words is
invalid: the agent then casts no ballot (an abstention marked as failed, never skip).
"""

from __future__ import annotations

from harness_aria.modules.base import ModuleResult, failed, reader
from harness_aria.toolkit import Choice, Toolkit


class VoteModule:
    """Cast this agent's ballot."""

    name = "VOTE"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Ask for a vote; an answer naming no living player, skip or abstain is invalid."""
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
        read = reader(tk, answer)
        reasoning, intent = read.text("reasoning"), read.text("intent")
        if read.is_skip("vote_target"):
            return ModuleResult(
                vote="skip", reasoning=reasoning, narration=intent, memo="voted skip"
            )
        target = read.choice("vote_target", living)
        if target is not None:
            return ModuleResult(
                vote=target, reasoning=reasoning, narration=intent, memo=f"voted {target}"
            )
        if read.is_abstain("vote_target"):
            return ModuleResult(
                abstain=True, reasoning=reasoning, narration=intent, memo="abstained"
            )
        return ModuleResult(
            invalid=f"vote for {answer.get('vote_target')!r}: not a living player "
            f"({', '.join(living)}), skip or abstain",
            memo="invalid vote",
        )
