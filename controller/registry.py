"""One registry for every extension point: components registered by name.

Each extension point of the project (agent kinds, subcommands, decision modules,
memories, planners, reflectors, model backends, maps, judges, rule books, report
sections, the side format) is a `Registry`: a read-only mapping from a name to what is
registered under it. A registration is one call, `register(name, value)` or the
decorator form `@REGISTRY.add(name)`; the value may also be a `"module:attr"` reference,
imported on first use, so that an optional SDK (openai, anthropic) or a slow module is
loaded only by the one who needs it. A lookup of an unknown name raises an error naming
the point, the name and the names known.

A registry may also be filled from outside: by an entry-point group of `pyproject.toml`
(`controller.plugins`, the checkout's declarations included), each entry point either a
value registered under its name (`hooks=False`, resolved lazily from its `module:attr`)
or a callable that registers things itself (`hooks=True`); and by a `load` callable that
imports the modules whose registrations fill it (e.g. every file of a package). Both run
once, on the first lookup.

This module imports only the standard library and `controller.plugins`, so every package
may use it without an import circle.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar, cast

from controller.plugins import entry_points

log = logging.getLogger(__name__)

T = TypeVar("T")
V = TypeVar("V")


class RegistryError(ValueError):
    """A name registered twice, or a reference that does not resolve."""


class UnknownNameError(RegistryError, KeyError):
    """No entry of that name (a `KeyError` and a `ValueError` both)."""

    def __str__(self) -> str:
        # KeyError quotes its argument; the message is meant to be read as it is.
        return str(self.args[0]) if self.args else ""


POINTS: dict[str, Registry[Any]] = {}
"""Every registry made, by its point's name (what the import-graph test walks)."""


def _same(held: object, new: object) -> bool:
    return held is new or held == new


class Registry(Generic[T]):
    """The entries of one extension point, by name, in the order they were registered
    (read like a mapping: `REGISTRY[name]`, `name in REGISTRY`, iteration over names).

    Args:
        point: The point's name, as messages show it (e.g. `agent kind`, `backend`).
        group: An entry-point group feeding it (None: none).
        hooks: Each entry point of `group` is a callable that registers (True), or the
            value to register under the entry point's name (False).
        load: Called once before the first lookup, to import what registers itself.
        same: Whether registering `new` over `held` under one name is harmless (then the
            new value replaces the held one); otherwise a second registration is an error.
        error: The exception class of a duplicate (a subclass of `RegistryError` or any
            exception taking one message); an unknown name raises `UnknownNameError`
            unless `unknown` names another class.
        unknown: The exception class of an unknown name.
    """

    def __init__(
        self,
        point: str,
        *,
        group: str | None = None,
        hooks: bool = False,
        load: Callable[[], None] | None = None,
        same: Callable[[Any, Any], bool] = _same,
        error: type[Exception] = RegistryError,
        unknown: type[Exception] = UnknownNameError,
    ) -> None:
        self.point = point
        self.group = group
        self.hooks = hooks
        self._load = load
        self._same = same
        self._error = error
        self._unknown = unknown
        self._lock = threading.RLock()
        self._entries: dict[str, T | str] = {}
        self._info: dict[str, dict[str, Any]] = {}
        self._loaded = group is None and load is None
        self._loading = False
        POINTS.setdefault(point, self)

    def __repr__(self) -> str:
        return f"Registry({self.point!r}, {len(self._entries)} registered)"

    # -- registering ---------------------------------------------------------------------

    def register(self, name: str, value: T | str, *, replace: bool = False, **info: Any) -> None:
        """Register `value` (or a lazy `"module:attr"` reference to it) under `name`.

        Args:
            name: The name lookups use.
            value: The entry, or `"module:attr"` imported on first lookup.
            replace: Replace whatever is held under the name.
            info: Facts about the entry readable without loading it (`info(name)`).

        Raises:
            The point's `error` class: another entry holds the name.
        """
        if isinstance(value, str) and ":" not in value:
            raise self._error(f"{self.point} {name!r}: a reference is 'module:attr' ({value!r})")
        with self._lock:
            held = self._entries.get(name)
            if held is not None and not replace and not self._same(held, value):
                raise self._error(f"{self.point} {name!r} is registered twice")
            self._entries[name] = value
            self._info[name] = dict(info)

    def add(self, name: str, **info: Any) -> Callable[[V], V]:
        """The decorator form of `register` (the decorated object is the entry)."""

        def put(obj: V) -> V:
            self.register(name, cast(T, obj), **info)
            return obj

        return put

    def held(self, name: str) -> bool:
        """Whether `name` is registered now (loads nothing: for use while registering)."""
        with self._lock:
            return name in self._entries

    def remove(self, name: str) -> None:
        """Drop an entry (tests and plugins replacing a built-in; unknown names pass)."""
        with self._lock:
            self._entries.pop(name, None)
            self._info.pop(name, None)

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Run the entry-point group and the `load` callable once (lookups call this)."""
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
        try:
            if self._load is not None:
                self._load()
            if self.group is not None:
                self._load_group(self.group)
        finally:
            with self._lock:
                self._loaded = True
                self._loading = False

    def _load_group(self, group: str) -> None:
        for entry in entry_points(group):
            if not self.hooks:
                if entry.name not in self._entries:
                    self.register(entry.name, entry.value)
                continue
            try:
                entry.load()()
            except Exception:  # a broken plugin must not hide the other entries
                log.exception("%s plugin %s failed to register", self.point, entry.value)

    # -- looking up ----------------------------------------------------------------------

    def get(self, name: str, where: str | None = None) -> T:
        """The entry registered under `name`, its reference imported on first use.

        Args:
            name: The name.
            where: What to name in the message instead of the point (e.g. the config
                field that gave the name, `crew.agent`).

        Raises:
            The point's `unknown` class (`UnknownNameError`): no such name, naming the
                point, the name and the known names.
            RegistryError: a reference that does not import.
        """
        self.load()
        with self._lock:
            if name not in self._entries:
                raise self._unknown(self.unknown_message(name, where))
            held = self._entries[name]
        if not isinstance(held, str):
            return held
        value = self._resolve(name, held)
        with self._lock:
            if self._entries.get(name) == held:
                self._entries[name] = value
        return value

    def unknown_message(self, name: str, where: str | None = None) -> str:
        """The message of a lookup of an unknown name."""
        known = ", ".join(self.names()) or "none"
        prefix = f"{where}: " if where else ""
        return f"{prefix}unknown {self.point} {name!r}; known: {known}"

    def _resolve(self, name: str, ref: str) -> T:
        module, _, attr = ref.partition(":")
        try:
            found: Any = importlib.import_module(module)
            for part in attr.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError) as exc:
            raise RegistryError(
                f"{self.point} {name!r}: {ref} could not be loaded ({type(exc).__name__}: {exc})"
            ) from exc
        return cast(T, found)

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        self.load()
        with self._lock:
            return list(self._entries)

    def info(self, name: str) -> Mapping[str, Any]:
        """The facts registered with an entry (without loading it).

        Raises:
            The point's `unknown` class: no such name.
        """
        self.load()
        with self._lock:
            if name not in self._info:
                raise self._unknown(self.unknown_message(name))
            return dict(self._info[name])

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        self.load()
        with self._lock:
            return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def keys(self) -> list[str]:
        """The names (`names`)."""
        return self.names()

    def values(self) -> list[T]:
        """Every entry, loaded, in registration order."""
        return [self.get(name) for name in self.names()]

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) pairs, loaded, in registration order."""
        return [(name, self.get(name)) for name in self.names()]
