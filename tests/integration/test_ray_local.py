"""The same fake-world games on a local Ray instance as on local game processes.

It starts a Ray instance (a raylet, a GCS and worker processes: some 18 s of the fast
lane, most of it Ray's start-up), so it runs in the integration lane; the fake-world
study beside it is played with `mineamongus tournament` on local processes
(`testkit.games.GameStore.study`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controller.checks import rule_events
from controller.events import read_events
from controller.tournament.manifest import read_manifest
from testkit.games import FAKE_SMOKE, GameStore

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def study(fake_games: GameStore) -> Path:
    """The fake-world study played on local game processes (the run's store plays it
    with `mineamongus tournament --workers 2`)."""
    return fake_games.study(FAKE_SMOKE)


def test_ray_tasks_play_the_same_games_as_local_runs(study: Path, tmp_path: Path) -> None:
    from controller.tournament.process import GameJob
    from controller.tournament.ray_backend import RayExecutor, play_task, unpack
    from controller.tournament.runner import Runner, RunOptions, open_study

    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(FAKE_SMOKE))
    out = tmp_path / "ray-study"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        spec, arms, manifest, _ = open_study(spec_path, out, extend=False)
        ex = RayExecutor(out, address=None, slots=None, cpus_per_game=1, memory_gb=0.2)
        assert ex.slots == 2
        result = Runner(
            out, spec, arms, manifest, ex, RunOptions(workers=2, retries=0, game_timeout_s=300)
        ).run()
        assert result.exit_code == 0, result.message
        # Not on a shared filesystem: the task plays on the node and ships the record back.
        job = GameJob(key="x", data=arms[0].game_data(1), world="fake", timeout_s=300)
        shipped = ray.get(
            ray.remote(num_cpus=1)(play_task).remote(job, "/nonexistent", "/nonexistent", "t")
        )
    finally:
        ray.shutdown()
    assert shipped.archive is not None
    unpack(shipped.archive, tmp_path / "shipped")
    local = read_manifest(study)
    remote = read_manifest(out)
    assert local is not None and remote is not None
    for key, e in remote.games.items():
        here = rule_events(read_events(study / local.games[key].attempts[-1].run / "events.jsonl"))
        there = rule_events(read_events(out / e.attempts[-1].run / "events.jsonl"))
        assert there == here, key
    first = local.games[f"{arms[0].name}/seed1"].attempts[-1].run
    assert rule_events(read_events(tmp_path / "shipped" / "events.jsonl")) == rule_events(
        read_events(study / first / "events.jsonl")
    )
