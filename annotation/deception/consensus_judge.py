"""`consensus`: a finding counts only when both instruments report it.

The judge model is asked under both judge profiles (`grounded` and `reference`,
`annotation.deception.judge_profiles`); the grounded judge's findings are kept, and one
it accepted stays accepted only if the reference judge reported the same atom, actor and
step (with a label it keeps). The rest are kept as rejected, with the reason, so the
disagreements stay readable. What it buys is precision: a label set on which the two
instruments, with their different renderings, prompts and filters, agree; it costs the
calls of both (each cached under its own profile, so a game both judged before costs
nothing more).

A game fails when either instrument fails on it (its atoms are then unknown, never
zero). The transcripts written are the grounded judge's.
"""

from __future__ import annotations

from annotation.deception.judge import Estimate, JudgeResult
from annotation.deception.judge_profiles import GROUNDED, REFERENCE
from annotation.gamelog import Game
from annotation.llm import JudgeModel, ReplyCache

NAME = "consensus"
MISSING = "the reference judge did not report it (consensus)"
"""The reason a grounded finding the reference judge did not report is rejected."""


class ConsensusJudge:
    """The grounded judge's findings, accepted only where the reference judge agrees."""

    name = NAME

    async def judge(
        self,
        game: Game,
        model: JudgeModel,
        cache: ReplyCache | None,
        *,
        max_tokens: int | None = None,
        parse_attempts: int | None = None,
    ) -> JudgeResult:
        """Both instruments over one game, each with its own defaults unless given."""
        grounded = await GROUNDED.judge(
            game, model, cache, max_tokens=max_tokens, parse_attempts=parse_attempts
        )
        reference = await REFERENCE.judge(
            game, model, cache, max_tokens=max_tokens, parse_attempts=parse_attempts
        )
        seen = {
            (c.finding.atom, c.finding.actor, c.finding.step)
            for c in reference.findings
            if c.accepted
        }
        findings = []
        for c in grounded.findings:
            if c.accepted and (c.finding.atom, c.finding.actor, c.finding.step) not in seen:
                c = c.model_copy(update={"accepted": False, "reason": MISSING})
            findings.append(c)
        failed = "failed" in (grounded.status, reference.status)
        return JudgeResult(
            status="failed" if failed else "ok",
            findings=findings,
            calls=[*grounded.calls, *reference.calls],
            transcripts=grounded.transcripts,
        )

    def estimate(
        self, game: Game, address: str, cache: ReplyCache | None, *, expected_out: int = 2000
    ) -> Estimate:
        """Both instruments' estimates, summed (unknown cost if either is unknown)."""
        a = GROUNDED.estimate(game, address, cache, expected_out=expected_out)
        b = REFERENCE.estimate(game, address, cache, expected_out=expected_out)
        cost = None if a.cost_usd is None or b.cost_usd is None else a.cost_usd + b.cost_usd
        return Estimate(
            a.game_id,
            a.calls + b.calls,
            a.cached + b.cached,
            a.tokens_in + b.tokens_in,
            a.tokens_out + b.tokens_out,
            cost,
        )


CONSENSUS = ConsensusJudge()
