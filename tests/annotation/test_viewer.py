"""The viewer's index of a run folder and its HTTP API, on fake-world games."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from annotation.viewer.app import LabelError, read_labels, validate_label
from annotation.viewer.record import RunRecord
from annotation.viewer.server import BackgroundViewer, start_background
from controller.cli import play_game
from controller.config import resolve_config
from world.spec import load_map


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("viewer-fake")
    config = resolve_config("quick", overrides={"seed": 2, "frames": "jpg"})
    result = play_game(config, load_map(config.map), "fake", out)
    assert result.status == "ok"
    return out


@pytest.fixture
def viewer(fake_run: Path, tmp_path: Path) -> Iterator[tuple[BackgroundViewer, Path]]:
    labels = tmp_path / "labels"
    v = start_background(fake_run, labels=labels)
    try:
        yield v, labels
    finally:
        v.stop()


def _events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as res:
        return json.loads(res.read())


def _post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_index_has_every_step_and_the_step_end_positions(fake_run: Path) -> None:
    record = RunRecord(fake_run)
    events = _events(fake_run)
    steps = {e["step"] for e in events if e["kind"] == "step_start"}
    assert steps <= set(record.steps)
    assert record.last_step == max(steps)
    # The players drawn for a step are the last step-end snapshot of that step.
    for e in events:
        if e["kind"] == "positions" and e.get("cause", "step_end") == "step_end":
            last = e
            if e["step"] in record.steps and e["step"] > 0:
                shown = record.steps[e["step"]].players
                assert set(shown) == set(e["players"])
    assert last is not None


def test_secrets_only_for_the_analyst(fake_run: Path) -> None:
    record = RunRecord(fake_run)
    narrated = [e for e in _events(fake_run) if e["kind"] == "decision" and e.get("narration")]
    assert narrated, "scripted impostors narrate their intent"
    step, agent = narrated[0]["step"], narrated[0]["agent"]
    assert "narration" not in record.step(step, analyst=False)["decisions"][agent]
    assert record.step(step, analyst=True)["decisions"][agent]["narration"]
    assert record.meta(analyst=False)["roles"] == {}
    assert set(record.meta(analyst=True)["roles"].values()) == {"crewmate", "impostor"}


def test_frames_point_at_the_files_on_disk(fake_run: Path) -> None:
    record = RunRecord(fake_run)
    data = record.step(1, analyst=False)
    assert data["frames"], "frames were on"
    for agent, url in data["frames"].items():
        assert url == f"run/frames/0001/{agent}.jpg"
        assert (fake_run / url.removeprefix("run/")).is_file()


def test_a_growing_log_is_read_incrementally_and_a_partial_line_waits(
    tmp_path: Path, fake_run: Path
) -> None:
    lines = (fake_run / "events.jsonl").read_text().splitlines(keepends=True)
    run = tmp_path / "live"
    run.mkdir()
    log = run / "events.jsonl"
    half = len(lines) // 2
    log.write_text("".join(lines[:half]))
    record = RunRecord(run)
    first = record.last_step
    with log.open("a") as fh:
        fh.write(lines[half][:10])  # a line being written
    assert record.refresh() is False or record.last_step == first
    with log.open("a") as fh:
        fh.write(lines[half][10:] + "".join(lines[half + 1 :]))
    assert record.refresh() is True
    assert record.last_step > first
    assert record.end is not None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"annotator": "", "atom": "C", "step": 1, "actor": "red"}, "annotator"),
        ({"annotator": "a b", "atom": "C", "step": 1, "actor": "red"}, "annotator"),
        ({"annotator": "ann", "atom": "Z", "step": 1, "actor": "red"}, "atom"),
        ({"annotator": "ann", "atom": "C", "step": "x", "actor": "red"}, "step"),
        ({"annotator": "ann", "atom": "C", "step": 100000, "actor": "red"}, "step"),
        ({"annotator": "ann", "atom": "C", "step": 1, "actor": "purple"}, "actor"),
    ],
)
def test_bad_labels_are_refused_naming_the_field(
    fake_run: Path, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(LabelError, match=f"^{field}:"):
        validate_label(RunRecord(fake_run), body)


def test_api_serves_the_game_steps_and_saves_labels(
    viewer: tuple[BackgroundViewer, Path], fake_run: Path
) -> None:
    v, labels = viewer
    meta = _get(v.url + "api/game")
    assert meta["agents"] == ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
    assert meta["over"] is True
    assert {r["name"] for r in meta["map"]["rooms"]} >= {"cafeteria", "electrical"}
    step = _get(v.url + "api/step/1")
    assert step["step"] == 1
    with urllib.request.urlopen(v.url + step["frames"]["red"].lstrip("/"), timeout=10) as res:
        assert res.read() == (fake_run / "frames/0001/red.jpg").read_bytes()
    status, saved = _post(
        v.url + "api/labels",
        {"annotator": "ann1", "atom": "c", "step": 1, "actor": "Red", "evidence": "close behind"},
    )
    assert status == 201 and saved["atom"] == "C" and saved["actor"] == "red"
    status, err = _post(v.url + "api/labels", {"annotator": "ann1", "atom": "Z", "step": 1})
    assert status == 400 and err["error"].startswith("atom:")
    on_disk = read_labels(labels)
    assert [(x["annotator"], x["atom"], x["step"], x["actor"]) for x in on_disk] == [
        ("ann1", "C", 1, "red")
    ]
    assert _get(v.url + "api/labels") == on_disk
    # The file is in the human-label format `analyze --human` imports.
    from annotation.deception.human import read_labels as import_labels

    imported = import_labels(labels / "ann1.jsonl")
    assert [(x.annotator, x.atom, x.step, x.actor) for x in imported] == [("ann1", "C", 1, "red")]
    with pytest.raises(urllib.error.HTTPError):
        _get(v.url + "api/step/99999")


def test_live_stream_announces_steps(viewer: tuple[BackgroundViewer, Path]) -> None:
    v, _ = viewer
    with urllib.request.urlopen(v.url + "api/live", timeout=10) as res:
        assert res.headers["Content-Type"].startswith("text/event-stream")
        body = res.read().decode()  # the game is over, so the stream ends
    assert "event: step" in body and '"over": true' in body


def test_play_with_view_serves_the_game_while_it_is_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.cli import main

    out = tmp_path / "run"
    code = main(
        [
            "play",
            "--world",
            "fake",
            "--frames",
            "off",
            "--seed",
            "3",
            "--quiet",
            "--view",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 0
    assert "viewer: http://127.0.0.1:" in err
    assert f"mineamongus view {out}" in err
    assert (out / "events.jsonl").is_file()
