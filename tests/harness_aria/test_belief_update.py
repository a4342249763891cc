"""Semantic memory with the model's belief updates (`AriaSpec.belief_update: llm`): a call
of its own after each meeting, its answer read, clamped and refused with every liberty
noted, and a failed call changing nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Decision, read_events
from controller.observation import ChatEntry, Observation
from harness_aria.backends.base import BackendError
from harness_aria.backends.fake import FakeBackend
from harness_aria.memory.semantic import EVENTS_SHOWN, SemanticMemory
from harness_aria.reflection import REFLECTORS
from harness_aria.reflection.beliefs import PURPOSE, update_beliefs
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Toolkit
from testkit.games import OFFLINE_ARIA, GameStore
from tests.harness_aria.test_module_answers import observe
from world.geometry import ShipGeometry
from world.spec import load_map

GEOMETRY = ShipGeometry(load_map("skeld"))


def _chat(*lines: tuple[str | None, str]) -> list[ChatEntry]:
    return [
        ChatEntry(
            index=i,
            step=10 + i,
            tick=1000 + i,
            kind="server" if who is None else "speech",
            speaker=who,
            text=text,
        )
        for i, (who, text) in enumerate(lines)
    ]


MEETING = _chat(
    (None, "Blue reported White's body. Meeting called."),
    ("blue", "I saw Yellow near the body in electrical."),
    ("yellow", "That is a lie, I was in admin."),
    (None, "Yellow was ejected."),
)


def _toolkit(script: Any, memory: SemanticMemory, obs: Observation | None = None) -> Toolkit:
    obs = obs or observe(step=15, chat=MEETING)
    memory.observe(obs)
    return Toolkit(
        spec=AriaSpec(),
        backend=FakeBackend("t", script=script),
        geometry=GEOMETRY,
        persona="",
        obs=obs,
        view_text="You are Red, a crewmate.",
        view_head="You are Red, a crewmate.",
        memory=memory,
    )


def test_a_planted_answer_is_clamped_refused_and_logged() -> None:
    """Out-of-range deltas are clamped to ±0.3, a player not in the game and the agent
    itself are refused; each liberty is on the call record's `normalised`."""
    planted = {
        "updates": [
            {"player": "Yellow.", "suspicion_delta": 0.9, "note": "lied about admin"},
            {"player": "blue", "suspicion_delta": -2, "note": "reported honestly"},
            {"player": "purple", "suspicion_delta": 0.2, "note": "no such seat"},
            {"player": "red", "suspicion_delta": 0.3, "note": "myself"},
            {"player": "green", "suspicion_delta": "0.1", "note": "quiet"},
            {"player": "green", "suspicion_delta": 0.2, "note": "again"},
            {"player": "pink", "suspicion_delta": "a lot"},
            {"player": "orange", "delta": 0.05},
        ]
    }
    memory = SemanticMemory(belief_update="llm")
    tk = _toolkit([json.dumps(planted)], memory)
    before = dict(memory.suspicion())  # with the rules' own changes from the chat
    asyncio.run(update_beliefs(tk))
    (call,) = tk.calls
    assert call.purpose == PURPOSE and call.parsed == planted
    got = memory.suspicion()
    assert got["yellow"] == pytest.approx(before.get("yellow", 0.0) + 0.3)
    assert got["blue"] == max(0.0, before.get("blue", 0.0) - 0.3)  # held in 0-1
    assert got["green"] == pytest.approx(before.get("green", 0.0) + 0.1)
    assert got["orange"] == pytest.approx(before.get("orange", 0.0) + 0.05)
    assert "purple" not in got and "red" not in got
    assert got.get("pink", 0.0) == before.get("pink", 0.0)
    notes = call.normalised
    assert "updates[0].player: 'Yellow.' -> 'yellow'" in notes
    assert "updates[0].suspicion_delta: 0.9 -> '0.3 (clamped to ±0.3)'" in notes
    assert "updates[1].suspicion_delta: -2.0 -> '-0.3 (clamped to ±0.3)'" in notes
    assert "updates[2].player: 'purple' dropped: not a player" in notes
    assert "updates[3].player: 'red' dropped: the agent itself" in notes
    assert "updates[4].suspicion_delta: '0.1' -> 0.1" in notes
    assert any(n.startswith("updates[5]: ") and "second update" in n for n in notes)
    assert "updates[6].suspicion_delta: 'a lot' dropped: not a number" in notes
    assert "updates[7]: 'delta' -> 'suspicion_delta'" in notes
    assert any("belief update: lied about admin" in n for n in memory.beliefs["yellow"].notes)
    assert memory.events_text() == ""  # the events read are forgotten


def test_the_call_reads_the_last_events_and_the_beliefs() -> None:
    memory = SemanticMemory(belief_update="llm")
    memory.adjust("green", 0.2, "seen near a body")
    many = _chat(*[("blue", f"line {i}") for i in range(EVENTS_SHOWN + 5)])
    tk = _toolkit(['{"updates": []}'], memory, observe(step=40, chat=many))
    asyncio.run(update_beliefs(tk))
    request = tk.backend.requests[-1]  # type: ignore[attr-defined]
    user = request.messages[-1].text
    assert user.startswith("You are Red, a crewmate.\n\nYour current beliefs")
    assert "green: 0.20; +0.20 seen near a body" in user
    assert f"Recent events (the last {EVENTS_SHOWN}):" in user
    assert "<Blue> line 24" in user and "<Blue> line 4\n" not in user
    assert user.rstrip().splitlines()[-1].startswith("Answer as JSON")
    assert (request.temperature, request.max_tokens) == (0.2, 256)


def test_a_failed_call_changes_no_belief() -> None:
    memory = SemanticMemory(belief_update="llm")
    memory.adjust("yellow", 0.1, "before")
    tk = _toolkit([BackendError("timeout", "slow")], memory)
    before = memory.suspicion()
    asyncio.run(update_beliefs(tk))
    (call,) = tk.calls
    assert call.error_class == "timeout" and call.parsed is None
    assert memory.suspicion() == before
    unreadable = SemanticMemory(belief_update="llm")
    tk = _toolkit(["not json at all"], unreadable)
    before = unreadable.suspicion()
    asyncio.run(update_beliefs(tk))
    assert tk.calls[-1].parse_error and unreadable.suspicion() == before


def test_no_call_with_rule_updates_without_events_or_for_a_ghost() -> None:
    rule = SemanticMemory(belief_update="rule")
    tk = _toolkit([], rule)
    asyncio.run(update_beliefs(tk))
    assert tk.calls == [] and rule.events_text() == ""
    quiet = SemanticMemory(belief_update="llm")
    tk = _toolkit([], quiet, observe(step=15))
    asyncio.run(update_beliefs(tk))
    assert tk.calls == []
    ghost = SemanticMemory(belief_update="llm")
    tk = _toolkit([], ghost, observe(step=15, chat=MEETING, ghost=True))
    asyncio.run(update_beliefs(tk))
    assert tk.calls == [] and ghost.events_text() == ""


@pytest.mark.parametrize("reflection", ["off", "on"])
def test_it_runs_after_the_meetings_reflection(reflection: str) -> None:
    memory = SemanticMemory(belief_update="llm")
    answers = [
        '{"insights": "x", "suspicion_deltas": {}, "skill": null}',
        '{"updates": [{"player": "yellow", "suspicion_delta": 0.2, "note": "lied"}]}',
    ]
    tk = _toolkit(answers if reflection == "on" else answers[1:], memory)
    before = memory.suspicion()["yellow"]
    reflector = REFLECTORS.build(AriaSpec(reflection=reflection))
    asyncio.run(reflector.after_meeting(tk, "recap"))
    purposes = [c.purpose for c in tk.calls]
    assert purposes == (["reflection", PURPOSE] if reflection == "on" else [PURPOSE])
    assert memory.suspicion()["yellow"] == pytest.approx(before + 0.2)


def test_a_reference_game_updates_beliefs_after_each_meeting(
    tmp_path: Path, fake_games: GameStore
) -> None:
    """The default profile's semantic memory makes a belief-update call per living agent
    after a meeting, on that meeting's chat; `lean` (rule updates) and window memory
    make none."""
    # The default spec's offline game of seed 3 (the run's store), and the first 40
    # steps of the same seed under each of the others (they hold two meetings).
    runs = {"reference": fake_games.game(seed=3, **OFFLINE_ARIA)}
    for name, spec in (("lean", {"profile": "lean"}), ("window", {"memory": "window"})):
        config = resolve_config(
            "quick",
            overrides={
                "seed": 3,
                "frames": "off",
                "rules": {"max_steps": 40},
                "crew": {"backend": "fake", "spec": spec},
                "impostor": {"backend": "fake", "spec": spec},
            },
        )
        runs[name] = tmp_path / name
        play_game(config, load_map("skeld"), "fake", runs[name])
    counts: dict[str, int] = {}
    for name, out in runs.items():
        calls = [
            (d, c)
            for d in read_events(out / "events.jsonl")
            if isinstance(d, Decision)
            for c in d.calls
            if c.purpose == PURPOSE
        ]
        counts[name] = len(calls)
        for d, c in calls:
            assert d.phase == "free_roam"
            user = (out / "prompts" / f"{c.sent.user_sha256}.txt").read_text()
            assert "Your current beliefs" in user and "Recent events" in user
            assert "> " in user  # the meeting's chat lines
    assert counts["reference"] >= 5
    assert counts["lean"] == 0 and counts["window"] == 0
