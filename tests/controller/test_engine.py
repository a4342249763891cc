"""Unit tests of every rule and every ending of the rules engine."""

from __future__ import annotations

import pytest

from controller.config import RulesConfig
from controller.engine import SKIP, Ballot, Engine
from controller.events import (
    ActionRejected,
    Eject,
    Emergency,
    Kill,
    KillReady,
    MeetingEnd,
    MeetingStart,
    Report,
    Speech,
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Vote,
)

AGENTS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
STATIONS = {i: (float(i * 10), 65.0, 0.0) for i in range(20)}
BUTTON = (0.0, 65.0, 50.0)
ORIGIN = (100.0, 65.0, 100.0)


def near(pos: tuple[float, float, float], dx: float = 1.0) -> tuple[float, float, float]:
    return (pos[0] + dx, pos[1], pos[2])


def make(**rules: object) -> Engine:
    base = dict(
        kill_cooldown_ticks=100,
        initial_kill_cooldown_ticks=50,
        task_ticks=20,
        emergency_initial_lockout_ticks=200,
        emergency_lockout_after_meeting_ticks=100,
        meeting_max_ticks=1000,
        max_steps=50,
    )
    base.update(rules)
    return Engine(
        RulesConfig.model_validate(base),
        AGENTS,
        seed=7,
        stations=STATIONS,
        button=BUTTON,
        room_at=lambda p: "cafeteria" if abs(p[2] - 50) < 10 else "hall",
    )


def do_task(e: Engine, agent: str, station: int, start: int, end: int) -> list[object]:
    """Stand at a station from `start` to `end` and claim the task."""
    return [
        *e.start_task(agent, station, start, STATIONS[station]),
        *e.finish_task(agent, station, end, STATIONS[station]),
    ]


def roles(e: Engine) -> tuple[list[str], list[str]]:
    imps = e.impostors()
    return imps, [a for a in AGENTS if a not in imps]


def kinds(events: list[object]) -> list[type]:
    return [type(ev) for ev in events]


def test_roles_and_tasks_are_seeded_and_sized() -> None:
    a, b = make(), make()
    assert a.roles() == b.roles()
    assert len(a.impostors()) == 2
    crew = [p for p in a.players.values() if p.role == "crewmate"]
    assert all(len(p.tasks) == 3 and len(set(p.tasks)) == 3 for p in crew)
    assert all(p.tasks == [] for p in a.players.values() if p.role == "impostor")
    other = Engine(
        RulesConfig(), AGENTS, seed=8, stations=STATIONS, button=BUTTON, room_at=lambda p: "x"
    )
    seeds_differ = [
        Engine(
            RulesConfig(), AGENTS, seed=s, stations=STATIONS, button=BUTTON, room_at=lambda p: "x"
        ).roles()
        for s in range(6)
    ]
    assert len({tuple(sorted(r.items())) for r in seeds_differ + [other.roles()]}) > 1


def test_impostor_count_configurable_and_checked() -> None:
    e = make(n_impostors=1)
    assert len(e.impostors()) == 1
    with pytest.raises(ValueError, match="n_impostors"):
        make(n_impostors=4)


def test_kill_rules() -> None:
    e = make()
    (k, k2), crew = roles(e)
    v = crew[0]
    # cooldown at the start
    ev = e.kill(k, v, 10, ORIGIN, near(ORIGIN))
    assert isinstance(ev[0], ActionRejected) and "cooldown" in ev[0].reason
    # out of range
    ev = e.kill(k, v, 60, ORIGIN, near(ORIGIN, 3.5))
    assert isinstance(ev[0], ActionRejected) and "range" in ev[0].reason
    # crewmate cannot kill; impostor cannot kill impostor
    assert isinstance(e.kill(crew[1], v, 60, ORIGIN, near(ORIGIN))[0], ActionRejected)
    assert isinstance(e.kill(k, k2, 60, ORIGIN, near(ORIGIN))[0], ActionRejected)
    ev = e.kill(k, v, 60, ORIGIN, near(ORIGIN, 2.0))
    assert isinstance(ev[0], Kill) and ev[0].victim == v and ev[0].room == "hall"
    assert not e.players[v].alive and v in e.bodies
    # dead cannot be killed again; cooldown restarts after a kill
    assert isinstance(e.kill(k2, v, 70, ORIGIN, near(ORIGIN))[0], ActionRejected)
    ev = e.kill(k, crew[1], 120, ORIGIN, near(ORIGIN))
    assert isinstance(ev[0], ActionRejected) and "cooldown" in ev[0].reason
    assert isinstance(e.kill(k, crew[1], 160, ORIGIN, near(ORIGIN))[0], Kill)
    # dead players cannot act
    assert isinstance(e.start_task(v, 0, 100, STATIONS[0])[0], ActionRejected)
    assert isinstance(e.report(v, crew[1], 170, ORIGIN)[0], ActionRejected)


def test_tasks_need_duration_position_and_assignment() -> None:
    e = make()
    _, crew = roles(e)
    c = crew[0]
    s = e.players[c].tasks[0]
    assert "held" in do_task(e, c, s, 0, 10)[-1].reason  # type: ignore[attr-defined]
    assert e.task_in_progress(c) is not None  # still standing there: the task goes on
    ev = e.finish_task(c, s, 30, near(STATIONS[s], 3))
    assert kinds(ev) == [TaskInterrupted, ActionRejected] and "not at" in ev[1].reason  # type: ignore[attr-defined]
    assert "not at" in e.start_task(c, s, 31, near(STATIONS[s], 3))[0].reason  # type: ignore[attr-defined]
    foreign = next(i for i in STATIONS if i not in e.players[c].tasks)
    assert isinstance(e.start_task(c, foreign, 40, STATIONS[foreign])[0], ActionRejected)
    ev = do_task(e, c, s, 40, 60)
    assert kinds(ev) == [TaskStart, TaskDone]
    assert ev[1].done == 1 and not ev[1].fake and ev[1].start_tick == 40  # type: ignore[attr-defined]
    assert "already" in e.start_task(c, s, 70, STATIONS[s])[0].reason  # type: ignore[attr-defined]
    imp = e.impostors()[0]
    ev = do_task(e, imp, 3, 80, 100)
    assert isinstance(ev[-1], TaskDone) and ev[-1].fake
    assert e.task_progress().done == 1


def test_no_task_credit_without_a_start() -> None:
    e = make()
    _, crew = roles(e)
    c = crew[0]
    s = e.players[c].tasks[0]
    ev = e.finish_task(c, s, 500, STATIONS[s])
    assert isinstance(ev[0], ActionRejected) and "no task in progress" in ev[0].reason


def test_bug2_no_free_task_credit_across_a_meeting() -> None:
    """Bug 2: a 1200-tick task started 300 ticks before a report resumed after the
    meeting with a 2-tick wait. Progress is now lost at the meeting."""
    e = make(task_ticks=1200, emergency_initial_lockout_ticks=0)
    _, crew = roles(e)
    c, caller = crew[0], crew[1]
    s = e.players[c].tasks[0]
    e.start_task(c, s, 100, STATIONS[s])
    ev = e.emergency(caller, 400, BUTTON)
    lost = [x for x in ev if isinstance(x, TaskInterrupted)]
    assert [(x.agent, x.reason, x.held_ticks, x.tick) for x in lost] == [(c, "meeting", 300, 400)]
    e.close_talk()
    e.cast_votes({}, 500)
    # the old bug: resume with the remaining wait and claim at tick 1302
    assert "no task in progress" in e.finish_task(c, s, 1302, STATIONS[s])[0].reason  # type: ignore[attr-defined]
    e.start_task(c, s, 1302, STATIONS[s])
    assert "held" in e.finish_task(c, s, 1400, STATIONS[s])[0].reason  # type: ignore[attr-defined]
    assert isinstance(e.finish_task(c, s, 2502, STATIONS[s])[0], TaskDone)


def test_bug2_no_free_task_credit_after_walking_away() -> None:
    e = make(task_ticks=100)
    _, crew = roles(e)
    c = crew[0]
    s = e.players[c].tasks[0]
    e.start_task(c, s, 0, STATIONS[s])
    ev = e.check_presence({c: near(STATIONS[s], 5)}, 30)
    assert [(x.reason, x.held_ticks) for x in ev] == [("left_station", 30)]  # type: ignore[attr-defined]
    # back at the station at tick 100: the old engine saw 100 elapsed ticks and the
    # final position and credited the task
    assert isinstance(e.finish_task(c, s, 100, STATIONS[s])[0], ActionRejected)
    assert e.check_presence({c: STATIONS[s]}, 101) == []


def test_task_lost_when_killed() -> None:
    e = make()
    (k, _), crew = roles(e)
    v = crew[0]
    s = e.players[v].tasks[0]
    e.start_task(v, s, 40, STATIONS[s])
    ev = e.kill(k, v, 60, near(STATIONS[s]), STATIONS[s])
    assert kinds(ev) == [TaskInterrupted, Kill, KillReady] and ev[0].reason == "killed"  # type: ignore[attr-defined]


def test_bug1_a_win_is_never_overturned_within_a_step() -> None:
    """Bug 1: the crew's last task at tick 100 and a parity kill at tick 110 in the same
    step gave the impostors the win; a later report still opened a meeting."""
    e = make(kill_cooldown_ticks=0, initial_kill_cooldown_ticks=0, tasks_per_crewmate=1)
    (k, _), crew = roles(e)
    for v in crew[:2]:
        e.kill(k, v, 5, ORIGIN, near(ORIGIN))
    alive_crew = crew[2:]
    for c in alive_crew[1:]:
        do_task(e, c, e.players[c].tasks[0], 10, 40)
    assert e.check_end() is None and len(alive_crew) == 4
    last = alive_crew[0]
    s = e.players[last].tasks[0]
    e.start_task(last, s, 60, STATIONS[s])
    assert isinstance(e.finish_task(last, s, 100, STATIONS[s])[0], TaskDone)
    end = e.ending
    assert end is not None and (end.ending, end.winner, end.tick) == ("tasks_done", "crew", 100)
    # the same step goes on in the world: a kill to parity, then a report
    ev = e.kill(k, alive_crew[1], 110, ORIGIN, near(ORIGIN))
    assert isinstance(ev[0], ActionRejected) and "over" in ev[0].reason and ev[0].tick == 110
    ev = e.report(alive_crew[2], crew[0], 120, e.bodies[crew[0]].pos)
    assert kinds(ev) == [ActionRejected] and e.meeting is None
    assert e.check_end() == end and e.end_event().winner == "crew"


def test_rejections_carry_the_attempt_tick() -> None:
    e = make()
    (k, _), crew = roles(e)
    attempts = [
        e.kill(k, crew[0], 10, ORIGIN, near(ORIGIN)),
        e.emergency(crew[0], 11, BUTTON),
        e.start_task(crew[0], 0, 12, near(STATIONS[0], 9)),
        e.report(crew[0], crew[1], 13, ORIGIN),
    ]
    e.set_tick(900)  # the step ended much later
    assert all(isinstance(ev[0], ActionRejected) for ev in attempts)
    assert [ev[0].tick for ev in attempts] == [10, 11, 12, 13]  # type: ignore[attr-defined]


def test_button_readiness_is_one_rule() -> None:
    e = make()
    _, crew = roles(e)
    c = crew[0]
    for tick in (0, 199, 200, 201):
        e.tick = tick
        ready = e.emergency_ready(c)
        ev = e.emergency(c, tick, BUTTON) if not ready else None
        assert ready == (tick >= 200)
        if ev is not None:
            assert isinstance(ev[0], ActionRejected)


def test_report_only_near_a_body_and_starts_meeting() -> None:
    e = make()
    (k, _), crew = roles(e)
    e.kill(k, crew[0], 60, ORIGIN, near(ORIGIN))
    body = e.bodies[crew[0]].pos
    ev = e.report(crew[1], crew[0], 70, near(body, 2.5))
    assert isinstance(ev[0], ActionRejected) and "too far" in ev[0].reason
    assert isinstance(e.report(crew[1], crew[2], 70, body)[0], ActionRejected)
    ev = e.report(crew[1], crew[0], 70, near(body, 1.5))
    assert kinds(ev) == [Report, MeetingStart]
    assert e.phase == "meeting" and e.bodies[crew[0]].cleared
    # no second report, no kill during a meeting
    assert isinstance(e.report(crew[2], crew[0], 71, body)[0], ActionRejected)
    assert isinstance(e.kill(k, crew[3], 500, ORIGIN, near(ORIGIN))[0], ActionRejected)


def test_emergency_lockouts_and_budget() -> None:
    e = make()
    _, crew = roles(e)
    c = crew[0]
    ev = e.emergency(c, 100, BUTTON)
    assert isinstance(ev[0], ActionRejected) and "locked" in ev[0].reason
    assert "far" in e.emergency(c, 250, near(BUTTON, 5))[0].reason  # type: ignore[attr-defined]
    ev = e.emergency(c, 250, BUTTON)
    assert kinds(ev) == [Emergency, MeetingStart]
    while (speaker := e.advance()) is not None:
        e.speak(speaker, "", 260)
    e.cast_votes({}, 300)
    assert "locked" in e.emergency(crew[1], 350, BUTTON)[0].reason  # type: ignore[attr-defined]
    assert "left" in e.emergency(c, 450, BUTTON)[0].reason  # type: ignore[attr-defined]
    assert isinstance(e.emergency(crew[1], 450, BUTTON)[0], Emergency)


def _start_meeting(e: Engine, tick: int = 250) -> list[str]:
    _, crew = roles(e)
    caller = next(c for c in crew if e.players[c].emergencies == 0 and e.players[c].alive)
    e.emergency(caller, tick, BUTTON)
    assert e.meeting is not None
    return e.meeting.order


def test_meeting_turns_and_utterance_limit() -> None:
    e = make()
    order = _start_meeting(e)
    spoken: dict[str, int] = {}
    turns = 0
    while (speaker := e.advance()) is not None:
        turns += 1
        ev = e.speak(speaker, f"hello {turns}", 260 + turns)
        assert isinstance(ev[0], Speech)
        spoken[speaker] = spoken.get(speaker, 0) + 1
    assert spoken == dict.fromkeys(order, 3)
    assert turns == 3 * len(order) and e.phase == "voting"


def test_meeting_out_of_turn_and_silent_round_and_time_limit() -> None:
    e = make()
    order = _start_meeting(e)
    first = e.current_speaker()
    assert first == order[0] and e.current_speaker() == first  # pure: asking twice changes nothing
    assert isinstance(e.speak(order[1], "me first", 251)[0], ActionRejected)
    for agent in order:  # a whole round of passes ends the talk
        assert e.current_speaker() == agent
        assert e.speak(agent, "", 252)[0].passed  # type: ignore[attr-defined]
    assert e.current_speaker() is None and e.phase == "meeting"
    assert e.advance() is None and e.phase == "voting"
    e2 = make(meeting_max_ticks=10)
    _start_meeting(e2)
    s = e2.advance()
    assert s is not None
    e2.speak(s, "long speech", 300)
    assert e2.advance() is None


def test_failed_turn_is_not_a_pass() -> None:
    e = make()
    order = _start_meeting(e)
    ev = e.speak(order[0], "", 260, failed=True, error_kind="model", error="timeout")
    sp = ev[0]
    assert isinstance(sp, Speech) and sp.failed and not sp.passed and sp.error_kind == "model"
    assert e.current_speaker() == order[1] and e.meeting is not None
    assert e.meeting.utterances[order[0]] == 0


def test_votes_plurality_tie_skip() -> None:
    e = make()
    imps, crew = roles(e)
    order = _start_meeting(e)
    ballots = {a: imps[0] for a in order[:5]} | {a: SKIP for a in order[5:]}
    ev = e.cast_votes(ballots, 300)
    end = next(x for x in ev if isinstance(x, MeetingEnd))
    assert end.outcome == "ejected" and end.ejected == imps[0]
    assert any(isinstance(x, Eject) and x.role == "impostor" for x in ev)
    assert e.players[imps[0]].status == "ejected" and e.phase == "free_roam"

    e = make()
    imps, crew = roles(e)
    order = _start_meeting(e)
    ev = e.cast_votes({order[0]: crew[1], order[1]: crew[2], order[2]: SKIP}, 300)
    assert next(x for x in ev if isinstance(x, MeetingEnd)).outcome == "tie"
    assert all(p.alive for p in e.players.values())

    e = make()
    order = _start_meeting(e)
    ev = e.cast_votes({a: SKIP for a in order} | {order[0]: order[1]}, 300)
    assert next(x for x in ev if isinstance(x, MeetingEnd)).outcome == "skipped"

    e = make()
    order = _start_meeting(e)
    ev = e.cast_votes({order[0]: "nobody"}, 300)
    vote = ev[0]
    assert isinstance(vote, Vote) and vote.target is None and vote.failed
    assert vote.error_kind == "rules"
    end = next(x for x in ev if isinstance(x, MeetingEnd))
    assert end.outcome == "no_votes" and order[0] in end.abstained


def test_failed_ballots_are_abstentions_never_skips() -> None:
    e = make()
    imps, crew = roles(e)
    order = _start_meeting(e)
    # two votes for an impostor, one skip, three failed ballots: the old fallback
    # turned the failures into skips and the skip won
    voters = [a for a in order]
    ballots: dict[str, str | Ballot | None] = {voters[0]: imps[0], voters[1]: imps[0]}
    ballots[voters[2]] = SKIP
    for v in voters[3:6]:
        ballots[v] = Ballot(None, failed=True, error_kind="infrastructure", error="429")
    ballots[voters[6]] = None  # a deliberate abstention
    ev = e.cast_votes(ballots, 300)
    end = next(x for x in ev if isinstance(x, MeetingEnd))
    assert end.tally == {imps[0]: 2, SKIP: 1}
    assert end.outcome == "ejected" and end.ejected == imps[0]
    failed = [x for x in ev if isinstance(x, Vote) and x.failed]
    assert len(failed) == 3 and all(x.target is None for x in failed)
    assert set(end.abstained) == set(voters[3:])


def test_ending_impostors_outnumber() -> None:
    e = make(kill_cooldown_ticks=0, initial_kill_cooldown_ticks=0)
    (k, _), crew = roles(e)
    for i, v in enumerate(crew[:3]):
        e.kill(k, v, 10 + i, ORIGIN, near(ORIGIN))
        assert e.check_end() is None
    e.kill(k, crew[3], 20, ORIGIN, near(ORIGIN))
    end = e.check_end()
    assert end is not None and end.winner == "impostors" and end.ending == "impostors_outnumber"
    assert e.end_event().winner == "impostors"


def test_ending_impostors_ejected() -> None:
    e = make()
    imps, _ = roles(e)
    for imp in imps:
        order = _start_meeting(e, tick=e.emergency_unlock_tick())
        e.cast_votes(dict.fromkeys(order, imp), e.tick + 1)
        if imp != imps[-1]:
            assert e.check_end() is None
    end = e.check_end()
    assert end is not None and end.winner == "crew" and end.ending == "impostors_ejected"


def test_ending_tasks_done_counts_living_crew() -> None:
    e = make()
    (k, _), crew = roles(e)
    e.kill(k, crew[0], 60, ORIGIN, near(ORIGIN))  # the dead crewmate's tasks do not block
    for c in crew[1:]:
        for s in e.players[c].tasks:
            assert e.check_end() is None
            do_task(e, c, s, 100, 130)
    end = e.check_end()
    assert end is not None and end.winner == "crew" and end.ending == "tasks_done"


@pytest.mark.parametrize("winner", ["impostors", "crew"])
def test_ending_timeout_winner_configurable(winner: str) -> None:
    e = make(max_steps=3, timeout_winner=winner)
    for _ in range(3):
        assert e.check_end() is None
        e.begin_step()
    end = e.check_end()
    assert end is not None and end.ending == "timeout" and end.winner == winner
