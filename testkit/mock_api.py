"""A local HTTP server that speaks enough of the OpenAI and Anthropic APIs for their SDKs.

It serves `POST /v1/chat/completions` (OpenAI chat completions) and `POST /v1/messages`
(Anthropic messages) on 127.0.0.1 at a free port, answers from a script, and records every
request so tests can check what the real SDKs sent. Nothing leaves the machine.

A script is a sequence of replies, used in order (the last one repeats once the others are
used up), or a callable that takes the recorded request and returns a reply. A reply is a
plain string (the model's text), a `MockText` (text with chosen token counts or a delay), a
`MockError` (an HTTP error with an API-shaped body and headers such as `retry-after`), or a
`MockDrop` (the connection is closed without an answer).

Example, an offline demo of the OpenAI backend::

    import asyncio

    from harness_aria.backends.registry import make_backend
    from harness_aria.backends.base import Message, ModelRequest
    from testkit.mock_api import MockAPIServer, MockError

    with MockAPIServer([MockError(429, headers={"retry-after": "0"}), '{"ok": true}']) as api:
        backend = make_backend("openai-compatible:demo", base_url=api.openai_base_url)
        request = ModelRequest(messages=[Message(role="user", text="hi")])
        response = asyncio.run(backend.complete(request))
        assert response.text == '{"ok": true}' and response.attempts == 2
        assert api.requests[0].body["messages"][0]["content"] == "hi"

For the Anthropic SDK pass `api.anthropic_base_url` (no `/v1`: that SDK adds it itself).

Token counts of a `MockText` without explicit counts are estimated from the request's
text (a quarter of its characters; an image counts as `IMAGE_TOKENS`), and a repeated
prompt prefix is reported as cached the way each API does (see `PromptCache`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from harness_aria.backends.base import Backend, ModelRequest, ModelResponse
from harness_aria.backends.sdk import SDKBackend

logger = logging.getLogger(__name__)

ApiName = Literal["openai", "anthropic"]

_PATHS: Mapping[str, ApiName] = {
    "/v1/chat/completions": "openai",
    "/v1/messages": "anthropic",
}

_ANTHROPIC_ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

_OPENAI_ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
}


IMAGE_TOKENS = 85
"""Tokens an image counts for in the mock's estimate (a low-detail image at OpenAI)."""

OPENAI_CACHE_MIN = 1024
"""OpenAI caches prompts from this many tokens on, in steps of `OPENAI_CACHE_STEP`."""
OPENAI_CACHE_STEP = 128

ANTHROPIC_CACHE_MIN: tuple[tuple[str, int], ...] = (
    ("claude-haiku-4-5", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-3", 2048),
)
"""Anthropic's smallest cacheable prefix by model prefix; others cache from 1024 tokens."""


def _content_text(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            out.append(str(part.get("text", "")))
        elif part.get("type") in ("image", "image_url"):
            out.append("\x00" * (IMAGE_TOKENS * 4))
    return out


def _tokens(text: str) -> int:
    return len(text) // 4


def _common_prefix_length(a: str, b: str) -> int:
    """`len(os.path.commonprefix([a, b]))`, by a binary search over slices compared in C
    (commonprefix walks the characters in Python: most of a mock study's time)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    same, differ = 0, n  # a[:same] == b[:same], a[:differ] != b[:differ]
    while differ - same > 1:
        mid = (same + differ) // 2
        if a[same:mid] == b[same:mid]:
            same = mid
        else:
            differ = mid
    return same


@dataclass
class CacheUsage:
    """Token counts of one request: all input, read from the cache, written to it."""

    total: int
    cached: int = 0
    written: int = 0


class PromptCache:
    """Which prompt prefixes were seen, answered the way each API reports caching.

    OpenAI caches automatically: the longest prefix shared with an earlier request of the
    same model counts as cached once it reaches 1024 tokens, rounded down to a multiple of
    128 past that. Anthropic caches only up to a block marked `cache_control`: that prefix
    is written to the cache the first time (`cache_creation_input_tokens`) and read from it
    afterwards (`cache_read_input_tokens`), if it is at least the model's minimum.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._openai: dict[str, list[str]] = {}
        self._anthropic: set[tuple[str, str]] = set()

    def usage(self, api: ApiName, body: dict[str, Any]) -> CacheUsage:
        """The token counts for a request (and remember its prefix)."""
        model = str(body.get("model", ""))
        if api == "openai":
            return self._openai_usage(model, body)
        return self._anthropic_usage(model, body)

    def _openai_usage(self, model: str, body: dict[str, Any]) -> CacheUsage:
        parts: list[str] = []
        for m in body.get("messages") or []:
            if isinstance(m, dict):
                parts.append(f"<{m.get('role')}>")
                parts += _content_text(m.get("content"))
        text = "".join(parts)
        total = max(1, _tokens(text))
        with self._lock:
            seen = self._openai.setdefault(model, [])
            common = max((_common_prefix_length(text, old) for old in seen), default=0)
            seen.append(text)
            del seen[:-64]
        shared = common // 4
        cached = 0
        if shared >= OPENAI_CACHE_MIN:
            cached = OPENAI_CACHE_MIN + (shared - OPENAI_CACHE_MIN) // OPENAI_CACHE_STEP * (
                OPENAI_CACHE_STEP
            )
        return CacheUsage(total=total, cached=min(cached, total))

    def _anthropic_usage(self, model: str, body: dict[str, Any]) -> CacheUsage:
        blocks: list[tuple[str, bool]] = []
        system = body.get("system")
        if isinstance(system, str):
            blocks.append((system, False))
        elif isinstance(system, list):
            for b in system:
                if isinstance(b, dict):
                    blocks.append((str(b.get("text", "")), "cache_control" in b))
        for m in body.get("messages") or []:
            if not isinstance(m, dict):
                continue
            content = m.get("content")
            if isinstance(content, list):
                for part in content:
                    if isinstance(part, dict):
                        blocks.append(("".join(_content_text([part])), "cache_control" in part))
            else:
                blocks.append(("".join(_content_text(content)), False))
        total = max(1, sum(_tokens(t) for t, _ in blocks))
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        if not marks:
            return CacheUsage(total=total)
        prefix = "".join(t for t, _ in blocks[: marks[-1] + 1])
        size = _tokens(prefix)
        minimum = next((n for p, n in ANTHROPIC_CACHE_MIN if model.startswith(p)), 1024)
        if size < minimum:
            return CacheUsage(total=total)
        key = (model, prefix)
        with self._lock:
            hit = key in self._anthropic
            self._anthropic.add(key)
        return CacheUsage(total=total, cached=size if hit else 0, written=0 if hit else size)


@dataclass(frozen=True)
class MockText:
    """A successful answer.

    Attributes:
        text: The model's text.
        prompt_tokens: All input tokens to report (OpenAI `prompt_tokens`; for Anthropic the
            sum of `input_tokens` and the two cache counts); None estimates them from the
            request size.
        completion_tokens: Output tokens to report; None estimates them as len(text) // 4.
        cached_tokens: Cached input tokens (OpenAI `prompt_tokens_details.cached_tokens`,
            Anthropic `cache_read_input_tokens`).
        cache_creation_tokens: Anthropic `cache_creation_input_tokens` (ignored for OpenAI).
        delay_s: Seconds to wait before answering.
        finish_reason: OpenAI `finish_reason` (`stop`, `length`, `content_filter`, ...);
            Anthropic gets the matching `stop_reason` (`stop` -> `end_turn`, `length` ->
            `max_tokens`, any other value as given, e.g. `refusal`).
    """

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int = 0
    cache_creation_tokens: int = 0
    delay_s: float = 0.0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class MockError:
    """An HTTP error answer.

    Attributes:
        status: HTTP status code (429, 500, 529, 401, 400, ...).
        message: Human-readable message put into the API-shaped body.
        error_type: The body's error type; None picks the API's usual one for `status`.
        code: OpenAI `error.code` (e.g. `insufficient_quota`); for Anthropic it becomes
            `error.details.error_code`.
        headers: Extra response headers, e.g. `{"retry-after": "1"}`.
        delay_s: Seconds to wait before answering.
        body: A raw body to send instead of the API-shaped one.
    """

    status: int
    message: str = "mock error"
    error_type: str | None = None
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    body: Any = None


@dataclass(frozen=True)
class MockDrop:
    """Close the connection without answering (a dropped connection).

    Attributes:
        delay_s: Seconds to wait before dropping.
    """

    delay_s: float = 0.0


Reply = str | MockText | MockError | MockDrop
"""What the server answers to one request."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it.

    Attributes:
        api: Which API the path belongs to.
        path: The request path, e.g. `/v1/messages`.
        headers: Request headers, names lower-cased (including the key the client sent, so
            left out of the repr).
        body: The parsed JSON body.
        index: 0 for the first request the server received, then 1, 2, ...
    """

    api: ApiName
    path: str
    headers: Mapping[str, str] = field(repr=False)  # holds the client's key
    body: dict[str, Any] = field(default_factory=dict)
    index: int = 0


Responder = Callable[[RecordedRequest], Reply]
"""A script given as a function of the request."""


def nonsense(text: str = "banana quantum purple; not JSON at all") -> Responder:
    """Always answer with text that is not JSON.

    Args:
        text: The text to answer with.

    Returns:
        A responder.
    """
    return lambda _request: text


def fail_then(times: int, error: MockError | MockDrop, then: Reply = '{"ok": true}') -> Responder:
    """Fail the first `times` requests with `error`, then answer `then` forever.

    Args:
        times: How many requests fail.
        error: The failure, e.g. `MockError(429, headers={"retry-after": "1"})`.
        then: The answer after the failures.

    Returns:
        A responder (counting by request index, so make a new server per use).
    """
    return lambda request: error if request.index < times else then


def rate_limited_then(
    times: int, then: Reply = '{"ok": true}', retry_after: str | None = None
) -> Responder:
    """Answer HTTP 429 `times` times, then succeed.

    Args:
        times: How many 429 answers come first.
        then: The answer after them.
        retry_after: Value of the `retry-after` header, or None for no header.

    Returns:
        A responder.
    """
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return fail_then(times, MockError(429, "rate limited (mock)", headers=headers), then)


def always(reply: Reply) -> Responder:
    """Give the same answer to every request (e.g. `always(MockError(500))`).

    Args:
        reply: The answer.

    Returns:
        A responder.
    """
    return lambda _request: reply


def delayed(delay_s: float, text: str = '{"ok": true}') -> Responder:
    """Answer `text` after `delay_s` seconds, every time.

    Args:
        delay_s: Server-side delay in seconds.
        text: The answer.

    Returns:
        A responder.
    """
    return always(MockText(text, delay_s=delay_s))


class MockAPIServer:
    """A scripted OpenAI + Anthropic API on 127.0.0.1, run in a background thread.

    Use it as a context manager, or call `start()` and `close()`. Thread-safe: the SDKs may
    send concurrent requests, each served on its own thread.
    """

    def __init__(
        self,
        script: Sequence[Reply] | Responder | None = None,
        *,
        default: Reply = '{"ok": true}',
        prompt_cache: bool = True,
    ) -> None:
        """Create the server (not yet listening).

        Args:
            script: Replies used in order (the last repeats), or a responder callable.
                None answers `default` to everything.
            default: The answer when no script is given.
            prompt_cache: Report repeated prompt prefixes as cached (see `PromptCache`)
                for replies without explicit token counts.
        """
        self.cache = PromptCache() if prompt_cache else None
        if script is None:
            self._responder: Responder = always(default)
        elif callable(script):
            self._responder = script
        else:
            replies = list(script)
            if not replies:
                raise ValueError("a reply script needs at least one reply")
            self._responder = lambda request: replies[min(request.index, len(replies) - 1)]
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._counter = itertools.count()
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> MockAPIServer:
        """Bind to a free loopback port and serve in a daemon thread.

        Returns:
            The server itself.
        """
        if self._server is not None:
            raise RuntimeError("the mock API server is already running")
        self._closing.clear()
        server = _Server(("127.0.0.1", 0), _make_handler(self))
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="mock-api", kwargs={"poll_interval": 0.05}
        )
        self._thread.daemon = True
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; pending delayed answers are cut short."""
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> MockAPIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- addresses ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._server is None:
            raise RuntimeError("the mock API server is not running")
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:PORT`, without any path."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for the OpenAI SDK, which expects it to end in `/v1`."""
        return f"{self.root_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for the Anthropic SDK, which appends `/v1/messages` itself."""
        return self.root_url

    @property
    def base_url(self) -> str:
        """Same as `openai_base_url` (the form `--base-url` takes for OpenAI-compatible servers).

        The Anthropic backend strips a trailing `/v1`, so this also works there.
        """
        return self.openai_base_url

    # -- records -----------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    # -- used by the handler -----------------------------------------------------------------

    def _record(
        self, api: ApiName, path: str, headers: dict[str, str], body: Any
    ) -> RecordedRequest:
        with self._lock:
            request = RecordedRequest(
                api=api,
                path=path,
                headers=headers,
                body=body if isinstance(body, dict) else {"_raw": body},
                index=next(self._counter),
            )
            self._requests.append(request)
        return request

    def _reply_for(self, request: RecordedRequest) -> Reply:
        return self._responder(request)

    def _wait(self, delay_s: float) -> None:
        if delay_s > 0:
            self._closing.wait(delay_s)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 drops simultaneous connects (8 agents at once), and a dropped
    # SYN costs the client a one-second retransmit: that would hide real concurrency.
    request_queue_size = 128


def _make_handler(owner: MockAPIServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle on, the body waits for the
        # client's delayed ACK (~40 ms a call), which would swamp small latencies.
        disable_nagle_algorithm = True

        def log_message(self, fmt: str, *args: Any) -> None:
            logger.debug("mock api: " + fmt, *args)

        def do_POST(self) -> None:  # noqa: N802 (the name is fixed by http.server)
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            api = _PATHS.get(path)
            if api is None:
                self._send_json(404, {"error": {"message": f"no such path {path}"}}, {})
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send_json(400, {"error": {"message": "body is not JSON"}}, {})
                return
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = owner._record(api, path, headers, body)
            try:
                reply = owner._reply_for(request)
            except Exception as exc:
                # A broken test script should fail the test visibly, not hang the client.
                logger.exception("mock api: the script failed on request %d", request.index)
                reply = MockError(500, f"mock script failed: {type(exc).__name__}: {exc}")
            # The client may have given up (its timeout fired): nothing left to answer then.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._answer(api, request, reply)

        def _answer(self, api: ApiName, request: RecordedRequest, reply: Reply) -> None:
            if isinstance(reply, str):
                reply = MockText(reply)
            owner._wait(reply.delay_s)
            if isinstance(reply, MockDrop):
                self.close_connection = True
                self.connection.close()
                return
            if isinstance(reply, MockError):
                body = reply.body if reply.body is not None else _error_body(api, reply)
                self._send_json(reply.status, body, reply.headers)
                return
            prompt = reply.prompt_tokens
            if prompt is None:
                usage = (
                    owner.cache.usage(api, request.body)
                    if owner.cache is not None
                    else CacheUsage(total=max(1, len(json.dumps(request.body)) // 4))
                )
                prompt = usage.total
                if not reply.cached_tokens and not reply.cache_creation_tokens:
                    reply = dataclasses.replace(
                        reply, cached_tokens=usage.cached, cache_creation_tokens=usage.written
                    )
            completion = reply.completion_tokens
            if completion is None:
                completion = len(reply.text) // 4
            if api == "openai":
                payload = _openai_body(request, reply, prompt, completion)
            else:
                payload = _anthropic_body(request, reply, prompt, completion)
            self._send_json(200, payload, {})

        def _send_json(self, status: int, body: Any, headers: Mapping[str, str]) -> None:
            data = json.dumps(body).encode() if not isinstance(body, bytes) else body
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    return _Handler


def _error_body(api: ApiName, error: MockError) -> dict[str, Any]:
    if api == "openai":
        kind = error.error_type or _OPENAI_ERROR_TYPES.get(error.status, "api_error")
        return {
            "error": {"message": error.message, "type": kind, "param": None, "code": error.code}
        }
    kind = error.error_type or _ANTHROPIC_ERROR_TYPES.get(error.status, "api_error")
    inner: dict[str, Any] = {"type": kind, "message": error.message}
    if error.code is not None:
        inner["details"] = {"error_code": error.code}
    return {"type": "error", "error": inner}


def _openai_body(
    request: RecordedRequest, reply: MockText, prompt: int, completion: int
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-mock{request.index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(request.body.get("model", "mock")),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text, "refusal": None},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        },
    }


def _anthropic_body(
    request: RecordedRequest, reply: MockText, prompt: int, completion: int
) -> dict[str, Any]:
    return {
        "id": f"msg_mock{request.index}",
        "type": "message",
        "role": "assistant",
        "model": str(request.body.get("model", "mock")),
        "content": [{"type": "text", "text": reply.text}],
        "stop_reason": {"stop": "end_turn", "length": "max_tokens"}.get(
            reply.finish_reason, reply.finish_reason
        ),
        "stop_sequence": None,
        "usage": {
            # Anthropic counts cache reads and writes apart from `input_tokens`.
            "input_tokens": max(0, prompt - reply.cached_tokens - reply.cache_creation_tokens),
            "output_tokens": completion,
            "cache_read_input_tokens": reply.cached_tokens,
            "cache_creation_input_tokens": reply.cache_creation_tokens,
        },
    }


def complete_once(backend: Backend, request: ModelRequest) -> ModelResponse:
    """One call in its own event loop; an SDK backend's client (OpenAI, Anthropic,
    Ollama) is closed before the loop ends, as the loop it was made on goes with it."""

    async def call() -> ModelResponse:
        try:
            return await backend.complete(request)
        finally:
            if isinstance(backend, SDKBackend):
                await backend.aclose()

    return asyncio.run(call())
