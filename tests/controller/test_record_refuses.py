"""The record reader refuses a record that would lie: a cut log beside an intact
summary, a line that is not JSON, a file that is not text, an empty log, a summary of
another game; each refusal names the file, the line and the fix, and changes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from controller.record import NotAGameLog, PartialRecord, RecordError, RunRecord, read_log

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def game(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from controller.cli import main

    out = tmp_path_factory.mktemp("rec") / "g"
    assert (
        main(
            [
                "play",
                "--world",
                "fake",
                "--seed",
                "3",
                "--max-steps",
                "8",
                "--frames",
                "off",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


def _copy(game: Path, tmp: Path) -> Path:
    dst = tmp / "run"
    shutil.copytree(game, dst)
    return dst


def _snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}


def test_a_whole_game_reads(game: Path) -> None:
    rec = RunRecord.read(game)
    assert not rec.partial and rec.end is not None


def test_half_a_log_beside_an_intact_summary_is_refused(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    (run / "events.jsonl").write_text("".join(lines[: len(lines) // 2]))
    before = _snapshot(run)
    with pytest.raises(RecordError, match="no game_end, but summary.json says") as info:
        RunRecord.read(run)
    assert str(run / "events.jsonl") in str(info.value)
    assert _snapshot(run) == before


def test_a_garbage_line_is_refused_with_its_number(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    lines.insert(5, "this is not json\n")
    (run / "events.jsonl").write_text("".join(lines))
    with pytest.raises(RecordError, match=r"events.jsonl: line 6: not a JSON event"):
        RunRecord.read(run)
    with pytest.raises(RecordError, match="line 6"):
        read_log(run)


def test_a_garbage_last_line_is_damage_not_a_cut(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    text = (run / "events.jsonl").read_text()
    (run / "events.jsonl").write_text(text + "garbage\n")
    n = len(text.splitlines()) + 1
    with pytest.raises(RecordError, match=rf"line {n}: not a JSON event"):
        read_log(run)


def test_a_binary_file_is_refused(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    (run / "events.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    with pytest.raises(RecordError, match="not a text file"):
        RunRecord.read(run)


def test_an_empty_log_is_refused(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    (run / "events.jsonl").write_text("")
    (run / "summary.json").unlink()
    with pytest.raises(NotAGameLog, match="line 1: the log is empty"):
        RunRecord.read(run)


def test_a_killed_game_is_partial_and_only_read_on_request(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    (run / "summary.json").unlink()
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    # Killed mid-write: the last line has no newline.
    (run / "events.jsonl").write_text("".join(lines[:-3]) + lines[-3][:20])
    with pytest.raises(PartialRecord, match="no game_end"):
        RunRecord.read(run)
    rec = RunRecord.read(run, partial=True)
    assert rec.partial and rec.end is None


def test_a_summary_of_another_game_is_refused(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    data = json.loads((run / "summary.json").read_text())
    data["winner"] = "crew" if data["winner"] == "impostors" else "impostors"
    (run / "summary.json").write_text(json.dumps(data))
    with pytest.raises(RecordError, match="summary.json: winner is"):
        RunRecord.read(run)


def test_an_unreadable_summary_is_refused(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    (run / "summary.json").write_text("{not json")
    with pytest.raises(RecordError, match="summary.json: not a readable summary"):
        RunRecord.read(run)


def test_an_event_of_the_wrong_shape_names_its_field(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        ev = json.loads(line)
        if ev["kind"] == "step_start":
            ev["step"] = "seven"
            lines[i] = json.dumps(ev) + "\n"
            break
    (run / "events.jsonl").write_text("".join(lines))
    with pytest.raises(RecordError, match=rf"line {i + 1}: a `step_start` event whose step"):
        read_log(run)


def test_a_last_line_cut_inside_a_character_is_a_cut_not_damage(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    (run / "summary.json").unlink()
    text = (run / "events.jsonl").read_text()
    cut = '{"kind": "chat", "text": "caf\u00e9'.encode()[:-1]  # half of the é
    (run / "events.jsonl").write_bytes(text.encode() + cut)
    events = read_log(run)
    assert len(events) == len(text.splitlines())


def test_the_follower_refuses_a_garbage_line_with_its_number(tmp_path: Path) -> None:
    from controller.record import LogFollower

    log = tmp_path / "events.jsonl"
    log.write_text('{"kind": "step_start", "step": 1, "tick": 0}\n')
    follower = LogFollower(tmp_path)
    assert follower.poll() == [{"kind": "step_start", "step": 1, "tick": 0}]
    with log.open("a") as fh:
        fh.write("not json\n")
    with pytest.raises(RecordError, match="line 2: not a JSON event"):
        follower.poll()


def test_a_cut_log_names_its_last_line(game: Path, tmp_path: Path) -> None:
    run = _copy(game, tmp_path)
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    (run / "events.jsonl").write_text("".join(lines[:7]))
    with pytest.raises(RecordError, match=r"events.jsonl: line 7: no game_end"):
        RunRecord.read(run)
