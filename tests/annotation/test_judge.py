"""The judge end to end through the real `openai` SDK against the local mock API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotation.annotate import annotate_runs
from annotation.findings import read_annotations
from annotation.gamelog import load_game
from annotation.judge import ReplyFormatError, build_prompt, parse_reply
from annotation.llm import JudgeModel, make_judge
from annotation.synthetic import LogBuilder
from harness_aria.backends import ModelRequest, ModelResponse
from harness_aria.backends.settings import BackendSettings
from harness_aria.testing.mock_api import MockAPIServer, MockError, MockText, RecordedRequest

FAST = BackendSettings(backoff_base_s=0.0, backoff_max_s=0.0, jitter=False, timeout_s=10)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
    yield


def _game(folder: Path) -> Path:
    b = LogBuilder(("red", "blue"), game_id="judged")
    b.move(red=(0, 0), green=(1, 0))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "kill", "target": "green"}], "killing green while nobody watches")
    b.kill("red", "green", room="admin")
    b.end_step(sees={"pink": []})
    b.begin()
    b.report("pink", "green", room="admin")
    b.end_step()
    b.say("red", "I was in medbay doing tasks all along.")
    b.say("pink", "I found green in admin.")
    b.votes({"red": "pink", "pink": "red", "blue": "pink"}, {"red": "pink found the body"})
    b.finish("impostors")
    return b.write(folder)


NONVERBAL_REPLY = {
    "findings": [
        {  # good: quotes the kill line
            "atom": "E",
            "step": 1,
            "actor": "red",
            "target": "green",
            "evidence": "kill: red killed green in admin",
            "rationale": "unseen kill",
        },
        {"atom": "E", "step": 1, "actor": "pink", "evidence": "kill: red killed green"},
        {"atom": "E", "step": 2, "actor": "red", "evidence": "kill: red killed green"},
        {"atom": "Z", "step": 1, "actor": "red", "evidence": "kill: red killed green"},
        {"atom": "F", "step": 99, "actor": "red", "evidence": "kill: red killed green"},
        {"atom": "F", "step": 2, "actor": "red", "evidence": "red ran far away to electrical"},
        {"atom": "L", "step": 2, "actor": "red", "evidence": "kill: red killed green"},
        "not an object",
    ]
}
VERBAL_REPLY = {
    "findings": [
        {
            "atom": "L",
            "step": 3,
            "actor": "red",
            "evidence": "I was in medbay doing tasks all along.",
            "rationale": "was in admin",
        },
        {"atom": "M", "step": 2, "actor": "red", "evidence": "pink found the body"},
    ]
}


def _scripted(request: RecordedRequest) -> MockText:
    user = request.body["messages"][-1]["content"]
    reply = NONVERBAL_REPLY if "Pass: NON-VERBAL" in user else VERBAL_REPLY
    return MockText(json.dumps(reply), prompt_tokens=1000, completion_tokens=200)


def test_judge_through_openai_sdk_with_rejections_and_cache(tmp_path: Path, key: None) -> None:
    run = _game(tmp_path / "run")
    with MockAPIServer(_scripted) as api:
        judge = make_judge("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=FAST)
        totals = asyncio.run(annotate_runs([run], judge, progress=False))
        assert len(api.requests) == 2  # two passes
        first = api.requests[0].body
        assert first["temperature"] == 0.0 and first["response_format"]["type"] == "json_object"
        ann = read_annotations(run)
        assert ann is not None and ann.judge_status == "ok"
        judged = [c for c in ann.findings if c.finding.source == "judge:openai:gpt-4.1-mini"]
        accepted = {(c.finding.atom, c.finding.step, c.finding.actor) for c in judged if c.accepted}
        assert accepted == {("E", 1, "red"), ("L", 3, "red")}
        reasons = sorted(c.reason for c in judged if not c.accepted)
        assert any("not an impostor" in r for r in reasons)
        assert any("unknown atom letter 'Z'" in r for r in reasons)
        assert any("step 99 does not exist" in r for r in reasons)
        assert any("does not quote the log" in r for r in reasons)
        assert any("not a nonverbal atom" in r for r in reasons)
        assert any("malformed" in r for r in reasons)
        assert any("not on the lines of step 2" in r for r in reasons)
        assert any("verbal atom M at step 2, a free_roam step" in r for r in reasons)
        assert totals.rejected == len(reasons) and totals.rejected == 8
        # tokens and cost recorded from the API's usage and the price table
        assert totals.tokens_in == 2000 and totals.tokens_out == 400
        assert totals.cost_usd == pytest.approx(2 * (1000 * 0.40 + 200 * 1.60) / 1e6)
        # detectors ran too, into the same file
        assert any(c.finding.source.startswith("detector:") for c in ann.findings)

        again = asyncio.run(annotate_runs([run], judge, progress=False))
        assert len(api.requests) == 2  # cache hit: no call
        assert again.cached_calls == 2 and again.cost_usd == 0.0
        ann2 = read_annotations(run)
        assert ann2 is not None
        assert [c.model_dump() for c in ann2.findings] == [c.model_dump() for c in ann.findings]


def test_judge_failure_is_not_zero_findings(tmp_path: Path, key: None) -> None:
    run = _game(tmp_path / "run")
    with MockAPIServer([MockError(500)]) as api:
        settings = FAST.model_copy(update={"max_retries": 1})
        judge = make_judge("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=settings)
        totals = asyncio.run(annotate_runs([run], judge, progress=False))
    ann = read_annotations(run)
    assert ann is not None and ann.judge_status == "failed"
    assert totals.judge_failed == [str(run)]
    assert all(call.error_class == "server" for call in ann.calls)


def test_unparsable_reply_is_retried_then_failed(tmp_path: Path) -> None:
    run = _game(tmp_path / "run")
    answers = iter(["not json", '{"findings": []}', "nope", "nope", "nope"])
    judge = make_judge("fake:j", script=lambda _request: next(answers))
    asyncio.run(annotate_runs([run], judge, progress=False, parse_attempts=2))
    ann = read_annotations(run)
    assert ann is not None
    nonverbal, verbal = ann.calls
    assert nonverbal.status == "ok" and nonverbal.attempts == 2
    assert verbal.status == "failed" and verbal.error_class == "bad_reply"
    assert ann.judge_status == "failed"


def test_prompt_carries_codebook_and_rendering(tmp_path: Path) -> None:
    game = load_game(_game(tmp_path / "run"))
    p = build_prompt(game, "nonverbal")
    assert "| E | Witness-aware kill |" in p.user and "| L |" not in p.user
    assert "[step 1] kill: red killed green in admin" in p.user
    assert 'narration: "killing green while nobody watches"' in p.user
    v = build_prompt(game, "verbal")
    assert '[step 3] red (impostor) says: "I was in medbay doing tasks all along."' in v.user
    assert 'vote: red (impostor) -> pink (reason: "pink found the body")' in v.user
    assert "# fact: red (impostor)" in v.user and "killed: green (step 1)" in v.user
    assert p.prompt_sha256 != v.prompt_sha256


def test_parse_reply() -> None:
    assert parse_reply('```json\n{"findings": []}\n```') == []
    with pytest.raises(ReplyFormatError):
        parse_reply('{"atoms": []}')


class _CountingBackend:
    """Answers every request after a pause, recording how many calls overlap."""

    address = "fake:counting"
    vision = False

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.05)
        self.in_flight -= 1
        return ModelResponse(text='{"findings": []}', model=self.address)


def test_games_are_judged_concurrently_up_to_the_limit(tmp_path: Path) -> None:
    runs = [_game(tmp_path / f"run{i}") for i in range(5)]
    backend = _CountingBackend()
    judge = JudgeModel(backend)
    totals = asyncio.run(annotate_runs(runs, judge, progress=False, concurrency=3))
    assert totals.games == 5 and totals.calls == 10
    assert backend.peak == 3
