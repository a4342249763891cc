"""Progress of a running study: a live rich table on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import IO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from controller.tournament.manifest import Manifest

PLAIN_EVERY_S = 30.0


def _eta(manifest: Manifest, running: int, slots: int, started: float) -> str:
    counts = manifest.counts()
    walls = [
        a.wall_s
        for e in manifest.games.values()
        for a in e.attempts
        if a.outcome == "done" and a.wall_s
    ]
    left = counts["pending"] + counts["running"]
    if not left:
        return "0s"
    if not walls:
        return "?"
    per_game = sum(walls) / len(walls)
    seconds = per_game * left / max(1, min(slots, left))
    return _dur(seconds)


def _dur(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def summary_line(manifest: Manifest, running: int, slots: int, started: float) -> str:
    """One line: done/total, running, invalid, failed, ETA, spend."""
    c = manifest.counts()
    total = sum(c.values())
    retried = sum(
        1 for e in manifest.games.values() for a in e.attempts if a.outcome in ("invalid", "failed")
    )
    return (
        f"{c['done']}/{total} done, {running} running, {c['pending']} pending, "
        f"{c['invalid']} invalid, {c['failed']} failed ({retried} bad attempt(s)), "
        f"elapsed {_dur(time.monotonic() - started)}, "
        f"ETA {_eta(manifest, running, slots, started)}, spent ${manifest.spent_usd():.2f}"
    )


class Progress:
    """Shows a study's progress; use as a context manager.

    Args:
        slots: Games at once (for the ETA).
        stream: Where to write (default stderr).
        live: Force the live table (True) or plain lines (False); default: live on a
            terminal.
    """

    def __init__(self, slots: int, stream: IO[str] | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.console = Console(file=self.stream)
        self.live_mode = self.console.is_terminal if live is None else live
        self.slots = slots
        self.started = time.monotonic()
        self._last_plain = 0.0
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

    def update(self, manifest: Manifest, running: int) -> None:
        """Redraw (live) or print a line when a game finished or every 30 s (plain)."""
        if self._live is not None:
            self._live.update(self._table(manifest, running))
            return
        done = manifest.counts()["done"]
        now = time.monotonic()
        if done != self._last_done or now - self._last_plain >= PLAIN_EVERY_S:
            self._last_done = done
            self._last_plain = now
            print(
                summary_line(manifest, running, self.slots, self.started),
                file=self.stream,
                flush=True,
            )

    def _table(self, manifest: Manifest, running: int) -> Table:
        table = Table(
            title=f"{manifest.name}: " + summary_line(manifest, running, self.slots, self.started)
        )
        for col in ("arm", "done", "running", "pending", "invalid", "failed"):
            table.add_column(col, justify="left" if col == "arm" else "right")
        for arm in manifest.arms:
            entries = [e for e in manifest.games.values() if e.arm == arm]
            n = {
                s: sum(e.status == s for e in entries)
                for s in ("done", "running", "pending", "invalid", "failed")
            }
            table.add_row(
                arm,
                f"{n['done']}/{len(entries)}",
                str(n["running"]),
                str(n["pending"]),
                str(n["invalid"]),
                str(n["failed"]),
            )
        return table
