"""The shipped paper specs are the paper's designs, arm for arm.

The tables below are transcribed from the authors' drivers and their README
(JunseoKim0103/Lies-We-Can-See: `scripts/main_1_aria_2vs6.py` with its 24-configuration
grid and crewmate baseline, `scripts/main_1_aria_2vs6_multi_llm.py` with MODEL_POOL,
CASE_CREWMATE_CLI, CASE_IMPOSTER_CLI and its matchup numbering, `scripts/README.md`,
and `mineland/aria/llm.py` for each model's provider id and price) and from the paper's
ego-state finding. Each spec is compared with them through `expand_arms`: exactly these
arms and no others, each side's resolved ARIA settings, the preset and the game count.
Every comparison is a function returning its mismatches, and each is shown catching a
planted fault.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.agents.registry import side_price
from controller.cli import main
from controller.config import SideConfig
from controller.tournament.estimate import side_backend
from controller.tournament.spec import Arm, expand_arms, load_spec, parse_spec
from harness_aria.backends.settings import ModelPrice

EXPERIMENTS = Path(__file__).resolve().parents[2] / "configs" / "experiments"


@dataclass(frozen=True)
class Side:
    """One side's ARIA settings as the authors' flags give them."""

    memory: str
    belief_update: str
    reflection: str
    planning: str
    prompt: str
    state: str = "privileged"


def _side(side: SideConfig) -> Side:
    spec = side.args["spec"]
    return Side(
        memory=spec["memory"],
        belief_update=spec["belief_update"],
        reflection=spec["reflection"],
        planning=spec["planning"],
        prompt=spec["prompt"],
        state=spec["state"],
    )


def _common(arm: Arm) -> list[str]:
    """What every paper arm shares: the authors' game and harness."""
    bad = []
    if arm.config.preset != "paper":
        bad.append(f"{arm.name}: preset {arm.config.preset}")
    if arm.config.rules.max_steps != 200:
        bad.append(f"{arm.name}: max_steps {arm.config.rules.max_steps}")
    for name, side in (("crew", arm.config.crew), ("impostor", arm.config.impostor)):
        if side.agent != "aria":
            bad.append(f"{arm.name}: {name} plays {side.agent}")
        elif side.args["spec"]["profile"] != "reference":
            bad.append(f"{arm.name}: {name} profile {side.args['spec']['profile']}")
    return bad


# ---------------------------------------------------------------- RQ1
# main_1_aria_2vs6.py: memory labels and their belief updates ("win": window + rule,
# "sem-llm": semantic + llm); reflection & skill ("no-rs": none, "meet-rs": meeting
# reflection + skill memory); planning ("react", "hier", LLM policy); prompt ("min",
# "det"); ids in that nesting order, 0-7 (memory off) excluded from the paper.
RQ1_IMPOSTOR_GRID: dict[int, tuple[str, Side]] = {
    8: ("win_no-rs_react_min", Side("window", "rule", "off", "reactive", "minimal")),
    9: ("win_no-rs_react_det", Side("window", "rule", "off", "reactive", "deterministic")),
    10: ("win_no-rs_hier_min", Side("window", "rule", "off", "hierarchical", "minimal")),
    11: ("win_no-rs_hier_det", Side("window", "rule", "off", "hierarchical", "deterministic")),
    12: ("win_meet-rs_react_min", Side("window", "rule", "on", "reactive", "minimal")),
    13: ("win_meet-rs_react_det", Side("window", "rule", "on", "reactive", "deterministic")),
    14: ("win_meet-rs_hier_min", Side("window", "rule", "on", "hierarchical", "minimal")),
    15: ("win_meet-rs_hier_det", Side("window", "rule", "on", "hierarchical", "deterministic")),
    16: ("sem-llm_no-rs_react_min", Side("semantic", "llm", "off", "reactive", "minimal")),
    17: ("sem-llm_no-rs_react_det", Side("semantic", "llm", "off", "reactive", "deterministic")),
    18: ("sem-llm_no-rs_hier_min", Side("semantic", "llm", "off", "hierarchical", "minimal")),
    19: (
        "sem-llm_no-rs_hier_det",
        Side("semantic", "llm", "off", "hierarchical", "deterministic"),
    ),
    20: ("sem-llm_meet-rs_react_min", Side("semantic", "llm", "on", "reactive", "minimal")),
    21: (
        "sem-llm_meet-rs_react_det",
        Side("semantic", "llm", "on", "reactive", "deterministic"),
    ),
    22: ("sem-llm_meet-rs_hier_min", Side("semantic", "llm", "on", "hierarchical", "minimal")),
    23: (
        "sem-llm_meet-rs_hier_det",
        Side("semantic", "llm", "on", "hierarchical", "deterministic"),
    ),
}
# The driver's CREWMATE_BASELINE_CLI and the README's second crewmate configuration,
# both with meeting reflection + skill memory and the minimal prompt.
RQ1_CREWS = {
    "sem-rea": Side("semantic", "llm", "on", "reactive", "minimal"),
    "win-hie": Side("window", "rule", "on", "hierarchical", "minimal"),
}
# The paper's two backbones, self-play (--model without --imposter-model).
RQ1_BACKBONES = {
    "gpt-4.1-mini": "openai:gpt-4.1-mini",
    "qwen3.6-27b": "openai-compatible:Qwen/Qwen3.6-27B",
}
RQ1_REPETITIONS = 3


def rq1_expected() -> list[tuple[str, str, int]]:
    """(backbone, crew corner, impostor grid id) of every RQ1 arm, in the study's order."""
    return [(b, c, i) for b in RQ1_BACKBONES for c in RQ1_CREWS for i in RQ1_IMPOSTOR_GRID]


def rq1_mismatches(arms: list[Arm]) -> list[str]:
    """How the arms differ from the paper's RQ1 (empty when they are exactly it)."""
    bad: list[str] = []
    expected = rq1_expected()
    if len(arms) != len(expected):
        bad.append(f"{len(arms)} arms, the paper has {len(expected)}")
    for arm, (backbone, crew, grid_id) in zip(arms, expected, strict=False):
        bad += _common(arm)
        label, imp = RQ1_IMPOSTOR_GRID[grid_id]
        name = f"{backbone}-{crew}-{label.replace('_', '-')}"
        if arm.name != name:
            bad.append(f"arm {arm.name}: expected {name} (grid id {grid_id}) here")
        for side in (arm.config.crew, arm.config.impostor):
            if side_backend(side) != RQ1_BACKBONES[backbone]:
                bad.append(f"{arm.name}: backend {side_backend(side)}, not {backbone}")
        if _side(arm.config.crew) != RQ1_CREWS[crew]:
            bad.append(f"{arm.name}: crew {_side(arm.config.crew)} is not {RQ1_CREWS[crew]}")
        if _side(arm.config.impostor) != imp:
            bad.append(
                f"{arm.name}: impostor {_side(arm.config.impostor)} is not grid id {grid_id}"
            )
        if arm.labels.get("backbone") != backbone or arm.labels.get("crew") != crew:
            bad.append(f"{arm.name}: design labels {arm.labels}")
    return bad


def _rq1_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((EXPERIMENTS / "rq1.yaml").read_text())
    return data


def test_rq1_is_the_papers_192_games() -> None:
    spec = load_spec(EXPERIMENTS / "rq1.yaml")
    arms = expand_arms(spec)
    assert rq1_mismatches(arms) == []
    assert spec.seed_list() == [0, 1, 2] and len(spec.seed_list()) == RQ1_REPETITIONS
    assert len(arms) * len(spec.seed_list()) == 192
    cells = {(a.labels["backbone"], a.labels["crew"]) for a in arms}
    assert len(cells) == 4  # the paper's four backbone x crew cells, 16 x 3 = 48 games each


@pytest.mark.parametrize(
    "plant",
    [
        # the crew corners of an earlier version: (window, reactive) and (semantic, hier)
        lambda d: d["sweep"]["axes"]["crew"][0]["set"]["crew"]["spec"].update(memory="window"),
        # window memory with an LLM belief update (the driver pairs window with rule)
        lambda d: d["sweep"]["axes"]["imp_memory"][0]["set"]["impostor"]["spec"].update(
            belief_update="llm"
        ),
        # Claude in place of Qwen3.6-27B
        lambda d: d["sweep"]["axes"]["backbone"][1]["set"].update(
            crew={"backend": "anthropic:claude-haiku-4-5"},
            impostor={"backend": "anthropic:claude-haiku-4-5"},
        ),
        # the impostors on another backbone (not self-play)
        lambda d: d["sweep"]["axes"]["backbone"][0]["set"].update(
            impostor={"backend": "openai:gpt-4.1"}
        ),
        # ego state, the lean profile, a grid value dropped, the prompt order swapped
        lambda d: d["base"]["impostor"]["spec"].update(state="ego"),
        lambda d: d["base"]["crew"]["spec"].update(profile="lean"),
        lambda d: d["sweep"]["axes"]["imp_planning"].pop(),
        lambda d: d["sweep"]["axes"]["imp_prompt"].reverse(),
        lambda d: d.update(preset="quick"),
    ],
)
def test_rq1_check_catches_a_planted_departure(plant: Any) -> None:
    data = copy.deepcopy(_rq1_data())
    plant(data)
    assert rq1_mismatches(expand_arms(parse_spec(data))) != []


# ---------------------------------------------------------------- RQ2
# MODEL_POOL in the driver's order, with each model's provider id and price
# (USD per million tokens, input / output) from MODEL_CONFIGS; None: no price there.
RQ2_POOL: list[tuple[str, str, tuple[float, float] | None]] = [
    ("gpt-4.1-mini", "openai:gpt-4.1-mini", (0.40, 1.60)),
    ("gpt-5-mini", "openai:gpt-5-mini", (0.25, 2.00)),
    ("gpt-5", "openai:gpt-5", (1.25, 10.00)),
    ("qwen3.5-27b", "openai-compatible:qwen/qwen3.5-27b", (0.195, 1.56)),
    ("qwen3.5-9b", "openai-compatible:qwen/qwen3.5-9b", (0.04, 0.15)),
    ("qwen3.6-27b", "openai-compatible:qwen/qwen3.6-27b", (0.32, 3.20)),
    ("kimi-k2.5", "openai-compatible:moonshotai/kimi-k2.5", (0.40, 1.90)),
    ("gemini-2.5-flash", "openai-compatible:google/gemini-2.5-flash", (0.30, 2.50)),
    (
        "gemini-3.1-flash-lite-preview",
        "openai-compatible:google/gemini-3.1-flash-lite-preview",
        (0.25, 1.50),
    ),
    ("gemini-3-flash-preview", "openai-compatible:google/gemini-3-flash-preview", None),
    ("gemma4-26b-a4b", "openai-compatible:google/gemma-4-26b-a4b-it", None),
    ("gemma4-31b", "openai-compatible:google/gemma-4-31b-it", (0.12, 0.37)),
]
UNPRICED = {name for name, _address, price in RQ2_POOL if price is None}
_SEM_REA = Side("semantic", "llm", "on", "reactive", "minimal")
_WIN_HIE = Side("window", "rule", "on", "hierarchical", "minimal")
_WIN_REA = Side("window", "rule", "on", "reactive", "minimal")
# CASE_CREWMATE_CLI / CASE_IMPOSTER_CLI (case 1B's impostors are hierarchical in the
# code; the README's table says reactive).
RQ2_CASES: dict[str, tuple[Side, Side]] = {
    "1A": (_SEM_REA, _SEM_REA),
    "1B": (_SEM_REA, _WIN_HIE),
    "2A": (_WIN_HIE, _WIN_HIE),
    "2B": (_WIN_HIE, _WIN_REA),
}
RQ2_REPETITIONS = 2


def rq2_mismatches(arms: list[Arm]) -> list[str]:
    """How the arms differ from the paper's RQ2 (empty when they are exactly it)."""
    n = len(RQ2_POOL)
    expected = [
        (case, i * n + j, RQ2_POOL[i], RQ2_POOL[j])
        for case in RQ2_CASES
        for i in range(n)
        for j in range(n)
    ]
    bad: list[str] = []
    if len(arms) != len(expected):
        bad.append(f"{len(arms)} arms, the paper has {len(expected)}")
    for arm, (case, k, imp, crew) in zip(arms, expected, strict=False):
        bad += _common(arm)
        name = f"{case}-k{k:03d}-i={imp[0]}-c={crew[0]}"
        if arm.name != name:
            bad.append(f"arm {arm.name}: expected {name} here")
        want_labels = {"case": case, "matchup": str(k), "impostor_model": imp[0]}
        want_labels["crew_model"] = crew[0]
        if arm.labels != want_labels:
            bad.append(f"{arm.name}: design labels {arm.labels}, not {want_labels}")
        crew_side, imp_side = RQ2_CASES[case]
        for role, side, want, model in (
            ("crew", arm.config.crew, crew_side, crew),
            ("impostor", arm.config.impostor, imp_side, imp),
        ):
            if _side(side) != want:
                bad.append(f"{arm.name}: {role} {_side(side)} is not case {case}'s {want}")
            if side_backend(side) != model[1]:
                bad.append(f"{arm.name}: {role} backend {side_backend(side)}, not {model[1]}")
            hosted = model[1].startswith("openai-compatible:")
            if hosted != (side.args["base_url"] is not None):
                bad.append(f"{arm.name}: {role} base_url {side.args['base_url']}")
            price = side_price(side.agent, side.args)
            assert price is None or isinstance(price, ModelPrice)
            got = None if price is None else (price.input_per_mtok, price.output_per_mtok)
            if got != model[2]:
                bad.append(f"{arm.name}: {role} price {got}, the authors' {model[2]}")
    return bad


def _rq2_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((EXPERIMENTS / "rq2.yaml").read_text())
    return data


@pytest.fixture(scope="module")
def rq2_arms() -> list[Arm]:
    return expand_arms(load_spec(EXPERIMENTS / "rq2.yaml"))


def test_rq2_is_the_papers_1152_games(rq2_arms: list[Arm]) -> None:
    spec = load_spec(EXPERIMENTS / "rq2.yaml")
    assert rq2_mismatches(rq2_arms) == []
    assert spec.seed_list() == [0, 1] and len(spec.seed_list()) == RQ2_REPETITIONS
    assert len(rq2_arms) * len(spec.seed_list()) == 1152
    # The same matchup index pairs the same backends in every case.
    by_k: dict[str, set[tuple[str, str]]] = {}
    for a in rq2_arms:
        pair = (side_backend(a.config.impostor), side_backend(a.config.crew))
        by_k.setdefault(a.labels["matchup"], set()).add(pair)
    assert len(by_k) == 144 and all(len(pairs) == 1 for pairs in by_k.values())


@pytest.mark.parametrize(
    "plant",
    [
        # case 1B's impostors reactive, as the README (not the code) says
        lambda d: d["round_robin"]["pairs"][1]["impostor"].update(planning="reactive"),
        # two pool models swapped
        lambda d: d["round_robin"]["models"].insert(1, d["round_robin"]["models"].pop(2)),
        # crew-major enumeration (k no longer i * N + j in the arm order)
        lambda d: d["round_robin"].update(order="crew_major"),
        # an OpenAI model routed through the OpenAI-compatible endpoint
        lambda d: d["round_robin"]["models"][0].update(side={"base_url": "http://x/v1"}),
        # a wrong price, and reflection off in one case
        lambda d: d["round_robin"]["models"][4]["side"]["settings"]["prices"][
            "qwen/qwen3.5-9b"
        ].update(input_per_mtok=0.4),
        lambda d: d["round_robin"]["pairs"][3].update(
            impostor={**d["round_robin"]["pairs"][3]["impostor"], "reflection": "off"}
        ),
    ],
)
def test_rq2_check_catches_a_planted_departure(plant: Any) -> None:
    data = copy.deepcopy(_rq2_data())
    plant(data)
    assert rq2_mismatches(expand_arms(parse_spec(data))) != []


# ---------------------------------------------------------------- ego collapse
# The paper: impostors restricted to ego state, ten games over the two RQ1 backbones.
# Our reading: five games each, crew = RQ1's crew baseline, impostors = that
# configuration with ego state (grid id 20, RQ2 case 1A's).
EGO_IMPOSTOR = Side("semantic", "llm", "on", "reactive", "minimal", state="ego")
EGO_CREW = RQ1_CREWS["sem-rea"]


def ego_mismatches(arms: list[Arm]) -> list[str]:
    """How the arms differ from the ego-collapse run as the spec's header reads it."""
    bad: list[str] = []
    if [a.name for a in arms] != list(RQ1_BACKBONES):
        bad.append(f"arms {[a.name for a in arms]}, not one per backbone")
    for arm in arms:
        bad += _common(arm)
        if _side(arm.config.impostor) != EGO_IMPOSTOR:
            bad.append(f"{arm.name}: impostor {_side(arm.config.impostor)}")
        if _side(arm.config.crew) != EGO_CREW:
            bad.append(f"{arm.name}: crew {_side(arm.config.crew)}")
        backends = {side_backend(arm.config.crew), side_backend(arm.config.impostor)}
        if backends != {RQ1_BACKBONES.get(arm.name, "?")}:
            bad.append(f"{arm.name}: backends {backends}")
    return bad


def test_ego_collapse_is_ten_games_of_ego_impostors() -> None:
    spec = load_spec(EXPERIMENTS / "ego_collapse.yaml")
    arms = expand_arms(spec)
    assert ego_mismatches(arms) == []
    assert len(arms) * len(spec.seed_list()) == 10
    assert arms[0].config.impostor.args["spec"]["ego_view"] == "reference"


def test_ego_check_catches_privileged_impostors() -> None:
    data = yaml.safe_load((EXPERIMENTS / "ego_collapse.yaml").read_text())
    data["base"]["impostor"]["spec"]["state"] = "privileged"
    assert ego_mismatches(expand_arms(parse_spec(data))) != []


# ---------------------------------------------------------------- dry runs
def _dry_run(name: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["tournament", str(EXPERIMENTS / name), "--dry-run"]) == 0
    return capsys.readouterr().out.splitlines()


def _arm_lines(lines: list[str], arm_names: list[str]) -> dict[str, str]:
    rows = {line.split()[0]: line for line in lines if line.split()}
    return {name: rows[name] for name in arm_names}


_COST = re.compile(r"\$\d[\d,]*\.\d\d")


@pytest.mark.parametrize(
    ("name", "head"),
    [
        ("rq1.yaml", "64 arm(s) x 3 paired seed(s) = 192 games"),
        ("ego_collapse.yaml", "2 arm(s) x 5 paired seed(s) = 10 games"),
    ],
)
def test_dry_run_prices_every_arm_of_the_self_play_specs(
    name: str, head: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _dry_run(name, capsys)
    assert head in lines[0]
    arms = [a.name for a in expand_arms(load_spec(EXPERIMENTS / name))]
    for arm, line in _arm_lines(lines, arms).items():
        assert _COST.search(line) and "unknown" not in line, (arm, line)
        assert line.endswith("a game"), line
    total = next(line for line in lines if line.startswith("total"))
    assert _COST.search(total) and "unknown" not in total and "worker(s)" in total
    assert any(line.startswith("per game: $") for line in lines)


def test_dry_run_of_rq2_prices_the_priced_models_and_names_the_rest(
    rq2_arms: list[Arm], capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _dry_run("rq2.yaml", capsys)
    assert "576 arm(s) x 2 paired seed(s) = 1152 games" in lines[0]
    rows = _arm_lines(lines, [a.name for a in rq2_arms])
    for arm in rq2_arms:
        line = rows[arm.name]
        unpriced = {arm.labels["crew_model"], arm.labels["impostor_model"]} & UNPRICED
        if unpriced:
            assert "unknown" in line and "no price for" in line, line
        else:
            assert _COST.search(line) and "unknown" not in line, line
        assert line.endswith("a game"), line
    total = next(line for line in lines if line.startswith("total"))
    assert "unknown (>= $" in total and "worker(s)" in total
    unknown = next(line for line in lines if line.startswith("unknown prices:"))
    assert unknown.count("openai-compatible:") == len(UNPRICED) == 2
