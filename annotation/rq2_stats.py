"""RQ2 statistics: models ranked by win rate, and which deception separates winners.

The paper's RQ2 is a model round robin: every model plays impostor (both impostor seats)
against every model as crew (all six crew seats). Its results, computed here as tidy
tables from the study's `games` and one source's per-game atom `counts`:

- each model's impostor and crew win rate (Wilson intervals widened by the design
  effect of shared seeds, as everywhere in `annotation.stats`), ranked by impostor win
  rate into a top-k and a worst-k group (`model_win_rates`);
- the Pearson r of impostor against crew win rate across models, with its Fisher-z
  interval (`win_rate_correlation`);
- per atom, over the top-k and worst-k models only: the cross-model r between a model's
  mean per-game count as impostor and its impostor win rate, and each group's per-game
  mean with their ratio (`top_worst_atoms`);
- each model's cluster shares (a cluster's part of all the atoms the model produced as
  impostor; `cluster_shares`) and, per cluster, the cross-model r of that share with the
  impostor win rate (`cluster_share_correlation`). The share, not the per-game cluster
  count, is the paper's "cluster-level r": its published share table gives back its
  published r to within the rounding of the shares; the per-game r is reported beside.

A game's atoms are its impostors' atoms, so a game counts towards its `impostor_model`.
Win rates always come from every counted game of a model; atom statistics only from
the games the count source annotated. Nothing undefined is dropped in silence: a value
that cannot be computed is NaN and its row's `note` says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as st

from annotation.deception.codebook import Codebook
from annotation.stats import MIN_MODELS, _rate_row, design_clusters, fisher_interval

TOP_K = 3
"""Models in each of the top and worst groups (the paper's top-3 and worst-3)."""
MIN_CORR = 3
"""A Pearson r needs at least this many models."""


@dataclass(frozen=True)
class Correlation:
    """A Pearson r across models with its test and Fisher-z interval."""

    r: float
    """The coefficient (NaN when undefined)."""
    p: float
    """Two-sided p of the t-test of r = 0 (scipy's `pearsonr`)."""
    ci_low: float
    ci_high: float
    n: int
    """Pairs (models) with both values defined."""
    note: str
    """Why r or its interval is missing, and small-sample flags; empty when none."""


def pearson(x: np.ndarray, y: np.ndarray) -> Correlation:
    """Pearson r of `x` and `y` over the pairs where both are finite.

    r is NaN (with a note) below `MIN_CORR` pairs or when either side has no variance;
    the Fisher-z interval needs 4 pairs. Fewer than `MIN_MODELS` pairs is flagged small.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    n = int(ok.sum())
    notes: list[str] = []
    r = p = math.nan
    if n < MIN_CORR:
        notes.append(f"{n} model(s) with both values: r needs at least {MIN_CORR}")
    elif np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        side = "the measure" if np.ptp(x[ok]) == 0 else "the win rate"
        notes.append(f"{side} is the same for every model: r is undefined")
    else:
        res = st.pearsonr(x[ok], y[ok])
        r, p = float(res.statistic), float(res.pvalue)
    lo, hi = fisher_interval(r, n).bounds()
    if math.isfinite(r) and n < 4:
        notes.append("the Fisher-z interval needs at least 4 models")
    if MIN_CORR <= n < MIN_MODELS:
        notes.append(f"only {n} models (< {MIN_MODELS}): read the sign, not the size")
    return Correlation(r, p, lo, hi, n, "; ".join(notes))


def group_size(n_ranked: int, k: int = TOP_K) -> int:
    """How many models go in each of the top and worst groups: `k`, or half of the ranked
    models (rounded down) when there are fewer than `2 k`, so the groups never overlap."""
    return max(0, min(k, n_ranked // 2))


def model_win_rates(games: pd.DataFrame, k: int = TOP_K) -> pd.DataFrame:
    """Per model: impostor and crew games, wins and win rates with 95 % intervals, and its
    rank and group by impostor win rate.

    Every model that appears in either role gets a row. The interval is Wilson's widened
    by the design effect of the study's clusters (`annotation.stats.design_clusters`).
    Rows are sorted by impostor win rate (highest first; ties by name; models with no
    impostor game last, unranked). The first `group_size` ranked models are `top`, the
    last as many `worst`; a tie across a group's boundary is noted on the tied rows.

    Returns:
        `rank, model, group, impostor_games, impostor_wins, impostor_win_rate,
        impostor_ci_low, impostor_ci_high, crew_games, crew_wins, crew_win_rate,
        crew_ci_low, crew_ci_high, ci_method, note`.
    """
    cols = [
        "rank",
        "model",
        "group",
        "impostor_games",
        "impostor_wins",
        "impostor_win_rate",
        "impostor_ci_low",
        "impostor_ci_high",
        "crew_games",
        "crew_wins",
        "crew_win_rate",
        "crew_ci_low",
        "crew_ci_high",
        "ci_method",
        "note",
    ]
    if games.empty:
        return pd.DataFrame(columns=cols)
    keys = design_clusters(games).keys
    imp = games["impostor_model"].astype(str).to_numpy()
    crew = games["crew_model"].astype(str).to_numpy()
    win = games["impostor_win"].to_numpy(dtype=float)
    rows = []
    for model in sorted(set(imp) | set(crew)):
        as_imp = imp == model
        as_crew = crew == model
        ci_imp = _rate_row(win[as_imp], keys[as_imp])
        ci_crew = _rate_row(1.0 - win[as_crew], keys[as_crew])
        notes = []
        if not as_imp.any():
            notes.append("no game as impostor: unranked")
        if not as_crew.any():
            notes.append("no game as crew")
        methods = sorted({c.method for c in (ci_imp, ci_crew) if c.value is not None})
        rows.append(
            {
                "model": model,
                "impostor_games": int(as_imp.sum()),
                "impostor_wins": int(win[as_imp].sum()),
                "impostor_win_rate": math.nan if ci_imp.value is None else ci_imp.value,
                "impostor_ci_low": ci_imp.bounds()[0],
                "impostor_ci_high": ci_imp.bounds()[1],
                "crew_games": int(as_crew.sum()),
                "crew_wins": int((1.0 - win[as_crew]).sum()),
                "crew_win_rate": math.nan if ci_crew.value is None else ci_crew.value,
                "crew_ci_low": ci_crew.bounds()[0],
                "crew_ci_high": ci_crew.bounds()[1],
                "ci_method": " / ".join(methods),
                "note": "; ".join(notes),
            }
        )
    out = pd.DataFrame(rows)
    out["_unranked"] = out["impostor_win_rate"].isna()
    out["_neg"] = -out["impostor_win_rate"].fillna(0.0)
    out = out.sort_values(["_unranked", "_neg", "model"]).drop(columns=["_unranked", "_neg"])
    out = out.reset_index(drop=True)
    ranked = out["impostor_win_rate"].notna().to_numpy()
    n_ranked = int(ranked.sum())
    out["rank"] = [float(i + 1) if ranked[i] else math.nan for i in range(len(out))]
    kk = group_size(n_ranked, k)
    group = [""] * len(out)
    for i in range(kk):
        group[i] = "top"
        group[n_ranked - 1 - i] = "worst"
    out["group"] = group
    rates = out["impostor_win_rate"].to_numpy(dtype=float)
    # (last row inside, first row outside) of each group's edge
    edges = {"top": (kk - 1, kk), "worst": (n_ranked - kk, n_ranked - kk - 1)}
    for name, (inside, outside) in edges.items():
        if kk == 0 or not 0 <= outside < n_ranked or rates[inside] != rates[outside]:
            continue
        extra = f"tied across the {name}-{kk} boundary (ties ordered by name)"
        for row in np.flatnonzero(ranked & (rates == rates[inside])):
            out.at[row, "note"] = "; ".join(s for s in (out.at[row, "note"], extra) if s)
    return out[cols]


def win_rate_correlation(rates: pd.DataFrame) -> pd.DataFrame:
    """Pearson r of impostor against crew win rate across the models that played both.

    Returns:
        One row: `measure, n_models, r, p, ci_low, ci_high, small_sample, note`.
    """
    c = pearson(
        rates["impostor_win_rate"].to_numpy(dtype=float),
        rates["crew_win_rate"].to_numpy(dtype=float),
    )
    return pd.DataFrame(
        [
            {
                "measure": "impostor vs crew win rate",
                "n_models": c.n,
                "r": c.r,
                "p": c.p,
                "ci_low": c.ci_low,
                "ci_high": c.ci_high,
                "small_sample": c.n < MIN_MODELS,
                "note": c.note,
            }
        ]
    )


def impostor_counts(counts: pd.DataFrame, games: pd.DataFrame) -> pd.DataFrame:
    """The annotated games' atom counts with the game's `impostor_model` beside: one row
    per game both in `games` and in `counts` (index `game_id`)."""
    models = games.set_index(games["game_id"].astype(str))["impostor_model"].astype(str)
    idx = counts.index.astype(str)
    keep = idx.isin(models.index)
    out = counts.loc[keep].copy()
    out.index = idx[keep]
    out.index.name = "game_id"
    out["impostor_model"] = models.reindex(out.index).to_numpy()
    return out


def top_worst_atoms(
    counts: pd.DataFrame, games: pd.DataFrame, rates: pd.DataFrame, book: Codebook
) -> pd.DataFrame:
    """Per atom, over the top and worst models (`rates["group"]`) and their annotated
    games: the cross-model r between a model's mean per-game count as impostor and its
    impostor win rate, and each group's per-game mean with their ratio.

    A group's mean is over all its models' annotated games pooled (with equal games per
    model, as in a balanced round robin, that is the mean of the model means). The ratio
    is top over worst: `inf` when only the top group shows the atom, NaN when neither
    does; the `note` says which. A grouped model with no annotated game is left out of r
    and the means, and noted on every row.

    Returns:
        `atom, cluster, n_models, r, p, ci_low, ci_high, top_mean, worst_mean, ratio,
        top_games, worst_games, note`.
    """
    letters = [a for a in book.letters if a in counts.columns]
    ann = impostor_counts(counts, games)
    grouped = rates[rates["group"].isin(["top", "worst"])]
    per_model = ann.groupby("impostor_model")[letters].mean()
    missing = [m for m in grouped["model"] if m not in per_model.index]
    present = grouped[~grouped["model"].isin(missing)]
    wr = present.set_index("model")["impostor_win_rate"]
    means = per_model.reindex(wr.index)
    in_group = {
        g: ann[ann["impostor_model"].isin(present.loc[present["group"] == g, "model"])]
        for g in ("top", "worst")
    }
    shared = f"no annotated game for {', '.join(missing)}" if missing else ""
    rows = []
    for atom in letters:
        c = pearson(means[atom].to_numpy(dtype=float), wr.to_numpy(dtype=float))
        top = float(in_group["top"][atom].mean()) if len(in_group["top"]) else math.nan
        worst = float(in_group["worst"][atom].mean()) if len(in_group["worst"]) else math.nan
        notes = [s for s in (shared, c.note) if s]
        if not (math.isfinite(top) and math.isfinite(worst)):
            ratio = math.nan
            notes.append("a group has no annotated game: no ratio")
        elif worst > 0:
            ratio = top / worst
        elif top > 0:
            ratio = math.inf
            notes.append("only the top group shows it: ratio infinite")
        else:
            ratio = math.nan
            notes.append("neither group shows it: no ratio")
        rows.append(
            {
                "atom": atom,
                "cluster": book.atom(atom).cluster,
                "n_models": c.n,
                "r": c.r,
                "p": c.p,
                "ci_low": c.ci_low,
                "ci_high": c.ci_high,
                "top_mean": top,
                "worst_mean": worst,
                "ratio": ratio,
                "top_games": len(in_group["top"]),
                "worst_games": len(in_group["worst"]),
                "note": "; ".join(notes),
            }
        )
    return pd.DataFrame(rows)


def cluster_shares(
    counts: pd.DataFrame, games: pd.DataFrame, rates: pd.DataFrame, book: Codebook
) -> pd.DataFrame:
    """Per model with annotated impostor games, per cluster: the atoms of that cluster the
    model produced as impostor, their share of all its atoms, and per game.

    Models are in the order of `rates` (by impostor win rate). A model whose games show
    no atom at all has NaN shares and a note.

    Returns:
        `model, group, impostor_win_rate, cluster, channel, n_games, count, total,
        share, per_game, note`.
    """
    letters = [a for a in book.letters if a in counts.columns]
    ann = impostor_counts(counts, games)
    by_cluster = pd.DataFrame(index=ann.index)
    for cid in book.clusters:
        members = [a.letter for a in book.atoms if a.cluster == cid and a.letter in letters]
        by_cluster[cid] = ann[members].sum(axis=1) if members else 0
    by_cluster["impostor_model"] = ann["impostor_model"]
    totals = by_cluster.groupby("impostor_model")[list(book.clusters)].sum()
    n_games = by_cluster.groupby("impostor_model").size()
    info = rates.set_index("model")
    rows = []
    for model in [m for m in rates["model"] if m in totals.index]:
        total = int(totals.loc[model].sum())
        for cid, cluster in book.clusters.items():
            count = int(totals.at[model, cid])
            games_n = int(n_games.loc[model])
            rows.append(
                {
                    "model": model,
                    "group": info.at[model, "group"],
                    "impostor_win_rate": float(info.at[model, "impostor_win_rate"]),
                    "cluster": cid,
                    "channel": cluster.channel,
                    "n_games": games_n,
                    "count": count,
                    "total": total,
                    "share": count / total if total else math.nan,
                    "per_game": count / games_n,
                    "note": "" if total else "no atom in its annotated games: share undefined",
                }
            )
    cols = ["model", "group", "impostor_win_rate", "cluster", "channel", "n_games"]
    cols += ["count", "total", "share", "per_game", "note"]
    return pd.DataFrame(rows, columns=cols)


def cluster_share_correlation(
    shares: pd.DataFrame, book: Codebook, *, top_worst_only: bool = True
) -> pd.DataFrame:
    """Per cluster: the cross-model Pearson r of its share (the paper's cluster-level r)
    and, beside, of its per-game count, each against the impostor win rate.

    Args:
        shares: `cluster_shares` output.
        book: The codebook (cluster order).
        top_worst_only: Over the top and worst models only (the paper's N = 6); else over
            every model in `shares`.

    Returns:
        `cluster, scope, n_models, r, p, ci_low, ci_high, r_per_game, p_per_game, note`.
    """
    scope = "top+worst" if top_worst_only else "all annotated"
    sub = shares[shares["group"].isin(["top", "worst"])] if top_worst_only else shares
    rows = []
    for cid in book.clusters:
        part = sub[sub["cluster"] == cid]
        wr = part["impostor_win_rate"].to_numpy(dtype=float)
        c = pearson(part["share"].to_numpy(dtype=float), wr)
        g = pearson(part["per_game"].to_numpy(dtype=float), wr)
        undefined = int(part["share"].isna().sum())
        notes = [c.note] if c.note else []
        if undefined:
            notes.append(f"{undefined} model(s) without atoms left out")
        rows.append(
            {
                "cluster": cid,
                "scope": scope,
                "n_models": c.n,
                "r": c.r,
                "p": c.p,
                "ci_low": c.ci_low,
                "ci_high": c.ci_high,
                "r_per_game": g.r,
                "p_per_game": g.p,
                "note": "; ".join(notes),
            }
        )
    return pd.DataFrame(rows)
