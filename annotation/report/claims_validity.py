"""How far people agree with the grounding audit (`core.claim_validity`).

From the claim labels saved in the viewer's claim-labelling view
(`annotation.grounding.labels`, `<STUDY>/labels/claims/<annotator>.jsonl`), per rule book
and annotator:

* **verdict precision** per verdict kind: of the labelled verdicts of that kind, the
  share marked right (and over every kind, `verdict` = `*`);
* **extraction precision**: of the claims whose extraction was labelled, the share
  marked right (the claim says what the utterance says);
* **pipeline precision**: of the claims labelled on both counts, the share right on
  both: QUACK's precision check (a person checks that a claim is extracted faithfully
  and that its verdict is correct; QUACK reports 199 of 200);
* **extraction recall**: over the utterances whose missed claims were counted and
  whose every extracted claim was labelled, the claims extracted right over those plus
  the ones missed: QUACK's recall check (a person lists every claim of an utterance;
  QUACK reports 220 of 223).

Each share comes with its count and a 95 % Wilson interval (`controller.stats.wilson`).
A key labelled twice counts once (the last line wins); with several annotators each is
reported apart and pooled (`annotator` = `*`, every annotator's judgement one trial).
Labels of games outside the analysed runs are left out and counted. Writes
`tables/claim_validity.csv` (and `.parquet`), empty with its columns when the study has
no claim labels.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

import annotation.report.core  # noqa: F401  (core.* register first: its overview leads)
from annotation.grounding.labels import (
    ClaimLabel,
    ClaimLabelError,
    UtteranceLabel,
    claim_labels_dir,
    current_labels,
)
from annotation.grounding.rules import RULE_BOOKS
from annotation.report.document import Section, Table, Text, Warning_
from annotation.report.results import ResultOutput, StudyData, result
from controller.record import study_place
from controller.stats import wilson

TABLE = "claim_validity"
"""The table's stem under `tables/`."""
COLUMNS = [
    "rules",
    "annotator",
    "measure",
    "verdict",
    "right",
    "n",
    "value",
    "ci_low",
    "ci_high",
]
"""The table's columns: `right` of `n` judged right, `value` = right / n, Wilson 95 %."""
MEASURES = (
    "verdict_precision",
    "extraction_precision",
    "pipeline_precision",
    "extraction_recall",
)
"""The measures, in table order."""
ALL = "*"
"""`annotator` of the pooled rows and `verdict` of the rows over every verdict kind."""
NO_LABELS = "no claim labels"
"""What the section says for a study without any."""


def label_folders(runs: Iterable[Path]) -> list[Path]:
    """Where the claim labels of these runs may be: each run's study
    (`<STUDY>/labels/claims/`, for a run in a study's `games/<arm>/seed<N>-try<K>`
    layout) and each run's own (`<RUN>/labels/claims/`, a run viewed alone)."""
    found: dict[Path, None] = {}
    for run in runs:
        run = Path(run)
        if study_place(run) is not None:
            found[claim_labels_dir(run.parents[2])] = None
        found[claim_labels_dir(run)] = None
    return [d for d in found if d.is_dir()]


def _row(
    rules: str, annotator: str, measure: str, verdict: str, right: int, n: int
) -> dict[str, object]:
    ci = wilson(right, n)
    low, high = ci.bounds()
    return {
        "rules": rules,
        "annotator": annotator,
        "measure": measure,
        "verdict": verdict,
        "right": right,
        "n": n,
        "value": right / n if n else float("nan"),
        "ci_low": low,
        "ci_high": high,
    }


def validity_rows(
    labels: Sequence[ClaimLabel | UtteranceLabel],
) -> tuple[list[dict[str, object]], int]:
    """The table's rows from standing labels (one per key), and the number of
    utterances whose missed claims were counted but whose extracted claims were not all
    labelled (left out of the recall).

    Args:
        labels: Standing labels (`annotation.grounding.labels.current_labels`).
    """
    annotators = sorted({x.annotator for x in labels})
    groups = [(a, [x for x in labels if x.annotator == a]) for a in annotators]
    if len(annotators) > 1:
        groups.append((ALL, list(labels)))
    rows: list[dict[str, object]] = []
    incomplete = 0
    for book in RULE_BOOKS:
        for who, mine in groups:
            claims = [x for x in mine if isinstance(x, ClaimLabel) and x.rules == book]
            said = [x for x in mine if isinstance(x, UtteranceLabel) and x.rules == book]
            if not claims and not said:
                continue
            judged = [c for c in claims if c.verdict_ok is not None]
            kinds = sorted({c.verdict for c in judged})
            for kind in [*kinds, ALL]:
                some = [c for c in judged if kind in (ALL, c.verdict)]
                right = sum(1 for c in some if c.verdict_ok)
                rows.append(_row(book, who, "verdict_precision", kind, right, len(some)))
            read = [c for c in claims if c.extraction_ok is not None]
            right = sum(1 for c in read if c.extraction_ok)
            rows.append(_row(book, who, "extraction_precision", ALL, right, len(read)))
            both = [c for c in read if c.verdict_ok is not None]
            right = sum(1 for c in both if c.verdict_ok and c.extraction_ok)
            rows.append(_row(book, who, "pipeline_precision", ALL, right, len(both)))
            recovered = listed = 0
            by_utterance: dict[tuple[str, str, str], list[ClaimLabel]] = defaultdict(list)
            for c in read:
                by_utterance[(c.annotator, c.game, c.utterance)].append(c)
            for u in said:
                if u.missed is None:
                    continue
                marks = by_utterance.get((u.annotator, u.game, u.utterance), [])
                if len(marks) != u.extracted:
                    if who != ALL:
                        incomplete += 1
                    continue
                ok = sum(1 for c in marks if c.extraction_ok)
                recovered += ok
                listed += ok + u.missed
            rows.append(_row(book, who, "extraction_recall", ALL, recovered, listed))
    return rows, incomplete


def claim_validity_table(labels: Sequence[ClaimLabel | UtteranceLabel]) -> pd.DataFrame:
    """`validity_rows` as the table `analyze` writes (its columns even when empty)."""
    rows, _ = validity_rows(labels)
    return pd.DataFrame(rows, columns=COLUMNS)


@result("core.claim_validity", "Grounding audit checked by people: verdict precision, extraction")
def claim_validity(data: StudyData) -> ResultOutput:
    """The audit's precision and recall as people judged them (see the module)."""
    sec = Section("Grounding audit checked by people")
    runs = list(data.dataset.folders) if data.dataset is not None else []
    folders = label_folders(runs)
    empty = pd.DataFrame(columns=COLUMNS)
    try:
        labels = [x for d in folders for x in current_labels(d)]
    except ClaimLabelError as exc:
        sec.blocks.append(Warning_(f"Claim labels refused: {exc}"))
        return ResultOutput(tables={TABLE: empty}, sections=[sec])
    games = data.all_games if data.all_games is not None else data.games
    known = set(games["game_id"]) if "game_id" in games else set()
    outside = [x for x in labels if x.game not in known]
    labels = [x for x in labels if x.game in known]
    if not labels:
        sec.blocks.append(
            Text(
                f"This study has {NO_LABELS}: label the audit's claims in the viewer "
                '(`mineamongus view STUDY`, page "label the audit\'s claims") after '
                "`mineamongus audit STUDY`."
            )
        )
        if outside:
            sec.blocks.append(Warning_(f"{len(outside)} label(s) name games not analysed here."))
        return ResultOutput(tables={TABLE: empty}, sections=[sec])
    rows, incomplete = validity_rows(labels)
    table = pd.DataFrame(rows, columns=COLUMNS)
    sec.blocks.append(
        Text(
            f"{len(labels)} standing label(s) from "
            f"{', '.join(sorted({x.annotator for x in labels}))} in "
            f"{', '.join(f'`{d}`' for d in folders)}. Per rule book: verdict precision per "
            "verdict kind, extraction precision, pipeline precision (extraction and "
            "verdict both right; QUACK: 199 of 200) and extraction recall (QUACK: 220 of "
            "223), each right of n with a 95 % Wilson interval."
        )
    )
    if outside:
        sec.blocks.append(
            Warning_(f"{len(outside)} label(s) name games not analysed here: left out.")
        )
    if incomplete:
        sec.blocks.append(
            Warning_(
                f"{incomplete} utterance(s) with a count of missed claims but not every "
                "extracted claim's extraction labelled: left out of the recall."
            )
        )
    sec.blocks.append(Table(table, "Claim validity per rule book and annotator", max_rows=200))
    return ResultOutput(tables={TABLE: table}, sections=[sec])


__all__ = [
    "COLUMNS",
    "MEASURES",
    "NO_LABELS",
    "TABLE",
    "claim_validity",
    "claim_validity_table",
    "label_folders",
    "validity_rows",
]
