"""The ARIA ablation spec: five axes as one frozen value.

An ablation is a value, not an edit: one `AriaSpec` is passed into an agent and
written in full into the game record and beside every decision.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
    module_calls: Literal["needed", "reference"] = "needed"
    """When a module asks the model its own question after the planner. `needed`
    (default): only where the module needs the model: the KILL witness scan, MEETING's
    speech, the VOTE ballot, SURVEILLANCE of a frame (with no frame sent, what is in
    sight is in the state view already and is noted without a call), and MOVE or
    MISSION only when the planner's `target` names no usable room, player or station.
    REPORT and EMERGENCY carry out the planner's choice. `reference`: every module asks
    (MOVE, MISSION, REPORT and EMERGENCY too), as the reference implementation does."""
    continuation: Literal["off", "on"] = "on"
    """The call protocol in free roam. `off`: the reference's, every living agent is asked
    every step. `on` (default, chosen by a measured comparison on the fake world; see
    docs/aria.md): an agent whose last program is still running (a MISSION or MOVE
    whose task is in progress or whose walk has not arrived: the program timed out at the
    step's end) is not asked again while nothing it can see has changed (the players and
    bodies in its view, the modules it may choose, a server message, a meeting); the rest
    of that program is dispatched again and logged as a `continuation` event, never as a
    decision."""
    ego_range: float = Field(default=12.0, gt=0)
    """Ego: how far (blocks) the field of view reaches in what the agent is told; the
    observation carries nothing beyond the rules' `vision_radius` (12 by default)."""
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

    def label(self) -> str:
        """A short, stable name of the axis values, e.g. `priv-sem-rea-off-min`."""
        return "-".join(str(getattr(self, axis))[:3] for axis in AXES)


def all_specs() -> list[AriaSpec]:
    """All 32 combinations of the five axes (other knobs at their defaults)."""
    values = [AriaSpec.model_fields[a].annotation.__args__ for a in AXES]  # type: ignore[union-attr]
    return [AriaSpec(**dict(zip(AXES, combo, strict=True))) for combo in itertools.product(*values)]


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
        if field not in AriaSpec.model_fields:
            raise AblationError(
                f"--ablation {item!r}: unknown field {field!r}; fields: "
                + ", ".join(AriaSpec.model_fields)
            )
        for s in ("crew", "impostor") if side == "both" else (side,):
            sides[s][field] = value
    try:
        return (
            crew.model_validate({**crew.model_dump(), **sides["crew"]}),
            impostor.model_validate({**impostor.model_dump(), **sides["impostor"]}),
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        raise AblationError(
            f"--ablation {'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
        ) from exc
