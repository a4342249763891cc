"""Experiment specs, arm expansion and the dry-run estimate."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.cli import main
from controller.config import SideConfig
from controller.tournament.estimate import arm_estimate, side_backend
from controller.tournament.spec import SpecError, expand_arms, load_spec, parse_spec
from harness_aria.backends.settings import DEFAULT_PRICES
from harness_aria.spec import AriaSpec

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "configs" / "experiments"


def _aria(side: SideConfig) -> AriaSpec:
    """The ARIA spec a side's agents play with."""
    return AriaSpec.model_validate(side.args["spec"])


def _spec(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": "t", "world": "fake", "seeds": [1, 2]}
    data.update(over)
    return data


@pytest.mark.parametrize(
    ("name", "arms", "games"), [("smoke", 2, 4), ("rq1", 64, 192), ("rq2", 576, 1152)]
)
def test_shipped_specs_have_the_papers_sizes(name: str, arms: int, games: int) -> None:
    spec = load_spec(EXPERIMENTS / f"{name}.yaml")
    expanded = expand_arms(spec)
    assert len(expanded) == arms
    assert len(expanded) * len(spec.seed_list()) == games


def test_smoke_is_scripted_quick_on_the_embedded_server() -> None:
    spec = load_spec(EXPERIMENTS / "smoke.yaml")
    assert spec.world == "minecraft" and spec.preset == "quick"
    for arm in expand_arms(spec):
        assert side_backend(arm.config.crew) == side_backend(arm.config.impostor) == "scripted"
        assert arm.config.preset == "quick"


def test_rq1_fixes_the_crew_and_varies_four_impostor_axes() -> None:
    arms = expand_arms(load_spec(EXPERIMENTS / "rq1.yaml"))
    crews = {(_aria(a.config.crew).reflection, _aria(a.config.crew).prompt) for a in arms}
    assert crews == {("on", "minimal")}
    imps = {
        (s.memory, s.planning, s.reflection, s.prompt)
        for s in (_aria(a.config.impostor) for a in arms)
    }
    assert len(imps) == 16
    assert {side_backend(a.config.crew) for a in arms} == {
        side_backend(a.config.impostor) for a in arms
    }


def test_paired_seeds_arms_differ_only_in_the_swept_value() -> None:
    spec = parse_spec(
        _spec(
            base={"rules": {"max_steps": 9}, "impostor": {"backend": "fake"}},
            sweep={"axes": {"impostor.spec.memory": ["window", "semantic"]}},
        )
    )
    a, b = expand_arms(spec)
    da, db = a.game_data(7), b.game_data(7)
    assert da["seed"] == db["seed"] == 7
    assert da["impostor"]["spec"]["memory"] == "window"
    assert db["impostor"]["spec"]["memory"] == "semantic"
    da["impostor"]["spec"].pop("memory")
    db["impostor"]["spec"].pop("memory")
    assert da == db
    # Roles and tasks are drawn from the seed alone, so both arms seat the same roles.
    assert a.config.model_copy(update={"seed": 7}).seed == 7


def test_named_axes_round_robin_and_control_arm() -> None:
    spec = parse_spec(
        _spec(
            sweep={
                "axes": {
                    "side": [
                        {
                            "label": "x",
                            "set": {
                                "crew": {"backend": "fake", "spec": {"planning": "hierarchical"}}
                            },
                        },
                        {
                            "label": "y",
                            "set": {"crew": {"backend": "fake", "spec": {"planning": "reactive"}}},
                        },
                    ]
                }
            },
            round_robin={
                "models": ["fake:a", "fake:b"],
                "pairs": [{"label": "p", "crew": {"memory": "window"}}],
            },
            control=True,
        )
    )
    arms = {a.name: a for a in expand_arms(spec)}
    assert set(arms) == {
        "x",
        "y",
        "c=a-i=a-p",
        "c=a-i=b-p",
        "c=b-i=a-p",
        "c=b-i=b-p",
        "control",
    }
    assert _aria(arms["x"].config.crew).planning == "hierarchical"
    assert side_backend(arms["c=a-i=b-p"].config.crew) == "fake:a"
    assert side_backend(arms["c=a-i=b-p"].config.impostor) == "fake:b"
    assert _aria(arms["c=a-i=b-p"].config.crew).memory == "window"
    assert side_backend(arms["control"].config.crew) == "scripted"


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"name": "t", "arms": [{"name": "a"}]}, "seeds"),
        (_spec(sweeps={"axes": {}}), "sweeps"),
        (_spec(seeds=[1, 1], control=True), "repeats a seed"),
        (_spec(control=True, runner={"workers": 0}), "runner.workers"),
        (_spec(), "no arms"),
    ],
)
def test_a_bad_spec_names_the_field(data: dict[str, Any], named: str) -> None:
    with pytest.raises(SpecError, match=named.replace(".", r"\.")):
        parse_spec(data)


def test_a_bad_arm_names_the_arm_and_the_config_field() -> None:
    spec = parse_spec(_spec(arms=[{"name": "short", "overrides": {"rules": {"max_steps": 0}}}]))
    with pytest.raises(SpecError, match=r"(?s)arm .short.*rules\.max_steps"):
        expand_arms(spec)


def test_duplicate_arms_and_bad_axis_values_are_refused() -> None:
    dup = parse_spec(_spec(arms=[{"name": "a"}, {"name": "a"}]))
    with pytest.raises(SpecError, match="appears twice"):
        expand_arms(dup)
    bad = parse_spec(_spec(sweep={"axes": {"side": [{"label": "x"}]}}))
    with pytest.raises(SpecError, match=r"sweep\.axes\.side\[0\]"):
        expand_arms(bad)
    seeded = parse_spec(_spec(arms=[{"name": "a", "overrides": {"seed": 3}}]))
    with pytest.raises(SpecError, match="seed"):
        expand_arms(seeded)


def test_estimate_prices_known_models_and_never_prices_unknown_ones_at_zero() -> None:
    spec = parse_spec(
        _spec(
            arms=[
                {
                    "name": "mini",
                    "overrides": {
                        "crew": {"backend": "openai:gpt-4.1-mini"},
                        "impostor": {"backend": "openai:gpt-4.1-mini"},
                    },
                },
                {"name": "mystery", "overrides": {"impostor": {"backend": "openai:no-such"}}},
            ],
            estimate={
                "decisions_per_game": 100,
                "tokens_in_per_decision": 1000,
                "tokens_out_per_decision": 250,
            },
        )
    )
    mini, mystery = expand_arms(spec)
    e = arm_estimate(mini, 2, spec.estimate)
    price = DEFAULT_PRICES["gpt-4.1-mini"]
    per_game = (100 * 1000 * price.input_per_mtok + 100 * 250 * price.output_per_mtok) / 1e6
    assert e.cost_usd == pytest.approx(2 * per_game)
    assert e.tokens_in == pytest.approx(2 * 100 * 1000)
    m = arm_estimate(mystery, 2, spec.estimate)
    assert m.cost_usd is None and m.unknown_prices == ("openai:no-such",)
    # The scripted crew costs nothing; only the impostor side is unpriced.
    assert m.tokens_in == pytest.approx(2 * 100 * 1000 * 2 / 8)


def test_dry_run_prints_arms_games_and_cost(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tournament", str(EXPERIMENTS / "rq1.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "64 arm(s) x 3 paired seed(s) = 192 games" in out
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert "$" in total and "unknown" not in total
    assert main(["tournament", str(EXPERIMENTS / "rq2.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "= 1152 games" in out
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert "unknown" in total and "$0.00" not in total


def test_dry_run_of_a_broken_spec_exits_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nseeds: [1]\ncontrol: true\nrunner: {retries: -1}\n")
    assert main(["tournament", str(bad), "--dry-run"]) == 2
    assert "runner.retries" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"seeds": [1, -1]}, "seeds.1"),
        ({"seeds": None, "repetitions": 2, "seed_start": -2}, "seed_start"),
    ],
)
def test_a_negative_seed_is_refused_naming_the_field(over: dict[str, Any], field: str) -> None:
    # Seeds are non-negative, as `GameConfig.seed` (-1 would draw the game of seed 1).
    with pytest.raises(
        SpecError, match=rf"{re.escape(field)}: Input should be greater than or equal to 0"
    ):
        parse_spec(_spec(control=True, **over))
    assert parse_spec(_spec(control=True, seeds=[0, 5])).seed_list() == [0, 5]


def _rr(**over: Any) -> dict[str, Any]:
    rr: dict[str, Any] = {
        "models": ["fake:a", "fake:b", "fake:c"],
        "pairs": [
            {"label": "X", "crew": {"memory": "window"}},
            {"label": "Y", "impostor": {"planning": "hierarchical"}},
        ],
    }
    rr.update(over)
    return _spec(round_robin=rr)


def test_impostor_major_round_robin_numbers_matchups_per_case() -> None:
    arms = expand_arms(parse_spec(_rr(order="impostor_major")))
    names = [a.name for a in arms]
    models = ["a", "b", "c"]
    expected = [
        f"{case}-k{i * 3 + j:03d}-i={imp}-c={crew}"
        for case in ("X", "Y")
        for i, imp in enumerate(models)
        for j, crew in enumerate(models)
    ]
    assert names == expected
    assert sorted(names) == names  # folders list in the study's order
    k5 = {a.name: a for a in arms}["Y-k005-i=b-c=c"]
    assert side_backend(k5.config.impostor) == "fake:b"
    assert side_backend(k5.config.crew) == "fake:c"
    assert _aria(k5.config.impostor).planning == "hierarchical"
    assert k5.labels == {"case": "Y", "matchup": "5", "crew_model": "c", "impostor_model": "b"}
    # The same k pairs the same models in every case.
    for a in arms:
        twin = next(b for b in arms if b.labels["matchup"] == a.labels["matchup"] and b is not a)
        assert side_backend(twin.config.crew) == side_backend(a.config.crew)
        assert side_backend(twin.config.impostor) == side_backend(a.config.impostor)


def test_crew_major_is_still_the_default_order_and_labels_its_arms() -> None:
    arms = expand_arms(parse_spec(_rr()))
    assert [a.name for a in arms][:4] == ["c=a-i=a-X", "c=a-i=a-Y", "c=a-i=b-X", "c=a-i=b-Y"]
    # k = impostor index * number of crew models + crew index, whatever the order
    assert {a.name: a.labels["matchup"] for a in arms}["c=a-i=b-X"] == "3"
    single = expand_arms(parse_spec(_spec(round_robin={"models": ["fake:a"]})))
    assert [a.name for a in single] == ["c=a-i=a"]
    assert single[0].labels["case"] == "default"
    one = expand_arms(
        parse_spec(_spec(round_robin={"models": ["fake:a"], "order": "impostor_major"}))
    )
    assert [a.name for a in one] == ["k000-i=a-c=a"]


def test_a_round_robin_model_brings_its_side_values_to_whichever_side_plays_it() -> None:
    served = {
        "backend": "openai-compatible:org/m",
        "label": "m",
        "side": {
            "base_url": "http://127.0.0.1:9/v1",
            "settings": {"prices": {"org/m": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}},
        },
    }
    spec = parse_spec(_spec(round_robin={"models": [served, "fake:a"], "order": "impostor_major"}))
    arms = {a.name: a for a in expand_arms(spec)}
    assert set(arms) == {"k000-i=m-c=m", "k001-i=m-c=a", "k002-i=a-c=m", "k003-i=a-c=a"}
    arm = arms["k002-i=a-c=m"]
    assert arm.config.crew.args["base_url"] == "http://127.0.0.1:9/v1"
    assert arm.config.crew.args["settings"]["prices"]["org/m"]["input_per_mtok"] == 1.0
    assert arm.config.impostor.args["base_url"] is None
    assert side_backend(arm.config.impostor) == "fake:a"


@pytest.mark.parametrize(
    ("rr", "named"),
    [
        ({"models": ["fake:a", "fake:a"]}, "models: a appear"),
        ({"models": ["fake:a", {"backend": "fake:b", "label": "a"}]}, "models: a appear"),
        ({"models": ["fake:a"], "pairs": [{"label": "p"}, {"label": "p"}]}, "pairs: label"),
        ({"models": ["fake:a"], "order": "sideways"}, "round_robin.order"),
    ],
)
def test_a_round_robin_that_would_repeat_arms_is_refused(rr: dict[str, Any], named: str) -> None:
    with pytest.raises(SpecError, match=named):
        parse_spec(_spec(round_robin=rr))


def test_every_source_labels_its_arms_and_labels_leave_the_digest_alone() -> None:
    spec = parse_spec(
        _spec(
            arms=[{"name": "own", "labels": {"who": "me"}}],
            sweep={
                "axes": {
                    "size": [{"label": "small", "set": {"rules": {"max_steps": 9}}}],
                    "rules.kill_cooldown_ticks": [100, 160],
                    "rules.ghost_tasks": [False],
                }
            },
            control=True,
        )
    )
    arms = {a.name: a for a in expand_arms(spec)}
    assert arms["own"].labels == {"who": "me"}
    assert arms["small-kill_cooldown_ticks=100-ghost_tasks=False"].labels == {
        "size": "small",
        "rules.kill_cooldown_ticks": "100",
        "rules.ghost_tasks": "false",
    }
    assert arms["control"].labels == {}
    relabelled = arms["own"].model_copy(update={"labels": {"who": "you"}})
    assert relabelled.digest() == arms["own"].digest()


def _labelled_study(tmp_path: Path, labels: bool = True) -> Path:
    """A study folder of a labelled round robin with one done game per arm."""
    from controller.tournament.runner import open_study

    spec = _rr(order="impostor_major")
    spec.update(seeds=[1], control=True)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "study"
    _spec_, arms, manifest, _notes = open_study(path, out, extend=False)
    if not labels:  # a manifest written before labels existed
        data = json.loads((out / "manifest.json").read_text())
        del data["labels"]
        (out / "manifest.json").write_text(json.dumps(data))
    for arm in arms:
        run = out / "games" / arm.name / "seed1-try1"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps({"status": "ok", "winner": "crew"}))
    return out


def test_collect_carries_every_arms_design_labels_as_columns(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from controller.tournament.collect import collect

    out = _labelled_study(tmp_path)
    tables = collect(out)
    games = pq.read_table(tables.games)
    design = [c for c in games.column_names if c.startswith("design.")]
    assert design == ["design.case", "design.matchup", "design.crew_model", "design.impostor_model"]
    assert str(games.schema.field("design.matchup").type) == "int64"
    assert str(games.schema.field("design.case").type) == "string"
    rows = {r["arm"]: r for r in games.to_pylist()}
    assert rows["Y-k005-i=b-c=c"]["design.matchup"] == 5
    assert rows["Y-k005-i=b-c=c"]["design.case"] == "Y"
    assert rows["Y-k005-i=b-c=c"]["design.impostor_model"] == "b"
    # The control arm has no labels: null, not a made-up value.
    assert rows["control"]["design.case"] is None and rows["control"]["design.matchup"] is None
    seats = pq.read_table(tables.seats)
    assert "design.case" in seats.column_names


def test_a_study_without_labels_collects_without_design_columns(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from controller.tournament.collect import collect
    from controller.tournament.manifest import read_manifest
    from controller.tournament.runner import open_study

    out = _labelled_study(tmp_path, labels=False)
    games = pq.read_table(collect(out).games)
    assert games.num_rows == 19
    assert not [c for c in games.column_names if c.startswith("design.")]
    # Resuming such a study with the spec gives its manifest the labels.
    manifest = read_manifest(out)
    assert manifest is not None and manifest.labels == {}
    open_study(tmp_path / "spec.yaml", out, extend=False)
    manifest = read_manifest(out)
    assert manifest is not None
    assert manifest.labels["X-k000-i=a-c=a"]["case"] == "X"
    assert "design.case" in pq.read_table(collect(out).games).column_names
