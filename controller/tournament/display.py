"""Progress of a running study: a live rich table on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.table import Table

from controller.record import log_progress
from controller.tournament.manifest import Entry, Manifest

if TYPE_CHECKING:
    from controller.tournament.spec import Arm, ExperimentSpec

PLAIN_EVERY_S = 30.0


@dataclass(frozen=True)
class Eta:
    """Time left for a study's games."""

    seconds: float
    measured: bool
    """True once a game has ended (its wall time is the per-game figure); False while
    the per-game figure is the prior estimate."""

    def __str__(self) -> str:
        return _dur(self.seconds) if self.measured else f"~{_dur(self.seconds)} (estimate)"


def eta(
    manifest: Manifest,
    slots: int,
    now: float,
    prior_s: float | None,
    steps: dict[str, tuple[int | None, int | None]] | None = None,
) -> Eta | None:
    """Time left: the work of every game not yet finished over the games at once.

    A pending game takes the mean wall time of the attempts that have ended, or
    `prior_s` before any has. A running game that has run `t` seconds takes what the
    ended attempts longer than `t` took beyond `t` (before any: `prior_s - t`); one
    that has outrun them all takes its own pace so far over the steps its budget has
    left (`steps`: key -> (step, budget)). So the ETA counts down between games too.
    None when there is neither a measurement nor a prior.
    """
    walls = [
        a.wall_s
        for e in manifest.games.values()
        for a in e.attempts
        if a.outcome in ("done", "invalid", "failed") and a.wall_s
    ]
    pending = [e for e in manifest.games.values() if e.status == "pending"]
    running = [e for e in manifest.games.values() if e.status == "running"]
    left = len(pending) + len(running)
    if not left:
        return Eta(0.0, True)
    if walls:
        per_game, measured = sum(walls) / len(walls), True
    elif prior_s is not None:
        per_game, measured = prior_s, False
    else:
        return None
    work = per_game * len(pending)
    for e in running:
        ran = max(0.0, now - e.attempts[-1].started)
        longer = [w - ran for w in walls if w > ran]
        rest = sum(longer) / len(longer) if longer else (0.0 if walls else per_game - ran)
        if rest <= 0:
            step, budget = (steps or {}).get(e.key, (None, None))
            if step and budget:
                rest = ran * max(0, budget - step) / step
            elif not step:
                rest = per_game  # no step yet: still setting up
        work += max(0.0, rest)
    return Eta(work / max(1, min(slots, left)), measured)


def _dur(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    """Shows a study's progress; use as a context manager.

    Args:
        slots: Games at once (for the ETA).
        stream: Where to write (default stderr).
        live: Force the live table (True) or plain lines (False); default: live on a
            terminal.
        out: The study folder (running games' logs give their current step).
        budgets: Step budget (`rules.max_steps`) per arm, shown beside the step.
        prior_s: Estimated wall seconds of one game, for the ETA until one has ended
            (`estimate.game_seconds`).
        clock: Wall-clock time (the manifest's times are wall-clock).
    """

    def __init__(
        self,
        slots: int,
        stream: IO[str] | None = None,
        live: bool | None = None,
        out: Path | None = None,
        budgets: dict[str, int] | None = None,
        prior_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.stream = stream or sys.stderr
        self.console = Console(file=self.stream)
        self.live_mode = self.console.is_terminal if live is None else live
        self.slots = slots
        self.out = out
        self.budgets = budgets or {}
        self.prior_s = prior_s
        self.clock = clock
        self.started = clock()
        self._last_plain = float("-inf")
        self._last_done = -1
        self._live: Live | None = None

    def __enter__(self) -> Progress:
        if self.live_mode:
            self._live = Live(console=self.console, refresh_per_second=2, transient=False)
            self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
            self._live = None

    def note(self, line: str) -> None:
        """One notable event (a retry, a pause, a stop)."""
        if self._live is not None:
            self._live.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)

    def _step(self, entry: Entry) -> int | None:
        if self.out is None or entry.run is None:
            return None
        return log_progress(self.out / entry.run)[0]

    def step_of(self, entry: Entry) -> str:
        """`step 7/30` for a running game (from the tail of its log), `starting` before
        its first step."""
        step = self._step(entry)
        if step is None:
            return "starting"
        budget = self.budgets.get(entry.arm)
        return f"step {step}/{budget}" if budget else f"step {step}"

    def summary_line(self, manifest: Manifest, running: int) -> str:
        """One line: done/total, running, invalid, failed, ETA, spend."""
        c = manifest.counts()
        total = sum(c.values())
        retried = sum(
            1
            for e in manifest.games.values()
            for a in e.attempts
            if a.outcome in ("invalid", "failed")
        )
        now = self.clock()
        steps = {
            e.key: (self._step(e), self.budgets.get(e.arm))
            for e in manifest.games.values()
            if e.status == "running"
        }
        left = eta(manifest, self.slots, now, self.prior_s, steps)
        return (
            f"{c['done']}/{total} done, {running} running, {c['pending']} pending, "
            f"{c['invalid']} invalid, {c['failed']} failed ({retried} bad attempt(s)), "
            f"elapsed {_dur(now - self.started)}, "
            f"ETA {'?' if left is None else left}, spent ${manifest.spent_usd():.2f}"
        )

    def running_line(self, manifest: Manifest) -> str:
        """`running: a/seed1 step 7/30, b/seed2 starting` (empty when none runs)."""
        parts = [f"{e.key} {self.step_of(e)}" for e in manifest.entries() if e.status == "running"]
        return f"running: {', '.join(parts)}" if parts else ""

    def update(self, manifest: Manifest, running: int) -> None:
        """Redraw (live) or print lines when a game finished or every 30 s (plain)."""
        if self._live is not None:
            self._live.update(self._table(manifest, running))
            return
        done = manifest.counts()["done"]
        now = time.monotonic()
        if done != self._last_done or now - self._last_plain >= PLAIN_EVERY_S:
            self._last_done = done
            self._last_plain = now
            print(self.summary_line(manifest, running), file=self.stream, flush=True)
            games = self.running_line(manifest)
            if games:
                print(f"  {games}", file=self.stream, flush=True)

    def _table(self, manifest: Manifest, running: int) -> Table:
        table = Table(title=f"{manifest.name}: " + self.summary_line(manifest, running))
        for col in ("arm", "done", "running", "pending", "invalid", "failed", "now playing"):
            table.add_column(col, justify="left" if col in ("arm", "now playing") else "right")
        for arm in manifest.arms:
            entries = [e for e in manifest.entries() if e.arm == arm]
            n = {
                s: sum(e.status == s for e in entries)
                for s in ("done", "running", "pending", "invalid", "failed")
            }
            playing = [f"seed{e.seed} {self.step_of(e)}" for e in entries if e.status == "running"]
            table.add_row(
                arm,
                f"{n['done']}/{len(entries)}",
                str(n["running"]),
                str(n["pending"]),
                str(n["invalid"]),
                str(n["failed"]),
                ", ".join(playing),
            )
        return table


def study_progress(
    spec: ExperimentSpec,
    arms: list[Arm],
    slots: int,
    out: Path,
    live: bool | None = None,
    warm: bool = True,
) -> Progress:
    """The progress display of a study's run, its first ETA from the dry-run's per-game
    estimate (`estimate.arm_estimate`; `warm`: games on warm workers) until a game has
    ended."""
    from controller.tournament.estimate import arm_estimate, load_figures

    figures = load_figures()
    prior = sum(
        arm_estimate(a, 1, spec.estimate, figures, spec.world, warm).game_seconds for a in arms
    ) / max(1, len(arms))
    return Progress(
        slots,
        live=live,
        out=out,
        budgets={a.name: a.config.rules.max_steps for a in arms},
        prior_s=prior,
    )
