"""`mineamongus analyze`: games + annotations -> tidy tables, figures and the report.

Per-game facts come from a tournament's `results/games.parquet` when one is found
beside the runs, else from each game's `summary.json` and `game_start`
(`annotation.gamelog.game_facts`); where both exist they are compared and every
disagreement is reported. Findings come from each run's `annotations.jsonl`; a run
without one is annotated by the detectors on the fly (the report says how many).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from annotation import stats
from annotation.deception import agreement
from annotation.deception import human as human_labels
from annotation.deception.codebook import codebook
from annotation.deception.detectors import DETECTED_ATOMS, run_detectors
from annotation.deception.findings import judge_statuses, read_annotation_rows, validate_finding
from annotation.deception.human import read_labels
from annotation.gamelog import FACT_KINDS, find_runs, game_facts, load_game
from annotation.report.document import (
    Figure,
    ReportContext,
    Section,
    Table,
    Text,
    Warning_,
    extra_sections,
    write_report,
)

logger = logging.getLogger(__name__)

FACT_COLUMNS = ("arm", "seed", "status", "winner", "ending", "steps", "kills", "meetings")
"""Columns compared between `games.parquet` and the facts derived from the logs."""


@dataclass
class Dataset:
    """Everything `analyze` reads."""

    folders: list[Path]
    games: pd.DataFrame
    findings: pd.DataFrame
    """Every checked finding: game_id, atom, step, actor, source, kind, accepted, reason, phase."""
    judged: dict[str, list[str]] = field(default_factory=dict)
    """Judge source -> games it annotated successfully."""
    detected: list[str] = field(default_factory=list)
    """Games with detector findings (all analysed games)."""
    on_the_fly: int = 0
    """Games with no annotations.jsonl (detectors were run for them now)."""
    judge_failed: int = 0
    mismatches: pd.DataFrame = field(default_factory=pd.DataFrame)


def _tournament_table(folders: list[Path], name: str) -> pd.DataFrame | None:
    """`results/<name>` in the nearest ancestor of the runs that has one."""
    seen: set[Path] = set()
    for f in folders:
        for parent in [f, *f.parents]:
            if parent in seen:
                break
            seen.add(parent)
            path = parent / "results" / name
            if path.is_file():
                return pd.read_parquet(path)
    return None


def load_dataset(paths: list[Path], *, progress: bool = True) -> Dataset:
    """Read every run's facts and annotations."""
    from rich.console import Console
    from rich.progress import track

    folders = find_runs(paths)
    facts = []
    rows: list[dict[str, object]] = []
    judged: dict[str, list[str]] = {}
    detected: list[str] = []
    on_the_fly = judge_failed = 0
    for folder in track(
        folders,
        description="reading games",
        console=Console(stderr=True),
        disable=not progress,
    ):
        got = read_annotation_rows(folder)
        if got is None:
            game = load_game(folder)
            gid = game.game_id
            found = [
                {**c.finding.model_dump(by_alias=True), "accepted": c.accepted}
                | {"reason": c.reason, "phase": c.phase}
                for c in (validate_finding(f, game) for f in run_detectors(game))
            ]
            on_the_fly += 1
            statuses: dict[str, str] = {}
        else:
            header, found = got
            game = load_game(folder, only=FACT_KINDS)
            gid = game.game_id
            statuses = judge_statuses(header)  # each judge's own status: kept side by side
        f = game_facts(game)
        row = asdict(f)
        row.update({k: v for k, v in row.pop("axes").items()})
        facts.append(row)
        detected.append(gid)
        for s, st in statuses.items():
            if st == "ok":
                judged.setdefault(s, []).append(gid)
        judge_failed += int(any(st != "ok" for st in statuses.values()))
        for fi in found:
            source = str(fi.get("source", ""))
            step = fi.get("step")
            rows.append(
                {
                    "game_id": gid,
                    "atom": fi.get("atom", ""),
                    "step": step if step is not None else -1,
                    "actor": fi.get("actor", ""),
                    "target": fi.get("target") or "",
                    "source": source,
                    "kind": source.split(":", 1)[0],
                    "accepted": bool(fi.get("accepted")),
                    "reason": fi.get("reason", ""),
                    "phase": fi.get("phase", ""),
                    "evidence": fi.get("evidence", ""),
                }
            )
    games = pd.DataFrame(facts)
    mismatches = pd.DataFrame()
    table = _tournament_table(folders, "games.parquet")
    if table is not None and not games.empty:
        games, mismatches = _merge_tournament(games, table)
    findings = pd.DataFrame(
        rows,
        columns=[
            "game_id",
            "atom",
            "step",
            "actor",
            "target",
            "source",
            "kind",
            "accepted",
            "reason",
            "phase",
            "evidence",
        ],
    )
    return Dataset(
        folders=folders,
        games=games,
        findings=findings,
        judged=judged,
        detected=detected,
        on_the_fly=on_the_fly,
        judge_failed=judge_failed,
        mismatches=mismatches,
    )


def _merge_tournament(games: pd.DataFrame, table: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    """Take the tournament's columns where it has them; list every disagreement."""
    key = "game_id" if "game_id" in table.columns else "game" if "game" in table.columns else None
    if key is None:
        return games, pd.DataFrame(
            [{"game_id": "", "column": "", "log": "", "table": "games.parquet has no game id"}]
        )
    t = table.rename(columns={key: "game_id"}).set_index("game_id")
    rows = []
    g = games.set_index("game_id")
    for gid in g.index:
        if gid not in t.index:
            continue
        for col in FACT_COLUMNS:
            if col in t.columns and col in g.columns:
                a, b = g.at[gid, col], t.at[gid, col]
                if str(a) != str(b):
                    rows.append({"game_id": gid, "column": col, "log": str(a), "table": str(b)})
                    if col == "arm":
                        g.at[gid, col] = b  # the tournament names its arms
    return g.reset_index(), pd.DataFrame(rows)


def _source_counts(ds: Dataset) -> dict[str, tuple[pd.DataFrame, list[str]]]:
    """Per source family: per-game counts over the games it annotated, and its atoms."""
    acc = ds.findings[ds.findings["accepted"]]
    out: dict[str, tuple[pd.DataFrame, list[str]]] = {}
    det = acc[acc["kind"] == "detector"]
    out["detector"] = (
        stats.counts_table(det, ds.detected)[list(DETECTED_ATOMS)],
        list(DETECTED_ATOMS),
    )
    for src, ids in sorted(ds.judged.items()):
        j = acc[acc["source"] == src]
        out[src] = (stats.counts_table(j, ids), codebook().letters)
    return out


def _figure_rpb(table: pd.DataFrame, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.2))
    t = table.dropna(subset=["r"])
    x = np.arange(len(t))
    err = np.vstack([t["r"] - t["ci_low"], t["ci_high"] - t["r"]]).clip(min=0)
    ax.errorbar(x, t["r"], yerr=err, fmt="o", capsize=3)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(x, list(t["atom"]))
    ax.set_ylabel("r_pb with impostor win")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _figure_axes(table: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.2))
    labels = [
        f"{a.split('.', 1)[1]}={lv}" for a, lv in zip(table["axis"], table["level"], strict=True)
    ]
    x = np.arange(len(table))
    err = np.vstack(
        [table["win_rate"] - table["ci_low"], table["ci_high"] - table["win_rate"]]
    ).clip(min=0)
    colors = ["C0" if a.startswith("impostor.") else "C1" for a in table["axis"]]
    ax.bar(x, table["win_rate"], yerr=err, capsize=3, color=colors)
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("impostor win rate")
    ax.set_title("Marginal impostor win rate per axis level (blue: impostor side, orange: crew)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _figure_models(models: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.scatter(models["crew_win_rate"], models["impostor_win_rate"])
    for _, r in models.iterrows():
        ax.annotate(str(r["model"]), (r["crew_win_rate"], r["impostor_win_rate"]), fontsize=7)
    ax.set_xlabel("crew win rate (as crew)")
    ax.set_ylabel("impostor win rate (as impostor)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title("Per-model win rates")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _figure_freq(counts: pd.DataFrame, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    book = codebook()
    clusters = list(book.clusters)
    fig, ax = plt.subplots(figsize=(8, 3.2))
    per_game = counts.mean(axis=0)
    colors = [f"C{clusters.index(book.atom(a).cluster)}" for a in counts.columns]
    ax.bar(np.arange(len(per_game)), per_game.to_numpy(), color=colors)
    ax.set_xticks(np.arange(len(per_game)), list(counts.columns))
    ax.set_ylabel("mean per game")
    from matplotlib.patches import Patch

    handles = [Patch(color=f"C{i}") for i in range(len(clusters))]
    ax.legend(handles, clusters, fontsize=7, ncol=3)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _per_game_freq(counts: pd.DataFrame, games: pd.DataFrame) -> pd.DataFrame:
    """Atom frequency normalised by game length: per game, per 100 steps, per kill."""
    t = stats.atoms_vs_kills(counts, games)
    return pd.DataFrame(
        {
            "atom": t["atom"],
            "occurrences": t["occurrences"],
            "games_with": [int((counts[a] > 0).sum()) for a in t["atom"]],
            "per_game": t["per_game"],
            "per_100_steps": 100 * t["per_step"],
            "per_kill": t["per_kill"],
        }
    )


def _warnings_of(table: pd.DataFrame, key: str, limit: int = 6) -> list[Warning_]:
    """One warning listing the rows of `table` whose `warning` column is not empty."""
    if "warning" not in table.columns:
        return []
    flagged = table[table["warning"].astype(str) != ""]
    if flagged.empty:
        return []
    shown = [f"{row[key]}: {row['warning']}" for _, row in flagged.head(limit).iterrows()]
    more = f" (and {len(flagged) - limit} more; see the table)" if len(flagged) > limit else ""
    return [Warning_(f"{len(flagged)} row(s) flagged. " + " | ".join(shown) + more)]


def _paper_rows(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The paper's figures beside ours: r_pb, z-tests, cross-model r, agreement."""
    rows: list[dict[str, object]] = []
    rpb = tables.get("rpb")
    if rpb is not None:
        for _, r in rpb[rpb["paper_r"].notna()].iterrows():
            rows.append(
                {
                    "figure": f"r_pb atom {r['atom']} with impostor win",
                    "source": r["source"],
                    "paper": r["paper_r"],
                    "ours": r["r"],
                    "ours_low": r["ci_low"],
                    "ours_high": r["ci_high"],
                    "ours_p": r["p_perm"],
                    "n": r["n_games"],
                    "note": f"paper {int(r['paper_occurrences'])} occurrences / 192 games; "
                    f"ours {int(r['occurrences'])}",
                }
            )
    marg = tables.get("axis_marginals")
    if marg is not None and len(marg):
        for _, r in marg[marg["paper_delta"].notna()].iterrows():
            rows.append(
                {
                    "figure": f"delta win rate {r['axis']}={r['level']} vs {r['vs']}",
                    "source": "games",
                    "paper": r["paper_delta"],
                    "ours": r["delta"],
                    "ours_low": np.nan,
                    "ours_high": np.nan,
                    "ours_p": r["p_one_sided"],
                    "n": r["n_games"],
                    "note": f"one-sided z-test ({r['alternative']}); paper p "
                    f"{r['paper_p_one_sided']:.3f}; ours two-sided p {r['p_two_sided']:.3g}",
                }
            )
    cross = tables.get("cross_model")
    if cross is not None and len(cross):
        for _, r in cross[cross["paper_r"].notna()].iterrows():
            rows.append(
                {
                    "figure": f"cross-model r: {r['measure']}",
                    "source": r["source"],
                    "paper": r["paper_r"],
                    "ours": r["r"],
                    "ours_low": r["ci_low"],
                    "ours_high": r["ci_high"],
                    "ours_p": r["p"],
                    "n": r["n_models"],
                    "note": "Fisher-z interval; paper over 6 (atoms) or 12 models",
                }
            )
    agree = tables.get("agreement")
    if agree is not None and len(agree):
        for _, r in agree[agree["reference"] != ""].iterrows():
            for m, label in (
                ("kappa", "kappa"),
                ("f1_weighted", "weighted F1"),
                ("spearman", "Spearman rho"),
            ):
                paper = r[f"paper_{m}"]
                if pd.isna(paper):
                    continue
                rows.append(
                    {
                        "figure": f"{r['kind']} {label}",
                        "source": r["pair"],
                        "paper": paper,
                        "ours": r[m],
                        "ours_low": r[f"{m}_low"],
                        "ours_high": r[f"{m}_high"],
                        "ours_p": np.nan,
                        "n": r["n_games"],
                        "note": f"reference: {r['reference']}",
                    }
                )
    cols = ["figure", "source", "paper", "ours", "ours_low", "ours_high", "ours_p", "n", "note"]
    return pd.DataFrame(rows, columns=cols)


def analyze(
    paths: list[Path],
    out: Path,
    *,
    human: list[Path] | None = None,
    n_boot: int = stats.DEFAULT_BOOT,
    n_perm: int = stats.DEFAULT_PERM,
    seed: int = 0,
    progress: bool = True,
    sections: list[Section] | None = None,
) -> dict[str, pd.DataFrame]:
    """Compute every table, write them (Parquet + CSV), the figures and the report.

    Args:
        paths: Run or tournament folders.
        out: Output folder (created).
        human: Human label files (CSV/JSONL).
        n_boot: Bootstrap resamples per interval.
        n_perm: Random permutations per permutation p (exact nulls are enumerated).
        seed: Seed of the bootstrap and permutation RNGs.
        progress: Progress bars on stderr.
        sections: Extra report sections (besides the discovered providers').

    Returns:
        The tables by name.

    Raises:
        ValueError: No games, or human labels that cannot be matched to one game each.
    """
    out.mkdir(parents=True, exist_ok=True)
    figdir = out / "figures"
    figdir.mkdir(exist_ok=True)
    ds = load_dataset(paths, progress=progress)
    games = ds.games
    if games.empty:
        raise ValueError("no games to analyse")
    dup = games[games["game_id"].duplicated(keep=False)]
    if len(dup):
        listed = "; ".join(f"{g} ({f})" for g, f in zip(dup["game_id"], dup["folder"], strict=True))
        raise ValueError(
            f"{len(dup)} run folders share a game id (a copied run?): {listed}. Every "
            "table is keyed by game id; analyse one copy of each game"
        )
    labels = [lab for p in human or [] for lab in read_labels(p)]
    # Matched before any work, so a label that names several games stops the run at once.
    label_set = human_labels.label_counts(labels, games) if labels else None
    tables: dict[str, pd.DataFrame] = {"games": games, "findings": ds.findings}
    tables["rejected"] = ds.findings[~ds.findings["accepted"]].reset_index(drop=True)
    tables["arm_sizes"] = stats.arm_sizes(games)
    tables["facts_mismatch"] = ds.mismatches
    report: list[Section] = []
    small_arms = tables["arm_sizes"][tables["arm_sizes"]["small_sample"]]
    overview = Section(
        "Overview",
        [
            Text(
                f"{len(games)} games in {games['arm'].nunique()} arm(s); "
                f"{int(games['impostor_win'].sum())} impostor wins; "
                f"{int(ds.findings['accepted'].sum())} accepted and "
                f"{int((~ds.findings['accepted']).sum())} rejected findings."
            ),
            Table(tables["arm_sizes"], "Games per arm (impostor win rate, 95 % Wilson interval)"),
        ],
    )
    if len(small_arms):
        overview.blocks.append(
            Warning_(
                f"{len(small_arms)} of {len(tables['arm_sizes'])} arm(s) have fewer than "
                f"{stats.SMALL_SAMPLE} games or fewer than {stats.MIN_CELL} wins or losses: "
                "per-arm rates and the figures below are too small a sample to read."
            )
        )
    if ds.on_the_fly:
        overview.blocks.append(
            Warning_(
                f"{ds.on_the_fly} game(s) had no annotations.jsonl; detectors were run for "
                "them now and no judge annotated them (run `mineamongus annotate`)."
            )
        )
    if ds.judge_failed:
        overview.blocks.append(
            Warning_(
                f"The judge failed on {ds.judge_failed} game(s); they are left out of the "
                "judge's statistics (their atoms are unknown, not zero)."
            )
        )
    if not ds.mismatches.empty:
        overview.blocks.append(
            Warning_(
                f"{len(ds.mismatches)} disagreement(s) between games.parquet and the logs "
                "(table facts_mismatch): the numbers below may not mean what they say."
            )
        )
        overview.blocks.append(Table(ds.mismatches, "games.parquet vs logs"))
    bad = games[games["status"] != "ok"]
    if len(bad):
        overview.blocks.append(
            Warning_(f"{len(bad)} game(s) are not `ok` (invalid); they are excluded from tests.")
        )
    report.append(overview)
    valid = games[games["status"] == "ok"].reset_index(drop=True)
    valid_ids = set(valid["game_id"])
    design = stats.design_clusters(valid)
    overview.blocks.append(
        Text(
            f"Resampling units (bootstrap, logit clusters): {design.n} {design.by} "
            f"cluster(s) over {len(valid)} valid games."
        )
    )
    if design.n < stats.FEW_CLUSTERS:
        overview.blocks.append(
            Warning_(
                f"Only {design.n} clusters ({design.by}): cluster-bootstrap intervals and "
                "cluster-robust SEs are unreliable below "
                f"{stats.FEW_CLUSTERS}; read the permutation p-values and naive SEs."
            )
        )

    per_source = _source_counts(ds)
    rpb_all, partial_all, kills_all, clusters_all, freq_all = [], [], [], [], []
    for name, (all_counts, _atoms) in per_source.items():
        counts = all_counts[all_counts.index.isin(valid_ids)]
        if counts.empty:
            continue
        sec = Section(f"Atoms and impostor win ({name})")
        tag = name.replace(":", "_").replace("/", "_")
        tables[f"counts_{tag}"] = counts.reset_index()
        cl = stats.cluster_counts(counts.reindex(columns=codebook().letters, fill_value=0))
        clusters_all.append(cl.assign(source=name).reset_index())
        rpb = stats.point_biserial(counts, valid, n_boot=n_boot, n_perm=n_perm, seed=seed)
        rpb = rpb.assign(source=name)
        part = stats.partial_point_biserial(counts, valid).assign(source=name)
        kills = stats.atoms_vs_kills(counts, valid).assign(source=name)
        freq = _per_game_freq(counts, valid).assign(source=name)
        rpb_all.append(rpb)
        partial_all.append(part)
        kills_all.append(kills)
        freq_all.append(freq)
        if len(counts) < stats.SMALL_SAMPLE:
            sec.blocks.append(
                Warning_(
                    f"Only {len(counts)} games: correlations over fewer than "
                    f"{stats.SMALL_SAMPLE} games are too small a sample to read."
                )
            )
        wins = int(rpb["wins"].iloc[0]) if len(rpb) else 0
        losses = int(rpb["losses"].iloc[0]) if len(rpb) else 0
        if min(wins, losses) < stats.MIN_CLASS:
            sec.blocks.append(
                Warning_(
                    f"{wins} impostor win(s) and {losses} loss(es): with fewer than "
                    f"{stats.MIN_CLASS} in a class the t-test p is anti-conservative; "
                    "read p_perm (permutation) instead."
                )
            )
        sec.blocks.append(
            Figure(
                _figure_rpb(rpb, figdir / f"rpb_{tag}.png", f"Atom-win r_pb ({name})"),
                "Point-biserial r of each atom's per-game count with impostor win, "
                f"95 % cluster-bootstrap intervals ({rpb['n_clusters'].iloc[0]} "
                f"{rpb['cluster_by'].iloc[0]} clusters)",
            )
        )
        sec.blocks.append(
            Table(
                rpb,
                "r_pb (scipy): t-test p, permutation p_perm with Holm and BH corrections "
                "across these atoms, 95 % cluster-bootstrap CI (degenerate resamples "
                "counted), the paper's r beside",
            )
        )
        sec.blocks.extend(_warnings_of(rpb, "atom"))
        sec.blocks.append(
            Table(
                kills,
                "Atoms against kills: per kill and per step, r with the kill count, raw "
                "r_pb beside r_pb partialled on kills and tasks done",
            )
        )
        sec.blocks.append(
            Table(freq, "Atom frequency normalised by game length (per 100 steps) and kills")
        )
        sec.blocks.append(
            Figure(
                _figure_freq(counts, figdir / f"freq_{tag}.png", f"Atom frequency ({name})"),
                "Mean per-game count of each atom, coloured by cluster",
            )
        )
        report.append(sec)
    if rpb_all:
        tables["rpb"] = pd.concat(rpb_all, ignore_index=True)
        tables["partial_rpb"] = pd.concat(partial_all, ignore_index=True)
        tables["atoms_vs_kills"] = pd.concat(kills_all, ignore_index=True)
        tables["atom_frequency"] = pd.concat(freq_all, ignore_index=True)
        tables["clusters"] = pd.concat(clusters_all, ignore_index=True)
    acc = ds.findings[ds.findings["accepted"] & ds.findings["game_id"].isin(valid_ids)]
    tables["arcs_phase"] = stats.arcs_by_phase(acc[acc["kind"] == "judge"])
    tables["arcs_realised"] = stats.arcs_realised(acc[acc["kind"] == "judge"])
    tables["arcs_phase_detector"] = stats.arcs_by_phase(acc[acc["kind"] == "detector"])
    arcs = Section("Arcs over the five phases")
    if not tables["arcs_phase"].empty:
        pivot = tables["arcs_phase"].pivot_table(
            index="phase", columns="atom", values="count", aggfunc="sum", fill_value=0
        )
        order = [p.name for p in codebook().phases if p.name in pivot.index]
        arcs.blocks.append(Table(pivot.loc[order].reset_index(), "Judge atoms per phase"))
        real = tables["arcs_realised"]
        arcs.blocks.append(
            Text(f"Kill-cycle arcs realised in {int(real['realised'].sum())} of {len(real)} games.")
        )
    else:
        arcs.blocks.append(Text("No judge annotations: arcs need the verbal atoms."))
    report.append(arcs)

    # Axes (RQ1) and models (RQ2)
    axes = Section("Ablation axes (impostor win)")
    marg = stats.axis_marginals(valid)
    tables["axis_marginals"] = marg
    tables["logit"] = stats.logistic_all_axes(valid)
    if marg.empty:
        axes.blocks.append(Text("No ablation axis varies across these games."))
    else:
        if bool(marg["small_sample"].any()):
            axes.blocks.append(
                Warning_(
                    f"Some levels have fewer than {stats.SMALL_SAMPLE} games or fewer than "
                    f"{stats.MIN_CELL} wins or losses: too small a sample to read."
                )
            )
        axes.blocks.append(
            Figure(
                _figure_axes(marg, figdir / "axes.png"),
                "Marginal impostor win rate per axis level with 95 % Wilson intervals",
            )
        )
        axes.blocks.append(
            Table(
                marg,
                "Two-proportion z-tests against the baseline level: p one-sided in the "
                "paper's pre-set direction (`alternative`: the richer setting helps its "
                "side) and two-sided; paired seeds: McNemar (two-sided); the paper beside",
            )
        )
    logit_warn = tables["logit"]["warning"].astype(str)
    if (logit_warn != "").any():
        axes.blocks.append(Warning_("Logistic regression: " + logit_warn.iloc[0]))
    axes.blocks.append(
        Table(
            tables["logit"],
            "Logistic regression of impostor win on all axes (se: cluster-robust with at "
            f"least {stats.FEW_CLUSTERS} clusters, else naive; both beside)",
        )
    )
    report.append(axes)
    models_sec = Section("Models")
    models_all, cross_all = [], []
    for name, (all_counts, atoms) in per_source.items():
        counts = all_counts[all_counts.index.isin(valid_ids)]
        ids = set(counts.index)
        models = stats.per_model(counts, valid[valid["game_id"].isin(ids)])
        models_all.append(models.assign(source=name))
        cross_all.append(stats.cross_model(models, list(atoms)).assign(source=name))
    tables["per_model"] = pd.concat(models_all, ignore_index=True)
    tables["cross_model"] = pd.concat(cross_all, ignore_index=True)
    n_models = valid["impostor_model"].nunique()
    if n_models < 3:
        models_sec.blocks.append(
            Warning_(f"{n_models} impostor model(s): cross-model correlations need at least 3.")
        )
    first = models_all[0]
    small_models = first[first["n_games"] < stats.SMALL_SAMPLE]
    if len(small_models):
        models_sec.blocks.append(
            Warning_(
                f"{len(small_models)} model(s) have fewer than {stats.SMALL_SAMPLE} games as "
                "impostor: their rates are too small a sample to read."
            )
        )
    models_sec.blocks.append(
        Figure(_figure_models(first, figdir / "models.png"), "Per-model impostor vs crew win rate")
    )
    for cross in cross_all:
        src = cross["source"].iloc[0]
        what = "detector atoms" if src == "detector" else "judge atoms, verbal included"
        models_sec.blocks.append(
            Table(
                cross,
                f"Cross-model Pearson r over {what} ({src}): Fisher-z CI, Holm and BH "
                "across atoms, the paper's r beside (its figures are from its judge)",
            )
        )
    report.append(models_sec)

    # Agreement
    agree = Section("Agreement")
    det_counts = per_source["detector"][0]
    jd_rows = []
    for name, (counts, _) in per_source.items():
        if name == "detector":
            continue
        t = agreement.per_atom(
            det_counts, counts, list(DETECTED_ATOMS), n_boot=n_boot, seed=seed
        ).assign(judge=name)
        jd_rows.append(t)
    if jd_rows:
        tables["judge_detector_agreement"] = pd.concat(jd_rows, ignore_index=True)
        agree.blocks.append(
            Text(
                "Per-atom agreement of the judge with the engine detectors on what the engine "
                "can prove (κ over per-game presence, F1 of the judge against the detectors, "
                "ρ over per-game counts, 95 % bootstrap intervals over games). A judge that "
                "disagrees with the engine here is a judge to distrust."
            )
        )
        agree.blocks.append(Table(tables["judge_detector_agreement"], "Judge vs detectors"))
    raters: dict[str, pd.DataFrame] = {}
    kinds: dict[str, str] = {}
    if label_set is not None:
        for who, counts in label_set.counts.items():
            raters[f"human:{who}"] = counts
            kinds[f"human:{who}"] = "human"
        for name, (counts, _) in per_source.items():
            if name != "detector":
                raters[name] = counts
                kinds[name] = "judge"
        letters = codebook().letters
        tables["agreement"] = agreement.agreement_table(
            raters, kinds, letters, n_boot=n_boot, seed=seed
        )
        tables["agreement_per_atom"] = agreement.agreement_per_atom(
            raters, kinds, letters, n_boot=n_boot, seed=seed
        )
        read = ", ".join(
            f"{who}: {len(c)} read ({len(label_set.nothing_found[who])} with nothing found)"
            for who, c in label_set.counts.items()
        )
        agree.blocks.append(
            Text(
                f"Games per annotator: {read}. A game read with nothing found counts with "
                "every atom absent. F1 scores `other` against `reference` (a human against "
                "a judge); f1_weighted_reversed swaps them. Intervals: 95 % bootstrap over "
                "games."
            )
        )
        agree.blocks.append(
            Table(tables["agreement"], "Judge-human and human-human agreement (paper beside)")
        )
        agree.blocks.append(
            Table(
                tables["agreement_per_atom"],
                "Per-atom agreement of every pair (κ and ρ with 95 % bootstrap intervals)",
                max_rows=120,
            )
        )
        if label_set.unmatched:
            shown = ", ".join(label_set.unmatched[:8])
            agree.blocks.append(
                Warning_(
                    f"{len(label_set.unmatched)} labelled game key(s) name no analysed game "
                    f"and were not used: {shown}"
                )
            )
        n_h = min((len(raters[r]) for r in raters if kinds[r] == "human"), default=0)
        if n_h < stats.SMALL_SAMPLE:
            agree.blocks.append(
                Warning_(f"Human labels cover {n_h} game(s): too few to read agreement closely.")
            )
    if not agree.blocks:
        agree.blocks.append(Text("No judge or human annotations to compare."))
    report.append(agree)
    tables["paper_vs_ours"] = _paper_rows(tables)
    report.insert(
        1,
        Section(
            "The paper's figures beside ours",
            [
                Text(
                    "Each figure the paper reports, beside ours on these games (r_pb: RQ1, "
                    "192 games; z-tests: one-sided, as the paper pre-set them; cross-model r: "
                    "RQ2; agreement: 48 games, two annotators). The detailed tables follow."
                ),
                Table(tables["paper_vs_ours"], "Paper vs ours"),
            ],
        ),
    )
    report.append(
        Section(
            "Rejected findings",
            [
                Text(
                    "Every finding that failed validation, with its reason (counts by "
                    "reason; all rows are in rejected.csv)."
                ),
                Table(
                    tables["rejected"]
                    .groupby(["source", "reason"])
                    .size()
                    .rename("n")
                    .reset_index()
                    if len(tables["rejected"])
                    else pd.DataFrame({"source": [], "reason": [], "n": []}),
                ),
            ],
        )
    )
    context = ReportContext(folders=ds.folders, games=games, out=out)
    report.extend(sections or [])
    report.extend(extra_sections(context))
    write_tables(tables, out)
    write_report(out, "MineAmongUs deception analysis", report)
    return tables


def write_tables(tables: dict[str, pd.DataFrame], out: Path) -> None:
    """Each table as `out/tables/NAME.parquet` and `NAME.csv`."""
    folder = out / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        clean = df.copy()
        for col in clean.columns:
            if clean[col].dtype == object:
                clean[col] = clean[col].map(
                    lambda v: v if v is None or isinstance(v, str) else str(v)
                )
        clean.to_parquet(folder / f"{name}.parquet", index=False)
        clean.to_csv(folder / f"{name}.csv", index=False)
