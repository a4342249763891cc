"""The paper's statistics and the answers to its open critiques, as tidy tables.

Inputs are two tables: `games` (one row per game: `game_id`, `impostor_win` 0/1,
`kills`, `tasks_done`, `seed`, `arm`, `impostor_model`, `crew_model` and axis columns
`impostor.<axis>` / `crew.<axis>`) and `counts` (one row per game, one column per atom
letter: that game's accepted findings of one source). scipy and statsmodels do the
arithmetic; intervals are 95 % cluster bootstraps over games (clusters are games unless
a `cluster` column groups them, e.g. by paired seed).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as st

from annotation.codebook import Codebook, arc_stages_met, codebook

DEFAULT_BOOT = 1000
"""Bootstrap resamples per interval."""
SMALL_SAMPLE = 30
"""Fewer games than this per arm (or per level) and a figure says it is too small to read."""


@dataclass(frozen=True)
class Interval:
    """A 95 % interval."""

    low: float
    high: float


def counts_table(
    findings: pd.DataFrame, game_ids: list[str], book: Codebook | None = None
) -> pd.DataFrame:
    """Per-game atom counts: index `game_id`, one column per letter (0 when absent).

    Args:
        findings: Accepted findings with at least `game_id` and `atom`.
        game_ids: Every game the source annotated (games with no finding get zeros).
        book: The codebook.
    """
    book = book or codebook()
    if findings.empty:
        wide = pd.DataFrame(0, index=pd.Index(game_ids, name="game_id"), columns=book.letters)
        return wide
    wide = findings.groupby(["game_id", "atom"]).size().unstack(fill_value=0)
    wide = wide.reindex(index=pd.Index(game_ids, name="game_id"), columns=book.letters)
    return wide.fillna(0).astype(int)


def cluster_counts(counts: pd.DataFrame, book: Codebook | None = None) -> pd.DataFrame:
    """Per-game counts summed by cluster (columns are cluster ids)."""
    book = book or codebook()
    out = pd.DataFrame(index=counts.index)
    for cid in book.clusters:
        letters = [a.letter for a in book.atoms if a.cluster == cid]
        out[cid] = counts[letters].sum(axis=1)
    return out


def arcs_by_phase(findings: pd.DataFrame, book: Codebook | None = None) -> pd.DataFrame:
    """Tidy per-game, per-phase atom counts: `game_id, phase, atom, count`."""
    book = book or codebook()
    if findings.empty:
        return pd.DataFrame(columns=["game_id", "phase", "atom", "count"])
    out = findings.groupby(["game_id", "phase", "atom"]).size().rename("count").reset_index()
    order = {p.name: i for i, p in enumerate(book.phases)}
    out["_o"] = out["phase"].map(order)
    return out.sort_values(["game_id", "_o", "atom"]).drop(columns="_o").reset_index(drop=True)


def arcs_realised(findings: pd.DataFrame, book: Codebook | None = None) -> pd.DataFrame:
    """Per game and arc: how many of the arc's stages the impostor team met in order.

    Columns: `game_id, arc, stages_met, stages, realised`.
    """
    book = book or codebook()
    rows = []
    if findings.empty:
        return pd.DataFrame(columns=["game_id", "arc", "stages_met", "stages", "realised"])
    for gid, group in findings.sort_values(["game_id", "step"]).groupby("game_id"):
        seq = list(group["atom"])
        for arc in book.arcs:
            met = arc_stages_met(arc, seq)
            rows.append(
                {
                    "game_id": gid,
                    "arc": arc.name,
                    "stages_met": met,
                    "stages": len(arc.stages),
                    "realised": met >= arc.min_stages,
                }
            )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- bootstrap
def _cluster_weights(clusters: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap multiplicities per row: clusters drawn with replacement (B x rows)."""
    uniq, inv = np.unique(clusters, return_inverse=True)
    c = len(uniq)
    picks = rng.integers(0, c, size=(n_boot, c)) + (np.arange(n_boot) * c)[:, None]
    draws = np.bincount(picks.ravel(), minlength=n_boot * c).reshape(n_boot, c)  # B x C
    return draws[:, inv].astype(float)


def _weighted_pearson(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r under row weights: w (B x n), x (n x k), y (n,) -> (B x k)."""
    sw = w.sum(axis=1, keepdims=True)
    mx = (w @ x) / sw
    my = (w @ y)[:, None] / sw
    sxy = (w @ (x * y[:, None])) / sw - mx * my
    sxx = (w @ (x * x)) / sw - mx * mx
    syy = (w @ (y * y))[:, None] / sw - my * my
    with np.errstate(invalid="ignore", divide="ignore"):
        r: np.ndarray = sxy / np.sqrt(sxx * syy)
    return r


def bootstrap_rate(
    values: np.ndarray,
    clusters: np.ndarray | None = None,
    *,
    n_boot: int = DEFAULT_BOOT,
    rng: np.random.Generator | None = None,
) -> Interval:
    """95 % cluster-bootstrap interval of a mean (e.g. a win rate over games)."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return Interval(math.nan, math.nan)
    rng = rng or np.random.default_rng(0)
    clusters = np.arange(len(values)) if clusters is None else np.asarray(clusters)
    w = _cluster_weights(clusters, n_boot, rng)
    means = (w @ values) / w.sum(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return Interval(float(lo), float(hi))


# ---------------------------------------------------------------------- RQ1: r_pb
def point_biserial(
    counts: pd.DataFrame,
    games: pd.DataFrame,
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> pd.DataFrame:
    """Point-biserial r of each atom's per-game count against impostor win.

    Returns:
        `atom, n_games, occurrences, games_with, r, p, ci_low, ci_high` (r and p from
        `scipy.stats.pointbiserialr`; the interval is a cluster bootstrap over games).
    """
    g = games.set_index("game_id").loc[counts.index]
    y = g["impostor_win"].to_numpy(dtype=float)
    x = counts.to_numpy(dtype=float)
    clusters = g["cluster"].to_numpy() if "cluster" in g else np.arange(len(y))
    rng = np.random.default_rng(seed)
    boots: list[np.ndarray] = []
    for start in range(0, n_boot, 200):
        w = _cluster_weights(clusters, min(200, n_boot - start), rng)
        boots.append(_weighted_pearson(w, x, y))
    rb = np.vstack(boots) if boots else np.empty((0, x.shape[1]))
    rows = []
    for j, atom in enumerate(counts.columns):
        col = x[:, j]
        if len(y) < 3 or np.std(col) == 0 or np.std(y) == 0:
            r, p = math.nan, math.nan
        else:
            res = st.pointbiserialr(y, col)
            r, p = float(res.statistic), float(res.pvalue)
        finite = rb[:, j][np.isfinite(rb[:, j])]
        lo, hi = np.percentile(finite, [2.5, 97.5]) if len(finite) else (math.nan, math.nan)
        rows.append(
            {
                "atom": atom,
                "n_games": len(y),
                "occurrences": int(col.sum()),
                "games_with": int((col > 0).sum()),
                "r": r,
                "p": p,
                "ci_low": float(lo),
                "ci_high": float(hi),
            }
        )
    return pd.DataFrame(rows)


def partial_point_biserial(
    counts: pd.DataFrame, games: pd.DataFrame, covariates: tuple[str, ...] = ("kills", "tasks_done")
) -> pd.DataFrame:
    """r_pb of each atom with impostor win controlling for capability (kills, tasks).

    Both the count and the win are residualised on the covariates by least squares; the
    partial r is the Pearson r of the residuals, tested on n - 2 - k degrees of freedom.

    Returns:
        `atom, n_games, partial_r, p, controls`.
    """
    g = games.set_index("game_id").loc[counts.index]
    y = g["impostor_win"].to_numpy(dtype=float)
    z = np.column_stack([np.ones(len(y))] + [g[c].to_numpy(dtype=float) for c in covariates])
    n, k = len(y), len(covariates)
    ry = y - z @ np.linalg.lstsq(z, y, rcond=None)[0]
    rows = []
    for atom in counts.columns:
        x = counts[atom].to_numpy(dtype=float)
        rx = x - z @ np.linalg.lstsq(z, x, rcond=None)[0]
        df = n - 2 - k
        if df < 1 or np.std(rx) < 1e-12 or np.std(ry) < 1e-12:
            r, p = math.nan, math.nan
        else:
            r = float(np.corrcoef(rx, ry)[0, 1])
            t = r * math.sqrt(df / max(1e-300, 1 - r * r))
            p = float(2 * st.t.sf(abs(t), df))
        rows.append(
            {"atom": atom, "n_games": n, "partial_r": r, "p": p, "controls": "+".join(covariates)}
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- RQ2
def _fisher_ci(r: float, n: int) -> Interval:
    if not math.isfinite(r) or n < 4 or abs(r) >= 1:
        return Interval(math.nan, math.nan)
    z = math.atanh(r)
    se = 1 / math.sqrt(n - 3)
    return Interval(math.tanh(z - 1.96 * se), math.tanh(z + 1.96 * se))


def per_model(
    counts: pd.DataFrame, games: pd.DataFrame, *, n_boot: int = DEFAULT_BOOT, seed: int = 0
) -> pd.DataFrame:
    """Per impostor model: games, impostor win rate with its 95 % bootstrap interval,
    mean per-game count of each atom, and the model's crew win rate (games where it
    played crew)."""
    rng = np.random.default_rng(seed)
    g = games.set_index("game_id")
    rows = []
    for model, group in g.groupby("impostor_model"):
        ids = [i for i in group.index if i in counts.index]
        ci = bootstrap_rate(group["impostor_win"].to_numpy(dtype=float), n_boot=n_boot, rng=rng)
        row: dict[str, object] = {
            "model": model,
            "n_games": len(group),
            "impostor_win_rate": float(group["impostor_win"].mean()),
            "ci_low": ci.low,
            "ci_high": ci.high,
        }
        crew = g[g["crew_model"] == model]
        row["crew_games"] = len(crew)
        row["crew_win_rate"] = float(1 - crew["impostor_win"].mean()) if len(crew) else math.nan
        for atom in counts.columns:
            row[f"mean_{atom}"] = float(counts.loc[ids, atom].mean()) if ids else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def cross_model(models: pd.DataFrame, atoms: list[str]) -> pd.DataFrame:
    """Cross-model Pearson r (RQ2): each atom's per-model mean count against the model's
    impostor win rate, and impostor vs crew win rate; Fisher-z 95 % intervals.

    Returns:
        `measure, n_models, r, p, ci_low, ci_high`.
    """
    rows = []
    wr = models["impostor_win_rate"].to_numpy(dtype=float)

    def pearson(measure: str, a: np.ndarray, b: np.ndarray) -> None:
        ok = np.isfinite(a) & np.isfinite(b)
        n = int(ok.sum())
        if n < 3 or np.std(a[ok]) == 0 or np.std(b[ok]) == 0:
            r, p = math.nan, math.nan
        else:
            res = st.pearsonr(a[ok], b[ok])
            r, p = float(res.statistic), float(res.pvalue)
        ci = _fisher_ci(r, n)
        rows.append(
            {
                "measure": measure,
                "n_models": n,
                "r": r,
                "p": p,
                "ci_low": ci.low,
                "ci_high": ci.high,
            }
        )

    for atom in atoms:
        pearson(f"atom {atom} vs impostor win rate", models[f"mean_{atom}"].to_numpy(float), wr)
    pearson("impostor vs crew win rate", wr, models["crew_win_rate"].to_numpy(dtype=float))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- RQ1: axes
def axis_columns(games: pd.DataFrame) -> list[str]:
    """Axis columns (`impostor.*`, `crew.*`) that vary across the games."""
    return [
        c
        for c in games.columns
        if c.startswith(("impostor.", "crew.")) and games[c].nunique(dropna=True) > 1
    ]


def axis_marginals(
    games: pd.DataFrame, *, n_boot: int = DEFAULT_BOOT, seed: int = 0
) -> pd.DataFrame:
    """Marginal impostor win rate per axis level, and each level against the first.

    The z-test is `statsmodels` two-proportion (unpaired, as in the paper). Where the
    games pair on seed (same seed, same other settings, the axis flipped), the paired
    difference and McNemar's exact p are given too.

    Returns:
        `axis, level, n_games, wins, win_rate, ci_low, ci_high, vs, delta, z, p,
        n_pairs, paired_delta, mcnemar_p, small_sample`.
    """
    from statsmodels.stats.contingency_tables import mcnemar
    from statsmodels.stats.proportion import proportions_ztest

    rng = np.random.default_rng(seed)
    axes = axis_columns(games)
    rows = []
    for axis in axes:
        levels = sorted(games[axis].dropna().unique())
        base = levels[0]
        others = [c for c in axes if c != axis] + ["seed", "impostor_model", "crew_model"]
        others = [c for c in others if c in games.columns]
        for level in levels:
            sub = games[games[axis] == level]
            wins = int(sub["impostor_win"].sum())
            n = len(sub)
            ci = bootstrap_rate(sub["impostor_win"].to_numpy(), n_boot=n_boot, rng=rng)
            row: dict[str, object] = {
                "axis": axis,
                "level": level,
                "n_games": n,
                "wins": wins,
                "win_rate": wins / n if n else math.nan,
                "ci_low": ci.low,
                "ci_high": ci.high,
                "vs": base if level != base else "",
                "delta": math.nan,
                "z": math.nan,
                "p": math.nan,
                "n_pairs": 0,
                "paired_delta": math.nan,
                "mcnemar_p": math.nan,
                "small_sample": n < SMALL_SAMPLE,
            }
            if level != base:
                ref = games[games[axis] == base]
                w0, n0 = int(ref["impostor_win"].sum()), len(ref)
                row["delta"] = wins / n - w0 / n0
                if 0 < wins + w0 < n + n0:
                    z, p = proportions_ztest([wins, w0], [n, n0])
                    row["z"], row["p"] = float(z), float(p)
                merged = sub.merge(ref, on=others, suffixes=("", "_ref"))
                merged = merged.drop_duplicates(subset=["game_id"]).drop_duplicates(
                    subset=["game_id_ref"]
                )
                if len(merged):
                    a = merged["impostor_win"].to_numpy(int)
                    b = merged["impostor_win_ref"].to_numpy(int)
                    table = [
                        [int(((a == 1) & (b == 1)).sum()), int(((a == 1) & (b == 0)).sum())],
                        [int(((a == 0) & (b == 1)).sum()), int(((a == 0) & (b == 0)).sum())],
                    ]
                    row["n_pairs"] = len(merged)
                    row["paired_delta"] = float(a.mean() - b.mean())
                    row["mcnemar_p"] = float(mcnemar(table, exact=True).pvalue)
            rows.append(row)
    return pd.DataFrame(rows)


def logistic_all_axes(games: pd.DataFrame) -> pd.DataFrame:
    """One logistic regression of impostor win on every varying axis jointly, with
    cluster-robust standard errors (clusters: `cluster` if given, else seed).

    Returns:
        `term, coef, se, z, p, ci_low, ci_high, odds_ratio, n_games, n_clusters, error`;
        a fit that cannot be made (too few games, separation) is one row with `error`.
    """
    import statsmodels.api as sm

    axes = axis_columns(games)
    cols = ["term", "coef", "se", "z", "p", "ci_low", "ci_high", "odds_ratio"]
    cols += ["n_games", "n_clusters", "error"]
    if not axes:
        return pd.DataFrame([dict.fromkeys(cols, math.nan) | {"error": "no axis varies"}])
    x = pd.get_dummies(games[axes].astype(str), drop_first=True, dtype=float)
    x = sm.add_constant(x, has_constant="add")
    y = games["impostor_win"].to_numpy(dtype=float)
    groups = games["cluster"] if "cluster" in games else games["seed"]
    codes = pd.factorize(groups)[0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = sm.Logit(y, x).fit(disp=0, cov_type="cluster", cov_kwds={"groups": codes})
        ci = fit.conf_int()
    except Exception as exc:  # the fit's failure is reported in the table, not hidden
        row = dict.fromkeys(cols, math.nan) | {
            "term": "",
            "n_games": len(y),
            "n_clusters": int(codes.max() + 1) if len(codes) else 0,
            "error": f"{type(exc).__name__}: {exc}",
        }
        return pd.DataFrame([row])
    rows = []
    for term in x.columns:
        rows.append(
            {
                "term": term,
                "coef": float(fit.params[term]),
                "se": float(fit.bse[term]),
                "z": float(fit.tvalues[term]),
                "p": float(fit.pvalues[term]),
                "ci_low": float(ci.loc[term, 0]),
                "ci_high": float(ci.loc[term, 1]),
                "odds_ratio": float(np.exp(fit.params[term])),
                "n_games": len(y),
                "n_clusters": int(codes.max() + 1),
                "error": "",
            }
        )
    return pd.DataFrame(rows)


def arm_sizes(games: pd.DataFrame, *, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> pd.DataFrame:
    """Valid games, invalid games, and the impostor win rate over the valid ones (with
    its 95 % bootstrap interval) per arm, flagged when below `SMALL_SAMPLE`."""
    rng = np.random.default_rng(seed)
    rows = []
    for arm, every in games.groupby("arm"):
        group = every[every["status"] == "ok"] if "status" in every else every
        wins = group["impostor_win"].to_numpy(dtype=float)
        ci = bootstrap_rate(wins, n_boot=n_boot, rng=rng)
        rows.append(
            {
                "arm": arm,
                "n_games": len(group),
                "n_invalid": len(every) - len(group),
                "impostor_win_rate": float(wins.mean()) if len(wins) else math.nan,
                "ci_low": ci.low,
                "ci_high": ci.high,
                "small_sample": len(group) < SMALL_SAMPLE,
            }
        )
    return pd.DataFrame(rows)
