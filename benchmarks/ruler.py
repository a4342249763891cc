"""How well the scripted ruler plays: meetings, ejections and endings over many seeds.

Plays scripted games on the in-process fake world (no Minecraft, frames off) and
reads every figure from the event logs: who wins (the impostor win rate with its
Wilson 95 % interval), kills per game, how many meetings each trigger calls,
how many of them eject someone, the share of ejections that hit an impostor
against the chance rate (the share of impostors among the living players who could
be voted out, averaged over those same meetings) with a one-sided binomial p against
2/7, how the crew's ballots split by what they rest on (skip, the voter's own evidence,
or only what others said they saw; read from each vote decision's reasoning) and how
often each kind hit an impostor, and how the games end. The rule
paths (kill, report, button, ejection, task) are counted too, so a run shows that
every one of them is exercised in full games.

Seeds 1-200 were used while the ruler was tuned (docs/balance.md); fresh seeds (1001
on) are its test.

Run from the repository root:
    python -m benchmarks.ruler [--seeds 100] [--first 1] [--preset quick|balanced|paper]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from controller.balance import binomial_greater
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import (
    Decision,
    Emergency,
    Event,
    GameEnd,
    GameStart,
    Kill,
    MeetingEnd,
    MeetingStart,
    Report,
    TaskDone,
    read_events,
)
from controller.tournament.stats import Interval, wilson
from world.spec import load_map


@dataclass
class RulerStats:
    """Figures over a set of games, all counted from their event logs."""

    games: int = 0
    impostor_wins: int = 0
    kills: int = 0
    self_reports: int = 0
    """Reports made by an impostor (of a body its side made)."""
    meetings: Counter[str] = field(default_factory=Counter)
    """Meetings by trigger (`report`, `emergency`)."""
    ejecting: Counter[str] = field(default_factory=Counter)
    """Meetings that ejected someone, by trigger."""
    ejections: int = 0
    impostor_hits: int = 0
    """Ejections whose ejected player was an impostor."""
    chance_sum: float = 0.0
    """Sum over ejecting meetings of (living impostors / living players) at the meeting."""
    endings: Counter[str] = field(default_factory=Counter)
    paths: Counter[str] = field(default_factory=Counter)
    """Rule events seen: kill, report, emergency, eject, task_done."""
    invalid: list[str] = field(default_factory=list)
    """Games that did not end `ok`, with their reason."""
    ballots: Counter[str] = field(default_factory=Counter)
    """Crewmates' ballots by what they rest on: `skip`, `own` (the voter's own evidence
    counts towards the suspect) or `hearsay` (only other speakers' claims do)."""
    ballot_hits: Counter[str] = field(default_factory=Counter)
    """Of those ballots (not skips), how many named an impostor."""

    @property
    def hit_share(self) -> float:
        """Share of ejections that hit an impostor (0 when nobody was ejected)."""
        return self.impostor_hits / self.ejections if self.ejections else 0.0

    @property
    def win_rate(self) -> Interval:
        """Impostor win rate with its Wilson 95 % interval."""
        return wilson(self.impostor_wins, self.games)

    @property
    def hit_p(self) -> float | None:
        """One-sided binomial p of the impostor hits among ejections against 2/7."""
        return binomial_greater(self.impostor_hits, self.ejections, 2 / 7)

    @property
    def chance(self) -> float:
        """The hit share a random choice among the living would get, same meetings."""
        return self.chance_sum / self.ejections if self.ejections else 0.0

    def add(self, events: list[Event]) -> None:
        """Count one game's log."""
        start = next(e for e in events if isinstance(e, GameStart))
        roles = start.roles
        self.games += 1
        meeting: MeetingStart | None = None
        for ev in events:
            if isinstance(ev, MeetingStart):
                meeting = ev
                self.meetings[ev.trigger] += 1
            elif isinstance(ev, MeetingEnd) and meeting is not None:
                if ev.ejected is not None:
                    self.ejecting[meeting.trigger] += 1
                    self.ejections += 1
                    self.impostor_hits += roles.get(ev.ejected) == "impostor"
                    living = meeting.order
                    imps = sum(roles.get(a) == "impostor" for a in living)
                    self.chance_sum += imps / len(living)
                    self.paths["eject"] += 1
                meeting = None
            elif isinstance(ev, Kill):
                self.paths["kill"] += 1
                self.kills += 1
            elif isinstance(ev, Report):
                self.paths["report"] += 1
                self.self_reports += roles.get(ev.reporter) == "impostor"
            elif isinstance(ev, Emergency):
                self.paths["emergency"] += 1
            elif isinstance(ev, TaskDone) and not ev.fake:
                self.paths["task_done"] += 1
            elif isinstance(ev, Decision) and ev.phase == "voting":
                if roles.get(ev.agent) == "crewmate" and ev.vote is not None:
                    basis = ballot_basis(ev.vote, ev.reasoning)
                    self.ballots[basis] += 1
                    if basis != "skip":
                        self.ballot_hits[basis] += roles.get(ev.vote) == "impostor"
            elif isinstance(ev, GameEnd):
                self.endings[ev.ending] += 1
                self.impostor_wins += ev.winner == "impostors"
                if ev.status != "ok":
                    self.invalid.append(f"seed {start.seed}: {ev.reason}")

    def lines(self) -> list[str]:
        """The figures as printable lines."""
        g = max(self.games, 1)
        w = self.win_rate
        rate = "n/a" if w.rate is None else f"{w.rate:.0%} [{w.low:.0%}, {w.high:.0%}]"
        out = [
            f"games: {self.games}",
            f"impostor wins: {self.impostor_wins} = {rate} (Wilson 95 %)",
            f"kills per game: {self.kills / g:.2f}, meetings per game: "
            f"{sum(self.meetings.values()) / g:.2f}, impostor self-reports: {self.self_reports}",
        ]
        for trigger in ("report", "emergency"):
            n, k = self.meetings[trigger], self.ejecting[trigger]
            out.append(f"{trigger} meetings: {n}, ejecting: {k} ({k / n:.0%})" if n else "")
        out = [line for line in out if line]
        out.append(
            f"ejections: {self.ejections}, impostors hit: {self.impostor_hits} "
            f"({self.hit_share:.0%}) vs chance {self.chance:.0%}; binomial p vs 2/7 = "
            + ("n/a" if self.hit_p is None else f"{self.hit_p:.2g}")
        )
        out.append(
            "crew ballots: "
            + ", ".join(
                f"{b} {self.ballots[b]}"
                + (f" ({self.ballot_hits[b]} impostors)" if b != "skip" else "")
                for b in ("own", "hearsay", "skip", "other")
                if b != "other" or self.ballots[b]
            )
        )
        out.append("endings: " + ", ".join(f"{k} {v}" for k, v in sorted(self.endings.items())))
        out.append("rule paths: " + ", ".join(f"{k} {v}" for k, v in sorted(self.paths.items())))
        out += [f"not ok: {line}" for line in self.invalid]
        return out


def ballot_basis(vote: str, reasoning: str) -> str:
    """What a scripted crewmate's ballot rests on, from its reasoning (`suspicion (vote
    at T): red 3.00 (near_body@300, heard:blue); ...`): `skip`, `own` when any of the
    voter's own evidence is listed for the suspect, else `hearsay` (`other` for a
    reasoning not in that form)."""
    if vote == "skip":
        return "skip"
    if not reasoning.startswith("suspicion"):
        return "other"  # a log of an earlier ruler, whose reasoning was a sentence
    listed = reasoning.split(": ", 1)[-1].split("; ")
    rests = next((p for p in listed if p.startswith(f"{vote} ")), "")
    inside = rests.partition("(")[2].rstrip(")").split(", ")
    return "own" if any(r and not r.startswith("heard:") for r in inside) else "hearsay"


def play_seeds(
    seeds: list[int],
    root: Path,
    preset: str = "quick",
    progress: Callable[[str], None] | None = None,
) -> RulerStats:
    """Play one fake-world scripted game per seed under `root` and count them."""
    spec = load_map("skeld")
    stats = RulerStats()
    for i, seed in enumerate(seeds, 1):
        config = resolve_config(preset, overrides={"seed": seed, "frames": "off"})
        out = root / f"seed{seed}"
        result = play_game(config, spec, "fake", out)
        stats.add(read_events(out / "events.jsonl"))
        if progress is not None:
            progress(f"[{i}/{len(seeds)}] seed {seed}: {result.ending}")
    return stats


def main(argv: list[str] | None = None) -> int:
    """Play the seeds and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="how many seeds (default 100)")
    parser.add_argument("--first", type=int, default=1, help="first seed (default 1)")
    parser.add_argument(
        "--preset", default="quick", help="rules preset: quick, balanced, paper (default quick)"
    )
    args = parser.parse_args(argv)
    seeds = list(range(args.first, args.first + args.seeds))
    with tempfile.TemporaryDirectory() as tmp:
        stats = play_seeds(seeds, Path(tmp), args.preset, lambda line: print(line, file=sys.stderr))
    for line in stats.lines():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
