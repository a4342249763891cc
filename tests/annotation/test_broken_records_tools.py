"""Every tool that reads a record refuses a broken one with the file and the line, never
crashes, and changes no file; an unfinished game is left out by name beside finished ones."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.cli import main

BREAKS: dict[str, tuple[Callable[[Path], None], str]] = {}


def _half(run: Path) -> None:
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    (run / "events.jsonl").write_text("".join(lines[: len(lines) // 2]))


def _garbage(run: Path) -> None:
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    lines.insert(4, "{oops not json\n")
    (run / "events.jsonl").write_text("".join(lines))


def _binary(run: Path) -> None:
    (run / "events.jsonl").write_bytes(bytes(range(256)) * 8)


def _empty(run: Path) -> None:
    (run / "events.jsonl").write_text("")
    (run / "summary.json").unlink()


BREAKS = {
    "half log, intact summary": (_half, "no game_end, but summary.json says"),
    "garbage line": (_garbage, "line 5: not a JSON event"),
    "binary file": (_binary, "not a text file"),
    "empty log": (_empty, "line 1: the log is empty"),
}


@pytest.fixture(scope="module")
def game(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("src") / "g"
    args = ["play", "--world", "fake", "--seed", "5", "--max-steps", "10"]
    assert main([*args, "--frames", "off", "--quiet", "--out", str(out)]) == 0
    return out


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _tools(run: Path, tmp: Path) -> dict[str, list[str]]:
    return {
        "replay": ["replay", str(run)],
        "annotate": ["annotate", str(run), "--judge", "none", "--quiet"],
        "audit": ["audit", str(run), "--out", str(tmp / "audit")],
        "analyze": ["analyze", str(run), "--out", str(tmp / "analysis"), "--quiet"],
    }


@pytest.mark.parametrize("tool", ["replay", "annotate", "audit", "analyze"])
@pytest.mark.parametrize("broken", list(BREAKS))
def test_a_broken_record_is_refused_by_every_tool(
    game: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], tool: str, broken: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(game, run)
    shutil.rmtree(run / "replay", ignore_errors=True)
    damage, said = BREAKS[broken]
    damage(run)
    before = _tree(run)
    code = main(_tools(run, tmp_path)[tool])
    err = capsys.readouterr().err
    assert code == 2, err
    assert said in err and str(run) in err, err
    assert "Traceback" not in err
    assert _tree(run) == before  # nothing written into the run
    assert not (tmp_path / "analysis").exists() or tool != "analyze"


@pytest.mark.parametrize("tool", ["annotate", "audit", "analyze"])
def test_an_unfinished_game_is_left_out_by_name(
    game: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], tool: str
) -> None:
    study = tmp_path / "study"
    shutil.copytree(game, study / "done")
    shutil.copytree(game, study / "killed")
    (study / "killed" / "summary.json").unlink()
    lines = (study / "killed" / "events.jsonl").read_text().splitlines(keepends=True)
    (study / "killed" / "events.jsonl").write_text("".join(lines[: len(lines) // 2]))
    before = _tree(study / "killed")
    args = {
        "annotate": ["annotate", str(study), "--judge", "none", "--quiet"],
        "audit": ["audit", str(study), "--out", str(tmp_path / "audit")],
        "analyze": ["analyze", str(study), "--out", str(tmp_path / "analysis"), "--quiet"],
    }[tool]
    code = main(args)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "unfinished game" in err and str(study / "killed") in err, err
    assert _tree(study / "killed") == before
