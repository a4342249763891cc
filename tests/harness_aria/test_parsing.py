"""The lenient JSON reader and the value normalisers: what is tolerated, what is refused."""

from __future__ import annotations

from typing import Any

import pytest

from harness_aria.calls import extract_json
from harness_aria.parsing import AnswerError, AnswerReader, read_json

ROOMS = ["cafeteria", "lower_engine", "upper_engine", "o2", "medbay", "electrical"]
PLAYERS = ["red", "blue", "yellow", "green"]


@pytest.mark.parametrize(
    ("text", "value", "repairs"),
    [
        ('{"a": 1}', {"a": 1}, []),
        ('```json\n{"a": 1}\n```', {"a": 1}, ["code fence"]),
        ('```\n{"a": 1}\n```', {"a": 1}, ["code fence"]),
        ('I think we should go.\n{"a": 1}', {"a": 1}, ["prose around the object"]),
        ('{"a": 1}\nThat is my answer.', {"a": 1}, ["prose around the object"]),
        ('{"a": [1, 2,], "b": 2,}', {"a": [1, 2], "b": 2}, ["trailing comma"]),
        (
            '{"a": True, "b": False, "c": None}',
            {"a": True, "b": False, "c": None},
            ["Python literal"],
        ),
        (
            '{"text": "line one\nline two"}',
            {"text": "line one\nline two"},
            ["raw line break in a string"],
        ),
        ("{'room': 'medbay'}", {"room": "medbay"}, ["single quotes"]),
        ('{"detail": "I don\'t see anyone"}', {"detail": "I don't see anyone"}, []),
        ('{"detail": "a } brace", "n": 1}', {"detail": "a } brace", "n": 1}, []),
        (
            'Here you go:\n```json\n{"room": "Lower Engine", "ok": True,}\n```\nGood luck!',
            {"room": "Lower Engine", "ok": True},
            ["code fence", "Python literal", "trailing comma"],
        ),
    ],
)
def test_lenient_reader(text: str, value: dict[str, Any], repairs: list[str]) -> None:
    read = read_json(text)
    assert read.value == value
    assert sorted(read.repairs) == sorted(repairs)
    assert extract_json(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no json here", "no JSON object"),
        ('{"module": "MOVE", "reasoning": "I will go to', "cut off"),
        ("[1, 2, 3]", "no JSON object"),
        ("", "no JSON object"),
    ],
)
def test_unreadable_answers_are_refused(text: str, message: str) -> None:
    with pytest.raises(AnswerError, match=message):
        read_json(text)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (True, "yes"),
        (False, "no"),
        ("true", "yes"),
        ("True", "yes"),
        ("yes", "yes"),
        ("Yes.", "yes"),
        (1, "yes"),
        ("false", "no"),
        ("no", "no"),
        ("No", "no"),
        (0, "no"),
        ("maybe", "unknown"),
        (None, "unknown"),
        ("", "unknown"),
        (2, "unknown"),
        ([True], "unknown"),
    ],
)
def test_booleans_are_never_reversed(raw: Any, expected: str) -> None:
    read = AnswerReader({"flag": raw})
    assert read.flag("flag") == expected
    if not isinstance(raw, bool):
        assert read.normalised and read.normalised[0].startswith("flag: ")
    else:
        assert read.normalised == []


def test_a_missing_flag_is_unknown_not_no() -> None:
    assert AnswerReader({}).flag("should_report") == "unknown"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("lower_engine", "lower_engine"),
        ("Lower Engine", "lower_engine"),
        ("lower engine", "lower_engine"),
        ("LOWER-ENGINE", "lower_engine"),
        ("the Lower Engine.", "lower_engine"),
        ("O2", "o2"),
        ("Med Bay", "medbay"),
        ("Engine", None),
        ("kitchen", None),
        (None, None),
        (3, None),
    ],
)
def test_rooms(raw: Any, expected: str | None) -> None:
    read = AnswerReader({"room": raw})
    assert read.choice("room", ROOMS) == expected
    assert bool(read.normalised) == (expected is not None and expected != raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("yellow", "yellow"),
        ("yellow.", "yellow"),
        ("Yellow", "yellow"),
        ('"Yellow"', "yellow"),
        ("  Yellow!  ", "yellow"),
        ("yel", None),
        ("purple", None),
    ],
)
def test_player_names(raw: str, expected: str | None) -> None:
    assert AnswerReader({"p": raw}).choice("p", PLAYERS) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (2, 2),
        (2.0, 2),
        ("2", 2),
        ("station 2", 2),
        ("Station 2", 2),
        ("station #2", 2),
        ("#2", 2),
        ("2 (in medbay)", 2),
        ("Station 2 in medbay", 2),
        (2.5, None),
        ("two", None),
        (9, None),
        (True, None),
        (None, None),
    ],
)
def test_station_ids(raw: Any, expected: int | None) -> None:
    read = AnswerReader({"station": raw})
    assert read.station("station", [1, 2, 3]) == expected
    if expected is not None and raw != expected or isinstance(raw, float):
        assert read.normalised == [f"station: {raw!r} -> {expected!r}"] or expected is None


@pytest.mark.parametrize(
    ("raw", "skip", "abstain"),
    [
        ("skip", True, False),
        ("Skip.", True, False),
        ("SKIP", True, False),
        ("skip vote", True, False),
        (None, True, False),
        ("none", True, False),
        ("None", True, False),
        ("null", True, False),
        ("nobody", True, False),
        ("no one", True, False),
        ("abstain", False, True),
        ("Abstain.", False, True),
        ("ABSTENTION", False, True),
        ("red", False, False),
    ],
)
def test_skip_and_abstain_words_are_kept_apart(raw: Any, skip: bool, abstain: bool) -> None:
    read = AnswerReader({"vote_target": raw})
    assert read.is_skip("vote_target") is skip
    assert read.is_abstain("vote_target") is abstain


@pytest.mark.parametrize(
    "raw",
    [None, "none", "None.", "NULL", "nobody", "Nobody!", "no one", "No one.", "No-one", "noone",
     "no_one", "'nobody'", "skip", "Skip.", ""],
)  # fmt: skip
def test_every_way_of_naming_no_one_is_a_skip_ballot_and_noted(raw: Any) -> None:
    # These were read as abstentions (no ballot), which turned meetings that ended
    # "skipped" into "tie"; now they count toward the skip tally, and the reading is noted.
    read = AnswerReader({"vote_target": raw})
    assert read.is_skip("vote_target") is True
    assert read.is_abstain("vote_target") is False
    if raw == "skip":
        assert read.normalised == []
    else:
        assert read.normalised == [f"vote_target: {raw!r} -> 'skip'"]


def test_only_the_word_abstain_is_an_abstention_and_a_missing_key_is_neither() -> None:
    read = AnswerReader({"vote_target": "Abstain."})
    assert read.is_abstain("vote_target") and not read.is_skip("vote_target")
    assert read.normalised == ["vote_target: 'Abstain.' -> 'abstain'"]
    missing = AnswerReader({"vote": "yellow"})
    assert not missing.is_skip("vote_target") and not missing.is_abstain("vote_target")
    assert missing.normalised == []


def test_name_lists_from_a_list_or_a_string() -> None:
    assert AnswerReader({"s": ["Red", "blue.", "ghost"]}).names("s", PLAYERS) == ["red", "blue"]
    read = AnswerReader({"s": "Red, Yellow and blue"})
    assert read.names("s", PLAYERS) == ["red", "yellow", "blue"]
    assert read.normalised
