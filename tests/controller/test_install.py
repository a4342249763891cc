"""A normal (non-editable) install works: the wheel holds every package and data file,
and a fake-world game plays from it in a fresh virtualenv, outside the repository.

Nothing is downloaded: the wheel is built without build isolation (this machine's
setuptools and wheel) and the venv sees this machine's packages for the dependencies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("controller", "world", "harness_aria", "annotation", "mineamongus")
"""The import packages the project ships (pyproject's package discovery)."""
SKIP_PARTS = {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def _source_files() -> set[str]:
    """Every file of the shipped packages in the source tree, as wheel paths."""
    out: set[str] = set()
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*"):
            rel = path.relative_to(ROOT)
            if path.is_file() and not SKIP_PARTS & set(rel.parts) and path.suffix != ".pyc":
                out.add(rel.as_posix())
    return out


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of the tree (the checkout stays clean)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns(*SKIP_PARTS, "*.pyc"))
    out = tmp / "dist"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
        ],
        cwd=tmp,
    )
    (whl,) = out.glob("mineamongus-*.whl")
    return whl


def test_the_wheel_holds_every_package_and_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_source_files() - names)
    assert missing == [], f"files of the packages missing from the wheel: {missing}"
    for data in ("controller/presets/quick.yaml", "world/maps/skeld.yaml"):
        assert data in names
    assert any(n.startswith("harness_aria/prompts/") and n.endswith(".txt") for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "mineamongus = controller.cli:main" in text
    # Each package's subcommands and hooks, registered through its entry points.
    for line in (
        "[mineamongus.commands]",
        "play = controller.commands.play:COMMAND",
        "view = annotation.commands.view:COMMAND",
        "[mineamongus.viewers]",
        "live = annotation.commands.view:start_live",
        "aria = harness_aria.registration:register_kinds",
    ):
        assert line in text, f"{line!r} missing from {entry}"


def test_a_game_plays_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        cwd=tmp_path,
    )
    py = venv / "bin" / "python"
    # The venv sees this machine's pip and dependencies; the package itself comes
    # only from the wheel.
    _run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], cwd=tmp_path
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    where = _run(
        [
            str(py),
            "-c",
            "import controller, world, harness_aria, annotation, sys; "
            "print('\\n'.join(m.__file__ for m in (controller, world, harness_aria, annotation)))",
        ],
        cwd=work,
        env=env,
    )
    site = (venv / "lib").resolve()
    for path in where.split():
        assert Path(path).resolve().is_relative_to(site), f"{path} is not the installed copy"
    # Outside the checkout, the commands come from the installed entry points alone.
    helped = _run([str(py), "-m", "controller.cli", "--help"], cwd=work, env=env)
    listed = "{play,replay,analyze,annotate,audit,collect,rank,tournament,view}"
    assert listed in helped, helped
    run = tmp_path / "run"
    _run(
        [
            str(py),
            "-m",
            "controller.cli",
            "play",
            "--world",
            "fake",
            "--frames",
            "off",
            "--crew",
            "fake",
            "--impostor",
            "fake",
            "--seed",
            "1",
            "--max-steps",
            "8",
            "--out",
            str(run),
        ],
        cwd=work,
        env=env,
    )
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["steps"] <= 8
    lines = (run / "events.jsonl").read_text().splitlines()
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds[0] == "game_start" and kinds[-1] == "game_end"
    assert "decision" in kinds
