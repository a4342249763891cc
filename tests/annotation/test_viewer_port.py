"""Two viewers at once: a taken port is refused (named) or replaced by a free one, and
the address printed always serves this process's game."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from annotation.viewer import server
from annotation.viewer.server import BackgroundViewer, ViewerError, start_background
from controller.cli import main, play_game
from controller.config import resolve_config
from world.spec import load_map


def _game(tmp_path_factory: pytest.TempPathFactory, seed: int) -> Path:
    out = tmp_path_factory.mktemp(f"port-game{seed}")
    config = resolve_config("quick", overrides={"seed": seed, "frames": "off"})
    assert play_game(config, load_map(config.map), "fake", out).status == "ok"
    return out


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _game(tmp_path_factory, 2), _game(tmp_path_factory, 5)


@pytest.fixture
def first(games: tuple[Path, Path]) -> Iterator[BackgroundViewer]:
    """A viewer of the first game, holding its port."""
    v = start_background(games[0])
    try:
        yield v
    finally:
        v.stop()


def _game_id(url: str) -> str:
    with urllib.request.urlopen(url + "api/game", timeout=10) as res:
        return str(json.loads(res.read())["game_id"])


def _id_of(run: Path) -> str:
    return str(json.loads((run / "summary.json").read_text())["game_id"])


def test_a_taken_port_is_refused_naming_it(
    games: tuple[Path, Path], first: BackgroundViewer
) -> None:
    with pytest.raises(ViewerError, match=rf"port {first.port} on 127\.0\.0\.1 is in use"):
        start_background(games[1], port=first.port)
    assert _game_id(first.url) == _id_of(games[0])


def test_a_taken_port_falls_back_to_a_free_one_serving_this_game(
    games: tuple[Path, Path], first: BackgroundViewer
) -> None:
    second = start_background(games[1], port=first.port, fallback=True)
    try:
        assert second.port != first.port and str(second.port) in second.url
        assert _game_id(second.url) == _id_of(games[1])
        assert _game_id(first.url) == _id_of(games[0])
    finally:
        second.stop()


def test_view_on_a_taken_default_port_prints_the_address_of_its_own_game(
    games: tuple[Path, Path],
    first: BackgroundViewer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(server, "DEFAULT_PORT", first.port)
    served: dict[str, Any] = {}

    def wait(self: BackgroundViewer) -> None:  # instead of serving until Ctrl-C
        served["url"], served["game"] = self.url, _game_id(self.url)

    monkeypatch.setattr(BackgroundViewer, "wait", wait)
    assert main(["view", str(games[1])]) == 0
    err = capsys.readouterr().err
    assert f"port {first.port} is in use" in err
    assert f"viewer: {served['url']} " in err and served["url"] != first.url
    assert served["game"] == _id_of(games[1])
    # An explicit --port that is taken is refused, naming it.
    assert main(["view", str(games[1]), "--port", str(first.port)]) == 2
    assert f"port {first.port} on 127.0.0.1 is in use" in capsys.readouterr().err
