"""Anthropic messages API (`anthropic:MODEL`) through `anthropic.AsyncAnthropic`.

System messages go into the `system` parameter as text blocks, the first one marked
`cache_control: {"type": "ephemeral"}` so the stable prompt prefix is cached; images are
base64 `image` blocks (`image/jpeg`) placed before the text of their user message, as the
API's guidance suggests. The API has no schema-free JSON-mode switch (JSON is asked for by
the prompt).

The pinned SDK's `messages.create` has no `temperature` parameter (it was dropped from
the SDK's signature), which is why earlier versions of this backend sent none and ran
Anthropic models at the provider's default while OpenAI ran at 0.2-0.7. The HTTP API
still takes `temperature`, so it is sent through the SDK's `extra_body`, the same value
every provider gets; a model that refuses it answers HTTP 400, which stops the game as a
configuration fault naming the setting. `reasoning_effort` becomes
`output_config.effort`; there is no seed and no image detail in this API.
"""

from __future__ import annotations

import base64
import re
import time
from typing import Any, ClassVar

import anthropic
from anthropic.types import ContentBlockParam, MessageParam, TextBlockParam
from anthropic.types import Message as AnthropicMessage

from harness_aria.backends.base import Message, ModelRequest, ModelResponse
from harness_aria.backends.retry import (
    RETRYABLE,
    Failure,
    parse_retry_after,
    request_url,
    status_class,
)
from harness_aria.backends.sdk import SDKBackend, tls_context
from harness_aria.backends.settings import Sampling

# Spend and billing limits are not worth retrying: they do not lift within a game.
_QUOTA_CODES = frozenset({"enforced_spend_limit_reached", "contract_spend_limit_reached"})
_QUOTA_MESSAGE = re.compile(r"credit balance|billing|spend limit", re.IGNORECASE)
_TRAILING_V1 = re.compile(r"/v1/?$")


def to_anthropic(messages: list[Message]) -> tuple[list[TextBlockParam], list[MessageParam]]:
    """Split messages into the `system` blocks and the conversation.

    Args:
        messages: The request's messages.

    Returns:
        The system blocks (the first with `cache_control`) and the user/assistant messages.
    """
    system: list[TextBlockParam] = []
    conversation: list[MessageParam] = []
    for message in messages:
        if message.role == "system":
            block: TextBlockParam = {"type": "text", "text": message.text}
            if not system:
                block["cache_control"] = {"type": "ephemeral"}
            system.append(block)
        elif message.role == "assistant":
            conversation.append({"role": "assistant", "content": message.text})
        elif message.images:
            content: list[ContentBlockParam] = [
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/jpeg",
                        "data": base64.b64encode(image).decode("ascii"),
                    },
                }
                for image in message.images
            ]
            content.append({"type": "text", "text": message.text})
            conversation.append({"role": "user", "content": content})
        else:
            conversation.append({"role": "user", "content": message.text})
    return system, conversation


# The messages API's efforts; OpenAI's `none`/`minimal` have no equivalent and map to `low`.
_EFFORT: dict[str, Any] = {
    "none": "low",
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
}


def anthropic_extra_body(sampling: Sampling) -> dict[str, Any]:
    """Fields sent past the SDK's signature: the temperature (see the module docstring)."""
    return {} if sampling.temperature is None else {"temperature": sampling.temperature}


def classify_anthropic_error(exc: BaseException) -> Failure | None:
    """Classify an Anthropic SDK exception.

    Args:
        exc: What the SDK raised.

    Returns:
        The failure, or None for an exception that is not the SDK's.
    """
    if isinstance(exc, anthropic.APITimeoutError):
        return Failure("timeout", "request timed out", url=request_url(exc))
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        reason = f" ({type(cause).__name__})" if cause is not None else ""
        return Failure("connection", f"connection failed{reason}", url=request_url(exc))
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        detail = f"HTTP {status} {type(exc).__name__}: {exc.api_message or exc.message}"
        if (
            status == 402
            or exc.type == "billing_error"
            or exc.error_code in _QUOTA_CODES
            or (status == 400 and _QUOTA_MESSAGE.search(exc.api_message or ""))
        ):
            return Failure("quota", detail, url=request_url(exc))
        error_class = status_class(status)
        retry_after = parse_retry_after(exc.response.headers) if error_class in RETRYABLE else None
        return Failure(error_class, detail, retry_after, url=request_url(exc))
    if isinstance(exc, anthropic.AnthropicError):
        return Failure("other", f"{type(exc).__name__}: {exc}")
    return None


class AnthropicBackend(SDKBackend[anthropic.AsyncAnthropic]):
    """`anthropic:MODEL`: the Anthropic messages API (key from `ANTHROPIC_API_KEY`).

    No network traffic until the first call; a `base_url` is given without `/v1` (the
    SDK appends `/v1/messages`): a trailing `/v1` is removed so one `--base-url` serves
    both SDKs. `settings.json_mode` has no effect. See `SDKBackend` for the arguments.
    """

    provider: ClassVar[str] = "anthropic"
    default_key_env: ClassVar[str | None] = "ANTHROPIC_API_KEY"

    def _endpoint(self, base_url: str | None) -> str | None:
        return _TRAILING_V1.sub("", base_url) if base_url else None

    def _new_client(
        self, key: str, base_url: str | None, timeout: float
    ) -> anthropic.AsyncAnthropic:
        # Our own http client (with the SDK's defaults): see openai_backend.py for why.
        return anthropic.AsyncAnthropic(
            api_key=key,
            base_url=base_url,
            max_retries=0,
            timeout=timeout,
            http_client=anthropic.DefaultAsyncHttpxClient(timeout=timeout, verify=tls_context()),
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run one request with retries.

        Args:
            request: The request; images are dropped when the backend is text-only.

        Returns:
            The answer with tokens (input counts include cache reads and writes), cost,
            latency and tries.

        Raises:
            BackendError: A final failure (see `harness_aria.backends.base.ErrorClass`).
        """
        request, sampling = self._prepare(request)
        system, conversation = to_anthropic(request.messages)
        extra_body = anthropic_extra_body(sampling)
        effort = _EFFORT.get(sampling.reasoning_effort or "")
        started = time.perf_counter()

        async def attempt() -> AnthropicMessage:
            client = self._clients.get()
            return await client.messages.create(
                model=self.model,
                max_tokens=sampling.max_tokens,
                system=system or anthropic.omit,
                messages=conversation,
                output_config={"effort": effort} if effort else anthropic.omit,
                extra_body=extra_body or None,
            )

        message, tries = await self._retrier.run(
            attempt, classify_anthropic_error, purpose=request.purpose
        )
        latency_ms = (time.perf_counter() - started) * 1000
        text = "".join(block.text for block in message.content if block.type == "text")
        usage = message.usage
        cache_read = usage.cache_read_input_tokens or 0
        cache_write = usage.cache_creation_input_tokens or 0
        cost = self._cost(
            message.model,
            uncached_in=usage.input_tokens,
            cached_in=cache_read,
            cache_write_in=cache_write,
            out=usage.output_tokens,
        )
        sent = sampling.sent()
        sent.pop("seed", None)
        sent.pop("image_detail", None)
        if effort:
            sent["reasoning_effort"] = effort
        return ModelResponse(
            text=text,
            model=message.model or self.model,
            tokens_in=usage.input_tokens + cache_read + cache_write,
            tokens_out=usage.output_tokens,
            tokens_cached=cache_read,
            latency_ms=latency_ms,
            cost_usd=cost,
            attempts=tries,
            sent=sent,
            finish_reason=str(message.stop_reason or ""),
        )
