"""The agent interface the step loop talks to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from controller.actions import AnyAction
from controller.observation import Observation
from controller.vocabulary import ModelCall


class InfrastructureFailure(RuntimeError):
    """A failure outside the agent's control that no retry fixed and that stops the game
    (an exhausted quota, refused credentials). The game ends `invalid` and resumable."""

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(message)
        self.error_class = error_class


@dataclass(frozen=True)
class AgentDecision:
    """An agent's answer for one step.

    `program` is the typed actions (`controller.actions`) the agent built, which the
    controller validates again against the rules and the state (a list of action dicts,
    untrusted data from outside the project, is parsed first); `vote` is a player id or
    `skip` (voting phase only).
    """

    program: list[AnyAction] = field(default_factory=list)
    vote: str | None = None
    module: str = ""
    raw: str = ""
    reasoning: str = ""
    narration: str = ""
    invalid: str = ""
    """Why the agent's own answer could not be used (a model error); the bot stands still."""
    infrastructure: str = ""
    """Set (to the error class) when the decision failed for infrastructure reasons
    after retries; counted apart from model errors, never as the agent's choice."""
    calls: list[ModelCall] = field(default_factory=list)
    """One record per model call (prompt refs, raw output, tokens, latency, cost, error),
    stored as it is in the `decision` event."""
    spec: dict[str, Any] = field(default_factory=dict)
    """The agent's ablation spec, written beside every decision."""
    view_text: str = ""
    """The state-view text the agent gave its model (logged on the decision)."""
    abstain: bool = False
    """Voting only: the agent deliberately casts no ballot (neither a player nor skip)."""
    deferral: str = ""
    """KILL only: why this decision sent no strike (one of `controller.events.DEFERRALS`);
    empty when it sent one."""
    rules_error: str = ""
    """Why the decision breaks a rule before any program is built (e.g. a vote asked
    for outside the vote, or a move during it); logged as a `rules` failure, never
    replaced by a move, a skip or a pass."""
    harness_built: bool = False
    """The program carries out a choice the harness made where the model named none (e.g.
    KILL's own target when the answer gave none): a program that then fails validation
    is the harness's error (`harness`), never the model's or a rules failure of the model."""
    continued: bool = False
    """Free roam only: the agent was not asked this step. Its last program is still
    running and nothing it can see has changed, so `program` is the rest of that program,
    dispatched again; logged as a `continuation` event, never as a decision. `reasoning`
    then says what is still running."""
    continued_from: int = -1
    """With `continued`: the step of the decision that set the program going."""


class Agent(Protocol):
    """Decides from observations. All agents of a step are asked concurrently."""

    agent_id: str

    async def decide(self, obs: Observation) -> AgentDecision:
        """Return this step's decision for the observation's phase."""
        ...

    def describe(self) -> dict[str, Any]:
        """A JSON-able description of the agent (kind, settings) for the game record."""
        ...
