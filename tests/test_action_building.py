"""Programs are built as typed actions (`controller.actions`) everywhere in the project;
only the readers of untrusted data start from dicts. The controller validates a typed
program again, so an action the harness built around its own checks is the harness's
error, while a model's bad value (a room off the map) stays the model's `rules` error.
The log writes each action as its builder gave it (`dump_actions`)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from controller.actions import (
    Follow,
    GoTo,
    KillTarget,
    Look,
    PressButton,
    Say,
    UseStation,
    Wait,
    build_action,
    dump_actions,
)
from controller.agents.base import AgentDecision
from controller.agents.scripted import ScriptedAgent
from controller.config import resolve_config
from controller.events import Decision, read_events
from controller.game import Game
from controller.observation import Observation
from controller.programs import ProgramError, parse_program, typed_program
from controller.worlds.fake import FakeWorld
from world.geometry import ShipGeometry
from world.spec import load_map

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("controller", "harness_aria", "mineamongus", "testkit")
"""The packages where programs are built."""
ALLOWED = {
    "controller/bridge.py": "its `op` names a bridge request, not an action",
    "controller/programs.py": "the codec of untrusted program data (`parse_program`)",
}
"""Files that may write a string-keyed `op`, and why."""

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)


def string_keyed_actions(source: str) -> list[int]:
    """Lines of `source` building a dict with an `op` key: a literal `{"op": ...}` or a
    call `dict(op=...)`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        literal = isinstance(node, ast.Dict) and any(
            isinstance(k, ast.Constant) and k.value == "op" for k in node.keys
        )
        call = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "dict"
            and any(k.arg == "op" for k in node.keywords)
        )
        if literal or call:
            found.append(node.lineno)  # type: ignore[attr-defined]
    return sorted(found)


def test_no_string_keyed_action_is_built_outside_the_codecs() -> None:
    offenders = []
    for pkg in SCANNED:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in ALLOWED:
                continue
            offenders += [f"{rel}:{n}" for n in string_keyed_actions(path.read_text())]
    assert offenders == []


def test_the_scan_catches_a_planted_dict_action() -> None:
    planted = (
        "def build(room):\n"
        '    ok = {"id": 1, "args": {}}\n'
        '    bad = [{"op": "go_to", "room": room}]\n'
        '    worse = dict(op="wait", ticks=3)\n'
        "    return ok, bad, worse\n"
    )
    assert string_keyed_actions(planted) == [3, 4]


def test_the_log_writes_each_action_as_built() -> None:
    built = [
        GoTo(station=3),
        Look(yaw=225.0),
        UseStation(station=3),
        Follow(agent="red", distance=4.0, ticks=40),
        KillTarget(target="red", guard="sight"),
        Look(behind=True),
        PressButton(),
        Wait(ticks=20),
        GoTo(pos=(1.5, 65.0, -2.5)),
    ]
    assert dump_actions(built) == [
        {"op": "go_to", "station": 3},
        {"op": "look", "yaw": 225.0},
        {"op": "use_station", "station": 3},
        {"op": "follow", "agent": "red", "distance": 4.0, "ticks": 40},
        {"op": "kill", "target": "red", "guard": "sight"},
        {"op": "look", "behind": True},
        {"op": "press_button"},
        {"op": "wait", "ticks": 20},
        {"op": "go_to", "pos": [1.5, 65.0, -2.5]},
    ]
    # what is logged reads back as the same program
    assert [parse_program([d]).actions[0] for d in dump_actions(built)] == built


def test_a_model_value_the_type_refuses_is_an_error_message_not_a_raise() -> None:
    said = build_action(Say, text="/op me")
    assert isinstance(said, str)
    with pytest.raises(ProgramError) as parsed:
        parse_program([{"op": "say", "text": "/op me"}])
    assert said == str(parsed.value)
    assert build_action(Say, text="hello  there") == Say(text="hello there")


def test_typed_actions_are_validated_again() -> None:
    with pytest.raises(ProgramError, match="exactly one of room, station, pos"):
        typed_program([GoTo.model_construct()])
    with pytest.raises(ProgramError, match="target"):
        typed_program([KillTarget.model_construct(guard="none")])
    assert typed_program([{"op": "wait", "ticks": 1}]) is None  # data: for parse_program


class Planted:
    """At step 1 sends `program` (with `harness_built`); otherwise plays scripted."""

    def __init__(self, inner: ScriptedAgent, program: list[Any], harness_built: bool) -> None:
        self.inner, self.agent_id = inner, inner.agent_id
        self.program, self.harness_built = program, harness_built

    def describe(self) -> dict[str, Any]:
        return {"kind": "planted"}

    async def decide(self, obs: Observation) -> AgentDecision:
        if obs.phase == "free_roam" and obs.step == 1:
            return AgentDecision(
                program=list(self.program), module="MOVE", harness_built=self.harness_built
            )
        return await self.inner.decide(obs)


def _step_one(tmp_path: Path, program: list[Any], harness_built: bool = False) -> list[Decision]:
    config = resolve_config(
        "quick", overrides={"seed": 3, "frames": "off", "rules": {"max_steps": 2}}
    )
    agents = {
        a: Planted(ScriptedAgent(a, GEOMETRY, config.seed), program, harness_built)
        for a in config.agent_ids()
    }
    Game(config, SPEC, FakeWorld(GEOMETRY), agents, tmp_path).run()
    found = [e for e in read_events(tmp_path / "events.jsonl") if isinstance(e, Decision)]
    found = [d for d in found if d.step == 1]
    assert len(found) == 8
    return found


def test_an_invalid_action_the_harness_built_is_a_harness_error(tmp_path: Path) -> None:
    # built around its own checks: a walk to nowhere, which no model could have sent
    first = _step_one(tmp_path, [GoTo.model_construct()])
    assert {d.error_kind for d in first} == {"harness"}
    assert all(not d.valid and "exactly one of room" in d.error for d in first), first[0]
    assert all(d.program == [{"op": "go_to"}] for d in first)


def test_a_harness_pick_the_rules_refuse_is_a_harness_error(tmp_path: Path) -> None:
    first = _step_one(tmp_path, [Follow(agent="nobody", ticks=20)], harness_built=True)
    assert {d.error_kind for d in first} == {"harness"}
    assert all("nobody" in d.error for d in first)


def test_a_models_bad_room_stays_a_rules_error(tmp_path: Path) -> None:
    # the model named a room off the map: a valid GoTo, refused by the rules
    first = _step_one(tmp_path, [GoTo(room="the moon")])
    assert {d.error_kind for d in first} == {"rules"}
    assert all("unknown room 'the moon'" in d.error for d in first)
    assert all(d.program == [{"op": "go_to", "room": "the moon"}] for d in first)


def test_untrusted_dicts_are_still_parsed_as_the_writers_rules_error(tmp_path: Path) -> None:
    first = _step_one(tmp_path, [{"op": "go_to"}])
    assert {d.error_kind for d in first} == {"rules"}
    assert all(d.program == [{"op": "go_to"}] for d in first)
