"""A program that carries out the harness's own pick and fails validation is the
harness's error, never the model's (`AgentDecision.harness_built`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.actions import Follow
from controller.agents.base import AgentDecision
from controller.agents.scripted import ScriptedAgent
from controller.config import resolve_config
from controller.events import Decision, read_events
from controller.game import Game
from controller.observation import Observation
from controller.worlds.fake import FakeWorld
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)


class Planted:
    """Asks, at step 1, to follow a player who is not in the game (a program the rules
    refuse), saying whether the harness or the model chose that player."""

    def __init__(self, inner: ScriptedAgent, harness_built: bool) -> None:
        self.inner, self.agent_id, self.harness_built = inner, inner.agent_id, harness_built

    def describe(self) -> dict[str, Any]:
        return {"kind": "planted"}

    async def decide(self, obs: Observation) -> AgentDecision:
        if obs.phase == "free_roam" and obs.step == 1:
            return AgentDecision(
                program=[Follow(agent="nobody", ticks=20)],
                module="MOVE",
                harness_built=self.harness_built,
            )
        return await self.inner.decide(obs)


@pytest.mark.parametrize(("harness_built", "kind"), [(True, "harness"), (False, "rules")])
def test_an_invalid_program_is_blamed_on_whoever_chose_it(
    tmp_path: Path, harness_built: bool, kind: str
) -> None:
    config = resolve_config(
        "quick", overrides={"seed": 3, "frames": "off", "rules": {"max_steps": 2}}
    )
    agents = {
        a: Planted(ScriptedAgent(a, GEOMETRY, config.seed), harness_built)
        for a in config.agent_ids()
    }
    Game(config, SPEC, FakeWorld(GEOMETRY), agents, tmp_path).run()
    first = [e for e in read_events(tmp_path / "events.jsonl") if isinstance(e, Decision)]
    first = [d for d in first if d.step == 1]
    assert len(first) == 8
    assert all(d.error_kind == kind and "nobody" in d.error for d in first), first[0]
