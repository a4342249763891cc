"""One model call with its record: the prompt texts by hash, raw output, parse, accounting.

Every call is laid out the same way so that providers can cache its start:

1. the side's **shared prefix** of the call's group (rules, map, how answers are read;
   identical for every agent of the side and every call of the group in a game, see
   `harness_aria.prompts.PREFIX_GROUPS`) as the first system message;
2. a **persona** system text, only when the harness gives one (ARIA gives none);
3. the **user text**: the agent's context (state view, skills, memory, plan; its rarely
   changing facts first) and, last, the **call's question** (the module's template with
   its one answer format), with the frame if sent.

The question comes last so that everything before it is the same for an agent's
successive calls of a prefix group until something in its context changes: the part a
provider's prompt cache matches (OpenAI caches the longest start a recent request sent
exactly, from 1,024 tokens; `ask` also sends the agent's `cache_key` as OpenAI's
`prompt_cache_key`, which keeps one agent's calls on one cache).

Each text is stored once in the run folder (`prompts/<sha256>.txt`, see `PromptStore`)
and the call record holds the hashes, so a judge can read exactly what an agent was told.

How each call samples is the side's `CallSetup.sampling` (`AriaSpec.call_sampling`):
`reference` sends each call kind the reference's temperature and token limit
(`REFERENCE_SAMPLING`), `model` the module's registered budget under the side's own
settings (`harness_aria.backends.settings.resolve_sampling`).

Failures that no model answer can fix stop the game (`status: invalid`) instead of being
counted as moves: a refused request (HTTP 400/413/422, naming the setting), a missing
model or path (HTTP 404, naming the model and the base address), exhausted quota and
refused credentials, and a failure that repeats identically on every call of a side
(`FailureStreak`: `STREAK_CALLS` calls over `STREAK_ROUNDS` decision rounds, no answer in
between), such as a refused connection.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from controller.agents.base import InfrastructureFailure
from controller.vocabulary import ModelCall, PromptRefs
from harness_aria.backends.base import (
    Backend,
    BackendError,
    Message,
    ModelRequest,
    ModelResponse,
)
from harness_aria.parsing import AnswerError, read_json
from harness_aria.prompts import PREFIX_GROUPS, Prompt

TRUNCATION_REASONS = frozenset({"length", "max_tokens", "model_context_window_exceeded"})
"""Finish reasons meaning the answer was cut off (OpenAI `length`, Anthropic `max_tokens`)."""

CallSampling = Literal["reference", "model"]
"""How a side's calls sample (`AriaSpec.call_sampling`)."""

REFERENCE_SAMPLING: dict[str, tuple[float | None, int]] = {
    "planner": (0.3, 256),
    "planner_long": (0.3, 256),
    "reflection": (0.3, 256),
    "belief_update": (0.2, 256),
    "meeting": (0.7, 256),
    "vote": (0.2, 256),
    "kill_scan": (0.2, 256),
    "surveillance": (0.2, 256),
    "report": (0.2, 256),
    "emergency": (0.2, 256),
    "move": (None, 512),
    "mission": (None, 512),
    "codegen": (0.2, 1024),
}
"""(temperature, max_tokens) of each call kind as the reference's agent builds its
models (`mineland/aria/aria_agent.py`): planners and reflection 0.3/256, the memory's
belief update 0.2/256, meeting 0.7/256, vote and the frame judgements (kill scan,
surveillance, report, emergency) 0.2/256, codegen 0.2/1024, and MOVE and MISSION the
model config's own: its temperature (None: the side's `temperature` if set, else the
model's default, nothing sent) and 512 tokens (the side's `max_tokens` if set). A call
with a temperature here is sent `fixed_sampling` (the side's settings do not override
it); a purpose not listed (e.g. ESCORT, which the reference lacks) keeps its registered
budget under the side's settings."""

_PICTURE = re.compile(r"\[\[picture:\s*(.*?)\]\]", re.S)
_TEXT_ONLY = re.compile(r"\[\[text:\s*(.*?)\]\]", re.S)
_SETTING_WORDS = (
    ("reasoning_effort", "reasoning_effort"),
    ("effort", "reasoning_effort"),
    ("temperature", "temperature"),
    ("max_completion_tokens", "max_tokens"),
    ("max_tokens", "max_tokens"),
    ("seed", "seed"),
    ("detail", "image_detail"),
    ("image", "text_only (images)"),
)
_CONTEXT = re.compile(r"context[_ ]length|context window|too long|maximum context", re.I)


class GameStopping(InfrastructureFailure):
    """An infrastructure failure that no retry can fix (quota exhausted, bad credentials)."""


class ConfigurationFailure(InfrastructureFailure):
    """A configuration fault that stops the game, never a move of the model: the provider
    refused a request as malformed or unsupported (HTTP 400, context too long, an
    unsupported parameter), answered 404 (a wrong model name or path), or failed the same
    way on every call of a side (see `FailureStreak`)."""


STREAK_CALLS = 3
"""A side's calls failing identically this many times in a row (no answer between)..."""
STREAK_ROUNDS = 2
"""...over at least this many decision rounds (steps) stop the game. Two rounds, so that
the concurrent calls of one step, which may all meet the same brief outage after their
retries, are not enough on their own; a refused connection or a dead server fails the
first two rounds of a game and stops it there."""
STREAK_EXEMPT = frozenset({"rate_limit", "timeout"})
"""Failure classes that never stop a game by repeating: the provider is there but busy
or slow, each call was already retried, and the decision is recorded as an
infrastructure failure apart from the model's behaviour."""


@dataclass
class FailureStreak:
    """The side's current run of identical call failures, with no answer in between.

    Every answered call (even an unparseable one) ends the run; a failure that differs
    from the run's (class or detail) starts a new one. `round` is the decision round
    (the step) the side's agents are deciding in, set by `start_round`; calls made
    outside any round count one round each.

    Attributes:
        round: The current decision round, None before the first.
        signature: The repeated failure (class, detail), None when there is no run.
        calls: Failed calls in the run.
        rounds: The rounds the run spans.
    """

    round: int | None = None
    signature: tuple[str, str] | None = None
    calls: int = 0
    rounds: list[int] = field(default_factory=list)

    def answered(self) -> None:
        """A call got an answer: the run is over."""
        self.signature, self.calls, self.rounds = None, 0, []

    def failed(self, exc: BackendError, round_: int | None) -> bool:
        """Count a failed call made in `round_`; whether the run now stops the game."""
        if exc.error_class in STREAK_EXEMPT:
            self.answered()
            return False
        signature = (exc.error_class, exc.detail or str(exc))
        if signature != self.signature:
            self.signature, self.calls, self.rounds = signature, 0, []
        self.calls += 1
        mark = round_ if round_ is not None else -self.calls
        if mark not in self.rounds:
            self.rounds.append(mark)
        return self.calls >= STREAK_CALLS and len(self.rounds) >= STREAK_ROUNDS


def picture_wording(text: str, with_picture: bool) -> str:
    """Resolve a template's picture-dependent wording.

    `[[picture: ...]]` is kept only when a picture is sent, `[[text: ...]]` only when none
    is, so a text-only prompt never mentions a picture.

    Args:
        text: A rendered template.
        with_picture: Whether the call carries an image.

    Returns:
        The text with the markers resolved.
    """
    text = _PICTURE.sub(lambda m: m.group(1) if with_picture else "", text)
    return _TEXT_ONLY.sub(lambda m: "" if with_picture else m.group(1), text)


def sha256_text(text: str) -> str:
    """The hex sha256 of a text (UTF-8), the name it is stored under."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PromptStore:
    """Prompt texts of a run, each stored once as `<root>/prompts/<sha256>.txt`.

    Writes are atomic (a temporary file renamed into place), so a crash never leaves a
    half-written prompt, and a text already stored is not written again.

    Args:
        run_dir: The run folder.
    """

    def __init__(self, run_dir: Path) -> None:
        self.root = Path(run_dir) / "prompts"
        self._known: set[str] = set()

    def __repr__(self) -> str:
        return f"PromptStore({str(self.root)!r})"

    def put(self, text: str) -> str:
        """Store a text (if new) and return its sha256."""
        sha = sha256_text(text)
        if sha in self._known:
            return sha
        path = self.root / f"{sha}.txt"
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".txt")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        self._known.add(sha)
        return sha

    def get(self, sha: str) -> str:
        """The stored text of a hash."""
        return (self.root / f"{sha}.txt").read_text(encoding="utf-8")


@dataclass
class CallSetup:
    """What a side's calls share: the cached prefix and where prompt texts go.

    Attributes:
        shared_prefix: The first system message of every call ('' for none).
        store: Where texts are stored; None keeps no texts (only hashes are recorded).
        failures: The side's run of identical call failures.
    """

    shared_prefix: str = ""
    prefixes: dict[str, str] = field(default_factory=dict)
    """The side's prefix per group (`harness_aria.prompts.PREFIX_GROUPS`); a purpose whose
    group has none gets `shared_prefix`."""
    store: PromptStore | None = None
    separate_prefix: bool = True
    """Send the prefix as its own first system message (the cached block); False opens
    the call's own system text with it instead."""
    failures: FailureStreak = field(default_factory=FailureStreak)
    """The side's run of identical failures (one side, one setup: see `FailureStreak`)."""
    cache_scope: str = ""
    """What sets this game's cache keys apart from another's (see `cache_key`)."""
    sampling: CallSampling = "reference"
    """How the side's calls sample (`AriaSpec.call_sampling`): `reference`, each call
    kind's `REFERENCE_SAMPLING`; `model`, the caller's budget under the side's settings."""

    def cache_key(self, agent: str) -> str:
        """The key an agent's requests carry to providers that route prompt caches by one
        (OpenAI's `prompt_cache_key`): one per agent and game, so that one agent's calls
        stay on one cache while games played at once do not pile onto the same key."""
        scope = f"{self.cache_scope}-" if self.cache_scope else ""
        return f"mineamongus-{scope}{agent}"

    def prefix_for(self, purpose: str) -> str:
        """The prefix a call of `purpose` starts with."""
        group = PREFIX_GROUPS.get(purpose, "decide")
        return self.prefixes.get(group, self.shared_prefix)

    def sampling_for(
        self, purpose: str, temperature: float | None, max_tokens: int
    ) -> tuple[float | None, int, bool]:
        """(temperature, max_tokens, fixed) a call of `purpose` is sent, from the caller's
        budget and the side's `sampling` (see `REFERENCE_SAMPLING`)."""
        if self.sampling == "reference" and purpose in REFERENCE_SAMPLING:
            ref_temperature, ref_tokens = REFERENCE_SAMPLING[purpose]
            return ref_temperature, ref_tokens, ref_temperature is not None
        return temperature, max_tokens, False


class HarnessedBackend:
    """A backend with its side's call setup (the calls themselves go to `inner`).

    Args:
        inner: The model backend.
        setup: The shared prefix and prompt store of the side.
    """

    def __init__(self, inner: Backend, setup: CallSetup | None = None) -> None:
        self.inner = inner
        self.setup = setup or CallSetup()
        self.address = inner.address
        self.vision = inner.vision

    def __repr__(self) -> str:
        return f"HarnessedBackend({self.inner!r})"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run the request on the inner backend."""
        return await self.inner.complete(request)


def setup_of(backend: Backend) -> CallSetup:
    """A backend's side setup (a plain backend, not a `HarnessedBackend`, has none: it
    gets a default one)."""
    return backend.setup if isinstance(backend, HarnessedBackend) else CallSetup()


def start_round(backend: Backend, step: int) -> None:
    """Tell a side's backend which decision round (step) its agents are deciding in.

    Only a `HarnessedBackend` keeps a failure streak; any other backend ignores it.

    Args:
        backend: The agent's backend.
        step: The step being decided.
    """
    if isinstance(backend, HarnessedBackend):
        backend.setup.failures.round = step


def base_address(backend: Backend, url: str = "") -> str:
    """Where a backend sends its calls, for messages about a wrong address.

    Args:
        backend: The backend (a `HarnessedBackend` is looked through).
        url: The address a failed request went to, if known.

    Returns:
        The configured base URL, else the requested URL without its API path, else a
        phrase saying it is the provider's default.
    """
    inner = backend.inner if isinstance(backend, HarnessedBackend) else backend
    configured = getattr(inner, "base_url", None)
    if isinstance(configured, str) and configured:
        return configured
    for path in ("/chat/completions", "/v1/messages"):
        if url.endswith(path):
            return url[: -len(path)]
    return url or "the provider's default address"


CallRecord = ModelCall
"""A model call's record: the record's one type (`controller.vocabulary.ModelCall`),
built here and stored as it is in the `decision` event."""


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer, read leniently (see `parsing.read_json`).

    Raises:
        ValueError: no JSON object could be read.
    """
    return read_json(text).value


def setting_named(message: str) -> str:
    """Which setting a provider's refusal is about, as a hint for the error message."""
    if _CONTEXT.search(message):
        return "the prompt length (the model's context window is too small for it)"
    lower = message.lower()
    for word, setting in _SETTING_WORDS:
        if word in lower:
            return f"the `{setting}` setting"
    return "the request (model name or a setting)"


def _refused(backend: Backend, exc: BackendError, request: ModelRequest) -> ConfigurationFailure:
    sent = ", ".join(
        f"{k}={v}"
        for k, v in (
            ("temperature", request.temperature),
            ("max_tokens", request.max_tokens),
            ("images", any(m.images for m in request.messages)),
        )
    )
    return ConfigurationFailure(
        "configuration",
        f"{backend.address} refused a {request.purpose or 'model'} request as malformed or "
        f"unsupported; check {setting_named(str(exc))} in the side's agent args "
        f"(e.g. crew.args.temperature; requested {sent}): {exc}",
    )


def _not_found(backend: Backend, exc: BackendError) -> ConfigurationFailure:
    model = backend.address.partition(":")[2] or backend.address
    return ConfigurationFailure(
        "configuration",
        f"{backend.address}: the provider answered 404 (not found): the model name "
        f"`{model}` or the base address {base_address(backend, exc.url)} is wrong; check "
        f"the side's agent args `backend` and `base_url` (e.g. crew.args.backend): {exc}",
    )


def _repeated(backend: Backend, streak: FailureStreak, exc: BackendError) -> ConfigurationFailure:
    model = backend.address.partition(":")[2] or backend.address
    known = [r for r in streak.rounds if r >= 0]
    steps = f" (steps {known[0]} to {known[-1]})" if len(known) > 1 else ""
    return ConfigurationFailure(
        "configuration",
        f"{backend.address}: every call of the side failed the same way, {streak.calls} in a "
        f"row over {len(streak.rounds)} decision rounds{steps} with no answer in between, "
        f"so the model cannot be reached as configured (model `{model}`, base address "
        f"{base_address(backend, exc.url)}); check the side's agent args `backend` and "
        f"`base_url` and that the server is up: {exc}",
    )


async def ask(
    backend: Backend,
    *,
    purpose: str,
    system: str,
    user: str,
    prompts: list[Prompt],
    image: bytes | None = None,
    max_tokens: int = 256,
    temperature: float | None = 0.2,
    question: str = "",
    cache_key: str = "",
) -> CallRecord:
    """Send one request and record it; never raises for model or transient faults.

    The messages are the purpose's shared prefix (a system message), `system` (a second
    system message, only if not empty) and the user message: `user`, then `question`
    after a blank line (see the module docstring for why the question is last).
    `cache_key` (the agent) goes to providers that route prompt caches by a key.
    `temperature` and `max_tokens` are the caller's budget; the side's `sampling`
    decides what is sent (`CallSetup.sampling_for`).

    Raises:
        GameStopping: the quota is exhausted or the credentials are refused.
        ConfigurationFailure: the provider refused the request as malformed or
            unsupported (HTTP 400/413/422), answered 404 (a wrong model name or path),
            or the side's calls failed identically `STREAK_CALLS` times over
            `STREAK_ROUNDS` rounds (see `FailureStreak`); no model answer can fix these.
    """
    setup = setup_of(backend)
    round_ = setup.failures.round
    use_image = image is not None and backend.vision
    # Only the templates carry picture wording; the user text (state, memory) is data.
    system = picture_wording(system, use_image)
    question = picture_wording(question, use_image)
    if question:
        user = f"{user}\n\n{question}" if user else question
    shared = setup.prefix_for(purpose)
    prefix = shared if setup.separate_prefix else ""
    if shared and not setup.separate_prefix:
        system = shared + "\n\n" + system if system else shared
    messages: list[Message] = []
    if prefix:
        messages.append(Message(role="system", text=prefix))
    if system:
        messages.append(Message(role="system", text=system))
    messages.append(Message(role="user", text=user, images=[image] if use_image and image else []))
    temperature, max_tokens, fixed = setup.sampling_for(purpose, temperature, max_tokens)
    request = ModelRequest(
        messages=messages,
        max_tokens=max_tokens,
        temperature=temperature,
        fixed_sampling=fixed,
        purpose=purpose,
        cache_key=cache_key,
    )
    store = setup.store
    put = store.put if store is not None else sha256_text
    refs = PromptRefs(
        prefix_sha256=put(prefix) if prefix else None,
        system_sha256=put(system) if system else None,
        user_sha256=put(user),
        image_sha256=hashlib.sha256(image).hexdigest() if use_image and image else None,
    )
    record = CallRecord(
        purpose=purpose,
        prompts=[p.ref for p in prompts],
        model=backend.address,
        image=use_image,
        sent=refs,
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
        if exc.error_class == "bad_request":
            raise _refused(backend, exc, request) from exc
        if exc.error_class == "not_found":
            raise _not_found(backend, exc) from exc
        if setup.failures.failed(exc, round_):
            raise _repeated(backend, setup.failures, exc) from exc
        return record
    setup.failures.answered()
    record.raw = response.text
    record.tokens_in, record.tokens_out = response.tokens_in, response.tokens_out
    record.tokens_cached, record.cost_usd = response.tokens_cached, response.cost_usd
    record.latency_ms, record.attempts = response.latency_ms, response.attempts
    record.finish_reason = response.finish_reason
    record.settings = dict(response.sent)
    record.truncated = response.finish_reason in TRUNCATION_REASONS
    try:
        read = read_json(response.text)
    except AnswerError as exc:
        if record.truncated:
            limit = record.settings.get("max_tokens", max_tokens)
            record.parse_error = (
                f"truncated: the answer hit the token limit (max_tokens={limit}, "
                f"finish_reason={response.finish_reason}) before its JSON object closed; "
                "raise max_tokens in the side's agent args"
            )
        else:
            record.parse_error = str(exc)
        return record
    record.parsed = read.value
    record.normalised = [f"json: {r}" for r in read.repairs]
    return record
