"""The summary's counts come from the event stream, by one function."""

from __future__ import annotations

import json
from pathlib import Path

from controller.accounting import COUNT_KEYS, cost_from_events, counts_from_events
from controller.agents.scripted import ScriptedAgent
from controller.config import resolve_config
from controller.events import (
    ActionRejected,
    Decision,
    Kill,
    ProgramRun,
    Speech,
    TaskDone,
    Vote,
    read_events,
)
from controller.game import Game
from controller.worlds.fake import FakeWorld
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)


def test_summary_counts_are_the_log_counts(tmp_path: Path) -> None:
    config = resolve_config("quick", overrides={"seed": 4, "frames": "off"})
    agents = {a: ScriptedAgent(a, GEOMETRY, 4) for a in config.agent_ids()}
    Game(config, SPEC, FakeWorld(GEOMETRY), agents, tmp_path).run()
    summary = json.loads((tmp_path / "summary.json").read_text())
    events = read_events(tmp_path / "events.jsonl")
    assert summary["counts"] == counts_from_events(events)
    assert list(summary["counts"]) == list(COUNT_KEYS)
    assert summary["counts"]["kills"] == sum(isinstance(ev, Kill) for ev in events) > 0
    assert summary["cost_usd"] == cost_from_events(events)


def test_each_count_follows_its_events() -> None:
    base = {"step": 1, "tick": 5}
    call = {"tokens_in": 10, "tokens_out": 3, "tokens_cached": 2, "cost_usd": 0.5}
    bad = {**call, "error_class": "x"}
    events = [
        Decision(agent="red", phase="free_roam", calls=[call, bad], **base),
        Decision(agent="red", phase="free_roam", error="bad", error_kind="model", **base),
        Decision(agent="red", phase="free_roam", error="bad", error_kind="rules", **base),
        Decision(agent="red", phase="free_roam", error="429", error_kind="infrastructure", **base),
        Decision(agent="red", phase="voting", error="boom", error_kind="harness", **base),
        ProgramRun(agent="red", status="cancelled", start_tick=0, end_tick=5, **base),
        ProgramRun(agent="red", status="timeout", start_tick=0, end_tick=5, **base),
        ProgramRun(agent="red", status="failed", start_tick=0, end_tick=5, **base),
        ActionRejected(agent="red", action="kill", reason="cooldown", **base),
        TaskDone(agent="red", station=1, room="a", fake=False, done=1, total=2, **base),
        TaskDone(agent="blue", station=1, room="a", fake=True, done=0, total=0, **base),
        Vote(voter="red", target=None, failed=True, error_kind="model", **base),
        Vote(voter="blue", target="skip", **base),
        Speech(speaker="red", text="", utterance=0, failed=True, **base),
        Speech(speaker="red", text="", utterance=0, passed=True, **base),
    ]  # fmt: skip
    c = counts_from_events(events)
    assert (c["model_calls"], c["failed_calls"], c["tokens_in"], c["tokens_cached"]) == (
        2,
        1,
        20,
        4,
    )
    assert (c["invalid_decisions"], c["infra_errors"], c["harness_errors"]) == (2, 1, 1)
    assert (c["programs_cancelled"], c["program_timeouts"], c["program_failures"]) == (1, 1, 1)
    assert (c["rejected_actions"], c["tasks_done"]) == (1, 1)
    assert (c["failed_votes"], c["failed_turns"]) == (1, 1)
    assert cost_from_events(events) == 1.0
