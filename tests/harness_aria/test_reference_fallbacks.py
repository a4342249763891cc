"""Where the harness, not the model, picks, it follows the reference and says so.

* VOTE under `rules.impostors_may_skip: false`: an impostor's skip, abstention or
  unusable answer becomes the reference's fallback ballot (the most suspected player
  with suspicion above 0, never itself or its teammate; else the first other player in
  roster order), logged as `fallback: ...`; crewmates still skip; the prompts say so.
* Ghosts (`rules.ghost_tasks`): a ghost's planner is offered MISSION and MOVE only.
* KILL with no target named: the nearest living crewmate the agent knows of, never the
  crewmate it has just killed (the public dead list names it only at a meeting).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import pytest

from controller.actions import dump_actions
from controller.config import RulesConfig
from controller.observation import MeetingView, Observation, OwnAction, Scoreboard, Sighting
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import ModelRequest
from harness_aria.backends.fake import FakeBackend
from harness_aria.fake_answers import answer
from harness_aria.memory import MEMORIES
from harness_aria.modules.base import ModuleResult
from harness_aria.modules.kill import KillModule
from harness_aria.modules.registry import GHOST_MODULES
from harness_aria.modules.vote import VoteModule
from harness_aria.prompts import shared_prefix
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit
from world.geometry import ShipGeometry
from world.spec import load_map

G = ShipGeometry(load_map("skeld"))
PLAYERS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
CAFE = G.room_center("cafeteria")
ORDER = ["yellow", "red", "blue", "green", "pink", "black"]
"""The meeting's speaking order (not the roster's): the fallback uses the roster's."""


def at(dz: float, dx: float = 0.0) -> tuple[float, float, float]:
    return (CAFE[0] + dx, CAFE[1], CAFE[2] + dz)


def board(phase: str, *, dead: bool = False, kill_ready: bool = False) -> Scoreboard:
    return Scoreboard(
        phase=phase,
        kill_ready=kill_ready,
        task_bits=[],
        dead=dead,
        meeting_countdown=None,
        speaker=None,
        game_over=False,
        area="cafeteria",
        task_in_progress=None,
        reported_body=None,
        emergency_ready=True,
    )


def observation(role: str = "impostor", phase: str = "free_roam", **over: Any) -> Observation:
    base: dict[str, Any] = {
        "agent": "red",
        "role": role,
        "step": 5,
        "tick": 500,
        "phase": phase,
        "pos": CAFE,
        "yaw": 0.0,
        "room": "cafeteria",
        "tasks": [] if role == "impostor" else [1, 2],
        "tasks_done": [],
        "teammates": ["black"] if role == "impostor" else [],
        "kill_ready": role == "impostor",
        "emergency_ready": True,
        "known_dead": ["white", "orange"],
        "players": PLAYERS,
        "visible_players": {},
        "visible_bodies": {},
        "scoreboard": board(phase, kill_ready=role == "impostor"),
    }
    if phase == "voting":
        base["meeting"] = MeetingView(
            index=0,
            trigger="report",
            caller="yellow",
            victim="white",
            body_room="electrical",
            body_pos=(-16.0, 65.0, 16.0),
            order=ORDER,
            speaker=None,
            utterances_left=0,
            talk_ticks_left=0,
        )
    base.update(over)
    return Observation(**base)


def vote(
    said: str,
    *,
    role: str = "impostor",
    may_skip: bool = False,
    suspicion: dict[str, float] | None = None,
    memory: str = "semantic",
    sent: list[str] | None = None,
    style: str = "minimal",
) -> tuple[Any, Toolkit]:
    def reply(request: ModelRequest) -> str:
        if sent is not None:
            sent.append("\n".join(m.text for m in request.messages))
        return said

    tk = Toolkit(
        spec=AriaSpec(memory=memory, prompt=style),
        backend=FakeBackend("t", script=reply),
        geometry=G,
        persona="",
        obs=observation(role, "voting"),
        view_text="view",
        memory=MEMORIES[memory](10),
        impostors_may_skip=may_skip,
    )
    tk.memory.observe(tk.obs)
    for player, score in (suspicion or {}).items():
        tk.memory.adjust(player, score, "test")
    result = logged(asyncio.run(VoteModule().run(tk, Choice(module="VOTE"))))
    return result, tk


def ballot(value: Any) -> str:
    return json.dumps({"vote_target": value, "reasoning": "r", "intent": "i"})


# ------------------------------------------------------------------------------ VOTE
def test_an_impostor_that_may_not_skip_votes_its_most_suspected_instead() -> None:
    result, _ = vote(ballot("skip"), suspicion={"green": 0.2, "blue": 0.35, "black": 0.9})
    assert result.vote == "blue" and not result.invalid and not result.abstain
    assert result.reasoning.startswith("fallback: answered skip")
    assert "blue" in result.memo and "fallback" in result.memo


@pytest.mark.parametrize(
    "said",
    [ballot("skip"), ballot(None), ballot("abstain"), ballot("white"), '{"vote": "blue"}', "?!"],
)
def test_with_no_suspicion_the_first_other_player_in_roster_order(said: str) -> None:
    # Roster order: red (itself), blue; the speaking order would give yellow.
    result, _ = vote(said, suspicion={"black": 0.5})
    assert result.vote == "blue" and not result.invalid
    assert "fallback" in result.reasoning and "roster order" in result.reasoning


def test_window_memory_falls_back_the_same_way() -> None:
    result, _ = vote(ballot("skip"), memory="window", suspicion={"pink": 0.1})
    assert result.vote == "pink"


def test_a_named_player_is_the_ballot_even_a_teammate() -> None:
    result, _ = vote(ballot("Black"))
    assert result.vote == "black" and "fallback" not in result.reasoning


def test_impostors_may_skip_by_default_and_crewmates_always() -> None:
    assert vote(ballot("skip"), may_skip=True)[0].vote == "skip"
    assert vote(ballot("skip"), role="crewmate")[0].vote == "skip"
    crew_failed, _ = vote('{"vote": "blue"}', role="crewmate")
    assert crew_failed.invalid and crew_failed.vote is None


def test_the_vote_question_and_the_impostors_prefix_state_the_rule() -> None:
    for style in ("minimal", "deterministic"):
        sent: list[str] = []
        vote(ballot("blue"), sent=sent, style=style)
        assert "(you may not skip)" in sent[0] and '"vote_target": "name"' in sent[0]
        vote(ballot("blue"), may_skip=True, sent=sent, style=style)
        assert 'a player\'s name or "skip"' in sent[1]
        assert '"vote_target": "name or skip"' in sent[1]
    rules = RulesConfig().model_copy(update={"impostors_may_skip": False})
    impostors = shared_prefix(G, rules, "impostor", group="talk")
    crew = shared_prefix(G, rules, "crewmate", group="talk")
    assert "Impostors may not skip" in impostors and "Impostors may not skip" not in crew
    assert "Impostors may not skip" not in shared_prefix(G, RulesConfig(), "impostor", group="talk")


# ------------------------------------------------------------------------------ ghosts
class Recorder:
    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> str:
        self.requests.append(request)
        return answer(request)

    def offered(self) -> list[str]:
        planner = [r for r in self.requests if r.purpose == "planner"][-1]
        text = "\n".join(m.text for m in planner.messages)
        return [
            m.strip() for m in text.split("Modules you may choose: ")[1].split(".")[0].split(",")
        ]


def ghost_obs(role: str, ghost: bool) -> Observation:
    """A crewmate (or impostor) with a body in view, the button ready, a player near."""
    obs = observation(
        role,
        visible_players={"blue": at(3)},
        nearby_players={"blue": at(3)},
        visible_bodies={"pink": at(2, 1)},
        nearby_bodies={"pink": at(2, 1)},
        scoreboard=board("free_roam", dead=ghost, kill_ready=role == "impostor"),
    )
    if ghost and "ghost" in Observation.model_fields:
        obs = obs.model_copy(update={"ghost": True})
    return obs


@pytest.mark.parametrize("profile", ["reference", "lean"])
@pytest.mark.parametrize("role", ["crewmate", "impostor"])
def test_a_ghost_is_offered_mission_and_move_only(role: str, profile: str) -> None:
    spec = AriaSpec(profile=profile)
    living = Recorder()
    agent = AriaAgent("red", spec, FakeBackend("t", script=living), G)
    asyncio.run(agent.decide(ghost_obs(role, ghost=False)))
    assert set(living.offered()) - GHOST_MODULES  # alive: more is offered (REPORT, ...)
    ghost = Recorder()
    agent = AriaAgent("red", spec, FakeBackend("t", script=ghost), G)
    decision = asyncio.run(agent.decide(ghost_obs(role, ghost=True)))
    assert set(ghost.offered()) == GHOST_MODULES
    assert decision.module in GHOST_MODULES
    purposes = [r.purpose for r in ghost.requests]
    if profile == "lean":  # the planner's target is carried out without a second call
        assert purposes == ["planner"]  # no surveillance, no scan
    else:  # every module asks its own question (and may have its program written)
        assert purposes[:2] == ["planner", decision.module.lower()]
        assert set(purposes[2:]) <= {"codegen"}  # no surveillance, no scan


def test_a_ghost_takes_no_meeting_turn_and_no_ballot() -> None:
    recorder = Recorder()
    agent = AriaAgent("red", AriaSpec(), FakeBackend("t", script=recorder), G)
    obs = observation("crewmate", "voting", scoreboard=board("voting", dead=True))
    decision = asyncio.run(agent.decide(obs))
    assert decision.program == [] and decision.vote is None and not recorder.requests


# ------------------------------------------------------------------------------ KILL target
def test_no_target_named_after_its_own_kill_is_a_living_crewmate_never_the_victim() -> None:
    """Red killed blue last step, two blocks ahead; blue is not on the public dead list
    yet (that waits for a meeting), and the server's roster still lists it there. The
    harness's pick is the nearest crewmate red may know of that is alive: green, never
    blue, never its teammate black (nearer still). (The pick of the code before: blue.)"""
    roster = {
        "blue": Sighting(step=5, tick=500, pos=at(2), room="cafeteria"),
        "black": Sighting(step=5, tick=500, pos=at(-1), room="cafeteria"),
        "green": Sighting(step=5, tick=500, pos=at(-9), room="cafeteria"),
    }
    killed = OwnAction(step=4, tick=450, kind="killed", target="blue", room="cafeteria")
    obs = observation(
        known_dead=[],
        roster=roster,
        own_actions=[killed],
        kill_ready=True,
        visible_players={"black": at(-1), "green": at(-9)},
    )
    for state in ("privileged", "ego"):
        tk = Toolkit(
            spec=AriaSpec(state=state),
            backend=FakeBackend("t", script=lambda r: "{}"),
            geometry=G,
            persona="",
            obs=obs,
            view_text="view",
            memory=MEMORIES["semantic"](10),
        )
        result = logged(asyncio.run(KillModule().run(tk, Choice(module="KILL", target=None))))
        named = {a.get("target") or a.get("agent") for a in result.actions}
        assert named == {"green"}, (state, result)
        # the harness chose green: a program of it the rules refuse is the harness's error
        assert result.harness_built, state
        named_by_model = logged(
            asyncio.run(KillModule().run(tk, Choice(module="KILL", target="green")))
        )
        assert not named_by_model.harness_built


def logged(result: ModuleResult) -> ModuleResult:
    """A module's result, its actions as the log writes them (`dump_actions`)."""
    return dataclasses.replace(result, actions=dump_actions(result.actions))  # type: ignore[arg-type]
