"""Claim structure, normalisation and the two extractors (rules; a model via `fake`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.grounding.claims import (
    ACTIVITIES,
    Claim,
    ModelExtractor,
    RuleExtractor,
    cache_key,
    dedupe,
    normalise_activity,
    normalise_phrase,
    normalise_player,
    normalise_room,
    phrase_words,
    read_claims,
    write_claims,
)
from annotation.grounding.trajectory import Trajectory, build_trajectory
from annotation.llm import JudgeModel, ReplyCache, make_judge
from harness_aria.backends.base import BackendError, CredentialsError
from harness_aria.backends.fake import FakeBackend
from testkit.logs import GameBuilder

ROOMS = ["cafeteria", "o2", "electrical", "medbay", "upper_engine", "communications", "admin"]


def test_room_names_are_normalised() -> None:
    assert normalise_room("Oxygen", ROOMS) == "o2"
    assert normalise_room("elec", ROOMS) == "electrical"
    assert normalise_room("Med Bay", ROOMS) == "medbay"
    assert normalise_room("med-bay", ROOMS) == "medbay"
    assert normalise_room("the Upper Engine", ROOMS) == "upper_engine"
    assert normalise_room("upper-engine room", ROOMS) == "upper_engine"
    assert normalise_room("comms", ROOMS) == "communications"
    assert normalise_room("corridor", ROOMS) == "hallway"
    assert normalise_room("the bridge", ROOMS) is None


def test_players_and_activities_are_normalised() -> None:
    agents = ["red", "blue"]
    assert normalise_player("Red", agents) == "red"
    assert normalise_player("player BLUE", agents) == "blue"
    assert normalise_player("Red's", agents) == "red"
    assert normalise_player("Purple", agents) is None
    assert normalise_activity("doing tasks") == "task"
    assert normalise_activity("found the body") == "report"
    assert normalise_activity("pressed button") == "call_meeting"
    assert normalise_activity("stayed") == "wait"
    assert normalise_activity("traveling") == "travel"
    assert normalise_activity("killed") == "kill"
    assert normalise_activity("juggling") is None


def test_claims_round_trip_as_jsonl_and_accept_quack_aliases(tmp_path: Path) -> None:
    c = Claim.model_validate(
        {
            "meeting": 1,
            "speaker": "red",
            "utterance": 2,
            "type": "ACCUSATION",
            "accuser": "red",
            "target": "blue",
            "confidence": "strong",
            "text": "Blue did it",
        }
    )
    d = Claim.model_validate(
        {
            "meeting": 1,
            "speaker": "red",
            "utterance": 2,
            "type": "defense",
            "defender": "red",
            "defended": "green",
            "basis": "with me",
        }
    )
    assert (c.type, c.subject, d.subject, d.target) == ("accusation", "red", "red", "green")
    path = tmp_path / "claims.jsonl"
    write_claims(path, [c, d])
    assert read_claims(path) == [c, d]
    assert set(json.loads(path.read_text().splitlines()[0])) >= {
        "meeting",
        "speaker",
        "utterance",
        "type",
        "subject",
        "room",
        "route",
        "target",
        "activity",
        "temporal",
        "confidence",
        "text",
    }


def test_a_malformed_claim_file_names_the_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"meeting": 1, "speaker": "red", "type": "location"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: field .utterance."):
        read_claims(path)


def test_dedupe_within_an_utterance() -> None:
    a = Claim(meeting=1, speaker="red", utterance=1, type="location", subject="red", room="o2")
    b = a.model_copy(update={"text": "again"})
    c = a.model_copy(update={"utterance": 2})
    assert dedupe([a, b, c]) == [a, c]


def _talk_game() -> Trajectory:
    g = GameBuilder()
    g.free_roam({"red": ["admin"]}, emergency="red")
    g.talk(
        [
            (
                "red",
                "I pressed the emergency button. I saw Pink with Blue in admin at tick 40. "
                "I suspect Pink. I was in admin at tick 90. I have done 1 of my 3 tasks.",
            ),
            (
                "green",
                "I found Blue's body in electrical. I saw Pink next to Blue's body in "
                "electrical at tick 70. I suspect Pink.",
            ),
            ("pink", "I was doing tasks in medbay. I suspect Green too."),
            ("orange", "I was in Med Bay doing tasks. I last saw Pink near the body."),
            ("blue", "I have no evidence against anyone. I believe Green."),
        ]
    )
    return build_trajectory(g.end())


def test_rule_extractor_parses_the_scripted_templates() -> None:
    res = RuleExtractor().extract(_talk_game())
    got = [
        (c.speaker, c.type, c.subject, c.room, c.activity, c.target, c.temporal) for c in res.claims
    ]
    assert got == [
        ("red", "activity", "red", None, "call_meeting", None, None),
        ("red", "sighting", "red", "admin", None, "pink", "at tick 40"),
        ("red", "sighting", "red", None, None, "blue", "at tick 40"),
        ("red", "accusation", "red", None, None, "pink", None),
        ("red", "location", "red", "admin", None, None, "at tick 90"),
        ("green", "activity", "green", "electrical", "report", "blue", None),
        ("green", "sighting", "green", "electrical", None, "pink", "at tick 70"),
        ("green", "accusation", "green", None, None, "pink", None),
        ("pink", "location", "pink", "medbay", None, None, None),
        ("pink", "activity", "pink", "medbay", "task", None, None),
        ("pink", "accusation", "pink", None, None, "green", None),
        # An older revision's sentences, still read from old logs.
        ("orange", "location", "orange", "medbay", None, None, None),
        ("orange", "activity", "orange", "medbay", "task", None, None),
        ("orange", "sighting", "orange", None, None, "pink", "earlier"),
    ]
    assert res.utterances == 5


def test_rule_extractor_follows_the_agents_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    import controller.agents.scripted as scripted

    monkeypatch.setitem(scripted.SPEECH_TEMPLATES, "was_in", "My spot was {room} at tick {tick}.")
    g = GameBuilder()
    g.free_roam({"red": ["admin"]}, emergency="red")
    g.talk([("red", "My spot was admin at tick 90.")])
    (c,) = RuleExtractor().extract(build_trajectory(g.end())).claims
    assert (c.type, c.room, c.temporal) == ("location", "admin", "at tick 90")


def _answer(claims: list[dict[str, object]]) -> str:
    return json.dumps({"claims": claims})


def test_model_extractor_through_the_fake_backend_with_cache(tmp_path: Path) -> None:
    traj = _talk_game()
    answers = [
        _answer(
            [
                {"type": "location", "subject": "I", "room": "Admin"},
                {"type": "location", "subject": "I", "room": "admin"},
            ]
        ),
        _answer(
            [
                {
                    "type": "activity",
                    "subject": "green",
                    "activity": "found body",
                    "room": "elec",
                    "target": "Blue",
                }
            ]
        ),
        "not json",
        BackendError("rate_limit", "429 after retries"),
        _answer([]),
    ]
    backend = FakeBackend("x", script=answers)
    cache = ReplyCache(tmp_path / "cache")
    res = ModelExtractor(JudgeModel(backend), cache).extract(traj)
    assert [(c.speaker, c.type, c.room, c.activity) for c in res.claims] == [
        ("red", "location", "admin", None),
        ("green", "activity", "electrical", "report"),
    ]
    assert [(f.speaker, f.error_kind) for f in res.failures] == [
        ("pink", "model"),
        ("orange", "infrastructure"),
    ]
    assert backend.requests[0].purpose == "claim_extraction"
    assert "Statement by red" in backend.requests[0].messages[0].text
    # The extractor goes through annotation's one model path, as the judge does: one user
    # message, JSON mode, temperature 0.
    assert [m.role for m in backend.requests[0].messages] == ["user"]
    assert backend.requests[0].json_mode and backend.requests[0].temperature == 0.0
    # A second run asks only for what was not cached (the failed infrastructure call,
    # and nothing is cached for it), reading the rest back from the folder.
    again = FakeBackend("x", script=[_answer([])])
    res2 = ModelExtractor(JudgeModel(again), ReplyCache(tmp_path / "cache")).extract(traj)
    assert len(again.requests) == 1 and "Statement by orange" in again.requests[0].messages[0].text
    assert [c.speaker for c in res2.claims] == ["red", "green"]
    assert [f.speaker for f in res2.failures] == ["pink"]


def test_cache_key_covers_model_prompt_speaker_meeting_and_message() -> None:
    k = cache_key("m", "red", 1, "hi")
    assert k != cache_key("m2", "red", 1, "hi")
    assert k != cache_key("m", "blue", 1, "hi")
    assert k != cache_key("m", "red", 2, "hi")
    assert k != cache_key("m", "red", 1, "hi!")
    assert k == cache_key("m", "red", 1, "hi")


def test_the_fake_extractor_answers_no_claims_and_an_unusable_answer_is_counted() -> None:
    # `--extractor fake`: a valid, empty answer for every turn (the audit runs offline).
    res = ModelExtractor(make_judge("fake", flag="--extractor"), ReplyCache(None)).extract(
        _talk_game()
    )
    assert res.claims == [] and res.utterances == 5 and res.failures == []
    # A backend whose answer holds no `claims` list: an unusable answer, counted.
    other = JudgeModel(FakeBackend("x", responses={"claim_extraction": '{"findings": []}'}))
    res = ModelExtractor(other, ReplyCache(None)).extract(_talk_game())
    assert res.claims == [] and len(res.failures) == 5
    assert {f.error_kind for f in res.failures} == {"model"}


def test_a_missing_key_names_the_extractor_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(CredentialsError, match="--extractor rules"):
        make_judge("openai:gpt-4.1-mini", flag="--extractor")


def test_activity_phrases_match_after_normalisation() -> None:
    variants = {
        "call_meeting": [
            "calling meeting",
            "Called a meeting",
            "called an emergency meeting",
            "calls the meeting",
            "pressing the button",
            "Pressed the emergency button",
            "presses the button",
            "call_meeting",
        ],
        "task": ["Doing my tasks", "doing a task", "did the tasks", "finished my task"],
        "report": ["reported the body", "found a dead body", "Finding bodies", "REPORTING"],
        "wait": ["waited", "stood there", "idle"],
        "travel": ["walking around", "passed through", "went through", "moving"],
        "kill": ["kills", "murdered"],
    }
    for activity, phrases in variants.items():
        for phrase in phrases:
            assert normalise_activity(phrase) == activity, phrase
    # The longest run of words that is a synonym wins, leftmost first.
    assert normalise_activity("called a meeting after finding the body") == "call_meeting"
    assert normalise_activity("juggling") is None
    assert normalise_activity("the meeting") is None


def test_the_activity_vocabulary_is_in_normal_form_and_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "grounding.md").read_text()
    for activity, synonyms in ACTIVITIES.items():
        for syn in synonyms:
            assert "_".join(phrase_words(syn)) == syn, syn
            assert normalise_activity(syn) == activity, syn
            shown = syn if syn == activity else syn.replace("_", " ")
            assert f"`{shown}`" in doc, f"docs/grounding.md does not list {shown!r}"


def test_phrases_are_normalised_for_case_articles_and_plurals() -> None:
    assert phrase_words("The Last Round.") == ["last", "round"]
    assert normalise_phrase("since the last meeting") == normalise_phrase("Since last meeting")
    assert normalise_phrase("doing my tasks") == "doing task"
    assert normalise_phrase("bodies, presses, steps") == "body press step"
    assert normalise_phrase("around tick 1,050") == "around tick 1050"
    assert normalise_phrase("ticks 100-200") == "tick 100 200"


def test_the_reply_cache_keeps_whole_replies_and_survives_a_crash(tmp_path: Path) -> None:
    cache = ReplyCache(tmp_path / "c")
    key = ReplyCache.key("m", "v1", "red", "1", "h")
    assert key != ReplyCache.key("m", "v1", "red", "2", "h")
    cache.put(key, {"answer": "{}"})
    # a reply half written when a run was killed (its temporary file) is never read
    (tmp_path / "c" / f"{ReplyCache.key('other')}.json.tmp").write_text('{"ans')
    again = ReplyCache(tmp_path / "c")
    assert again.get(key) == {"answer": "{}"}
    assert again.get(ReplyCache.key("other")) is None
    memory = ReplyCache(None)
    memory.put(key, {"answer": "x"})
    assert memory.get(key) == {"answer": "x"} and not (tmp_path / "None").exists()


def test_rule_extractor_reads_the_rulers_newer_evidence_sentences() -> None:
    """The kill seen across two looks, a sighting against a stated room, a fake task."""
    g = GameBuilder()
    g.free_roam({"red": ["admin"]}, emergency="red")
    g.talk(
        [
            (
                "red",
                "I saw Pink with Blue at tick 30 and by the body in admin at tick 50. "
                "I saw Green in medbay at tick 60. "
                "I saw Orange at station 3 in admin at tick 70, too briefly for a task.",
            )
        ]
    )
    got = [
        (c.type, c.room, c.target, c.temporal)
        for c in RuleExtractor().extract(build_trajectory(g.end())).claims
    ]
    assert got == [
        ("sighting", None, "pink", "at tick 30"),
        ("sighting", None, "blue", "at tick 30"),
        ("sighting", "admin", "pink", "at tick 50"),
        ("sighting", "medbay", "green", "at tick 60"),
        ("sighting", "admin", "orange", "at tick 70"),
    ]
