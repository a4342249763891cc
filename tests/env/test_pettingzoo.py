"""PettingZoo's own conformance tests on the fake world, and the record's sameness:
a game played through the environment is logged exactly as one the loop plays itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

import mineamongus
from controller.agents.scripted import ScriptedAgent
from controller.checks import log_violations, rule_events
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Event, read_events
from controller.players import agent_factory
from mineamongus.environment import MineAmongUsEnv
from mineamongus.policies import AgentPolicy
from world.spec import load_map

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # PettingZoo's style hints


def test_parallel_api_test_passes() -> None:
    env = mineamongus.parallel_env(world="fake", frames="off", max_steps=30)
    try:
        parallel_api_test(env, num_cycles=40)
    finally:
        env.close()


def test_parallel_seed_test_passes() -> None:
    parallel_seed_test(lambda: mineamongus.parallel_env(world="fake", max_steps=30), num_cycles=10)


def test_aec_api_test_passes_with_frames() -> None:
    aec = mineamongus.env(world="fake", max_steps=20)
    try:
        api_test(aec, num_cycles=30)
    finally:
        aec.close()


def _decisions(events: list[Event]) -> list[tuple[Any, ...]]:
    return [
        (e.agent, e.step, e.module, e.program, e.vote, e.valid, e.error, e.error_kind, e.frame)
        for e in events
        if e.kind == "decision"
    ]


def _programs(events: list[Event]) -> list[tuple[Any, ...]]:
    return [
        (e.agent, e.step, e.status, e.reason, e.start_tick, e.end_tick, e.events)
        for e in events
        if e.kind == "program_run"
    ]


def _scripted_through_env(seed: int, out: Path) -> list[Event]:
    """A scripted game whose every decision goes through `env.step`."""
    env = MineAmongUsEnv({"seed": seed}, world="fake", out=out)
    try:
        env.reset(seed=seed)
        policies = {a: AgentPolicy(ScriptedAgent(a, env.geometry, seed)) for a in env.agents}
        while env.agents:
            env.step({a: policies[a].act(env, a) for a in env.acting})
        assert env.run_dir is not None
        return read_events(env.run_dir / "events.jsonl")
    finally:
        env.close()


@pytest.mark.parametrize("seed", [2, 7])
def test_scripted_policies_through_the_env_log_the_same_game(seed: int, tmp_path: Path) -> None:
    """Seed for seed, the loop seating scripted agents itself (`mineamongus play`) and
    the environment driven by the same agents as policies write the same rule events,
    decisions and program outcomes."""
    config = resolve_config("quick", overrides={"seed": seed})
    direct = play_game(config, load_map(config.map), "fake", tmp_path / "cli")
    assert direct.status == "ok"
    cli = read_events(tmp_path / "cli" / "events.jsonl")
    through = _scripted_through_env(seed, tmp_path / "env")
    assert rule_events(through) == rule_events(cli)
    assert _decisions(through) == _decisions(cli)
    assert _programs(through) == _programs(cli)
    assert log_violations(through) == []


@pytest.mark.parametrize("seed", [1, 4])
def test_play_writes_the_same_rule_events_as_the_cli(seed: int, tmp_path: Path) -> None:
    config = resolve_config("quick", overrides={"seed": seed})
    play_game(config, load_map(config.map), "fake", tmp_path / "cli")
    result = mineamongus.play({"seed": seed}, world="fake", out=tmp_path / "api")
    assert result.status == "ok"
    assert result.out_dir == tmp_path / "api"
    cli = rule_events(read_events(tmp_path / "cli" / "events.jsonl"))
    api = rule_events(read_events(tmp_path / "api" / "events.jsonl"))
    assert api == cli


def test_aria_policies_through_the_env_log_the_same_game(tmp_path: Path) -> None:
    """The same for ARIA on its offline backend: every model call's answer, program and
    ballot is the one the loop records when it seats ARIA itself."""
    seed = 3
    data = {
        "seed": seed,
        "crew": {"backend": "fake"},
        "impostor": {"backend": "fake"},
        "rules": {"max_steps": 40},
    }
    direct = mineamongus.play(data, world="fake", out=tmp_path / "direct")
    assert direct.status == "ok"
    env = MineAmongUsEnv(data, world="fake", out=tmp_path / "env")
    try:
        env.reset(seed=seed)
        assert env.run_dir is not None
        make = agent_factory(env.config, env.geometry, env.run_dir)
        policies = {
            a: AgentPolicy(make(a, env.last_observation(a).role)) for a in env.possible_agents
        }
        while env.agents:
            env.step({a: policies[a].act(env, a) for a in env.acting})
        through = read_events(env.run_dir / "events.jsonl")
    finally:
        env.close()
    loop = read_events(direct.out_dir / "events.jsonl")
    assert rule_events(through) == rule_events(loop)
    assert _decisions(through) == _decisions(loop)
    assert [e.view_text for e in through if e.kind == "decision"] == [
        e.view_text for e in loop if e.kind == "decision"
    ]
