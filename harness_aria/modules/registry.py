"""The decision-module registry: each module registers itself, by name, in its own file.

A module file in `harness_aria/modules/` decorates its class with `register_module` and
says there everything the harness needs of it:

* when the planner is offered it (`offered`, a predicate over the agent's filtered
  observation and its spec) and where it stands in the offered list (`rank`); or the
  phase it runs in instead (`phase`: the meeting's turn, the vote);
* the (temperature, max_tokens) of each call purpose it asks under (`budgets`; a call
  under a purpose nobody registered is an error, `harness_aria.toolkit.budget`);
* what the planner's `target` names for it (`target`: the hint in the planner's
  answer format, for the roles it is offered to);
* whether its program may go on unasked (`continues`, `AriaSpec.continuation`);
* whether it is on in every game (`default`) or only when a spec lists it in
  `AriaSpec.extra_modules`, and its number among the reference's eight (`number`).

Hooks the agent loop calls (a follow-up at the next step, a claim on a step before the
planner) are optional methods of the module (`harness_aria.modules.base.FollowsUp`,
`Claims`). Every file of the package is imported on first use (`discover`), so a new
file that registers itself is the whole addition; its prompt goes under
`harness_aria/prompts/`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar, cast

from controller.observation import Observation
from controller.registry import Registry
from harness_aria.toolkit import Budget, register_budgets

if TYPE_CHECKING:
    from harness_aria.modules.base import Module
    from harness_aria.spec import AriaSpec

Phase = Literal["free_roam", "meeting", "voting"]
"""When a module runs: chosen by the planner in free roam, or as the meeting's turn or
the vote."""
Offer = Callable[[Observation, "AriaSpec"], bool]
"""Whether the planner is offered a free-roam module now (filtered observation, spec)."""
ROLES = frozenset({"crewmate", "impostor"})


class RegistryError(ValueError):
    """A module registration is inconsistent (a name twice, a free-roam module that is
    never offered, a phase with two modules)."""


@dataclass(frozen=True)
class Target:
    """What the planner's `target` names for a module, as its answer format says it."""

    hint: str
    """E.g. `a station id` (shown as `MISSION: a station id`)."""
    order: int
    """Where the hint stands among the others (the reference's: MOVE, MISSION, KILL)."""
    roles: frozenset[str] = ROLES
    """The roles whose planner prompt shows the hint (those the module is offered to)."""


@dataclass(frozen=True)
class ModuleEntry:
    """One registered module and what the harness needs to know of it."""

    name: str
    make: Callable[[], Module]
    budgets: Mapping[str, Budget]
    phase: Phase = "free_roam"
    offered: Offer | None = None
    rank: int = 0
    target: Target | None = None
    continues: bool = False
    default: bool = True
    number: int | None = None


def _import_files() -> None:
    """Import every file of `harness_aria.modules`, so each registers itself."""
    package = importlib.import_module(__package__ or "harness_aria.modules")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        importlib.import_module(f"{package.__name__}.{info.name}")


MODULES: Registry[ModuleEntry] = Registry(
    "decision module", load=_import_files, error=RegistryError, unknown=KeyError
)
"""The decision modules by name, every file of the package imported on first lookup."""
_C = TypeVar("_C", bound=type)


def register_module(
    name: str,
    *,
    budgets: Mapping[str, Budget],
    offered: Offer | None = None,
    rank: int = 0,
    phase: Phase = "free_roam",
    target: Target | None = None,
    continues: bool = False,
    default: bool = True,
    number: int | None = None,
) -> Callable[[_C], _C]:
    """A class decorator registering a decision module (its class is its factory).

    Args:
        name: The module's name (the planner's word for it, upper case), also its
            class's `name`.
        budgets: (temperature, max_tokens) of each call purpose it asks under.
        offered: Free roam: whether the planner is offered it now, from the agent's
            filtered observation and its spec (never the raw observation).
        rank: Free roam: its place in the planner's list of offered modules (lowest
            first).
        phase: `free_roam` (chosen by the planner), or `meeting` / `voting` (run as
            the phase's decision; one module per phase).
        target: What the planner's `target` names for it (None: it takes none).
        continues: Its program may go on unasked while nothing in view changes
            (`AriaSpec.continuation`).
        default: On in every game; False: only when a spec lists it in
            `AriaSpec.extra_modules`.
        number: Its index among the reference's eight modules (the order of
            `harness_aria.modules.MODULES` and of the gym environment's action space);
            None for a module added since (listed after them, by name).

    Raises:
        RegistryError: the name is taken, differs from the class's `name`, or a
            free-roam module has no `offered`.
    """

    def add(cls: _C) -> _C:
        if MODULES.held(name):
            raise RegistryError(f"module {name!r} is registered twice")
        own = getattr(cls, "name", name)
        if own != name:
            raise RegistryError(f"module {name!r}: its class's name is {own!r}")
        if phase == "free_roam" and offered is None:
            raise RegistryError(f"module {name!r}: a free-roam module needs `offered`")
        register_budgets(f"module {name}", budgets)
        MODULES.register(
            name,
            ModuleEntry(
                name=name,
                make=cast("Callable[[], Module]", cls),
                budgets=dict(budgets),
                phase=phase,
                offered=offered,
                rank=rank,
                target=target,
                continues=continues,
                default=default,
                number=number,
            ),
        )
        return cls

    return add


def discover() -> None:
    """Import every file of `harness_aria.modules` (once), so each registers itself."""
    MODULES.load()


def registered() -> list[ModuleEntry]:
    """Every registered module: the reference's eight by `number`, then the rest by name."""
    discover()
    return sorted(
        MODULES.values(),
        key=lambda e: (e.number is None, e.number if e.number is not None else 0, e.name),
    )


def entry(name: str) -> ModuleEntry:
    """The registration of a module.

    Raises:
        KeyError: no module of that name, with the registered names.
    """
    if name not in MODULES:
        known = ", ".join(e.name for e in registered())
        raise KeyError(f"no decision module {name!r} (registered: {known})")
    return MODULES[name]


def optional_names() -> list[str]:
    """The modules off by default, which `AriaSpec.extra_modules` may list."""
    return [e.name for e in registered() if not e.default]


def check_extra_modules(names: tuple[str, ...]) -> tuple[str, ...]:
    """`AriaSpec.extra_modules`, checked: registered modules off by default, each once
    (upper case).

    Raises:
        ValueError: naming the field, the bad name and the names it may list.
    """
    optional = optional_names()
    allowed = ", ".join(optional) or "none are registered"
    out: list[str] = []
    for raw in names:
        name = raw.strip().upper()
        if name not in optional:
            why = (
                "is on in every game already"
                if name in MODULES
                else "is not a registered decision module"
            )
            raise ValueError(
                f"extra_modules: {raw!r} {why}; modules off by default it may list: {allowed}"
            )
        if name in out:
            raise ValueError(f"extra_modules: {name!r} is listed twice")
        out.append(name)
    return tuple(out)


def enabled(spec: AriaSpec) -> list[ModuleEntry]:
    """The modules an agent with this spec has: every default one and the spec's
    `extra_modules`, in `registered` order.

    Raises:
        ValueError: the spec lists a module that is not registered or is on already
            (`check_extra_modules`).
        RegistryError: two modules for one phase.
    """
    extra = set(check_extra_modules(spec.extra_modules))
    out = [e for e in registered() if e.default or e.name in extra]
    phases = [e.phase for e in out if e.phase != "free_roam"]
    if len(phases) != len(set(phases)):
        raise RegistryError(f"two modules run in one phase: {phases}")
    return out


GHOST_MODULES = frozenset({"MISSION", "MOVE"})
"""The only modules a ghost is offered (`rules.ghost_tasks`: a dead or ejected crewmate
keeps doing its tasks, as the reference's ghost crewmates keep doing missions): never
KILL, REPORT, EMERGENCY, SURVEILLANCE or another module, and no meeting or vote."""


def is_ghost(obs: Observation) -> bool:
    """Whether the observation is a ghost's (killed or ejected): `Observation.ghost`
    where the observation has it, else the scoreboard's `dead` flag."""
    return bool(getattr(obs, "ghost", False)) or obs.scoreboard.dead


def offered_modules(entries: list[ModuleEntry], obs: Observation, spec: AriaSpec) -> list[str]:
    """The free-roam modules of `entries` the planner is offered now, in `rank` order
    (a ghost: only those of `GHOST_MODULES` it would be offered).

    Args:
        entries: The agent's modules (`enabled`).
        obs: The agent's filtered observation.
        spec: The agent's spec.
    """
    free = sorted((e for e in entries if e.offered is not None), key=lambda e: e.rank)
    if is_ghost(obs):
        free = [e for e in free if e.name in GHOST_MODULES]
    return [e.name for e in free if e.offered is not None and e.offered(obs, spec)]


def target_hints(spec: AriaSpec, role: str) -> str:
    """The planner format's `target` text for a role: what it names for each module the
    role may be offered that takes one, e.g. `MOVE: a room id or a player to follow;
    MISSION: a station id; otherwise null`."""
    hinted = [e for e in enabled(spec) if e.target is not None and role in e.target.roles]
    hinted.sort(key=lambda e: e.target.order if e.target is not None else 0)
    return "; ".join(
        [*(f"{e.name}: {e.target.hint}" for e in hinted if e.target), "otherwise null"]
    )
