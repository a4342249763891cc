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

from annotation import agreement, stats
from annotation.codebook import codebook
from annotation.detectors import DETECTED_ATOMS, run_detectors
from annotation.findings import read_annotation_rows, validate_finding
from annotation.gamelog import FACT_KINDS, find_runs, game_facts, load_game
from annotation.human import HumanLabel, read_labels
from annotation.report import (
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
            judge_status = "none"
            sources: list[str] = []
        else:
            header, found = got
            game = load_game(folder, only=FACT_KINDS)
            gid = game.game_id
            judge_status = str(header.get("judge_status", "none"))
            sources = list(header.get("sources", []))
        f = game_facts(game)
        row = asdict(f)
        row.update({k: v for k, v in row.pop("axes").items()})
        facts.append(row)
        detected.append(gid)
        if judge_status == "ok":
            for s in sources:
                if s.startswith("judge:"):
                    judged.setdefault(s, []).append(gid)
        elif judge_status == "failed":
            judge_failed += 1
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


def _labels_counts(labels: list[HumanLabel], ds: Dataset) -> dict[str, pd.DataFrame]:
    """Per annotator: per-game counts (games matched by id or run folder name)."""
    by_name = {
        Path(f).name: gid for f, gid in zip(ds.games["folder"], ds.games["game_id"], strict=True)
    }
    out: dict[str, pd.DataFrame] = {}
    annotators = sorted({lab.annotator for lab in labels})
    for who in annotators:
        mine = [lab for lab in labels if lab.annotator == who]
        rows = [{"game_id": by_name.get(lab.game, lab.game), "atom": lab.atom} for lab in mine]
        games = sorted({r["game_id"] for r in rows} & set(ds.games["game_id"]))
        df = pd.DataFrame(rows)
        out[who] = stats.counts_table(df[df["game_id"].isin(games)], games)
    return out


def analyze(
    paths: list[Path],
    out: Path,
    *,
    human: list[Path] | None = None,
    n_boot: int = stats.DEFAULT_BOOT,
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
        seed: Seed of the bootstrap RNG.
        progress: Progress bars on stderr.
        sections: Extra report sections (besides the discovered providers').

    Returns:
        The tables by name.
    """
    out.mkdir(parents=True, exist_ok=True)
    figdir = out / "figures"
    figdir.mkdir(exist_ok=True)
    ds = load_dataset(paths, progress=progress)
    games = ds.games
    if games.empty:
        raise ValueError("no games to analyse")
    tables: dict[str, pd.DataFrame] = {"games": games, "findings": ds.findings}
    tables["rejected"] = ds.findings[~ds.findings["accepted"]].reset_index(drop=True)
    tables["arm_sizes"] = stats.arm_sizes(games, n_boot=n_boot, seed=seed)
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
            Table(tables["arm_sizes"], "Games per arm"),
        ],
    )
    if len(small_arms):
        overview.blocks.append(
            Warning_(
                f"{len(small_arms)} of {len(tables['arm_sizes'])} arm(s) have fewer than "
                f"{stats.SMALL_SAMPLE} games: per-arm rates and the figures below are too "
                "small a sample to read."
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

    per_source = _source_counts(ds)
    rpb_all, partial_all, clusters_all = [], [], []
    for name, (all_counts, _atoms) in per_source.items():
        counts = all_counts[all_counts.index.isin(valid_ids)]
        if counts.empty:
            continue
        sec = Section(f"Atoms and impostor win ({name})")
        tag = name.replace(":", "_").replace("/", "_")
        tables[f"counts_{tag}"] = counts.reset_index()
        cl = stats.cluster_counts(counts.reindex(columns=codebook().letters, fill_value=0))
        clusters_all.append(cl.assign(source=name).reset_index())
        rpb = stats.point_biserial(counts, valid, n_boot=n_boot, seed=seed).assign(source=name)
        part = stats.partial_point_biserial(counts, valid).assign(source=name)
        rpb_all.append(rpb)
        partial_all.append(part)
        if len(counts) < stats.SMALL_SAMPLE:
            sec.blocks.append(
                Warning_(
                    f"Only {len(counts)} games: correlations over fewer than "
                    f"{stats.SMALL_SAMPLE} games are too small a sample to read."
                )
            )
        sec.blocks.append(
            Figure(
                _figure_rpb(rpb, figdir / f"rpb_{tag}.png", f"Atom-win r_pb ({name})"),
                "Point-biserial r of each atom's per-game count with impostor win, "
                "95 % cluster-bootstrap intervals",
            )
        )
        sec.blocks.append(Table(rpb, "r_pb (scipy) with 95 % cluster-bootstrap CI"))
        sec.blocks.append(Table(part, "Partial r_pb controlling for kills and tasks done"))
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
    marg = stats.axis_marginals(valid, n_boot=n_boot, seed=seed)
    tables["axis_marginals"] = marg
    tables["logit"] = stats.logistic_all_axes(valid)
    if marg.empty:
        axes.blocks.append(Text("No ablation axis varies across these games."))
    else:
        if bool(marg["small_sample"].any()):
            axes.blocks.append(
                Warning_(
                    f"Some levels have fewer than {stats.SMALL_SAMPLE} games: too small a "
                    "sample to read."
                )
            )
        axes.blocks.append(
            Figure(
                _figure_axes(marg, figdir / "axes.png"),
                "Marginal impostor win rate per axis level with 95 % cluster-bootstrap CIs",
            )
        )
        axes.blocks.append(Table(marg, "Two-proportion z-tests; paired seeds: McNemar"))
    axes.blocks.append(
        Table(tables["logit"], "Logistic regression of impostor win on all axes (cluster-robust)")
    )
    report.append(axes)
    models_sec = Section("Models")
    main_counts = next(iter(per_source.values()))[0]
    models = stats.per_model(
        main_counts[main_counts.index.isin(valid_ids)], valid, n_boot=n_boot, seed=seed
    )
    tables["per_model"] = models
    tables["cross_model"] = stats.cross_model(models, list(main_counts.columns))
    if len(models) < 3:
        models_sec.blocks.append(
            Warning_(f"{len(models)} impostor model(s): cross-model correlations need at least 3.")
        )
    small_models = models[models["n_games"] < stats.SMALL_SAMPLE]
    if len(small_models):
        models_sec.blocks.append(
            Warning_(
                f"{len(small_models)} model(s) have fewer than {stats.SMALL_SAMPLE} games as "
                "impostor: their rates are too small a sample to read."
            )
        )
    models_sec.blocks.append(
        Figure(_figure_models(models, figdir / "models.png"), "Per-model impostor vs crew win rate")
    )
    models_sec.blocks.append(Table(tables["cross_model"], "Cross-model Pearson r (Fisher-z CI)"))
    report.append(models_sec)

    # Agreement
    agree = Section("Agreement")
    det_counts = per_source["detector"][0]
    jd_rows = []
    for name, (counts, _) in per_source.items():
        if name == "detector":
            continue
        t = agreement.per_atom(det_counts, counts, list(DETECTED_ATOMS)).assign(judge=name)
        jd_rows.append(t)
    if jd_rows:
        tables["judge_detector_agreement"] = pd.concat(jd_rows, ignore_index=True)
        agree.blocks.append(
            Text(
                "Per-atom agreement of the judge with the engine detectors on what the engine "
                "can prove (κ over per-game presence, ρ over per-game counts). A judge that "
                "disagrees with the engine here is a judge to distrust."
            )
        )
        agree.blocks.append(Table(tables["judge_detector_agreement"], "Judge vs detectors"))
    raters: dict[str, pd.DataFrame] = {}
    kinds: dict[str, str] = {}
    if human:
        labels = [lab for p in human for lab in read_labels(p)]
        for who, counts in _labels_counts(labels, ds).items():
            raters[f"human:{who}"] = counts
            kinds[f"human:{who}"] = "human"
        for name, (counts, _) in per_source.items():
            if name != "detector":
                raters[name] = counts
                kinds[name] = "judge"
        tables["agreement"] = agreement.agreement_table(raters, kinds, codebook().letters)
        agree.blocks.append(
            Table(tables["agreement"], "Judge-human and human-human agreement (paper beside)")
        )
        n_h = min((len(raters[r]) for r in raters if kinds[r] == "human"), default=0)
        if n_h < stats.SMALL_SAMPLE:
            agree.blocks.append(
                Warning_(f"Human labels cover {n_h} game(s): too few to read agreement closely.")
            )
    if not agree.blocks:
        agree.blocks.append(Text("No judge or human annotations to compare."))
    report.append(agree)
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
