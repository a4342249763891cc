"""The scripted ruler: memory across the meeting teleport, evidence votes, the button,
true speech, and whole fake-world games that eject (impostors above chance)."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import math
import re
from pathlib import Path
from typing import Any

import pytest

from controller.actions import dump_actions
from controller.agents.base import AgentDecision
from controller.agents.scripted import (
    FOLLOW_TICKS,
    GETAWAY_BLOCKS,
    IMPOSTOR_TEMPLATES,
    NEAR_BODY_BLOCKS,
    SELF_REPORT_P,
    SHADOW_BLOCKS,
    SPEECH_TEMPLATES,
    WITH_VICTIM_BLOCKS,
    ScriptedAgent,
    template_pattern,
)
from controller.events import (
    Decision,
    Eject,
    Emergency,
    Event,
    GameStart,
    Kill,
    MeetingStart,
    Positions,
    ProgramRun,
    Report,
    Speech,
    TaskDone,
    Visibility,
    read_events,
)
from controller.observation import ChatEntry, MeetingView, Observation, OwnAction, Scoreboard
from testkit.games import GameStore
from world.geometry import ShipGeometry, yaw_towards
from world.spec import load_map

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)
ruler = importlib.import_module("benchmarks.ruler")

ELEC = GEOMETRY.room_center("electrical")
SEATS = [GEOMETRY.seat_pos(i) for i in range(8)]
ALL = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]


def off(pos: tuple[float, float, float], dx: float) -> tuple[float, float, float]:
    return (pos[0] + dx, pos[1], pos[2])


def obs(
    agent: str,
    *,
    phase: str = "free_roam",
    step: int = 1,
    tick: int = 100,
    pos: tuple[float, float, float] = ELEC,
    players: dict[str, Any] | None = None,
    bodies: dict[str, Any] | None = None,
    meeting: MeetingView | None = None,
    chat: list[ChatEntry] | None = None,
    known_dead: list[str] | None = None,
    emergency_ready: bool = False,
    role: str = "crewmate",
    kill_ready: bool = False,
    teammates: list[str] | None = None,
    own_actions: list[OwnAction] | None = None,
) -> Observation:
    """A hand-built observation (only what the scripted agent reads)."""
    board = Scoreboard(
        phase=phase,
        kill_ready=kill_ready,
        task_bits=[False],
        dead=False,
        meeting_countdown=None,
        speaker=None,
        game_over=False,
        area=GEOMETRY.room_at(pos),
        task_in_progress=None,
        reported_body=None,
        emergency_ready=emergency_ready,
    )
    return Observation(
        agent=agent,
        role=role,
        step=step,
        tick=tick,
        phase=phase,
        pos=pos,
        yaw=0.0,
        room=GEOMETRY.room_at(pos),
        tasks=[GEOMETRY.station_ids()[0]] if role == "crewmate" else [],
        tasks_done=[],
        teammates=teammates or [],
        kill_ready=kill_ready,
        emergency_ready=emergency_ready,
        known_dead=known_dead or [],
        players=ALL,
        visible_players=players or {},
        visible_bodies=bodies or {},
        scoreboard=board,
        chat=chat or [],
        meeting=meeting,
        own_actions=own_actions or [],
    )


def meeting(
    victim: str | None, caller: str, order: list[str], index: int = 1, room: str = "electrical"
) -> MeetingView:
    return MeetingView(
        index=index,
        trigger="report" if victim else "emergency",
        caller=caller,
        victim=victim,
        body_room=room if victim else None,
        body_pos=GEOMETRY.room_center(room) if victim else None,
        order=order,
        speaker=None,
        utterances_left=3,
        talk_ticks_left=1000,
    )


def decide(agent: ScriptedAgent, o: Observation) -> AgentDecision:
    """The agent's decision, its program as the log writes it (`dump_actions`)."""
    d = asyncio.run(agent.decide(o))
    return dataclasses.replace(d, program=dump_actions(d.program))


def seated(order: list[str]) -> dict[str, Any]:
    return {a: SEATS[i] for i, a in enumerate(order)}


def test_sightings_survive_the_meeting_teleport_and_decide_the_vote() -> None:
    blue = ScriptedAgent("blue", GEOMETRY, 1)
    # Free roam: blue sees red alive beside green, then green's body with red next to it.
    decide(blue, obs("blue", tick=100, players={"red": off(ELEC, 2), "green": off(ELEC, 1)}))
    seen = decide(
        blue, obs("blue", tick=300, players={"red": off(ELEC, 1.5)}, bodies={"green": ELEC})
    )
    assert seen.program == [{"op": "report", "body": "green"}]
    order = ["red", "blue", "pink", "white"]
    # The meeting: everyone sits in the cafeteria, far from the body; the memory holds.
    m = meeting("green", "blue", order)
    talk = decide(
        blue, obs("blue", phase="meeting", tick=310, pos=SEATS[1], players=seated(order), meeting=m)
    )
    text = talk.program[0]["text"]
    assert "I found Green's body in electrical." in text
    # by Green alive at one look and by its body at the next: the kill between the two
    assert "I saw Red with Green at tick 100 and by the body in electrical at tick 300." in text
    vote = decide(
        blue, obs("blue", phase="voting", tick=320, pos=SEATS[1], players=seated(order), meeting=m)
    )
    assert vote.vote == "red"


def test_no_evidence_means_skip_and_a_true_no_evidence_speech() -> None:
    pink = ScriptedAgent("pink", GEOMETRY, 1)
    decide(pink, obs("pink", tick=100))  # saw nobody
    order = ["red", "blue", "pink", "white"]
    m = meeting("green", "blue", order)
    talk = decide(
        pink, obs("pink", phase="meeting", tick=310, pos=SEATS[2], players=seated(order), meeting=m)
    )
    assert talk.program[0]["text"].startswith(SPEECH_TEMPLATES["no_evidence"])
    vote = decide(
        pink, obs("pink", phase="voting", tick=320, pos=SEATS[2], players=seated(order), meeting=m)
    )
    assert vote.vote == "skip"


def test_a_stale_body_is_no_evidence() -> None:
    blue = ScriptedAgent("blue", GEOMETRY, 1)
    decide(blue, obs("blue", tick=100, players={"green": off(ELEC, 1)}))
    # Green last seen alive 5000 ticks before the body: whoever stands there now says nothing.
    decide(blue, obs("blue", tick=5100, players={"red": off(ELEC, 1)}, bodies={"green": ELEC}))
    assert blue.evidence == []


def test_heard_eyewitness_claim_is_followed_unless_word_against_word() -> None:
    order = ["red", "blue", "pink", "white"]
    m = meeting("green", "blue", order)
    claim = SPEECH_TEMPLATES["saw_near_body"].format(
        suspect="Red", victim="Green", room="electrical", tick=300
    )
    line = ChatEntry(index=1, step=2, tick=310, kind="speech", speaker="blue", text=claim)
    pink = ScriptedAgent("pink", GEOMETRY, 1)
    decide(pink, obs("pink", tick=100))
    v = decide(pink, obs("pink", phase="voting", tick=320, pos=SEATS[2], meeting=m, chat=[line]))
    assert v.vote == "red"
    counter = SPEECH_TEMPLATES["saw_near_body"].format(
        suspect="Blue", victim="Green", room="electrical", tick=300
    )
    reply = ChatEntry(index=2, step=3, tick=310, kind="speech", speaker="red", text=counter)
    white = ScriptedAgent("white", GEOMETRY, 1)
    decide(white, obs("white", tick=100))
    v = decide(
        white, obs("white", phase="voting", tick=320, pos=SEATS[3], meeting=m, chat=[line, reply])
    )
    assert v.vote == "skip"


def test_button_when_holding_evidence_and_no_body_in_sight() -> None:
    blue = ScriptedAgent("blue", GEOMETRY, 1)
    decide(blue, obs("blue", tick=100, players={"green": off(ELEC, 1)}))
    decide(blue, obs("blue", tick=300, players={"red": off(ELEC, 1.5)}, bodies={"green": ELEC}))
    # After a meeting that ejected nobody, the bodies are gone; blue still holds evidence.
    locked = decide(blue, obs("blue", step=9, tick=900, emergency_ready=False))
    assert locked.module == "MISSION" and locked.program[-1]["op"] == "use_station"
    press = decide(blue, obs("blue", step=10, tick=1200, emergency_ready=True))
    assert press.program == [{"op": "press_button"}]
    again = decide(blue, obs("blue", step=11, tick=1500, emergency_ready=True))
    assert again.program[0]["op"] != "press_button"  # one press per piece of evidence


def test_templates_parse_back() -> None:
    for name, template in {**SPEECH_TEMPLATES, **IMPOSTOR_TEMPLATES}.items():
        values = {"victim": "Green", "room": "o2", "suspect": "Red", "tick": 12, "done": 1}
        values |= {"total": 8, "accuser": "Blue", "before": 7, "station": 3}
        text = template.format(**values)
        match = template_pattern(template).fullmatch(text)
        assert match is not None, name


def test_a_sighting_with_the_victim_counts_only_from_the_previous_look() -> None:
    # Blue saw Red beside Green, then looked elsewhere once, then found Green's body: the
    # kill may lie in either step, so standing beside Green then is no evidence.
    late = ScriptedAgent("blue", GEOMETRY, 1)
    decide(late, obs("blue", tick=100, players={"red": off(ELEC, 2), "green": off(ELEC, 1)}))
    decide(late, obs("blue", tick=200, pos=GEOMETRY.room_center("storage")))
    decide(late, obs("blue", tick=300, bodies={"green": ELEC}))
    assert late.evidence == []
    fresh = ScriptedAgent("blue", GEOMETRY, 1)
    decide(fresh, obs("blue", tick=100, players={"red": off(ELEC, 2), "green": off(ELEC, 1)}))
    decide(fresh, obs("blue", tick=300, bodies={"green": ELEC}))
    assert [(e.kind, e.suspect) for e in fresh.evidence] == [("with_victim", "red")]


def test_crewmate_holds_its_station_facing_into_the_room() -> None:
    blue = ScriptedAgent("blue", GEOMETRY, 1)
    station = GEOMETRY.station_ids()[0]
    task = decide(blue, obs("blue", tick=100))
    into = yaw_towards(
        GEOMETRY.station_pos(station), GEOMETRY.room_center(GEOMETRY.station_room(station))
    )
    assert task.program == [
        {"op": "go_to", "station": station},
        {"op": "look", "yaw": round(into, 1)},
        {"op": "use_station", "station": station},
    ]


def imp(
    agent: ScriptedAgent,
    *,
    tick: int = 100,
    pos: tuple[float, float, float] = ELEC,
    players: dict[str, Any] | None = None,
    bodies: dict[str, Any] | None = None,
    kill_ready: bool = True,
    own_actions: list[OwnAction] | None = None,
) -> AgentDecision:
    """Red, an impostor with Blue, decides in free roam."""
    o = obs(
        "red",
        role="impostor",
        teammates=["blue"],
        tick=tick,
        pos=pos,
        players=players,
        bodies=bodies,
        kill_ready=kill_ready,
        own_actions=own_actions,
    )
    return decide(agent, o)


def ops(d: AgentDecision) -> list[str]:
    return [a["op"] for a in d.program]


def lone_strike(seed: int) -> tuple[ScriptedAgent, AgentDecision]:
    """Red sees Green alone (busy at the same spot two looks running) and Blue, its teammate."""
    red = ScriptedAgent("red", GEOMETRY, seed)
    seen = {"green": off(ELEC, 3), "blue": off(ELEC, -2)}
    imp(red, tick=100, players=seen, kill_ready=False)
    return red, imp(red, tick=300, players=seen)


def test_impostor_strikes_a_lone_crewmate_guarded_then_walks_away() -> None:
    red, d = next(
        (r, d) for r, d in (lone_strike(seed) for seed in range(50)) if ops(d)[-1] != "wait"
    )
    assert d.module == "KILL" and d.deferral == ""
    # the teammate in view is no witness; the strike is re-checked at its own tick
    assert d.program[0] == {"op": "kill", "target": "green", "guard": "sight"}
    # then it fakes a task out of sight of the body, in another room, facing into it
    assert ops(d)[1:] == ["go_to", "look", "use_station"]
    station = d.program[-1]["station"]
    assert GEOMETRY.station_room(station) != "electrical"
    length = GEOMETRY.path_length(off(ELEC, 3), GEOMETRY.station_pos(station))
    assert length is not None and length >= GETAWAY_BLOCKS
    assert red.report_victim is None


def test_impostor_follows_a_walking_crewmate_before_the_strike() -> None:
    red = ScriptedAgent("red", GEOMETRY, 1)
    imp(red, tick=100, players={"green": off(ELEC, 1)}, kill_ready=False)
    d = imp(red, tick=300, players={"green": off(ELEC, 4)})  # it moved: on its way somewhere
    assert d.program[0] == {
        "op": "follow",
        "agent": "green",
        "distance": 4.0,
        "ticks": FOLLOW_TICKS,
    }
    assert d.program[1] == {"op": "kill", "target": "green", "guard": "sight"}


def test_impostor_strikes_the_most_isolated_crewmate() -> None:
    red = ScriptedAgent("red", GEOMETRY, 1)
    pair = {"green": off(ELEC, 2), "pink": off(ELEC, 3)}
    d = imp(red, players={**pair, "white": off(ELEC, -5)})
    kill = next(a for a in d.program if a["op"] == "kill")
    assert kill == {"op": "kill", "target": "white", "guard": "sight"}


def test_impostor_sends_no_strike_while_the_cooldown_runs() -> None:
    red = ScriptedAgent("red", GEOMETRY, 1)
    d = imp(red, players={"green": off(ELEC, 3)}, kill_ready=False)
    assert "kill" not in ops(d)
    assert d.module == "KILL" and d.deferral == "cooldown"
    follow = d.program[0]
    assert follow["op"] == "follow" and follow["agent"] == "green"
    assert follow["distance"] == SHADOW_BLOCKS > max(NEAR_BODY_BLOCKS, WITH_VICTIM_BLOCKS)
    alone = imp(ScriptedAgent("red", GEOMETRY, 1), kill_ready=False)
    assert alone.module == "MISSION" and ops(alone) == ["go_to", "look", "use_station"]


def test_impostor_hunts_a_crewmate_it_saw_alone_else_patrols() -> None:
    red = ScriptedAgent("red", GEOMETRY, 1)
    spot = GEOMETRY.station_pos(13)
    imp(red, tick=100, players={"green": spot}, kill_ready=False)
    d = imp(red, tick=300, pos=GEOMETRY.room_center("storage"))  # nobody in view now
    assert d.program[:2] == [
        {"op": "go_to", "pos": list(spot)},
        {"op": "kill", "target": "green", "guard": "sight"},
    ]
    # a crewmate it killed is not hunted again; with nobody known it patrols elsewhere
    killed = OwnAction(step=2, tick=310, kind="killed", target="green")
    d = imp(red, tick=400, pos=GEOMETRY.room_center("storage"), own_actions=[killed])
    assert "kill" not in ops(d)
    assert d.module == "KILL" and d.deferral == "no_target"
    assert GEOMETRY.station_room(d.program[-1]["station"]) not in ("storage", "electrical")


def test_impostor_self_reports_at_the_documented_rate() -> None:
    strikes = [lone_strike(seed) for seed in range(400)]
    stayed = [(r, d) for r, d in strikes if ops(d)[-1] == "wait"]
    share = len(stayed) / len(strikes)
    assert abs(share - SELF_REPORT_P) < 3 * math.sqrt(SELF_REPORT_P * (1 - SELF_REPORT_P) / 400)
    # one that stayed reports the body at its next look; one that walked away leaves it
    red, d = stayed[0]
    assert red.report_victim == "green"
    report = imp(red, tick=400, bodies={"green": off(ELEC, 3)})
    assert report.program == [{"op": "report", "body": "green"}]
    walker, _ = next((r, d) for r, d in strikes if ops(d)[-1] != "wait")
    leave = imp(walker, tick=400, bodies={"green": off(ELEC, 3)})
    assert leave.module == "MOVE" and "report" not in ops(leave)


def test_impostor_walks_away_from_a_body() -> None:
    red = ScriptedAgent("red", GEOMETRY, 1)
    d = imp(red, bodies={"pink": off(ELEC, 2)}, players={"green": off(ELEC, 4)})
    assert d.module == "MOVE" and "kill" not in ops(d)
    station = d.program[-1]["station"]
    length = GEOMETRY.path_length(off(ELEC, 2), GEOMETRY.station_pos(station))
    assert length is not None and length >= GETAWAY_BLOCKS


def _alibi(red: ScriptedAgent, room: str, body_room: str, index: int) -> str:
    """Red last looked around in `room`; a meeting about a body in `body_room`."""
    imp(red, tick=100 * index, pos=GEOMETRY.room_center(room), kill_ready=False)
    order = ["red", "blue", "green", "white"]
    m = meeting("pink", "green", order, index=index, room=body_room)
    o = obs("red", phase="meeting", role="impostor", teammates=["blue"], meeting=m)
    text = decide(red, o).program[0]["text"]
    match = template_pattern(IMPOSTOR_TEMPLATES["alibi"]).match(text)
    assert match is not None, text
    return match.group("room")


def test_impostor_alibi_is_the_truth_or_one_cover_room() -> None:
    red = ScriptedAgent("red", GEOMETRY, 1)
    assert _alibi(red, "medbay", "electrical", 1) == "medbay"  # the truth when it is safe
    cover = _alibi(red, "electrical", "electrical", 2)  # the truth would place it at the body
    assert cover != "electrical"
    assert _alibi(red, "weapons", "o2", 3) == "weapons"
    assert _alibi(red, "electrical", "electrical", 4) == cover  # the same cover every time
    other = _alibi(red, cover, cover, 5)  # a body in the cover room: the second cover
    assert other != cover
    assert red.alibis == ["medbay", cover, "weapons", cover, other]


def test_a_self_reporting_impostor_says_it_found_the_body() -> None:
    red = ScriptedAgent("red", GEOMETRY, 1)
    imp(red, kill_ready=False)
    m = meeting("pink", "red", ["red", "blue", "green"])
    o = obs("red", phase="meeting", role="impostor", teammates=["blue"], meeting=m)
    text = decide(red, o).program[0]["text"]
    assert text == "I found Pink's body in electrical."


# Seeds 69-80: a fixed window of twelve quick games, among the tuning seeds 1-200, that
# holds an ejection ending (benchmarks/ruler.py prints the 100-seed figures). They are
# the games `benchmarks.ruler.play_seeds` plays (quick preset, frames off), taken from
# the run's store, which other tests read too; `test_ruler_is_deterministic` plays one
# again through `play_seeds` and finds the same game.
RULER_SEEDS = list(range(69, 81))
EJECTION_SEED = 71
"""The window's seed that ends `impostors_ejected`."""


@pytest.fixture(scope="module")
def ruler_games(fake_games: GameStore) -> tuple[Any, list[list[Event]]]:
    stats = ruler.RulerStats()
    logs = [fake_games.events(seed=s, frames="off") for s in RULER_SEEDS]
    for events in logs:
        stats.add(events)
    return stats, logs


def test_ruler_ejects_impostors_above_chance(ruler_games: tuple[Any, list[list[Event]]]) -> None:
    stats, _ = ruler_games
    assert stats.ejections >= 4
    assert stats.hit_share > stats.chance
    assert stats.endings["impostors_ejected"] >= 1  # EJECTION_SEED
    assert 0 < stats.impostor_wins < stats.games  # either side can win
    assert stats.self_reports > 0
    assert not stats.invalid
    for path in ("kill", "report", "emergency", "eject", "task_done"):
        assert stats.paths[path] > 0, path


def test_ruler_impostors_strike_unseen(ruler_games: tuple[Any, list[list[Event]]]) -> None:
    """At every kill's tick no living crewmate but the victim is in the killer's view."""
    kills = 0
    for events in ruler_games[1]:
        roles = next(e for e in events if isinstance(e, GameStart)).roles
        out: set[str] = set()
        for e in events:
            if isinstance(e, Kill):
                vis = next(
                    v
                    for v in events
                    if isinstance(v, Visibility)
                    and v.cause == "kill"
                    and v.subject == e.killer
                    and v.tick == e.tick
                )
                seen = [
                    a
                    for a in vis.sees.get(e.killer, [])
                    if roles[a] == "crewmate" and a != e.victim and a not in out
                ]
                assert seen == [], f"{e.killer} killed {e.victim} at tick {e.tick} seen by {seen}"
                out.add(e.victim)
                kills += 1
            elif isinstance(e, Eject):
                out.add(e.agent)
    assert kills >= 2 * len(ruler_games[1])


def test_ruler_impostors_walk_away(ruler_games: tuple[Any, list[list[Event]]]) -> None:
    """When the step of a kill ends (unless a meeting or the game's end cut it short),
    the killer stands farther than `NEAR_BODY_BLOCKS` from the body, unless it chose to
    stay and report it."""
    checked = stayed = 0
    for events in ruler_games[1]:
        plans = {
            (e.agent, e.step): e.program
            for e in events
            if isinstance(e, Decision) and e.phase == "free_roam"
        }
        pending: list[Kill] = []
        frozen = False
        for e in events:
            if isinstance(e, Kill):
                pending.append(e)
            elif isinstance(e, Report | Emergency) or (
                isinstance(e, ProgramRun) and e.reason == "game over"
            ):
                frozen = True
            elif isinstance(e, Positions) and e.cause == "step_end":
                for k in pending if not frozen else []:
                    if plans[(k.killer, k.step)][-1]["op"] == "wait":
                        stayed += 1
                        continue
                    checked += 1
                    away = math.dist(e.players[k.killer].pos, k.pos)
                    assert away > NEAR_BODY_BLOCKS, f"{k.killer} {away:.1f} from {k.victim}"
                pending, frozen = [], False
    assert checked > stayed > 0


def _claims_hold(events: list[Event]) -> tuple[int, list[str]]:
    """Check every crewmate sentence against the log; (sentences checked, falsehoods)."""
    start = next(e for e in events if isinstance(e, GameStart))
    pats = {n: template_pattern(t) for n, t in SPEECH_TEMPLATES.items()}
    vis: dict[int, list[Visibility]] = {}
    pos: dict[int, list[Positions]] = {}
    for e in events:
        if isinstance(e, Visibility):
            vis.setdefault(e.tick, []).append(e)
        elif isinstance(e, Positions):
            pos.setdefault(e.tick, []).append(e)
    bodies: dict[str, Kill] = {}
    done: dict[str, int] = {}
    meeting: MeetingStart | None = None
    caller_event: Report | Emergency | None = None
    checked, false = 0, []
    for e in events:
        if isinstance(e, Kill):
            bodies[e.victim] = e
        elif isinstance(e, TaskDone) and not e.fake:
            done[e.agent] = done.get(e.agent, 0) + 1
        elif isinstance(e, Report | Emergency):
            caller_event = e
        elif isinstance(e, MeetingStart):
            meeting = e
        if not (isinstance(e, Speech) and e.text and start.roles[e.speaker] == "crewmate"):
            continue
        who = e.speaker
        for sentence in re.split(r"(?<=\.) ", e.text):
            hit = [(n, m) for n, p in pats.items() if (m := p.fullmatch(sentence))]
            if not hit:
                false.append(f"unparsed: {sentence}")
                continue
            name, m = hit[0]
            g = {k: v.lower() for k, v in m.groupdict().items()}
            checked += 1
            ok = True
            if name == "found_body":
                ok = (
                    isinstance(caller_event, Report)
                    and caller_event.reporter == who
                    and caller_event.victim == g["victim"]
                    and caller_event.room == g["room"]
                )
            elif name == "pressed_button":
                ok = isinstance(caller_event, Emergency) and caller_event.caller == who
            elif name == "saw_kill":
                s, v = g["suspect"], g["victim"]
                body = bodies[v].pos
                before = any(
                    s in ve.sees.get(who, [])
                    and v in ve.sees.get(who, [])
                    and math.dist(pe.players[s].pos, pe.players[v].pos) <= WITH_VICTIM_BLOCKS
                    for ve in vis.get(int(g["before"]), [])
                    for pe in pos.get(int(g["before"]), [])
                )
                after = any(
                    s in ve.sees.get(who, [])
                    and v in ve.bodies.get(who, [])
                    and pe.players[s].room == g["room"]
                    and math.dist(pe.players[s].pos, body) <= NEAR_BODY_BLOCKS
                    for ve in vis.get(int(g["tick"]), [])
                    for pe in pos.get(int(g["tick"]), [])
                )
                ok = before and after
            elif name in ("saw_elsewhere", "saw_fake_task"):
                s, t = g["suspect"], int(g["tick"])
                ok = any(
                    s in ve.sees.get(who, [])
                    and pe.players[s].room == g["room"]
                    and (
                        name == "saw_elsewhere"
                        or math.dist(pe.players[s].pos, GEOMETRY.station_pos(int(g["station"])))
                        <= 1.5
                    )
                    for ve in vis.get(t, [])
                    for pe in pos.get(t, [])
                )
            elif name in ("saw_near_body", "saw_with_victim", "saw_near_scene"):
                t, s, v = int(g["tick"]), g["suspect"], g["victim"]
                body = bodies[v].pos
                ok = False
                for ve in vis.get(t, []):
                    for pe in pos.get(t, []):
                        sees = ve.sees.get(who, [])
                        sp = pe.players[s]
                        if s not in sees or sp.room != g["room"]:
                            continue
                        if name == "saw_near_body":
                            ok |= (
                                v in ve.bodies.get(who, [])
                                and math.dist(sp.pos, body) <= NEAR_BODY_BLOCKS
                            )
                        elif name == "saw_with_victim":
                            ok |= (
                                v in sees
                                and math.dist(sp.pos, pe.players[v].pos) <= WITH_VICTIM_BLOCKS
                            )
                        else:
                            ok |= math.dist(sp.pos, body) <= NEAR_BODY_BLOCKS
            elif name == "was_in":
                ok = any(pe.players[who].room == g["room"] for pe in pos.get(int(g["tick"]), []))
            elif name == "tasks_done":
                ok = int(g["done"]) == done.get(who, 0) and int(g["total"]) == len(start.tasks[who])
            elif name == "heard_claim":
                ok = meeting is not None  # checked against the meeting's chat by the vote tests
            if not ok:
                false.append(f"step {e.step} {who}: {sentence}")
    return checked, false


def test_crewmates_never_lie(ruler_games: tuple[Any, list[list[Event]]]) -> None:
    total = 0
    for events in ruler_games[1]:
        # every line reached the chat (a line the chat refuses is said by nobody)
        assert not [e for e in events if isinstance(e, Speech) and e.failed]
        checked, false = _claims_hold(events)
        total += checked
        assert false == []
    assert total > 100


def test_the_audit_catches_a_lie(ruler_games: tuple[Any, list[list[Event]]]) -> None:
    events = ruler_games[1][0]
    i, speech = next(
        (i, e)
        for i, e in enumerate(events)
        if isinstance(e, Speech)
        and "I was in " in e.text
        and e.speaker in events[0].roles  # type: ignore[union-attr]
        and events[0].roles[e.speaker] == "crewmate"  # type: ignore[union-attr]
    )
    room = re.search(r"I was in (\w+) at", speech.text)
    assert room is not None
    other = "reactor" if room.group(1) != "reactor" else "o2"
    lie = speech.model_copy(
        update={"text": speech.text.replace(f"I was in {room.group(1)} at", f"I was in {other} at")}
    )
    _, false = _claims_hold([*events[:i], lie, *events[i + 1 :]])
    assert len(false) == 1 and other in false[0]


def test_ruler_is_deterministic(ruler_games: tuple[Any, list[list[Event]]], tmp_path: Path) -> None:
    again = ruler.play_seeds([EJECTION_SEED], tmp_path)
    assert again.endings["impostors_ejected"] == 1
    fixture = ruler_games[1][RULER_SEEDS.index(EJECTION_SEED)]
    replay = read_events(tmp_path / f"seed{EJECTION_SEED}" / "events.jsonl")
    keep = ("kill", "report", "emergency", "speech", "vote", "meeting_end", "game_end")

    def rules(evs: list[Event]) -> list[dict[str, Any]]:
        return [e.model_dump(exclude={"wall", "game_id"}) for e in evs if e.kind in keep]

    assert rules(fixture) == rules(replay)
