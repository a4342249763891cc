"""Per-arm impostor win rates with 95 % Wilson score intervals.

The interval type and `wilson` are the shared ones (`controller.stats`), re-exported here
for the callers that import them from this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.stats import Z95, Interval, wilson
from controller.tournament.manifest import Manifest
from controller.tournament.process import read_summary

__all__ = ["Z95", "ArmStatus", "Interval", "arm_status", "format_status", "wilson"]


@dataclass(frozen=True)
class ArmStatus:
    """Progress and impostor win rate of one arm so far."""

    arm: str
    total: int
    done: int
    running: int
    pending: int
    invalid: int
    failed: int
    impostor_wins: int
    win: Interval


def arm_status(out: Path, manifest: Manifest) -> list[ArmStatus]:
    """One row per arm; the win rate counts `done` games, read from their summaries."""
    rows = []
    for arm in manifest.arms:
        entries = [e for e in manifest.entries() if e.arm == arm]
        wins = 0
        done = 0
        for e in entries:
            if e.status != "done" or e.run is None:
                continue
            summary = read_summary(out / e.run)
            if summary is None:
                continue
            done += 1
            wins += summary.get("winner") == "impostors"
        rows.append(
            ArmStatus(
                arm=arm,
                total=len(entries),
                done=done,
                running=sum(e.status == "running" for e in entries),
                pending=sum(e.status == "pending" for e in entries),
                invalid=sum(e.status == "invalid" for e in entries),
                failed=sum(e.status == "failed" for e in entries),
                impostor_wins=wins,
                win=wilson(wins, done),
            )
        )
    return rows


def format_status(rows: list[ArmStatus]) -> str:
    """A plain-text table of `arm_status` rows."""
    head = (
        f"{'arm':<32} {'done':>9} {'run':>4} {'inv':>4} {'fail':>4}  impostor win rate [95% Wilson]"
    )
    lines = [head]
    for r in rows:
        if r.win.rate is None:
            rate = "-"
        else:
            rate = (
                f"{r.win.rate:6.1%} [{r.win.low:.1%}, {r.win.high:.1%}] "
                f"({r.impostor_wins}/{r.done})"
            )
        lines.append(
            f"{r.arm:<32} {f'{r.done}/{r.total}':>9} {r.running:>4} {r.invalid:>4} "
            f"{r.failed:>4}  {rate}"
        )
    return "\n".join(lines)
