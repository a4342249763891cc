"""The decision-module interface, and the optional hooks the agent loop calls."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from controller.actions import AnyAction
from harness_aria.parsing import AnswerReader
from harness_aria.toolkit import Choice, Toolkit


@dataclass
class ModuleResult:
    """A module's output: the program actions (whitelisted primitives) and why."""

    actions: list[AnyAction] = field(default_factory=list)
    vote: str | None = None
    reasoning: str = ""
    narration: str = ""
    invalid: str = ""
    """Why the model's answer could not be used (the agent then stands still)."""
    memo: str = ""
    """What to remember of this step."""
    abstain: bool = False
    """Voting only: the answer deliberately names nobody (no ballot; never skip)."""
    harness_built: bool = False
    """The actions carry out a choice the harness made where the model named none (KILL's
    nearest crewmate, REPORT's nearest body): a program that then fails validation is
    logged as a `harness` error (`AgentDecision.harness_built`)."""
    deferral: str = ""
    """KILL only: why this decision sends no strike (one of `controller.events.DEFERRALS`);
    empty when it sends one (a strike that fails says why in its program's outcome)."""


class Module(Protocol):
    """A model decision plus the program synthesis that carries it out."""

    name: str

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Decide and synthesise the program."""
        ...


@runtime_checkable
class FollowsUp(Protocol):
    """A module with work at the step after a program: SURVEILLANCE judges the frame a
    look behind turned to."""

    async def follow_up(self, tk: Toolkit, last: Sequence[AnyAction]) -> None:
        """Called at each free-roam decision (not a continuation) before anything is
        chosen, with the actions of the agent's last free-roam program (empty if none).
        """
        ...


@runtime_checkable
class Claims(Protocol):
    """A module that may take a step before the planner is asked: KILL, whose ego
    witness check of the half behind is due the step after the turn."""

    def claim(self, step: int) -> Choice | None:
        """The choice to run this module with at `step` unasked, or None."""
        ...


def followers(modules: Iterable[Module]) -> list[FollowsUp]:
    """The modules with a follow-up hook, in the given order."""
    return [m for m in modules if isinstance(m, FollowsUp)]


def claimants(modules: Iterable[Module]) -> list[Claims]:
    """The modules that may claim a step, in the given order."""
    return [m for m in modules if isinstance(m, Claims)]


def failed(tk: Toolkit, what: str) -> ModuleResult:
    """The result when the model's answer was unusable: recorded, never replaced."""
    return ModuleResult(invalid=tk.last_error() or what, memo=f"no decision ({what})")


def reader(tk: Toolkit, answer: dict[str, Any]) -> AnswerReader:
    """A reader of the last call's answer whose normalisations go onto that call's record."""
    if tk.calls and tk.calls[-1].parsed is answer:
        return AnswerReader(answer, tk.calls[-1].normalised)
    return AnswerReader(answer)


def planner_target(tk: Toolkit) -> AnswerReader | None:
    """A reader of the planner's `target` (as a one-field answer `{"target": ...}`) whose
    normalisations go onto the planner call's record; None unless the spec's
    `module_calls` is `needed` and the planner named a target."""
    if tk.spec.module_calls != "needed":
        return None
    planner = next((c for c in reversed(tk.calls) if c.purpose == "planner" and c.parsed), None)
    if planner is None or planner.parsed is None:
        return None
    target = planner.parsed.get("target")
    if target in (None, "", "null"):
        return None
    return AnswerReader({"target": target}, planner.normalised)


def text(answer: dict[str, Any], key: str) -> str:
    """A string field of an answer ('' if missing or not a string)."""
    value = answer.get(key)
    return value.strip() if isinstance(value, str) else ""


def name_of(answer: dict[str, Any], key: str, allowed: list[str]) -> str | None:
    """A player/room name matched leniently against `allowed` (see `AnswerReader.choice`)."""
    return AnswerReader(answer).choice(key, allowed)


def station_listing(tk: Toolkit, ids: list[int]) -> str:
    """`3 in admin; 5 in medbay`: the stations by number and room."""
    return "; ".join(f"{s} in {tk.geometry.station_room(s)}" for s in ids)
