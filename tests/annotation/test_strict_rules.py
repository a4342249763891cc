"""The `strict` rule book: the default book's verdicts, near misses and wrong rooms
counted as false."""

from __future__ import annotations

from typing import Any

from annotation.grounding.books import BOOKS
from annotation.grounding.claims import Claim
from annotation.grounding.rules import RULE_BOOKS, audit_claims, rule_book
from annotation.grounding.strict_rules import StrictRuleBook
from annotation.grounding.trajectory import Trajectory, build_trajectory
from testkit.logs import GameBuilder


def claim(**kw: Any) -> Claim:
    base: dict[str, Any] = {"meeting": 1, "speaker": "red", "utterance": 1, "subject": "red"}
    base.update(kw)
    return Claim(**base)


def game() -> Trajectory:
    """Round 1: red waits in admin; pink is in security, then in electrical where it
    kills blue; green reports. Round 2: red walks cafeteria -> medbay and sees orange."""
    g = GameBuilder()
    g.free_roam(
        {"red": ["admin"], "blue": ["cafeteria", "storage"], "pink": ["security"]},
        sees={"red": ["green"], "green": ["red"]},
    )
    g.free_roam(
        {"red": ["admin"], "pink": ["electrical"], "blue": ["electrical"]},
        kills=[("pink", "blue", 40, {"red": []})],
    )
    g.free_roam(
        {"green": ["electrical"], "red": ["admin"]},
        bodies={"green": ["blue"]},
        report=("green", "blue"),
    )
    g.talk([("green", "found blue"), ("pink", "..."), ("red", "...")])
    g.vote({"red": "skip", "green": "skip", "pink": "green"})
    g.free_roam(
        {"red": ["cafeteria", "medbay"], "orange": ["medbay"], "pink": ["weapons"]},
        sees={"red": ["orange"], "orange": ["red"]},
    )
    g.free_roam({"red": ["medbay"]}, emergency="red")
    g.talk([("red", "..."), ("pink", "...")])
    return build_trajectory(g.end())


def test_graded_verdicts_are_settled_as_false_and_the_rest_kept() -> None:
    t = game()
    claims = [
        claim(type="location", room="admin"),
        claim(meeting=2, type="location", room="cafeteria", temporal="the whole time"),
        claim(meeting=2, type="sighting", target="orange", room="o2"),
        claim(type="location", room="storage"),
    ]
    graded = audit_claims(t, claims)
    strict = audit_claims(t, claims, rules="strict")
    assert [r.verdict for r in graded] == ["true", "near_miss", "wrong_room", "false"]
    assert [r.verdict for r in strict] == ["true", "false", "false", "false"]
    assert {r.rules for r in strict} == {"strict"}
    assert strict[1].evidence["graded_verdict"] == "near_miss"
    assert strict[2].evidence["graded_verdict"] == "wrong_room"
    assert strict[1].reason.startswith("near_miss counted as false (strict)")
    # same windows and evidence otherwise; a verdict already yes or no is untouched
    assert [r.window for r in strict] == [r.window for r in graded]
    assert strict[0].reason == graded[0].reason and strict[3].evidence == graded[3].evidence


def test_a_settled_claim_grounds_a_later_accusation() -> None:
    t = game()
    # Pink claims round 1 in security "the whole time": it left for electrical.
    alibi = claim(
        speaker="pink", subject="pink", type="location", room="security", temporal="the whole time"
    )
    accusation = claim(meeting=2, type="accusation", target="pink")
    graded = audit_claims(t, [alibi, accusation])
    strict = audit_claims(t, [alibi, accusation], rules="strict")
    assert graded[0].verdict == "near_miss" and strict[0].verdict == "false"
    grounds = [g["kind"] for g in strict[1].evidence.get("grounds", [])]
    assert "target_claim_false" in grounds
    assert "target_claim_false" not in [g["kind"] for g in graded[1].evidence.get("grounds", [])]


def test_it_is_one_registration() -> None:
    assert "strict" in RULE_BOOKS and BOOKS.names().index("strict") > 0  # never the default
    assert isinstance(rule_book("strict"), StrictRuleBook)
