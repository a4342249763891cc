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

**Impostors under `rules.impostors_may_skip: false`** (the paper's rule: only crewmates
may skip). An impostor's answer that names no living player (skip, abstain, an unknown
name, a missing `vote_target` or an unreadable answer) becomes the reference's fallback
ballot: the player it suspects most, with suspicion above 0 (its memory's scores), never
itself or a fellow impostor; else the first other such player in roster order. The
decision's reasoning and memo say `fallback: ...` with what the model answered. A call
that failed for infrastructure reasons is not the model's answer: it stays a failed
ballot, recorded as such.
"""

from __future__ import annotations

from harness_aria.modules.base import ModuleResult, failed, reader
from harness_aria.modules.registry import register_module
from harness_aria.toolkit import Choice, Toolkit

KEY = "vote_target"
"""The answer's ballot field, as the vote format asks for it."""
BALLOT = {True: 'a player\'s name or "skip"', False: "a living player's name (you may not skip)"}
"""The vote question's wording of a ballot, by whether the voter may skip."""
BALLOT_FORMAT = {True: "name or skip", False: "name"}
"""The answer format's `vote_target` placeholder, by whether the voter may skip."""


@register_module("VOTE", budgets={"vote": (0.2, 256)}, phase="voting", number=5)
class VoteModule:
    """Cast this agent's ballot."""

    name = "VOTE"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Ask for a vote; an answer naming no living player, skip or abstain is invalid
        (an impostor that may not skip falls back to the reference's ballot)."""
        obs = tk.obs
        living = (
            obs.meeting.order
            if obs.meeting
            else [p for p in obs.players if p not in obs.known_dead]
        )
        role = "impostor" if tk.impostor else "crewmate"
        may_skip = not tk.impostor or tk.impostors_may_skip
        answer = await tk.ask(
            "vote",
            tk.prompt(f"vote_{role}"),
            roster=", ".join(living),
            ballot=BALLOT[may_skip],
            ballot_format=BALLOT_FORMAT[may_skip],
        )
        if answer is None:
            if may_skip or tk.infrastructure_failed():
                return failed(tk, "vote")
            return _fallback(tk, living, f"unusable answer ({tk.last_error() or 'no answer'})")
        if KEY not in answer:
            keys = ", ".join(repr(k) for k in answer) or "none"
            why = (
                f"vote: the answer has no {KEY!r} (its keys: {keys}); a ballot names "
                f"a living player ({', '.join(living)}), skip or abstain under {KEY!r}"
            )
            if not may_skip:
                return _fallback(tk, living, f"the answer has no {KEY!r}")
            return ModuleResult(invalid=why, memo="invalid vote")
        read = reader(tk, answer)
        reasoning, intent = read.text("reasoning"), read.text("intent")
        target = read.choice(KEY, living)
        if target is not None:
            return ModuleResult(
                vote=target, reasoning=reasoning, narration=intent, memo=f"voted {target}"
            )
        if not may_skip:
            said = "skip" if read.is_skip(KEY) else repr(answer.get(KEY))
            return _fallback(tk, living, f"answered {said}", reasoning, intent)
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


def fallback_ballot(tk: Toolkit, living: list[str]) -> tuple[str | None, str]:
    """The reference's fallback ballot of an impostor that may not skip: the living
    player it suspects most with suspicion above 0, never itself or a fellow impostor
    (ties: roster order); else the first such player in roster order. Returns the player
    (None if there is none) and how it was chosen."""
    obs = tk.obs
    spare = {obs.agent, *obs.teammates}
    order = [p for p in obs.players if p in living and p not in spare]
    order += [p for p in living if p not in order and p not in spare]
    scores = tk.memory.suspicion()
    best = max(order, key=lambda p: scores.get(p, 0.0), default=None)
    if best is not None and scores.get(best, 0.0) > 0:
        return best, f"the most suspected (suspicion {scores[best]:.2f})"
    if order:
        return order[0], "the first other player in roster order (no suspicion above 0)"
    return None, "no other living player"


def _fallback(
    tk: Toolkit, living: list[str], said: str, reasoning: str = "", intent: str = ""
) -> ModuleResult:
    """The impostor's fallback ballot, with what the model answered in its reasoning."""
    target, how = fallback_ballot(tk, living)
    if target is None:
        return ModuleResult(
            invalid=f"vote: {said}; impostors may not skip and {how}", memo="invalid vote"
        )
    line = f"fallback: {said}; impostors may not skip, so voted {target}, {how}"
    return ModuleResult(
        vote=target,
        reasoning=f"{line}. Model's reasoning: {reasoning}" if reasoning else line,
        narration=intent,
        memo=f"voted {target} ({line})",
    )
