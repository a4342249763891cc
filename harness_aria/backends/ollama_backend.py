"""Ollama's own chat API (`ollama-chat:MODEL`), `POST /api/chat`, not the OpenAI form.

Ollama's native endpoint takes what its OpenAI-compatible one (`ollama:MODEL`) leaves
out: sampling goes in `options` (`temperature`, `num_predict`, `seed`), JSON mode is
`format: "json"`, images are base64 strings in the message's `images` list, and the
answer reports the tokens it read and wrote (`prompt_eval_count`, `eval_count`) and why
it stopped (`done_reason`: `stop` or `length`). One non-streamed request per call, over
`httpx2` (the HTTP client of the pinned SDKs, which the SDK backends hand them), retried
through the same `Retrier`.

The server is `http://127.0.0.1:11434` unless `--base-url` names another (a trailing
`/v1` or `/api` is dropped, so the URL of the OpenAI-compatible endpoint works too). A
local server needs no key; a hosted one reads it from `OLLAMA_API_KEY` (or the
variable `settings.api_key_env` names) and gets it as a bearer token.
"""

from __future__ import annotations

import base64
import os
import re
import time
from typing import Any, ClassVar

import httpx2 as httpx

from harness_aria.backends.base import Message, ModelRequest, ModelResponse
from harness_aria.backends.retry import RETRYABLE, Failure, parse_retry_after, status_class
from harness_aria.backends.sdk import SDKBackend, tls_context

DEFAULT_URL = "http://127.0.0.1:11434"
"""Where `ollama serve` listens by default."""
_API_SUFFIX = re.compile(r"/(v1|api)/?$")


def to_ollama_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Translate messages into `/api/chat` form (images as base64 JPEG strings)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.text}
        if message.images:
            item["images"] = [base64.b64encode(image).decode("ascii") for image in message.images]
        out.append(item)
    return out


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return str(response.text)[:200]
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return str(response.text)[:200]


def _url(request: httpx.Request | None) -> str:
    if request is None:
        return ""
    url = request.url
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}{url.path}"


def classify_ollama_error(exc: BaseException) -> Failure | None:
    """Classify what a call to `/api/chat` raised (None: not an HTTP failure)."""
    request: httpx.Request | None
    try:
        request = (
            exc.request if isinstance(exc, httpx.RequestError | httpx.HTTPStatusError) else None
        )
    except RuntimeError:  # an error raised without its request
        request = None
    if isinstance(exc, httpx.TimeoutException):
        return Failure("timeout", "request timed out", url=_url(request))
    if isinstance(exc, httpx.TransportError):
        return Failure("connection", f"connection failed ({type(exc).__name__})", url=_url(request))
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        error_class = status_class(status)
        detail = f"HTTP {status}: {_error_text(exc.response)}"
        retry_after = parse_retry_after(exc.response.headers) if error_class in RETRYABLE else None
        return Failure(error_class, detail, retry_after, url=_url(request))
    if isinstance(exc, ValueError) and "ollama" in str(exc):
        return Failure("other", str(exc))
    return None


class OllamaBackend(SDKBackend[httpx.AsyncClient]):
    """`ollama-chat:MODEL`: a model served by Ollama, through its native chat API.

    See `SDKBackend` for the arguments; `model` is Ollama's tag (e.g. `llama3.2:3b`).
    """

    provider: ClassVar[str] = "ollama-chat"
    default_key_env: ClassVar[str | None] = "OLLAMA_API_KEY"

    def _endpoint(self, base_url: str | None) -> str | None:
        return _API_SUFFIX.sub("", (base_url or DEFAULT_URL).rstrip("/"))

    def _api_key(self) -> str:
        # A local server needs none: an unset variable is no error here.
        env_name = self.settings.api_key_env or self.default_key_env or ""
        return os.environ.get(env_name, "").strip()

    def _new_client(self, key: str, base_url: str | None, timeout: float) -> httpx.AsyncClient:
        headers = {"authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(
            base_url=base_url or DEFAULT_URL, timeout=timeout, headers=headers, verify=tls_context()
        )

    def body(self, request: ModelRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        """The JSON body of one call and the settings it sends (for the response).

        Args:
            request: The request (images dropped when the backend is text-only).
        """
        request, sampling = self._prepare(request)
        options: dict[str, Any] = {"num_predict": sampling.max_tokens}
        if sampling.temperature is not None:
            options["temperature"] = sampling.temperature
        if sampling.seed is not None:
            options["seed"] = sampling.seed
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_ollama_messages(request.messages),
            "stream": False,
            "options": options,
        }
        if request.json_mode and self.settings.json_mode:
            body["format"] = "json"
        sent = sampling.sent()
        sent.pop("reasoning_effort", None)
        sent.pop("image_detail", None)
        return body, sent

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run one request with retries.

        Returns:
            The answer with the tokens the server counted, cost (None unless the
            settings price the model), latency and tries.

        Raises:
            BackendError: A final failure (see `harness_aria.backends.base.ErrorClass`).
        """
        body, sent = self.body(request)
        started = time.perf_counter()

        async def attempt() -> dict[str, Any]:
            response = await self._clients.get().post("/api/chat", json=body)
            response.raise_for_status()
            answer = response.json()
            if not isinstance(answer, dict) or not isinstance(answer.get("message"), dict):
                raise ValueError(f"ollama answered without a message: {response.text[:200]}")
            return answer

        answer, tries = await self._retrier.run(
            attempt, classify_ollama_error, purpose=request.purpose
        )
        latency_ms = (time.perf_counter() - started) * 1000
        tokens_in = int(answer.get("prompt_eval_count") or 0)
        tokens_out = int(answer.get("eval_count") or 0)
        served = str(answer.get("model") or self.model)
        return ModelResponse(
            text=str(answer["message"].get("content") or ""),
            model=served,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_ms=latency_ms,
            cost_usd=self._cost(served, uncached_in=tokens_in, out=tokens_out),
            attempts=tries,
            sent=sent,
            finish_reason=str(answer.get("done_reason") or ""),
        )

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        client = self._clients.current()
        if client is not None:
            await client.aclose()
        self._clients.forget()
