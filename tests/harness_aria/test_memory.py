"""What an ARIA agent remembers and is told: meeting context, own actions, tasks in
progress, skills, the planner's current choice, reflection (hand-built scenes)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.config import RulesConfig
from controller.engine import Engine
from controller.observation import ChatEntry, MeetingRecord, MeetingView, OwnAction, TaskProgress
from controller.perception import in_cone
from controller.programs import compile_program, parse_program
from controller.protocol import LookStep, TurnStep
from controller.views import Knowledge
from harness_aria.memory.base import grouped_by_step


def meeting_view(scene: Any, **kw: Any) -> MeetingView:
    base: dict[str, Any] = {
        "index": 2,
        "trigger": "report",
        "caller": "green",
        "victim": "pink",
        "body_room": "admin",
        "body_pos": scene.geometry.room_center("admin"),
        "order": [p for p in scene.players if p != "pink"],
        "speaker": "red",
        "utterances_left": 3,
        "talk_ticks_left": 200,
    }
    return MeetingView(**{**base, **kw})


def chat(n: int, start: int = 0) -> list[ChatEntry]:
    speakers = ["green", "blue", "yellow", "white"]
    return [
        ChatEntry(
            index=start + i,
            step=10,
            tick=1000 + i,
            kind="speech",
            speaker=speakers[i % 4],
            text=f"line {start + i}: I was in room {start + i}",
        )
        for i in range(n)
    ]


EARLIER = MeetingRecord(
    index=1,
    step=6,
    trigger="emergency",
    caller="blue",
    victim=None,
    body_room=None,
    ejected="orange",
    outcome="ejected",
    votes={"blue": "orange", "green": "orange", "red": "skip", "white": None},
)


@pytest.mark.parametrize("state", ["ego", "privileged"])
def test_vote_prompt_holds_whole_meeting_chat_past_meetings_dead_and_body_room(
    scene: Any, state: str
) -> None:
    answers = scene.Answers(vote={"vote_target": "skip", "reasoning": "unclear"})
    agent = scene.agent("red", answers, state=state)
    obs = scene.obs(
        step=11,
        phase="voting",
        meeting=meeting_view(scene, speaker=None),
        meeting_chat=chat(14),
        chat=chat(2, start=12),  # only the newest lines arrived since the last observation
        past_meetings=[EARLIER],
        known_dead=["orange", "pink"],
        scoreboard={"reported_body": "pink"},
    )
    scene.decide(agent, obs)
    (text,) = answers.user("vote")
    assert all(f"line {i}: I was in room {i}" in text for i in range(14))
    assert "This meeting's chat so far (all of it):" in text
    assert "Earlier meetings:" in text and "Orange was ejected" in text
    assert "Votes: Orange by Blue, Green; skip by Red; abstained: White." in text
    assert "Dead players: Orange, Pink (body in admin)." in text
    assert "called over Pink's body, found in admin" in text


def test_meeting_chat_is_gathered_when_the_observation_lacks_it(scene: Any) -> None:
    answers = scene.Answers(
        meeting={"response_text": "I was in admin.", "suspicion_cast_on": None},
        vote={"vote_target": "skip", "reasoning": "x"},
    )
    agent = scene.agent("red", answers)
    for i in range(3):
        obs = scene.obs(
            step=10 + i,
            tick=1000 + i,
            phase="meeting",
            meeting=meeting_view(scene),
            chat=chat(4, start=4 * i),
        )
        scene.decide(agent, obs)
    scene.decide(
        agent,
        scene.obs(step=13, tick=1010, phase="voting", meeting=meeting_view(scene, speaker=None)),
    )
    (text,) = answers.user("vote")
    assert all(f"line {i}:" in text for i in range(12))


@pytest.mark.parametrize("memory", ["window", "semantic"])
def test_both_memories_record_own_actions_and_an_impostor_is_told_it_killed(
    scene: Any, memory: str
) -> None:
    agent = scene.agent("red", scene.Answers(), memory=memory)
    actions = [
        OwnAction(step=4, tick=400, kind="moved", room="admin", detail="cafeteria, admin"),
        OwnAction(step=4, tick=450, kind="killed", room="admin", target="blue"),
        OwnAction(step=4, tick=460, kind="task_done", station=3, room="admin"),
    ]
    scene.decide(agent, scene.obs("red", "impostor", own_actions=actions, known_dead=["blue"]))
    text = agent.memory.text()
    assert "I killed blue in admin" in text
    assert "I walked in admin (cafeteria, admin)" in text
    assert "I finished the task at station 3 in admin" in text


def test_kill_is_remembered_and_becomes_a_skill_without_own_actions(scene: Any) -> None:
    """An observation without `own_actions`: the kill is inferred from the target newly
    dead and this agent's cooldown restarted (never from a death alone)."""
    answers = scene.Answers(
        planner={"module": "KILL", "target": "blue", "reasoning": "alone", "intent": "kill"},
        kill_scan={"players_seen": [], "witnesses_visible": False, "target_visible": True},
    )
    agent = scene.agent("red", answers, state="ego", memory="semantic", reflection="on")
    obs = scene.obs("red", "impostor", kill_ready=True, players={"blue": scene.ahead(2)})
    scene.decide(agent, obs)  # scan ahead, turn around
    second = scene.decide(agent, obs.model_copy(update={"step": 6, "tick": 600}))
    assert [(a["op"], a["target"]) for a in second.program] == [("kill", "blue")]
    after = scene.obs("red", "impostor", step=7, tick=700, kill_ready=False, known_dead=["blue"])
    scene.decide(agent, after)
    assert "I killed blue" in agent.memory.text()
    assert "killed blue" in agent.reflector.skills_text()
    # a teammate's kill (cooldown still ready) is not claimed
    other = scene.agent("red", scene.Answers(**answers.by_purpose), memory="window")
    scene.decide(other, obs)
    scene.decide(other, obs.model_copy(update={"step": 6, "tick": 600}))
    scene.decide(other, after.model_copy(update={"kill_ready": True}))
    assert "I killed" not in other.memory.text()


def test_window_memory_never_says_did_task_after_a_timeout_or_interruption(scene: Any) -> None:
    answers = scene.Answers(
        planner={"module": "MISSION", "target": None, "reasoning": "tasks"},
        mission={"station": 1, "objective": "do it"},
    )
    agent = scene.agent("red", answers, memory="window")
    scene.decide(agent, scene.obs(step=5))
    timed_out = scene.obs(
        step=6,
        tick=600,
        task_progress=TaskProgress(station=1, room="cafeteria", ticks_done=120, ticks_needed=400),
        scoreboard={"task_in_progress": 1},
    )
    scene.decide(agent, timed_out)
    interrupted = scene.obs(
        step=7,
        tick=700,
        own_actions=[
            OwnAction(
                step=7, tick=690, kind="task_interrupted", station=1, detail="meeting, 200 ticks"
            )
        ],
    )
    scene.decide(agent, interrupted)
    text = agent.memory.text()
    assert "did task" not in text and "I finished" not in text
    assert "set off to station 1 to do my task" in text
    assert "my task at station 1 was interrupted, not finished (meeting, 200 ticks)" in text
    scene.decide(agent, scene.obs(step=8, tick=800, tasks_done=[1]))
    assert "I finished the task at station 1" in agent.memory.text()


@pytest.mark.parametrize("state", ["ego", "privileged"])
def test_task_in_progress_is_shown_in_every_view(scene: Any, state: str) -> None:
    obs = scene.obs(
        task_progress=TaskProgress(station=3, room="admin", ticks_done=120, ticks_needed=400),
        scoreboard={"task_in_progress": 3},
    )
    knowledge = Knowledge(state, scene.geometry)  # type: ignore[arg-type]
    text = knowledge.view(knowledge.update(obs)).to_text()
    assert "Task in progress: station 3 in admin, 120 of 400 ticks done" in text
    only_board = scene.obs(scoreboard={"task_in_progress": 3})
    text = knowledge.view(knowledge.update(only_board)).to_text()
    assert "Task in progress: station 3, not finished" in text
    assert "No task in progress." in knowledge.view(knowledge.update(scene.obs())).to_text()


def test_the_look_after_a_task_faces_into_the_room_not_the_wall(scene: Any) -> None:
    geometry = scene.geometry
    engine = Engine(
        RulesConfig(),
        scene.players,
        seed=1,
        stations={s: geometry.station_pos(s) for s in geometry.station_ids()},
        button=geometry.button_pos(),
        room_at=geometry.room_at,
    )
    for station in geometry.station_ids()[:6]:
        program = parse_program(
            [{"op": "use_station", "station": station}, {"op": "look", "behind": True}]
        )
        steps = compile_program(program, engine, geometry).steps
        assert not any(isinstance(s, TurnStep) for s in steps)
        last = steps[-1]
        assert isinstance(last, LookStep)
        centre = geometry.room_center(geometry.station_room(station))
        assert in_cone(geometry.station_pos(station), last.yaw, centre)
    walk = parse_program([{"op": "go_to", "room": "admin"}, {"op": "look", "behind": True}])
    assert isinstance(compile_program(walk, engine, geometry).steps[-1], TurnStep)


def test_impostor_programs_that_achieved_their_aim_become_skills(scene: Any) -> None:
    answers = scene.Answers(
        planner={"module": "MOVE", "target": None, "reasoning": "go", "intent": "hunt"},
        move={"room": "admin", "follow": None, "reasoning": "x", "intent": "hunt"},
    )
    agent = scene.agent("red", answers, reflection="on")
    scene.decide(agent, scene.obs("red", "impostor"))
    admin = scene.geometry.room_center("admin")
    scene.decide(agent, scene.obs("red", "impostor", step=6, tick=600, pos=admin))
    assert "reached admin" in agent.reflector.skills_text()
    crew = scene.agent("red", scene.Answers(**answers.by_purpose), reflection="on")
    scene.decide(crew, scene.obs())
    scene.decide(crew, scene.obs(step=6, tick=600, pos=admin))
    assert crew.reflector.skills_text() == ""  # a crewmate's walk is no skill


def test_modules_see_this_steps_choice_not_the_previous_plan(scene: Any) -> None:
    plans = iter(["old plan: do tasks", "new plan: strike blue now"])
    answers = scene.Answers(
        planner=lambda r: {
            "module": "MOVE" if "old" in (p := next(plans)) else "KILL",
            "target": None if "old" in p else "blue",
            "reasoning": p,
            "intent": "x",
        },
        move={"room": "admin", "follow": None, "reasoning": "x", "intent": "x"},
        kill_scan={"players_seen": [], "witnesses_visible": True, "target_visible": True},
    )
    agent = scene.agent("red", answers)
    scene.decide(
        agent, scene.obs("red", "impostor", kill_ready=True, players={"blue": scene.ahead(3)})
    )
    scene.decide(
        agent,
        scene.obs(
            "red", "impostor", step=6, tick=600, kill_ready=True, players={"blue": scene.ahead(3)}
        ),
    )
    (scan,) = answers.user("kill_scan")
    assert "This step you chose KILL with target blue." in scan
    assert "Current plan: new plan: strike blue now" in scan and "old plan" not in scan
    (move,) = answers.user("move")
    assert "This step you chose MOVE." in move and "old plan" in move


def test_hierarchical_modules_see_the_current_short_term_plan(scene: Any) -> None:
    answers = scene.Answers(
        planner={"module": "MOVE", "target": None, "reasoning": "r", "plan": "walk to admin"},
        planner_long={"strategy": "stay with others", "priority_target": None},
        move={"room": "admin", "follow": None, "reasoning": "x"},
    )
    scene.decide(scene.agent("red", answers, planning="hierarchical"), scene.obs())
    (move,) = answers.user("move")
    assert "Strategy: stay with others" in move and "Plan: walk to admin" in move


def test_reflection_sees_the_whole_meeting_it_reflects_on(scene: Any) -> None:
    answers = scene.Answers(
        meeting={"response_text": "I was in admin.", "suspicion_cast_on": None},
        vote={"vote_target": "skip", "reasoning": "x"},
    )
    agent = scene.agent("red", answers, reflection="on")
    scene.decide(
        agent,
        scene.obs(
            step=10, tick=1000, phase="meeting", meeting=meeting_view(scene), meeting_chat=chat(9)
        ),
    )
    scene.decide(
        agent,
        scene.obs(
            step=11,
            tick=1010,
            phase="voting",
            meeting=meeting_view(scene, speaker=None),
            meeting_chat=chat(11),
        ),
    )
    ended = MeetingRecord(
        index=2,
        step=11,
        trigger="report",
        caller="green",
        victim="pink",
        body_room="admin",
        ejected="white",
        outcome="ejected",
        votes={"green": "white", "blue": "white", "red": "skip"},
    )
    scene.decide(agent, scene.obs(step=12, tick=1020, past_meetings=[EARLIER, ended]))
    (text,) = answers.user("reflection")
    assert "The meeting you are reflecting on:" in text
    assert all(f"line {i}:" in text for i in range(11))
    assert "White was ejected" in text and "White by Blue, Green; skip by Red" in text
    # The ended meeting's line is in the view once; the recap names it by number.
    assert text.count("White was ejected") == 1 and "reflecting on: #2" in text


def test_window_memory_keeps_free_roam_sightings_not_meeting_seats(scene: Any) -> None:
    answers = scene.Answers(
        planner={"module": "MOVE", "target": None, "reasoning": "x"},
        meeting={"response_text": "Blue was in admin.", "suspicion_cast_on": None},
    )
    agent = scene.agent("red", answers, memory="window", state="ego")
    admin = scene.geometry.room_center("admin")
    scene.decide(
        agent,
        scene.obs(step=4, tick=400, pos=admin, players={"blue": (admin[0], 65.0, admin[2] + 3)}),
    )
    for i in range(2):
        scene.decide(
            agent,
            scene.obs(
                step=5 + i,
                tick=410 + i,
                phase="meeting",
                meeting=meeting_view(scene),
                players={"blue": scene.ahead(2)},
            ),
        )
    text = agent.memory.text()
    assert "step 4: saw blue in admin" in text
    assert "step 5: saw" not in text and "step 6: saw" not in text, text


def test_memory_lines_write_each_step_once_and_keep_every_entry_in_order() -> None:
    entries = [(35, "a"), (35, "b"), (36, "c"), (35, "d")]
    assert grouped_by_step(entries) == ["  step 35: a; b", "  step 36: c", "  step 35: d"]
    assert grouped_by_step([]) == []


def test_window_memory_leaves_its_own_meeting_lines_to_the_chat(scene: Any) -> None:
    """During a meeting the view's chat holds every line of it, the agent's own too, so
    window memory shows neither its `I said` action nor the decision that said it
    (`mode=MEETING: said: "..."`); once the meeting is over both are remembered."""
    line = "Blue was in admin."
    answers = scene.Answers(
        planner={"module": "MOVE", "target": None, "reasoning": "x"},
        meeting={"response_text": line, "suspicion_cast_on": None},
    )
    agent = scene.agent("red", answers, memory="window", state="privileged")
    for i in range(2):
        scene.decide(
            agent,
            scene.obs(step=5 + i, tick=410 + i, phase="meeting", meeting=meeting_view(scene)),
        )
    assert any(line in t for _, t in agent.memory.entries)  # kept...
    assert line not in agent.memory.text()  # ...but not shown beside the chat
    scene.decide(agent, scene.obs(step=8, tick=900))
    assert f'mode=MEETING: said: "{line}"' in agent.memory.text()
