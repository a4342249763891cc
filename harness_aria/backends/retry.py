"""Retries with exponential backoff and full jitter, failure classes, and key redaction.

Shared by the SDK backends: each turns its SDK's exceptions into a `Failure`, and
`Retrier.run` decides whether to try again, how long to wait, and which `BackendError` to
raise in the end.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from harness_aria.backends.base import BackendError, ErrorClass
from harness_aria.backends.settings import BackendSettings

logger = logging.getLogger(__name__)

T = TypeVar("T")

RETRYABLE: frozenset[ErrorClass] = frozenset({"rate_limit", "server", "timeout", "connection"})
"""Failure classes worth another try; quota, auth, bad_request, not_found and other are
final."""

# Provider keys look like `sk-...` / `sk-ant-...`; APIs echo them masked (`sk-proj-****abcd`).
_KEY_LIKE = re.compile(r"sk-[A-Za-z0-9_\-*]{3,}")
_MESSAGE_LIMIT = 500


@dataclass(frozen=True)
class Failure:
    """One failed try, classified.

    Attributes:
        error_class: Why it failed.
        detail: A short description (no key; redacted again before use).
        retry_after_s: The server's requested wait, if it sent one.
        url: The address requested (see `request_url`), '' when unknown.
    """

    error_class: ErrorClass
    detail: str
    retry_after_s: float | None = None
    url: str = ""

    @property
    def retryable(self) -> bool:
        """Whether another try may succeed."""
        return self.error_class in RETRYABLE


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove API keys (given ones and anything key-shaped) from a text.

    Args:
        text: Any message that may reach a log or an exception.
        secrets: Exact strings to remove (the backend's key).

    Returns:
        The text with keys replaced by `[redacted]`, cut to a sane length.
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    text = _KEY_LIKE.sub("[redacted]", text)
    if len(text) > _MESSAGE_LIMIT:
        text = text[:_MESSAGE_LIMIT] + "..."
    return text


def request_url(exc: BaseException) -> str:
    """The address an SDK exception's request went to, without query or credentials.

    Both SDKs' `APIError` carry the `httpx.Request`; the query and any user info are
    dropped, since a proxy may carry a key there.

    Args:
        exc: What the SDK raised.

    Returns:
        `scheme://host[:port]/path`, or '' when the exception has no request.
    """
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    if url is None:
        return ""
    try:
        port = f":{url.port}" if url.port is not None else ""
        return f"{url.scheme}://{url.host}{port}{url.path}"
    except AttributeError:
        return ""


def status_class(status: int) -> ErrorClass:
    """Map an HTTP status to a failure class (quota is decided from the body, not here).

    404 is `not_found`: the path or the model name is wrong, which no retry and no model
    answer can fix (it stops the game as a configuration fault, see `harness_aria.calls`).

    Args:
        status: The HTTP status code.

    Returns:
        The failure class.
    """
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 408:
        return "timeout"
    if status in (400, 413, 422):
        return "bad_request"
    if status == 404:
        return "not_found"
    if status >= 500:
        return "server"
    return "other"


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Read a server's requested wait from `retry-after-ms` or `retry-after`.

    Args:
        headers: Response headers (case-insensitive mapping, or lower-case names).

    Returns:
        Seconds to wait, or None when absent or unreadable.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Retrier:
    """Runs one logical call with counted tries, backoff and final classification."""

    def __init__(
        self, address: str, settings: BackendSettings, secrets: tuple[str, ...] = ()
    ) -> None:
        """Create a retrier.

        Args:
            address: The backend's address, for messages.
            settings: Retry limits and backoff.
            secrets: Strings that must never appear in a message (the API key).
        """
        self._address = address
        self._settings = settings
        self._secrets = secrets
        self._rng = random.Random(settings.jitter_seed)

    def __repr__(self) -> str:
        return f"Retrier(address={self._address!r})"

    def backoff_s(self, retry: int, retry_after_s: float | None) -> float:
        """How long to wait before retry number `retry` (1 for the first retry).

        Args:
            retry: 1-based retry number.
            retry_after_s: The server's requested wait, if any; honoured up to
                `retry_after_max_s` instead of the computed backoff.

        Returns:
            Seconds to wait.
        """
        settings = self._settings
        if retry_after_s is not None:
            return min(retry_after_s, settings.retry_after_max_s)
        bound = min(settings.backoff_max_s, settings.backoff_base_s * 2 ** (retry - 1))
        return self._rng.uniform(0, bound) if settings.jitter else bound

    async def run(
        self,
        attempt: Callable[[], Awaitable[T]],
        classify: Callable[[BaseException], Failure | None],
        purpose: str = "",
    ) -> tuple[T, int]:
        """Try `attempt` until it succeeds, fails finally, or retries run out.

        Args:
            attempt: One try (a fresh awaitable per call).
            classify: Turns an exception into a `Failure`; None means "not an API failure"
                and the exception propagates unchanged (a bug should stay visible).
            purpose: The request's purpose, for log lines.

        Returns:
            The result and the number of tries it took.

        Raises:
            BackendError: The last failure, classified, with the number of tries.
        """
        settings = self._settings
        tries = 0
        while True:
            tries += 1
            try:
                # A hard deadline on top of the SDK's own timeout, for servers that trickle.
                async with asyncio.timeout(settings.timeout_s * 2 + 1):
                    return await attempt(), tries
            except Exception as exc:  # classified below, or re-raised when not an API failure
                failure = _builtin_failure(exc) or classify(exc)
                if failure is None:
                    raise
                detail = redact(failure.detail, self._secrets)
                if not failure.retryable or tries > settings.max_retries:
                    logger.warning(
                        "%s %s: giving up after %d tries (%s): %s",
                        self._address,
                        purpose or "call",
                        tries,
                        failure.error_class,
                        detail,
                    )
                    message = (
                        f"{self._address}: {failure.error_class} after {tries} "
                        f"{'try' if tries == 1 else 'tries'}: {detail}"
                    )
                    if failure.url:
                        message += f" (requested {failure.url})"
                    raise BackendError(
                        failure.error_class,
                        message,
                        attempts=tries,
                        detail=detail,
                        url=failure.url,
                    ) from None
                wait = self.backoff_s(tries, failure.retry_after_s)
                logger.info(
                    "%s %s: try %d failed (%s: %s); retrying in %.2f s",
                    self._address,
                    purpose or "call",
                    tries,
                    failure.error_class,
                    detail,
                    wait,
                )
                await asyncio.sleep(wait)


def _builtin_failure(exc: BaseException) -> Failure | None:
    if isinstance(exc, TimeoutError):
        return Failure("timeout", "no answer within the deadline")
    return None
