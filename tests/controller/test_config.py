"""Configuration: presets, files, overrides and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import main
from controller.config import ConfigError, load_config_file, resolve_config


def test_presets_differ_and_paper_matches_reference() -> None:
    paper = resolve_config("paper")
    quick = resolve_config("quick")
    assert paper.rules.kill_cooldown_ticks == 3600
    assert paper.rules.task_ticks == 1200
    assert paper.rules.emergency_initial_lockout_ticks == 2400
    assert paper.rules.emergency_lockout_after_meeting_ticks == 1200
    assert paper.rules.meeting_max_ticks == 6000
    assert paper.rules.max_steps == 200 and paper.step_timeout_ms == 30000
    assert paper.rules.n_players == 8 and paper.rules.n_impostors == 2
    assert quick.rules.kill_cooldown_ticks < paper.rules.kill_cooldown_ticks
    assert quick.preset == "quick" and paper.preset == "paper"


def test_file_and_overrides_layer(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("preset: paper\nrules:\n  kill_range: 2.5\nseed: 4\n")
    cfg = resolve_config("quick", load_config_file(f), {"seed": 9, "rules": {"max_steps": 7}})
    assert cfg.preset == "paper" and cfg.rules.kill_cooldown_ticks == 3600
    assert cfg.rules.kill_range == 2.5 and cfg.seed == 9 and cfg.rules.max_steps == 7


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"rules": {"kill_range": -1}}, "rules.kill_range"),
        ({"rules": {"n_impostors": 4}}, "rules"),
        ({"rules": {"kill_cooldwn_ticks": 5}}, "rules.kill_cooldwn_ticks"),
        ({"step_timeout_ms": "soon"}, "step_timeout_ms"),
        ({"rules": {"timeout_winner": "nobody"}}, "rules.timeout_winner"),
        ({"rules": {"kill_defer_distance": 0}}, "rules.kill_defer_distance"),
    ],
)
def test_bad_config_names_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        resolve_config("quick", data)


def test_cli_rejects_bad_config_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("rules:\n  kill_range: far\n")
    assert main(["play", "--config", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "rules.kill_range" in err
    assert not (tmp_path / "o").exists()
    assert main(["play", "--server", "nohostport", "--out", str(tmp_path / "o")]) == 2
    assert "HOST:PORT" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["play", "--preset", "slow"])


def test_cli_plays_on_the_fake_world(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["play", "--world", "fake", "--seed", "3", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert '"status": "ok"' in captured.out
    assert "step " in captured.err  # per-step progress
    assert (out / "events.jsonl").exists() and (out / "summary.json").exists()
    assert main(["play", "--world", "fake", "--out", str(out)]) == 2  # never overwrite a run


def test_a_preset_is_read_once_and_each_caller_gets_its_own_copy() -> None:
    from controller.config import _preset_data, preset_dict

    first = preset_dict("quick")
    tasks = first["rules"]["tasks_per_crewmate"]
    first["rules"]["tasks_per_crewmate"] = tasks + 1
    first["names"] = {"red": "James"}
    second = preset_dict("quick")
    assert second["rules"]["tasks_per_crewmate"] == tasks and "names" not in second
    assert resolve_config("quick").rules.tasks_per_crewmate == tasks
    assert _preset_data.cache_info().hits >= 1
