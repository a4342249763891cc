"""Imperfect but reasonable answers fed to each module in a mid-game state.

Each case is an answer the way real models often write it; the module must read it as
meant (and log the normalisation on the call record), or refuse it with its reason.
Nothing may be reversed (a string "true" read as no) or silently replaced (an unknown
KILL target becoming the nearest crewmate, a failed ballot becoming skip).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from controller.actions import dump_actions
from controller.observation import MeetingView, Observation, Scoreboard
from harness_aria.backends.fake import FakeBackend
from harness_aria.memory import MEMORIES
from harness_aria.modules import MODULES
from harness_aria.modules.base import ModuleResult
from harness_aria.modules.kill import LEASH, STRIKE_REACH, KillModule
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit
from world.geometry import ShipGeometry
from world.spec import load_map

GEOMETRY = ShipGeometry(load_map("skeld"))
PLAYERS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
HERE = (0.0, 65.0, 0.0)


def observe(**over: Any) -> Observation:
    """A mid-game free-roam observation of crewmate red (fields overridable)."""
    phase = over.get("phase", "free_roam")
    base: dict[str, Any] = {
        "agent": "red",
        "role": "crewmate",
        "step": 5,
        "tick": 500,
        "phase": phase,
        "pos": HERE,
        "yaw": 0.0,
        "room": "cafeteria",
        "tasks": [1, 2, 3],
        "tasks_done": [1],
        "teammates": [],
        "kill_ready": False,
        "emergency_ready": True,
        "known_dead": ["white"],
        "players": PLAYERS,
        "visible_players": {"blue": (3.0, 65.0, 0.0)},
        "visible_bodies": {},
        "scoreboard": Scoreboard(
            phase=phase,
            kill_ready=False,
            task_bits=[True, False, False],
            dead=False,
            meeting_countdown=None,
            speaker=None,
            game_over=False,
            area="cafeteria",
            task_in_progress=None,
            reported_body=None,
            emergency_ready=True,
        ),
    }
    base.update(over)
    return Observation(**base)


def impostor(**over: Any) -> Observation:
    return observe(role="impostor", teammates=["black"], kill_ready=True, tasks=[], **over)


def meeting_view() -> MeetingView:
    return MeetingView(
        index=0,
        trigger="report",
        caller="blue",
        victim="white",
        body_room="electrical",
        body_pos=(-16.0, 65.0, 16.0),
        order=["red", "blue", "green", "yellow"],
        speaker="red",
        utterances_left=2,
        talk_ticks_left=1000,
    )


def run(
    module: str, obs: Observation, *answers: str, choice: Choice | None = None
) -> tuple[ModuleResult, Toolkit]:
    backend = FakeBackend("t", script=list(answers))
    tk = Toolkit(
        # The module's own answer read into its program: with `action: codegen` MOVE and
        # MISSION hand it to the model to write the program (tests/harness_aria/
        # test_codegen_module.py), so the reading is checked where the module builds it.
        spec=AriaSpec(module_calls="reference", action="primitives"),
        backend=backend,
        geometry=GEOMETRY,
        persona="persona",
        obs=obs,
        view_text="view",
        memory=MEMORIES["semantic"](10),
    )
    result = logged(asyncio.run(MODULES[module]().run(tk, choice or Choice(module=module))))
    return result, tk


# ------------------------------------------------------------------------------ REPORT


@pytest.mark.parametrize("value", ['"true"', '"yes"', "true", "1", '"True"', "True", '"Yes."'])
def test_report_yes_in_any_spelling_reports(value: str) -> None:
    obs = observe(visible_bodies={"white": (1.0, 65.0, 1.0)})
    result, tk = run("REPORT", obs, f'{{"should_report": {value}, "reasoning": "a body"}}')
    assert result.actions == [{"op": "report", "body": "white"}]
    assert not result.invalid
    if value != "true":
        assert tk.calls[-1].normalised


@pytest.mark.parametrize("value", ['"false"', '"no"', "false", "0", "False"])
def test_report_no_in_any_spelling_walks_away(value: str) -> None:
    obs = impostor(visible_bodies={"white": (1.0, 65.0, 1.0)})
    result, _ = run("REPORT", obs, f'{{"should_report": {value}, "reasoning": "leave"}}')
    assert result.actions and result.actions[0]["op"] == "go_to"


@pytest.mark.parametrize(
    "answer", ['{"should_report": "maybe"}', '{"reasoning": "hmm"}', '{"should_report": null}']
)
def test_report_unclear_answer_is_invalid_not_no(answer: str) -> None:
    obs = observe(visible_bodies={"white": (1.0, 65.0, 1.0)})
    result, _ = run("REPORT", obs, answer)
    assert result.invalid and "should_report" in result.invalid
    assert result.actions == []


def test_report_answer_in_fences_with_prose_and_trailing_comma() -> None:
    obs = observe(visible_bodies={"white": (1.0, 65.0, 1.0)})
    text = 'I must report this.\n```json\n{"should_report": "true", "reasoning": "body",}\n```'
    result, tk = run("REPORT", obs, text)
    assert result.actions == [{"op": "report", "body": "white"}]
    notes = tk.calls[-1].normalised
    assert "json: code fence" in notes and "json: trailing comma" in notes
    assert any(n.startswith("should_report:") for n in notes)


# ------------------------------------------------------------------------------ EMERGENCY


@pytest.mark.parametrize(("value", "press"), [('"yes"', True), ("True", True), ('"no"', False)])
def test_emergency_flags(value: str, press: bool) -> None:
    result, _ = run("EMERGENCY", observe(), f'{{"should_call": {value}}}')
    assert (result.actions == [{"op": "press_button"}]) is press
    assert not result.invalid


def test_emergency_unclear_is_invalid() -> None:
    result, _ = run("EMERGENCY", observe(), '{"should_call": "perhaps later"}')
    assert result.invalid and "should_call" in result.invalid


# ------------------------------------------------------------------------------ MISSION


@pytest.mark.parametrize("value", ["2", "2.0", '"2"', '"station 2"', '"Station 2"', '"#2"'])
def test_mission_station_spellings(value: str) -> None:
    result, tk = run("MISSION", observe(), f'{{"station": {value}, "objective": "fix wires"}}')
    assert result.actions[0] == {"op": "use_station", "station": 2}
    if value != "2":
        assert tk.calls[-1].normalised == [f"station: {eval(value)!r} -> 2"]  # noqa: S307


@pytest.mark.parametrize("value", ["1", "2.5", '"the one in medbay"', "9"])
def test_mission_bad_station_is_invalid(value: str) -> None:
    result, _ = run("MISSION", observe(), f'{{"station": {value}}}')
    assert result.invalid and "station" in result.invalid
    assert result.actions == []


# ------------------------------------------------------------------------------ MOVE


@pytest.mark.parametrize(
    ("room", "expected"),
    [
        ('"Lower Engine"', "lower_engine"),
        ('"lower engine"', "lower_engine"),
        ('"O2"', "o2"),
        ('"MedBay."', "medbay"),
    ],
)
def test_move_room_names(room: str, expected: str) -> None:
    result, tk = run("MOVE", observe(), f'{{"room": {room}, "follow": null, "reasoning": "go"}}')
    assert result.actions[0] == {"op": "go_to", "room": expected}
    assert tk.calls[-1].normalised


def test_move_follow_with_punctuation() -> None:
    result, _ = run("MOVE", observe(), '{"room": null, "follow": "Yellow.", "reasoning": "watch"}')
    assert result.actions[0]["op"] == "follow" and result.actions[0]["agent"] == "yellow"


def test_move_unknown_room_is_invalid() -> None:
    result, _ = run("MOVE", observe(), '{"room": "the kitchen", "follow": "none"}')
    assert result.invalid and result.actions == []


def test_move_python_literals_and_raw_newline() -> None:
    text = "{'room': 'Electrical', 'follow': None, 'reasoning': 'tasks\nthere'}"
    result, tk = run("MOVE", observe(), text)
    assert result.actions[0] == {"op": "go_to", "room": "electrical"}
    notes = tk.calls[-1].normalised
    assert "json: single quotes" in notes and "json: Python literal" in notes


# ------------------------------------------------------------------------------ VOTE


def voting(**over: Any) -> Observation:
    return observe(phase="voting", meeting=meeting_view(), **over)


@pytest.mark.parametrize(
    ("value", "vote", "abstain"),
    [
        ('"yellow."', "yellow", False),
        ('"Yellow"', "yellow", False),
        ('"skip"', "skip", False),
        ('"Skip."', "skip", False),
        ("null", "skip", False),
        ('"none"', "skip", False),
        ('"abstain"', None, True),
        ('"nobody"', "skip", False),
    ],
)
def test_vote_targets(value: str, vote: str | None, abstain: bool) -> None:
    result, _ = run("VOTE", voting(), f'{{"vote_target": {value}, "reasoning": "r"}}')
    assert result.vote == vote and result.abstain is abstain
    assert not result.invalid


@pytest.mark.parametrize(
    "value", ["null", '"none"', '"None."', '"nobody"', '"No one."', '"no-one"', '"NOBODY"']
)
def test_vote_naming_no_one_is_a_skip_ballot_noted_on_the_call(value: str) -> None:
    # Formerly an abstention (no ballot), which changed meeting outcomes from skipped to tie.
    result, tk = run("VOTE", voting(), f'{{"vote_target": {value}, "reasoning": "r"}}')
    assert (result.vote, result.abstain, result.invalid) == ("skip", False, "")
    assert any(
        n.startswith("vote_target: ") and n.endswith("-> 'skip'") for n in tk.calls[-1].normalised
    )


def test_vote_abstain_word_is_the_only_abstention() -> None:
    result, tk = run("VOTE", voting(), '{"vote_target": "Abstention.", "reasoning": "r"}')
    assert (result.vote, result.abstain, result.invalid) == (None, True, "")
    assert "vote_target: 'Abstention.' -> 'abstain'" in tk.calls[-1].normalised


@pytest.mark.parametrize(
    "answer",
    ['{"vote": "yellow", "reasoning": "r"}', '{"target": "skip"}', '{"reasoning": "r"}'],
)
def test_vote_under_a_wrong_key_is_a_failed_ballot_not_an_abstention(answer: str) -> None:
    result, _ = run("VOTE", voting(), answer)
    assert result.invalid and "'vote_target'" in result.invalid
    assert result.vote is None and not result.abstain


def test_vote_under_a_wrong_key_is_a_model_error_in_the_decision() -> None:
    from harness_aria.agent import AriaAgent

    agent = AriaAgent("red", AriaSpec(), FakeBackend("t", script=['{"vote": "yellow"}']), GEOMETRY)
    decision = asyncio.run(agent.decide(voting()))
    assert decision.module == "VOTE" and decision.vote is None and not decision.abstain
    assert "no 'vote_target'" in decision.invalid and not decision.infrastructure
    from controller.deciding import classify

    assert classify(decision, "")[1] == "model"


def test_vote_for_a_dead_or_unknown_player_is_invalid_not_skip() -> None:
    result, _ = run("VOTE", voting(), '{"vote_target": "white"}')
    assert result.invalid and result.vote is None and not result.abstain


def test_failed_ballot_is_no_ballot_not_skip() -> None:
    result, _ = run("VOTE", voting(), "I cannot decide.")
    assert result.invalid and result.vote is None


# ------------------------------------------------------------------------------ MEETING


def test_meeting_line_with_newline_and_title_case_suspect() -> None:
    obs = observe(phase="meeting", meeting=meeting_view())
    text = (
        '{"response_text": "I saw Blue\nnear electrical.", '
        '"suspicion_cast_on": "Blue", "reasoning": "x"}'
    )
    result, _ = run("MEETING", obs, text)
    assert result.actions == [{"op": "say", "text": "I saw Blue near electrical."}]


# ------------------------------------------------------------------------------ KILL


def scan(witness: str, target_visible: str = "true") -> str:
    return (
        f'{{"players_seen": ["blue"], "witnesses_visible": {witness}, '
        f'"target_visible": {target_visible}, "detail": "d", "intent": "i"}}'
    )


@pytest.mark.parametrize("witness", ['"true"', '"yes"', "true", '"maybe"', "null", '"unsure"', "1"])
def test_kill_any_witness_answer_but_a_clear_no_defers(witness: str) -> None:
    result, _ = run("KILL", impostor(), scan(witness))
    assert not any(a["op"] == "kill" for a in result.actions)
    assert "DEFER" in result.memo


def test_kill_missing_witness_key_defers() -> None:
    answer = '{"players_seen": [], "target_visible": true, "detail": "d"}'
    result, _ = run("KILL", impostor(), answer)
    assert "DEFER" in result.memo


@pytest.mark.parametrize("witness", ['"false"', '"no"', "false", "0"])
def test_kill_clear_no_strikes_at_once_unguarded(witness: str) -> None:
    # Privileged: the state lists everyone in sight all around, so one scan clears it;
    # the model's judgement stands (no guard unless the assist `strike_guard` is on).
    result, _ = run("KILL", impostor(), scan(witness))
    assert result.actions == [
        {"op": "kill", "target": "blue", "max_distance": LEASH, "guard": "none"}
    ]
    assert result.deferral == ""


def test_kill_unresolvable_target_is_invalid_not_the_nearest() -> None:
    result, tk = run("KILL", impostor(), choice=Choice(module="KILL", target="the purple guy"))
    assert result.invalid and "purple" in result.invalid
    assert result.actions == [] and not tk.calls


def test_kill_teammate_target_is_invalid() -> None:
    result, _ = run("KILL", impostor(), choice=Choice(module="KILL", target="Black"))
    assert result.invalid and "crewmate" in result.invalid


def _two_stage(first: Observation, second: Observation, *answers: str) -> ModuleResult:
    """Ego: the ahead scan, then the behind scan at the next step."""
    module = KillModule()
    backend = FakeBackend("t", script=list(answers))

    def tk(obs: Observation) -> Toolkit:
        return Toolkit(
            spec=AriaSpec(state="ego"),
            backend=backend,
            geometry=GEOMETRY,
            persona="p",
            obs=obs,
            view_text="v",
            memory=MEMORIES["semantic"](10),
        )

    ahead = logged(asyncio.run(module.run(tk(first), Choice(module="KILL", target="blue"))))
    assert ahead.actions[-1] == {"op": "look", "behind": True}
    assert ahead.actions[0]["op"] == "follow" and ahead.deferral == "scan"
    assert module.scanning(second.step) == "blue"
    return logged(asyncio.run(module.run(tk(second), Choice(module="KILL"))))


def test_ego_kill_strikes_where_the_behind_scan_cleared_it() -> None:
    first = impostor()
    second = impostor(step=6, yaw=180.0, visible_players={})
    result = _two_stage(first, second, scan("false"), scan("false"))
    look, kill = result.actions
    assert look == {"op": "look", "behind": True}  # turns back to the half judged first
    assert kill["op"] == "kill" and kill["target"] == "blue" and kill["guard"] == "none"
    assert kill["max_distance"] <= STRIKE_REACH + 1.0


def test_ego_target_seen_walking_off_is_followed_not_struck() -> None:
    first = impostor()
    second = impostor(step=6, yaw=180.0, visible_players={"blue": (9.0, 65.0, 0.0)})
    result = _two_stage(first, second, scan("false"), scan("false"))
    assert not any(a["op"] == "kill" for a in result.actions)
    assert result.deferral == "target_lost" and "DEFER" in result.memo


def test_kill_behind_scan_witness_string_defers() -> None:
    first = impostor()
    second = impostor(step=6, visible_players={})
    result = _two_stage(first, second, scan("false"), scan('"true"'))
    assert result.actions == [{"op": "look", "behind": True}]
    assert result.deferral == "witness" and "witness behind" in result.memo


def test_kill_target_out_of_reach_closes_in_before_scanning() -> None:
    obs = impostor(visible_players={"blue": (7.0, 65.0, 0.0)})
    result, tk = run("KILL", obs)
    assert result.actions[0]["op"] == "follow" and not tk.calls


# ------------------------------------------------------------------------------ end to end


def sloppy(request: Any) -> str:
    """The offline answers written the way real models often write them."""
    import json

    from harness_aria.fake_answers import answer

    data = json.loads(answer(request))
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif key == "room" and isinstance(value, str):
            value = value.replace("_", " ").title()
        elif (
            key in ("station", "target") and isinstance(value, int) and not isinstance(value, bool)
        ):
            value = f"station {value}"
        elif key == "vote_target" and value == "skip":
            value = "Skip."
        out[key] = value
    body = json.dumps(out)[:-1] + ",}"
    return f"Here is my decision.\n```json\n{body}\n```\nI hope that helps."


def test_a_sloppy_but_sensible_model_loses_no_decision(tmp_path: Any) -> None:
    from controller.config import resolve_config
    from controller.events import Decision, read_events
    from controller.game import Game
    from controller.worlds.fake import FakeWorld
    from harness_aria.agent import AriaAgent

    backend = FakeBackend("sloppy", script=sloppy)
    config = resolve_config("quick", overrides={"seed": 2, "rules": {"max_steps": 30}})

    def factory(agent: str, role: str) -> AriaAgent:
        return AriaAgent(agent, AriaSpec(), backend, GEOMETRY)

    Game(config, GEOMETRY.spec, FakeWorld(GEOMETRY), factory, tmp_path).run()
    decisions = [d for d in read_events(tmp_path / "events.jsonl") if isinstance(d, Decision)]
    with_calls = [d for d in decisions if d.calls]
    assert len(with_calls) > 20
    invalid = [d for d in with_calls if d.error_kind == "model"]
    assert not invalid, [(d.module, d.error) for d in invalid[:5]]
    calls = [c for d in with_calls for c in d.calls]
    assert all("json: code fence" in c.normalised for c in calls)
    notes = [n for c in calls for n in c.normalised]
    assert any(n.startswith(("station: 'station ", "target: 'station ")) for n in notes)
    for d in decisions:  # a crewmate that said "true" reports; it never walks away
        if d.module == "REPORT" and d.calls and '"should_report": "true"' in d.raw:
            assert d.program and d.program[0]["op"] == "report"


def logged(result: ModuleResult) -> ModuleResult:
    """A module's result, its actions as the log writes them (`dump_actions`)."""
    return dataclasses.replace(result, actions=dump_actions(result.actions))  # type: ignore[arg-type]
