"""The PettingZoo environment on the real embedded server: one short random-masked game."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mineamongus
from controller.checks import log_violations
from controller.events import Decision, GameEnd, GameStart, read_events
from mineamongus.policies import random_action

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::UserWarning")]

MAX_STEPS = 8


def test_a_random_masked_game_on_the_real_server(tmp_path: Path) -> None:
    env = mineamongus.parallel_env(
        world="minecraft", render_mode="rgb_array", max_steps=MAX_STEPS, out=tmp_path
    )
    try:
        obs, infos = env.reset(seed=5)
        assert env.agents == env.possible_agents
        for a in env.agents:
            assert env.observation_space(a).contains(obs[a])
            assert obs[a]["frame"].shape == (360, 640, 3) and obs[a]["frame"].any()
        for i, a in enumerate(env.possible_agents):
            env.action_space(a).seed(5 + i)
        steps = 0
        while env.agents:
            actions = {a: random_action(env, a, infos[a]) for a in env.agents}
            obs, rewards, terms, truncs, infos = env.step(actions)
            steps += 1
            assert set(rewards) == set(terms) == set(truncs) == set(obs)
        result = env.result
        assert result is not None and result.status == "ok", result
        assert 1 <= steps <= MAX_STEPS
        assert all(terms[a] or truncs[a] for a in terms)
        picture = env.render()
        assert picture is not None and picture.dtype == np.uint8
        assert env.run_dir is not None
        events = read_events(env.run_dir / "events.jsonl")
    finally:
        env.close()
    assert log_violations(events) == []
    start = next(e for e in events if isinstance(e, GameStart))
    assert {spec["kind"] for spec in start.agent_specs.values()} == {"env"}
    decisions = [e for e in events if isinstance(e, Decision)]
    assert decisions and all(d.frame is not None for d in decisions)
    end = events[-1]
    assert isinstance(end, GameEnd) and end.status == "ok"
