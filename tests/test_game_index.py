"""annotation/ reads who was where from the one index (`controller.timeline.GameIndex`),
never by walking the log's `trace` and `positions` events itself.

The scan (`position_builders`) reads every module under annotation/ as Python syntax and
reports each place that picks those events out of a log:

* `isinstance(x, Trace)` or `isinstance(x, Positions)` (also inside a tuple of classes);
* a comparison of an event's kind with the string `"trace"` or `"positions"`
  (`ev.kind == "trace"`, `ev.get("kind") == "positions"`, `kind in ("trace", ...)`).

Naming the classes in a type annotation (`end_positions: dict[int, Positions]`) is not
a use. One reader is let through, for a stated reason; a new one fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANNOTATION = ROOT / "annotation"
POSE_CLASSES = frozenset({"Trace", "Positions"})
POSE_KINDS = frozenset({"trace", "positions"})

ALLOWED = {
    "annotation/deception/reference/transcript.py": (
        "the reference harness's scoreboard replays the room named in each snapshot as "
        "an `area` line in log order (owned by the deception work, not the index's)"
    ),
}
"""Module -> why it still reads `trace`/`positions` events itself."""


def _names(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(e) for e in node.elts)) if node.elts else set()
    return set()


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_strings(e) for e in node.elts)) if node.elts else set()
    return set()


def _mentions_kind(node: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id == "kind")
        or (isinstance(n, ast.Attribute) and n.attr == "kind")
        or (isinstance(n, ast.Constant) and n.value == "kind")
        for n in ast.walk(node)
    )


def position_builders(source: str, name: str = "<source>") -> list[str]:
    """Every place in `source` that picks `trace` or `positions` events out of a log, as
    `name:line: what`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, name)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
        ):
            hit = _names(node.args[1]) & POSE_CLASSES
            if hit:
                found.append(f"{name}:{node.lineno}: isinstance(..., {'/'.join(sorted(hit))})")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            kinds = set().union(*(_strings(s) for s in sides)) & POSE_KINDS
            if kinds and any(_mentions_kind(s) for s in sides):
                found.append(f"{name}:{node.lineno}: kind compared with {sorted(kinds)}")
    return found


def test_annotation_builds_no_positions_from_the_log_itself() -> None:
    found: list[str] = []
    for path in sorted(ANNOTATION.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        found += position_builders(path.read_text(encoding="utf-8"), rel)
    assert found == [], "read positions through controller.timeline.GameIndex:\n" + "\n".join(found)


def test_the_allowed_readers_still_exist_and_still_need_it() -> None:
    """An allowance whose module is gone or clean is stale: remove it."""
    for rel in ALLOWED:
        path = ROOT / rel
        assert path.is_file(), rel
        assert position_builders(path.read_text(encoding="utf-8"), rel), rel


def test_a_planted_builder_is_caught() -> None:
    planted = """
from controller.events import Positions, Trace

def where(events):
    out = {}
    for ev in events:
        if isinstance(ev, Trace):
            out[ev.step] = ev.players
        elif isinstance(ev, (Visibility, Positions)):
            out[ev.step] = ev.players
    return out

def raw(lines):
    return [e for e in lines if e.get("kind") == "positions" or e["kind"] in ("trace",)]
"""
    found = position_builders(planted, "planted.py")
    assert [f.split(": ", 1)[1] for f in found] == [
        "isinstance(..., Trace)",
        "isinstance(..., Positions)",
        "kind compared with ['positions']",
        "kind compared with ['trace']",
    ]


def test_type_annotations_and_other_kinds_pass() -> None:
    clean = """
from controller.events import Positions

def end_of(positions: dict[int, Positions], source: str) -> Positions | None:
    if source == "trace":  # a pose source label, no event kind
        return None
    return next((p for p in positions.values() if p.cause == "step_end"), None)

def kills(events):
    return [e for e in events if e.kind == "kill"]
"""
    assert position_builders(clean) == []
