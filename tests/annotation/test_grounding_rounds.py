"""A claim is judged on its own round only, whether or not the clock moved in meetings.

Before talk turns cost game time, a meeting took no ticks: the previous round's
position at the call, the meeting seats and the next round's start all share one tick.
A window chosen by ticks then reaches across the meeting; these games make that reach
change verdicts, so only windows chosen by step and round pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from annotation.grounding.audit import AuditedClaim
from annotation.grounding.claims import Claim
from annotation.grounding.metrics import game_metrics
from annotation.grounding.rules import audit_claims
from annotation.grounding.trajectory import Trajectory, build_trajectory
from testkit.logs import GameBuilder


def two_rounds(talk_ticks: int) -> Trajectory:
    """Round 1 (steps 1-2): blue walks to o2 and stands there with pink and red when
    green presses the button; red sees pink (and blue) in o2 at the call.

    Round 2: blue walks cafeteria -> storage -> electrical; pink kills orange in o2,
    unseen, and stays there; green reports from o2 while blue stands in electrical.
    Round 3: one step on from the seats.
    """
    g = GameBuilder(talk_ticks=talk_ticks)
    g.free_roam(
        {
            "blue": ["cafeteria", "o2"],
            "red": ["o2"],
            "pink": ["weapons"],
            "green": ["admin"],
            "orange": ["admin"],
        }
    )
    g.free_roam({"blue": ["o2"], "pink": ["o2"]}, sees={"red": ["pink", "blue"]}, emergency="green")
    g.talk([("green", "..."), ("blue", "..."), ("red", "...")])
    g.vote({a: "skip" for a in ("red", "blue", "green", "pink", "orange")})
    g.free_roam(
        {
            "blue": ["cafeteria", "storage"],
            "pink": ["cafeteria", "o2"],
            "orange": ["o2"],
            "red": ["medbay"],
            "green": ["admin"],
        },
        kills=[("pink", "orange", 60, {})],
    )
    g.free_roam(
        {"blue": ["storage", "electrical"], "green": ["o2"], "pink": ["o2"]},
        report=("green", "orange"),
    )
    g.talk([("green", "..."), ("blue", "..."), ("red", "...")])
    g.vote({a: "skip" for a in ("red", "blue", "green", "pink")})
    g.free_roam({})
    return build_trajectory(g.end(winner="crew", ending="timeout"))


def audit(t: Trajectory, meeting: int = 2, speaker: str = "blue", **kw: Any) -> AuditedClaim:
    c = Claim(meeting=meeting, speaker=speaker, subject=speaker, utterance=1, **kw)
    (row,) = audit_claims(t, [c])
    return row


CLOCKS = pytest.mark.parametrize("talk_ticks", [0, 100], ids=["clock-still", "clock-moving"])


@CLOCKS
def test_the_shared_tick_is_a_real_hazard_in_the_still_clock(talk_ticks: int) -> None:
    t = two_rounds(talk_ticks)
    m1, m2 = t.meetings
    r2 = t.round_steps(2)
    assert r2[0] == m1.end_step + 1 and r2[-1] == m2.step
    assert t.round_of(m1.step) == 1 and t.round_of(m2.step) == 2
    assert t.round_of(m1.end_step) is None  # the vote is in no round
    if talk_ticks == 0:
        # Round 1's call and round 2's start (and the seats between) share a tick.
        assert t.steps[m1.step].end_tick == t.steps[r2[0]].start_tick
    else:
        assert t.steps[m1.step].end_tick < t.steps[r2[0]].start_tick


@CLOCKS
def test_a_location_claim_is_judged_on_its_own_round_only(talk_ticks: int) -> None:
    t = two_rounds(talk_ticks)
    # Blue stood in o2 at the first call: true for round 1, never for round 2.
    assert audit(t, meeting=1, type="location", room="o2").verdict == "true"
    row = audit(t, type="location", room="o2")
    assert row.verdict == "false", row.reason
    assert "o2" not in row.evidence["rooms"]
    row = audit(t, type="location", room="o2", temporal="at the start")
    assert row.verdict == "false", row.reason
    # The round begins on the seats (documented), but ends where blue called from:
    # meeting 2's seats are no part of round 2.
    assert audit(t, type="location", room="cafeteria", temporal="at the start").verdict == "true"
    row = audit(t, type="location", room="cafeteria", temporal="at the end")
    assert row.verdict == "false", row.reason
    assert audit(t, type="location", room="electrical", temporal="at the end").verdict == "true"
    # Round 2's own rooms; meeting 1 never sees round 2.
    assert audit(t, type="location", room="storage").verdict == "true"
    assert audit(t, meeting=1, type="location", room="storage").verdict == "false"
    # Every sample the audit used was logged in a step of round 2.
    for room in ("o2", "storage", "cafeteria"):
        row = audit(t, type="location", room=room)
        assert {t.round_of(n) for n in row.evidence["sample_steps"]} == {2}


@CLOCKS
def test_a_rounds_rooms_and_dwell_hold_only_its_own_steps(talk_ticks: int) -> None:
    t = two_rounds(talk_ticks)
    first = t.round_steps(2)[0]
    assert t.players["blue"][first].rooms == ["cafeteria", "storage"]
    assert sum(t.players["blue"][first].room_ticks.values()) == 100
    samples = t.samples_in("blue", first, t.meetings[1].step)
    assert {t.round_of(s.step) for s in samples} == {2}
    assert {t.round_of(s.step) for s in t.samples_in("blue", 1, t.meetings[1].step)} == {1, 2}
    # The last previous-round pose is never where a round's first step begins.
    assert t.room_at("blue", t.steps[first].start_tick, first) == "cafeteria"


@CLOCKS
def test_a_tick_phrase_stays_in_one_round(talk_ticks: int) -> None:
    t = two_rounds(talk_ticks)
    call = t.meetings[0].tick
    # Named from meeting 2, the first call's tick is round 2's start when the clock
    # stood still (the claim's own round wins), else round 1's call.
    row = audit(t, type="location", room="o2", temporal=f"at tick {call}")
    steps = set(range(row.window[0], row.window[1] + 1)) if row.window else set()
    rounds = {t.round_of(n) for n in steps} - {None}
    assert len(rounds) == 1
    assert row.verdict == ("false" if talk_ticks == 0 else "true")
    # A tick well inside round 1 is judged on round 1, even from meeting 2.
    row = audit(t, type="location", room="o2", temporal=f"around tick {call - 15}")
    assert row.verdict == "true" and row.window == [2, 2]


@CLOCKS
def test_sight_of_the_previous_round_grounds_no_accusation(talk_ticks: int) -> None:
    t = two_rounds(talk_ticks)
    # Red saw pink in o2 at the first call; pink killed in o2 in round 2. That sight
    # belongs to round 1, so it is no sight at the kill site.
    row = audit(t, speaker="red", type="accusation", target="pink")
    assert row.hit is True
    assert row.grounded is False, row.evidence


@CLOCKS
def test_travel_and_wait_in_another_room_are_wrong_room(talk_ticks: int) -> None:
    t = two_rounds(talk_ticks)
    row = audit(t, type="activity", activity="walking", room="o2")
    assert row.verdict == "wrong_room", row.reason
    assert "never entered o2" in row.reason
    assert audit(t, type="activity", activity="passing through", room="storage").verdict == "true"
    row = audit(t, type="activity", activity="waited", room="o2")
    assert row.verdict == "wrong_room" and "stayed in storage" in row.reason
    # Pink stood still in o2 from the kill to the call: travel elsewhere is not what
    # it did, and it never left for the claimed room either.
    row = audit(t, speaker="pink", type="activity", activity="travel", room="admin")
    assert row.verdict == "wrong_room"  # it walked cafeteria -> o2 earlier in the round
    row = audit(
        t, speaker="pink", type="activity", activity="travel", room="admin", temporal="at the end"
    )
    assert row.verdict == "false" and "never in admin" in row.reason


@CLOCKS
def test_post_kill_displacement_never_counts_the_seats(talk_ticks: int) -> None:
    t = two_rounds(talk_ticks)
    rows = {(r.metric, r.role): (r.numerator, r.denominator) for r in game_metrics(t, []).rows}
    # Pink stayed in o2 from the kill to the call; meeting 2's seats are not a room it
    # went to.
    assert rows[("post_kill_displacement", "impostor")] == (0, 1)
