"""Prompt templates: text files loaded by name, each with a content hash logged per call.

Templates live in `harness_aria/prompts/<style>/<name>.txt` (style-specific) or
`harness_aria/prompts/common/<name>.txt` (shared); placeholders are `$name`. What each
call is told depends on `AriaSpec.prompt_content`: `reference` (the default profile's)
looks first in `harness_aria/prompts/reference/<style>/` and `reference/common/`, the
reference's content in this project's words (its personal message in every prefix, its
templates' tactic lists item for item); `lean` uses the folders above alone.
"""

from __future__ import annotations

import hashlib
import math
import string
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from world.geometry import short_name

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


PromptContent = Literal["reference", "lean"]
"""What each call is told (`AriaSpec.prompt_content`)."""

REFERENCE_FOLDER = "reference"
"""The folder of the reference content's templates (`prompts/reference/<style>/`,
`prompts/reference/common/`), looked in first under `prompt_content: reference`."""


@lru_cache(maxsize=256)
def load_prompt(name: str, style: str, content: PromptContent = "reference") -> Prompt:
    """The template `name` for a prompt style and content, falling back to the shared one.

    Under `content: reference` the reference's folders come first
    (`reference/<style>/`, `reference/common/`); a template the reference content does
    not rewrite is the lean one (`<style>/`, `common/`). The logged reference names the
    folder it came from (`reference/deterministic/meeting_crewmate@...`).
    """
    root = resources.files("harness_aria").joinpath("prompts")
    folders = [style, "common"]
    if content == "reference":
        folders = [f"{REFERENCE_FOLDER}/{style}", f"{REFERENCE_FOLDER}/common", *folders]
    for folder in folders:
        f = root.joinpath(*folder.split("/"), f"{name}.txt")
        if f.is_file():
            text = f.read_text(encoding="utf-8")
            sha = hashlib.sha256(text.encode()).hexdigest()[:12]
            return Prompt(name=name, style=folder, text=text, sha=sha)
    raise PromptError(
        f"no prompt {name!r} for style {style!r} (looked in {', '.join(f + '/' for f in folders)})"
    )


COLORS = ("red", "blue", "green", "pink", "orange", "yellow", "black", "white")


MapDetail = Literal["none", "tables", "full"]
"""How much of the map the shared prefix describes (`AriaSpec.map_detail`)."""


def _map_sections(geometry: ShipGeometry, detail: MapDetail) -> dict[str, str]:
    rooms = list(geometry.rooms)
    adjacency = geometry.adjacency()
    bx, _, bz = geometry.button_pos()
    values = {
        "room_lines": "\n".join(
            f"- {room}: {', '.join(adjacency.get(room, [])) or 'none'}" for room in rooms
        ),
        "meeting_room": geometry.spec.meeting_room,
        # the answer rules' example of a room id: one of this map's own (a two-word id
        # shows the underscore form best)
        "room_example": next((r for r in rooms if "_" in r), rooms[-1]),
        "button_x": f"{bx:.1f}",
        "button_z": f"{bz:.1f}",
        "map_extra": "",
    }
    if detail == "none":
        return values
    rects = {r.name: r.rect for r in geometry.spec.rooms}
    room_detail_lines = []
    for room in rooms:
        x, _, z = geometry.room_center(room)
        rect = rects.get(room)
        size = f"{rect.width}x{rect.depth}" if rect is not None else "?"
        room_detail_lines.append(f"- {room}: ({x:.1f},{z:.1f}) {size}")
    distance_lines = []
    for i, a in enumerate(rooms):
        parts = []
        for b in rooms[i + 1 :]:
            length = geometry.path_length(geometry.room_center(a), geometry.room_center(b))
            parts.append(f"{b} {length:.0f}" if length is not None else f"{b} -")
        if parts:
            distance_lines.append(f"- from {a}: " + " ".join(parts))
    station_lines = []
    for sid in geometry.station_ids():
        x, _, z = geometry.station_pos(sid)
        station_lines.append(f"- {sid}: {geometry.station_room(sid)} ({x:.1f},{z:.1f})")
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
            parts.append(f"{b_id}:{length:.0f}" if length is not None else f"{b_id}:-")
        if parts:
            station_distance_lines.append(f"- from {a_id}: " + " ".join(parts))
    extra = [
        load_prompt("map_tables", "common").render(
            room_detail_lines="\n".join(room_detail_lines),
            corridor_lines="\n".join(corridor_lines) or "- none",
            distance_lines="\n".join(distance_lines),
            station_lines="\n".join(station_lines),
            station_distance_lines="\n".join(station_distance_lines),
        )
    ]
    if detail == "full":
        x0, z0, _, _ = geometry.ship_bounds
        extra.append(
            load_prompt("map_full", "common").render(
                ascii_map=geometry.render_ascii(ghost_area=False),
                map_x0=x0,
                map_z0=z0,
                room_labels=", ".join(f"{short_name(r)} {r}" for r in rooms),
            )
        )
    values["map_extra"] = "\n" + "\n".join(extra)
    return values


_ROLE_NOTES: dict[str, dict[str, str]] = {
    "crewmate": {"witness_note": "", "private_note": "", "conduct_note": ""},
    "impostor": {
        "witness_note": " (a witness check not a clear `false` counts as a witness)",
        "private_note": "- `intent` fields are private: nobody else reads them.\n",
        "conduct_note": "- You may lie in meetings; your private `intent` must be true.\n",
    },
}

PrefixGroup = Literal["decide", "talk", "look"]
"""Which sections a call's prefix holds (`PREFIX_GROUPS`): `decide` the rules, the map,
how answers are read and conduct; `talk` the same without the map; `look` (judging a
frame) the players and how answers are read."""

PREFIX_GROUPS: dict[str, PrefixGroup] = {
    "planner": "decide",
    "planner_long": "decide",
    "move": "decide",
    "mission": "decide",
    "report": "decide",
    "emergency": "decide",
    # the codegen call (`harness_aria.codegen`) as any purpose not listed would be
    "codegen": "decide",
    "meeting": "talk",
    "vote": "talk",
    "reflection": "talk",
    "belief_update": "talk",
    "surveillance": "look",
    "kill_scan": "look",
}
"""The prefix group of each call purpose. As in the reference, the room adjacency (and any
`map_detail` extras) goes to the calls that choose where to go; the calls that judge a
frame get no rules of play (the reference's scan and surveillance prompts carry none).
Under `prompt_content: reference` every group also holds the side's personal message
(`shared_prefix`)."""

_VOTE_NOTE = (
    '- A vote `skip` (or `null`, "none") is a ballot for skip; only `abstain` casts none.\n'
)
_NO_SKIP_NOTE = (
    "- Impostors may not skip or abstain: a vote names a living player; an answer that"
    " names none becomes a vote for the player you suspect most.\n"
)
"""The impostors' vote note under `rules.impostors_may_skip: false` (the crew's prefix
keeps `_VOTE_NOTE`: as in the reference, crewmates are not told the impostors' rule)."""
GHOST_RULES = {
    False: "no acting, speaking or voting.",
    True: "no speaking or voting; a ghost crewmate keeps doing its tasks, nothing else.",
}
"""The ghost line of the rules, by `rules.ghost_tasks`."""


def _count(n: int, word: str) -> str:
    """`1 impostor`, `2 impostors`."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _xz(pos: tuple[float, float, float]) -> str:
    """A position as its block's (x, z), as the state view writes it."""
    return f"({math.floor(pos[0])}, {math.floor(pos[2])})"


def _seconds(ticks: int) -> str:
    """Game ticks in seconds (20 ticks a second), e.g. `about 12 s`."""
    return f"about {ticks / 20:.0f} s"


def station_list(geometry: ShipGeometry, ids: list[int] | None = None) -> str:
    """Stations as `id in room (x, z)`, joined by `; ` (every station by default)."""
    chosen = geometry.station_ids() if ids is None else ids
    return "; ".join(
        f"{s} in {geometry.station_room(s)} {_xz(geometry.station_pos(s))}" for s in chosen
    )


def personal_message(geometry: ShipGeometry, rules: RulesConfig, role: str) -> str:
    """The side's part of the reference's personal message, in this project's words.

    The reference gives each agent a personal message (`scripts/personal_messages/`):
    its identity, role, teammate, the side's win rules, the kill cooldown, the mission
    locations and its conduct. What is the same for every agent of a side is here, from
    the game's rules (the cooldowns, ranges and counts quoted are the rules', never
    fixed numbers); what differs per agent (its colour, its fellow impostors, a
    crewmate's own tasks and their stations) opens the state view
    (`harness_aria.view_text.render_view_layout`). Left out, as this game has none of it:
    hunger, crafting, materials, weapons and how the strike is made (`left_click`).

    Args:
        geometry: The map (an impostor's list of every station to fake at).
        rules: The game's rules.
        role: `crewmate` or `impostor`.

    Returns:
        The `## Your role` section.
    """
    n_players, n_impostors = rules.n_players, rules.n_impostors
    n_crew = n_players - n_impostors
    many = n_impostors > 1
    values: dict[str, Any] = rules.model_dump()
    values.update(
        composition=(
            f"{n_players} players: {_count(n_impostors, 'impostor')} and "
            f"{_count(n_crew, 'crewmate')}, you among the crewmates."
        ),
        one_out_note=(
            f"there are {n_impostors} impostors: voting one out is progress, not yet the win."
            if many
            else "voting out the impostor wins the game."
        ),
        initial_s=_seconds(rules.initial_kill_cooldown_ticks),
        cooldown_s=_seconds(rules.kill_cooldown_ticks),
        station_list=station_list(geometry),
    )
    if role != "impostor":
        return load_prompt("personal_crewmate", "common").render(**values)
    if many:
        fellow = "fellow impostor" if n_impostors == 2 else "fellow impostors"
        values["team"] = (
            f"- Team: {n_players} players; you and your {fellow} (named in the state view) "
            f"are the {n_impostors} impostors, the other {n_crew} are crewmates and your "
            f"targets. Your {fellow} {'is your ally' if n_impostors == 2 else 'are your allies'}"
            ": back each other's alibis without saying so. Turning on a fellow impostor is "
            "allowed: you may accuse or vote against one when that wins you a real deception "
            "advantage (clearing yourself, say); it is a rare and costly move, for when it "
            "truly is the best play, and otherwise not made. (This game lets no impostor "
            "kill another.)\n"
        )
        values["alliance"] = " or your alliance"
        values["not_teammate"] = f" other than your {fellow}"
        values["teammate_secret"] = (
            f" never reveal, even indirectly, that your {fellow} "
            f"{'is an impostor' if n_impostors == 2 else 'are impostors'};"
        )
    else:
        values["team"] = (
            f"- Team: {n_players} players; you are the only impostor, the other {n_crew} "
            "are crewmates and your targets.\n"
        )
        values["alliance"] = ""
        values["not_teammate"] = ""
        values["teammate_secret"] = ""
    return load_prompt("personal_impostor", "common").render(**values)


def shared_prefix(
    geometry: ShipGeometry,
    rules: RulesConfig,
    role: str = "crewmate",
    map_detail: MapDetail = "none",
    group: PrefixGroup = "decide",
    content: PromptContent = "reference",
) -> str:
    """The text a side's calls of one prefix group start with.

    It is identical for every agent of a side and every call of the group in a game
    (nothing about the agent or the moment is in it), so a provider's prompt cache can
    hold it once it is long enough (see `CACHE_MINIMUM_TOKENS`). It holds what the
    reference's prompts carry: `decide` (planner, MOVE, MISSION, REPORT, EMERGENCY) the
    rules, the rooms with the rooms each connects to, how answers are read and conduct;
    `talk` (meeting, vote, reflection, the belief update) the same without the map, plus
    how a vote is read; `look` (KILL's witness scan, SURVEILLANCE) the players and how
    answers are read. Only when `map_detail` asks for them, the `decide` prefix adds the
    map extras: `tables` room sizes and centres, corridors, walking distances between
    rooms and between stations, and the stations; `full` an ASCII map as well. No answer
    format is in it: each question carries its own, and a crewmate's prefix says nothing
    of the impostors' private fields.

    With `content: reference` (the default profile's) the conduct lines give way to the
    side's part of the reference's personal message (`personal_message`), in every
    group: every call of an agent carries it, at the start where it stays the same.

    Args:
        geometry: The map.
        rules: The game's rules (the numbers quoted).
        role: The side's role (`crewmate` or `impostor`).
        map_detail: `none`, `tables` or `full`.
        group: `decide`, `talk` or `look`.
        content: `reference` or `lean` (`AriaSpec.prompt_content`).

    Returns:
        The rendered text.
    """
    values: dict[str, Any] = rules.model_dump()
    values["colors"] = ", ".join(COLORS[: rules.n_players])
    values.update(_map_sections(geometry, map_detail))
    values.update(_ROLE_NOTES["impostor" if role == "impostor" else "crewmate"])
    # Rules added later are read leniently (a rules object without them plays the old way).
    may_skip = bool(getattr(rules, "impostors_may_skip", True)) or role != "impostor"
    values["vote_note"] = (_VOTE_NOTE if may_skip else _NO_SKIP_NOTE) if group == "talk" else ""
    values["ghost_rule"] = GHOST_RULES[bool(getattr(rules, "ghost_tasks", False))]

    def part(name: str) -> str:
        return load_prompt(name, "common", "lean").render(**values)

    if content == "reference":
        conduct = personal_message(geometry, rules, role)
    else:
        conduct = "" if group == "look" else part("shared_conduct")
    return (
        load_prompt("shared", "common", content)
        .render(
            rules=part("shared_players" if group == "look" else "shared_rules"),
            map=part("shared_map") if group == "decide" else "",
            answers=part("shared_answers"),
            conduct=conduct,
        )
        .strip()
        + "\n"
    )


def shared_prefixes(
    geometry: ShipGeometry,
    rules: RulesConfig,
    role: str,
    map_detail: MapDetail = "none",
    content: PromptContent = "reference",
) -> dict[str, str]:
    """A side's prefix of each group (`decide`, `talk`, `look`)."""
    groups: tuple[PrefixGroup, ...] = ("decide", "talk", "look")
    return {g: shared_prefix(geometry, rules, role, map_detail, g, content) for g in groups}


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
