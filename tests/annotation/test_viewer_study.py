"""The study viewer: a tournament folder's games listed, each served under its own prefix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from annotation.viewer.study import create_study_app, is_study
from controller.cli import main, play_game
from controller.config import resolve_config
from controller.tournament.manifest import Attempt, Entry, Manifest, write_manifest
from world.spec import load_map

LOCAL = "http://127.0.0.1"
"""The viewer answers only its own (loopback) Host names, not TestClient's `testserver`."""
DONE = "games/arm_a/seed1-try1"
RUNNING = "games/arm_a/seed2-try1"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study folder: one finished game, one whose log stops mid-game, one pending."""
    out = tmp_path_factory.mktemp("study")
    config = resolve_config("quick", overrides={"seed": 1, "frames": "jpg"})
    assert play_game(config, load_map(config.map), "fake", out / DONE).status == "ok"
    # The running game: the finished one's log cut after its fourth step began.
    lines = (out / DONE / "events.jsonl").read_text().splitlines()
    cut = [i for i, ln in enumerate(lines) if json.loads(ln)["kind"] == "step_start"][4]
    (out / RUNNING).mkdir(parents=True)
    (out / RUNNING / "events.jsonl").write_text("\n".join(lines[: cut + 1]) + '\n{"v": 2, ')
    shutil.copytree(out / DONE / "frames", out / RUNNING / "frames")
    games = {
        "arm_a/seed1": Entry(
            arm="arm_a",
            seed=1,
            status="done",
            attempts=[Attempt(run=DONE, started=1.0, ended=2.0, outcome="done")],
        ),
        "arm_a/seed2": Entry(
            arm="arm_a", seed=2, status="running", attempts=[Attempt(run=RUNNING, started=3.0)]
        ),
        "arm_b/seed1": Entry(arm="arm_b", seed=1),
    }
    manifest = Manifest(
        name="s", world="fake", arms={"arm_a": "x", "arm_b": "y"}, seeds=[1, 2], games=games
    )
    write_manifest(out, manifest)
    return out


def test_the_study_page_lists_every_game_with_its_progress(study: Path) -> None:
    assert is_study(study) and not is_study(study / DONE)
    client = TestClient(create_study_app(study), base_url=LOCAL)
    assert "static/study.js" in client.get("/").text
    s = client.get("/api/study").json()
    assert s["name"] == "s" and s["counts"]["running"] == 1 and s["counts"]["pending"] == 1
    rows = {g["key"]: g for g in s["games"]}
    assert [g["key"] for g in s["games"]] == ["arm_a/seed1", "arm_a/seed2", "arm_b/seed1"]
    done_events = [json.loads(x) for x in (study / DONE / "events.jsonl").read_text().splitlines()]
    assert rows["arm_a/seed1"]["over"] and rows["arm_a/seed1"]["step"] == done_events[-1]["step"]
    assert rows["arm_a/seed1"]["url"] == f"game/{DONE}/"
    # The cut log: its last complete line is the fourth step's start; the torn line is skipped.
    starts = [e["step"] for e in done_events if e["kind"] == "step_start"]
    assert rows["arm_a/seed2"]["step"] == starts[4] and not rows["arm_a/seed2"]["over"]
    assert rows["arm_b/seed1"]["url"] is None and rows["arm_b/seed1"]["step"] is None


def test_each_game_is_served_under_its_attempt_folder(study: Path) -> None:
    client = TestClient(create_study_app(study), base_url=LOCAL)
    page = client.get(f"/game/{DONE}/")
    assert page.status_code == 200 and 'src="static/viewer.js"' in page.text
    assert client.get(f"/game/{DONE}/static/viewer.js").status_code == 200
    redirect = client.get(f"/game/{DONE}", follow_redirects=False)
    assert redirect.status_code in (307, 308) and redirect.headers["location"].endswith(
        f"/game/{DONE}/"
    )
    meta = client.get(f"/game/{DONE}/api/game").json()
    assert meta["study_url"] == "/" and meta["over"]
    step = next(s["step"] for s in meta["steps"] if s["phase"] == "free_roam" and s["step"] > 0)
    frames = client.get(f"/game/{DONE}/api/step/{step}").json()["frames"]
    assert frames
    for agent, url in frames.items():
        # Frame addresses are relative to the game's page, so they resolve under its prefix.
        assert not url.startswith("/")
        res = client.get(f"/game/{DONE}/{url}")
        assert res.content == (study / DONE / url.removeprefix("run/")).read_bytes(), agent
    live = client.get(f"/game/{RUNNING}/api/game").json()
    assert not live["over"] and live["last_step"] < meta["last_step"]


def test_only_attempt_folders_of_the_manifest_are_served(study: Path) -> None:
    (study / "secret.txt").write_text("no")
    client = TestClient(create_study_app(study), base_url=LOCAL)
    for path in (
        "/game/games/arm_a/",
        "/game/games/arm_a/seed9-try1/api/game",
        f"/game/{DONE}/../../../secret.txt",
        "/game/secret.txt",
    ):
        assert client.get(path).status_code == 404, path


def test_a_label_saved_in_a_study_lands_in_that_game(study: Path, tmp_path: Path) -> None:
    client = TestClient(create_study_app(study, labels_root=tmp_path / "labels"), base_url=LOCAL)
    meta = client.get(f"/game/{DONE}/api/game").json()
    body = {"annotator": "ann", "atom": "C", "step": 1, "actor": meta["agents"][0]}
    assert client.post(f"/game/{DONE}/api/labels", json=body).status_code == 201
    saved = json.loads((tmp_path / "labels" / DONE / "ann.jsonl").read_text())
    assert saved["game"] == meta["game_id"]
    assert client.get(f"/game/{RUNNING}/api/labels").json() == []


def test_view_refuses_a_folder_that_is_neither_a_game_nor_a_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "events.jsonl" in err and "manifest.json" in err


def test_a_study_without_a_readable_manifest_says_so(tmp_path: Path) -> None:
    client = TestClient(create_study_app(tmp_path), base_url=LOCAL)
    s = client.get("/api/study").json()
    assert s["games"] == [] and "manifest.json not found" in s["error"]
    (tmp_path / "manifest.json").write_text('{"version": 99, "name": "x"}')
    s = client.get("/api/study").json()
    assert s["games"] == [] and "newer" in s["error"]
    assert client.get("/game/games/a/seed1-try1/").status_code == 404
