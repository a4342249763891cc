"""A fake-world study of two arms that differ only in one impostor axis (offline ARIA),
annotated, analysed and collected: every table knows both arms, the model and the axis."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from controller.cli import main
from testkit.games import GameStore

ARIA = {"agent": "aria", "args": {"backend": "fake"}}
SPEC = {
    "name": "planning-axis",
    "world": "fake",
    "seeds": [1, 2],
    "base": {"frames": "off", "rules": {"max_steps": 24}, "crew": ARIA, "impostor": ARIA},
    "sweep": {"axes": {"impostor.args.spec.planning": ["reactive", "hierarchical"]}},
}
ARMS = {"planning=reactive", "planning=hierarchical"}


@pytest.fixture(scope="module")
def study(fake_games: GameStore) -> Path:
    """The study played by the run's store (`mineamongus tournament`), annotated in a
    private copy once per run (`GameStore.built`: read by every worker, written by none)."""

    def build(base: Path) -> None:
        out = fake_games.copy_study_to(base / "study", SPEC)
        assert main(["annotate", str(out), "--judge", "none", "--quiet"]) == 0

    return fake_games.built("study-axes-annotated", build) / "study"


def _check_axis_tables(tables: Path) -> pd.DataFrame:
    games = pd.read_parquet(tables / "games.parquet")
    assert set(games["impostor_model"]) == {"fake"} and set(games["crew_model"]) == {"fake"}
    assert set(games["impostor.planning"]) == {"reactive", "hierarchical"}
    assert games.groupby("arm")["impostor.planning"].nunique().eq(1).all()
    marg = pd.read_parquet(tables / "axis_marginals.parquet")
    assert set(marg["axis"]) == {"impostor.planning"}  # the one axis that varies
    assert set(marg["level"]) == {"reactive", "hierarchical"}
    logit = pd.read_parquet(tables / "logit.parquet")
    assert logit["term"].astype(str).str.contains("impostor.planning").any(), logit
    return games


def test_analysis_names_both_arms_the_model_and_the_axis(study: Path, tmp_path: Path) -> None:
    out = tmp_path / "analysis"
    assert main(["analyze", str(study), "--out", str(out)]) == 0
    games = _check_axis_tables(out / "tables")
    assert set(games["arm"]) == ARMS
    mism = pd.read_parquet(out / "tables" / "facts_mismatch.parquet")
    # log and table agree on every fact: compared as typed values (`done` is `ok`, 66 is
    # 66.0), so there is no false disagreement to report
    assert mism.empty, mism
    per_model = pd.read_parquet(out / "tables" / "per_model.parquet")
    assert "fake" in set(per_model.astype(str).stack())
    report = (out / "report.md").read_text()
    for name in (*ARMS, "impostor.planning", "fake"):
        assert name in report, name


def test_arms_stay_apart_without_the_study_tables(study: Path, tmp_path: Path) -> None:
    """Copied out of the study (no games.parquet, no arm folders), the games still split
    into two arms by the record alone."""
    flat = tmp_path / "flat"
    for i, run in enumerate(sorted(study.glob("games/*/seed*-try*"))):
        shutil.copytree(run, flat / f"g{i}")
    out = tmp_path / "analysis"
    assert main(["analyze", str(flat), "--out", str(out)]) == 0
    games = _check_axis_tables(out / "tables")
    assert games["arm"].nunique() == 2
    for arm, group in games.groupby("arm"):
        (level,) = set(group["impostor.planning"])
        assert f"/{level}/" in str(arm) and "imp=fake" in str(arm)


def test_collect_carries_models_and_axes(study: Path, tmp_path: Path) -> None:
    study = Path(shutil.copytree(study, tmp_path / "study"))  # `collect` writes into it
    assert main(["collect", str(study)]) == 0
    games = pd.read_parquet(study / "results" / "games.parquet")
    seats = pd.read_parquet(study / "results" / "seats.parquet")
    assert set(games["arm"]) == ARMS
    assert set(games["impostor_model"]) == {"fake"} and set(games["impostor_agent"]) == {"aria"}
    for arm, group in games.groupby("arm"):
        assert set(group["impostor.planning"]) == {str(arm).split("=", 1)[1]}
        assert set(group["crew.planning"]) == {"reactive"}
    assert {"harness_errors", "invalid_decisions"} <= set(games.columns)
    imps = seats[seats["role"] == "impostor"]
    for arm, group in imps.groupby("arm"):
        assert set(group["planning"]) == {str(arm).split("=", 1)[1]}
    assert set(seats["model"]) == {"fake"} and {"harness_errors", "cost_usd"} <= set(seats.columns)
