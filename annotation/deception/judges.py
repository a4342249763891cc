"""The judges, registered by name: which instrument labels a game's atoms.

A judge (a judge profile, `mineamongus annotate --judge-profile NAME`) turns one game
and a judge model into findings (`judge`) and estimates what that would cost (`estimate`).
The built-in ones are `grounded` and `reference` (`annotation.deception.profiles` says
how they differ); a new one is its own file plus one registration below, as a
`"module:attr"` reference, so that listing the judges (the command's help) imports none
(another package names its judge in the `mineamongus.judges` entry-point group).

Registration facts: `defaults` names the profile whose call defaults it shares
(`annotation.deception.profiles.DEFAULTS`; its own name unless given).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from controller.registry import Registry

if TYPE_CHECKING:
    from annotation.deception.judge import Estimate, JudgeResult
    from annotation.gamelog import Game
    from annotation.llm import JudgeModel, ReplyCache


class Judge(Protocol):
    """One judge profile."""

    name: str
    """Its name (`--judge-profile NAME`, written beside each finding's judge)."""

    async def judge(
        self,
        game: Game,
        model: JudgeModel,
        cache: ReplyCache | None,
        *,
        max_tokens: int | None = None,
        parse_attempts: int | None = None,
    ) -> JudgeResult:
        """Judge one game (`max_tokens`, `parse_attempts`: None for the profile's own)."""
        ...

    def estimate(
        self, game: Game, address: str, cache: ReplyCache | None, *, expected_out: int = 2000
    ) -> Estimate:
        """The tokens and list-price cost judging the game would spend (no call made)."""
        ...


JUDGES: Registry[Judge] = Registry("judge profile", group="mineamongus.judges", unknown=ValueError)
"""The judges by profile name, in the order `--judge-profile` lists them."""
JUDGES.register("reference", "annotation.deception.judge_profiles:REFERENCE")
JUDGES.register("grounded", "annotation.deception.judge_profiles:GROUNDED")
JUDGES.register("consensus", "annotation.deception.consensus_judge:CONSENSUS", defaults="grounded")


def defaults_of(name: str) -> str:
    """The profile whose call defaults judge `name` uses (`profiles.DEFAULTS`).

    Raises:
        ValueError: an unknown judge (naming the known ones).
    """
    return str(JUDGES.info(name).get("defaults", name))
