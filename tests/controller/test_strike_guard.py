"""A guarded strike re-checks for witnesses at its own tick, from the killer's perception."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from controller.agents.base import AgentDecision
from controller.agents.scripted import ScriptedAgent
from controller.checks import log_violations
from controller.config import GameConfig, resolve_config
from controller.events import Event, Kill, ProgramRun, read_events
from controller.game import Game
from controller.observation import Observation
from controller.programs import ProgramError, parse_program
from controller.worlds.fake import FakeWorld
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")


class Striker:
    """An impostor that strikes at the nearest crewmate on the first free-roam step."""

    def __init__(self, inner: ScriptedAgent, crew: list[str], guard: str) -> None:
        self.inner, self.crew, self.guard, self.agent_id = inner, crew, guard, inner.agent_id
        self.struck = False

    def describe(self) -> dict[str, Any]:
        return {"kind": "striker"}

    async def decide(self, obs: Observation) -> AgentDecision:
        if obs.phase != "free_roam" or self.struck:
            return await self.inner.decide(obs)
        self.struck = True
        living = [c for c in self.crew if c in obs.roster]
        target = min(living, key=lambda c: math.dist(obs.roster[c].pos, obs.pos))
        action = {"op": "kill", "target": target, "max_distance": 10.0}
        if self.guard != "none":
            action["guard"] = self.guard
        return AgentDecision(program=[action], module="KILL")


def cfg() -> GameConfig:
    # 8 tasks pins the scene (who walks where at step 1) whatever the preset's task load
    rules = {"initial_kill_cooldown_ticks": 0, "max_steps": 3, "tasks_per_crewmate": 8}
    return resolve_config("quick", overrides={"seed": 5, "frames": "off", "rules": rules})


def play(guard: str, out: Path) -> tuple[list[Event], list[str]]:
    config = cfg()
    geometry = ShipGeometry(SPEC)
    game = Game(
        config, SPEC, FakeWorld(geometry), lambda a, role: ScriptedAgent(a, geometry, 5), out
    )
    imps = game.engine.impostors()
    crew = [a for a in config.agent_ids() if a not in imps]
    agents: dict[str, Any] = {
        a: ScriptedAgent(a, geometry, config.seed) for a in config.agent_ids()
    }
    agents[imps[0]] = Striker(agents[imps[0]], crew, guard)
    game.log.close()
    Game(config, SPEC, FakeWorld(geometry), agents, out / "game").run()
    return read_events(out / "game" / "events.jsonl"), imps


def test_unguarded_strike_lands_in_a_crowd(tmp_path: Path) -> None:
    events, imps = play("none", tmp_path / "g")
    assert any(isinstance(e, Kill) and e.killer == imps[0] and e.step == 1 for e in events)


@pytest.mark.parametrize("guard", ["sight", "around"])
def test_guarded_strike_is_withheld_in_a_crowd(guard: str, tmp_path: Path) -> None:
    events, imps = play(guard, tmp_path / guard)
    # everyone starts together at the table: another crewmate is in view at the strike
    assert not any(isinstance(e, Kill) and e.step == 1 for e in events)
    run = next(
        e for e in events if isinstance(e, ProgramRun) and e.agent == imps[0] and e.step == 1
    )
    assert run.status == "cancelled"
    assert run.reason.startswith("strike withheld: witness ")
    assert log_violations(events) == []


def test_guard_must_be_a_known_mode() -> None:
    with pytest.raises(ProgramError):
        parse_program([{"op": "kill", "target": "red", "guard": "maybe"}])
