"""The one place annotation talks to the agent harness's model backends, and the one
cache of model replies.

A change of `harness_aria.backends` touches this file only. The LLM judge and the
grounding audit's model claim extractor both call a model through `JudgeModel` (built by
`make_judge` from a backend address: `fake`, `openai:MODEL`, `anthropic:MODEL`,
`openai-compatible:MODEL` with a base URL), which answers a system + user prompt with
text and its accounting, and both keep replies in a `ReplyCache`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller import tokens
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
FAKE_EXTRACTION_REPLY = '{"claims": []}'
"""What the `fake` claim extractor answers (no claims: a valid, empty answer)."""


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
    """A backend used by annotation: the judge, or the audit's claim extractor.

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
        self, system: str, user: str, *, max_tokens: int | None = None, purpose: str = "judge"
    ) -> JudgeReply:
        """One call at temperature 0 in JSON mode.

        Args:
            system: The system text ("" sends the user text alone).
            user: The user text.
            max_tokens: This call's output budget (default: the model's `max_tokens`).
            purpose: What the call is for, as the request records it (`judge`,
                `claim_extraction`).

        Raises:
            JudgeCallError: The backend failed after its retries.
        """
        messages = [Message(role="system", text=system)] if system else []
        request = ModelRequest(
            messages=[*messages, Message(role="user", text=user)],
            max_tokens=max_tokens or self.max_tokens,
            temperature=0.0,
            json_mode=True,
            purpose=purpose,
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
    flag: str = "--judge",
) -> JudgeModel:
    """Build annotation's model (the judge or the claim extractor) from a backend address.

    Args:
        address: `fake`, `fake:NAME`, `openai:MODEL`, `anthropic:MODEL`,
            `openai-compatible:MODEL`.
        base_url: Endpoint override (required for `openai-compatible`).
        max_tokens: Output cap per call.
        settings: Backend settings (timeouts, retries, prices).
        script: For `fake` only: a callable answering each request (tests).
        flag: The command-line option the address came from, named in errors
            (`--judge`, `--extractor`).

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
        # The fake finds nothing: a valid, empty answer (the pipeline runs offline).
        replies = {"judge": FAKE_JUDGE_REPLY, "claim_extraction": FAKE_EXTRACTION_REPLY}
        return JudgeModel(FakeBackend(parsed.model, responses=replies), max_tokens=max_tokens)
    try:
        backend = make_backend(address, base_url=base_url, settings=settings)
    except CredentialsError as exc:
        env = str(exc).split(" ", 1)[0]
        who, other = (
            ("the judge", "use --judge none (detectors only) or --judge fake")
            if flag == "--judge"
            else ("the claim extractor", f"use {flag} rules or {flag} fake")
        )
        raise CredentialsError(
            f"{env} is not set for {who} {address}; export it, or {other}"
        ) from exc
    return JudgeModel(backend, max_tokens=max_tokens)


class ReplyCache:
    """Model replies on disk, one JSON file per key, written whole and then renamed into
    place (a crash leaves no half reply; an interrupted run resumes where it stopped).
    The judge keys a reply by (judge address, prompt hash, game hash), the claim
    extractor by (model, prompt version, speaker, meeting, message hash).

    Args:
        folder: Where the files live (created on first write); None keeps replies in
            memory only.
    """

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.memory: dict[str, dict[str, Any]] = {}
        """The replies of a cache without a folder (a folder's are read from disk)."""

    @staticmethod
    def key(*parts: str) -> str:
        """The cache key of the parts (sha256 of them, one per line)."""
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """A stored reply, or None."""
        if self.folder is None:
            return self.memory.get(key)
        path = self.folder / f"{key}.json"
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data

    def put(self, key: str, data: dict[str, Any]) -> None:
        """Store a reply."""
        if self.folder is None:
            self.memory[key] = data
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f"{key}.json.tmp"
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.folder / f"{key}.json")


def estimate_cost(address: str, tokens_in: int, tokens_out: int) -> float | None:
    """List-price cost of a call (None when the model has no price in the table)."""
    model = parse_address(address).model
    price = price_for(model, DEFAULT_PRICES)
    if price is None:
        return None
    return price.cost(uncached_in=tokens_in, out=tokens_out)


def count_tokens(text: str, address: str | None = None) -> int:
    """A text's tokens on the judge's model, for estimates: its provider's vocabulary where
    one ships (OpenAI's), else a quarter of the characters (`controller.tokens`)."""
    return tokens.count_tokens(text, parse_address(address).model if address else None)
