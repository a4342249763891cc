"""`log_violations` can fail: a good fake-world log is clean, and one planted fault of
each kind is caught with a message naming its step."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.checks import log_violations as reexported
from controller.events import (
    Decision,
    Emergency,
    Event,
    GameEnd,
    GameStart,
    Kill,
    MeetingEnd,
    MeetingStart,
    ProgramRun,
    Speech,
    StepStart,
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Trace,
    Vote,
)
from controller.logcheck import CANCEL_SLACK_TICKS, derive_ending, log_violations
from testkit.games import GameStore
from testkit.logs import sides_of

RICH_SEED = 78
"""A quick fake-world game (frames off) that shows every rule path the planted faults
need: kills (one after a meeting), report and emergency meetings, an ejection, talk,
votes, tasks and a `tasks_done` ending (`is_rich`). Should a change to the game make it
poor, `testkit.games.first_seed(store, is_rich, range(1, 100))` names another."""
NEEDED = {"kill", "report", "emergency", "eject", "task_done", "vote", "speech"}


def is_rich(events: list[Event]) -> bool:
    kinds = {e.kind for e in events}
    first_end = next((e.tick for e in events if e.kind == "meeting_end"), None)
    late_kill = first_end is not None and any(
        e.kind == "kill" and e.tick > first_end for e in events
    )
    crew_by_tasks = any(e.kind == "game_end" and e.ending == "tasks_done" for e in events)
    return kinds >= NEEDED and late_kill and crew_by_tasks


@pytest.fixture(scope="module")
def good(fake_games: GameStore) -> list[Event]:
    events = fake_games.events(seed=RICH_SEED, frames="off")
    assert is_rich(events), f"seed {RICH_SEED} no longer plays every rule path; pin another"
    return events


def edit(
    log: list[Event], pick: Callable[[Event], bool], n: int = 0, **update: Any
) -> tuple[list[Event], Event]:
    """A copy of the log with the `n`th event matching `pick` updated; and that event."""
    hits = [i for i, e in enumerate(log) if pick(e)]
    i = hits[n]
    planted = log[i].model_copy(update=update)
    return [*log[:i], planted, *log[i + 1 :]], planted


def insert(
    events: list[Event], after: Callable[[Event], bool], new: Event, n: int = 0
) -> list[Event]:
    i = [i for i, e in enumerate(events) if after(e)][n]
    return [*events[: i + 1], new, *events[i + 1 :]]


def caught(events: list[Event], step: int, *words: str) -> list[str]:
    """The violations naming `step` and containing every word; asserts there is one."""
    found = log_violations(events)
    hits = [v for v in found if v.startswith(f"step {step}:") and all(w in v for w in words)]
    assert hits, f"not caught: step {step} {words}; got {found}"
    return hits


def _this(event: Event) -> Callable[[Event], bool]:
    """Picks `event` itself."""
    return lambda e: e is event


def kind(k: type) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, k)


def start_of(events: list[Event]) -> GameStart:
    s = events[0]
    assert isinstance(s, GameStart)
    return s


def task_start_of(events: list[Event], t: TaskDone) -> TaskStart:
    """The `task_start` the completed task `t` was held from (the last one before it)."""
    i = events.index(t)
    st = next(
        e
        for e in reversed(events[:i])
        if isinstance(e, TaskStart) and e.agent == t.agent and e.station == t.station
    )
    assert st.tick == t.start_tick, (st, t)
    return st


def as_v1_tasks(events: list[Event]) -> list[Event]:
    """The log as the v1 loop wrote tasks: no task_start/interrupted, no start_tick."""
    return [
        e.model_copy(update={"start_tick": None}) if isinstance(e, TaskDone) else e
        for e in events
        if not isinstance(e, TaskStart | TaskInterrupted)
    ]


def test_good_log_is_clean(good: list[Event]) -> None:
    assert log_violations(good) == []
    assert reexported is log_violations
    kinds = {e.kind for e in good}
    assert {"kill", "report", "emergency", "eject", "task_done", "vote", "speech"} <= kinds
    end = derive_ending(start_of(good), good)
    assert end is not None and (end.winner, end.ending) == ("crew", "tasks_done")


def test_reads_a_path_and_a_v1_log(good: list[Event], tmp_path: Path) -> None:
    # A v1 log: no map_spec, no start_tick, no snapshot causes, no abstentions field.
    # Nor the `kill_ready` events, which later logs added.
    lines = []
    for e in good:
        if e.kind == "kill_ready":
            continue
        d = json.loads(e.model_dump_json())
        d["v"] = 1
        if d["kind"] == "task_done":
            d.pop("start_tick", None)
        for key in (
            "map_spec",
            "map_sha256",
            "source_revision",
            "versions",
            "cause",
            "subject",
            "near",
            "bodies_near",
            "abstained",
            "failed",
            "flags",
            "frame",
            "view_text",
            "sample_interval_ticks",
        ):
            d.pop(key, None)
        lines.append(json.dumps(d))
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert log_violations(path) == []


# ---------------------------------------------------------------------- kills
def test_kill_in_cooldown(good: list[Event]) -> None:
    # The first kill after a meeting, moved before the cooldown that meeting's end
    # starts runs out.
    end1 = next(e for e in good if isinstance(e, MeetingEnd))
    late = next(e for e in good if isinstance(e, Kill) and e.tick > end1.tick)
    last_end = [e for e in good if isinstance(e, MeetingEnd) and e.tick < late.tick][-1]
    rules = start_of(good).config["rules"]
    evs, k = edit(good, lambda e: e is late, tick=last_end.tick + rules["kill_cooldown_ticks"] - 1)
    caught(evs, k.step, late.killer, "cooldown")


def test_kill_out_of_range(good: list[Event]) -> None:
    evs, k = edit(good, kind(Kill), 0, distance=3.5)
    caught(evs, k.step, "kill_range")


def test_kill_out_of_range_from_the_strike_positions(good: list[Event]) -> None:
    # The logged distance is fine; the killer's own `reached` event says otherwise.
    k = next(e for e in good if isinstance(e, Kill))
    run = next(
        e for e in good if isinstance(e, ProgramRun) and e.agent == k.killer and e.step == k.step
    )
    moved = [
        {**pe, "pos": [pe["target_pos"][0] + 5, pe["target_pos"][1], pe["target_pos"][2]]}
        if pe.get("kind") == "reached"
        else pe
        for pe in run.events
    ]
    assert moved != run.events
    evs, _ = edit(good, lambda e: e is run, events=moved)
    caught(evs, k.step, k.killer, "kill_range")


def test_kill_of_a_dead_player_and_by_a_crewmate(good: list[Event]) -> None:
    k = next(e for e in good if isinstance(e, Kill))
    crew = next(a for a, r in start_of(good).roles.items() if r == "crewmate" and a != k.victim)
    evs, _ = edit(good, kind(Kill), 1, victim=k.victim)
    caught(evs, next(e for e in good if isinstance(e, Kill) and e is not k).step, "already dead")
    evs, k2 = edit(good, kind(Kill), 0, killer=crew)
    caught(evs, k2.step, "not an impostor")


def test_dead_player_acting(good: list[Event]) -> None:
    k = next(e for e in good if isinstance(e, Kill))
    later = next(e for e in good if isinstance(e, Decision) and e.step > k.step + 1)
    ghost = later.model_copy(update={"agent": k.victim})
    evs = insert(good, lambda e: e is later, ghost)
    caught(evs, later.step, k.victim, "is dead but acts")


def test_victim_program_running_past_the_kill_in_a_v2_log(good: list[Event]) -> None:
    # Logs of the v2 loop (they carry `trace`) must stop a victim's program at the kill.
    k = next(e for e in good if isinstance(e, Kill))
    trace = Trace(step=0, tick=0, interval=10, ticks=[], players={})
    victim_run = ProgramRun(
        step=k.step,
        tick=k.tick + 50,
        agent=k.victim,
        status="ok",
        start_tick=k.tick - 10,
        end_tick=k.tick + 50,
    )
    evs = insert([good[0], trace, *good[1:]], lambda e: e is k, victim_run)
    caught(evs, k.step, k.victim, "program ran to")
    # Stopped at the kill (and logged after it, when the batch ended): fine.
    stopped = victim_run.model_copy(update={"status": "cancelled", "end_tick": k.tick})
    evs = insert([good[0], trace, *good[1:]], lambda e: e is k, stopped)
    assert [v for v in log_violations(evs) if k.victim in v] == []
    # The real server stamps whole ticks: two ticks late is the directive's round trip...
    late = stopped.model_copy(update={"end_tick": k.tick + CANCEL_SLACK_TICKS})
    evs = insert([good[0], trace, *good[1:]], lambda e: e is k, late)
    assert [v for v in log_violations(evs) if k.victim in v] == []
    # ...more is a program that went on.
    later = stopped.model_copy(update={"end_tick": k.tick + CANCEL_SLACK_TICKS + 1})
    caught(insert([good[0], trace, *good[1:]], lambda e: e is k, later), k.step, k.victim, "ran to")


def test_unknown_rules_are_ignored(good: list[Event]) -> None:
    start = start_of(good)
    rules = {**start.config["rules"], "some_future_rule": 1.5}
    evs, _ = edit(good, kind(GameStart), config={**start.config, "rules": rules})
    assert log_violations(evs) == []


# ---------------------------------------------------------------------- votes
def test_wrong_tally(good: list[Event]) -> None:
    evs, m = edit(good, kind(MeetingEnd), 1, tally={"green": 2, "skip": 3})
    caught(evs, m.step, "tally")


def test_wrong_ejection_on_a_tie(good: list[Event]) -> None:
    # The meeting that ejected someone: ballots for the ejected player move to skip
    # (one abstains when the gap is odd) until the two tie, which must eject no one; the
    # tally is made to match the ballots, but the log still says the player was ejected.
    end = next(e for e in good if isinstance(e, MeetingEnd) and e.ejected is not None)
    assert end.ejected is not None
    evs = list(good)

    def tally() -> dict[str, int]:
        out: dict[str, int] = {}
        for v in evs:
            if isinstance(v, Vote) and v.step == end.step and v.target is not None:
                out[v.target] = out.get(v.target, 0) + 1
        return out

    while (gap := tally()[end.ejected] - tally().get("skip", 0)) > 0:
        ballot = next(
            v for v in evs if isinstance(v, Vote) and v.step == end.step and v.target == end.ejected
        )
        evs, _ = edit(evs, _this(ballot), target=None if gap == 1 else "skip")
    assert tally()[end.ejected] == tally()["skip"]
    abstained = [
        v.voter for v in evs if isinstance(v, Vote) and v.step == end.step and not v.target
    ]
    evs, _ = edit(evs, lambda e: e is end, tally=tally(), abstained=abstained)
    found = caught(evs, end.step, "ejected", "tie ejecting None")
    assert not [v for v in log_violations(evs) if "tally" in v or "abstained" in v], found


def test_vote_counted_from_an_abstention(good: list[Event]) -> None:
    # One ballot for the ejected player becomes an abstention (or a failed ballot);
    # the log's tally still counts it.
    end = next(e for e in good if isinstance(e, MeetingEnd) and e.ejected is not None)
    assert end.ejected is not None
    ballot = next(
        e for e in good if isinstance(e, Vote) and e.step == end.step and e.target == end.ejected
    )
    fewer = f"'{end.ejected}': {end.tally[end.ejected] - 1}"
    evs, _ = edit(good, lambda e: e is ballot, target=None)
    caught(evs, end.step, "tally", fewer)
    evs, _ = edit(good, lambda e: e is ballot, failed=True, error_kind="model", error="timeout")
    caught(evs, end.step, "tally", fewer)


def test_ejection_without_a_vote_and_voting_for_the_dead(good: list[Event]) -> None:
    k = next(e for e in good if isinstance(e, Kill))
    end = [e for e in good if isinstance(e, MeetingEnd)][0]
    evs, v = edit(good, lambda e: isinstance(e, Vote) and e.step == end.step, 0, target=k.victim)
    caught(evs, v.step, "not a living player")


# ---------------------------------------------------------------------- tasks
def test_task_at_an_unassigned_station(good: list[Event]) -> None:
    t = next(e for e in good if isinstance(e, TaskDone) and not e.fake)
    mine = start_of(good).tasks[t.agent]
    other = next(s for s in range(40) if s not in mine)
    evs, _ = edit(good, lambda e: e is t, station=other)
    caught(evs, t.step, t.agent, f"station {other}", "not one of its tasks")


def test_task_done_too_early(good: list[Event]) -> None:
    # The task's start moved to 10 ticks before its completion: in the task_start
    # event and the task_done's start_tick alike.
    t = next(e for e in good if isinstance(e, TaskDone) and not e.fake)
    st = task_start_of(good, t)
    evs, _ = edit(good, lambda e: e is t, start_tick=t.tick - 10)
    evs, _ = edit(evs, lambda e: e is st, tick=t.tick - 10)
    found = caught(evs, t.step, "after 10 ticks")
    assert not [v for v in log_violations(evs) if "task_start is at" in v], found
    # Only start_tick moved: the two disagree (the task_start is the evidence).
    evs, _ = edit(good, lambda e: e is t, start_tick=t.tick - 10)
    caught(
        evs, t.step, t.agent, f"started at tick {t.tick - 10}", f"task_start is at tick {st.tick}"
    )
    # A log without task_start events: start_tick alone.
    evs, _ = edit(
        as_v1_tasks(good),
        lambda e: isinstance(e, TaskDone) and e.tick == t.tick and e.agent == t.agent,
        start_tick=t.tick - 10,
    )
    caught(evs, t.step, "after 10 ticks")


def test_task_too_early_by_program_marks_in_a_v1_log(good: list[Event]) -> None:
    # No task_start events, no start_tick: the start comes from the player's
    # `task_start` program mark.
    v1 = as_v1_tasks(good)
    assert log_violations(v1) == []

    def tag(t: TaskDone) -> str:
        return f"task_start:{t.station}"

    t, run = next(
        (t, r)
        for t in v1
        if isinstance(t, TaskDone) and not t.fake
        for r in v1
        if isinstance(r, ProgramRun)
        and r.agent == t.agent
        and r.step == t.step
        and any(pe.get("tag") == tag(t) for pe in r.events)
    )
    marks = [{**pe, "tick": t.tick - 5} if pe.get("tag") == tag(t) else pe for pe in run.events]
    evs, _ = edit(v1, lambda e: e is run, events=marks)
    caught(evs, t.step, "after 5 ticks")


def test_task_across_a_meeting_and_away_from_the_station(good: list[Event]) -> None:
    # The first task done after a meeting claims (in its task_start and start_tick)
    # to have started the tick before the meeting was called.
    m = next(e for e in good if isinstance(e, MeetingStart))
    t = next(e for e in good if isinstance(e, TaskDone) and not e.fake and e.tick > m.tick)
    st = task_start_of(good, t)
    evs, _ = edit(good, lambda e: e is t, start_tick=m.tick - 1)
    evs, _ = edit(evs, lambda e: e is st, tick=m.tick - 1)
    caught(evs, t.step, "spans the meeting")
    # A trace sample between its start and completion finds the player away.
    far = Trace(
        step=t.step,
        tick=t.tick,
        interval=10,
        ticks=[(st.tick + t.tick) // 2],
        players={t.agent: [(0.0, 65.0, 0.0, 0.0)]},
    )
    evs = insert(good, lambda e: e is t, far)
    caught(evs, t.step, t.agent, f"station {t.station}", "blocks from it")


def test_samples_of_a_later_step_at_the_completion_tick_are_not_the_tasks(
    good: list[Event],
) -> None:
    # A meeting may take no ticks: the step after it samples the seats at the tick
    # the step before it ended, maybe the tick a task was completed. Not the task's.
    t = next(e for e in good if isinstance(e, TaskDone) and not e.fake)
    seats = Trace(
        step=t.step + 1,
        tick=t.tick,
        interval=10,
        ticks=[t.tick],
        players={t.agent: [(0.0, 65.0, 0.0, 0.0)]},
    )
    evs = insert(good, lambda e: isinstance(e, StepStart) and e.step == t.step + 1, seats)
    # (The planted sample is off the seat the last snapshot left, which the batch-start
    # check reports; what matters here is that no task finding is made of it.)
    assert [v for v in log_violations(evs) if "station" in v] == []
    # The same sample in the task's own step finds the player away.
    evs, _ = edit(evs, lambda e: e is seats, step=t.step)
    caught(evs, t.step, t.agent, f"station {t.station}", "blocks from it")


def test_task_start_events_are_required_once_the_log_has_them(good: list[Event]) -> None:
    # The task's own task_start is missing, or names another station.
    t = next(e for e in good if isinstance(e, TaskDone) and not e.fake)
    st = task_start_of(good, t)
    evs = [e for e in good if e is not st]
    caught(evs, t.step, t.agent, "no start in the log")
    evs, _ = edit(good, lambda e: e is st, station=t.station + 1)
    caught(evs, t.step, t.agent, "no start in the log")


# ---------------------------------------------------------------------- button
def test_button_during_lockout(good: list[Event]) -> None:
    # Pressed 5 ticks after the meeting before it ended (meetings take no ticks in
    # the fake world, so the order of the log, not the ticks, says which is before).
    i, e = next((i, e) for i, e in enumerate(good) if isinstance(e, Emergency))
    last_end = [m for m in good[:i] if isinstance(m, MeetingEnd)][-1]
    evs, _ = edit(good, lambda x: x is e, tick=last_end.tick + 5)
    caught(evs, e.step, e.caller, "lockout")


def test_button_over_budget(good: list[Event]) -> None:
    i, e = next((i, e) for i, e in enumerate(good) if isinstance(e, Emergency))
    end = next(m for m in good[i:] if isinstance(m, MeetingEnd))
    again = e.model_copy(update={"step": end.step + 1, "tick": end.tick + 1000})
    evs = insert(good, lambda x: x is end, again)
    caught(evs, end.step + 1, e.caller, "budget")


# ---------------------------------------------------------------------- talk
def test_speaker_out_of_turn(good: list[Event]) -> None:
    speeches = [e for e in good if isinstance(e, Speech)]
    a, b = speeches[0], speeches[1]
    evs, _ = edit(good, lambda e: e is a, speaker=b.speaker)
    caught(evs, a.step, b.speaker, "out of turn")


def test_dead_speaker(good: list[Event]) -> None:
    k = next(e for e in good if isinstance(e, Kill))
    s = next(e for e in good if isinstance(e, Speech) and e.tick > k.tick)
    evs, _ = edit(good, lambda e: e is s, speaker=k.victim)
    caught(evs, s.step, k.victim)


def test_too_many_utterances(good: list[Event]) -> None:
    # With max_utterances 1, a second spoken line by the first speaker breaks the rule.
    start = start_of(good)
    rules = {**start.config["rules"], "max_utterances": 1}
    evs, _ = edit(good, kind(GameStart), config={**start.config, "rules": rules})
    m = next(e for e in evs if isinstance(e, MeetingStart))
    first = next(e for e in evs if isinstance(e, Speech) and e.step > m.step)
    extra = first.model_copy(update={"step": first.step, "text": "Again.", "utterance": 2})
    evs = insert(evs, lambda e: e is first, extra)
    caught(evs, first.step, first.speaker, "2 times", "max_utterances is 1")


def test_speech_after_talk_is_over(good: list[Event]) -> None:
    m = next(e for e in good if isinstance(e, MeetingStart))
    votes = [e for e in good if isinstance(e, Vote) and e.step > m.step]
    late = Speech(
        step=votes[0].step, tick=votes[0].tick, speaker=m.order[0], text="One more.", utterance=2
    )
    evs = insert(good, lambda e: e is votes[0], late, 0)
    caught(evs, votes[0].step, "talk was over")


# ---------------------------------------------------------------------- endings
def test_wrong_ending(good: list[Event]) -> None:
    evs, end = edit(good, kind(GameEnd), winner="impostors", ending="impostors_outnumber")
    caught(evs, end.step, "impostors/impostors_outnumber", "tasks_done")


def test_game_continued_after_an_ending(good: list[Event]) -> None:
    # A kill by a living impostor of a living crewmate, the tick after the last task.
    start = start_of(good)
    last_task = [e for e in good if isinstance(e, TaskDone) and not e.fake][-1]
    gone = {e.victim for e in good if isinstance(e, Kill)} | {
        e.agent for e in good if e.kind == "eject"
    }
    killer = next(a for a in start.agents if start.roles[a] == "impostor" and a not in gone)
    living_crew = next(a for a in start.agents if start.roles[a] == "crewmate" and a not in gone)
    k = next(e for e in good if isinstance(e, Kill))
    late = k.model_copy(
        update={
            "step": last_task.step,
            "tick": last_task.tick + 1,
            "killer": killer,
            "victim": living_crew,
        }
    )
    evs = insert(good, lambda e: e is last_task, late)
    caught(evs, last_task.step, "went on", "tasks_done")


def test_win_overturned_within_a_step() -> None:
    """The crew's last task at tick 100 decides the game; a parity kill at tick 110 in
    the same step cannot overturn it (and a log that says so is caught)."""
    rules = {
        "n_players": 3,
        "n_impostors": 1,
        "tasks_per_crewmate": 1,
        "task_ticks": 10,
        "initial_kill_cooldown_ticks": 0,
    }
    start = GameStart(
        step=0,
        tick=0,
        seed=1,
        agents=["red", "blue", "green"],
        roles={"red": "impostor", "blue": "crewmate", "green": "crewmate"},
        tasks={"red": [], "blue": [1], "green": [2]},
        map="skeld",
        preset="quick",
        config={"rules": rules},
        sides=sides_of({"rules": rules}),
    )
    evs: list[Event] = [
        start,
        StepStart(step=1, tick=0, phase="free_roam"),
        TaskDone(
            step=1,
            tick=50,
            agent="green",
            station=2,
            room="x",
            fake=False,
            done=1,
            total=1,
            start_tick=20,
        ),
        TaskDone(
            step=1,
            tick=100,
            agent="blue",
            station=1,
            room="x",
            fake=False,
            done=1,
            total=1,
            start_tick=80,
        ),
        Kill(
            step=1,
            tick=110,
            killer="red",
            victim="blue",
            pos=(0.0, 65.0, 0.0),
            room="x",
            distance=1.0,
        ),
        GameEnd(step=1, tick=110, winner="impostors", ending="impostors_outnumber", status="ok"),
    ]
    found = log_violations(evs)
    assert any(v.startswith("step 1:") and "went on" in v and "kill" in v for v in found), found
    assert any("ends impostors/impostors_outnumber" in v and "tasks_done" in v for v in found), (
        found
    )
    ended = derive_ending(start, evs)
    assert ended is not None and (ended.ending, ended.tick) == ("tasks_done", 100)
    fixed = [*evs[:4], GameEnd(step=1, tick=100, winner="crew", ending="tasks_done", status="ok")]
    assert [v for v in log_violations(fixed) if "station" not in v] == []


def test_missing_game_start_and_end(good: list[Event]) -> None:
    assert log_violations(good[1:]) == ["no game_start event"]
    assert "no game_end event" in log_violations(good[:-1])
