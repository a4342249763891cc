"""Registers the `aria` agent kind with the controller's agent registry.

Imported by the CLI (and named as the `mineamongus.agents` entry point), so the
controller itself never imports the harness. A side configured as
`{agent: aria, args: {...}}` is validated by `AriaArgs` (errors name the field, e.g.
`crew.args.temperature`) and played by `AriaAgent`s sharing one backend per side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from controller.agents.base import Agent
from controller.agents.registry import AgentKindError, SideContext, SideFactory, register
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import Backend, CredentialsError
from harness_aria.backends.fake import FakeBackend
from harness_aria.backends.registry import check_credentials, make_backend, parse_address
from harness_aria.backends.settings import (
    BackendSettings,
    ImageDetail,
    ModelSettings,
    ReasoningEffort,
)
from harness_aria.calls import CallSetup, HarnessedBackend, PromptStore
from harness_aria.fake_answers import answer
from harness_aria.prompts import shared_prefixes
from harness_aria.spec import AriaSpec


class AriaArgs(BaseModel):
    """Arguments of the `aria` agent kind (one side)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = "fake"
    """The model backend: `fake`, `openai:MODEL`, `anthropic:MODEL`,
    `openai-compatible:MODEL` (needs `base_url`)."""
    base_url: str | None = None
    """Endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp), or an override."""
    text_only: bool = False
    """Send no images; prompts then never mention a picture."""
    spec: AriaSpec = AriaSpec()
    """The ablation spec of this side."""
    settings: BackendSettings = BackendSettings()
    """Timeouts, retries, JSON mode, API-key variable, price table, model settings."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Shortcut for `settings.model.temperature` (one temperature for every call)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Shortcut for `settings.model.max_tokens`."""
    seed: int | None = None
    """Shortcut for `settings.model.seed`."""
    reasoning_effort: ReasoningEffort | None = None
    """Shortcut for `settings.model.reasoning_effort`."""
    image_detail: ImageDetail | None = None
    """Shortcut for `settings.model.image_detail`."""
    record_prompts: bool = True
    """Store every prompt text in the run folder (`prompts/<sha256>.txt`)."""
    shared_prefix: bool = True
    """Send the side's shared prefix (rules, rooms, how answers are read; see
    `harness_aria.prompts.shared_prefix`) as its own first system message, the block a
    provider caches (Anthropic: marked `cache_control`). Off: the same text opens the
    call's own system message instead (nothing is left out either way)."""

    @field_validator("backend")
    @classmethod
    def _known_address(cls, value: str) -> str:
        if value != "scripted":
            parse_address(value)
        return value

    def model_settings(self) -> ModelSettings:
        """`settings.model` with the shortcuts given here applied on top."""
        given = {
            k: getattr(self, k)
            for k in ("temperature", "max_tokens", "seed", "reasoning_effort", "image_detail")
            if getattr(self, k) is not None
        }
        return self.settings.model.model_copy(update=given)

    def backend_settings(self) -> BackendSettings:
        """The backend settings with the resolved model settings."""
        return self.settings.model_copy(update={"model": self.model_settings()})


def build_backend(args: AriaArgs) -> Backend:
    """The side's model backend (not yet wrapped with its call setup)."""
    if args.backend == "fake" or args.backend.startswith("fake:"):
        # The fake answers every ARIA prompt validly, so an ARIA game runs offline.
        return FakeBackend(args.backend.partition(":")[2], script=answer, text_only=args.text_only)
    return make_backend(
        args.backend,
        base_url=args.base_url,
        text_only=args.text_only,
        settings=args.backend_settings(),
    )


class AriaKind:
    """`aria`: the ARIA harness on a model backend."""

    name = "aria"

    def parse_args(self, args: Mapping[str, Any]) -> AriaArgs:
        """Validate the side's arguments."""
        return AriaArgs.model_validate(dict(args))

    def check(self, args: BaseModel, side: str) -> None:
        """The backend's address, base URL and API key, before anything starts."""
        assert isinstance(args, AriaArgs)
        try:
            check_credentials(args.backend, args.base_url, settings=args.settings)
        except (CredentialsError, ValueError) as exc:
            raise AgentKindError(f"{side}.args.backend: {exc}") from exc

    def side(self, args: BaseModel, context: SideContext) -> SideFactory:
        """ARIA agents sharing one backend, one shared prompt prefix and one prompt store."""
        assert isinstance(args, AriaArgs)
        rules = context.rules
        store = (
            PromptStore(context.run_dir)
            if args.record_prompts and context.run_dir is not None
            else None
        )
        role = "impostor" if context.side == "impostor" else "crewmate"
        prefixes = shared_prefixes(context.geometry, rules, role, args.spec.map_detail)
        setup = CallSetup(
            shared_prefix=prefixes["decide"],
            prefixes=prefixes,
            store=store,
            separate_prefix=args.shared_prefix,
        )
        backend = HarnessedBackend(build_backend(args), setup)

        def make(agent_id: str) -> Agent:
            return AriaAgent(
                agent_id,
                args.spec,
                backend,
                context.geometry,
                kill_range=rules.kill_range,
                report_range=rules.report_range,
                max_utterances=rules.max_utterances,
            )

        return make


def register_kinds() -> None:
    """Register `aria` (idempotent; the entry point of `mineamongus.agents`)."""
    register(KIND)


KIND = AriaKind()
register_kinds()
