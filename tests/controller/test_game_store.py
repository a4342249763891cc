"""The run's store of fake-world games (`testkit.games`): each configuration is played
once, whichever process asks, and the game it hands out is the game `play` writes."""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from controller.checks import rule_events
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Event, GameStart, read_events
from testkit.games import GameStore, first_seed
from world.spec import load_map

SHORT: dict[str, Any] = {"frames": "off", "rules": {"max_steps": 3}}
"""A short quick game (three steps, frames off)."""


def test_a_configuration_is_played_once_and_shared_by_every_store_on_the_root(
    tmp_path: Path,
) -> None:
    one, other = GameStore(tmp_path / "store"), GameStore(tmp_path / "store")
    first = one.game(seed=5, **SHORT)
    assert one.played == [first]
    assert one.game(seed=5, **SHORT) == first and one.played == [first]
    # another process (a second test worker) on the same root finds it ready
    assert other.game(**SHORT, seed=5) == first and other.played == []
    assert not list((tmp_path / "store").glob("*.partial"))


def _played_here(root: Path) -> int:
    """In a process of its own: ask a store on `root` for the short seed-5 game; how
    many games this process played."""
    store = GameStore(root)
    store.game(seed=5, **SHORT)
    return len(store.played)


def test_two_processes_asking_at_once_play_the_game_once(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with ProcessPoolExecutor(max_workers=2) as pool:
        played = list(pool.map(_played_here, [root, root]))
    assert sorted(played) == [0, 1]
    assert len([p for p in root.iterdir() if p.is_dir()]) == 1  # one game, no leftovers


def test_other_configurations_are_other_games(tmp_path: Path) -> None:
    store = GameStore(tmp_path / "store")
    a = store.game(seed=5, **SHORT)
    b = store.game(seed=6, **SHORT)
    c = store.game("paper", seed=5, **SHORT)
    assert len({a, b, c}) == 3 and store.played == [a, b, c]
    assert json.loads((c / "summary.json").read_text())["config"]["preset"] == "paper"
    assert rule_events(store.events(seed=5, **SHORT)) != rule_events(store.events(seed=6, **SHORT))


def test_the_stored_game_is_the_game_play_writes(tmp_path: Path) -> None:
    store = GameStore(tmp_path / "store")
    stored = store.events(seed=5, **SHORT)
    config = resolve_config("quick", overrides={"seed": 5, **SHORT})
    play_game(config, load_map(config.map), "fake", tmp_path / "direct")
    assert rule_events(stored) == rule_events(read_events(tmp_path / "direct" / "events.jsonl"))


def test_a_copy_is_private_and_first_seed_names_the_first_that_holds(tmp_path: Path) -> None:
    store = GameStore(tmp_path / "store")
    copy = store.copy_to(tmp_path / "mine", seed=5, **SHORT)
    (copy / "note.txt").write_text("written by a test")
    assert not (store.game(seed=5, **SHORT) / "note.txt").exists()

    def from_six(events: list[Event]) -> bool:
        start = events[0]
        return isinstance(start, GameStart) and start.seed >= 6

    seeds = range(5, 8)
    assert first_seed(store, from_six, seeds, **SHORT) == 6
    assert first_seed(store, lambda events: False, seeds, **SHORT) is None
