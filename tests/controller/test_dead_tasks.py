"""Tasks of the dead: a dead crewmate's unfinished tasks drop out of the `tasks_done`
ending (ghosts leave play here and cannot finish them); engine and log audit agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.checks import log_violations
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Event, GameEnd, GameStart, Kill, TaskDone, read_events
from controller.logcheck import derive_ending
from world.spec import load_map


def _game_with_unfinished_victim(root: Path) -> tuple[list[Event], Kill]:
    for seed in range(1, 60):
        out = root / str(seed)
        config = resolve_config("quick", overrides={"seed": seed, "frames": "off"})
        play_game(config, load_map("skeld"), "fake", out)
        events = read_events(out / "events.jsonl")
        end = next(e for e in events if isinstance(e, GameEnd))
        if end.ending != "tasks_done":
            continue
        start = next(e for e in events if isinstance(e, GameStart))
        for kill in (e for e in events if isinstance(e, Kill)):
            done = {
                e.station
                for e in events
                if isinstance(e, TaskDone) and e.agent == kill.victim and not e.fake
            }
            if set(start.tasks[kill.victim]) - done:
                return events, kill
    pytest.fail("no seed ends tasks_done with a victim's tasks unfinished")


def test_a_dead_crewmates_unfinished_tasks_do_not_hold_back_tasks_done(tmp_path: Path) -> None:
    events, kill = _game_with_unfinished_victim(tmp_path)
    start = next(e for e in events if isinstance(e, GameStart))
    derived = derive_ending(start, events)
    assert derived is not None and (derived.winner, derived.ending) == ("crew", "tasks_done")
    assert log_violations(events) == []
    # the same log without the kill: the victim is alive with tasks pending, so the crew
    # has not finished, and the audit refuses the logged ending
    alive = [e for e in events if e is not kill]
    derived = derive_ending(start, alive)
    assert derived is None or derived.ending != "tasks_done"
    assert any("the game ends crew/tasks_done" in v for v in log_violations(alive))
