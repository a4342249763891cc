"""Model backends through the real OpenAI and Anthropic SDKs against a local mock API.

No real API is contacted: every SDK client points at `MockAPIServer` on 127.0.0.1 (or at a
closed loopback port for connection failures).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import pytest

from harness_aria.backends.base import (
    Backend,
    BackendError,
    CredentialsError,
    Message,
    ModelRequest,
    ModelResponse,
)
from harness_aria.backends.fake import DEFAULT_RESPONSES, FakeBackend
from harness_aria.backends.openai_backend import OpenAIBackend, OpenAICompatibleBackend
from harness_aria.backends.registry import (
    check_credentials,
    make_backend,
    parse_address,
    valid_forms,
)
from harness_aria.backends.retry import Retrier, parse_retry_after, redact
from harness_aria.backends.sdk import tls_context
from harness_aria.backends.settings import (
    BackendSettings,
    ModelPrice,
    ModelSettings,
    model_defaults,
    price_for,
)
from harness_aria.calls import ConfigurationFailure, ask
from testkit.mock_api import (
    MockAPIServer,
    MockDrop,
    MockError,
    MockText,
    RecordedRequest,
    Reply,
    always,
    complete_once,
    delayed,
    fail_then,
    nonsense,
    rate_limited_then,
)

pytestmark = pytest.mark.usefixtures("fake_keys")

StartServer = Callable[..., MockAPIServer]

JPEG = b"\xff\xd8\xff\xe0fake-jpeg-bytes\xff\xd9"
JPEG_B64 = base64.b64encode(JPEG).decode()
SDK_ADDRESSES = ("openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5")


run = complete_once
"""One call in its own event loop, the SDK client closed before the loop ends."""


def fails(backend: Backend, request: ModelRequest) -> BackendError:
    with pytest.raises(BackendError) as info:
        run(backend, request)
    return info.value


def text_request(**kwargs: object) -> ModelRequest:
    messages = [
        Message(role="system", text="You are a crewmate."),
        Message(role="user", text="Where are you?"),
    ]
    return ModelRequest(messages=messages, **kwargs)


def image_request(**kwargs: object) -> ModelRequest:
    messages = [
        Message(role="system", text="You are a crewmate."),
        Message(role="user", text="What do you see?", images=[JPEG, JPEG]),
    ]
    return ModelRequest(messages=messages, **kwargs)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- OpenAI -----------------------------------------------------------------------------------


def test_openai_text_request_shape(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api(['{"ok": true}'])
    backend = make_backend("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=fast)
    response = run(backend, text_request(max_tokens=77, temperature=0.5))
    assert response.text == '{"ok": true}'
    [sent] = api.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.body["model"] == "gpt-4.1-mini"
    assert sent.body["messages"] == [
        {"role": "system", "content": "You are a crewmate."},
        {"role": "user", "content": "Where are you?"},
    ]
    assert sent.body["max_completion_tokens"] == 77
    assert sent.body["temperature"] == 0.5
    assert sent.body["response_format"] == {"type": "json_object"}
    assert sent.headers["authorization"] == "Bearer sk-LEAKCHECK-openai-0123456789abcdef"
    assert sent.headers["x-stainless-retry-count"] == "0"


def test_openai_images_are_data_url_parts(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api()
    backend = make_backend("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=fast)
    assert backend.vision
    run(backend, image_request())
    user = api.requests[0].body["messages"][1]
    assert user["role"] == "user"
    assert user["content"][0] == {"type": "text", "text": "What do you see?"}
    url = f"data:image/jpeg;base64,{JPEG_B64}"
    assert user["content"][1:] == [{"type": "image_url", "image_url": {"url": url}}] * 2


def test_openai_json_mode_off_by_request_or_setting(
    mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api()
    on = make_backend("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=fast)
    run(on, text_request(json_mode=False))
    off = make_backend(
        "openai:gpt-4.1-mini",
        base_url=api.openai_base_url,
        settings=fast.model_copy(update={"json_mode": False}),
    )
    run(off, text_request(json_mode=True))
    assert all("response_format" not in sent.body for sent in api.requests)


def test_openai_usage_cached_tokens_and_cost(mock_api: StartServer, fast: BackendSettings) -> None:
    reply = MockText(
        '{"a": 1}', prompt_tokens=1000, completion_tokens=100, cached_tokens=400, delay_s=0.02
    )
    api = mock_api([reply])
    backend = make_backend("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=fast)
    response = run(backend, text_request())
    assert (response.tokens_in, response.tokens_out, response.tokens_cached) == (1000, 100, 400)
    # gpt-4.1-mini list price: 0.40 in, 0.10 cached in, 1.60 out per million tokens.
    assert response.cost_usd == pytest.approx((600 * 0.40 + 400 * 0.10 + 100 * 1.60) / 1e6)
    assert response.model == "gpt-4.1-mini"
    assert response.attempts == 1
    assert response.finish_reason == "stop"
    assert response.latency_ms >= 20


@pytest.mark.parametrize("address", ["openai:my-finetune-x", "anthropic:claude-unknown-9"])
def test_unknown_model_cost_is_null_with_one_warning(
    address: str,
    mock_api: StartServer,
    fast: BackendSettings,
    fake_keys: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = mock_api([MockText("{}", prompt_tokens=10, completion_tokens=10)])
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    with caplog.at_level(logging.WARNING):
        assert run(backend, text_request()).cost_usd is None
        assert run(backend, text_request()).cost_usd is None
    warnings = [r for r in caplog.records if "no price for model" in r.getMessage()]
    assert len(warnings) == 1 and address.partition(":")[2] in warnings[0].getMessage()


def test_price_table_is_a_setting(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api([MockText("{}", prompt_tokens=1_000_000, completion_tokens=0)])
    prices = {"my-finetune": ModelPrice(input_per_mtok=2.0, output_per_mtok=0.0)}
    settings = fast.model_copy(update={"prices": prices})
    backend = make_backend("openai:my-finetune", base_url=api.openai_base_url, settings=settings)
    assert run(backend, text_request()).cost_usd == pytest.approx(2.0)


def test_price_lookup_accepts_dated_snapshots_only() -> None:
    prices = BackendSettings().prices
    assert price_for("claude-haiku-4-5-20251001", prices) == prices["claude-haiku-4-5"]
    assert price_for("gpt-4o-mini-2024-07-18", prices) == prices["gpt-4o-mini"]
    assert price_for("gpt-4o-mini", prices) == prices["gpt-4o-mini"]
    assert price_for("gpt-4o-turbo-preview", prices) is None
    assert price_for("nothing-like-it", prices) is None


# -- OpenAI-compatible ------------------------------------------------------------------------


def test_openai_sends_the_cache_key_as_prompt_cache_key(
    mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api()
    backend = make_backend("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=fast)
    run(backend, text_request(cache_key="mineamongus-red"))
    run(backend, text_request())
    keyed, unkeyed = api.requests
    assert keyed.body["prompt_cache_key"] == "mineamongus-red"
    assert "prompt_cache_key" not in unkeyed.body


def test_openai_compatible_never_sends_a_cache_key(
    mock_api: StartServer, fast: BackendSettings
) -> None:
    # servers that merely speak the API may refuse a field they do not know
    api = mock_api()
    backend = make_backend("openai-compatible:qwen", base_url=api.openai_base_url, settings=fast)
    run(backend, text_request(cache_key="mineamongus-red"))
    assert "prompt_cache_key" not in api.requests[0].body


def test_openai_compatible_needs_no_key(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api()
    backend = make_backend(
        "openai-compatible:llama3.2:3b", base_url=api.openai_base_url, settings=fast
    )
    assert isinstance(backend, OpenAICompatibleBackend)
    assert backend.address == "openai-compatible:llama3.2:3b"
    run(backend, text_request(max_tokens=50))
    sent = api.requests[0]
    assert sent.body["model"] == "llama3.2:3b"
    assert sent.body["max_tokens"] == 50
    assert "max_completion_tokens" not in sent.body
    assert sent.headers["authorization"] == "Bearer not-needed"


def test_openai_compatible_key_and_json_mode_setting(
    mock_api: StartServer, fast: BackendSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "local-server-token")
    api = mock_api()
    backend = make_backend(
        "openai-compatible:qwen",
        base_url=api.openai_base_url,
        settings=fast.model_copy(update={"json_mode": False}),
    )
    run(backend, text_request())
    assert api.requests[0].headers["authorization"] == "Bearer local-server-token"
    assert "response_format" not in api.requests[0].body


# -- Anthropic --------------------------------------------------------------------------------


def test_anthropic_request_shape(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api(['{"ok": true}'])
    backend = make_backend(
        "anthropic:claude-haiku-4-5", base_url=api.anthropic_base_url, settings=fast
    )
    messages = [
        Message(role="system", text="Stable rules."),
        Message(role="system", text="This step's notes."),
        Message(role="user", text="What do you see?", images=[JPEG]),
        Message(role="assistant", text="{}"),
        Message(role="user", text="And now?"),
    ]
    response = run(backend, ModelRequest(messages=messages, max_tokens=99))
    assert response.text == '{"ok": true}'
    [sent] = api.requests
    assert sent.path == "/v1/messages"
    assert sent.body["model"] == "claude-haiku-4-5"
    assert sent.body["max_tokens"] == 99
    assert sent.body["system"] == [
        {"type": "text", "text": "Stable rules.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "This step's notes."},
    ]
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": JPEG_B64},
    }
    assert sent.body["messages"] == [
        {"role": "user", "content": [image, {"type": "text", "text": "What do you see?"}]},
        {"role": "assistant", "content": "{}"},
        {"role": "user", "content": "And now?"},
    ]
    assert "response_format" not in sent.body
    assert "anthropic-version" in sent.headers


def test_anthropic_without_system_and_base_url_with_v1(
    mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api()
    # The OpenAI-style URL (ending in /v1) is accepted: the backend strips the /v1.
    backend = make_backend("anthropic:claude-haiku-4-5", base_url=api.base_url, settings=fast)
    run(backend, ModelRequest(messages=[Message(role="user", text="hi")]))
    assert api.requests[0].path == "/v1/messages"
    assert "system" not in api.requests[0].body


def test_anthropic_usage_cache_tokens_and_cost(
    mock_api: StartServer, fast: BackendSettings
) -> None:
    reply = MockText(
        "{}",
        prompt_tokens=3000,
        completion_tokens=200,
        cached_tokens=2000,
        cache_creation_tokens=500,
        finish_reason="length",
    )
    api = mock_api([reply])
    backend = make_backend(
        "anthropic:claude-haiku-4-5", base_url=api.anthropic_base_url, settings=fast
    )
    response = run(backend, text_request())
    # The mock reports input_tokens=500 beside 2000 cache reads and 500 cache writes.
    assert (response.tokens_in, response.tokens_out, response.tokens_cached) == (3000, 200, 2000)
    expected = (500 * 1.00 + 2000 * 0.10 + 500 * 1.25 + 200 * 5.00) / 1e6
    assert response.cost_usd == pytest.approx(expected)
    assert response.finish_reason == "max_tokens"


# -- retries and failure classes --------------------------------------------------------------


def base_url_for(api: MockAPIServer, address: str) -> str:
    return api.anthropic_base_url if address.startswith("anthropic") else api.openai_base_url


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_rate_limit_with_retry_after_then_success(
    address: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(rate_limited_then(2, '{"done": 1}', retry_after="0.15"))
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    started = time.perf_counter()
    response = run(backend, text_request())
    elapsed = time.perf_counter() - started
    assert response.text == '{"done": 1}'
    assert response.attempts == 3
    assert len(api.requests) == 3
    assert elapsed >= 0.3  # two waits of the server's retry-after, not the tiny backoff


@pytest.mark.parametrize("address", SDK_ADDRESSES)
@pytest.mark.parametrize("status", [500, 503, 529])
def test_server_error_then_success(
    address: str, status: int, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(fail_then(1, MockError(status, "overloaded")))
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    assert run(backend, text_request()).attempts == 2


def test_retry_after_is_capped(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api(rate_limited_then(1, retry_after="100"))
    settings = fast.model_copy(update={"retry_after_max_s": 0.05})
    backend = make_backend("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=settings)
    started = time.perf_counter()
    assert run(backend, text_request()).attempts == 2
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_exhausted_retries_are_rate_limit(
    address: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(always(MockError(429, "slow down")))
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    error = fails(backend, text_request())
    assert error.error_class == "rate_limit"
    assert error.infrastructure
    assert error.attempts == fast.max_retries + 1 == len(api.requests)
    assert "429" in str(error)


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_always_500_is_server(address: str, mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api(always(MockError(500)))
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    error = fails(backend, text_request())
    assert (error.error_class, error.attempts) == ("server", fast.max_retries + 1)


@pytest.mark.parametrize(
    ("address", "reply"),
    [
        (
            "openai:gpt-4.1-mini",
            MockError(429, "You exceeded your quota", code="insufficient_quota"),
        ),
        ("anthropic:claude-haiku-4-5", MockError(402, "Your credit balance is too low")),
        ("anthropic:claude-haiku-4-5", MockError(400, "Your credit balance is too low")),
        (
            "anthropic:claude-haiku-4-5",
            MockError(429, "limit", code="enforced_spend_limit_reached"),
        ),
    ],
)
def test_quota_is_not_retried(
    address: str, reply: Reply, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(always(reply))
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    error = fails(backend, text_request())
    assert (error.error_class, error.attempts, len(api.requests)) == ("quota", 1, 1)


@pytest.mark.parametrize("address", SDK_ADDRESSES)
@pytest.mark.parametrize(
    ("status", "expected"),
    [(401, "auth"), (403, "auth"), (400, "bad_request"), (422, "bad_request"), (404, "not_found")],
)
def test_final_client_errors(
    address: str, status: int, expected: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(always(MockError(status, "nope")))
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    error = fails(backend, text_request())
    assert (error.error_class, error.attempts, len(api.requests)) == (expected, 1, 1)
    assert error.infrastructure == (expected == "auth")


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_timeout(address: str, mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api(delayed(2.0))
    settings = fast.model_copy(update={"timeout_s": 0.2, "max_retries": 1})
    backend = make_backend(address, base_url=base_url_for(api, address), settings=settings)
    started = time.perf_counter()
    error = fails(backend, text_request())
    assert (error.error_class, error.attempts) == ("timeout", 2)
    assert time.perf_counter() - started < 1.9


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_connection_refused(address: str, fast: BackendSettings) -> None:
    port = closed_port()
    suffix = "" if address.startswith("anthropic") else "/v1"
    backend = make_backend(address, base_url=f"http://127.0.0.1:{port}{suffix}", settings=fast)
    error = fails(backend, text_request())
    assert (error.error_class, error.attempts) == ("connection", fast.max_retries + 1)


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_dropped_connection_then_success(
    address: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(fail_then(1, MockDrop()))
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    assert run(backend, text_request()).attempts == 2


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_nonsense_text_is_returned_not_an_error(
    address: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(nonsense())
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    response = run(backend, text_request())
    assert response.text.startswith("banana")  # parsing is the caller's business


def test_backend_survives_several_event_loops(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api()
    for address in SDK_ADDRESSES:
        backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
        for _ in range(3):  # a new loop each time, the client of the old one left unclosed
            assert asyncio.run(backend.complete(text_request())).text == '{"ok": true}'


def test_concurrent_calls_overlap(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api(delayed(0.3))
    backend = make_backend("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=fast)

    async def step() -> list[ModelResponse]:
        calls = (backend.complete(text_request()) for _ in range(8))
        try:
            return list(await asyncio.gather(*calls))
        finally:
            assert isinstance(backend, OpenAIBackend)
            await backend.aclose()

    started = time.perf_counter()
    responses = asyncio.run(step())
    assert len(responses) == 8 and all(r.text == '{"ok": true}' for r in responses)
    assert time.perf_counter() - started < 0.3 * 8 / 2


# -- backoff pieces ---------------------------------------------------------------------------


def test_backoff_full_jitter_bounds() -> None:
    settings = BackendSettings(backoff_base_s=1.0, backoff_max_s=5.0, jitter_seed=3)
    retrier = Retrier("x", settings)
    draws = [retrier.backoff_s(3, None) for _ in range(200)]
    assert all(0 <= d <= 4.0 for d in draws) and max(draws) > 2.0
    assert all(0 <= retrier.backoff_s(10, None) <= 5.0 for _ in range(50))
    fixed = Retrier("x", settings.model_copy(update={"jitter": False}))
    assert [fixed.backoff_s(n, None) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert fixed.backoff_s(1, 7.0) == 7.0
    assert fixed.backoff_s(1, 700.0) == settings.retry_after_max_s


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    parsed = parse_retry_after({"retry-after": later})
    assert parsed is not None and 25 < parsed <= 31


# -- text-only switch -------------------------------------------------------------------------


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_text_only_strips_images(
    address: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api()
    backend = make_backend(
        address, base_url=base_url_for(api, address), text_only=True, settings=fast
    )
    assert not backend.vision
    run(backend, image_request())
    sent = json.dumps(api.requests[0].body)
    assert JPEG_B64 not in sent and "image" not in sent
    assert "What do you see?" in sent


def test_text_only_fake_records_stripped_request() -> None:
    backend = make_backend("fake:blind", text_only=True)
    assert isinstance(backend, FakeBackend) and not backend.vision
    run(backend, image_request(purpose="move"))
    assert all(not message.images for message in backend.requests[0].messages)


# -- registry and credentials -----------------------------------------------------------------


def test_sdk_clients_share_one_certificate_check() -> None:
    """Every SDK client of a process verifies certificates with one context, built once
    (reading the certificate bundle per client cost about 30 ms, twice a game)."""
    ctx = tls_context()
    assert ctx is tls_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0, "no certificate authority loaded"


def test_addresses_build_the_right_backends(mock_api: StartServer) -> None:
    from harness_aria.backends.anthropic_backend import AnthropicBackend

    url = "http://127.0.0.1:9/v1"
    assert isinstance(make_backend("fake"), FakeBackend)
    assert make_backend("fake").address == "fake"
    assert make_backend("fake:alice").address == "fake:alice"
    openai_backend = make_backend("openai:gpt-4o-mini")
    assert isinstance(openai_backend, OpenAIBackend)
    assert openai_backend.address == "openai:gpt-4o-mini"
    anthropic_backend = make_backend(" anthropic:claude-haiku-4-5 ")
    assert isinstance(anthropic_backend, AnthropicBackend)
    assert anthropic_backend.address == "anthropic:claude-haiku-4-5"
    compatible = make_backend("openai-compatible:llama3.2:3b", base_url=url)
    assert parse_address(compatible.address) == ("openai-compatible", "llama3.2:3b")
    # The address rebuilds an equivalent backend.
    rebuilt = make_backend(compatible.address, base_url=url)
    assert type(rebuilt) is type(compatible) and rebuilt.address == compatible.address


@pytest.mark.parametrize(
    "address", ["", "gpt-4", "openai", "openai:", "anthropic: ", "mistral:large", ":x"]
)
def test_malformed_address(address: str) -> None:
    with pytest.raises(ValueError) as info:
        make_backend(address)
    message = str(info.value)
    assert all(form in message for form in valid_forms())


def test_openai_compatible_requires_base_url() -> None:
    with pytest.raises(ValueError, match="--base-url"):
        make_backend("openai-compatible:qwen")
    with pytest.raises(ValueError, match="--base-url"):
        check_credentials("openai-compatible:qwen")
    check_credentials("openai-compatible:qwen", "http://127.0.0.1:8000/v1")


def test_missing_keys_fail_early_and_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(CredentialsError) as info:
        check_credentials("anthropic:claude-haiku-4-5", None)
    assert str(info.value) == "ANTHROPIC_API_KEY is not set; export it or use --crew fake"
    with pytest.raises(CredentialsError, match="^OPENAI_API_KEY is not set"):
        check_credentials("openai:gpt-4.1-mini", None)
    with pytest.raises(CredentialsError, match="^ANTHROPIC_API_KEY is not set"):
        make_backend("anthropic:claude-haiku-4-5")
    check_credentials("fake", None)
    check_credentials("fake:bob", None)
    with pytest.raises(ValueError):
        check_credentials("nonsense:x", None)


def test_api_key_env_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")  # empty counts as unset
    settings = BackendSettings(api_key_env="TEAM_B_ANTHROPIC_KEY")
    with pytest.raises(CredentialsError, match="^TEAM_B_ANTHROPIC_KEY is not set"):
        check_credentials("anthropic:claude-haiku-4-5", settings=settings)
    monkeypatch.setenv("TEAM_B_ANTHROPIC_KEY", "another-fake-key")
    check_credentials("anthropic:claude-haiku-4-5", settings=settings)
    assert make_backend("anthropic:claude-haiku-4-5", settings=settings).vision


# -- keys never leak --------------------------------------------------------------------------


def echo_key(request: RecordedRequest) -> Reply:
    """A hostile server that puts the received credentials into its error message."""
    auth = request.headers.get("authorization", "") + request.headers.get("x-api-key", "")
    return MockError(401, f"Incorrect API key provided: {auth}")


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_keys_never_leak(
    address: str,
    mock_api: StartServer,
    fast: BackendSettings,
    fake_keys: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    key = fake_keys[address.split(":")[0]]
    texts: list[str] = []
    scripts: list[Callable[[RecordedRequest], Reply]] = [
        echo_key,
        always(MockError(429, f"key {key} is rate limited", code="insufficient_quota")),
        always(MockError(500, f"internal error for {key}")),
    ]
    for script in scripts:
        api = mock_api(script)
        backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
        error = fails(backend, text_request())
        texts += [str(error), repr(error), repr(backend), str(error.__cause__)]
        assert api.requests[0].headers.get("authorization", "").endswith(key)  # it was sent
    unreachable = make_backend(address, base_url=f"http://127.0.0.1:{closed_port()}", settings=fast)
    texts += [str(fails(unreachable, text_request())), repr(unreachable)]
    texts.append(caplog.text)
    assert "[redacted]" in texts[0]
    for text in texts:
        assert key not in text
        assert "LEAKCHECK" not in text


def test_redact_masks_key_shapes() -> None:
    assert redact("Incorrect API key provided: sk-proj-****abcd.") == (
        "Incorrect API key provided: [redacted]."
    )
    assert redact("token plainsecret here", ("plainsecret",)) == "token [redacted] here"
    assert len(redact("x" * 5000)) < 600


# -- fake backend -----------------------------------------------------------------------------


def test_fake_scripted_queue_with_errors() -> None:
    backend = FakeBackend(
        "scripted",
        script=[
            '{"a": 1}',
            BackendError("rate_limit", "scripted 429", attempts=5),
            TimeoutError("slow"),
            ValueError("odd"),
            "not json",
        ],
    )
    assert backend.address == "fake:scripted"
    assert run(backend, text_request()).text == '{"a": 1}'
    first = fails(backend, text_request())
    assert (first.error_class, first.attempts) == ("rate_limit", 5)
    assert fails(backend, text_request()).error_class == "timeout"
    assert fails(backend, text_request()).error_class == "other"
    assert run(backend, text_request()).text == "not json"
    assert "ran out" in str(fails(backend, text_request()))
    assert len(backend.requests) == 6


def test_fake_callable_sees_the_request() -> None:
    def answer(request: ModelRequest) -> str:
        if request.purpose == "broken":
            raise ConnectionError("scripted")
        return json.dumps({"echo": request.messages[-1].text, "purpose": request.purpose})

    backend = FakeBackend(script=answer)
    response = run(backend, text_request(purpose="meeting"))
    assert json.loads(response.text) == {"echo": "Where are you?", "purpose": "meeting"}
    assert fails(backend, text_request(purpose="broken")).error_class == "connection"


def test_fake_default_responder_answers_every_purpose_with_json() -> None:
    purposes = [
        "planner", "planner_long", "kill_scan", "report", "surveillance", "emergency",
        "meeting", "vote", "move", "mission", "reflection", "memory",
    ]  # fmt: skip
    backend = make_backend("fake")
    assert set(purposes) <= set(DEFAULT_RESPONSES)
    for purpose in purposes:
        response = run(backend, text_request(purpose=purpose))
        answer = json.loads(response.text)
        assert isinstance(answer, dict) and answer, purpose
    vote = json.loads(run(backend, text_request(purpose="vote")).text)
    assert vote == {"vote_target": "skip", "reasoning": "fake"}
    assert json.loads(run(backend, text_request(purpose="???")).text) == {"reasoning": "fake"}
    again = make_backend("fake")
    assert (
        run(again, text_request(purpose="move")).text
        == run(backend, text_request(purpose="move")).text
    )


def test_fake_custom_responses_and_token_count() -> None:
    backend = FakeBackend(responses={**DEFAULT_RESPONSES, "spy": '{"spy": true}'})
    request = ModelRequest(messages=[Message(role="user", text="x" * 40)], purpose="spy")
    response = run(backend, request)
    assert response.text == '{"spy": true}'
    assert (response.tokens_in, response.tokens_out) == (10, len('{"spy": true}') // 4)
    assert response.cost_usd == 0.0 and response.attempts == 1


def test_fake_latency_runs_concurrently() -> None:
    backend = FakeBackend(latency_s=0.1)

    async def step() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(backend.complete(text_request()) for _ in range(8)))
        return time.perf_counter() - started

    elapsed = asyncio.run(step())
    assert 0.1 <= elapsed < 0.4
    assert run(backend, text_request()).latency_ms >= 100


# -- the mock server itself -------------------------------------------------------------------


def test_mock_server_unknown_path_and_records(mock_api: StartServer) -> None:
    import urllib.error
    import urllib.request

    api = mock_api()
    request = urllib.request.Request(f"{api.root_url}/v1/embeddings", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 404
    assert api.requests == []
    with pytest.raises(ValueError):
        MockAPIServer([])


# -- model settings, finish reasons and refused requests ---------------------------------------


def with_model(fast: BackendSettings, **model: object) -> BackendSettings:
    return fast.model_copy(update={"model": ModelSettings(**model)})  # type: ignore[arg-type]


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_every_provider_gets_the_callers_temperature(
    address: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(['{"ok": 1}'])
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    response = run(backend, text_request(temperature=0.7, max_tokens=300))
    body = api.requests[0].body
    assert body["temperature"] == 0.7
    assert response.sent == {"temperature": 0.7, "max_tokens": 300}


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_side_settings_override_the_callers(
    address: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(['{"ok": 1}'])
    settings = with_model(
        fast, temperature=0.0, max_tokens=999, seed=7, reasoning_effort="high", image_detail="low"
    )
    backend = make_backend(address, base_url=base_url_for(api, address), settings=settings)
    response = run(backend, image_request(temperature=0.7, max_tokens=300))
    body = api.requests[0].body
    assert body["temperature"] == 0.0
    if address.startswith("openai"):
        assert body["max_completion_tokens"] == 999 and body["seed"] == 7
        assert body["reasoning_effort"] == "high"
        parts = body["messages"][1]["content"]
        assert all(p["image_url"]["detail"] == "low" for p in parts if p["type"] == "image_url")
        assert response.sent["seed"] == 7 and response.sent["image_detail"] == "low"
    else:
        assert body["max_tokens"] == 999 and "seed" not in body
        assert body["output_config"] == {"effort": "high"}
        assert "seed" not in response.sent and "image_detail" not in response.sent
    assert response.sent["temperature"] == 0.0 and response.sent["max_tokens"] == 999


def test_reasoning_model_defaults(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api(['{"ok": 1}'])
    backend = make_backend("openai:gpt-5-mini", base_url=api.openai_base_url, settings=fast)
    response = run(backend, text_request(temperature=0.2, max_tokens=256))
    body = api.requests[0].body
    assert "temperature" not in body  # reasoning models take none
    assert body["max_completion_tokens"] == model_defaults("gpt-5-mini").max_tokens_floor
    assert body["reasoning_effort"] == "minimal"
    assert "temperature" not in response.sent


def test_model_defaults_table() -> None:
    assert model_defaults("gpt-4.1-mini").temperature
    assert model_defaults("claude-haiku-4-5").temperature
    assert not model_defaults("o3-mini").temperature
    assert model_defaults("gpt-5-chat-latest").temperature
    assert model_defaults("some-local-model") == model_defaults("")


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_finish_reason_and_truncation(
    address: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api([MockText('{"module": "MOVE", "reasoning": "I will', finish_reason="length")])
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    record = asyncio.run(
        ask(backend, purpose="planner", system="s", user="u", prompts=[], max_tokens=256)
    )
    assert record.finish_reason in ("length", "max_tokens")
    assert record.truncated and record.parsed is None
    assert record.parse_error.startswith("truncated") and "max_tokens=256" in record.parse_error


@pytest.mark.parametrize("address", SDK_ADDRESSES)
@pytest.mark.parametrize(
    ("message", "named"),
    [
        ("Unsupported parameter: 'temperature' is not supported with this model.", "temperature"),
        ("Unsupported value: 'reasoning_effort' does not support 'minimal'.", "reasoning_effort"),
        ("This model's maximum context length is 8192 tokens.", "prompt length"),
        ("max_tokens: 99999 > 8192, the maximum allowed", "max_tokens"),
    ],
)
def test_refused_request_stops_with_a_configuration_error(
    address: str, message: str, named: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api([MockError(400, message)])
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    with pytest.raises(ConfigurationFailure) as info:
        asyncio.run(ask(backend, purpose="vote", system="s", user="u", prompts=[]))
    assert info.value.error_class == "configuration"
    assert named in str(info.value) and address in str(info.value)
    assert len(api.requests) == 1  # never retried: no retry can fix it


# -- prompt caching of the shared prefix (as the mock reports it, API by API) -------------------


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_shared_prefix_is_cached_from_the_second_call(
    address: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    from controller.config import RulesConfig
    from harness_aria.calls import CallSetup, HarnessedBackend
    from harness_aria.prompts import shared_prefix
    from world.geometry import ShipGeometry
    from world.spec import load_map

    api = mock_api(['{"ok": 1}'])
    inner = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    # Long enough for every priced model's cache minimum (Claude Haiku 4.5: 4096 tokens);
    # ARIA's own lean prefix is shorter, and a provider caches it only past the minimum.
    rules = shared_prefix(ShipGeometry(load_map("skeld")), RulesConfig(), map_detail="full")
    prefix = rules + "\n" + rules
    backend = HarnessedBackend(inner, CallSetup(shared_prefix=prefix))

    async def two() -> list[Any]:
        first = await ask(backend, purpose="vote", system="You are Red.", user="a", prompts=[])
        second = await ask(backend, purpose="vote", system="You are Blue.", user="b", prompts=[])
        return [first, second]

    first, second = asyncio.run(two())
    assert first.tokens_cached == 0
    assert second.tokens_cached >= len(prefix) // 4 - 128
    assert second.tokens_cached / second.tokens_in > 0.9
    if address.startswith("anthropic"):
        system = api.requests[1].body["system"]
        assert system[0]["text"] == prefix and system[0]["cache_control"]["type"] == "ephemeral"


def test_mock_cache_respects_the_minimum(mock_api: StartServer, fast: BackendSettings) -> None:
    api = mock_api(['{"ok": 1}'])
    backend = make_backend("openai:gpt-4.1-mini", base_url=api.openai_base_url, settings=fast)
    short = text_request()
    assert run(backend, short).tokens_cached == 0
    assert run(backend, short).tokens_cached == 0  # far below 1024 tokens: never cached


@pytest.mark.parametrize(
    ("address", "reason"),
    [("openai:gpt-4.1-mini", "content_filter"), ("anthropic:claude-haiku-4-5", "refusal")],
)
def test_other_finish_reasons_are_recorded_as_sent(
    address: str, reason: str, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api([MockText("{}", finish_reason=reason)])
    backend = make_backend(address, base_url=base_url_for(api, address), settings=fast)
    record = asyncio.run(ask(backend, purpose="move", system="s", user="u", prompts=[]))
    assert record.finish_reason == reason and not record.truncated
