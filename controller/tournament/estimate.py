"""Token, cost and time estimates of a study before it runs (`tournament SPEC --dry-run`).

Per side, the figures are measured ones: `token_figures.json` (package data, written by
`python -m benchmarks.aria_tokens --preset paper`) holds, per ARIA spec setting and per
side (crewmates, impostors), decisions per seat and step, model calls per decision,
prompt text and frames per decision and output tokens per decision, and the side's
resolved spec, from fake-world paper games. A side's spec starts from the measured RQ1
base, or from a measured setting that changes many fields at once (another ARIA profile:
`profile=lean`) when its resolved spec is nearer the side's; each field that still
differs takes its measured single-field setting's ratio to the base (decisions, calls,
text, frames and output multiply; cached tokens add their difference), and a field with
no measured setting is named in the estimate's notes and taken as the start's.
Decisions per game are decisions per seat and step times the side's seats times the
arm's step budget (the preset's `max_steps`). Input tokens are the prompt text plus
each frame at the model's size (`image_tokens`; text-only sides send none). The text is
counted as the side's model counts it (`controller.tokens.method`): the figures hold
gpt-4.1-mini's `o200k_base` count and, from the same prompts, the characters / 4 count,
and a model counted the second way takes the base's ratio of the two (and a note).

What a side plays comes from its agent kind (`controller.agents.registry.side_facts`:
backend, model, whether it bills, its settings) and what a model costs from the kind's
price (`side_price`); the estimate never parses a kind's arguments nor imports a harness.

A spec's `estimate` fields, when set, replace the measured figures. A model missing
from the price table has an unknown cost, shown as unknown and never as $0; a total with
an unknown part is a lower bound.

Wall time is the arm's games times one game's seconds (`game_seconds`: start-up and the
world's time per step, plus per step the calls of a decision, one after another, at
`estimate.call_latency_s` each), divided by the runner's workers. On the embedded world
the local runner plays on warm workers, so a game's start-up is a warm worker's set-up
between two games, and each worker's first game adds one cold start to the study.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from controller.agents.registry import KindFacts, side_facts, side_price
from controller.config import SideConfig
from controller.tokens import method
from controller.tournament.spec import Arm, ExperimentSpec, TokenEstimate

BASE_SETTING = "default (RQ1)"
"""The label of the measured RQ1 base in `token_figures.json`."""
FIGURE_MODEL = "gpt-4.1-mini"
"""The model whose token count is the figures' `text_in_per_decision`, and whose frame
size is used for a model the figures do not list."""


@lru_cache(maxsize=1)
def load_figures() -> dict[str, Any] | None:
    """The measured figures (`token_figures.json`), None when the file is missing."""
    f = resources.files("controller.tournament").joinpath("token_figures.json")
    if not f.is_file():
        return None
    data: dict[str, Any] = json.loads(f.read_text(encoding="utf-8"))
    return data


@dataclass(frozen=True)
class SideFigures:
    """One side's per-decision figures for an arm, with where they came from."""

    decisions_per_seat_step: float
    calls_per_decision: float
    text_in_per_decision: float
    images_per_decision: float
    tokens_out_per_decision: float
    cached_in_per_decision: float
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SideEstimate:
    """Estimated use of one side in one game."""

    backend: str
    tokens_in: float
    tokens_out: float
    cost_usd: float | None
    """None when the model's price is unknown."""
    decisions: float = 0.0
    calls_per_decision: float = 0.0
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArmEstimate:
    """Estimated use of one arm over all its games."""

    arm: str
    games: int
    tokens_in: float
    tokens_out: float
    cost_usd: float | None
    """None when a side's price is unknown."""
    unknown_prices: tuple[str, ...]
    known_cost_usd: float
    """The part of the cost whose prices are known."""
    decisions_per_game: float = 0.0
    game_seconds: float = 0.0
    """One game's estimated wall seconds."""
    notes: tuple[str, ...] = field(default_factory=tuple)


def _facts(side: SideConfig) -> KindFacts:
    return side_facts(side.agent, side.args)


def side_backend(side: SideConfig) -> str:
    """The backend a side's agents call (`scripted` for the control agent)."""
    return _facts(side).backend


def _full_spec(values: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """`values` over the kind's default settings (fields it does not have are dropped)."""
    return {**defaults, **{k: v for k, v in values.items() if k in defaults}}


def _numbers(side: dict[str, Any]) -> dict[str, float]:
    return {
        "decisions": float(side["decisions_per_seat_step"]),
        "calls": float(side["calls_per_decision"]),
        "text": float(side["text_in_per_decision"]),
        "images": float(side["images_per_decision"]),
        "out": float(side["tokens_out_per_decision"]),
        "cached": float(side["models"][FIGURE_MODEL]["cached_share"])
        * float(side["models"][FIGURE_MODEL]["tokens_in_per_decision"]),
    }


def _resolved(
    setting: dict[str, Any], role: str, base_spec: dict[str, Any], defaults: dict[str, Any]
) -> dict[str, Any]:
    """A measured setting's spec for a side: as recorded (`sides[role].spec`, figures
    written since profiles), else the base with the setting's change."""
    recorded = setting["sides"][role].get("spec")
    if isinstance(recorded, dict):
        return _full_spec(recorded, defaults)
    return {**base_spec, **_full_spec(setting.get("spec_change", {}), base_spec)}


def _differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [k for k in a if k in b and a[k] != b[k]]


def measured_side(
    role: str, spec: dict[str, Any], figures: dict[str, Any], defaults: dict[str, Any]
) -> SideFigures:
    """A side's figures for its spec, composed from the measured settings.

    Args:
        role: `crewmate` or `impostor`.
        spec: The side's settings (its kind's `axes`; any fields, the rest take their
            defaults).
        figures: The contents of `token_figures.json`.
        defaults: The kind's default settings (the `axes` of its default args).

    Returns:
        The composed figures, with a note for each field no measured setting covers.
    """
    settings = {k: v for k, v in figures["settings"].items() if role in v.get("sides", {})}
    base_key = "crew" if role == "crewmate" else "impostor"
    base_spec = _full_spec(figures["rq1_base"][base_key], defaults)
    base_spec = _resolved(settings[BASE_SETTING], role, base_spec, defaults)
    want = _full_spec(spec, defaults)
    base = _numbers(settings[BASE_SETTING]["sides"][role])
    # Start from the base, or from a measured setting that changes many fields at once
    # (another profile) when it is nearer the side's spec: it counts as a whole.
    resolved = {label: _resolved(s, role, base_spec, defaults) for label, s in settings.items()}
    starts = [
        label
        for label in resolved
        if label == BASE_SETTING or len(_differing(resolved[label], base_spec)) > 1
    ]
    start = min(
        starts, key=lambda label: (len(_differing(want, resolved[label])), label != BASE_SETTING)
    )
    start_spec = resolved[start]
    est = _numbers(settings[start]["sides"][role])
    notes: list[str] = []
    if start != BASE_SETTING:
        notes.append(f"{role}: from the measured setting {start}")
    for name in _differing(want, start_spec):
        value = want[name]
        match = next(
            (
                s
                for label, s in settings.items()
                if s.get("spec_change") == {name: value}
                # a setting that changes more than its own field (a profile) is a start,
                # never a ratio: its fields count one by one
                and _differing(resolved[label], base_spec) == [name]
            ),
            None,
        )
        if match is None:
            notes.append(f"{role} {name}={value}: not measured, counted as {start}")
            continue
        setting = _numbers(match["sides"][role])
        for key in ("decisions", "calls", "text", "images", "out"):
            if base[key] > 0:
                est[key] *= setting[key] / base[key]
        est["cached"] += setting["cached"] - base["cached"]
    return SideFigures(
        decisions_per_seat_step=est["decisions"],
        calls_per_decision=est["calls"],
        text_in_per_decision=est["text"],
        images_per_decision=est["images"],
        tokens_out_per_decision=est["out"],
        cached_in_per_decision=max(0.0, est["cached"]),
        notes=tuple(notes),
    )


def _from_spec(est: TokenEstimate, seats: int, n_seats: int, steps: int) -> SideFigures | None:
    """The spec's own `estimate` fields, when it sets the ones a side needs."""
    if est.decisions_per_game is None or est.tokens_in_per_decision is None:
        return None
    return SideFigures(
        decisions_per_seat_step=est.decisions_per_game / max(1, n_seats) / max(1, steps),
        calls_per_decision=1.0,
        text_in_per_decision=est.tokens_in_per_decision,
        images_per_decision=0.0,
        tokens_out_per_decision=est.tokens_out_per_decision or 0.0,
        cached_in_per_decision=est.tokens_in_per_decision * (est.cached_share or 0.0),
        notes=("from the spec's `estimate` fields",),
    )


def side_estimate(
    side: SideConfig,
    seats: int,
    est: TokenEstimate,
    n_seats: int,
    *,
    role: str = "crewmate",
    steps: int = 200,
    figures: dict[str, Any] | None = None,
) -> SideEstimate:
    """Estimated tokens and cost of one side's seats in one game.

    Args:
        side: The side's config.
        seats: The side's seats.
        est: The spec's `estimate` (its set fields replace the measured figures).
        n_seats: All seats of the game.
        role: The side's role.
        steps: The game's step budget.
        figures: The measured figures (default: `token_figures.json`).
    """
    facts = _facts(side)
    backend = facts.backend
    if not facts.billed:  # the scripted control agent, the offline fake
        return SideEstimate(backend, 0.0, 0.0, 0.0)
    figures = figures if figures is not None else load_figures()
    f = _from_spec(est, seats, n_seats, steps)
    measured = f is None
    if f is None:
        if figures is None:
            raise FileNotFoundError(
                "controller/tournament/token_figures.json is missing: run "
                "`python -m benchmarks.aria_tokens --preset paper`, or set the spec's "
                "`estimate` fields"
            )
        # The kind's defaults fill in the settings the figures' base leaves out.
        defaults = dict(side_facts(side.agent, {}).axes) if facts.axes else {}
        f = measured_side(role, dict(facts.axes), figures, defaults)
    model = facts.model or backend
    notes = list(f.notes)
    text = f.text_in_per_decision
    if measured and figures is not None:
        # the figures' text is counted with FIGURE_MODEL's vocabulary; a model counted
        # another way takes the base's ratio of the two counts of the same prompts
        counted = method(model)
        base = figures["settings"][BASE_SETTING]["sides"][role]
        by_method = base.get("text_in_per_decision_by_method", {})
        ours = by_method.get(method(FIGURE_MODEL))
        if counted in by_method and ours:
            text *= by_method[counted] / ours
        if counted == "characters / 4":
            notes.append(f"{model}: text counted as characters / 4 (no vocabulary ships for it)")
    image_tokens = figures.get("image_tokens", {}) if figures else {}
    if model not in image_tokens and f.images_per_decision:
        notes.append(f"{model}: frames counted at {FIGURE_MODEL}'s size")
    frame = float(image_tokens.get(model, image_tokens.get(FIGURE_MODEL, 0)))
    images = 0.0 if facts.text_only else f.images_per_decision
    decisions = f.decisions_per_seat_step * seats * steps
    per_decision = text + images * frame
    tin = decisions * per_decision
    tout = decisions * f.tokens_out_per_decision
    price = side_price(side.agent, side.args)
    cost: float | None = None
    if price is not None:
        cached = min(tin, decisions * f.cached_in_per_decision)
        cost = price.cost(uncached_in=round(tin - cached), cached_in=round(cached), out=round(tout))
    return SideEstimate(backend, tin, tout, cost, decisions, f.calls_per_decision, tuple(notes))


def arm_estimate(
    arm: Arm,
    games: int,
    est: TokenEstimate,
    figures: dict[str, Any] | None = None,
    world: str = "minecraft",
    warm: bool = True,
) -> ArmEstimate:
    """Estimated tokens, cost and wall time of `games` games of one arm on `world`
    (`warm`: played by warm workers, see `game_seconds`)."""
    cfg = arm.config
    rules = cfg.rules
    steps = rules.max_steps
    crew_seats = rules.n_players - rules.n_impostors
    sides = [
        side_estimate(
            cfg.crew,
            crew_seats,
            est,
            rules.n_players,
            role="crewmate",
            steps=steps,
            figures=figures,
        ),
        side_estimate(
            cfg.impostor,
            rules.n_impostors,
            est,
            rules.n_players,
            role="impostor",
            steps=steps,
            figures=figures,
        ),
    ]
    unknown = tuple(sorted({s.backend for s in sides if s.cost_usd is None}))
    known = sum(s.cost_usd or 0.0 for s in sides) * games
    chain = max(s.calls_per_decision for s in sides)
    seconds = game_seconds(world, steps, warm) + steps * chain * est.call_latency_s
    notes = tuple(dict.fromkeys(n for s in sides for n in s.notes))
    return ArmEstimate(
        arm=arm.name,
        games=games,
        tokens_in=sum(s.tokens_in for s in sides) * games,
        tokens_out=sum(s.tokens_out for s in sides) * games,
        cost_usd=None if unknown else known,
        unknown_prices=unknown,
        known_cost_usd=known,
        decisions_per_game=sum(s.decisions for s in sides),
        game_seconds=seconds,
        notes=notes,
    )


def dry_run_lines(
    spec: ExperimentSpec, arms: list[Arm], games_per_arm: int, warm: bool = True
) -> list[str]:
    """The dry-run's estimate table: per arm its games, decisions per game, tokens, cost and
    wall time, then the study's totals (wall time at the runner's worker count; `warm`:
    the local runner's warm workers, each of whose first game starts cold)."""
    est = spec.estimate
    figures = load_figures()
    estimates = [arm_estimate(a, games_per_arm, est, figures, spec.world, warm) for a in arms]
    measured = est.decisions_per_game is None or est.tokens_in_per_decision is None
    source = (
        "measured figures per side and ARIA setting (controller/tournament/token_figures.json, "
        f"fake-world paper games, seeds {figures.get('seeds') if figures else '?'}; text "
        "tokens counted with each model's vocabulary where one ships (o200k_base for "
        "OpenAI's), else characters / 4; frames at each model's size)"
        if measured
        else "the spec's `estimate` fields"
    )
    lines = [f"estimate from {source}; model calls at {est.call_latency_s:g} s each"]
    w = max([len(a.name) for a in arms] + [10])
    lines.append(
        f"{'arm':<{w}} {'games':>6} {'decisions/game':>14} {'tokens in':>13} "
        f"{'tokens out':>12} {'cost':>10}  wall time"
    )
    total_in = total_out = known = seconds = 0.0
    unknown: set[str] = set()
    notes: dict[str, None] = {}
    for arm, e in zip(arms, estimates, strict=True):
        total_in += e.tokens_in
        total_out += e.tokens_out
        known += e.known_cost_usd
        seconds += e.game_seconds * e.games
        unknown.update(e.unknown_prices)
        notes.update(dict.fromkeys(e.notes))
        cost = format_cost(e.cost_usd, e.known_cost_usd)
        if e.unknown_prices:
            cost += f" (no price for {', '.join(e.unknown_prices)})"
        lines.append(
            f"{arm.name:<{w}} {e.games:>6} {e.decisions_per_game:>14,.0f} "
            f"{e.tokens_in:>13,.0f} {e.tokens_out:>12,.0f} {cost:>10}  "
            f"{format_duration(e.game_seconds)} a game"
        )
    total = format_cost(None if unknown else known, known)
    games = len(arms) * games_per_arm
    workers = spec.runner.workers
    seconds += cold_starts_extra(spec.world, min(workers, games), warm)
    lines.append(
        f"{'total':<{w}} {games:>6} {'':>14} {total_in:>13,.0f} {total_out:>12,.0f} "
        f"{total:>10}  {format_duration(seconds / workers)} at {workers} worker(s)"
    )
    if games:
        per_game = format_cost(None if unknown else known / games, known / games)
        lines.append(f"per game: {per_game}, {format_duration(seconds / games)}")
    if unknown:
        lines.append(
            "unknown prices: "
            + ", ".join(sorted(unknown))
            + " (add them to the sides' settings.prices to price them)"
        )
    lines += [f"note: {n}" for n in notes]
    return lines


def format_cost(cost: float | None, known: float) -> str:
    """`$1.23`, or `unknown` (with the known part when there is one)."""
    if cost is not None:
        return f"${cost:,.2f}"
    return f"unknown (>= ${known:,.2f} priced)" if known > 0 else "unknown"


def format_duration(seconds: float) -> str:
    """`3 h 20 min`, `12 min`, `40 s`."""
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


# A game's wall time before any has been measured: process start-up and set-up, plus
# each step of the budget. The embedded server at its default simulation speed (`max`),
# measured on a busy 2-core machine (load average 4-7; benchmarks/sim_speed.py, scripted
# agents, frames on): 14-25 s from process start to the first step (the renderers'
# set-up is most of it), then 0.7 s a step for a whole `quick` game (25 steps, meetings
# included) and 1.6 s a step for `paper` steps (600 ticks each; 361 game ticks per wall
# second over free roam). At `server.speed: 1` (real time) the same games took 8.3 s and
# 32 s a step. A scripted fake-world game, `mineamongus play --world fake`, took 3.7-3.9 s
# at 25-30 steps and 4.7-4.9 s for a whole `paper` game of 31-33 steps: interpreter
# start-up plus about 0.04 s a step. The dry-run and the progress display (until the
# first game of the study has ended) both use `arm_estimate`, which adds the model calls.
_START_S = {"minecraft": 20.0, "fake": 3.5}
_STEP_S = {"minecraft": 1.5, "fake": 0.04}
# A warm worker's set-up between two games on the embedded world (the reset, the check
# and the next game's set-up, Python already started): 0.86-1.83 s in two runs of
# benchmarks/tournament.py (the smoke study, 2 workers, frames off, the 2-core machine
# at load average 6-7; docs/tournament.md, "Benchmark").
_WARM_START_S = {"minecraft": 1.0}


def game_seconds(world: str, max_steps: int, warm: bool = True) -> float:
    """A prior estimate of one game's wall seconds, from its world and step budget.

    With `warm` (the local runner's warm workers, on a world that has them) the start-up
    is a warm worker's set-up between two games; `cold_starts_extra` adds each worker's
    first, cold, start to a study.
    """
    start = _WARM_START_S.get(world) if warm else None
    return (start if start is not None else _START_S.get(world, 30.0)) + _STEP_S.get(
        world, 9.0
    ) * max_steps


def cold_starts_extra(world: str, workers: int, warm: bool = True) -> float:
    """Seconds a study's warm workers spend starting cold beyond `game_seconds`' warm
    start-up (one cold start per worker); 0 when games start cold anyway."""
    if not warm or world not in _WARM_START_S:
        return 0.0
    return max(0, workers) * (_START_S.get(world, 30.0) - _WARM_START_S[world])
