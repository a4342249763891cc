"""`ollama-chat:MODEL` against a loopback server speaking Ollama's native `/api/chat`.

Nothing leaves the machine: the server below answers as `ollama serve` does (one JSON
object, non-streamed), records every body it got, and can answer with an error first.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harness_aria.backends.base import BackendError, Message, ModelRequest
from harness_aria.backends.ollama_backend import OllamaBackend
from harness_aria.backends.registry import BACKENDS, check_credentials, make_backend
from harness_aria.backends.settings import BackendSettings
from testkit.mock_api import complete_once


class OllamaServer:
    """A loopback `/api/chat`: answers `reply` (after `errors`, one status per call)."""

    def __init__(self, reply: str = '{"ok": true}', errors: tuple[int, ...] = ()) -> None:
        self.reply = reply
        self.errors = list(errors)
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (the name is fixed by http.server)
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path != "/api/chat":
                    self._send(404, {"error": f"no route {self.path}"})
                    return
                body = json.loads(raw)
                owner.bodies.append(body)
                owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                if owner.errors:
                    status = owner.errors.pop(0)
                    self._send(status, {"error": f"model {body['model']!r} not found"})
                    return
                self._send(
                    200,
                    {
                        "model": body["model"],
                        "created_at": "2026-01-01T00:00:00Z",
                        "message": {"role": "assistant", "content": owner.reply},
                        "done": True,
                        "done_reason": "stop",
                        "prompt_eval_count": 42,
                        "eval_count": 7,
                    },
                )

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> OllamaServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def ollama() -> Iterator[OllamaServer]:
    with OllamaServer() as server:
        yield server


FAST = BackendSettings(timeout_s=2.0, max_retries=2, backoff_base_s=0.001, backoff_max_s=0.01)
JPEG = b"\xff\xd8\xff\xe0fake\xff\xd9"


def test_it_is_one_registration_loaded_only_when_built(ollama: OllamaServer) -> None:
    assert "ollama-chat" in BACKENDS
    check_credentials("ollama-chat:llama3.2:3b")  # a local server needs no key
    backend = make_backend("ollama-chat:llama3.2:3b", base_url=ollama.url + "/v1")
    assert isinstance(backend, OllamaBackend)
    assert backend.address == "ollama-chat:llama3.2:3b"
    assert backend.base_url == ollama.url  # the OpenAI-style `/v1` is dropped


def test_a_call_speaks_the_native_api(ollama: OllamaServer) -> None:
    backend = make_backend("ollama-chat:llava:7b", base_url=ollama.url, settings=FAST.model_copy())
    assert isinstance(backend, OllamaBackend)
    request = ModelRequest(
        messages=[
            Message(role="system", text="You play a game."),
            Message(role="user", text="What do you see?", images=[JPEG]),
        ],
        max_tokens=64,
        temperature=0.3,
        purpose="planner",
    )
    response = complete_once(backend, request)
    body = ollama.bodies[0]
    assert body["model"] == "llava:7b" and body["stream"] is False
    assert body["format"] == "json"
    assert body["options"] == {"num_predict": 64, "temperature": 0.3}
    assert body["messages"][0] == {"role": "system", "content": "You play a game."}
    assert body["messages"][1]["images"] == [base64.b64encode(JPEG).decode()]
    assert "authorization" not in ollama.headers[0]
    assert response.text == '{"ok": true}'
    assert (response.tokens_in, response.tokens_out) == (42, 7)
    assert response.finish_reason == "stop" and response.model == "llava:7b"
    assert response.sent == {"max_tokens": 64, "temperature": 0.3}
    assert response.cost_usd is None  # a local model has no list price: unknown, not $0


def test_text_only_json_off_and_a_hosted_key(
    ollama: OllamaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_API_KEY", "LEAKCHECK-ollama")
    settings = FAST.model_copy(update={"json_mode": False})
    backend = make_backend("ollama-chat:m", base_url=ollama.url, text_only=True, settings=settings)
    assert isinstance(backend, OllamaBackend)
    complete_once(backend, ModelRequest(messages=[Message(role="user", text="hi", images=[JPEG])]))
    body = ollama.bodies[0]
    assert "format" not in body and "images" not in body["messages"][0]
    assert ollama.headers[0]["authorization"] == "Bearer LEAKCHECK-ollama"


def test_errors_are_classified_and_server_faults_retried() -> None:
    request = ModelRequest(messages=[Message(role="user", text="hi")])
    with OllamaServer(errors=(503,)) as server:
        backend = make_backend("ollama-chat:m", base_url=server.url, settings=FAST.model_copy())
        assert isinstance(backend, OllamaBackend)
        assert complete_once(backend, request).attempts == 2
    with OllamaServer(errors=(404,)) as server:
        backend = make_backend("ollama-chat:nope", base_url=server.url, settings=FAST.model_copy())
        assert isinstance(backend, OllamaBackend)
        with pytest.raises(BackendError) as caught:
            complete_once(backend, request)
        assert caught.value.error_class == "not_found" and caught.value.attempts == 1
        assert "'nope' not found" in str(caught.value)
        assert caught.value.url.endswith("/api/chat")


def test_a_closed_port_is_a_connection_failure() -> None:
    with OllamaServer() as server:
        url = server.url
    backend = make_backend("ollama-chat:m", base_url=url, settings=FAST.model_copy())
    assert isinstance(backend, OllamaBackend)
    with pytest.raises(BackendError) as caught:
        complete_once(backend, ModelRequest(messages=[Message(role="user", text="hi")]))
    assert caught.value.error_class == "connection"
