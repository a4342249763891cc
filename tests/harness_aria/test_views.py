"""What an ARIA agent may know: the ego field of view and the privileged roster, in every
channel (view text, memory, modules offered, KILL targets), on hand-built scenes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.actions import Wait
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Decision, read_events
from controller.observation import MeetingView, Sighting
from controller.views import Knowledge, side_of
from harness_aria.spec import AriaSpec
from testkit.games import OFFLINE_ARIA, GameStore
from world.spec import load_map


def modules_offered(answers: Any) -> str:
    system: str = answers.prompt("planner")[-1]
    return system.split("Modules you may choose:")[1].split(".")[0]


def test_ego_keeps_only_the_cone_privileged_keeps_all_around(scene: Any) -> None:
    obs = scene.obs(
        players={"blue": scene.ahead(4), "green": scene.behind(4)},
        bodies={"pink": scene.behind(3)},
        roster={"white": Sighting(step=5, tick=500, pos=scene.ahead(20), room="cafeteria")},
    )
    ego = Knowledge("ego", scene.geometry).update(obs)
    assert set(ego.visible_players) == {"blue"} and ego.visible_bodies == {}
    assert ego.nearby_players == {} and ego.nearby_bodies == {} and ego.roster == {}
    assert set(ego.last_seen) == {"blue"} and ego.bodies_seen == {}
    priv = Knowledge("privileged", scene.geometry).update(obs)
    assert set(priv.visible_players) == {"blue", "green"} and set(priv.visible_bodies) == {"pink"}
    assert set(priv.roster) == {"blue", "green", "white"}
    far = scene.obs(roster={"white": Sighting(step=5, tick=500, pos=scene.ahead(200), room="x")})
    assert Knowledge("privileged", scene.geometry, privileged_radius=96.0).update(far).roster == {}


def test_ego_range_and_line_of_sight_bound_the_view(scene: Any) -> None:
    obs = scene.obs(players={"blue": scene.ahead(11.0), "green": scene.ahead(5.0)})
    near = Knowledge("ego", scene.geometry, ego_range=8.0).update(obs)
    assert set(near.visible_players) == {"green"}
    wall = scene.obs(players={"blue": (scene.cafeteria[0], 65.0, scene.cafeteria[2] + 60.0)})
    assert Knowledge("ego", scene.geometry, ego_range=200.0).update(wall).visible_players == {}


def test_ego_agent_cannot_target_or_remember_a_player_behind_it(scene: Any) -> None:
    """The same scene twice: blue behind the impostor, then blue in front of it."""
    results = {}
    for where in ("behind", "ahead"):
        answers = scene.Answers(
            planner={"module": "KILL", "target": None, "reasoning": "hunt", "intent": "kill"},
            kill_scan={"players_seen": [], "witnesses_visible": False, "target_visible": True},
        )
        agent = scene.agent("red", answers, state="ego", memory="window")
        blue = scene.behind(4) if where == "behind" else scene.ahead(4)
        obs = scene.obs("red", "impostor", kill_ready=True, players={"blue": blue})
        decision = scene.decide(agent, obs)
        results[where] = (answers, agent, decision)
    answers, agent, decision = results["behind"]
    assert "KILL" not in modules_offered(answers)
    assert "kill_scan" not in answers.purposes()
    assert "Blue" not in decision.view_text and "In view now: nobody" in decision.view_text
    assert "blue" not in agent.memory.text().lower()
    assert decision.invalid  # the script insists on KILL, which was not offered
    answers, agent, decision = results["ahead"]
    assert "KILL" in modules_offered(answers)
    assert decision.module == "KILL" and "kill_scan" in answers.purposes()
    assert "checking whether it is safe to kill blue" in answers.prompt("kill_scan")[0]
    assert "Blue (4.0 blocks, ahead)" in decision.view_text
    assert "saw blue" in agent.memory.text()


def test_ego_kill_never_reaches_a_player_out_of_view(scene: Any) -> None:
    """Blue in front, green behind and nearer: whether the planner names no target or
    green, an ego impostor never scans for, follows or strikes green; a privileged one,
    which has green in sight all around, does go for green when it is named."""

    def involves_green(answers: Any, decision: Any) -> bool:
        scans = " ".join(answers.prompt("kill_scan"))
        acts = [a.get("target") or a.get("agent") for a in decision.program]
        return "safe to kill green" in scans or "green" in acts

    obs = scene.obs(
        "red",
        "impostor",
        kill_ready=True,
        players={"blue": scene.ahead(6), "green": scene.behind(2)},
    )
    for state, target, expect in (
        ("ego", None, False),
        ("ego", "green", False),
        ("privileged", "green", True),
    ):
        answers = scene.Answers(
            planner={"module": "KILL", "target": target, "reasoning": "hunt", "intent": "kill"},
            kill_scan={"players_seen": [], "witnesses_visible": False, "target_visible": True},
        )
        decision = scene.decide(scene.agent("red", answers, state=state), obs)
        assert involves_green(answers, decision) is expect, (state, target, decision)


def test_report_is_offered_only_for_a_body_in_view(scene: Any) -> None:
    for where, offered in (("behind", False), ("ahead", True)):
        answers = scene.Answers(planner={"module": "MOVE", "target": None, "reasoning": "x"})
        body = scene.behind(3) if where == "behind" else scene.ahead(3)
        scene.decide(scene.agent("red", answers, state="ego"), scene.obs(bodies={"blue": body}))
        assert ("REPORT" in modules_offered(answers)) is offered
    answers = scene.Answers(planner={"module": "MOVE", "target": None, "reasoning": "x"})
    obs = scene.obs(bodies={"blue": scene.behind(3)})
    scene.decide(scene.agent("red", answers, state="privileged"), obs)
    assert "REPORT" in modules_offered(answers)


def test_modules_receive_the_filtered_observation(scene: Any, monkeypatch: Any) -> None:
    """No module can reach around the filter: the toolkit holds only the filtered copy."""
    from harness_aria.modules.move import MoveModule

    seen: list[Any] = []

    async def spy(self: Any, tk: Any, choice: Any) -> Any:
        seen.append(tk.obs)
        from harness_aria.modules.base import ModuleResult

        return ModuleResult(actions=[Wait(ticks=1)])

    monkeypatch.setattr(MoveModule, "run", spy)
    answers = scene.Answers(planner={"module": "MOVE", "target": None, "reasoning": "x"})
    obs = scene.obs(
        players={"blue": scene.ahead(4), "green": scene.behind(4)},
        roster={"white": Sighting(step=5, tick=500, pos=scene.ahead(9), room="cafeteria")},
    )
    scene.decide(scene.agent("red", answers, state="ego"), obs)
    (known,) = seen
    assert set(known.visible_players) == {"blue"} and not known.nearby_players
    assert not known.roster and set(known.last_seen) == {"blue"}


def test_privileged_roster_shows_last_known_positions_and_never_seen(scene: Any) -> None:
    knowledge = Knowledge("privileged", scene.geometry)
    first = scene.obs(
        step=3,
        tick=300,
        roster={"blue": Sighting(step=3, tick=300, pos=scene.ahead(30), room="cafeteria")},
    )
    knowledge.update(first)
    later = scene.obs(step=6, tick=600)  # blue no longer reported (e.g. out of the radius)
    text = knowledge.view(knowledge.update(later)).to_text()
    assert "Players you have seen (roster: last-known position, step):" in text
    assert "Blue: cafeteria" in text and "step 3 (3 steps ago)" in text
    assert "Green: never seen" in text
    ego = Knowledge("ego", scene.geometry)
    ego_text = ego.view(ego.update(first)).to_text()
    assert "roster" not in ego_text and "never seen" not in ego_text and "Blue" not in ego_text


def test_free_roam_sightings_survive_the_meeting_teleport(scene: Any) -> None:
    admin = scene.geometry.room_center("admin")
    for mode in ("ego", "privileged"):
        knowledge = Knowledge(mode, scene.geometry)
        knowledge.update(
            scene.obs(step=4, tick=400, pos=admin, players={"blue": (admin[0], 65.0, admin[2] + 3)})
        )
        meeting = MeetingView(
            index=1,
            trigger="emergency",
            caller="green",
            victim=None,
            body_room=None,
            body_pos=None,
            order=scene.players,
            speaker="green",
            utterances_left=3,
            talk_ticks_left=100,
        )
        seated = scene.obs(
            step=5, tick=410, phase="meeting", meeting=meeting, players={"blue": scene.ahead(2)}
        )
        known = knowledge.update(seated)
        assert known.last_seen["blue"].room == "admin" and known.last_seen["blue"].step == 4
        text = knowledge.view(known).to_text()
        assert "Blue: admin" in text and "step 4" in text


def test_side_of_names_the_bearing(scene: Any) -> None:
    eye = scene.cafeteria
    assert side_of(eye, 0.0, scene.ahead(3)) == "ahead"
    assert side_of(eye, 0.0, scene.behind(3)) == "behind"
    # yaw 0 faces +z (south); west (-x) is on the right, east (+x) on the left
    assert side_of(eye, 0.0, (eye[0] + 3, eye[1], eye[2])) == "left"
    assert side_of(eye, 0.0, (eye[0] - 3, eye[1], eye[2])) == "right"


def test_decision_view_text_is_the_state_text_the_model_was_given(scene: Any) -> None:
    answers = scene.Answers(planner={"module": "MOVE", "target": None, "reasoning": "x"})
    decision = scene.decide(
        scene.agent("red", answers, state="ego"), scene.obs(players={"blue": scene.ahead(4)})
    )
    assert decision.view_text and decision.view_text.startswith("You are Red, a crewmate.")
    # The user text holds the whole view: its rarely changing head first, the rest of
    # the view last (between them memory, pending tasks and skills: Toolkit.context).
    head, _, rest = decision.view_text.partition("\nStep ")
    for u in answers.user("planner"):
        assert u.startswith(head) and ("Step " + rest) in u


def _fake_game(tmp: Path, state: str) -> list[tuple[int, str, str, str]]:
    config = resolve_config(
        "quick",
        overrides={
            "seed": 4,
            "frames": "off",
            "crew": {"backend": "fake", "spec": {"state": state}},
            "impostor": {"backend": "fake", "spec": {"state": state}},
        },
    )
    result = play_game(config, load_map(config.map), "fake", tmp / state)
    assert result.status == "ok"
    return _moves(tmp / state)


def _moves(run: Path) -> list[tuple[int, str, str, str]]:
    """Each decision of a game: its step, agent, module and program."""
    return [
        (ev.step, ev.agent, ev.module, json.dumps(ev.program))
        for ev in read_events(run / "events.jsonl")
        if isinstance(ev, Decision)
    ]


def test_fake_ego_and_privileged_games_no_longer_play_out_identically(
    tmp_path: Path, fake_games: GameStore
) -> None:
    ego = _fake_game(tmp_path, "ego")
    # privileged is the default state: the run's store holds that offline game
    assert AriaSpec().state == "privileged"
    privileged = _moves(fake_games.game(seed=4, **OFFLINE_ARIA))
    assert ego and privileged and ego != privileged


FOLLOW_BLUE = (
    "async function nav(bot) {\n"
    "  const t = bot.nearestEntity(e => e.type === 'player' && e.username === 'Blue');\n"
    "  if (t) { await bot.pathfinder.goto(new GoalNear(t.position.x, t.position.y, "
    "t.position.z, 3)); }\n}\nawait nav(bot);"
)
"""A model-written program (`action: codegen`) that follows blue."""


@pytest.mark.parametrize("action", ["primitives", "codegen"])
def test_ego_program_cannot_follow_a_player_out_of_view(scene: Any, action: str) -> None:
    """Following is guided by the server's positions: out of view it would lead an ego
    agent to a player it cannot see. A module's follow of such a player is invalid, not
    rewritten; a model-written one finds no such player (`nearestEntity` reads what the
    agent's view holds), so its program follows nobody."""
    for state, where, valid in (
        ("ego", "behind", False),
        ("ego", "ahead", True),
        ("privileged", "behind", True),
    ):
        answers = scene.Answers(
            planner={"module": "MOVE", "target": None, "reasoning": "x"},
            move={"room": None, "follow": "blue", "reasoning": "x"},
            codegen={"code": FOLLOW_BLUE},
        )
        blue = scene.behind(4) if where == "behind" else scene.ahead(4)
        decision = scene.decide(
            scene.agent("red", answers, state=state, action=action),
            scene.obs(players={"blue": blue}),
        )
        if action == "codegen" and not valid:
            assert not decision.invalid, decision.invalid
            assert decision.program and all(a["op"] != "follow" for a in decision.program)
            continue
        assert (not decision.invalid) is valid, (state, where, decision.invalid)
        if not valid:
            assert decision.program == [] and "blue, who is not in view" in decision.invalid
        else:
            assert decision.program[0] == {
                "op": "follow",
                "agent": "blue",
                "distance": decision.program[0]["distance"],
                "ticks": decision.program[0]["ticks"],
            }
