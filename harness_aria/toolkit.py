"""What a planner, module or reflector works with during one decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller.observation import Observation
from harness_aria.backends.base import Backend
from harness_aria.calls import CallRecord, ask
from harness_aria.memory.base import Memory
from harness_aria.prompts import Prompt, load_prompt
from harness_aria.spec import AriaSpec
from world.geometry import ShipGeometry

# Temperatures and token budgets per purpose (from the reference implementation).
BUDGETS: dict[str, tuple[float, int]] = {
    "planner": (0.3, 256),
    "planner_long": (0.3, 256),
    "reflection": (0.3, 256),
    "meeting": (0.7, 256),
    "vote": (0.2, 256),
    "kill_scan": (0.2, 256),
    "report": (0.2, 256),
    "surveillance": (0.2, 256),
    "emergency": (0.2, 256),
    "move": (0.2, 512),
    "mission": (0.2, 512),
}


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
    render_view_parts`); with it, the user text opens with it, then skills and memory,
    then the rest of the view, so an agent's successive calls share a long start."""
    skills_text: str = ""
    plan_text: str = ""
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
        return load_prompt(name, self.spec.prompt)

    def context(self) -> str:
        """The dynamic part of every prompt: state view, memory, skills, plan."""
        head = self.view_head
        if head and self.view_text.startswith(head):
            rest = self.view_text[len(head) :].lstrip("\n")
            parts = [head, *([self.skills_text] if self.skills_text else [])]
            parts += [self.memory.text(), rest]
        else:
            parts = [self.view_text, self.memory.text()]
            if self.skills_text:
                parts.append(self.skills_text)
        if self.plan_text:
            parts.append(self.plan_text)
        return "\n\n".join(parts)

    async def ask(
        self, purpose: str, prompt: Prompt, *, image: bool = False, extra: str = "", **values: str
    ) -> dict[str, Any] | None:
        """Ask the model: the module's template is the call's system text (after the
        side's shared prefix), the state view, memory, skills and plan its user text."""
        temperature, max_tokens = BUDGETS.get(purpose, (0.2, 256))
        system = prompt.render(**values).strip()
        if self.persona:
            system = self.persona.strip() + "\n\n" + system
        user = self.context() + (f"\n\n{extra}" if extra else "")
        record = await ask(
            self.backend,
            purpose=purpose,
            system=system,
            user=user,
            prompts=[prompt],
            image=self.image if image else None,
            max_tokens=max_tokens,
            temperature=temperature,
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
