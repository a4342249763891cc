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

REAL_RUN_SEED = 14
REAL_RUN_RULES = {"tasks_per_crewmate": 5, "max_steps": 20}
"""Seed 14 with five tasks each: on the fake world this game has a kill, a report
meeting at step 4, an emergency-or-report second meeting and an ejection within 20
steps, so the record has meetings, speech and votes for the audits to read. The real
server's timing differs from the fake world's, so tests that need a meeting check for
one."""


@pytest.fixture(scope="session")
def real_scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of one finished quick scripted game on the real embedded server
    (frames on, seed 14, five tasks each, at most 20 steps): `events.jsonl`,
    `summary.json`, `frames/`."""
    out = tmp_path_factory.mktemp("real-scripted-run")
    config = resolve_config("quick", overrides={"seed": REAL_RUN_SEED, "rules": REAL_RUN_RULES})
    result = play_game(config, load_map(config.map), "minecraft", out)
    assert result.status == "ok", result.reason
    return out
