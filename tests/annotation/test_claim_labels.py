"""Claim labels: the store, the labelling view's API and the `analyze` result.

The store keeps one line per (annotator, game, rule book, claim or utterance), the last
line of a key wins and a bad line is refused with its file and line. The view lists
the audit of a fake-world study and saves only labels of claims the audit holds, sent
as same-origin JSON. The validity figures are checked against counts worked out by
hand from a label file written here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pytest
from starlette.testclient import TestClient

from annotation.grounding.claims import Claim
from annotation.grounding.labels import (
    ClaimLabel,
    ClaimLabelError,
    UtteranceLabel,
    append_label,
    claim_id,
    claim_labels_dir,
    current_labels,
    label_file,
    read_label_file,
    read_labels,
)
from annotation.report.claims_validity import (
    COLUMNS,
    NO_LABELS,
    claim_validity,
    claim_validity_table,
    label_folders,
)
from annotation.report.results import StudyData
from annotation.viewer.study import create_study_app
from controller.cli import main, play_game
from controller.config import resolve_config
from controller.tournament.manifest import Attempt, Entry, Manifest, write_manifest
from world.spec import load_map

LOCAL = "http://127.0.0.1"
"""The viewer answers only its own Host names, not TestClient's `testserver`."""
RUN = "games/arm/seed2-try1"
GAME = "20260101-000000-2-abcdef"


def _claim(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": "claim",
        "annotator": "ann",
        "game": GAME,
        "rules": "mineamongus",
        "claim": "1:red:1:0123456789",
        "verdict": "true",
        "verdict_ok": True,
        "extraction_ok": None,
        "time": 1.0,
    }
    return {**base, **over}


def _utterance(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": "utterance",
        "annotator": "ann",
        "game": GAME,
        "rules": "mineamongus",
        "utterance": "1:red:1",
        "extracted": 1,
        "missed": 0,
        "time": 1.0,
    }
    return {**base, **over}


def _write(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


# ---------------------------------------------------------------------- the store
def test_labels_round_trip_through_the_store(tmp_path: Path) -> None:
    folder = claim_labels_dir(tmp_path)
    assert folder == tmp_path / "labels" / "claims"
    claim = ClaimLabel.model_validate(_claim(extraction_ok=False))
    said = UtteranceLabel.model_validate(_utterance(missed=2))
    assert append_label(folder, claim) == label_file(folder, "ann") == folder / "ann.jsonl"
    append_label(folder, said)
    assert read_labels(folder) == [claim, said]
    lines = [json.loads(x) for x in (folder / "ann.jsonl").read_text().splitlines()]
    assert lines[0] == _claim(extraction_ok=False)
    assert lines[1] == _utterance(missed=2)
    assert read_labels(tmp_path / "nowhere") == []


def test_the_last_line_of_a_key_wins(tmp_path: Path) -> None:
    folder = claim_labels_dir(tmp_path)
    _write(
        folder / "ann.jsonl",
        [
            _claim(verdict_ok=True, time=1.0),
            _claim(claim="1:red:1:aaaaaaaaaa", verdict_ok=False),
            _utterance(missed=1),
            _claim(verdict_ok=False, extraction_ok=True, time=2.0),
            _claim(rules="quack", verdict_ok=True),  # another book: another key
            _utterance(missed=3),
        ],
    )
    _write(folder / "bob.jsonl", [_claim(annotator="bob", verdict_ok=True)])
    standing = current_labels(folder)
    assert len(standing) == 5
    mine = [x for x in standing if isinstance(x, ClaimLabel) and x.annotator == "ann"]
    first = next(x for x in mine if x.claim == "1:red:1:0123456789" and x.rules == "mineamongus")
    assert (first.verdict_ok, first.extraction_ok, first.time) == (False, True, 2.0)
    said = [x for x in standing if isinstance(x, UtteranceLabel)]
    assert [x.missed for x in said] == [3]
    bob = next(x for x in standing if x.annotator == "bob")
    assert isinstance(bob, ClaimLabel) and bob.verdict_ok is True


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("{not json", "not JSON"),
        (json.dumps(_claim(verdict_ok="yes")), "verdict_ok"),
        (json.dumps(_claim(note="extra")), "note"),
        (json.dumps(_claim(rules="house")), "rules"),
        (json.dumps(_claim(verdict="maybe")), "verdict"),
        (json.dumps(_claim(claim="red-1")), "claim"),
        (json.dumps(_utterance(missed=-1)), "missed"),
        (json.dumps({**_claim(), "kind": "atom"}), "kind"),
        (json.dumps(_claim(annotator="bob")), "annotator 'bob' in the file of 'ann'"),
        ("[1, 2]", "kind"),
    ],
)
def test_a_bad_line_is_refused_with_its_file_and_line(
    tmp_path: Path, bad: str, problem: str
) -> None:
    path = _write(tmp_path / "ann.jsonl", [_claim(), "", bad, _utterance()])
    with pytest.raises(ClaimLabelError) as err:
        read_label_file(path)
    assert str(err.value).startswith(f"{path}: line 3: ")
    assert problem in str(err.value)
    with pytest.raises(ClaimLabelError, match="line 3"):
        current_labels(tmp_path)


def test_a_claim_id_names_its_utterance_and_changes_with_the_claim() -> None:
    said = {"meeting": 2, "speaker": "red", "utterance": 3, "text": "I was in admin."}
    a = Claim.model_validate({**said, "type": "location", "room": "admin"})
    b = Claim.model_validate({**said, "type": "location", "room": "o2"})
    assert claim_id(a) == claim_id(Claim.model_validate(a.model_dump()))
    assert claim_id(a).startswith("2:red:3:") and claim_id(a) != claim_id(b)
    label = ClaimLabel.model_validate(_claim(claim=claim_id(a)))
    assert label.utterance == "2:red:3"


# ---------------------------------------------------------------------- the figures
def _wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson 95 % score interval, written out here."""
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


HAND_LABELS: list[dict[str, Any] | str] = [
    # utterance 1:red:1 has claims a, b; 1:blue:1 has claim c; 2:red:1 has d, e.
    _claim(claim="1:red:1:aaaaaaaaaa", verdict="true", verdict_ok=False, extraction_ok=True),
    _claim(claim="1:red:1:aaaaaaaaaa", verdict="true", verdict_ok=True, extraction_ok=True),
    _claim(claim="1:red:1:bbbbbbbbbb", verdict="false", verdict_ok=True, extraction_ok=False),
    _claim(claim="1:blue:1:cccccccccc", verdict="true", verdict_ok=False, extraction_ok=True),
    _claim(claim="2:red:1:dddddddddd", verdict="wrong_room", verdict_ok=True),
    _claim(claim="2:red:1:eeeeeeeeee", verdict="true", verdict_ok=None, extraction_ok=True),
    _utterance(utterance="1:red:1", extracted=2, missed=1),
    _utterance(utterance="1:blue:1", extracted=1, missed=0),
    _utterance(utterance="2:red:1", extracted=2, missed=4),  # d has no extraction label
    _utterance(utterance="3:red:1", extracted=0, missed=2),  # no claim extracted at all
    _claim(rules="quack", claim="1:red:1:aaaaaaaaaa", verdict="near_miss", verdict_ok=False),
]
"""Standing after "last wins": mineamongus verdicts a true/right, b false/right,
c true/wrong, d wrong_room/right (e not judged); extractions a right, b wrong, c right,
e right; both judged: a (right, right), b (right, wrong), c (wrong, right). Recall:
1:red:1 recovers 1 (a) of 1 + 1 missed, 1:blue:1 1 of 1, 3:red:1 0 of 2; 2:red:1 is
incomplete (d unlabelled) and left out: 2 of 5. quack: one near_miss verdict, wrong."""
HAND_FIGURES = {
    ("mineamongus", "verdict_precision", "true"): (1, 2),
    ("mineamongus", "verdict_precision", "false"): (1, 1),
    ("mineamongus", "verdict_precision", "wrong_room"): (1, 1),
    ("mineamongus", "verdict_precision", "*"): (3, 4),
    ("mineamongus", "extraction_precision", "*"): (3, 4),
    ("mineamongus", "pipeline_precision", "*"): (1, 3),
    ("mineamongus", "extraction_recall", "*"): (2, 5),
    ("quack", "verdict_precision", "near_miss"): (0, 1),
    ("quack", "verdict_precision", "*"): (0, 1),
    ("quack", "extraction_precision", "*"): (0, 0),
    ("quack", "pipeline_precision", "*"): (0, 0),
    ("quack", "extraction_recall", "*"): (0, 0),
}


def _check(table: pd.DataFrame, figures: dict[tuple[str, str, str], tuple[int, int]]) -> None:
    got = {
        (r.rules, r.measure, r.verdict): (int(r.right), int(r.n))
        for r in table.itertuples()
        if r.annotator == "ann"
    }
    assert got == figures
    for r in table.itertuples():
        if r.n:
            low, high = _wilson(int(r.right), int(r.n))
            assert r.value == pytest.approx(r.right / r.n)
            assert (r.ci_low, r.ci_high) == (pytest.approx(low), pytest.approx(high))
        else:
            assert math.isnan(r.value) and math.isnan(r.ci_low)


def test_the_figures_are_the_hand_counts_of_a_label_file(tmp_path: Path) -> None:
    folder = claim_labels_dir(tmp_path)
    _write(folder / "ann.jsonl", HAND_LABELS)
    table = claim_validity_table(current_labels(folder))
    assert list(table.columns) == COLUMNS
    _check(table, HAND_FIGURES)


def _study_data(study: Path, games: list[str], out: Path) -> StudyData:
    run = study / RUN
    frame = pd.DataFrame({"game_id": games})
    stub = SimpleNamespace(
        dataset=SimpleNamespace(folders=[run]), all_games=frame, games=frame, out=out
    )
    return cast(StudyData, stub)


def test_the_analyze_result_reads_the_study_labels_and_says_when_there_are_none(
    tmp_path: Path,
) -> None:
    study = tmp_path / "study"
    (study / RUN).mkdir(parents=True)
    assert label_folders([study / RUN]) == []
    empty = claim_validity(_study_data(study, [GAME], tmp_path))
    assert list(empty.tables["claim_validity"].columns) == COLUMNS
    assert empty.tables["claim_validity"].empty
    assert NO_LABELS in str(empty.sections[0].blocks)
    _write(claim_labels_dir(study) / "ann.jsonl", HAND_LABELS)
    assert label_folders([study / RUN]) == [claim_labels_dir(study)]
    got = claim_validity(_study_data(study, [GAME], tmp_path))
    _check(got.tables["claim_validity"], HAND_FIGURES)
    blocks = str(got.sections[0].blocks)
    assert "1 utterance(s) with a count of missed claims" in blocks
    # Labels of games that are not analysed are left out, and said so.
    other = claim_validity(_study_data(study, ["another-game"], tmp_path))
    assert other.tables["claim_validity"].empty
    assert "name games not analysed" in str(other.sections[0].blocks)
    # A bad line stops nothing else: the section says which file and line.
    _write(claim_labels_dir(study) / "bob.jsonl", ['{"kind": "claim"}'])
    bad = claim_validity(_study_data(study, [GAME], tmp_path))
    assert "bob.jsonl: line 1" in str(bad.sections[0].blocks)


def test_several_annotators_are_reported_apart_and_pooled(tmp_path: Path) -> None:
    folder = claim_labels_dir(tmp_path)
    _write(folder / "ann.jsonl", [_claim(verdict_ok=True)])
    _write(folder / "bob.jsonl", [_claim(annotator="bob", verdict_ok=False)])
    table = claim_validity_table(current_labels(folder))
    pooled = table[
        (table.annotator == "*") & (table.measure == "verdict_precision") & (table.verdict == "*")
    ]
    assert (int(pooled.right.iloc[0]), int(pooled.n.iloc[0])) == (1, 2)
    assert set(table.annotator) == {"ann", "bob", "*"}


# ---------------------------------------------------------------------- the view
@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study of one fake-world game (quick preset, seed 2: a meeting in which every
    living player speaks), audited by both rule books."""
    out = tmp_path_factory.mktemp("claims-study")
    config = resolve_config("quick", overrides={"seed": 2})
    assert play_game(config, load_map(config.map), "fake", out / RUN).status == "ok"
    games = {
        "arm/seed2": Entry(
            arm="arm",
            seed=2,
            status="done",
            attempts=[Attempt(run=RUN, started=1.0, ended=2.0, outcome="done")],
        )
    }
    write_manifest(out, Manifest(name="s", world="fake", arms={"arm": "x"}, seeds=[2], games=games))
    return out


@pytest.fixture(scope="module")
def audited(study: Path) -> Path:
    assert main(["audit", str(study)]) == 0
    assert main(["audit", str(study), "--rules", "quack"]) == 0
    return study


def _client(study: Path) -> TestClient:
    return TestClient(create_study_app(study), base_url=LOCAL)


def test_without_an_audit_the_page_names_the_command(tmp_path: Path, study: Path) -> None:
    bare = tmp_path / "bare"
    (bare / RUN).mkdir(parents=True)
    for name in ("events.jsonl", "summary.json"):
        (bare / RUN / name).write_bytes((study / RUN / name).read_bytes())
    (bare / "manifest.json").write_bytes((study / "manifest.json").read_bytes())
    client = _client(bare)
    page = client.get("/claims/")
    assert page.status_code == 200 and "static/claims.js" in page.text
    assert client.get("/claims/static/claims.js").status_code == 200
    got = client.get("/claims/api/claims").json()
    assert got["books"] == [] and got["utterances"] == []
    assert got["missing"] == f"mineamongus audit {bare.resolve()}"
    assert got["commands"]["quack"].endswith("--rules quack")
    body = {"kind": "claim", "annotator": "ann", "game": "g", "rules": "mineamongus"}
    refused = client.post("/claims/api/labels", json={**body, "claim": "1:red:1:0123456789"})
    assert refused.status_code == 400 and "no audit" in refused.json()["error"]


def _audit_rows(study: Path, folder: str) -> list[dict[str, Any]]:
    path = study / folder / "claims.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_the_view_lists_every_audited_claim_under_its_utterance(audited: Path) -> None:
    client = _client(audited)
    assert 'href="claims/"' in client.get("/").text  # the study page links to it
    got = client.get("/claims/api/claims", params={"rules": "mineamongus"}).json()
    rows = _audit_rows(audited, "audit")
    assert got["books"] == ["mineamongus", "quack"] and got["claims"] == len(rows) > 0
    listed = [c for u in got["utterances"] for c in u["claims"]]
    assert sorted(c["id"] for c in listed) == sorted(
        claim_id(Claim.model_validate(r)) for r in rows
    )
    events = [json.loads(x) for x in (audited / RUN / "events.jsonl").read_text().splitlines()]
    spoken = [e for e in events if e["kind"] == "speech" and e["text"]]
    assert len(got["utterances"]) == len(spoken)
    for u, e in zip(got["utterances"], spoken, strict=True):
        assert (u["speaker"], u["step"], u["text"], u["run"]) == (
            e["speaker"],
            e["step"],
            e["text"],
            RUN,
        )
        for c in u["claims"]:
            assert c["id"].startswith(u["id"] + ":") and "evidence" in c and c["reason"]
            assert "speaker_role" not in c and "hit" not in c  # roles: analyst view only
    analyst = client.get("/claims/api/claims", params={"analyst": "1"}).json()
    assert all("speaker_role" in c for u in analyst["utterances"] for c in u["claims"])
    quack = client.get("/claims/api/claims", params={"rules": "quack"}).json()
    assert {c["rules"] for u in quack["utterances"] for c in u["claims"]} == {"quack"}
    assert client.get("/claims/api/claims", params={"rules": "house"}).status_code == 400


def test_labels_are_saved_beside_the_study_with_the_audit_verdict(audited: Path) -> None:
    client = _client(audited)
    got = client.get("/claims/api/claims").json()
    u = next(u for u in got["utterances"] if u["claims"])
    c = u["claims"][0]
    body = {"kind": "claim", "annotator": "ann", "game": u["game"], "rules": "mineamongus"}
    first = client.post("/claims/api/labels", json={**body, "claim": c["id"], "verdict_ok": False})
    assert first.status_code == 201, first.json()
    assert first.json()["verdict"] == c["verdict"] and first.json()["extraction_ok"] is None
    # One press changes one judgement: the other is kept.
    second = client.post(
        "/claims/api/labels", json={**body, "claim": c["id"], "extraction_ok": True}
    )
    assert (second.json()["verdict_ok"], second.json()["extraction_ok"]) == (False, True)
    missed = client.post(
        "/claims/api/labels",
        json={**body, "kind": "utterance", "utterance": u["id"], "missed": 2},
    )
    assert missed.status_code == 201 and missed.json()["extracted"] == len(u["claims"])
    saved = audited / "labels" / "claims" / "ann.jsonl"
    assert len(saved.read_text().splitlines()) == 3
    assert not list((audited / RUN).rglob("claims/*.jsonl"))  # never in the game's folder
    standing = client.get("/claims/api/labels").json()
    assert len(standing) == 2 and standing[0]["extraction_ok"] is True
    # Planted faults: a claim the audit does not hold, a verdict sent by the page, an
    # utterance nobody said, a book without an audit of this study.
    for bad, field in (
        ({**body, "claim": "9:red:9:0123456789"}, "claim"),
        ({**body, "claim": c["id"], "verdict": "false"}, "verdict"),
        ({**body, "kind": "utterance", "utterance": "9:red:9", "missed": 1}, "utterance"),
        ({**body, "rules": "house", "claim": c["id"]}, "rules"),
        ({**body, "annotator": "../x", "claim": c["id"]}, "annotator"),
        ({**body, "claim": c["id"], "verdict_ok": "yes"}, "verdict_ok"),
    ):
        res = client.post("/claims/api/labels", json=bad)
        assert res.status_code == 400 and res.json()["error"].startswith(field), res.json()
    assert len(saved.read_text().splitlines()) == 3


def test_a_label_from_another_origin_is_refused(audited: Path) -> None:
    client = _client(audited)
    got = client.get("/claims/api/claims").json()
    u = next(u for u in got["utterances"] if u["claims"])
    body = {
        "kind": "claim",
        "annotator": "mallory",
        "game": u["game"],
        "rules": "mineamongus",
        "claim": u["claims"][0]["id"],
        "verdict_ok": False,
    }
    attacks: list[tuple[dict[str, str], int]] = [
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "http://127.0.0.1:9999"}, 403),  # another local port
        ({"Sec-Fetch-Site": "cross-site"}, 403),
    ]
    for headers, status in attacks:
        assert client.post("/claims/api/labels", json=body, headers=headers).status_code == status
    plain = client.post(
        "/claims/api/labels", content=json.dumps(body), headers={"Content-Type": "text/plain"}
    )
    assert plain.status_code == 415
    foreign = TestClient(create_study_app(audited), base_url="http://rebound.example")
    assert foreign.post("/claims/api/labels", json=body).status_code == 421
    assert foreign.get("/claims/api/claims").status_code == 421
    assert not (audited / "labels" / "claims" / "mallory.jsonl").exists()
    # The same write from the page's own origin is taken.
    own = client.post("/claims/api/labels", json=body, headers={"Origin": LOCAL})
    assert own.status_code == 201
    assert (audited / "labels" / "claims" / "mallory.jsonl").is_file()


def test_a_run_viewed_alone_labels_its_own_claims(tmp_path: Path, study: Path) -> None:
    """`mineamongus view RUN` serves the claims page under the game; a game served as
    part of a study leaves it to the study's page."""
    from annotation.viewer.app import create_app

    run = tmp_path / "run"
    run.mkdir()
    for name in ("events.jsonl", "summary.json"):
        (run / name).write_bytes((study / RUN / name).read_bytes())
    alone = TestClient(create_app(run), base_url=LOCAL)
    page = alone.get("/claims/")
    assert page.status_code == 200 and "static/claims.js" in page.text
    got = alone.get("/claims/api/claims").json()
    assert got["missing"] == f"mineamongus audit {run.resolve()}"
    assert got["labels"] == str(run.resolve() / "labels" / "claims")
    inside = TestClient(create_app(run, study_url="/"), base_url=LOCAL)
    assert inside.get("/claims/").status_code == 404
