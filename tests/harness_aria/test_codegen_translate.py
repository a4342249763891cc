"""Model-written programs: reference-style programs translate into primitives; anything
outside the subset is refused with its reason, and nothing in an answer ever runs."""
# ruff: noqa: E501  (the tables hold one program a row)

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from controller.actions import Wait, dump_actions
from harness_aria.codegen import parser as parser_module
from harness_aria.codegen.parser import (
    SCRIPT,
    JsParser,
    ParserUnavailable,
    node_modules,
    parse_js,
)
from harness_aria.codegen.translate import (
    MAX_CODE_CHARS,
    Refused,
    Scene,
    Translation,
    translate,
)
from world.geometry import ShipGeometry
from world.spec import load_map

G = ShipGeometry(load_map("skeld"))
HERE = G.room_center("cafeteria")  # (-0.5, 65, 0.5)
BLUE = (2.5, 65.0, 4.5)
GREEN = (20.5, 65.0, 10.5)
S0 = G.station_pos(0)  # (6.5, 65, -4.5), its block (6, 64, -5)
ADMIN = G.room_center("admin")  # (16.5, 65, 0.5)
BUTTON = G.button_pos()  # (0.5, 65, 0.5), its block (0, 64, 0)


def scene(impostor: bool = False, me: str = "pink") -> Scene:
    return Scene(
        me=me,
        impostor=impostor,
        pos=HERE,
        players={"blue": BLUE, "green": GREEN},
        stations={s: G.station_pos(s) for s in G.station_ids()},
        button=BUTTON,
        rooms={r: G.room_center(r) for r in G.rooms},
        floor_y=float(G.spec.floor_y),
    )


def fn(*lines: str, name: str = "act") -> str:
    """A program in the reference's shape: one async function, then its awaited call."""
    body = "\n".join(f"  {line}" for line in lines)
    return f"async function {name}(bot) {{\n{body}\n}}\nawait {name}(bot);"


GO_ADMIN = [{"op": "go_to", "room": "admin"}]
FOLLOW_BLUE = {"op": "follow", "agent": "blue", "distance": 3.0, "ticks": 100}
FIND_BLUE = (
    "const t = bot.nearestEntity(e => e.type === 'player' && e.username === 'Blue' "
    "&& e.position.distanceTo(bot.entity.position) < 120);"
)
INTENT = "console.log('[ARIA_SAY:' + bot.username + '] I am faking the task at station 0');"

# (name, code, primitives, the impostor's intent or None for a crewmate's program)
CASES: list[tuple[str, str, list[dict[str, Any]], str | None]] = [
    ("GoalNear at a room centre", fn("await bot.pathfinder.goto(new GoalNear(16.5, 65, 0.5, 1));"), GO_ADMIN, None),
    ("GoalXZ at a room centre", fn("await bot.pathfinder.goto(new GoalXZ(16.5, 0.5));"), GO_ADMIN, None),
    ("GoalBlock at a room centre", fn("await bot.pathfinder.goto(new GoalBlock(16, 65, 0));"), GO_ADMIN, None),
    ("GoalNear elsewhere", fn("await bot.pathfinder.goto(new GoalNear(10, 65, 10, 2));"), [{"op": "go_to", "pos": [10.0, 65.0, 10.0]}], None),
    ("GoalXZ elsewhere", fn("await bot.pathfinder.goto(new GoalXZ(-10, 3));"), [{"op": "go_to", "pos": [-10.0, 65.0, 3.0]}], None),
    ("GoalBlock elsewhere", fn("await bot.pathfinder.goto(new GoalBlock(-10.7, 65, 3.2));"), [{"op": "go_to", "pos": [-10.5, 65.0, 3.5]}], None),
    ("GoalNear at a station's block", fn("await bot.pathfinder.goto(new GoalNear(6, 64, -5, 1));"), [{"op": "go_to", "station": 0}], None),
    ("a walk then a wait", fn("await bot.pathfinder.goto(new GoalXZ(16.5, 0.5));", "await bot.waitForTicks(40);"), [*GO_ADMIN, {"op": "wait", "ticks": 40}], None),
    ("two waits merged", fn("await bot.waitForTicks(40);", "await bot.waitForTicks(40);"), [{"op": "wait", "ticks": 80}], None),
    ("a long wait cut", fn("await bot.waitForTicks(5000);"), [{"op": "wait", "ticks": 1200}], None),
    ("the reference's mission", fn(
        "await bot.pathfinder.goto(new GoalNear(6, 64, -5, 1));",
        "const button = bot.findBlock({ matching: block => block.name === 'emerald_block' || block.name === 'stone_button', maxDistance: 5 });",
        "if (button) {", "  bot.activateBlock(bot.blockAt(button.position));", "  await bot.waitForTicks(1200);", "}",
        name="doMission"), [{"op": "use_station", "station": 0}], None),
    ("a station activated by its coordinates", fn("bot.activateBlock(bot.blockAt(new Vec3(6, 64, -5)));"), [{"op": "use_station", "station": 0}], None),
    ("the stand after a task kept beyond its own", fn(
        "await bot.activateBlock(bot.blockAt(new Vec3(6.5, 65, -4.5)));", "await bot.waitForTicks(1200);", "await bot.waitForTicks(100);"),
        [{"op": "use_station", "station": 0}, {"op": "wait", "ticks": 100}], None),
    ("the reference's follow", fn(FIND_BLUE, "if (t) {", "  await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, t.position.z, 3));",
        "} else {", "  await bot.pathfinder.goto(new GoalXZ(90, 60));", "}", name="navigateToPlayer"), [FOLLOW_BLUE], None),
    ("a follow of a player out of sight takes the else", fn(
        "const t = bot.nearestEntity(e => e.type === 'player' && e.username === 'Yellow');",
        "if (t) { await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, t.position.z, 3)); }",
        "else { await bot.pathfinder.goto(new GoalXZ(90, 60)); }"), [{"op": "go_to", "pos": [90.0, 65.0, 60.0]}], None),
    ("a follow through a position variable", fn(FIND_BLUE, "if (!t) return;", "const p = t.position;",
        "await bot.pathfinder.goto(new GoalNear(p.x, p.y, p.z, 2));"), [{**FOLLOW_BLUE, "distance": 2.0}], None),
    ("a point beside a player is a walk", fn(FIND_BLUE, "await bot.pathfinder.goto(new GoalNear(t.position.x + 2, t.position.y, t.position.z, 1));"),
        [{"op": "go_to", "pos": [4.5, 65.0, 4.5]}], None),
    ("the nearest player, unnamed", fn("const t = bot.nearestEntity(e => e.type === 'player');",
        "await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, t.position.z));"), [{**FOLLOW_BLUE, "distance": 1.0}], None),
    ("the nearest player but one", fn("const t = bot.nearestEntity(e => e.type === 'player' && e.username !== 'blue');",
        "await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, t.position.z, 4));"),
        [{"op": "follow", "agent": "green", "distance": 4.0, "ticks": 100}], None),
    ("nobody within the filter's reach", fn(
        "const t = bot.nearestEntity(e => e.username === 'green' && e.position.distanceTo(bot.entity.position) < 5);",
        "if (!t) return;", "await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, t.position.z, 2));"), [], None),
    ("GoalBlock at a player", fn(FIND_BLUE, "await bot.pathfinder.goto(new GoalBlock(t.position.x, t.position.y, t.position.z));"),
        [{**FOLLOW_BLUE, "distance": 1.0}], None),
    ("an impostor's intent line", fn(INTENT, "bot.activateBlock(bot.blockAt(new Vec3(6, 64, -5)));"),
        [{"op": "use_station", "station": 0}], "I am faking the task at station 0"),
    ("an intent line naming itself", fn("console.log('[ARIA_SAY:Pink] shadowing blue');", FIND_BLUE,
        "await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, t.position.z, 3));"), [FOLLOW_BLUE], "shadowing blue"),
    ("an intent line before the function", "console.log('[ARIA_SAY:' + bot.username + '] wandering to blend in');\n"
        + fn("await bot.pathfinder.goto(new GoalXZ(-10, 3));"), [{"op": "go_to", "pos": [-10.0, 65.0, 3.0]}], "wandering to blend in"),
    ("an intent line later is ignored", fn("await bot.pathfinder.goto(new GoalXZ(16.5, 0.5));",
        "console.log('[ARIA_SAY:' + bot.username + '] late');"), GO_ADMIN, ""),
    ("the emergency button", fn("await bot.pathfinder.goto(new GoalNear(0.5, 65, 0.5, 1));",
        "bot.activateBlock(bot.blockAt(new Vec3(0, 64, 0)));"), [{"op": "press_button"}], None),
    ("the button found by its block", fn(
        "const b = bot.findBlock({ matching: b => b.name === 'redstone_block', maxDistance: 8 });",
        "if (b) bot.activateBlock(b);"), [{"op": "press_button"}], None),
    ("a walk from its own position", fn("const p = bot.entity.position;",
        "await bot.pathfinder.goto(new GoalXZ(p.x + 5, p.z));", "const q = p.offset(0, 0, -4);",
        "await bot.pathfinder.goto(new GoalNear(q.x, q.y, q.z, 1));"),
        [{"op": "go_to", "pos": [4.5, 65.0, 0.5]}, {"op": "go_to", "pos": [-0.5, 65.0, -3.5]}], None),
    ("a distance decides", fn("if (bot.entity.position.distanceTo(new Vec3(16.5, 65, 0.5)) > 3) {",
        "  await bot.pathfinder.goto(new GoalXZ(16.5, 0.5));", "}"), GO_ADMIN, None),
    ("a variable changed", fn("let x = 10;", "x = x + 2;", "x += 1;",
        "await bot.pathfinder.goto(new GoalXZ(x, 5));"), [{"op": "go_to", "pos": [13.0, 65.0, 5.0]}], None),
    ("statements without a function", "await bot.pathfinder.goto(new GoalXZ(16.5, 0.5));\nawait bot.waitForTicks(20);",
        [*GO_ADMIN, {"op": "wait", "ticks": 20}], None),
    ("items do nothing here", fn("bot.setQuickBarSlot(8);", "bot.activateItem();"), [], None),
    ("a function never called", "async function idle(bot) {\n  await bot.waitForTicks(20);\n}", [], None),
    ("in a Markdown fence", "```javascript\n" + fn("await bot.pathfinder.goto(new GoalXZ(16.5, 0.5));") + "\n```", GO_ADMIN, None),
    ("Math on coordinates", fn("const p = bot.entity.position;",
        "await bot.pathfinder.goto(new GoalXZ(Math.floor(p.x) + 10, Math.round(p.z)));"),
        [{"op": "go_to", "pos": [9.0, 65.0, 1.0]}], None),
    ("a conditional value", fn(FIND_BLUE, "const r = t ? 2 : 5;",
        "await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, t.position.z, r));"), [{**FOLLOW_BLUE, "distance": 2.0}], None),
    ("optional chaining", fn("const t = bot.nearestEntity(e => e.username === 'yellow');",
        "if (t?.position) { await bot.pathfinder.goto(new GoalXZ(0, 0)); }", "await bot.waitForTicks(10);"),
        [{"op": "wait", "ticks": 10}], None),
    ("a walk far from the station stays", fn("await bot.pathfinder.goto(new GoalXZ(16.5, 0.5));",
        "bot.activateBlock(bot.blockAt(new Vec3(6, 64, -5)));"), [*GO_ADMIN, {"op": "use_station", "station": 0}], None),
    ("a filter with a block body", fn("const t = bot.nearestEntity(e => {", "  const d = e.position.distanceTo(bot.entity.position);",
        "  return e.type === 'player' && d < 10;", "});",
        "await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, t.position.z, 3));"), [FOLLOW_BLUE], None),
    ("a filter held in a variable", fn("const isGreen = e => e.username === 'green';", "const t = bot.nearestEntity(isGreen);",
        "await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, t.position.z, 3));"),
        [{"op": "follow", "agent": "green", "distance": 3.0, "ticks": 100}], None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "code", "expected", "intent"), CASES, ids=[c[0] for c in CASES])
def test_reference_style_programs_translate(
    name: str, code: str, expected: list[dict[str, Any]], intent: str | None
) -> None:
    done = translate(code, scene(impostor=intent is not None))
    assert dump_actions(done.actions) == expected
    assert done.intent == (intent or "")


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 30 and len(HOSTILE) >= 30


def test_a_crewmates_intent_line_is_ignored() -> None:
    done = translate(fn(INTENT, "await bot.waitForTicks(20);"), scene(impostor=False))
    assert done.intent == "" and done.actions == [Wait(ticks=20)]
    assert "a crewmate's intent line is ignored" in done.notes


def test_an_intent_line_naming_another_is_ignored() -> None:
    done = translate(fn("console.log('[ARIA_SAY:blue] framing blue');"), scene(impostor=True))
    assert done.intent == "" and any("naming 'blue'" in n for n in done.notes)


def test_notes_say_what_was_merged_and_dropped() -> None:
    done = translate(CASES[10][1], scene())
    assert any("merged" in n for n in done.notes)
    assert any("task's own" in n for n in done.notes)
    cut = translate(fn("await bot.waitForTicks(5000);"), scene())
    assert cut.notes == ["wait of 5000 ticks cut to 1200"]


# (name, code, a part of the refusal's reason)
HOSTILE: list[tuple[str, str, str]] = [
    ("while", "while (true) {}", "loops are not allowed (while)"),
    ("for", fn("for (;;) { await bot.waitForTicks(1); }"), "loops are not allowed (for)"),
    ("do while", "do { } while (true);", "loops are not allowed (do"),
    ("for of", "for (const x of bot.players) {}", "loops are not allowed (for ... of)"),
    ("for in", "for (const k in bot) {}", "loops are not allowed (for ... in)"),
    ("a file written", "require('fs').writeFileSync('/tmp/pwned', 'x');", "`require` is not allowed"),
    ("a socket opened", "require('net').connect(80, '127.0.0.1');", "`require` is not allowed"),
    ("process", "process.exit(1);", "`process` is not allowed"),
    ("eval", "eval('bot.chat(1)');", "`eval` is not allowed"),
    ("Function", "new Function('return process')();", "`Function` is not allowed"),
    ("globalThis", "globalThis.bot.chat('x');", "`globalThis` is not allowed"),
    ("import()", "import('fs');", "import() is not allowed"),
    ("computed member", "bot['chat']('hi');", "computed member access"),
    ("chat", fn("bot.chat('on my way');"), "bot.chat is not allowed"),
    ("whisper", fn("bot.whisper('blue', 'hi');"), "bot.whisper is not allowed"),
    ("bot.on", fn("bot.on('chat', () => {});"), "event handlers (bot.on)"),
    ("bot.once", fn("bot.once('spawn', () => {});"), "event handlers (bot.once)"),
    ("try/catch", fn("try { await bot.waitForTicks(5); } catch (e) {}"), "try/catch is not allowed"),
    ("throw", fn("throw new Error('x');"), "throw is not allowed"),
    ("recursion", "async function f(bot) {\n  await f(bot);\n}\nawait f(bot);", "recursion"),
    ("two functions", "async function a(bot) {}\nasync function b(bot) {}\nawait a(bot);", "only one function"),
    ("a nested function", fn("function helper() {}"), "only one function may be declared"),
    ("called twice", "async function a(bot) {}\nawait a(bot);\nawait a(bot);", "called more than once"),
    ("a template with ${}", fn("console.log(`${bot.username}`);"), "template literals with ${...}"),
    ("control state", fn("bot.setControlState('forward', true);"), "bot.setControlState is not allowed"),
    ("setGoal", fn("bot.pathfinder.setGoal(new GoalXZ(1, 1));"), "`bot.pathfinder.setGoal` is not in the allowed API"),
    ("goto not awaited", fn("bot.pathfinder.goto(new GoalXZ(1, 1));"), "must be awaited"),
    ("wait not awaited", fn("bot.waitForTicks(20);"), "must be awaited"),
    ("too long", fn("await bot.waitForTicks(1);") + "\n//" + "x" * MAX_CODE_CHARS, "characters long"),
    ("not JavaScript", "async function (bot) { goto(", "not JavaScript"),
    ("no station there", fn("bot.activateBlock(bot.blockAt(new Vec3(100, 64, 100)));"), "no station or button at (100, 64, 100)"),
    ("nothing to activate", fn("const b = bot.findBlock({ matching: b => b.name === 'oak_button' });",
        "bot.activateBlock(b);"), "activateBlock of nothing"),
    ("a property written", fn("bot.entity.position = new Vec3(0, 0, 0);"), "only variables may be assigned"),
    ("this", "this.bot.chat('x');", "`this` is not allowed"),
    ("a class", "class A {}", "classes are not allowed"),
    ("Object", "Object.keys(bot);", "`Object` is not allowed"),
    ("the constructor's constructor", "bot.constructor.constructor('return process')();", "`.constructor` is not allowed"),
    ("__proto__", fn("const p = bot.__proto__;"), "`.__proto__` is not allowed"),
    ("destructuring", fn("const { entity } = bot;"), "destructuring is not allowed"),
    ("another goal", fn("await bot.pathfinder.goto(new GoalFollow(bot.entity, 2));"), "unknown name `GoalFollow`"),
    ("setTimeout", "setTimeout(() => {}, 10);", "`setTimeout` is not allowed"),
    ("Math.random", fn("await bot.waitForTicks(Math.random() * 10);"), "Math.random is not allowed"),
    ("a label", "a: { }", "labels are not allowed"),
    ("a regular expression", fn("const ok = /blue/.test('blue');"), "regular expressions are not allowed"),
    ("with", "with (bot) { chat('x'); }", "with is not allowed"),
    ("too many actions", fn(*[f"await bot.pathfinder.goto(new GoalXZ({i}, 3)); await bot.waitForTicks(5);" for i in range(5)]),
        "more than 7 actions"),
    ("switch", fn("switch (1) { default: }"), "switch is not in the allowed subset"),
    ("fetch", "fetch('http://127.0.0.1/');", "`fetch` is not allowed"),
    ("quit", fn("bot.quit();"), "bot.quit is not allowed"),
    ("nested too deeply", fn("const x = " + "!" * 200 + "true;"), "nested too deeply"),
    ("empty", "   ", "the program is empty"),
    ("a constant changed", fn("const a = 1;", "a = 2;"), "`a` is a constant"),
    ("a negative wait", fn("await bot.waitForTicks(-5);"), "negative"),
    ("a goal short of numbers", fn("await bot.pathfinder.goto(new GoalNear(1, 2));"), "GoalNear takes 3 or 4 numbers"),
    ("void", fn("void bot.activateItem();"), "the operator `void` is not allowed"),
    ("typeof", fn("const k = typeof bot;"), "the operator `typeof` is not allowed"),
    ("a function called", fn("const say = () => bot.chat('x');", "say();"), "functions may only be given as filters"),
    ("a filter that acts", fn("bot.nearestEntity(e => bot.activateItem());"), "a filter may only read"),
    ("delete", fn("delete bot.pathfinder;"), "the operator `delete` is not allowed"),
    ("a read outside the API", fn("const y = bot.entity.yaw;"), "`bot.entity.yaw` is not in the allowed API"),
    ("a comma expression", fn("await bot.waitForTicks(1), bot.chat('x');"), "comma expressions are not allowed"),
    ("a property of null", fn("const t = bot.nearestEntity(e => e.username === 'yellow');",
        "await bot.pathfinder.goto(new GoalNear(t.position.x, 65, 0, 1));"), "reads `.position` of null"),
    ("the function given something else", "async function a(bot) {}\nawait a(process);", "`process` is not allowed"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "code", "reason"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_and_out_of_subset_answers_are_refused(name: str, code: str, reason: str) -> None:
    with pytest.raises(Refused) as refused:
        translate(code, scene(impostor=True))
    assert reason in str(refused.value)


def test_an_answer_that_would_write_open_or_spin_does_none_of_it(tmp_path: Path) -> None:
    """The parser only builds a tree: a file write, a socket and an endless loop are
    parsed quickly, refused, and none of them happens (neither in the one-shot parse.js
    nor through the parser process)."""
    target = tmp_path / "pwned"
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    programs = [
        f"require('fs').writeFileSync({json.dumps(str(target))}, 'x');",
        f"const s = require('net').connect({port}, '127.0.0.1'); s.write('x');",
        "while (true) {}",
        fn("for (;;) { }"),
        f"process.mainModule.require('child_process').execSync('touch {target}');",
        f"eval({json.dumps(f'require(`fs`).writeFileSync({json.dumps(str(target))}, `x`)')});",
    ]
    env = {"PATH": os.environ["PATH"], "NODE_PATH": str(node_modules())}
    try:
        for code in programs:
            started = time.perf_counter()
            tree = parse_js(code)
            assert tree["type"] == "Program"
            with pytest.raises(Refused):
                translate(code, scene())
            # the one-shot form of the script too
            once = subprocess.run(
                ["node", str(SCRIPT)], input=code.encode(), capture_output=True, env=env, timeout=20
            )
            assert json.loads(once.stdout)["ok"] is True
            assert time.perf_counter() - started < 10
        assert not target.exists()
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_the_parser_process_is_reused_and_restarted() -> None:
    parser = JsParser()
    try:
        assert parser.parse("1;")["body"][0]["type"] == "ExpressionStatement"
        first = parser._proc
        assert first is not None
        for _ in range(20):
            parser.parse("await bot.waitForTicks(1);")
        assert parser._proc is first  # one process for many parses
        started = time.perf_counter()
        for _ in range(50):
            parser.parse("await bot.waitForTicks(1);")
        assert (time.perf_counter() - started) / 50 < 0.05
        first.kill()
        first.wait()
        assert parser.parse("2;")["body"]  # a stopped process is replaced
        assert parser._proc is not first
    finally:
        parser.close()


def test_a_parser_that_cannot_start_is_the_harnesss_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(parser_module.NODE_MODULES_ENV, str(tmp_path))
    with pytest.raises(ParserUnavailable, match="acorn is missing"):
        JsParser().parse("1;")


def test_a_parser_that_does_not_answer_in_time_is_stopped() -> None:
    parser = JsParser(timeout_s=0.0)
    with pytest.raises(ParserUnavailable, match="no answer"):
        parser.parse("1;")
    assert parser._proc is None
    parser.timeout_s = 5.0
    try:
        assert parser.parse("1;")["type"] == "Program"
    finally:
        parser.close()


def test_a_syntax_error_is_the_models() -> None:
    with pytest.raises(Refused, match="not JavaScript: SyntaxError"):
        translate("await bot.pathfinder.goto(new GoalXZ(1, 2)", scene())


def test_the_translation_is_a_value() -> None:
    done = translate(fn("await bot.waitForTicks(20);"), scene())
    assert done == Translation(actions=[Wait(ticks=20)], intent="", notes=[])
