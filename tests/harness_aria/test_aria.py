"""ARIA on the fake world with the fake backend: axes, modules, records and failures."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.config import GameConfig, resolve_config
from controller.events import Decision, read_events
from controller.game import Game, GameResult
from controller.worlds.fake import FakeWorld
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import BackendError, ModelRequest
from harness_aria.backends.fake import FakeBackend
from harness_aria.fake_answers import answer
from harness_aria.spec import AblationError, AriaSpec, all_specs, apply_ablations
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)


class Recording:
    """A fake-backend script that answers validly and keeps every request."""

    def __init__(self, respond: Callable[[ModelRequest], str] = answer) -> None:
        self.requests: list[ModelRequest] = []
        self.respond = respond

    def __call__(self, request: ModelRequest) -> str:
        self.requests.append(request)
        return self.respond(request)

    def purposes(self) -> list[str]:
        return [r.purpose for r in self.requests]

    def texts(self, purpose: str, role: str = "user") -> list[str]:
        return [
            m.text
            for r in self.requests
            if r.purpose == purpose
            for m in r.messages
            if m.role == role
        ]


def play(
    tmp: Path,
    crew: AriaSpec | None = None,
    impostor: AriaSpec | None = None,
    *,
    crew_script: Any = None,
    impostor_script: Any = None,
    seed: int = 4,
    **overrides: Any,
) -> tuple[GameResult, Recording, Recording]:
    rec_crew, rec_imp = Recording(), Recording()
    crew_backend = FakeBackend("crew", script=crew_script or rec_crew)
    imp_backend = FakeBackend("imp", script=impostor_script or rec_imp)
    config: GameConfig = resolve_config("quick", overrides={"seed": seed, **overrides})

    def factory(agent: str, role: str) -> AriaAgent:
        if role == "crewmate":
            return AriaAgent(agent, crew or AriaSpec(), crew_backend, GEOMETRY)
        return AriaAgent(agent, impostor or AriaSpec(), imp_backend, GEOMETRY)

    result = Game(config, SPEC, FakeWorld(GEOMETRY), factory, tmp).run()
    return result, rec_crew, rec_imp


def decisions(tmp: Path) -> list[Decision]:
    return [ev for ev in read_events(tmp / "events.jsonl") if isinstance(ev, Decision)]


def test_all_32_combinations_run(tmp_path: Path) -> None:
    specs = all_specs()
    assert len(specs) == 32 and len({s.label() for s in specs}) == 32
    # No frames: the axes do not touch them (`test_frames_reach_the_model_where_modules_
    # use_images` plays with them), and rendering is a quarter of each game's time.
    for i, spec in enumerate(specs):
        result, _, _ = play(tmp_path / str(i), spec, spec, frames="off", rules={"max_steps": 3})
        assert result.status == "ok", (spec.label(), result.reason)
        assert any(d.calls for d in decisions(tmp_path / str(i)))


def test_state_axis_changes_what_is_sent(tmp_path: Path) -> None:
    _, ego, _ = play(tmp_path / "e", AriaSpec(state="ego"), rules={"max_steps": 2})
    _, priv, _ = play(tmp_path / "p", AriaSpec(state="privileged"), rules={"max_steps": 2})
    ego_text, priv_text = "\n".join(ego.texts("planner")), "\n".join(priv.texts("planner"))
    for marker in (
        "Your pending tasks",
        "Roster (the living",
        "In sight now:",
    ):
        assert marker in priv_text and marker not in ego_text
    assert "In view now:" in ego_text and "In view now:" not in priv_text
    assert "never seen" not in ego_text


def test_memory_axis_changes_what_is_sent(tmp_path: Path) -> None:
    _, window, _ = play(tmp_path / "w", AriaSpec(memory="window"), rules={"max_steps": 3})
    _, semantic, _ = play(tmp_path / "s", AriaSpec(memory="semantic"), rules={"max_steps": 3})
    assert "Memory (recent steps)" in "\n".join(window.texts("planner"))
    assert "Beliefs about players" not in "\n".join(window.texts("planner"))
    assert "Beliefs about players" in "\n".join(semantic.texts("planner"))


def test_planning_axis_changes_what_is_sent(tmp_path: Path) -> None:
    _, reactive, _ = play(tmp_path / "r", AriaSpec(planning="reactive"), rules={"max_steps": 6})
    _, hier, _ = play(
        tmp_path / "h", AriaSpec(planning="hierarchical", replan_every=5), rules={"max_steps": 6}
    )
    assert "planner_long" not in reactive.purposes()
    assert "planner_long" in hier.purposes()
    assert all('"plan"' in t for t in hier.texts("planner", "system"))
    assert all('"plan"' not in t for t in reactive.texts("planner", "system"))
    assert any("Strategy:" in t for t in hier.texts("planner"))
    # the strategy is refreshed every 5 planner calls, not every step
    assert hier.purposes().count("planner_long") < hier.purposes().count("planner")


REFLECTION_SEED = 1
"""A quick game (frames off) whose crew reflects: it holds a meeting."""


def test_reflection_axis_adds_reflection_and_skills(tmp_path: Path) -> None:
    seed = REFLECTION_SEED
    _, crew_on, _ = play(tmp_path / "on", AriaSpec(reflection="on"), seed=seed, frames="off")
    assert "reflection" in crew_on.purposes(), f"seed {seed} has no reflection; pin another"
    _, crew_off, _ = play(tmp_path / "off", AriaSpec(reflection="off"), seed=seed, frames="off")
    assert "reflection" not in crew_off.purposes()
    assert any("Skills that worked before" in t for t in crew_on.texts("planner"))
    assert not any("Skills that worked before" in t for t in crew_off.texts("planner"))
    # skills steer the plan: the module calls after it are not sent them
    for purpose in set(crew_on.purposes()) - {"planner", "planner_long"}:
        assert not any("Skills that worked before" in t for t in crew_on.texts(purpose))


def test_prompt_axis_changes_templates_and_hashes(tmp_path: Path) -> None:
    _, det, _ = play(tmp_path / "d", AriaSpec(prompt="deterministic"), rules={"max_steps": 2})
    _, mini, _ = play(tmp_path / "m", AriaSpec(prompt="minimal"), rules={"max_steps": 2})
    assert all("Tactics for a crewmate" in t for t in det.texts("planner", "system"))
    assert not any("Tactics" in t for t in mini.texts("planner", "system"))
    refs_det = {p for d in decisions(tmp_path / "d") for c in d.calls for p in c.prompts}
    refs_min = {p for d in decisions(tmp_path / "m") for c in d.calls for p in c.prompts}
    # the default profile's reference content: `reference/<style>/...`
    assert any(r.startswith("reference/deterministic/planner_crewmate@") for r in refs_det)
    assert any(r.startswith("reference/minimal/planner_crewmate@") for r in refs_min)
    # every reference carries the template's hash
    assert all("@" in r and len(r.split("@")[1]) == 12 for r in refs_det | refs_min)


def test_sides_have_their_own_spec_and_model_recorded(tmp_path: Path) -> None:
    crew, imp = AriaSpec(memory="window"), AriaSpec(planning="hierarchical")
    play(tmp_path, crew, imp, rules={"max_steps": 4})
    summary = json.loads((tmp_path / "summary.json").read_text())
    roles = summary["roles"]
    for d in decisions(tmp_path):
        expected = crew if roles[d.agent] == "crewmate" else imp
        assert d.spec == expected.model_dump()
        assert all(
            c.model == ("fake:crew" if roles[d.agent] == "crewmate" else "fake:imp")
            for c in d.calls
        )
    for agent, desc in summary["agents"].items():
        assert desc["spec"] == (crew if roles[agent] == "crewmate" else imp).model_dump()


def test_impostor_actions_carry_private_narration_never_shown(tmp_path: Path) -> None:
    _, rec_crew, _ = play(tmp_path, seed=4, frames="off")
    ds = decisions(tmp_path)
    roles = json.loads((tmp_path / "summary.json").read_text())["roles"]
    imp = [d for d in ds if roles[d.agent] == "impostor" and d.program]
    assert imp and all(d.narration for d in imp)
    assert all(not d.narration for d in ds if roles[d.agent] == "crewmate")
    narrations = {d.narration for d in imp}
    sent = "\n".join(m.text for r in rec_crew.requests for m in r.messages)
    assert not any(n in sent for n in narrations)


def test_frames_reach_the_model_where_modules_use_images(tmp_path: Path) -> None:
    _, crew, _ = play(tmp_path, rules={"max_steps": 4})
    with_images = {r.purpose for r in crew.requests if any(m.images for m in r.messages)}
    assert with_images and with_images <= {
        "move",
        "report",
        "surveillance",
        "emergency",
        "kill_scan",
    }
    assert all(
        m.images[0][:2] == b"\xff\xd8" for r in crew.requests for m in r.messages if m.images
    )


def test_nonsense_answers_are_recorded_invalid_and_game_finishes(tmp_path: Path) -> None:
    result, _, _ = play(
        tmp_path,
        crew_script=lambda r: "I refuse to answer in JSON.",
        impostor_script=lambda r: '{"module": "FLY"}',
        rules={"max_steps": 6},
    )
    assert result.status == "ok"
    ds = [d for d in decisions(tmp_path) if d.phase == "free_roam"]
    assert ds and all(not d.valid and d.error_kind == "model" for d in ds)
    assert any("I refuse" in d.raw for d in ds)
    assert all(d.program == [] for d in ds)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["invalid_decisions"] >= len(ds)
    assert summary["counts"]["infra_errors"] == 0
    assert not [ev for ev in read_events(tmp_path / "events.jsonl") if ev.kind == "program"]


def test_rate_limited_endpoint_is_counted_as_infrastructure(tmp_path: Path) -> None:
    def flaky(request: ModelRequest) -> str:
        raise BackendError("rate_limit", "429 after retries", attempts=3)

    result, _, _ = play(tmp_path, crew_script=flaky, rules={"max_steps": 4})
    assert result.status == "ok"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["infra_errors"] > 0
    crew_ds = [
        d
        for d in decisions(tmp_path)
        if summary["roles"][d.agent] == "crewmate" and d.phase == "free_roam"
    ]
    assert crew_ds and all(d.error_kind == "infrastructure" for d in crew_ds)
    assert all(c.error_class == "rate_limit" for d in crew_ds for c in d.calls)


def test_exhausted_quota_stops_the_game_resumable(tmp_path: Path) -> None:
    def broke(request: ModelRequest) -> str:
        raise BackendError("quota", "insufficient_quota")

    result, _, _ = play(tmp_path, crew_script=broke)
    assert result.status == "invalid" and "quota" in result.reason
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["resumable"] is True and summary["winner"] is None


def test_ablation_strings() -> None:
    crew, imp = apply_ablations(
        AriaSpec(),
        AriaSpec(),
        ["crew.memory=window", "both.state=ego", "impostor.planning=hierarchical"],
    )
    assert (crew.memory, crew.state, crew.planning) == ("window", "ego", "reactive")
    assert (imp.memory, imp.state, imp.planning) == ("semantic", "ego", "hierarchical")
    for bad, msg in [
        ("memory=window", "SIDE.FIELD"),
        ("crew.colour=red", "unknown field"),
        ("crew.memory=forever", "memory"),
    ]:
        with pytest.raises(AblationError, match=msg):
            apply_ablations(AriaSpec(), AriaSpec(), [bad])


def test_continuation_is_logged_apart_from_decisions_and_makes_no_call(tmp_path: Path) -> None:
    """With `continuation: on`, a step an agent is not asked is a `continuation` event
    (no model call, the running program again), never a decision; `off` asks every
    living agent every step, as the reference does."""
    from controller.cli import play_game
    from controller.config import resolve_config
    from controller.events import Continuation, Decision, StepStart, read_events
    from world.spec import load_map

    def game(mode: str) -> list[Any]:
        config = resolve_config(
            "paper",
            overrides={
                "seed": 1,
                "frames": "off",
                "rules": {"max_steps": 30},
                "crew": {"backend": "fake", "spec": {"continuation": mode}},
                "impostor": {"backend": "fake", "spec": {"continuation": mode}},
            },
        )
        play_game(config, load_map("skeld"), "fake", tmp_path / mode)
        return read_events(tmp_path / mode / "events.jsonl")

    on = game("on")
    continued = [e for e in on if isinstance(e, Continuation)]
    assert continued
    for c in continued:
        assert c.module in ("MISSION", "MOVE") and c.program and c.decision_step < c.step
        assert c.running and c.valid
        # never both asked and continued in one step
        assert not any(
            isinstance(d, Decision) and d.agent == c.agent and d.step == c.step for d in on
        )
    counts = json.loads((tmp_path / "on" / "summary.json").read_text())["counts"]
    assert counts["continuations"] == len(continued)
    off = game("off")
    assert not any(isinstance(e, Continuation) for e in off)
    free_roam = {e.step for e in off if isinstance(e, StepStart) and e.phase == "free_roam"}
    assert free_roam and all(
        any(isinstance(d, Decision) and d.step == s for d in off) for s in free_roam
    )


def test_every_request_carries_its_agents_cache_key(tmp_path: Path) -> None:
    """One agent's calls share a cache key (OpenAI's `prompt_cache_key`), agents differ."""
    _, crew, imp = play(tmp_path, rules={"max_steps": 4})
    keys = {r.cache_key for r in crew.requests + imp.requests}
    assert all(k.startswith("mineamongus-") for k in keys)
    assert len(keys) == 8  # one per player
