"""What the SDK backends (OpenAI, Anthropic) share: the address, the key, the retrier, one
SDK client per event loop, the sampling of a request, the price of an answer, closing.

A subclass names its `provider` and key variable and builds its SDK client
(`_new_client`); its `complete` turns a request into the API's call and the answer into a
`ModelResponse`, with `_prepare` before and `_cost` after.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any, ClassVar, Generic, TypeVar

from harness_aria.backends.base import ModelRequest
from harness_aria.backends.common import LoopBoundClient, require_key
from harness_aria.backends.retry import Retrier
from harness_aria.backends.settings import (
    BackendSettings,
    Sampling,
    price_for,
    resolve_sampling,
    warn_unpriced,
)

C = TypeVar("C")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The certificate check every SDK client of this process shares: the one the SDKs'
    HTTP library (`httpx2`) builds by default, made once. Building it reads the
    certificate bundle (about 30 ms each time); a game makes a client per side, and a
    tournament plays thousands of games. Read when first asked for: `SSL_CERT_FILE` and
    `SSL_CERT_DIR` set after that are not seen by this process."""
    import httpx2

    return httpx2.create_ssl_context()


class SDKBackend(Generic[C]):
    """The common part of a backend over a provider's SDK.

    Args:
        model: The model name, e.g. `gpt-4.1-mini`.
        base_url: Another endpoint (a proxy, a local server, the mock server in tests).
        text_only: Drop images from every request.
        settings: Timeouts, retries, JSON mode, key variable, prices.

    Raises:
        ValueError: The model name is empty.
        CredentialsError: The key variable is unset.
    """

    provider: ClassVar[str]
    """The address prefix of the backend's kind (`openai`, `anthropic`)."""
    default_key_env: ClassVar[str | None]
    """The variable holding the key, unless `settings.api_key_env` names another."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        text_only: bool = False,
        settings: BackendSettings | None = None,
    ) -> None:
        if not model:
            raise ValueError(f"{self.provider}: a model name is required ({self.provider}:MODEL)")
        self.model = model
        self.address = f"{self._address_name()}:{model}"
        self.base_url = self._endpoint(base_url)
        self.vision = not text_only
        self.settings = settings or BackendSettings()
        key = self._api_key()
        self._retrier = Retrier(self.address, self.settings, secrets=(key,))
        endpoint, timeout = self.base_url, self.settings.timeout_s
        # max_retries=0 in every client: each try goes through the Retrier, so it is
        # counted and logged. One client per event loop (`LoopBoundClient`).
        self._clients: LoopBoundClient[C] = LoopBoundClient(
            lambda: self._new_client(key, endpoint, timeout)
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(address={self.address!r}, base_url={self.base_url!r}, "
            f"vision={self.vision})"
        )

    def _address_name(self) -> str:
        """What the address starts with (the provider's name)."""
        return self.provider

    def _endpoint(self, base_url: str | None) -> str | None:
        """The endpoint the SDK is given (the default: `base_url` as passed)."""
        return base_url

    def _api_key(self) -> str:
        env_name = self.settings.api_key_env or self.default_key_env
        assert env_name is not None
        return require_key(env_name)

    def _new_client(self, key: str, base_url: str | None, timeout: float) -> C:
        """A new SDK client (with its own HTTP client, closed with it)."""
        raise NotImplementedError

    def _prepare(self, request: ModelRequest) -> tuple[ModelRequest, Sampling]:
        """The request as sent (images dropped when text-only) and its sampling."""
        if not self.vision:
            request = request.without_images()
        sampling = resolve_sampling(
            self.model,
            self.settings.model,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            fixed=request.fixed_sampling,
        )
        return request, sampling

    def _cost(self, served_model: str | None, **tokens: Any) -> float | None:
        """The answer's price from the settings' table (the requested model's, else the
        served one's), or None (warned once) for a model the table does not hold."""
        price = price_for(self.model, self.settings.prices) or (
            price_for(served_model, self.settings.prices) if served_model else None
        )
        if price is None:
            warn_unpriced(self.model)
            return None
        return price.cost(**tokens)

    async def aclose(self) -> None:
        """Close the SDK client of the running loop (optional; clients also die with it)."""
        client: Any = self._clients.current()
        if client is not None:
            await client.close()
        self._clients.forget()
