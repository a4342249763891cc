"""Shared real-server fixtures: one scripted game on the embedded server per test run.

Tests that only read a finished game's record (annotation, audits, the viewer) use
`real_scripted_run` instead of playing their own game, so CI plays it once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.agents.recording import RecordingAgent
from controller.cli import play_game
from controller.commands.play import make_world
from controller.config import resolve_config
from controller.game import GameResult
from controller.players import agent_factory
from testkit.probe import ProbeGame
from world.geometry import ShipGeometry
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
def real_scripted_game(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, ProbeGame, GameResult]:
    """One finished quick scripted game on the real embedded server (frames on, seed 3,
    the rules above), played as `play_game` plays it but with each seat's observations
    kept (`RecordingAgent`) and the engine's live state probed at every step:
    (folder, game, result). Every test that needs a real scripted game reads this one,
    so CI plays it once."""
    out = tmp_path_factory.mktemp("real-scripted-run")
    config = resolve_config("quick", overrides={"seed": REAL_RUN_SEED, "rules": REAL_RUN_RULES})
    spec = load_map(config.map)
    geometry = ShipGeometry(spec)
    make = agent_factory(config, geometry, out)
    world = make_world("minecraft", config, geometry, out)
    try:
        game = ProbeGame(config, spec, world, lambda a, role: RecordingAgent(make(a, role)), out)
        result = game.run()
    finally:
        world.close()
    assert result.status == "ok", result.reason
    return out, game, result


@pytest.fixture(scope="session")
def real_scripted_run(real_scripted_game: tuple[Path, ProbeGame, GameResult]) -> Path:
    """The folder of the shared real scripted game: `events.jsonl`, `summary.json`,
    `frames/`."""
    return real_scripted_game[0]


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
