"""Shared real-server fixtures: one scripted game on the embedded server per test run.

Tests that only read a finished game's record (annotation, audits, the viewer) use
`real_scripted_run` instead of playing their own game, so CI plays it once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import play_game
from controller.config import resolve_config
from world.spec import load_map

REAL_RUN_SEED = 3
REAL_RUN_RULES = {"task_ticks": 120, "kill_cooldown_ticks": 100, "max_steps": 30}
"""Longer tasks and a shorter kill cooldown than the quick preset, so the scripted
impostors get time to kill and bodies get found: the record then has kills, meetings,
speech and votes for the audits to read. The real server's timing is not replayable,
so tests that need a meeting check for one."""


@pytest.fixture(scope="session")
def real_scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of one finished quick scripted game on the real embedded server
    (frames on, seed 3, longer tasks, at most 30 steps): `events.jsonl`,
    `summary.json`, `frames/`."""
    out = tmp_path_factory.mktemp("real-scripted-run")
    config = resolve_config("quick", overrides={"seed": REAL_RUN_SEED, "rules": REAL_RUN_RULES})
    result = play_game(config, load_map(config.map), "minecraft", out)
    assert result.status == "ok", result.reason
    return out
