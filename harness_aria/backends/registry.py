"""Backends by address: `fake`, `fake:NAME`, `openai:MODEL`, `anthropic:MODEL`,
`openai-compatible:MODEL` (with a base URL), every other backend registered in `BACKENDS`
(`valid_forms()` lists them all), and `NAME:MODEL` for each
OpenAI-compatible provider of `providers.toml` (or the user's `MINEAMONGUS_PROVIDERS`
file).

`make_backend` builds one; `check_credentials` tells, before anything starts, whether it
could be built. An address never holds a key, so `make_backend(backend.address, ...)`
rebuilds an equivalent backend.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple, Protocol, cast

from controller.registry import Registry
from harness_aria.backends.base import Backend, CredentialsError
from harness_aria.backends.common import missing_key_message
from harness_aria.backends.fake import FakeBackend
from harness_aria.backends.providers import Provider, load_providers
from harness_aria.backends.settings import BackendSettings

PROVIDER_FORM = "PROVIDER:MODEL (an OpenAI-compatible provider of providers.toml)"
"""The address form of every provider of `providers.toml`."""


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


def _openai_compatible(
    model: str,
    /,
    *,
    base_url: str | None = None,
    text_only: bool = False,
    settings: BackendSettings | None = None,
    provider: Provider,
) -> Backend:
    """The backend of a provider of `providers.toml`: `openai-compatible` at its URL."""
    settings = settings or BackendSettings()
    update: dict[str, object] = {}
    if provider.key_env and not settings.api_key_env:
        update["api_key_env"] = provider.key_env
    if provider.json_mode is not None:
        update["json_mode"] = provider.json_mode and settings.json_mode
    settings = settings.model_copy(update=update) if update else settings
    factory = cast(Callable[..., Backend], BACKENDS.get("openai-compatible"))
    return factory(
        model,
        base_url=base_url or provider.base_url,
        text_only=text_only,
        settings=settings,
        name=provider.name,
    )


BACKENDS: Registry[BackendFactory] = Registry(
    "backend", group="mineamongus.backends", unknown=ValueError
)
"""Backend constructors by provider name (the part of an address before the first `:`).

A backend with its own API is one registration: its class (taking `model, *, base_url,
text_only, settings`) as a `"module:attr"` reference, so that its SDK loads only when a
backend of its kind is built (a scripted or offline game, and every command's start-up,
never pays for importing one); `key_env` names the variable its key must be in (checked
before anything starts), `needs_base_url` says an address needs `--base-url`. Another
package adds one by an entry point of the `mineamongus.backends` group naming its class."""
BACKENDS.register("fake", FakeBackend.from_address, forms=("fake", "fake:NAME"))
BACKENDS.register(
    "openai",
    "harness_aria.backends.openai_backend:OpenAIBackend",
    key_env="OPENAI_API_KEY",
    forms=("openai:MODEL",),
)
BACKENDS.register(
    "anthropic",
    "harness_aria.backends.anthropic_backend:AnthropicBackend",
    key_env="ANTHROPIC_API_KEY",
    forms=("anthropic:MODEL",),
)
BACKENDS.register(
    "openai-compatible",
    "harness_aria.backends.openai_backend:OpenAICompatibleBackend",
    needs_base_url=True,
    forms=("openai-compatible:MODEL (with --base-url)",),
)
BACKENDS.register(
    "ollama-chat",
    "harness_aria.backends.ollama_backend:OllamaBackend",
    forms=("ollama-chat:MODEL (Ollama's own /api/chat; --base-url or http://127.0.0.1:11434)",),
)


def valid_forms() -> list[str]:
    """The address forms, as shown in error messages: each backend's own (its `forms`
    info, else `NAME:MODEL`), then the providers' form."""
    out: list[str] = []
    for name in BACKENDS.names():
        out += list(BACKENDS.info(name).get("forms") or (f"{name}:MODEL",))
    return [*out, PROVIDER_FORM]


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
            f"bad backend address {address!r}; valid forms: {', '.join(valid_forms())} "
            f"(backends: {', '.join(BACKENDS.names())}; providers: {names})"
        )
    return Address(provider, model)


def _require_base_url(address: Address, base_url: str | None) -> None:
    needs = address.provider in BACKENDS and BACKENDS.info(address.provider).get("needs_base_url")
    if needs and not base_url:
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
        address: See `valid_forms()`.
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
        address: See `valid_forms()`.
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
    default_env = BACKENDS.info(parsed.provider).get("key_env")
    if default_env is None:
        return  # fake, openai-compatible and local servers need no key
    env_name = (settings.api_key_env if settings else None) or default_env
    if not os.environ.get(env_name, "").strip():
        raise CredentialsError(missing_key_message(env_name))
