"""The built-in judges (`annotation.deception.judges`): `grounded` and `reference`."""

from __future__ import annotations

from annotation.deception.judge import Estimate, JudgeResult, estimate_game, judge_game
from annotation.deception.profiles import DEFAULTS
from annotation.deception.reference.judge import estimate_reference, judge_game_reference
from annotation.gamelog import Game
from annotation.llm import JudgeModel, ReplyCache


class GroundedJudge:
    """`grounded`: this project's judge (`annotation.deception.judge`)."""

    name = "grounded"

    async def judge(
        self,
        game: Game,
        model: JudgeModel,
        cache: ReplyCache | None,
        *,
        max_tokens: int | None = None,
        parse_attempts: int | None = None,
    ) -> JudgeResult:
        """Both grounded passes; the budget is the model's unless `max_tokens` is given."""
        if max_tokens is not None and max_tokens != model.max_tokens:
            cap = model.max_tokens_cap
            model = JudgeModel(model.backend, max_tokens=max_tokens, max_tokens_cap=cap)
        attempts = parse_attempts or DEFAULTS["grounded"].parse_attempts
        return await judge_game(game, model, cache, parse_attempts=attempts)

    def estimate(
        self, game: Game, address: str, cache: ReplyCache | None, *, expected_out: int = 2000
    ) -> Estimate:
        """The grounded passes' estimate."""
        return estimate_game(game, address, cache, expected_out=expected_out)


class ReferenceJudge:
    """`reference`: the authors' judge (`annotation.deception.reference`)."""

    name = "reference"

    async def judge(
        self,
        game: Game,
        model: JudgeModel,
        cache: ReplyCache | None,
        *,
        max_tokens: int | None = None,
        parse_attempts: int | None = None,
    ) -> JudgeResult:
        """Both reference passes, findings kept as emitted (`filter_ok` beside)."""
        return await judge_game_reference(
            game, model, cache, max_tokens=max_tokens, parse_attempts=parse_attempts
        )

    def estimate(
        self, game: Game, address: str, cache: ReplyCache | None, *, expected_out: int = 2000
    ) -> Estimate:
        """The reference passes' estimate."""
        return estimate_reference(game, address, cache, expected_out=expected_out)


GROUNDED = GroundedJudge()
REFERENCE = ReferenceJudge()
