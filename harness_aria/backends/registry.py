"""Backends by address: `fake`, `fake:NAME`, `openai:MODEL`, `anthropic:MODEL`,
`openai-compatible:MODEL` (with a base URL), and `NAME:MODEL` for each OpenAI-compatible
provider of `providers.toml` (or the user's `MINEAMONGUS_PROVIDERS` file).

`make_backend` builds one; `check_credentials` tells, before anything starts, whether it
could be built. An address never holds a key, so `make_backend(backend.address, ...)`
rebuilds an equivalent backend.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple, Protocol

from harness_aria.backends.base import Backend, CredentialsError
from harness_aria.backends.common import missing_key_message
from harness_aria.backends.fake import FakeBackend
from harness_aria.backends.providers import Provider, load_providers
from harness_aria.backends.settings import BackendSettings

VALID_FORMS = (
    "fake",
    "fake:NAME",
    "openai:MODEL",
    "anthropic:MODEL",
    "openai-compatible:MODEL (with --base-url)",
    "PROVIDER:MODEL (an OpenAI-compatible provider of providers.toml)",
)
"""The address forms, as shown in error messages."""


class BackendFactory(Protocol):
    """Builds a backend from the model part of an address."""

    def __call__(
        self,
        model: str,
        /,
        *,
        base_url: str | None = None,
        text_only: bool = False,
        settings: BackendSettings | None = None,
    ) -> Backend:
        """Build the backend.

        Args:
            model: What follows `provider:` (may be empty only for `fake`).
            base_url: Endpoint override (required for `openai-compatible`).
            text_only: Drop images from requests.
            settings: Timeouts, retries, JSON mode, key variable, prices.
        """
        ...


# The provider SDKs load only when a backend of theirs is built (a scripted or offline
# game, and every command's start-up, never pays for importing them).
def _openai(
    model: str,
    /,
    *,
    base_url: str | None = None,
    text_only: bool = False,
    settings: BackendSettings | None = None,
) -> Backend:
    from harness_aria.backends.openai_backend import OpenAIBackend

    return OpenAIBackend(model, base_url=base_url, text_only=text_only, settings=settings)


def _anthropic(
    model: str,
    /,
    *,
    base_url: str | None = None,
    text_only: bool = False,
    settings: BackendSettings | None = None,
) -> Backend:
    from harness_aria.backends.anthropic_backend import AnthropicBackend

    return AnthropicBackend(model, base_url=base_url, text_only=text_only, settings=settings)


def _openai_compatible(
    model: str,
    /,
    *,
    base_url: str | None = None,
    text_only: bool = False,
    settings: BackendSettings | None = None,
    provider: Provider | None = None,
) -> Backend:
    from harness_aria.backends.openai_backend import OpenAICompatibleBackend

    if provider is not None:
        settings = settings or BackendSettings()
        update: dict[str, object] = {}
        if provider.key_env and not settings.api_key_env:
            update["api_key_env"] = provider.key_env
        if provider.json_mode is not None:
            update["json_mode"] = provider.json_mode and settings.json_mode
        settings = settings.model_copy(update=update) if update else settings
    return OpenAICompatibleBackend(
        model,
        base_url=base_url or (provider.base_url if provider else None),
        text_only=text_only,
        settings=settings,
        name=provider.name if provider else None,
    )


BACKENDS: Mapping[str, BackendFactory] = MappingProxyType(
    {
        "fake": FakeBackend.from_address,
        "openai": _openai,
        "anthropic": _anthropic,
        "openai-compatible": _openai_compatible,
    }
)
"""Backend constructors by provider name."""

# Providers whose key is required; openai-compatible falls back to a dummy key.
_KEY_ENV: Mapping[str, str] = MappingProxyType(
    {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
)


class Address(NamedTuple):
    """A parsed backend address."""

    provider: str
    """`fake`, `openai`, `anthropic`, `openai-compatible` or a provider's name."""
    model: str
    """Everything after the first `:` (model names may contain `:`); empty for bare `fake`."""


def parse_address(address: str) -> Address:
    """Split and check an address.

    Args:
        address: E.g. `openai:gpt-4.1-mini`, `openai-compatible:llama3.2:3b`, `fake`.

    Returns:
        The provider and model.

    Raises:
        ValueError: Unknown provider or missing model, naming the valid forms.
    """
    provider, _, model = address.strip().partition(":")
    provider = provider.strip()
    model = model.strip()
    known = provider in BACKENDS or provider in load_providers()
    if not known or (provider != "fake" and not model):
        names = ", ".join(load_providers()) or "none"
        raise ValueError(
            f"bad backend address {address!r}; valid forms: {', '.join(VALID_FORMS)} "
            f"(providers: {names})"
        )
    return Address(provider, model)


def _require_base_url(address: Address, base_url: str | None) -> None:
    if address.provider == "openai-compatible" and not base_url:
        raise ValueError(
            f"{address.provider}:{address.model} needs the server's URL: pass --base-url "
            "(e.g. --base-url http://127.0.0.1:8000/v1)"
        )


def make_backend(
    address: str,
    *,
    base_url: str | None = None,
    text_only: bool = False,
    settings: BackendSettings | None = None,
) -> Backend:
    """Build a backend from its address.

    Args:
        address: See `VALID_FORMS`.
        base_url: Endpoint override; required for `openai-compatible` (ignored by `fake`).
        text_only: Drop images from every request (`backend.vision` is then False).
        settings: Timeouts, retries, JSON mode, key variable, prices; defaults if None.

    Returns:
        The backend.

    Raises:
        ValueError: A malformed address, or `openai-compatible` without a base URL.
        CredentialsError: The provider's key variable is unset.
    """
    parsed = parse_address(address)
    _require_base_url(parsed, base_url)
    if parsed.provider not in BACKENDS:
        provider = load_providers()[parsed.provider]
        return _openai_compatible(
            parsed.model,
            base_url=base_url,
            text_only=text_only,
            settings=settings,
            provider=provider,
        )
    factory = BACKENDS[parsed.provider]
    return factory(parsed.model, base_url=base_url, text_only=text_only, settings=settings)


def check_credentials(
    address: str, base_url: str | None = None, *, settings: BackendSettings | None = None
) -> None:
    """Fail early and clearly if a backend could not be built (call before starting servers).

    Args:
        address: See `VALID_FORMS`.
        base_url: The endpoint override that will be passed to `make_backend`.
        settings: Only `api_key_env` is consulted.

    Raises:
        ValueError: A malformed address, or `openai-compatible` without a base URL.
        CredentialsError: E.g. "ANTHROPIC_API_KEY is not set; export it or use --crew fake".
    """
    parsed = parse_address(address)
    _require_base_url(parsed, base_url)
    provider = load_providers().get(parsed.provider) if parsed.provider not in BACKENDS else None
    if provider is not None:
        env_name = (settings.api_key_env if settings else None) or provider.key_env
        if provider.key_required and env_name and not os.environ.get(env_name, "").strip():
            raise CredentialsError(missing_key_message(env_name))
        return
    default_env = _KEY_ENV.get(parsed.provider)
    if default_env is None:
        return  # fake and openai-compatible need no key
    env_name = (settings.api_key_env if settings else None) or default_env
    if not os.environ.get(env_name, "").strip():
        raise CredentialsError(missing_key_message(env_name))
