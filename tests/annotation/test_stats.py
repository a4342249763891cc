"""Statistics against scipy/statsmodels and closed forms on fixed data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats as st

from annotation import stats
from annotation.codebook import codebook

RNG = np.random.default_rng(42)
N = 120


def _games() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    memory = np.array(["window", "semantic"] * (N // 2))
    planning = np.repeat(["reactive", "hierarchical"], N // 2)
    seed = np.arange(N) // 2  # games 2k and 2k+1: same seed, memory flipped
    logit = -0.3 + 0.8 * (memory == "semantic") + 0.4 * (planning == "hierarchical")
    win = (rng.random(N) < 1 / (1 + np.exp(-logit))).astype(int)
    return pd.DataFrame(
        {
            "game_id": [f"g{i}" for i in range(N)],
            "impostor_win": win,
            "kills": rng.integers(0, 4, N),
            "tasks_done": rng.integers(0, 18, N),
            "seed": seed,
            "arm": [f"{m}/{p}" for m, p in zip(memory, planning, strict=True)],
            "impostor_model": np.repeat(np.tile(["m1", "m2", "m3", "m4"], N // 8), 2),
            "crew_model": np.repeat(np.tile(["m2", "m3", "m4", "m1"], N // 8), 2),
            "impostor.memory": memory,
            "impostor.planning": planning,
        }
    )


def _counts(games: pd.DataFrame) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    win = games["impostor_win"].to_numpy()
    data = {letter: rng.poisson(1.0, N) for letter in codebook().letters}
    data["E"] = rng.poisson(0.5 + 1.5 * win)
    data["K"] = np.zeros(N, dtype=int)  # constant: r undefined
    return pd.DataFrame(data, index=pd.Index(games["game_id"], name="game_id"))


def test_point_biserial_matches_scipy_and_bootstrap_brackets_it() -> None:
    g = _games()
    c = _counts(g)
    table = stats.point_biserial(c, g, n_boot=400, seed=1).set_index("atom")
    ref = st.pointbiserialr(g["impostor_win"], c["E"])
    assert table.loc["E", "r"] == pytest.approx(ref.statistic)
    assert table.loc["E", "p"] == pytest.approx(ref.pvalue)
    assert table.loc["E", "r"] == pytest.approx(np.corrcoef(g["impostor_win"], c["E"])[0, 1])
    assert table.loc["E", "ci_low"] < table.loc["E", "r"] < table.loc["E", "ci_high"]
    assert table.loc["E", "occurrences"] == c["E"].sum()
    assert math.isnan(table.loc["K", "r"])
    again = stats.point_biserial(c, g, n_boot=400, seed=1).set_index("atom")
    assert again.loc["E", "ci_low"] == table.loc["E", "ci_low"]  # seeded, reproducible


def test_cluster_bootstrap_is_wider_with_duplicated_clusters() -> None:
    values = np.array([1, 1, 1, 1, 0, 0, 0, 0] * 5, dtype=float)
    plain = stats.bootstrap_rate(values, rng=np.random.default_rng(0))
    # the same data as 2 clusters of identical games: the interval must widen
    clustered = stats.bootstrap_rate(
        values, np.array(([0] * 4 + [1] * 4) * 5), rng=np.random.default_rng(0)
    )
    assert plain.low < 0.5 < plain.high
    assert clustered.high - clustered.low >= plain.high - plain.low


def test_partial_r_matches_ols_t_statistic() -> None:
    g = _games()
    c = _counts(g)
    table = stats.partial_point_biserial(c, g).set_index("atom")
    x = sm.add_constant(
        np.column_stack([c["E"], g["kills"], g["tasks_done"]]).astype(float), has_constant="add"
    )
    fit = sm.OLS(g["impostor_win"].to_numpy(float), x).fit()
    t = fit.tvalues[1]
    df = fit.df_resid
    assert table.loc["E", "partial_r"] == pytest.approx(t / math.sqrt(t * t + df))
    assert table.loc["E", "p"] == pytest.approx(fit.pvalues[1])


def test_axis_marginals_z_test_and_mcnemar() -> None:
    g = _games()
    table = stats.axis_marginals(g, n_boot=200)
    row = table[(table["axis"] == "impostor.memory") & (table["level"] == "window")].iloc[0]
    ref = g[g["impostor.memory"] == "semantic"]
    sub = g[g["impostor.memory"] == "window"]
    p1, p0 = sub["impostor_win"].mean(), ref["impostor_win"].mean()
    pooled = (sub["impostor_win"].sum() + ref["impostor_win"].sum()) / N
    z = (p1 - p0) / math.sqrt(pooled * (1 - pooled) * (1 / len(sub) + 1 / len(ref)))
    assert row["z"] == pytest.approx(z)
    assert row["p"] == pytest.approx(2 * st.norm.sf(abs(z)))
    assert row["delta"] == pytest.approx(p1 - p0)
    assert row["ci_low"] <= row["win_rate"] <= row["ci_high"]
    # seeds pair games across memory levels with the other axis and models equal
    assert row["n_pairs"] == N // 2
    sub_sorted = sub.sort_values("seed")["impostor_win"].to_numpy()
    ref_sorted = ref.sort_values("seed")["impostor_win"].to_numpy()
    b = int(((sub_sorted == 1) & (ref_sorted == 0)).sum())
    c = int(((sub_sorted == 0) & (ref_sorted == 1)).sum())
    assert row["mcnemar_p"] == pytest.approx(min(1.0, 2 * st.binom.cdf(min(b, c), b + c, 0.5)))


def test_logistic_single_binary_axis_is_the_log_odds_ratio() -> None:
    g = pd.DataFrame(
        {
            "game_id": [f"g{i}" for i in range(40)],
            "impostor_win": [1] * 15 + [0] * 5 + [1] * 8 + [0] * 12,
            "seed": list(range(20)) * 2,
            "impostor.memory": ["semantic"] * 20 + ["window"] * 20,
        }
    )
    table = stats.logistic_all_axes(g).set_index("term")
    odds_semantic, odds_window = 15 / 5, 8 / 12
    assert table.loc["impostor.memory_window", "coef"] == pytest.approx(
        math.log(odds_window / odds_semantic), abs=1e-5
    )
    assert table.loc["impostor.memory_window", "n_clusters"] == 20
    assert table["error"].eq("").all()


def test_logistic_failure_is_reported_not_hidden() -> None:
    g = pd.DataFrame(
        {
            "game_id": ["a", "b"],
            "impostor_win": [1, 0],
            "seed": [0, 0],
            "impostor.memory": ["x", "y"],
        }
    )
    table = stats.logistic_all_axes(g)
    assert table["error"].iloc[0] != ""


def test_cross_model_pearson_matches_scipy() -> None:
    g = _games()
    c = _counts(g)
    models = stats.per_model(c, g)
    table = stats.cross_model(models, ["E"]).set_index("measure")
    ref = st.pearsonr(models["mean_E"], models["impostor_win_rate"])
    row = table.loc["atom E vs impostor win rate"]
    assert row["r"] == pytest.approx(ref.statistic)
    assert row["p"] == pytest.approx(ref.pvalue)
    assert row["n_models"] == 4
    crew = g[g["crew_model"] == "m1"]
    m1 = models.set_index("model").loc["m1"]
    assert m1["crew_win_rate"] == pytest.approx(1 - crew["impostor_win"].mean())


def test_counts_and_arcs() -> None:
    f = pd.DataFrame(
        {
            "game_id": ["a"] * 6 + ["b"],
            "atom": list("BCEFHL") + ["A"],
            "step": [1, 2, 3, 3, 4, 6, 1],
            "phase": ["pre_m1"] * 5 + ["m1", "pre_m1"],
        }
    )
    c = stats.counts_table(f, ["a", "b", "c"])
    assert c.loc["a", "E"] == 1 and c.loc["c"].sum() == 0
    cl = stats.cluster_counts(c)
    assert cl.loc["a", "NV-2"] == 3
    arcs = stats.arcs_realised(f).set_index("game_id")
    assert bool(arcs.loc["a", "realised"]) and not bool(arcs.loc["b", "realised"])
    phases = stats.arcs_by_phase(f)
    assert set(phases["phase"]) == {"pre_m1", "m1"}
