"""Fixtures shared by every test folder: the run's store of whole fake-world games."""

from __future__ import annotations

import gc
import os

import pytest

from testkit.games import GameStore


@pytest.fixture(scope="session")
def fake_games(tmp_path_factory: pytest.TempPathFactory) -> GameStore:
    """Fake-world games played once per test run and read by every test that asks for
    the same configuration. The parallel workers (`pytest -n`) each have a session of
    their own; their temporary folders share a parent, which holds the store, so a game
    one worker played is read by the other."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return GameStore(base / "fake-games")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move everything alive after collection (the imported libraries, the test modules)
    out of the garbage collector's sight (`gc.freeze`): a full collection during a test
    then walks only what the tests made, not the whole heap again (statsmodels' Holm
    adjustment asks for a full collection on every call, several per analysis)."""
    gc.collect()
    gc.freeze()
