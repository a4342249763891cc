"""The deception codebook as data: atoms, clusters, phases and arcs from `atoms.yaml`.

The judge prompt, the detectors, the statistics, the report and `docs/annotation.md`
all read this one file, so a definition changes in one place.
"""

from __future__ import annotations

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


def arc_stages_met(arc: Arc, atoms_in_order: list[str]) -> int:
    """How many of an arc's stages a team's atom sequence meets, in order (greedy).

    Args:
        arc: The arc.
        atoms_in_order: The team's atom letters sorted by step.

    Returns:
        The number of stages met in order (stages may be skipped; order may not be broken).
    """
    met = 0
    pos = 0
    for stage in arc.stages:
        wanted = set(stage)
        for i in range(pos, len(atoms_in_order)):
            if atoms_in_order[i] in wanted:
                met += 1
                pos = i + 1
                break
    return met
