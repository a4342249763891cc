"""KILL on constructed scenes, on both state views, and in whole offline games.

Each scene places an impostor (red, fellow impostor black far away), a target (blue)
and perhaps a witness (green) on the ship, builds the observation the way the game does
(field of view and 360-degree sets from `controller.perception`, the server's roster),
and lets the ARIA agent decide through its state filter. The kill scan is answered by
the offline responder (`harness_aria.fake_answers`), which judges from the state it is
told; scripted answers test the rest. The outcomes are the protocol documented in
`harness_aria/modules/kill.py`:

* target 3 blocks ahead, alone: privileged strikes at once; ego `scan` (follows, looks
  behind), then turns back and strikes; every strike carries `guard: none` (the model's
  judgement stands), or with the assist `strike_guard` `around` (privileged) / `sight`
  (ego);
* target 8 blocks ahead, alone: `too_far` (follow; ego also looks behind), then strike;
* target 20 blocks away: privileged `hunting` (follows by the roster); ego with the
  camera's view is not offered KILL, and a KILL naming it walks to where it was last
  seen (`hunting`);
* witness in view: `witness` (ego at the ahead scan);
* witness behind: privileged `witness` (in sight all around); ego `scan`, then `witness`
  at the behind scan;
* witness behind a wall: strike (ego after the behind scan);
* cooldown running: KILL is not offered; the module, if run, shadows (`cooldown`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controller.actions import dump_actions
from controller.agents.base import AgentDecision
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import DEFERRALS, Vec3
from controller.observation import Observation, Scoreboard, Sighting
from controller.perception import Perception
from controller.views import Knowledge
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import ModelRequest
from harness_aria.backends.fake import FakeBackend
from harness_aria.fake_answers import answer
from harness_aria.memory import MEMORIES
from harness_aria.modules.base import ModuleResult
from harness_aria.modules.kill import CLOSE_IN, LEASH, SHADOW, KillModule
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit
from testkit.games import OFFLINE_ARIA, GameStore
from world.geometry import ShipGeometry
from world.spec import load_map

G = ShipGeometry(load_map("skeld"))
CAFE = G.room_center("cafeteria")
ADMIN = G.room_center("admin")
FAR = G.room_center("medbay")
"""Where the fellow impostor stands, out of everyone's sight."""
STATES = ("privileged", "ego")
GUARD = {"privileged": "around", "ego": "sight"}
"""The guard each state's strikes carry with the assist `AriaSpec.strike_guard` on."""
KILL_PLAN = {"module": "KILL", "target": None, "reasoning": "alone", "intent": "kill"}


def at(base: Vec3, dz: float = 0.0, dx: float = 0.0) -> Vec3:
    return (base[0] + dx, base[1], base[2] + dz)


def scene_obs(
    pos: Vec3,
    yaw: float,
    others: dict[str, Vec3],
    *,
    step: int = 5,
    kill_ready: bool = True,
) -> Observation:
    """Red's observation as the game builds it: what its camera sees, what is in sight all
    around, and the server's roster of everyone else (the state filter keeps what the
    state view allows)."""
    everyone = {"black": FAR, **others}
    sight = Perception(G, 12.0)
    room = G.room_at(pos)
    board = Scoreboard(
        phase="free_roam",
        kill_ready=kill_ready,
        task_bits=[],
        dead=False,
        meeting_countdown=None,
        speaker=None,
        game_over=False,
        area=room,
        task_in_progress=None,
        reported_body=None,
        emergency_ready=False,
    )
    return Observation(
        agent="red",
        role="impostor",
        step=step,
        tick=step * 100,
        phase="free_roam",
        pos=pos,
        yaw=yaw,
        room=room,
        tasks=[],
        tasks_done=[],
        teammates=["black"],
        kill_ready=kill_ready,
        emergency_ready=False,
        known_dead=[],
        players=["red", "blue", "green", "pink", "orange", "yellow", "black", "white"],
        visible_players={a: p for a, p in everyone.items() if sight.sees(pos, yaw, p)},
        visible_bodies={},
        nearby_players={a: p for a, p in everyone.items() if sight.near(pos, p)},
        roster={
            a: Sighting(step=step, tick=step * 100, pos=p, room=G.room_at(p))
            for a, p in everyone.items()
        },
        scoreboard=board,
    )


class Answers:
    """A fake-backend script: a fixed answer per purpose, else the offline responder
    (which judges a kill scan from the state it is told); keeps every request."""

    def __init__(self, **by_purpose: Any) -> None:
        self.by_purpose = by_purpose
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> str:
        self.requests.append(request)
        value = self.by_purpose.get(request.purpose)
        if isinstance(value, str):
            return value
        return json.dumps(value) if value is not None else answer(request)

    def prompt(self, purpose: str) -> list[str]:
        """The whole prompt of each request of a purpose (its messages' texts joined)."""
        return [
            "\n\n".join(m.text for m in r.messages) for r in self.requests if r.purpose == purpose
        ]

    def purposes(self) -> list[str]:
        return [r.purpose for r in self.requests]


def agent(
    state: str,
    answers: Answers | None = None,
    *,
    strike_guard: bool = False,
    ego_view: str = "reference",
) -> tuple[AriaAgent, Answers]:
    answers = answers or Answers(planner=KILL_PLAN)
    spec = AriaSpec(state=state, strike_guard=strike_guard, ego_view=ego_view)
    aria = AriaAgent("red", spec, FakeBackend("t", script=answers), G)
    return aria, answers


def decide(aria: AriaAgent, obs: Observation) -> AgentDecision:
    d = asyncio.run(aria.decide(obs))
    return dataclasses.replace(d, program=dump_actions(d.program))


def offered(answers: Answers) -> str:
    return answers.prompt("planner")[-1].split("Modules you may choose: ")[1].split(".")[0]


def strike(decision: AgentDecision) -> dict[str, Any] | None:
    return next((a for a in decision.program if a["op"] == "kill"), None)


def assert_strike(
    decision: AgentDecision, state: str, target: str = "blue", *, guarded: bool = False
) -> None:
    kill = strike(decision)
    guard = GUARD[state] if guarded else "none"
    assert kill == {"op": "kill", "target": target, "max_distance": LEASH, "guard": guard}
    assert decision.deferral == "" and not decision.invalid


def assert_deferred(decision: AgentDecision, why: str) -> None:
    assert strike(decision) is None, decision.program
    assert decision.deferral == why, (decision.deferral, decision.reasoning)
    assert why in DEFERRALS
    assert decision.program, "a deferral moves the bot (it never just stands)"
    assert not any(a["op"] == "wait" for a in decision.program)


def after_follow(state: str, target_dz: float, **others: Vec3) -> Observation:
    """The next step of an ego impostor that followed blue (now `target_dz` blocks
    along +z, next to it) and turned to look behind (yaw 180, facing -z)."""
    return scene_obs(CAFE, 180.0, {"blue": at(CAFE, target_dz), **others}, step=6)


# ------------------------------------------------------------------------------ lone target
@pytest.mark.parametrize("state", STATES)
def test_lone_target_at_3_blocks_is_struck(state: str) -> None:
    aria, answers = agent(state)
    first = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3)}))
    if state == "privileged":
        assert_strike(first, state)
        assert answers.purposes().count("kill_scan") == 1
        return
    assert_deferred(first, "scan")
    assert first.program == [
        {"op": "follow", "agent": "blue", "distance": CLOSE_IN, "ticks": first.program[0]["ticks"]},
        {"op": "look", "behind": True},
    ]
    second = decide(aria, after_follow(state, 1.0))
    assert second.module == "KILL" and second.program[0] == {"op": "look", "behind": True}
    assert_strike(second, state)
    scans = answers.prompt("kill_scan")
    assert "view ahead of you" in scans[0] and "view behind you" in scans[1]


@pytest.mark.parametrize("state", STATES)
def test_lone_target_at_8_blocks_is_closed_in_on_then_struck(state: str) -> None:
    aria, answers = agent(state)
    first = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 8)}))
    assert_deferred(first, "too_far")
    assert first.program[0]["op"] == "follow" and first.program[0]["distance"] == CLOSE_IN
    if state == "privileged":
        assert "kill_scan" not in answers.purposes()  # nothing to judge until it is close
        second = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 1.0)}, step=6))
    else:
        assert first.program[-1] == {"op": "look", "behind": True}
        second = decide(aria, after_follow(state, 1.0))
    assert_strike(second, state)


def test_lone_target_at_20_blocks_is_hunted_by_the_roster_when_privileged() -> None:
    aria, answers = agent("privileged")
    decision = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 20)}))
    assert "KILL" in offered(answers)
    assert_deferred(decision, "hunting")
    assert decision.program == [
        {
            "op": "follow",
            "agent": "blue",
            "distance": CLOSE_IN,
            "ticks": decision.program[0]["ticks"],
        }
    ]
    assert "kill_scan" not in answers.purposes()


def test_lone_target_at_20_blocks_is_not_offered_to_ego_and_hunted_from_memory() -> None:
    # Out of the camera's reach (the camera's ego view: 12 blocks, sightings kept; the
    # reference's view reaches 36 blocks and keeps nothing, tests/harness_aria/
    # test_profiles.py): an ego impostor is not offered KILL at all.
    aria, answers = agent("ego", ego_view="camera")
    decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 20)}))
    assert "KILL" not in offered(answers)
    # Seen at step 4 ten blocks ahead; at step 5 blue is 20 off and pink is in view: a
    # KILL naming blue walks to where blue was last seen (never follows it by the server).
    aria, answers = agent(
        "ego", Answers(planner={**KILL_PLAN, "target": "blue"}), ego_view="camera"
    )
    aria.knowledge.update(scene_obs(CAFE, 0.0, {"blue": at(CAFE, 10)}, step=4))
    decision = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 20), "pink": at(CAFE, 9, 2)}))
    assert_deferred(decision, "hunting")
    assert decision.program == [{"op": "go_to", "pos": list(at(CAFE, 10))}]


def test_nobody_known_walks_off_to_search() -> None:
    obs = scene_obs(CAFE, 0.0, {})
    for state in STATES:
        tk = toolkit(state, obs.model_copy(update={"roster": {}}))
        result = logged(asyncio.run(KillModule().run(tk, Choice(module="KILL"))))
        assert result.deferral == "no_target" and result.actions[0]["op"] == "go_to"


# ------------------------------------------------------------------------------ witnesses
@pytest.mark.parametrize("state", STATES)
def test_witness_in_view_defers(state: str) -> None:
    aria, answers = agent(state)
    decision = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3), "green": at(CAFE, 6, 1)}))
    assert_deferred(decision, "witness")
    assert decision.program == [
        {"op": "follow", "agent": "blue", "distance": SHADOW, "ticks": decision.program[0]["ticks"]}
    ]
    assert aria.modules["KILL"].scanning(6) is None  # type: ignore[attr-defined]
    assert "Green" in decision.view_text  # the witness is in what the agent is told
    assert answers.purposes().count("kill_scan") == 1


@pytest.mark.parametrize("state", STATES)
def test_witness_behind_defers(state: str) -> None:
    aria, _ = agent(state)
    first = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3), "green": at(CAFE, -4)}))
    if state == "privileged":
        assert_deferred(first, "witness")  # green is in sight all around
        return
    assert_deferred(first, "scan")  # the camera does not see green yet
    # Turned round: green is in view now.
    second = decide(aria, after_follow(state, 1.0, green=at(CAFE, -4)))
    assert_deferred(second, "witness")
    assert second.program == [{"op": "look", "behind": True}]


@pytest.mark.parametrize("state", STATES)
def test_witness_behind_a_wall_does_not_defer(state: str) -> None:
    # In admin facing west (yaw 90): green stands 9 blocks ahead, inside the camera's
    # cone, but in the cafeteria behind the wall.
    others = {"blue": at(ADMIN, dx=-3), "green": at(ADMIN, dx=-9)}
    aria, _ = agent(state)
    first = decide(aria, scene_obs(ADMIN, 90.0, others))
    if state == "privileged":
        assert_strike(first, state)
        return
    assert_deferred(first, "scan")
    second = decide(aria, scene_obs(ADMIN, 270.0, {**others, "blue": at(ADMIN, dx=-1)}, step=6))
    assert_strike(second, state)


@pytest.mark.parametrize("guarded", [False, True])
@pytest.mark.parametrize("state", STATES)
def test_a_model_that_misses_the_witness_strikes(state: str, guarded: bool) -> None:
    """The model's judgement decides: the strike goes out unguarded, or, with the assist
    `strike_guard`, carrying the guard the rules re-check at the strike's tick."""
    blind = {"players_seen": ["blue"], "witnesses_visible": False, "target_visible": True}
    aria, _ = agent(state, Answers(planner=KILL_PLAN, kill_scan=blind), strike_guard=guarded)
    others = {"blue": at(CAFE, 3), "green": at(CAFE, 6, 1)}
    decision = decide(aria, scene_obs(CAFE, 0.0, others))
    if state == "ego":
        decision = decide(aria, after_follow(state, 1.0, green=at(CAFE, 6, 1)))
    assert_strike(decision, state, guarded=guarded)


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("value", ['"maybe"', "null", '"unsure"'])
def test_an_unclear_witness_answer_never_strikes(state: str, value: str) -> None:
    unclear = {"players_seen": [], "witnesses_visible": json.loads(value), "target_visible": True}
    aria, _ = agent(state, Answers(planner=KILL_PLAN, kill_scan=unclear))
    decision = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3)}))
    assert_deferred(decision, "unclear")


def test_an_unreadable_scan_is_invalid_and_never_strikes() -> None:
    aria, _ = agent("privileged", Answers(planner=KILL_PLAN, kill_scan="no idea"))
    decision = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3)}))
    assert decision.invalid and decision.program == [] and decision.deferral == "unclear"


# ------------------------------------------------------------------------------ the target moves
def test_ego_target_that_walked_off_is_followed_and_rescanned() -> None:
    aria, _ = agent("ego")
    decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3)}))
    # At the behind scan blue has walked round into view, 9 blocks away.
    decision = decide(aria, scene_obs(CAFE, 180.0, {"blue": at(CAFE, -9)}, step=6))
    assert_deferred(decision, "target_lost")
    assert decision.program[0]["op"] == "follow" and decision.program[-1]["op"] == "look"
    assert aria.modules["KILL"].scanning(7) == "blue"  # type: ignore[attr-defined]


def test_ego_target_dead_by_the_behind_scan_is_lost() -> None:
    aria, _ = agent("ego")
    decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3)}))
    obs = after_follow("ego", 1.0).model_copy(update={"known_dead": ["blue"]})
    assert_deferred(decide(aria, obs), "target_lost")


def test_named_non_crewmate_is_an_invalid_target() -> None:
    aria, _ = agent("privileged", Answers(planner={**KILL_PLAN, "target": "black"}))
    decision = decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3)}))
    assert decision.invalid and decision.deferral == "invalid_target"


def test_no_target_named_takes_the_nearest_crewmate_never_the_teammate() -> None:
    """As the reference's nearest-alive helper: the nearest living crewmate, whoever is
    near it (no isolation preference, no split with the fellow impostor)."""
    others = {
        "blue": at(CAFE, 3),
        "pink": at(CAFE, 2.5, 1),
        "black": at(CAFE, 1),
        "green": at(CAFE, 5),
    }
    tk = toolkit("privileged", scene_obs(CAFE, 0.0, others))
    result = logged(asyncio.run(KillModule().run(tk, Choice(module="KILL"))))
    first = result.actions[0]
    assert (first.get("target") or first.get("agent")) == "pink"


def test_a_named_target_never_seen_is_searched_for_never_swapped() -> None:
    """The reference defers a never-seen target; the module never hunts someone else."""
    obs = scene_obs(CAFE, 0.0, {"pink": at(CAFE, 3)})  # pink in view, blue nowhere
    tk = toolkit("privileged", obs.model_copy(update={"roster": {}}))
    result = logged(asyncio.run(KillModule().run(tk, Choice(module="KILL", target="blue"))))
    assert result.deferral == "no_target" and result.actions[0]["op"] == "go_to"
    assert "blue was never seen" in result.reasoning


# ------------------------------------------------------------------------------ cooldown
@pytest.mark.parametrize("state", STATES)
def test_cooldown_running_is_not_offered_and_the_module_shadows(state: str) -> None:
    aria, answers = agent(state, Answers(planner={"module": "MOVE", "target": None}))
    decide(aria, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3)}, kill_ready=False))
    assert "KILL" not in offered(answers)
    tk = toolkit(state, scene_obs(CAFE, 0.0, {"blue": at(CAFE, 3)}, kill_ready=False))
    result = logged(asyncio.run(KillModule().run(tk, Choice(module="KILL"))))
    assert result.deferral == "cooldown" and not tk.calls
    assert result.actions == [
        {"op": "follow", "agent": "blue", "distance": SHADOW, "ticks": result.actions[0]["ticks"]}
    ]


def toolkit(state: str, raw: Observation) -> Toolkit:
    """A toolkit holding the observation as the state view filters it."""
    known = Knowledge(state, G).update(raw)  # type: ignore[arg-type]
    return Toolkit(
        spec=AriaSpec(state=state),
        backend=FakeBackend("t", script=lambda r: "{}"),
        geometry=G,
        persona="p",
        obs=known,
        view_text="v",
        memory=MEMORIES["semantic"](10),
    )


# ------------------------------------------------------------------------------ whole games
def kill_record(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Kills, KILL decisions and, for each that did not kill, its stated reason."""
    kills = {(e["step"], e["killer"]) for e in events if e["kind"] == "kill"}
    programs = {(e["step"], e["agent"]): e for e in events if e["kind"] == "program"}
    refused = {
        (e["step"], e["agent"]): e["reason"] for e in events if e["kind"] == "action_rejected"
    }
    reasons: Counter[str] = Counter()
    untold = []
    decisions = [e for e in events if e["kind"] == "decision" and e.get("module") == "KILL"]
    for d in decisions:
        key = (d["step"], d["agent"])
        if key in kills:
            continue
        if any(a.get("op") == "kill" for a in d["program"]):
            # A strike was sent: its refusal, or its program's outcome, says why.
            why = d.get("error") or refused.get(key) or (programs.get(key) or {}).get("reason", "")
            reasons["strike: " + (why.split(":")[0] if why else "")] += 1
        else:
            why = d.get("deferral", "")
            reasons[why] += 1
            if why not in DEFERRALS:
                why = ""
        if not why:
            untold.append(d)
    return {"kills": len(kills), "decisions": len(decisions), "reasons": reasons, "untold": untold}


def play_offline(seed: int, out: Path, **rules: Any) -> list[dict[str, Any]]:
    config = resolve_config(
        "quick",
        overrides={
            "seed": seed,
            "rules": rules,
            "frames": "off",
            "crew": {"backend": "fake"},
            "impostor": {"backend": "fake"},
        },
    )
    play_game(config, load_map(config.map), "fake", out)
    return [json.loads(line) for line in (out / "events.jsonl").open()]


GAMES = 6
"""Offline games the test reads (seeds 1 to 6, about 1.5 s each, from the run's store,
which other harness tests read too); the 20-game figure is measured apart."""


def test_offline_impostors_kill_in_most_games_and_every_kill_decision_says_why(
    fake_games: GameStore,
) -> None:
    with_kill = 0
    reasons: Counter[str] = Counter()
    for seed in range(1, GAMES + 1):
        events = fake_games.game(seed=seed, **OFFLINE_ARIA) / "events.jsonl"
        record = kill_record([json.loads(line) for line in events.open()])
        with_kill += record["kills"] > 0
        reasons += record["reasons"]
        assert not record["untold"], record["untold"][0]
    assert with_kill * 2 >= GAMES, (with_kill, reasons)
    assert reasons["witness"] > 0 and reasons["hunting"] > 0  # the paths are exercised


def test_offline_game_is_deterministic_per_seed() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        a = play_offline(3, Path(tmp) / "a", max_steps=30)
        b = play_offline(3, Path(tmp) / "b", max_steps=30)
    keep = ("decision", "kill", "vote", "speech", "meeting_end")

    def story(events: list[dict[str, Any]]) -> list[Any]:
        return [
            (e["kind"], e["step"], e.get("agent"), e.get("program"), e.get("text"), e.get("victim"))
            for e in events
            if e["kind"] in keep
        ]

    assert story(a) == story(b)


def logged(result: ModuleResult) -> ModuleResult:
    """A module's result, its actions as the log writes them (`dump_actions`)."""
    return dataclasses.replace(result, actions=dump_actions(result.actions))  # type: ignore[arg-type]
