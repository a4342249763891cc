"""Pieces shared by the SDK backends: API keys from the environment, per-loop SDK clients."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Generic, TypeVar

from harness_aria.backends.base import CredentialsError

C = TypeVar("C")


def missing_key_message(env_name: str) -> str:
    """The message for an unset key variable (the CLI shows it before starting anything).

    Args:
        env_name: The environment variable that should hold the key.

    Returns:
        A one-line message naming the variable and the way out.
    """
    return f"{env_name} is not set; export it or use --crew fake"


def require_key(env_name: str) -> str:
    """Read an API key from the environment.

    Args:
        env_name: The environment variable.

    Returns:
        The key (kept by the caller only inside its SDK client).

    Raises:
        CredentialsError: The variable is unset or empty.
    """
    key = os.environ.get(env_name, "").strip()
    if not key:
        raise CredentialsError(missing_key_message(env_name))
    return key


class LoopBoundClient(Generic[C]):
    """One SDK client per running event loop.

    An SDK's async client keeps a connection pool tied to the loop that opened it; a backend
    used from several `asyncio.run` calls (tests, CLI subcommands) gets a fresh client on
    each loop instead of a pool bound to a closed one.
    """

    def __init__(self, factory: Callable[[], C]) -> None:
        """Create the holder; no client is built until first use.

        Args:
            factory: Builds a client (called inside the running loop).
        """
        self._factory = factory
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: C | None = None

    def __repr__(self) -> str:
        return "LoopBoundClient()"

    def get(self) -> C:
        """The client for the running loop (built on first use in that loop).

        Returns:
            The SDK client.
        """
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = self._factory()
            self._loop = loop
        return self._client

    def current(self) -> C | None:
        """The client for the running loop if one was built, else None."""
        loop = asyncio.get_running_loop()
        return self._client if self._loop is loop else None

    def forget(self) -> None:
        """Drop the held client (after closing it)."""
        self._client = None
        self._loop = None
