"""Tasks of the dead: a dead crewmate's unfinished tasks drop out of the `tasks_done`
ending (ghosts leave play here and cannot finish them); engine and log audit agree."""

from __future__ import annotations

import pytest

from controller.checks import log_violations
from controller.events import Event, GameEnd, GameStart, Kill, TaskDone
from controller.logcheck import derive_ending
from testkit.games import GameStore

SEED = 69
"""A quick fake-world game (frames off, one of the run's shared games) that ends
`tasks_done` though a crewmate was killed with tasks unfinished."""


def _game_with_unfinished_victim(store: GameStore) -> tuple[list[Event], Kill]:
    events = store.events(seed=SEED, frames="off")
    end = next(e for e in events if isinstance(e, GameEnd))
    start = next(e for e in events if isinstance(e, GameStart))
    assert end.ending == "tasks_done", f"seed {SEED} ends {end.ending} now; pin another"
    for kill in (e for e in events if isinstance(e, Kill)):
        done = {
            e.station
            for e in events
            if isinstance(e, TaskDone) and e.agent == kill.victim and not e.fake
        }
        if set(start.tasks[kill.victim]) - done:
            return events, kill
    pytest.fail(f"no victim of seed {SEED} leaves tasks unfinished now; pin another seed")


def test_a_dead_crewmates_unfinished_tasks_do_not_hold_back_tasks_done(
    fake_games: GameStore,
) -> None:
    events, kill = _game_with_unfinished_victim(fake_games)
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
