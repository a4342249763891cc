"""The ratings board of the study page (`annotation.viewer.board`, `GET /api/board`).

A study of fake-world games (the scripted ruler on both sides, ARIA on the fake backend
as crew, and a named person's seat that nobody answers) is rated through the viewer and
through `annotation.ratings` (what `mineamongus rank` runs): the two agree to the last
digit. The fit is cached until a game finishes, a study without enough finished games
says so, and the board is an analyst view.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import annotation.viewer.board as board_module
from annotation.ratings import load_studies, rate
from annotation.viewer.access import Access
from annotation.viewer.board import MIN_BOARD_GAMES, StudyBoard, table_rows
from annotation.viewer.study import create_study_app
from controller.cli import play_game
from controller.config import resolve_config
from controller.tournament.manifest import Attempt, Entry, Manifest, write_manifest
from testkit.games import GameStore
from world.spec import load_map

LOCAL = "http://127.0.0.1"
"""The viewer answers only its own (loopback) Host names, not TestClient's `testserver`."""
ARMS: dict[str, dict[str, Any]] = {
    "scripted": {},
    "fake-crew": {"crew": {"agent": "aria", "args": {"backend": "fake"}}},
    "with-alice": {
        "seats": {"red": {"agent": "human", "args": {"name": "alice", "timeout_s": 0.2}}}
    },
}
"""Seed 1 seats red among the crew, so alice is a crew row."""


def _play(out: Path, seed: int, overrides: dict[str, Any]) -> None:
    config = resolve_config("quick", overrides={"seed": seed, "frames": "off", **overrides})
    assert play_game(config, load_map(config.map), "fake", out).status == "ok"


def _killed(run: Path) -> None:
    """Turn a finished game into an attempt killed mid-game (its log cut, no summary)."""
    (run / "summary.json").unlink()
    lines = (run / "events.jsonl").read_text().splitlines()
    (run / "events.jsonl").write_text("\n".join(lines[: len(lines) // 2]) + "\n")


@pytest.fixture(scope="module")
def study(fake_games: GameStore) -> Path:
    """Arms x seeds 1 and 2; `scripted` seed 2 needed a second attempt (the first one
    killed mid-game), and `with-alice` played seed 1 only. Made once per run and read by
    every worker (`GameStore.built`); a test that writes into it works on a copy."""
    return fake_games.built("viewer-board-study", _make_study)


def _make_study(out: Path) -> None:
    games: dict[str, Entry] = {}
    for arm, overrides in ARMS.items():
        for seed in (1, 2) if arm != "with-alice" else (1,):
            attempts = []
            tries = 2 if (arm, seed) == ("scripted", 2) else 1
            for k in range(1, tries + 1):
                run = f"games/{arm}/seed{seed}-try{k}"
                _play(out / run, seed, overrides)
                if k < tries:
                    _killed(out / run)
                attempts.append(Attempt(run=run, started=1.0, ended=2.0, outcome="done"))
            games[f"{arm}/seed{seed}"] = Entry(arm=arm, seed=seed, status="done", attempts=attempts)
    manifest = Manifest(
        name="board", world="fake", arms={a: a for a in ARMS}, seeds=[1, 2], games=games
    )
    write_manifest(out, manifest)


def _client(folder: Path, access: Access | None = None) -> TestClient:
    return TestClient(create_study_app(folder, access=access), base_url=LOCAL)


def _copy(study: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "study"
    shutil.copytree(study, dest)
    return dest


def test_the_board_is_the_ratings_of_the_same_games(study: Path, tmp_path: Path) -> None:
    folder = _copy(study, tmp_path)
    answer = _client(folder).get("/api/board?analyst=1")
    assert answer.status_code == 200
    got = answer.json()
    assert got["status"] == "ok" and got["message"] == ""
    # What `mineamongus rank` fits (its defaults: 1000 resamples, seed 0, 30 games).
    board = rate(load_studies([folder.resolve()]))
    assert got["roles"] == table_rows(board.table)
    assert got["n_games"] == board.n_games == 5  # the killed attempt is not counted
    assert (got["n_clusters"], got["cluster_by"]) == (board.n_clusters, board.cluster_by)
    assert got["describe"].startswith("5 game(s); Bradley-Terry ratings")
    assert got["playing"] == 1  # the killed attempt: no summary
    rows = {(r["player"], r["role"]): r for role in got["roles"].values() for r in role}
    assert set(rows) == {
        ("scripted", "impostor"),
        ("scripted", "crew"),
        ("fake", "crew"),
        ("human:alice", "crew"),
    }
    alice = rows[("human:alice", "crew")]
    assert alice["games"] == 1 and alice["few_games"] and alice["mixed_games"] == 1
    assert alice["vs_ruler_games"] == 1 and alice["rank"] is not None
    assert rows[("fake", "crew")]["games"] == 2
    # Every column `rank` writes, JSON-safe (NaN as null).
    assert list(alice) == list(board.table.columns)
    assert "NaN" not in answer.text


def test_the_fit_is_cached_until_a_game_finishes(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _copy(study, tmp_path)
    fits: list[int] = []
    real = rate

    def counted(*args: Any, **kwargs: Any) -> Any:
        fits.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(board_module, "rate", counted)
    client = _client(folder)
    first = client.get("/api/board?analyst=1").json()
    again = client.get("/api/board?analyst=1").json()
    assert len(fits) == 1 and again == first and first["fits"] == 1
    # A game that starts (its log, no summary yet) changes no rating: no refit.
    running = folder / "games/scripted/seed3-try1"
    running.mkdir(parents=True)
    finished = folder / "games/scripted/seed1-try1"
    head = (finished / "events.jsonl").read_text().splitlines()[:3]
    (running / "events.jsonl").write_text("\n".join(head) + "\n")
    playing = client.get("/api/board?analyst=1").json()
    assert len(fits) == 1 and playing["roles"] == first["roles"]
    assert playing["playing"] == 2 and "2 game(s) still being played" in playing["notes"][0]
    # It finishes: the board is fitted again, with it.
    shutil.rmtree(running)
    _play(running, 3, {})
    done = client.get("/api/board?analyst=1").json()
    assert len(fits) == 2 and done["fits"] == 2 and done["version"] != first["version"]
    assert done["n_games"] == first["n_games"] + 1 and done["playing"] == 1
    assert client.get("/api/board?analyst=1").json()["fits"] == 2
    # A finished game whose summary is written again (a re-run record) is refitted too.
    summary = finished / "summary.json"
    summary.write_text(summary.read_text() + " ")
    assert client.get("/api/board?analyst=1").json()["fits"] == 3 and len(fits) == 3


def test_a_game_put_into_the_study_by_hand_is_rated(study: Path, tmp_path: Path) -> None:
    """A game played apart (`play --out STUDY/games/<arm>/seed<N>-try1`) counts, though the
    manifest does not name it: as `collect` then `rank` count it."""
    folder = _copy(study, tmp_path)
    client = _client(folder)
    before = client.get("/api/board?analyst=1").json()
    extra = {"seats": {"red": {"agent": "human", "args": {"name": "ada", "timeout_s": 0.2}}}}
    _play(folder / "games/human-ada/seed1-try1", 1, extra)
    after = client.get("/api/board?analyst=1").json()
    assert after["n_games"] == before["n_games"] + 1
    players = {r["player"] for r in after["roles"]["crew"]}
    assert "human:ada" in players and "human:ada" not in {
        r["player"] for r in before["roles"]["crew"]
    }
    from controller.tournament.collect import collect

    collect(folder)  # `mineamongus collect STUDY`: the tables `rank` reads, rebuilt
    assert after["roles"] == table_rows(rate(load_studies([folder.resolve()])).table)


def test_a_study_without_enough_finished_games_says_so(study: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    write_manifest(empty, Manifest(name="e", world="fake", arms={"a": "a"}, seeds=[1], games={}))
    got = _client(empty).get("/api/board?analyst=1").json()
    assert got["status"] == "too_few" and got["n_games"] == 0
    assert "No game of this study has finished yet" in got["message"]
    assert got["roles"] == {"impostor": [], "crew": []}
    # Games still being played only: no finished game, and the notes say what is playing.
    (empty / "games/a/seed1-try1").mkdir(parents=True)
    (empty / "games/a/seed1-try1/events.jsonl").write_text("")
    got = _client(empty).get("/api/board?analyst=1").json()
    assert got["status"] == "too_few" and got["n_games"] == 0
    assert got["message"].startswith("0 finished game(s) with a winner so far")
    assert got["playing"] == 1
    # One finished game is still too few.
    shutil.rmtree(empty / "games/a/seed1-try1")
    shutil.copytree(study / "games/scripted/seed1-try1", empty / "games/a/seed1-try1")
    got = _client(empty).get("/api/board?analyst=1").json()
    assert got["status"] == "too_few" and MIN_BOARD_GAMES == 2
    assert got["message"].startswith("1 finished game(s) with a winner so far")


def test_a_folder_that_is_not_a_study_says_so(study: Path, tmp_path: Path) -> None:
    one = StudyBoard(study / "games/scripted/seed1-try1").answer()
    assert one["status"] == "one_game" and "holds one game, not a study" in one["message"]
    assert one["roles"] == {"impostor": [], "crew": []}
    nothing = StudyBoard(tmp_path).answer()
    assert nothing["status"] == "not_a_study" and "not a study" in nothing["message"]


def test_an_unreadable_game_is_left_out_and_named(study: Path, tmp_path: Path) -> None:
    folder = _copy(study, tmp_path)
    broken = folder / "games/fake-crew/seed2-try1"
    (broken / "events.jsonl").write_text("this is not json\n")
    got = _client(folder).get("/api/board?analyst=1").json()
    assert got["status"] == "ok" and got["n_games"] == 4
    assert any("games/fake-crew/seed2-try1" in n for n in got["notes"])
    fake = [r for r in got["roles"]["crew"] if r["player"] == "fake"]
    assert fake and fake[0]["games"] == 1


def test_the_board_is_an_analyst_view(study: Path) -> None:
    access = Access(analyst_token="tok-123")
    client = _client(study, access)
    for asked in ("/api/board", "/api/board?analyst=0", "/api/board?analyst=tok-999"):
        refused = client.get(asked)
        assert refused.status_code == 403, asked
        assert refused.json()["status"] == "withheld"
        assert refused.json()["roles"] == {"impostor": [], "crew": []}
        assert "human:alice" not in refused.text
    for asked in ("/api/board?analyst=1", "/api/board?analyst=tok-123"):
        got = client.get(asked)
        assert got.status_code == 200 and got.json()["status"] == "ok", asked
    # The page has the board's section and asks for it.
    assert 'id="board"' in client.get("/").text
    assert "api/board" in client.get("/static/study.js").text
