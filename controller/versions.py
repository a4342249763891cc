"""Versions of the software a run used, for the run record."""

from __future__ import annotations

import platform
from importlib import metadata

PYTHON_PACKAGES = ("mineamongus", "pydantic", "pyyaml", "numpy", "openai", "anthropic")


def python_versions() -> dict[str, str]:
    """Python and the installed versions of the Python packages the project uses."""
    out = {"python": platform.python_version()}
    for name in PYTHON_PACKAGES:
        try:
            out[f"py:{name}"] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out
