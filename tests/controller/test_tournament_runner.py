"""The runner's bookkeeping: manifest, resume, retries, pauses, cost limit, status.

Games here are played by a scripted executor that writes records copied from one
real fake-world game, with the outcome each test plants.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.cli import play_game
from controller.config import resolve_config
from controller.tournament.executors import Message
from controller.tournament.manifest import (
    Attempt,
    ManifestError,
    read_manifest,
    write_manifest,
)
from controller.tournament.process import GameJob, ProcessReport, read_summary
from controller.tournament.runner import (
    EXIT_DONE,
    EXIT_INCOMPLETE,
    EXIT_PAUSED,
    Runner,
    RunOptions,
    open_study,
)
from controller.tournament.stats import arm_status, format_status, wilson
from world.spec import load_map

Plan = Callable[[GameJob, int], dict[str, Any] | None]


@pytest.fixture(scope="module")
def fake_record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished scripted game on the fake world (events.jsonl + summary.json)."""
    out = tmp_path_factory.mktemp("record")
    config = resolve_config("quick", overrides={"seed": 1, "frames": "off"})
    result = play_game(config, load_map(config.map), "fake", out)
    assert result.status == "ok"
    return out


class ScriptedExecutor:
    """Plays nothing: writes a copy of a real record, with the summary a plan dictates.

    The plan gets the job and its attempt number and returns summary overrides, or
    None for a crashed game (no summary at all).
    """

    def __init__(self, record: Path, plan: Plan, slots: int = 1) -> None:
        self.record, self.plan, self.slots = record, plan, slots
        self.pending: list[tuple[GameJob, Path]] = []
        self.started: list[str] = []

    def submit(self, job: GameJob, folder: Path) -> None:
        self.started.append(job.key)
        self.pending.append((job, folder))

    def messages(self, timeout_s: float) -> list[Message]:
        out = []
        for job, folder in self.pending:
            attempt = int(folder.name.rsplit("try", 1)[1])
            over = self.plan(job, attempt)
            folder.mkdir(parents=True)
            shutil.copy(self.record / "events.jsonl", folder / "events.jsonl")
            if over is not None:
                summary = json.loads((self.record / "summary.json").read_text())
                summary.update(seed=job.data["seed"], **over)
                (folder / "summary.json").write_text(json.dumps(summary))
            refused = over is not None and over.get("refused", False)
            if refused:
                (folder / "summary.json").unlink()
                (folder / "play.log").write_text("mineamongus: OPENAI_API_KEY is not set\n")
            report = ProcessReport(
                returncode=2 if refused else 0 if over and over.get("status", "ok") == "ok" else 1,
                timed_out=False,
                wall_s=1.0,
                host="here",
                peak_rss_mb=100.0,
            )
            out.append(Message("finished", job.key, report=report))
        self.pending = []
        return out

    def running(self) -> int:
        return len(self.pending)

    def stop_all(self) -> None:
        pass

    def close(self) -> None:
        pass


def _write_spec(path: Path, seeds: list[int], arms: tuple[str, ...] = ("a", "b")) -> Path:
    spec = {
        "name": "t",
        "world": "fake",
        "seeds": seeds,
        "base": {"frames": "off"},
        "arms": [
            {"name": n, "overrides": {"rules": {"kill_cooldown_ticks": 100 + i}}}
            for i, n in enumerate(arms)
        ],
    }
    path.write_text(yaml.safe_dump(spec))
    return path


def _run(
    tmp_path: Path,
    record: Path,
    plan: Plan,
    seeds: list[int] | None = None,
    retries: int = 1,
    max_cost: float | None = None,
    extend: bool = False,
) -> tuple[int, Runner, ScriptedExecutor, list[str]]:
    spec_path = _write_spec(tmp_path / "spec.yaml", seeds or [1, 2])
    out = tmp_path / "study"
    spec, arms, manifest, _notes = open_study(spec_path, out, extend)
    ex = ScriptedExecutor(record, plan)
    notes: list[str] = []
    runner = Runner(
        out,
        spec,
        arms,
        manifest,
        ex,
        RunOptions(workers=1, retries=retries, game_timeout_s=60, max_cost_usd=max_cost),
        notify=notes.append,
    )
    result = runner.run()
    return result.exit_code, runner, ex, notes


def test_all_games_done_once_and_a_second_run_redoes_nothing(
    tmp_path: Path, fake_record: Path
) -> None:
    code, runner, ex, _ = _run(tmp_path, fake_record, lambda j, k: {})
    assert code == EXIT_DONE
    assert sorted(ex.started) == ["a/seed1", "a/seed2", "b/seed1", "b/seed2"]
    m = read_manifest(tmp_path / "study")
    assert m is not None and m.counts()["done"] == 4
    for e in m.games.values():
        assert e.run == f"games/{e.arm}/seed{e.seed}-try1"
        assert e.attempts[0].violations == []
    code, _runner, ex2, _ = _run(tmp_path, fake_record, lambda j, k: {})
    assert code == EXIT_DONE and ex2.started == []


def test_invalid_games_are_retried_with_the_same_seed_and_reported_apart(
    tmp_path: Path, fake_record: Path
) -> None:
    def plan(job: GameJob, attempt: int) -> dict[str, Any] | None:
        if job.key == "a/seed1" and attempt == 1:
            return {"status": "invalid", "reason": "world fault: bot disconnected"}
        if job.key == "b/seed2":
            return None  # crashes every time
        return {}

    code, _runner, ex, notes = _run(tmp_path, fake_record, plan, retries=1)
    assert code == EXIT_INCOMPLETE
    m = read_manifest(tmp_path / "study")
    assert m is not None
    a1 = m.games["a/seed1"]
    assert a1.status == "done"
    assert [a.outcome for a in a1.attempts] == ["invalid", "done"]
    assert "disconnected" in a1.attempts[0].reason
    assert ex.started.count("a/seed1") == 2
    b2 = m.games["b/seed2"]
    assert b2.status == "failed" and len(b2.attempts) == 2
    assert "no summary.json" in b2.attempts[-1].reason
    assert any("retrying with the same seed" in n for n in notes)
    assert any("no retries left" in n for n in notes)


def test_exhausted_quota_pauses_the_run_and_the_same_command_resumes(
    tmp_path: Path, fake_record: Path
) -> None:
    quota = {"on": True}

    def plan(job: GameJob, attempt: int) -> dict[str, Any] | None:
        if job.key == "a/seed2" and quota["on"]:
            return {
                "status": "invalid",
                "resumable": True,
                "reason": "infrastructure: quota: insufficient_quota (the game can be rerun)",
            }
        return {}

    code, _runner, ex, notes = _run(tmp_path, fake_record, plan)
    assert code == EXIT_PAUSED
    assert ex.started == ["a/seed1", "a/seed2"], "kept burning games after the quota ran out"
    m = read_manifest(tmp_path / "study")
    assert m is not None and m.paused and "quota" in m.paused
    assert m.games["a/seed2"].status == "pending"
    assert m.games["a/seed2"].counted_failures() == 0
    quota["on"] = False
    code, _runner, ex2, _ = _run(tmp_path, fake_record, plan)
    assert code == EXIT_DONE
    assert sorted(ex2.started) == ["a/seed2", "b/seed1", "b/seed2"]
    m = read_manifest(tmp_path / "study")
    assert m is not None and m.paused is None


def test_refused_credentials_pause_instead_of_failing_every_game(
    tmp_path: Path, fake_record: Path
) -> None:
    code, _runner, ex, _notes = _run(tmp_path, fake_record, lambda j, k: {"refused": True})
    assert code == EXIT_PAUSED
    assert ex.started == ["a/seed1"]
    m = read_manifest(tmp_path / "study")
    assert m is not None and m.paused and "OPENAI_API_KEY" in m.paused
    assert m.games["a/seed1"].status == "pending"


def test_max_cost_stops_new_games_before_measured_spend_passes_it(
    tmp_path: Path, fake_record: Path
) -> None:
    code, _runner, ex, notes = _run(
        tmp_path, fake_record, lambda j, k: {"cost_usd": 1.0}, max_cost=2.5
    )
    assert code == EXIT_PAUSED
    assert len(ex.started) == 2
    m = read_manifest(tmp_path / "study")
    assert m is not None
    assert m.spent_usd() == pytest.approx(2.0)
    assert m.stopped and "--max-cost $2.50" in m.stopped
    assert any("no new games started" in n for n in notes)


def test_a_changed_spec_is_refused_unless_extend(tmp_path: Path, fake_record: Path) -> None:
    _run(tmp_path, fake_record, lambda j, k: {}, seeds=[1])
    with pytest.raises(ManifestError, match="--extend"):
        _run(tmp_path, fake_record, lambda j, k: {}, seeds=[1, 2])
    code, _runner, ex, _ = _run(tmp_path, fake_record, lambda j, k: {}, seeds=[1, 2], extend=True)
    assert code == EXIT_DONE and sorted(ex.started) == ["a/seed2", "b/seed2"]
    with pytest.raises(ManifestError, match="drops"):
        _run(tmp_path, fake_record, lambda j, k: {}, seeds=[2], extend=True)
    # A changed arm configuration is refused even with --extend.
    spec_path = _write_spec(tmp_path / "spec.yaml", [1, 2])
    data = yaml.safe_load(spec_path.read_text())
    data["arms"][0]["overrides"]["rules"]["kill_cooldown_ticks"] = 999
    spec_path.write_text(yaml.safe_dump(data))
    with pytest.raises(ManifestError, match="arm.*a changed"):
        open_study(spec_path, tmp_path / "study", extend=True)


def test_the_manifest_is_written_atomically(tmp_path: Path, fake_record: Path) -> None:
    _run(tmp_path, fake_record, lambda j, k: {}, seeds=[1])
    out = tmp_path / "study"
    m = read_manifest(out)
    assert m is not None
    before = (out / "manifest.json").read_text()
    real_replace = os.replace

    def crash(*_a: Any) -> None:
        raise OSError("disk gone")

    os.replace = crash  # type: ignore[assignment]
    try:
        m.games["a/seed1"].status = "failed"
        with pytest.raises(OSError):
            write_manifest(out, m)
    finally:
        os.replace = real_replace
    assert (out / "manifest.json").read_text() == before
    assert read_manifest(out) is not None


def test_resume_ends_leftover_processes_and_restarts_in_a_fresh_folder(
    tmp_path: Path, fake_record: Path
) -> None:
    spec_path = _write_spec(tmp_path / "spec.yaml", [1])
    out = tmp_path / "study"
    _spec, _arms, m, _ = open_study(spec_path, out, extend=False)
    # A dead runner left a/seed1 running with a live process, and b/seed1 running
    # although its game had finished and written a complete record.
    leftover = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    import psutil

    ctime = psutil.Process(leftover.pid).create_time()
    for key, run in (("a/seed1", "games/a/seed1-try1"), ("b/seed1", "games/b/seed1-try1")):
        e = m.games[key]
        e.status = "running"
        from controller.tournament.manifest import Attempt

        e.attempts.append(Attempt(run=run, started=time.time()))
        (out / run).mkdir(parents=True)
    m.games["a/seed1"].attempts[0].processes = [(leftover.pid, ctime, "python")]
    shutil.copy(fake_record / "summary.json", out / "games/b/seed1-try1/summary.json")
    shutil.copy(fake_record / "events.jsonl", out / "games/b/seed1-try1/events.jsonl")
    write_manifest(out, m)
    code, _runner, ex, notes = _run(tmp_path, fake_record, lambda j, k: {}, seeds=[1])
    assert code == EXIT_DONE
    assert leftover.wait(timeout=15) is not None, "the leftover process survived the resume"
    assert ex.started == ["a/seed1"], "a finished record was redone"
    m2 = read_manifest(out)
    assert m2 is not None
    a = m2.games["a/seed1"]
    assert [x.outcome for x in a.attempts] == ["interrupted", "done"]
    assert a.run == "games/a/seed1-try2"
    assert m2.games["b/seed1"].attempts[0].outcome == "done"
    assert any("leftover" in n for n in notes)


def test_wilson_interval_matches_known_values() -> None:
    half = wilson(1, 2)
    assert half.rate == 0.5
    assert half.low == pytest.approx(0.0945, abs=1e-3)
    assert half.high == pytest.approx(0.9055, abs=1e-3)
    zero = wilson(0, 10)
    assert zero.low == 0.0 and zero.high == pytest.approx(0.2775, abs=1e-3)
    assert wilson(0, 0).rate is None


def test_status_counts_impostor_wins_from_the_records(tmp_path: Path, fake_record: Path) -> None:
    def plan(job: GameJob, attempt: int) -> dict[str, Any]:
        return {"winner": "impostors" if job.key.startswith("a/") else "crew"}

    _run(tmp_path, fake_record, plan, seeds=[1, 2, 3])
    out = tmp_path / "study"
    m = read_manifest(out)
    assert m is not None
    rows = {r.arm: r for r in arm_status(out, m)}
    assert rows["a"].impostor_wins == 3 and rows["a"].win.rate == 1.0
    assert rows["b"].impostor_wins == 0 and rows["b"].done == 3
    # The summary is the record: editing one changes the status, the manifest does not.
    s = out / m.games["b/seed1"].attempts[-1].run / "summary.json"
    data = read_summary(s.parent)
    assert data is not None
    data["winner"] = "impostors"
    s.write_text(json.dumps(data))
    assert {r.arm: r for r in arm_status(out, m)}["b"].impostor_wins == 1
    table = format_status(arm_status(out, m))
    assert "95% Wilson" in table and "100.0%" in table


def test_progress_is_a_live_table_or_plain_lines(tmp_path: Path, fake_record: Path) -> None:
    import io

    from controller.tournament.display import Progress

    _run(tmp_path, fake_record, lambda j, k: {"cost_usd": 0.25}, seeds=[1])
    m = read_manifest(tmp_path / "study")
    assert m is not None
    plain = io.StringIO()
    with Progress(2, stream=plain, live=False) as p:
        p.update(m, 0)
        p.note("a/seed1: invalid (x); retrying with the same seed")
    text = plain.getvalue()
    assert "2/2 done, 0 running" in text and "spent $0.50" in text and "ETA 0s" in text
    assert "retrying" in text
    live = io.StringIO()
    with Progress(2, stream=live, live=True) as p:
        p.update(m, 0)
    drawn = live.getvalue()
    assert "t: 2/2 done" in drawn
    assert "a" in drawn and "1/1" in drawn


def test_a_finished_run_writes_its_tables_and_an_extension_never_leaves_stale_ones(
    tmp_path: Path, fake_record: Path
) -> None:
    import pandas as pd

    out = tmp_path / "study"
    games = out / "results" / "games.parquet"
    code, runner, _ex, _ = _run(tmp_path, fake_record, lambda j, k: {})
    assert code == EXIT_DONE and games.is_file() and (out / "results" / "seats.parquet").is_file()
    table = pd.read_parquet(games)
    assert sorted(zip(table.arm, table.seed, strict=True)) == [
        ("a", 1),
        ("a", 2),
        ("b", 1),
        ("b", 2),
    ]
    # --extend with a new arm: the old tables go at once, before any game is played.
    spec_path = _write_spec(tmp_path / "spec.yaml", [1, 2], arms=("a", "b", "c"))
    spec, arms, manifest, notes = open_study(spec_path, out, extend=True)
    assert not games.exists()
    assert any("removed" in n and "games.parquet" in n for n in notes)
    result = Runner(
        out,
        spec,
        arms,
        manifest,
        ScriptedExecutor(fake_record, lambda j, k: {}),
        RunOptions(workers=1, retries=0, game_timeout_s=60, extend=True),
    ).run()
    assert result.exit_code == EXIT_DONE and result.tables is not None
    table = pd.read_parquet(games)
    assert result.tables.n_games == len(table) == 6
    assert set(table[table.counted].arm) == {"a", "b", "c"}
    # A table left by anything else is gone as soon as a run starts.
    pd.DataFrame({"arm": ["stale"]}).to_parquet(games)
    seen: list[bool] = []
    Runner(
        out,
        spec,
        arms,
        read_manifest(out),  # type: ignore[arg-type]
        ScriptedExecutor(fake_record, lambda j, k: {}),
        RunOptions(workers=1, retries=0, game_timeout_s=60),
        on_change=lambda _m, _r: seen.append(games.exists()),
    ).run()
    assert seen and not seen[0]
    assert "stale" not in set(pd.read_parquet(games).arm)


def test_eta_counts_down_from_the_start_and_running_games_show_their_step(
    tmp_path: Path, fake_record: Path
) -> None:
    import io

    from controller.tournament.display import Progress

    spec_path = _write_spec(tmp_path / "spec.yaml", [1, 2])
    out = tmp_path / "study"
    _spec, _arms, m, _ = open_study(spec_path, out, extend=False)
    t0 = 1_000_000.0
    now = {"t": t0}
    entry = m.games["a/seed1"]
    entry.status = "running"
    entry.attempts.append(Attempt(run="games/a/seed1-try1", started=t0))
    run = out / "games" / "a" / "seed1-try1"
    run.mkdir(parents=True)
    lines = [json.loads(x) for x in (fake_record / "events.jsonl").read_text().splitlines()]
    upto = [e for e in lines if e.get("step", 0) <= 3]
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in upto))
    stream = io.StringIO()
    p = Progress(
        2,
        stream=stream,
        live=False,
        out=out,
        budgets={"a": 30, "b": 30},
        prior_s=100.0,
        clock=lambda: now["t"],
    )

    def eta_s(line: str) -> str:
        found = re.search(r"ETA (~?[0-9hms]+)", line)
        assert found is not None, line
        return found.group(1)

    now["t"] = t0 + 10
    first = p.summary_line(m, 1)
    assert eta_s(first) != "?" and "(estimate)" in first
    now["t"] = t0 + 70
    later = p.summary_line(m, 1)
    # (90 s left of the running game + 3 pending x 100 s) / 2 at once, then 60 s less.
    assert eta_s(first) == "~3m15s" and eta_s(later) == "~2m45s"
    assert p.running_line(m) == "running: a/seed1 step 3/30"
    p.update(m, 1)
    assert "a/seed1 step 3/30" in stream.getvalue()
    # Once a game has ended its wall time is the measure.
    done = m.games["b/seed1"]
    done.status = "done"
    done.attempts.append(
        entry.attempts[0].model_copy(
            update={"run": "games/b/seed1-try1", "outcome": "done", "wall_s": 40.0}
        )
    )
    now["t"] = t0 + 10
    measured = p.summary_line(m, 1)
    # (the 30 s the 40-s game took beyond 10 s + 2 pending x 40 s) / 2 at once.
    assert "(estimate)" not in measured and eta_s(measured) == "55s"
    # A game that has outrun every ended one goes at its own pace: 70 s for 3 of 30 steps.
    now["t"] = t0 + 70
    assert eta_s(p.summary_line(m, 1)) == "5m55s"  # (70 x 27 / 3 + 2 x 40) / 2
    live = io.StringIO()
    with Progress(2, stream=live, live=True, out=out, budgets={"a": 30}, prior_s=100.0) as lp:
        lp.update(m, 1)
    assert "seed1 step 3/30" in live.getvalue()
