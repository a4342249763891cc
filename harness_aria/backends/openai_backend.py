"""OpenAI chat completions (`openai:MODEL`) and compatible servers (`openai-compatible:MODEL`).

Both go through `openai.AsyncOpenAI`. Images travel as `image_url` content parts holding
`data:image/jpeg;base64,...` URLs; JSON mode is `response_format={"type": "json_object"}`.
"""

from __future__ import annotations

import base64
import os
import time
from typing import Any, ClassVar

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionContentPartParam,
    ChatCompletionMessageParam,
)

from harness_aria.backends.base import BackendError, Message, ModelRequest, ModelResponse
from harness_aria.backends.retry import (
    RETRYABLE,
    Failure,
    parse_retry_after,
    request_url,
    status_class,
)
from harness_aria.backends.sdk import SDKBackend, tls_context
from harness_aria.backends.settings import BackendSettings, ImageDetail, Sampling

_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})

# Local servers need no key, but the SDK refuses to start without one.
_DUMMY_KEY = "not-needed"


def data_url(jpeg: bytes) -> str:
    """Encode JPEG bytes as a data URL.

    Args:
        jpeg: The image.

    Returns:
        `data:image/jpeg;base64,...`.
    """
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def to_openai_messages(
    messages: list[Message], detail: ImageDetail | None = None
) -> list[ChatCompletionMessageParam]:
    """Translate messages into chat-completions form.

    A user message with images becomes a list of content parts (its text first, then one
    `image_url` part per image); every other message keeps plain string content.

    Args:
        messages: The request's messages.
        detail: The `image_url.detail` to send (None sends none: the API's `auto`).

    Returns:
        Messages for `chat.completions.create`.
    """
    out: list[ChatCompletionMessageParam] = []
    for message in messages:
        if message.role == "system":
            out.append({"role": "system", "content": message.text})
        elif message.role == "assistant":
            out.append({"role": "assistant", "content": message.text})
        elif message.images:
            parts: list[ChatCompletionContentPartParam] = [{"type": "text", "text": message.text}]
            for image in message.images:
                if detail is None:
                    parts.append({"type": "image_url", "image_url": {"url": data_url(image)}})
                else:
                    parts.append(
                        {
                            "type": "image_url",
                            "image_url": {"url": data_url(image), "detail": detail},
                        }
                    )
            out.append({"role": "user", "content": parts})
        else:
            out.append({"role": "user", "content": message.text})
    return out


def classify_openai_error(exc: BaseException) -> Failure | None:
    """Classify an OpenAI SDK exception.

    Args:
        exc: What the SDK raised.

    Returns:
        The failure, or None for an exception that is not the SDK's.
    """
    if isinstance(exc, openai.APITimeoutError):
        return Failure("timeout", "request timed out", url=request_url(exc))
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        reason = f" ({type(cause).__name__})" if cause is not None else ""
        return Failure("connection", f"connection failed{reason}", url=request_url(exc))
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        api_message = exc.body.get("message") if isinstance(exc.body, dict) else None
        detail = f"HTTP {status} {type(exc).__name__}: {api_message or exc.message}"
        if exc.code in _QUOTA_CODES or exc.type in _QUOTA_CODES:
            return Failure("quota", detail, url=request_url(exc))
        error_class = status_class(status)
        retry_after = parse_retry_after(exc.response.headers) if error_class in RETRYABLE else None
        return Failure(error_class, detail, retry_after, url=request_url(exc))
    if isinstance(exc, openai.OpenAIError):
        return Failure("other", f"{type(exc).__name__}: {exc}")
    return None


class OpenAIBackend(SDKBackend[openai.AsyncOpenAI]):
    """`openai:MODEL`: the OpenAI chat completions API (key from `OPENAI_API_KEY`).

    No network traffic until the first call; a `base_url` (a proxy, the mock server in
    tests) must end in `/v1` like the SDK expects. See `SDKBackend` for the arguments.
    """

    provider: ClassVar[str] = "openai"
    default_key_env: ClassVar[str | None] = "OPENAI_API_KEY"
    _max_tokens_param: ClassVar[str] = "max_completion_tokens"
    _sends_cache_key: ClassVar[bool] = True
    """Send a request's `cache_key` as `prompt_cache_key` (OpenAI routes requests with
    one key to one prompt cache); servers that merely speak the API may refuse it."""

    def _new_client(self, key: str, base_url: str | None, timeout: float) -> openai.AsyncOpenAI:
        # Our own http client (with the SDK's defaults): the SDK's default one schedules
        # its closing on whatever loop runs when it is collected, which fails loudly when
        # its own loop is gone.
        return openai.AsyncOpenAI(
            api_key=key,
            base_url=base_url,
            max_retries=0,
            timeout=timeout,
            http_client=openai.DefaultAsyncHttpxClient(timeout=timeout, verify=tls_context()),
        )

    def _extra_params(self, request: ModelRequest, sampling: Sampling) -> dict[str, Any]:
        params: dict[str, Any] = {self._max_tokens_param: sampling.max_tokens}
        if sampling.temperature is not None:
            params["temperature"] = sampling.temperature
        if sampling.seed is not None:
            params["seed"] = sampling.seed
        if sampling.reasoning_effort is not None:
            params["reasoning_effort"] = sampling.reasoning_effort
        if request.json_mode and self.settings.json_mode:
            params["response_format"] = {"type": "json_object"}
        if request.cache_key and self._sends_cache_key:
            params["prompt_cache_key"] = request.cache_key
        return params

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run one request with retries.

        Args:
            request: The request; images are dropped when the backend is text-only.

        Returns:
            The answer with tokens, cost, latency and tries.

        Raises:
            BackendError: A final failure (see `harness_aria.backends.base.ErrorClass`).
        """
        request, sampling = self._prepare(request)
        messages = to_openai_messages(request.messages, sampling.image_detail)
        params = self._extra_params(request, sampling)
        started = time.perf_counter()

        async def attempt() -> ChatCompletion:
            client = self._clients.get()
            result: ChatCompletion = await client.chat.completions.create(
                model=self.model,
                messages=messages,
                **params,
            )
            return result

        completion, tries = await self._retrier.run(
            attempt, classify_openai_error, purpose=request.purpose
        )
        latency_ms = (time.perf_counter() - started) * 1000
        if not completion.choices:
            raise BackendError(
                "other",
                f"{self.address}: the answer had no choices",
                attempts=tries,
                detail="the answer had no choices",
            )
        choice = completion.choices[0]
        usage = completion.usage
        tokens_in = usage.prompt_tokens if usage else 0
        tokens_out = usage.completion_tokens if usage else 0
        details = usage.prompt_tokens_details if usage else None
        cached = (details.cached_tokens or 0) if details else 0
        cost = self._cost(
            completion.model,
            uncached_in=max(0, tokens_in - cached),
            cached_in=cached,
            out=tokens_out,
        )
        return ModelResponse(
            text=choice.message.content or "",
            model=completion.model or self.model,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tokens_cached=cached,
            latency_ms=latency_ms,
            cost_usd=cost,
            attempts=tries,
            sent=sampling.sent(),
            finish_reason=str(choice.finish_reason or ""),
        )


class OpenAICompatibleBackend(OpenAIBackend):
    """`openai-compatible:MODEL`: any server speaking chat completions (vLLM, Ollama, llama.cpp).

    `base_url` is required (e.g. `http://127.0.0.1:8000/v1`). The key comes from
    `OPENAI_COMPATIBLE_API_KEY`, or a dummy value when unset since local servers need none.
    Such servers often reject `response_format`: set `BackendSettings.json_mode=False` then.
    Sends `max_tokens` (older servers do not know `max_completion_tokens`).
    """

    provider: ClassVar[str] = "openai-compatible"
    default_key_env: ClassVar[str | None] = "OPENAI_COMPATIBLE_API_KEY"
    _max_tokens_param: ClassVar[str] = "max_tokens"
    _sends_cache_key: ClassVar[bool] = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        text_only: bool = False,
        settings: BackendSettings | None = None,
        name: str | None = None,
    ) -> None:
        """Create the backend.

        Args:
            model: The model name the server knows (may contain `:`, e.g. `llama3.2:3b`).
            base_url: The server's URL ending in `/v1`; required.
            text_only: Drop images from every request.
            settings: Timeouts, retries, JSON mode, key variable, prices.
            name: The provider's name in `providers.toml` (the address is then
                `NAME:MODEL`); None for `openai-compatible:MODEL`.

        Raises:
            ValueError: No base_url, or an empty model name.
        """
        if not base_url:
            raise ValueError(
                f"openai-compatible:{model} needs a server URL: pass --base-url "
                "(e.g. http://127.0.0.1:8000/v1)"
            )
        self._name = name
        super().__init__(model, base_url=base_url, text_only=text_only, settings=settings)

    def _address_name(self) -> str:
        return self._name or self.provider

    def _api_key(self) -> str:
        env_name = self.settings.api_key_env or self.default_key_env
        assert env_name is not None
        return os.environ.get(env_name, "").strip() or _DUMMY_KEY
