"""The model-backend interface: one request in, one response (or a classified error) out."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

ErrorClass = Literal[
    "rate_limit",
    "server",
    "timeout",
    "connection",
    "quota",
    "auth",
    "bad_request",
    "not_found",
    "other",
]
"""Why a call failed. `rate_limit`, `server`, `timeout`, `connection`, `quota` and `auth`
are infrastructure faults; `bad_request` (HTTP 400/413/422) and `not_found` (HTTP 404: a
wrong model name or a wrong path) are configuration faults that stop a game (see
`harness_aria.calls.ask`); `other` is anything else."""

INFRASTRUCTURE_ERRORS: frozenset[str] = frozenset(
    {"rate_limit", "server", "timeout", "connection", "quota", "auth"}
)


class Message(BaseModel):
    """One chat message; `images` are JPEG bytes attached to a user message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant"]
    text: str
    images: list[bytes] = Field(default_factory=list)


class ModelRequest(BaseModel):
    """A call to a model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: list[Message]
    max_tokens: int = 256
    """The caller's token budget (the side's `max_tokens` setting overrides it, unless
    `fixed_sampling`)."""
    temperature: float | None = 0.2
    """The caller's temperature (the side's `temperature` setting overrides it, unless
    `fixed_sampling`); None asks for the side's setting, else the model's own default
    (nothing is sent)."""
    fixed_sampling: bool = False
    """The temperature and `max_tokens` are the call kind's own (`AriaSpec.call_sampling:
    reference`, `harness_aria.calls.REFERENCE_SAMPLING`): the side's `temperature` and
    `max_tokens` settings do not override them (a None temperature still takes the
    side's). The model's own constraints still apply (a reasoning model is sent no
    temperature and its token floor)."""
    json_mode: bool = True
    """Ask for a JSON object answer where the API supports it."""
    purpose: str = ""
    """Which module or component asks (for logs and for the fake backend)."""
    cache_key: str = ""
    """Who asks, for providers that route prompt caches by a key (OpenAI's
    `prompt_cache_key`); '' sends none."""

    def without_images(self) -> ModelRequest:
        """This request with every image dropped (the text-only switch)."""
        if not any(message.images for message in self.messages):
            return self
        messages = [message.model_copy(update={"images": []}) for message in self.messages]
        return self.model_copy(update={"messages": messages})


class ModelResponse(BaseModel):
    """A model's answer with its accounting."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    latency_ms: float = 0.0
    cost_usd: float | None = 0.0
    """None when the model has no price (see `settings.price_for`), never a made-up 0."""
    attempts: int = 1
    sent: dict[str, Any] = Field(default_factory=dict)
    """The sampling settings actually sent (temperature, max_tokens, seed, ...)."""
    finish_reason: str = ""
    """The provider's stop reason as sent (`stop`, `length`, `end_turn`, `max_tokens`, ...);
    `length` / `max_tokens` mean the text was cut off."""


class CredentialsError(RuntimeError):
    """A backend's API key is missing (raised before any call or server start)."""


class BackendError(Exception):
    """A call failed after retries; `error_class` says why.

    Attributes:
        error_class: Why it failed.
        attempts: How many tries were made.
        detail: The last try's failure without the try count (the same on every call
            that fails the same way; '' when not given).
        url: The address requested, without query or credentials ('' when unknown).
    """

    def __init__(
        self,
        error_class: ErrorClass,
        message: str,
        attempts: int = 1,
        *,
        detail: str = "",
        url: str = "",
    ) -> None:
        super().__init__(message)
        self.error_class: ErrorClass = error_class
        self.attempts = attempts
        self.detail = detail
        self.url = url

    @property
    def infrastructure(self) -> bool:
        """Whether the failure lies outside the model (never counted as its behaviour)."""
        return self.error_class in INFRASTRUCTURE_ERRORS


class Backend(Protocol):
    """A model endpoint."""

    address: str
    """How it was addressed, e.g. `openai:gpt-4.1-mini` (never contains a key)."""
    vision: bool
    """Whether images are sent (False: the text-only switch is on)."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run one request; raise BackendError after retries are exhausted."""
        ...
