"""The scripted ruler: memory across the meeting teleport, evidence votes, the button,
true speech, and whole fake-world games that eject (impostors above chance)."""

from __future__ import annotations

import asyncio
import importlib
import math
import re
from pathlib import Path
from typing import Any

import pytest

from controller.agents.base import AgentDecision
from controller.agents.scripted import (
    IMPOSTOR_TEMPLATES,
    NEAR_BODY_BLOCKS,
    SPEECH_TEMPLATES,
    WITH_VICTIM_BLOCKS,
    ScriptedAgent,
    template_pattern,
)
from controller.events import (
    Emergency,
    Event,
    GameStart,
    Kill,
    MeetingStart,
    Positions,
    Report,
    Speech,
    TaskDone,
    Visibility,
    read_events,
)
from controller.observation import ChatEntry, MeetingView, Observation, Scoreboard
from world.geometry import ShipGeometry
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
) -> Observation:
    """A hand-built observation (only what the scripted agent reads)."""
    board = Scoreboard(
        phase=phase,  # type: ignore[arg-type]
        kill_ready=False,
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
        role=role,  # type: ignore[arg-type]
        step=step,
        tick=tick,
        phase=phase,  # type: ignore[arg-type]
        pos=pos,
        yaw=0.0,
        room=GEOMETRY.room_at(pos),
        tasks=[GEOMETRY.station_ids()[0]],
        tasks_done=[],
        teammates=[],
        kill_ready=False,
        emergency_ready=emergency_ready,
        known_dead=known_dead or [],
        players=ALL,
        visible_players=players or {},
        visible_bodies=bodies or {},
        scoreboard=board,
        chat=chat or [],
        meeting=meeting,
    )


def meeting(victim: str | None, caller: str, order: list[str], index: int = 1) -> MeetingView:
    return MeetingView(
        index=index,
        trigger="report" if victim else "emergency",
        caller=caller,
        victim=victim,
        body_room="electrical" if victim else None,
        body_pos=ELEC if victim else None,
        order=order,
        speaker=None,
        utterances_left=3,
        talk_ticks_left=1000,
    )


def decide(agent: ScriptedAgent, o: Observation) -> AgentDecision:
    return asyncio.run(agent.decide(o))


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
    assert "I saw Red next to Green's body in electrical at tick 300." in text
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
    assert locked.program[0]["op"] == "use_station"
    press = decide(blue, obs("blue", step=10, tick=1200, emergency_ready=True))
    assert press.program == [{"op": "press_button"}]
    again = decide(blue, obs("blue", step=11, tick=1500, emergency_ready=True))
    assert again.program[0]["op"] != "press_button"  # one press per piece of evidence


def test_templates_parse_back() -> None:
    for name, template in {**SPEECH_TEMPLATES, **IMPOSTOR_TEMPLATES}.items():
        values = {"victim": "Green", "room": "o2", "suspect": "Red", "tick": 12, "done": 1}
        values |= {"total": 8, "accuser": "Blue"}
        text = template.format(**values)
        match = template_pattern(template).fullmatch(text)
        assert match is not None, name


# Seeds 23-34: a fixed window of twelve games (benchmarks/ruler.py prints the 40-seed figures).
RULER_SEEDS = list(range(23, 35))


@pytest.fixture(scope="module")
def ruler_games(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[list[Event]]]:
    root = tmp_path_factory.mktemp("ruler")
    stats = ruler.play_seeds(RULER_SEEDS, root)
    logs = [read_events(root / f"seed{s}" / "events.jsonl") for s in RULER_SEEDS]
    return stats, logs


def test_ruler_ejects_impostors_above_chance(ruler_games: tuple[Any, list[list[Event]]]) -> None:
    stats, _ = ruler_games
    assert stats.ejections >= 4
    assert stats.hit_share > stats.chance
    assert stats.endings["impostors_ejected"] >= 1  # seed 23
    assert not stats.invalid
    for path in ("kill", "report", "emergency", "eject", "task_done"):
        assert stats.paths[path] > 0, path


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
                ok = isinstance(caller_event, Report) and caller_event.reporter == who
                ok = ok and caller_event.victim == g["victim"] and caller_event.room == g["room"]
            elif name == "pressed_button":
                ok = isinstance(caller_event, Emergency) and caller_event.caller == who
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
    again = ruler.play_seeds([23], tmp_path)
    assert again.endings["impostors_ejected"] == 1
    fixture = ruler_games[1][RULER_SEEDS.index(23)]
    replay = read_events(tmp_path / "seed23" / "events.jsonl")
    keep = ("kill", "report", "emergency", "speech", "vote", "meeting_end", "game_end")

    def rules(evs: list[Event]) -> list[dict[str, Any]]:
        return [e.model_dump(exclude={"wall", "game_id"}) for e in evs if e.kind in keep]

    assert rules(fixture) == rules(replay)
