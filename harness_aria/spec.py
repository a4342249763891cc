"""The ARIA ablation spec: five axes as one frozen value.

An ablation is a value, not an edit: one `AriaSpec` is passed into an agent and
written in full into the game record and beside every decision (`extra_modules` only
when it lists any, so a default spec's record is as it was before the field existed).

A spec names a `profile` (`harness_aria.profiles`: `reference`, the authors' harness, by
default; or `lean`) and holds every setting that profile governs resolved: a setting
given explicitly (a side's `spec:`, `--ablation`, a study's axes) wins, the rest come
from the profile, and `explicit` records which were given, so the record says both what
was played and what was chosen. Changing the spec (`with_changes`, `model_copy(update=)`,
`apply_ablations`) keeps the given settings and re-resolves the rest from the profile
then named.

The component of an axis (the memory, the planner, the reflector) is registered by
name in a `Catalogue` and rebuilt from the spec: the axis's value names it, and its
registration reads its constructor's arguments from the spec's fields.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, Literal, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from controller.registry import Registry
from harness_aria.profiles import DEFAULT_PROFILE, PROFILES, SETTINGS

AXES = ("state", "memory", "planning", "reflection", "prompt")


class AriaSpec(BaseModel):
    """One point of the 2^5 ablation grid, plus the knobs each component reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: Literal["ego", "privileged"] = "privileged"
    """`ego`: only what the camera's field of view shows (cone, line of sight,
    `ego_range`) in every channel, plus public facts; `privileged`: plus the map, own task
    locations, everything in sight all around and the roster's last-known positions
    within `privileged_radius` (see `controller.views`)."""
    memory: Literal["window", "semantic"] = "semantic"
    """`window`: the last `window_k` steps; `semantic`: a belief table per player."""
    planning: Literal["reactive", "hierarchical"] = "reactive"
    """`reactive`: one call picks the module; `hierarchical`: a long-term strategy kept
    and refined every `replan_every` calls, plus a short-term call each step."""
    reflection: Literal["off", "on"] = "off"
    """`on`: reflection after each meeting and a skill memory of programs that worked."""
    prompt: Literal["deterministic", "minimal"] = "minimal"
    """`deterministic`: tactics spelled out; `minimal`: rules and output format only."""
    map_detail: Literal["none", "tables", "full"] = "none"
    """How much of the map the shared prefix describes, beyond what the reference's
    prompts carry (rules and room adjacency, always told): `none` (default, as the
    reference); `tables`: room centres and sizes, corridor extents, walking distances
    between rooms and between task stations, and every station's position; `full`:
    those and an ASCII drawing of the map. An option of the state axis: an experiment
    that gives agents the map says so in its spec."""
    module_calls: Literal["needed", "reference"] = "reference"
    """When a module asks the model its own question after the planner (from the
    profile unless given). `needed` (lean): only where the module needs the model: the
    KILL witness scan, MEETING's speech, the VOTE ballot, SURVEILLANCE of a frame (with
    no frame sent, what is in sight is in the state view already and is noted without a
    call), and MOVE or MISSION only when the planner's `target` names no usable room,
    player or station. REPORT and EMERGENCY carry out the planner's choice. `reference`
    (reference): every module asks (MOVE, MISSION, REPORT and EMERGENCY too), as the
    reference implementation does."""
    continuation: Literal["off", "on"] = "off"
    """The call protocol in free roam (from the profile unless given). `off` (reference):
    every living agent is asked every step. `on` (lean; measured on the fake world, see
    docs/aria.md): an agent whose last program is still running (a MISSION or MOVE
    whose task is in progress or whose walk has not arrived: the program timed out at the
    step's end) is not asked again while nothing it can see has changed (the players and
    bodies in its view, the modules it may choose, a server message, a meeting); the rest
    of that program is dispatched again and logged as a `continuation` event, never as a
    decision."""
    ego_range: float = Field(default=12.0, gt=0)
    """Ego with `ego_view: camera`: how far (blocks) the field of view reaches in what the
    agent is told; the camera view reads nothing beyond the rules' `vision_radius` (12 by
    default). `ego_view: reference` has the reference's own range (36 blocks), read from
    the observation's far sets (`Observation.far_players`)."""
    privileged_radius: float = Field(default=96.0, gt=0)
    """Privileged: how far (blocks) from the agent the roster reports positions (the
    reference's server entity view, about 96 blocks)."""
    window_k: int = Field(default=10, ge=1, le=50)
    """Steps kept by window memory (the prompt shows the last 5)."""
    replan_every: int = Field(default=5, ge=1)
    """Hierarchical planning: planner calls between long-term strategy calls."""
    skill_cap: int = Field(default=50, ge=1)
    """Most skills kept (first in, first out); the last 5 reach the planner."""
    kill_defer_distance: float = Field(default=10.0, gt=0)
    """KILL: a target farther than this (blocks) is stalked, not attacked."""
    profile: Literal["reference", "lean"] = DEFAULT_PROFILE
    """Which harness the settings it governs come from when not given explicitly
    (`harness_aria.profiles`: `continuation`, `module_calls`, `action`, `belief_update`,
    `prompt_content`, `call_sampling`, `ego_view`): `reference` (default) the authors'
    harness as their code builds it; `lean` this project's cheaper harness. A setting
    given explicitly wins over the profile."""
    action: Literal["codegen", "primitives"] = "codegen"
    """How a MOVE or MISSION decision becomes a program. `codegen` (reference): a
    codegen call asks the model for a JavaScript program over a small allowed API; the
    answer is parsed, never run, and translated into program primitives
    (`harness_aria.codegen`), anything else refused and replaced by a wander.
    `primitives` (lean): the module builds the program from primitives itself."""
    belief_update: Literal["llm", "rule"] = "llm"
    """Semantic memory's belief update. `llm` (reference): a model call reads the last
    events and the beliefs and returns per-player suspicion changes (within +-0.3) and
    notes. `rule` (lean): beliefs move by rules only, no call."""
    prompt_content: Literal["reference", "lean"] = "reference"
    """What each call is told. `reference`: the personal message (identity, role,
    teammate, win rules, cooldown, mission locations, conduct) in every prompt and the
    deterministic style's full tactic lists, item for item in this project's words.
    `lean`: the short forms of earlier rounds."""
    call_sampling: Literal["reference", "model"] = "reference"
    """Temperature and output-token limit of each call. `reference`: per call kind as the
    reference sets them (planner and reflection 0.3/256, memory 0.2/256, meeting 0.7/256,
    vote and frame judgements 0.2/256, move and mission 512, codegen 0.2/1024). `model`:
    the backend's own settings for every call."""
    ego_view: Literal["reference", "camera"] = "reference"
    """What `state: ego` shows (`controller.views.Knowledge`). `reference`: the players
    and bodies in view this step only (within +-60 degrees of the heading, in line of
    sight through the ship's walls, under 36 blocks), nothing kept between steps.
    `camera`: the camera's field of view (about 102 degrees), `ego_range` and sightings
    remembered."""
    strike_guard: bool = False
    """An assist, off by default, that departs from the reference. Off: a strike the
    model cleared is sent as it is (`guard: none`): the model's witness scan alone
    decides, so a model that misses a witness kills in front of it, as in the
    reference. On: every strike carries the rules' witness guard (`guard: around` for
    privileged, `sight` for ego; `controller.programs.KillTarget.guard`), which
    withholds it at its own tick when a living crewmate other than the target is in
    the killer's perception, whatever the model judged. Use it only to study other
    behaviour with the kill itself taken out of the model's hands (e.g. meetings
    after unwitnessed kills); it turns witnessed kills, and with them the
    witness-aware-kill behaviour, into something the engine decides."""
    extra_modules: tuple[str, ...] = ()
    """Decision modules that are off by default and offered as well, by their registered
    names (`harness_aria.modules.registry`; any case, or one comma-separated text as
    `--ablation both.extra_modules=NAME,NAME` gives it). Empty (default): the eight
    modules of the reference. A name that is not a registered module off by default is
    refused with the names that are."""
    explicit: tuple[str, ...] = ()
    """The profile's settings given explicitly (in `harness_aria.profiles.SETTINGS`
    order); every other one was filled from `profile`. Filled in by validation: data
    without it counts every governed setting it holds as given; data with it (a spec
    written out and read back) is taken as resolved, so the settings it does not list
    are filled again from the data's profile (a changed profile re-resolves them)."""

    @model_validator(mode="before")
    @classmethod
    def _resolve_profile(cls, data: Any) -> Any:
        """Fill every governed setting not given explicitly from the profile."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        profile = data.get("profile", DEFAULT_PROFILE)
        if profile not in PROFILES:
            return data  # the field's own validation names the profiles
        if "explicit" in data:
            given = _setting_names(data["explicit"])
            for name in SETTINGS:
                if name not in given:
                    data.pop(name, None)
        else:
            given = [name for name in SETTINGS if name in data]
        values = PROFILES[profile].values
        for name in SETTINGS:
            data.setdefault(name, values[name])
        data["explicit"] = tuple(name for name in SETTINGS if name in given)
        return data

    @field_validator("extra_modules", mode="before")
    @classmethod
    def _split_names(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(n.strip() for n in value.split(",") if n.strip())
        return value

    @field_validator("extra_modules")
    @classmethod
    def _each_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # The form only: which names are registered decision modules is checked where a
        # side is configured (`harness_aria.registration.AriaArgs`) and where an agent is
        # built (`harness_aria.modules.registry.enabled`), so the spec stays below the
        # registry.
        out: list[str] = []
        for raw in value:
            name = raw.strip().upper()
            if name in out:
                raise ValueError(f"extra_modules: {name!r} is listed twice")
            out.append(name)
        return tuple(out)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.extra_modules:
            data.pop("extra_modules", None)
        if "explicit" in data:
            # a list in either mode, so a spec read back from a record compares equal
            data["explicit"] = list(self.explicit)
        return data

    def label(self) -> str:
        """A short, stable name of the axis values, e.g. `priv-sem-rea-off-min`."""
        return "-".join(str(getattr(self, axis))[:3] for axis in AXES)

    def given(self) -> dict[str, Any]:
        """The spec as it was written: every field but the governed settings filled from
        the profile (and `explicit`, which validating this again recomputes)."""
        data = self.model_dump()
        data.pop("explicit", None)
        for name in SETTINGS:
            if name not in self.explicit:
                data.pop(name, None)
        return data

    def with_changes(self, changes: Mapping[str, Any]) -> Self:
        """This spec with `changes` given explicitly on top, validated; the governed
        settings neither given before nor now are resolved from the profile the result
        names (so a changed `profile` re-resolves them).

        Raises:
            ValidationError: a change is not a valid value.
        """
        return self.model_validate({**self.given(), **changes})

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with `update`, `with_changes(update)` (validated, the profile's
        settings re-resolved), never pydantic's unvalidated copy."""
        if not update:
            return super().model_copy(deep=deep)
        return self.with_changes(update)


def _setting_names(value: Any) -> list[str]:
    """`explicit` as a list of names, each a setting a profile governs.

    Raises:
        ValueError: a name is not one.
    """
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else list(value)
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        raise ValueError(
            f"explicit: {', '.join(map(repr, unknown))} "
            f"{'is' if len(unknown) == 1 else 'are'} not a setting a profile governs "
            f"({', '.join(SETTINGS)})"
        )
    return [str(n) for n in names if n]


def all_specs() -> list[AriaSpec]:
    """All 32 combinations of the five axes (other knobs at their defaults)."""
    values = [AriaSpec.model_fields[a].annotation.__args__ for a in AXES]  # type: ignore[union-attr]
    return [AriaSpec(**dict(zip(AXES, combo, strict=True))) for combo in itertools.product(*values)]


C = TypeVar("C")


class Catalogue(Registry[Callable[..., C]]):
    """The components of one axis of the spec (e.g. `memory`), registered by name: the
    axis's `controller.registry.Registry`.

    Each is registered with the arguments its constructor takes from the spec
    (`register`); `build(spec)` makes the one the spec's axis names, from that name and
    those arguments. As a mapping it gives each name's constructor.

    Args:
        axis: The spec field whose value names the component.
    """

    def __init__(self, axis: str) -> None:
        super().__init__(f"{axis} component", error=ValueError, unknown=KeyError)
        self.axis = axis
        self._args: dict[str, Callable[[AriaSpec], dict[str, Any]]] = {}

    def register(
        self,
        name: str,
        value: Callable[..., C] | str,
        args: Callable[[AriaSpec], dict[str, Any]] | None = None,
        *,
        replace: bool = False,
        **info: Any,
    ) -> None:
        """Add a component.

        Args:
            name: The axis value that selects it.
            value: Its constructor (or a lazy `"module:attr"` reference to it).
            args: Its constructor's keyword arguments, read from the spec (none if
                omitted).
            replace: Replace the component held under the name.
            info: Facts about it (`Registry.info`).

        Raises:
            ValueError: the name is registered already.
        """
        if self.held(name) and not replace:
            raise ValueError(f"{self.axis}: {name!r} is registered twice")
        super().register(name, value, replace=True, **info)
        self._args[name] = args or (lambda spec: {})

    def arguments(self, spec: AriaSpec) -> tuple[str, dict[str, Any]]:
        """The component the spec selects, as (name, constructor arguments).

        Raises:
            KeyError: no component of that name, with the registered names.
        """
        name = str(getattr(spec, self.axis))
        if name not in self:
            raise KeyError(
                f"{self.axis}: no component {name!r} (registered: {', '.join(self.names())})"
            )
        return name, self._args[name](spec)

    def build(self, spec: AriaSpec) -> C:
        """The component the spec selects, built from its name and arguments."""
        name, args = self.arguments(spec)
        return self.get(name)(**args)


class AblationError(ValueError):
    """A `--ablation` value is malformed; the message says which and how to fix it."""


def apply_ablations(
    crew: AriaSpec, impostor: AriaSpec, items: list[str]
) -> tuple[AriaSpec, AriaSpec]:
    """Apply `side.field=value` settings (side: crew, impostor or both).

    Raises:
        AblationError: naming the bad item and the valid fields and values.
    """
    sides: dict[str, dict[str, Any]] = {"crew": {}, "impostor": {}}
    for item in items:
        key, sep, value = item.partition("=")
        side, dot, field = key.partition(".")
        if not sep or not dot or side not in ("crew", "impostor", "both"):
            raise AblationError(
                f"--ablation {item!r}: expected SIDE.FIELD=VALUE with SIDE crew, impostor or "
                f"both (e.g. crew.memory=semantic)"
            )
        if field not in AriaSpec.model_fields or field == "explicit":
            raise AblationError(
                f"--ablation {item!r}: unknown field {field!r}; fields: "
                + ", ".join(f for f in AriaSpec.model_fields if f != "explicit")
            )
        for s in ("crew", "impostor") if side == "both" else (side,):
            sides[s][field] = value
    try:
        # An ablated setting is given explicitly; a changed profile re-resolves the rest.
        return crew.with_changes(sides["crew"]), impostor.with_changes(sides["impostor"])
    except ValidationError as exc:
        err = exc.errors()[0]
        raise AblationError(
            f"--ablation {'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
        ) from exc
