"""Warm workers on the fake world: one process plays game after game; a game that
crashes, hangs or is refused stays that game's failure, and the worker is replaced.

The fake world is new for every game (only the embedded Minecraft world is kept), so
these tests are about the process: Python start-up paid once, the answers, the
per-game records, logs and resource figures, and the isolation of a failing game.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from controller.checks import log_violations
from controller.record import read_summary
from controller.tournament.executors import LocalExecutor
from controller.tournament.manifest import read_manifest
from controller.tournament.process import GameJob, ProcessReport
from controller.tournament.runner import Runner, RunOptions, classify, open_study
from controller.tournament.warm import WarmWorker

LONG = {
    "max_steps": 10_000,
    "kill_cooldown_ticks": 10**7,
    "initial_kill_cooldown_ticks": 10**7,
    "task_ticks": 10**7,
}
"""Rules under which a fake game goes on for minutes: nobody can kill or finish a task."""


def _data(seed: int, **rules: int) -> dict[str, object]:
    return {
        "preset": "quick",
        "seed": seed,
        "frames": "off",
        "rules": {"max_steps": 8, **rules},
    }


class _Collect:
    """The worker's `finished` callback: keeps every report, wakes the test."""

    def __init__(self) -> None:
        self.reports: dict[str, tuple[ProcessReport | None, str]] = {}
        self.processes: dict[str, list[tuple[int, float, str]]] = {}
        self.done = threading.Event()

    def finished(self, key: str, report: ProcessReport | None, error: str) -> None:
        self.reports[key] = (report, error)
        self.done.set()

    def seen(self, key: str, procs: list[tuple[int, float, str]]) -> None:
        self.processes[key] = procs

    def play(self, worker: WarmWorker, job: GameJob, folder: Path) -> ProcessReport:
        self.done.clear()
        worker.submit(job, folder)
        assert self.done.wait(120), f"{job.key} never finished"
        report, error = self.reports[job.key]
        assert report is not None, error
        return report


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture
def collect() -> _Collect:
    return _Collect()


def test_one_worker_plays_two_games_with_their_own_records(
    tmp_path: Path, collect: _Collect
) -> None:
    worker = WarmWorker("w", collect.finished, on_processes=collect.seen)
    try:
        first = collect.play(worker, GameJob("a/seed1", _data(1), "fake", 120), tmp_path / "a")
        second = collect.play(worker, GameJob("a/seed2", _data(2), "fake", 120), tmp_path / "b")
    finally:
        worker.close()
    assert first.returncode == 0 and second.returncode == 0
    # one process, started once: the second game paid no start-up
    assert first.worker == second.worker and worker.started == 1
    assert first.between_s is None and second.between_s is not None
    assert second.setup_s is not None and second.between_s >= second.setup_s
    for folder, seed in ((tmp_path / "a", 1), (tmp_path / "b", 2)):
        summary = read_summary(folder)
        assert summary is not None and summary.status == "ok" and summary.seed == seed
        assert log_violations(folder / "events.jsonl") == []
        # the game's output went to its own play.log, ending with play's outcome line
        last = (folder / "play.log").read_text().strip().splitlines()[-1]
        assert json.loads(last)["status"] == "ok"
        assert yaml.safe_load((folder / "game-config.yaml").read_text())["seed"] == seed
    assert "python" in " ".join(second.cpu_s) and second.peak_rss_mb > 10
    assert {p[0] for p in collect.processes["a/seed2"]} >= {second.worker}
    assert second.worker is not None and not _alive(second.worker)  # closed with the worker


def test_a_game_past_its_limit_is_killed_with_its_worker_and_the_next_gets_a_fresh_one(
    tmp_path: Path, collect: _Collect
) -> None:
    worker = WarmWorker("w", collect.finished)
    try:
        ok = collect.play(worker, GameJob("a/seed1", _data(1), "fake", 120), tmp_path / "a")
        slow = GameJob("a/seed2", _data(2, **LONG), "fake", timeout_s=1.0)
        hung = collect.play(worker, slow, tmp_path / "b")
        after = collect.play(worker, GameJob("a/seed3", _data(3), "fake", 120), tmp_path / "c")
    finally:
        worker.close()
    assert hung.timed_out and hung.worker == ok.worker
    assert hung.worker is not None and not _alive(hung.worker)
    assert classify(tmp_path / "b", hung, "") == (
        "failed",
        "no end within the game time limit (killed)",
        0.0,
    )
    # the next game: a new worker process, a clean game
    assert after.returncode == 0 and after.worker != hung.worker and worker.started == 2
    assert after.between_s is None  # a new worker's first game
    assert log_violations(tmp_path / "c" / "events.jsonl") == []


def test_a_crashed_worker_fails_its_game_only(tmp_path: Path, collect: _Collect) -> None:
    worker = WarmWorker("w", collect.finished, on_processes=collect.seen)
    killed: list[int] = []

    def kill_soon(key: str, procs: list[tuple[int, float, str]]) -> None:
        collect.seen(key, procs)
        if key == "a/seed2" and not killed:
            pid = procs[0][0]
            killed.append(pid)
            threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()

    worker.on_processes = kill_soon
    try:
        collect.play(worker, GameJob("a/seed1", _data(1), "fake", 120), tmp_path / "a")
        job = GameJob("a/seed2", _data(2, **LONG), "fake", 120)
        crashed = collect.play(worker, job, tmp_path / "b")
        after = collect.play(worker, GameJob("a/seed3", _data(3), "fake", 120), tmp_path / "c")
    finally:
        worker.close()
    assert crashed.returncode == -signal.SIGKILL and not crashed.timed_out
    outcome, reason, _ = classify(tmp_path / "b", crashed, "")
    assert outcome == "failed" and reason.startswith("exit code -9, no summary.json")
    assert after.returncode == 0 and after.worker not in killed


def test_a_refused_configuration_is_exit_code_2_and_the_worker_stays(
    tmp_path: Path, collect: _Collect
) -> None:
    worker = WarmWorker("w", collect.finished)
    try:
        bad = collect.play(
            worker, GameJob("a/seed1", {**_data(1), "seed": -3}, "fake", 120), tmp_path / "a"
        )
        good = collect.play(worker, GameJob("a/seed2", _data(2), "fake", 120), tmp_path / "b")
    finally:
        worker.close()
    assert bad.returncode == 2 and "seed" in (tmp_path / "a" / "play.log").read_text()
    assert classify(tmp_path / "a", bad, "")[0] == "paused"
    assert good.returncode == 0 and good.worker == bad.worker


def test_the_runner_plays_a_study_on_two_warm_workers(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "warm-smoke",
                "world": "fake",
                "seeds": [1, 2, 3],
                "base": {"frames": "off", "rules": {"max_steps": 8}},
                "sweep": {"axes": {"rules.kill_cooldown_ticks": [100, 160]}},
            }
        )
    )
    out = tmp_path / "study"
    loaded, arms, manifest, _ = open_study(spec, out, extend=False)
    executor = LocalExecutor(2, warm_worlds=frozenset({"fake"}))
    options = RunOptions(workers=2, retries=0, game_timeout_s=120)
    result = Runner(out, loaded, arms, manifest, executor, options).run()
    assert result.exit_code == 0, result.message
    m = read_manifest(out)
    assert m is not None and m.counts()["done"] == 6
    pids = {a.processes[0][0] for e in m.games.values() for a in e.attempts}
    assert len(pids) == 2, pids  # six games, two worker processes
    cpu = [a.cpu_s for e in m.games.values() for a in e.attempts]
    # the controller's process is named by the interpreter that runs it: python, python3, ...
    assert all(any(k.startswith("python") and v > 0 for k, v in c.items()) for c in cpu), cpu
    assert not [p for p in pids if _alive(p)]
    assert not executor.workers


def test_runner_warm_false_and_cold_workers_flag_choose_a_process_per_game(
    tmp_path: Path,
) -> None:
    """`runner.warm` (spec) and `--cold-workers` (flag) reach the local executor and the
    dry run's estimate; warm is the default."""
    import argparse
    import contextlib
    import io

    from controller.commands.tournament import _executor, dry_run
    from controller.tournament.spec import ExperimentSpec

    args = argparse.Namespace(backend="local", cold_workers=False)
    warm = _executor(args, 2, 1.0, 1.5, tmp_path)
    cold = _executor(args, 2, 1.0, 1.5, tmp_path, False)
    assert isinstance(warm, LocalExecutor) and isinstance(cold, LocalExecutor)
    assert warm.warm and not cold.warm
    spec: dict[str, Any] = {"name": "s", "seeds": [1, 2, 3, 4], "arms": [{"name": "a"}]}
    assert ExperimentSpec.model_validate(spec).runner.warm is True
    texts = {}
    for warm in (True, False):
        path = tmp_path / f"{warm}.yaml"
        path.write_text(json.dumps({**spec, "runner": {"workers": 1, "warm": warm}}))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert dry_run(path) == 0
        texts[warm] = buf.getvalue()
    assert texts[True] != texts[False]
    cold_flag = io.StringIO()
    with contextlib.redirect_stdout(cold_flag):
        assert dry_run(tmp_path / "True.yaml", cold=True) == 0
    assert cold_flag.getvalue() == texts[False]
