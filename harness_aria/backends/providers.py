"""OpenAI-compatible providers as data: `providers.toml`, plus the user's own file.

Each entry names a server that speaks OpenAI's chat completions (its URL, the variable
holding its key, whether it takes `response_format`); the backend address `NAME:MODEL`
then builds an `OpenAICompatibleBackend` for it. The packaged table is read first, then
the file named by `MINEAMONGUS_PROVIDERS` (same form), whose entries may add providers or
replace packaged ones.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

USER_FILE_ENV = "MINEAMONGUS_PROVIDERS"
"""The environment variable naming a TOML file of further providers."""
RESERVED = frozenset({"fake", "openai", "anthropic", "openai-compatible", "scripted"})
"""Names a provider entry may not take (the built-in backends and the control agent)."""


class ProviderError(ValueError):
    """A provider table is malformed (names the file, the entry and the field)."""


class Provider(BaseModel):
    """One OpenAI-compatible provider."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The address prefix (`NAME:MODEL`)."""
    base_url: str
    """The server's URL ending in `/v1`; `--base-url` overrides it."""
    key_env: str | None = None
    """The environment variable holding its key; unset, a dummy key is sent."""
    key_required: bool = False
    """Refuse to start when `key_env` is unset (a hosted service)."""
    json_mode: bool | None = None
    """False: the server refuses `response_format` (None: the settings decide)."""
    about: str = ""
    """One line for error messages and docs."""

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or not value.rstrip("/").endswith("/v1"):
            raise ValueError(
                "must be an http(s) URL ending in /v1, e.g. http://127.0.0.1:8000/v1 "
                f"(got {value!r})"
            )
        return value

    @field_validator("key_env")
    @classmethod
    def _env(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must name an environment variable, or be left out")
        return value


def parse_table(data: Mapping[str, Any], source: str) -> dict[str, Provider]:
    """The providers of one table (TOML already read).

    Raises:
        ProviderError: naming `source`, the entry and the field to fix.
    """
    out: dict[str, Provider] = {}
    for name, entry in data.items():
        if name in RESERVED:
            raise ProviderError(
                f"{source}: [{name}] is a built-in backend name; choose another provider name"
            )
        if not isinstance(entry, Mapping):
            raise ProviderError(f"{source}: [{name}] must be a table (base_url = ...)")
        try:
            out[name] = Provider(name=name, **entry)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}" for e in exc.errors()
            )
            raise ProviderError(f"{source}: [{name}] {problems}") from None
    return out


def _read(text: str, source: str) -> dict[str, Provider]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProviderError(f"{source}: not valid TOML ({exc})") from None
    return parse_table(data, source)


def load_providers() -> Mapping[str, Provider]:
    """The packaged providers, then the user's file's (`MINEAMONGUS_PROVIDERS`), by name.

    Raises:
        ProviderError: a malformed table, or a user file that does not exist.
    """
    packaged = resources.files("harness_aria.backends").joinpath("providers.toml")
    table = _read(packaged.read_text(encoding="utf-8"), "harness_aria/backends/providers.toml")
    user = os.environ.get(USER_FILE_ENV, "").strip()
    if user:
        path = Path(user).expanduser()
        if not path.is_file():
            raise ProviderError(f"{USER_FILE_ENV}={user}: no such file")
        table.update(_read(path.read_text(encoding="utf-8"), str(path)))
    return MappingProxyType(table)
