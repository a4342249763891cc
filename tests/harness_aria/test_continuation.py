"""When an agent whose program is still running is asked again (`AriaSpec.continuation`).

Something new in view (a player, a body, a module on offer) asks the agent; a player
walking out of view does not: its walk goes on unasked.
"""

from __future__ import annotations

import asyncio
from typing import Any

from controller.agents.base import AgentDecision
from controller.observation import OwnAction
from harness_aria.agent import AriaAgent
from harness_aria.backends.fake import FakeBackend
from harness_aria.spec import AriaSpec
from tests.harness_aria.conftest import SCENE_GEOMETRY, Answers, ahead, make_obs

FAR_STATION = 19  # medbay: a walk from the cafeteria takes more than one step


def _agent(answers: Answers) -> AriaAgent:
    # Continuation and a MISSION without its own call are the lean profile's.
    spec = AriaSpec(profile="lean")
    return AriaAgent("red", spec, FakeBackend("t", script=answers), SCENE_GEOMETRY)


def _walking(step: int, **over: Any) -> Any:
    """An observation after a step whose walk to the far station timed out unarrived."""
    ended = OwnAction(step=step - 1, tick=step * 100, kind="program_ended", detail="timeout")
    return make_obs(step=step, tick=step * 100, tasks=[FAR_STATION], own_actions=[ended], **over)


def _decide(agent: AriaAgent, obs: Any) -> AgentDecision:
    return asyncio.run(agent.decide(obs))


def _started(agent: AriaAgent, answers: Answers, **over: Any) -> None:
    first = _decide(agent, make_obs(step=5, tasks=[FAR_STATION], **over))
    assert not first.continued and first.module == "MISSION", first
    assert len(answers.requests) == 1


def _mission() -> Answers:
    return Answers(planner={"module": "MISSION", "target": FAR_STATION, "reasoning": "go"})


def test_a_player_walking_out_of_view_does_not_ask_again() -> None:
    answers = _mission()
    agent = _agent(answers)
    _started(agent, answers, players={"blue": ahead(4.0)})
    second = _decide(agent, _walking(6))
    assert second.continued and second.module == "MISSION"
    assert len(answers.requests) == 1  # no call


def test_a_player_coming_into_view_asks_again() -> None:
    answers = _mission()
    agent = _agent(answers)
    _started(agent, answers)
    assert _decide(agent, _walking(6)).continued
    third = _decide(agent, _walking(7, players={"blue": ahead(4.0)}))
    assert not third.continued
    assert len(answers.requests) == 2


def test_a_body_coming_into_view_asks_again() -> None:
    answers = _mission()
    agent = _agent(answers)
    _started(agent, answers)
    second = _decide(agent, _walking(6, bodies={"green": ahead(6.0)}, known_dead=["green"]))
    assert not second.continued
