"""Experiment specs: a study as a list of arms, each a full game configuration.

A spec is YAML validated by pydantic. Arms come from four sources, merged in order:
explicit `arms`, a `sweep` (the cartesian product of axes), a `round_robin` (crew
model x impostor model x configuration pairs, crew-major or, as the paper's RQ2 driver
numbers its matchups, impostor-major per case) and an optional scripted `control` arm.
Every arm plays the same seed list (paired seeds), so two arms differ only in what
the spec varies: roles and tasks are drawn from the seed.

Every arm carries its design labels (`Arm.labels`): the value label of each named sweep
axis, the value of each dotted one, and a round robin's `case`, `matchup`, `crew_model`
and `impostor_model`. They are not part of the arm's configuration (its digest); the
study's manifest keeps them and the result tables carry them as `design.<name>` columns.

Each game's configuration is built by `controller.config.resolve_config` from the
spec's preset, `base` and the arm's overrides (nested like `GameConfig`), so new
configuration fields flow through unchanged and a game is exactly what
`mineamongus play --config FILE` plays.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.config import ConfigError, GameConfig, resolve_config

MAX_SEEDS = 100_000
"""The most seeds (repetitions) a study may give every arm; more is a typo."""
MAX_ARMS = 100_000
"""The most arms a spec may expand to (the RQ2 round robin has 576)."""
MAX_GAMES = 1_000_000
"""The most games a study may hold (arms x seeds; the paper's largest has 1152)."""
SEED_MAX = 2**31 - 1
"""The largest seed (as `GameConfig.seed`)."""


class SpecError(ValueError):
    """An experiment spec is wrong; the message names the field and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$")


class ArmSpec(_Strict):
    """One explicitly listed arm."""

    name: str
    """Arm name (letters, digits, `_ . + = -`); also its folder name under `games/`."""
    overrides: dict[str, Any] = Field(default_factory=dict)
    """GameConfig values of this arm, nested like `GameConfig` (merged over `base`)."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Design labels of this arm (name -> value), carried into the result tables as
    `design.<name>` columns."""


class AxisValue(_Strict):
    """One value of a named sweep axis: a label and the GameConfig values it sets."""

    label: str
    """Short name of the value, used in arm names."""
    overrides: dict[str, Any] = Field(alias="set")
    """`set` in YAML: GameConfig values, nested like `GameConfig`
    (e.g. `{impostor: {spec: {memory: window}}}`)."""


class SweepSpec(_Strict):
    """The cartesian product of ablation axes; each axis fixes values per side.

    An axis is either a dotted GameConfig path with plain values
    (`impostor.spec.memory: [window, semantic]`) or a name with labelled values
    (`backbone: [{label: mini, set: {crew: {backend: ...}, impostor: {backend: ...}}}]`).
    """

    axes: dict[str, list[Any]] = Field(min_length=1)
    """Axis name or dotted path -> its values (at least one each)."""

    @model_validator(mode="after")
    def _nonempty(self) -> SweepSpec:
        for name, values in self.axes.items():
            if not values:
                raise ValueError(f"axis {name!r} has no values; give at least one")
        return self


class SpecPair(_Strict):
    """One (crew spec, impostor spec) configuration pair of a round-robin."""

    label: str
    """Short name of the pair, used in arm names."""
    crew: dict[str, Any] = Field(default_factory=dict)
    """ARIA spec values of the crew (fields of `AriaSpec`)."""
    impostor: dict[str, Any] = Field(default_factory=dict)
    """ARIA spec values of the impostors (fields of `AriaSpec`)."""


class RoundRobinModel(_Strict):
    """One model of a round robin with what a side needs to call it."""

    backend: str
    """The backend address (e.g. `openai-compatible:qwen/qwen3.6-27b`)."""
    label: str | None = None
    """Short name in arm names and labels (default: the round robin's `labels`, else the
    address after its last `:` or `/`)."""
    side: dict[str, Any] = Field(default_factory=dict)
    """Side values this model needs wherever it plays, merged under the arm's `backend`
    and `spec` into that side (e.g. `base_url`, `settings: {prices: ..., model: ...}`)."""


RoundRobinOrder = Literal["crew_major", "impostor_major"]


class RoundRobinSpec(_Strict):
    """Crew model x impostor model x configuration pairs.

    `order: crew_major` (default) enumerates crew model, then impostor model, then pair,
    and names arms `c=CREW-i=IMP[-PAIR]`. `order: impostor_major` enumerates per pair
    (a case), then impostor model i, then crew model j, with the matchup index
    k = i * len(crew models) + j, and names arms `PAIR-kNNN-i=IMP-c=CREW` (`kNNN-...`
    for the single default pair), so arms sort in that order and the same k pairs the
    same models in every case.
    """

    models: list[str | RoundRobinModel] = Field(min_length=1)
    """Backends (e.g. `openai:gpt-4.1-mini`), or `{backend, label, side}` entries, that
    play as crew (and as impostors unless `impostor_models` is given)."""
    impostor_models: list[str | RoundRobinModel] | None = None
    """Impostor backends when they differ from `models` (default: `models`)."""
    pairs: list[SpecPair] = Field(default_factory=lambda: [SpecPair(label="default")])
    """Configuration pairs (cases); every model pairing plays each."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Optional short names of backends for arm names (default: the part after `:`)."""
    order: RoundRobinOrder = "crew_major"
    """`crew_major` (default) or `impostor_major` (per case, impostor model, crew model;
    the matchup index in the arm name)."""

    @model_validator(mode="after")
    def _distinct(self) -> RoundRobinSpec:
        for field in ("models", "impostor_models"):
            entries = getattr(self, field)
            if entries is None:
                continue
            names = [self.model_label(m) for m in entries]
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(
                    f"{field}: {', '.join(dup)} appear(s) more than once; list each model once "
                    "(or give entries distinct `label`s)"
                )
        labels = [p.label for p in self.pairs]
        dup = sorted({n for n in labels if labels.count(n) > 1})
        if dup:
            raise ValueError(f"pairs: label(s) {', '.join(dup)} repeat; give each pair its own")
        return self

    def model_label(self, model: str | RoundRobinModel) -> str:
        """A model's short name: its entry's `label`, else `labels`, else the address after
        its last `:` or `/`."""
        if isinstance(model, RoundRobinModel):
            if model.label is not None:
                return model.label
            model = model.backend
        return self.labels.get(model, _short(model))


class TokenEstimate(_Strict):
    """What `--dry-run` estimates from, beyond the measured figures.

    By default every per-decision figure is measured: `controller/tournament/
    token_figures.json` (written by `python -m benchmarks.aria_tokens --preset paper`)
    holds decisions per seat and step, calls, prompt text, frames and output tokens per
    decision for each side and ARIA setting, and `controller.tournament.estimate` composes
    an arm's from them. A field set here replaces the measured figure for every side
    (`decisions_per_game` and `tokens_in_per_decision` together; the others need them).
    """

    decisions_per_game: float | None = Field(default=None, gt=0)
    """Decisions of all seats in one game (default: measured, per side and step)."""
    tokens_in_per_decision: float | None = Field(default=None, ge=0)
    """Input tokens per decision, prompt text plus frames (default: measured)."""
    tokens_out_per_decision: float | None = Field(default=None, ge=0)
    """Output tokens per decision (default: measured)."""
    cached_share: float | None = Field(default=None, ge=0, le=1)
    """Share of input tokens read from the provider's prompt cache (default: measured)."""
    call_latency_s: float = Field(default=1.5, ge=0)
    """Seconds one model call takes, for the wall-time estimate: a decision's calls run
    one after another, the seats' decisions at once (a round figure for small hosted
    models; measure yours from a pilot game's `latency_ms`)."""


class RunnerSpec(_Strict):
    """How games are run (each also a command-line option, which wins)."""

    workers: int = Field(default=1, ge=1)
    """Games at once on this machine (`--workers`)."""
    retries: int = Field(default=1, ge=0)
    """Reruns of an invalid or failed game with the same seed (`--retries`)."""
    game_timeout_s: float = Field(default=3600.0, gt=0)
    """Wall-clock limit of one game; a game past it is killed and counted invalid."""
    cpus_per_game: float = Field(default=1.0, gt=0)
    """CPUs one game needs (Ray's `num_cpus` per task; the local capacity check)."""
    memory_gb_per_game: float = Field(default=1.5, gt=0)
    """Memory one game needs before one is measured (Ray's `memory` per task)."""
    warm: bool = True
    """On the embedded Minecraft world with the local backend, play each worker's games
    on one warm server (reset and checked clean between games; `docs/tournament.md`);
    false: a new process, server and bots for every game (`--cold-workers`)."""


class ExperimentSpec(_Strict):
    """A study: arms x paired seeds, and how to run them."""

    name: str
    """Name of the study."""
    world: Literal["minecraft", "fake"] = "minecraft"
    """`minecraft` (the embedded server) or `fake` (the in-process simulated world)."""
    preset: str = "quick"
    """Preset of every game (`quick`, `balanced` or `paper`: `controller.config.PRESETS`)."""
    base: dict[str, Any] = Field(default_factory=dict)
    """GameConfig values shared by every arm (nested like `GameConfig`)."""
    seeds: list[Annotated[int, Field(ge=0, le=SEED_MAX)]] | None = Field(
        default=None, max_length=MAX_SEEDS
    )
    """Seeds every arm plays (paired seeds), non-negative integers up to 2**31 - 1 (as
    `GameConfig.seed`), at most `MAX_SEEDS` of them; or give `repetitions`."""
    repetitions: int | None = Field(default=None, ge=1, le=MAX_SEEDS)
    """Number of seeds `seed_start, seed_start+1, ...` when `seeds` is not given (at most
    `MAX_SEEDS`)."""
    seed_start: int = Field(default=0, ge=0, le=SEED_MAX)
    """First seed when `repetitions` is used (non-negative)."""
    arms: list[ArmSpec] = Field(default_factory=list)
    """Explicitly listed arms."""
    sweep: SweepSpec | None = None
    """Arms from the cartesian product of axes."""
    round_robin: RoundRobinSpec | None = None
    """Arms from a crew-model x impostor-model round-robin."""
    control: bool = False
    """Add a `control` arm of scripted agents on both sides on the same seeds."""
    estimate: TokenEstimate = TokenEstimate()
    """Per-decision token estimate used by `--dry-run`."""
    runner: RunnerSpec = RunnerSpec()
    """Defaults of the runner's options."""

    @model_validator(mode="after")
    def _seeds(self) -> ExperimentSpec:
        if self.seeds is None and self.repetitions is None:
            raise ValueError("give `seeds: [..]` or `repetitions: N`")
        if self.seeds is not None and self.repetitions is not None:
            raise ValueError("give either `seeds` or `repetitions`, not both")
        if self.seeds is not None:
            if not self.seeds:
                raise ValueError("`seeds` is empty; list at least one seed")
            if len(set(self.seeds)) != len(self.seeds):
                raise ValueError("`seeds` repeats a seed; list each once")
        if not (self.arms or self.sweep or self.round_robin or self.control):
            raise ValueError("no arms: give `arms`, `sweep`, `round_robin` or `control: true`")
        if self.repetitions is not None and self.seed_start + self.repetitions - 1 > SEED_MAX:
            raise ValueError(
                f"seed_start {self.seed_start} + repetitions {self.repetitions} passes the "
                f"largest seed {SEED_MAX}; start lower"
            )
        return self

    def seed_list(self) -> list[int]:
        """The paired seeds every arm plays."""
        if self.seeds is not None:
            return list(self.seeds)
        assert self.repetitions is not None
        return list(range(self.seed_start, self.seed_start + self.repetitions))


class Arm(BaseModel):
    """One resolved arm: a name, the GameConfig file data of its games and its labels."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Arm name."""
    data: dict[str, Any]
    """GameConfig values (preset included) the arm's games are resolved from."""
    config: GameConfig
    """The arm's configuration resolved with seed 0 (the seed is set per game)."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Design labels (name -> value): a named sweep axis's value label, a dotted axis's
    value, a round robin's `case`, `matchup`, `crew_model` and `impostor_model`, or an
    explicit arm's own. Not part of the configuration (`digest`)."""

    def game_data(self, seed: int) -> dict[str, Any]:
        """The config-file data of this arm's game with `seed` (what `play --config` reads)."""
        return {**self.data, "seed": seed}

    def digest(self) -> str:
        """Hash of the arm's configuration: a changed arm is refused on resume."""
        text = json.dumps(self.data, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _at_path(path: str, value: Any) -> dict[str, Any]:
    out: Any = value
    for part in reversed(path.split(".")):
        out = {part: out}
    return dict(out)


def _short(value: Any) -> str:
    text = str(value).rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.+=-]", "_", text)


_Raw = tuple[str, dict[str, Any], dict[str, str]]
"""An arm before resolution: name, overrides, design labels."""


def _label_value(value: Any) -> str:
    """A plain axis value as a label: text as it is, anything else as JSON (`true`, `100`)."""
    return value if isinstance(value, str) else json.dumps(value)


def _sweep_arms(sweep: SweepSpec) -> list[_Raw]:
    axes: list[list[tuple[str, str, dict[str, Any]]]] = []
    for name, values in sweep.axes.items():
        options: list[tuple[str, str, dict[str, Any]]] = []
        for i, value in enumerate(values):
            if "." in name:
                if isinstance(value, dict):
                    raise SpecError(
                        f"sweep.axes.{name}[{i}]: a dotted axis takes plain values "
                        f"(e.g. window), got a mapping; use a named axis for mappings"
                    )
                options.append(
                    (
                        f"{name.rsplit('.', 1)[-1]}={_short(value)}",
                        _label_value(value),
                        _at_path(name, value),
                    )
                )
            else:
                try:
                    av = AxisValue.model_validate(value)
                except ValidationError as exc:
                    raise SpecError(
                        f"sweep.axes.{name}[{i}]: a named axis takes "
                        f"{{label: NAME, set: {{...GameConfig values}}}} ({_first(exc)})"
                    ) from exc
                options.append((av.label, av.label, av.overrides))
        axes.append(options)
    names = list(sweep.axes)
    arms: list[_Raw] = []
    for combo in itertools.product(*axes):
        data: dict[str, Any] = {}
        for _part, _value, setting in combo:
            data = _deep_merge(data, setting)
        labels = {axis: value for axis, (_part, value, _s) in zip(names, combo, strict=True)}
        arms.append(("-".join(part for part, _, _ in combo), data, labels))
    return arms


def _rr_side(model: str | RoundRobinModel, spec: dict[str, Any]) -> dict[str, Any]:
    """One side of a round-robin arm: the model's own side values, its backend, the spec."""
    if isinstance(model, RoundRobinModel):
        return _deep_merge(model.side, {"backend": model.backend, "spec": dict(spec)})
    return {"backend": model, "spec": dict(spec)}


def _round_robin_arms(rr: RoundRobinSpec) -> list[_Raw]:
    crews = rr.models
    imps = rr.impostor_models if rr.impostor_models is not None else rr.models
    n = len(crews)
    width = max(3, len(str(len(imps) * n - 1)))
    default_pair = len(rr.pairs) == 1 and rr.pairs[0].label == "default"
    # (pair, impostor index, crew index) in the spec's order
    combos: list[tuple[SpecPair, int, int]]
    if rr.order == "impostor_major":
        combos = [(pair, i, j) for pair in rr.pairs for i in range(len(imps)) for j in range(n)]
    else:
        combos = [(pair, i, j) for j in range(n) for i in range(len(imps)) for pair in rr.pairs]
    arms: list[_Raw] = []
    for pair, i, j in combos:
        crew, imp = crews[j], imps[i]
        crew_label, imp_label = rr.model_label(crew), rr.model_label(imp)
        k = i * n + j
        if rr.order == "impostor_major":
            name = f"k{k:0{width}d}-i={imp_label}-c={crew_label}"
            if not default_pair:
                name = f"{pair.label}-{name}"
        else:
            name = f"c={crew_label}-i={imp_label}"
            if not default_pair:
                name += f"-{pair.label}"
        data = {"crew": _rr_side(crew, pair.crew), "impostor": _rr_side(imp, pair.impostor)}
        labels = {
            "case": pair.label,
            "matchup": str(k),
            "crew_model": crew_label,
            "impostor_model": imp_label,
        }
        arms.append((name, data, labels))
    return arms


def _first(exc: ValidationError) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "(top level)"
    return f"{field}: {err['msg']}"


def _sweep_size(sweep: SweepSpec | None) -> int:
    return math.prod(len(v) for v in sweep.axes.values()) if sweep is not None else 0


def _round_robin_size(rr: RoundRobinSpec | None) -> int:
    if rr is None:
        return 0
    imps = rr.impostor_models if rr.impostor_models is not None else rr.models
    return len(rr.models) * len(imps) * len(rr.pairs)


def expand_arms(spec: ExperimentSpec) -> list[Arm]:
    """Every arm of the study, each resolved through `resolve_config`.

    Raises:
        SpecError: a duplicate arm name or an arm whose configuration is invalid
            (naming the arm and the configuration field).
    """
    raw: list[_Raw] = [(a.name, a.overrides, dict(a.labels)) for a in spec.arms]
    planned = (
        len(spec.arms)
        + _sweep_size(spec.sweep)
        + _round_robin_size(spec.round_robin)
        + int(spec.control)
    )
    if planned > MAX_ARMS:
        raise SpecError(
            f"the spec expands to {planned:,} arms, more than {MAX_ARMS:,}: a study that "
            "large is a typo in `sweep.axes` or `round_robin`; split it into studies"
        )
    games = planned * len(spec.seed_list())
    if games > MAX_GAMES:
        raise SpecError(
            f"{planned:,} arm(s) x {len(spec.seed_list()):,} seed(s) = {games:,} games, more "
            f"than {MAX_GAMES:,}; lower `repetitions`/`seeds` or split the study"
        )
    if spec.sweep is not None:
        raw += _sweep_arms(spec.sweep)
    if spec.round_robin is not None:
        raw += _round_robin_arms(spec.round_robin)
    if spec.control:
        raw.append(
            (
                "control",
                {"crew": {"backend": "scripted"}, "impostor": {"backend": "scripted"}},
                {},
            )
        )
    arms: list[Arm] = []
    seen: set[str] = set()
    for name, overrides, labels in raw:
        if not _NAME.match(name):
            raise SpecError(
                f"arm {name!r}: names take letters, digits and `_ . + = -` only; rename it"
            )
        if name in seen:
            raise SpecError(f"arm {name!r} appears twice; give every arm a distinct name")
        seen.add(name)
        data = _deep_merge(_deep_merge({"preset": spec.preset}, spec.base), overrides)
        if "seed" in data:
            raise SpecError(
                f"arm {name!r}: `seed` is set per game from `seeds`; remove it from the arm"
            )
        try:
            config = resolve_config(spec.preset, data)
        except ConfigError as exc:
            raise SpecError(f"arm {name!r}: {exc}") from exc
        arms.append(Arm(name=name, data=data, config=config, labels=labels))
    return arms


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate an experiment spec file.

    Raises:
        SpecError: the file is missing, not YAML, or a field is wrong (named in the message).
    """
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"{p}: no such experiment spec file")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"{p}: not valid YAML ({exc})") from exc
    return parse_spec(data, source=str(p))


def parse_spec(data: Any, source: str = "spec") -> ExperimentSpec:
    """Validate spec data (a mapping, as read from YAML).

    Raises:
        SpecError: naming every offending field.
    """
    if not isinstance(data, dict):
        raise SpecError(
            f"{source}: the top level must be a mapping of fields (name, seeds, arms ...)"
        )
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
            lines.append(f"  {field}: {err['msg']}")
        raise SpecError(f"{source}: invalid experiment spec:\n" + "\n".join(lines)) from exc
