"""Agent kinds, registered by name: who can play a side.

A side's configuration names a kind and its arguments (`crew: {agent: aria, args: {...}}`);
the kind validates the arguments (errors name the field, e.g. `crew.args.temperature`),
checks early what could stop a game before it starts (a missing API key), and builds the
side's agents. The controller knows only this interface: `scripted` is registered here,
and other packages register their kinds through the `mineamongus.agents` entry-point group
(each entry point is a callable that calls `register`; `controller.plugins` finds them,
installed or in the checkout) or by importing a registration module before a game is
configured.

A kind may also describe itself (`facts(args)`: its backend, model and settings) and
price its calls (`price(args)`), so that estimates and tables never parse its arguments;
and one harness may register a `SideFormat`: its own older way of writing a side, and
how `mineamongus play`'s side flags (`--crew`, `--base-url`, `--text-only`,
`--ablation`) reach its args. The controller knows none of a harness's field names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError

from controller.agents.base import Agent
from controller.registry import Registry

if TYPE_CHECKING:
    # The rules live in a module of their own: `controller.config`, which validates its
    # sides through this registry, is not imported here (no import circle).
    from controller.rules import RulesConfig
    from world.geometry import ShipGeometry

ENTRY_POINT_GROUP = "mineamongus.agents"
"""Entry points of this group are called (with no arguments) to register agent kinds."""


class AgentKindError(ValueError):
    """An unknown kind or arguments its kind refuses; the message names the field."""


@dataclass(frozen=True)
class SideContext:
    """What a kind gets to build one side's agents.

    Attributes:
        side: `crew` or `impostor` (for messages and records).
        rules: The game's rules.
        seed: The game seed (kinds derive their own seeded RNGs from it).
        geometry: The map.
        run_dir: The run folder (for records an agent keeps, e.g. prompts), or None.
    """

    side: str
    rules: RulesConfig
    seed: int
    geometry: ShipGeometry
    run_dir: Path | None = None


SideFactory = Callable[[str], Agent]
"""Builds the agent of one seat of the side, by agent id."""


class AgentKind(Protocol):
    """One kind of agent."""

    name: str
    """The name a side's `agent` field uses."""

    def parse_args(self, args: Mapping[str, Any]) -> BaseModel:
        """Validate the side's `args` (raise pydantic's ValidationError when bad)."""
        ...

    def check(self, args: BaseModel, side: str) -> None:
        """Fail early (before any server starts) with a clear `AgentKindError`."""
        ...

    def side(self, args: BaseModel, context: SideContext) -> SideFactory:
        """The factory of the side's agents."""
        ...


KINDS: Registry[AgentKind] = Registry(
    "agent kind",
    group=ENTRY_POINT_GROUP,
    hooks=True,
    # A kind's module imported again (a test, a plugin) registers an equal kind again.
    same=lambda held, new: type(held) is type(new),
    error=AgentKindError,
    unknown=AgentKindError,
)
"""The agent kinds by name; the `mineamongus.agents` entry points register theirs."""


def register(kind: AgentKind) -> None:
    """Register a kind under its name (registering one of the same type again replaces it).

    Raises:
        AgentKindError: Another kind already holds the name.
    """
    KINDS.register(kind.name, kind)


def load_plugins() -> None:
    """Call every `mineamongus.agents` entry point once (each registers its kinds)."""
    KINDS.load()


def kinds() -> list[str]:
    """The registered kind names, sorted."""
    return sorted(KINDS.names())


def get_kind(name: str, field: str = "agent") -> AgentKind:
    """The kind registered under `name`.

    Raises:
        AgentKindError: Unknown name (the message lists the known kinds).
    """
    return KINDS.get(name, field)


def validate_args(name: str, args: Mapping[str, Any], side: str) -> BaseModel:
    """Validate a side's arguments with its kind.

    Raises:
        AgentKindError: Naming each bad field as `<side>.args.<field>: <problem>`.
    """
    kind = get_kind(name, f"{side}.agent")
    try:
        return kind.parse_args(args)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"])
            lines.append(f"{side}.args.{where}: {err['msg']} (got {err.get('input')!r})")
        raise AgentKindError("; ".join(lines)) from exc


@dataclass(frozen=True)
class KindFacts:
    """What a side's kind and args say about who plays it (for estimates and tables).

    Attributes:
        backend: The model backend's address (e.g. `openai:gpt-4.1-mini`), or the kind's
            name when it calls no model.
        model: The model's name, or None when the side calls none.
        billed: Whether its model calls cost money (False: scripted agents, offline fakes).
        text_only: Whether its model is sent no images.
        axes: The side's settings as a flat mapping with every default filled in (for
            `aria`: its spec); compared field by field with measured settings.
    """

    backend: str
    model: str | None = None
    billed: bool = False
    text_only: bool = False
    axes: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class DescribedKind(Protocol):
    """A kind that says what plays (optional; see `side_facts`)."""

    def facts(self, args: BaseModel) -> KindFacts:
        """The facts of a side with these (validated) args."""
        ...


class Price(Protocol):
    """The list price of one model (what `PricedKind.price` returns)."""

    def cost(
        self, *, uncached_in: int, cached_in: int = 0, cache_write_in: int = 0, out: int = 0
    ) -> float:
        """Cost in USD of these tokens."""
        ...


@runtime_checkable
class PricedKind(Protocol):
    """A kind that prices its model calls (optional; see `side_price`)."""

    def price(self, args: BaseModel) -> Price | None:
        """The price of the side's model, or None when it is unknown (never taken as $0)."""
        ...


def side_facts(name: str, args: Mapping[str, Any], side: str = "side") -> KindFacts:
    """The facts of a side played by kind `name` with `args`.

    A kind that does not describe itself is taken as a billed model of unknown price
    named like the kind, so that its cost shows as unknown rather than $0.

    Raises:
        AgentKindError: Unknown kind or bad args (naming the field).
    """
    kind = get_kind(name, f"{side}.agent")
    parsed = validate_args(name, args, side)
    if isinstance(kind, DescribedKind):
        return kind.facts(parsed)
    return KindFacts(backend=name, model=name, billed=True)


def side_price(name: str, args: Mapping[str, Any], side: str = "side") -> Price | None:
    """The price of the model a side calls, None when unknown or the kind prices nothing.

    Raises:
        AgentKindError: Unknown kind or bad args (naming the field).
    """
    kind = get_kind(name, f"{side}.agent")
    parsed = validate_args(name, args, side)
    return kind.price(parsed) if isinstance(kind, PricedKind) else None


@dataclass(frozen=True)
class PlayFlags:
    """The side flags of `mineamongus play` that reach the sides' args (None / empty: not
    given); `--crew` and `--impostor` go through `SideFormat.flag_side`."""

    base_url: str | None = None
    """`--base-url URL`."""
    text_only: str | None = None
    """`--text-only [crew|impostor|both]`."""
    ablations: tuple[str, ...] = ()
    """Every `--ablation SIDE.FIELD=VALUE`, in order."""

    def given(self) -> bool:
        """Whether any of the flags was given."""
        return self.base_url is not None or self.text_only is not None or bool(self.ablations)


class SideFormat(Protocol):
    """A harness's own way of writing a side, and how `play`'s side flags reach its args.

    One harness registers it (`harness_aria.registration`: the older flat form
    `crew: {backend: openai:MODEL, spec: {...}}` and the flags of ARIA's sides).
    """

    def translate(self, side: Mapping[str, Any]) -> dict[str, Any]:
        """A side as written, with fields beyond `agent` and `args`, in the
        `{agent, args}` form (fields it does not know are left for the config to refuse)."""
        ...

    def flag_side(self, address: str) -> dict[str, Any]:
        """The side `--crew ADDRESS` / `--impostor ADDRESS` names, in a form `translate`
        reads (deep-merged over the side the presets and the config file give)."""
        ...

    def apply_flags(
        self, sides: Mapping[str, tuple[str, Mapping[str, Any]]], flags: PlayFlags
    ) -> dict[str, dict[str, Any]]:
        """Per side, what the flags change, in a form `translate` reads.

        Args:
            sides: Per side (`crew`, `impostor`), its resolved kind and args.
            flags: The flags given.

        Raises:
            ValueError: A flag that does not fit the sides (the message names the flag).
        """
        ...


SIDE_FORMATS: Registry[SideFormat] = Registry(
    "side format",
    same=lambda held, new: type(held) is type(new),
    error=AgentKindError,
    unknown=AgentKindError,
)
"""The side format, by its harness's name: at most one is registered."""


def register_side_format(fmt: SideFormat, name: str = "aria") -> None:
    """Register the side format (registering one of the same type again is a no-op).

    Raises:
        AgentKindError: Another harness's format is registered.
    """
    held = [n for n in SIDE_FORMATS.names() if n != name]
    if held:
        raise AgentKindError(f"a side format is already registered ({held[0]})")
    SIDE_FORMATS.register(name, fmt)


def side_format() -> SideFormat | None:
    """The registered side format, None when no installed harness registers one."""
    load_plugins()
    names = SIDE_FORMATS.names()
    return SIDE_FORMATS.get(names[0]) if names else None


def translate_side(side: Mapping[str, Any]) -> dict[str, Any]:
    """A side written in a harness's own form, in the `{agent, args}` form (as it is when
    no harness registers a format: the config then names the fields it does not know)."""
    fmt = side_format()
    return fmt.translate(side) if fmt is not None else dict(side)


class NoArgs(BaseModel):
    """A kind without arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptedKind:
    """`scripted`: the rule-based control agent (no arguments)."""

    name = "scripted"

    def parse_args(self, args: Mapping[str, Any]) -> BaseModel:
        """No arguments are accepted."""
        return NoArgs.model_validate(dict(args))

    def check(self, args: BaseModel, side: str) -> None:
        """Nothing can fail early."""

    def facts(self, args: BaseModel) -> KindFacts:
        """No model: nothing billed."""
        return KindFacts(backend=self.name)

    def side(self, args: BaseModel, context: SideContext) -> SideFactory:
        """Scripted agents seeded from the game seed."""
        from controller.agents.scripted import ScriptedAgent

        def make(agent_id: str) -> Agent:
            return ScriptedAgent(agent_id, context.geometry, context.seed, context.rules)

        return make


register(ScriptedKind())
