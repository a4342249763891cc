"""The record under the clock: the log audit of movement, sample gaps, freezes and marks,
and tasks lost at the first sample that shows their player away."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.agents.scripted import ScriptedAgent
from controller.checks import log_violations
from controller.config import GameConfig, resolve_config
from controller.events import (
    Event,
    MeetingStart,
    ProgramRun,
    TaskDone,
    TaskInterrupted,
    Trace,
    read_events,
)
from controller.game import Game
from controller.logcheck import record_figures
from controller.protocol import PlayerPose, PoseSample
from controller.worlds.fake import FakeWorld
from testkit.games import GameStore
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)


def config(seed: int, **rules: object) -> GameConfig:
    return resolve_config("quick", overrides={"seed": seed, "frames": "off", "rules": rules})


def play(cfg: GameConfig, out: Path, world: FakeWorld | None = None) -> list[Event]:
    agents = {a: ScriptedAgent(a, GEOMETRY, cfg.seed) for a in cfg.agent_ids()}
    Game(cfg, SPEC, world or FakeWorld(GEOMETRY), agents, out).run()
    return read_events(out / "events.jsonl")


SEED = 78
"""A quick fake-world game (frames off, one of the run's shared games) with meetings
called from free roam (for the freeze checks) and a program ended by the step timeout."""


@pytest.fixture(scope="module")
def game(fake_games: GameStore) -> list[Event]:
    """The `SEED` game."""
    events = fake_games.events(seed=SEED, frames="off")
    assert any(isinstance(e, MeetingStart) for e in events), f"seed {SEED} calls no meeting"
    return events


def _swap(events: list[Event], old: Event, new: Event) -> list[Event]:
    return [new if e is old else e for e in events]


def _moving_trace(events: list[Event]) -> tuple[Trace, str]:
    for e in events:
        if isinstance(e, Trace) and len(e.ticks) > 3:
            for agent, poses in e.players.items():
                if poses[1][:3] != poses[2][:3]:
                    return e, agent
    raise AssertionError("no trace with a moving player")


def test_a_faithful_record_is_clean(game: list[Event]) -> None:
    figures = record_figures(game)
    assert figures.moving_pairs > 0 and figures.marks
    assert figures.fast == [] and figures.largest_gap <= 10
    assert figures.largest_overshoot == 0 and figures.largest_mark_distance <= 0.3
    assert log_violations(game) == []


def test_a_player_faster_than_walking_is_caught(game: list[Event]) -> None:
    trace, agent = _moving_trace(game)
    poses = list(trace.players[agent])
    x, y, z, yaw = poses[2]
    poses[2] = (x + 6.0, y, z, yaw)  # 6 blocks more in one sample gap
    bad = trace.model_copy(update={"players": {**trace.players, agent: poses}})
    assert any(
        "faster than 0.4 blocks a tick" in v for v in log_violations(_swap(game, trace, bad))
    )


def test_a_walks_recentring_passes_and_a_jump_beyond_it_is_caught(game: list[Event]) -> None:
    """A walk's end on the real server may put a bot on its block's centre within a tick
    (0.76 blocks in 1 tick, seen in a real external-server game); a bigger one-tick jump
    is still the clock and the positions coming apart."""
    trace, agent = _moving_trace(game)
    ticks = list(trace.ticks)
    poses = list(trace.players[agent])
    x, y, z, yaw = poses[1]

    def with_next_tick(dx: float) -> list[Event]:
        # a sample one tick after sample 1, moved `dx` blocks (diagonally)
        ts = [*ticks[:2], ticks[1] + 1, *ticks[2:]]
        new = {
            a: [*p[:2], ((x + dx, y, z + dx, yaw) if a == agent else p[1]), *p[2:]]
            for a, p in trace.players.items()
        }
        if ticks[2] == ticks[1] + 1:
            raise AssertionError("no room for a sample between samples 1 and 2")
        bad = trace.model_copy(update={"ticks": ts, "players": new})
        return _swap(game, trace, bad)

    recentred = [v for v in log_violations(with_next_tick(0.54)) if "faster than" in v]
    assert recentred == []  # 0.76 blocks in one tick: a recentring
    jumped = [v for v in log_violations(with_next_tick(1.2)) if "faster than" in v]
    assert jumped and agent in jumped[0]  # 1.7 blocks in one tick: no walk does that


def test_a_sample_gap_over_the_interval_is_caught(game: list[Event]) -> None:
    trace, _ = _moving_trace(game)
    keep = [i for i in range(len(trace.ticks)) if i != 1]  # drop one sample
    bad = trace.model_copy(
        update={
            "ticks": [trace.ticks[i] for i in keep],
            "players": {a: [p[i] for i in keep] for a, p in trace.players.items()},
        }
    )
    violations = log_violations(_swap(game, trace, bad))
    assert any("pose samples" in v and "ticks apart" in v for v in violations)


def test_a_batch_running_past_its_meeting_call_is_caught(game: list[Event]) -> None:
    call = next(e for e in game if isinstance(e, MeetingStart))
    run = next(e for e in game if isinstance(e, ProgramRun) and e.step == call.step)
    late = run.model_copy(update={"end_tick": call.tick + 4})
    assert any("ran on 4 ticks past it" in v for v in log_violations(_swap(game, run, late)))


def test_a_step_cut_short_of_its_game_time_deadline_is_caught(game: list[Event]) -> None:
    # what a wall-time deadline did under CPU load on the real server: the program's
    # "step timeout" came 80 ticks early (320 of the 400 ticks step_timeout_ms gives)
    run = next(e for e in game if isinstance(e, ProgramRun) and e.status == "timeout")
    assert not any("timed out" in v for v in log_violations(game))
    short = run.model_copy(update={"end_tick": run.end_tick - 80})
    found = [v for v in log_violations(_swap(game, run, short)) if "timed out" in v]
    assert found and "timed out 320 ticks into the step" in found[0], found
    named = run.model_copy(update={"reason": "step timeout after 320 ticks during step 2 (goto)"})
    assert any("timed out 400 ticks" in v for v in log_violations(_swap(game, run, named)))


def test_a_mark_away_from_its_sample_is_caught(game: list[Event]) -> None:
    run = next(
        e
        for e in game
        if isinstance(e, ProgramRun) and any(m.get("kind") == "mark" for m in e.events)
    )
    events = [dict(m) for m in run.events]
    mark = next(m for m in events if m.get("kind") == "mark")
    mark["pos"] = [mark["pos"][0] + 1.0, mark["pos"][1], mark["pos"][2]]
    bad = run.model_copy(update={"events": events})
    violations = log_violations(_swap(game, run, bad))
    assert any("blocks from its pose sample at that tick" in v for v in violations)


class DriftWorld(FakeWorld):
    """A world whose samples once show one player a few blocks off its station in the
    middle of its first task (a bot that drifts away and back between two rule events)."""

    def __init__(self, agent: str) -> None:
        super().__init__(GEOMETRY)
        self.agent = agent
        self.drifted_at: int | None = None

    def _sample(self) -> PoseSample:
        sample = super()._sample()
        run = self._runs.get(self.agent)
        if run is None or self.drifted_at is not None:
            return sample
        started = [e.tick for e in run.events if e.kind == "mark" and "task_start" in str(e.tag)]
        if not started or self.tick < started[0] + 20:
            return sample
        pose = sample.players[self.agent]
        away = (pose.pos[0] + 3.0, pose.pos[1], pose.pos[2])
        self.drifted_at = self.tick
        players = {**sample.players, self.agent: PlayerPose(pos=away, yaw=pose.yaw)}
        return sample.model_copy(update={"players": players})


def test_a_task_is_lost_at_the_first_sample_away_from_its_station(tmp_path: Path) -> None:
    cfg = config(4, max_steps=3)
    roles = Game(
        cfg, SPEC, FakeWorld(GEOMETRY), lambda a, r: ScriptedAgent(a, GEOMETRY, 4), tmp_path / "r"
    )
    crewmate = next(a for a in cfg.agent_ids() if roles.engine.players[a].role == "crewmate")
    roles.log.close()
    world = DriftWorld(crewmate)
    events = play(cfg, tmp_path / "g", world)
    assert world.drifted_at is not None
    lost = [e for e in events if isinstance(e, TaskInterrupted) and e.agent == crewmate]
    assert lost and lost[0].tick == world.drifted_at and lost[0].reason == "left_station"
    # the completion mark came later in the same step: it is not credited
    first = lost[0]
    assert not any(
        isinstance(e, TaskDone)
        and e.agent == crewmate
        and e.station == first.station
        and e.step == first.step
        for e in events
    )
