"""Shared real-server fixtures: one scripted game on the embedded server per test run.

Tests that only read a finished game's record (annotation, audits, the viewer) use
`real_scripted_run` instead of playing their own game, so CI plays it once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import play_game
from controller.config import resolve_config
from world.spec import load_map

REAL_RUN_SEED = 3
REAL_RUN_RULES = {
    "task_ticks": 120,
    "kill_cooldown_ticks": 100,
    "tasks_per_crewmate": 12,
    "max_steps": 40,
}
"""Longer tasks, more of them and a shorter kill cooldown than the quick preset, so the
scripted impostors get time to kill and the crew time to find bodies: the record then
has kills, meetings, speech and votes for the audits to read (about 3 minutes of play).
The real server's timing is not replayable, so tests that need a meeting take
`real_meeting_run`, which plays further seeds when this game had none."""
MEETING_SEEDS = (4, 5, 6)
"""Seeds `real_meeting_run` plays, in turn, when the shared game had no meeting."""


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


def crew_spoke_in_a_meeting(run: Path) -> bool:
    """Whether a crewmate said something (not a pass) in a meeting of this game."""
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    roles = events[0]["roles"]
    return any(
        e["kind"] == "speech" and e.get("text") and roles.get(e["speaker"]) == "crewmate"
        for e in events
    )


@pytest.fixture(scope="session")
def real_meeting_run(real_scripted_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real-server scripted game (the shared game's rules) with a meeting in which
    crewmates spoke: the shared game when it has one, else the first of
    `MEETING_SEEDS` that does. Fails, never skips, when none has."""
    if crew_spoke_in_a_meeting(real_scripted_run):
        return real_scripted_run
    for seed in MEETING_SEEDS:
        out = tmp_path_factory.mktemp(f"real-meeting-seed{seed}")
        config = resolve_config("quick", overrides={"seed": seed, "rules": REAL_RUN_RULES})
        result = play_game(config, load_map(config.map), "minecraft", out)
        assert result.status == "ok", result.reason
        if crew_spoke_in_a_meeting(out):
            return out
    raise AssertionError(
        f"no real scripted game had a meeting with crew speech (seeds {REAL_RUN_SEED}, "
        f"{', '.join(map(str, MEETING_SEEDS))}); the crew should find bodies in 40 steps"
    )
