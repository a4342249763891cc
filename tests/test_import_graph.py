"""The import graph of the project's packages: the controller reaches up to no package
above it, and no import circle exists anywhere.

Imports are read from the source (`ast`), not by importing: every `import` and `from
... import` statement counts, at module level, inside `if TYPE_CHECKING:` blocks and
inside functions. Upward edges and circles are both checked over all of them: a lazy
import inside a function is still a dependency, and a circle closed only through one
is still a circle. Importing `a.b.c` also runs the `__init__` of `a` and `a.b`, so that
is an edge too. Function-local imports of project modules are counted and may not grow
past `LAZY_IMPORTS_AT_MOST` (they are for optional SDKs and slow start-up paths, not
for hiding a circle).
"""

from __future__ import annotations

import ast
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path

from controller.registry import POINTS, Registry

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("controller", "world", "harness_aria", "annotation", "mineamongus")
"""The import packages the project ships (pyproject's package discovery)."""
ABOVE_CONTROLLER = ("harness_aria", "annotation", "mineamongus")
"""Packages the controller must not import: the harness, the analysis and the facade."""
SKIP_PARTS = {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
LAZY_IMPORTS_AT_MOST = 96
"""Function-local import statements of project modules today: lower it when one goes.
(The model backends' SDKs load through the registry's `"module:attr"` references now,
not through imports inside functions.)"""

EXTENSION_POINTS: dict[str, tuple[str, str]] = {
    "agent kind": ("controller.agents.registry", "KINDS"),
    "side format": ("controller.agents.registry", "SIDE_FORMATS"),
    "command": ("controller.commands", "COMMANDS"),
    "live viewer": ("controller.commands", "VIEWERS"),
    "decision module": ("harness_aria.modules.registry", "MODULES"),
    "planning component": ("harness_aria.planner.base", "PLANNERS"),
    "memory component": ("harness_aria.memory.base", "MEMORIES"),
    "reflection component": ("harness_aria.reflection.base", "REFLECTORS"),
    "backend": ("harness_aria.backends.registry", "BACKENDS"),
    "map": ("world.spec", "MAPS"),
    "judge profile": ("annotation.deception.judges", "JUDGES"),
    "rule book": ("annotation.grounding.books", "BOOKS"),
    "report section provider": ("annotation.report.document", "SECTIONS"),
    "detector": ("annotation.deception.detectors", "DETECTORS"),
}
"""Every extension point, by the name its registry gives it: (module, attribute)."""


@dataclass(frozen=True)
class Import:
    """One import statement's target in one module."""

    target: str
    """The imported module (for `from m import name`: `m.name` when that is a module)."""
    line: int
    module_level: bool
    """False inside a function (lazy)."""


def _modules() -> dict[str, Path]:
    """Every module of the packages, by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if SKIP_PARTS & set(rel.parts):
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


@functools.cache
def _parsed(path: Path, mtime_ns: int) -> ast.Module:
    """The syntax tree of one source file as it was at `mtime_ns` (parsed once per
    process: every test here reads the whole tree)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _parse(path: Path) -> ast.Module:
    return _parsed(path, path.stat().st_mtime_ns)


def _imports(name: str, path: Path, is_package: bool) -> list[Import]:
    """The import statements of one module, each with its absolute target."""
    out: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            lazy = in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            if isinstance(child, ast.Import):
                out.extend(Import(a.name, child.lineno, not lazy) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - (child.level - 1)]
                    base = ".".join([*here, *([child.module] if child.module else [])])
                for alias in child.names:
                    out.append(Import(f"{base}.{alias.name}", child.lineno, not lazy))
                    out.append(Import(base, child.lineno, not lazy))
            visit(child, lazy)

    visit(_parse(path), False)
    return out


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The project module an import target loads (its longest known prefix), or None."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def _graph(
    lazy: bool = True,
) -> tuple[dict[str, set[str]], dict[str, list[tuple[str, int]]]]:
    """(edges between project modules, function-local ones too unless `lazy` is False;
    every import by module as (target, line))."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    every: dict[str, list[tuple[str, int]]] = {m: [] for m in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for imp in _imports(name, path, is_package):
            every[name].append((imp.target, imp.line))
            target = _resolve(imp.target, modules)
            if target is None or (not lazy and not imp.module_level):
                continue
            parts = target.split(".")
            # Loading `a.b.c` runs `a/__init__` and `a/b/__init__` first; a module inside
            # a package is loaded by its package already, so its own ancestors do not count.
            for i in range(1, len(parts) + 1):
                step = ".".join(parts[:i])
                if step in modules and step != name and not name.startswith(step + "."):
                    edges[name].add(step)
    return edges, every


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more modules, each as one circle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group: set[str] = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(_one_circle(sorted(group)[0], group, edges))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def _one_circle(start: str, group: set[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest path from `start` back to itself inside `group` (breadth first)."""
    paths = {w: [start, w] for w in sorted(edges[start] & group)}
    queue = list(paths)
    while queue:
        v = queue.pop(0)
        if start in edges[v]:
            return [*paths[v], start]
        for w in sorted(edges[v] & group):
            if w not in paths and w != start:
                paths[w] = [*paths[v], w]
                queue.append(w)
    raise AssertionError(f"{start} is in a circle that does not return to it")  # unreachable


def test_the_graph_sees_every_module_and_its_imports() -> None:
    edges, every = _graph()
    assert {"controller.cli", "controller.commands", "annotation.commands.view"} <= set(edges)
    # A module-level edge, a type-only edge and a lazy import the walk must find.
    assert "controller.agents.registry" in edges["controller.config"]
    assert "controller.rules" in edges["controller.agents.registry"]  # under TYPE_CHECKING
    lazy = every["annotation.commands.view"]
    assert any(target.startswith("annotation.viewer.server") for target, _ in lazy)


def test_the_controller_imports_nothing_above_it() -> None:
    _, every = _graph()
    upward: dict[tuple[str, int], str] = {}
    for name, imports in sorted(every.items()):
        if name.split(".")[0] != "controller":
            continue
        for target, line in imports:
            if target.split(".")[0] in ABOVE_CONTROLLER:
                held = upward.get((name, line))
                upward[(name, line)] = target if held is None else min(held, target, key=len)
    listed = [f"{name} line {line}: imports {target}" for (name, line), target in upward.items()]
    assert not listed, "the controller reaches up (register a hook instead):\n" + "\n".join(
        sorted(listed)
    )


def test_no_import_circle() -> None:
    edges, _ = _graph()
    circles = _circles(edges)
    assert not circles, (
        "import circles (module-level, type-only and function-local imports):\n"
        + "\n".join(" -> ".join(c) for c in circles)
    )


def _lazy_project_imports() -> list[str]:
    """Each function-local import statement of a project module, as `module:line`."""
    modules = _modules()
    return sorted(
        {
            f"{name}:{imp.line}"
            for name, path in modules.items()
            for imp in _imports(name, path, path.name == "__init__.py")
            if not imp.module_level and _resolve(imp.target, modules) is not None
        }
    )


def test_function_local_imports_are_counted_and_do_not_grow() -> None:
    lazy = _lazy_project_imports()
    assert lazy, "the walk finds no function-local import: it is broken"
    assert len(lazy) <= LAZY_IMPORTS_AT_MOST, (
        f"{len(lazy)} function-local imports of project modules, more than "
        f"{LAZY_IMPORTS_AT_MOST}: import at module level, or break the circle that needs it"
    )


def test_a_circle_closed_only_by_a_function_local_import_is_found(tmp_path: Path) -> None:
    source = {"a": "import b\n", "b": "def f() -> None:\n    import a\n"}
    modules: dict[str, Path] = {}
    for name, text in source.items():
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
        modules[name] = tmp_path / f"{name}.py"
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for imp in _imports(name, path, False):
            if imp.target in modules:
                edges[name].add(imp.target)
    assert [i.module_level for i in _imports("b", modules["b"], False)] == [False]
    assert _circles(edges) == [["a", "b", "a"]]


def test_a_planted_circle_is_found_and_listed() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(edges) == [["a", "b", "c", "a"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def _installed_importers_of(prefix: str) -> list[str]:
    return sorted(
        f"{name}:{imp.line}"
        for name, path in _modules().items()
        for imp in _imports(name, path, path.name == "__init__.py")
        if imp.target == prefix or imp.target.startswith(prefix + ".")
    )


def test_no_installed_package_holds_or_imports_a_test_helper() -> None:
    """The test suite's helpers live in `testkit/`, which is not installed: no shipped
    package imports it, and pyproject's package discovery leaves it out."""
    assert _installed_importers_of("testkit") == []
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    include = next(line for line in pyproject.splitlines() if line.startswith("include = ["))
    assert "testkit" not in include and "tests" not in include
    assert set(PACKAGES) == {p.strip('"*') for p in include[11:-1].split(", ")}


def _unserved(points: dict[str, tuple[str, str]]) -> list[str]:
    """The points not served by the one registry: an attribute that is not a
    `controller.registry.Registry`, or one whose point has another name."""
    out = []
    for point, (module, attr) in sorted(points.items()):
        found = getattr(importlib.import_module(module), attr, None)
        if not isinstance(found, Registry):
            out.append(f"{module}.{attr} ({point}) is a {type(found).__name__}, not a Registry")
        elif found.point != point or POINTS.get(point) is not found:
            out.append(f"{module}.{attr} is the registry of {found.point!r}, not of {point!r}")
    return out


def _registries_made() -> set[tuple[str, str]]:
    """(module, attribute) of every module-level `NAME: ... = Registry(...)` or
    `Catalogue(...)` in the packages (read from the source)."""
    found = set()
    for name, path in _modules().items():
        for node in _parse(path).body:
            if not isinstance(node, ast.AnnAssign | ast.Assign) or node.value is None:
                continue
            call = node.value
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
                continue
            if call.func.id not in ("Registry", "Catalogue"):
                continue
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            found |= {(name, t.id) for t in targets if isinstance(t, ast.Name)}
    return found


def test_every_extension_point_is_served_by_the_one_registry() -> None:
    assert _unserved(EXTENSION_POINTS) == []
    # Every registry the packages make is a listed point (a new point is listed here).
    assert _registries_made() == set(EXTENSION_POINTS.values())
    # Each point serves something: its built-in entries, or those it loads.
    empty = [
        p
        for p, (m, a) in EXTENSION_POINTS.items()
        if p != "side format" and not getattr(importlib.import_module(m), a).names()
    ]
    assert empty == []


def test_a_point_served_by_a_plain_mapping_is_caught() -> None:
    planted = {
        **EXTENSION_POINTS,
        "rule book names": ("annotation.grounding.rules", "RULE_BOOKS"),  # a plain tuple
        "judge": ("annotation.deception.judges", "JUDGES"),  # named as another point
    }
    assert _unserved(planted) == [
        "annotation.deception.judges.JUDGES is the registry of 'judge profile', not of 'judge'",
        "annotation.grounding.rules.RULE_BOOKS (rule book names) is a tuple, not a Registry",
    ]
