"""Prompt templates: text files loaded by name, each with a content hash logged per call.

Templates live in `harness_aria/prompts/<style>/<name>.txt` (style-specific) or
`harness_aria/prompts/common/<name>.txt` (shared); placeholders are `$name`.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.config import RulesConfig
    from world.geometry import ShipGeometry


class PromptError(KeyError):
    """A template is missing or a placeholder has no value."""


@dataclass(frozen=True)
class Prompt:
    """A loaded template."""

    name: str
    style: str
    text: str
    sha: str

    @property
    def ref(self) -> str:
        """`style/name@hash`, the reference logged with every call."""
        return f"{self.style}/{self.name}@{self.sha}"

    def render(self, **values: Any) -> str:
        """Fill the placeholders; every placeholder must be given."""
        try:
            return string.Template(self.text).substitute({k: str(v) for k, v in values.items()})
        except KeyError as exc:
            raise PromptError(f"prompt {self.ref} needs a value for {exc}") from exc


@lru_cache(maxsize=128)
def load_prompt(name: str, style: str) -> Prompt:
    """The template `name` for a prompt style, falling back to the shared one."""
    root = resources.files("harness_aria").joinpath("prompts")
    for folder in (style, "common"):
        f = root.joinpath(folder, f"{name}.txt")
        if f.is_file():
            text = f.read_text(encoding="utf-8")
            sha = hashlib.sha256(text.encode()).hexdigest()[:12]
            return Prompt(name=name, style=folder, text=text, sha=sha)
    raise PromptError(f"no prompt {name!r} for style {style!r} (looked in {style}/ and common/)")


COLORS = ("red", "blue", "green", "pink", "orange", "yellow", "black", "white")


def _map_sections(geometry: ShipGeometry) -> dict[str, str]:
    rooms = list(geometry.rooms)
    adjacency = geometry.adjacency()
    rects = {r.name: r.rect for r in geometry.spec.rooms}
    room_lines = []
    for room in rooms:
        x, _, z = geometry.room_center(room)
        rect = rects.get(room)
        size = f"{rect.x1 - rect.x0}x{rect.z1 - rect.z0} blocks" if rect is not None else "?"
        near = ", ".join(adjacency.get(room, [])) or "none"
        room_lines.append(f"- {room}: ({x:.1f}, {z:.1f}); {size}; connected to {near}")
    distance_lines = []
    for i, a in enumerate(rooms):
        parts = []
        for b in rooms[i + 1 :]:
            length = geometry.path_length(geometry.room_center(a), geometry.room_center(b))
            parts.append(f"{b} {length:.0f}" if length is not None else f"{b} -")
        if parts:
            distance_lines.append(f"- from {a}: " + ", ".join(parts))
    station_lines = []
    for sid in geometry.station_ids():
        x, _, z = geometry.station_pos(sid)
        station_lines.append(f"- {sid}: {geometry.station_room(sid)}, ({x:.1f}, {z:.1f})")
    corridor_lines = []
    for corridor in geometry.spec.corridors:
        r = corridor.rect
        a, b = geometry.room_at((r.x0, 0.0, r.z0)), geometry.room_at((r.x1, 0.0, r.z1))
        corridor_lines.append(
            f"- {corridor.name}: x {r.x0}..{r.x1}, z {r.z0}..{r.z1}"
            + (f" (between {a} and {b})" if a != b else "")
        )
    ids = geometry.station_ids()
    station_distance_lines = []
    for i, a_id in enumerate(ids):
        parts = []
        for b_id in ids[i + 1 :]:
            length = geometry.path_length(geometry.station_pos(a_id), geometry.station_pos(b_id))
            parts.append(f"{b_id}: {length:.0f}" if length is not None else f"{b_id}: -")
        if parts:
            station_distance_lines.append(f"- from {a_id}: " + ", ".join(parts))
    x0, z0, _, _ = geometry.bounds
    bx, _, bz = geometry.button_pos()
    return {
        "ascii_map": geometry.render_ascii(),
        "map_x0": str(x0),
        "map_z0": str(z0),
        "corridor_lines": "\n".join(corridor_lines) or "- none",
        "station_distance_lines": "\n".join(station_distance_lines),
        "room_lines": "\n".join(room_lines),
        "distance_lines": "\n".join(distance_lines),
        "station_lines": "\n".join(station_lines),
        "button_x": f"{bx:.1f}",
        "button_z": f"{bz:.1f}",
    }


def shared_prefix(geometry: ShipGeometry, rules: RulesConfig) -> str:
    """The text every call of a side starts with: rules, map and answer formats.

    It is identical for every agent of a side and every call of a game (nothing about
    the agent or the moment is in it), so a provider's prompt cache can hold it; it is
    kept above the largest cache minimum of the priced models (see `CACHE_MINIMUM_TOKENS`).

    Args:
        geometry: The map.
        rules: The game's rules (the numbers quoted).

    Returns:
        The rendered text.
    """
    values: dict[str, Any] = rules.model_dump()
    values["colors"] = ", ".join(COLORS[: rules.n_players])
    values.update(_map_sections(geometry))
    return load_prompt("shared", "common").render(**values)


CACHE_MINIMUM_TOKENS: dict[str, int] = {
    "gpt-4.1": 1024,
    "gpt-4.1-mini": 1024,
    "gpt-4.1-nano": 1024,
    "gpt-4o": 1024,
    "gpt-4o-mini": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-haiku-4-5": 4096,
}
"""Smallest prompt prefix (tokens) each priced model caches, as the providers document it
(OpenAI: 1024 for every model; Anthropic: 1024 for Sonnet 4.5, 4096 for Haiku 4.5)."""


def estimate_tokens(text: str) -> int:
    """A rough token count (a quarter of the characters; real tokenisers count the map's
    numbers and punctuation as more tokens, so this errs low)."""
    return len(text) // 4
