"""Annotate games: detectors always, the judge when asked; `DIR/annotations.jsonl` each.

Each game is judged under a judge profile (`annotation.deception.profiles`): the one
asked for, or with `auto` the one its run calls for (`reference` for a game whose
impostors played the reference harness, else `grounded`). The text each pass read is
written beside the findings: `DIR/judge_transcript.<profile>.txt` (pass 1, the whole
non-verbal input) and `DIR/judge_transcript.<profile>.verbal.txt` (pass 2).

Games are judged concurrently (at most `concurrency` at a time); every game's file is
written as soon as that game is done, so an interrupted run keeps what it finished.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from annotation.deception.detectors import DETECTORS, DetectorParams, run_detectors
from annotation.deception.findings import (
    GameAnnotation,
    read_annotations,
    validate_finding,
    write_annotations,
)
from annotation.deception.judge import Estimate, JudgeResult, estimate_game, judge_game
from annotation.deception.profiles import (
    DEFAULTS,
    JudgeProfile,
    ProfileChoice,
    harness_profile,
    resolve_profile,
)
from annotation.deception.reference.judge import estimate_reference, judge_game_reference
from annotation.gamelog import Game, load_game
from annotation.llm import JudgeModel, ReplyCache
from controller.record import RunRecord, finished_runs

logger = logging.getLogger(__name__)

CACHE_DIR_NAME = "judge_cache"
"""Default cache folder inside each run folder."""
TRANSCRIPT_FILE = "judge_transcript.{profile}.txt"
"""What a judge's pass 1 read (the whole non-verbal input), in the run folder."""
VERBAL_TRANSCRIPT_FILE = "judge_transcript.{profile}.verbal.txt"
"""What a judge's pass 2 read (the meetings), in the run folder."""


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
    profiles: dict[str, str] = field(default_factory=dict)
    """The judge profile each judged game got, by run folder."""
    filtered_out: int = 0
    """Findings kept as emitted (a `reference` judge's) that the grounded checks reject."""

    @property
    def spend_usd(self) -> float | None:
        """What the new calls cost; None (unknown, never 0) when a call had no price."""
        return None if self.unpriced_calls else self.cost_usd

    def spend_line(self) -> str:
        """Tokens and spend so far, for the progress display."""
        tokens = f"{self.tokens_in:,} in / {self.tokens_out:,} out"
        if not self.calls:
            return "no judge calls yet"
        if self.unpriced_calls:
            known = f" (${self.cost_usd:.4f} priced)" if self.cost_usd else ""
            return f"{tokens}, spend unknown: {self.unpriced_calls} unpriced call(s){known}"
        return f"{tokens}, ${self.cost_usd:.4f}"


def _reason_key(reason: str) -> str:
    return " ".join(reason.split()[:4])


def write_transcripts(folder: Path, profile: str, texts: dict[str, str]) -> list[Path]:
    """Write what a judge's passes read beside the findings (each file whole, renamed
    into place)."""
    out = []
    for pass_, name in (("nonverbal", TRANSCRIPT_FILE), ("verbal", VERBAL_TRANSCRIPT_FILE)):
        if pass_ not in texts:
            continue
        path = folder / name.format(profile=profile)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(texts[pass_], encoding="utf-8")
        tmp.replace(path)
        out.append(path)
    return out


async def judge_with(
    game: Game,
    judge: JudgeModel,
    cache: ReplyCache | None,
    profile: JudgeProfile,
    *,
    parse_attempts: int | None = None,
    max_tokens: int | None = None,
) -> JudgeResult:
    """Judge one game under a profile (`max_tokens`, `parse_attempts`: None for the
    profile's own; the grounded judge's budget is the model's unless given)."""
    if profile == "reference":
        return await judge_game_reference(
            game, judge, cache, max_tokens=max_tokens, parse_attempts=parse_attempts
        )
    if max_tokens is not None and max_tokens != judge.max_tokens:
        cap = judge.max_tokens_cap
        judge = JudgeModel(judge.backend, max_tokens=max_tokens, max_tokens_cap=cap)
    attempts = parse_attempts or DEFAULTS["grounded"].parse_attempts
    return await judge_game(game, judge, cache, parse_attempts=attempts)


async def annotate_one(
    folder: Path,
    judge: JudgeModel | None,
    *,
    params: DetectorParams,
    cache_dir: Path | None,
    parse_attempts: int | None = None,
    judge_profile: ProfileChoice = "auto",
    max_tokens: int | None = None,
    announce: Callable[[str], None] | None = None,
) -> GameAnnotation:
    """Annotate one run folder and write its `annotations.jsonl` (and, when a judge ran,
    the transcripts it read).

    Args:
        folder: The run folder.
        judge: The judge, or None for detectors only.
        params: Detector thresholds.
        cache_dir: The judge cache (default: `judge_cache/` in the run folder).
        parse_attempts: Tries per pass while a reply is not the asked-for JSON (None: the
            profile's).
        judge_profile: `auto` (the run's; the default), `reference` or `grounded`.
        max_tokens: Output budget of a judge call (None: the profile's).
        announce: Told which profile the game got, as one line (None: told nothing).
    """
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
                old.judge_profiles.get(source, "grounded"),
            )
    if judge is not None:
        profile = resolve_profile(judge_profile, game.setup)
        if announce is not None:
            how = "the run's" if judge_profile == "auto" else "asked for"
            announce(
                f"{folder}: judge profile {profile} ({how}; harness profile "
                f"{harness_profile(game.setup)})"
            )
        cache = ReplyCache(cache_dir or folder / CACHE_DIR_NAME)
        res = await judge_with(
            game,
            judge,
            cache,
            profile,
            parse_attempts=parse_attempts,
            max_tokens=max_tokens,
        )
        ann.set_judge(f"judge:{judge.address}", res.status, res.findings, res.calls, profile)
        write_transcripts(folder, profile, res.transcripts)
    write_annotations(folder, ann)
    return ann


async def annotate_runs(
    paths: list[Path],
    judge: JudgeModel | None,
    *,
    params: DetectorParams | None = None,
    cache_dir: Path | None = None,
    concurrency: int = 4,
    parse_attempts: int | None = None,
    progress: bool = True,
    judge_profile: ProfileChoice = "auto",
    max_tokens: int | None = None,
) -> AnnotateTotals:
    """Annotate every run folder at or under `paths`.

    Args:
        paths: Run folders or tournament folders.
        judge: The judge, or None for detectors only.
        params: Detector thresholds.
        cache_dir: One shared judge cache (default: `judge_cache/` in each run folder).
        concurrency: Games judged at once.
        parse_attempts: Tries per pass while a reply is not the asked-for JSON (None: the
            profile's: 2 grounded, 3 reference).
        progress: Show a progress bar on stderr.
        judge_profile: `auto` (the default, as `mineamongus annotate`'s: each game's
            run decides, `reference` for a reference-harness game), `reference` or
            `grounded`. Each judged game's profile is printed on stderr.
        max_tokens: Output budget of a judge call (None: the profile's: the model's
            grounded, 20000 reference).
    """
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    params = params or DetectorParams()
    console = Console(stderr=True)
    folders = finished_runs(
        paths, note=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True)
    )
    for folder in folders:  # a broken record is refused before any file is written
        RunRecord.read(folder, kinds=("game_start",))
    totals = AnnotateTotals()
    sem = asyncio.Semaphore(max(1, concurrency))
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        "{task.fields[spend]}",
        console=console,
        disable=not progress,
    )

    def announce(text: str) -> None:
        bar.console.print(text, markup=False, highlight=False, soft_wrap=True)

    async def one(folder: Path, task: TaskID) -> None:
        async with sem:
            ann = await annotate_one(
                folder,
                judge,
                params=params,
                cache_dir=cache_dir,
                parse_attempts=parse_attempts,
                judge_profile=judge_profile,
                max_tokens=max_tokens,
                announce=announce,
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
        if source is not None:
            profile = ann.judge_profiles.get(source, "grounded")
            totals.profiles[str(folder)] = profile
            totals.filtered_out += sum(
                1
                for c in mine
                if c.finding.source == source and c.accepted and c.filter_ok is False
            )
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
        bar.update(task, advance=1, spend=totals.spend_line())

    with bar:
        task = bar.add_task("annotate", total=len(folders), spend=totals.spend_line())
        await asyncio.gather(*(one(f, task) for f in folders))
    return totals


def estimate_runs(
    paths: list[Path],
    address: str,
    *,
    cache_dir: Path | None = None,
    expected_out: int = 2000,
    judge_profile: ProfileChoice = "auto",
) -> list[Estimate]:
    """The judge's estimated tokens and cost for every selected game under its profile's
    prompts (no call made)."""
    out = []
    for folder in finished_runs(paths):
        game = load_game(folder)
        cache = ReplyCache(cache_dir or folder / CACHE_DIR_NAME)
        if resolve_profile(judge_profile, game.setup) == "reference":
            out.append(estimate_reference(game, address, cache, expected_out=expected_out))
        else:
            out.append(estimate_game(game, address, cache, expected_out=expected_out))
    return out
