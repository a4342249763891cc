"""RQ1's results: fix the backbone, vary the harness.

The paper's grid: 2 backbones (self-play: both sides play one model) x 2 crew corners
((semantic, reactive) and (window, hierarchical): `crew.memory` and `crew.planning` move
together) x 16 impostor configurations (memory x planning x reflection x prompt) x 3
repetitions. Each result here is registered for RQ1-shaped studies (`designs=("rq1",)`):

- `rq1.cell_win_rates`: impostor win rate per backbone x crew cell (the paper's cell
  table), Wilson intervals widened by the design effect of shared seeds;
- `rq1.axis_marginals`: each impostor axis's two levels per cell and pooled, drawn as
  the paper's panel figure;
- `rq1.z_tests`: two-proportion z-tests per axis, per cell and pooled, one-sided in the
  pre-registered direction (`stats.PAPER_DIRECTIONS`);
- `rq1.paired_bootstrap`: the authors' cluster-paired bootstrap over matched
  configuration pairs (pairs differing only in the axis, within a backbone and crew cell;
  the pair is the cluster);
- `rq1.atoms`: the 23 atoms' counts and r_pb with impostor win (as emitted and passing
  the grounded filters, when those differ);
- `rq1.arcs`: atoms per game over the five phases;
- `rq1.state`: kills and win rate per state level (the ego-collapse check).

Games whose impostors have no ARIA axes (a scripted control arm) are left out of every
RQ1 result, and each says how many.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from annotation import stats
from annotation.report.document import Figure, Table, Text, Warning_
from annotation.report.document import Section as Sec
from annotation.report.figures import empty_panel, error_bars, new_figure, save
from annotation.report.results import ResultOutput, StudyData, result

IMPOSTOR_ORDER = ("memory", "planning", "reflection", "prompt", "state")
"""The paper's order of the impostor axes (others follow by name)."""
ALL = "pooled"
"""The scope name of a figure over every cell."""
PAPER_CELLS: dict[tuple[str, str], float] = {
    ("qwen3.6-27b", "semantic+reactive"): 0.44,
    ("qwen3.6-27b", "window+hierarchical"): 0.52,
    ("gpt-4.1-mini", "semantic+reactive"): 0.60,
    ("gpt-4.1-mini", "window+hierarchical"): 0.25,
}
"""The paper's impostor win rate per (backbone, crew corner), 48 games each."""
PAPER_EGO = (
    "0 kills in 10 games with ego state (GPT-4.1-mini 40 % -> 0 %, Qwen3.6-27B 40 % -> 20 %)"
)
"""The paper's preliminary finding on egocentric state."""


@dataclass
class Rq1Frame:
    """The RQ1 games with their cell labels."""

    games: pd.DataFrame
    """Games whose impostors have ARIA axes, with `backbone`, `crew` and `cell` columns."""
    axes: list[str]
    """Impostor axes that vary, in the paper's order."""
    crew_name: str
    """What the crew label is (`crew.memory+planning`, `design.crew`, or `crew`)."""
    left_out: int
    """Games left out (no impostor axes: a scripted control arm)."""
    notes: list[str] = field(default_factory=list)

    @property
    def backbones(self) -> list[str]:
        """Backbones in name order."""
        return sorted(self.games["backbone"].unique())

    @property
    def crews(self) -> list[str]:
        """Crew corners, the baseline-most first (`stats.level_key`)."""
        return sorted(self.games["crew"].unique(), key=stats.level_key)

    def cells(self) -> list[tuple[str, str]]:
        """Every (backbone, crew) cell that has games."""
        have = set(zip(self.games["backbone"], self.games["crew"], strict=True))
        return [(b, c) for b in self.backbones for c in self.crews if (b, c) in have]

    def scopes(self) -> list[tuple[str, str, str, pd.DataFrame]]:
        """(scope, backbone, crew, games) for every cell, then pooled."""
        out = []
        for b, c in self.cells():
            sub = self.games[(self.games["backbone"] == b) & (self.games["crew"] == c)]
            out.append((f"{b} / {c}", b, c, sub))
        out.append((ALL, "all", "all", self.games))
        return out

    def notes_blocks(self, *, full: bool = False) -> list[Warning_ | Text]:
        """The frame's notes as report blocks: in full (warnings) for the first RQ1
        section, else one line saying which games the result reads."""
        blocks: list[Warning_ | Text] = []
        if not full:
            left = (
                f"; {self.left_out} game(s) without impostor ARIA axes left out"
                if self.left_out
                else ""
            )
            return [Text(f"{len(self.games)} RQ1 game(s) in {len(self.cells())} cell(s){left}.")]
        if self.left_out:
            blocks.append(
                Warning_(
                    f"{self.left_out} game(s) without impostor ARIA axes (a scripted control "
                    "arm) are left out of the RQ1 results."
                )
            )
        blocks.extend(Text(n) for n in self.notes)
        return blocks


def _short(model: object) -> str:
    return str(model).rsplit(":", 1)[-1].rsplit("/", 1)[-1].lower()


def _paper_cell(cell: pd.DataFrame) -> float:
    """The paper's win rate of a cell whose backbone and crew corner it names (matched on
    the model's name and the crew's memory and planning levels), else NaN."""
    models = {_short(m) for m in cell["backbone"]} | {_short(m) for m in cell["impostor_model"]}
    for corner in set(cell["crew_axes"]):
        for model in models:
            if (model, corner) in PAPER_CELLS:
                return PAPER_CELLS[(model, corner)]
    return math.nan


def rq1_frame(data: StudyData) -> Rq1Frame:
    """The RQ1 games: impostor ARIA games, labelled with their backbone (`design.backbone`
    when the study names it, else the impostors' model) and crew corner (`design.crew`,
    else the varying crew axes' levels joined, e.g. `semantic+reactive`)."""
    g = data.games
    imp_cols = [c for c in g.columns if c.startswith("impostor.")]
    has = (
        g[imp_cols].notna().all(axis=1) if imp_cols else pd.Series(False, index=g.index)
    ).to_numpy(dtype=bool)
    sub = g[has].copy()
    notes: list[str] = []
    if sub.empty:
        empty = sub.assign(backbone="", crew="", cell="", crew_axes="")
        return Rq1Frame(empty, [], "crew", int((~has).sum()), notes)
    order = {f"impostor.{a}": i for i, a in enumerate(IMPOSTOR_ORDER)}
    axes = sorted(
        (c for c in imp_cols if sub[c].nunique(dropna=True) > 1),
        key=lambda c: (order.get(c, len(order)), c),
    )
    if "design.backbone" in sub.columns and sub["design.backbone"].notna().all():
        sub["backbone"] = sub["design.backbone"].astype(str)
    else:
        sub["backbone"] = sub["impostor_model"].astype(str)
        if "crew_model" in sub.columns:
            other = int((sub["crew_model"].astype(str) != sub["backbone"]).sum())
            if other:
                notes.append(
                    f"Backbone is the impostors' model; in {other} game(s) the crew plays "
                    "another model (not self-play)."
                )
    if "design.crew" in sub.columns and sub["design.crew"].notna().all():
        sub["crew"] = sub["design.crew"].astype(str)
        crew_name = "design.crew"
    else:
        crew_axes = [
            c for c in sub.columns if c.startswith("crew.") and sub[c].nunique(dropna=True) > 1
        ]
        if crew_axes:
            sub["crew"] = sub[crew_axes].astype(str).agg("+".join, axis=1)
            crew_name = stats.merged_name(crew_axes) if len(crew_axes) > 1 else crew_axes[0]
        else:
            sub["crew"] = "fixed crew"
            crew_name = "crew"
    sub["cell"] = sub["backbone"] + " / " + sub["crew"]
    # The corner in the axes' own words, whatever the study labels it (the paper's key).
    parts = [c for c in ("crew.memory", "crew.planning") if c in sub.columns]
    sub["crew_axes"] = sub[parts].astype(str).agg("+".join, axis=1) if parts else ""
    return Rq1Frame(sub.reset_index(drop=True), axes, crew_name, int((~has).sum()), notes)


def _rate(frame: pd.DataFrame) -> dict[str, object]:
    """n, wins, rate and its Wilson interval (design effect of shared seeds)."""
    wins = frame["impostor_win"].to_numpy(dtype=float)
    ci = stats.rate_interval(
        [float(v) for v in wins],
        list(stats.design_clusters(frame).keys) if len(frame) else None,
    )
    lo, hi = ci.bounds()
    n, w = len(frame), int(wins.sum())
    return {
        "n_games": n,
        "wins": w,
        "win_rate": w / n if n else math.nan,
        "ci_low": lo,
        "ci_high": hi,
        "interval": ci.method,
        "small_sample": n < stats.SMALL_SAMPLE or min(w, n - w) < stats.MIN_CELL,
    }


def _no_rq1(frame: Rq1Frame, title: str) -> Sec | None:
    """The section of a result with no RQ1 game to read (None when there are some)."""
    if frame.games.empty:
        return Sec(
            title,
            [
                Warning_("No game has impostor ARIA axes: nothing to show."),
                *frame.notes_blocks(full=True),
            ],
        )
    return None


# ---------------------------------------------------------------------- cells
def _figure_cells(table: pd.DataFrame, frame: Rq1Frame, path: Path) -> Path:
    fig, axes = new_figure(size=(7.0, 3.6))
    ax = axes[0, 0]
    cells = table[(table["backbone"] != "all") & (table["crew"] != "all")]
    backbones, crews = frame.backbones, frame.crews
    width = 0.8 / max(1, len(crews))
    for j, crew in enumerate(crews):
        rows = cells[cells["crew"] == crew].set_index("backbone").reindex(backbones)
        x = np.arange(len(backbones)) + (j - (len(crews) - 1) / 2) * width
        ax.bar(
            x,
            rows["win_rate"].fillna(0),
            width,
            yerr=error_bars(rows["win_rate"], rows["ci_low"], rows["ci_high"]),
            capsize=3,
            color=f"C{j}",
            label=crew if crew.startswith("crew") else f"crew {crew}",
        )
        for xi, n in zip(x, rows["n_games"], strict=True):
            if not pd.isna(n):
                ax.annotate(f"n={int(n)}", (xi, 0.02), ha="center", fontsize=7)
    ax.set_xticks(np.arange(len(backbones)), backbones, fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("impostor win rate")
    ax.legend(fontsize=7)
    ax.set_title("Impostor win rate per backbone x crew corner (RQ1), 95 % Wilson intervals")
    return save(fig, path)


@result("rq1.cell_win_rates", "RQ1: impostor win rate per backbone x crew cell", ("rq1",))
def cell_win_rates(data: StudyData) -> ResultOutput:
    """Impostor win rate per (backbone, crew corner) cell, per backbone over its crews and
    over everything; each crew corner's difference from the first within its backbone;
    the paper's rate beside when the backbone and corner match its names."""
    frame = rq1_frame(data)
    title = "RQ1: impostor win rate per backbone x crew cell"
    empty = _no_rq1(frame, title)
    if empty:
        return ResultOutput(sections=[empty])
    rows = []
    for b in frame.backbones:
        mine = frame.games[frame.games["backbone"] == b]
        first: float | None = None
        for c in frame.crews:
            sub = mine[mine["crew"] == c]
            if sub.empty:
                continue
            r = {"backbone": b, "crew": c, **_rate(sub)}
            rate = float(r["win_rate"])  # type: ignore[arg-type]
            r["delta_vs_first_crew"] = math.nan if first is None else rate - first
            first = rate if first is None else first
            r["paper_win_rate"] = _paper_cell(sub)
            rows.append(r)
        rows.append(
            {
                "backbone": b,
                "crew": "all",
                **_rate(mine),
                "delta_vs_first_crew": math.nan,
                "paper_win_rate": math.nan,
            }
        )
    rows.append(
        {
            "backbone": "all",
            "crew": "all",
            **_rate(frame.games),
            "delta_vs_first_crew": math.nan,
            "paper_win_rate": math.nan,
        }
    )
    table = pd.DataFrame(rows)
    path = _figure_cells(table, frame, data.figdir / "rq1_cell_win_rates.png")
    sec = Sec(title, [*frame.notes_blocks(full=True)])
    sec.blocks.append(
        Text(
            f"Crew corner: {frame.crew_name}. The paper: changing only the crew's (memory, "
            "planning) corner moved the impostor win rate from 44 % to 52 % (Qwen3.6-27B) and "
            "from 60 % to 25 % (GPT-4.1-mini), 48 games per cell."
        )
    )
    if bool(table["small_sample"].any()):
        sec.blocks.append(
            Warning_(
                f"Cells with fewer than {stats.SMALL_SAMPLE} games or fewer than "
                f"{stats.MIN_CELL} wins or losses are too small a sample to read."
            )
        )
    sec.blocks.append(Figure(path, "Impostor win rate per backbone x crew corner"))
    sec.blocks.append(Table(table, "Win rate per cell, per backbone and overall"))
    return ResultOutput(tables={"rq1_cell_win_rates": table}, sections=[sec], figures=[path])


# ---------------------------------------------------------------------- marginals
def _figure_marginals(table: pd.DataFrame, frame: Rq1Frame, path: Path) -> Path:
    scopes = [s for s, *_ in frame.scopes()]
    n = len(scopes)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = new_figure(rows, cols, size=(4.2 * cols, 3.2 * rows))
    for k in range(rows * cols):
        ax = axes[k // cols, k % cols]
        if k >= n:
            ax.axis("off")
            continue
        scope = scopes[k]
        t = table[table["scope"] == scope]
        if t.empty or not frame.axes:
            empty_panel(ax, "no impostor axis varies")
            ax.set_title(scope, fontsize=8)
            continue
        xs, labels = [], []
        for i, axis in enumerate(frame.axes):
            lv = t[t["axis"] == axis]
            for j, (_, r) in enumerate(lv.iterrows()):
                x = i + (j - (len(lv) - 1) / 2) * 0.38
                ax.bar(
                    x,
                    r["win_rate"],
                    0.36,
                    yerr=error_bars([r["win_rate"]], [r["ci_low"]], [r["ci_high"]]),
                    capsize=2,
                    color=f"C{j}",
                )
                xs.append(x)
                labels.append(f"{axis.split('.', 1)[1]}\n{r['level']}")
        ax.set_xticks(xs, labels, fontsize=6)
        ax.set_ylim(0, 1)
        ax.set_ylabel("impostor win rate", fontsize=7)
        ax.set_title(scope, fontsize=8)
    fig.suptitle("Impostor win rate per axis level, per backbone x crew cell and pooled (RQ1)")
    return save(fig, path)


@result(
    "rq1.axis_marginals", "RQ1: win rate per impostor axis level, per cell and pooled", ("rq1",)
)
def axis_marginals(data: StudyData) -> ResultOutput:
    """Each varying impostor axis: its levels' win rates (Wilson, design effect) per
    backbone x crew cell and pooled, in the paper's panel layout."""
    frame = rq1_frame(data)
    title = "RQ1: win rate per impostor axis level"
    empty = _no_rq1(frame, title)
    if empty:
        return ResultOutput(sections=[empty])
    rows = []
    for scope, b, c, sub in frame.scopes():
        for axis in frame.axes:
            for level in sorted(sub[axis].dropna().astype(str).unique(), key=stats.level_key):
                part = sub[sub[axis].astype(str) == level]
                rows.append(
                    {
                        "scope": scope,
                        "backbone": b,
                        "crew": c,
                        "axis": axis,
                        "level": level,
                        **_rate(part),
                    }
                )
    table = pd.DataFrame(
        rows,
        columns=[
            "scope",
            "backbone",
            "crew",
            "axis",
            "level",
            "n_games",
            "wins",
            "win_rate",
            "ci_low",
            "ci_high",
            "interval",
            "small_sample",
        ],
    )
    path = _figure_marginals(table, frame, data.figdir / "rq1_axis_marginals.png")
    sec = Sec(title, [*frame.notes_blocks()])
    if not frame.axes:
        sec.blocks.append(Warning_("No impostor axis varies across these games."))
    sec.blocks.append(
        Figure(
            path, "Impostor win rate per axis level (95 % Wilson intervals), per cell and pooled"
        )
    )
    sec.blocks.append(Table(table, "Marginal win rate per axis level", max_rows=80))
    return ResultOutput(tables={"rq1_axis_marginals": table}, sections=[sec], figures=[path])


# ---------------------------------------------------------------------- z-tests
@result("rq1.z_tests", "RQ1: two-proportion z-tests per axis, per cell and pooled", ("rq1",))
def z_tests(data: StudyData) -> ResultOutput:
    """Each non-baseline level against the baseline, per cell and pooled (the pooled
    table also tests the crew corner, as one merged contrast): statsmodels' pooled
    two-proportion z-test, one-sided in the pre-registered direction and two-sided."""
    frame = rq1_frame(data)
    title = "RQ1: two-proportion z-tests"
    empty = _no_rq1(frame, title)
    if empty:
        return ResultOutput(sections=[empty])
    parts = []
    for scope, b, c, sub in frame.scopes():
        marg = stats.axis_marginals(sub)
        if marg.empty:
            continue
        base = marg[marg["vs"] == ""].set_index("axis")
        test = marg[marg["vs"] != ""].copy()
        test["n_ref"] = test["axis"].map(base["n_games"])
        test["wins_ref"] = test["axis"].map(base["wins"])
        test.insert(0, "crew", c)
        test.insert(0, "backbone", b)
        test.insert(0, "scope", scope)
        parts.append(test)
    cols = [
        "scope",
        "backbone",
        "crew",
        "axis",
        "level",
        "vs",
        "n_games",
        "wins",
        "n_ref",
        "wins_ref",
        "delta",
        "z",
        "alternative",
        "p_one_sided",
        "p_two_sided",
        "small_sample",
        "warning",
        "paper_delta",
        "paper_p_one_sided",
    ]
    table = pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)
    sec = Sec(title, [*frame.notes_blocks()])
    sec.blocks.append(
        Text(
            "One-sided in the pre-registered direction (window > semantic memory, "
            "hierarchical > reactive planning, reflection on > off); the prompt style and "
            "the crew corner two-sided. The paper: planning and reflection +9.4 pp, "
            "one-sided p = 0.096 (pooled, 192 games)."
        )
    )
    sec.blocks.append(Table(table, "z-tests per cell and pooled", max_rows=80))
    return ResultOutput(tables={"rq1_z_tests": table}, sections=[sec])


# ---------------------------------------------------------------------- paired bootstrap
def axis_direction(axis: str, levels: list[str]) -> tuple[str, str, stats.Alternative] | None:
    """(first level, second level, alternative) of an axis's paired contrast: the
    pre-registered better level first, one-sided; the prompt style deterministic first,
    two-sided; another axis its non-baseline level first, two-sided. None when the
    axis does not have exactly the two levels its contrast needs."""
    order = stats.PAPER_DIRECTIONS.get(axis, "unset")
    if order is None:
        first, second = stats.PROMPT_ORDER
        alternative: stats.Alternative = "two-sided"
    elif order == "unset":
        if len(levels) != 2:
            return None
        second, first = sorted(levels, key=stats.level_key)
        alternative = "two-sided"
    else:
        first, second = order  # type: ignore[misc]
        alternative = "larger"
    if {first, second} != set(levels):
        return None
    return first, second, alternative


def _figure_bootstrap(table: pd.DataFrame, path: Path) -> Path:
    rows = table.dropna(subset=["delta"]).reset_index(drop=True)
    fig, axes = new_figure(size=(9.0, max(2.8, 0.3 * len(rows) + 1.4)))
    ax = axes[0, 0]
    if rows.empty:
        empty_panel(ax, "no matched configuration pairs")
    else:
        y = np.arange(len(rows))[::-1]
        ax.errorbar(
            rows["delta"],
            y,
            xerr=error_bars(rows["delta"], rows["ci_low"], rows["ci_high"]),
            fmt="o",
            capsize=3,
        )
        ax.axvline(0, color="grey", lw=0.8)
        labels = [
            f"{r.scope}: {str(r.axis).split('.', 1)[1]} {r.first}-{r.second} (n={r.n_pairs})"
            for r in rows.itertuples()
        ]
        ax.set_yticks(y, labels, fontsize=6)
        ax.set_xlabel("mean paired difference in impostor win rate")
    fig.suptitle("Cluster-paired bootstrap over matched configuration pairs (RQ1)")
    return save(fig, path)


@result("rq1.paired_bootstrap", "RQ1: cluster-paired bootstrap over matched pairs", ("rq1",))
def paired_bootstrap(data: StudyData) -> ResultOutput:
    """For each impostor axis: configurations differing only in that axis within the
    same backbone and crew cell form a matched pair; the statistic is the mean paired
    difference of their win rates; pairs are resampled with replacement (the pair is the
    cluster). p is one-sided (share of resamples on the wrong side of 0) in the
    pre-registered direction, two-sided for the prompt style."""
    frame = rq1_frame(data)
    title = "RQ1: cluster-paired bootstrap over matched configuration pairs"
    empty = _no_rq1(frame, title)
    if empty:
        return ResultOutput(sections=[empty])
    rows = []
    pairs_all = []
    sec = Sec(title, [*frame.notes_blocks()])
    for axis in frame.axes:
        levels = sorted(frame.games[axis].dropna().astype(str).unique(), key=stats.level_key)
        direction = axis_direction(axis, levels)
        if direction is None:
            sec.blocks.append(
                Warning_(f"{axis}: levels {levels} do not form its paired contrast; skipped.")
            )
            continue
        first, second, alternative = direction
        within = ["backbone", "crew", *[a for a in frame.axes if a != axis]]
        pairs = stats.matched_pairs(frame.games, axis, first, second, within)
        pairs_all.append(pairs.assign(axis=axis, first=first, second=second))
        for scope, b, c, _sub in frame.scopes():
            mine = pairs if scope == ALL else pairs[(pairs["backbone"] == b) & (pairs["crew"] == c)]
            key = zlib.crc32(f"{scope}|{axis}".encode())
            boot = stats.cluster_paired_bootstrap(
                mine["diff"].to_numpy(dtype=float),
                alternative,
                n_boot=data.n_boot,
                seed=(data.seed * 1_000_003 + key) % (2**32),
            )
            notes = []
            if boot.n_pairs == 0:
                notes.append("no matched pair")
            elif boot.n_pairs < stats.MIN_CELL:
                notes.append(f"{boot.n_pairs} pair(s) (< {stats.MIN_CELL}): too few to read")
            if boot.n_pairs and boot.p == 0:
                notes.append(f"p < 1/{data.n_boot} (no resample on the wrong side)")
            rows.append(
                {
                    "scope": scope,
                    "backbone": b,
                    "crew": c,
                    "axis": axis,
                    "first": first,
                    "second": second,
                    "alternative": alternative,
                    "n_pairs": boot.n_pairs,
                    "delta": boot.delta,
                    "ci_low": boot.low,
                    "ci_high": boot.high,
                    "p": boot.p,
                    "n_boot": data.n_boot,
                    "note": "; ".join(notes),
                }
            )
    cols = [
        "scope",
        "backbone",
        "crew",
        "axis",
        "first",
        "second",
        "alternative",
        "n_pairs",
        "delta",
        "ci_low",
        "ci_high",
        "p",
        "n_boot",
        "note",
    ]
    table = pd.DataFrame(rows, columns=cols)
    pairs_table = (
        pd.concat(pairs_all, ignore_index=True) if pairs_all else pd.DataFrame(columns=["axis"])
    )
    path = _figure_bootstrap(table, data.figdir / "rq1_paired_bootstrap.png")
    sec.blocks.append(
        Text(
            "delta = mean over matched pairs of (win rate at `first` - win rate at "
            "`second`); 95 % percentile interval over resampled pairs; p one-sided toward "
            "`first` (window memory, hierarchical planning, reflection on), two-sided for "
            "the prompt style (deterministic - minimal)."
        )
    )
    sec.blocks.append(Figure(path, "Mean paired difference with its 95 % bootstrap interval"))
    sec.blocks.append(
        Table(table, "Cluster-paired bootstrap per axis, per cell and pooled", max_rows=80)
    )
    return ResultOutput(
        tables={"rq1_paired_bootstrap": table, "rq1_matched_pairs": pairs_table},
        sections=[sec],
        figures=[path],
    )


# ---------------------------------------------------------------------- atoms
RPB_COLUMNS = [
    "atom",
    "occurrences",
    "games_with",
    "r",
    "ci_low",
    "ci_high",
    "p_perm",
    "p_perm_holm",
    "warning",
]
"""The columns of the atom table taken from `stats.point_biserial`."""


def _rpb_columns(counts: pd.DataFrame, games: pd.DataFrame, data: StudyData) -> pd.DataFrame:
    if counts.empty:
        return pd.DataFrame(columns=RPB_COLUMNS)
    got = stats.point_biserial(
        counts, games, n_boot=data.n_boot, n_perm=data.n_perm, seed=data.seed
    )
    return got[RPB_COLUMNS]


def _figure_atoms(table: pd.DataFrame, data: StudyData, path: Path, source: str) -> Path:
    from matplotlib.lines import Line2D

    clusters = list(data.book.clusters)
    t = table.reset_index(drop=True)
    fig, axes = new_figure(size=(6.5, 6.0))
    ax = axes[0, 0]
    y = np.arange(len(t))[::-1]
    for yi, (_, r) in zip(y, t.iterrows(), strict=True):
        color = f"C{clusters.index(str(r['cluster']))}"
        if pd.notna(r["r"]):
            err = error_bars([r["r"]], [r["ci_low"]], [r["ci_high"]])
            ax.errorbar([r["r"]], [yi], xerr=err, fmt="o", color=color, capsize=2)
        if pd.notna(r["paper_r"]):
            ax.plot([r["paper_r"]], [yi], marker="x", color="black", ms=5)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(
        y, [f"{a} ({c})" for a, c in zip(t["atom"], t["cluster"], strict=True)], fontsize=7
    )
    ax.set_xlabel("r_pb of per-game count with impostor win")
    handles = [Line2D([], [], marker="o", ls="", color=f"C{i}") for i in range(len(clusters))]
    handles.append(Line2D([], [], marker="x", ls="", color="black"))
    ax.legend(handles, [*clusters, "paper"], fontsize=6, loc="lower right")
    ax.set_title(f"The 23 atoms' r_pb with impostor win (RQ1, {source})")
    return save(fig, path)


@result("rq1.atoms", "RQ1: the 23 atoms' counts and r_pb with impostor win", ("rq1",))
def atoms(data: StudyData) -> ResultOutput:
    """Every codebook atom over the RQ1 games (primary source): occurrences, games with
    it, point-biserial r with impostor win (cluster-bootstrap interval, permutation p),
    ranked by r as the paper ranks them; beside, the counts and r of the findings that
    pass the grounded filters when the source keeps its findings as emitted."""
    frame = rq1_frame(data)
    title = "RQ1: the 23 atoms and impostor win"
    empty = _no_rq1(frame, title)
    if empty:
        return ResultOutput(sections=[empty])
    ids = [i for i in frame.games["game_id"] if i in data.counts.index]
    games = frame.games[frame.games["game_id"].isin(ids)]
    counts = data.counts.loc[ids]
    measured = [a for a in data.book.letters if a in counts.columns]
    base = pd.DataFrame(
        {
            "atom": data.book.letters,
            "name": [data.book.atom(a).name for a in data.book.letters],
            "cluster": [data.book.atom(a).cluster for a in data.book.letters],
            "channel": [data.book.channel(a) for a in data.book.letters],
            "measured": [a in measured for a in data.book.letters],
            "n_games": len(ids),
        }
    )
    emitted = _rpb_columns(counts[measured], games, data)
    table = base.merge(emitted, on="atom", how="left")
    if data.counts_filtered is not None:
        filt = data.counts_filtered.reindex(index=ids, columns=measured, fill_value=0)
        passed = _rpb_columns(filt, games, data).add_suffix("_filtered")
        table = table.merge(passed, left_on="atom", right_on="atom_filtered", how="left")
        table = table.drop(columns="atom_filtered")
    table["paper_r"] = [stats.PAPER_RPB.get(a, (math.nan, 0))[0] for a in table["atom"]]
    table["paper_occurrences"] = [
        stats.PAPER_RPB.get(a, (math.nan, math.nan))[1] for a in table["atom"]
    ]
    table = table.sort_values("r", ascending=False, na_position="last", kind="stable")
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    table = table.reset_index(drop=True)
    path = _figure_atoms(table, data, data.figdir / "rq1_atoms.png", data.counts_source)
    sec = Sec(title, [*frame.notes_blocks()])
    sec.blocks.append(
        Text(
            f"Source: {data.counts_source}, {len(ids)} RQ1 game(s). The paper (192 games): "
            "E +0.434 (618), F +0.414 (352), H +0.270 (187), C +0.208 (1803) lead."
        )
    )
    if not all(table["measured"]):
        missing = ", ".join(table.loc[~table["measured"], "atom"])
        sec.blocks.append(
            Warning_(f"{data.counts_source} cannot find atoms {missing}: not measured (not zero).")
        )
    if data.counts_filtered is not None:
        sec.blocks.append(
            Text(
                "The source keeps its findings as emitted: `occurrences`/`r` count them "
                "all, the `_filtered` columns only those passing the grounded filters."
            )
        )
    sec.blocks.append(Figure(path, "r_pb per atom with 95 % cluster-bootstrap intervals; x: paper"))
    sec.blocks.append(Table(table, "The 23 atoms ranked by r_pb", max_rows=30))
    return ResultOutput(tables={"rq1_atoms": table}, sections=[sec], figures=[path])


# ---------------------------------------------------------------------- arcs
def _figure_arcs(table: pd.DataFrame, data: StudyData, path: Path, source: str) -> Path:
    phases = [p.name for p in data.book.phases]
    clusters = list(data.book.clusters)
    fig, axes = new_figure(size=(7.5, 3.8))
    ax = axes[0, 0]
    if table.empty:
        empty_panel(ax, "no accepted finding in these games")
    else:
        per = table.groupby(["phase", "cluster"])["per_game"].sum().unstack(fill_value=0.0)
        per = per.reindex(index=phases, columns=clusters, fill_value=0.0)
        bottom = np.zeros(len(phases))
        for i, cl in enumerate(clusters):
            vals = per[cl].to_numpy(dtype=float)
            ax.bar(np.arange(len(phases)), vals, bottom=bottom, color=f"C{i}", label=cl)
            bottom += vals
        ax.set_xticks(np.arange(len(phases)), phases)
        ax.set_ylabel("atoms per game")
        ax.legend(fontsize=7, ncol=3)
    ax.set_title(f"Atoms per game over the five phases, by cluster (RQ1, {source})")
    return save(fig, path)


@result("rq1.arcs", "RQ1: atoms over the five phases", ("rq1",))
def arcs(data: StudyData) -> ResultOutput:
    """Per phase (before meeting 1, meeting 1, between, meeting 2, after) and atom:
    occurrences and per-game counts of the primary source's accepted findings over the
    RQ1 games, drawn stacked by cluster."""
    frame = rq1_frame(data)
    title = "RQ1: atoms over the five phases"
    empty = _no_rq1(frame, title)
    if empty:
        return ResultOutput(sections=[empty])
    ids = set(frame.games["game_id"]) & set(data.counts.index)
    f = data.findings
    source = data.counts_source
    mine = f["kind"] == "detector" if source == "detector" else f["source"] == source
    acc = f[mine & f["accepted"].astype(bool) & f["game_id"].isin(ids)]
    by_phase = stats.arcs_by_phase(acc, data.book)
    cols = ["phase", "atom", "cluster", "occurrences", "games_with", "per_game"]
    if by_phase.empty:
        table = pd.DataFrame(columns=cols)
    else:
        agg = by_phase.groupby(["phase", "atom"]).agg(
            occurrences=("count", "sum"), games_with=("game_id", "nunique")
        )
        table = agg.reset_index()
        table["cluster"] = [data.book.atom(a).cluster for a in table["atom"]]
        table["per_game"] = table["occurrences"] / max(1, len(ids))
        order = {p.name: i for i, p in enumerate(data.book.phases)}
        table = table.sort_values(
            ["phase", "atom"], key=lambda s: s.map(order) if s.name == "phase" else s
        )
        table = table[cols].reset_index(drop=True)
    path = _figure_arcs(table, data, data.figdir / "rq1_arcs.png", source)
    sec = Sec(title, [*frame.notes_blocks()])
    sec.blocks.append(
        Text(
            f"Source: {source}, {len(ids)} game(s). The paper's arc: kill-cycle atoms "
            "(C, E, F, H) after fake missions (A, B) in a task phase, then falsification "
            "(L, M, N, O) in the meeting right after."
        )
    )
    sec.blocks.append(Figure(path, "Atoms per game over the five phases, stacked by cluster"))
    sec.blocks.append(Table(table, "Atoms per phase", max_rows=60))
    return ResultOutput(tables={"rq1_arcs": table}, sections=[sec], figures=[path])


# ---------------------------------------------------------------------- state
@result("rq1.state", "RQ1: kills and win rate per state level (ego collapse)", ("rq1", "other"))
def state(data: StudyData) -> ResultOutput:
    """Per backbone and impostor state level: games, kills, games without a kill and the
    impostor win rate (the paper's preliminary finding: ego state collapsed play).

    It also runs for studies of no other design, so the ego-collapse study
    (`configs/experiments/ego_collapse.yaml`: state fixed at ego, only the backbone
    varies) gets it; a study without ARIA impostors gets nothing from it.
    """
    frame = rq1_frame(data)
    title = "RQ1: state representation (ego collapse)"
    if frame.games.empty:
        return ResultOutput()
    g = frame.games
    col = "impostor.state"
    rows = []
    levels = sorted(g[col].dropna().astype(str).unique(), key=stats.level_key) if col in g else []
    for b in frame.backbones:
        for level in levels:
            sub = g[(g["backbone"] == b) & (g[col].astype(str) == level)]
            if sub.empty:
                continue
            kills = sub["kills"].to_numpy(dtype=float) if "kills" in sub else np.zeros(len(sub))
            meetings = (
                sub["meetings"].to_numpy(dtype=float) if "meetings" in sub else np.zeros(len(sub))
            )
            rows.append(
                {
                    "backbone": b,
                    "state": level,
                    **_rate(sub),
                    "kills": int(kills.sum()),
                    "kills_per_game": float(kills.mean()),
                    "zero_kill_games": int((kills == 0).sum()),
                    "meetings_per_game": float(meetings.mean()),
                }
            )
    cols = [
        "backbone",
        "state",
        "n_games",
        "wins",
        "win_rate",
        "ci_low",
        "ci_high",
        "interval",
        "small_sample",
        "kills",
        "kills_per_game",
        "zero_kill_games",
        "meetings_per_game",
    ]
    table = pd.DataFrame(rows, columns=cols)
    sec = Sec(title, [*frame.notes_blocks(), Text(f"The paper: {PAPER_EGO}.")])
    if len(levels) < 2:
        fixed = levels[0] if levels else "unknown"
        sec.blocks.append(
            Text(
                f"Impostor state is fixed at {fixed} here: the collapse check needs arms with "
                "impostor.state = ego beside privileged (the table shows the fixed level)."
            )
        )
    sec.blocks.append(Table(table, "Kills and impostor win rate per backbone and state level"))
    return ResultOutput(tables={"rq1_state": table}, sections=[sec])
