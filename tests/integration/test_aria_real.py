"""ARIA agents through the real openai and anthropic SDKs, against a local HTTP server
that speaks their APIs, playing on the real embedded server with eight real bots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.checks import log_violations
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Decision, read_events
from harness_aria.calls import REFERENCE_SAMPLING
from harness_aria.fake_answers import answer_http
from testkit.mock_api import MockAPIServer, RecordedRequest
from world.spec import load_map

pytestmark = pytest.mark.integration

OPENAI_KEY = "sk-test-openai-DO-NOT-LEAK-1234567890"
ANTHROPIC_KEY = "sk-ant-test-DO-NOT-LEAK-0987654321"


def responder(rec: RecordedRequest) -> str:
    return answer_http(rec.body)


@pytest.fixture(scope="module")
def aria_game(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, MockAPIServer]:
    out = tmp_path_factory.mktemp("aria")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", OPENAI_KEY)
    mp.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    with MockAPIServer(responder) as server:
        config = resolve_config(
            "quick",
            overrides={
                "seed": 6,
                "crew": {
                    "backend": "openai:gpt-4.1-mini",
                    "base_url": server.openai_base_url,
                    "spec": {"memory": "window", "reflection": "on"},
                },
                "impostor": {
                    "backend": "anthropic:claude-haiku-4-5",
                    "base_url": server.anthropic_base_url,
                    "spec": {"planning": "hierarchical", "prompt": "deterministic"},
                },
            },
        )
        try:
            result = play_game(config, load_map("skeld"), "minecraft", out)
        finally:
            mp.undo()
    return out, result, server


def test_aria_game_finishes_by_the_rules(aria_game: tuple[Path, Any, MockAPIServer]) -> None:
    out, result, _ = aria_game
    assert result.status == "ok", result.reason
    events = read_events(out / "events.jsonl")
    assert log_violations(events) == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["model_calls"] > 50 and summary["counts"]["tokens_in"] > 0
    assert summary["counts"]["infra_errors"] == 0
    assert summary["agents"]["red"]["kind"] == "aria"


def test_both_apis_were_spoken_with_images(aria_game: tuple[Path, Any, MockAPIServer]) -> None:
    _, _, server = aria_game
    apis = {r.api for r in server.requests}
    assert len(apis) == 2
    openai_images = [
        part
        for r in server.requests
        if r.path.endswith("/chat/completions")
        for m in r.body["messages"]
        if isinstance(m.get("content"), list)
        for part in m["content"]
        if part.get("type") == "image_url"
    ]
    assert openai_images and openai_images[0]["image_url"]["url"].startswith(
        "data:image/jpeg;base64,"
    )
    anthropic_images = [
        block
        for r in server.requests
        if r.path.endswith("/messages")
        for m in r.body["messages"]
        if isinstance(m.get("content"), list)
        for block in m["content"]
        if block.get("type") == "image"
    ]
    assert anthropic_images and anthropic_images[0]["source"]["media_type"] == "image/jpeg"
    cached = [
        r
        for r in server.requests
        if r.path.endswith("/messages")
        and any("cache_control" in b for b in r.body.get("system", []))
    ]
    assert cached  # the stable prefix is marked for prompt caching


def test_every_decision_is_recorded_with_its_calls(
    aria_game: tuple[Path, Any, MockAPIServer],
) -> None:
    out, _, _ = aria_game
    ds = [ev for ev in read_events(out / "events.jsonl") if isinstance(ev, Decision)]
    with_calls = [d for d in ds if d.calls]
    assert with_calls
    for d in with_calls:
        assert d.spec and d.spec["state"] in ("ego", "privileged")
        for c in d.calls:
            assert c.model in ("openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5")
            assert all("@" in p for p in c.prompts)
            assert c.latency_ms >= 0 and isinstance(c.raw, str)
            assert c.finish_reason in ("stop", "end_turn") and not c.truncated
            # both providers, the same rule: the reference's temperature per call kind;
            # move and mission calls send none (the model's own default), as the reference
            want, _ = REFERENCE_SAMPLING[c.purpose]
            assert c.settings.get("temperature") == want, c.purpose
            assert c.sent is not None
            assert c.sent.system_sha256 is None  # ARIA sends no persona text
            for sha in (c.sent.prefix_sha256, c.sent.user_sha256):
                assert (out / "prompts" / f"{sha}.txt").is_file()
            assert (c.sent.image_sha256 is not None) == c.image


def test_both_providers_got_the_same_temperatures(
    aria_game: tuple[Path, Any, MockAPIServer],
) -> None:
    _, _, server = aria_game
    allowed = {t for t, _ in REFERENCE_SAMPLING.values()}
    by_api: dict[str, set[float | None]] = {}
    for r in server.requests:
        temperature = r.body.get("temperature")
        assert temperature in allowed, (r.path, temperature)
        by_api.setdefault(r.api, set()).add(temperature)
    assert by_api["openai"] & by_api["anthropic"] - {None}


def test_api_keys_never_reach_any_file(aria_game: tuple[Path, Any, MockAPIServer]) -> None:
    out, _, server = aria_game
    assert any(OPENAI_KEY in " ".join(r.headers.values()) for r in server.requests)
    for f in out.rglob("*"):
        if f.is_file() and f.suffix in (".jsonl", ".json", ".log", ".txt", ""):
            text = f.read_text(errors="replace")
            assert OPENAI_KEY not in text and ANTHROPIC_KEY not in text, f
