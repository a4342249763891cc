"""VOTE: a living player, skip, or an explicit abstention, with a reason.

A ballot for skip counts toward the skip tally; an abstention casts no ballot at all (it
can turn a meeting "skipped" into a "tie"), so only the word for it is read as one:

* a living player (`"Yellow."` -> `yellow`) is a ballot for that player;
* `"skip"`, and every way of naming no one (JSON `null`, `"none"`, `"nobody"`, `"no one"`,
  any case and edge punctuation), is a ballot for skip; the reading is noted on the
  call's `normalised` list (`vote_target: None -> 'skip'`);
* `"abstain"` (or `"abstention"`) is an explicit abstention;
* anything else is a failed ballot (invalid, error kind `model`, with the reason): a dead
  or unknown player, and an answer without `vote_target` (`{"vote": "yellow"}`), which is
  never read as an abstention. A failed ballot casts no ballot, and is never a skip.
"""

from __future__ import annotations

from harness_aria.modules.base import ModuleResult, failed, reader
from harness_aria.modules.registry import register_module
from harness_aria.toolkit import Choice, Toolkit

KEY = "vote_target"
"""The answer's ballot field, as the vote format asks for it."""


@register_module("VOTE", budgets={"vote": (0.2, 256)}, phase="voting", number=5)
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
        if KEY not in answer:
            keys = ", ".join(repr(k) for k in answer) or "none"
            return ModuleResult(
                invalid=f"vote: the answer has no {KEY!r} (its keys: {keys}); a ballot names "
                f"a living player ({', '.join(living)}), skip or abstain under {KEY!r}",
                memo="invalid vote",
            )
        read = reader(tk, answer)
        reasoning, intent = read.text("reasoning"), read.text("intent")
        target = read.choice(KEY, living)
        if target is not None:
            return ModuleResult(
                vote=target, reasoning=reasoning, narration=intent, memo=f"voted {target}"
            )
        if read.is_skip(KEY):
            return ModuleResult(
                vote="skip", reasoning=reasoning, narration=intent, memo="voted skip"
            )
        if read.is_abstain(KEY):
            return ModuleResult(
                abstain=True, reasoning=reasoning, narration=intent, memo="abstained"
            )
        return ModuleResult(
            invalid=f"vote for {answer.get(KEY)!r}: not a living player "
            f"({', '.join(living)}), skip or abstain",
            memo="invalid vote",
        )
