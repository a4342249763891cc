"""How balanced a set of games is, counted from their event logs alone.

`BalanceStats` adds up, over games: who won and how, kills, meetings, ejections and
whom they hit, and what became of every KILL decision (`kill_outcomes`). Every figure
comes from the log, so a study's balance can be measured after the fact on any run.

A KILL decision *converts* when its agent kills at the same step. One that does not is
given the reason it did not, in this order: the decision's own `deferral` (the agent
chose not to strike and said why); the decision was invalid (`invalid`); the rules
refused the strike (`action_rejected`: `cooldown`, `out_of_range`, `target_lost`); the
strike's program ended without a strike (`witness` when its guard withheld it,
`out_of_leash`, `target_lost`, `meeting` when a meeting stopped it, `timeout`); else
`undeclared`, which a competent agent never produces.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from scipy import stats as sps

from controller.events import (
    ActionRejected,
    Decision,
    Event,
    GameEnd,
    GameStart,
    Kill,
    MeetingEnd,
    MeetingStart,
    ProgramRun,
)
from controller.tournament.stats import Interval, wilson

KILLED = "killed"
"""The outcome of a KILL decision that ended in its agent's kill at the same step."""


@dataclass(frozen=True)
class KillOutcome:
    """What became of one KILL decision."""

    agent: str
    step: int
    outcome: str
    """`killed`, or the reason it did not (see the module docstring)."""


def _program_reason(run: ProgramRun) -> str:
    reason = run.reason.lower()
    if run.status == "cancelled" and reason.startswith("strike withheld"):
        return "witness"
    if "leash" in reason:
        return "out_of_leash"
    if run.status == "cancelled" and "meeting" in reason:
        return "meeting"
    if "not visible" in reason or "gone" in reason:
        return "target_lost"
    if run.status == "timeout":
        return "timeout"
    return "no_strike"


def _rejection_reason(ev: ActionRejected) -> str:
    reason = ev.reason.lower()
    if reason.startswith("cooldown"):
        return "cooldown"
    if reason.startswith("out of range"):
        return "out_of_range"
    if "not alive" in reason:
        return "target_lost"
    return "rejected"


def kill_outcomes(events: Sequence[Event]) -> list[KillOutcome]:
    """Every free-roam KILL decision of a game and what became of it."""
    kills = {(ev.killer, ev.step) for ev in events if isinstance(ev, Kill)}
    rejected = {
        (ev.agent, ev.step): ev
        for ev in events
        if isinstance(ev, ActionRejected) and ev.action == "kill"
    }
    runs = {(ev.agent, ev.step): ev for ev in events if isinstance(ev, ProgramRun)}
    out: list[KillOutcome] = []
    for ev in events:
        if not isinstance(ev, Decision) or ev.module != "KILL" or ev.phase != "free_roam":
            continue
        key = (ev.agent, ev.step)
        strikes = isinstance(ev.program, list) and any(
            isinstance(a, dict) and a.get("op") == "kill" for a in ev.program
        )
        if key in kills and strikes:
            outcome = KILLED
        elif ev.deferral:
            outcome = ev.deferral
        elif not ev.valid:
            outcome = "invalid"
        elif key in rejected:
            outcome = _rejection_reason(rejected[key])
        elif strikes and key in runs:
            outcome = _program_reason(runs[key])
        else:
            outcome = "undeclared"
        out.append(KillOutcome(ev.agent, ev.step, outcome))
    return out


def binomial_greater(successes: int, trials: int, p: float) -> float | None:
    """One-sided exact binomial p-value of `successes` or more in `trials` at rate `p`."""
    if trials <= 0:
        return None
    return float(sps.binomtest(successes, trials, p, alternative="greater").pvalue)


@dataclass
class BalanceStats:
    """Balance figures over a set of games (one pairing of agents)."""

    games: int = 0
    impostor_wins: int = 0
    endings: Counter[str] = field(default_factory=Counter)
    kills: int = 0
    meetings: int = 0
    ejections: int = 0
    impostor_ejections: int = 0
    chance_sum: float = 0.0
    """Sum over ejections of the impostor share among the meeting's living players."""
    kill_decisions: int = 0
    converted: int = 0
    deferrals: Counter[str] = field(default_factory=Counter)
    invalid: list[str] = field(default_factory=list)
    """Games that did not end `ok` (seed and reason); they count in nothing else."""

    def add(self, events: Sequence[Event]) -> None:
        """Count one game's log (an invalid game is listed, not counted)."""
        start = next(e for e in events if isinstance(e, GameStart))
        end = next((e for e in events if isinstance(e, GameEnd)), None)
        if end is None or end.status != "ok":
            self.invalid.append(f"seed {start.seed}: {end.reason if end else 'no game_end'}")
            return
        roles = start.roles
        self.games += 1
        self.endings[end.ending] += 1
        self.impostor_wins += end.winner == "impostors"
        meeting: MeetingStart | None = None
        for ev in events:
            if isinstance(ev, Kill):
                self.kills += 1
            elif isinstance(ev, MeetingStart):
                self.meetings += 1
                meeting = ev
            elif isinstance(ev, MeetingEnd) and ev.ejected is not None:
                self.ejections += 1
                self.impostor_ejections += roles.get(ev.ejected) == "impostor"
                living = meeting.order if meeting is not None else []
                if living:
                    self.chance_sum += sum(roles.get(a) == "impostor" for a in living) / len(living)
        for k in kill_outcomes(events):
            self.kill_decisions += 1
            if k.outcome == KILLED:
                self.converted += 1
            else:
                self.deferrals[k.outcome] += 1

    @property
    def win_rate(self) -> Interval:
        """Impostor win rate with its Wilson 95 % interval."""
        return wilson(self.impostor_wins, self.games)

    @property
    def impostor_share_p(self) -> float | None:
        """One-sided binomial p of the impostor share of ejections against 2/7 (the
        chance of hitting one of 2 impostors among the 7 others at a first meeting)."""
        return binomial_greater(self.impostor_ejections, self.ejections, 2 / 7)

    def lines(self) -> list[str]:
        """The figures as printable lines."""
        g = max(self.games, 1)
        w = self.win_rate
        rate = "n/a" if w.rate is None else f"{w.rate:.0%} [{w.low:.0%}, {w.high:.0%}]"
        share = self.impostor_ejections / self.ejections if self.ejections else math.nan
        p = self.impostor_share_p
        chance = self.chance_sum / self.ejections if self.ejections else math.nan
        conv = self.converted / self.kill_decisions if self.kill_decisions else math.nan
        out = [
            f"games: {self.games} ok, {len(self.invalid)} not ok",
            f"impostor win rate: {self.impostor_wins}/{self.games} = {rate} (Wilson 95 %)",
            "endings: " + ", ".join(f"{k} {v}" for k, v in sorted(self.endings.items())),
            f"kills per game: {self.kills / g:.2f}",
            f"meetings per game: {self.meetings / g:.2f}",
            f"ejections per meeting: {self.ejections / max(self.meetings, 1):.2f}",
            f"impostor share of ejections: {self.impostor_ejections}/{self.ejections} = "
            f"{share:.0%} (chance at those meetings {chance:.0%}); binomial p vs 2/7 = "
            + ("n/a" if p is None else f"{p:.3g}"),
            f"KILL conversion: {self.converted}/{self.kill_decisions} = {conv:.0%} kills per "
            "KILL decision; deferrals: "
            + (", ".join(f"{k} {v}" for k, v in self.deferrals.most_common()) or "none"),
        ]
        out += [f"not ok: {line}" for line in self.invalid]
        return out
