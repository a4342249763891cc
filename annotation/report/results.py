"""Registered results: each of the study's results is one function over one dataset.

`mineamongus analyze` loads a study once into a `StudyData` and then runs every
registered result whose design matches the study (`study_design`). A result returns
its tables (written to `tables/<name>.parquet|csv`), its figures (written under
`figures/`) and its report sections. A result that raises is shown in the report as a
failed section, never skipped in silence.

Add a result with the `result` decorator::

    @result("rq2.model_win_rates", "Per-model win rates", designs=("rq2",))
    def model_win_rates(data: StudyData) -> ResultOutput:
        ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd

from annotation.deception.codebook import Codebook
from annotation.report.document import Section

if TYPE_CHECKING:
    from annotation.deception.human import LabelSet

Design = Literal["rq1", "rq2", "other"]
"""What a study is: an RQ1-shaped harness sweep, an RQ2-shaped model round robin, or
anything else."""


@dataclass
class Dataset:
    """Everything `analyze` reads from the run folders (`analysis.load_dataset`)."""

    folders: list[Path]
    games: pd.DataFrame
    """Every game, valid or not, with the tournament's columns merged in."""
    findings: pd.DataFrame
    """Every checked finding: game_id, atom, step, actor, target, source, kind, accepted,
    reason, phase, evidence, filter_ok, filter_reason."""
    judged: dict[str, list[str]] = field(default_factory=dict)
    """Judge source -> games it annotated successfully."""
    detected: list[str] = field(default_factory=list)
    """Games with detector findings (all analysed games)."""
    on_the_fly: int = 0
    """Games with no annotations.jsonl (detectors were run for them now)."""
    judge_failed: int = 0
    mismatches: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every disagreement between `results/games.parquet` and the logs."""
    profiles: dict[str, str] = field(default_factory=dict)
    """Judge source -> its profile (`grounded`, `reference`) as the annotations say;
    `mixed` when its games were judged under different profiles."""


@dataclass
class SourceCounts:
    """One annotation source's per-game atom counts over the valid games it annotated."""

    name: str
    """`detector` or `judge:MODEL`."""
    counts: pd.DataFrame
    """Index `game_id`, one int column per atom the source can find."""
    atoms: list[str]
    """The atoms it can find (the detectors prove only some)."""
    filtered: pd.DataFrame | None = None
    """The same counts keeping only findings that pass the grounded filters (`filter_ok`),
    when they differ from `counts` (a judge whose findings are kept as emitted)."""
    every: pd.DataFrame | None = None
    """The counts over every game the source annotated, invalid ones included (what
    agreement between annotators reads: a game need not be valid to be read)."""


@dataclass
class StudyData:
    """Everything a result reads; built once per `analyze`."""

    games: pd.DataFrame
    """One row per valid (`ok`) game: `game_id, arm, seed, winner, ending, steps, kills,
    meetings, impostor_win (0/1), impostor_model, crew_model, impostor.<axis>,
    crew.<axis>` and, for a tournament study, its `design.<name>` labels (`design.case`,
    `design.matchup`, `design.backbone`, `design.crew`, ...) when the study has them.
    A scripted control arm's games are here too, with null ARIA axes."""
    findings: pd.DataFrame
    """Every finding: `game_id, atom, step, actor, target, source, kind, accepted, reason,
    phase, evidence, filter_ok, filter_reason`."""
    counts: pd.DataFrame
    """Per-game atom counts of the primary source (the judge that annotated the most
    games, else the detectors): index `game_id`, one int column per atom the source can
    find (every letter for a judge; for the detectors only the atoms the engine proves,
    so an atom they cannot see is absent, never a zero), over the valid games that
    source annotated (zeros where it found nothing)."""
    counts_source: str
    """Which source `counts` is (`judge:MODEL` or `detector`)."""
    counts_filtered: pd.DataFrame | None
    """The same counts keeping only findings that pass the grounded validity filters
    (`filter_ok`), when the primary source is a judge whose findings are kept as
    emitted; None otherwise."""
    book: Codebook
    """The codebook (atoms, clusters, phases, arcs)."""
    out: Path
    """The output folder."""
    figdir: Path
    """Where figures go (`out/figures`)."""
    n_boot: int
    """Bootstrap resamples per interval."""
    seed: int
    """Seed of every RNG a result uses."""
    n_perm: int = 2000
    """Random permutations per permutation p."""
    all_games: pd.DataFrame | None = None
    """Every game, invalid ones included (`games` holds the valid ones)."""
    dataset: Dataset | None = None
    """What was read, with its notes (games annotated on the fly, judge failures,
    disagreements with the tournament's table)."""
    sources: dict[str, SourceCounts] = field(default_factory=dict)
    """Every annotation source's counts by name (`detector` first)."""
    labels: LabelSet | None = None
    """Human labels matched to the games (`--human`), when given."""
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    """The tables the results before this one made (read-only: a summary result reads
    them)."""


@dataclass
class ResultOutput:
    """What a result made."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Tables by file stem (written as `tables/<stem>.parquet` and `.csv`)."""
    sections: list[Section] = field(default_factory=list)
    """Report sections, in order."""
    figures: list[Path] = field(default_factory=list)
    """Figure files it wrote (PNG under `figdir`)."""


ResultFn = Callable[[StudyData], ResultOutput]


@dataclass(frozen=True)
class ResultSpec:
    """One registered result."""

    name: str
    """Dotted name, e.g. `rq1.cell_win_rates`; results run in registration order."""
    title: str
    """What it is, for the report and `docs/paper-results.md`."""
    designs: tuple[Design, ...]
    """Study designs it applies to."""
    fn: ResultFn
    front: bool = False
    """Its sections go right after the first section of the report (a summary)."""


RESULTS: dict[str, ResultSpec] = {}
"""Every registered result by name, in registration order."""


def result(
    name: str,
    title: str,
    designs: tuple[Design, ...] = ("rq1", "rq2", "other"),
    *,
    front: bool = False,
) -> Callable[[ResultFn], ResultFn]:
    """Register `fn` as the result `name` (replacing one of the same name).

    Args:
        name: Dotted name (`rq1.cell_win_rates`).
        title: What it is.
        designs: The study designs it runs for (`study_design`).
        front: Put its sections right after the report's first section.
    """

    def register(fn: ResultFn) -> ResultFn:
        RESULTS[name] = ResultSpec(name=name, title=title, designs=designs, fn=fn, front=front)
        return fn

    return register


def study_design(games: pd.DataFrame) -> Design:
    """RQ2 when games pair several impostor models with several crew models (a model
    round robin); RQ1 when impostor ARIA axes vary under fixed models; else other."""
    if games.empty:
        return "other"
    imp = games["impostor_model"].nunique() if "impostor_model" in games else 0
    crew = games["crew_model"].nunique() if "crew_model" in games else 0
    if "design.case" in games or (imp >= 2 and crew >= 2 and _crossed(games)):
        return "rq2"
    axes = [
        c for c in games.columns if c.startswith("impostor.") and games[c].nunique(dropna=True) > 1
    ]
    return "rq1" if axes else "other"


def _crossed(games: pd.DataFrame) -> bool:
    """Some impostor model meets more than one crew model (not only self-play)."""
    pairs = games[["impostor_model", "crew_model"]].dropna().drop_duplicates()
    return bool((pairs.groupby("impostor_model").size() > 1).any())
