"""The one place annotation talks to the agent harness's model backends.

A change of `harness_aria.backends` touches this file only. A judge model is built from
a backend address (`fake`, `openai:MODEL`, `anthropic:MODEL`, `openai-compatible:MODEL`
with a base URL) and answers a system + user prompt with text and its accounting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness_aria.backends import (
    Backend,
    BackendError,
    BackendSettings,
    CredentialsError,
    FakeBackend,
    Message,
    ModelRequest,
    make_backend,
    parse_address,
)
from harness_aria.backends.settings import DEFAULT_PRICES, price_for

FAKE_JUDGE_REPLY = '{"findings": []}'
"""What the `fake` judge answers."""


@dataclass(frozen=True)
class JudgeReply:
    """A model's answer and its accounting."""

    text: str
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    attempts: int
    latency_ms: float
    truncated: bool


class JudgeCallError(Exception):
    """A judge call failed after the backend's retries."""

    def __init__(self, error_class: str, message: str, *, infrastructure: bool) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.infrastructure = infrastructure


MAX_TOKENS_CAP = 32000
"""The largest output budget a truncated judge reply is retried with (a reply cut off at
this budget fails, naming it)."""


class JudgeModel:
    """A backend used as the judge.

    Args:
        backend: Any harness backend.
        max_tokens: Output cap per call (the first budget of each pass).
        max_tokens_cap: The largest budget a reply cut off at its budget is retried with
            (at least `max_tokens`).
    """

    def __init__(
        self, backend: Backend, *, max_tokens: int = 8000, max_tokens_cap: int = MAX_TOKENS_CAP
    ) -> None:
        self.backend = backend
        self.max_tokens = max_tokens
        self.max_tokens_cap = max(max_tokens, max_tokens_cap)

    @property
    def address(self) -> str:
        """The backend address, e.g. `openai:gpt-4.1-mini` (names the judge in `source`)."""
        return self.backend.address

    async def complete(
        self, system: str, user: str, *, max_tokens: int | None = None
    ) -> JudgeReply:
        """One call at temperature 0 in JSON mode.

        Args:
            system: The system text.
            user: The user text.
            max_tokens: This call's output budget (default: the judge's `max_tokens`).

        Raises:
            JudgeCallError: The backend failed after its retries.
        """
        request = ModelRequest(
            messages=[Message(role="system", text=system), Message(role="user", text=user)],
            max_tokens=max_tokens or self.max_tokens,
            temperature=0.0,
            json_mode=True,
            purpose="judge",
        )
        try:
            r = await self.backend.complete(request)
        except BackendError as exc:
            raise JudgeCallError(
                exc.error_class, str(exc), infrastructure=exc.infrastructure
            ) from exc
        return JudgeReply(
            text=r.text,
            model=r.model,
            tokens_in=r.tokens_in,
            tokens_out=r.tokens_out,
            cost_usd=r.cost_usd,
            attempts=r.attempts,
            latency_ms=r.latency_ms,
            truncated=r.finish_reason in {"length", "max_tokens"},
        )


def make_judge(
    address: str,
    *,
    base_url: str | None = None,
    max_tokens: int = 8000,
    settings: BackendSettings | None = None,
    script: Callable[[ModelRequest], str] | None = None,
) -> JudgeModel:
    """Build a judge from a backend address.

    Args:
        address: `fake`, `fake:NAME`, `openai:MODEL`, `anthropic:MODEL`,
            `openai-compatible:MODEL`.
        base_url: Endpoint override (required for `openai-compatible`).
        max_tokens: Output cap per call.
        settings: Backend settings (timeouts, retries, prices).
        script: For `fake` only: a callable answering each request (tests).

    Raises:
        ValueError: A malformed address (naming the valid forms).
        CredentialsError: The provider's API key variable is unset.
    """
    parsed = parse_address(address)
    if script is not None:
        if parsed.provider != "fake":
            raise ValueError("a scripted judge must use a `fake` address")
        return JudgeModel(FakeBackend(parsed.model, script=script), max_tokens=max_tokens)
    if parsed.provider == "fake":
        # The fake judge finds nothing: a valid, empty answer (the pipeline runs offline).
        fake = FakeBackend(parsed.model, responses={"judge": FAKE_JUDGE_REPLY})
        return JudgeModel(fake, max_tokens=max_tokens)
    try:
        backend = make_backend(address, base_url=base_url, settings=settings)
    except CredentialsError as exc:
        env = str(exc).split(" ", 1)[0]
        raise CredentialsError(
            f"{env} is not set for the judge {address}; export it, or use --judge none "
            "(detectors only) or --judge fake"
        ) from exc
    return JudgeModel(backend, max_tokens=max_tokens)


def estimate_cost(address: str, tokens_in: int, tokens_out: int) -> float | None:
    """List-price cost of a call (None when the model has no price in the table)."""
    model = parse_address(address).model
    price = price_for(model, DEFAULT_PRICES)
    if price is None:
        return None
    return price.cost(uncached_in=tokens_in, out=tokens_out)


def count_tokens(text: str) -> int:
    """A rough token count (a quarter of the characters) for estimates."""
    return len(text) // 4
