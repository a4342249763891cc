"""Annotate games: detectors always, the judge when asked; `DIR/annotations.jsonl` each.

Games are judged concurrently (at most `concurrency` at a time); every game's file is
written as soon as that game is done, so an interrupted run keeps what it finished.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path

from annotation.deception.detectors import DETECTORS, DetectorParams, run_detectors
from annotation.deception.findings import (
    GameAnnotation,
    read_annotations,
    validate_finding,
    write_annotations,
)
from annotation.deception.judge import Estimate, estimate_game, judge_game
from annotation.gamelog import find_runs, load_game
from annotation.llm import JudgeModel, ReplyCache

logger = logging.getLogger(__name__)

CACHE_DIR_NAME = "judge_cache"
"""Default cache folder inside each run folder."""


@dataclass
class AnnotateTotals:
    """What an annotate run did."""

    games: int = 0
    accepted: int = 0
    rejected: int = 0
    judge_failed: list[str] = field(default_factory=list)
    calls: int = 0
    cached_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    """Cost of the priced calls; see `unpriced_calls` for calls whose model has no price."""
    unpriced_calls: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    """Rejection reasons (their first words) and how often."""


def _reason_key(reason: str) -> str:
    return " ".join(reason.split()[:4])


async def annotate_one(
    folder: Path,
    judge: JudgeModel | None,
    *,
    params: DetectorParams,
    cache_dir: Path | None,
    parse_attempts: int = 2,
) -> GameAnnotation:
    """Annotate one run folder and write its `annotations.jsonl`."""
    game = load_game(folder)
    findings = [validate_finding(f, game) for f in run_detectors(game, params)]
    ann = GameAnnotation(
        game_id=game.game_id,
        content_sha256=game.content_sha256,
        sources=[f"detector:{name}" for name in sorted(DETECTORS)],
        detector_params=params.model_dump(),
        findings=findings,
    )
    # Every judge's findings on the same log are kept side by side: re-running the
    # detectors keeps them all, and running a judge replaces only that judge's.
    old = read_annotations(folder)
    if old is not None and old.content_sha256 == game.content_sha256:
        for source, status in sorted(old.judges.items()):
            model = source.split(":", 1)[1]
            ann.set_judge(
                source,
                "ok" if status == "ok" else "failed",
                [c for c in old.findings if c.finding.source == source],
                [c for c in old.calls if c.model == model],
            )
    if judge is not None:
        cache = ReplyCache(cache_dir or folder / CACHE_DIR_NAME)
        res = await judge_game(game, judge, cache, parse_attempts=parse_attempts)
        ann.set_judge(f"judge:{judge.address}", res.status, res.findings, res.calls)
    write_annotations(folder, ann)
    return ann


async def annotate_runs(
    paths: list[Path],
    judge: JudgeModel | None,
    *,
    params: DetectorParams | None = None,
    cache_dir: Path | None = None,
    concurrency: int = 4,
    parse_attempts: int = 2,
    progress: bool = True,
) -> AnnotateTotals:
    """Annotate every run folder at or under `paths`.

    Args:
        paths: Run folders or tournament folders.
        judge: The judge, or None for detectors only.
        params: Detector thresholds.
        cache_dir: One shared judge cache (default: `judge_cache/` in each run folder).
        concurrency: Games judged at once.
        parse_attempts: Tries per pass while a reply is not the asked-for JSON.
        progress: Show a progress bar on stderr.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn

    params = params or DetectorParams()
    folders = find_runs(paths)
    totals = AnnotateTotals()
    sem = asyncio.Semaphore(max(1, concurrency))
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not progress,
    )

    async def one(folder: Path, task: TaskID) -> None:
        async with sem:
            ann = await annotate_one(
                folder, judge, params=params, cache_dir=cache_dir, parse_attempts=parse_attempts
            )
        # This run's work only: the detectors and this judge (other judges' findings
        # kept in the file are not counted again).
        source = f"judge:{judge.address}" if judge is not None else None
        mine = [
            c
            for c in ann.findings
            if c.finding.source.startswith("detector:") or c.finding.source == source
        ]
        totals.games += 1
        totals.accepted += sum(1 for c in mine if c.accepted)
        totals.rejected += sum(1 for c in mine if not c.accepted)
        for c in mine:
            if not c.accepted:
                k = _reason_key(c.reason)
                totals.reasons[k] = totals.reasons.get(k, 0) + 1
        if source is not None and ann.judges.get(source) == "failed":
            totals.judge_failed.append(str(folder))
        for call in ann.calls:
            if judge is None or call.model != judge.address:
                continue
            totals.calls += 1
            totals.cached_calls += int(call.cached)
            totals.tokens_in += 0 if call.cached else call.tokens_in
            totals.tokens_out += 0 if call.cached else call.tokens_out
            if call.cost_usd is None:
                totals.unpriced_calls += 1
            else:
                totals.cost_usd += call.cost_usd
        bar.advance(task)

    with bar:
        task = bar.add_task("annotate", total=len(folders))
        await asyncio.gather(*(one(f, task) for f in folders))
    return totals


def estimate_runs(
    paths: list[Path],
    address: str,
    *,
    cache_dir: Path | None = None,
    expected_out: int = 2000,
) -> list[Estimate]:
    """The judge's estimated tokens and cost for every selected game (no call made)."""
    out = []
    for folder in find_runs(paths):
        game = load_game(folder)
        cache = ReplyCache(cache_dir or folder / CACHE_DIR_NAME)
        out.append(estimate_game(game, address, cache, expected_out=expected_out))
    return out
