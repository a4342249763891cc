"""The fake backend (`fake`, `fake:NAME`): scripted or default answers, no network.

Addressed like the real backends. It answers from, in order of precedence:

* a script given in code: a sequence of texts and exceptions used in turn (an exception is
  raised as a `BackendError`), or a callable `(ModelRequest) -> str`;
* otherwise a deterministic default responder that returns a small, valid JSON answer for the
  request's `purpose` (`DEFAULT_RESPONSES`), or `{"reasoning": "fake"}` for an unknown one.

Tokens are counted as `len(text) // 4`; cost is 0.0. An optional fixed latency
(`asyncio.sleep`) makes concurrency visible in tests and benchmarks.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from harness_aria.backends.base import BackendError, ModelRequest, ModelResponse
from harness_aria.backends.settings import BackendSettings

# One entry per purpose the harness uses; each value must parse as a JSON object. Field names
# follow the module formats of `harness_aria/fake_answers.py` (whose responder reads the prompt
# and answers in context; these are its static, crewmate-form minimum). Extend this table, or
# pass `responses=`, when a module gains a purpose or a field.
DEFAULT_RESPONSES: Mapping[str, str] = MappingProxyType(
    {
        "planner": '{"module": "MOVE", "target": null, "reasoning": "fake"}',
        "planner_long": '{"strategy": "do tasks", "priority_target": null, "reasoning": "fake"}',
        "kill_scan": (
            '{"players_seen": [], "witnesses_visible": false, "target_visible": false, '
            '"detail": "fake scan"}'
        ),
        "report": '{"should_report": true, "reasoning": "fake"}',
        "surveillance": '{"players_seen": [], "detail": "nothing unusual", "suspect": null}',
        "emergency": '{"should_call": false, "reasoning": "fake"}',
        "meeting": (
            '{"response_text": "I saw nothing unusual.", "suspicion_cast_on": null, '
            '"reasoning": "fake"}'
        ),
        "vote": '{"vote_target": "skip", "reasoning": "fake"}',
        "move": '{"room": null, "follow": null, "reasoning": "fake"}',
        "mission": '{"station": 0, "objective": "fake task"}',
        "reflection": (
            '{"insights": "fake reflection", "suspicion_deltas": {}, "skill": {"situation": '
            '"a meeting", "behavior": "stay calm", "outcome": "fine"}}'
        ),
        "memory": '{"summary": "", "reasoning": "fake"}',
        "belief_update": '{"updates": []}',
        "codegen": (
            '{"code": "async function pause(bot) {\\n  await bot.waitForTicks(20);\\n}\\n'
            'await pause(bot);"}'
        ),
    }
)
"""Default answer by request purpose (JSON text)."""

UNKNOWN_PURPOSE_RESPONSE = '{"reasoning": "fake"}'
"""The default answer for a purpose not in the table."""

ScriptItem = str | BaseException
Script = Sequence[ScriptItem] | Callable[[ModelRequest], str]


def _as_backend_error(exc: BaseException, address: str) -> BackendError:
    if isinstance(exc, BackendError):
        return exc
    if isinstance(exc, TimeoutError):
        return BackendError("timeout", f"{address}: scripted timeout: {exc}")
    if isinstance(exc, ConnectionError):
        return BackendError("connection", f"{address}: scripted connection error: {exc}")
    return BackendError("other", f"{address}: scripted {type(exc).__name__}: {exc}")


def count_tokens(text: str) -> int:
    """The fake's token count: a quarter of the characters.

    Args:
        text: Any text.

    Returns:
        `len(text) // 4`.
    """
    return len(text) // 4


class FakeBackend:
    """A backend that never touches the network; requests are kept in `requests`."""

    provider = "fake"

    def __init__(
        self,
        name: str = "",
        *,
        script: Script | None = None,
        latency_s: float = 0.0,
        text_only: bool = False,
        responses: Mapping[str, str] = DEFAULT_RESPONSES,
    ) -> None:
        """Create a fake.

        Args:
            name: Label after `fake:` in the address (`fake` alone when empty).
            script: Texts and exceptions used in turn, or a callable answering each request.
                When a sequence runs out, calls fail with `BackendError('other')` rather
                than quietly switching to defaults.
            latency_s: Seconds to sleep before every answer.
            text_only: Drop images from requests (as recorded in `requests`).
            responses: The default answer table by purpose (used when no script is given).
        """
        self.name = name
        self.address = f"fake:{name}" if name else "fake"
        self.vision = not text_only
        self.latency_s = latency_s
        self.responses = responses
        self.requests: list[ModelRequest] = []
        """Every request received, after the text-only switch."""
        self._callable: Callable[[ModelRequest], str] | None = None
        self._queue: deque[ScriptItem] | None = None
        if callable(script):
            self._callable = script
        elif script is not None:
            self._queue = deque(script)

    @classmethod
    def from_address(
        cls,
        name: str,
        *,
        base_url: str | None = None,
        text_only: bool = False,
        settings: BackendSettings | None = None,
    ) -> FakeBackend:
        """The registry's constructor: a default-responder fake.

        Args:
            name: Label after `fake:` (may be empty).
            base_url: Ignored (a fake has no server).
            text_only: Drop images from requests.
            settings: Ignored (a fake neither retries nor bills).

        Returns:
            The fake backend.
        """
        return cls(name, text_only=text_only)

    def __repr__(self) -> str:
        return f"FakeBackend(address={self.address!r}, latency_s={self.latency_s})"

    def default_answer(self, request: ModelRequest) -> str:
        """The default responder: a valid JSON answer chosen by purpose.

        Args:
            request: The request.

        Returns:
            JSON text.
        """
        return self.responses.get(request.purpose, UNKNOWN_PURPOSE_RESPONSE)

    def _next_text(self, request: ModelRequest) -> str:
        if self._callable is not None:
            try:
                return self._callable(request)
            except BackendError:
                raise
            except Exception as exc:  # a script's failure becomes a BackendError
                raise _as_backend_error(exc, self.address) from exc
        if self._queue is None:
            return self.default_answer(request)
        if not self._queue:
            raise BackendError("other", f"{self.address}: the scripted answers ran out")
        item = self._queue.popleft()
        if isinstance(item, BaseException):
            raise _as_backend_error(item, self.address)
        return item

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request.

        Args:
            request: The request.

        Returns:
            The scripted or default answer.

        Raises:
            BackendError: The script said so, or it ran out.
        """
        if not self.vision:
            request = request.without_images()
        self.requests.append(request)
        started = time.perf_counter()
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        text = self._next_text(request)
        prompt = "".join(message.text for message in request.messages)
        return ModelResponse(
            text=text,
            model=self.address,
            tokens_in=count_tokens(prompt),
            tokens_out=count_tokens(text),
            latency_ms=(time.perf_counter() - started) * 1000,
            cost_usd=0.0,
            attempts=1,
            sent={
                "max_tokens": request.max_tokens,
                **({} if request.temperature is None else {"temperature": request.temperature}),
            },
            finish_reason="stop",
        )
