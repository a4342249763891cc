"""A model-written Mineflayer program, translated into program primitives, never run.

The reference harness asks a model for one async Mineflayer function per MOVE or
MISSION action and runs it. Here the text is parsed by acorn (`harness_aria.codegen.
parser`) and this module walks the syntax tree: each allowed call, in an allowed shape,
becomes one of the whitelisted primitives of `controller.programs` (go_to, follow, wait,
use_station, press_button), and anything outside the subset refuses the whole answer with
a reason (`Refused`). The walk reads the tree only: it follows the program's statements
in order, keeping the values the allowed reads give (the bot's position, a player's
position, a station's block) from what the agent knows (`Scene`), and never hands any of
the text to an interpreter. The subset has no loops, no recursion and one function, and
the walk counts statements and depth, so it always ends.

What each call becomes is the table `_CALLS` (documented as a table in `docs/aria.md`,
"Model-written programs"): a `goto` becomes `go_to` (a station, a room's centre or a
position) or, when its goal is exactly a player's position read from
`bot.nearestEntity`, `follow`; `activateBlock` of a station's block `use_station`, of the
emergency button's `press_button`; `waitForTicks` `wait`; an impostor's first-line
`console.log('[ARIA_SAY:...] ...')` the decision's private intent; the reads give values
and no primitive.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from controller.actions import (
    MAX_ACTIONS,
    MAX_WAIT_TICKS,
    AnyAction,
    Follow,
    GoTo,
    PressButton,
    UseStation,
    Wait,
)
from harness_aria.codegen.parser import JsSyntaxError, parse_js

Node = dict[str, Any]
Vec3 = tuple[float, float, float]

MAX_CODE_CHARS = 4000
"""Longest program read (characters); a longer one is refused before it is parsed."""
MAX_STATEMENTS = 400
"""Most statements the walk may pass through (no loops: the program's length, and a
filter's statements once for each candidate it is run on)."""
MAX_DEPTH = 60
"""Deepest nesting of expressions and blocks."""
MAX_PROGRAM_ACTIONS = MAX_ACTIONS - 1
"""Most primitives a translation may give: one less than a program holds, so a
crewmate's look behind (SURVEILLANCE) still fits after it."""
FOLLOW_TICKS = 100
"""How long a translated follow lasts (as MOVE's own follow)."""
NEAR = 1.0
"""Blocks (horizontally) within which a goal's point is a station's or a room centre's."""
MERGE = 3.0
"""Blocks within which a walk right before a station's or the button's activation is the
walk that activation makes anyway."""
STATION_BLOCK = "emerald_block"
"""The block of a task station (`world.builder`)."""
BUTTON_BLOCK = "redstone_block"
"""The floor block of the emergency button (`world.builder`)."""
FIND_DISTANCE = 16.0
"""`bot.findBlock`'s default `maxDistance` (Mineflayer's)."""
INTENT = re.compile(r"^\s*\[ARIA_SAY:\s*([^\]]*)\]\s*(.*)$", re.S)
"""The reference's private intent line: `[ARIA_SAY:<name>] <intent>`."""

GOALS = ("GoalNear", "GoalXZ", "GoalBlock")
FORBIDDEN_NAMES = frozenset(
    {
        "require",
        "process",
        "eval",
        "Function",
        "globalThis",
        "global",
        "window",
        "module",
        "exports",
        "import",
        "Buffer",
        "setTimeout",
        "setInterval",
        "setImmediate",
        "Promise",
        "fetch",
        "Reflect",
        "Proxy",
        "Object",
        "constructor",
        "__proto__",
        "prototype",
    }
)
"""Names a program may not use, said as such in the refusal (any other unknown name is
refused too)."""
_STATEMENT_REASONS = {
    "ForStatement": "loops are not allowed (for)",
    "ForInStatement": "loops are not allowed (for ... in)",
    "ForOfStatement": "loops are not allowed (for ... of)",
    "WhileStatement": "loops are not allowed (while)",
    "DoWhileStatement": "loops are not allowed (do ... while)",
    "TryStatement": "try/catch is not allowed",
    "ThrowStatement": "throw is not allowed",
    "SwitchStatement": "switch is not in the allowed subset (use if/else)",
    "LabeledStatement": "labels are not allowed",
    "BreakStatement": "break is not allowed",
    "ContinueStatement": "continue is not allowed",
    "WithStatement": "with is not allowed",
    "DebuggerStatement": "debugger is not allowed",
    "ClassDeclaration": "classes are not allowed",
    "ImportDeclaration": "imports are not allowed",
}
_EXPRESSION_REASONS = {
    "ImportExpression": "import() is not allowed",
    "ThisExpression": "`this` is not allowed",
    "Super": "`super` is not allowed",
    "MetaProperty": "`new.target` and `import.meta` are not allowed",
    "YieldExpression": "generators are not allowed",
    "ClassExpression": "classes are not allowed",
    "SequenceExpression": "comma expressions are not allowed",
    "ArrayExpression": "arrays are not in the allowed subset",
    "TaggedTemplateExpression": "tagged templates are not allowed",
    "SpreadElement": "spread (...) is not allowed",
}


class Refused(ValueError):
    """The answer is outside the allowed subset; the message says where and why."""


@dataclass(frozen=True)
class Scene:
    """What the agent knows when its program is translated (its filtered observation
    and the map): the values the program's reads give.

    Attributes:
        me: The agent's player name (`bot.username`).
        impostor: Whether it is an impostor (only an impostor's intent line counts).
        pos: Where it stands (`bot.entity.position` before any walk).
        players: The living players it knows the position of now (ego: in view;
            privileged: in sight or on the roster), by name: what `bot.nearestEntity`
            can find.
        stations: Task stations: id -> where a player stands to do the task.
        button: Where a player stands to press the emergency button.
        rooms: Room -> its centre (where `go_to` a room walks).
        floor_y: The y of the floor blocks (stations and the button are floor blocks).
    """

    me: str
    impostor: bool
    pos: Vec3
    players: Mapping[str, Vec3]
    stations: Mapping[int, Vec3]
    button: Vec3 | None
    rooms: Mapping[str, Vec3]
    floor_y: float


@dataclass
class Translation:
    """A translated program: its primitives, the impostor's intent line, and what the
    translation noted (calls that do nothing, merges, clamps)."""

    actions: list[AnyAction] = field(default_factory=list)
    intent: str = ""
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------- values
class _Undefined:
    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = _Undefined()


class Coord(float):
    """A number read from a player's position: remembers whose and which axis, so that a
    goal at exactly that player's position is a follow of it."""

    of: str
    axis: str

    def __new__(cls, value: float, of: str, axis: str) -> Coord:
        obj = float.__new__(cls, value)
        obj.of, obj.axis = of, axis
        return obj


@dataclass(frozen=True)
class Vec:
    """A position (`Vec3`); `of` names the player whose current position it is."""

    x: float
    y: float
    z: float
    of: str | None = None

    @property
    def xyz(self) -> Vec3:
        return (float(self.x), float(self.y), float(self.z))


@dataclass(frozen=True)
class Entity:
    """A player `bot.nearestEntity` found."""

    name: str
    pos: Vec3


@dataclass(frozen=True)
class Block:
    """A block `bot.findBlock` or `bot.blockAt` gave: a station's, the button's, or
    another."""

    kind: Literal["station", "button", "other"]
    pos: Vec3
    name: str
    station: int | None = None


@dataclass(frozen=True)
class Goal:
    """A pathfinder goal."""

    kind: str
    x: float
    y: float
    z: float
    range: float
    of: str | None = None


@dataclass(frozen=True)
class Api:
    """An object of the allowed API: `bot`, `bot.entity`, `bot.pathfinder`, `console`,
    `Math`."""

    path: str


@dataclass(frozen=True)
class Method:
    """A method read off an allowed object (called at once, or refused)."""

    owner: Any
    name: str


@dataclass(frozen=True)
class Ctor:
    """`GoalNear`, `GoalXZ`, `GoalBlock`, `Vec3` (`new X(...)`; `vec3(...)` too)."""

    name: str


@dataclass(frozen=True)
class Func:
    """An arrow function or function expression: a filter for `nearestEntity` or a
    `matching` for `findBlock`, called by the walk on each candidate."""

    node: Node
    scope: _Scope


@dataclass(frozen=True)
class Declared:
    """The program's one function."""

    name: str


@dataclass(frozen=True)
class Options:
    """An object literal (`findBlock`'s options)."""

    items: tuple[tuple[str, Any], ...]

    def get(self, key: str, default: Any = UNDEFINED) -> Any:
        return next((v for k, v in self.items if k == key), default)


BOT = Api("bot")
_GLOBALS: dict[str, Any] = {
    "bot": BOT,
    "console": Api("console"),
    "Math": Api("Math"),
    "undefined": UNDEFINED,
    "GoalNear": Ctor("GoalNear"),
    "GoalXZ": Ctor("GoalXZ"),
    "GoalBlock": Ctor("GoalBlock"),
    "Vec3": Ctor("Vec3"),
    "vec3": Ctor("Vec3"),
}
_API_PROPERTIES: dict[str, dict[str, Any]] = {
    "bot": {
        "entity": Api("bot.entity"),
        "pathfinder": Api("bot.pathfinder"),
        "nearestEntity": "method",
        "findBlock": "method",
        "blockAt": "method",
        "activateBlock": "method",
        "activateItem": "method",
        "setQuickBarSlot": "method",
        "waitForTicks": "method",
        "username": "username",
    },
    "bot.entity": {"position": "position"},
    "bot.pathfinder": {"goto": "method"},
    "console": {"log": "method"},
    "Math": {m: "method" for m in ("floor", "round", "ceil", "abs", "min", "max", "sqrt")},
}
_API_REFUSALS = {
    ("bot", "chat"): "bot.chat is not allowed: players speak only in meetings",
    ("bot", "whisper"): "bot.whisper is not allowed: players speak only in meetings",
    ("bot", "on"): "event handlers (bot.on) are not allowed",
    ("bot", "once"): "event handlers (bot.once) are not allowed",
    ("bot", "addListener"): "event handlers (bot.addListener) are not allowed",
    ("bot", "prependListener"): "event handlers are not allowed",
    ("bot", "removeListener"): "event handlers are not allowed",
    ("bot", "removeAllListeners"): "event handlers are not allowed",
    ("bot", "setControlState"): "bot.setControlState is not allowed: move with pathfinder.goto",
    ("bot", "attack"): "bot.attack is not in the allowed API",
    ("bot", "quit"): "bot.quit is not allowed",
    ("bot", "end"): "bot.end is not allowed",
    ("Math", "random"): "Math.random is not allowed",
}
_VEC_METHODS = frozenset({"offset", "plus", "minus", "distanceTo", "floored", "clone"})
_ENTITY_PROPERTIES = frozenset({"position", "username", "name", "type", "displayName"})
_BLOCK_PROPERTIES = frozenset({"position", "name"})


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        super().__init__("return")
        self.value = value


@dataclass
class _Scope:
    parent: _Scope | None
    names: dict[str, Any] = field(default_factory=dict)
    constant: set[str] = field(default_factory=set)

    def find(self, name: str) -> _Scope | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope
            scope = scope.parent
        return None


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _truthy(value: Any) -> bool:
    if value is None or value is UNDEFINED:
        return False
    if isinstance(value, bool):
        return value
    if _is_num(value):
        return value != 0 and not math.isnan(value)
    if isinstance(value, str):
        return value != ""
    return True


def _js_str(value: Any) -> str:
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_num(value):
        v = float(value)
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(value, str):
        return value
    if isinstance(value, Vec):
        return f"({_js_str(value.x)}, {_js_str(value.y)}, {_js_str(value.z)})"
    return "[object Object]"


def _horizontal(a: Vec3, b: Vec3) -> float:
    return math.hypot(a[0] - b[0], a[2] - b[2])


def strip_fence(code: str) -> tuple[str, bool]:
    """The code inside a Markdown code fence (```js ... ```), if the whole answer is one."""
    text = code.strip()
    m = re.fullmatch(r"```[A-Za-z]*[ \t]*\n(.*?)\n?```", text, re.S)
    return (m.group(1), True) if m else (text, False)


def translate(code: str, scene: Scene, parse: Callable[[str], Node] = parse_js) -> Translation:
    """Translate a model-written program into program primitives.

    Args:
        code: The answer's `code`.
        scene: What the agent knows (the values the program's reads give).
        parse: The parser (the shared acorn process by default).

    Returns:
        The primitives, the impostor's intent line and the translation's notes.

    Raises:
        Refused: the program is empty, too long, not JavaScript, or outside the subset;
            the message says why.
        ParserUnavailable: the parser could not run (the harness's fault).
    """
    text, fenced = strip_fence(code)
    if not text.strip():
        raise Refused("the program is empty")
    if len(text) > MAX_CODE_CHARS:
        raise Refused(f"the program is {len(text)} characters long (at most {MAX_CODE_CHARS})")
    try:
        tree = parse(text)
    except JsSyntaxError as exc:
        raise Refused(f"not JavaScript: {exc}") from None
    walker = _Walker(scene, text)
    if fenced:
        walker.out.notes.append("code: Markdown fence removed")
    return walker.program(tree)


class _Walker:
    """One walk over one program's tree."""

    def __init__(self, scene: Scene, text: str) -> None:
        self.scene = scene
        self.text = text
        self.out = Translation()
        self.pos: Vec3 = scene.pos
        self.glob = _Scope(None, dict(_GLOBALS), set(_GLOBALS))
        self.function: Node | None = None
        self.called = False
        self.in_function = False
        self.filters = 0
        self.statements = 0
        self.depth = 0
        self.intent_nodes: set[int] = set()
        self.statement: Node | None = None
        self.absorbed = False

    # -- errors -----------------------------------------------------------------
    def refuse(self, node: Node | None, reason: str) -> Refused:
        if node is not None and isinstance(node.get("start"), int):
            snippet = " ".join(self.text[node["start"] : node["end"]].split())
            if len(snippet) > 60:
                snippet = snippet[:57] + "..."
            line = self.text.count("\n", 0, node["start"]) + 1
            return Refused(f"{reason} (line {line}: `{snippet}`)")
        return Refused(reason)

    # -- the program ------------------------------------------------------------
    def program(self, tree: Node) -> Translation:
        body: list[Node] = tree.get("body", [])
        functions = [s for s in body if s.get("type") == "FunctionDeclaration"]
        if len(functions) > 1:
            raise self.refuse(functions[1], "only one function may be declared")
        if body:
            self.intent_nodes.add(id(body[0]))
        if functions:
            fn = functions[0]
            self._check_function(fn)
            self.function = fn
            self.glob.names[fn["id"]["name"]] = Declared(fn["id"]["name"])
            self.glob.constant.add(fn["id"]["name"])
            inner = fn["body"]["body"]
            if inner:
                self.intent_nodes.add(id(inner[0]))
        try:
            for stmt in body:
                if stmt.get("type") != "FunctionDeclaration":
                    self.exec(stmt, self.glob)
        except _Return:
            raise self.refuse(None, "return outside the function") from None
        if self.function is not None and not self.called:
            self.out.notes.append("the function is never called: the program does nothing")
        return self.out

    def _check_function(self, fn: Node) -> None:
        if fn.get("generator"):
            raise self.refuse(fn, "generators are not allowed")
        params = fn.get("params", [])
        if len(params) > 1 or any(p.get("type") != "Identifier" for p in params):
            raise self.refuse(fn, "the function takes one parameter, the bot")
        for name in [fn["id"]["name"], *(p["name"] for p in params)]:
            if name in _GLOBALS and name != "bot":
                raise self.refuse(fn, f"`{name}` is a name of the API")

    def _call_declared(self, node: Node, args: list[Any]) -> Any:
        fn = self.function
        assert fn is not None
        if self.in_function:
            raise self.refuse(node, "recursion: the function calls itself")
        if self.filters:
            raise self.refuse(node, "the function is called inside a filter")
        if self.called:
            raise self.refuse(node, "the function is called more than once")
        if len(args) > 1 or (args and args[0] is not BOT):
            raise self.refuse(node, "the function is called with something other than `bot`")
        self.called = True
        scope = _Scope(self.glob)
        for p in fn.get("params", []):
            scope.names[p["name"]] = BOT
            scope.constant.add(p["name"])
        self.in_function = True
        try:
            self.block(fn["body"]["body"], scope)
        except _Return:
            pass
        finally:
            self.in_function = False
        return UNDEFINED

    # -- statements ---------------------------------------------------------------
    def block(self, body: list[Node], scope: _Scope) -> None:
        for stmt in body:
            self.exec(stmt, scope)

    def exec(self, stmt: Node, scope: _Scope) -> None:
        self.statements += 1
        if self.statements > MAX_STATEMENTS:
            raise self.refuse(stmt, f"more than {MAX_STATEMENTS} statements")
        kind = stmt.get("type", "")
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise self.refuse(stmt, "the program is nested too deeply")
            if kind == "ExpressionStatement":
                previous, self.statement = self.statement, stmt
                try:
                    self.eval(stmt["expression"], scope)
                finally:
                    self.statement = previous
            elif kind == "VariableDeclaration":
                self.declare(stmt, scope)
            elif kind == "IfStatement":
                if _truthy(self.eval(stmt["test"], scope)):
                    self.exec(stmt["consequent"], _Scope(scope))
                elif stmt.get("alternate") is not None:
                    self.exec(stmt["alternate"], _Scope(scope))
            elif kind == "BlockStatement":
                self.block(stmt["body"], _Scope(scope))
            elif kind == "ReturnStatement":
                arg = stmt.get("argument")
                raise _Return(self.eval(arg, scope) if arg is not None else UNDEFINED)
            elif kind == "EmptyStatement":
                pass
            elif kind == "FunctionDeclaration":
                raise self.refuse(stmt, "only one function may be declared, at the top")
            elif kind in _STATEMENT_REASONS:
                raise self.refuse(stmt, _STATEMENT_REASONS[kind])
            else:
                raise self.refuse(stmt, f"{kind} is not in the allowed subset")
        finally:
            self.depth -= 1

    def declare(self, stmt: Node, scope: _Scope) -> None:
        const = stmt.get("kind") == "const"
        for d in stmt.get("declarations", []):
            target = d.get("id", {})
            if target.get("type") != "Identifier":
                raise self.refuse(d, "destructuring is not allowed")
            name = target["name"]
            if name in _GLOBALS or name in FORBIDDEN_NAMES:
                raise self.refuse(d, f"`{name}` may not be declared")
            if name in scope.names:
                raise self.refuse(d, f"`{name}` is declared twice")
            init = d.get("init")
            if init is None and const:
                raise self.refuse(d, f"const `{name}` has no value")
            scope.names[name] = self.eval(init, scope) if init is not None else UNDEFINED
            if const:
                scope.constant.add(name)

    # -- expressions --------------------------------------------------------------
    def eval(self, node: Node, scope: _Scope, *, awaited: bool = False) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise self.refuse(node, "the program is nested too deeply")
            return self._eval(node, scope, awaited)
        finally:
            self.depth -= 1

    def _eval(self, node: Node, scope: _Scope, awaited: bool) -> Any:
        kind = node.get("type", "")
        if kind == "Literal":
            return self.literal(node)
        if kind == "Identifier":
            return self.name(node, scope)
        if kind == "TemplateLiteral":
            if node.get("expressions"):
                raise self.refuse(node, "template literals with ${...} are not allowed")
            return "".join(q["value"]["cooked"] or "" for q in node["quasis"])
        if kind == "AwaitExpression":
            return self.eval(node["argument"], scope, awaited=True)
        if kind == "ChainExpression":
            return self.eval(node["expression"], scope, awaited=awaited)
        if kind == "MemberExpression":
            return self.member(node, scope)
        if kind == "CallExpression":
            return self.call(node, scope, awaited)
        if kind == "NewExpression":
            return self.new(node, scope)
        if kind in ("ArrowFunctionExpression", "FunctionExpression"):
            if node.get("async") or node.get("generator"):
                raise self.refuse(node, "only plain functions may be filters")
            return Func(node, scope)
        if kind == "BinaryExpression":
            return self.binary(node, scope)
        if kind == "LogicalExpression":
            left = self.eval(node["left"], scope)
            op = node["operator"]
            if op == "&&":
                return self.eval(node["right"], scope) if _truthy(left) else left
            if op == "||":
                return left if _truthy(left) else self.eval(node["right"], scope)
            return self.eval(node["right"], scope) if left is None or left is UNDEFINED else left
        if kind == "UnaryExpression":
            return self.unary(node, scope)
        if kind == "ConditionalExpression":
            test = _truthy(self.eval(node["test"], scope))
            return self.eval(node["consequent" if test else "alternate"], scope)
        if kind == "ObjectExpression":
            return self.options(node, scope)
        if kind in ("AssignmentExpression", "UpdateExpression"):
            return self.assign(node, scope)
        if kind in _EXPRESSION_REASONS:
            raise self.refuse(node, _EXPRESSION_REASONS[kind])
        raise self.refuse(node, f"{kind} is not in the allowed subset")

    def literal(self, node: Node) -> Any:
        if "regex" in node:
            raise self.refuse(node, "regular expressions are not allowed")
        if "bigint" in node:
            raise self.refuse(node, "BigInt literals are not allowed")
        value = node.get("value")
        if value is None or isinstance(value, bool | int | float | str):
            return value
        raise self.refuse(node, "this literal is not allowed")

    def name(self, node: Node, scope: _Scope) -> Any:
        name = node["name"]
        owner = scope.find(name)
        if owner is not None:
            return owner.names[name]
        if name in FORBIDDEN_NAMES:
            raise self.refuse(node, f"`{name}` is not allowed")
        raise self.refuse(node, f"unknown name `{name}` (not in the allowed API)")

    def assign(self, node: Node, scope: _Scope) -> Any:
        target = node["argument"] if node["type"] == "UpdateExpression" else node["left"]
        if target.get("type") != "Identifier":
            raise self.refuse(node, "only variables may be assigned (no properties)")
        name = target["name"]
        owner = scope.find(name)
        if owner is None or owner is self.glob and name in _GLOBALS:
            raise self.refuse(node, f"`{name}` may not be assigned")
        if name in owner.constant:
            raise self.refuse(node, f"`{name}` is a constant")
        if node["type"] == "UpdateExpression":
            old = owner.names[name]
            if not _is_num(old):
                raise self.refuse(node, f"`{name}` is not a number")
            new = old + (1 if node["operator"] == "++" else -1)
            owner.names[name] = new
            return new if node.get("prefix") else old
        op = node["operator"]
        value = self.eval(node["right"], scope)
        if op != "=":
            value = self.arith(node, op[:-1], owner.names[name], value)
        owner.names[name] = value
        return value

    def options(self, node: Node, scope: _Scope) -> Options:
        items = []
        for p in node.get("properties", []):
            if p.get("type") != "Property" or p.get("computed") or p.get("kind") != "init":
                raise self.refuse(p, "only plain `key: value` object entries are allowed")
            if p.get("method"):
                raise self.refuse(p, "methods in objects are not allowed")
            key = p["key"]
            name = key.get("name") if key.get("type") == "Identifier" else key.get("value")
            if not isinstance(name, str) or name in ("__proto__", "constructor"):
                raise self.refuse(p, "object keys must be plain names")
            items.append((name, self.eval(p["value"], scope)))
        return Options(tuple(items))

    def unary(self, node: Node, scope: _Scope) -> Any:
        op = node["operator"]
        if op not in ("!", "-", "+"):
            raise self.refuse(node, f"the operator `{op}` is not allowed")
        value = self.eval(node["argument"], scope)
        if op == "!":
            return not _truthy(value)
        if not _is_num(value):
            raise self.refuse(node, f"`{op}` of something that is not a number")
        return -value if op == "-" else value

    def binary(self, node: Node, scope: _Scope) -> Any:
        op = node["operator"]
        left = self.eval(node["left"], scope)
        right = self.eval(node["right"], scope)
        if op in ("===", "==", "!==", "!="):
            same = self.equal(left, right, loose=op in ("==", "!="))
            return same if op in ("===", "==") else not same
        if op in ("<", "<=", ">", ">="):
            if not (
                (_is_num(left) and _is_num(right))
                or (isinstance(left, str) and isinstance(right, str))
            ):
                raise self.refuse(node, f"`{op}` compares things that are not numbers")
            return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[
                op
            ]
        return self.arith(node, op, left, right)

    def arith(self, node: Node, op: str, left: Any, right: Any) -> Any:
        if op == "+" and (isinstance(left, str) or isinstance(right, str)):
            return _js_str(left) + _js_str(right)
        if op not in ("+", "-", "*", "/", "%"):
            raise self.refuse(node, f"the operator `{op}` is not allowed")
        if not (_is_num(left) and _is_num(right)):
            raise self.refuse(node, f"`{op}` of something that is not a number")
        a, b = float(left), float(right)
        if op in ("/", "%") and b == 0:
            raise self.refuse(node, "division by zero")
        result = {"+": a + b, "-": a - b, "*": a * b, "/": a / b, "%": math.fmod(a, b)}[op]
        if not math.isfinite(result):
            raise self.refuse(node, "a number out of range")
        return result

    @staticmethod
    def equal(a: Any, b: Any, *, loose: bool) -> bool:
        if loose and a in (None, UNDEFINED) and b in (None, UNDEFINED):
            return True
        if _is_num(a) and _is_num(b):
            return float(a) == float(b)
        if isinstance(a, str) and isinstance(b, str):
            # Player names are compared as names: `e.username === 'Blue'` finds blue.
            return a.lower() == b.lower()
        if isinstance(a, bool) or isinstance(b, bool):
            return a is b
        return a is b or (type(a) is type(b) and a == b)

    # -- reads ---------------------------------------------------------------------
    def member(self, node: Node, scope: _Scope) -> Any:
        if node.get("computed"):
            raise self.refuse(node, "computed member access (x[...]) is not allowed")
        prop = node["property"]
        if prop.get("type") != "Identifier":
            raise self.refuse(node, "private names are not allowed")
        name = prop["name"]
        obj = self.eval(node["object"], scope)
        if obj is None or obj is UNDEFINED:
            if node.get("optional"):
                return UNDEFINED
            raise self.refuse(node, f"reads `.{name}` of {_js_str(obj)}: the program would fail")
        return self.read(node, obj, name)

    def read(self, node: Node, obj: Any, name: str) -> Any:
        if name in ("constructor", "__proto__", "prototype"):
            raise self.refuse(node, f"`.{name}` is not allowed")
        if isinstance(obj, Api):
            refusal = _API_REFUSALS.get((obj.path, name))
            if refusal:
                raise self.refuse(node, refusal)
            what = _API_PROPERTIES.get(obj.path, {}).get(name)
            if what is None:
                raise self.refuse(node, f"`{obj.path}.{name}` is not in the allowed API")
            if what == "method":
                return Method(obj, name)
            if what == "username":
                return self.scene.me
            if what == "position":
                return Vec(*self.pos)
            return what
        if isinstance(obj, Vec):
            if name in ("x", "y", "z"):
                value = getattr(obj, name)
                return Coord(value, obj.of, name) if obj.of is not None else value
            if name in _VEC_METHODS:
                return Method(obj, name)
            raise self.refuse(node, f"`.{name}` of a position is not in the allowed API")
        if isinstance(obj, Entity):
            if name not in _ENTITY_PROPERTIES:
                raise self.refuse(node, f"`.{name}` of an entity is not in the allowed API")
            if name == "position":
                return Vec(*obj.pos, of=obj.name)
            return "player" if name in ("type", "name") else obj.name
        if isinstance(obj, Block):
            if name not in _BLOCK_PROPERTIES:
                raise self.refuse(node, f"`.{name}` of a block is not in the allowed API")
            return Vec(*obj.pos) if name == "position" else obj.name
        raise self.refuse(node, f"`.{name}` is not in the allowed API")

    # -- calls -----------------------------------------------------------------------
    def new(self, node: Node, scope: _Scope) -> Any:
        callee = self.eval(node["callee"], scope)
        if not isinstance(callee, Ctor):
            raise self.refuse(node, "`new` is allowed only for GoalNear, GoalXZ, GoalBlock, Vec3")
        return self.construct(node, callee, self.args(node, scope))

    def args(self, node: Node, scope: _Scope) -> list[Any]:
        out = []
        for a in node.get("arguments", []):
            if a.get("type") == "SpreadElement":
                raise self.refuse(a, "spread (...) is not allowed")
            out.append(self.eval(a, scope))
        return out

    def numbers(self, node: Node, args: list[Any], what: str, counts: tuple[int, ...]) -> list[Any]:
        if len(args) not in counts or not all(_is_num(a) for a in args):
            want = " or ".join(str(c) for c in counts)
            raise self.refuse(node, f"{what} takes {want} numbers")
        if not all(math.isfinite(a) for a in args):
            raise self.refuse(node, f"{what} of a number out of range")
        return args

    def construct(self, node: Node, ctor: Ctor, args: list[Any]) -> Any:
        if ctor.name == "Vec3":
            x, y, z = self.numbers(node, args, "Vec3", (3,))
            return Vec(float(x), float(y), float(z))
        if ctor.name == "GoalXZ":
            x, z = self.numbers(node, args, "GoalXZ", (2,))
            return Goal("xz", float(x), self.pos[1], float(z), 1.0)
        if ctor.name == "GoalBlock":
            x, y, z = self.numbers(node, args, "GoalBlock", (3,))
            goal = Goal("block", math.floor(x) + 0.5, float(y), math.floor(z) + 0.5, 1.0)
            return _follows(goal, x, y, z)
        x, y, z, *rest = self.numbers(node, args, "GoalNear", (3, 4))
        reach = float(rest[0]) if rest else 1.0
        if reach < 0:
            raise self.refuse(node, "GoalNear's range is negative")
        return _follows(Goal("near", float(x), float(y), float(z), reach), x, y, z)

    def call(self, node: Node, scope: _Scope, awaited: bool) -> Any:
        callee = self.eval(node["callee"], scope)
        args = self.args(node, scope)
        if isinstance(callee, Declared):
            if not awaited:
                self.out.notes.append(f"{callee.name} called without await")
            return self._call_declared(node, args)
        if isinstance(callee, Ctor) and callee.name == "Vec3":
            return self.construct(node, callee, args)
        if isinstance(callee, Func):
            raise self.refuse(node, "functions may only be given as filters")
        if not isinstance(callee, Method):
            raise self.refuse(node, "this is not a function of the allowed API")
        owner = callee.owner
        if isinstance(owner, Vec):
            return self.vec_method(node, owner, callee.name, args)
        assert isinstance(owner, Api)
        if owner.path == "Math":
            return self.math(node, callee.name, args)
        handler = _CALLS.get((owner.path, callee.name))
        if handler is None:
            raise self.refuse(node, f"`{owner.path}.{callee.name}` is not in the allowed API")
        if self.filters and (owner.path, callee.name) not in _PURE:
            raise self.refuse(node, "a filter may only read, not act")
        return handler(self, node, args, awaited)

    def vec_method(self, node: Node, v: Vec, name: str, args: list[Any]) -> Any:
        if name == "offset":
            dx, dy, dz = self.numbers(node, args, "offset", (3,))
            return Vec(v.x + dx, v.y + dy, v.z + dz)
        if name == "clone":
            return v
        if name == "floored":
            return Vec(math.floor(v.x), math.floor(v.y), math.floor(v.z))
        if len(args) != 1 or not isinstance(args[0], Vec):
            raise self.refuse(node, f"{name} takes a position")
        o = args[0]
        if name == "distanceTo":
            return math.dist(v.xyz, o.xyz)
        sign = 1.0 if name == "plus" else -1.0
        return Vec(v.x + sign * o.x, v.y + sign * o.y, v.z + sign * o.z)

    def call_filter(self, node: Node, func: Any, value: Any) -> bool:
        """Run a filter over one candidate (its reads only; nothing acts)."""
        if not isinstance(func, Func):
            raise self.refuse(node, "a filter must be a function (e => ...)")
        fn = func.node
        params = fn.get("params", [])
        if len(params) > 1 or any(p.get("type") != "Identifier" for p in params):
            raise self.refuse(fn, "a filter takes one parameter")
        scope = _Scope(func.scope)
        for p in params:
            scope.names[p["name"]] = value
        self.filters += 1
        try:
            body = fn["body"]
            if body.get("type") == "BlockStatement":
                try:
                    self.block(body["body"], scope)
                except _Return as ret:
                    return _truthy(ret.value)
                return False
            return _truthy(self.eval(body, scope))
        finally:
            self.filters -= 1

    # -- the table of calls ----------------------------------------------------------
    def _goto(self, node: Node, args: list[Any], awaited: bool) -> Any:
        if not awaited:
            raise self.refuse(node, "bot.pathfinder.goto(...) must be awaited")
        if len(args) != 1 or not isinstance(args[0], Goal):
            raise self.refuse(node, "goto takes one goal (GoalNear, GoalXZ or GoalBlock)")
        goal: Goal = args[0]
        if goal.of is not None:
            distance = round(min(16.0, max(1.0, goal.range)), 2)
            self.emit(node, Follow(agent=goal.of, distance=distance, ticks=FOLLOW_TICKS))
            self.pos = self.scene.players.get(goal.of, self.pos)
            return UNDEFINED
        point: Vec3 = (goal.x, self.scene.pos[1], goal.z)
        station = _nearest(self.scene.stations, point, NEAR)
        room = _nearest(self.scene.rooms, point, NEAR)
        if station is not None:
            self.emit(node, GoTo(station=station))
            self.pos = self.scene.stations[station]
        elif room is not None:
            self.emit(node, GoTo(room=room))
            self.pos = self.scene.rooms[room]
        else:
            self.emit(node, GoTo(pos=(round(point[0], 2), point[1], round(point[2], 2))))
            self.pos = point
        return UNDEFINED

    def _wait(self, node: Node, args: list[Any], awaited: bool) -> Any:
        if not awaited:
            raise self.refuse(node, "bot.waitForTicks(...) must be awaited")
        (n,) = self.numbers(node, args, "waitForTicks", (1,))
        if n < 0:
            raise self.refuse(node, "waitForTicks of a negative number")
        ticks = round(n)
        if ticks > MAX_WAIT_TICKS:
            self.out.notes.append(f"wait of {ticks} ticks cut to {MAX_WAIT_TICKS}")
            ticks = MAX_WAIT_TICKS
        if ticks:
            self.emit(node, Wait(ticks=ticks))
        return UNDEFINED

    def _nearest_entity(self, node: Node, args: list[Any], awaited: bool) -> Any:
        if len(args) > 1:
            raise self.refuse(node, "nearestEntity takes one filter")
        found = [
            Entity(name, pos)
            for name, pos in sorted(self.scene.players.items())
            if not args or self.call_filter(node, args[0], Entity(name, pos))
        ]
        if not found:
            return None
        return min(found, key=lambda e: (math.dist(e.pos, self.pos), e.name))

    def _blocks(self) -> list[Block]:
        y = self.scene.floor_y
        out = [
            Block("station", (math.floor(p[0]), y, math.floor(p[2])), STATION_BLOCK, sid)
            for sid, p in sorted(self.scene.stations.items())
        ]
        if self.scene.button is not None:
            b = self.scene.button
            out.append(Block("button", (math.floor(b[0]), y, math.floor(b[2])), BUTTON_BLOCK))
        return out

    def _find_block(self, node: Node, args: list[Any], awaited: bool) -> Any:
        if len(args) != 1 or not isinstance(args[0], Options):
            raise self.refuse(node, "findBlock takes one options object")
        opts: Options = args[0]
        unknown = [k for k, _ in opts.items if k not in ("matching", "maxDistance", "point")]
        if unknown:
            raise self.refuse(node, f"findBlock has no option `{unknown[0]}` here")
        matching = opts.get("matching")
        if not isinstance(matching, Func):
            raise self.refuse(node, "findBlock's matching must be a function (b => ...)")
        reach = opts.get("maxDistance", FIND_DISTANCE)
        if not _is_num(reach):
            raise self.refuse(node, "findBlock's maxDistance must be a number")
        point = opts.get("point", UNDEFINED)
        if point is not UNDEFINED and not isinstance(point, Vec):
            raise self.refuse(node, "findBlock's point must be a position")
        origin = point.xyz if isinstance(point, Vec) else self.pos
        found = []
        for b in self._blocks():
            centre = (b.pos[0] + 0.5, b.pos[1] + 0.5, b.pos[2] + 0.5)
            if math.dist(centre, origin) <= reach and self.call_filter(node, matching, b):
                found.append((math.dist(centre, origin), b.pos, b))
        return min(found, key=lambda t: (t[0], t[1]))[2] if found else None

    def _block_at(self, node: Node, args: list[Any], awaited: bool) -> Any:
        if len(args) != 1 or not isinstance(args[0], Vec):
            raise self.refuse(node, "blockAt takes one position (new Vec3(x, y, z))")
        v: Vec = args[0]
        cell = (math.floor(v.x), math.floor(v.y), math.floor(v.z))
        for b in self._blocks():
            if (b.pos[0], b.pos[2]) == (cell[0], cell[2]) and -1 <= cell[1] - b.pos[1] <= 2:
                return b
        return Block("other", (float(cell[0]), float(cell[1]), float(cell[2])), "other")

    def _activate_block(self, node: Node, args: list[Any], awaited: bool) -> Any:
        if len(args) != 1 or args[0] is None or args[0] is UNDEFINED:
            raise self.refuse(node, "activateBlock of nothing: the program would fail")
        block = args[0]
        if not isinstance(block, Block):
            raise self.refuse(node, "activateBlock takes a block (bot.blockAt(...))")
        if block.kind == "station":
            assert block.station is not None
            self.emit(node, UseStation(station=block.station))
            self.pos = self.scene.stations[block.station]
            self.absorbed = False
        elif block.kind == "button":
            self.emit(node, PressButton())
            if self.scene.button is not None:
                self.pos = self.scene.button
        else:
            x, y, z = (_js_str(c) for c in block.pos)
            raise self.refuse(node, f"there is no station or button at ({x}, {y}, {z})")
        return UNDEFINED

    def _activate_item(self, node: Node, args: list[Any], awaited: bool) -> Any:
        if args:
            raise self.refuse(node, "activateItem takes no arguments here")
        self.out.notes.append("activateItem does nothing in free roam here")
        return UNDEFINED

    def _quick_bar(self, node: Node, args: list[Any], awaited: bool) -> Any:
        (slot,) = self.numbers(node, args, "setQuickBarSlot", (1,))
        if slot != int(slot) or not 0 <= slot <= 8:
            raise self.refuse(node, "setQuickBarSlot takes a slot from 0 to 8")
        self.out.notes.append("setQuickBarSlot does nothing in free roam here")
        return UNDEFINED

    def _log(self, node: Node, args: list[Any], awaited: bool) -> Any:
        whole = self.statement is not None and self.statement.get("expression") is node
        first = whole and self.statement is not None and id(self.statement) in self.intent_nodes
        said = args[0] if len(args) == 1 and isinstance(args[0], str) else None
        m = INTENT.match(said) if said is not None else None
        if m is None:
            self.out.notes.append("console.log does nothing")
        elif not first:
            self.out.notes.append("an intent line that is not the first line is ignored")
        elif not self.scene.impostor:
            self.out.notes.append("a crewmate's intent line is ignored")
        elif m.group(1).strip().lower() != self.scene.me.lower():
            self.out.notes.append(f"an intent line naming {m.group(1).strip()!r} is ignored")
        elif self.out.intent:
            self.out.notes.append("a second intent line is ignored")
        else:
            self.out.intent = " ".join(m.group(2).split())
        return UNDEFINED

    def math(self, node: Node, name: str, args: list[Any]) -> float:
        counts = (1,) if name in ("floor", "round", "ceil", "abs", "sqrt") else (1, 2, 3, 4)
        values = self.numbers(node, args, f"Math.{name}", counts)
        if name == "sqrt" and values[0] < 0:
            raise self.refuse(node, "Math.sqrt of a negative number")
        fns: dict[str, Callable[..., float]] = {
            "floor": math.floor,
            "ceil": math.ceil,
            "round": lambda v: math.floor(v + 0.5),
            "abs": abs,
            "sqrt": math.sqrt,
            "min": min,
            "max": max,
        }
        return float(fns[name](*values))

    # -- primitives ----------------------------------------------------------------------
    def emit(self, node: Node, action: AnyAction) -> None:
        """Add a primitive, merging what the walk would otherwise repeat."""
        if self.filters:
            raise self.refuse(node, "a filter may only read, not act")
        actions = self.out.actions
        last = actions[-1] if actions else None
        op = action.op
        if isinstance(action, Wait) and last is not None:
            if isinstance(last, UseStation) and not self.absorbed:
                self.absorbed = True
                self.out.notes.append(
                    "the wait after a station's activation is the task's own (use_station)"
                )
                return
            if isinstance(last, Wait):
                total = last.ticks + action.ticks
                actions[-1] = Wait(ticks=min(MAX_WAIT_TICKS, total))
                if total > MAX_WAIT_TICKS:
                    self.out.notes.append(f"waits cut to {MAX_WAIT_TICKS} ticks")
                return
        if isinstance(action, UseStation | PressButton) and isinstance(last, GoTo):
            target = (
                self.scene.stations[action.station]
                if isinstance(action, UseStation)
                else self.scene.button
            )
            if target is not None and _horizontal(self._go_to_point(last), target) <= MERGE:
                actions.pop()
                self.out.notes.append(f"the walk before {op} merged into it")
        actions.append(action)
        if len(actions) > MAX_PROGRAM_ACTIONS:
            raise self.refuse(node, f"more than {MAX_PROGRAM_ACTIONS} actions")

    def _go_to_point(self, action: GoTo) -> Vec3:
        if action.station is not None:
            return self.scene.stations[action.station]
        if action.room is not None:
            return self.scene.rooms[action.room]
        assert action.pos is not None  # a GoTo names exactly one of the three
        x, y, z = action.pos
        return (float(x), float(y), float(z))


def _follows(goal: Goal, x: Any, y: Any, z: Any) -> Goal:
    """The goal, marked as a follow when its point is exactly one player's position."""
    coords = (x, y, z)
    if all(isinstance(c, Coord) for c in coords):
        owners = {c.of for c in coords}
        axes = tuple(c.axis for c in coords)
        if len(owners) == 1 and axes == ("x", "y", "z"):
            return Goal(goal.kind, goal.x, goal.y, goal.z, goal.range, owners.pop())
    return goal


def _nearest(points: Mapping[Any, Vec3], point: Vec3, within: float) -> Any:
    best = None
    for key, p in points.items():
        d = _horizontal(p, point)
        if d <= within and (best is None or d < best[0]):
            best = (d, key)
    return best[1] if best is not None else None


_Handler = Callable[[_Walker, Node, list[Any], bool], Any]
_CALLS: dict[tuple[str, str], _Handler] = {
    ("bot.pathfinder", "goto"): _Walker._goto,
    ("bot", "waitForTicks"): _Walker._wait,
    ("bot", "nearestEntity"): _Walker._nearest_entity,
    ("bot", "findBlock"): _Walker._find_block,
    ("bot", "blockAt"): _Walker._block_at,
    ("bot", "activateBlock"): _Walker._activate_block,
    ("bot", "activateItem"): _Walker._activate_item,
    ("bot", "setQuickBarSlot"): _Walker._quick_bar,
    ("console", "log"): _Walker._log,
}
"""Each allowed call of the API and its handler (what it gives or emits)."""
_PURE = frozenset({("bot", "blockAt")})
"""The calls of `_CALLS` a filter may make (reads only; `Math` and a position's methods
too)."""
