"""Explicit tick bounds narrow a claim's window, and corridor walks verify travel claims
by their destination, in both rule books.

Every checker below is run on a game where the whole round would give another verdict
than the stated span, and again with its rule planted out (the bound ignored, a lower
bound read as an instant, the destination ignored or read from the next round), where it
must fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import annotation.grounding.audit as audit_mod
import annotation.grounding.claims as claims_mod
import annotation.grounding.quack_rules as quack_mod
from annotation.grounding.audit import AuditedClaim, ProjectAuditor, Window
from annotation.grounding.claims import BoundKind, Claim, TickBounds, tick_bounds
from annotation.grounding.quack_rules import QuackState
from annotation.grounding.rules import audit_claims
from annotation.grounding.trajectory import NOT_ROOMS, Trajectory, build_trajectory
from testkit.logs import CORRIDOR, GameBuilder

BOOKS = ("mineamongus", "quack")
SKIP_ALL = {a: "skip" for a in ("red", "blue", "green", "pink", "orange")}


def claim(**kw: Any) -> Claim:
    base: dict[str, Any] = {"meeting": 1, "speaker": "red", "utterance": 1, "subject": "red"}
    base.update(kw)
    return Claim(**base)


def judge(t: Trajectory, rules: str, **kw: Any) -> AuditedClaim:
    (row,) = audit_claims(t, [claim(**kw)], rules=rules)
    assert row.rules == rules
    return row


# --------------------------------------------------------------------- games


def bounds_game() -> Trajectory:
    """Round 1 (steps 1-3, 100 ticks each, poses every 10): red in admin (step 1), medbay
    (step 2, with orange in view), storage (step 3, the call, orange in view again).
    Orange: medbay, medbay, storage. Round 2 (steps 6-7): red in electrical."""
    g = GameBuilder()
    g.free_roam({"red": ["admin"], "orange": ["medbay"]})
    g.free_roam(
        {"red": ["medbay"], "orange": ["medbay"]}, sees={"red": ["orange"], "orange": ["red"]}
    )
    g.free_roam(
        {"red": ["storage"], "orange": ["storage"]},
        sees={"red": ["orange"], "orange": ["red"]},
        emergency="green",
    )
    g.talk([("red", "...")])
    g.vote(SKIP_ALL)
    g.free_roam({"red": ["electrical"]})
    g.free_roam({"red": ["electrical"]}, emergency="green")
    g.talk([("red", "...")])
    return build_trajectory(g.end())


def walk_game() -> Trajectory:
    """Round 1: red leaves admin into a corridor at tick 60 (step 1), walks it until
    tick 150 and enters storage (step 2), stays there (step 3, the call). Round 2: red
    walks from admin into a corridor (step 6) and is still in it at the call (step 7).
    Round 3: red walks into medbay."""
    g = GameBuilder()
    g.free_roam({"red": ["admin", CORRIDOR]})
    g.free_roam({"red": [CORRIDOR, "storage"]})
    g.free_roam({"red": ["storage"]}, emergency="green")
    g.talk([("red", "...")])
    g.vote(SKIP_ALL)
    g.free_roam({"red": ["admin", CORRIDOR]})
    g.free_roam({"red": [CORRIDOR]}, emergency="green")
    g.talk([("red", "...")])
    g.vote(SKIP_ALL)
    g.free_roam({"red": ["medbay"]})
    return build_trajectory(g.end(winner="crew", ending="timeout"))


# --------------------------------------------------------------------- checkers


def check_parser() -> None:
    """The phrases of every form read to their bounds; the rest of the phrase is kept."""
    table: dict[str, tuple[BoundKind, int | None, int | None, str]] = {
        "until tick 12": ("upper", None, 12, ""),
        "by tick 150": ("upper", None, 150, ""),
        "before tick 90": ("upper", None, 90, ""),
        "up to tick 9": ("upper", None, 9, ""),
        "after tick 10": ("lower", 10, None, ""),
        "since tick 10 onwards": ("lower", 10, None, ""),
        "starting at tick 4": ("lower", 4, None, ""),
        "between ticks 8 and 11": ("span", 8, 11, ""),
        "from tick 8 to 11": ("span", 8, 11, ""),
        "from tick 11 until tick 8": ("span", 8, 11, ""),
        "Ticks 8-11": ("span", 8, 11, ""),
        "after tick 8 and before tick 11": ("span", 8, 11, ""),
        "at tick 640": ("point", 640, 640, ""),
        "tick 30": ("point", 30, 30, ""),
        "around tick 1,050": ("around", 1050, 1050, ""),
        "about tick 5": ("around", 5, 5, ""),
        "the whole time until tick 12": ("upper", None, 12, "whole time"),
        "mostly after tick 10": ("lower", 10, None, "mostly"),
    }
    for phrase, (kind, lower, upper, rest) in table.items():
        got = tick_bounds(phrase)
        assert got == TickBounds(kind=kind, lower=lower, upper=upper, rest=rest), (phrase, got)
    for none in (None, "", "this round", "before", "until step 5", "the whole time"):
        assert tick_bounds(none) is None, none


def check_tolerance(rules: str) -> None:
    """An instant is read ± one sample interval (10 ticks here), "around" ± two, a span
    with both ends ± one; a one-sided bound as stated."""
    t = bounds_game()
    want = {
        "at tick 150": [140, 160],
        "around tick 150": [130, 170],
        "between ticks 120 and 170": [110, 180],
        "until tick 90": [0, 90],
        "after tick 110": [110, 300],
    }
    for phrase, ticks in want.items():
        row = judge(t, rules, type="location", room="medbay", temporal=phrase)
        assert row.evidence.get("ticks") == ticks, (rules, phrase, row.reason)


def check_upper_bound(rules: str) -> None:
    """Red was in medbay in the round (step 2), not until tick 90 (admin)."""
    t = bounds_game()
    assert judge(t, rules, type="location", room="medbay").verdict == "true"
    row = judge(t, rules, type="location", room="medbay", temporal="until tick 90")
    assert row.verdict == "false", (rules, row.reason)
    assert row.window == [1, 1] and row.evidence["ticks"] == [0, 90]


def check_lower_bound(rules: str) -> None:
    """Red was in admin in the round (step 1), not after tick 110 (medbay, storage)."""
    t = bounds_game()
    assert judge(t, rules, type="location", room="admin").verdict == "true"
    row = judge(t, rules, type="location", room="admin", temporal="after tick 110")
    assert row.verdict == "false", (rules, row.reason)
    assert row.window is not None and row.window[0] == 2


def check_lower_bound_narrows_only_the_start(rules: str) -> None:
    """After tick 110 red reached storage (step 3, from tick 200): a lower bound sets no
    end, so the claim stays true."""
    t = bounds_game()
    row = judge(t, rules, type="location", room="storage", temporal="since tick 110")
    assert row.verdict == "true", (rules, row.reason)
    assert row.window == [2, 3]


def check_both_bounds(rules: str) -> None:
    """Red was in storage in the round (step 3), not between ticks 120 and 170."""
    t = bounds_game()
    assert judge(t, rules, type="location", room="storage").verdict == "true"
    for phrase in ("between ticks 120 and 170", "from tick 120 to 170", "ticks 120-170"):
        row = judge(t, rules, type="location", room="storage", temporal=phrase)
        assert row.verdict == "false", (rules, phrase, row.reason)
        assert row.window == [2, 2]
    for phrase in ("at tick 150", "around tick 150"):
        assert judge(t, rules, type="location", room="storage", temporal=phrase).verdict == (
            "false"
        ), (rules, phrase)


def check_bounded_sighting(rules: str) -> None:
    """Red saw orange in the round (medbay, storage), never in admin: `wrong_room`; before
    tick 90 red never saw orange at all: `false`."""
    t = bounds_game()
    assert judge(t, rules, type="sighting", target="orange", room="admin").verdict == ("wrong_room")
    row = judge(t, rules, type="sighting", target="orange", room="admin", temporal="before tick 90")
    assert row.verdict == "false", (rules, row.reason)
    assert row.window == [1, 1]


def check_out_of_round(rules: str) -> None:
    """A stated span outside meeting 2's round (steps 6-7, ticks 300-500).

    Default book: the round that holds the ticks ("until tick 90" is judged on round 1,
    where red stood in admin); ticks after the call: unverifiable. QUACK book: bounds
    only narrow, clamped to the round's edge ("until tick 90" is round 2's first
    moment; "after tick 9999" its last before the call, plus the call for a presence).
    """
    t = bounds_game()
    past = judge(t, rules, meeting=2, type="location", room="admin", temporal="until tick 90")
    future = judge(t, rules, meeting=2, type="location", room="admin", temporal="after tick 9999")
    if rules == "mineamongus":
        assert (past.verdict, past.window) == ("true", [1, 1])
        assert future.verdict == "unverifiable" and "9999" in future.reason
    else:
        assert (past.verdict, past.window, past.evidence["ticks"]) == ("false", [6, 6], [300, 300])
        assert future.verdict == "false" and future.evidence["ticks"][0] == 400
    # A lower bound before the round does not widen it.
    row = judge(t, rules, meeting=2, type="location", room="admin", temporal="since tick 20")
    assert row.verdict == "false" and row.window == [6, 7], (rules, row.window)


def check_corridor_destination(rules: str) -> None:
    """Until tick 100 red walked a corridor out of admin; it entered storage at tick 160:
    "walking to storage until tick 100" is true by its destination."""
    t = walk_game()
    row = judge(
        t, rules, type="activity", activity="walking", room="storage", temporal="until tick 100"
    )
    assert row.verdict == "true", (rules, row.reason)
    assert "toward storage" in row.reason


def check_corridor_other_destination(rules: str) -> None:
    """The same walk claimed toward medbay: it went elsewhere (`wrong_room` in both)."""
    t = walk_game()
    row = judge(
        t, rules, type="activity", activity="walking", room="medbay", temporal="until tick 100"
    )
    assert row.verdict == "wrong_room", (rules, row.reason)


def check_destination_stays_in_round(rules: str) -> None:
    """In round 2 red was still in the corridor at the call; it entered medbay only in
    round 3, which is no destination of round 2's walk: the default book finds red moved
    but never in medbay (`wrong_room`), QUACK's book a walk into no room
    (`unverifiable`)."""
    t = walk_game()
    row = judge(t, rules, meeting=2, type="activity", activity="walking", room="medbay")
    want = "wrong_room" if rules == "mineamongus" else "unverifiable"
    assert row.verdict == want, (rules, row.reason)


# --------------------------------------------------------------------- faults


def no_bounds(_temporal: str | None) -> TickBounds | None:
    """A planted fault: the bound ignored (the phrase judged over the round)."""
    return None


def lower_as_instant(temporal: str | None) -> TickBounds | None:
    """A planted fault: a lower bound read as an instant (it would set an end too)."""
    b = tick_bounds(temporal)
    if b is not None and b.kind == "lower":
        return TickBounds(kind="point", lower=b.lower, upper=b.lower, rest=b.rest)
    return b


def plant_bounds(monkeypatch: pytest.MonkeyPatch, fault: Callable[..., Any]) -> None:
    monkeypatch.setattr(audit_mod, "tick_bounds", fault)
    monkeypatch.setattr(quack_mod, "tick_bounds", fault)


def walk_into_next_round(
    self: ProjectAuditor, agent: str, w: Window
) -> tuple[str, int, int] | None:
    """A planted fault: the destination read from any later sample of the game."""
    samples = self._samples(agent, w)
    if not samples or samples[-1].room not in NOT_ROOMS:
        return None
    last = samples[-1]
    # Any later room but the meeting room (the seats are no destination either way).
    later = [
        s
        for s in self.traj.samples.get(agent, [])
        if (s.step, s.tick) > (last.step, last.tick) and s.room not in NOT_ROOMS | {"cafeteria"}
    ]
    return (later[0].room, later[0].step, later[0].tick) if later else None


def walks_into_next_round(states: list[QuackState]) -> list[tuple[str, str]]:
    """A planted fault: a walk the round ended in the corridor given the room red entered
    in the next round (medbay) as its destination."""
    return [(s.origin or s.room, s.dest or "medbay") for s in states if s.transit]


# --------------------------------------------------------------------- tests

BOUND_CHECKS = [
    check_upper_bound,
    check_lower_bound,
    check_both_bounds,
    check_bounded_sighting,
    check_tolerance,
]


def test_the_phrase_forms_parse_to_their_bounds() -> None:
    check_parser()


def test_a_parser_missing_a_form_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    monkeypatch.setattr(claims_mod, "_UPPER_PATTERN", re.compile(r"\b(?:until|till) tick (\d+)\b"))
    with pytest.raises(AssertionError):
        check_parser()


@pytest.mark.parametrize("rules", BOOKS)
@pytest.mark.parametrize("check", BOUND_CHECKS, ids=lambda c: c.__name__)
def test_bounds_narrow_the_window(rules: str, check: Callable[[str], None]) -> None:
    check(rules)


@pytest.mark.parametrize("rules", BOOKS)
@pytest.mark.parametrize("check", BOUND_CHECKS, ids=lambda c: c.__name__)
def test_an_ignored_bound_is_caught(
    rules: str, check: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_bounds(monkeypatch, no_bounds)
    with pytest.raises(AssertionError):
        check(rules)


@pytest.mark.parametrize("rules", BOOKS)
def test_a_lower_bound_is_only_a_lower_bound(rules: str) -> None:
    check_lower_bound_narrows_only_the_start(rules)


@pytest.mark.parametrize("rules", BOOKS)
def test_a_lower_bound_read_as_an_instant_is_caught(
    rules: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_bounds(monkeypatch, lower_as_instant)
    with pytest.raises(AssertionError):
        check_lower_bound_narrows_only_the_start(rules)


def test_a_narrower_around_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claims_mod, "AROUND_SAMPLES", claims_mod.POINT_SAMPLES)
    for rules in BOOKS:
        with pytest.raises(AssertionError):
            check_tolerance(rules)


@pytest.mark.parametrize("rules", BOOKS)
def test_a_span_outside_the_round_is_each_books_out_of_round_reading(rules: str) -> None:
    check_out_of_round(rules)


@pytest.mark.parametrize("rules", BOOKS)
def test_an_out_of_round_span_judged_on_the_round_is_caught(
    rules: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_bounds(monkeypatch, no_bounds)
    with pytest.raises(AssertionError):
        check_out_of_round(rules)


@pytest.mark.parametrize("rules", BOOKS)
def test_a_corridor_walk_verifies_travel_by_its_destination(rules: str) -> None:
    check_corridor_destination(rules)
    check_corridor_other_destination(rules)
    check_destination_stays_in_round(rules)


def test_an_ignored_destination_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ProjectAuditor, "walk_destination", lambda *_a: None)
    monkeypatch.setattr(quack_mod, "corridor_walks", lambda _s: [])
    for rules in BOOKS:
        with pytest.raises(AssertionError):
            check_corridor_destination(rules)
    # Without the rule QUACK's book left the walk unverifiable (the default book's
    # presence reading says wrong_room): the other-destination check catches that too.
    with pytest.raises(AssertionError):
        check_corridor_other_destination("quack")


def test_a_destination_read_from_the_next_round_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ProjectAuditor, "walk_destination", walk_into_next_round)
    monkeypatch.setattr(quack_mod, "corridor_walks", walks_into_next_round)
    for rules in BOOKS:
        with pytest.raises(AssertionError):
            check_destination_stays_in_round(rules)


def test_the_rule_extractors_tick_phrases_are_instants() -> None:
    # The scripted agents say "at tick N" (`RuleExtractor` keeps it as the temporal).
    from annotation.grounding.claims import RuleExtractor
    from annotation.grounding.trajectory import SpeechRecord

    turn = SpeechRecord(
        meeting=1,
        step=4,
        speaker="red",
        utterance=1,
        text="I was in admin at tick 40.",
        passed=False,
        failed=False,
        error_kind="",
    )
    (c,) = RuleExtractor().parse(turn)
    assert c.temporal == "at tick 40"
    assert tick_bounds(c.temporal) == TickBounds(kind="point", lower=40, upper=40, rest="")
