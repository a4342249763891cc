"""Verdicts on hand-built trajectories with known answers (incl. QUACK Appendix D)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotation.grounding.audit import TEMPORAL_PHRASES, resolve_window
from annotation.grounding.claims import Claim, normalise_phrase
from annotation.grounding.rules import audit_claims
from annotation.grounding.trajectory import Trajectory, build_trajectory
from testkit.logs import GameBuilder


def claim(**kw: Any) -> Claim:
    base: dict[str, Any] = {"meeting": 1, "speaker": "red", "utterance": 1, "subject": "red"}
    base.update(kw)
    return Claim(**base)


def game() -> Trajectory:
    """Round 1: red does a task in admin then waits there; blue walks cafeteria ->
    storage -> electrical and is killed by pink in electrical (orange sees it); green
    reports. Round 2: red walks admin -> cafeteria -> medbay, sees orange in medbay."""
    g = GameBuilder()
    g.free_roam(
        {
            "red": ["admin"],
            "blue": ["cafeteria", "storage", "electrical"],
            "pink": ["security"],
            "orange": ["security"],
        },
        sees={"red": ["green"], "green": ["red"], "pink": ["orange"]},
        tasks=[("red", 11, 20, 80), ("pink", 18, 10, 70)],
    )
    g.free_roam(
        {
            "red": ["admin"],
            "pink": ["electrical"],
            "orange": ["electrical"],
            "blue": ["electrical"],
        },
        kills=[("pink", "blue", 40, {"orange": ["pink"], "red": []})],
        sees={"orange": ["pink"], "pink": ["orange"]},
    )
    g.free_roam(
        {"green": ["electrical"], "red": ["admin", "admin", "admin", "cafeteria"]},
        bodies={"green": ["blue"]},
        report=("green", "blue"),
    )
    g.talk([("green", "found blue"), ("red", "..."), ("orange", "pink did it"), ("pink", "...")])
    g.vote({"red": "skip", "green": "skip", "orange": "pink", "pink": "orange"})
    g.free_roam(
        {"red": ["cafeteria", "medbay"], "orange": ["medbay"], "pink": ["weapons"]},
        sees={"red": ["orange"], "orange": ["red"]},
    )
    g.free_roam({"red": ["medbay"]}, emergency="red")
    g.talk([("red", "..."), ("pink", "...")])
    return build_trajectory(g.end())


def verdict_of(traj: Trajectory, c: Claim) -> tuple[str, str]:
    (row,) = audit_claims(traj, [c])
    return row.verdict, row.reason


def test_location_true_false_and_window() -> None:
    t = game()
    (row,) = audit_claims(t, [claim(type="location", room="Admin")])
    assert row.verdict == "true" and row.room == "admin" and row.window == [1, 3]
    assert row.evidence["rooms"][:2] == ["cafeteria", "admin"]  # from the seats at tick 0
    assert verdict_of(t, claim(type="location", room="storage"))[0] == "false"
    assert verdict_of(t, claim(type="location", room="med bay", meeting=2))[0] == "true"


def test_duration_claims_that_held_briefly_are_near_misses() -> None:
    t = game()
    # Red spent round 2's first step in cafeteria only briefly, then medbay.
    assert verdict_of(t, claim(type="location", room="admin", temporal="the whole time"))[0] == (
        "true"
    )
    assert (
        verdict_of(
            t, claim(meeting=2, type="location", room="cafeteria", temporal="the whole time")
        )[0]
        == "near_miss"
    )
    assert (
        verdict_of(t, claim(meeting=2, type="location", room="medbay", temporal="mostly"))[0]
        == "true"
    )
    assert (
        verdict_of(t, claim(meeting=2, type="activity", activity="waiting", room="cafeteria"))[0]
        == "near_miss"
    )


def test_route_claims_in_order_out_of_order_and_missing() -> None:
    t = game()
    route = claim(
        type="location", subject="blue", speaker="green", route=["cafeteria", "storage", "elec"]
    )
    assert verdict_of(t, route)[0] == "true"
    back = route.model_copy(update={"route": ["electrical", "storage"]})
    assert verdict_of(t, back)[0] == "false"
    assert "order" in verdict_of(t, back)[1]
    missing = route.model_copy(update={"route": ["cafeteria", "medbay"]})
    assert verdict_of(t, missing)[0] == "false"


def test_appendix_d_seeing_alive_a_player_already_dead() -> None:
    # Spatial hallucination: a crewmate "saw" blue alive in round 2; blue died in round 1.
    t = game()
    v, reason = verdict_of(t, claim(meeting=2, type="sighting", target="Blue", room="security"))
    assert v == "false" and "killed at tick 140" in reason


def test_appendix_d_fabricated_sighting_of_a_dead_player_by_an_impostor() -> None:
    # Deception collapse: pink (impostor) claims to have seen blue alive in round 2.
    t = game()
    (row,) = audit_claims(
        t,
        [
            claim(
                meeting=2,
                speaker="pink",
                subject="pink",
                type="sighting",
                target="blue",
                room="weapons",
                utterance=1,
            )
        ],
    )
    assert row.verdict == "false" and row.speaker_role == "impostor"


def test_appendix_d_accusing_while_having_seen_no_one() -> None:
    # Unsupported accusation: red saw only green and accuses pink: not grounded, but a hit.
    t = game()
    (row,) = audit_claims(t, [claim(type="accusation", target="pink", utterance=1)])
    assert row.hit is True and row.grounded is False and row.verdict == "unverifiable"
    # Orange saw pink at the kill: grounded.
    (row,) = audit_claims(
        t, [claim(type="accusation", speaker="orange", subject="orange", target="pink")]
    )
    assert row.grounded is True
    assert {g["kind"] for g in row.evidence["grounds"]} >= {"saw_at_kill"}


def test_accusation_grounded_by_seeing_the_target_with_the_victim() -> None:
    g = GameBuilder()
    g.free_roam(
        {"pink": ["admin"], "blue": ["admin"], "red": ["admin"]}, sees={"red": ["pink", "blue"]}
    )
    g.free_roam(
        {"pink": ["storage"], "blue": ["storage"], "red": ["o2"]}, kills=[("pink", "blue", 50, {})]
    )
    g.free_roam({"green": ["storage"]}, report=("green", "blue"))
    g.talk([("red", "I saw Pink with Blue in admin at tick 100. I suspect Pink.")])
    t = build_trajectory(g.end())
    (row,) = audit_claims(t, [claim(type="accusation", target="pink")])
    assert row.grounded is True
    assert [x["kind"] for x in row.evidence["grounds"]] == ["saw_with_victim"]
    # Seeing the target alone, far from the kill, is no ground.
    (row,) = audit_claims(
        t, [claim(type="accusation", target="pink", speaker="orange", subject="orange")]
    )
    assert row.grounded is False


def test_a_round_start_on_the_seats_is_real_sight_but_no_evidence() -> None:
    t = game()
    start = t.meetings[0].end_step
    assert start is not None
    # Red saw pink on the seats as round 2 began: a true sighting in the cafeteria...
    (row,) = audit_claims(
        t,
        [
            claim(
                meeting=2, type="sighting", target="pink", room="cafeteria", temporal="at the start"
            )
        ],
    )
    assert row.verdict == "true"
    assert row.evidence["sightings"][0]["step"] == start + 1
    # ...but sitting together is no evidence against anyone.
    (row,) = audit_claims(t, [claim(meeting=2, type="accusation", target="pink")])
    assert row.grounded is False


def test_appendix_d_task_claimed_in_a_room_where_none_was_done() -> None:
    # Language-action inconsistency: pink faked a task in security, claims medbay.
    t = game()
    v, _ = verdict_of(
        t,
        claim(
            speaker="pink", subject="pink", type="activity", activity="doing tasks", room="medbay"
        ),
    )
    assert v == "wrong_room"
    v, reason = verdict_of(
        t, claim(speaker="pink", subject="pink", type="activity", activity="task", room="security")
    )
    assert v == "true" and "faked" in reason
    # Orange did no task at all.
    v, _ = verdict_of(
        t,
        claim(
            speaker="orange", subject="orange", type="activity", activity="task", room="security"
        ),
    )
    assert v == "false"


def test_sighting_true_wrong_room_and_recomputed_from_trace() -> None:
    t = game()
    assert verdict_of(t, claim(type="sighting", target="green"))[0] == "true"
    assert (
        verdict_of(t, claim(meeting=2, type="sighting", target="orange", room="medbay"))[0]
        == "true"
    )
    assert (
        verdict_of(t, claim(meeting=2, type="sighting", target="orange", room="o2"))[0]
        == "wrong_room"
    )


def test_accusation_grounded_by_a_false_claim_of_the_target_spoken_before() -> None:
    t = game()
    lie = claim(speaker="pink", subject="pink", utterance=1, type="location", room="storage")
    acc = claim(
        speaker="red", subject="red", utterance=1, meeting=1, type="accusation", target="pink"
    )
    rows = audit_claims(t, [lie, acc])
    # Pink spoke after red in meeting 1, so the lie is no ground for red's accusation.
    assert rows[0].verdict == "false" and rows[1].grounded is False
    acc2 = claim(
        speaker="red", subject="red", utterance=1, meeting=2, type="accusation", target="pink"
    )
    rows = audit_claims(t, [lie, acc2])
    assert rows[1].grounded is True
    assert rows[1].evidence["grounds"][-1]["kind"] == "target_claim_false"


def test_activities_report_call_meeting_kill() -> None:
    t = game()
    assert (
        verdict_of(
            t,
            claim(
                speaker="green",
                subject="green",
                type="activity",
                activity="found the body",
                target="blue",
                room="electrical",
            ),
        )[0]
        == "true"
    )
    assert (
        verdict_of(
            t,
            claim(
                speaker="green", subject="green", type="activity", activity="report", room="admin"
            ),
        )[0]
        == "wrong_room"
    )
    assert verdict_of(t, claim(meeting=2, type="activity", activity="emergency"))[0] == "true"
    assert (
        verdict_of(
            t,
            claim(
                speaker="pink", subject="pink", type="activity", activity="killed", target="blue"
            ),
        )[0]
        == "true"
    )


def test_unknown_things_are_unverifiable_with_a_reason_never_an_error() -> None:
    t = game()
    cases = {
        "unknown room": claim(type="location", room="the bridge"),
        "unknown player": claim(type="sighting", target="purple"),
        "unknown activity": claim(type="activity", activity="juggling"),
        "unknown claim type": claim(type="prophecy"),
        "not in the documented vocabulary": claim(
            type="location", room="admin", temporal="in my dreams"
        ),
        "meeting 9": claim(meeting=9, type="location", room="admin"),
    }
    for needle, c in cases.items():
        v, reason = verdict_of(t, c)
        assert v == "unverifiable" and needle in reason, (needle, reason)


def test_temporal_phrases_resolve_to_documented_windows() -> None:
    t = game()

    def w(phrase: str | None, meeting: int = 1) -> Any:
        return resolve_window(
            claim(type="location", room="admin", temporal=phrase, meeting=meeting), t
        )

    assert (w(None).first_step, w(None).last_step) == (1, 3)
    assert (w("at the start").first_step, w("at the start").last_step) == (1, 1)
    assert w("The whole time.").duration == "whole"
    assert w("mostly").duration == "mostly"
    assert w("until step 2").last_step == 2
    assert (w("at step 2").first_step, w("at step 2").last_step) == (2, 2)
    assert w("before the body was found").rule == "before_body"
    assert isinstance(w("before the body was found", meeting=2), str)
    assert (w("earlier", meeting=2).first_step, w("earlier", meeting=2).last_step) == (1, 10)
    assert (w("last round", meeting=2).first_step, w("last round", meeting=2).last_step) == (1, 3)
    assert w("around tick 150").first_step == 2


def test_v1_log_absence_is_unverifiable_not_false() -> None:
    g = GameBuilder(v1=True)
    g.free_roam({"red": ["cafeteria", "storage", "electrical"]}, sees={"red": []})
    g.free_roam({"red": ["electrical"]}, emergency="red")
    g.talk([("red", "...")])
    t = build_trajectory(g.end())
    assert verdict_of(t, claim(type="location", room="storage"))[0] == "unverifiable"
    assert verdict_of(t, claim(type="location", room="electrical"))[0] == "true"


def test_defenses_rest_on_the_defenders_own_sight() -> None:
    t = game()
    (row,) = audit_claims(t, [claim(type="defense", target="green")])
    assert (row.verdict, row.hit, row.grounded) == ("true", True, True)
    (row,) = audit_claims(t, [claim(type="defense", target="orange")])
    assert (row.verdict, row.grounded) == ("unverifiable", False)
    (row,) = audit_claims(
        t, [claim(type="defense", target="pink", speaker="orange", subject="orange")]
    )
    assert (row.verdict, row.hit) == ("true", False)  # vouching for an impostor it saw


def test_time_phrases_match_after_normalisation() -> None:
    t = game()

    def rule(phrase: str, meeting: int = 2) -> str:
        w = resolve_window(
            claim(type="location", room="admin", temporal=phrase, meeting=meeting), t
        )
        return w if isinstance(w, str) else w.rule

    same = {
        "default": ["Since last meeting", "since the last meeting.", "THIS ROUND", "in this round"],
        "previous_round": ["The last round", "last round", "in the last round", "previous rounds"],
        "start": ["At start", "at the very start", "At the beginning of the round"],
        "end": [
            "at the end of the round",
            "When I reported the body",
            "before the meeting was called",
        ],
        "whole": ["The whole time!", "whole round", "the entire round"],
        "mostly": ["Most of the time", "for the most part"],
        "earlier": ["the last time I saw", "last", "the last", "Previously"],
        "ticks": ["ticks 350-360", "Around tick 350.", "between ticks 350 and 360"],
        "steps": ["steps 9-10", "at the step 9", "from step 9 to 10"],
        "until_step": ["until step 10", "up to step 10"],
    }
    for expected, phrases in same.items():
        for phrase in phrases:
            assert rule(phrase) == expected, (phrase, rule(phrase))
    # An unmatched phrase stays unverifiable, with its reason.
    for phrase in ("in my dreams", "last week", "since the dawn of time"):
        v, reason = verdict_of(t, claim(type="location", room="admin", temporal=phrase))
        assert v == "unverifiable" and "not in the documented vocabulary" in reason, phrase
        assert repr(phrase) in reason


def test_the_time_vocabulary_is_unambiguous_and_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "grounding.md").read_text()
    seen: dict[str, str] = {}
    for rule, phrases in TEMPORAL_PHRASES.items():
        for phrase in phrases:
            key = normalise_phrase(phrase)
            assert seen.setdefault(key, rule) == rule, (phrase, seen[key], rule)
            if phrase:
                assert f'"{phrase}"' in doc, f"docs/grounding.md does not list {phrase!r}"


def test_activity_phrases_reach_the_verdicts() -> None:
    t = game()
    for phrase in ("calling meeting", "Called an emergency meeting", "pressing the button"):
        assert verdict_of(t, claim(meeting=2, type="activity", activity=phrase))[0] == "true"
    v, reason = verdict_of(t, claim(type="activity", activity="juggling"))
    assert v == "unverifiable" and "unknown activity 'juggling'" in reason
