"""Versions of the software a run used, for the run record and `mineamongus --version`."""

from __future__ import annotations

import functools
import platform
import subprocess
from importlib import metadata
from pathlib import Path

PYTHON_PACKAGES = ("mineamongus", "pydantic", "pyyaml", "numpy", "openai", "anthropic")


def python_versions() -> dict[str, str]:
    """Python and the installed versions of the Python packages the project uses (a
    fresh dict each call; the look-up is made once per process)."""
    return dict(_python_versions())


@functools.cache
def _python_versions() -> tuple[tuple[str, str], ...]:
    """`python_versions`, read once: they cannot change under a running process."""
    out = [("python", platform.python_version())]
    for name in PYTHON_PACKAGES:
        try:
            out.append((f"py:{name}", metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return tuple(out)


def package_version() -> str:
    """The installed version of `mineamongus`, else the one `pyproject.toml` declares."""
    try:
        return metadata.version("mineamongus")
    except metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        import tomllib

        return str(tomllib.loads(pyproject.read_text())["project"]["version"])
    except (OSError, KeyError, ValueError):
        return "unknown"


@functools.cache
def source_revision() -> str:
    """`git describe` of the source tree this code runs from, or `unknown` outside a
    checkout (an installed wheel). Asked once per process (a `git` subprocess): a
    process that plays many games records the revision it started from."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return "unknown"
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def version_line() -> str:
    """What `mineamongus --version` prints: `mineamongus 0.1.0 (source 0702b7d1a2b3)`."""
    return f"mineamongus {package_version()} (source {source_revision()})"
