"""The tournament command end to end on the fake world: real game processes, a runner
killed with SIGKILL and resumed, result tables and status (the same games on a local
Ray instance: `tests/integration/test_ray_local.py`)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

from controller.checks import log_violations
from controller.cli import main
from controller.config import resolve_config
from controller.tournament.capacity import Capacity
from controller.tournament.manifest import read_manifest
from testkit.games import FAKE_SMOKE

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int, ctime: float) -> bool:
    try:
        return abs(psutil.Process(pid).create_time() - ctime) < 0.01
    except psutil.Error:
        return False


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake-world study whose runner was SIGKILLed with games running, then resumed."""
    base = tmp_path_factory.mktemp("fake-study")
    spec = base / "spec.yaml"
    spec.write_text(yaml.safe_dump(FAKE_SMOKE))
    out = base / "study"
    cmd = [sys.executable, "-m", "controller.cli", "tournament"]
    first = subprocess.Popen(
        [*cmd, str(spec), "--out", str(out), "--workers", "2", "--plain"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        m = read_manifest(out) if (out / "manifest.json").is_file() else None
        if m is not None and any(
            e.status == "running" and e.attempts[-1].processes for e in m.games.values()
        ):
            break
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    second = subprocess.run(
        [*cmd, str(out), "--workers", "2", "--plain"],
        cwd=ROOT,
        capture_output=True,
        timeout=600,
    )
    assert second.returncode == 0, second.stderr.decode()[-3000:]
    return out


def test_killed_runner_resumes_to_every_game_exactly_once(study: Path) -> None:
    m = read_manifest(study)
    assert m is not None
    assert {(e.arm, e.seed) for e in m.games.values()} == {(a, s) for a in m.arms for s in (1, 2)}
    restarted = 0
    for e in m.games.values():
        assert e.status == "done"
        assert sum(a.outcome == "done" for a in e.attempts) == 1
        restarted += sum(a.outcome == "interrupted" for a in e.attempts)
        assert len({a.run for a in e.attempts}) == len(e.attempts)
        assert log_violations(study / e.attempts[-1].run / "events.jsonl") == []
    assert restarted >= 1, "the kill interrupted no game"
    recorded = [p for e in m.games.values() for a in e.attempts for p in a.processes]
    assert recorded and not [p for p in recorded if _alive(p[0], p[1])]


def test_each_game_is_what_play_resolves_from_its_config_file(study: Path) -> None:
    m = read_manifest(study)
    assert m is not None
    for e in m.games.values():
        run = study / e.attempts[-1].run
        data = yaml.safe_load((run / "game-config.yaml").read_text())
        assert data["seed"] == e.seed
        summary = json.loads((run / "summary.json").read_text())
        assert summary["seed"] == e.seed
        assert summary["config"] == resolve_config("quick", data).model_dump(mode="json")


def test_collect_rebuilds_tables_from_the_run_folders(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["collect", str(study)]) == 0
    games = pd.read_parquet(study / "results" / "games.parquet")
    seats = pd.read_parquet(study / "results" / "seats.parquet")
    counted = games[games["counted"]]
    assert len(counted) == 4
    assert set(zip(counted["arm"], counted["seed"], strict=True)) == {
        (a, s) for a in ("kill_cooldown_ticks=100", "kill_cooldown_ticks=160") for s in (1, 2)
    }
    assert (counted["status"] == "done").all()
    assert len(seats) == 8 * len(games[games["status"] != "failed"])
    for col in ("winner", "ending", "steps", "kills", "meetings", "ejections", "tasks_done"):
        assert col in games.columns
    for col in ("role", "backend", "alive_at_end", "tokens_in", "invalid_decisions"):
        assert col in seats.columns
    # Axis columns come from the sides' declared facts: scripted sides declare none.
    assert "memory" not in seats.columns and "impostor.memory" not in games.columns
    # Per-seat kills add up to the game's kills.
    c = seats[seats["counted"]].groupby("game_id")["kills"].sum()
    g = counted.set_index("game_id")["kills"]
    assert (c.loc[g.index] == g).all()


def test_status_prints_a_per_arm_win_rate_with_an_interval(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tournament", str(study), "--status"]) == 0
    out = capsys.readouterr().out
    assert "95% Wilson" in out
    assert "kill_cooldown_ticks=100" in out and "2/2" in out


def test_too_many_workers_are_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "one.yaml"
    spec.write_text(yaml.safe_dump({**FAKE_SMOKE, "seeds": [5], "sweep": None, "control": True}))
    small = Capacity(
        cores=1,
        available_gb=2.0,
        memory_per_game_gb=1.5,
        measured=False,
        cpus_per_game=1,
        games=1,
    )
    monkeypatch.setattr("controller.tournament.capacity.machine_capacity", lambda *a: small)
    code = main(["tournament", str(spec), "--out", str(tmp_path / "s"), "--workers", "3"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "warning: --workers 3 exceeds what this machine holds" in err


def test_a_study_ends_with_its_results_table_and_writes_its_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = {**FAKE_SMOKE, "seeds": [5], "sweep": None, "control": True}
    spec = tmp_path / "one.yaml"
    spec.write_text(yaml.safe_dump(one))
    out = tmp_path / "s"
    assert main(["tournament", str(spec), "--out", str(out), "--plain"]) == 0
    printed = capsys.readouterr().out
    assert "impostor win rate [95% Wilson]" in printed
    assert re.search(r"control\s+1/1 .*\d+\.\d% \[\d+\.\d%, \d+\.\d%\] \([01]/1\)", printed)
    games = out / "results" / "games.parquet"
    assert f"results: {games} (1 row(s))" in printed
    assert len(pd.read_parquet(games)) == 1
    # Extended by a seed: the tables are rebuilt with the new game, never left stale.
    spec.write_text(yaml.safe_dump({**one, "seeds": [5, 6]}))
    assert main(["tournament", str(spec), "--out", str(out), "--extend", "--plain"]) == 0
    assert "control" in capsys.readouterr().out
    assert sorted(pd.read_parquet(games)["seed"]) == [5, 6]


def test_max_cost_warns_when_a_model_has_no_price(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = tmp_path / "unpriced.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                **FAKE_SMOKE,
                "sweep": None,
                "arms": [{"name": "x", "overrides": {"impostor": {"backend": "openai:no-such"}}}],
            }
        )
    )
    # The game itself refuses to start without an API key, which pauses the run.
    code = main(["tournament", str(spec), "--out", str(tmp_path / "s"), "--max-cost", "5"])
    err = capsys.readouterr().err
    assert "no price for openai:no-such" in err and "--max-cost cannot limit them" in err
    assert code == 3 and "paused: " in err and "OPENAI_API_KEY" in err


def test_a_side_at_a_dead_model_server_pauses_the_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every call of the impostors fails alike (connection refused): the game ends
    invalid with that reason and the study pauses; no impostor win is counted."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])  # nobody listens once it is closed
    impostor = {
        "agent": "aria",
        "args": {
            "backend": "openai-compatible:qwen",
            "base_url": f"http://127.0.0.1:{port}/v1",
            # every try is still made; only the waits between them are cut short
            "settings": {"backoff_base_s": 0.001, "backoff_max_s": 0.01},
        },
    }
    spec = tmp_path / "dead.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                **FAKE_SMOKE,
                "seeds": [1, 2],
                "sweep": None,
                "arms": [{"name": "dead", "overrides": {"impostor": impostor}}],
            }
        )
    )
    out = tmp_path / "s"
    code = main(["tournament", str(spec), "--out", str(out), "--plain"])
    err = capsys.readouterr().err
    assert code == 3, err
    manifest = read_manifest(out)
    assert manifest is not None
    assert manifest.paused is not None and "every call of the side failed" in manifest.paused
    done = [e for e in manifest.games.values() if e.status == "done"]
    assert done == []  # nothing counted as a win
