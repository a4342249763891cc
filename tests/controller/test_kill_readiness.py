"""Kill readiness is logged by the engine and read back, never replayed by a reader."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from annotation.grounding import metrics
from annotation.grounding.trajectory import load_trajectory
from controller.cli import play_game
from controller.config import resolve_config
from controller.engine import Engine
from controller.events import GameStart, KillReady, read_events
from controller.readiness import derive_kill_readiness, kill_readiness
from controller.timeline import GameIndex
from world.spec import load_map

GAMES = (("quick", 3), ("quick", 8), ("paper", 5))
"""Games with kills and meetings (quick 3: 4 kills, 2 meetings; paper 5: 2 kills, 1)."""


Played = dict[tuple[str, int], tuple[Path, list[tuple[int, dict[str, int]]]]]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    """Each game once, with the engine's readiness at the start of every free-roam step."""
    out: Played = {}
    begin = Engine.begin_step
    for preset, seed in GAMES:
        seen: list[tuple[int, dict[str, int]]] = []

        def spy(self: Engine, seen: list[tuple[int, dict[str, int]]] = seen) -> None:
            if self.phase == "free_roam":
                seen.append((self.tick, self.kill_ready_ticks()))
            begin(self)

        config = resolve_config(preset, overrides={"seed": seed, "frames": "off"})
        folder = tmp_path_factory.mktemp(f"{preset}-{seed}")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Engine, "begin_step", spy)
            play_game(config, load_map(config.map), "fake", folder)
        out[(preset, seed)] = (folder, seen)
    return out


def _copy(played: Played, key: tuple[str, int], tmp_path: Path) -> Path:
    """A copy of a played game's log, free to edit."""
    folder = tmp_path / "run"
    shutil.copytree(played[key][0], folder)
    return folder


def _ready_at(events: list[KillReady], tick: int) -> dict[str, int]:
    """Each impostor's readiness as the log says it stands at `tick`."""
    now: dict[str, int] = {}
    for e in events:
        if e.tick > tick:
            break
        now.update(e.ready)
    return now


@pytest.mark.parametrize(("preset", "seed"), GAMES)
def test_the_logged_readiness_is_the_engines_at_every_step(
    played: Played, preset: str, seed: int
) -> None:
    folder, seen = played[(preset, seed)]
    events = read_events(folder / "events.jsonl")
    logged = [e for e in events if isinstance(e, KillReady)]
    causes = {e.cause for e in logged}
    assert {"start", "kill"} <= causes, causes
    assert seen
    for tick, engine_ready in seen:
        assert {a: t for a, t in _ready_at(logged, tick).items() if a in engine_ready} == (
            engine_ready
        ), f"tick {tick}"


@pytest.mark.parametrize(("preset", "seed"), GAMES)
def test_what_the_analyses_read_is_the_engines_at_every_step(
    played: Played, preset: str, seed: int
) -> None:
    """The readiness the audit reads (`Trajectory.kill_ready`, from the one index) and the
    index's own answer are the engine's state at the start of every free-roam step."""
    folder, seen = played[(preset, seed)]
    traj = load_trajectory(folder)
    index = GameIndex.of(read_events(folder / "events.jsonl"))
    assert seen
    for tick, engine_ready in seen:
        from_traj: dict[str, int] = {}
        for t, agent, ready in traj.kill_ready:
            if t <= tick:
                from_traj[agent] = ready
        assert {a: r for a, r in from_traj.items() if a in engine_ready} == engine_ready
        at = index.kill_ready_at(tick)
        assert {a: r for a, r in at.items() if a in engine_ready} == engine_ready


@pytest.mark.parametrize(("preset", "seed"), GAMES)
def test_a_log_without_the_events_is_upgraded_to_the_same_ones(
    played: Played, tmp_path: Path, preset: str, seed: int
) -> None:
    out = _copy(played, (preset, seed), tmp_path)
    events = read_events(out / "events.jsonl")
    logged = [(e.tick, e.ready, e.cause) for e in events if isinstance(e, KillReady)]
    assert [(e.tick, e.ready, e.cause) for e in derive_kill_readiness(events)] == logged
    older = [e for e in events if not isinstance(e, KillReady)]
    assert [(e.tick, e.ready, e.cause) for e in kill_readiness(older)] == logged

    # The audit's kill windows read the same from the written log and from the older one.
    traj = load_trajectory(out)
    lines = (out / "events.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [ln for ln in lines if json.loads(ln).get("kind") != "kill_ready"]
    (out / "events.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    old = load_trajectory(out)
    impostors = [a for a, r in traj.roles.items() if r == "impostor"]
    assert old.kill_ready == traj.kill_ready
    assert [metrics._kill_opportunities(old, a) for a in impostors] == [
        metrics._kill_opportunities(traj, a) for a in impostors
    ]


def test_a_reader_follows_the_log_not_the_rules(played: Played) -> None:
    """Plant a log whose rules disagree with what the engine logged: the reader keeps
    the logged readiness, and the upgrader (rules only) is seen to differ."""
    events = read_events(played[("quick", 3)][0] / "events.jsonl")
    start = next(e for e in events if isinstance(e, GameStart))
    config: dict[str, Any] = json.loads(json.dumps(start.config))
    config["rules"]["kill_cooldown_ticks"] += 100
    planted = [e.model_copy(update={"config": config}) if e is start else e for e in events]
    logged = [(e.tick, e.ready) for e in planted if isinstance(e, KillReady)]
    assert [(e.tick, e.ready) for e in kill_readiness(planted)] == logged
    assert [(e.tick, e.ready) for e in derive_kill_readiness(planted)] != logged
