"""`mineamongus analyze`: games + annotations -> registered results (tables, figures,
report).

Per-game facts come from a tournament's `results/games.parquet` when one is found
beside the runs, else from each game's `summary.json` and `game_start`
(`annotation.gamelog.game_facts`); where both exist they are compared value by value
(numbers as numbers, the two status vocabularies mapped onto each other) and every
disagreement is reported; the table's `design.*` labels are merged into the games.
Findings come from each run's `annotations.jsonl`; a run without one is annotated by
the detectors on the fly (the report says how many).

This module loads the study once into a `StudyData` and runs every registered result
(`annotation.report.results`) whose designs include the study's (`study_design`): the
results every study gets (`annotation.report.core`), RQ1's (`annotation.report.rq1`) and
RQ2's (`annotation.report.rq2`). Each result's tables are written to `tables/` as it
finishes; a result that raises becomes a failed section of the report, with its error.
"""

from __future__ import annotations

import importlib
import logging
import math
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

import annotation.report.claims_validity  # noqa: F401  (registers the audit checked by people)
import annotation.report.core  # noqa: F401  (registers the results every study gets)
import annotation.report.ratings  # noqa: F401  (registers the ratings board)
import annotation.report.rq1  # noqa: F401  (registers the RQ1 results)
import annotation.report.rq2  # noqa: F401  (registers the RQ2 results)
from annotation import stats
from annotation.deception import human as human_labels
from annotation.deception.codebook import codebook
from annotation.deception.detectors import DETECTED_ATOMS, run_detectors
from annotation.deception.findings import (
    judge_profiles,
    judge_statuses,
    read_annotation_rows,
    validate_finding,
)
from annotation.deception.human import LabelSet, read_labels
from annotation.gamelog import FACT_KINDS, game_facts, load_game
from annotation.report.document import (
    ReportContext,
    Section,
    Table,
    Text,
    Warning_,
    extra_sections,
    write_report,
)
from annotation.report.figures import titles_recorded
from annotation.report.results import (
    RESULTS,
    Dataset,
    Design,
    ResultSpec,
    SourceCounts,
    StudyData,
    study_design,
)
from controller.record import finished_runs

__all__ = [
    "Dataset",
    "analyze",
    "build_study",
    "load_dataset",
    "load_result_modules",
    "ordered_results",
    "run_results",
    "write_tables",
]

logger = logging.getLogger(__name__)

FACT_COLUMNS = ("arm", "seed", "status", "winner", "ending", "steps", "kills", "meetings")
"""Columns compared between `games.parquet` and the facts derived from the logs."""
NUMERIC_FACTS = frozenset({"seed", "steps", "kills", "meetings"})
"""Facts compared as numbers (66 and 66.0 and "66" agree)."""
TABLE_STATUS = {"done": "ok", "invalid": "invalid", "failed": "invalid"}
"""The tournament table's status (`done`, `invalid`, `failed`) in the logs' vocabulary
(`ok`, `invalid`): a game the runner counts as done ended `ok`; a failed one left no
valid end."""
FINDING_COLUMNS = [
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
    "filter_ok",
    "filter_reason",
]
RESULT_MODULES: tuple[str, ...] = ()
"""Further modules of registered results, imported when `analyze` runs (`core`, `rq1`,
`rq2` and `ratings` are imported with this module)."""


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


def load_dataset(
    paths: list[Path], *, progress: bool = True, note: Callable[[str], None] | None = None
) -> Dataset:
    """Read every finished run's facts and annotations (with `filter_ok`/`filter_reason`
    when the findings carry them, else None and empty).

    An unfinished game (no `game_end`, no summary: killed or still running) is left out
    and named through `note` (default: a line on stderr); a broken record is refused.

    Raises:
        controller.record.RecordError: A broken record (a cut log beside a summary, a
            line that is not JSON, ...), or every run unfinished.
        FileNotFoundError: A path holds no run folder.
    """
    from rich.console import Console
    from rich.progress import track

    if note is None:
        console = Console(stderr=True)

        def note(line: str) -> None:
            console.print(line, markup=False, highlight=False, soft_wrap=True)

    folders = finished_runs(paths, note=note)
    facts = []
    rows: list[dict[str, object]] = []
    judged: dict[str, list[str]] = {}
    profiles: dict[str, str] = {}
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
            for source, profile in judge_profiles(header).items():
                seen = profiles.setdefault(source, profile)
                if seen != profile:
                    profiles[source] = "mixed"  # games judged under different profiles
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
            flag = fi.get("filter_ok")
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
                    "filter_ok": None if flag is None else bool(flag),
                    "filter_reason": fi.get("filter_reason") or "",
                }
            )
    games = pd.DataFrame(facts)
    mismatches = pd.DataFrame()
    table = _tournament_table(folders, "games.parquet")
    if table is not None and not games.empty:
        games, mismatches = _merge_tournament(games, table)
    findings = pd.DataFrame(rows, columns=FINDING_COLUMNS)
    findings["filter_ok"] = findings["filter_ok"].astype(object)
    return Dataset(
        folders=folders,
        games=games,
        findings=findings,
        judged=judged,
        detected=detected,
        on_the_fly=on_the_fly,
        judge_failed=judge_failed,
        mismatches=mismatches,
        profiles=profiles,
    )


def _missing(value: object) -> bool:
    if value is None or (isinstance(value, str) and value == ""):
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def same_fact(column: str, log: object, table: object) -> bool:
    """Whether the log's and the tournament table's value of a fact agree: missing
    agrees with missing only; numeric facts compare as numbers; the table's status is
    read in the logs' vocabulary (`TABLE_STATUS`); anything else compares as text."""
    if _missing(log) or _missing(table):
        return _missing(log) and _missing(table)
    if column == "status":
        table = TABLE_STATUS.get(str(table), str(table))
    if column in NUMERIC_FACTS:
        a, b = _number(log), _number(table)
        if a is not None and b is not None:
            return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return str(log) == str(table)


def _merge_tournament(games: pd.DataFrame, table: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    """Take the tournament's arm names and `design.*` labels; list every disagreement
    between its facts and the logs' (compared as typed values, `same_fact`)."""
    key = "game_id" if "game_id" in table.columns else "game" if "game" in table.columns else None
    if key is None:
        return games, pd.DataFrame(
            [{"game_id": "", "column": "", "log": "", "table": "games.parquet has no game id"}]
        )
    t = table.rename(columns={key: "game_id"})
    if "counted" in t.columns:  # a counted attempt wins over another row of the same id
        t = t.sort_values("counted", kind="stable")
    t = t.drop_duplicates(subset="game_id", keep="last").set_index("game_id")
    rows = []
    g = games.set_index("game_id")
    for gid in g.index:
        if gid not in t.index:
            continue
        for col in FACT_COLUMNS:
            if col in t.columns and col in g.columns:
                a, b = g.at[gid, col], t.at[gid, col]
                if not same_fact(col, a, b):
                    rows.append({"game_id": gid, "column": col, "log": str(a), "table": str(b)})
                    if col == "arm":
                        g.at[gid, col] = b  # the tournament names its arms
    for col in t.columns:
        if str(col).startswith("design."):
            g[col] = t[col].reindex(g.index)
    return g.reset_index(), pd.DataFrame(rows, columns=["game_id", "column", "log", "table"])


def _passes(flags: pd.Series) -> np.ndarray:
    """True where a finding's `filter_ok` is True (None and False are not)."""
    passes: np.ndarray = flags.map(lambda v: v is True or v is np.True_).to_numpy(dtype=bool)
    return passes


def source_counts(ds: Dataset, valid_ids: set[str]) -> dict[str, SourceCounts]:
    """Per source family: per-game counts over the valid games it annotated (and over
    every game it annotated), its atoms, and its counts passing the grounded filters
    when a judge's findings are kept as emitted."""
    acc = ds.findings[ds.findings["accepted"].astype(bool)]
    out: dict[str, SourceCounts] = {}
    det = acc[acc["kind"] == "detector"]
    every = stats.counts_table(det, ds.detected)[list(DETECTED_ATOMS)]
    out["detector"] = SourceCounts(
        "detector", every[every.index.isin(valid_ids)], list(DETECTED_ATOMS), every=every
    )
    for src, ids in sorted(ds.judged.items()):
        j = acc[acc["source"] == src]
        every = stats.counts_table(j, ids)
        filtered = None
        flags = j["filter_ok"]
        passes = _passes(flags)
        flagged = bool(flags.notna().any())
        if flagged and (ds.profiles.get(src) in ("reference", "mixed") or not passes.all()):
            f_every = stats.counts_table(j[passes], ids)
            filtered = f_every[f_every.index.isin(valid_ids)]
        out[src] = SourceCounts(
            src,
            every[every.index.isin(valid_ids)],
            codebook().letters,
            filtered=filtered,
            every=every,
        )
    return out


def build_study(
    ds: Dataset,
    out: Path,
    *,
    n_boot: int = stats.DEFAULT_BOOT,
    n_perm: int = stats.DEFAULT_PERM,
    seed: int = 0,
    labels: LabelSet | None = None,
) -> StudyData:
    """The one `StudyData` every result reads: the valid games, every finding, each
    source's counts and the primary source's (the judge that annotated the most games,
    else the detectors)."""
    games = ds.games
    valid = games[games["status"] == "ok"].reset_index(drop=True)
    sources = source_counts(ds, set(valid["game_id"]))
    judges = [s for s in sources if s != "detector"]
    primary = sources[max(judges, key=lambda s: len(sources[s].counts))] if judges else None
    chosen = primary if primary is not None else sources["detector"]
    return StudyData(
        games=valid,
        findings=ds.findings,
        counts=chosen.counts,
        counts_source=chosen.name,
        counts_filtered=chosen.filtered,
        book=codebook(),
        out=out,
        figdir=out / "figures",
        n_boot=n_boot,
        seed=seed,
        n_perm=n_perm,
        all_games=games,
        dataset=ds,
        sources=sources,
        labels=labels,
    )


def load_result_modules() -> list[Section]:
    """Import the modules whose results register on import (`RESULT_MODULES`); a module
    that fails to import is a failed section, never a silent gap."""
    failed = []
    for name in RESULT_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # shown in the report, never silently skipped
            logger.exception("%s could not be imported", name)
            failed.append(Section(f"{name} (failed)", [Warning_(f"{name}: {exc!r}")]))
    return failed


def ordered_results() -> list[ResultSpec]:
    """The registered results in the order they run: those every study gets (`core.*`)
    first, then the others, each group in registration order (whatever order their
    modules happened to be imported in)."""
    specs = list(RESULTS.values())
    return sorted(specs, key=lambda s: (not s.name.startswith("core."), specs.index(s)))


def run_results(
    data: StudyData, design: Design
) -> tuple[dict[str, pd.DataFrame], list[Section], list[Section]]:
    """Run every registered result whose designs include `design` (`ordered_results`).

    Each result sees the tables of the ones before it (`StudyData.tables`); its tables
    are written to `out/tables/` as soon as it returns. A result that raises becomes a
    failed section with its error (logged with the traceback); a result that writes a
    table another already wrote is flagged in its section.

    Returns:
        Every table by stem (with `results_index`: one row per result, its status,
        tables, figures and error), the front sections and the other sections.
    """
    tables: dict[str, pd.DataFrame] = {}
    front: list[Section] = []
    body: list[Section] = []
    index: list[dict[str, object]] = []
    for spec in ordered_results():
        if design not in spec.designs:
            continue
        data.tables = dict(tables)
        try:
            with titles_recorded():
                got = spec.fn(data)
        except Exception as exc:  # shown in the report, never silently skipped
            logger.exception("result %s failed", spec.name)
            body.append(
                Section(
                    f"{spec.title} (failed)",
                    [Warning_(f"the result {spec.name} raised {type(exc).__name__}: {exc}")],
                )
            )
            index.append(
                {
                    "result": spec.name,
                    "title": spec.title,
                    "status": "failed",
                    "tables": "",
                    "figures": "",
                    "error": f"{type(exc).__name__}: {exc}",
                }
            )
            continue
        clash = sorted(set(got.tables) & set(tables))
        write_tables(got.tables, data.out)
        tables.update(got.tables)
        sections = list(got.sections)
        if clash and sections:
            sections[0].blocks.append(
                Warning_(f"{spec.name} rewrote table(s) an earlier result wrote: {clash}")
            )
        (front if spec.front else body).extend(sections)
        index.append(
            {
                "result": spec.name,
                "title": spec.title,
                "status": "ok",
                "tables": " ".join(sorted(got.tables)),
                "figures": " ".join(p.name for p in got.figures),
                "error": "",
            }
        )
    tables["results_index"] = pd.DataFrame(
        index, columns=["result", "title", "status", "tables", "figures", "error"]
    )
    write_tables({"results_index": tables["results_index"]}, data.out)
    return tables, front, body


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
    """Run every registered result for the study's design; write the tables (Parquet +
    CSV), the figures and the report.

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
    ds = load_dataset(paths, progress=progress)  # every record read before a file is written
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
    load_notes = load_result_modules()
    out.mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    data = build_study(ds, out, n_boot=n_boot, n_perm=n_perm, seed=seed, labels=label_set)
    design = study_design(data.games)
    tables, front, body = run_results(data, design)
    index = tables["results_index"]
    failed = index[index["status"] != "ok"]
    head = Section(
        "Study design and results",
        [
            Text(
                f"Design: {design} ({len(data.games)} valid games). {len(index)} registered "
                f"result(s) ran for it; the primary annotation source is {data.counts_source}."
            ),
            Table(index, "Registered results"),
        ],
    )
    if len(failed):
        head.blocks.insert(
            1, Warning_(f"{len(failed)} result(s) failed: {', '.join(failed['result'])}")
        )
    report = body[:1] + [head] + front + body[1:] + load_notes
    context = ReportContext(folders=ds.folders, games=games, out=out)
    report.extend(sections or [])
    report.extend(extra_sections(context))
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
