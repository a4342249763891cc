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
- A model's terms come from the design (`design_terms`): constant columns are left out,
  perfectly confounded ones (RQ1's crew corners; self-play's two model columns) become
  one term named by what differs, nested and linearly dependent ones are dropped, games
  without the axes (a scripted control arm) are left out, each with a warning; a
  separated or degenerate fit is reported as such, never as an enormous SE.
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
    "P": (0.210, 286),
    "C": (0.208, 1803),
    "O": (0.180, 811),
    "G": (0.171, 124),
    "M": (0.164, 1610),
    "S": (0.139, 45),
    "R": (0.137, 219),
    "T": (0.121, 43),
    "B": (0.076, 965),
    "I": (0.066, 48),
    "N": (0.060, 369),
    "J": (0.054, 25),
    "D": (0.021, 374),
    "L": (-0.017, 692),
    "V": (-0.025, 282),
    "Q": (-0.042, 92),
    "K": (-0.066, 1),
    "A": (-0.070, 2194),
    "W": (-0.117, 24),
    "U": (-0.139, 19),
}
"""RQ1 in the paper: atom -> (r_pb with impostor win, occurrences), 192 games; all 23
atoms as the authors' project page lists them (E, F, H and C lead)."""
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


PAPER_DIRECTIONS: dict[str, tuple[str, str] | None] = {
    "impostor.memory": ("window", "semantic"),
    "impostor.planning": ("hierarchical", "reactive"),
    "impostor.reflection": ("on", "off"),
    "impostor.prompt": None,
}
"""RQ1's pre-registered directions per impostor axis: (level expected to win more, the
other level). The authors registered window > semantic memory, reflection on > off and
hierarchical > reactive planning, one-sided; the prompt style has no a priori direction
(None: two-sided)."""
PROMPT_ORDER = ("deterministic", "minimal")
"""The order in which a two-sided prompt contrast is reported (deterministic - minimal)."""


def preset_alternative(
    axis: str, level: object | None = None, baseline: object | None = None
) -> Alternative:
    """The direction of the z-test of `level` against `baseline` on `axis`.

    Impostor axes with a pre-registered direction (`PAPER_DIRECTIONS`) are tested
    one-sided toward the level registered as the better one: `larger` when `level` is
    it, `smaller` when `baseline` is; the prompt style, a merged term (`crew.memory+
    planning`) and any pair of levels the registration does not cover are two-sided.
    Other impostor axes keep the project's convention that the richer setting helps the
    impostors (`larger`); crew axes that the richer setting helps the crew (`smaller`).
    Without `level` and `baseline` the usual comparison is meant: the non-baseline level
    (`BASELINE_LEVELS`) against the baseline one.
    """
    side, _, name = axis.partition(".")
    if "+" in name or side not in ("impostor", "crew"):
        return "two-sided"
    if axis in PAPER_DIRECTIONS:
        order = PAPER_DIRECTIONS[axis]
        if order is None:
            return "two-sided"
        better, worse = order
        if level is None or baseline is None:
            base = better if better in BASELINE_LEVELS else worse
            baseline, level = base, (worse if base == better else better)
        if str(level) == better and str(baseline) == worse:
            return "larger"
        if str(level) == worse and str(baseline) == better:
            return "smaller"
        return "two-sided"
    return "smaller" if side == "crew" else "larger"


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
COND_MAX = 30.0
"""A logit design matrix whose condition number (columns scaled to unit length, as
Belsley's collinearity diagnostics scale them) is larger is flagged near-collinear: its
terms are close to confounded and their estimates trade off against each other. 30 is
Belsley's mark of strong dependence; a balanced factorial design sits near 6."""
SE_MAX = 10.0
"""A logit standard error above this (log-odds scale: an odds-ratio interval wider than
e^±20) marks a fit that did not converge to a finite maximum (near-separation); its
estimates are withheld, never printed as if they meant something."""
TERM_NAMES: dict[str, str] = {"design.backbone": "backbone"}
"""Term names of design columns (`design.backbone` enters the model as `backbone`)."""


def axis_columns(games: pd.DataFrame) -> list[str]:
    """Axis columns (`impostor.*`, `crew.*`) that vary across the games."""
    return [
        c
        for c in games.columns
        if c.startswith(("impostor.", "crew.")) and games[c].nunique(dropna=True) > 1
    ]


def model_columns(games: pd.DataFrame) -> list[str]:
    """The model columns that vary: `design.backbone` when the study names its
    backbones, else `impostor_model` and `crew_model` (in self-play the two move
    together and `design_terms` merges them into one `backbone` term)."""
    if "design.backbone" in games.columns and games["design.backbone"].nunique(dropna=True) > 1:
        return ["design.backbone"]
    return [
        c
        for c in ("impostor_model", "crew_model")
        if c in games.columns and games[c].nunique(dropna=True) > 1
    ]


def level_key(level: object) -> tuple[int, str]:
    """Sort key of an axis level: baseline levels (`BASELINE_LEVELS`) first, then by
    name. A merged level (`window+hierarchical`) ranks by how many of its parts are
    baseline levels."""
    parts = str(level).split("+")
    return (-sum(p in BASELINE_LEVELS for p in parts), str(level))


@dataclass(frozen=True)
class Term:
    """One term of a model or one contrast of the marginals: a column, or several
    columns that move together, read as one categorical variable."""

    name: str
    """`impostor.memory`; a merged term is named by what differs (`crew.memory+planning`,
    `backbone` for `impostor_model` and `crew_model` together)."""
    columns: tuple[str, ...]
    """The games-table columns it stands for."""
    values: pd.Series
    """Its level per game (text; a merged level joins the parts with `+`), aligned with
    the games the design was built from; missing where a column is missing."""

    @property
    def levels(self) -> list[str]:
        """Its levels, the baseline first (`level_key`)."""
        return sorted(self.values.dropna().unique(), key=level_key)


@dataclass(frozen=True)
class DesignTerms:
    """What can be estimated from a set of columns over these games."""

    terms: list[Term]
    """The terms kept, in column order."""
    notes: pd.DataFrame
    """One row per decision: `term, columns, status, reason`; status is `kept`,
    `merged` (perfectly confounded columns as one term), `constant` (one level: nothing
    to estimate), `dropped` (determined by another term) or `missing` (games without
    the columns, left out)."""
    rows: np.ndarray
    """Which games every column is present for (the others are left out)."""

    @property
    def warnings(self) -> list[str]:
        """The notes that change what the model can say, as sentences."""
        return [
            f"{r.term}: {r.reason}"
            for r in self.notes.itertuples()
            if r.status in ("merged", "dropped", "missing")
        ]


def _determines(a: pd.Series, b: pd.Series) -> bool:
    """Every level of `a` goes with exactly one level of `b` (b is a function of a)."""
    frame = pd.DataFrame({"a": a.to_numpy(), "b": b.to_numpy()})
    return bool(frame.groupby("a")["b"].nunique().max() <= 1)


def merged_name(columns: Sequence[str]) -> str:
    """The name of a term standing for several columns: `backbone` for the two model
    columns, `side.a+b` for axes of one side, else the columns joined with `+`."""
    cols = list(columns)
    if set(cols) == {"impostor_model", "crew_model"}:
        return "backbone"
    sides = {c.split(".", 1)[0] for c in cols}
    if len(sides) == 1 and all("." in c for c in cols):
        return f"{sides.pop()}." + "+".join(c.split(".", 1)[1] for c in cols)
    return "+".join(TERM_NAMES.get(c, c) for c in cols)


def design_terms(
    games: pd.DataFrame, columns: Sequence[str], *, drop_nested: bool = True
) -> DesignTerms:
    """The terms a set of categorical columns supports over these games.

    Games missing any of the columns (a scripted control arm has no ARIA axes) are left
    out and counted. A column with one level is constant (nothing to estimate). Columns
    whose levels map one to one onto each other's over the games (RQ1's crew corners
    move `crew.memory` and `crew.planning` together; self-play moves both model columns
    together) are perfectly confounded: they become one term named by what differs,
    whose levels join the parts (`semantic+reactive`). A term whose level is fixed by
    another's (a coarser grouping nested in a finer one) cannot be separated from it
    and is dropped (`drop_nested`). Every decision is a row of `notes`.
    """
    cols = [c for c in columns if c in games.columns]
    present = (
        games[cols].notna().all(axis=1).to_numpy() if cols else np.ones(len(games), dtype=bool)
    )
    g = games.loc[present, cols].astype(str)
    notes: list[dict[str, str]] = []
    missing = int((~present).sum())
    if missing:
        notes.append(
            {
                "term": "(games)",
                "columns": ", ".join(cols),
                "status": "missing",
                "reason": f"{missing} game(s) lack these columns (a non-ARIA side, e.g. a "
                "scripted control arm) and are left out",
            }
        )
    varying = []
    for c in cols:
        levels = g[c].unique()
        if len(levels) <= 1:
            only = levels[0] if len(levels) else "none"
            notes.append(
                {
                    "term": TERM_NAMES.get(c, c),
                    "columns": c,
                    "status": "constant",
                    "reason": f"one level ({only}) over {len(g)} game(s): nothing to estimate",
                }
            )
        else:
            varying.append(c)
    group: dict[str, str] = {c: c for c in varying}

    def root(c: str) -> str:
        while group[c] != c:
            c = group[c]
        return c

    for a, b in itertools.combinations(varying, 2):
        if _determines(g[a], g[b]) and _determines(g[b], g[a]):
            group[root(b)] = root(a)
    groups: dict[str, list[str]] = {}
    for c in varying:
        groups.setdefault(root(c), []).append(c)
    terms: list[Term] = []
    merged: set[str] = set()
    for members in groups.values():
        if len(members) == 1:
            c = members[0]
            values = pd.Series(np.nan, index=games.index, dtype=object)
            values[present] = g[c].to_numpy()
            terms.append(Term(TERM_NAMES.get(c, c), (c,), values))
            continue
        name = merged_name(members)
        # Self-play's two model columns hold one value: the level is that value.
        same = (g[members].nunique(axis=1) == 1).to_numpy()
        joined = g[members].agg("+".join, axis=1).where(~same, g[members[0]])
        values = pd.Series(np.nan, index=games.index, dtype=object)
        values[present] = joined.to_numpy()
        term = Term(name, tuple(members), values)
        terms.append(term)
        merged.add(name)
        notes.append(
            {
                "term": name,
                "columns": ", ".join(members),
                "status": "merged",
                "reason": f"{' and '.join(members)} always change together in these games "
                f"(perfectly confounded): one term with levels {', '.join(term.levels)}; "
                "their separate effects cannot be estimated",
            }
        )
    kept: list[Term] = []
    for t in terms:
        finer = [
            o for o in terms if o is not t and _determines(o.values[present], t.values[present])
        ]
        if finer and drop_nested:
            notes.append(
                {
                    "term": t.name,
                    "columns": ", ".join(t.columns),
                    "status": "dropped",
                    "reason": f"its level is fixed by {finer[0].name} in every game, so its "
                    f"effect cannot be separated from {finer[0].name}'s",
                }
            )
            continue
        kept.append(t)
        if t.name not in merged:
            notes.append(
                {"term": t.name, "columns": ", ".join(t.columns), "status": "kept", "reason": ""}
            )
    table = pd.DataFrame(notes, columns=["term", "columns", "status", "reason"])
    return DesignTerms(kept, table, present)


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


def axis_marginals(games: pd.DataFrame) -> pd.DataFrame:
    """Marginal impostor win rate per axis level, and each level against the baseline.

    Axes that always change together (RQ1's crew corners) are one contrast, reported
    once under the merged name (`crew.memory+planning`, levels `semantic+reactive`...;
    `design_terms`); games without the axes (a scripted control arm) are left out. The
    rate's interval is Wilson's, widened by the design effect of shared seeds. The
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

    design = design_terms(games, axis_columns(games), drop_nested=False)
    keys = design_clusters(games).keys
    frame = pd.DataFrame(
        {
            "game_id": games["game_id"].to_numpy()
            if "game_id" in games.columns
            else np.arange(len(games)).astype(str),
            "impostor_win": games["impostor_win"].to_numpy(dtype=float),
        }
    )
    for c in ("seed", "impostor_model", "crew_model"):
        if c in games.columns:
            frame[c] = games[c].astype(str).to_numpy()
    for t in design.terms:
        frame[t.name] = t.values.to_numpy()
    rows = []
    for term in design.terms:
        axis = term.name
        levels = term.levels
        base = levels[0]
        others = [t.name for t in design.terms if t.name != axis]
        others += [c for c in ("seed", "impostor_model", "crew_model") if c in frame.columns]
        for level in levels:
            mask = (frame[axis] == level).to_numpy()
            sub = frame[mask]
            wins = int(sub["impostor_win"].sum())
            n = len(sub)
            alternative = preset_alternative(axis, level, base)
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
                ref = frame[frame[axis] == base]
                w0, n0 = int(ref["impostor_win"].sum()), len(ref)
                row["delta"] = wins / n - w0 / n0
                p1 = math.nan
                if alternative != "two-sided":
                    _, p1 = two_proportion_z(wins, n, w0, n0, alternative)
                z, p2 = two_proportion_z(wins, n, w0, n0, "two-sided")
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
    columns = [
        "axis", "level", "n_games", "wins", "win_rate", "ci_low", "ci_high", "vs", "delta",
        "z", "alternative", "p_one_sided", "p_two_sided", "n_pairs", "paired_delta",
        "mcnemar_p", "small_sample", "warning", "paper_delta", "paper_p_one_sided",
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


_LOGIT_COLUMNS = [
    "term", "from_columns", "coef", "se", "z", "p", "ci_low", "ci_high", "odds_ratio",
    "se_naive", "se_cluster", "se_method", "n_games", "n_clusters", "cluster_by",
    "warning", "error",
]  # fmt: skip


def logit_design(games: pd.DataFrame) -> pd.DataFrame:
    """How the logistic regression's terms were chosen (`design_terms` over the varying
    axes and model columns): one row per term decision, plus the dummy columns dropped
    as linear combinations of the others."""
    return _logit_inputs(games)[3]


def _logit_inputs(
    games: pd.DataFrame,
) -> tuple[pd.DataFrame, np.ndarray, list[str], pd.DataFrame, dict[str, str], np.ndarray]:
    """Design matrix (constant first), outcome, warnings, notes, dummy -> source columns,
    and the games used."""
    design = design_terms(games, axis_columns(games) + model_columns(games))
    notes = design.notes.copy()
    used = design.rows
    sub = games[used]
    dummies: dict[str, np.ndarray] = {}
    source: dict[str, str] = {}
    for t in design.terms:
        values = t.values[used]
        for level in t.levels[1:]:
            name = f"{t.name}_{level}"
            dummies[name] = (values == level).to_numpy(dtype=float)
            source[name] = ", ".join(t.columns)
    x = pd.DataFrame({"const": np.ones(len(sub))} | dummies, index=sub.index)
    # Drop dummy columns that add no rank: confounded beyond what pairs of columns show.
    keep = ["const"]
    dropped = []
    for name in dummies:
        trial = x[[*keep, name]].to_numpy()
        if np.linalg.matrix_rank(trial) > len(keep):
            keep.append(name)
        else:
            dropped.append(name)
    for name in dropped:
        notes.loc[len(notes)] = {
            "term": name,
            "columns": source[name],
            "status": "dropped",
            "reason": "a linear combination of the other terms' levels in these games "
            "(confounded): not estimable",
        }
    warnings_ = [f"{r.term}: {r.reason}" for r in notes.itertuples() if r.status != "kept"]
    warnings_ = [w for w in warnings_ if "nothing to estimate" not in w]
    y = sub["impostor_win"].to_numpy(dtype=float)
    return x[keep], y, warnings_, notes, source, used


def _separated_levels(x: pd.DataFrame, y: np.ndarray) -> list[str]:
    """Dummy levels (and the all-baseline rows) whose games are all wins or all losses:
    each makes the likelihood grow without bound along one coefficient."""
    out = []
    for name in x.columns[1:]:
        sel = x[name].to_numpy() == 1
        if sel.any() and (y[sel].min() == y[sel].max()):
            what = "win" if y[sel][0] == 1 else "loss"
            out.append(f"{name}: all {int(sel.sum())} game(s) a {what}")
    return out


def logistic_all_axes(games: pd.DataFrame) -> pd.DataFrame:
    """One logistic regression of impostor win on every varying axis jointly, and on the
    backbone when more than one model plays.

    The terms come from the design (`design_terms`): constant columns are left out,
    perfectly confounded ones merged into one term named by what differs (RQ1's
    `crew.memory+planning`; `backbone` for the two model columns under self-play),
    nested ones and dummy columns that are linear combinations of others dropped, and
    games without the axes (a scripted control arm) left out; each such decision is in
    `warning` (and in `logit_design`). A term level whose games are all wins or all
    losses separates the data: the likelihood has no finite maximum, so no estimate is
    reported (`error` says which level). A fit whose design matrix has a condition
    number above `COND_MAX` is flagged near-collinear; one with a standard error above
    `SE_MAX` is reported as degenerate, its estimates withheld.

    Standard errors are cluster-robust over the design's clusters (`design_clusters`)
    when there are at least `FEW_CLUSTERS` of them. With fewer, cluster-robust SEs rest
    on a handful of cluster scores (biased low on average and very noisy), so the table
    warns and `se`, `z`, `p` and the interval are the naive (model-based) ones, which
    take games as independent; the cluster-robust SE is always beside in `se_cluster`,
    and `se_method` says which one `se` is. A wild cluster bootstrap is not used: with 3
    clusters it has 8 distinct Rademacher draws, too few for a 95 % interval.

    Returns:
        `term, from_columns, coef, se, z, p, ci_low, ci_high, odds_ratio, se_naive,
        se_cluster, se_method, n_games, n_clusters, cluster_by, warning, error`; a fit
        that cannot be made (no term, too few games, separation, degenerate) has NaN
        estimates and says why in `error`.
    """
    from statsmodels.discrete.discrete_model import Logit

    def failed(terms: list[str], error: str, **extra: object) -> pd.DataFrame:
        base = dict.fromkeys(_LOGIT_COLUMNS, math.nan) | {"warning": "", "from_columns": ""}
        return pd.DataFrame(
            [base | {"term": t, "error": error} | extra for t in terms or [""]],
            columns=_LOGIT_COLUMNS,
        )

    if not axis_columns(games) and not model_columns(games):
        return failed([""], "no axis varies")
    x, y, notes, _, source, used = _logit_inputs(games)
    sub = games[used].reset_index(drop=True)
    cl = design_clusters(sub)
    codes = pd.factorize(pd.Series(cl.keys))[0]
    n_clusters = int(codes.max() + 1) if len(codes) else 0
    few = n_clusters < FEW_CLUSTERS
    if few:
        notes = [
            f"{n_clusters} {cl.by} cluster(s) (< {FEW_CLUSTERS}): cluster-robust SEs are "
            "unreliable with so few clusters (biased low on average, and noisy); se, z, p "
            "and the interval are naive (model-based, games taken as independent), the "
            "cluster-robust SE is in se_cluster",
            *notes,
        ]
    warning = "; ".join(notes)
    meta: dict[str, object] = {
        "n_games": len(y),
        "n_clusters": n_clusters,
        "cluster_by": cl.by,
        "warning": warning,
    }
    terms = list(x.columns)
    if len(terms) == 1:
        return failed([""], "no term left to estimate after the design checks", **meta)
    if len(y) <= len(terms) or y.min() == y.max():
        what = (
            f"all {len(y)} game(s) are impostor {'wins' if y[0] == 1 else 'losses'}"
            if len(y) and y.min() == y.max()
            else f"{len(y)} game(s) for {len(terms)} parameters"
        )
        return failed(terms, f"nothing to fit: {what}", **meta)
    separated = _separated_levels(x, y)
    if separated:
        return failed(
            terms,
            "separation: " + "; ".join(separated) + ". The likelihood has no finite "
            "maximum along these terms, so no estimate or SE is reported (pool or drop "
            "the level, or play more games)",
            **meta,
        )
    xv = x.to_numpy()
    cond = float(np.linalg.cond(xv / np.linalg.norm(xv, axis=0)))
    if cond > COND_MAX:
        meta["warning"] = "; ".join(
            [*notes, f"condition number {cond:.0f} (> {COND_MAX:.0f}): terms nearly confounded, "
             "estimates unstable"]
        )  # fmt: skip
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = Logit(y, x)
            naive = model.fit(disp=0, maxiter=200)
            robust = model.fit(disp=0, maxiter=200, cov_type="cluster", cov_kwds={"groups": codes})
    except Exception as exc:  # the fit's failure is reported in the table, not hidden
        return failed(terms, f"{type(exc).__name__}: {exc}", **meta)
    if any(issubclass(w.category, PerfectSeparationWarning) for w in caught):
        return failed(terms, "separation: statsmodels reports perfect prediction", **meta)
    fit = naive if few else robust
    bad = [t for t in terms if not np.isfinite(fit.bse[t]) or fit.bse[t] > SE_MAX]
    if bad:
        shown = ", ".join(f"{t} (SE {float(fit.bse[t]):.3g})" for t in bad)
        return failed(
            terms,
            f"degenerate fit: standard error above {SE_MAX:g} on the log-odds scale for "
            f"{shown}; near-separation, so no estimate is reported",
            **meta,
        )
    ci = fit.conf_int()
    rows = []
    for term in terms:
        rows.append(
            {
                "term": term,
                "from_columns": source.get(term, ""),
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
                **meta,
                "error": "",
            }
        )
    return pd.DataFrame(rows, columns=_LOGIT_COLUMNS)


# ---------------------------------------------------------------------- RQ1: paired
@dataclass(frozen=True)
class PairedBootstrap:
    """A cluster-paired bootstrap over matched configuration pairs."""

    delta: float
    """Mean paired difference of win rates (the first level minus the second)."""
    low: float
    high: float
    """95 % percentile interval of the mean over resampled pairs."""
    p: float
    """One-sided: share of resamples on the wrong side of 0 (at 0 included); two-sided:
    twice the smaller tail, at most 1. NaN without pairs."""
    n_pairs: int


def matched_pairs(
    games: pd.DataFrame, axis: str, first: str, second: str, within: Sequence[str]
) -> pd.DataFrame:
    """Configurations that differ only in `axis`: one row per matched pair.

    Games are grouped by `within` (the cell columns and the other configuration
    columns) and the axis; a pair is a group present at both levels.

    Returns:
        `within..., n_first, wins_first, rate_first, n_second, wins_second,
        rate_second, diff` (diff = rate_first - rate_second).
    """
    keys = [c for c in within if c != axis]
    sub = games[games[axis].astype(str).isin([first, second])].copy()
    sub["_level"] = sub[axis].astype(str)
    sub["_all"] = ""
    for c in keys:
        sub[c] = sub[c].astype(str)
    cols = [*keys, "n_first", "wins_first", "rate_first", "n_second", "wins_second"]
    cols += ["rate_second", "diff"]
    if sub.empty:
        return pd.DataFrame(columns=cols)
    by = [*keys, "_all"]
    agg = sub.groupby([*by, "_level"])["impostor_win"].agg(["size", "sum"]).reset_index()
    a = agg[agg["_level"] == first].drop(columns="_level")
    b = agg[agg["_level"] == second].drop(columns="_level")
    m = a.merge(b, on=by, suffixes=("_first", "_second"))
    out = pd.DataFrame({c: m[c] for c in keys})
    out["n_first"] = m["size_first"].astype(int)
    out["wins_first"] = m["sum_first"].astype(int)
    out["rate_first"] = m["sum_first"] / m["size_first"]
    out["n_second"] = m["size_second"].astype(int)
    out["wins_second"] = m["sum_second"].astype(int)
    out["rate_second"] = m["sum_second"] / m["size_second"]
    out["diff"] = out["rate_first"] - out["rate_second"]
    return out.reset_index(drop=True)[cols]


def cluster_paired_bootstrap(
    diffs: Sequence[float] | np.ndarray,
    alternative: Alternative,
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> PairedBootstrap:
    """Resample the pairs (the clusters) with replacement; the statistic is the mean
    paired difference. `larger`: p is the share of resampled means at or below 0;
    `smaller`: at or above 0; `two-sided`: twice the smaller of the two, at most 1."""
    d = np.asarray(diffs, dtype=float)
    n = len(d)
    if n == 0:
        return PairedBootstrap(math.nan, math.nan, math.nan, math.nan, 0)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    below, above = float((means <= 0).mean()), float((means >= 0).mean())
    if alternative == "larger":
        p = below
    elif alternative == "smaller":
        p = above
    else:
        p = min(1.0, 2 * min(below, above))
    return PairedBootstrap(float(d.mean()), float(lo), float(hi), p, n)


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
