"""The `quack` rule book beside the default one: every difference listed in issue 23 is
one claim judged by both books, with both verdicts asserted."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest

from annotation.grounding.audit import AuditedClaim
from annotation.grounding.claims import Claim
from annotation.grounding.rules import RULE_BOOKS, RULES, audit_claims, rule_book
from annotation.grounding.trajectory import Trajectory, build_trajectory
from testkit.games import GameStore
from testkit.logs import CORRIDOR, GameBuilder

DOC = Path(__file__).resolve().parents[2] / "docs" / "grounding.md"
MEDBAY_STATION = 19


def claim(**kw: Any) -> Claim:
    base: dict[str, Any] = {"meeting": 1, "speaker": "red", "utterance": 1, "subject": "red"}
    base.update(kw)
    return Claim(**base)


def both(t: Trajectory, c: Claim) -> tuple[AuditedClaim, AuditedClaim]:
    """The claim judged by the default book and by the QUACK book."""
    (mine,) = audit_claims(t, [c])
    (quack,) = audit_claims(t, [c], rules="quack")
    assert mine.rules == "mineamongus" and quack.rules == "quack"
    return mine, quack


def verdicts(t: Trajectory, c: Claim) -> tuple[str, str]:
    mine, quack = both(t, c)
    return mine.verdict, quack.verdict


# --------------------------------------------------------------------- games


def call_step_game() -> Trajectory:
    """Step 1: red in admin. Step 2 (green presses the button at its end): red in
    medbay doing a task there, orange in medbay in red's view."""
    g = GameBuilder()
    g.free_roam({"red": ["admin"], "orange": ["security"]})
    g.free_roam(
        {"red": ["medbay"], "orange": ["medbay"]},
        sees={"red": ["orange"]},
        tasks=[("red", MEDBAY_STATION, 10, 70)],
        emergency="green",
    )
    g.talk([("red", "...")])
    return build_trajectory(g.end())


def three_step_game() -> Trajectory:
    """Step 1: red in admin; step 2: admin for 60 % then cafeteria; step 3 (the call):
    red in admin. Orange: admin, cafeteria, cafeteria."""
    g = GameBuilder()
    g.free_roam({"red": ["admin"], "orange": ["admin"]})
    g.free_roam({"red": ["admin", "cafeteria"], "orange": ["cafeteria"]})
    g.free_roam({"red": ["admin"], "orange": ["cafeteria"]}, emergency="green")
    g.talk([("red", "...")])
    return build_trajectory(g.end())


def kill_game() -> Trajectory:
    """Step 1: pink kills blue in electrical (pink has blue in view at the kill); red is
    in admin, green in storage, orange walks cafeteria -> admin. Step 2: green finds
    the body in electrical and reports. Round 2: red in medbay, then a button press."""
    g = GameBuilder()
    g.free_roam(
        {
            "pink": ["electrical"],
            "blue": ["electrical"],
            "red": ["admin"],
            "green": ["storage"],
            "orange": ["cafeteria", "admin"],
        },
        kills=[("pink", "blue", 50, {"pink": ["blue"]})],
        sees={"red": ["orange"]},
    )
    g.free_roam({"green": ["electrical"]}, bodies={"green": ["blue"]}, report=("green", "blue"))
    g.talk([("green", "..."), ("red", "..."), ("pink", "...")])
    g.vote({"red": "skip", "green": "skip", "pink": "skip", "orange": "skip"})
    g.free_roam({"red": ["medbay"], "green": ["admin"]})
    g.free_roam({"red": ["medbay"]}, emergency="red")
    g.talk([("red", "..."), ("green", "...")])
    return build_trajectory(g.end())


# --------------------------------------------------------------------- accusations


def test_accusation_grounded_by_reporting_the_body() -> None:
    t = kill_game()
    mine, quack = both(t, claim(speaker="green", subject="green", type="accusation", target="pink"))
    assert mine.hit is quack.hit is True
    assert mine.grounded is False  # green never saw pink around the kill
    assert quack.grounded is True
    assert [g["kind"] for g in quack.evidence["grounds"]] == ["accuser_called_meeting"]
    assert quack.verdict == mine.verdict == "unverifiable"
    assert quack.evidence["quack_verdict"] == "true"


def test_accusation_grounded_by_calling_the_meeting() -> None:
    t = kill_game()
    c = claim(meeting=2, type="accusation", target="pink")  # red pressed the button
    mine, quack = both(t, c)
    assert (mine.grounded, quack.grounded) == (False, True)
    assert quack.evidence["grounds"][0]["kind"] == "accuser_called_meeting"


def test_accusation_grounded_by_seeing_the_accused_in_the_round() -> None:
    # Red and orange stood in admin together in round 1 (red saw orange), no kill by
    # orange: QUACK's co-visibility grounds it, the default book does not.
    t = kill_game()
    mine, quack = both(t, claim(type="accusation", target="orange"))
    assert (mine.grounded, quack.grounded) == (False, True)
    assert [g["kind"] for g in quack.evidence["grounds"]] == ["accuser_could_see_target"]
    assert mine.hit is quack.hit is False


def test_accusation_grounded_by_the_kill_scene_without_sight_in_quack() -> None:
    # Orange reaches electrical the step after pink killed blue there (pink gone by
    # then): QUACK grounds on being in the kill room within 2 steps of the kill; the
    # default book needs sight of the accused.
    g = GameBuilder()
    g.free_roam(
        {"pink": ["electrical"], "blue": ["electrical"], "orange": ["security"]},
        kills=[("pink", "blue", 50, {})],
    )
    g.free_roam({"pink": ["storage"], "orange": ["electrical"]})
    g.free_roam({"green": ["electrical"]}, bodies={"green": ["blue"]}, report=("green", "blue"))
    g.talk([("orange", "...")])
    t = build_trajectory(g.end())
    c = claim(speaker="orange", subject="orange", type="accusation", target="pink")
    mine, quack = both(t, c)
    assert (mine.grounded, quack.grounded) == (False, True)
    assert [g["kind"] for g in quack.evidence["grounds"]] == ["accuser_near_kill_scene"]
    self_acc = claim(speaker="pink", subject="pink", type="accusation", target="pink")
    assert both(t, self_acc)[1].grounded is False  # QUACK: a self-accusation never is


# --------------------------------------------------------------------- the calling step


def test_presence_claims_run_through_the_calling_step_in_both() -> None:
    t = call_step_game()
    assert verdicts(t, claim(type="location", room="medbay")) == ("true", "true")
    route = claim(type="location", route=["admin", "medbay"])
    mine, quack = both(t, route)
    assert (mine.verdict, quack.verdict) == ("true", "true")
    assert mine.window == quack.window == [1, 2]


def test_majority_claims_leave_the_calling_step_out_in_quack() -> None:
    t = call_step_game()
    mine, quack = both(t, claim(type="location", room="medbay", temporal="mostly"))
    assert (mine.verdict, quack.verdict) == ("true", "false")
    assert mine.window == [1, 2] and quack.window == [1, 1]


def test_continuity_claims_leave_the_calling_step_out_in_quack() -> None:
    t = call_step_game()
    c = claim(type="location", room="admin", temporal="the whole time")
    assert verdicts(t, c) == ("near_miss", "true")  # 50 % with the call, all of it without
    stayed = claim(type="location", room="admin", temporal="I stayed in admin")
    mine, quack = both(t, stayed)
    assert mine.verdict == "unverifiable"  # not in the default book's vocabulary
    assert quack.verdict == "true" and quack.evidence["duration_semantics"] == "entire_time"


def test_sightings_leave_the_calling_step_out_in_quack() -> None:
    t = call_step_game()
    assert verdicts(t, claim(type="sighting", target="orange", room="medbay")) == (
        "true",
        "false",
    )


def test_activities_leave_the_calling_step_out_in_quack() -> None:
    t = call_step_game()
    task = claim(type="activity", activity="doing tasks", room="medbay")
    assert verdicts(t, task) == ("true", "false")


def test_explicit_bounds_only_narrow_and_drop_the_calling_step() -> None:
    t = call_step_game()
    # Red reached medbay at tick 100, in the calling step. "by tick 150": both books
    # end the window at tick 150; the default book keeps the calling step's first half,
    # QUACK bounds the base window (no calling step) at 150.
    by = claim(type="location", room="medbay", temporal="by tick 150")
    mine, quack = both(t, by)
    assert (mine.verdict, quack.verdict) == ("true", "false")
    assert "until_tick" in quack.evidence["rule"] and mine.evidence["rule"] == "until_tick"
    until = claim(type="location", room="medbay", temporal="until tick 150")
    assert verdicts(t, until) == ("true", "false")
    # A bound never widens: "until tick 900" is still the round before the call.
    (wide,) = audit_claims(
        t, [claim(type="location", room="admin", temporal="until tick 900")], rules="quack"
    )
    assert wide.window == [1, 1] and wide.verdict == "true"
    after = claim(type="location", room="admin", temporal="since tick 50")
    (row,) = audit_claims(t, [after], rules="quack")
    assert row.evidence["ticks"][0] == 50


def test_opening_phrases_clamp_to_the_first_steps_in_quack() -> None:
    g = GameBuilder()
    g.free_roam({"red": ["admin"]})
    g.free_roam({"red": ["storage"]})
    g.free_roam({"red": ["storage"]}, emergency="green")
    g.talk([("red", "...")])
    t = build_trajectory(g.end())
    start = claim(type="location", room="storage", temporal="at the start")
    mine, quack = both(t, start)
    # Default book: the round's first step (red in admin). QUACK: the first six steps,
    # before the call (red reached storage in step 2).
    assert (mine.verdict, quack.verdict) == ("false", "true")
    assert mine.window == [1, 1] and quack.window == [1, 2]


# --------------------------------------------------------------------- thresholds


def test_majority_is_inclusive_at_exactly_half() -> None:
    # QUACK's window (steps 1-2, no call): admin 160 of 200 ticks; cafeteria 40 of 200.
    # Half-way: orange in admin for step 1, cafeteria for step 2 = exactly 50 %.
    t = three_step_game()
    c = claim(speaker="orange", subject="orange", type="location", room="admin", temporal="mostly")
    mine, quack = both(t, c)
    assert quack.evidence["match_rate"] == 0.5 and quack.verdict == "true"
    # The default book counts the calling step too: 100 of 300 ticks.
    assert mine.verdict == "near_miss"
    # The default book is inclusive at 50 % as well (its `frac >= MOSTLY_FRACTION`):
    g = GameBuilder()
    g.free_roam({"orange": ["admin"]})
    g.free_roam({"orange": ["cafeteria"]}, emergency="green")
    g.talk([("orange", "...")])
    half = build_trajectory(g.end())
    mine2, quack2 = both(half, c)
    assert mine2.evidence["fraction"] == 0.5 and mine2.verdict == "true"
    assert quack2.verdict == "true"  # QUACK: step 1 only, 100 %


def test_whole_time_needs_every_valid_tick_and_is_never_a_near_miss() -> None:
    t = three_step_game()
    admin = claim(type="location", room="admin", temporal="the whole time")
    mine, quack = both(t, admin)
    assert mine.verdict == "true" and mine.evidence["fraction"] >= 0.8  # 80 % suffices here
    assert quack.verdict == "false"  # red was in the cafeteria for 40 ticks
    cafe = claim(type="location", room="cafeteria", temporal="the whole time")
    assert verdicts(t, cafe) == ("near_miss", "false")


def test_waiting_needs_one_room_and_is_a_near_miss_from_80_percent() -> None:
    g = GameBuilder()
    g.free_roam({"red": ["admin"]})
    g.free_roam({"red": ["admin", "admin", "admin", "admin", "admin", "cafeteria"]})
    g.free_roam({"red": ["admin"]}, emergency="green")
    g.talk([("red", "...")])
    t = build_trajectory(g.end())
    wait = claim(type="activity", activity="waiting", room="admin")
    mine, quack = both(t, wait)
    assert mine.verdict == "true"  # admin for most of the window
    assert quack.verdict == "near_miss" and quack.evidence["share"] >= 0.8


def test_waiting_ignores_the_claimed_room_in_quack() -> None:
    g = GameBuilder()
    g.free_roam({"red": ["admin"]})
    g.free_roam({"red": ["admin"]}, emergency="green")
    g.talk([("red", "...")])
    t = build_trajectory(g.end())
    elsewhere = claim(type="activity", activity="waiting", room="medbay")
    assert verdicts(t, elsewhere) == ("wrong_room", "true")
    walked = claim(speaker="red", subject="red", type="activity", activity="waiting")
    assert verdicts(call_step_game(), walked)[1] == "true"  # admin only, before the call
    half = claim(speaker="orange", subject="orange", type="activity", activity="waiting")
    assert verdicts(three_step_game(), half)[1] == "false"  # 50 % in admin, < 80 %


# --------------------------------------------------------------------- routes


def route_game() -> Trajectory:
    """Red walks cafeteria -> admin -> storage in step 1; the button in step 2."""
    g = GameBuilder()
    g.free_roam({"red": ["cafeteria", "admin", "storage"]})
    g.free_roam({"red": ["storage"]}, emergency="green")
    g.talk([("red", "...")])
    return build_trajectory(g.end())


def test_route_in_the_wrong_order_is_a_near_miss_in_quack() -> None:
    t = route_game()
    assert verdicts(t, claim(type="location", route=["cafeteria", "admin", "storage"])) == (
        "true",
        "true",
    )
    assert verdicts(t, claim(type="location", route=["storage", "admin"])) == (
        "false",
        "near_miss",
    )
    assert verdicts(t, claim(type="location", route=["cafeteria", "medbay"])) == (
        "false",
        "false",
    )


def test_route_leg_naming_no_room_is_dropped_in_quack() -> None:
    t = route_game()
    c = claim(type="location", route=["cafeteria", "the big room", "storage"])
    mine, quack = both(t, c)
    assert mine.verdict == "unverifiable" and "the big room" in mine.reason
    assert quack.verdict == "true" and quack.evidence["dropped_legs"] == ["the big room"]
    nothing = claim(type="location", route=["the big room", "corridor"])
    assert verdicts(t, nothing) == ("unverifiable", "unverifiable")


def test_claimed_revisit_that_did_not_happen_is_a_near_miss_in_quack() -> None:
    t = route_game()
    c = claim(type="location", route=["cafeteria", "admin", "cafeteria"])
    assert verdicts(t, c) == ("false", "near_miss")


# --------------------------------------------------------------------- sightings


def test_a_stationary_observer_does_not_see_a_corridor_walker_in_quack() -> None:
    # Red stands in the cafeteria, orange spends step 1 in the corridor to admin; red's
    # field of view holds orange.
    g = GameBuilder()
    g.free_roam({"red": ["cafeteria"], "orange": [CORRIDOR]}, sees={"red": ["orange"]})
    g.free_roam({"orange": ["admin"]}, emergency="green")
    g.talk([("red", "...")])
    t = build_trajectory(g.end())
    c = claim(type="sighting", target="orange", room="cafeteria")
    assert verdicts(t, c) == ("true", "false")


def test_the_killers_co_location_at_its_own_kill_is_no_alibi_in_quack() -> None:
    t = kill_game()
    c = claim(speaker="pink", subject="pink", type="sighting", target="blue", room="electrical")
    mine, quack = both(t, c)
    assert mine.verdict == "true"  # pink had blue in view (at the kill)
    assert quack.verdict == "false" and quack.evidence["killer_alibi_ticks_dropped"]


def test_a_subject_with_no_alive_tick_in_the_window() -> None:
    t = kill_game()
    # Meeting 2 (round 2): blue died in round 1.
    loc = claim(meeting=2, speaker="green", type="location", subject="blue", room="electrical")
    mine, quack = both(t, loc)
    assert mine.verdict == "false" and "killed" in mine.reason
    assert quack.verdict == "unverifiable" and "no valid" in quack.reason
    # QUACK's sighting verifier has no such rule: a dead viewer saw no one (false in both).
    seen = claim(
        meeting=2, speaker="green", subject="blue", type="sighting", target="red", room="medbay"
    )
    assert verdicts(t, seen) == ("false", "false")


def test_a_sighting_needs_a_room_in_quack() -> None:
    t = kill_game()
    c = claim(type="sighting", target="orange")
    assert verdicts(t, c) == ("true", "unverifiable")


# --------------------------------------------------------------------- other


def test_defending_another_player_is_unverifiable_in_quack() -> None:
    t = kill_game()
    c = claim(type="defense", target="orange")  # red had orange in view in round 1
    mine, quack = both(t, c)
    assert (mine.verdict, quack.verdict) == ("true", "unverifiable")
    assert mine.grounded is True and quack.grounded is None


def test_a_room_word_that_names_no_room_is_unverifiable_in_quack() -> None:
    g = GameBuilder()
    g.free_roam({"red": ["cafeteria", CORRIDOR, "admin"]})
    g.free_roam({"red": ["admin"]}, emergency="green")
    g.talk([("red", "...")])
    t = build_trajectory(g.end())
    for word in ("hallway", "the corridor"):
        mine, quack = both(t, claim(type="location", room=word))
        assert (mine.verdict, quack.verdict) == ("true", "unverifiable"), word
        assert quack.room == "hallway"
    unknown = claim(type="location", room="the big room")
    assert verdicts(t, unknown) == ("unverifiable", "unverifiable")
    # In an activity QUACK drops the word and checks the activity alone.
    travel = claim(type="activity", activity="walking", room="hallway")
    assert verdicts(t, travel) == ("true", "true")


def test_traveling_that_touched_no_claimed_room_is_wrong_room() -> None:
    t = route_game()
    medbay = claim(type="activity", activity="walking", room="medbay")
    assert verdicts(t, medbay) == ("wrong_room", "wrong_room")
    # Without a trace the default book cannot rule a room out; QUACK reads the
    # trajectory as complete.
    g = GameBuilder(v1=True)
    g.free_roam({"red": ["cafeteria", "admin"]})
    g.free_roam({"red": ["admin"]}, emergency="green")
    g.talk([("red", "...")])
    v1 = build_trajectory(g.end())
    assert verdicts(v1, medbay) == ("unverifiable", "wrong_room")


def test_traveling_while_standing_in_the_room_is_false_in_quack() -> None:
    t = route_game()
    through = claim(type="activity", activity="moving", room="admin")
    assert verdicts(t, through) == ("true", "true")  # a move into and out of admin
    g = GameBuilder()
    g.free_roam({"red": ["admin"]})
    g.free_roam({"red": ["admin"]}, emergency="green")
    g.talk([("red", "...")])
    still = build_trajectory(g.end())
    stood = claim(type="activity", activity="moving", room="admin")
    assert verdicts(still, stood) == ("true", "false")  # present, but never moved


def test_kill_and_meeting_acts() -> None:
    t = kill_game()
    kill = claim(speaker="pink", subject="pink", type="activity", activity="killed", target="blue")
    assert verdicts(t, kill) == ("true", "unverifiable")  # no kill claims in QUACK
    report = claim(speaker="green", subject="green", type="activity", activity="reported")
    assert verdicts(t, report) == ("true", "true")
    # Meeting 2 was red's button: green's report of round 1 is not this meeting's.
    earlier = claim(
        meeting=2,
        speaker="green",
        subject="green",
        type="activity",
        activity="reported",
        temporal="earlier",
    )
    assert verdicts(t, earlier) == ("true", "false")


def test_time_phrases_outside_the_vocabulary_are_the_round_in_quack() -> None:
    t = call_step_game()
    odd = claim(type="location", room="admin", temporal="after my second coffee")
    mine, quack = both(t, odd)
    assert (mine.verdict, quack.verdict) == ("unverifiable", "true")
    last = claim(meeting=1, type="location", room="admin", temporal="last round")
    assert verdicts(t, last) == ("unverifiable", "true")  # QUACK: no previous round


# --------------------------------------------------------------------- the books


def test_rule_books_are_registered_and_unknown_ones_refused() -> None:
    assert RULE_BOOKS[:2] == ("mineamongus", "quack")  # the default first
    assert [rule_book(n).name for n in RULE_BOOKS] == list(RULE_BOOKS)
    with pytest.raises(ValueError, match="unknown rule book"):
        rule_book("werewolf")
    with pytest.raises(ValueError, match="unknown rule book"):
        audit_claims(route_game(), [claim(type="location", room="admin")], rules="werewolf")


def _resolve(dotted: str) -> Any:
    mod, _, rest = ("annotation.grounding." + dotted).rpartition(".")
    try:
        obj: Any = importlib.import_module(mod)
        return getattr(obj, rest)
    except ModuleNotFoundError:
        mod2, _, cls = mod.rpartition(".")
        return getattr(getattr(importlib.import_module(mod2), cls), rest)


def test_every_rule_is_a_documented_function_listed_in_the_docs() -> None:
    doc = DOC.read_text(encoding="utf-8")
    for rule in RULES:
        for dotted in (rule.mineamongus, rule.quack):
            obj = _resolve(dotted)
            if callable(obj):
                assert inspect.getdoc(obj), dotted
            assert f"`{dotted}`" in doc, f"{dotted} missing from docs/grounding.md"
        if rule.quack.startswith("quack_rules."):
            text = inspect.getdoc(_resolve(rule.quack)) or ""
            assert "Source: QUACK" in text or rule.quack_source.split(",")[0] in text, rule.quack
        assert rule.aspect in doc, rule.aspect


def test_the_docs_table_of_differences_is_in_sync() -> None:
    from annotation.grounding.rules import render_doc

    text = DOC.read_text(encoding="utf-8")
    assert render_doc(text) == text, "run `python -m annotation.grounding.rules`"


QUACK_SEED = 69
"""A quick scripted fake-world game (frames off, one of the run's shared games) with a
meeting."""


def test_the_quack_book_on_a_whole_fake_world_game(fake_games: GameStore) -> None:
    """Every probe claim of a scripted fake-world game is judged by the QUACK book,
    within its own round (QUACK never reads another round)."""
    from annotation.grounding.claims import RuleExtractor
    from annotation.grounding.trajectory import load_trajectory

    t = load_trajectory(fake_games.game(seed=QUACK_SEED, frames="off"))
    assert t.meetings, f"seed {QUACK_SEED} holds no meeting now; pin another"
    rooms = sorted(t.geometry.rooms) if t.geometry is not None else []
    probes = list(RuleExtractor().extract(t).claims)
    for m in t.meetings:
        for who in t.agents:
            base: dict[str, Any] = {"meeting": m.index, "speaker": who, "subject": who}
            for temporal in (None, "at the start", "the whole time", "mostly", "by tick 300"):
                probes += [claim(**base, type="location", room=r, temporal=temporal) for r in rooms]
                probes += [
                    claim(**base, type="activity", activity=a, temporal=temporal)
                    for a in ("task", "travel", "wait", "report", "call_meeting")
                ]
                probes += [
                    claim(**base, type="sighting", target=o, room=r, temporal=temporal)
                    for o in t.agents
                    if o != who
                    for r in rooms[::4]
                ]
            probes += [claim(**base, type="accusation", target=o) for o in t.agents if o != who]
    rows = audit_claims(t, probes, rules="quack")
    assert len(rows) == len(probes) and {r.rules for r in rows} == {"quack"}
    verdicts_seen = {r.verdict for r in rows}
    assert {"true", "false"} <= verdicts_seen
    for r in rows:
        held = t.meeting(r.meeting)
        assert held is not None
        if r.window is not None:
            assert held.round_first_step <= r.window[0] <= r.window[1] <= held.step, r
