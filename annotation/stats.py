"""The paper's statistics and the answers to its open critiques, as tidy tables.

Inputs are two tables: `games` (one row per game: `game_id`, `impostor_win` 0/1,
`kills`, `tasks_done`, `steps`, `seed`, `arm`, `impostor_model`, `crew_model` and axis
columns `impostor.<axis>` / `crew.<axis>`) and `counts` (one row per game, one column per
atom letter: that game's accepted findings of one source). scipy and statsmodels do the
arithmetic. This is the one module of the analysis that computes intervals and tests;
its interval type is the project's one `Interval` (`controller.stats`).

How the design enters (`design_clusters`): games that share a seed share roles, spawns
and task draws, so when a seed is used by more than one game (seeds paired across arms,
or repeated) the seed is the unit of resampling and of the logit's clusters; otherwise
every game is its own cluster. A `cluster` column in `games` overrides both.

Honesty rules every table follows:

- Rates get Wilson intervals (widened by the design effect for clustered games), never
  a percentile bootstrap that collapses to zero width at 0 or 1 (0/4 -> [0, 0.49]).
- A bootstrap counts its degenerate resamples (no win, no loss, no occurrence) and
  reports the share; above `DEGENERATE_MAX` the interval is withheld and the row says
  why. Nothing is dropped without a word.
- r_pb has a permutation p (exact when the arrangements of the wins can be enumerated)
  beside the t-test p, which is anti-conservative when wins or losses are rare; the
  permutation p gets Holm and Benjamini-Hochberg corrections across the atoms of a table.
- Small-sample flags look at wins, losses and events as well as games.
- The logit with fewer than `FEW_CLUSTERS` clusters warns and reports naive SEs (the
  cluster-robust ones beside), since cluster-robust SEs are biased low with few clusters.
- Two-proportion z-tests give both the one-sided p, in the direction the paper pre-set,
  and the two-sided p, each labelled.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats as st

from annotation.deception.codebook import Codebook, arc_stages_met, codebook
from controller.stats import Z95, Interval, design_effect, rate_interval, wilson

__all__ = [
    "DEFAULT_BOOT",
    "DEFAULT_PERM",
    "Interval",
    "design_effect",
    "rate_interval",
    "wilson",
]

DEFAULT_BOOT = 1000
"""Bootstrap resamples per interval."""
DEFAULT_PERM = 2000
"""Random permutations per permutation p (when the exact null cannot be enumerated)."""
EXACT_PERM_MAX = 20_000
"""Enumerate the exact permutation null when the win labels have at most this many
arrangements (C(n, min(wins, losses))): the rare-win case, where it matters most."""
BASELINE_LEVELS = frozenset({"window", "reactive", "off", "minimal", "ego"})
"""Axis levels compared against (the simpler setting of each ARIA axis); other axes
use the alphabetically first level."""
SMALL_SAMPLE = 30
"""Fewer games than this per arm (or per level) and a figure says it is too small to read."""
MIN_CLASS = 10
"""Fewer wins (or losses) than this and a correlation with the win is flagged small: the
information in a binary outcome is in its rarer class, not in the number of games."""
MIN_CELL = 5
"""A two-proportion z-test with fewer wins or losses than this in a compared level is
flagged (the normal approximation's usual rule of thumb)."""
MIN_EVENTS = 5
"""An atom seen in fewer games than this is flagged: its correlation rests on a handful."""
FEW_CLUSTERS = 20
"""Below this many clusters cluster-robust SEs and cluster bootstraps are unreliable."""
MIN_MODELS = 6
"""A cross-model r over fewer models than this is flagged (the paper's atom correlations
use 6: its top 3 and worst 3)."""
DEGENERATE_MAX = 0.05
"""A bootstrap interval with more than this share of degenerate resamples is withheld."""

Alternative = Literal["larger", "smaller", "two-sided"]

PAPER_RPB: dict[str, tuple[float, int]] = {
    "E": (0.434, 618),
    "F": (0.414, 352),
    "H": (0.270, 187),
    "C": (0.208, 1803),
}
"""RQ1 in the paper: atom -> (r_pb with impostor win, occurrences), 192 games."""
PAPER_Z: dict[tuple[str, str], tuple[float, float]] = {
    ("impostor.planning", "hierarchical"): (0.094, 0.096),
    ("impostor.reflection", "on"): (0.094, 0.096),
}
"""RQ1 in the paper: (axis, level) -> (delta in win rate, one-sided z-test p)."""
PAPER_CROSS: dict[str, float] = {
    "atom A vs impostor win rate": 0.72,
    "atom B vs impostor win rate": -0.62,
    "impostor vs crew win rate": 0.71,
}
"""RQ2 in the paper: cross-model Pearson r (from its judge's atoms; p = 0.01 for the last)."""


def preset_alternative(axis: str) -> Alternative:
    """The direction the paper pre-set for an axis's z-test against its baseline level.

    The paper tests each harness feature one-sided: the richer setting helps the side
    that has it. On the impostor side that raises the impostor win rate (`larger`); on
    the crew side it lowers it (`smaller`).
    """
    return "smaller" if axis.startswith("crew.") else "larger"


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


# ---------------------------------------------------------------------- the design
@dataclass(frozen=True)
class Clusters:
    """The design's resampling units, one key per game."""

    keys: np.ndarray
    """One cluster key per game, aligned with the games given."""
    by: str
    """What they are: `cluster column`, `seed` or `game`."""

    @property
    def n(self) -> int:
        """How many clusters."""
        return len(np.unique(self.keys)) if len(self.keys) else 0


def design_clusters(games: pd.DataFrame) -> Clusters:
    """The clusters of the design (see the module docstring), aligned with `games`.

    A `cluster` column wins; else the seed when any seed is shared by more than one game
    (games of one seed share roles, spawns and tasks, so they are not independent); else
    each game is its own cluster.
    """
    if "cluster" in games.columns:
        return Clusters(games["cluster"].astype(str).to_numpy(), "cluster column")
    if "seed" in games.columns:
        seeds = games["seed"]
        if seeds.notna().all() and seeds.duplicated().any():
            return Clusters(seeds.astype(str).to_numpy(), "seed")
    ids = games["game_id"] if "game_id" in games.columns else pd.Series(range(len(games)))
    return Clusters(ids.astype(str).to_numpy(), "game")


def adjust_pvalues(p: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Holm (family-wise) and Benjamini-Hochberg (false discovery rate) adjusted p-values
    over the finite entries of `p` (statsmodels); NaN entries stay NaN and do not count
    towards the family."""
    from statsmodels.stats.multitest import multipletests

    arr = np.asarray(p, dtype=float)
    holm = np.full(arr.shape, np.nan)
    bh = np.full(arr.shape, np.nan)
    ok = np.isfinite(arr)
    if ok.any():
        holm[ok] = multipletests(arr[ok], method="holm")[1]
        bh[ok] = multipletests(arr[ok], method="fdr_bh")[1]
    return holm, bh


# ---------------------------------------------------------------------- bootstrap
def _cluster_weights(clusters: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap multiplicities per row: clusters drawn with replacement (B x rows)."""
    uniq, inv = np.unique(clusters, return_inverse=True)
    c = len(uniq)
    picks = rng.integers(0, c, size=(n_boot, c)) + (np.arange(n_boot) * c)[:, None]
    draws = np.bincount(picks.ravel(), minlength=n_boot * c).reshape(n_boot, c)  # B x C
    return draws[:, inv].astype(float)


def _weighted_pearson(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r under row weights: w (B x n), x (n x k), y (n,) -> (B x k); NaN where
    the weighted x or y has no variance (a degenerate resample)."""
    sw = w.sum(axis=1, keepdims=True)
    mx = (w @ x) / sw
    my = (w @ y)[:, None] / sw
    sxy = (w @ (x * y[:, None])) / sw - mx * my
    sxx = (w @ (x * x)) / sw - mx * mx
    syy = (w @ (y * y))[:, None] / sw - my * my
    # A variance that is zero up to rounding (one class left) is zero.
    sxx = np.where(sxx > 1e-12 * np.maximum(1.0, mx * mx), sxx, np.nan)
    syy = np.where(syy > 1e-12, syy, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        r: np.ndarray = sxy / np.sqrt(sxx * syy)
    return r


def percentile_interval(
    value: float | None, dist: np.ndarray, n: int, *, method: str = "bootstrap"
) -> Interval:
    """A 95 % percentile interval from a bootstrap distribution, counting its degenerate
    (non-finite) resamples; withheld (None bounds) above `DEGENERATE_MAX` of them."""
    dist = np.asarray(dist, dtype=float)
    finite = dist[np.isfinite(dist)]
    share = 1.0 - len(finite) / len(dist) if len(dist) else 1.0
    if not len(finite) or share > DEGENERATE_MAX:
        return Interval(value, None, None, n, method, share)
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return Interval(value, float(lo), float(hi), n, method, share)


# ---------------------------------------------------------------------- permutation
def permutation_pvalues(
    x: np.ndarray,
    y: np.ndarray,
    *,
    n_perm: int = DEFAULT_PERM,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, bool]:
    """Two-sided permutation p of the Pearson r of each column of `x` with a 0/1 `y`.

    The null permutes the win labels over games (their exchangeability under "no
    association"). When the wins' arrangements number at most `EXACT_PERM_MAX` the
    null is enumerated and the p is exact (share of arrangements with |r| at least the
    observed); otherwise `n_perm` random permutations give `(1 + hits) / (1 + n_perm)`
    (never 0). Columns with no variance get NaN.

    Returns:
        The p-values (one per column) and whether they are exact.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n, k = x.shape
    out = np.full(k, np.nan)
    wins = int(y.sum())
    minority = min(wins, n - wins)
    sx = x.std(axis=0)
    ok = sx > 0
    if n < 3 or minority == 0 or not ok.any():
        return out, False
    xc = (x[:, ok] - x[:, ok].mean(axis=0)) / (sx[ok] * n)
    # |r| of a 0/1 label with m ones is |sum of xc over the ones| / (sd of the label),
    # and the label's sd depends on m only, so comparing the sums suffices.
    target = np.abs(xc[y == (1.0 if wins == minority else 0.0)].sum(axis=0))
    tol = 1e-9 * np.maximum(1.0, target)
    exact = math.comb(n, minority) <= EXACT_PERM_MAX
    hits = np.zeros(int(ok.sum()))
    total = 0
    if exact:
        combos = np.fromiter(
            itertools.chain.from_iterable(itertools.combinations(range(n), minority)),
            dtype=np.int64,
        ).reshape(-1, minority)
        for start in range(0, len(combos), 2000):
            idx = combos[start : start + 2000]
            sums = np.abs(xc[idx].sum(axis=1))  # (batch x k)
            hits += (sums >= target - tol).sum(axis=0)
            total += len(idx)
        out[ok] = hits / total
        return out, True
    rng = rng or np.random.default_rng(0)
    label = np.zeros(n)
    label[:minority] = 1.0
    for start in range(0, n_perm, 500):
        b = min(500, n_perm - start)
        perms = rng.permuted(np.tile(label, (b, 1)), axis=1)
        sums = np.abs(perms @ xc)
        hits += (sums >= target - tol).sum(axis=0)
        total += b
    out[ok] = (1 + hits) / (1 + total)
    return out, False


# ---------------------------------------------------------------------- RQ1: r_pb
def _sample_notes(n_games: int, wins: int, losses: int, games_with: int | None = None) -> list[str]:
    notes = []
    if n_games < SMALL_SAMPLE:
        notes.append(f"{n_games} games (< {SMALL_SAMPLE})")
    if wins < MIN_CLASS:
        notes.append(f"{wins} impostor win(s) (< {MIN_CLASS})")
    if losses < MIN_CLASS:
        notes.append(f"{losses} impostor loss(es) (< {MIN_CLASS})")
    if games_with is not None and games_with < MIN_EVENTS:
        notes.append(f"seen in {games_with} game(s) (< {MIN_EVENTS})")
    return notes


def point_biserial(
    counts: pd.DataFrame,
    games: pd.DataFrame,
    *,
    n_boot: int = DEFAULT_BOOT,
    n_perm: int = DEFAULT_PERM,
    seed: int = 0,
) -> pd.DataFrame:
    """Point-biserial r of each atom's per-game count against impostor win.

    r and its t-test p come from `scipy.stats.pointbiserialr`; `p_perm` is the
    permutation p (`permutation_pvalues`), with Holm and BH corrections across the atoms
    of this table; the 95 % interval is a percentile bootstrap that resamples the
    design's clusters (`design_clusters`). `boot_degenerate` is the share of resamples
    with no win, no loss or no occurrence of the atom (left out of the percentiles;
    above `DEGENERATE_MAX` the interval is withheld). `small_sample` follows wins,
    losses and the atom's games as well as the number of games; `warning` says why.

    Returns:
        `atom, n_games, wins, losses, occurrences, games_with, r, p, p_perm, perm_exact,
        p_perm_holm, p_perm_bh, ci_low, ci_high, boot_degenerate, n_clusters,
        cluster_by, small_sample, warning, paper_r, paper_occurrences`.
    """
    g = games.set_index("game_id").loc[counts.index]
    y = g["impostor_win"].to_numpy(dtype=float)
    x = counts.to_numpy(dtype=float)
    cl = design_clusters(g.reset_index())
    rng = np.random.default_rng(seed)
    boots: list[np.ndarray] = []
    for start in range(0, n_boot, 200):
        w = _cluster_weights(cl.keys, min(200, n_boot - start), rng)
        boots.append(_weighted_pearson(w, x, y))
    rb = np.vstack(boots) if boots else np.empty((0, x.shape[1]))
    p_perm, exact = permutation_pvalues(x, y, n_perm=n_perm, rng=rng)
    wins, losses = int(y.sum()), int(len(y) - y.sum())
    rows = []
    for j, atom in enumerate(counts.columns):
        col = x[:, j]
        if len(y) < 3 or np.std(col) == 0 or np.std(y) == 0:
            r, p = math.nan, math.nan
        else:
            res = st.pointbiserialr(y, col)
            r, p = float(res.statistic), float(res.pvalue)
        ci = percentile_interval(r, rb[:, j], len(y))
        games_with = int((col > 0).sum())
        notes = _sample_notes(len(y), wins, losses, games_with)
        small = bool(notes)
        if cl.n < FEW_CLUSTERS:
            notes.append(f"{cl.n} {cl.by} cluster(s) (< {FEW_CLUSTERS}): interval unreliable")
        if ci.degenerate > 0 and math.isfinite(r):
            what = (
                f"interval withheld (> {DEGENERATE_MAX:.0%})"
                if ci.degenerate > DEGENERATE_MAX
                else "left out of the interval"
            )
            notes.append(
                f"{ci.degenerate:.1%} of resamples had no win, no loss or no occurrence: {what}"
            )
        paper = PAPER_RPB.get(str(atom))
        lo, hi = ci.bounds()
        rows.append(
            {
                "atom": atom,
                "n_games": len(y),
                "wins": wins,
                "losses": losses,
                "occurrences": int(col.sum()),
                "games_with": games_with,
                "r": r,
                "p": p,
                "p_perm": float(p_perm[j]),
                "perm_exact": exact,
                "ci_low": lo,
                "ci_high": hi,
                "boot_degenerate": ci.degenerate,
                "n_clusters": cl.n,
                "cluster_by": cl.by,
                "small_sample": small,
                "warning": "; ".join(notes),
                "paper_r": paper[0] if paper else math.nan,
                "paper_occurrences": paper[1] if paper else math.nan,
            }
        )
    out = pd.DataFrame(rows)
    if len(out):
        holm, bh = adjust_pvalues(out["p_perm"].to_numpy())
        out.insert(out.columns.get_loc("perm_exact") + 1, "p_perm_holm", holm)
        out.insert(out.columns.get_loc("p_perm_holm") + 1, "p_perm_bh", bh)
    return out


def _residualise(z: np.ndarray, v: np.ndarray) -> np.ndarray:
    r: np.ndarray = v - z @ np.linalg.lstsq(z, v, rcond=None)[0]
    return r


def partial_point_biserial(
    counts: pd.DataFrame, games: pd.DataFrame, covariates: tuple[str, ...] = ("kills", "tasks_done")
) -> pd.DataFrame:
    """r_pb of each atom with impostor win controlling for capability (kills, tasks).

    Both the count and the win are residualised on the covariates by least squares; the
    partial r is the Pearson r of the residuals, tested on n - 2 - k degrees of freedom
    (the t-test of the atom's coefficient in the OLS of win on atom and covariates).
    Holm and BH corrections across the atoms are beside the raw p.

    Returns:
        `atom, n_games, partial_r, p, p_holm, p_bh, controls`.
    """
    g = games.set_index("game_id").loc[counts.index]
    y = g["impostor_win"].to_numpy(dtype=float)
    z = np.column_stack([np.ones(len(y))] + [g[c].to_numpy(dtype=float) for c in covariates])
    n, k = len(y), len(covariates)
    ry = _residualise(z, y)
    rows = []
    for atom in counts.columns:
        rx = _residualise(z, counts[atom].to_numpy(dtype=float))
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
    out = pd.DataFrame(rows)
    if len(out):
        holm, bh = adjust_pvalues(out["p"].to_numpy())
        out.insert(out.columns.get_loc("p") + 1, "p_holm", holm)
        out.insert(out.columns.get_loc("p_holm") + 1, "p_bh", bh)
    return out


def atoms_vs_kills(
    counts: pd.DataFrame, games: pd.DataFrame, covariates: tuple[str, ...] = ("kills", "tasks_done")
) -> pd.DataFrame:
    """Each atom against the kills that make most non-verbal atoms possible.

    Per atom: occurrences, the mean per game, per kill (occurrences / kills over these
    games) and per step (occurrences / steps, i.e. normalised by game length); the Pearson
    r of the per-game count with the kill count; and the raw r_pb with impostor win
    beside the r_pb partialled on `covariates` (an atom that only counts kills shows a
    large raw r_pb and a partial one near 0).

    Returns:
        `atom, n_games, occurrences, per_game, per_kill, per_step, r_kills, r, p,
        partial_r, partial_p, controls`.
    """
    g = games.set_index("game_id").loc[counts.index]
    y = g["impostor_win"].to_numpy(dtype=float)
    kills = g["kills"].to_numpy(dtype=float) if "kills" in g else np.zeros(len(g))
    steps = g["steps"].to_numpy(dtype=float) if "steps" in g else np.zeros(len(g))
    part = partial_point_biserial(counts, games, covariates).set_index("atom")
    rows = []
    for atom in counts.columns:
        col = counts[atom].to_numpy(dtype=float)
        occ = float(col.sum())

        def corr(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
            if len(a) < 3 or np.std(a) == 0 or np.std(b) == 0:
                return math.nan, math.nan
            res = st.pearsonr(a, b)
            return float(res.statistic), float(res.pvalue)

        r_k, _ = corr(col, kills)
        r, p = corr(col, y)
        rows.append(
            {
                "atom": atom,
                "n_games": len(col),
                "occurrences": int(occ),
                "per_game": occ / len(col) if len(col) else math.nan,
                "per_kill": occ / kills.sum() if kills.sum() > 0 else math.nan,
                "per_step": occ / steps.sum() if steps.sum() > 0 else math.nan,
                "r_kills": r_k,
                "r": r,
                "p": p,
                "partial_r": float(part.at[atom, "partial_r"]),
                "partial_p": float(part.at[atom, "p"]),
                "controls": "+".join(covariates),
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- RQ2
def fisher_interval(r: float, n: int, z: float = Z95) -> Interval:
    """Fisher-z 95 % interval of a Pearson r over n pairs (None bounds when undefined)."""
    if not math.isfinite(r) or n < 4 or abs(r) >= 1:
        return Interval(r if math.isfinite(r) else None, None, None, n, "fisher-z")
    zr = math.atanh(r)
    se = 1 / math.sqrt(n - 3)
    return Interval(r, math.tanh(zr - z * se), math.tanh(zr + z * se), n, "fisher-z")


def _rate_row(values: np.ndarray, clusters: np.ndarray | None) -> Interval:
    return rate_interval([float(v) for v in values], None if clusters is None else list(clusters))


def per_model(counts: pd.DataFrame, games: pd.DataFrame) -> pd.DataFrame:
    """Per impostor model: games, impostor win rate with its 95 % Wilson interval (design
    effect of shared seeds included), mean per-game count of each atom, and the model's
    crew win rate (games where it played crew)."""
    g = games.set_index("game_id")
    keys = pd.Series(design_clusters(games).keys, index=g.index)
    rows = []
    for model, group in g.groupby("impostor_model"):
        ids = [i for i in group.index if i in counts.index]
        wins = group["impostor_win"].to_numpy(dtype=float)
        ci = _rate_row(wins, keys.loc[group.index].to_numpy())
        lo, hi = ci.bounds()
        row: dict[str, object] = {
            "model": model,
            "n_games": len(group),
            "wins": int(wins.sum()),
            "impostor_win_rate": float(wins.mean()),
            "ci_low": lo,
            "ci_high": hi,
        }
        crew = g[g["crew_model"] == model]
        row["crew_games"] = len(crew)
        row["crew_win_rate"] = float(1 - crew["impostor_win"].mean()) if len(crew) else math.nan
        sub = counts.loc[ids]
        for atom in counts.columns:
            row[f"mean_{atom}"] = float(sub[atom].mean()) if ids else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def cross_model(models: pd.DataFrame, atoms: list[str]) -> pd.DataFrame:
    """Cross-model Pearson r (RQ2): each atom's per-model mean count against the model's
    impostor win rate, and impostor vs crew win rate; Fisher-z 95 % intervals; Holm and
    BH corrections across the atom rows; the paper's r beside.

    Returns:
        `measure, n_models, r, p, p_holm, p_bh, ci_low, ci_high, small_sample, paper_r`.
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
        lo, hi = fisher_interval(r, n).bounds()
        rows.append(
            {
                "measure": measure,
                "n_models": n,
                "r": r,
                "p": p,
                "ci_low": lo,
                "ci_high": hi,
                "small_sample": n < MIN_MODELS,
                "paper_r": PAPER_CROSS.get(measure, math.nan),
            }
        )

    for atom in atoms:
        pearson(f"atom {atom} vs impostor win rate", models[f"mean_{atom}"].to_numpy(float), wr)
    pearson("impostor vs crew win rate", wr, models["crew_win_rate"].to_numpy(dtype=float))
    out = pd.DataFrame(rows)
    holm = np.full(len(out), np.nan)
    bh = np.full(len(out), np.nan)
    if len(atoms):
        holm[: len(atoms)], bh[: len(atoms)] = adjust_pvalues(out["p"].to_numpy()[: len(atoms)])
    out.insert(out.columns.get_loc("p") + 1, "p_holm", holm)
    out.insert(out.columns.get_loc("p_holm") + 1, "p_bh", bh)
    return out


# ---------------------------------------------------------------------- RQ1: axes
def axis_columns(games: pd.DataFrame) -> list[str]:
    """Axis columns (`impostor.*`, `crew.*`) that vary across the games."""
    return [
        c
        for c in games.columns
        if c.startswith(("impostor.", "crew.")) and games[c].nunique(dropna=True) > 1
    ]


def two_proportion_z(
    wins: int, n: int, wins_ref: int, n_ref: int, alternative: Alternative
) -> tuple[float, float]:
    """statsmodels' pooled two-proportion z-test of `wins/n` against `wins_ref/n_ref`.

    `alternative` is `larger` (the first rate is higher), `smaller` or `two-sided`.
    NaN when the pooled rate is 0 or 1 (no variance to test).
    """
    from statsmodels.stats.proportion import proportions_ztest

    if n == 0 or n_ref == 0 or not 0 < wins + wins_ref < n + n_ref:
        return math.nan, math.nan
    z, p = proportions_ztest([wins, wins_ref], [n, n_ref], alternative=alternative)
    return float(z), float(p)


def _levels(games: pd.DataFrame, axis: str) -> list[object]:
    return sorted(games[axis].dropna().unique(), key=lambda v: (v not in BASELINE_LEVELS, str(v)))


def axis_marginals(games: pd.DataFrame) -> pd.DataFrame:
    """Marginal impostor win rate per axis level, and each level against the baseline.

    The rate's interval is Wilson's, widened by the design effect of shared seeds. The
    z-test is `statsmodels` two-proportion (unpaired, as in the paper), reported both
    one-sided in the pre-set direction (`alternative`, see `preset_alternative`) and
    two-sided. Where the games pair on seed (same seed, same other settings, the axis
    flipped), the paired difference and McNemar's exact (two-sided) p are given too.
    The paper's delta and one-sided p stand beside the axes it reported.

    Returns:
        `axis, level, n_games, wins, win_rate, ci_low, ci_high, vs, delta, z,
        alternative, p_one_sided, p_two_sided, n_pairs, paired_delta, mcnemar_p,
        small_sample, warning, paper_delta, paper_p_one_sided`.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    axes = axis_columns(games)
    keys = design_clusters(games).keys
    rows = []
    for axis in axes:
        levels = _levels(games, axis)
        base = levels[0]
        alternative = preset_alternative(axis)
        others = [c for c in axes if c != axis] + ["seed", "impostor_model", "crew_model"]
        others = [c for c in others if c in games.columns]
        for level in levels:
            mask = (games[axis] == level).to_numpy()
            sub = games[mask]
            wins = int(sub["impostor_win"].sum())
            n = len(sub)
            ci = _rate_row(sub["impostor_win"].to_numpy(dtype=float), keys[mask])
            lo, hi = ci.bounds()
            notes = []
            if n < SMALL_SAMPLE:
                notes.append(f"{n} games (< {SMALL_SAMPLE})")
            if min(wins, n - wins) < MIN_CELL:
                notes.append(f"{wins} win(s), {n - wins} loss(es) (< {MIN_CELL})")
            paper = PAPER_Z.get((axis, str(level)))
            row: dict[str, object] = {
                "axis": axis,
                "level": level,
                "n_games": n,
                "wins": wins,
                "win_rate": wins / n if n else math.nan,
                "ci_low": lo,
                "ci_high": hi,
                "vs": base if level != base else "",
                "delta": math.nan,
                "z": math.nan,
                "alternative": alternative if level != base else "",
                "p_one_sided": math.nan,
                "p_two_sided": math.nan,
                "n_pairs": 0,
                "paired_delta": math.nan,
                "mcnemar_p": math.nan,
                "small_sample": bool(notes),
                "warning": "; ".join(notes),
                "paper_delta": paper[0] if paper else math.nan,
                "paper_p_one_sided": paper[1] if paper else math.nan,
            }
            if level != base:
                ref = games[games[axis] == base]
                w0, n0 = int(ref["impostor_win"].sum()), len(ref)
                row["delta"] = wins / n - w0 / n0
                z, p1 = two_proportion_z(wins, n, w0, n0, alternative)
                _, p2 = two_proportion_z(wins, n, w0, n0, "two-sided")
                row["z"], row["p_one_sided"], row["p_two_sided"] = z, p1, p2
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
    """One logistic regression of impostor win on every varying axis jointly.

    Standard errors are cluster-robust over the design's clusters (`design_clusters`)
    when there are at least `FEW_CLUSTERS` of them. With fewer, cluster-robust SEs rest
    on a handful of cluster scores (biased low on average and very noisy), so the table
    warns and `se`, `z`, `p` and the interval are the naive (model-based) ones, which
    take games as independent; the cluster-robust SE is always beside in `se_cluster`,
    and `se_method` says which one `se` is. A wild cluster bootstrap is not used: with 3
    clusters it has 8 distinct Rademacher draws, too few for a 95 % interval.

    Returns:
        `term, coef, se, z, p, ci_low, ci_high, odds_ratio, se_naive, se_cluster,
        se_method, n_games, n_clusters, cluster_by, warning, error`; a fit that cannot be
        made (too few games, separation) is one row with `error`.
    """
    import statsmodels.api as sm

    axes = axis_columns(games)
    cols = ["term", "coef", "se", "z", "p", "ci_low", "ci_high", "odds_ratio"]
    cols += ["se_naive", "se_cluster", "se_method", "n_games", "n_clusters", "cluster_by"]
    cols += ["warning", "error"]
    if not axes:
        return pd.DataFrame(
            [dict.fromkeys(cols, math.nan) | {"error": "no axis varies", "warning": ""}]
        )
    cats = pd.DataFrame(
        {
            a: pd.Categorical(
                games[a].astype(str),
                categories=sorted(
                    games[a].astype(str).unique(), key=lambda v: (v not in BASELINE_LEVELS, v)
                ),
            )
            for a in axes
        }
    )
    # The baseline (dropped) level of each axis is the one `axis_marginals` compares with.
    x = pd.get_dummies(cats, drop_first=True, dtype=float)
    x = sm.add_constant(x, has_constant="add")
    y = games["impostor_win"].to_numpy(dtype=float)
    cl = design_clusters(games)
    codes = pd.factorize(pd.Series(cl.keys))[0]
    n_clusters = int(codes.max() + 1) if len(codes) else 0
    few = n_clusters < FEW_CLUSTERS
    warning = (
        f"{n_clusters} {cl.by} cluster(s) (< {FEW_CLUSTERS}): cluster-robust SEs are "
        "unreliable with so few clusters (biased low on average, and noisy); se, z, p and "
        "the interval are naive (model-based, games taken as independent), the "
        "cluster-robust SE is in se_cluster"
        if few
        else ""
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = sm.Logit(y, x)
            naive = model.fit(disp=0)
            robust = model.fit(disp=0, cov_type="cluster", cov_kwds={"groups": codes})
        fit = naive if few else robust
        ci = fit.conf_int()
        if not np.all(np.isfinite(fit.bse)):
            raise ValueError("non-finite standard errors (separation?)")
    except Exception as exc:  # the fit's failure is reported in the table, not hidden
        row = dict.fromkeys(cols, math.nan) | {
            "term": "",
            "n_games": len(y),
            "n_clusters": n_clusters,
            "cluster_by": cl.by,
            "warning": warning,
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
                "se_naive": float(naive.bse[term]),
                "se_cluster": float(robust.bse[term]),
                "se_method": "naive" if few else "cluster-robust",
                "n_games": len(y),
                "n_clusters": n_clusters,
                "cluster_by": cl.by,
                "warning": warning,
                "error": "",
            }
        )
    return pd.DataFrame(rows)


def arm_sizes(games: pd.DataFrame) -> pd.DataFrame:
    """Valid games, invalid games, and the impostor win rate over the valid ones (with
    its 95 % Wilson interval) per arm, flagged when below `SMALL_SAMPLE` games or with
    fewer than `MIN_CELL` wins or losses."""
    rows = []
    for arm, every in games.groupby("arm"):
        group = every[every["status"] == "ok"] if "status" in every else every
        wins = group["impostor_win"].to_numpy(dtype=float)
        ci = _rate_row(wins, design_clusters(group).keys if len(group) else None)
        lo, hi = ci.bounds()
        n_wins = int(wins.sum())
        rows.append(
            {
                "arm": arm,
                "n_games": len(group),
                "n_invalid": len(every) - len(group),
                "wins": n_wins,
                "impostor_win_rate": float(wins.mean()) if len(wins) else math.nan,
                "ci_low": lo,
                "ci_high": hi,
                "small_sample": len(group) < SMALL_SAMPLE
                or min(n_wins, len(group) - n_wins) < MIN_CELL,
            }
        )
    return pd.DataFrame(rows)
