"""A panel of judges: several judges' findings combined into one rater.

`annotate --judge A --judge B --judge C --panel majority|unanimous` keeps every judge's
findings and adds the panel (`panel:majority` or `panel:unanimous`), which combines them
two ways:

- **Per (game, atom).** The atom is present in the game when more than half of the
  judges (`majority`) or every judge (`unanimous`) found it there at least once. The
  panel's count of a present atom is the lower median of all the judges' counts of it in
  that game (zeros included; for an even number of judges the lower of the two middle
  counts), so it is a whole number and at least 1 whenever the atom is present; an absent
  atom counts 0. This is what agreement with human labels reads.
- **Per finding.** Judges agree on a finding when they name the same atom and the same
  actor in the same place: the same free-roam step, or the same meeting (a meeting runs
  over several steps, and two judges often put one accusation on different utterances).
  The target is not part of the match (judges often leave it out); the panel finding
  keeps the target most supporters named. A place found by enough judges (the rule's
  threshold) is a panel finding listing its supporters. A judge counts once per place,
  however many findings it put there.

The two can differ: two judges may each find L in a game on different meetings, which
makes L present for a majority without any panel finding.

Only a judge's accepted findings count (for a `reference` judge: kept as emitted). When
a member judge failed on a game, so does the panel (its atoms are unknown, never zero).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median_low
from typing import Literal, get_args

import numpy as np
import pandas as pd

from annotation.deception.findings import (
    ANNOTATIONS_FILE,
    Finding,
    GameAnnotation,
    PanelFinding,
    PanelRecord,
    panel_records,
)
from annotation.gamelog import Game

PanelRule = Literal["majority", "unanimous"]
PANEL_RULES: tuple[PanelRule, ...] = get_args(PanelRule)
"""The rules a panel can combine its judges by."""
MEETING_PHASES = frozenset({"meeting", "voting"})
"""Step phases that belong to a meeting (a verbal finding's place is its meeting)."""


def panel_name(rule: PanelRule) -> str:
    """The panel's rater name, e.g. `panel:majority`."""
    return f"panel:{rule}"


def needed(rule: PanelRule, n_judges: int) -> int:
    """How many judges must find something for the panel to: more than half
    (`majority`) or all (`unanimous`)."""
    return n_judges if rule == "unanimous" else n_judges // 2 + 1


def check_panel(rule: str, n_judges: int, flag: str = "--panel") -> list[str]:
    """Check a panel request before anything runs.

    Returns:
        Notes to show (an even number of judges: a majority of 4 needs 3).

    Raises:
        ValueError: An unknown rule, or fewer than 2 judges (naming `flag`).
    """
    if rule not in PANEL_RULES:
        raise ValueError(f"{flag} {rule!r}: use one of {', '.join(PANEL_RULES)}")
    if n_judges < 2:
        raise ValueError(
            f"{flag} {rule} combines judges: it needs at least 2 (an odd number such as 3 "
            f"is recommended), got {n_judges}; pass --judge NAME=ADDRESS once per judge"
        )
    if n_judges % 2 == 0 and rule == "majority":
        return [
            f"{flag} majority over {n_judges} judges: an atom needs "
            f"{needed('majority', n_judges)} of them (an odd number of judges avoids ties)"
        ]
    return []


# ----------------------------------------------------------------- per (game, atom)
def combine_counts(
    counts: Mapping[str, Mapping[str, int]], rule: PanelRule
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """One game's panel verdict from each judge's atom counts in it.

    Args:
        counts: Judge -> atom -> count in the game (a missing atom counts 0).
        rule: `majority` or `unanimous`.

    Returns:
        The panel's counts of the present atoms (the lower median of all judges' counts),
        and per atom any judge found, the judges that found it.
    """
    judges = list(counts)
    need = needed(rule, len(judges))
    atoms = sorted({a for c in counts.values() for a, n in c.items() if n > 0})
    present: dict[str, int] = {}
    votes: dict[str, list[str]] = {}
    for atom in atoms:
        votes[atom] = [j for j in judges if counts[j].get(atom, 0) > 0]
        if len(votes[atom]) >= need:
            present[atom] = int(median_low([counts[j].get(atom, 0) for j in judges]))
    return present, votes


def panel_table(tables: Mapping[str, pd.DataFrame], rule: PanelRule) -> pd.DataFrame:
    """The panel's per-game counts from its judges' per-game counts, over the games every
    judge annotated (the same rule as `combine_counts`, for many games at once).

    Args:
        tables: Judge -> counts (index game id, one column per atom).
        rule: `majority` or `unanimous`.

    Returns:
        Index game id (sorted), one int column per atom any judge has.
    """
    frames = list(tables.values())
    if not frames:
        return pd.DataFrame()
    games = sorted(set.intersection(*(set(t.index) for t in frames)))
    atoms = sorted(set().union(*(t.columns for t in frames)))
    stack = np.stack(
        [t.reindex(index=games, columns=atoms, fill_value=0).to_numpy(dtype=int) for t in frames]
    )
    need = needed(rule, len(frames))
    present = (stack > 0).sum(axis=0) >= need
    low = np.sort(stack, axis=0)[(len(frames) - 1) // 2]  # the lower median
    out = pd.DataFrame(np.where(present, low, 0), index=pd.Index(games), columns=atoms)
    out.index.name = "game_id"
    return out


# ----------------------------------------------------------------- per finding
def meetings_of(game: Game) -> dict[int, int]:
    """Step -> the index of the meeting it belongs to, for every meeting or voting step."""
    starts = sorted(game.meeting_steps.items(), key=lambda kv: kv[1])
    out: dict[int, int] = {}
    for step, phase in game.step_phase.items():
        if phase not in MEETING_PHASES:
            continue
        began = [index for index, first in starts if first <= step]
        if began:
            out[step] = began[-1]
    return out


def _place(step: int, meeting_of: Mapping[int, int]) -> tuple[str, int]:
    return ("meeting", meeting_of[step]) if step in meeting_of else ("step", step)


def combine_findings(
    findings: Mapping[str, Sequence[Finding]],
    rule: PanelRule,
    *,
    panel: str | None = None,
    meeting_of: Mapping[int, int] | None = None,
    phase_of: Callable[[int], str] | None = None,
) -> list[PanelFinding]:
    """The findings enough judges agree on (same atom, same actor, same place).

    Args:
        findings: Judge -> its (accepted) findings in one game.
        rule: `majority` or `unanimous`.
        panel: The panel's name (default `panel:RULE`).
        meeting_of: Step -> meeting index for meeting and voting steps (`meetings_of`);
            a step not in it is a free-roam step, its own place.
        phase_of: The arc phase of a step (the game's `phase_of`), when known.

    Returns:
        One panel finding per place found by enough judges, in step order.
    """
    name = panel or panel_name(rule)
    meeting_of = meeting_of or {}
    need = needed(rule, len(findings))
    places: dict[tuple[str, str, tuple[str, int]], dict[str, list[Finding]]] = {}
    for judge, found in findings.items():
        for f in found:
            if f.step is None:
                continue
            key = (f.atom, f.actor, _place(f.step, meeting_of))
            places.setdefault(key, {}).setdefault(judge, []).append(f)
    out: list[PanelFinding] = []
    for (atom, actor, (kind, where)), by_judge in places.items():
        if len(by_judge) < need:
            continue
        every = [f for fs in by_judge.values() for f in fs]
        steps = sorted({f.step for f in every if f.step is not None})
        named = Counter(f.target for f in every if f.target)
        target = min(named, key=lambda t: (-named[t], t)) if named else None
        out.append(
            PanelFinding(
                source=name,
                atom=atom,
                actor=actor,
                step=steps[0],
                steps=steps,
                meeting=where if kind == "meeting" else None,
                target=target,
                supporters=[j for j in findings if j in by_judge],
                phase=phase_of(steps[0]) if phase_of is not None else "",
            )
        )
    return sorted(out, key=lambda p: (p.step, p.atom, p.actor))


# ----------------------------------------------------------------- one game's panel
def build_panel(
    ann: GameAnnotation,
    members: Sequence[str],
    rule: PanelRule,
    *,
    name: str | None = None,
    game: Game | None = None,
) -> tuple[PanelRecord, list[PanelFinding]]:
    """A panel's verdict on one annotated game from its member judges' findings.

    Args:
        ann: The game's annotations (the member judges' findings and statuses).
        members: The member judges' sources (`judge:NAME`).
        rule: `majority` or `unanimous`.
        name: The panel's name (default `panel:RULE`).
        game: The game (places verbal findings in their meetings and gives phases);
            without it every step is its own place.

    Returns:
        The verdict (status `failed`, with no atoms, when a member failed or is missing)
        and the findings the judges agree on.
    """
    name = name or panel_name(rule)
    if any(ann.judges.get(m) != "ok" for m in members):
        return PanelRecord(rule=rule, judges=list(members), status="failed"), []
    found: dict[str, list[Finding]] = {m: [] for m in members}
    for c in ann.findings:
        if c.accepted and c.finding.source in found:
            found[c.finding.source].append(c.finding)
    counts = {m: dict(Counter(f.atom for f in fs)) for m, fs in found.items()}
    present, votes = combine_counts(counts, rule)
    record = PanelRecord(rule=rule, judges=list(members), counts=present, votes=votes)
    agreed = combine_findings(
        found,
        rule,
        panel=name,
        meeting_of=meetings_of(game) if game is not None else None,
        phase_of=game.phase_of if game is not None else None,
    )
    return record, agreed


# ----------------------------------------------------------------- reading panels back
@dataclass
class PanelDef:
    """A panel as the annotation files define it, with the games it judged."""

    name: str
    """Its rater name: `panel:RULE`, or with its members appended when one name covers
    panels of different judges (`panel:majority[judge:a,judge:b,judge:c]`)."""
    rule: PanelRule
    judges: tuple[str, ...]
    """The member judges' sources."""
    games: list[str] = field(default_factory=list)
    """Games it judged successfully (every member ok)."""
    failed: list[str] = field(default_factory=list)
    """Games where a member failed (left out of its statistics)."""


def _header(path: Path) -> dict[str, object] | None:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if isinstance(row, dict) and row.get("kind") == "header":
                return row
    return None


def read_panel_defs(folders: Iterable[Path]) -> list[PanelDef]:
    """Every panel named in the games' `annotations.jsonl` headers (only the header line
    of each file is read).

    Returns:
        One definition per (name, members), in name order.
    """
    by_key: dict[tuple[str, tuple[str, ...]], PanelDef] = {}
    for folder in folders:
        path = Path(folder) / ANNOTATIONS_FILE
        if not path.is_file():
            continue
        header = _header(path)
        if header is None:
            continue
        gid = str(header.get("game_id", ""))
        for name, rec in panel_records(header).items():
            key = (name, tuple(rec.judges))
            d = by_key.setdefault(key, PanelDef(name, rec.rule, tuple(rec.judges)))
            (d.games if rec.status == "ok" else d.failed).append(gid)
    names = Counter(name for name, _ in by_key)
    out = []
    for (name, members), d in sorted(by_key.items()):
        if names[name] > 1:
            d.name = f"{name}[{','.join(members)}]"
        out.append(d)
    return out


def panel_counts(defn: PanelDef, judge_counts: Mapping[str, pd.DataFrame]) -> pd.DataFrame | None:
    """A panel's per-game counts over the games it judged, from its members' per-game
    counts (the same counts every other rater is read from). None when a member's counts
    are missing."""
    if any(m not in judge_counts for m in defn.judges):
        return None
    tables = {m: judge_counts[m] for m in defn.judges}
    table = panel_table(tables, defn.rule)
    return table[table.index.isin(set(defn.games))]
