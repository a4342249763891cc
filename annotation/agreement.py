"""Agreement between annotators (humans, judges, detectors) over per-game atom counts.

The paper's three measures: Cohen's κ over per-game atom presence (units are
(game, atom) pairs), support-weighted F1 of per-game presence against a reference,
and Spearman ρ over per-game atom counts; plus Krippendorff's α (nominal, presence)
for more than two annotators. Only games both raters annotated are compared.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats as st

PAPER = {
    "human-human": {"kappa": 0.792, "f1_weighted": math.nan, "spearman": 0.803},
    "judge-human": {"kappa": 0.709, "f1_weighted": 0.792, "spearman": 0.713},
}
"""The paper's validation figures (human-human and human vs its LLM judge)."""


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's κ of two binary label vectors (statsmodels on their 2x2 table);
    NaN when both raters are constant and equal (agreement by construction)."""
    from statsmodels.stats.inter_rater import cohens_kappa

    a = np.asarray(a).astype(bool)
    b = np.asarray(b).astype(bool)
    if len(a) == 0:
        return math.nan
    table = np.array(
        [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]], dtype=float
    )
    n = table.sum()
    pe = (table.sum(0) * table.sum(1)).sum() / (n * n)
    if pe >= 1.0:
        return math.nan
    return float(cohens_kappa(table, return_results=False))


def weighted_f1(reference: pd.DataFrame, predicted: pd.DataFrame) -> float:
    """Per-atom F1 of per-game presence against the reference, averaged with weights
    = the reference's positives per atom (atoms the reference never marks weigh 0)."""
    ref = reference.to_numpy() > 0
    pred = predicted.to_numpy() > 0
    support = ref.sum(axis=0)
    if support.sum() == 0:
        return math.nan
    tp = (ref & pred).sum(axis=0)
    fp = (~ref & pred).sum(axis=0)
    fn = (ref & ~pred).sum(axis=0)
    denom = 2 * tp + fp + fn
    f1 = np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)
    return float((f1 * support).sum() / support.sum())


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman ρ (scipy) of two count vectors; NaN when either is constant."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) < 3 or np.std(a) == 0 or np.std(b) == 0:
        return math.nan
    return float(st.spearmanr(a, b).statistic)


def krippendorff_alpha(
    matrix: np.ndarray, level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal"
) -> float:
    """Krippendorff's α of a raters x units matrix (NaN = unit not rated by that rater)."""
    import krippendorff

    m = np.asarray(matrix, dtype=float)
    if m.shape[0] < 2 or np.isfinite(m).sum() < 2:
        return math.nan
    values = np.unique(m[np.isfinite(m)])
    if len(values) < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=m, level_of_measurement=level))


def _common(a: pd.DataFrame, b: pd.DataFrame, atoms: list[str]) -> tuple[pd.DataFrame, ...]:
    games = sorted(set(a.index) & set(b.index))
    return a.loc[games, atoms], b.loc[games, atoms]


def compare(
    reference: pd.DataFrame, other: pd.DataFrame, atoms: list[str]
) -> dict[str, float | int]:
    """κ, weighted F1 (against `reference`) and ρ over the games both annotated."""
    ra, ob = _common(reference, other, atoms)
    return {
        "n_games": len(ra),
        "kappa": cohen_kappa(ra.to_numpy().ravel() > 0, ob.to_numpy().ravel() > 0),
        "f1_weighted": weighted_f1(ra, ob),
        "spearman": spearman(ra.to_numpy().ravel(), ob.to_numpy().ravel()),
    }


def per_atom(reference: pd.DataFrame, other: pd.DataFrame, atoms: list[str]) -> pd.DataFrame:
    """Per-atom κ over per-game presence and ρ over per-game counts."""
    ra, ob = _common(reference, other, atoms)
    rows = []
    for atom in atoms:
        x, y = ra[atom].to_numpy(), ob[atom].to_numpy()
        rows.append(
            {
                "atom": atom,
                "n_games": len(x),
                "games_ref": int((x > 0).sum()),
                "games_other": int((y > 0).sum()),
                "kappa": cohen_kappa(x > 0, y > 0),
                "spearman": spearman(x, y),
            }
        )
    return pd.DataFrame(rows)


_KIND_RANK = {"judge": 0, "human": 1, "detector": 2}


def agreement_table(
    raters: dict[str, pd.DataFrame], kinds: dict[str, str], atoms: list[str]
) -> pd.DataFrame:
    """Pairwise agreement, with the paper's figures beside ours.

    Args:
        raters: Name -> per-game counts (index game, columns atoms).
        kinds: Name -> `human`, `judge` or `detector`.
        atoms: The atoms compared.

    Returns:
        `pair, kind, n_games, kappa, f1_weighted, spearman, alpha, paper_kappa,
        paper_f1_weighted, paper_spearman`; a Krippendorff's α row (in `alpha`) when there
        are more than two humans.
    """
    rows = []
    names = sorted(raters, key=lambda n: (_KIND_RANK.get(kinds[n], 3), n))
    for a, b in combinations(names, 2):
        k1, k2 = sorted((kinds[a], kinds[b]), key=lambda k: _KIND_RANK.get(k, 3))
        kind = f"{k1}-{k2}"
        res = compare(raters[a], raters[b], atoms)
        paper = PAPER.get(kind, {})
        rows.append(
            {
                "pair": f"{a} vs {b}",
                "kind": kind,
                **res,
                "alpha": math.nan,
                "paper_kappa": paper.get("kappa", math.nan),
                "paper_f1_weighted": paper.get("f1_weighted", math.nan),
                "paper_spearman": paper.get("spearman", math.nan),
            }
        )
    humans = [n for n in names if kinds[n] == "human"]
    if len(humans) > 2:
        games = sorted(set().union(*(raters[h].index for h in humans)))
        mat = np.full((len(humans), len(games) * len(atoms)), np.nan)
        for i, h in enumerate(humans):
            df = raters[h].reindex(index=games, columns=atoms)
            vals = df.to_numpy(dtype=float)
            mat[i] = np.where(np.isnan(vals), np.nan, (vals > 0).astype(float)).ravel()
        rows.append(
            {
                "pair": f"krippendorff alpha over {len(humans)} humans",
                "kind": "human-human",
                "n_games": len(games),
                "kappa": math.nan,
                "alpha": krippendorff_alpha(mat),
                "f1_weighted": math.nan,
                "spearman": math.nan,
                "paper_kappa": math.nan,
                "paper_f1_weighted": math.nan,
                "paper_spearman": math.nan,
            }
        )
    return pd.DataFrame(rows)
