"""Annotate games: detectors always, the judge when asked; `DIR/annotations.jsonl` each.

Each game is judged under a judge profile (`annotation.deception.profiles`): the one
asked for, or with `auto` the one its run calls for (`reference` for a game whose
impostors played the reference harness, else `grounded`). The text each pass read is
written beside the findings: `DIR/judge_transcript.<profile>.txt` (pass 1, the whole
non-verbal input) and `DIR/judge_transcript.<profile>.verbal.txt` (pass 2).

Several judges may annotate one run (`--judge` repeated), each named (`judge:NAME`,
the name its address unless given one) and each with its own findings, calls and
spend; a panel (`annotation.deception.panel`) combines them. Games are judged
concurrently (at most `concurrency` at a time, every judge of a game at once); every
game's file is written as soon as that game is done, so an interrupted run keeps what it
finished.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from annotation.deception.detectors import DETECTORS, DetectorParams, run_detectors
from annotation.deception.findings import (
    GameAnnotation,
    read_annotations,
    validate_finding,
    write_annotations,
)
from annotation.deception.judge import (
    Estimate,
    JudgeResult,
    JudgeTally,
    NamedJudge,
    as_judges,
)
from annotation.deception.judges import JUDGES
from annotation.deception.panel import PanelRule, build_panel, check_panel, panel_name
from annotation.deception.profiles import (
    JudgeProfile,
    ProfileChoice,
    harness_profile,
    resolve_profile,
)
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

Judges = JudgeModel | NamedJudge | Sequence[JudgeModel | NamedJudge] | None
"""One judge, several, or None (detectors only)."""


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
    judges: dict[str, JudgeTally] = field(default_factory=dict)
    """Each judge's calls, tokens and spend, by name (the fields above are their sums)."""
    judge_games: dict[str, dict[str, int]] = field(default_factory=dict)
    """Each judge's games: `games`, `failed`, `accepted`, `rejected`, by name."""
    panel: dict[str, int] = field(default_factory=dict)
    """The panel's games, failed games, present (game, atom) pairs and findings."""

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


def _tally(totals: AnnotateTotals, name: str) -> JudgeTally:
    return totals.judges.setdefault(name, JudgeTally())


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
    """Judge one game with the judge registered as `profile` (`max_tokens`,
    `parse_attempts`: None for the profile's own; the grounded judge's budget is the
    model's unless given).

    Raises:
        ValueError: no judge of that name (naming the registered ones).
    """
    return await JUDGES.get(profile).judge(
        game, judge, cache, max_tokens=max_tokens, parse_attempts=parse_attempts
    )


def _cache_for(judge: NamedJudge, folder: Path, cache_dir: Path | None) -> ReplyCache:
    """The judge's reply cache: the shared one for a judge named by its address, a
    folder of its own (`NAME/` inside it) for a judge given a name, so that two judges
    of one address never answer from each other's replies."""
    base = cache_dir or folder / CACHE_DIR_NAME
    return ReplyCache(base / judge.name if judge.named else base)


async def run_judge(
    game: Game,
    judge: NamedJudge,
    cache: ReplyCache | None,
    profile: JudgeProfile,
    *,
    parse_attempts: int | None = None,
    max_tokens: int | None = None,
) -> JudgeResult:
    """`judge_with`, then the judge's name on its findings (`judge:NAME`) and calls."""
    res = await judge_with(
        game, judge.model, cache, profile, parse_attempts=parse_attempts, max_tokens=max_tokens
    )
    src = judge.source
    res.findings = [
        c
        if c.finding.source == src
        else c.model_copy(update={"finding": c.finding.model_copy(update={"source": src})})
        for c in res.findings
    ]
    res.calls = [c.model_copy(update={"judge": judge.name}) for c in res.calls]
    return res


def _panels(
    old: GameAnnotation | None, judges: list[NamedJudge], panel: PanelRule | None
) -> dict[str, tuple[PanelRule, list[str]]]:
    """The panels a game's file should hold: the earlier ones (rebuilt from the judges'
    current findings) and the one asked for now over this run's judges."""
    wanted: dict[str, tuple[PanelRule, list[str]]] = {}
    if old is not None:
        for name, rec in old.panels.items():
            wanted[name] = (rec.rule, list(rec.judges))
    if panel is not None:
        wanted[panel_name(panel)] = (panel, [j.source for j in judges])
    return wanted


async def annotate_one(
    folder: Path,
    judge: Judges,
    *,
    params: DetectorParams,
    cache_dir: Path | None,
    parse_attempts: int | None = None,
    judge_profile: ProfileChoice = "auto",
    max_tokens: int | None = None,
    announce: Callable[[str], None] | None = None,
    panel: PanelRule | None = None,
) -> GameAnnotation:
    """Annotate one run folder and write its `annotations.jsonl` (and, when a judge ran,
    the transcripts it read).

    Args:
        folder: The run folder.
        judge: The judge, several judges (each named, `NamedJudge`; a bare model is
            named by its address), or None for detectors only.
        params: Detector thresholds.
        cache_dir: The judge cache (default: `judge_cache/` in the run folder; a judge
            given a name of its own keeps its replies in `NAME/` inside it).
        parse_attempts: Tries per pass while a reply is not the asked-for JSON (None: the
            profile's).
        judge_profile: `auto` (the run's; the default), `reference` or `grounded`.
        max_tokens: Output budget of a judge call (None: the profile's).
        announce: Told which profile the game got, as one line (None: told nothing).
        panel: Combine this run's judges into a panel by this rule (`majority`,
            `unanimous`; at least 2 judges); None for no new panel. Panels written
            earlier are rebuilt from their judges' current findings.

    Raises:
        ValueError: A panel over fewer than 2 judges, or two judges with one name.
    """
    judges = as_judges(judge)
    if panel is not None:
        check_panel(panel, len(judges))
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
    if old is not None and old.content_sha256 != game.content_sha256:
        old = None
    if old is not None:
        for source, status in sorted(old.judges.items()):
            ann.set_judge(
                source,
                "ok" if status == "ok" else "failed",
                [c for c in old.findings if c.finding.source == source],
                old.judge_calls(source),
                old.judge_profiles.get(source, "grounded"),
            )
    if judges:
        profile = resolve_profile(judge_profile, game.setup)
        if announce is not None:
            how = "the run's" if judge_profile == "auto" else "asked for"
            announce(
                f"{folder}: judge profile {profile} ({how}; harness profile "
                f"{harness_profile(game.setup)})"
            )
        results = await asyncio.gather(
            *(
                run_judge(
                    game,
                    j,
                    _cache_for(j, folder, cache_dir),
                    profile,
                    parse_attempts=parse_attempts,
                    max_tokens=max_tokens,
                )
                for j in judges
            )
        )
        for j, res in zip(judges, results, strict=True):
            ann.set_judge(j.source, res.status, res.findings, res.calls, profile)
        write_transcripts(folder, profile, results[0].transcripts)
    for name, (rule, members) in _panels(old, judges, panel).items():
        if not all(m in ann.judges for m in members):
            continue  # a member's findings are gone: the panel cannot be rebuilt
        record, agreed = build_panel(ann, members, rule, name=name, game=game)
        ann.set_panel(name, record, agreed)
    write_annotations(folder, ann)
    return ann


async def annotate_runs(
    paths: list[Path],
    judge: Judges,
    *,
    params: DetectorParams | None = None,
    cache_dir: Path | None = None,
    concurrency: int = 4,
    parse_attempts: int | None = None,
    progress: bool = True,
    judge_profile: ProfileChoice = "auto",
    max_tokens: int | None = None,
    panel: PanelRule | None = None,
) -> AnnotateTotals:
    """Annotate every run folder at or under `paths`.

    Args:
        paths: Run folders or tournament folders.
        judge: The judge, several judges (`NamedJudge`s, or models named by their
            addresses), or None for detectors only.
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
        panel: Combine the judges into a panel by this rule (`majority`: more than half
            of them; `unanimous`: all); needs at least 2 judges.

    Raises:
        ValueError: A panel over fewer than 2 judges (naming `--panel`), or two judges
            with one name; raised before any game is read.
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

    judges = as_judges(judge)
    if panel is not None:
        check_panel(panel, len(judges))
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
                judges,
                params=params,
                cache_dir=cache_dir,
                parse_attempts=parse_attempts,
                judge_profile=judge_profile,
                max_tokens=max_tokens,
                announce=announce,
                panel=panel,
            )
        # This run's work only: the detectors and this run's judges (other judges'
        # findings kept in the file are not counted again).
        sources = {j.source for j in judges}
        mine = [
            c
            for c in ann.findings
            if c.finding.source.startswith("detector:") or c.finding.source in sources
        ]
        totals.games += 1
        if judges:
            profile = ann.judge_profiles.get(judges[0].source, "grounded")
            totals.profiles[str(folder)] = profile
            totals.filtered_out += sum(
                1
                for c in mine
                if c.finding.source in sources and c.accepted and c.filter_ok is False
            )
        totals.accepted += sum(1 for c in mine if c.accepted)
        totals.rejected += sum(1 for c in mine if not c.accepted)
        for c in mine:
            if not c.accepted:
                k = _reason_key(c.reason)
                totals.reasons[k] = totals.reasons.get(k, 0) + 1
        if any(ann.judges.get(j.source) == "failed" for j in judges):
            totals.judge_failed.append(str(folder))
        for j in judges:
            games = totals.judge_games.setdefault(
                j.name, {"games": 0, "failed": 0, "accepted": 0, "rejected": 0}
            )
            games["games"] += 1
            games["failed"] += int(ann.judges.get(j.source) == "failed")
            own = [c for c in mine if c.finding.source == j.source]
            games["accepted"] += sum(1 for c in own if c.accepted)
            games["rejected"] += sum(1 for c in own if not c.accepted)
            tally = _tally(totals, j.name)
            for call in ann.judge_calls(j.source):
                tally.add(call)
                totals.calls += 1
                totals.cached_calls += int(call.cached)
                totals.tokens_in += 0 if call.cached else call.tokens_in
                totals.tokens_out += 0 if call.cached else call.tokens_out
                if call.cost_usd is None:
                    totals.unpriced_calls += 1
                else:
                    totals.cost_usd += call.cost_usd
        if panel is not None:
            name = panel_name(panel)
            rec = ann.panels.get(name)
            done = totals.panel
            done["games"] = done.get("games", 0) + 1
            done["failed"] = done.get("failed", 0) + int(rec is None or rec.status != "ok")
            done["present"] = done.get("present", 0) + (len(rec.counts) if rec else 0)
            done["findings"] = done.get("findings", 0) + sum(
                1 for p in ann.panel_findings if p.source == name
            )
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
    name: str | None = None,
) -> list[Estimate]:
    """The judge's estimated tokens and cost for every selected game under its profile's
    prompts (no call made); `name` is the judge's own name when it has one (its replies
    are cached apart)."""
    out = []
    for folder in finished_runs(paths):
        game = load_game(folder)
        base = cache_dir or folder / CACHE_DIR_NAME
        cache = ReplyCache(base / name if name and name != address else base)
        judge = JUDGES.get(resolve_profile(judge_profile, game.setup))
        out.append(judge.estimate(game, address, cache, expected_out=expected_out))
    return out
