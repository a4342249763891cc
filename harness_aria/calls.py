"""One model call with its record: prompt references, raw output, parse, accounting."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from controller.agents.base import InfrastructureFailure
from harness_aria.backends.base import Backend, BackendError, Message, ModelRequest
from harness_aria.prompts import Prompt

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


class GameStopping(InfrastructureFailure):
    """An infrastructure failure that no retry can fix (quota exhausted, bad credentials)."""


class CallRecord(BaseModel):
    """Everything about one model call, for the event log."""

    model_config = ConfigDict(extra="forbid")

    purpose: str
    prompts: list[str]
    model: str
    image: bool = False
    raw: str = ""
    parsed: dict[str, Any] | None = None
    parse_error: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    attempts: int = 0
    error_class: str = ""
    """Set when the call failed: an infrastructure class (rate_limit, server, timeout,
    connection, quota, auth) or a model one (bad_request, other)."""
    error: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The call returned a parseable JSON object."""
        return self.parsed is not None


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer (code fences and chatter tolerated).

    Raises:
        ValueError: no JSON object could be read.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for chunk in candidates:
        start = chunk.find("{")
        while start != -1:
            try:
                obj, _ = json.JSONDecoder().raw_decode(chunk[start:])
            except json.JSONDecodeError:
                start = chunk.find("{", start + 1)
                continue
            if isinstance(obj, dict):
                return obj
            start = chunk.find("{", start + 1)
    raise ValueError(f"no JSON object in the answer: {text[:120]!r}")


async def ask(
    backend: Backend,
    *,
    purpose: str,
    system: str,
    user: str,
    prompts: list[Prompt],
    image: bytes | None = None,
    max_tokens: int = 256,
    temperature: float = 0.2,
) -> CallRecord:
    """Send one request and record it; never raises for model or transient faults.

    Raises:
        GameStopping: the quota is exhausted or the credentials are refused.
    """
    use_image = image is not None and backend.vision
    request = ModelRequest(
        messages=[
            Message(role="system", text=system),
            Message(role="user", text=user, images=[image] if use_image and image else []),
        ],
        max_tokens=max_tokens,
        temperature=temperature,
        purpose=purpose,
    )
    record = CallRecord(
        purpose=purpose, prompts=[p.ref for p in prompts], model=backend.address, image=use_image
    )
    t0 = time.perf_counter()
    try:
        response = await backend.complete(request)
    except BackendError as exc:
        record.latency_ms = round((time.perf_counter() - t0) * 1000, 3)
        record.error_class, record.error = exc.error_class, str(exc)[:500]
        record.attempts = exc.attempts
        if exc.error_class in ("quota", "auth"):
            raise GameStopping(exc.error_class, str(exc)) from exc
        return record
    record.raw = response.text
    record.tokens_in, record.tokens_out = response.tokens_in, response.tokens_out
    record.tokens_cached, record.cost_usd = response.tokens_cached, response.cost_usd
    record.latency_ms, record.attempts = response.latency_ms, response.attempts
    try:
        record.parsed = extract_json(response.text)
    except ValueError as exc:
        record.parse_error = str(exc)
    return record
