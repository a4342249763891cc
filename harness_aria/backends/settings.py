"""Backend settings: timeouts, retries, JSON mode, key variable and the price table."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field


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
        The price, or None when the model is unknown (its cost is then reported as 0.0).
    """
    if model in prices:
        return prices[model]
    family = _SNAPSHOT_SUFFIX.sub("", model)
    return prices.get(family)


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
    """USD per million tokens by model name; an unknown model costs 0.0."""
