"""The paper's RQ2 results (model round robin) as registered results.

Five results, each one function over the study's `StudyData` (statistics in
`annotation.rq2_stats`), each writing its tables and figures and returning its report
section; the paper's numbers stand beside ours wherever it gives them:

- `rq2.model_win_rates`: per-model impostor and crew win rates, ranked, with the top-3
  and worst-3 groups (`tables/rq2_model_win_rates`);
- `rq2.win_rate_correlation`: Pearson r of impostor against crew win rate across
  models with its Fisher-z interval, and the scatter (`rq2_win_rate_correlation`,
  `figures/rq2_win_rates.png`);
- `rq2.top_worst`: per atom, the cross-model r over the top and worst models and the
  groups' per-game means and ratio (`rq2_top_worst`);
- `rq2.cluster_shares`: each model's cluster shares of its atoms as impostor
  (`rq2_cluster_shares`, `figures/rq2_cluster_shares.png`);
- `rq2.cluster_share_correlation`: per cluster, the cross-model r of the share with the
  impostor win rate (`rq2_cluster_share_correlation`).

Atom results read the primary counts (`StudyData.counts`); when the study also has
counts kept by the grounded validity filters (`counts_filtered`), the atom and cluster
tables are repeated on those under stems ending `_filtered`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

from annotation import rq2_stats as r2
from annotation.report.document import Figure, Section, Table, Text, Warning_
from annotation.report.results import ResultOutput, StudyData, result
from annotation.stats import FEW_CLUSTERS, MIN_MODELS, SMALL_SAMPLE, design_clusters

PAPER_IMPOSTOR_WR: dict[str, float] = {
    "Gemini-3-flash": 0.708,
    "Kimi-K2.5": 0.667,
    "Gemini-3.1-flash-lite": 0.656,
    "Gemini-2.5-flash": 0.469,
    "Qwen3.5-9B": 0.365,
    "Gemma4-26B-A4B": 0.365,
}
"""The paper's top-3 and worst-3 models by impostor win rate (96 impostor games each)."""
PAPER_GROUP: dict[str, str] = {
    "Gemini-3-flash": "top",
    "Kimi-K2.5": "top",
    "Gemini-3.1-flash-lite": "top",
    "Gemini-2.5-flash": "worst",
    "Qwen3.5-9B": "worst",
    "Gemma4-26B-A4B": "worst",
}
"""The paper's group of each of those models."""
PAPER_WIN_RATE_R = (0.71, 0.01)
"""Impostor vs crew win rate across the 12 models: (Pearson r, p)."""
PAPER_ATOMS: dict[str, tuple[float, float, float, float]] = {
    "A": (0.72, 12.64, 1.91, 6.6),
    "F": (0.59, 2.01, 1.75, 1.2),
    "E": (0.52, 1.70, 0.62, 2.7),
    "R": (0.49, 1.27, 0.85, 1.5),
    "B": (-0.62, 6.90, 9.66, 0.71),
    "G": (-0.58, 0.35, 0.58, 0.60),
    "Q": (-0.54, 0.08, 0.47, 0.17),
    "M": (-0.52, 7.16, 7.57, 0.95),
    "U": (-0.50, 0.05, 0.17, 0.29),
}
"""Top-3 vs worst-3 (576 judge-annotated games): atom -> (cross-model r, top-3 per-game
mean, worst-3 per-game mean, ratio), as published; atoms it does not list are blank."""
PAPER_CLUSTER_R: dict[str, float] = {
    "NV-1": 0.54,
    "NV-2": -0.37,
    "NV-3": 0.44,
    "V-1": -0.42,
    "V-2": -0.52,
    "V-3": -0.48,
}
"""Cluster-level cross-model r against impostor win rate over the 6 models."""
PAPER_CLUSTER_SHARES: dict[str, dict[str, float]] = {
    "Gemini-3-flash": {
        "NV-1": 39.7,
        "NV-2": 27.3,
        "NV-3": 2.9,
        "V-1": 29.3,
        "V-2": 0.4,
        "V-3": 0.4,
    },
    "Kimi-K2.5": {"NV-1": 25.3, "NV-2": 28.8, "NV-3": 2.0, "V-1": 43.2, "V-2": 0.4, "V-3": 0.4},
    "Gemini-3.1-flash-lite": {
        "NV-1": 38.4,
        "NV-2": 19.8,
        "NV-3": 5.2,
        "V-1": 33.2,
        "V-2": 0.3,
        "V-3": 3.1,
    },
    "Gemini-2.5-flash": {
        "NV-1": 14.5,
        "NV-2": 30.7,
        "NV-3": 2.3,
        "V-1": 50.7,
        "V-2": 0.5,
        "V-3": 1.3,
    },
    "Qwen3.5-9B": {"NV-1": 25.8, "NV-2": 24.8, "NV-3": 2.7, "V-1": 43.5, "V-2": 1.0, "V-3": 2.2},
    "Gemma4-26B-A4B": {
        "NV-1": 29.2,
        "NV-2": 31.7,
        "NV-3": 1.6,
        "V-1": 34.7,
        "V-2": 0.3,
        "V-3": 2.5,
    },
}
"""Per-model cluster shares of the atoms as impostor, in percent, as published."""

_SUFFIXES = ("preview", "latest", "it")


def _norm(name: str) -> str:
    tail = re.split(r"[:/]", name.strip().lower())[-1]
    flat = re.sub(r"[^a-z0-9]", "", tail)
    for suffix in _SUFFIXES:
        if flat.endswith(suffix) and len(flat) > len(suffix):
            flat = flat[: -len(suffix)]
    return flat


def paper_model(model: str) -> str | None:
    """The paper's name for a study's model id, when it is one of the six the paper
    reports on: equal after dropping any `provider:` or `org/` prefix, case, punctuation
    and a trailing `preview`, `latest` or `it` (`google/gemini-3-flash-preview` is
    `Gemini-3-flash`, `google/gemma-4-26b-a4b-it` is `Gemma4-26B-A4B`); None otherwise."""
    key = _norm(model)
    for name in PAPER_IMPOSTOR_WR:
        if _norm(name) == key:
            return name
    return None


def paper_shares_r() -> dict[str, float]:
    """The cross-model r of each cluster's share computed from the paper's own published
    shares and win rates: the check that the share is what its cluster-level r is over."""
    models = list(PAPER_CLUSTER_SHARES)
    wr = np.array([PAPER_IMPOSTOR_WR[m] for m in models])
    out = {}
    for cid in PAPER_CLUSTER_R:
        share = np.array([PAPER_CLUSTER_SHARES[m][cid] for m in models])
        out[cid] = r2.pearson(share, wr).r
    return out


# ---------------------------------------------------------------------- shared pieces
def _rates(data: StudyData) -> pd.DataFrame:
    rates = r2.model_win_rates(data.games)
    names = [paper_model(m) for m in rates["model"]]
    rates["paper_impostor_win_rate"] = [PAPER_IMPOSTOR_WR[n] if n else math.nan for n in names]
    rates["paper_group"] = [PAPER_GROUP[n] if n else "" for n in names]
    return rates


def _group_warnings(rates: pd.DataFrame) -> list[Warning_]:
    ranked = int(rates["rank"].notna().sum()) if len(rates) else 0
    k = r2.group_size(ranked)
    out = []
    if k < r2.TOP_K:
        out.append(
            Warning_(
                f"{ranked} model(s) with impostor games: the top and worst groups hold "
                f"{k} model(s) each instead of {r2.TOP_K}."
            )
        )
    tied = rates[rates["note"].astype(str).str.contains("boundary")]
    if len(tied):
        out.append(
            Warning_(
                "Win-rate tie across a group boundary (" + ", ".join(tied["model"]) + "): "
                "group membership among the tied models is by name, not by play."
            )
        )
    return out


def _groups_text(rates: pd.DataFrame) -> str:
    top = ", ".join(rates.loc[rates["group"] == "top", "model"]) or "none"
    worst = ", ".join(rates.loc[rates["group"] == "worst", "model"]) or "none"
    return f"Top group: {top}. Worst group: {worst}."


def _figure_dir(data: StudyData) -> Path:
    data.figdir.mkdir(parents=True, exist_ok=True)
    return data.figdir


def _pyplot() -> ModuleType:
    """matplotlib's pyplot on the non-interactive Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _fmt_r(r: float) -> str:
    return f"{r:+.2f}" if math.isfinite(r) else "n/a"


def _scatter(rates: pd.DataFrame, corr: pd.Series, path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4.8))
    x = rates["crew_win_rate"].to_numpy(dtype=float)
    y = rates["impostor_win_rate"].to_numpy(dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    colours = {"top": "C2", "worst": "C3"}
    for i in np.flatnonzero(ok):
        group = str(rates["group"].iloc[i])
        ax.scatter([x[i]], [y[i]], color=colours.get(group, "C0"), zorder=3)
        ax.annotate(
            str(rates["model"].iloc[i]),
            (x[i], y[i]),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
    if ok.sum() >= 2 and np.ptp(x[ok]) > 0:
        slope, intercept = np.polyfit(x[ok], y[ok], 1)
        xs = np.linspace(0, 1, 50)
        ax.plot(xs, slope * xs + intercept, color="0.4", linestyle="--", label="least-squares fit")
        ax.legend(fontsize=7, loc="lower right")
    if not ok.any():
        ax.text(0.5, 0.5, "no model played both roles", ha="center", va="center")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("crew win rate (games as crew)")
    ax.set_ylabel("impostor win rate (games as impostor)")
    ax.set_title(
        f"Impostor vs crew win rate per model (r = {_fmt_r(float(corr['r']))}, "
        f"n = {int(corr['n_models'])})"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _stacked(shares: pd.DataFrame, clusters: list[str], path: Path, title: str) -> Path:
    plt = _pyplot()
    models = list(dict.fromkeys(shares["model"]))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(models) + 2.5), 4.2))
    bottom = np.zeros(len(models))
    for j, cid in enumerate(clusters):
        part = shares[shares["cluster"] == cid].set_index("model")["share"].reindex(models)
        vals = part.fillna(0.0).to_numpy(dtype=float) * 100
        ax.bar(np.arange(len(models)), vals, bottom=bottom, color=f"C{j}", label=cid)
        bottom += vals
    labels = []
    for m in models:
        first = shares.loc[shares["model"] == m].iloc[0]
        label = f"{m} ({first['group']})" if first["group"] else m
        labels.append(label if first["total"] else f"{label}\n(no atoms)")
    ax.set_xticks(np.arange(len(models)), labels, rotation=30, ha="right", fontsize=7)
    if not models:
        ax.text(
            0.5,
            0.5,
            "no annotated impostor games",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of the model's atoms as impostor (%)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="cluster")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _variants(data: StudyData) -> list[tuple[str, pd.DataFrame, str]]:
    """(stem suffix, counts, description) for the primary counts and, when the study has
    them, the counts kept by the grounded validity filters."""
    out = [("", data.counts, f"`{data.counts_source}` counts")]
    if data.counts_filtered is not None:
        out.append(
            (
                "_filtered",
                data.counts_filtered,
                f"`{data.counts_source}` counts, findings passing the grounded validity "
                "filters only",
            )
        )
    return out


# ---------------------------------------------------------------------- results
@result("rq2.model_win_rates", "Per-model impostor and crew win rates", designs=("rq2",))
def model_win_rates(data: StudyData) -> ResultOutput:
    """Per model: impostor and crew games, wins and win rates with 95 % intervals, ranked
    by impostor win rate, with the top-3 / worst-3 groups and the paper's rate beside."""
    rates = _rates(data)
    sec = Section("RQ2: per-model win rates")
    sec.blocks.append(
        Text(
            "Each model's win rate as impostor (games where it held both impostor seats) "
            "and as crew (games where it held every crew seat). Intervals: Wilson 95 %, "
            "widened by the design effect when games share seeds. " + _groups_text(rates)
        )
    )
    sec.blocks += _group_warnings(rates)
    none = rates[rates["impostor_games"] == 0]
    if len(none):
        sec.blocks.append(
            Warning_(
                "No game as impostor (unranked, win rate undefined): " + ", ".join(none["model"])
            )
        )
    clusters = design_clusters(data.games) if len(data.games) else None
    if clusters is not None and clusters.by != "game" and clusters.n < FEW_CLUSTERS:
        sec.blocks.append(
            Warning_(
                f"The games share seeds: {clusters.n} {clusters.by} cluster(s) "
                f"(< {FEW_CLUSTERS}). The design effect that widens each interval is "
                "estimated from so few clusters that it is itself noisy (it is never "
                "taken below 1)."
            )
        )
    small = rates[(rates["impostor_games"] > 0) & (rates["impostor_games"] < SMALL_SAMPLE)]
    if len(small):
        sec.blocks.append(
            Warning_(
                f"{len(small)} model(s) with fewer than {SMALL_SAMPLE} impostor games: "
                "their rates and ranks are too small a sample to read."
            )
        )
    sec.blocks.append(Table(rates, "Per-model win rates, by impostor win rate (paper beside)"))
    return ResultOutput(tables={"rq2_model_win_rates": rates}, sections=[sec])


@result(
    "rq2.win_rate_correlation",
    "Impostor vs crew win rate across models (Pearson r, Fisher-z interval)",
    designs=("rq2",),
)
def win_rate_correlation(data: StudyData) -> ResultOutput:
    """Pearson r of impostor against crew win rate across the models, with its Fisher-z
    95 % interval, the paper's r and p beside, and the scatter figure."""
    rates = _rates(data)
    corr = r2.win_rate_correlation(rates)
    corr["paper_r"], corr["paper_p"] = PAPER_WIN_RATE_R
    row = corr.iloc[0]
    path = _scatter(rates, row, _figure_dir(data) / "rq2_win_rates.png")
    sec = Section("RQ2: impostor vs crew win rate")
    if int(row["n_models"]) < MIN_MODELS:
        sec.blocks.append(
            Warning_(
                f"Only {int(row['n_models'])} model(s) played both roles (< {MIN_MODELS}): "
                "the correlation is a small sample; read its sign, not its size."
            )
        )
    if row["note"] and (int(row["n_models"]) < 4 or not math.isfinite(row["r"])):
        sec.blocks.append(Text(f"Note: {row['note']}."))
    sec.blocks.append(
        Table(corr, "Pearson r of per-model impostor and crew win rate (Fisher-z 95 % interval)")
    )
    sec.blocks.append(
        Figure(
            path,
            "Per-model crew win rate (x) against impostor win rate (y); green top group, "
            "red worst group, dashed least-squares line",
        )
    )
    return ResultOutput(tables={"rq2_win_rate_correlation": corr}, sections=[sec], figures=[path])


@result(
    "rq2.top_worst",
    "Top vs worst impostor models: per-atom cross-model r and per-game means",
    designs=("rq2",),
)
def top_worst(data: StudyData) -> ResultOutput:
    """Per atom, over the top-3 and worst-3 models' annotated games: the cross-model r of
    a model's per-game count as impostor with its impostor win rate, each group's
    per-game mean and their ratio, the paper's beside."""
    rates = _rates(data)
    out = ResultOutput()
    for suffix, counts, what in _variants(data):
        table = r2.top_worst_atoms(counts, data.games, rates, data.book)
        paper = [PAPER_ATOMS.get(a) for a in table["atom"]]
        for i, col in enumerate(("paper_r", "paper_top_mean", "paper_worst_mean", "paper_ratio")):
            table[col] = [p[i] if p else math.nan for p in paper]
        out.tables[f"rq2_top_worst{suffix}"] = table
        sec = Section(f"RQ2: top vs worst models by atom{' (filtered)' if suffix else ''}")
        sec.blocks.append(
            Text(
                f"From {what}. {_groups_text(rates)} r is across those models: a model's "
                "mean per-game atom count as impostor against its impostor win rate (over "
                "all its games). Group means pool the group's annotated games; ratio = "
                "top / worst (inf when only the top group shows the atom, blank when "
                "neither does)."
            )
        )
        sec.blocks += _group_warnings(rates)
        n = int(table["n_models"].max()) if len(table) else 0
        if n < MIN_MODELS:
            sec.blocks.append(
                Warning_(
                    f"r rests on {n} model(s) (< {MIN_MODELS}): a small sample; read the "
                    "sign, not the size."
                )
            )
        missing = table["note"].astype(str).str.extract(r"(no annotated game for [^;]+)")[0]
        if missing.notna().any():
            sec.blocks.append(Warning_(str(missing.dropna().iloc[0]).capitalize() + "."))
        sec.blocks.append(
            Table(table, "Per atom: cross-model r (Fisher-z 95 %), group means, ratio")
        )
        out.sections.append(sec)
    return out


@result(
    "rq2.cluster_shares",
    "Per-model cluster shares of the atoms as impostor",
    designs=("rq2",),
)
def cluster_shares(data: StudyData) -> ResultOutput:
    """Each model's share of each cluster among its atoms as impostor (and per game),
    with the paper's shares beside, and the stacked-bar figure."""
    rates = _rates(data)
    clusters = list(data.book.clusters)
    out = ResultOutput()
    for suffix, counts, what in _variants(data):
        shares = r2.cluster_shares(counts, data.games, rates, data.book)
        shares["paper_share"] = [
            PAPER_CLUSTER_SHARES[n][c] / 100 if (n := paper_model(m)) else math.nan
            for m, c in zip(shares["model"], shares["cluster"], strict=True)
        ]
        out.tables[f"rq2_cluster_shares{suffix}"] = shares
        title = "Cluster shares of each model's atoms as impostor"
        path = _stacked(
            shares,
            clusters,
            _figure_dir(data) / f"rq2_cluster_shares{suffix}.png",
            title + (" (filtered)" if suffix else ""),
        )
        out.figures.append(path)
        sec = Section(f"RQ2: cluster shares{' (filtered)' if suffix else ''}")
        sec.blocks.append(
            Text(
                f"From {what}. A cluster's share is its atoms over all the model's atoms "
                "across its annotated impostor games; models by impostor win rate."
            )
        )
        empty = shares.loc[shares["total"] == 0, "model"].unique()
        if len(empty):
            sec.blocks.append(
                Warning_(
                    "No atom in the annotated games of " + ", ".join(empty) + ": shares undefined."
                )
            )
        sec.blocks.append(Table(shares, "Per model and cluster: count, share, per game"))
        sec.blocks.append(
            Figure(
                path,
                "Cluster shares per model, stacked to 100 % (models by impostor "
                "win rate, highest left)",
            )
        )
        out.sections.append(sec)
    return out


@result(
    "rq2.cluster_share_correlation",
    "Cluster share vs impostor win rate across models (Pearson r)",
    designs=("rq2",),
)
def cluster_share_correlation(data: StudyData) -> ResultOutput:
    """Per cluster: the cross-model r of its share with the impostor win rate over the
    top and worst models (and over every annotated model when there are more), the
    per-game count's r beside, and the paper's r."""
    rates = _rates(data)
    check = paper_shares_r()
    out = ResultOutput()
    for suffix, counts, what in _variants(data):
        shares = r2.cluster_shares(counts, data.games, rates, data.book)
        parts = [r2.cluster_share_correlation(shares, data.book, top_worst_only=True)]
        grouped = shares.loc[shares["group"].isin(["top", "worst"]), "model"].nunique()
        if shares["model"].nunique() > grouped:
            parts.append(r2.cluster_share_correlation(shares, data.book, top_worst_only=False))
        table = pd.concat(parts, ignore_index=True)
        table["paper_r"] = table["cluster"].map(PAPER_CLUSTER_R)
        table["paper_shares_r"] = table["cluster"].map(check)
        out.tables[f"rq2_cluster_share_correlation{suffix}"] = table
        sec = Section(f"RQ2: cluster share vs impostor win rate{' (filtered)' if suffix else ''}")
        sec.blocks.append(
            Text(
                f"From {what}. r is over the models, between a cluster's share of the "
                "model's atoms and its impostor win rate: the quantity behind the paper's "
                "cluster-level r (`paper_shares_r`, computed from the paper's published "
                "shares, gives back its `paper_r` to within their rounding); `r_per_game` "
                "uses the cluster's per-game count instead."
            )
        )
        sec.blocks += _group_warnings(rates)
        n = int(table["n_models"].iloc[0]) if len(table) else 0
        if n < MIN_MODELS:
            sec.blocks.append(
                Warning_(
                    f"r over the top and worst groups rests on {n} model(s) (< {MIN_MODELS}): "
                    "a small sample; read the sign, not the size."
                )
            )
        sec.blocks.append(
            Table(table, "Per cluster: cross-model r of share with impostor win rate")
        )
        out.sections.append(sec)
    return out
