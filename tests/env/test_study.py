"""`mineamongus.Study` on the fake world: a tiny study of two games, one of them with a
human seat beside the scripted agents (nobody answers it, so it times out)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import mineamongus
from controller.checks import log_violations
from controller.tournament.manifest import read_manifest
from controller.tournament.spec import SpecError

SPEC = {
    "name": "api-tiny",
    "world": "fake",
    "seeds": [5],
    "base": {"frames": "off", "rules": {"max_steps": 10}},
    "arms": [
        {"name": "scripted"},
        {
            "name": "with-human",
            "overrides": {"seats": {"red": {"agent": "human", "args": {"timeout_s": 0.2}}}},
        },
    ],
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> mineamongus.StudyResult:
    base = tmp_path_factory.mktemp("study")
    spec = base / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    study = mineamongus.Study.from_yaml(spec, out=base / "out")
    assert study.name == "api-tiny" and study.games == 2 and study.seeds == [5]
    assert [a.name for a in study.arms] == ["scripted", "with-human"]
    return study.run(workers=2)


def test_the_study_runs_to_its_end_with_typed_results(finished: mineamongus.StudyResult) -> None:
    assert finished.ok, finished.message
    assert finished.exit_code == 0 and finished.counts["done"] == 2
    assert finished.runs == finished.out / "games" and finished.runs.is_dir()
    runs = finished.run_dirs()
    assert len(runs) == 2
    for run in runs:
        assert (run / "summary.json").is_file()
        assert log_violations(run / "events.jsonl") == []
    games = finished.games_table()
    assert len(games) == 2 and set(games["arm"]) == {"scripted", "with-human"}
    assert (games["status"] == "done").all()
    assert finished.games_path == finished.out / "results" / "games.parquet"


def test_a_spec_seats_a_human_and_the_record_marks_it(finished: mineamongus.StudyResult) -> None:
    seats = finished.seats_table()
    human = seats[seats["arm"] == "with-human"].set_index("seat")
    assert human.loc["red", "agent_kind"] == "human"
    assert (human.drop(index="red")["agent_kind"] == "scripted").all()
    assert (seats[seats["arm"] == "scripted"]["agent_kind"] == "scripted").all()
    manifest = read_manifest(finished.out)
    assert manifest is not None
    run = finished.out / manifest.games["with-human/seed5"].attempts[-1].run
    start = json.loads((run / "events.jsonl").read_text().splitlines()[0])
    assert start["agent_specs"]["red"]["kind"] == "human"
    assert start["config"]["seats"]["red"]["agent"] == "human"
    # The seat's page address went to the game's log and its folder.
    url = (run / "human" / "red.url").read_text().strip()
    assert url.startswith("http://127.0.0.1:") and url in (run / "play.log").read_text()


def test_running_a_finished_study_again_resumes_it(finished: mineamongus.StudyResult) -> None:
    again = mineamongus.Study.from_yaml(finished.out / "spec.yaml", out=finished.out).run()
    assert again.ok and again.counts["done"] == 2


def test_a_bad_seat_colour_in_a_spec_names_the_arm_and_the_field(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    data = {**SPEC, "arms": [{"name": "oops", "overrides": {"seats": {"purple": {}}}}]}
    spec.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match=r"(?s)arm .oops.*seats\.purple: no seat"):
        mineamongus.Study.from_yaml(spec)
