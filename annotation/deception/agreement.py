"""Agreement between annotators (humans, judges, judge panels, detectors) over per-game
atom counts.

The paper's three measures: Cohen's κ over per-game atom presence (units are
(game, atom) pairs), support-weighted F1 of per-game presence against a reference,
and Spearman ρ over per-game atom counts (pooled over every (game, atom) unit, and per
atom); plus Krippendorff's α (nominal, presence). QUACK's units beside them: precision
and recall of the other rater's per-(game, atom) presence against the reference's,
pooled over every unit (with the true-positive, false-positive and false-negative
counts, so "199 of 200" can be read). Only games both raters read are compared; a game a
human read and found nothing in counts as all-negative.

Which rater is the reference matters for F1, precision and recall (they swap): a human
is the reference against a judge, a panel or a detector, a detector (what the engine
can prove) against a judge or a panel, and of two humans the first by name.
`f1_weighted` scores the other rater against the reference; `f1_weighted_reversed` is
the same with the roles swapped, so both directions are shown, labelled by the
`reference` column. `rater_table` puts each judge and panel against each human in one
row.

Intervals are 95 % percentile bootstraps over games (a game's atoms are resampled
together), with the share of degenerate resamples counted (`annotation.stats`).
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats as st

from annotation.stats import DEFAULT_BOOT, Interval, percentile_interval

PAPER = {
    "human-human": {"kappa": 0.792, "f1_weighted": math.nan, "spearman": 0.803},
    "judge-human": {"kappa": 0.709, "f1_weighted": 0.792, "spearman": 0.713},
}
"""The paper's validation figures (human-human and human vs its LLM judge; its F1 is
read as the judge scored against the human labels)."""

_REFERENCE_RANK = {"human": 0, "detector": 1, "judge": 2, "panel": 2}
"""Who is the reference of a pair: the lower rank."""
_KIND_RANK = {"judge": 0, "panel": 1, "human": 2, "detector": 3}
"""Order of the two names in a pair's label and of the kind (`judge-human`,
`panel-human`)."""
MACHINE_KINDS = ("judge", "panel")
"""Raters scored against the humans in `rater_table`."""


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
    """Per-atom F1 of per-game presence of `predicted` against `reference`, averaged with
    weights = the reference's positives per atom (atoms the reference never marks weigh
    0); sklearn's `f1_score(reference, predicted, average="weighted")` on the games x
    atoms presence matrices."""
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


def precision_recall(reference: np.ndarray, other: np.ndarray) -> tuple[float, float]:
    """Precision and recall of `other`'s presence against `reference`'s, pooled over
    every unit; NaN where `other` (precision) or `reference` (recall) marks nothing."""
    ref = np.asarray(reference).astype(bool)
    oth = np.asarray(other).astype(bool)
    tp = float(np.sum(ref & oth))
    marked, truth = float(np.sum(oth)), float(np.sum(ref))
    return (tp / marked if marked else math.nan, tp / truth if truth else math.nan)


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


# ------------------------------------------------------------- vectorised bootstrap
def _game_draws(n_games: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Multiplicities of each game in each resample (B x games): `n_games` draws with
    replacement per resample (`rng.integers(0, n_games, (n_boot, n_games))`)."""
    picks = rng.integers(0, n_games, size=(n_boot, n_games))
    picks += (np.arange(n_boot) * n_games)[:, None]
    w = np.bincount(picks.ravel(), minlength=n_boot * n_games).reshape(n_boot, n_games)
    return w.astype(float)


def _kappa_from_cells(a11: np.ndarray, a10: np.ndarray, a01: np.ndarray, a00: np.ndarray) -> Any:
    """Cohen's κ from 2x2 cell counts (elementwise over any shape); NaN when pe = 1."""
    n = a11 + a10 + a01 + a00
    with np.errstate(invalid="ignore", divide="ignore"):
        po = (a11 + a00) / n
        pe = ((a11 + a10) * (a11 + a01) + (a01 + a00) * (a10 + a00)) / (n * n)
        k = (po - pe) / (1 - pe)
    return np.where(pe < 1 - 1e-12, k, np.nan)


def _ratio(num: np.ndarray, den: np.ndarray) -> Any:
    """num / den elementwise, NaN where den is 0."""
    return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _f1_per_atom(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> Any:
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)


def _f1_weighted_from_cells(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> Any:
    """Support-weighted F1 from per-atom cells (... x atoms) -> (...); NaN when the
    reference marks nothing."""
    support = tp + fn
    f1 = _f1_per_atom(tp, fp, fn)
    tot = support.sum(axis=-1)
    return np.where(tot > 0, (f1 * support).sum(axis=-1) / np.where(tot > 0, tot, 1), np.nan)


def _resample_ranks(values: np.ndarray, w: np.ndarray) -> Any:
    """Average ranks of each unit's value in each resample, without sorting.

    A resample repeats unit i `w[b, i]` times; in it, a value v has average rank
    `(copies of smaller values) + (copies of v + 1) / 2`, which is what
    `scipy.stats.rankdata` gives the expanded sample. Counts take few distinct values,
    so this is a small cumulative sum per resample.

    Args:
        values: One value per unit (n,).
        w: Multiplicities (B x n).

    Returns:
        B x n ranks.
    """
    uniq, code = np.unique(values, return_inverse=True)
    onehot = np.zeros((len(values), len(uniq)))
    onehot[np.arange(len(values)), code] = 1.0
    per_value = w @ onehot  # B x distinct values
    below = np.cumsum(per_value, axis=1) - per_value
    rank = below + (per_value + 1) / 2
    out: np.ndarray = rank[:, code]
    return out


def _weighted_pearson_rows(w: np.ndarray, a: np.ndarray, b: np.ndarray) -> Any:
    """Pearson r of a and b (B x n) under weights w (B x n), row by row; NaN where either
    has no variance."""
    sw = w.sum(axis=1)
    ma = (w * a).sum(axis=1) / sw
    mb = (w * b).sum(axis=1) / sw
    da = a - ma[:, None]
    db = b - mb[:, None]
    saa = (w * da * da).sum(axis=1)
    sbb = (w * db * db).sum(axis=1)
    sab = (w * da * db).sum(axis=1)
    ok = (saa > 1e-9) & (sbb > 1e-9)
    return np.where(ok, sab / np.sqrt(np.where(ok, saa * sbb, 1.0)), np.nan)


def _boot_spearman(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> Any:
    """Pooled ρ of x and y (games x atoms: every (game, atom) a unit) on each resample of
    games, given the games' multiplicities `w` (B x games): the weighted Pearson r of the
    resample's average ranks (equal to scipy's Spearman ρ of the expanded resample)."""
    atoms = x.shape[1]
    out = []
    batch = max(1, 1_000_000 // max(1, x.size))  # keeps memory flat for large studies
    for start in range(0, len(w), batch):
        wu = np.repeat(w[start : start + batch], atoms, axis=1)  # a game's weight, per unit
        rx = _resample_ranks(x.ravel(), wu)
        ry = _resample_ranks(y.ravel(), wu)
        out.append(_weighted_pearson_rows(wu, rx, ry))
    return np.concatenate(out) if out else np.empty(0)


def _alpha_parts(present: np.ndarray) -> np.ndarray:
    """Per game, the pieces of Krippendorff's nominal α for 0/1 ratings.

    Args:
        present: raters x games x atoms, 1/0 for a rating, NaN for no rating.

    Returns:
        games x 3: `o_01` (sum over the game's pairable units of n0 n1 / (m - 1)) and the
        pairable ratings of 0 and of 1. Summed over (resampled) games they give α by
        `alpha_from_parts`.
    """
    rated = np.isfinite(present)
    n1 = np.where(rated, present, 0.0).sum(axis=0)  # games x atoms
    m = rated.sum(axis=0).astype(float)
    n0 = m - n1
    pair = m >= 2
    o01 = np.where(pair, n0 * n1 / np.where(pair, m - 1, 1.0), 0.0).sum(axis=1)
    c0 = np.where(pair, n0, 0.0).sum(axis=1)
    c1 = np.where(pair, n1, 0.0).sum(axis=1)
    return np.column_stack([o01, c0, c1])


def alpha_from_parts(parts: np.ndarray) -> Any:
    """Krippendorff's nominal α of 0/1 ratings from summed `_alpha_parts` (... x 3).

    The coincidence-matrix form for two values: α = 1 - (n - 1) o_01 / (n_0 n_1), with
    n = n_0 + n_1 pairable ratings. Equal to the `krippendorff` package's α (tested).
    """
    o01, c0, c1 = parts[..., 0], parts[..., 1], parts[..., 2]
    n = c0 + c1
    ok = c0 * c1 > 0
    return np.where(ok, 1 - (n - 1) * o01 / np.where(ok, c0 * c1, 1.0), np.nan)


def _interval(value: float, dist: np.ndarray, n: int) -> Interval:
    return percentile_interval(value if math.isfinite(value) else None, dist, n)


def _put(out: dict[str, object], name: str, value: float, dist: np.ndarray, n: int) -> None:
    iv = _interval(value, dist, n)
    out[name] = value
    out[f"{name}_low"], out[f"{name}_high"] = iv.bounds()
    out[f"{name}_degenerate"] = iv.degenerate


# ------------------------------------------------------------------- pair measures
def _common(a: pd.DataFrame, b: pd.DataFrame, atoms: list[str]) -> tuple[pd.DataFrame, ...]:
    games = sorted(set(a.index) & set(b.index))
    return (
        a.reindex(index=games, columns=atoms, fill_value=0),
        b.reindex(index=games, columns=atoms, fill_value=0),
    )


def compare(
    reference: pd.DataFrame,
    other: pd.DataFrame,
    atoms: list[str],
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> dict[str, object]:
    """κ, weighted F1 (`other` scored against `reference`, and reversed), pooled ρ,
    Krippendorff's α, and precision and recall of `other`'s per-(game, atom) presence
    against `reference`'s, over the games both annotated.

    Each measure `M` comes with `M_low`, `M_high` (95 % percentile bootstrap over games)
    and `M_degenerate` (share of resamples on which it was undefined); `n_tp`, `n_fp`
    and `n_fn` are the (game, atom) units both mark, only `other` marks and only
    `reference` marks.
    """
    ra, ob = _common(reference, other, atoms)
    x = ra.to_numpy(dtype=float)
    y = ob.to_numpy(dtype=float)
    px, py = x > 0, y > 0
    g = len(ra)
    point = {
        "kappa": cohen_kappa(px.ravel(), py.ravel()),
        "f1_weighted": weighted_f1(ra, ob),
        "f1_weighted_reversed": weighted_f1(ob, ra),
        "spearman": spearman(x.ravel(), y.ravel()),
        "alpha": krippendorff_alpha(np.vstack([px.ravel(), py.ravel()]).astype(float)),
    }
    point["precision"], point["recall"] = precision_recall(px.ravel(), py.ravel())
    out: dict[str, object] = {
        "n_games": g,
        "n_tp": int((px & py).sum()),
        "n_fp": int((~px & py).sum()),
        "n_fn": int((px & ~py).sum()),
    }
    if g == 0 or n_boot <= 0:
        for name, v in point.items():
            _put(out, name, v, np.array([]), g)
        return out
    w = _game_draws(g, n_boot, np.random.default_rng(seed))
    tp = w @ (px & py).astype(float)  # B x atoms
    fp = w @ (~px & py).astype(float)
    fn = w @ (px & ~py).astype(float)
    tn = w @ (~px & ~py).astype(float)
    dists = {
        "kappa": _kappa_from_cells(tp.sum(1), fn.sum(1), fp.sum(1), tn.sum(1)),
        "f1_weighted": _f1_weighted_from_cells(tp, fp, fn),
        "f1_weighted_reversed": _f1_weighted_from_cells(tp, fn, fp),
        "spearman": _boot_spearman(x, y, w),
        "alpha": alpha_from_parts(w @ _alpha_parts(np.stack([px, py]).astype(float))),
        "precision": _ratio(tp.sum(1), tp.sum(1) + fp.sum(1)),
        "recall": _ratio(tp.sum(1), tp.sum(1) + fn.sum(1)),
    }
    for name, v in point.items():
        _put(out, name, v, dists[name], g)
    return out


def per_atom(
    reference: pd.DataFrame,
    other: pd.DataFrame,
    atoms: list[str],
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> pd.DataFrame:
    """Per atom: κ over per-game presence, F1 of `other`'s presence against
    `reference`'s (and reversed), ρ over per-game counts; κ and ρ with 95 % bootstrap
    intervals over games.

    Returns:
        `atom, n_games, games_ref, games_other, kappa, kappa_low, kappa_high,
        kappa_degenerate, f1, f1_reversed, spearman, spearman_low, spearman_high,
        spearman_degenerate`.
    """
    ra, ob = _common(reference, other, atoms)
    x = ra.to_numpy(dtype=float)
    y = ob.to_numpy(dtype=float)
    px, py = x > 0, y > 0
    g = len(ra)
    if g and n_boot > 0:
        w = _game_draws(g, n_boot, np.random.default_rng(seed))
        tp = w @ (px & py).astype(float)
        fp = w @ (~px & py).astype(float)
        fn = w @ (px & ~py).astype(float)
        tn = w @ (~px & ~py).astype(float)
        kappa_b = _kappa_from_cells(tp, fn, fp, tn)  # B x atoms
        rho_b = np.column_stack(
            [_boot_spearman(x[:, j : j + 1], y[:, j : j + 1], w) for j in range(len(atoms))]
        )  # B x atoms
    else:
        kappa_b = rho_b = np.empty((0, len(atoms)))
    tp0 = (px & py).sum(0)
    fp0 = (~px & py).sum(0)
    fn0 = (px & ~py).sum(0)
    rows = []
    for j, atom in enumerate(atoms):
        row: dict[str, object] = {
            "atom": atom,
            "n_games": g,
            "games_ref": int(px[:, j].sum()),
            "games_other": int(py[:, j].sum()),
        }
        _put(row, "kappa", cohen_kappa(px[:, j], py[:, j]), kappa_b[:, j], g)
        row["f1"] = float(_f1_per_atom(tp0[j], fp0[j], fn0[j])) if px[:, j].any() else math.nan
        row["f1_reversed"] = (
            float(_f1_per_atom(tp0[j], fn0[j], fp0[j])) if py[:, j].any() else math.nan
        )
        _put(row, "spearman", spearman(x[:, j], y[:, j]), rho_b[:, j], g)
        rows.append(row)
    return pd.DataFrame(rows)


def _pair_order(a: str, b: str, kinds: dict[str, str]) -> tuple[str, str, str]:
    """(reference, other, kind label) of a pair."""
    ref, oth = sorted((a, b), key=lambda n: (_REFERENCE_RANK.get(kinds[n], 3), n))
    k1, k2 = sorted((kinds[a], kinds[b]), key=lambda k: _KIND_RANK.get(k, 3))
    return ref, oth, f"{k1}-{k2}"


def _pairs(names: list[str]) -> list[tuple[str, str]]:
    return list(combinations(names, 2))


def _sorted_names(raters: dict[str, pd.DataFrame], kinds: dict[str, str]) -> list[str]:
    return sorted(raters, key=lambda n: (_KIND_RANK.get(kinds[n], 3), n))


def agreement_table(
    raters: dict[str, pd.DataFrame],
    kinds: dict[str, str],
    atoms: list[str],
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> pd.DataFrame:
    """Pairwise agreement with 95 % bootstrap intervals, the paper's figures beside ours.

    Args:
        raters: Name -> per-game counts (index game, columns atoms) over the games that
            rater read (all-zero rows for games read with nothing found).
        kinds: Name -> `human`, `judge`, `panel` or `detector`.
        atoms: The atoms compared.
        n_boot: Bootstrap resamples per interval.
        seed: Seed of the bootstrap.

    Returns:
        `pair, kind, reference, other, n_games, n_tp, n_fp, n_fn`, then `kappa`,
        `f1_weighted` (other against reference), `f1_weighted_reversed`, `spearman`
        (pooled), `alpha`, `precision`, `recall` (other against reference), each with
        `_low`, `_high`, `_degenerate`; and `paper_kappa, paper_f1_weighted,
        paper_spearman`. With more than two humans, one more row: Krippendorff's α over
        all of them (`reference` empty).
    """
    rows = []
    names = _sorted_names(raters, kinds)
    for a, b in _pairs(names):
        ref, oth, kind = _pair_order(a, b, kinds)
        res = compare(raters[ref], raters[oth], atoms, n_boot=n_boot, seed=seed)
        paper = PAPER.get(kind, {})
        rows.append(
            {
                "pair": f"{a} vs {b}",
                "kind": kind,
                "reference": ref,
                "other": oth,
                **res,
                "paper_kappa": paper.get("kappa", math.nan),
                "paper_f1_weighted": paper.get("f1_weighted", math.nan),
                "paper_spearman": paper.get("spearman", math.nan),
            }
        )
    humans = [n for n in names if kinds[n] == "human"]
    if len(humans) > 2:
        games = sorted(set().union(*(raters[h].index for h in humans)))
        present = np.full((len(humans), len(games), len(atoms)), np.nan)
        for i, h in enumerate(humans):
            vals = raters[h].reindex(index=games, columns=atoms).to_numpy(dtype=float)
            present[i] = np.where(np.isnan(vals), np.nan, (vals > 0).astype(float))
        value = krippendorff_alpha(present.reshape(len(humans), -1))
        row: dict[str, object] = {
            "pair": f"krippendorff alpha over {len(humans)} humans",
            "kind": "human-human",
            "reference": "",
            "other": "",
            "n_games": len(games),
        }
        parts = _alpha_parts(present)
        if n_boot > 0 and len(games):
            w = _game_draws(len(games), n_boot, np.random.default_rng(seed))
            dist = alpha_from_parts(w @ parts)
        else:
            dist = np.array([])
        _put(row, "alpha", value, dist, len(games))
        rows.append(row)
    return pd.DataFrame(rows)


RATER_MEASURES = ("kappa", "f1_weighted", "spearman", "precision", "recall")
"""The measures of `rater_table`: the paper's three, then QUACK's two."""


def rater_table(table: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    """Each judge and each panel against each human, one row each, from an
    `agreement_table`: the paper's units (κ, weighted F1 of the rater against the
    human, ρ) and QUACK's (precision and recall of the rater's per-(game, atom) presence
    against the human's), each with its 95 % bootstrap interval over games.

    Returns:
        `rater, rater_kind, human, n_games, n_tp, n_fp, n_fn`, then each of
        `RATER_MEASURES` with `_low`, `_high`, `_degenerate`.
    """
    measures = [f"{m}{tail}" for m in RATER_MEASURES for tail in ("", "_low", "_high")]
    measures += [f"{m}_degenerate" for m in RATER_MEASURES]
    cols = ["rater", "rater_kind", "human", "n_games", "n_tp", "n_fp", "n_fn", *measures]
    if table.empty or "reference" not in table.columns:
        return pd.DataFrame(columns=cols)
    ref_kind = table["reference"].map(lambda n: kinds.get(n, ""))
    oth_kind = table["other"].map(lambda n: kinds.get(n, ""))
    rows = table[(ref_kind == "human") & oth_kind.isin(MACHINE_KINDS)]
    out = rows.rename(columns={"other": "rater", "reference": "human"}).assign(
        rater_kind=oth_kind[rows.index]
    )
    rank = out["rater_kind"].map({k: i for i, k in enumerate(MACHINE_KINDS)})
    out = out.assign(_rank=rank).sort_values(["human", "_rank", "rater"], kind="stable")
    return out[cols].reset_index(drop=True)


def agreement_per_atom(
    raters: dict[str, pd.DataFrame],
    kinds: dict[str, str],
    atoms: list[str],
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> pd.DataFrame:
    """`per_atom` for every pair of raters, with `pair, kind, reference, other` columns."""
    frames = []
    names = _sorted_names(raters, kinds)
    for a, b in _pairs(names):
        ref, oth, kind = _pair_order(a, b, kinds)
        t = per_atom(raters[ref], raters[oth], atoms, n_boot=n_boot, seed=seed)
        t.insert(0, "other", oth)
        t.insert(0, "reference", ref)
        t.insert(0, "kind", kind)
        t.insert(0, "pair", f"{a} vs {b}")
        frames.append(t)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
