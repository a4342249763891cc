"""The versions a run records (`controller.versions`): asked once per process."""

from __future__ import annotations

import platform

from controller.versions import python_versions, source_revision


def test_versions_are_read_once_and_each_caller_gets_its_own_dict() -> None:
    first = python_versions()
    assert first["python"] == platform.python_version() and "py:pydantic" in first
    first["python"] = "0.0"
    assert python_versions()["python"] == platform.python_version()
    revision = source_revision()
    calls = source_revision.cache_info().hits
    assert source_revision() == revision and source_revision.cache_info().hits == calls + 1
