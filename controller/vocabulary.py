"""The record's vocabulary: the typed values a game's record is made of.

Defined once, below everything that uses them: agents build them (a harness builds its
`ModelCall`s, an agent kind declares its `SideFacts`), the controller validates them, the
log (`controller.events`) and `summary.json` store them, and every reader
(`controller.record`) reads them back unchanged. Every model refuses a key it does not
know (`extra="forbid"`): a misspelt field fails where it is written, and a record of the
current version carrying an unknown key is refused by the reader, naming the key. Records
of older versions are brought to the current one by the upgraders of `controller.upgrade`
(`controller.record` applies them as it reads) before they are validated here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

Scalar = str | int | float | bool | None
"""A setting's value in `SideFacts.settings` (flat: no lists, no nesting)."""

SUMMARY_VERSION = 3
"""The version of `summary.json` this code writes (`RunSummary.version`)."""


def _str_or_empty(v: Any) -> Any:
    return "" if v is None else v


def _zero_if_none(v: Any) -> Any:
    return 0 if v is None else v


Text = Annotated[str, BeforeValidator(_str_or_empty)]
"""A string a provider may give as null (read as empty)."""
Count = Annotated[int, BeforeValidator(_zero_if_none)]
"""A count a provider may give as null (read as 0)."""


def flat_settings(settings: Mapping[str, Any]) -> dict[str, Scalar]:
    """Settings as `SideFacts.settings` holds them: a value that is not a scalar (a list,
    a mapping) becomes its JSON text, so every setting is one comparable cell."""
    return {
        str(k): v if v is None or isinstance(v, str | int | float | bool) else json.dumps(v)
        for k, v in settings.items()
    }


class PromptRefs(BaseModel):
    """What a model call was sent, by content hash (texts in `prompts/<sha256>.txt`)."""

    model_config = ConfigDict(extra="forbid")

    prefix_sha256: str | None = None
    """The shared prefix (first system message), if any."""
    system_sha256: str | None = None
    """The persona system text after the prefix, if any (ARIA sends none)."""
    user_sha256: str
    """The user text: the context (state view, skills, memory, plan), then the call's
    question (the module's template)."""
    image_sha256: str | None = None
    """The JPEG sent with the user text (the frame of the decision), if any."""


class ModelCall(BaseModel):
    """One model call behind a decision (`Decision.calls`), as the harness made it.

    Mutable: the harness fills in the answer, tokens and timing as the call returns.
    """

    model_config = ConfigDict(extra="forbid")

    purpose: Text = ""
    """The call kind (`move`, `vote`, `meeting`, ...)."""
    prompts: list[str] = Field(default_factory=list)
    """Template references (`style/name@hash`)."""
    model: Text = ""
    """The backend address the call went to."""
    image: bool = False
    sent: PromptRefs | None = None
    """Hashes of the texts sent (read them in the run's `prompts/` folder)."""
    raw: Text = ""
    parsed: dict[str, Any] | None = None
    parse_error: Text = ""
    normalised: list[str] = Field(default_factory=list)
    """Every liberty taken in reading the answer: JSON repairs (`json: trailing comma`) and
    field normalisations (`room: 'Lower Engine' -> 'lower_engine'`)."""
    finish_reason: Text = ""
    """The provider's finish/stop reason as sent (`stop`, `length`, `end_turn`, ...)."""
    truncated: bool = False
    """The answer was cut off at the token limit (`length` / `max_tokens`)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The sampling settings actually sent (temperature, max_tokens, seed, ...); a setting
    not sent is absent."""
    tokens_in: Count = 0
    tokens_out: Count = 0
    tokens_cached: Count = 0
    latency_ms: float = 0.0
    cost_usd: float | None = 0.0
    """None when the model has no known price: unknown, never $0 (a record without the
    field is a call that cost nothing, e.g. the offline `fake` backend's)."""
    attempts: Count = 0
    error_class: Text = ""
    """Set when the call failed: an infrastructure class (rate_limit, server, timeout,
    connection, quota, auth), a model one (other), or `unreadable_record` (an older log's
    call record that could not be read)."""
    error: Text = ""
    extra: dict[str, Any] = Field(default_factory=dict)
    """What a harness adds about the call beyond these fields."""

    @property
    def ok(self) -> bool:
        """The call returned a parseable JSON object."""
        return self.parsed is not None

    @property
    def failed(self) -> bool:
        """The call failed (the backend gave up, or the answer was unusable)."""
        return bool(self.error_class)


class SideFacts(BaseModel):
    """Who played one side, as its agent kind declares it (`game_start.sides`).

    Readers take everything they know of a side from here (the kind, its model, its
    profile and every resolved setting); none parses a kind's arguments.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    """The agent kind (`scripted`, `aria`, a plugin's), or `unknown` (an older log that
    did not say)."""
    backend: str
    """The model backend's address (`openai:gpt-4.1-mini`, `fake`, ...), or the kind's
    name for a kind that calls no model."""
    model: str | None = None
    """The model's name (the address without its provider), None when no model plays."""
    billed: bool = False
    """Whether its model calls cost money (False: scripted agents, offline fakes)."""
    text_only: bool = False
    """Whether its model is sent no images."""
    profile: str | None = None
    """The kind's named profile of settings, if it has one (ARIA's `spec.profile`)."""
    settings: dict[str, Scalar] = Field(default_factory=dict)
    """Every resolved setting of the side, flat, with defaults filled in (for `aria`: its
    spec); study tables take their columns from these."""
    axes: list[str] = Field(default_factory=list)
    """Which of `settings` are the kind's ablation axes (ARIA's five): the columns a
    study's tables give the side."""


class TaskTally(BaseModel):
    """Real tasks done and assigned."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    done: int | None = None
    total: int | None = None


class RunSummary(BaseModel):
    """`summary.json`: the game's outcome and accounting, written by `controller.game`
    through this model (a misspelt field fails when it is written)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = SUMMARY_VERSION
    game_id: str = ""
    status: str = "invalid"
    reason: str = ""
    flags: list[str] = Field(default_factory=list)
    winner: str | None = None
    """`crew`, `impostors`, or None (an invalid game)."""
    ending: str | None = None
    steps: int | None = None
    ticks: int | None = None
    seed: int | None = None
    roles: dict[str, str] = Field(default_factory=dict)
    final_status: dict[str, str] = Field(default_factory=dict)
    tasks: TaskTally = TaskTally()
    resumable: bool = False
    counts: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    """None when any call's model had no price (or the summary predates the field)."""
    wall_seconds: float | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    agents: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Seat -> its agent's description (`Agent.describe()`)."""
    versions: dict[str, str] = Field(default_factory=dict)


__all__ = [
    "SUMMARY_VERSION",
    "Count",
    "ModelCall",
    "PromptRefs",
    "RunSummary",
    "Scalar",
    "SideFacts",
    "TaskTally",
    "Text",
    "flat_settings",
]
