"""What a planner, module or reflector works with during one decision."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.observation import Observation
from harness_aria.backends.base import Backend
from harness_aria.calls import CallRecord, ask, setup_of
from harness_aria.memory.base import Memory
from harness_aria.prompts import Prompt, load_prompt
from harness_aria.spec import AriaSpec
from world.geometry import ShipGeometry

Budget = tuple[float, int]
"""A call's (temperature, max_tokens)."""

BUDGETS: dict[str, Budget] = {}
"""Temperature and token budget per call purpose (the reference implementation's), filled
as each module, planner and reflector registers the purposes it asks under
(`register_budgets`); read with `budget`."""
_OWNERS: dict[str, str] = {}
"""Purpose -> the component that registered its budget (for the error on a clash)."""


class UnknownPurposeError(KeyError):
    """A call's purpose has no budget: no registered module, planner or reflector asks
    under it."""


def register_budgets(owner: str, budgets: Mapping[str, Budget]) -> None:
    """Register the budgets of the purposes `owner` (a module, planner or reflector) asks
    under. A purpose two components share must have the same budget in both.

    Raises:
        ValueError: a purpose registered before with another budget.
    """
    for purpose, (temperature, max_tokens) in budgets.items():
        value = (float(temperature), int(max_tokens))
        if purpose in BUDGETS and BUDGETS[purpose] != value:
            raise ValueError(
                f"{owner}: purpose {purpose!r} has budget {BUDGETS[purpose]} already "
                f"(registered by {_OWNERS[purpose]}); {owner} gives {value}"
            )
        BUDGETS.setdefault(purpose, value)
        _OWNERS.setdefault(purpose, owner)


def budget(purpose: str) -> Budget:
    """The (temperature, max_tokens) of a call purpose.

    Raises:
        UnknownPurposeError: no registered component declared the purpose (never a
            silent default: a call under a new purpose needs its budget registered).
    """
    try:
        return BUDGETS[purpose]
    except KeyError:
        raise UnknownPurposeError(
            f"no call budget for purpose {purpose!r}: the module, planner or reflector "
            f"that asks under it declares it when it registers (known: "
            f"{', '.join(sorted(BUDGETS)) or 'none'})"
        ) from None


SKILL_PURPOSES = frozenset({"planner", "planner_long"})
"""The calls whose prompt shows the skill memory: the planners', as in the reference
("the last 5 skills reach the planners only")."""
LOOK_PURPOSES = frozenset({"surveillance", "kill_scan"})
"""The calls that judge a frame: their context is the look view (`look_text`) and the
plan, as the reference's scan and surveillance prompts carry no state."""


@dataclass
class Choice:
    """The planner's pick for this step."""

    module: str
    target: str | None = None
    reasoning: str = ""
    intent: str = ""
    plan: str = ""


@dataclass
class Toolkit:
    """The agent's services for one decision: model calls with logging, and context.

    `obs` is the agent's filtered observation (`controller.views.Knowledge.update`):
    everything a planner, module or reflector reads about the game comes from it, so
    what the state mode hides is out of every component's reach. `view_text` is that
    observation's state view; `plan_text` is the planner's current choice once it is
    made.
    """

    spec: AriaSpec
    backend: Backend
    geometry: ShipGeometry
    persona: str
    """Text before the module's template in the call's system part ('' for none: who the
    agent is, its role and team, opens the state view, so ARIA agents send none)."""
    obs: Observation
    view_text: str
    memory: Memory
    view_head: str = ""
    """The start of `view_text` that changes rarely (`harness_aria.view_text.
    render_view_layout`); with it, the user text opens with it, then the memory's settled
    part (beliefs, notes), the pending tasks (`view_tasks`), skills, the memory's recent
    part (own actions), then the rest of the view: what changes least often first, so an
    agent's successive calls share a long start."""
    view_tasks: str = ""
    """The view's pending-tasks line, which follows `view_head` in `view_text`."""
    skills_text: str = ""
    plan_text: str = ""
    look_text: str = ""
    """What the calls that judge a frame (`LOOK_PURPOSES`) are given instead of the
    context (`harness_aria.view_text.render_look`); '' gives them the whole context."""
    impostors_may_skip: bool = True
    """The rules' `impostors_may_skip`: False makes VOTE turn an impostor's skip, or its
    unusable answer, into the reference's fallback ballot (`harness_aria.modules.vote`)."""
    calls: list[CallRecord] = field(default_factory=list)

    @property
    def image(self) -> bytes | None:
        """The current frame, if frames are on and the backend sees images."""
        return self.obs.jpeg if self.backend.vision else None

    @property
    def impostor(self) -> bool:
        """Whether this agent is an impostor."""
        return self.obs.role == "impostor"

    def prompt(self, name: str) -> Prompt:
        """A template of this agent's prompt style."""
        return load_prompt(name, self.spec.prompt, self.spec.prompt_content)

    def context(self, purpose: str = "planner") -> str:
        """The dynamic part of a prompt: state view, memory, plan, and for the planners'
        calls (`SKILL_PURPOSES`) skills; for a call that judges a frame
        (`LOOK_PURPOSES`), the look view and the plan alone."""
        if purpose in LOOK_PURPOSES and self.look_text:
            return "\n\n".join(t for t in (self.look_text, self.plan_text) if t)
        head = "\n".join(t for t in (self.view_head, self.view_tasks) if t)
        skills = self.skills_text if purpose in SKILL_PURPOSES else ""
        if head and self.view_text.startswith(head):
            rest = self.view_text[len(head) :].lstrip("\n")
            settled, recent = self.memory.text_parts()
            parts = [self.view_head, settled, self.view_tasks, skills, recent, rest]
            parts = [t for t in parts if t]
        else:
            parts = [self.view_text, self.memory.text()]
            if skills:
                parts.append(skills)
        if self.plan_text:
            parts.append(self.plan_text)
        return "\n\n".join(parts)

    async def ask(
        self, purpose: str, prompt: Prompt, *, image: bool = False, extra: str = "", **values: str
    ) -> dict[str, Any] | None:
        """Ask the model: after the side's shared prefix (and the persona, if any), the
        user text is the context (state view, skills, memory, plan, `extra`) and, last,
        the module's template as the call's question (see `harness_aria.calls`)."""
        temperature, max_tokens = budget(purpose)
        question = prompt.render(**values).strip()
        user = self.context(purpose) + (f"\n\n{extra}" if extra else "")
        record = await ask(
            self.backend,
            purpose=purpose,
            system=self.persona.strip(),
            user=user,
            question=question,
            prompts=[prompt],
            image=self.image if image else None,
            max_tokens=max_tokens,
            temperature=temperature,
            cache_key=setup_of(self.backend).cache_key(self.obs.agent),
        )
        self.calls.append(record)
        return record.parsed

    def last_error(self) -> str:
        """Why the last call gave no usable answer (empty if it did)."""
        if not self.calls:
            return ""
        c = self.calls[-1]
        if c.error_class:
            return f"{c.purpose}: {c.error_class}: {c.error}"
        if c.parse_error:
            return f"{c.purpose}: unparseable answer: {c.parse_error}"
        return ""

    def infrastructure_failed(self) -> bool:
        """Whether the last call failed for reasons outside the model."""
        return bool(self.calls) and self.calls[-1].error_class in (
            "rate_limit",
            "server",
            "timeout",
            "connection",
        )
