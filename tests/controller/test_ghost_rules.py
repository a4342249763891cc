"""Ghost tasks (`rules.ghost_tasks`): crewmates out of play go on with their tasks, and
nothing else; the `tasks_done` ending then needs every crewmate's tasks."""

from __future__ import annotations

from controller.config import RulesConfig
from controller.engine import SKIP, Engine
from controller.events import (
    ActionRejected,
    EventBase,
    Kill,
    MeetingEnd,
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
NEAR = (101.0, 65.0, 100.0)
TASK = 20


def make(**rules: object) -> Engine:
    base: dict[str, object] = dict(
        kill_cooldown_ticks=0,
        initial_kill_cooldown_ticks=0,
        task_ticks=TASK,
        tasks_per_crewmate=2,
        emergency_initial_lockout_ticks=0,
        emergency_lockout_after_meeting_ticks=0,
        emergency_per_player=3,
        meeting_max_ticks=1000,
        max_steps=50,
        ghost_tasks=True,
    )
    base.update(rules)
    return Engine(
        RulesConfig.model_validate(base),
        AGENTS,
        seed=7,
        stations=STATIONS,
        button=BUTTON,
        room_at=lambda p: "hall",
    )


def cast(e: Engine) -> tuple[str, list[str]]:
    imps = e.impostors()
    return imps[0], [a for a in AGENTS if a not in imps]


def task(e: Engine, agent: str, station: int, start: int) -> list[EventBase]:
    """Stand at a station for the task time and claim it."""
    pos = STATIONS[station]
    return [
        *e.start_task(agent, station, start, pos),
        *e.finish_task(agent, station, start + TASK, pos),
    ]


def all_tasks(e: Engine, agent: str, start: int) -> int:
    """Every task of `agent`, one after another from `start`; returns the next free tick."""
    for s in list(e.players[agent].tasks):
        assert isinstance(task(e, agent, s, start)[-1], TaskDone)
        start += TASK + 1
    return start


def test_a_ghosts_task_completes_and_counts() -> None:
    e = make()
    k, crew = cast(e)
    ghost = crew[0]
    assert e.ghosts == [] and e.actors == e.agents
    e.kill(k, ghost, 5, ORIGIN, NEAR)
    assert e.ghosts == [ghost] and ghost not in e.agents
    assert e.actors == [a for a in AGENTS if a in e.agents or a == ghost]
    before = e.task_progress().done
    s = e.players[ghost].tasks[0]
    events = task(e, ghost, s, 10)
    assert [type(ev) for ev in events] == [TaskStart, TaskDone]
    assert e.players[ghost].done == [s] and e.task_progress().done == before + 1


def test_the_game_ends_tasks_done_when_the_last_ghost_finishes() -> None:
    e = make()
    k, crew = cast(e)
    ghost = crew[0]
    e.kill(k, ghost, 5, ORIGIN, NEAR)
    tick = 10
    for c in crew[1:]:
        tick = all_tasks(e, c, tick)
    assert e.check_end() is None  # the living are done, the ghost is not
    first, last = e.players[ghost].tasks
    assert isinstance(task(e, ghost, first, tick)[-1], TaskDone) and e.check_end() is None
    task(e, ghost, last, tick + 100)
    end = e.check_end()
    assert end is not None and (end.winner, end.ending, end.tick) == (
        "crew",
        "tasks_done",
        tick + 120,
    )


def test_an_ejected_crewmate_is_a_ghost_and_an_ejected_impostor_is_not() -> None:
    e = make()
    imps, crew = e.impostors(), cast(e)[1]
    e.emergency(crew[1], 5, BUTTON)
    e.close_talk()
    e.cast_votes(dict.fromkeys(e.agents, crew[0]), 6)
    assert e.players[crew[0]].status == "ejected" and e.ghosts == [crew[0]]
    s = e.players[crew[0]].tasks[0]
    assert isinstance(task(e, crew[0], s, 10)[-1], TaskDone)
    e.emergency(crew[1], 40, BUTTON)
    e.close_talk()
    e.cast_votes(dict.fromkeys(e.agents, imps[0]), 41)
    assert e.players[imps[0]].status == "ejected" and e.ghosts == [crew[0]]
    refused = e.start_task(imps[0], 3, 50, STATIONS[3])
    assert isinstance(refused[0], ActionRejected) and refused[0].reason == "player is not alive"


def test_a_ghost_does_nothing_but_tasks() -> None:
    e = make()
    k, crew = cast(e)
    ghost = crew[0]
    e.kill(k, ghost, 5, ORIGIN, NEAR)
    e.kill(k, crew[1], 6, ORIGIN, NEAR)  # a body for the ghost to report

    def reason(events: list[EventBase]) -> str:
        assert len(events) == 1 and isinstance(events[0], ActionRejected)
        return events[0].reason

    assert reason(e.kill(k, ghost, 10, ORIGIN, NEAR)) == "target is not alive"
    assert reason(e.report(ghost, crew[1], 11, NEAR)) == "player is not alive"
    assert reason(e.emergency(ghost, 12, BUTTON)) == "player is not alive"
    assert e.meeting is None and e.phase == "free_roam"
    e.emergency(crew[2], 13, BUTTON)
    assert e.meeting is not None and ghost not in e.meeting.order
    assert reason(e.speak(ghost, "I saw it", 14)) == "not this player's turn"
    seen: list[str] = []
    while (speaker := e.advance()) is not None:
        seen.append(speaker)
        e.speak(speaker, "", e.tick)
    assert ghost not in seen
    ballots: dict[str, str | None] = dict.fromkeys(e.agents, SKIP)
    ballots[crew[2]] = ghost  # a vote for a ghost is a failed ballot
    ballots[ghost] = k  # a ballot from a ghost is refused
    events = e.cast_votes(ballots, 20)
    votes = {ev.voter: ev for ev in events if isinstance(ev, Vote)}
    assert ghost not in votes
    assert votes[crew[2]].failed and votes[crew[2]].target is None
    rejected = [ev for ev in events if isinstance(ev, ActionRejected)]
    assert [(r.agent, r.action) for r in rejected] == [(ghost, "vote")]
    end = next(ev for ev in events if isinstance(ev, MeetingEnd))
    assert k not in end.tally and crew[2] in end.abstained


def test_a_task_in_progress_is_lost_at_death_and_the_ghost_starts_it_again() -> None:
    e = make()
    k, crew = cast(e)
    v = crew[0]
    s = e.players[v].tasks[0]
    e.start_task(v, s, 10, STATIONS[s])
    at = STATIONS[s]
    events = e.kill(k, v, 25, (at[0] + 1.0, at[1], at[2]), at)
    lost = events[0]
    assert isinstance(lost, TaskInterrupted) and lost.reason == "killed"
    assert isinstance(events[1], Kill)
    # the ghost stands at the station again: the task counts from the new start only
    assert isinstance(e.start_task(v, s, 26, STATIONS[s])[0], TaskStart)
    early = e.finish_task(v, s, 26 + TASK - 1, STATIONS[s])
    assert isinstance(early[0], ActionRejected) and "held" in early[0].reason
    assert isinstance(e.finish_task(v, s, 26 + TASK, STATIONS[s])[0], TaskDone)


def test_a_ghost_loses_its_task_when_it_walks_away() -> None:
    e = make()
    k, crew = cast(e)
    v = crew[0]
    e.kill(k, v, 5, ORIGIN, NEAR)
    s = e.players[v].tasks[0]
    e.start_task(v, s, 10, STATIONS[s])
    events = e.check_presence({v: ORIGIN}, 12)
    assert [type(ev) for ev in events] == [TaskInterrupted] and e.task_in_progress(v) is None


def test_impostors_outnumber_counts_only_the_living() -> None:
    e = make()
    k, crew = cast(e)
    for i, v in enumerate(crew[:3]):
        e.kill(k, v, 5 + i, ORIGIN, NEAR)
    assert e.check_end() is None and len(e.ghosts) == 3
    e.kill(k, crew[3], 10, ORIGIN, NEAR)
    end = e.check_end()
    assert end is not None and end.ending == "impostors_outnumber"


def test_without_ghost_tasks_the_dead_do_not_work_and_their_tasks_drop_out() -> None:
    e = make(ghost_tasks=False)
    k, crew = cast(e)
    dead = crew[0]
    e.kill(k, dead, 5, ORIGIN, NEAR)
    assert e.ghosts == [] and e.actors == e.agents
    s = e.players[dead].tasks[0]
    refused = e.start_task(dead, s, 10, STATIONS[s])
    assert isinstance(refused[0], ActionRejected) and refused[0].reason == "player is not alive"
    tick = 10
    for c in crew[1:]:
        tick = all_tasks(e, c, tick)
    end = e.check_end()
    assert end is not None and end.ending == "tasks_done"  # the dead's tasks do not hold it


def test_the_talk_of_a_meeting_has_no_ghost_speaker() -> None:
    e = make(talk="turns")
    k, crew = cast(e)
    e.kill(k, crew[0], 5, ORIGIN, NEAR)
    e.emergency(crew[1], 6, BUTTON)
    speakers = []
    while (speaker := e.advance()) is not None:
        speakers.append(speaker)
        assert isinstance(e.speak(speaker, "", e.tick)[0], Speech)
    assert crew[0] not in speakers and len(speakers) == 3 * 7
