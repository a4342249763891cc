"""Per-call sampling (`AriaSpec.call_sampling`): each call kind's temperature and token
limit as the reference sets them, passed through to the fake, OpenAI and Anthropic
backends; `model` keeps the module's budget under the side's own settings."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Decision, read_events
from harness_aria.backends.fake import FakeBackend
from harness_aria.backends.registry import make_backend
from harness_aria.backends.settings import BackendSettings, ModelSettings, resolve_sampling
from harness_aria.calls import REFERENCE_SAMPLING, CallSetup, HarnessedBackend, ask
from harness_aria.toolkit import BUDGETS
from testkit.mock_api import MockAPIServer
from world.spec import load_map

pytestmark = pytest.mark.usefixtures("fake_keys")

REFERENCE = {
    "planner": (0.3, 256),
    "planner_long": (0.3, 256),
    "reflection": (0.3, 256),
    "belief_update": (0.2, 256),
    "meeting": (0.7, 256),
    "vote": (0.2, 256),
    "kill_scan": (0.2, 256),
    "surveillance": (0.2, 256),
    "report": (0.2, 256),
    "emergency": (0.2, 256),
    "move": (None, 512),
    "mission": (None, 512),
    "codegen": (0.2, 1024),
}
"""The reference's figures (`mineland/aria/aria_agent.py`), written out here on purpose:
the table in `harness_aria.calls` must match them, not itself."""


def _ask(backend: Any, purpose: str, sampling: str, budget: tuple[float, int] = (0.5, 99)) -> Any:
    harnessed = HarnessedBackend(backend, CallSetup(sampling=sampling))  # type: ignore[arg-type]
    return asyncio.run(
        ask(
            harnessed,
            purpose=purpose,
            system="",
            user="state",
            question="Answer as JSON: {}",
            prompts=[],
            temperature=budget[0],
            max_tokens=budget[1],
        )
    )


def test_the_table_is_the_references() -> None:
    assert REFERENCE_SAMPLING == REFERENCE


@pytest.mark.parametrize("purpose", sorted(REFERENCE))
def test_each_call_kind_is_sent_its_reference_sampling_through_the_fake(purpose: str) -> None:
    fake = FakeBackend("t")
    record = _ask(fake, purpose, "reference")
    request = fake.requests[-1]
    temperature, max_tokens = REFERENCE[purpose]
    assert (request.temperature, request.max_tokens) == (temperature, max_tokens)
    # a reference temperature is the call's own; "the model's default" is the side's
    assert request.fixed_sampling is (temperature is not None)
    assert record.settings.get("temperature") == temperature
    assert record.settings["max_tokens"] == max_tokens
    # `model`: the caller's budget (the module's registered one), under the side's settings
    _ask(fake, purpose, "model", (0.55, 77))
    request = fake.requests[-1]
    assert (request.temperature, request.max_tokens, request.fixed_sampling) == (0.55, 77, False)


def test_a_purpose_the_reference_lacks_keeps_its_budget() -> None:
    fake = FakeBackend("t")
    _ask(fake, "escort", "reference", (0.25, 300))
    request = fake.requests[-1]
    assert (request.temperature, request.max_tokens, request.fixed_sampling) == (0.25, 300, False)


def test_resolve_sampling_fixed_against_the_sides_settings() -> None:
    side = ModelSettings(temperature=0.9, max_tokens=2000)
    fixed = resolve_sampling("gpt-4.1-mini", side, temperature=0.3, max_tokens=256, fixed=True)
    assert (fixed.temperature, fixed.max_tokens) == (0.3, 256)
    loose = resolve_sampling("gpt-4.1-mini", side, temperature=0.3, max_tokens=256)
    assert (loose.temperature, loose.max_tokens) == (0.9, 2000)
    # the model's default: the side's temperature if set, else none sent
    own = resolve_sampling("gpt-4.1-mini", side, temperature=None, max_tokens=512)
    assert (own.temperature, own.max_tokens) == (0.9, 2000)
    bare = resolve_sampling("gpt-4.1-mini", ModelSettings(), temperature=None, max_tokens=512)
    assert (bare.temperature, bare.max_tokens) == (None, 512)
    assert "temperature" not in bare.sent()
    # a reasoning model takes no temperature and keeps its floor, fixed or not
    reasoning = resolve_sampling("gpt-5-mini", side, temperature=0.2, max_tokens=256, fixed=True)
    assert reasoning.temperature is None and reasoning.max_tokens == 4096


def _serve(
    backend: str, base: Callable[[MockAPIServer], str], settings: ModelSettings
) -> tuple[MockAPIServer, Any]:
    server = MockAPIServer(['{"ok": true}'] * 20).start()
    made = make_backend(
        backend,
        base_url=base(server),
        settings=BackendSettings(model=settings, max_retries=0, timeout_s=5),
    )
    return server, made


@pytest.mark.parametrize(
    ("backend", "base", "limit_key"),
    [
        ("openai:gpt-4.1-mini", lambda s: s.openai_base_url, "max_completion_tokens"),
        ("anthropic:claude-haiku-4-5", lambda s: s.anthropic_base_url, "max_tokens"),
    ],
)
def test_the_sdk_backends_send_each_call_kinds_sampling(
    backend: str, base: Callable[[MockAPIServer], str], limit_key: str
) -> None:
    """Through the real SDKs to the local endpoint: under `reference` a planner call is
    sent 0.3/256 and a meeting 0.7/256 whatever the side's `temperature`; MOVE is sent the
    side's temperature (the reference's model config), or none when the side sets none;
    under `model` the side's settings apply to every call."""
    for side_temperature in (None, 0.9):
        server, made = _serve(backend, base, ModelSettings(temperature=side_temperature))
        try:
            for purpose in ("planner", "meeting", "move", "codegen"):
                _ask(made, purpose, "reference")
            _ask(made, "planner", "model", (0.3, 256))
            bodies = [r.body for r in server.requests]
        finally:
            server.close()
        planner, meeting, move, codegen, model_planner = bodies
        assert (planner["temperature"], planner[limit_key]) == (0.3, 256)
        assert (meeting["temperature"], meeting[limit_key]) == (0.7, 256)
        assert (codegen["temperature"], codegen[limit_key]) == (0.2, 1024)
        assert move[limit_key] == 512
        if side_temperature is None:
            assert "temperature" not in move
            assert model_planner["temperature"] == 0.3
        else:
            assert move["temperature"] == side_temperature
            assert model_planner["temperature"] == side_temperature


def test_a_reference_game_records_each_call_kinds_sampling(tmp_path: Path) -> None:
    """Every call of a default-profile game (the fake world and backend) records the
    reference's temperature and token limit of its kind."""
    config = resolve_config(
        "quick",
        overrides={
            "seed": 3,
            "frames": "off",
            "rules": {"max_steps": 40},
            "crew": {"backend": "fake"},
            "impostor": {"backend": "fake"},
        },
    )
    play_game(config, load_map("skeld"), "fake", tmp_path)
    seen: set[str] = set()
    for d in read_events(tmp_path / "events.jsonl"):
        if not isinstance(d, Decision):
            continue
        for call in d.calls:
            temperature, max_tokens = REFERENCE[call.purpose]
            assert call.settings.get("temperature") == temperature, call.purpose
            assert call.settings["max_tokens"] == max_tokens, call.purpose
            seen.add(call.purpose)
    assert {"planner", "meeting", "vote", "belief_update"} <= seen
    assert set(BUDGETS) >= {"belief_update"}
