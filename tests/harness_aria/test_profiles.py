"""ARIA's profiles (`harness_aria.profiles`) and the reference's egocentric view.

A spec names a profile (`reference` by default, or `lean`) and holds every setting the
profile governs resolved; a setting given explicitly wins, and changing the profile
re-resolves the rest. `game_start` records the profile and every resolved setting. The
reference's ego view (`ego_view: reference`) shows what is within 60 degrees of the
heading, in line of sight and under 36 blocks, this step only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from controller.cli import main
from controller.config import resolve_config
from controller.events import Decision, GameStart, Positions, read_events
from controller.observation import Observation
from controller.perception import bearing_deg, facing
from controller.views import Knowledge
from harness_aria.profiles import LEAN, PROFILES, REFERENCE, SETTINGS
from harness_aria.registration import AriaArgs
from harness_aria.spec import AblationError, AriaSpec, apply_ablations
from tests.harness_aria.conftest import SCENE_GEOMETRY as G
from tests.harness_aria.conftest import make_obs

REFERENCE_VALUES = {
    "continuation": "off",
    "module_calls": "reference",
    "action": "codegen",
    "belief_update": "llm",
    "prompt_content": "reference",
    "call_sampling": "reference",
    "ego_view": "reference",
}
LEAN_VALUES = {
    "continuation": "on",
    "module_calls": "needed",
    "action": "primitives",
    "belief_update": "rule",
    "prompt_content": "lean",
    "call_sampling": "model",
    "ego_view": "camera",
}


def settings(spec: AriaSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in SETTINGS}


# ------------------------------------------------------------------------------ profiles
def test_the_tables_are_the_reference_and_lean_harnesses() -> None:
    assert dict(REFERENCE.values) == REFERENCE_VALUES
    assert dict(LEAN.values) == LEAN_VALUES
    assert set(PROFILES) == {"reference", "lean"}
    assert set(SETTINGS) <= set(AriaSpec.model_fields)


def test_the_default_is_the_reference_with_every_setting_resolved() -> None:
    spec = AriaSpec()
    assert spec.profile == "reference" and spec.explicit == ()
    assert settings(spec) == REFERENCE_VALUES
    # the declared defaults agree with the default profile's table
    assert {n: AriaSpec.model_fields[n].default for n in SETTINGS} == REFERENCE_VALUES
    dumped = spec.model_dump()
    assert dumped["profile"] == "reference" and dumped["explicit"] == []
    assert {n: dumped[n] for n in SETTINGS} == REFERENCE_VALUES


def test_lean_resolves_every_setting_to_the_lean_harness() -> None:
    spec = AriaSpec(profile="lean")
    assert settings(spec) == LEAN_VALUES and spec.explicit == ()


@pytest.mark.parametrize("profile", ["reference", "lean"])
def test_an_explicit_setting_wins_over_the_profile(profile: str) -> None:
    table = REFERENCE_VALUES if profile == "reference" else LEAN_VALUES
    other = LEAN_VALUES if profile == "reference" else REFERENCE_VALUES
    for name in SETTINGS:
        spec = AriaSpec.model_validate({"profile": profile, name: other[name]})
        assert settings(spec) == {**table, name: other[name]}
        assert spec.explicit == (name,)
    # in a side's `spec:` (the config), as the controller resolves it
    config = resolve_config(
        "paper",
        overrides={
            "crew": {"backend": "fake", "spec": {"profile": profile, "continuation": "on"}},
            "impostor": {"backend": "fake", "spec": {"ego_view": "camera"}},
        },
    )
    crew = AriaArgs.model_validate(config.crew.args).spec
    impostor = AriaArgs.model_validate(config.impostor.args).spec
    assert settings(crew) == {**table, "continuation": "on"}
    assert crew.explicit == ("continuation",)
    assert settings(impostor) == {**REFERENCE_VALUES, "ego_view": "camera"}


def test_a_resolved_spec_reads_back_the_same() -> None:
    spec = AriaSpec(profile="lean", module_calls="reference", memory="window")
    for dumped in (spec.model_dump(), spec.model_dump(mode="json")):
        assert AriaSpec.model_validate(dumped) == spec
    assert spec.given() == {**spec.given(), "profile": "lean", "module_calls": "reference"}
    assert "continuation" not in spec.given() and "explicit" not in spec.given()


def test_switching_the_profile_by_ablation_resolves_the_unset_settings_again() -> None:
    crew = AriaSpec(module_calls="needed")  # given; the rest the reference's
    impostor = AriaSpec(profile="lean")
    crew2, impostor2 = apply_ablations(
        crew, impostor, ["crew.profile=lean", "impostor.profile=reference"]
    )
    assert settings(crew2) == LEAN_VALUES and crew2.explicit == ("module_calls",)
    assert settings(impostor2) == REFERENCE_VALUES and impostor2.explicit == ()
    # the given setting stays given when the profile goes back
    (back, _) = apply_ablations(crew2, impostor2, ["crew.profile=reference"])
    assert settings(back) == {**REFERENCE_VALUES, "module_calls": "needed"}
    # an ablated setting is given explicitly, and survives a later profile change
    (one, _) = apply_ablations(AriaSpec(), AriaSpec(), ["both.continuation=on"])
    assert one.explicit == ("continuation",)
    (two, _) = apply_ablations(one, AriaSpec(), ["crew.profile=lean"])
    assert two.continuation == "on" and two.action == "primitives"
    (three, _) = apply_ablations(two, AriaSpec(), ["crew.profile=reference"])
    assert settings(three) == {**REFERENCE_VALUES, "continuation": "on"}


def test_copies_and_changes_go_through_the_profile() -> None:
    spec = AriaSpec(ego_view="camera")
    lean = spec.model_copy(update={"profile": "lean"})
    assert lean.profile == "lean" and settings(lean) == {**LEAN_VALUES, "ego_view": "camera"}
    assert spec.with_changes({"profile": "lean", "action": "codegen"}).action == "codegen"
    assert spec.model_copy() == spec


def test_explicit_names_only_the_profiles_settings() -> None:
    with pytest.raises(ValidationError, match="not a setting a profile governs"):
        AriaSpec.model_validate({"explicit": ["memory"]})
    with pytest.raises(AblationError, match="unknown field 'explicit'"):
        apply_ablations(AriaSpec(), AriaSpec(), ["both.explicit=continuation"])
    with pytest.raises(AblationError, match="profile"):
        apply_ablations(AriaSpec(), AriaSpec(), ["crew.profile=fast"])


def test_game_start_records_the_profile_and_every_resolved_setting(tmp_path: Path) -> None:
    out = tmp_path / "game"
    code = main(
        [
            "play",
            "--preset",
            "paper",
            "--crew",
            "fake",
            "--impostor",
            "fake",
            "--world",
            "fake",
            "--frames",
            "off",
            "--max-steps",
            "3",
            "--ablation",
            "impostor.profile=lean",
            "--ablation",
            "impostor.ego_view=reference",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    events = read_events(out / "events.jsonl")
    start = next(e for e in events if isinstance(e, GameStart))
    want = {
        "crewmate": ("reference", REFERENCE_VALUES, []),
        "impostor": ("lean", {**LEAN_VALUES, "ego_view": "reference"}, ["ego_view"]),
    }
    for seat, role in start.roles.items():
        profile, values, explicit = want[role]
        spec = start.agent_specs[seat]["spec"]
        assert spec["profile"] == profile and spec["explicit"] == explicit
        assert {n: spec[n] for n in SETTINGS} == values
    for side, role in (("crew", "crewmate"), ("impostor", "impostor")):
        profile, values, explicit = want[role]
        recorded = start.config[side]["args"]["spec"]
        assert recorded["profile"] == profile and recorded["explicit"] == explicit
        assert {n: recorded[n] for n in SETTINGS} == values
    # every decision carries the same resolved spec
    decisions = [e for e in events if isinstance(e, Decision)]
    assert decisions
    for d in decisions:
        assert d.spec == start.agent_specs[d.agent]["spec"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "ok"


# ------------------------------------------------------------------ the reference's ego view
def placed(eye: tuple[float, float, float], yaw: float, bearing: float, d: float) -> Any:
    """The point `d` blocks from `eye` at `bearing` degrees from the heading `yaw`."""
    fx, fz = facing(yaw + bearing)
    return (round(eye[0] + fx * d, 2), eye[1], round(eye[2] + fz * d, 2))


# Open spots of the skeld map, found by a search of its line of sight (and checked below):
# in the cafeteria, 20 blocks at 50 degrees and 8 blocks at 70 degrees to the same side
# are in the clear; in the upper engine, 35 and 40 blocks straight ahead are.
CAFE_EYE, CAFE_YAW = (-6.5, 65.0, -5.5), 285.0
ENGINE_EYE, ENGINE_YAW = (-33.5, 65.0, -16.5), 270.0
WALL_EYE, WALL_YAW = (-6.5, 65.0, -5.5), 0.0


def reference_view(obs: Observation, knowledge: Knowledge | None = None) -> Observation:
    knowledge = knowledge or Knowledge("ego", G, ego_view="reference")
    return knowledge.update(obs)


def scene(pos: Any, yaw: float, players: dict[str, Any], step: int = 5) -> Observation:
    """An observation whose sight sets hold `players` all around (as the game would give
    them with a vision radius that reaches them: the filter decides what is in view)."""
    return make_obs(pos=pos, yaw=yaw, players=players, step=step, tick=step * 100)


def test_the_reference_view_shows_50_degrees_at_20_blocks_and_not_70_degrees() -> None:
    at50 = placed(CAFE_EYE, CAFE_YAW, 50, 20)
    at70 = placed(CAFE_EYE, CAFE_YAW, 70, 8)
    for target in (at50, at70):
        assert G.line_of_sight(CAFE_EYE, target)
    assert round(bearing_deg(CAFE_EYE, CAFE_YAW, at50)) == 50
    assert round(bearing_deg(CAFE_EYE, CAFE_YAW, at70)) == 70
    known = reference_view(scene(CAFE_EYE, CAFE_YAW, {"blue": at50, "green": at70}))
    assert set(known.visible_players) == {"blue"}
    assert known.nearby_players == {} and known.roster == {}
    view = Knowledge("ego", G, ego_view="reference").view(known)
    assert "In view now: Blue (20.0 blocks, ahead-" in view.to_text()
    # the camera's view (102 degrees, 12 blocks) shows neither
    camera = Knowledge("ego", G).update(scene(CAFE_EYE, CAFE_YAW, {"blue": at50, "green": at70}))
    assert camera.visible_players == {}


def test_the_reference_view_ends_before_36_blocks() -> None:
    at35 = placed(ENGINE_EYE, ENGINE_YAW, 0, 35)
    at40 = placed(ENGINE_EYE, ENGINE_YAW, 0, 40)
    assert G.line_of_sight(ENGINE_EYE, at35) and G.line_of_sight(ENGINE_EYE, at40)
    known = reference_view(scene(ENGINE_EYE, ENGINE_YAW, {"blue": at35, "green": at40}))
    assert set(known.visible_players) == {"blue"}


def test_the_reference_view_does_not_see_through_walls() -> None:
    walled = placed(WALL_EYE, WALL_YAW, 20, 10)
    clear = placed(WALL_EYE, WALL_YAW, 0, 6)
    assert not G.line_of_sight(WALL_EYE, walled) and G.line_of_sight(WALL_EYE, clear)
    known = reference_view(scene(WALL_EYE, WALL_YAW, {"blue": walled, "green": clear}))
    assert set(known.visible_players) == {"green"}


def test_the_reference_view_keeps_nothing_from_the_step_before() -> None:
    at50 = placed(CAFE_EYE, CAFE_YAW, 50, 20)
    knowledge = Knowledge("ego", G, ego_view="reference")
    first = knowledge.update(scene(CAFE_EYE, CAFE_YAW, {"blue": at50}, step=5))
    assert set(first.visible_players) == {"blue"} and set(first.last_seen) == {"blue"}
    # blue walks out of view: at the next step nothing of it is left
    second = knowledge.update(scene(CAFE_EYE, CAFE_YAW, {}, step=6))
    assert second.visible_players == {} and second.last_seen == {}
    assert "Blue" not in knowledge.view(second).to_text()
    assert knowledge.view(first).seen_before == {}  # never a "where you last saw" line
    # the camera's view remembers the sighting
    camera = Knowledge("ego", G)
    camera.update(scene(CAFE_EYE, CAFE_YAW, {"blue": placed(CAFE_EYE, CAFE_YAW, 0, 5)}, step=5))
    assert set(camera.update(scene(CAFE_EYE, CAFE_YAW, {}, step=6)).last_seen) == {"blue"}


def test_a_reference_ego_agent_is_offered_kill_at_20_blocks() -> None:
    """The camera's view does not reach 20 blocks (tests/harness_aria/test_kill_scenes.py);
    the reference's does, when the observation carries the player."""
    from harness_aria.agent import AriaAgent
    from harness_aria.backends.fake import FakeBackend
    from tests.harness_aria.conftest import Answers

    answers = Answers(planner={"module": "MOVE", "target": None, "reasoning": "x"})
    at50 = placed(CAFE_EYE, CAFE_YAW, 50, 20)
    obs = make_obs(
        role="impostor",
        pos=CAFE_EYE,
        yaw=CAFE_YAW,
        players={"blue": at50},
        kill_ready=True,
        teammates=["black"],
    )
    for view, offered in (("reference", True), ("camera", False)):
        spec = AriaSpec.model_validate({"state": "ego", "ego_view": view})
        agent = AriaAgent("red", spec, FakeBackend("t", script=answers), G)
        asyncio_run(agent.decide(obs))
        menu = answers.prompt("planner")[-1].split("Modules you may choose: ")[1]
        assert ("KILL" in menu.split(".")[0]) is offered, (view, menu)


def asyncio_run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


# ------------------------------------------------------------------ checked from the log
def _fake_game(tmp: Path, seed: int, **spec: Any) -> Path:
    from controller.cli import play_game
    from world.spec import load_map

    side = {"backend": "fake", "spec": {"state": "ego", **spec}}
    config = resolve_config(
        "paper",
        overrides={"seed": seed, "frames": "off", "crew": side, "impostor": side},
    )
    out = tmp / f"seed{seed}"
    play_game(config, load_map("skeld"), "fake", out)
    return out


def test_reference_ego_games_send_only_what_the_reference_view_allows(tmp_path: Path) -> None:
    """What each reference-ego decision was told names in view only players within 60
    degrees, in line of sight and under 36 blocks, never one out of play
    (`controller.checks.view_leaks` on the logged view texts); a planted line naming a
    player the log puts behind the agent is caught."""
    from controller.checks import view_leaks

    out = _fake_game(tmp_path, 2)
    events = read_events(out / "events.jsonl")
    leaks, checked = view_leaks({}, events, G)
    assert leaks == [] and checked > 0
    sent = [
        e
        for e in events
        if isinstance(e, Decision) and e.phase == "free_roam" and "In view now: " in e.view_text
    ]
    assert sent and all(e.spec["ego_view"] == "reference" for e in sent)
    assert not any("Where you last saw" in e.view_text for e in sent)
    snapshots = [e for e in events if isinstance(e, Positions)]
    for d in sent:
        at = [p for p in snapshots if p.tick == d.tick]
        if not at:
            continue
        poses = at[-1].players
        eye, yaw = poses[d.agent].pos, poses[d.agent].yaw
        behind = [
            a
            for a, x in poses.items()
            if a != d.agent and x.status == "alive" and bearing_deg(eye, yaw, x.pos) > 90
        ]
        if behind:
            line = f"In view now: {behind[0].capitalize()} (3.0 blocks, ahead)"
            found, _ = view_leaks({}, [*events, d.model_copy(update={"view_text": line})], G)
            assert found == [
                f"{d.agent} (ego, sent) step {d.step}: names {behind[0]} outside the field of view"
            ]
            return
    raise AssertionError("no decision had a living player behind its agent")


# ------------------------------------------------------------------ estimates of both
def _figures() -> dict[str, Any]:
    """Token figures of a made-up measurement: the base (the reference profile), the lean
    profile as a whole, and two single-field settings, each with its resolved spec."""
    from harness_aria.registration import KIND

    base = dict(KIND.facts(AriaArgs()).axes)
    lean = dict(KIND.facts(AriaArgs(spec=AriaSpec(profile="lean"))).axes)

    def side(decisions: float, calls: float, text: float, spec: dict[str, Any]) -> Any:
        return {
            "decisions_per_seat_step": decisions,
            "calls_per_decision": calls,
            "text_in_per_decision": text,
            "images_per_decision": 0.0,
            "tokens_out_per_decision": 10.0,
            "models": {"gpt-4.1-mini": {"cached_share": 0.0, "tokens_in_per_decision": text}},
            "spec": spec,
        }

    def setting(change: dict[str, Any], *numbers: float, spec: dict[str, Any]) -> Any:
        return {"spec_change": change, "sides": {"crewmate": side(*numbers, spec=spec)}}

    return {
        "rq1_base": {"crew": {}, "impostor": {}},
        "settings": {
            "default (RQ1)": setting({}, 1.0, 3.0, 4000.0, spec=base),
            "profile=lean": setting({"profile": "lean"}, 0.7, 1.3, 1500.0, spec=lean),
            "memory=window": setting(
                {"memory": "window"}, 1.0, 3.0, 2000.0, spec={**base, "memory": "window"}
            ),
            "continuation=on": setting(
                {"continuation": "on"}, 0.8, 3.0, 4000.0, spec={**base, "continuation": "on"}
            ),
        },
    }


def test_the_estimate_starts_from_the_measured_profile() -> None:
    from controller.tournament.estimate import measured_side
    from harness_aria.registration import KIND

    figures = _figures()
    defaults = dict(KIND.facts(AriaArgs()).axes)

    def estimate(**spec: Any) -> Any:
        axes = KIND.facts(AriaArgs(spec=AriaSpec.model_validate(spec))).axes
        return measured_side("crewmate", dict(axes), figures, defaults)

    reference = estimate()
    assert (reference.calls_per_decision, reference.text_in_per_decision) == (3.0, 4000.0)
    assert reference.notes == ()
    lean = estimate(profile="lean")
    assert (lean.decisions_per_seat_step, lean.calls_per_decision) == (0.7, 1.3)
    assert lean.text_in_per_decision == 1500.0
    assert lean.notes == ("crewmate: from the measured setting profile=lean",)
    # a field on top of the lean profile takes its measured ratio to the base
    window = estimate(profile="lean", memory="window")
    assert window.text_in_per_decision == pytest.approx(1500.0 * 2000.0 / 4000.0)
    # the reference with one lean setting given starts from the base
    continued = estimate(continuation="on")
    assert continued.decisions_per_seat_step == pytest.approx(0.8)
    assert continued.calls_per_decision == 3.0
    # the lean profile with one setting given back to the reference's: nothing measured
    # for it, so it is named and taken as the lean profile's
    asked = estimate(profile="lean", continuation="off")
    assert asked.calls_per_decision == 1.3
    assert "crewmate continuation=off: not measured, counted as profile=lean" in asked.notes


def test_the_dry_run_estimates_both_profiles_from_their_measured_games(tmp_path: Path) -> None:
    """`tournament --dry-run` prices a reference arm from the measured base and a lean arm
    from the measured lean profile (`token_figures.json`), each at its own measured input
    a decision."""
    from controller.tournament.estimate import arm_estimate, load_figures
    from controller.tournament.spec import expand_arms, load_spec

    figures = load_figures()
    assert figures is not None and "profile=lean" in figures["settings"]
    side = {"backend": "openai:gpt-4.1-mini", "spec": {"state": "privileged"}}
    crew = {**side, "spec": {"state": "privileged", "reflection": "on", "prompt": "minimal"}}
    lean = {"spec": {"profile": "lean"}}
    study = tmp_path / "profiles.yaml"
    study.write_text(
        json.dumps(
            {
                "name": "profiles",
                "world": "minecraft",
                "preset": "paper",
                "repetitions": 1,
                "base": {"frames": "jpg", "crew": crew, "impostor": side},
                "sweep": {
                    "axes": {
                        "profile": [
                            {"label": "reference", "set": {}},
                            {"label": "lean", "set": {"crew": lean, "impostor": lean}},
                        ]
                    }
                },
            }
        )
    )
    spec = load_spec(study)
    arms = {a.name: a for a in expand_arms(spec)}
    est = {name: arm_estimate(arm, 1, spec.estimate, figures) for name, arm in arms.items()}
    for name, label in (("reference", "default (RQ1)"), ("lean", "profile=lean")):
        measured = figures["settings"][label]["models"]["gpt-4.1-mini"]
        e = est[name]
        per_decision = e.tokens_in / e.decisions_per_game
        assert per_decision == pytest.approx(measured["tokens_in_per_decision"], rel=0.01)
        assert e.cost_usd == pytest.approx(measured["game_cost_cached_usd"], rel=0.05)
        assert not any("not measured" in n for n in e.notes), e.notes
    assert est["reference"].notes == ()
    assert "crewmate: from the measured setting profile=lean" in est["lean"].notes
    assert est["lean"].cost_usd is not None and est["reference"].cost_usd is not None
    assert est["lean"].cost_usd < est["reference"].cost_usd
