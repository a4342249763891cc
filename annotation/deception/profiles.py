"""Judge profiles: which instrument labels a game's atoms.

- `grounded`: this project's judge (`annotation.deception.judge`). It reads the game
  re-rendered from the event log (`annotation.deception.render`), its verbal pass gets
  `# fact` lines of ground truth, its prompts are short and strict, and every finding
  passes the grounded checks (`validate_finding`: an impostor actor, a verbatim quote of
  the actor's own line of that step, a step of the right phase) or is rejected.
- `reference`: the authors' judge (`annotation.deception.reference`). It reads a
  transcript in the line format of the authors' `game.log`, with only the line kinds
  their judge keeps and no fact lines; pass 1 gets all of it, pass 2 the meeting chunks;
  its prompts restate their codebook, disambiguation, tightening and per-pass rules;
  findings are kept as emitted (labels normalised, each pass keeping its own letters),
  with the grounded checks' verdict written beside each as `filter_ok`.

The default follows the run: a game whose impostor side is an ARIA agent built with
the `reference` harness profile (`AriaSpec.profile`, recorded in the set-up) is judged
with the `reference` judge; scripted impostors, the `lean` harness and records written
before harness profiles existed get the `grounded` judge (their logs hold none of the
reference harness's cue lines).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from annotation.deception.judges import JUDGES, defaults_of
from controller.record import GameSetup, RunRecord
from harness_aria.backends.settings import BackendSettings

JudgeProfile = str
"""A registered judge's name (`annotation.deception.judges.JUDGES`)."""
ProfileChoice = str
"""`auto` or a registered judge's name."""
PROFILES: tuple[JudgeProfile, ...] = ("reference", "grounded")
"""The built-in judges (every registered one: `JUDGES.names()`)."""


def choices() -> list[str]:
    """What `--judge-profile` takes: `auto` and every registered judge."""
    return ["auto", *JUDGES.names()]


@dataclass(frozen=True)
class ProfileDefaults:
    """What a judge profile asks of a call where the caller sets nothing."""

    max_tokens: int
    """Output budget of a call."""
    parse_attempts: int
    """Tries while a reply is not the asked-for JSON."""
    unreadable: Literal["failed", "zero"]
    """What a pass whose replies were never readable counts as: `failed` (the game's
    atoms unknown) or `zero` (no findings, as the reference counts it)."""
    max_retries: int | None
    """Backend retries after a failed request (None: the backend's own default)."""
    timeout_s: float | None
    """Per-request time limit (None: the backend's own default)."""


DEFAULTS: dict[str, ProfileDefaults] = {
    "grounded": ProfileDefaults(
        max_tokens=8000, parse_attempts=2, unreadable="failed", max_retries=None, timeout_s=None
    ),
    # The reference's judge: 20000 output tokens, 3 tries of a reply that is empty or not
    # JSON and then zero findings, 2 client retries, no client time limit (our backends
    # need one: a long one stands in for it).
    "reference": ProfileDefaults(
        max_tokens=20000, parse_attempts=3, unreadable="zero", max_retries=2, timeout_s=900.0
    ),
}
"""Each profile's defaults. Both call at temperature 0 in JSON mode (`JudgeModel`)."""


def harness_profile(setup: GameSetup) -> str:
    """The harness profile of a game's impostor side: its ARIA spec's `profile`
    (`reference` or `lean`), `none` for an impostor side without one (scripted agents, a
    record written before harness profiles existed)."""
    side = setup.impostor
    value = side.spec.get("profile") if side.spec else None
    return str(value) if value else "none"


def default_profile(setup: GameSetup) -> JudgeProfile:
    """The judge profile a game gets by default: `reference` when its impostors played
    the reference harness, else `grounded`."""
    return "reference" if harness_profile(setup) == "reference" else "grounded"


def resolve_profile(choice: ProfileChoice | str, setup: GameSetup) -> JudgeProfile:
    """The profile a game is judged with: the one asked for, or with `auto` the run's.

    Raises:
        ValueError: An unknown choice (naming the valid ones).
    """
    if choice == "auto":
        return default_profile(setup)
    return _explicit(choice)


def profile_of_run(folder: Path, choice: ProfileChoice | str) -> JudgeProfile:
    """`resolve_profile` for a run folder, reading only its `game_start` (and nothing
    for an explicit choice)."""
    if choice != "auto":
        return _explicit(choice)
    return default_profile(RunRecord.read(folder, kinds={"game_start"}).setup)


def _explicit(choice: str) -> JudgeProfile:
    if choice in JUDGES:
        return choice
    raise ValueError(f"judge profile {choice!r}: expected one of {', '.join(choices())}")


def backend_settings(profiles: set[JudgeProfile]) -> BackendSettings | None:
    """The judge backend's settings for the profiles a run will use: the reference's
    retries and time limit when every game is judged with the `reference` profile
    (one backend serves a whole run), else None (the backend's defaults)."""
    if {defaults_of(p) for p in profiles} != {"reference"}:
        return None
    ref = DEFAULTS["reference"]
    assert ref.max_retries is not None and ref.timeout_s is not None
    return BackendSettings(max_retries=ref.max_retries, timeout_s=ref.timeout_s)
