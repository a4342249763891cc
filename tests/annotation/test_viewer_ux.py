"""What a reader of the viewer meets: the winner banner, and records that cannot be read.

The banner's words and who sees what of it are checked on the API (the page draws what
it is given; `tests/integration/test_viewer_browser.py` checks the drawing, the chat
that follows its last line and the default "Decision of" seat in Chromium). Each
broken record (a log cut beside its summary, a garbage line, a binary file, an empty
log nobody writes) is fed to the viewer's app and to `mineamongus view`: both report
the shared reader's error with its file and line, and no file of the run changes. A
game still being written is followed live, never called broken.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from annotation.viewer.app import create_app
from annotation.viewer.record import (
    STALE_S,
    STOPPED_MESSAGE,
    RecordProblem,
    RunRecord,
    log_writers,
    record_problem,
    result_line,
)
from annotation.viewer.server import BackgroundViewer
from annotation.viewer.study import create_study_app
from controller.cli import main, play_game
from controller.config import resolve_config
from controller.tournament.manifest import Attempt, Entry, Manifest, write_manifest
from world.spec import load_map

LOCAL = "http://127.0.0.1"
"""The viewer answers only its own (loopback) Host names, not TestClient's `testserver`."""
TOKEN = "analyst-token-for-tests"


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished fake-world game (quick preset, seed 2: a meeting, kills, crew wins)."""
    out = tmp_path_factory.mktemp("played")
    config = resolve_config("quick", overrides={"seed": 2, "frames": "off"})
    assert play_game(config, load_map(config.map), "fake", out).status == "ok"
    return out


def _lines(run: Path) -> list[str]:
    return (run / "events.jsonl").read_text().splitlines(keepends=True)


def _events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in _lines(run)]


def _age(path: Path, seconds: float = 60.0) -> None:
    """Make a file look unchanged for `seconds` (as a log nobody writes any more)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under a folder: its bytes and modification time."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _client(run: Path, **kwargs: Any) -> TestClient:
    from annotation.viewer.access import Access

    return TestClient(create_app(run, access=Access(analyst_token=TOKEN), **kwargs), base_url=LOCAL)


def _copy(played: Path, dst: Path, lines: list[str], summary: bool) -> Path:
    dst.mkdir(parents=True)
    (dst / "events.jsonl").write_text("".join(lines))
    if summary:
        shutil.copy(played / "summary.json", dst / "summary.json")
    return dst


def _as_human(lines: list[str]) -> list[str]:
    """The same log as if a person had played red."""
    start = json.loads(lines[0])
    start["agent_specs"]["red"] = {"kind": "human", "state": "ego", "timeout_s": 60.0}
    start["config"]["seats"] = {"red": {"agent": "human", "args": {}}}
    return [json.dumps(start) + "\n", *lines[1:]]


# ---------------------------------------------------------------------- the banner
@pytest.mark.parametrize(
    ("end", "headline"),
    [
        (
            {"winner": "impostors", "ending": "impostors_outnumber"},
            "Impostors win: crewmates outnumbered",
        ),
        ({"winner": "crew", "ending": "tasks_done"}, "Crew wins: all tasks done"),
        ({"winner": "crew", "ending": "impostors_ejected"}, "Crew wins: all impostors ejected"),
        ({"winner": "impostors", "ending": "timeout"}, "Impostors win: the step limit was reached"),
        (
            {"winner": None, "ending": "invalid", "status": "invalid"},
            "No winner: the game was declared invalid",
        ),
    ],
)
def test_the_banner_words_each_ending(end: dict[str, Any], headline: str) -> None:
    assert result_line({"status": "ok", **end}) == headline


def test_a_finished_game_shows_its_winner_and_names_no_impostor_without_the_analyst(
    played: Path,
) -> None:
    client = _client(played)
    end = _events(played)[-1]
    roles = _events(played)[0]["roles"]
    impostors = [a for a in _events(played)[0]["agents"] if roles[a] == "impostor"]
    blind = client.get("/api/game").json()
    assert blind["result"]["headline"] == result_line(end) == "Crew wins: all tasks done"
    assert (blind["result"]["winner"], blind["result"]["ending"]) == (end["winner"], end["ending"])
    # What the viewer already keeps from an annotator stays kept: no role, no name.
    assert blind["roles"] == {} and "impostors" not in blind["result"]
    assert not any(a in json.dumps(blind["result"]) for a in impostors)
    analyst = client.get("/api/game?analyst=1").json()
    assert analyst["result"]["impostors"] == impostors and len(impostors) == 2


def test_the_banner_comes_with_game_end_in_a_live_game(played: Path, tmp_path: Path) -> None:
    lines = _lines(played)
    run = _copy(played, tmp_path / "live", lines[:-1], summary=False)
    client = _client(run)
    before = client.get("/api/game").json()
    assert before["result"] is None and before["over"] is False and before["problem"] is None
    with (run / "events.jsonl").open("a") as fh:
        fh.write(lines[-1])
    after = client.get("/api/game").json()
    assert after["over"] is True and after["result"]["headline"] == "Crew wins: all tasks done"


def test_a_sealed_game_has_no_banner_until_it_ends_then_a_blind_one(
    played: Path, tmp_path: Path
) -> None:
    lines = _as_human(_lines(played))
    run = _copy(played, tmp_path / "human", lines[:-1], summary=False)
    client = _client(run)
    sealed = client.get("/api/game?analyst=1").json()
    assert sealed["sealed"] is True and sealed["result"] is None
    assert client.get("/api/game", params={"analyst": TOKEN}).json()["result"] is None  # no end yet
    with (run / "events.jsonl").open("a") as fh:
        fh.write(lines[-1])
    ended = client.get("/api/game").json()
    assert ended["sealed"] is False and ended["result"]["headline"] == "Crew wins: all tasks done"
    assert "impostors" not in ended["result"] and ended["roles"] == {}


# ---------------------------------------------------------------------- broken records
BROKEN = ("half", "garbage", "binary", "empty")


def _broken(kind: str, played: Path, dst: Path) -> tuple[Path, int]:
    """A run folder broken as `kind` says, aged as a record nobody writes; (folder, line
    the error must name)."""
    lines = _lines(played)
    if kind == "half":  # a log cut beside its intact summary
        kept = lines[: len(lines) // 2]
        run, line = _copy(played, dst, kept, summary=True), len(kept)
    elif kind == "garbage":  # one complete line that is no event, mid-log
        run, line = _copy(played, dst, [*lines[:40], "this is not json\n", *lines[41:]], True), 41
    elif kind == "binary":  # a picture where the log should be
        run = _copy(played, dst, [], summary=False)
        (run / "events.jsonl").write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)))
        line = 1
    else:  # an empty log that no process writes
        run, line = _copy(played, dst, [], summary=False), 1
    _age(run / "events.jsonl")
    return run, line


@pytest.mark.parametrize("kind", BROKEN)
def test_view_reports_a_broken_record_with_its_file_and_line(
    kind: str, played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, line = _broken(kind, played, tmp_path / kind)
    before = _files(run)
    log = str(run.resolve() / "events.jsonl")
    client = _client(run)
    meta = client.get("/api/game").json()
    problem = meta["problem"]
    assert problem is not None, kind
    assert (problem["file"], problem["line"]) == (log, line)
    assert problem["message"].startswith(f"{log}: line {line}: ") and problem["fix"]
    # Nothing is read around the fault: no seat, no step, no map.
    assert meta["agents"] == [] and meta["steps"] == [] and meta["map"] == {}
    step = client.get("/api/step/1")
    assert step.status_code == 409 and step.json()["error"] == problem["message"]
    live = client.get("/api/live").text
    assert "event: broken" in live and "event: step" not in live
    label = {"annotator": "a", "atom": "C", "step": 1, "actor": "red", "evidence": ""}
    assert client.post("/api/labels", json=label).status_code == 409
    assert 'id="record-error"' in client.get("/").text
    # `mineamongus view RUN` refuses it, printing the same error.
    assert main(["view", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'events.jsonl'}: line {line}: " in err and problem["fix"] in err
    assert _files(run) == before, "the viewer changed the run folder"


def test_the_error_is_the_shared_readers_own(played: Path, tmp_path: Path) -> None:
    from controller.record import RecordError
    from controller.record import RunRecord as LogRecord

    run, _ = _broken("garbage", played, tmp_path / "g")
    with pytest.raises(RecordError) as err:
        LogRecord.read(run)
    assert RunRecord(run).problem == RecordProblem.of(err.value, run / "events.jsonl")


def test_an_empty_log_waits_while_fresh_or_written_and_is_broken_after(tmp_path: Path) -> None:
    run = tmp_path / "starting"
    run.mkdir()
    log = run / "events.jsonl"
    log.touch()
    # Just created (a game setting up its world): waited for.
    assert record_problem(run) is None and RunRecord(run).problem is None
    meta = _client(run).get("/api/game").json()
    assert meta["problem"] is None and meta["steps"] == []
    _age(log, STALE_S + 30)
    with log.open("a"):  # a process holds it open for writing: still setting up
        assert record_problem(run) is None and RunRecord(run).problem is None
    # Closed and unchanged past STALE_S: broken.
    problem = RunRecord(run).problem
    assert problem is not None and problem.kind == "not_a_game" and problem.line == 1
    assert record_problem(run) == problem


def test_a_writer_is_a_process_holding_the_log_open_for_writing(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text("")
    if log_writers(log) is None:
        pytest.skip("no /proc here: the run folder's changes stand in for it")
    assert log_writers(log) is False
    with log.open("r"):
        assert log_writers(log) is False
    with log.open("a"):
        assert log_writers(log) is True
    assert log_writers(log) is False


def test_a_growing_log_is_followed_and_one_cut_beside_a_summary_is_broken(
    played: Path, tmp_path: Path
) -> None:
    lines = _lines(played)
    half = len(lines) // 2
    run = _copy(played, tmp_path / "growing", lines[:half], summary=False)
    record = RunRecord(run)
    assert record.problem is None and record.stopped is None and record.steps
    first = record.last_step
    with (run / "events.jsonl").open("a") as fh:
        fh.write("".join(lines[half : half + 40]) + lines[half + 40][:15])  # one line mid-write
    assert record.refresh() and record.last_step > first and record.problem is None
    # The fault planted: the summary of a finished game beside the cut log.
    shutil.copy(played / "summary.json", run / "summary.json")
    record.refresh()
    # The line named is where the log stops: the one cut mid-write.
    assert record.problem is not None and record.problem.line == half + 41
    assert "no game_end, but summary.json says the game ended" in record.problem.problem


def test_an_unfinished_game_nobody_writes_is_shown_with_a_notice(
    played: Path, tmp_path: Path
) -> None:
    lines = _lines(played)
    run = _copy(played, tmp_path / "killed", lines[: len(lines) // 2], summary=False)
    _age(run / "events.jsonl")
    meta = _client(run).get("/api/game").json()
    assert meta["problem"] is None and meta["stopped"] == STOPPED_MESSAGE and meta["steps"]
    with (run / "events.jsonl").open("a"):  # its process still holds it: a slow step
        if log_writers(run / "events.jsonl") is not None:
            assert RunRecord(run).stopped is None


def test_a_garbage_line_arriving_live_ends_the_stream_with_the_error(
    played: Path, tmp_path: Path
) -> None:
    lines = _lines(played)
    run = _copy(played, tmp_path / "live", lines[:60], summary=False)
    client = _client(run)
    assert client.get("/api/game").json()["problem"] is None
    with (run / "events.jsonl").open("a") as fh:
        fh.write("".join(lines[60:70]) + "{torn\n" + "".join(lines[70:80]))
    live = client.get("/api/live").text  # would follow forever without the fault
    assert "event: broken" in live
    problem = client.get("/api/game").json()["problem"]
    assert problem["line"] == 71 and client.get("/api/step/1").status_code == 409


def test_a_sealed_games_error_withholds_the_lines_text_but_not_from_the_token(
    played: Path, tmp_path: Path
) -> None:
    lines = _as_human(_lines(played))
    torn = lines[30][:50] + "\n"  # the start of an event line: it holds the game id
    run = _copy(played, tmp_path / "human", [*lines[:30], torn, *lines[31:60]], summary=False)
    game_id = json.loads(lines[0])["game_id"]
    client = _client(run)
    blind = client.get("/api/game?analyst=1").json()["problem"]
    assert blind["line"] == 31 and blind["file"].endswith("events.jsonl")
    assert game_id not in json.dumps(blind) and "withheld" in blind["problem"]
    opened = client.get("/api/game", params={"analyst": TOKEN}).json()["problem"]
    assert opened["line"] == 31 and "not a JSON event (" in opened["problem"]


# ---------------------------------------------------------------------- a study
def test_a_study_lists_its_broken_games_with_their_errors_and_serves_the_rest(
    played: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    study = tmp_path / "study"
    runs = {
        "ok": "games/arm/seed1-try1",
        "garbage": "games/arm/seed2-try1",
        "half": "games/arm/seed3-try1",
    }
    shutil.copytree(played, study / runs["ok"])
    lines = {}
    for kind in ("garbage", "half"):
        _, lines[kind] = _broken(kind, played, study / runs[kind])
    games = {
        f"arm/seed{i}": Entry(
            arm="arm",
            seed=i,
            status="done",
            attempts=[Attempt(run=runs[k], started=1.0, ended=2.0, outcome="done")],
        )
        for i, k in ((1, "ok"), (2, "garbage"), (3, "half"))
    }
    write_manifest(
        study, Manifest(name="s", world="fake", arms={"arm": "x"}, seeds=[1, 2, 3], games=games)
    )
    before = _files(study)
    told: list[RecordProblem] = []
    client = TestClient(create_study_app(study, report=told.append), base_url=LOCAL)
    rows = {g["run"]: g for g in client.get("/api/study").json()["games"]}
    assert rows[runs["ok"]]["problem"] is None
    for kind in ("garbage", "half"):
        problem = rows[runs[kind]]["problem"]
        assert problem["line"] == lines[kind], kind
        assert problem["file"] == str((study / runs[kind] / "events.jsonl").resolve())
    assert sorted(p.line for p in told if p.line is not None) == sorted(lines.values())
    # The good game is served as ever; a broken one's page shows its error.
    ok = client.get(f"/game/{runs['ok']}/api/game").json()
    assert ok["problem"] is None and ok["steps"] and ok["result"]
    bad = client.get(f"/game/{runs['garbage']}/api/game").json()
    assert bad["problem"]["line"] == lines["garbage"] and bad["steps"] == []
    # `mineamongus view STUDY` serves the study and prints each broken game's error.
    monkeypatch.setattr(BackgroundViewer, "wait", lambda self: None)
    assert main(["view", str(study)]) == 0
    err = capsys.readouterr().err
    for kind in ("garbage", "half"):
        assert f"{study.resolve() / runs[kind] / 'events.jsonl'}: line {lines[kind]}: " in err
    assert runs["ok"] not in err
    assert _files(study) == before, "the viewer changed the study folder"
