"""`Study.run()` shows its progress as the tournament command does, and is silent when
asked; its first ETA comes from the same per-game estimate as the dry-run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import mineamongus
from controller.tournament.display import study_progress
from controller.tournament.estimate import arm_estimate, load_figures
from controller.tournament.spec import expand_arms, load_spec

SPEC = {
    "name": "progress-tiny",
    "world": "fake",
    "seeds": [3],
    "base": {"frames": "off", "rules": {"max_steps": 6}},
    "arms": [{"name": "a"}],
}


@pytest.fixture()
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    return path


def test_run_prints_progress_lines(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = mineamongus.Study.from_yaml(spec, out=tmp_path / "out").run()
    assert result.ok, result.message
    err = capsys.readouterr().err
    assert "1/1 done" in err and "eta" in err.lower()


def test_run_is_silent_without_progress(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = mineamongus.Study.from_yaml(spec, out=tmp_path / "out").run(progress=False)
    assert result.ok, result.message
    assert "done" not in capsys.readouterr().err


def test_first_eta_is_the_dry_runs_estimate(spec: Path, tmp_path: Path) -> None:
    loaded = load_spec(spec)
    arms = expand_arms(loaded)
    shown = study_progress(loaded, arms, 1, tmp_path, live=False)
    want = arm_estimate(arms[0], 1, loaded.estimate, load_figures(), loaded.world).game_seconds
    assert shown.prior_s == pytest.approx(want)
    # A scripted fake game of 6 steps starts in seconds, not a minute.
    assert want < 10
