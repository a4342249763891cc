"""Backend settings: timeouts, retries, JSON mode, key variable and the price table."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

logger = logging.getLogger(__name__)

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]
ImageDetail = Literal["low", "high", "auto"]


class ModelPrice(BaseModel):
    """List price of one model in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(ge=0)
    """Uncached input tokens."""
    output_per_mtok: float = Field(ge=0)
    """Output tokens."""
    cached_input_per_mtok: float | None = Field(default=None, ge=0)
    """Input tokens read from the prompt cache; None charges them as uncached input."""
    cache_write_per_mtok: float | None = Field(default=None, ge=0)
    """Input tokens written to the prompt cache (Anthropic); None charges them as input."""

    def cost(
        self, *, uncached_in: int, cached_in: int = 0, cache_write_in: int = 0, out: int = 0
    ) -> float:
        """Cost in USD of one call.

        Args:
            uncached_in: Input tokens billed at the plain input price.
            cached_in: Input tokens read from the cache.
            cache_write_in: Input tokens written to the cache.
            out: Output tokens.

        Returns:
            The cost in US dollars.
        """
        cached = self.cached_input_per_mtok
        write = self.cache_write_per_mtok
        total = (
            uncached_in * self.input_per_mtok
            + cached_in * (self.input_per_mtok if cached is None else cached)
            + cache_write_in * (self.input_per_mtok if write is None else write)
            + out * self.output_per_mtok
        )
        return total / 1_000_000


# Editable configuration, not facts: public list prices (USD per million tokens) as published
# by the providers when this table was written. Check them before trusting a cost figure, and
# override or extend them through `BackendSettings.prices` rather than editing code paths.
DEFAULT_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "gpt-4.1": ModelPrice(
            input_per_mtok=2.00, output_per_mtok=8.00, cached_input_per_mtok=0.50
        ),
        "gpt-4.1-mini": ModelPrice(
            input_per_mtok=0.40, output_per_mtok=1.60, cached_input_per_mtok=0.10
        ),
        "gpt-4.1-nano": ModelPrice(
            input_per_mtok=0.10, output_per_mtok=0.40, cached_input_per_mtok=0.025
        ),
        "gpt-4o": ModelPrice(
            input_per_mtok=2.50, output_per_mtok=10.00, cached_input_per_mtok=1.25
        ),
        "gpt-4o-mini": ModelPrice(
            input_per_mtok=0.15, output_per_mtok=0.60, cached_input_per_mtok=0.075
        ),
        "claude-sonnet-4-5": ModelPrice(
            input_per_mtok=3.00,
            output_per_mtok=15.00,
            cached_input_per_mtok=0.30,
            cache_write_per_mtok=3.75,
        ),
        "claude-haiku-4-5": ModelPrice(
            input_per_mtok=1.00,
            output_per_mtok=5.00,
            cached_input_per_mtok=0.10,
            cache_write_per_mtok=1.25,
        ),
    }
)
"""Default price table by model name (see the comment above: editable, verify before use)."""

# A dated or `-latest` snapshot is priced like its family name: `claude-haiku-4-5-20251001`,
# `gpt-4o-mini-2024-07-18`. Nothing looser, so `gpt-4o-mini` is never priced as `gpt-4o`.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{4}-?\d{2}-?\d{2}|latest)$")


def price_for(model: str, prices: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """Look a model up in a price table.

    Args:
        model: The model name as addressed or as the API echoed it.
        prices: The table.

    Returns:
        The price, or None when the model is unknown (its cost is then reported as None).
    """
    if model in prices:
        return prices[model]
    family = _SNAPSHOT_SUFFIX.sub("", model)
    return prices.get(family)


_warned_lock = threading.Lock()
_warned: set[str] = set()


def warn_unpriced(model: str) -> None:
    """Log, once per model and process, that a model has no price (its cost is None)."""
    with _warned_lock:
        if model in _warned:
            return
        _warned.add(model)
    logger.warning(
        "no price for model %r: its calls cost null (unknown), not $0; add it to the "
        "side's settings.prices to get cost estimates",
        model,
    )


class ModelSettings(BaseModel):
    """Sampling settings of one side; None takes the model's default (`model_defaults`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(default=None, ge=0, le=2)
    """With `AriaSpec.call_sampling: model`, one temperature for every call of the side
    (None keeps the per-purpose temperatures, 0.2-0.7, where the model accepts one).
    With `call_sampling: reference` (the default profile), only the temperature of the
    calls the reference leaves at the model's default (MOVE, MISSION), as the
    reference's model config; None sends none there."""
    max_tokens: int | None = Field(default=None, ge=1)
    """With `call_sampling: model`, the output token limit of every call (None keeps the
    per-purpose budget, 256/512, raised to the model's floor: reasoning models spend
    tokens before answering). With `call_sampling: reference`, only that of the calls
    without a fixed reference setting (MOVE, MISSION: 512 when unset)."""
    seed: int | None = None
    """Sampling seed (OpenAI `seed`; Anthropic has none, so it is not sent there)."""
    reasoning_effort: ReasoningEffort | None = None
    """Reasoning effort for reasoning models (OpenAI `reasoning_effort`; Anthropic
    `output_config.effort`, where `none`/`minimal` become `low`)."""
    image_detail: ImageDetail | None = None
    """OpenAI image `detail`; None sends none (the API's `auto`); Anthropic has no such
    switch."""


@dataclass(frozen=True)
class ModelDefaults:
    """Defaults of a model family (see `MODEL_DEFAULTS`)."""

    temperature: bool = True
    """Whether the model accepts a sampling temperature."""
    max_tokens_floor: int = 0
    """Smallest output limit sent (room for reasoning tokens)."""
    reasoning_effort: ReasoningEffort | None = None
    """Effort sent when the side sets none."""


# Per-model defaults by name prefix; the first match wins, so keep longer prefixes first.
# Reasoning models (gpt-5, o-series) take no temperature and spend output tokens on
# reasoning, hence the floor; `minimal` effort is what the reference sends for crewmates.
MODEL_DEFAULTS: tuple[tuple[str, ModelDefaults], ...] = (
    ("gpt-5-chat", ModelDefaults()),
    ("gpt-5", ModelDefaults(temperature=False, max_tokens_floor=4096, reasoning_effort="minimal")),
    ("o1", ModelDefaults(temperature=False, max_tokens_floor=4096, reasoning_effort="low")),
    ("o3", ModelDefaults(temperature=False, max_tokens_floor=4096, reasoning_effort="low")),
    ("o4", ModelDefaults(temperature=False, max_tokens_floor=4096, reasoning_effort="low")),
    ("gpt-4", ModelDefaults()),
    ("claude", ModelDefaults()),
)
"""Model family defaults; a model matching no prefix gets `ModelDefaults()`."""


def model_defaults(model: str) -> ModelDefaults:
    """The defaults of a model (by the longest listed prefix that matches first)."""
    return next((d for prefix, d in MODEL_DEFAULTS if model.startswith(prefix)), ModelDefaults())


@dataclass(frozen=True)
class Sampling:
    """The resolved settings of one call (None: not sent)."""

    temperature: float | None
    max_tokens: int
    seed: int | None
    reasoning_effort: ReasoningEffort | None
    image_detail: ImageDetail | None

    def sent(self) -> dict[str, Any]:
        """The settings as recorded on the call (those not sent are left out)."""
        out: dict[str, Any] = {"max_tokens": self.max_tokens}
        for name in ("temperature", "seed", "reasoning_effort", "image_detail"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def resolve_sampling(
    model: str,
    settings: ModelSettings,
    *,
    temperature: float | None,
    max_tokens: int,
    fixed: bool = False,
) -> Sampling:
    """The settings one call sends: the side's, else the model's defaults, else the caller's.

    Without `fixed` (`AriaSpec.call_sampling: model`) the side's `temperature` and
    `max_tokens`, when set, are sent as given for every call; unset, the caller's
    per-purpose values (a model that takes no temperature is sent none, and the budget
    is raised to the model's floor). With `fixed` (the call kind's own settings,
    `call_sampling: reference`) the caller's temperature and budget win over the side's
    (still none for a model that takes no temperature, and the floor). A caller's
    temperature of None (the reference's "the model's default": MOVE and MISSION, sent
    unfixed) takes the side's `temperature` if set, else sends none.

    Args:
        model: The model name.
        settings: The side's model settings.
        temperature: The caller's (per-purpose) temperature; None for the model's own.
        max_tokens: The caller's (per-purpose) token budget.
        fixed: The caller's settings are the call kind's own (not overridden by the side).

    Returns:
        What to send.
    """
    defaults = model_defaults(model)
    own = temperature if defaults.temperature else None
    temp: float | None
    if fixed and temperature is not None:
        temp = own
    elif settings.temperature is not None:
        temp = settings.temperature  # the side's own choice is sent as given
    else:
        temp = own
    if settings.max_tokens and not fixed:
        limit = settings.max_tokens
    else:
        limit = max(max_tokens, defaults.max_tokens_floor)
    return Sampling(
        temperature=temp,
        max_tokens=limit,
        seed=settings.seed,
        reasoning_effort=settings.reasoning_effort or defaults.reasoning_effort,
        image_detail=settings.image_detail,
    )


class BackendSettings(BaseModel):
    """How a backend talks to its API; one frozen value, written into the run record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(default=60.0, gt=0)
    """Per-attempt time limit in seconds (connect, send and wait for the answer)."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first try for retryable failures (rate limit, server, timeout,
    connection); the SDKs' own retries are always off so that every try is counted here."""
    backoff_base_s: float = Field(default=1.0, ge=0)
    """Backoff before retry n is drawn from [0, min(backoff_max_s, backoff_base_s * 2**(n-1))]."""
    backoff_max_s: float = Field(default=30.0, ge=0)
    """Upper bound of one backoff wait in seconds."""
    jitter: bool = True
    """Full jitter (a uniform draw up to the bound); False waits the bound itself."""
    jitter_seed: int | None = None
    """Seed of the backend's own jitter RNG; None draws from the OS."""
    retry_after_max_s: float = Field(default=60.0, ge=0)
    """A server's `retry-after` is honoured up to this many seconds."""
    json_mode: bool = True
    """Send the API's JSON-mode switch (`response_format`) when a request asks for JSON.
    Turn off for OpenAI-compatible servers that reject `response_format`; Anthropic has no
    such switch and relies on the prompt either way."""
    api_key_env: str | None = None
    """Read the API key from this environment variable instead of the provider's usual one."""
    prices: dict[str, ModelPrice] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    """USD per million tokens by model name; an unknown model's cost is null (with a
    warning), never 0."""
    model: ModelSettings = ModelSettings()
    """Sampling settings (temperature, max tokens, seed, reasoning effort, image detail)."""
