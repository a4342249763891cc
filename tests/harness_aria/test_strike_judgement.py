"""The model's witness scan alone decides a strike; the engine's guard is an assist.

A whole game on the fake world from a placed scene in storage: the ARIA impostor, its
target three blocks ahead, and a witness six blocks ahead facing the killer; everyone
else stands still far away. The model's kill scan is planted: "no witnesses", a miss.
By default (`AriaSpec.strike_guard` off) the strike goes out with `guard: none` and
lands in front of the witness, as in the reference; with the assist on it carries the
rules' guard and is withheld at its tick, and the log says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.checks import log_violations
from controller.config import resolve_config
from controller.events import Decision, Event, GameStart, Kill, ProgramRun, Visibility, read_events
from controller.game import Game
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import ModelRequest
from harness_aria.backends.fake import FakeBackend
from harness_aria.fake_answers import answer
from harness_aria.spec import AriaSpec
from testkit.scenes import PlacedWorld, Still
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")
G = ShipGeometry(SPEC)
KILLER_AT = (0.5, 65.0, 13.5)
"""In storage, facing +z (yaw 0) into the room."""
TARGET_AT = (0.5, 65.0, 16.5)
"""Three blocks ahead of the killer: within strike reach."""
WITNESS_AT = (1.5, 65.0, 19.5)
"""Six blocks ahead, one to the side, facing the killer (yaw 180)."""
FAR = ("medbay", "weapons", "o2", "navigation", "shields", "reactor")
"""Rooms for everyone else, out of sight of storage."""
BLIND = {
    "players_seen": [],
    "witnesses_visible": False,
    "target_visible": True,
    "detail": "only my target is near",
    "intent": "kill now",
}
"""The planted scan answer: it misses the witness."""


class Planted:
    """A fake-backend script: KILL the named target, and a blind witness scan; every
    other question gets the offline responder's answer."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __call__(self, request: ModelRequest) -> str:
        if request.purpose == "planner":
            plan = {"module": "KILL", "target": self.target, "reasoning": "go", "intent": "kill"}
            return json.dumps(plan)
        if request.purpose == "kill_scan":
            return json.dumps({**BLIND, "players_seen": [self.target]})
        return answer(request)


def play(out: Path, state: str, strike_guard: bool) -> tuple[list[Event], dict[str, str]]:
    """Play the scene; returns the events and who is `killer`, `target`, `witness`."""
    rules = {"initial_kill_cooldown_ticks": 0, "max_steps": 3}
    config = resolve_config("quick", overrides={"seed": 5, "frames": "off", "rules": rules})
    world = PlacedWorld(G)
    game = Game(config, SPEC, world, lambda a, role: Still(a), out)
    impostors = game.engine.impostors()
    crew = [a for a in config.agent_ids() if a not in impostors]
    cast = {"killer": impostors[0], "target": crew[0], "witness": crew[1]}
    spec = AriaSpec(state=state, strike_guard=strike_guard)
    killer = AriaAgent(cast["killer"], spec, FakeBackend("t", script=Planted(cast["target"])), G)
    game.agents[cast["killer"]] = killer
    world.places.update(
        {
            cast["killer"]: (KILLER_AT, 0.0),
            cast["target"]: (TARGET_AT, 0.0),
            cast["witness"]: (WITNESS_AT, 180.0),
        }
    )
    others = [impostors[1], *crew[2:]]
    for seat, room in zip(others, FAR, strict=False):
        world.places[seat] = (G.room_center(room), 0.0)
    game.run()
    return read_events(out / "events.jsonl"), cast


def strikes(events: list[Event], killer: str) -> list[dict[str, Any]]:
    """The kill actions of the killer's logged decisions."""
    return [
        a
        for e in events
        if isinstance(e, Decision) and e.agent == killer
        for a in e.program
        if a.get("op") == "kill"
    ]


@pytest.mark.parametrize("state", ["privileged", "ego"])
def test_a_missed_witness_sees_the_kill(tmp_path: Path, state: str) -> None:
    events, cast = play(tmp_path / "game", state, strike_guard=False)
    killer, witness = cast["killer"], cast["witness"]
    start = next(e for e in events if isinstance(e, GameStart))
    assert start.agent_specs[killer]["spec"]["strike_guard"] is False
    sent = strikes(events, killer)
    assert sent and sent[0]["guard"] == "none"
    kill = next(e for e in events if isinstance(e, Kill))
    assert (kill.killer, kill.victim) == (killer, cast["target"])
    at_strike = next(
        e for e in events if isinstance(e, Visibility) and e.cause == "kill" and e.subject == killer
    )
    assert at_strike.tick == kill.tick
    # The witness is in the killer's view, and it sees the killer.
    assert witness in at_strike.sees[killer]
    assert killer in at_strike.sees[witness]
    assert log_violations(events) == []


@pytest.mark.parametrize(("state", "guard"), [("privileged", "around"), ("ego", "sight")])
def test_the_assist_withholds_the_same_strike_and_says_so(
    tmp_path: Path, state: str, guard: str
) -> None:
    events, cast = play(tmp_path / "game", state, strike_guard=True)
    killer, witness = cast["killer"], cast["witness"]
    start = next(e for e in events if isinstance(e, GameStart))
    assert start.agent_specs[killer]["spec"]["strike_guard"] is True
    decisions = [e for e in events if isinstance(e, Decision) and e.agent == killer]
    assert all(d.spec["strike_guard"] is True for d in decisions)
    sent = strikes(events, killer)
    assert sent and {a["guard"] for a in sent} == {guard}
    assert not any(isinstance(e, Kill) for e in events)
    struck = next(e for e in decisions if any(a.get("op") == "kill" for a in e.program))
    run = next(
        e
        for e in events
        if isinstance(e, ProgramRun) and e.agent == killer and e.step == struck.step
    )
    assert run.status == "cancelled"
    assert run.reason.startswith(f"strike withheld: witness {witness}")
    assert log_violations(events) == []
