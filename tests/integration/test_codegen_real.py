"""Model-written programs on the real embedded server: a short ARIA game on the offline
fake backend with `action: codegen`, whose every MOVE and MISSION program was written as
JavaScript, parsed, translated into primitives (or refused and replaced by the wander)
and run by the real bots; its log passes the log checks."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from controller.checks import log_violations
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Decision, ProgramRun, read_events
from harness_aria.codegen import PURPOSE
from world.spec import load_map

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def codegen_game(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("codegen_real")
    spec = {"action": "codegen"}
    config = resolve_config(
        "quick",
        overrides={
            "seed": 3,
            "frames": "off",
            "rules": {"max_steps": 12},
            "crew": {"backend": "fake", "spec": spec},
            "impostor": {"backend": "fake", "spec": spec},
        },
    )
    result = play_game(config, load_map("skeld"), "minecraft", out)
    assert result.status == "ok", result.reason
    return out


def test_the_game_passes_the_log_checks(codegen_game: Path) -> None:
    events = read_events(codegen_game / "events.jsonl")
    assert log_violations(events) == []
    counts = json.loads((codegen_game / "summary.json").read_text())["counts"]
    assert counts["harness_errors"] == 0 and counts["infra_errors"] == 0


def test_written_programs_ran_on_the_real_bots(
    codegen_game: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = read_events(codegen_game / "events.jsonl")
    statuses: Counter[str] = Counter()
    written: set[tuple[str, int]] = set()
    for d in events:
        if not isinstance(d, Decision) or d.module not in ("MOVE", "MISSION"):
            continue
        for call in d.calls:
            if call.purpose == PURPOSE:
                statuses[call.extra["codegen"]["status"]] += 1
                if d.valid and d.program:
                    written.add((d.agent, d.step))
    ran = Counter(
        e.status for e in events if isinstance(e, ProgramRun) and (e.agent, e.step) in written
    )
    assert statuses["translated"] > 5
    assert ran["ok"] + ran["timeout"] > 5
    with capsys.disabled():
        print(f"\ncodegen on the real server: {dict(statuses)}; programs ended {dict(ran)}")
