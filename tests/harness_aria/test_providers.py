"""OpenAI-compatible providers as data (`harness_aria/backends/providers.toml`): an entry
is a backend address `NAME:MODEL`, through the real OpenAI SDK to a local mock server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness_aria.backends.base import CredentialsError, Message, ModelRequest, ModelResponse
from harness_aria.backends.openai_backend import OpenAICompatibleBackend
from harness_aria.backends.providers import USER_FILE_ENV, ProviderError, load_providers
from harness_aria.backends.registry import check_credentials, make_backend, parse_address
from harness_aria.backends.settings import BackendSettings
from testkit.mock_api import MockAPIServer, complete_once

StartServer = Callable[..., MockAPIServer]


def _ask(backend: OpenAICompatibleBackend) -> ModelResponse:
    request = ModelRequest(
        messages=[Message(role="user", text="Where are you?")], cache_key="mineamongus-red"
    )
    return complete_once(backend, request)


def _user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "providers.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv(USER_FILE_ENV, str(path))
    return path


def test_the_packaged_providers_are_local_servers() -> None:
    providers = load_providers()
    assert {"vllm", "ollama", "llama-cpp"} <= set(providers)
    for p in providers.values():
        assert p.base_url.startswith("http://127.0.0.1:"), p
    backend = make_backend("ollama:llama3.2:3b")
    assert isinstance(backend, OpenAICompatibleBackend)
    assert backend.address == "ollama:llama3.2:3b"  # the model keeps its own colon
    assert backend.base_url == providers["ollama"].base_url
    assert make_backend("vllm:m", base_url="http://127.0.0.1:9/v1").base_url.endswith(":9/v1")
    assert make_backend("llama-cpp:m").settings.json_mode is False  # as its entry says


def test_a_provider_added_by_configuration_plays_through_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mock_api: StartServer, fast: BackendSettings
) -> None:
    api = mock_api(['{"ok": true}'])
    _user_file(
        tmp_path,
        monkeypatch,
        f'[mylab]\nbase_url = "{api.openai_base_url}"\nkey_env = "MYLAB_KEY"\njson_mode = false\n',
    )
    monkeypatch.setenv("MYLAB_KEY", "lab-token")
    backend = make_backend("mylab:tiny-vl", settings=fast)
    assert isinstance(backend, OpenAICompatibleBackend)
    assert backend.address == "mylab:tiny-vl"
    assert _ask(backend).text == '{"ok": true}'
    [sent] = api.requests
    assert sent.body["model"] == "tiny-vl"
    assert sent.headers["authorization"] == "Bearer lab-token"
    assert "response_format" not in sent.body  # json_mode = false
    assert "prompt_cache_key" not in sent.body  # never to a merely compatible server
    assert "max_tokens" in sent.body
    rebuilt = make_backend(backend.address, settings=fast)  # an address rebuilds it
    assert rebuilt.address == backend.address and isinstance(rebuilt, OpenAICompatibleBackend)
    assert rebuilt.base_url == backend.base_url


def test_a_hosted_provider_without_its_key_is_refused_before_the_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _user_file(
        tmp_path,
        monkeypatch,
        '[hosted]\nbase_url = "https://api.example.invalid/v1"\nkey_env = "HOSTED_KEY"\n'
        "key_required = true\n",
    )
    monkeypatch.delenv("HOSTED_KEY", raising=False)
    with pytest.raises(CredentialsError, match="HOSTED_KEY"):
        check_credentials("hosted:big-model")
    monkeypatch.setenv("HOSTED_KEY", "k")
    check_credentials("hosted:big-model")
    check_credentials("vllm:anything")  # local servers need no key


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('[lab]\nkey_env = "K"\n', r"\[lab\] base_url: Field required"),
        ('[lab]\nbase_url = "http://127.0.0.1:8000"\n', r"\[lab\] base_url: .*ending in /v1"),
        ('[lab]\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "x"\n', r"\[lab\] model"),
        ('[openai]\nbase_url = "http://127.0.0.1:8000/v1"\n', "built-in backend name"),
        ("[lab\n", "not valid TOML"),
    ],
)
def test_a_malformed_provider_file_names_the_entry_and_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, match: str
) -> None:
    path = _user_file(tmp_path, monkeypatch, text)
    with pytest.raises(ProviderError, match=match) as info:
        load_providers()
    assert str(path) in str(info.value)


def test_a_missing_user_file_and_an_unknown_provider_are_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match=r"providers: vllm, ollama, llama-cpp"):
        parse_address("lmstudi0:model")
    monkeypatch.setenv(USER_FILE_ENV, str(tmp_path / "nope.toml"))
    with pytest.raises(ProviderError, match="no such file"):
        load_providers()
