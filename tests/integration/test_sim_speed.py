"""The embedded world faster than real time (`server.speed`), on the real server.

A quick scripted game at `max` keeps a record the referee (`controller.logcheck`)
finds nothing wrong with, and plays its free roam far above real time (20 ticks per
wall second). The precise figures are `python -m benchmarks.sim_speed`'s; the bound
here is loose, for slower and busier machines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.checks import log_violations
from controller.commands.play import play_game
from controller.config import EMBEDDED_SPEED, ConfigError, ServerConfig, resolve_config
from controller.events import GameStart, read_events
from controller.logcheck import free_roam_pace
from world.spec import load_map

MIN_TICKS_PER_S = 40
"""Twice real time: far below what an idle 2-core machine plays at `max`."""


@pytest.mark.integration
def test_a_quick_game_at_max_keeps_a_clean_record_far_above_real_time(tmp_path: Path) -> None:
    config = resolve_config("quick", overrides={"seed": 1, "server": {"speed": "max"}})
    result = play_game(config, load_map(config.map), "minecraft", tmp_path)
    assert result.status == "ok", result.reason
    events = read_events(tmp_path / "events.jsonl")
    start = events[0]
    assert isinstance(start, GameStart) and start.config["server"]["speed"] == "max"
    assert log_violations(events) == []
    pace = free_roam_pace(events)
    assert pace.steps >= 3, pace
    assert pace.ticks_per_s > MIN_TICKS_PER_S, pace
    print(f"free roam: {pace.ticks} ticks in {pace.wall_s:.1f} s = {pace.ticks_per_s:.0f}/s")


def test_the_speed_follows_the_server_and_an_external_one_plays_at_real_time() -> None:
    assert ServerConfig().speed == EMBEDDED_SPEED == "max"
    assert ServerConfig(external="127.0.0.1:25565").speed == 1
    assert ServerConfig(speed=4).speed == 4
    assert resolve_config("quick", overrides={"server": {"speed": 1}}).server.speed == 1
    with pytest.raises(ConfigError, match="needs the embedded server"):
        resolve_config("quick", overrides={"server": {"external": "h:1", "speed": "max"}})
    for bad in (0, 1001, "fast", 1.5):
        with pytest.raises(ConfigError, match="speed"):
            resolve_config("quick", overrides={"server": {"speed": bad}})
