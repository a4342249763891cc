"""Entry points of the project's plugin groups, as installed and as the checkout declares.

Packages extend the controller only through entry-point groups (`mineamongus.commands`,
`mineamongus.agents`, `mineamongus.viewers`), declared in `pyproject.toml`; the controller
never imports them by name. An installed package lists its groups in its metadata. A
checkout run (`python -m controller.cli`, the tournament's game processes, an editable
install made before an entry point was added) also reads the `pyproject.toml` beside the
`controller/` folder it runs from: the code that runs is the checkout's, so are its entry
points, and adding one needs no reinstall.
"""

from __future__ import annotations

import logging
import tomllib
from functools import lru_cache
from importlib import metadata
from pathlib import Path

log = logging.getLogger(__name__)

PROJECT = "mineamongus"
"""The project name a checkout's `pyproject.toml` must carry to be read."""


@lru_cache(maxsize=1)
def _checkout_groups() -> dict[str, dict[str, str]]:
    """The entry-point groups of the checkout this package runs from ({} when installed)."""
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        log.warning("%s: not readable (%s); using the installed entry points", pyproject, exc)
        return {}
    project = data.get("project") or {}
    if project.get("name") != PROJECT:
        return {}
    groups = project.get("entry-points") or {}
    return {str(g): {str(k): str(v) for k, v in (e or {}).items()} for g, e in groups.items()}


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The entry points of `group`, sorted by name.

    The checkout's declaration of a name wins over an installed one (the installed
    metadata of an editable install can be older than the checkout).
    """
    found = {e.name: e for e in metadata.entry_points(group=group)}
    for name, value in _checkout_groups().get(group, {}).items():
        found[name] = metadata.EntryPoint(name=name, value=value, group=group)
    return [found[name] for name in sorted(found)]
