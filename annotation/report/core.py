"""The results every study gets: facts, atom counts and r_pb, arcs, axes, models,
agreement, the paper's figures beside ours and the rejected findings.

Each is a registered result (`annotation.report.results.result`) over the study's
`StudyData`; `mineamongus analyze` runs them in this order for every design.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from annotation import stats
from annotation.deception import agreement
from annotation.deception.detectors import DETECTED_ATOMS
from annotation.deception.panel import panel_counts, read_panel_defs
from annotation.report.document import Block, Figure, Table, Text, Warning_
from annotation.report.document import Section as Sec
from annotation.report.figures import empty_panel, error_bars, new_figure, save
from annotation.report.results import ResultOutput, SourceCounts, StudyData, result


def source_tag(name: str) -> str:
    """A source's name as a file-name part (`judge:openai:gpt-4.1` -> `judge_openai_gpt-4.1`)."""
    return name.replace(":", "_").replace("/", "_")


def warnings_of(table: pd.DataFrame, key: str, limit: int = 6) -> list[Block]:
    """One warning listing the rows of `table` whose `warning` column is not empty."""
    if "warning" not in table.columns:
        return []
    flagged = table[table["warning"].astype(str).replace("nan", "") != ""]
    if flagged.empty:
        return []
    shown = [f"{row[key]}: {row['warning']}" for _, row in flagged.head(limit).iterrows()]
    more = f" (and {len(flagged) - limit} more; see the table)" if len(flagged) > limit else ""
    return [Warning_(f"{len(flagged)} row(s) flagged. " + " | ".join(shown) + more)]


# ---------------------------------------------------------------------- facts
@result("core.facts", "Games, facts and resampling units")
def facts(data: StudyData) -> ResultOutput:
    """The overview: games per arm, what was read, disagreements with the tournament's
    table, invalid games and the design's resampling units."""
    games = data.all_games if data.all_games is not None else data.games
    ds = data.dataset
    findings = data.findings
    mismatches = ds.mismatches if ds is not None else pd.DataFrame()
    tables = {
        "games": games,
        "findings": findings,
        "rejected": findings[~findings["accepted"].astype(bool)].reset_index(drop=True),
        "arm_sizes": stats.arm_sizes(games),
        "facts_mismatch": mismatches,
    }
    arm_sizes = tables["arm_sizes"]
    accepted = findings["accepted"].astype(bool)
    overview = Sec(
        "Overview",
        [
            Text(
                f"{len(games)} games in {games['arm'].nunique()} arm(s); "
                f"{int(games['impostor_win'].sum())} impostor wins; "
                f"{int(accepted.sum())} accepted and {int((~accepted).sum())} rejected "
                "findings."
            ),
            Table(arm_sizes, "Games per arm (impostor win rate, 95 % Wilson interval)"),
        ],
    )
    small = arm_sizes[arm_sizes["small_sample"]]
    if len(small):
        overview.blocks.append(
            Warning_(
                f"{len(small)} of {len(arm_sizes)} arm(s) have fewer than "
                f"{stats.SMALL_SAMPLE} games or fewer than {stats.MIN_CELL} wins or losses: "
                "per-arm rates and the figures below are too small a sample to read."
            )
        )
    if ds is not None and ds.on_the_fly:
        overview.blocks.append(
            Warning_(
                f"{ds.on_the_fly} game(s) had no annotations.jsonl; detectors were run for "
                "them now and no judge annotated them (run `mineamongus annotate`)."
            )
        )
    if ds is not None and ds.judge_failed:
        overview.blocks.append(
            Warning_(
                f"The judge failed on {ds.judge_failed} game(s); they are left out of the "
                "judge's statistics (their atoms are unknown, not zero)."
            )
        )
    if not mismatches.empty:
        overview.blocks.append(
            Warning_(
                f"{len(mismatches)} disagreement(s) between games.parquet and the logs "
                "(table facts_mismatch): the numbers below may not mean what they say."
            )
        )
        overview.blocks.append(Table(mismatches, "games.parquet vs logs"))
    bad = games[games["status"] != "ok"] if "status" in games.columns else games.iloc[:0]
    if len(bad):
        overview.blocks.append(
            Warning_(f"{len(bad)} game(s) are not `ok` (invalid); they are excluded from tests.")
        )
    design = stats.design_clusters(data.games)
    overview.blocks.append(
        Text(
            f"Resampling units (bootstrap, logit clusters): {design.n} {design.by} "
            f"cluster(s) over {len(data.games)} valid games."
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
    overview.blocks.append(Text(f"Counts of the primary annotation source: {data.counts_source}."))
    return ResultOutput(tables=tables, sections=[overview])


# ---------------------------------------------------------------------- atoms
def per_game_freq(counts: pd.DataFrame, games: pd.DataFrame) -> pd.DataFrame:
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


def atom_counts(src: SourceCounts, letters: list[str]) -> pd.DataFrame:
    """Per atom of one source: occurrences and games with it, as emitted (`accepted`)
    and, when the source's findings are kept as emitted, passing the grounded filters
    (`accepted & filter_ok`). `measured` is False for atoms the source cannot find."""
    counts = src.counts.reindex(columns=letters, fill_value=0)
    rows = []
    for a in letters:
        row: dict[str, object] = {
            "source": src.name,
            "atom": a,
            "measured": a in src.atoms,
            "n_games": len(counts),
            "occurrences": int(counts[a].sum()),
            "games_with": int((counts[a] > 0).sum()),
        }
        if src.filtered is not None:
            f = src.filtered.reindex(columns=letters, fill_value=0)
            row["occurrences_filtered"] = int(f[a].sum())
            row["games_with_filtered"] = int((f[a] > 0).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def _figure_rpb(table: pd.DataFrame, path: Path, title: str) -> Path:
    fig, axes = new_figure()
    ax = axes[0, 0]
    t = table.dropna(subset=["r"])
    if t.empty:
        empty_panel(ax, "no atom varies with a win and a loss among these games")
    else:
        x = np.arange(len(t))
        ax.errorbar(
            x, t["r"], yerr=error_bars(t["r"], t["ci_low"], t["ci_high"]), fmt="o", capsize=3
        )
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(x, list(t["atom"]))
        ax.set_ylabel("r_pb with impostor win")
    ax.set_title(title)
    return save(fig, path)


def _figure_freq(counts: pd.DataFrame, data: StudyData, path: Path, title: str) -> Path:
    from matplotlib.patches import Patch

    book = data.book
    clusters = list(book.clusters)
    fig, axes = new_figure()
    ax = axes[0, 0]
    per_game = counts.mean(axis=0)
    colors = [f"C{clusters.index(book.atom(a).cluster)}" for a in counts.columns]
    ax.bar(np.arange(len(per_game)), per_game.to_numpy(), color=colors)
    ax.set_xticks(np.arange(len(per_game)), list(counts.columns))
    ax.set_ylabel("mean per game")
    handles = [Patch(color=f"C{i}") for i in range(len(clusters))]
    ax.legend(handles, clusters, fontsize=7, ncol=3)
    ax.set_title(title)
    return save(fig, path)


@result("core.atoms", "Atom counts and their correlation with impostor win, per source")
def atoms(data: StudyData) -> ResultOutput:
    """Per annotation source: per-game counts, r_pb with impostor win (bootstrap and
    permutation), r_pb partialled on kills and tasks, atoms against kills, frequency
    normalised by game length, cluster counts; both counts when filters differ."""
    out = ResultOutput()
    valid = data.games
    letters = data.book.letters
    rpb_all, partial_all, kills_all, clusters_all, freq_all, counts_all = [], [], [], [], [], []
    for name, src in data.sources.items():
        counts = src.counts
        counts_all.append(atom_counts(src, letters))
        if counts.empty:
            continue
        sec = Sec(f"Atoms and impostor win ({name})")
        tag = source_tag(name)
        out.tables[f"counts_{tag}"] = counts.reset_index()
        cl = stats.cluster_counts(counts.reindex(columns=letters, fill_value=0), data.book)
        clusters_all.append(cl.assign(source=name).reset_index())
        rpb = stats.point_biserial(
            counts, valid, n_boot=data.n_boot, n_perm=data.n_perm, seed=data.seed
        ).assign(source=name)
        part = stats.partial_point_biserial(counts, valid).assign(source=name)
        kills = stats.atoms_vs_kills(counts, valid).assign(source=name)
        freq = per_game_freq(counts, valid).assign(source=name)
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
        path = _figure_rpb(rpb, data.figdir / f"rpb_{tag}.png", f"Atom-win r_pb ({name})")
        out.figures.append(path)
        sec.blocks.append(
            Figure(
                path,
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
        sec.blocks.extend(warnings_of(rpb, "atom"))
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
        path = _figure_freq(
            counts, data, data.figdir / f"freq_{tag}.png", f"Atom frequency ({name})"
        )
        out.figures.append(path)
        sec.blocks.append(Figure(path, "Mean per-game count of each atom, coloured by cluster"))
        if src.filtered is not None:
            both = atom_counts(src, letters)
            differ = both[both["occurrences"] != both["occurrences_filtered"]]
            sec.blocks.append(
                Text(
                    f"{name} keeps its findings as emitted; {len(differ)} atom(s) lose "
                    "occurrences under the grounded filters (table atom_counts: "
                    "occurrences as emitted, occurrences_filtered passing the filters)."
                )
            )
        out.sections.append(sec)
    if counts_all:
        out.tables["atom_counts"] = pd.concat(counts_all, ignore_index=True)
    if rpb_all:
        out.tables["rpb"] = pd.concat(rpb_all, ignore_index=True)
        out.tables["partial_rpb"] = pd.concat(partial_all, ignore_index=True)
        out.tables["atoms_vs_kills"] = pd.concat(kills_all, ignore_index=True)
        out.tables["atom_frequency"] = pd.concat(freq_all, ignore_index=True)
        out.tables["clusters"] = pd.concat(clusters_all, ignore_index=True)
    return out


# ---------------------------------------------------------------------- arcs
@result("core.arcs", "Atoms over the five phases and realised kill-cycle arcs")
def arcs(data: StudyData) -> ResultOutput:
    """Per game, phase and atom: judge and detector counts; realised arcs (judge)."""
    valid_ids = set(data.games["game_id"])
    f = data.findings
    acc = f[f["accepted"].astype(bool) & f["game_id"].isin(valid_ids)]
    tables = {
        "arcs_phase": stats.arcs_by_phase(acc[acc["kind"] == "judge"], data.book),
        "arcs_realised": stats.arcs_realised(acc[acc["kind"] == "judge"], data.book),
        "arcs_phase_detector": stats.arcs_by_phase(acc[acc["kind"] == "detector"], data.book),
    }
    sec = Sec("Arcs over the five phases")
    if not tables["arcs_phase"].empty:
        pivot = tables["arcs_phase"].pivot_table(
            index="phase", columns="atom", values="count", aggfunc="sum", fill_value=0
        )
        order = [p.name for p in data.book.phases if p.name in pivot.index]
        sec.blocks.append(Table(pivot.loc[order].reset_index(), "Judge atoms per phase"))
        real = tables["arcs_realised"]
        sec.blocks.append(
            Text(f"Kill-cycle arcs realised in {int(real['realised'].sum())} of {len(real)} games.")
        )
    else:
        sec.blocks.append(Text("No judge annotations: arcs need the verbal atoms."))
    return ResultOutput(tables=tables, sections=[sec])


# ---------------------------------------------------------------------- axes
def _figure_axes(table: pd.DataFrame, path: Path) -> Path:
    fig, axes = new_figure()
    ax = axes[0, 0]
    labels = [
        f"{str(a).split('.', 1)[1]}={lv}"
        for a, lv in zip(table["axis"], table["level"], strict=True)
    ]
    x = np.arange(len(table))
    err = error_bars(table["win_rate"], table["ci_low"], table["ci_high"])
    colors = ["C0" if str(a).startswith("impostor.") else "C1" for a in table["axis"]]
    ax.bar(x, table["win_rate"], yerr=err, capsize=3, color=colors)
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("impostor win rate")
    ax.set_title("Marginal impostor win rate per axis level (blue: impostor side, orange: crew)")
    return save(fig, path)


@result("core.axes", "Ablation axes: marginal win rates, z-tests and the logistic regression")
def axes(data: StudyData) -> ResultOutput:
    """Marginal win rate per axis level with z-tests against the baseline level, and the
    logistic regression of impostor win on every axis (and the backbone) jointly, its
    terms chosen from the design (confounded axes merged, degenerate fits reported)."""
    valid = data.games
    marg = stats.axis_marginals(valid)
    logit = stats.logistic_all_axes(valid)
    design = stats.logit_design(valid)
    out = ResultOutput(tables={"axis_marginals": marg, "logit": logit, "logit_design": design})
    sec = Sec("Ablation axes (impostor win)")
    if marg.empty:
        sec.blocks.append(Text("No ablation axis varies across these games."))
    else:
        if bool(marg["small_sample"].any()):
            sec.blocks.append(
                Warning_(
                    f"Some levels have fewer than {stats.SMALL_SAMPLE} games or fewer than "
                    f"{stats.MIN_CELL} wins or losses: too small a sample to read."
                )
            )
        path = _figure_axes(marg, data.figdir / "axes.png")
        out.figures.append(path)
        sec.blocks.append(
            Figure(path, "Marginal impostor win rate per axis level with 95 % Wilson intervals")
        )
        sec.blocks.append(
            Table(
                marg,
                "Two-proportion z-tests against the baseline level: p one-sided in the "
                "paper's pre-registered direction (`alternative`; two-sided where none was "
                "registered) and two-sided; paired seeds: McNemar (two-sided); confounded "
                "axes as one merged contrast; the paper beside",
            )
        )
    notes = design[design["status"].isin(["merged", "dropped", "missing"])]
    for r in notes.itertuples():
        sec.blocks.append(Warning_(f"Regression design: {r.term}: {r.reason}."))
    errors = logit["error"].astype(str).replace("nan", "")
    if (errors != "").any():
        sec.blocks.append(Warning_("Logistic regression not estimated: " + errors.iloc[0]))
    warn = logit["warning"].astype(str).replace("nan", "")
    if (warn != "").any():
        sec.blocks.append(Warning_("Logistic regression: " + warn.iloc[0]))
    sec.blocks.append(
        Table(
            logit,
            "Logistic regression of impostor win on all axes and the backbone (se: "
            f"cluster-robust with at least {stats.FEW_CLUSTERS} clusters, else naive; both "
            "beside)",
        )
    )
    sec.blocks.append(Table(design, "How the regression's terms were chosen"))
    out.sections.append(sec)
    return out


# ---------------------------------------------------------------------- models
def _figure_models(models: pd.DataFrame, path: Path) -> Path:
    fig, axes_ = new_figure(size=(4.5, 4.0))
    ax = axes_[0, 0]
    ax.scatter(models["crew_win_rate"], models["impostor_win_rate"])
    for _, r in models.iterrows():
        ax.annotate(str(r["model"]), (r["crew_win_rate"], r["impostor_win_rate"]), fontsize=7)
    ax.set_xlabel("crew win rate (as crew)")
    ax.set_ylabel("impostor win rate (as impostor)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title("Per-model win rates")
    return save(fig, path)


@result("core.models", "Per-model win rates and cross-model correlations")
def models(data: StudyData) -> ResultOutput:
    """Per impostor model: win rate and mean atom counts; cross-model Pearson r of atom
    frequency with impostor win rate (per source)."""
    valid = data.games
    out = ResultOutput()
    sec = Sec("Models")
    models_all, cross_all = [], []
    for name, src in data.sources.items():
        ids = set(src.counts.index)
        per = stats.per_model(src.counts, valid[valid["game_id"].isin(ids)])
        models_all.append(per.assign(source=name))
        cross_all.append(stats.cross_model(per, list(src.atoms)).assign(source=name))
    out.tables["per_model"] = pd.concat(models_all, ignore_index=True)
    out.tables["cross_model"] = pd.concat(cross_all, ignore_index=True)
    n_models = valid["impostor_model"].nunique()
    if n_models < 3:
        sec.blocks.append(
            Warning_(f"{n_models} impostor model(s): cross-model correlations need at least 3.")
        )
    first = models_all[0]
    small = first[first["n_games"] < stats.SMALL_SAMPLE]
    if len(small):
        sec.blocks.append(
            Warning_(
                f"{len(small)} model(s) have fewer than {stats.SMALL_SAMPLE} games as "
                "impostor: their rates are too small a sample to read."
            )
        )
    path = _figure_models(first, data.figdir / "models.png")
    out.figures.append(path)
    sec.blocks.append(Figure(path, "Per-model impostor vs crew win rate"))
    for cross in cross_all:
        src_name = cross["source"].iloc[0]
        what = "detector atoms" if src_name == "detector" else "judge atoms, verbal included"
        sec.blocks.append(
            Table(
                cross,
                f"Cross-model Pearson r over {what} ({src_name}): Fisher-z CI, Holm and BH "
                "across atoms, the paper's r beside (its figures are from its judge)",
            )
        )
    out.sections.append(sec)
    return out


# ---------------------------------------------------------------------- agreement
def panel_raters(data: StudyData, judge_counts: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each judge panel named in the games' annotations, as per-game counts over the
    games it judged (`annotation.deception.panel`: recomputed from its judges' counts
    by its rule)."""
    if data.dataset is None:
        return {}
    out: dict[str, pd.DataFrame] = {}
    for defn in read_panel_defs(data.dataset.folders):
        table = panel_counts(defn, judge_counts)
        if table is not None:
            out[defn.name] = table
    return out


@result("core.agreement", "Agreement: judges and panels with detectors and humans")
def agreement_result(data: StudyData) -> ResultOutput:
    """Per-atom agreement of each judge and each judge panel with the engine detectors;
    judge-human, panel-human and human-human agreement when human labels are given, and
    one row per judge or panel against each human in the paper's units and QUACK's."""
    out = ResultOutput()
    sec = Sec("Agreement")
    counts_of = {n: (s.every if s.every is not None else s.counts) for n, s in data.sources.items()}
    panels = panel_raters(data, counts_of)
    det = counts_of.get("detector")
    rows = []
    for name, counts in [*counts_of.items(), *panels.items()]:
        if name == "detector" or det is None:
            continue
        rows.append(
            agreement.per_atom(
                det, counts, list(DETECTED_ATOMS), n_boot=data.n_boot, seed=data.seed
            ).assign(judge=name)
        )
    if panels:
        listed = ", ".join(f"{n} ({len(t)} games)" for n, t in panels.items())
        sec.blocks.append(
            Text(
                f"Judge panels: {listed}. A panel finds an atom in a game when more than "
                "half (majority) or all (unanimous) of its judges do; its count is the "
                "lower median of its judges' counts. It is read over the games every "
                "judge of it annotated."
            )
        )
    if rows:
        out.tables["judge_detector_agreement"] = pd.concat(rows, ignore_index=True)
        sec.blocks.append(
            Text(
                "Per-atom agreement of the judge with the engine detectors on what the engine "
                "can prove (κ over per-game presence, F1 of the judge against the detectors, "
                "ρ over per-game counts, 95 % bootstrap intervals over games). A judge that "
                "disagrees with the engine here is a judge to distrust."
            )
        )
        sec.blocks.append(Table(out.tables["judge_detector_agreement"], "Judge vs detectors"))
    label_set = data.labels
    if label_set is not None:
        raters: dict[str, pd.DataFrame] = {}
        kinds: dict[str, str] = {}
        for who, counts in label_set.counts.items():
            raters[f"human:{who}"] = counts
            kinds[f"human:{who}"] = "human"
        for name, counts in counts_of.items():
            if name != "detector":
                raters[name] = counts
                kinds[name] = "judge"
        for name, counts in panels.items():
            raters[name] = counts
            kinds[name] = "panel"
        letters = data.book.letters
        out.tables["agreement"] = agreement.agreement_table(
            raters, kinds, letters, n_boot=data.n_boot, seed=data.seed
        )
        out.tables["agreement_raters"] = agreement.rater_table(out.tables["agreement"], kinds)
        out.tables["agreement_per_atom"] = agreement.agreement_per_atom(
            raters, kinds, letters, n_boot=data.n_boot, seed=data.seed
        )
        read = ", ".join(
            f"{who}: {len(c)} read ({len(label_set.nothing_found[who])} with nothing found)"
            for who, c in label_set.counts.items()
        )
        sec.blocks.append(
            Text(
                f"Games per annotator: {read}. A game read with nothing found counts with "
                "every atom absent. F1, precision and recall score `other` against "
                "`reference` (a human against a judge or a panel); f1_weighted_reversed "
                "swaps them. Intervals: 95 % bootstrap over games."
            )
        )
        if not out.tables["agreement_raters"].empty:
            sec.blocks.append(
                Table(
                    out.tables["agreement_raters"],
                    "Each judge and panel against each human: the paper's units (κ, "
                    "weighted F1, ρ) and QUACK's (precision and recall of per-(game, atom) "
                    "presence, with the units behind them), 95 % bootstrap intervals",
                )
            )
        sec.blocks.append(
            Table(
                out.tables["agreement"],
                "Judge-human, panel-human and human-human agreement (paper beside)",
            )
        )
        sec.blocks.append(
            Table(
                out.tables["agreement_per_atom"],
                "Per-atom agreement of every pair (κ and ρ with 95 % bootstrap intervals)",
                max_rows=120,
            )
        )
        if label_set.unmatched:
            shown = ", ".join(label_set.unmatched[:8])
            sec.blocks.append(
                Warning_(
                    f"{len(label_set.unmatched)} labelled game key(s) name no analysed game "
                    f"and were not used: {shown}"
                )
            )
        n_h = min((len(raters[r]) for r in raters if kinds[r] == "human"), default=0)
        if n_h < stats.SMALL_SAMPLE:
            sec.blocks.append(
                Warning_(f"Human labels cover {n_h} game(s): too few to read agreement closely.")
            )
    if not sec.blocks:
        sec.blocks.append(Text("No judge or human annotations to compare."))
    out.sections.append(sec)
    return out


# ---------------------------------------------------------------------- paper vs ours
def paper_rows(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
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


@result("core.paper", "The paper's figures beside ours", front=True)
def paper(data: StudyData) -> ResultOutput:
    """Each figure the paper reports beside ours on these games (from the tables of the
    results before this one)."""
    table = paper_rows(data.tables)
    return ResultOutput(
        tables={"paper_vs_ours": table},
        sections=[
            Sec(
                "The paper's figures beside ours",
                [
                    Text(
                        "Each figure the paper reports, beside ours on these games (r_pb: "
                        "RQ1, 192 games; z-tests: one-sided, as the paper pre-set them; "
                        "cross-model r: RQ2; agreement: 48 games, two annotators). The "
                        "detailed tables follow."
                    ),
                    Table(table, "Paper vs ours"),
                ],
            )
        ],
    )


@result("core.rejected", "Rejected findings")
def rejected(data: StudyData) -> ResultOutput:
    """Counts of the findings that failed validation, by source and reason."""
    f = data.findings
    bad = f[~f["accepted"].astype(bool)]
    table = (
        bad.groupby(["source", "reason"]).size().rename("n").reset_index()
        if len(bad)
        else pd.DataFrame({"source": [], "reason": [], "n": []})
    )
    return ResultOutput(
        sections=[
            Sec(
                "Rejected findings",
                [
                    Text(
                        "Every finding that failed validation, with its reason (counts by "
                        "reason; all rows are in rejected.csv)."
                    ),
                    Table(table),
                ],
            )
        ]
    )
