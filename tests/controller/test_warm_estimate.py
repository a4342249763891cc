"""Estimates with warm workers: a game's start-up is a warm worker's set-up between two
games, and a study adds one cold start per worker."""

from __future__ import annotations

from pathlib import Path

import yaml

from controller.tournament.estimate import (
    _START_S,
    _WARM_START_S,
    cold_starts_extra,
    dry_run_lines,
    game_seconds,
)
from controller.tournament.spec import expand_arms, load_spec


def test_a_warm_game_starts_in_the_measured_set_up_time() -> None:
    cold = game_seconds("minecraft", 12, warm=False)
    warm = game_seconds("minecraft", 12)
    assert cold - warm == _START_S["minecraft"] - _WARM_START_S["minecraft"] > 10
    assert _WARM_START_S["minecraft"] <= 3.0  # the bound on a warm set-up
    # the fake world has no warm workers: the same either way
    assert game_seconds("fake", 12) == game_seconds("fake", 12, warm=False)
    assert cold_starts_extra("fake", 2) == 0.0 and cold_starts_extra("minecraft", 2, False) == 0
    assert cold_starts_extra("minecraft", 2) == 2 * (cold - warm)


def test_the_dry_run_counts_each_workers_first_cold_start(tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(
        yaml.safe_dump(
            {
                "name": "s",
                "seeds": list(range(10)),
                "base": {"frames": "off", "rules": {"max_steps": 10}},
                "arms": [{"name": "a", "overrides": {}}],
                "runner": {"workers": 2},
            }
        )
    )
    spec = load_spec(spec_file)
    arms = expand_arms(spec)

    def total(warm: bool) -> str:
        lines = dry_run_lines(spec, arms, 10, warm=warm)
        return next(line for line in lines if line.startswith("per game"))

    # 10 games: warm 10 x (1 + 15) + 2 x 19 = 198 s -> 20 s a game; cold 10 x 35 -> 35 s
    assert total(True).endswith(" 20 s") and total(False).endswith(" 35 s")
