"""Fixtures for the harness tests: fake API keys, a scripted local API server, fast retries."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pytest

from harness_aria.backends.settings import BackendSettings
from harness_aria.testing.mock_api import MockAPIServer, Reply, Responder

OPENAI_TEST_KEY = "sk-LEAKCHECK-openai-0123456789abcdef"
"""Looks like a real key, so the generic `sk-...` redaction is exercised too."""
ANTHROPIC_TEST_KEY = "LEAKCHECK-anthropic-fedcba9876543210"
"""Does not look like a key: only exact-secret redaction can hide it."""

# Variables the SDKs read on their own; unset so the machine's environment cannot steer tests.
_SDK_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_COMPATIBLE_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_CUSTOM_HEADERS",
)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key or endpoint variable is set."""
    for name in _SDK_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_keys(no_keys: None, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Recognisable fake keys for OpenAI and Anthropic (never valid anywhere), by provider."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_TEST_KEY)
    return {"openai": OPENAI_TEST_KEY, "anthropic": ANTHROPIC_TEST_KEY}


@pytest.fixture
def mock_api() -> Iterator[Callable[..., MockAPIServer]]:
    """Start scripted mock API servers; all are closed after the test."""
    servers: list[MockAPIServer] = []

    def start(script: Sequence[Reply] | Responder | None = None) -> MockAPIServer:
        server = MockAPIServer(script).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def fast() -> BackendSettings:
    """Settings with tiny backoff and timeouts so retry tests take milliseconds."""
    return BackendSettings(
        timeout_s=2.0,
        max_retries=3,
        backoff_base_s=0.001,
        backoff_max_s=0.01,
        retry_after_max_s=1.0,
        jitter_seed=0,
    )
