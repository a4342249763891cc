"""Token and cost estimates of a study before it runs (`tournament SPEC --dry-run`).

The estimate is the spec's `estimate` (decisions per game, tokens per decision) times
the price table of each side's backend settings. Decisions are split between the
sides by seat count. A model missing from the price table has an unknown cost,
shown as unknown and never as $0; a total with an unknown part is a lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.config import SideConfig
from controller.tournament.spec import Arm, TokenEstimate

# Backends that make no billed calls: the scripted control agent and the offline fake.
_FREE_PREFIXES = ("scripted", "fake")


@dataclass(frozen=True)
class SideEstimate:
    """Estimated use of one side in one game."""

    backend: str
    tokens_in: float
    tokens_out: float
    cost_usd: float | None
    """None when the model's price is unknown."""


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


def _model_of(backend: str) -> str:
    return backend.split(":", 1)[1] if ":" in backend else backend


def side_backend(side: SideConfig) -> str:
    """The backend a side's agents call (`scripted` for the control agent)."""
    if side.agent == "scripted":
        return "scripted"
    return str(side.args.get("backend", side.agent))


def _price(side: SideConfig, model: str) -> Any:
    # The price table belongs to the model harness's settings; imported here only, so
    # that the controller itself never depends on the harness.
    from harness_aria.backends.settings import BackendSettings, price_for

    settings = BackendSettings.model_validate(side.args.get("settings") or {})
    return price_for(model, settings.prices)


def side_estimate(side: SideConfig, seats: int, est: TokenEstimate, n_seats: int) -> SideEstimate:
    """Estimated tokens and cost of one side's seats in one game."""
    backend = side_backend(side)
    if backend.split(":", 1)[0] in _FREE_PREFIXES:
        return SideEstimate(backend, 0.0, 0.0, 0.0)
    decisions = est.decisions_per_game * seats / n_seats
    tin = decisions * est.tokens_in_per_decision
    tout = decisions * est.tokens_out_per_decision
    price = _price(side, _model_of(backend))
    if price is None:
        return SideEstimate(backend, tin, tout, None)
    cached = tin * est.cached_share
    cost = price.cost(uncached_in=round(tin - cached), cached_in=round(cached), out=round(tout))
    return SideEstimate(backend, tin, tout, cost)


def arm_estimate(arm: Arm, games: int, est: TokenEstimate) -> ArmEstimate:
    """Estimated tokens and cost of `games` games of one arm."""
    rules = arm.config.rules
    sides = [
        side_estimate(arm.config.crew, rules.n_players - rules.n_impostors, est, rules.n_players),
        side_estimate(arm.config.impostor, rules.n_impostors, est, rules.n_players),
    ]
    unknown = tuple(sorted({s.backend for s in sides if s.cost_usd is None}))
    known = sum(s.cost_usd or 0.0 for s in sides) * games
    return ArmEstimate(
        arm=arm.name,
        games=games,
        tokens_in=sum(s.tokens_in for s in sides) * games,
        tokens_out=sum(s.tokens_out for s in sides) * games,
        cost_usd=None if unknown else known,
        unknown_prices=unknown,
        known_cost_usd=known,
    )


def format_cost(cost: float | None, known: float) -> str:
    """`$1.23`, or `unknown` (with the known part when there is one)."""
    if cost is not None:
        return f"${cost:,.2f}"
    return f"unknown (>= ${known:,.2f} priced)" if known > 0 else "unknown"


# A game's wall time before any has been measured: process start-up and set-up, plus
# each step of the budget. Measured on a busy 2-core machine (benchmarks/tournament.py:
# about 30 s from process start to the first step and 8-9 s per step on the embedded
# server; a fake-world game is mostly interpreter start-up). Only the progress display
# uses it, until the first game of the study has ended.
_START_S = {"minecraft": 30.0, "fake": 12.0}
_STEP_S = {"minecraft": 9.0, "fake": 0.2}


def game_seconds(world: str, max_steps: int) -> float:
    """A prior estimate of one game's wall seconds, from its world and step budget."""
    return _START_S.get(world, 30.0) + _STEP_S.get(world, 9.0) * max_steps
