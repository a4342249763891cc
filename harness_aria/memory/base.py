"""The memory interface."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Protocol, TypeVar, cast

from controller.actions import AnyAction, dump_actions
from controller.observation import Observation, OwnAction
from harness_aria.spec import AriaSpec, Catalogue

_LEASH = re.compile(
    r"approach: (?P<who>[A-Za-z_]+) is -?\d+(?:\.\d+)? blocks from where the approach "
    r"began, beyond its leash of -?\d+(?:\.\d+)?"
)
_NOT_VISIBLE = re.compile(r"(?P<op>follow|approach): (?P<who>[A-Za-z_]+) is not visible \([^)]*\)")
_DISTANCE = re.compile(r"-?\d+(?:\.\d+)?\s*blocks?\b")
_POSITION = re.compile(r"[\[(]\s*-?\d+(?:\.\d+)?(?:\s*,\s*-?\d+(?:\.\d+)?){1,2}\s*[\])]")
_WORD = re.compile(r"[A-Za-z]+")


class Memory(Protocol):
    """What an agent remembers and how it is shown to the model."""

    def observe(self, obs: Observation) -> None:
        """Take in a new observation (chat, sightings, bodies)."""
        ...

    def record(self, step: int, module: str, summary: str) -> None:
        """Remember what the agent decided at a step."""
        ...

    def note(self, step: int, text: str) -> None:
        """Remember a free-form fact (a surveillance result, a deferred kill, an insight)."""
        ...

    def adjust(self, player: str, delta: float, why: str) -> None:
        """Change the suspicion of a player (clamped to 0..1)."""
        ...

    def suspicion(self) -> dict[str, float]:
        """Current suspicion per player (0 = trusted, 1 = certain impostor)."""
        ...

    def text(self) -> str:
        """The memory as prompt text."""
        ...

    def text_parts(self) -> tuple[str, str]:
        """`text()` in two parts: what changes now and then (e.g. beliefs and notes) and
        what changes every step (e.g. own actions), which a prompt places apart ('' for
        an empty part; joined by a line break they are `text()`)."""
        ...


MEMORIES: Catalogue[Memory] = Catalogue("memory")
"""The memories by `AriaSpec.memory` value (`register_memory`); `MEMORIES.build(spec)`
makes the spec's."""

_M = TypeVar("_M", bound=type)


def register_memory(
    name: str, args: Callable[[AriaSpec], dict[str, Any]] | None = None
) -> Callable[[_M], _M]:
    """A class decorator registering a memory under its `AriaSpec.memory` value.

    Args:
        name: The spec value that selects it.
        args: Its constructor's keyword arguments, read from the spec.
    """

    def add(cls: _M) -> _M:
        MEMORIES.register(name, cast(Callable[..., Memory], cls), args)
        return cls

    return add


ROUTINE_ENDINGS = frozenset({"ok", "timeout: step timeout"})
"""Program outcomes memory does not keep: a program that ran to its end, or was cut off
at the step's end (its walk or task goes on; the other own actions and the state view's
task line say where it stands). Failures and cancellations, with their reasons, are kept."""


def worth_remembering(a: OwnAction) -> bool:
    """Whether memory keeps an own action (every one but a routine program ending)."""
    return not (a.kind == "program_ended" and a.detail in ROUTINE_ENDINGS)


def describe_program(actions: Sequence[AnyAction]) -> str:
    """A program in words for the skill memory, e.g. `use_station 2, look behind`: each
    action's op, then the fields its builder gave, in the order the log writes them."""
    parts = []
    for a in dump_actions(actions):
        words = [str(a["op"])]
        for key, value in a.items():
            if key == "op" or value is None or value is False:
                continue
            if value is True:
                words.append(key)
            elif key in ("station", "room", "agent", "target", "text"):
                words.append(str(value))
            else:
                words.append(f"{key}={value}")
        parts.append(" ".join(words))
    return ", ".join(parts)


def _route(detail: str) -> str:
    """A walk's rooms, ` (a > b > c)`, without the hallways passed between two rooms (the
    rooms connect through them); a walk that starts or ends in a hallway keeps it."""
    rooms = detail.split(" > ") if detail else []
    kept = [r for i, r in enumerate(rooms) if r != "hallway" or i == 0 or i == len(rooms) - 1]
    return f" ({' > '.join(kept)})" if kept else ""


def grouped_by_step(entries: Iterable[tuple[int, str]]) -> list[str]:
    """Memory entries as lines, one per step (`  step 36: a; b`), in their order: a step's
    entries share its line, so the step is written once."""
    lines: list[str] = []
    last: int | None = None
    for step, text in entries:
        if step == last:
            lines[-1] += f"; {text}"
        else:
            lines.append(f"  step {step}: {text}")
            last = step
    return lines


def describe_action(a: OwnAction) -> str:
    """One of the agent's own actions in its own words (what memory records)."""
    where = f" in {a.room}" if a.room else ""
    station = f"station {a.station}"
    detail = f" ({a.detail})" if a.detail else ""
    if a.kind == "moved":
        return f"I walked{where}{_route(a.detail)}"
    if a.kind == "task_started":
        return f"I started the task at {station}{where}"
    if a.kind == "task_done":
        return f"I finished the task at {station}{where}"
    if a.kind == "task_interrupted":
        return f"my task at {station} was interrupted, not finished{detail}"
    if a.kind == "killed":
        return f"I killed {a.target}{where}"
    if a.kind == "reported":
        return f"I reported {a.target}'s body{where}"
    if a.kind == "pressed_button":
        return "I pressed the emergency button"
    if a.kind == "spoke":
        return f"I said{detail}"
    if a.kind == "voted":
        return f"I voted {a.target or 'to abstain'}"
    return f"my program ended{detail}"


def outcome_for_view(detail: str, me: str, players: Collection[str]) -> str:
    """A program outcome reduced to what an ego agent may know.

    The world states why a program failed from the server's positions, e.g. `step 3:
    approach: yellow is 27.1 blocks from where the approach began, beyond its leash of 5`:
    how far a player the agent may no longer see has gone. An ego agent keeps only that
    the attempt failed and why in words (`the target yellow got away, the kill failed`);
    any other reason naming another player loses its distances and positions. Reasons
    about the agent alone (its own walk) are kept as they are.

    Args:
        detail: The outcome (`failed: <reason>`, as `OwnAction.detail` of `program_ended`).
        me: The agent.
        players: Every seat's id.

    Returns:
        The detail with what the ego view does not allow removed.
    """
    text = _LEASH.sub(
        lambda m: f"approach: the target {m.group('who')} got away, the kill failed", detail
    )
    text = _NOT_VISIBLE.sub(lambda m: f"{m.group('op')}: {m.group('who')} could not be found", text)
    others = {p.lower() for p in players} - {me.lower()}
    if any(w.lower() in others for w in _WORD.findall(text)):
        text = _POSITION.sub("a position", _DISTANCE.sub("some distance", text))
    return text


def actions_for_view(obs: Observation, players: Collection[str]) -> Observation:
    """The observation with its program outcomes reduced by `outcome_for_view` (ego)."""
    changed = False
    actions: list[OwnAction] = []
    for a in obs.own_actions:
        if a.kind == "program_ended" and a.detail:
            detail = outcome_for_view(a.detail, obs.agent, players)
            if detail != a.detail:
                a = a.model_copy(update={"detail": detail})
                changed = True
        actions.append(a)
    return obs.model_copy(update={"own_actions": actions}) if changed else obs
