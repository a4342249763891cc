"""The codegen call in MOVE and MISSION (`AriaSpec.action: codegen`): its purpose and
sampling, its prompt, the translated program, the impostor's intent line, the wander that
replaces a refused program, and a failed call that stays a failure."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from controller.agents.base import AgentDecision
from controller.vocabulary import ModelCall
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import ModelRequest
from harness_aria.backends.fake import FakeBackend
from harness_aria.codegen import BUDGET, PURPOSE, wander
from harness_aria.fake_answers import answer
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import budget
from tests.harness_aria.conftest import Scene

ADMIN_CODE = (
    "async function walk(bot) {\n  await bot.pathfinder.goto(new GoalXZ(16.5, 0.5));\n}\n"
    "await walk(bot);"
)
SPEC: dict[str, Any] = {"action": "codegen", "module_calls": "needed"}


def planner(module: str, target: object) -> dict[str, Any]:
    return {"module": module, "target": target, "reasoning": "r", "intent": "planner intent"}


def codegen_calls(d: AgentDecision) -> list[ModelCall]:
    return [c for c in d.calls if c.purpose == PURPOSE]


def test_the_purpose_has_the_reference_codegens_sampling(scene: Scene) -> None:
    answers = scene.Answers(planner=planner("MOVE", "admin"), codegen={"code": ADMIN_CODE})
    d = scene.decide(scene.agent("red", answers, **SPEC), scene.obs("red"))
    assert budget(PURPOSE) == BUDGET == (0.2, 1024)
    request = next(r for r in answers.requests if r.purpose == PURPOSE)
    assert (request.temperature, request.max_tokens) == (0.2, 1024)
    assert not any(m.images for m in request.messages)
    assert d.program == [{"op": "go_to", "room": "admin"}, {"op": "look", "behind": True}]
    assert not d.invalid and d.module == "MOVE"
    (call,) = codegen_calls(d)
    assert call.extra["codegen"]["status"] == "translated"
    assert call.extra["codegen"]["program"] == [{"op": "go_to", "room": "admin"}]


def test_the_prompt_tells_the_api_the_rules_and_the_plan(scene: Scene) -> None:
    crew = scene.Answers(planner=planner("MOVE", "admin"), codegen={"code": ADMIN_CODE})
    scene.decide(scene.agent("red", crew, **SPEC), scene.obs("red"))
    (text,) = crew.prompt(PURPOSE)
    assert text.rstrip().splitlines()[-1].startswith('Answer as JSON: {"code"')
    assert text.count("Answer as JSON") == 1
    for told in (
        "GoalNear(x, y, z, range)",
        "GoalXZ(x, z)",
        "GoalBlock(x, y, z)",
        "bot.nearestEntity",
        "bot.findBlock",
        "bot.blockAt",
        "bot.activateBlock",
        "bot.activateItem",
        "bot.setQuickBarSlot",
        "bot.waitForTicks",
        "no chat, no loops, no try/catch, no recursion",
        "walk to the room admin; its centre is at (16.5, 65, 0.5)",
        "You stand at (-0.5, 65, 0.5)",
    ):
        assert told in text, told
    assert "ARIA_SAY" not in text and "intent" not in text and "Impostors only" not in text
    # the memory is not sent (the reference's codegen had the state and the plan)
    assert "What you did" not in text

    imp = scene.Answers(planner=planner("MISSION", 0), codegen={"code": ADMIN_CODE})
    scene.decide(scene.agent("pink", imp, **SPEC), scene.obs("pink", "impostor"))
    (text,) = imp.prompt(PURPOSE)
    assert "console.log('[ARIA_SAY:' + bot.username + '] <what you are really doing>');" in text
    assert "fake the task at station 0 in cafeteria, whose emerald_block is at (6, 64, -5)" in text


def test_an_impostors_task_and_intent_line(scene: Scene) -> None:
    code = (
        "async function fake(bot) {\n"
        "  console.log('[ARIA_SAY:' + bot.username + '] faking station 0 while blue watches');\n"
        "  await bot.pathfinder.goto(new GoalNear(6, 64, -5, 1));\n"
        "  bot.activateBlock(bot.blockAt(new Vec3(6, 64, -5)));\n"
        "  await bot.waitForTicks(1200);\n}\nawait fake(bot);"
    )
    answers = scene.Answers(planner=planner("MISSION", 0), codegen={"code": code})
    d = scene.decide(scene.agent("pink", answers, **SPEC), scene.obs("pink", "impostor"))
    assert d.program == [{"op": "use_station", "station": 0}]
    assert d.narration == "faking station 0 while blue watches"
    assert not d.invalid


def test_without_an_intent_line_the_modules_intent_stands(scene: Scene) -> None:
    answers = scene.Answers(planner=planner("MOVE", "admin"), codegen={"code": ADMIN_CODE})
    d = scene.decide(scene.agent("pink", answers, **SPEC), scene.obs("pink", "impostor"))
    assert d.program == [{"op": "go_to", "room": "admin"}]
    assert d.narration == "planner intent"


def test_a_follow_is_written_as_the_reference_does(scene: Scene) -> None:
    code = (
        "async function nav(bot) {\n"
        "  const t = bot.nearestEntity(e => e.type === 'player' && e.username === 'Blue');\n"
        "  if (t) { await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, "
        "t.position.z, 3)); }\n}\nawait nav(bot);"
    )
    answers = scene.Answers(planner=planner("MOVE", "blue"), codegen={"code": code})
    obs = scene.obs("red", players={"blue": scene.ahead(4)})
    d = scene.decide(scene.agent("red", answers, **SPEC), obs)
    assert d.program[0] == {"op": "follow", "agent": "blue", "distance": 3.0, "ticks": 100}
    (text,) = answers.prompt(PURPOSE)
    assert "go after blue, who is at (-0.5, 65, 4.5) now" in text


def is_wander(program: list[dict[str, Any]], at: tuple[float, float, float]) -> bool:
    walk = program[0]
    if walk.get("op") != "go_to" or walk.get("pos") is None:
        return False
    x, _, z = (float(c) for c in walk["pos"])
    # a point up to 12 blocks each way, moved to the nearest floor cell the bot can reach
    return abs(x - at[0]) <= 14 and abs(z - at[2]) <= 14


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({"code": "while (true) {}"}),
        json.dumps({"code": "bot.chat('hello');"}),
        json.dumps({"code": ""}),
        json.dumps({"program": ADMIN_CODE}),
        "this is not JSON",
    ],
    ids=["loop", "chat", "empty", "no code", "not JSON"],
)
def test_a_refused_program_is_the_models_answer_replaced_by_the_wander(
    scene: Scene, raw: str
) -> None:
    def script(request: ModelRequest) -> str:
        if request.purpose == "planner":
            return json.dumps(planner("MOVE", "admin"))
        return raw if request.purpose == PURPOSE else answer(request)

    def agent() -> AriaAgent:
        backend = FakeBackend("t", script=script)
        return AriaAgent("red", AriaSpec(**SPEC), backend, scene.geometry)

    obs = scene.obs("red")
    d = scene.decide(agent(), obs)
    assert not d.invalid and not d.infrastructure
    assert is_wander(d.program, obs.pos)
    assert d.program[-1] == {"op": "look", "behind": True}
    assert "fallback: wander (the program was refused: " in d.reasoning
    (call,) = codegen_calls(d)
    extra = call.extra["codegen"]
    assert extra["status"] == "refused" and extra["fallback"] == "wander"
    assert extra["error_kind"] == "model" and extra["reason"]
    assert call.parse_error and call.raw == raw
    # the same game draws the same wander
    assert scene.decide(agent(), obs).program == d.program


def test_the_wander_is_deterministic_and_walkable(scene: Scene) -> None:
    g, at = scene.geometry, scene.cafeteria
    walks = [wander(g, at, f"red|{step}|{step * 100}") for step in range(40)]
    assert walks == [wander(g, at, f"red|{step}|{step * 100}") for step in range(40)]
    assert len({w[0].pos for w in walks}) > 10
    reach = g.distance_field((math.floor(at[0]), math.floor(at[2])))
    for w in walks:
        pos = w[0].pos
        assert pos is not None
        x, y, z = pos
        assert reach.get((math.floor(x), math.floor(z))) is not None
        assert y == at[1]


def test_a_failed_codegen_call_stays_a_failure_never_a_wander(scene: Scene) -> None:
    def slow(request: ModelRequest) -> object:
        raise TimeoutError("the provider took too long")

    answers = scene.Answers(planner=planner("MOVE", "admin"), codegen=slow)
    d = scene.decide(scene.agent("red", answers, **SPEC), scene.obs("red"))
    assert d.invalid and d.infrastructure == "timeout"
    assert d.program == []
    assert "fallback" not in d.reasoning


def test_primitives_make_no_codegen_call(scene: Scene) -> None:
    answers = scene.Answers(planner=planner("MOVE", "admin"))
    spec = {**SPEC, "action": "primitives"}
    d = scene.decide(scene.agent("red", answers, **spec), scene.obs("red"))
    assert PURPOSE not in answers.purposes()
    assert d.program == [{"op": "go_to", "room": "admin"}, {"op": "look", "behind": True}]


def test_a_crewmate_task_through_the_fake_backend(scene: Scene) -> None:
    """The offline fake answers the codegen call with a reference-style program that
    translates into the task the module chose."""
    answers = scene.Answers(planner=planner("MISSION", 1))
    d = scene.decide(scene.agent("red", answers, **SPEC), scene.obs("red", tasks=[1, 2]))
    (call,) = codegen_calls(d)
    assert call.extra["codegen"]["status"] == "translated", call.extra
    assert d.program == [{"op": "use_station", "station": 1}, {"op": "look", "behind": True}]
