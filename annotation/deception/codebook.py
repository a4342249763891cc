"""The deception codebook as data: atoms, clusters, phases and arcs from `atoms.yaml`.

The judge prompt, the detectors, the statistics, the report and `docs/annotation.md`
all read this one file, so a definition changes in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

CODEBOOK_PATH = Path(__file__).with_name("atoms.yaml")

Channel = Literal["nonverbal", "verbal"]


class Cluster(BaseModel):
    """One of the six atom clusters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Short name, e.g. `P&K`."""
    channel: Channel
    """Whether its atoms are actions (`nonverbal`) or speech and votes (`verbal`)."""
    meaning: str
    """One line on what the cluster covers."""


class Atom(BaseModel):
    """One deception atom, by the paper's letter."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    letter: str = Field(pattern=r"^[A-W]$")
    """The paper's letter (A..W); every output uses it."""
    name: str
    """The atom's name."""
    cluster: str
    """Its cluster id, e.g. `NV-2`."""
    wb: list[str]
    """Whiten-Byrne tactical-deception classes."""
    whaley: list[str]
    """Whaley's strategic-deception types."""
    idt: str | None
    """Interpersonal Deception Theory strategy; None for purely motor atoms."""
    definition: str
    """What counts."""
    rules: str
    """Disambiguation from neighbouring atoms."""


class Phase(BaseModel):
    """One of the five game phases arcs are read over."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Machine name, e.g. `m1_m2`."""
    label: str
    """Human label, e.g. `between meetings 1 and 2`."""


class Arc(BaseModel):
    """A multi-step deception as an ordered sequence of atom stages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Machine name."""
    description: str
    """What the arc is."""
    stages: list[list[str]]
    """Ordered stages; a stage is met by any one of its letters."""
    min_stages: int = Field(ge=1)
    """How many stages, in order, make the arc count as realised."""


class Codebook(BaseModel):
    """The whole codebook."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    """Codebook revision (part of the judge's prompt hash)."""
    clusters: dict[str, Cluster]
    """Clusters by id."""
    phases: list[Phase]
    """The five phases, in game order."""
    atoms: list[Atom]
    """The 23 atoms, in letter order."""
    arcs: list[Arc]
    """Named arcs."""

    @model_validator(mode="after")
    def _check(self) -> Codebook:
        letters = [a.letter for a in self.atoms]
        if len(set(letters)) != len(letters):
            raise ValueError(f"codebook: duplicate atom letters in {letters}")
        for atom in self.atoms:
            if atom.cluster not in self.clusters:
                raise ValueError(
                    f"codebook: atom {atom.letter} names unknown cluster {atom.cluster!r}; "
                    f"known: {sorted(self.clusters)}"
                )
        known = set(letters)
        for arc in self.arcs:
            for stage in arc.stages:
                bad = set(stage) - known
                if bad:
                    raise ValueError(f"codebook: arc {arc.name} names unknown atoms {sorted(bad)}")
            if arc.min_stages > len(arc.stages):
                raise ValueError(f"codebook: arc {arc.name}: min_stages exceeds its stages")
        return self

    @property
    def letters(self) -> list[str]:
        """All atom letters in order."""
        return [a.letter for a in self.atoms]

    def atom(self, letter: str) -> Atom:
        """The atom with this letter.

        Raises:
            KeyError: Unknown letter.
        """
        for a in self.atoms:
            if a.letter == letter:
                return a
        raise KeyError(f"unknown atom letter {letter!r}; known: {''.join(self.letters)}")

    def channel(self, letter: str) -> Channel:
        """The channel (`nonverbal`/`verbal`) of an atom."""
        return self.clusters[self.atom(letter).cluster].channel

    def letters_of(self, channel: Channel) -> list[str]:
        """The letters of one channel, in order."""
        return [a.letter for a in self.atoms if self.clusters[a.cluster].channel == channel]

    def table(self, letters: list[str] | None = None) -> str:
        """A markdown table of the atoms (all, or the given letters).

        Args:
            letters: Which atoms; all when None.

        Returns:
            The table, one row per atom: letter, name, cluster, WB, Whaley, IDT, definition.
        """
        chosen = set(letters) if letters is not None else set(self.letters)
        rows = [
            "| letter | name | cluster | WB | Whaley | IDT | definition | rules |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for a in self.atoms:
            if a.letter not in chosen:
                continue
            cluster = f"{a.cluster} {self.clusters[a.cluster].name}"
            rows.append(
                f"| {a.letter} | {a.name} | {cluster} | {', '.join(a.wb)} | "
                f"{', '.join(a.whaley)} | {a.idt or '—'} | {a.definition} | {a.rules} |"
            )
        return "\n".join(rows)


def load_codebook(path: Path | str = CODEBOOK_PATH) -> Codebook:
    """Read and check a codebook file.

    Args:
        path: The YAML file (the packaged `atoms.yaml` by default).

    Returns:
        The codebook.
    """
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return Codebook.model_validate(data)


@lru_cache(maxsize=1)
def codebook() -> Codebook:
    """The packaged codebook (read once)."""
    return load_codebook()


def longest_chain(arc: Arc, atoms_in_order: Sequence[str]) -> list[tuple[int, int]]:
    """The longest chain of the arc's stages met in order by the atoms: pairs of (stage
    index, atom index), both increasing, each atom meeting its stage (stages may be
    skipped, order may not be broken, one atom per stage). Not greedy: an early atom
    that meets a first stage never blocks a longer chain through later stages.

    Args:
        arc: The arc.
        atoms_in_order: Atom letters in time order.
    """
    stages = [set(st) for st in arc.stages]
    n_s, n_a = len(stages), len(atoms_in_order)
    # best[s][i]: the longest chain over stages s.. and atoms i.. (longest common
    # subsequence, with "meets" in place of equality).
    best = [[0] * (n_a + 1) for _ in range(n_s + 1)]
    for s_i in range(n_s - 1, -1, -1):
        for a_i in range(n_a - 1, -1, -1):
            skip = max(best[s_i + 1][a_i], best[s_i][a_i + 1])
            take = 1 + best[s_i + 1][a_i + 1] if atoms_in_order[a_i] in stages[s_i] else 0
            best[s_i][a_i] = max(skip, take)
    chain: list[tuple[int, int]] = []
    s_i = a_i = 0
    while s_i < n_s and a_i < n_a:
        here = best[s_i][a_i]
        if here == 0:
            break
        if atoms_in_order[a_i] in stages[s_i] and here == 1 + best[s_i + 1][a_i + 1]:
            chain.append((s_i, a_i))
            s_i, a_i = s_i + 1, a_i + 1
        elif best[s_i + 1][a_i] == here:
            s_i += 1
        else:
            a_i += 1
    return chain


def arc_stages_met(arc: Arc, atoms_in_order: list[str]) -> int:
    """How many of an arc's stages an atom sequence meets, in order: the length of the
    longest in-order chain (`longest_chain`), e.g. `[C, E, F, H, B]` meets four stages of
    the kill cycle (C, E, F, H), not the one a greedy match on B would leave.

    Args:
        arc: The arc.
        atoms_in_order: The atom letters sorted by step.

    Returns:
        The number of stages met in order (stages may be skipped; order may not be broken).
    """
    return len(longest_chain(arc, atoms_in_order))


VICTIM_TARGETED = frozenset({"C", "E", "F", "H"})
"""Atoms whose `target` is the crewmate acted on (the stalked, killed or left body): a
finding of one of these naming another crewmate belongs to another kill's arc."""


@dataclass(frozen=True)
class ArcAtom:
    """One accepted finding, as an arc reads it."""

    step: int
    atom: str
    actor: str
    target: str | None = None


@dataclass(frozen=True)
class KillRef:
    """A kill, as the engine logged it."""

    step: int
    killer: str
    victim: str


@dataclass(frozen=True)
class ArcChain:
    """The longest chain of one arc tied to one kill and its killer."""

    arc: str
    actor: str
    victim: str
    kill_step: int
    stages_met: int
    stages: int
    realised: bool
    chain: tuple[ArcAtom, ...]
    """The atoms of the chain, one per stage met, in stage order."""


def kill_arcs(
    arc: Arc,
    atoms: Iterable[ArcAtom],
    kills: Iterable[KillRef],
    meetings: Sequence[tuple[int, int]] = (),
) -> list[ArcChain]:
    """For each kill, the longest in-order chain of the arc's stages among the killer's
    own atoms tied to that kill.

    An atom is tied to a kill when it is the killer's, lies after the killer's previous
    kill and before its next one (and, when `meetings` are given, no later than the end
    of the first meeting after the kill: the arc's falsification is the next meeting's),
    and, for the victim-targeted atoms (`VICTIM_TARGETED`), names the victim or no one.
    Atoms of one step are taken in stage order (an E and an F of the kill's step both
    count).

    Args:
        arc: The arc.
        atoms: The game's accepted findings.
        kills: The game's kills.
        meetings: (first step, last step) of each meeting, in order.
    """
    order = {letter: i for i, st in enumerate(arc.stages) for letter in st}
    by_killer: dict[str, list[KillRef]] = {}
    for k in sorted(kills, key=lambda k: k.step):
        by_killer.setdefault(k.killer, []).append(k)
    pool = list(atoms)
    out = []
    for killer, ks in sorted(by_killer.items()):
        for i, k in enumerate(ks):
            lo = ks[i - 1].step if i else -1
            hi = ks[i + 1].step if i + 1 < len(ks) else None
            after = [last for first, last in meetings if last >= k.step]
            if after:
                hi = min(hi, after[0] + 1) if hi is not None else after[0] + 1
            mine = [
                a
                for a in pool
                if a.actor == killer
                and lo < a.step
                and (hi is None or a.step < hi)
                and not (a.atom in VICTIM_TARGETED and a.target and a.target != k.victim)
            ]
            mine.sort(key=lambda a: (a.step, order.get(a.atom, len(order))))
            chain = longest_chain(arc, [a.atom for a in mine])
            out.append(
                ArcChain(
                    arc=arc.name,
                    actor=killer,
                    victim=k.victim,
                    kill_step=k.step,
                    stages_met=len(chain),
                    stages=len(arc.stages),
                    realised=len(chain) >= arc.min_stages,
                    chain=tuple(mine[a_i] for _s, a_i in chain),
                )
            )
    return out
