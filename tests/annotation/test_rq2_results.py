"""The RQ2 results on synthetic round robins with planted structure, checked against
computations done here by hand (groupby and scipy), and on degenerate studies."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure as MplFigure
from scipy import stats as st
from statsmodels.stats.proportion import proportion_confint

from annotation.deception.codebook import codebook
from annotation.report import rq2
from annotation.report.document import Figure, Section, Table, Warning_
from annotation.report.results import RESULTS, ResultOutput, StudyData, study_design
from annotation.rq2_stats import model_win_rates as stats_model_win_rates

BOOK = codebook()
LETTERS = BOOK.letters
NAMES = [
    "rq2.model_win_rates",
    "rq2.win_rate_correlation",
    "rq2.top_worst",
    "rq2.cluster_shares",
    "rq2.cluster_share_correlation",
]
MODELS = [f"m{i}" for i in range(7)]
IMP_STRENGTH = [8, 7, 6, 5, 3, 2, 1]
"""Wins out of 8 against a crew of strength 0; strictly decreasing, so m0 ranks first."""
CREW_STRENGTH = [3, 2, 2, 1, 1, 0, 0]
"""What a model subtracts from the impostor's wins when it is the crew."""
A_LEVEL = [12, 9, 10, 0, 2, 1, 0]
"""Planted atom A per game: high for the top models, low for the worst."""
B_LEVEL = [2, 3, 2, 0, 8, 9, 10]
"""Planted atom B per game: the reverse."""


def _games(models: list[str], imp: list[int], crew: list[int]) -> pd.DataFrame:
    rows = []
    for i, mi in enumerate(models):
        for j, mj in enumerate(models):
            wins = int(np.clip(imp[i] - crew[j], 0, 8))
            for case in range(4):
                for rep in range(2):
                    slot = case * 2 + rep
                    rows.append(
                        {
                            "game_id": f"{mi}-{mj}-{case}-{rep}",
                            "impostor_model": mi,
                            "crew_model": mj,
                            "impostor_win": int(slot < wins),
                            "seed": 100 + slot,
                            "arm": f"case{case}",
                            "design.case": f"case{case}",
                            "design.matchup": f"{mi}_vs_{mj}",
                        }
                    )
    return pd.DataFrame(rows)


def _counts(games: pd.DataFrame) -> pd.DataFrame:
    """Atoms for the games of every model but m3 (not annotated), minus two of m0's games,
    plus a row for a game the study does not have."""
    level = dict(zip(MODELS, zip(A_LEVEL, B_LEVEL, strict=True), strict=True))
    rows = {}
    for k, g in enumerate(games.itertuples(index=False)):
        model = str(g.impostor_model)
        if model == "m3":
            continue
        a, b = level[model]
        win = int(g.impostor_win)
        row = dict.fromkeys(LETTERS, 0)
        row["A"] = a + k % 3
        row["B"] = b + win
        row["E"] = win
        row["Q"] = int(model in ("m5", "m6") and not win)
        row["M"] = 2 + k % 2
        row["H"] = k % 2
        row["T"] = int(k % 4 == 0)
        row["V"] = 1 + int(k % 5 == 0)
        rows[str(g.game_id)] = row
    frame = pd.DataFrame.from_dict(rows, orient="index")[LETTERS]
    frame = frame.drop(index=["m0-m0-0-0", "m0-m1-0-0"])
    frame.loc["ghost"] = 50
    frame.index.name = "game_id"
    return frame.astype(int)


def _data(
    tmp_path: Path,
    games: pd.DataFrame,
    counts: pd.DataFrame,
    filtered: pd.DataFrame | None = None,
) -> StudyData:
    return StudyData(
        games=games,
        findings=pd.DataFrame(columns=["game_id", "atom"]),
        counts=counts,
        counts_source="judge:fake",
        counts_filtered=filtered,
        book=BOOK,
        out=tmp_path,
        figdir=tmp_path / "figures",
        n_boot=50,
        seed=0,
    )


@pytest.fixture
def study(tmp_path: Path) -> StudyData:
    games = _games(MODELS, IMP_STRENGTH, CREW_STRENGTH)
    return _data(tmp_path, games, _counts(games))


def _run(name: str, data: StudyData) -> ResultOutput:
    return RESULTS[name].fn(data)


def _warnings(out: ResultOutput) -> list[str]:
    return [b.text for s in out.sections for b in s.blocks if isinstance(b, Warning_)]


def _annotated(data: StudyData) -> pd.DataFrame:
    """By hand: the counts of the games the study has, with their impostor model."""
    model = data.games.set_index("game_id")["impostor_model"]
    return data.counts.join(model, how="inner")


# ---------------------------------------------------------------------- registry
def test_results_are_registered_for_rq2_only(study: StudyData) -> None:
    for name in NAMES:
        assert RESULTS[name].designs == ("rq2",)
        assert RESULTS[name].title
    assert study_design(study.games) == "rq2"


# ---------------------------------------------------------------------- win rates
def test_model_win_rates_match_hand_counts(study: StudyData) -> None:
    out = _run("rq2.model_win_rates", study)
    table = out.tables["rq2_model_win_rates"]
    g = study.games
    imp = g.groupby("impostor_model")["impostor_win"].agg(["size", "sum", "mean"])
    crew = g.groupby("crew_model")["impostor_win"].agg(["size", "sum"])
    t = table.set_index("model")
    for m in MODELS:
        assert t.at[m, "impostor_games"] == imp.at[m, "size"] == 56
        assert t.at[m, "impostor_wins"] == imp.at[m, "sum"]
        assert t.at[m, "impostor_win_rate"] == pytest.approx(imp.at[m, "mean"])
        assert t.at[m, "crew_wins"] == crew.at[m, "size"] - crew.at[m, "sum"]
        assert t.at[m, "crew_win_rate"] == pytest.approx(1 - crew.at[m, "sum"] / crew.at[m, "size"])
        for side in ("impostor", "crew"):
            lo, hi = t.at[m, f"{side}_ci_low"], t.at[m, f"{side}_ci_high"]
            assert lo <= t.at[m, f"{side}_win_rate"] <= hi
    assert list(table["model"]) == MODELS  # sorted by impostor win rate
    assert list(table["rank"]) == [1, 2, 3, 4, 5, 6, 7]
    assert list(table["group"]) == ["top"] * 3 + [""] + ["worst"] * 3
    (warning,) = _warnings(out)  # 8 seeds shared by all games: few clusters
    assert "8 seed cluster(s)" in warning
    assert isinstance(out.sections[0], Section)
    assert any(isinstance(b, Table) for b in out.sections[0].blocks)


def test_interval_is_wilson_without_shared_seeds(study: StudyData) -> None:
    games = study.games.assign(seed=range(len(study.games)))
    study.games = games
    assert not _warnings(_run("rq2.model_win_rates", study))
    table = stats_model_win_rates(games).set_index("model")
    w = int(table.at["m2", "impostor_wins"])
    lo, hi = proportion_confint(w, 56, method="wilson")
    assert table.at["m2", "impostor_ci_low"] == pytest.approx(lo)
    assert table.at["m2", "impostor_ci_high"] == pytest.approx(hi)
    assert table.at["m2", "ci_method"] == "wilson"


def test_tie_across_group_boundary_is_flagged(tmp_path: Path) -> None:
    # m2 and m3 get the same impostor strength: a tie across the top-3 boundary.
    games = _games(MODELS, [8, 7, 5, 5, 3, 2, 1], CREW_STRENGTH)
    out = _run("rq2.model_win_rates", _data(tmp_path, games, _counts(games)))
    t = out.tables["rq2_model_win_rates"].set_index("model")
    assert "boundary" in t.at["m2", "note"] and "boundary" in t.at["m3", "note"]
    assert "boundary" not in t.at["m0", "note"]
    assert t.at["m2", "group"] == "top" and t.at["m3", "group"] == ""  # by name
    assert any("tie" in w for w in _warnings(out))


def test_win_rate_correlation_and_scatter(study: StudyData) -> None:
    out = _run("rq2.win_rate_correlation", study)
    row = out.tables["rq2_win_rate_correlation"].iloc[0]
    g = study.games
    imp = g.groupby("impostor_model")["impostor_win"].mean()
    crew = 1 - g.groupby("crew_model")["impostor_win"].mean()
    want = st.pearsonr(imp[MODELS], crew[MODELS])
    assert row["r"] == pytest.approx(want.statistic)
    assert row["r"] > 0.5  # planted: strong models are strong in both roles
    assert row["p"] == pytest.approx(want.pvalue)
    assert row["n_models"] == 7
    assert row["ci_low"] < row["r"] < row["ci_high"]
    z, se = math.atanh(want.statistic), 1 / math.sqrt(7 - 3)
    assert row["ci_low"] == pytest.approx(math.tanh(z - 1.959964 * se), abs=1e-5)
    assert row["paper_r"] == 0.71 and row["paper_p"] == 0.01
    assert out.figures == [study.figdir / "rq2_win_rates.png"]
    assert not _warnings(out)  # 7 models: no small-sample warning


# ---------------------------------------------------------------------- top vs worst
def test_top_worst_matches_hand_computation(study: StudyData) -> None:
    out = _run("rq2.top_worst", study)
    table = out.tables["rq2_top_worst"].set_index("atom")
    assert list(table.index) == LETTERS
    assert "rq2_top_worst_filtered" not in out.tables
    ann = _annotated(study)
    assert "ghost" not in ann.index and len(ann) == 6 * 56 - 2
    top, worst = ["m0", "m1", "m2"], ["m4", "m5", "m6"]
    wr = study.games.groupby("impostor_model")["impostor_win"].mean()[top + worst]
    means = ann.groupby("impostor_model")[LETTERS].mean().loc[top + worst]
    for atom in ("A", "B", "E", "Q", "M"):
        want = st.pearsonr(means[atom], wr)
        assert table.at[atom, "r"] == pytest.approx(want.statistic), atom
        assert table.at[atom, "p"] == pytest.approx(want.pvalue), atom
        t_mean = ann.loc[ann["impostor_model"].isin(top), atom].mean()
        w_mean = ann.loc[ann["impostor_model"].isin(worst), atom].mean()
        assert table.at[atom, "top_mean"] == pytest.approx(t_mean)
        assert table.at[atom, "worst_mean"] == pytest.approx(w_mean)
        assert table.at[atom, "ratio"] == pytest.approx(t_mean / w_mean)
        lo, hi = table.at[atom, "ci_low"], table.at[atom, "ci_high"]
        assert lo <= table.at[atom, "r"] <= hi
    assert table.at["A", "r"] > 0.9 and table.at["B", "r"] < -0.9  # planted
    assert table.at["A", "ratio"] > 5
    assert (table["n_models"] == 6).all()
    assert table.at["A", "top_games"] == 3 * 56 - 2 and table.at["A", "worst_games"] == 168
    # Q only in the worst group: ratio 0; C nowhere: no ratio, and said so.
    assert table.at["Q", "ratio"] == 0
    assert math.isnan(table.at["C", "ratio"]) and "neither group" in table.at["C", "note"]
    assert math.isnan(table.at["C", "r"]) and "undefined" in table.at["C", "note"]
    assert table.at["A", "paper_r"] == 0.72 and table.at["A", "paper_top_mean"] == 12.64
    assert table.at["A", "paper_ratio"] == 6.6
    assert math.isnan(table.at["C", "paper_r"])


def test_top_only_atom_gets_infinite_ratio(study: StudyData) -> None:
    counts = study.counts.copy()
    model = study.games.set_index("game_id")["impostor_model"].reindex(counts.index)
    counts["K"] = model.isin(["m0", "m1"]).astype(int).to_numpy()
    study.counts = counts
    table = _run("rq2.top_worst", study).tables["rq2_top_worst"].set_index("atom")
    assert table.at["K", "ratio"] == math.inf
    assert "only the top group" in table.at["K", "note"]


def test_filtered_counts_add_filtered_tables(study: StudyData) -> None:
    filtered = study.counts.copy()
    filtered["A"] = 0
    study.counts_filtered = filtered
    tw = _run("rq2.top_worst", study)
    assert set(tw.tables) == {"rq2_top_worst", "rq2_top_worst_filtered"}
    f = tw.tables["rq2_top_worst_filtered"].set_index("atom")
    assert f.at["A", "top_mean"] == 0 and math.isnan(f.at["A", "ratio"])
    assert tw.tables["rq2_top_worst"].set_index("atom").at["A", "top_mean"] > 5
    shares = _run("rq2.cluster_shares", study)
    assert set(shares.tables) == {"rq2_cluster_shares", "rq2_cluster_shares_filtered"}
    assert len(shares.figures) == 2
    corr = _run("rq2.cluster_share_correlation", study)
    assert set(corr.tables) == {
        "rq2_cluster_share_correlation",
        "rq2_cluster_share_correlation_filtered",
    }
    assert len(corr.sections) == 2


# ---------------------------------------------------------------------- clusters
def test_cluster_shares_match_hand_computation(study: StudyData) -> None:
    out = _run("rq2.cluster_shares", study)
    shares = out.tables["rq2_cluster_shares"]
    ann = _annotated(study)
    by_cluster = pd.DataFrame(
        {
            cid: ann[[a.letter for a in BOOK.atoms if a.cluster == cid]].sum(axis=1)
            for cid in BOOK.clusters
        }
    )
    totals = by_cluster.groupby(ann["impostor_model"]).sum()
    assert sorted(shares["model"].unique()) == sorted(totals.index)  # m3 not annotated
    for (model, cid), share in shares.set_index(["model", "cluster"])["share"].items():
        assert share == pytest.approx(totals.at[model, cid] / totals.loc[model].sum())
    sums = shares.groupby("model")["share"].sum()
    assert np.allclose(sums, 1.0)
    a = shares.set_index(["model", "cluster"])
    assert a.at[("m0", "NV-1"), "share"] > a.at[("m6", "NV-1"), "share"]  # planted A
    assert out.figures == [study.figdir / "rq2_cluster_shares.png"]


def test_cluster_share_correlation_matches_hand_computation(study: StudyData) -> None:
    out = _run("rq2.cluster_share_correlation", study)
    table = out.tables["rq2_cluster_share_correlation"]
    assert set(table["scope"]) == {"top+worst"}  # m3 has no annotated game
    shares = _run("rq2.cluster_shares", study).tables["rq2_cluster_shares"]
    six = shares[shares["group"].isin(["top", "worst"])]
    for row in table.itertuples():
        part = six[six["cluster"] == row.cluster]
        want = st.pearsonr(part["share"], part["impostor_win_rate"])
        assert math.isfinite(row.r)
        assert row.r == pytest.approx(want.statistic)
        assert row.n_models == 6
        assert row.ci_low <= row.r <= row.ci_high
        per_game = st.pearsonr(part["per_game"], part["impostor_win_rate"])
        assert row.r_per_game == pytest.approx(per_game.statistic)
        assert row.paper_r == rq2.PAPER_CLUSTER_R[row.cluster]


def test_all_models_scope_when_more_are_annotated(study: StudyData) -> None:
    counts = study.counts.copy()
    m3 = study.games.loc[study.games["impostor_model"] == "m3", "game_id"]
    extra = pd.DataFrame(0, index=pd.Index(m3, name="game_id"), columns=LETTERS)
    extra["L"] = 4
    study.counts = pd.concat([counts, extra])
    table = _run("rq2.cluster_share_correlation", study).tables["rq2_cluster_share_correlation"]
    assert list(table["scope"].unique()) == ["top+worst", "all annotated"]
    assert (table.loc[table["scope"] == "all annotated", "n_models"] == 7).all()


def test_paper_shares_give_back_the_paper_cluster_r(tmp_path: Path) -> None:
    """The paper's published shares and win rates, fed through the results, give back its
    cluster-level r: the share (not the per-game count) is the quantity it reports."""
    ids = {
        "Gemini-3-flash": "google/gemini-3-flash-preview",
        "Kimi-K2.5": "moonshot:kimi-k2.5",
        "Gemini-3.1-flash-lite": "gemini-3.1-flash-lite",
        "Gemini-2.5-flash": "gemini-2.5-flash",
        "Qwen3.5-9B": "qwen3.5-9b",
        "Gemma4-26B-A4B": "gemma4-26b-a4b",
    }
    names = list(ids)
    rows, counts = [], {}
    for i, name in enumerate(names):
        wins = round(rq2.PAPER_IMPOSTOR_WR[name] * 96)
        for k in range(96):
            gid = f"{name}-{k}"
            crew = ids[names[(i + 1 + k % 5) % 6]]
            rows.append(
                {
                    "game_id": gid,
                    "impostor_model": ids[name],
                    "crew_model": crew,
                    "impostor_win": int(k < wins),
                    "seed": k % 2,
                    "arm": "x",
                    "design.case": "1A",
                    "design.matchup": "x",
                }
            )
            row = dict.fromkeys(LETTERS, 0)
            if k == 0:  # the model's whole atom budget in one game: shares are exact
                for cid, pct in rq2.PAPER_CLUSTER_SHARES[name].items():
                    letter = next(a.letter for a in BOOK.atoms if a.cluster == cid)
                    row[letter] = round(pct * 10)
            counts[gid] = row
    data = _data(tmp_path, pd.DataFrame(rows), pd.DataFrame.from_dict(counts, orient="index"))
    rates = _run("rq2.model_win_rates", data).tables["rq2_model_win_rates"]
    assert list(rates["paper_group"]) == ["top"] * 3 + ["worst"] * 3
    assert list(rates["group"]) == list(rates["paper_group"])
    assert np.allclose(rates["impostor_win_rate"], rates["paper_impostor_win_rate"], atol=5e-4)
    table = _run("rq2.cluster_share_correlation", data).tables["rq2_cluster_share_correlation"]
    for row in table.itertuples():
        assert row.r == pytest.approx(row.paper_shares_r, abs=2e-3), row.cluster
        assert row.r == pytest.approx(row.paper_r, abs=0.02), row.cluster
    shares = _run("rq2.cluster_shares", data).tables["rq2_cluster_shares"]
    assert np.allclose(shares["share"], shares["paper_share"], atol=1e-3)


def test_paper_model_names() -> None:
    assert rq2.paper_model("openrouter:google/Gemini-3-Flash-Preview") == "Gemini-3-flash"
    assert rq2.paper_model("gemini-3.1-flash-lite") == "Gemini-3.1-flash-lite"
    assert rq2.paper_model("openai-compatible:google/gemma-4-26b-a4b-it") == "Gemma4-26B-A4B"
    assert rq2.paper_model("moonshotai/kimi-k2.5") == "Kimi-K2.5"
    assert rq2.paper_model("gemini-2.5-flash-lite") is None
    assert rq2.paper_model("google/gemma-4-31b-it") is None
    assert rq2.paper_model("openai-compatible:model-01") is None


# ---------------------------------------------------------------------- files
def test_figures_are_titled_nonempty_pngs(
    study: StudyData, monkeypatch: pytest.MonkeyPatch
) -> None:
    titles: dict[str, str] = {}
    real = MplFigure.savefig

    def spy(self: MplFigure, fname: Any, *args: Any, **kwargs: Any) -> None:
        titles[Path(fname).name] = self.axes[0].get_title()
        real(self, fname, *args, **kwargs)

    monkeypatch.setattr(MplFigure, "savefig", spy)
    paths: list[Path] = []
    for name in NAMES:
        out = _run(name, study)
        paths += out.figures
        shown = [b.path for s in out.sections for b in s.blocks if isinstance(b, Figure)]
        assert shown == out.figures
        assert all(b.caption for s in out.sections for b in s.blocks if isinstance(b, Figure))
    assert {p.name for p in paths} == {"rq2_win_rates.png", "rq2_cluster_shares.png"}
    for p in paths:
        assert p.suffix == ".png" and p.stat().st_size > 0
        img = mpimg.imread(p)
        assert img.shape[0] > 100 and img.shape[1] > 100
        assert np.ptp(img) > 0  # something is drawn
        assert titles[p.name]
    assert "r = +" in titles["rq2_win_rates.png"] and "n = 7" in titles["rq2_win_rates.png"]


# ---------------------------------------------------------------------- small / degenerate
def test_three_models_warn(tmp_path: Path) -> None:
    models = MODELS[:3]
    games = _games(models, [7, 5, 2], [2, 1, 0])
    counts = _counts(games)
    counts = counts[counts.index != "ghost"]
    data = _data(tmp_path, games, counts)
    rates = _run("rq2.model_win_rates", data)
    t = rates.tables["rq2_model_win_rates"]
    assert list(t["group"]) == ["top", "", "worst"]  # k = floor(3 / 2) = 1
    assert any("1 model(s) each instead of 3" in w for w in _warnings(rates))
    corr = _run("rq2.win_rate_correlation", data)
    row = corr.tables["rq2_win_rate_correlation"].iloc[0]
    assert row["n_models"] == 3 and bool(row["small_sample"])
    assert math.isnan(row["ci_low"])  # Fisher-z needs 4
    assert any("small sample" in w for w in _warnings(corr))
    tw = _run("rq2.top_worst", data)
    table = tw.tables["rq2_top_worst"]
    assert (table["n_models"] == 2).all() and table["r"].isna().all()
    assert any("rests on 2 model(s)" in w for w in _warnings(tw))
    cc = _run("rq2.cluster_share_correlation", data)
    assert any("rests on 2 model(s)" in w for w in _warnings(cc))
    for name in NAMES:
        for sec in _run(name, data).sections:
            assert sec.blocks


def test_degenerate_study_does_not_crash(tmp_path: Path) -> None:
    """A model that never plays impostor, and every atom count zero."""
    games = _games(MODELS[:6], [7, 6, 5, 3, 2, 1], [2, 2, 1, 1, 0, 0])
    games = games[games["impostor_model"] != "m5"].reset_index(drop=True)
    counts = pd.DataFrame(0, index=pd.Index(games["game_id"], name="game_id"), columns=LETTERS)
    data = _data(tmp_path, games, counts)
    outs = {name: _run(name, data) for name in NAMES}
    rates = outs["rq2.model_win_rates"].tables["rq2_model_win_rates"].set_index("model")
    assert math.isnan(rates.at["m5", "impostor_win_rate"])
    assert math.isnan(rates.at["m5", "rank"]) and rates.at["m5", "group"] == ""
    assert "no game as impostor" in rates.at["m5", "note"]
    assert rates.at["m5", "crew_games"] > 0
    assert list(rates.index[:5]) == ["m0", "m1", "m2", "m3", "m4"]
    assert rates["group"].tolist().count("top") == 2  # 5 ranked -> k = 2
    assert any("m5" in w for w in _warnings(outs["rq2.model_win_rates"]))
    corr = outs["rq2.win_rate_correlation"].tables["rq2_win_rate_correlation"].iloc[0]
    assert corr["n_models"] == 5  # m5 has no impostor rate
    tw = outs["rq2.top_worst"].tables["rq2_top_worst"]
    assert tw["r"].isna().all() and tw["ratio"].isna().all()
    assert tw["note"].str.contains("undefined").all()
    assert tw["note"].str.contains("neither group").all()
    shares = outs["rq2.cluster_shares"].tables["rq2_cluster_shares"]
    assert shares["share"].isna().all() and (shares["count"] == 0).all()
    assert shares["note"].str.contains("no atom").all()
    assert any("No atom" in w for w in _warnings(outs["rq2.cluster_shares"]))
    cc = outs["rq2.cluster_share_correlation"].tables["rq2_cluster_share_correlation"]
    assert cc["r"].isna().all() and cc["note"].str.contains("left out").all()
    for out in outs.values():
        for p in out.figures:
            assert mpimg.imread(p).size > 0


def test_empty_study(tmp_path: Path) -> None:
    games = _games(MODELS[:2], [4, 4], [0, 0]).iloc[:0]
    data = _data(tmp_path, games, pd.DataFrame(columns=LETTERS))
    for name in NAMES:
        out = _run(name, data)
        assert out.sections
        for p in out.figures:
            assert mpimg.imread(p).size > 0
