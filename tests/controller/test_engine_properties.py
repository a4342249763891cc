"""Property tests: random action sequences against the engine's invariants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.config import RulesConfig
from controller.engine import SKIP, Ballot, Ending, Engine
from controller.events import (
    ActionRejected,
    EventBase,
    Kill,
    MeetingEnd,
    MeetingStart,
    Speech,
    TaskDone,
    TaskInterrupted,
    TaskStart,
)

AGENTS = ["red", "blue", "green", "pink", "orange", "yellow"]
STATIONS = {i: (float(i * 10), 65.0, 0.0) for i in range(6)}
BUTTON = (0.0, 65.0, 50.0)
FAR = (500.0, 65.0, 500.0)
RULES = RulesConfig(
    n_players=6,
    n_impostors=2,
    kill_cooldown_ticks=30,
    initial_kill_cooldown_ticks=10,
    task_ticks=20,
    tasks_per_crewmate=2,
    emergency_initial_lockout_ticks=20,
    emergency_lockout_after_meeting_ticks=20,
    meeting_max_ticks=200,
    max_utterances=1,
    max_steps=40,
)


@dataclass(frozen=True)
class Act:
    """One random thing that happens, `dt` ticks after the previous one."""

    kind: str
    a: int
    b: int
    station: int
    dt: int
    near: bool


ACTS = st.lists(
    st.builds(
        Act,
        kind=st.sampled_from(
            ["kill", "start", "finish", "walk", "report", "button", "talk", "vote", "step"]
        ),
        a=st.integers(0, len(AGENTS) - 1),
        b=st.integers(0, len(AGENTS) - 1),
        station=st.integers(0, len(STATIONS) - 1),
        dt=st.integers(0, 25),
        near=st.booleans(),
    ),
    max_size=120,
)


Outcome = tuple[int, list[EventBase], Ending | None]
"""One act's tick, its events, and the engine's ending right after it."""


def drive(seed: int, acts: list[Act]) -> tuple[Engine, list[Outcome]]:
    """Apply the acts in tick order; return the engine and each act's (tick, events)."""
    e = Engine(RULES, AGENTS, seed, STATIONS, BUTTON, room_at=lambda p: "hall")
    tick = 0
    out: list[Outcome] = []
    for act in acts:
        tick += act.dt
        a, b = AGENTS[act.a], AGENTS[act.b]
        here = STATIONS[act.station] if act.near else FAR
        evs: list[EventBase] = []
        if act.kind == "kill":
            evs = e.kill(a, b, tick, (1.0, 65.0, 1.0), (2.0, 65.0, 1.0) if act.near else FAR)
        elif act.kind == "start":
            evs = e.start_task(a, act.station, tick, here)
        elif act.kind == "finish":
            evs = e.finish_task(a, act.station, tick, here)
        elif act.kind == "walk":
            evs = e.check_presence({a: here}, tick)
        elif act.kind == "report":
            body = e.bodies.get(b)
            evs = e.report(a, b, tick, body.pos if body and act.near else FAR)
        elif act.kind == "button":
            evs = e.emergency(a, tick, BUTTON if act.near else FAR)
        elif act.kind == "talk" and e.meeting is not None and e.phase == "meeting":
            speaker = e.advance()
            if speaker is not None:
                evs = e.speak(speaker, "hi" if act.near else "", tick, failed=act.b == 0)
        elif act.kind == "vote" and e.meeting is not None and e.phase != "over":
            e.close_talk()
            ballots: dict[str, str | Ballot | None] = {}
            for i, voter in enumerate(e.meeting.order):
                pick = (act.b + i) % 4
                ballots[voter] = (
                    b
                    if pick == 0
                    else SKIP
                    if pick == 1
                    else None
                    if pick == 2
                    else Ballot(None, True, "model", "x")
                )
            evs = e.cast_votes(ballots, tick)
        elif act.kind == "step":
            e.begin_step()
            e.check_end()
        out.append((tick, evs, e.ending))
        check_state(e)
    return e, out


def check_state(e: Engine) -> None:
    """Invariants that hold between any two actions."""
    assert (e.meeting is not None) == (e.phase in ("meeting", "voting")) or e.phase == "over"
    assert e.body_markers() == {v: b.pos for v, b in e.bodies.items() if not b.cleared}
    for p in e.players.values():
        assert len(set(p.done)) == len(p.done) and set(p.done) <= set(p.tasks)
        if not p.alive:
            assert p.task is None
        if p.task is not None:
            assert e.phase == "free_roam"
    if e.ending is None and e.phase != "over":
        living = [e.players[a] for a in e.agents]
        imps = sum(p.role == "impostor" for p in living)
        assert 0 < imps < len(living) - imps
    assert set(e.known_dead) <= {a for a, p in e.players.items() if not p.alive}


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 50), acts=ACTS)
def test_engine_invariants(seed: int, acts: list[Act]) -> None:
    e, out = drive(seed, acts)
    check_events(e, out)


def check_events(e: Engine, out: list[Outcome]) -> None:
    """Invariants of the event stream an action sequence produced."""
    ending_seen = None
    last_kill: dict[str, int] = {}
    meeting_ticks: list[int] = []
    lost: dict[str, int] = {}
    for tick, evs, ending in out:
        for ev in evs:
            # every event carries the tick of the attempt, rejections included
            assert ev.tick == tick
            if ending_seen is not None:
                # the first ending is final: nothing but refusals after it
                assert isinstance(ev, ActionRejected), ev
            if isinstance(ev, Kill):
                if ev.killer in last_kill:
                    assert ev.tick - last_kill[ev.killer] >= RULES.kill_cooldown_ticks
                last_kill[ev.killer] = ev.tick
                assert e.players[ev.killer].role == "impostor"
            elif isinstance(ev, MeetingStart):
                meeting_ticks.append(ev.tick)
            elif isinstance(ev, TaskInterrupted):
                lost[ev.agent] = ev.tick
            elif isinstance(ev, TaskDone):
                start = ev.start_tick
                assert start is not None and ev.tick - start >= RULES.task_ticks
                # no meeting and no loss of progress while the task was held
                assert not any(start <= t <= ev.tick for t in meeting_ticks)
                assert lost.get(ev.agent, -1) <= start
            elif isinstance(ev, Speech):
                assert not (ev.failed and ev.passed)
            elif isinstance(ev, MeetingEnd):
                assert SKIP not in ev.abstained
        # the ending as it stood right after this act (not the engine's final state)
        if ending is not None and ending_seen is None:
            ending_seen = ending
    if ending_seen is not None:
        assert e.ending == ending_seen and e.phase == "over"


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 50), acts=ACTS)
def test_engine_is_deterministic(seed: int, acts: list[Act]) -> None:
    _, a = drive(seed, acts)
    _, b = drive(seed, acts)
    assert a == b


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 50), acts=ACTS)
def test_current_speaker_is_pure(seed: int, acts: list[Act]) -> None:
    e, _ = drive(seed, acts)
    if e.meeting is None:
        return
    m = e.meeting
    before = (m.turn, m.spoke_this_round, m.round_checked, e.phase)
    first = e.current_speaker()
    assert e.current_speaker() == first
    assert (m.turn, m.spoke_this_round, m.round_checked, e.phase) == before
    assert e.advance() == first


def test_task_start_events_only_for_real_starts() -> None:
    e = Engine(RULES, AGENTS, 1, STATIONS, BUTTON, room_at=lambda p: "hall")
    crew = next(a for a in AGENTS if e.players[a].role == "crewmate")
    s = e.players[crew].tasks[0]
    assert [type(x) for x in e.start_task(crew, s, 0, STATIONS[s])] == [TaskStart]
    assert e.start_task(crew, s, 5, STATIONS[s]) == []  # resuming: no new start


def test_the_invariants_catch_free_task_credit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plant bug 2 (a meeting keeps task progress) and see the invariants fail."""
    real = Engine._interrupt

    def keep_on_meeting(self: Engine, agent: str, reason: Any, tick: int) -> list[EventBase]:
        return [] if reason == "meeting" else real(self, agent, reason, tick)

    probe = Engine(RULES, AGENTS, 3, STATIONS, BUTTON, room_at=lambda p: "hall")
    crew = next(a for a in AGENTS if probe.players[a].role == "crewmate")
    c, s = AGENTS.index(crew), probe.players[crew].tasks[0]
    other = next(i for i, a in enumerate(AGENTS) if a != crew)
    acts = [
        Act("start", c, 0, s, 0, True),
        Act("button", other, 0, 0, 25, True),
        Act("vote", 0, 1, 0, 1, True),
        Act("finish", c, 0, s, 25, True),
    ]
    e, out = drive(3, acts)
    check_events(e, out)  # the real engine passes
    monkeypatch.setattr(Engine, "_interrupt", keep_on_meeting)
    with pytest.raises(AssertionError):
        e, out = drive(3, acts)
        check_events(e, out)
