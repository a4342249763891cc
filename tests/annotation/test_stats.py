"""Statistics against scipy/statsmodels and closed forms on fixed data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats as st
from statsmodels.stats.proportion import proportion_confint, proportions_ztest

from annotation import stats
from annotation.deception.codebook import codebook

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
            "steps": rng.integers(20, 120, N),
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
    data = {letter: rng.poisson(1.0, len(games)) for letter in codebook().letters}
    data["E"] = rng.poisson(0.5 + 1.5 * win)
    data["K"] = np.zeros(len(games), dtype=int)  # constant: r undefined
    return pd.DataFrame(data, index=pd.Index(games["game_id"], name="game_id"))


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment, written out."""
    m = len(p)
    order = np.argsort(p)
    adj = np.empty(m)
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        adj[j] = running
    return adj


def _bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg's step-up adjustment, written out."""
    m = len(p)
    order = np.argsort(p)
    adj = np.empty(m)
    running = 1.0
    for rank in range(m, 0, -1):
        j = order[rank - 1]
        running = min(running, p[j] * m / rank)
        adj[j] = running
    return adj


# ------------------------------------------------------------------------- r_pb
def test_point_biserial_matches_scipy_and_bootstrap_brackets_it() -> None:
    g = _games()
    c = _counts(g)
    table = stats.point_biserial(c, g, n_boot=400, n_perm=4000, seed=1).set_index("atom")
    ref = st.pointbiserialr(g["impostor_win"], c["E"])
    assert table.loc["E", "r"] == pytest.approx(ref.statistic)
    assert table.loc["E", "p"] == pytest.approx(ref.pvalue)
    assert table.loc["E", "r"] == pytest.approx(np.corrcoef(g["impostor_win"], c["E"])[0, 1])
    assert table.loc["E", "ci_low"] < table.loc["E", "r"] < table.loc["E", "ci_high"]
    assert table.loc["E", "occurrences"] == c["E"].sum()
    assert table.loc["E", "wins"] == g["impostor_win"].sum()
    assert table.loc["E", "losses"] == N - g["impostor_win"].sum()
    assert math.isnan(table.loc["K", "r"])
    # seeds are shared by game pairs: the bootstrap resamples the 60 seeds
    assert table.loc["E", "cluster_by"] == "seed" and table.loc["E", "n_clusters"] == N // 2
    assert table.loc["E", "paper_r"] == 0.434 and table.loc["E", "paper_occurrences"] == 618
    again = stats.point_biserial(c, g, n_boot=400, n_perm=4000, seed=1).set_index("atom")
    assert again.loc["E", "ci_low"] == table.loc["E", "ci_low"]  # seeded, reproducible
    assert again.loc["A", "p_perm"] == table.loc["A", "p_perm"]


def test_permutation_p_matches_scipy_permutation_test() -> None:
    g = _games()
    c = _counts(g)
    table = stats.point_biserial(c, g, n_boot=100, n_perm=4000, seed=2).set_index("atom")
    y = g["impostor_win"].to_numpy(float)
    for atom in ("A", "B", "E"):
        x = c[atom].to_numpy(float)

        def abs_r(xs: np.ndarray) -> float:
            return abs(float(np.corrcoef(xs, y)[0, 1]))

        ref = st.permutation_test(  # two-sided as |r| >= |r observed|
            (x,),
            abs_r,
            permutation_type="pairings",
            n_resamples=4000,
            alternative="greater",
            rng=np.random.default_rng(5),
        )
        # two Monte Carlo estimates of one p: within a few standard errors
        se = math.sqrt(max(ref.pvalue * (1 - ref.pvalue), 1e-4) / 4000)
        assert table.loc[atom, "p_perm"] == pytest.approx(ref.pvalue, abs=max(5 * se, 2e-3))
        assert not bool(table.loc[atom, "perm_exact"])


def test_holm_and_bh_beside_the_raw_p() -> None:
    g = _games()
    c = _counts(g)
    table = stats.point_biserial(c, g, n_boot=50, n_perm=500, seed=0)
    ok = table["p_perm"].notna().to_numpy()
    p = table["p_perm"].to_numpy()[ok]
    assert table["p_perm_holm"].to_numpy()[ok] == pytest.approx(_holm(p))
    assert table["p_perm_bh"].to_numpy()[ok] == pytest.approx(_bh(p))
    assert table["p_perm_holm"].isna().equals(table["p_perm"].isna())  # K: no p, no family
    part = stats.partial_point_biserial(c, g)
    okp = part["p"].notna().to_numpy()
    assert part["p_holm"].to_numpy()[okp] == pytest.approx(_holm(part["p"].to_numpy()[okp]))


def test_rare_wins_exact_permutation_and_degenerate_resamples() -> None:
    """2 wins in 40 games: the t-test is anti-conservative, the exact permutation p is
    not; 1 - (38/40)^40 ~ 13 % of game resamples hold no win and the interval is withheld
    with the share said, never silently computed from the rest."""
    n = 40
    rng = np.random.default_rng(11)
    y = np.zeros(n, dtype=int)
    y[[3, 17]] = 1
    x = rng.poisson(1.0, n)
    x[3] = 6  # one winner with a large count: a large r on one game
    games = pd.DataFrame(
        {"game_id": [f"g{i}" for i in range(n)], "impostor_win": y, "seed": np.arange(n)}
    )
    counts = pd.DataFrame({"E": x}, index=pd.Index(games["game_id"], name="game_id"))
    row = stats.point_biserial(counts, games, n_boot=2000, seed=0).iloc[0]
    # exact null: every placement of the 2 wins among 40 games (780 of them)
    from itertools import combinations

    r_obs = abs(st.pearsonr(x, y).statistic)
    hits = total = 0
    for pos in combinations(range(n), 2):
        yy = np.zeros(n)
        yy[list(pos)] = 1
        hits += abs(st.pearsonr(x, yy).statistic) >= r_obs - 1e-12
        total += 1
    assert bool(row["perm_exact"])
    assert row["p_perm"] == pytest.approx(hits / total)
    assert row["p"] == pytest.approx(st.pointbiserialr(y, x).pvalue)
    assert row["p"] < row["p_perm"]  # the t-test is anti-conservative here
    ref = st.permutation_test(  # two-sided as |r|: the p of the t-test's |t| rule
        (x.astype(float),),
        lambda xs: abs(np.corrcoef(xs, y)[0, 1]),
        permutation_type="pairings",
        n_resamples=9999,
        alternative="greater",
        rng=np.random.default_rng(1),
    )
    assert row["p_perm"] == pytest.approx(ref.pvalue, abs=0.02)
    expected = (38 / 40) ** 40  # P(no win among 40 draws); no-loss resamples are ~0
    assert row["boot_degenerate"] == pytest.approx(expected, abs=0.03)
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])
    assert "interval withheld" in row["warning"]
    assert bool(row["small_sample"]) and "2 impostor win(s)" in row["warning"]


def test_small_sample_flag_follows_wins_not_only_games() -> None:
    n = 200  # plenty of games, but 4 wins
    rng = np.random.default_rng(0)
    y = np.zeros(n, dtype=int)
    y[:4] = 1
    games = pd.DataFrame(
        {"game_id": [f"g{i}" for i in range(n)], "impostor_win": y, "seed": np.arange(n)}
    )
    counts = pd.DataFrame(
        {"B": rng.poisson(2.0, n)}, index=pd.Index(games["game_id"], name="game_id")
    )
    row = stats.point_biserial(counts, games, n_boot=200, n_perm=500).iloc[0]
    assert bool(row["small_sample"]) and "4 impostor win(s) (< 10)" in row["warning"]
    assert not bool(row["perm_exact"])  # C(200, 4) arrangements: Monte Carlo
    assert row["n_games"] == n >= stats.SMALL_SAMPLE


def test_cluster_bootstrap_resamples_seeds() -> None:
    """40 distinct games, each played 4 times under one seed: resampling seeds gives the
    40-game interval; resampling single games would be ~half as wide (sqrt 4)."""
    rng = np.random.default_rng(4)
    base_y = (rng.random(40) < 0.5).astype(int)
    base_x = rng.poisson(1 + base_y)
    y = np.repeat(base_y, 4)
    x = np.repeat(base_x, 4)
    ids = [f"g{i}" for i in range(160)]
    seeded = pd.DataFrame({"game_id": ids, "impostor_win": y, "seed": np.repeat(range(40), 4)})
    counts = pd.DataFrame({"E": x}, index=pd.Index(ids, name="game_id"))
    by_seed = stats.point_biserial(counts, seeded, n_boot=2000).iloc[0]
    assert by_seed["cluster_by"] == "seed" and by_seed["n_clusters"] == 40
    single = pd.DataFrame(
        {"game_id": [f"h{i}" for i in range(40)], "impostor_win": base_y, "seed": range(40)}
    )
    one = stats.point_biserial(
        pd.DataFrame({"E": base_x}, index=pd.Index(single["game_id"], name="game_id")),
        single,
        n_boot=2000,
    ).iloc[0]
    as_games = stats.point_biserial(
        counts, seeded.assign(cluster=seeded["game_id"]), n_boot=2000
    ).iloc[0]
    w_seed = by_seed["ci_high"] - by_seed["ci_low"]
    w_one = one["ci_high"] - one["ci_low"]
    w_games = as_games["ci_high"] - as_games["ci_low"]
    assert w_seed == pytest.approx(w_one, rel=0.2)
    assert w_games < 0.7 * w_seed


# ------------------------------------------------------------------- partial r, kills
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


def test_atoms_vs_kills_rates_and_partial_beside_raw() -> None:
    """An atom that only counts kills: large raw r_pb, partial r_pb near 0."""
    rng = np.random.default_rng(9)
    n = 300
    kills = rng.integers(0, 5, n)
    win = (rng.random(n) < 1 / (1 + np.exp(-(kills - 2)))).astype(int)
    games = pd.DataFrame(
        {
            "game_id": [f"g{i}" for i in range(n)],
            "impostor_win": win,
            "kills": kills,
            "tasks_done": rng.integers(0, 18, n),
            "steps": rng.integers(30, 90, n),
            "seed": np.arange(n),
        }
    )
    e = kills + rng.binomial(1, 0.2, n)  # one E per kill, plus noise
    counts = pd.DataFrame({"E": e}, index=pd.Index(games["game_id"], name="game_id"))
    row = stats.atoms_vs_kills(counts, games).iloc[0]
    assert row["per_kill"] == pytest.approx(e.sum() / kills.sum())
    assert row["per_step"] == pytest.approx(e.sum() / games["steps"].sum())
    assert row["per_game"] == pytest.approx(e.mean())
    assert row["r_kills"] == pytest.approx(st.pearsonr(e, kills).statistic)
    assert row["r"] == pytest.approx(st.pointbiserialr(win, e).statistic)
    x = sm.add_constant(
        np.column_stack([e, kills, games["tasks_done"]]).astype(float), has_constant="add"
    )
    fit = sm.OLS(win.astype(float), x).fit()
    t, df = fit.tvalues[1], fit.df_resid
    assert row["partial_r"] == pytest.approx(t / math.sqrt(t * t + df))
    assert row["partial_p"] == pytest.approx(fit.pvalues[1])
    assert row["r"] > 0.3 and abs(row["partial_r"]) < 0.15


# ------------------------------------------------------------------------ rates
def test_wilson_matches_statsmodels_and_never_collapses() -> None:
    for k, n in ((0, 4), (4, 4), (3, 10), (17, 40), (1, 2)):
        iv = stats.wilson(k, n)
        lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert iv.low == pytest.approx(lo) and iv.high == pytest.approx(hi)
        assert iv.low is not None and iv.high is not None
        assert iv.high - iv.low > 0.1  # a real interval, not [0, 0]
    zero = stats.rate_interval([0.0, 0.0, 0.0, 0.0])
    assert zero.value == 0.0 and zero.low == 0.0
    assert zero.high == pytest.approx(proportion_confint(0, 4, method="wilson")[1])
    assert stats.wilson(0, 0).value is None


def test_rate_interval_widens_by_the_design_effect() -> None:
    """40 games each played 4 times under one seed: the design effect is 4 * 40 / 39, so
    the interval is Wilson's at 39 effective games."""
    base = np.array([1.0] * 20 + [0.0] * 20)
    values = list(np.repeat(base, 4))
    clusters: list[object] = list(np.repeat(np.arange(40), 4))
    # Kish's design effect written out: the cluster totals' variance over the SRS one
    totals = pd.Series(values).groupby(clusters).sum().to_numpy()
    p, n, k = 0.5, 160, 40
    v = k / (k - 1) * ((totals - p * 4) ** 2).sum() / n**2
    deff = v / (p * (1 - p) / n)
    assert deff == pytest.approx(4 * 40 / 39)
    iv = stats.rate_interval(values, clusters)
    lo, hi = proportion_confint(p * n / deff, n / deff, method="wilson")
    assert iv.low == pytest.approx(lo) and iv.high == pytest.approx(hi)
    plain = stats.rate_interval(values)
    assert None not in (iv.low, iv.high, plain.low, plain.high)
    assert (iv.high - iv.low) > 1.8 * (plain.high - plain.low)  # type: ignore[operator]


def test_arm_sizes_zero_of_four_is_a_real_interval() -> None:
    g = pd.DataFrame(
        {
            "game_id": [f"g{i}" for i in range(8)],
            "impostor_win": [0, 0, 0, 0, 1, 1, 0, 1],
            "arm": ["a"] * 4 + ["b"] * 4,
            "status": "ok",
            "seed": range(8),
        }
    )
    table = stats.arm_sizes(g).set_index("arm")
    assert table.loc["a", "ci_low"] == 0.0
    assert table.loc["a", "ci_high"] == pytest.approx(proportion_confint(0, 4, method="wilson")[1])
    assert bool(table.loc["a", "small_sample"])


# ------------------------------------------------------------------------ z-tests
def _axis_games(w1: int, n1: int, w0: int, n0: int, axis: str, hi: str, lo: str) -> pd.DataFrame:
    win = [1] * w1 + [0] * (n1 - w1) + [1] * w0 + [0] * (n0 - w0)
    return pd.DataFrame(
        {
            "game_id": [f"g{i}" for i in range(n1 + n0)],
            "impostor_win": win,
            "seed": range(n1 + n0),
            axis: [hi] * n1 + [lo] * n0,
        }
    )


def test_z_test_one_sided_as_the_paper_preset() -> None:
    """The paper's planning delta: +9.4 pp, one-sided p ~ 0.096 (two-sided ~ 0.19)."""
    g = _axis_games(50, 96, 41, 96, "impostor.planning", "hierarchical", "reactive")
    row = stats.axis_marginals(g).set_index("level").loc["hierarchical"]
    assert row["vs"] == "reactive" and row["alternative"] == "larger"
    assert row["delta"] == pytest.approx(9 / 96)
    z, p1 = proportions_ztest([50, 41], [96, 96], alternative="larger")
    _, p2 = proportions_ztest([50, 41], [96, 96])
    pooled = 91 / 192
    z_hand = (50 / 96 - 41 / 96) / math.sqrt(pooled * (1 - pooled) * (2 / 96))
    assert row["z"] == pytest.approx(z) == pytest.approx(z_hand)
    assert row["p_one_sided"] == pytest.approx(p1) == pytest.approx(st.norm.sf(z_hand))
    assert row["p_two_sided"] == pytest.approx(p2) == pytest.approx(2 * st.norm.sf(z_hand))
    assert row["p_one_sided"] == pytest.approx(0.097, abs=1e-3)
    assert row["p_two_sided"] == pytest.approx(0.193, abs=1e-3)
    assert row["paper_delta"] == 0.094 and row["paper_p_one_sided"] == 0.096
    lo, hi = proportion_confint(50, 96, method="wilson")
    assert row["ci_low"] == pytest.approx(lo) and row["ci_high"] == pytest.approx(hi)


def test_crew_axis_preset_direction_is_smaller() -> None:
    g = _axis_games(30, 60, 40, 60, "crew.memory", "semantic", "window")
    row = stats.axis_marginals(g).set_index("level").loc["semantic"]
    assert row["alternative"] == "smaller"
    _, p1 = proportions_ztest([30, 40], [60, 60], alternative="smaller")
    assert row["p_one_sided"] == pytest.approx(p1)


def test_axis_marginals_z_test_and_mcnemar() -> None:
    g = _games()
    table = stats.axis_marginals(g)
    # window is the baseline level (the simpler setting), semantic is compared with it
    row = table[(table["axis"] == "impostor.memory") & (table["level"] == "semantic")].iloc[0]
    assert row["vs"] == "window"
    ref = g[g["impostor.memory"] == "window"]
    sub = g[g["impostor.memory"] == "semantic"]
    p1, p0 = sub["impostor_win"].mean(), ref["impostor_win"].mean()
    pooled = (sub["impostor_win"].sum() + ref["impostor_win"].sum()) / N
    z = (p1 - p0) / math.sqrt(pooled * (1 - pooled) * (1 / len(sub) + 1 / len(ref)))
    assert row["z"] == pytest.approx(z)
    assert row["p_two_sided"] == pytest.approx(2 * st.norm.sf(abs(z)))
    # the paper pre-registered window > semantic: semantic is tested for a lower rate
    assert row["alternative"] == "smaller"
    assert row["p_one_sided"] == pytest.approx(st.norm.cdf(z))
    assert row["delta"] == pytest.approx(p1 - p0)
    assert row["ci_low"] <= row["win_rate"] <= row["ci_high"]
    # seeds pair games across memory levels with the other axis and models equal
    assert row["n_pairs"] == N // 2
    sub_sorted = sub.sort_values("seed")["impostor_win"].to_numpy()
    ref_sorted = ref.sort_values("seed")["impostor_win"].to_numpy()
    b = int(((sub_sorted == 1) & (ref_sorted == 0)).sum())
    c = int(((sub_sorted == 0) & (ref_sorted == 1)).sum())
    assert row["mcnemar_p"] == pytest.approx(min(1.0, 2 * st.binom.cdf(min(b, c), b + c, 0.5)))


# ------------------------------------------------------------------------ logit
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
    # window is the baseline: the term is semantic's log odds ratio against it
    assert table.loc["impostor.memory_semantic", "coef"] == pytest.approx(
        math.log(odds_semantic / odds_window), abs=1e-5
    )
    assert table.loc["impostor.memory_semantic", "n_clusters"] == 20
    assert table["error"].eq("").all()
    # 20 clusters: cluster-robust SEs, as statsmodels computes them
    x = sm.add_constant((g["impostor.memory"] == "semantic").astype(float).to_numpy())
    robust = sm.Logit(g["impostor_win"].to_numpy(float), x).fit(
        disp=0, cov_type="cluster", cov_kwds={"groups": g["seed"].to_numpy()}
    )
    assert table.loc["impostor.memory_semantic", "se"] == pytest.approx(robust.bse[1], rel=1e-4)
    assert table["se_method"].eq("cluster-robust").all() and table["warning"].eq("").all()


def test_logistic_three_clusters_warns_and_uses_naive_se() -> None:
    """RQ1's design: 3 seeds. Cluster-robust SEs from 3 cluster scores are biased low;
    the table must warn and report the naive SEs (the clustered ones beside)."""
    rng = np.random.default_rng(2)
    n = 96
    planning = np.tile(["reactive", "hierarchical"], n // 2)
    win = (rng.random(n) < np.where(planning == "hierarchical", 0.6, 0.45)).astype(int)
    g = pd.DataFrame(
        {
            "game_id": [f"g{i}" for i in range(n)],
            "impostor_win": win,
            "seed": np.arange(n) % 3,
            "impostor.planning": planning,
        }
    )
    table = stats.logistic_all_axes(g).set_index("term")
    row = table.loc["impostor.planning_hierarchical"]
    assert row["n_clusters"] == 3 and row["cluster_by"] == "seed"
    assert "3 seed cluster(s) (< 20)" in row["warning"]
    assert row["se_method"] == "naive"
    x = sm.add_constant((planning == "hierarchical").astype(float))
    model = sm.Logit(win.astype(float), x)
    naive = model.fit(disp=0)
    robust = model.fit(disp=0, cov_type="cluster", cov_kwds={"groups": g["seed"].to_numpy()})
    assert row["se"] == pytest.approx(naive.bse[1], rel=1e-4)
    assert row["se_naive"] == pytest.approx(naive.bse[1], rel=1e-4)
    assert row["se_cluster"] == pytest.approx(robust.bse[1], rel=1e-4)
    assert row["p"] == pytest.approx(naive.pvalues[1], rel=1e-4)
    # the r_pb bootstrap over the same 3 clusters says so too
    counts = pd.DataFrame({"E": rng.poisson(1.0, n)}, index=pd.Index(g["game_id"], name="game_id"))
    rpb = stats.point_biserial(counts, g, n_boot=200, n_perm=500).iloc[0]
    assert rpb["n_clusters"] == 3 and "3 seed cluster(s) (< 20)" in rpb["warning"]


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


# ------------------------------------------------------------------- cross model
def test_cross_model_pearson_matches_scipy() -> None:
    g = _games()
    c = _counts(g)
    models = stats.per_model(c, g)
    table = stats.cross_model(models, ["A", "E"]).set_index("measure")
    ref = st.pearsonr(models["mean_E"], models["impostor_win_rate"])
    row = table.loc["atom E vs impostor win rate"]
    assert row["r"] == pytest.approx(ref.statistic)
    assert row["p"] == pytest.approx(ref.pvalue)
    assert row["n_models"] == 4
    # Fisher-z interval written out; scipy's own interval agrees
    zr, se = math.atanh(ref.statistic), 1 / math.sqrt(4 - 3)
    assert row["ci_low"] == pytest.approx(math.tanh(zr - 1.959964 * se), abs=1e-6)
    ci = ref.confidence_interval(0.95)
    assert row["ci_low"] == pytest.approx(ci.low) and row["ci_high"] == pytest.approx(ci.high)
    ps = np.array([table.loc["atom A vs impostor win rate", "p"], row["p"]])
    assert row["p_holm"] == pytest.approx(_holm(ps)[1])
    assert table.loc["atom A vs impostor win rate", "paper_r"] == 0.72
    assert table.loc["impostor vs crew win rate", "paper_r"] == 0.71
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


def test_design_clusters() -> None:
    paired = pd.DataFrame({"game_id": ["a", "b", "c", "d"], "seed": [1, 1, 2, 2]})
    assert stats.design_clusters(paired).by == "seed"
    assert stats.design_clusters(paired).n == 2
    single = pd.DataFrame({"game_id": ["a", "b"], "seed": [1, 2]})
    assert stats.design_clusters(single).by == "game"
    forced = paired.assign(cluster=["x", "x", "x", "y"])
    assert stats.design_clusters(forced).by == "cluster column"


# ------------------------------------------------------------- pre-set directions
def test_preset_directions_are_the_papers_preregistered_ones() -> None:
    """window > semantic memory, hierarchical > reactive planning, reflection on > off
    (one-sided), prompt style two-sided; a merged crew corner has no direction."""
    assert stats.preset_alternative("impostor.memory", "semantic", "window") == "smaller"
    assert stats.preset_alternative("impostor.memory", "window", "semantic") == "larger"
    assert stats.preset_alternative("impostor.memory") == "smaller"  # semantic vs window
    assert stats.preset_alternative("impostor.planning", "hierarchical", "reactive") == "larger"
    assert stats.preset_alternative("impostor.reflection", "on", "off") == "larger"
    assert stats.preset_alternative("impostor.prompt", "deterministic", "minimal") == "two-sided"
    assert stats.preset_alternative("crew.memory+planning") == "two-sided"
    assert stats.preset_alternative("impostor.state", "privileged", "ego") == "larger"
    g = _axis_games(30, 60, 40, 60, "impostor.memory", "semantic", "window")
    row = stats.axis_marginals(g).set_index("level").loc["semantic"]
    _, p1 = proportions_ztest([30, 40], [60, 60], alternative="smaller")
    assert row["alternative"] == "smaller" and row["p_one_sided"] == pytest.approx(p1)
    g = _axis_games(30, 60, 40, 60, "impostor.prompt", "deterministic", "minimal")
    row = stats.axis_marginals(g).set_index("level").loc["deterministic"]
    assert row["alternative"] == "two-sided" and math.isnan(row["p_one_sided"])
    assert row["p_two_sided"] == pytest.approx(proportions_ztest([30, 40], [60, 60])[1])


# ------------------------------------------------------------- a scripted control arm
def test_a_control_arm_with_null_axes_is_left_out_not_a_crash() -> None:
    """A `control: true` arm plays scripted agents: its ARIA axes are null (a missing
    value in pandas' string columns). Sorting levels once compared str with float."""
    n = 40
    g = pd.DataFrame(
        {
            "game_id": [f"g{i}" for i in range(n + 4)],
            "impostor_win": [int(i % 4 < 2) for i in range(n)] + [1, 0, 1, 1],
            "seed": list(range(n)) + [0, 1, 2, 3],
            "impostor_model": ["fake"] * n + ["scripted"] * 4,
            "crew_model": ["fake"] * n + ["scripted"] * 4,
            "impostor.planning": pd.array(
                ["reactive", "hierarchical"] * (n // 2) + [None] * 4, dtype="str"
            ),
        }
    )
    logit = stats.logistic_all_axes(g)
    assert logit["error"].eq("").all(), logit["error"].iloc[0]
    assert logit["n_games"].iloc[0] == n
    assert "4 game(s) lack these columns" in logit["warning"].iloc[0]
    marg = stats.axis_marginals(g).set_index("level")
    assert set(marg.index) == {"reactive", "hierarchical"}
    assert marg["n_games"].sum() == n
