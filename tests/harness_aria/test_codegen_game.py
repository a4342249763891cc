"""A whole offline game with model-written programs: the fake backend writes every MOVE
and MISSION program as the reference's codegen would, and each is either translated
into the program dispatched or refused and replaced by the wander, as the log shows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controller.checks import log_violations
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Decision, read_events
from harness_aria.codegen import PURPOSE
from world.spec import load_map

LOOK = {"op": "look", "behind": True}


def codegen_counts(events: list[Any], roles: dict[str, str]) -> Counter[str]:
    """Every MOVE and MISSION decision with a codegen call, checked and counted by how
    its program came about: `translated` or `refused` (and replaced by the wander)."""
    counts: Counter[str] = Counter()
    for d in events:
        if not isinstance(d, Decision) or d.module not in ("MOVE", "MISSION"):
            continue
        calls = [c for c in d.calls if c.purpose == PURPOSE]
        if not calls:
            counts["no codegen call"] += 1
            continue
        (call,) = calls
        extra = call.extra["codegen"]
        crew = roles[d.agent] == "crewmate"
        after = [LOOK] if crew else []
        assert d.error_kind != "model", d.error
        if extra["status"] == "translated":
            assert d.program == extra["program"] + after, (d.agent, d.step)
            counts["translated"] += 1
        else:
            assert extra["status"] == "refused" and extra["fallback"] == "wander"
            assert extra["error_kind"] == "model" and extra["reason"]
            assert "fallback: wander" in d.reasoning
            (walk, *rest) = d.program
            assert walk["op"] == "go_to" and walk["pos"] is not None and rest == after
            counts["refused"] += 1
    return counts


@pytest.fixture(scope="module")
def paper_game(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("codegen")
    spec = {"action": "codegen"}
    config = resolve_config(
        "paper",
        overrides={
            "seed": 1,
            "frames": "off",
            "crew": {"backend": "fake", "spec": spec},
            "impostor": {"backend": "fake", "spec": spec},
        },
    )
    result = play_game(config, load_map("skeld"), "fake", out)
    assert result.status == "ok", result.reason
    return out


def test_every_program_is_translated_or_refused_and_replaced(
    paper_game: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = read_events(paper_game / "events.jsonl")
    summary = json.loads((paper_game / "summary.json").read_text())
    counts = codegen_counts(events, summary["roles"])
    assert counts["translated"] > 20 and counts["refused"] > 0
    assert counts["no codegen call"] == 0
    assert summary["counts"]["harness_errors"] == 0 and summary["counts"]["infra_errors"] == 0
    assert log_violations(events) == []
    with capsys.disabled():
        print(
            f"\ncodegen, paper preset seed 1 ({summary['steps']} steps): "
            f"{counts['translated']} translated, {counts['refused']} refused and wandered"
        )


def test_impostors_intent_lines_are_their_narration(paper_game: Path) -> None:
    events = read_events(paper_game / "events.jsonl")
    roles = json.loads((paper_game / "summary.json").read_text())["roles"]
    narrated = 0
    for d in events:
        if not isinstance(d, Decision) or not d.calls:
            continue
        for call in d.calls:
            extra = call.extra.get("codegen")
            if extra and extra["status"] == "translated" and extra["intent"]:
                assert roles[d.agent] == "impostor"
                assert d.narration == extra["intent"]
                narrated += 1
    assert narrated > 0
