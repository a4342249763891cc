"""A study protects itself: runner values the spec would refuse are refused on the
command line and in the API, and `--out` never merges a study into a game's folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from controller.cli import main
from controller.tournament.runner import RunOptions, study_out_refusal
from mineamongus.study import Study

SPEC = {
    "name": "guards",
    "world": "fake",
    "seeds": [1],
    "base": {"frames": "off", "rules": {"max_steps": 4}},
    "arms": [{"name": "a"}],
}


@pytest.fixture()
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    return path


@pytest.mark.parametrize(
    "flags",
    [
        ["--game-timeout", "0"],
        ["--game-timeout", "-3"],
        ["--max-cost", "-5"],
        ["--workers", "0"],
        ["--retries", "-1"],
    ],
)
def test_bad_runner_values_are_refused_before_any_game(
    spec: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
) -> None:
    out = tmp_path / "study"
    code = main(["tournament", str(spec), "--out", str(out), "--plain", *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert f"({flags[0]}) {flags[1]}" in err
    assert not (out / "games").exists()  # nothing ran


def test_run_options_name_the_value() -> None:
    with pytest.raises(ValueError, match=r"game_timeout_s \(--game-timeout\) 0"):
        RunOptions(workers=1, retries=0, game_timeout_s=0)
    with pytest.raises(ValueError, match=r"max_cost_usd \(--max-cost\) -5"):
        RunOptions(workers=1, retries=0, game_timeout_s=10, max_cost_usd=-5)
    with pytest.raises(ValueError, match="game_timeout_s"):
        RunOptions(workers=1, retries=0, game_timeout_s=float("nan"))
    assert RunOptions(workers=1, retries=0, game_timeout_s=10, max_cost_usd=0).max_cost_usd == 0


def test_study_api_refuses_a_bad_timeout(spec: Path, tmp_path: Path) -> None:
    study = Study.from_yaml(spec, tmp_path / "study")
    with pytest.raises(ValueError, match="game_timeout_s"):
        study.run(game_timeout_s=0)
    assert not (tmp_path / "study").exists()


def _game_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "events.jsonl").write_text(json.dumps({"kind": "game_start"}) + "\n")
    (path / "summary.json").write_text("{}")
    return path


def test_out_holding_a_game_is_refused(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    game = _game_folder(tmp_path / "one-game")
    before = sorted(p.name for p in game.iterdir())
    code = main(["tournament", str(spec), "--out", str(game), "--plain"])
    err = capsys.readouterr().err
    assert code == 2
    assert str(game) in err and "holds a game record" in err
    assert sorted(p.name for p in game.iterdir()) == before  # nothing written


def test_out_holding_a_nested_game_is_refused(tmp_path: Path) -> None:
    _game_folder(tmp_path / "runs" / "g1")
    assert "holds a game record" in (study_out_refusal(tmp_path / "runs") or "")


def test_a_study_folder_and_a_new_folder_are_accepted(tmp_path: Path) -> None:
    assert study_out_refusal(tmp_path / "new") is None
    study = tmp_path / "study"
    _game_folder(study / "games" / "a" / "s1-a1")
    (study / "manifest.json").write_text("{}")
    assert study_out_refusal(study) is None
    (study / "events.jsonl").write_text("")
    assert "game record of its own" in (study_out_refusal(study) or "")


@pytest.mark.parametrize(
    ("data", "field", "bound"),
    [
        ({"rules": {"max_steps": 100_000_000_000}}, "rules.max_steps", "10000"),
        ({"seed": 2**40}, "seed", "2147483647"),
    ],
)
def test_absurd_game_sizes_are_refused_with_the_bound(
    data: dict[str, object], field: str, bound: str
) -> None:
    from controller.config import ConfigError, resolve_config

    with pytest.raises(ConfigError, match=field) as info:
        resolve_config("paper", data)
    assert bound in str(info.value)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"repetitions": 100_000_000}, "repetitions"),
        ({"seeds": [2**40]}, "seeds.0"),
        ({"repetitions": 10, "seed_start": 2**31 - 5}, "passes the largest seed"),
        (
            {"repetitions": 100, "sweep": {"axes": {"rules.kill_range": list(range(1, 20_001))}}},
            "more than 1,000,000",
        ),
        (
            {"repetitions": 1, "sweep": {"axes": {f"rules.a{i}": [1, 2] for i in range(20)}}},
            "arms, more than 100,000",
        ),
    ],
)
def test_absurd_study_sizes_are_refused_with_the_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object], said: str
) -> None:
    spec = {k: v for k, v in SPEC.items() if k != "seeds"} | change
    if "repetitions" not in change and "seeds" not in change:
        spec["seeds"] = [1]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["tournament", str(path), "--dry-run"]) == 2
    assert said in capsys.readouterr().err
