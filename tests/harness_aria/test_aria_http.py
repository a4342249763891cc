"""ARIA games (fake world) against a local endpoint through the real SDKs: one that
misbehaves, and one that answers and bills a repeated prompt start as cached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main, play_game
from controller.config import resolve_config
from controller.events import Decision, read_events
from testkit.mock_api import MockAPIServer, MockError, nonsense
from world.spec import load_map

FAST = {"max_retries": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.02, "timeout_s": 5}


def _play(  # type: ignore[no-untyped-def]
    tmp: Path,
    server: MockAPIServer,
    backend: str,
    base_url: str,
    *,
    max_steps: int = 4,
    both_sides: bool = False,
    spec: dict[str, Any] | None = None,
):
    """A quick game (seed 3) with the crew on `backend` at the local endpoint, and the
    impostors too (`both_sides`) or scripted; `spec` is the ARIA sides' spec."""
    side = {"backend": backend, "base_url": base_url, "settings": FAST, "spec": spec or {}}
    config = resolve_config(
        "quick",
        overrides={
            "seed": 3,
            "rules": {"max_steps": max_steps},
            "frames": "off",
            "crew": side,
            "impostor": side if both_sides else {"backend": "scripted"},
        },
    )
    return play_game(config, load_map("skeld"), "fake", tmp)


def test_nonsense_endpoint_game_finishes_with_failures_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-nonsense")
    with MockAPIServer(nonsense()) as server:
        result = _play(tmp_path, server, "openai:gpt-4.1-mini", server.openai_base_url)
    assert result.status == "ok"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["invalid_decisions"] > 0
    assert summary["counts"]["infra_errors"] == 0
    crew = [
        d
        for d in read_events(tmp_path / "events.jsonl")
        if isinstance(d, Decision)
        and summary["roles"][d.agent] == "crewmate"
        and d.phase == "free_roam"
    ]
    assert crew and all(d.error_kind == "model" and "banana" in d.raw for d in crew)


def test_rate_limited_endpoint_game_finishes_with_failures_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-ratelimit")
    limited = MockError(
        status=429, message="slow down", error_type="rate_limit_error", headers={"retry-after": "0"}
    )
    with MockAPIServer(lambda rec: limited) as server:
        result = _play(tmp_path, server, "anthropic:claude-haiku-4-5", server.anthropic_base_url)
    assert result.status == "ok"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["infra_errors"] > 0
    assert summary["counts"]["invalid_decisions"] == 0
    calls = [
        c
        for d in read_events(tmp_path / "events.jsonl")
        if isinstance(d, Decision)
        for c in d.calls
    ]
    assert calls and all(c.error_class == "rate_limit" and c.attempts == 3 for c in calls)


def test_exhausted_quota_stops_cleanly_and_is_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-quota")
    quota = MockError(
        status=429,
        message="You exceeded your current quota",
        error_type="insufficient_quota",
        code="insufficient_quota",
    )
    with MockAPIServer(lambda rec: quota) as server:
        result = _play(tmp_path, server, "openai:gpt-4.1-mini", server.openai_base_url)
    assert result.status == "invalid" and "quota" in result.reason
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["resumable"] is True
    assert len(server.requests) == 1 or all(r.index < 8 for r in server.requests)


def test_missing_key_fails_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run"
    assert main(["play", "--crew", "openai:gpt-4.1-mini", "--out", str(out)]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("address", "key"),
    [("openai:gpt-5-mini", "OPENAI_API_KEY"), ("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY")],
)
def test_refused_setting_stops_the_game_naming_it(
    address: str, key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reasoning model refusing `temperature` must not turn every decision into an
    # invalid move of the model: the game stops as a configuration fault.
    monkeypatch.setenv(key, "sk-test-refused")
    refused = MockError(400, "Unsupported parameter: 'temperature' is not supported.")
    with MockAPIServer(lambda rec: refused) as server:
        base = server.anthropic_base_url if key.startswith("ANTHROPIC") else server.openai_base_url
        result = _play(tmp_path, server, address, base)
    assert result.status == "invalid"
    assert "configuration" in result.reason and "temperature" in result.reason
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["invalid_decisions"] == 0


@pytest.mark.parametrize(
    ("layout", "profile"),
    [("as shipped", "lean"), ("moment first (planted)", "lean"), ("as shipped", "reference")],
)
def test_a_meetings_calls_are_billed_as_cached_through_the_real_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str, profile: str
) -> None:
    """An ARIA game on `openai:gpt-4.1-mini` against the local endpoint, which answers as
    the offline fake does and bills a repeated prompt start as cached by OpenAI's rules:
    the game's log records cached input on its meeting and ballot calls (an agent's next
    call repeats its last one through that call's chat). With the lines of the moment
    planted back in front of the roster and the chat, the shared start ends at the step
    line and no meeting call is billed as cached.

    The layout is measured on the lean profile's game, whose shared prefix and template
    stay under OpenAI's 1,024-token minimum, so only the view's order decides; the
    reference profile's personal message lifts that shared start over the minimum, so its
    meeting calls are billed as cached whatever the view's order (checked as shipped)."""
    import harness_aria.agent as aria_agent
    from harness_aria.fake_answers import answer_http

    if layout != "as shipped":
        shipped = aria_agent.render_view_layout

        def moment_first(view: Any, *args: Any) -> tuple[str, str, str]:
            head, tasks, rest = shipped(view, *args)
            lines = rest.splitlines()
            moment = [line for line in lines if line.startswith(("Step ", "Meeting: "))]
            return head, tasks, "\n".join(moment + [line for line in lines if line not in moment])

        monkeypatch.setattr(aria_agent, "render_view_layout", moment_first)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cache")
    with MockAPIServer(lambda rec: answer_http(rec.body)) as server:
        result = _play(
            tmp_path,
            server,
            "openai:gpt-4.1-mini",
            server.openai_base_url,
            max_steps=30,
            both_sides=True,
            spec={"profile": profile},
        )
    assert result.status == "ok"
    cached = {"meeting": 0, "vote": 0}
    for d in read_events(tmp_path / "events.jsonl"):
        if isinstance(d, Decision):
            for c in d.calls:
                if c.purpose in cached:
                    cached[c.purpose] += c.tokens_cached
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["meetings"] >= 1
    if layout == "as shipped":
        assert cached["meeting"] > 0 and cached["vote"] > 0, cached
        assert summary["counts"]["tokens_cached"] >= sum(cached.values())
    else:
        assert cached == {"meeting": 0, "vote": 0}


def test_two_games_played_at_once_never_share_a_cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each agent's requests carry one `prompt_cache_key` (its calls stay on one cache),
    and two games' keys differ although their seats have the same colours (games played
    at once would otherwise pile onto the same eight keys and spill out of the cache)."""
    from harness_aria.fake_answers import answer_http

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-keys")
    keys: list[set[str]] = []
    for game in ("a", "b"):
        with MockAPIServer(lambda rec: answer_http(rec.body)) as server:
            result = _play(
                tmp_path / game,
                server,
                "openai:gpt-4.1-mini",
                server.openai_base_url,
                max_steps=2,
                both_sides=True,
            )
            assert result.status == "ok"
            keys.append({str(r.body["prompt_cache_key"]) for r in server.requests})
    assert all(len(k) == 8 for k in keys)  # one key per seat
    assert all(k.startswith("mineamongus-") for k in keys[0] | keys[1])
    assert not keys[0] & keys[1]
