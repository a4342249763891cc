"""The manifest: every game of a study, its status and where its record is.

The manifest is the single source of a run's progress. It only points at records:
each game's own `summary.json` and `events.jsonl` stay the record. It is written
atomically (a temporary file, fsync, rename), so a crash at any moment leaves the
previous or the next version, never a torn one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.tournament.spec import Arm

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1

Status = Literal["pending", "running", "done", "invalid", "failed"]
Outcome = Literal["done", "invalid", "failed", "interrupted", "paused"]


class ManifestError(ValueError):
    """A manifest cannot be used as asked (a changed spec, a newer version)."""


class Attempt(BaseModel):
    """One start of a game."""

    model_config = ConfigDict(extra="ignore")

    run: str
    """The attempt's folder, relative to the study folder."""
    started: float
    """Wall-clock start (Unix seconds)."""
    ended: float | None = None
    """Wall-clock end, None while it runs."""
    outcome: Outcome | None = None
    """How it ended: `done`; `invalid` (the record says so); `failed` (no record, a
    crash or a hang); `interrupted` (the runner stopped; not counted as a retry);
    `paused` (exhausted quota or refused credentials; not counted as a retry)."""
    reason: str = ""
    """Why it was not `done`."""
    returncode: int | None = None
    """Exit code of the game process."""
    host: str = ""
    """Machine that ran it."""
    processes: list[tuple[int, float, str]] = Field(default_factory=list)
    """Every process seen in the game's tree: (pid, start time, name)."""
    peak_rss_mb: float | None = None
    """Peak resident memory of the game's process tree."""
    cpu_s: dict[str, float] = Field(default_factory=dict)
    """CPU seconds by process name (the game's tree)."""
    cost_usd: float = 0.0
    """Measured spend of the attempt (`summary.json` `cost_usd`)."""
    wall_s: float | None = None
    """Wall seconds of the game process."""
    violations: list[str] = Field(default_factory=list)
    """Rule breaches `controller.checks.log_violations` found in its log."""
    shipped: bool = False
    """Whether the game ran on a Ray node that could not see the study folder, so it
    played into a folder on that node whose archive was shipped back and unpacked here."""


class Entry(BaseModel):
    """One (arm, seed) game."""

    model_config = ConfigDict(extra="ignore")

    arm: str
    """Arm name."""
    seed: int
    """Seed."""
    status: Status = "pending"
    """`pending`, `running`, `done`, `invalid` or `failed` (the last two: retries used up)."""
    attempts: list[Attempt] = Field(default_factory=list)
    """Every start of this game, oldest first."""

    @property
    def key(self) -> str:
        """`arm/seedN`."""
        return game_key(self.arm, self.seed)

    @property
    def run(self) -> str | None:
        """Folder of the latest attempt."""
        return self.attempts[-1].run if self.attempts else None

    def counted_failures(self) -> int:
        """Attempts that used up a retry (invalid or failed)."""
        return sum(1 for a in self.attempts if a.outcome in ("invalid", "failed"))


class Manifest(BaseModel):
    """All games of one study folder."""

    model_config = ConfigDict(extra="ignore")

    version: int = MANIFEST_VERSION
    """Manifest format version."""
    name: str
    """Study name."""
    world: str
    """World of every game."""
    arms: dict[str, str]
    """Arm name -> digest of its configuration (a changed arm is refused)."""
    labels: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Arm name -> its design labels (`Arm.labels`; arms without any are left out). Not
    part of the digest: the spec's latest labels replace them whenever it is opened.
    Absent from manifests written before labels existed."""
    seeds: list[int]
    """Paired seeds."""
    games: dict[str, Entry] = Field(default_factory=dict)
    """`arm/seedN` -> entry."""
    paused: str | None = None
    """Why the last run paused (quota, credentials), None if it did not."""
    stopped: str | None = None
    """Why the last run stopped starting games (`--max-cost`), None if it did not."""
    updated: float = 0.0
    """Last write (Unix seconds)."""

    def entries(self) -> list[Entry]:
        """Entries in (arm order, seed order)."""
        order = {a: i for i, a in enumerate(self.arms)}
        return sorted(self.games.values(), key=lambda e: (order.get(e.arm, 1 << 30), e.seed))

    def counts(self) -> dict[str, int]:
        """Number of games per status."""
        out = dict.fromkeys(("pending", "running", "done", "invalid", "failed"), 0)
        for e in self.games.values():
            out[e.status] += 1
        return out

    def spent_usd(self) -> float:
        """Measured spend of every finished attempt."""
        return sum(a.cost_usd for e in self.games.values() for a in e.attempts)


def game_key(arm: str, seed: int) -> str:
    """The manifest key of a game."""
    return f"{arm}/seed{seed}"


def new_manifest(name: str, world: str, arms: list[Arm], seeds: list[int]) -> Manifest:
    """A manifest with every (arm, seed) pending."""
    m = Manifest(
        name=name,
        world=world,
        arms={a.name: a.digest() for a in arms},
        labels=arm_labels(arms),
        seeds=seeds,
    )
    for arm in arms:
        for seed in seeds:
            m.games[game_key(arm.name, seed)] = Entry(arm=arm.name, seed=seed)
    return m


def arm_labels(arms: list[Arm]) -> dict[str, dict[str, str]]:
    """Arm name -> design labels, for the arms that have any."""
    return {a.name: dict(a.labels) for a in arms if a.labels}


def reconcile(old: Manifest, arms: list[Arm], seeds: list[int], extend: bool) -> list[str]:
    """Check a spec against an existing manifest; with `extend`, add new arms and seeds.
    An accepted spec's design labels replace the manifest's (they are not configuration).

    Returns:
        What `extend` added, one line each (empty when nothing changed).

    Raises:
        ManifestError: the spec differs and `extend` is off, or an existing arm's
            configuration changed (never allowed: its finished games would not match).
    """
    new = {a.name: a.digest() for a in arms}
    changed = [n for n in old.arms if n in new and new[n] != old.arms[n]]
    if changed:
        raise ManifestError(
            f"the configuration of arm(s) {', '.join(changed)} changed since this study "
            "started; finished games would not match. Rename the changed arm(s) or use a "
            "new --out folder"
        )
    removed = [n for n in old.arms if n not in new]
    lost_seeds = [s for s in old.seeds if s not in seeds]
    added = [n for n in new if n not in old.arms]
    new_seeds = [s for s in seeds if s not in old.seeds]
    if removed or lost_seeds:
        raise ManifestError(
            "the spec drops "
            + ", ".join([f"arm {n}" for n in removed] + [f"seed {s}" for s in lost_seeds])
            + " of this study; finished games are kept, so put them back or use a new --out "
            "folder"
        )
    if not (added or new_seeds):
        old.labels = arm_labels(arms)
        return []
    if not extend:
        raise ManifestError(
            "the spec differs from this study's ("
            + ", ".join([f"new arm {n}" for n in added] + [f"new seed {s}" for s in new_seeds])
            + "); run with --extend to add them (finished games are kept)"
        )
    lines = []
    for n in added:
        old.arms[n] = new[n]
        lines.append(f"added arm {n}")
    old.seeds = old.seeds + new_seeds
    old.labels = arm_labels(arms)
    lines += [f"added seed {s}" for s in new_seeds]
    for arm in arms:
        for seed in old.seeds:
            key = game_key(arm.name, seed)
            if key not in old.games:
                old.games[key] = Entry(arm=arm.name, seed=seed)
    return lines


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Write the manifest atomically (temporary file, fsync, rename, fsync folder)."""
    manifest.updated = time.time()
    path = folder / MANIFEST
    tmp = folder / f".{MANIFEST}.{os.getpid()}.tmp"
    data = manifest.model_dump_json(indent=1)
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest of a study folder, or None when there is none.

    Raises:
        ManifestError: the manifest is from a newer version of this tool.
    """
    path = folder / MANIFEST
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if int(data.get("version", 0)) > MANIFEST_VERSION:
        raise ManifestError(
            f"{path}: manifest version {data['version']} is newer than this tool's "
            f"({MANIFEST_VERSION}); update mineamongus"
        )
    return Manifest.model_validate(data)
