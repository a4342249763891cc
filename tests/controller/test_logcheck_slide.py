"""`log_violations` checks that every batch starts where the record left its players.

A bot still walking when its program met the step's deadline used to slide on after
the stop: the step's closing `positions` snapshot and the next batch's first pose
sample, at the same tick, then disagreed (by up to 0.85 blocks on the real server).
The logs here are fake-world games (whose batches start exactly where the last
snapshot left everyone); the slide is planted into them.
"""

from __future__ import annotations

import pytest

from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Disconnect, Event, Positions, Trace, read_events
from controller.logcheck import BATCH_START_SLACK, log_violations
from world.spec import load_map


@pytest.fixture(scope="module")
def game(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    out = tmp_path_factory.mktemp("slide") / "game"
    config = resolve_config("quick", overrides={"seed": 3, "frames": "off"})
    play_game(config, load_map("skeld"), "fake", out)
    return read_events(out / "events.jsonl")


def _second_trace(log: list[Event]) -> int:
    """Index of a trace that follows a positions snapshot of its players (not the
    game's first batch), with a player sampled in both."""
    seen_snapshot = False
    traces = 0
    for i, ev in enumerate(log):
        if isinstance(ev, Positions):
            seen_snapshot = True
        elif isinstance(ev, Trace) and seen_snapshot:
            traces += 1
            if traces == 2 and ev.players:
                return i
    raise AssertionError("the game has fewer than two batches")


def _slid(log: list[Event], index: int, dx: float, first: bool = True) -> tuple[list[Event], str]:
    """The log with one player's first (or second) sample of trace `index` moved `dx`
    blocks east."""
    trace = log[index]
    assert isinstance(trace, Trace)
    agent = sorted(trace.players)[0]
    poses = list(trace.players[agent])
    k = 0 if first else 1
    x, y, z, yaw = poses[k]
    poses[k] = (round(x + dx, 2), y, z, yaw)
    planted = trace.model_copy(update={"players": {**trace.players, agent: poses}})
    return [*log[:index], planted, *log[index + 1 :]], agent


def _starts(violations: list[str]) -> list[str]:
    return [v for v in violations if "starts the batch" in v]


def test_a_fake_world_game_starts_every_batch_where_it_left_off(game: list[Event]) -> None:
    assert sum(isinstance(ev, Trace) for ev in game) >= 3
    assert log_violations(game) == []


def test_a_planted_slide_is_caught(game: list[Event]) -> None:
    index = _second_trace(game)
    slid, agent = _slid(game, index, 0.85)
    found = _starts(log_violations(slid))
    assert len(found) == 1, found
    trace = slid[index]
    assert isinstance(trace, Trace)
    assert found[0].startswith(f"step {trace.step}: {agent} starts the batch at tick "), found
    assert "0.85 blocks from where the positions snapshot" in found[0], found


def test_a_slide_within_the_logged_rounding_is_no_violation(game: list[Event]) -> None:
    index = _second_trace(game)
    slid, _ = _slid(game, index, BATCH_START_SLACK * 0.9)
    assert _starts(log_violations(slid)) == []
    slid, _ = _slid(game, index, BATCH_START_SLACK * 3)
    assert len(_starts(log_violations(slid))) == 1


def test_only_the_first_sample_of_a_batch_is_held_to_the_snapshot(game: list[Event]) -> None:
    """A player walks within a batch: only where it starts is checked here."""
    index = _second_trace(game)
    slid, _ = _slid(game, index, 0.2, first=False)
    assert _starts(log_violations(slid)) == []


def test_a_reconnected_player_is_not_held_to_the_old_snapshot(game: list[Event]) -> None:
    index = _second_trace(game)
    slid, agent = _slid(game, index, 0.85)
    trace = slid[index]
    drop = Disconnect(agent=agent, reason="socket closed", step=trace.step, tick=trace.tick)
    assert _starts(log_violations([*slid[:index], drop, *slid[index:]])) == []
