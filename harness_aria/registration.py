"""Registers the `aria` agent kind and ARIA's side format with the controller's registry.

Named as the `mineamongus.agents` entry point, so the controller itself never imports
the harness. A side configured as `{agent: aria, args: {...}}` is validated by
`AriaArgs` (errors name the field, e.g. `crew.args.temperature`) and played by
`AriaAgent`s sharing one backend per side; the kind describes itself (`facts`) and
prices its calls (`price`) for the tournament's estimates. `AriaSideFormat` reads the
older flat side form (`crew: {backend: openai:MODEL, spec: {...}}`) and applies
`mineamongus play`'s side flags (`--crew`, `--base-url`, `--text-only`, `--ablation`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.agents.base import Agent
from controller.agents.registry import (
    AgentKindError,
    KindFacts,
    PlayFlags,
    Price,
    SideContext,
    SideFactory,
    register,
    register_side_format,
)
from controller.config import ConfigError
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import Backend, CredentialsError
from harness_aria.backends.fake import FakeBackend
from harness_aria.backends.registry import check_credentials, make_backend, parse_address
from harness_aria.backends.settings import (
    BackendSettings,
    ImageDetail,
    ModelSettings,
    ReasoningEffort,
    price_for,
)
from harness_aria.calls import CallSetup, HarnessedBackend, PromptStore
from harness_aria.fake_answers import answer
from harness_aria.modules.registry import check_extra_modules
from harness_aria.prompts import shared_prefixes
from harness_aria.spec import AXES, AblationError, AriaSpec, apply_ablations


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

    @field_validator("spec")
    @classmethod
    def _registered_modules(cls, spec: AriaSpec) -> AriaSpec:
        """`spec.extra_modules` may list only registered modules that are off by default
        (the error names the field and the modules it may list)."""
        check_extra_modules(spec.extra_modules)
        return spec

    @model_validator(mode="before")
    @classmethod
    def _spec_fields_belong_in_spec(cls, data: Any) -> Any:
        """A field of the ablation spec given beside `backend` is refused naming where it
        goes (`spec:`), not as a bare "extra input"."""
        if isinstance(data, Mapping):
            misplaced = [
                k for k in data if k in AriaSpec.model_fields and k not in cls.model_fields
            ]
            if misplaced:
                k, backend = misplaced[0], data.get("backend", "fake")
                raise ValueError(
                    f"{', '.join(f'`{m}`' for m in misplaced)} "
                    f"{'is a field' if len(misplaced) == 1 else 'are fields'} of ARIA's "
                    f"spec: write {'it' if len(misplaced) == 1 else 'them'} under `spec:` "
                    f"(e.g. `crew: {{backend: {backend}, spec: {{{k}: {data[k]}}}}}`, or "
                    f"`args: {{spec: {{{k}: ...}}}}`)"
                )
        return data

    @field_validator("backend")
    @classmethod
    def _known_address(cls, value: str) -> str:
        if value == "scripted":
            # `scripted` is an agent kind (no model), not a model backend; taking it here
            # would build an ARIA agent around an address no backend answers.
            raise ValueError(
                "`scripted` is not a model backend of the `aria` agent kind; for the "
                "rule-based control agent set the side's `agent: scripted` (no args)"
            )
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
    axes = AXES
    """The spec's ablation axes: the settings a study's tables give a column each
    (`game_start.sides` records them with the side's facts)."""

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

    def facts(self, args: BaseModel) -> KindFacts:
        """The backend address, its model, whether it bills (not the offline fake) and
        the spec as the side's axes: its profile and every resolved setting (which of them
        were given explicitly is bookkeeping, not a setting, and is left out)."""
        assert isinstance(args, AriaArgs)
        address = parse_address(args.backend)
        axes = args.spec.model_dump()
        axes.pop("explicit", None)
        return KindFacts(
            backend=args.backend,
            model=address.model or None,
            billed=address.provider != "fake",
            text_only=args.text_only,
            axes=axes,
        )

    def price(self, args: BaseModel) -> Price | None:
        """The model's list price from the side's price table (None: unknown)."""
        assert isinstance(args, AriaArgs)
        return price_for(parse_address(args.backend).model, args.settings.prices)

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
        prefixes = shared_prefixes(
            context.geometry, rules, role, args.spec.map_detail, args.spec.prompt_content
        )
        setup = CallSetup(
            shared_prefix=prefixes["decide"],
            prefixes=prefixes,
            store=store,
            separate_prefix=args.shared_prefix,
            cache_scope=cache_scope(context),
            sampling=args.spec.call_sampling,
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
                # Read leniently: the rule is newer than some rules objects kinds are handed.
                impostors_may_skip=bool(getattr(rules, "impostors_may_skip", True)),
            )

        return make


def cache_scope(context: SideContext) -> str:
    """A short name of the game for its agents' cache keys: its run folder's (unique per
    game of a study), else its seed."""
    if context.run_dir is not None:
        where = str(Path(context.run_dir).resolve())
        return hashlib.sha256(where.encode()).hexdigest()[:10]
    return f"seed{context.seed}"


FLAT_SIDE_FIELDS = ("backend", "base_url", "text_only", "spec", "settings")
"""Side fields of the older flat form (`crew: {backend: openai:MODEL, spec: {...}}`); they
are moved into `args` of the `aria` kind (`backend: scripted` selects the `scripted`
kind)."""
SIDES = ("crew", "impostor")


class AriaSideFormat:
    """ARIA's older flat side form and `mineamongus play`'s side flags."""

    def translate(self, side: Mapping[str, Any]) -> dict[str, Any]:
        """Move the flat fields into `args`; `backend` picks the kind."""
        data = dict(side)
        if not any(k in data for k in FLAT_SIDE_FIELDS):
            return data
        args = dict(data.get("args") or {})
        # A spec field beside `backend` goes along too: `AriaArgs` refuses it, naming `spec:`.
        for key in [k for k in data if k in FLAT_SIDE_FIELDS or k in AriaSpec.model_fields]:
            args[key] = data.pop(key)
        backend = args.get("backend")
        if backend == "scripted":
            data["agent"] = "scripted"
            args = {}
        elif backend is not None:
            data["agent"] = KIND.name
        data["args"] = args
        return data

    def flag_side(self, address: str) -> dict[str, Any]:
        """`--crew ADDRESS`: the flat `backend` field (`scripted` is the control agent)."""
        return {"backend": address}

    def apply_flags(
        self, sides: Mapping[str, tuple[str, Mapping[str, Any]]], flags: PlayFlags
    ) -> dict[str, dict[str, Any]]:
        """`--text-only`, `--base-url` and `--ablation` for the sides ARIA plays.

        Raises:
            ConfigError: `--text-only` names a side no model plays.
            AblationError: A bad `--ablation`, or one for a side no model plays.
        """
        out: dict[str, dict[str, Any]] = {s: {} for s in SIDES}
        aria = {s for s in SIDES if sides[s][0] == KIND.name}
        # `--text-only` alone (both) applies to every side that plays a model, as it always
        # did; naming a side that plays none is an error.
        text_only = {"both": aria, None: set()}.get(flags.text_only, {flags.text_only})
        if flags.text_only is not None and not text_only:
            raise ConfigError(f"--text-only {flags.text_only}: no side plays a model")
        for side in text_only:
            if side not in aria:
                raise ConfigError(f"--text-only {flags.text_only}: the {side} side plays no model")
            out[str(side)]["text_only"] = True
        for side in aria:
            if flags.base_url is not None:
                out[side]["base_url"] = flags.base_url
        specs = {
            s: AriaSpec.model_validate(sides[s][1]["spec"]) if s in aria else AriaSpec()
            for s in SIDES
        }
        crew, impostor = apply_ablations(specs["crew"], specs["impostor"], list(flags.ablations))
        for side, spec in (("crew", crew), ("impostor", impostor)):
            if side in aria:
                out[side]["spec"] = spec.model_dump()
            elif spec != specs[side]:
                raise AblationError(f"--ablation: the {side} side plays no model (it is scripted)")
        return out


def register_kinds() -> None:
    """Register `aria` and its side format (idempotent; the entry point of
    `mineamongus.agents`)."""
    register(KIND)
    register_side_format(SIDE_FORMAT)


KIND = AriaKind()
SIDE_FORMAT = AriaSideFormat()
register_kinds()
