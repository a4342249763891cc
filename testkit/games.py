"""Whole fake-world games played once per test run and shared by every test that reads
them.

A game of the in-process fake world is fixed by its configuration: the same preset and
overrides give the same rule events (`controller.checks.determinism_check`).
`GameStore` plays each configuration asked of it once, into a folder named after the
configuration, and hands the same folder to every later request. Several processes may
share one store (the parallel test workers): a per-game lock (`flock`) keeps two of them
from playing the same game at once, and a game is played into a private folder and
renamed into place, so a reader never sees half a record.

The folders are shared: a test reads them and writes nothing into them (one that must
write copies the folder first, `copy_to`).

Whole studies are kept the same way (`GameStore.study`): a tournament spec is played
once per test run with `mineamongus tournament` (its fake-world games on warm workers),
and every test module that asks for the same spec reads (or
copies) the same folder. So is what a module fixture makes of them (an annotated and
analysed copy, `GameStore.built`), where the parallel workers would each make it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from controller.commands.play import play_game
from controller.config import resolve_config
from controller.events import Event, read_events
from world.spec import load_map

OFFLINE_ARIA: dict[str, Any] = {
    "frames": "off",
    "crew": {"backend": "fake"},
    "impostor": {"backend": "fake"},
}
"""Overrides that seat ARIA on the offline fake backend on both sides, frames off: the
offline games several harness tests read (`store.game(seed=s, **OFFLINE_ARIA)`)."""


MOCK_API = "<mock-openai-base-url>"
"""Stands in a study spec (`GameStore.study`) for the base URL of the local mock OpenAI
endpoint the store serves while it plays the study; its models answer as the offline
fake backend does (`harness_aria.fake_answers.answer_http`), through the real SDK."""
STUDY_DONE = "played.json"
"""Beside a stored study (`<folder>/study`): written once the tournament ended `ok`, with
what the store saw while playing it (`mock_api_requests`)."""
ROOT = Path(__file__).resolve().parent.parent

FAKE_SMOKE: dict[str, Any] = {
    "name": "fake-smoke",
    "world": "fake",
    "seeds": [1, 2],
    "base": {"frames": "off", "rules": {"max_steps": 30}},
    "sweep": {"axes": {"rules.kill_cooldown_ticks": [100, 160]}},
}
"""A small fake-world sweep (2 kill cooldowns x 2 seeds, 30 steps): the study the
tournament runner's tests kill and resume, and the local run the Ray test compares
with."""

MOCK_ROUND_ROBIN: dict[str, Any] = {
    "name": "mock-round-robin",
    "world": "fake",
    "seeds": [3, 4],
    "control": True,
    "base": {"frames": "off", "rules": {"max_steps": 12, "tasks_per_crewmate": 2}},
    "round_robin": {
        "models": [
            {"backend": f"openai-compatible:mock-{m}", "label": m, "side": {"base_url": MOCK_API}}
            for m in ("a", "b", "c")
        ]
    },
    "arms": [
        {
            "name": "ruler-i=a",
            "overrides": {
                "impostor": {"backend": "openai-compatible:mock-a", "base_url": MOCK_API},
                "crew": {"backend": "scripted"},
            },
        }
    ],
}
"""The run's one RQ2-shaped study through the real SDK over HTTP (`GameStore.study`): 3
models served by the local mock OpenAI endpoint in a round robin (9 arms), an arm of one
model as impostor against the scripted crew, and a scripted control arm; 2 seeds, 12
steps: 22 games. The ratings and the paper-results tests read it."""


def _replace(value: Any, old: str, new: str) -> Any:
    """`value` (plain data) with every string equal to `old` replaced by `new`."""
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    return new if value == old else value


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive lock on the file `path` (created if need be) across processes."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class GameStore:
    """Fake-world games under `root`, one folder per configuration, each played once.

    Args:
        root: The folder holding the games (created on first use). Every process
            handed the same root shares its games.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.played: list[Path] = []
        """The games this process played itself (not found ready in the store)."""

    def folder(self, preset: str = "quick", **overrides: Any) -> Path:
        """Where the game of this configuration lives (played or not)."""
        key = json.dumps({"preset": preset, "overrides": overrides}, sort_keys=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        seed = overrides.get("seed", "default")
        return self.root / f"{preset}-seed{seed}-{digest}"

    def game(self, preset: str = "quick", **overrides: Any) -> Path:
        """The folder of the fake-world game of `preset` with `overrides` (as
        `resolve_config` takes them), played now unless the store already holds it.

        Raises:
            AssertionError: the game did not end `ok`.
        """
        out = self.folder(preset, **overrides)
        if (out / "summary.json").is_file():
            return out
        self.root.mkdir(parents=True, exist_ok=True)
        with _lock(out.with_name(out.name + ".lock")):
            if (out / "summary.json").is_file():
                return out
            config = resolve_config(preset, overrides=overrides)
            private = out.with_name(f"{out.name}.{os.getpid()}.partial")
            shutil.rmtree(private, ignore_errors=True)
            result = play_game(config, load_map(config.map), "fake", private)
            assert result.status == "ok", (out.name, result.reason)
            private.rename(out)
            self.played.append(out)
        return out

    def study(self, spec: dict[str, Any]) -> Path:
        """The folder of the study `spec` (a tournament spec, as its YAML file holds it)
        played with `mineamongus tournament --workers 2` (on warm workers), played now
        unless the store already holds it.
        Where the spec holds `MOCK_API`, the local mock OpenAI endpoint serves the
        study's models while it plays.

        Returns:
            The study's folder (its `played.json` beside it, in the parent folder).

        Raises:
            AssertionError: the tournament did not exit 0.
        """
        key = json.dumps(spec, sort_keys=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        home = self.root / f"study-{spec.get('name', 'study')}-{digest}"
        if (home / STUDY_DONE).is_file():
            return home / "study"
        self.root.mkdir(parents=True, exist_ok=True)
        with _lock(home.with_name(home.name + ".lock")):
            if (home / STUDY_DONE).is_file():
                return home / "study"
            shutil.rmtree(home, ignore_errors=True)  # a run that died half-way
            home.mkdir(parents=True)
            requests = self._play_study(spec, home)
            (home / STUDY_DONE).write_text(json.dumps({"mock_api_requests": requests}))
            self.played.append(home / "study")
        return home / "study"

    def study_facts(self, spec: dict[str, Any]) -> dict[str, Any]:
        """What the store saw while playing the study `spec` (its `played.json`)."""
        data: dict[str, Any] = json.loads((self.study(spec).parent / STUDY_DONE).read_text())
        return data

    def copy_study_to(self, dest: Path, spec: dict[str, Any]) -> Path:
        """A private copy of a study's folder at `dest`, for a test that writes into it
        (`rank`, `annotate` and `collect` write into the study they read)."""
        shutil.copytree(self.study(spec), dest)
        return dest

    @staticmethod
    def _play_study(spec: dict[str, Any], home: Path) -> int:
        """Play `spec` into `home/study`; how many requests the mock endpoint answered."""
        uses_api = MOCK_API in json.dumps(spec)
        with contextlib.ExitStack() as stack:
            env = dict(os.environ)
            api = None
            if uses_api:
                from harness_aria.fake_answers import answer_http
                from testkit.mock_api import MockAPIServer

                api = stack.enter_context(MockAPIServer(lambda rec: answer_http(rec.body)))
                spec = _replace(spec, MOCK_API, api.openai_base_url)
                env["OPENAI_COMPATIBLE_API_KEY"] = "sk-mock"
            path = home / "spec.yaml"
            path.write_text(yaml.safe_dump(spec))
            done = subprocess.run(
                [sys.executable, "-m", "controller.cli", "tournament", str(path)]
                + ["--out", str(home / "study"), "--workers", "2", "--plain"],
                cwd=ROOT,
                capture_output=True,
                timeout=1800,
                env=env,
            )
            assert done.returncode == 0, done.stderr.decode()[-3000:]
            return len(api.requests) if api is not None else 0

    def built(self, name: str, build: Callable[[Path], None]) -> Path:
        """A folder made once per test run by `build(folder)` and shared by every process
        of the run (a module fixture's product, which the parallel workers would each make
        again): built into a private folder and renamed into place, so a reader never
        sees half of it. `name` names what `build` makes; a caller that builds something
        else names it differently. Readers write nothing into it.

        Returns:
            The folder.
        """
        out = self.root / f"built-{name}"
        if out.is_dir():
            return out
        self.root.mkdir(parents=True, exist_ok=True)
        with _lock(out.with_name(out.name + ".lock")):
            if out.is_dir():
                return out
            private = out.with_name(f"{out.name}.{os.getpid()}.partial")
            shutil.rmtree(private, ignore_errors=True)
            private.mkdir()
            build(private)
            private.rename(out)
            self.played.append(out)
        return out

    def events(self, preset: str = "quick", **overrides: Any) -> list[Event]:
        """The events of the game `game` returns."""
        return read_events(self.game(preset, **overrides) / "events.jsonl")

    def copy_to(self, dest: Path, preset: str = "quick", **overrides: Any) -> Path:
        """A private copy of a game's folder at `dest`, for a test that writes into it."""
        shutil.copytree(self.game(preset, **overrides), dest)
        return dest


def first_seed(
    store: GameStore,
    holds: Callable[[list[Event]], bool],
    seeds: Iterable[int],
    preset: str = "quick",
    **overrides: Any,
) -> int | None:
    """The first seed whose game holds what `holds` asks, or None: for finding a seed to
    pin when a pinned one no longer plays the scene a test needs."""
    for seed in seeds:
        if holds(store.events(preset, **{**overrides, "seed": seed})):
            return seed
    return None
