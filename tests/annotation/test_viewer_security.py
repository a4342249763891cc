"""Who may reach the viewer and what it shows while a person plays a seat.

Each attack is planted and seen refused: the seat's token fetched through the viewer,
the roles read during a live human-seat game (with `analyst=1` or nothing), labels
written from another origin (`text/plain` or JSON), a foreign `Host` (DNS rebinding)
and a non-loopback bind without `--allow-remote`. The paths meant to work are checked
beside them: a same-origin JSON label, the analyst token, a finished game's analyst
switch.
"""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.testclient import TestClient

from annotation.viewer import server
from annotation.viewer.access import (
    Access,
    HostPolicy,
    RemoteBindError,
    check_bind,
    is_loopback,
)
from annotation.viewer.app import create_app
from annotation.viewer.server import BackgroundViewer, ViewerError, start_background
from annotation.viewer.study import create_study_app
from controller.cli import main, play_game
from controller.config import resolve_config
from controller.tournament.manifest import Attempt, Entry, Manifest, write_manifest
from world.spec import load_map

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "analyst-secret-token"
SEAT_TOKEN = "seat-secret-token"


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished fake-world game with frames (its red seat becomes a person's below)."""
    out = tmp_path_factory.mktemp("played")
    config = resolve_config("quick", overrides={"seed": 2, "frames": "jpg"})
    assert play_game(config, load_map(config.map), "fake", out).status == "ok"
    return out


def _human_copy(played: Path, dst: Path, live: bool) -> Path:
    """`played` as if a person had played red; `live` cuts it before its end. The seat's
    address is planted where the seat writes it, world-readable as it once was, and a
    judge finding naming an impostor beside it."""
    events = [json.loads(x) for x in (played / "events.jsonl").read_text().splitlines()]
    start = events[0]
    start["agent_specs"]["red"] = {"kind": "human", "state": "ego", "timeout_s": 60.0}
    start["config"]["seats"] = {"red": {"agent": "human", "args": {}}}
    if live:
        cut = [i for i, e in enumerate(events) if e["kind"] == "step_start"][6]
        events = events[: cut + 1]
    dst.mkdir(parents=True)
    (dst / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    shutil.copytree(played / "frames", dst / "frames")
    if not live:
        shutil.copy(played / "summary.json", dst / "summary.json")
    seat = dst / "human" / "red.url"
    seat.parent.mkdir()
    seat.write_text(f"http://127.0.0.1:8800/?token={SEAT_TOKEN}\n")
    seat.chmod(0o644)
    impostor = next(a for a, r in start["roles"].items() if r == "impostor")
    finding = {"atom": "C", "step": 1, "actor": impostor, "source": "judge", "evidence": "x"}
    (dst / "annotations.jsonl").write_text(json.dumps(finding) + "\n")
    return dst


@pytest.fixture
def live_run(played: Path, tmp_path: Path) -> Path:
    return _human_copy(played, tmp_path / "live", live=True)


@pytest.fixture
def ended_run(played: Path, tmp_path: Path) -> Path:
    return _human_copy(played, tmp_path / "ended", live=False)


def _client(run: Path, labels: Path | None = None) -> TestClient:
    access = Access(HostPolicy.for_bind("127.0.0.1", PORT), TOKEN)
    return TestClient(create_app(run, labels, access=access), base_url=BASE)


def _first_frame(run: Path) -> str:
    step = sorted(p.name for p in (run / "frames").iterdir())[1]
    return f"frames/{step}/red.jpg"


# ---------------------------------------------------------------------- attack 1
@pytest.mark.parametrize("live", [True, False])
def test_the_seats_token_is_never_served(played: Path, tmp_path: Path, live: bool) -> None:
    run = _human_copy(played, tmp_path / "run", live=live)
    client = _client(run)
    # Refused by name, whatever else the run route would serve.
    named = client.get("/run/human/red.url", headers={"X-Analyst-Token": TOKEN})
    assert named.status_code == 403 and "never served" in named.text
    for path in (
        "/run/human/red.url",
        "/run/human/red.url?analyst=" + TOKEN,
        "/run/./human/red.url",
        "/run/frames/../human/red.url",
        "/run/HUMAN/red.url",
    ):
        res = client.get(path, headers={"X-Analyst-Token": TOKEN})
        assert res.status_code in (403, 404), path
        assert SEAT_TOKEN not in res.text, path
    # Nothing but frames is served from the run folder, even to the analyst.
    for name in ("events.jsonl", "summary.json", "annotations.jsonl", "human/"):
        res = client.get(f"/run/{name}?analyst={TOKEN}")
        assert res.status_code in (403, 404), name
        assert "impostor" not in res.text, name


# ---------------------------------------------------------------------- attack 2
def test_a_live_human_seat_game_is_sealed_without_the_token(live_run: Path) -> None:
    client = _client(live_run)
    for query in ("", "?analyst=1", "?analyst=true", "?analyst=wrong-token"):
        meta = client.get("/api/game" + query)
        assert meta.status_code == 200
        body = meta.json()
        assert body["sealed"] is True and body["roles"] == {} and body["steps"] == []
        assert body["annotations"] == [] and body["seed"] is None and body["game_id"] == ""
        assert "impostor" not in meta.text, query
        step = client.get("/api/step/3" + query)
        assert step.status_code == 403 and "impostor" not in step.text
        assert client.get(f"/run/{_first_frame(live_run)}{query}").status_code == 403
        assert client.get("/api/labels" + query).status_code == 403
    # What any player could know anyway still works: the page, the seats, the map.
    assert client.get("/").status_code == 200
    body = client.get("/api/game").json()
    assert body["agents"][0] == "red" and body["map"]["rooms"]
    # A label can neither be written into the live game without the token.
    label = {"annotator": "ann1", "atom": "C", "step": 1, "actor": "red"}
    assert client.post("/api/labels?analyst=1", json=label).status_code == 403
    assert not (live_run / "labels").exists()


def test_the_analyst_token_opens_a_live_human_seat_game(live_run: Path) -> None:
    client = _client(live_run)
    full = client.get(f"/api/game?analyst={TOKEN}").json()
    assert full["sealed"] is False and set(full["roles"].values()) == {"crewmate", "impostor"}
    assert full["steps"] and full["annotations"]
    by_header = client.get("/api/game?analyst=1", headers={"X-Analyst-Token": TOKEN}).json()
    assert by_header["roles"] == full["roles"]
    # The token opens the game; without the switch the roles stay hidden (annotators).
    blind = client.get("/api/game", headers={"X-Analyst-Token": TOKEN}).json()
    assert blind["sealed"] is False and blind["steps"] and blind["roles"] == {}
    assert client.get(f"/api/step/3?analyst={TOKEN}").status_code == 200
    frame = client.get(f"/run/{_first_frame(live_run)}?analyst={TOKEN}")
    assert (
        frame.status_code == 200
        and frame.content == (live_run / _first_frame(live_run)).read_bytes()
    )
    assert client.get("/api/labels", headers={"X-Analyst-Token": TOKEN}).status_code == 200


def test_a_finished_human_seat_game_answers_the_analyst_switch(ended_run: Path) -> None:
    client = _client(ended_run)
    analyst = client.get("/api/game?analyst=1").json()
    assert analyst["sealed"] is False and set(analyst["roles"].values()) == {"crewmate", "impostor"}
    annotator = client.get("/api/game").json()
    assert annotator["roles"] == {} and annotator["steps"]  # today's blinding is kept
    assert "narration" not in json.dumps(client.get("/api/step/3").json()["decisions"])
    assert client.get(f"/run/{_first_frame(ended_run)}").status_code == 200


def test_a_study_seals_its_live_human_seat_game_but_not_for_its_token(
    live_run: Path, tmp_path: Path
) -> None:
    study = tmp_path / "study"
    run = "games/arm/seed2-try1"
    shutil.copytree(live_run, study / run)
    entry = Entry(arm="arm", seed=2, status="running", attempts=[Attempt(run=run, started=1.0)])
    write_manifest(
        study, Manifest(name="s", world="fake", arms={"arm": "x"}, seeds=[2], games={"a": entry})
    )
    access = Access(HostPolicy.for_bind("127.0.0.1", PORT), TOKEN)
    client = TestClient(create_study_app(study, access=access), base_url=BASE)
    sealed = client.get(f"/game/{run}/api/game?analyst=1").json()
    assert sealed["sealed"] and sealed["roles"] == {}
    assert client.get(f"/game/{run}/run/human/red.url").status_code == 403
    opened = client.get(f"/game/{run}/api/game?analyst={TOKEN}").json()
    assert set(opened["roles"].values()) == {"crewmate", "impostor"}
    foreign = client.get(f"/game/{run}/api/game", headers={"Host": f"evil.example:{PORT}"})
    assert foreign.status_code == 421


# ---------------------------------------------------------------------- attack 3
def test_a_cross_origin_text_plain_label_is_refused(played: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels"
    client = _client(played, labels)
    body = json.dumps({"annotator": "ann1", "atom": "C", "step": 1, "actor": "red"})
    for headers in (
        {"Content-Type": "text/plain", "Origin": "http://127.0.0.1:9000"},
        {"Content-Type": "text/plain;charset=UTF-8", "Sec-Fetch-Site": "same-site"},
        {"Content-Type": "text/plain"},
        {"Content-Type": "application/x-www-form-urlencoded", "Origin": "null"},
    ):
        res = client.post("/api/labels", content=body, headers=headers)
        assert res.status_code == 415, headers
    assert not labels.exists()


def test_a_cross_origin_json_label_is_refused(played: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels"
    client = _client(played, labels)
    label = {"annotator": "ann1", "atom": "C", "step": 1, "actor": "red"}
    for headers in (
        {"Origin": "http://127.0.0.1:9000"},  # another local port
        {"Origin": f"http://localhost:{PORT}"},  # another name: another origin
        {"Origin": "null"},
        {"Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        res = client.post("/api/labels", json=label, headers=headers)
        assert res.status_code == 403, headers
    assert not labels.exists()


def test_a_same_origin_json_label_is_saved(played: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels"
    client = _client(played, labels)
    label = {"annotator": "ann1", "atom": "C", "step": 1, "actor": "red", "evidence": "e"}
    headers = {"Origin": BASE, "Sec-Fetch-Site": "same-origin"}
    res = client.post("/api/labels", json=label, headers=headers)
    assert res.status_code == 201, res.text
    saved = json.loads((labels / "ann1.jsonl").read_text())
    assert (saved["atom"], saved["actor"], saved["step"]) == ("C", "red", 1)
    # A program that sends no Origin (curl, a script) is fine too.
    assert client.post("/api/labels", json=label).status_code == 201


# ---------------------------------------------------------------------- attack 4
@pytest.mark.parametrize(
    "host", [f"evil.example:{PORT}", "evil.example", f"127.0.0.1:{PORT + 1}", "", "[::1"]
)
def test_a_foreign_host_header_is_refused(played: Path, tmp_path: Path, host: str) -> None:
    labels = tmp_path / "labels"
    client = _client(played, labels)
    for path in ("/", "/api/game?analyst=1", "/api/step/1?analyst=1", "/api/labels"):
        res = client.get(path, headers={"Host": host})
        assert res.status_code == 421, (host, path)
        assert "impostor" not in res.text
    label = {"annotator": "ann1", "atom": "C", "step": 1, "actor": "red"}
    res = client.post("/api/labels", json=label, headers={"Host": host, "Origin": f"http://{host}"})
    assert res.status_code == 421 and not labels.exists()


def test_the_loopback_names_on_the_port_are_answered(played: Path) -> None:
    client = _client(played)
    for host in (f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}", f"LOCALHOST:{PORT}"):
        assert client.get("/api/game", headers={"Host": host}).status_code == 200, host


def test_a_host_bound_on_purpose_is_answered_and_no_other_name() -> None:
    one = HostPolicy.for_bind("192.168.1.5", PORT)
    assert one.allows(f"192.168.1.5:{PORT}") and one.allows(f"localhost:{PORT}")
    assert not one.allows(f"10.0.0.1:{PORT}") and not one.allows(f"evil.example:{PORT}")
    every = HostPolicy.for_bind("0.0.0.0", PORT)
    assert every.allows(f"10.0.0.1:{PORT}") and every.allows(f"[fe80::1]:{PORT}")
    assert not every.allows(f"evil.example:{PORT}") and not every.allows("10.0.0.1:1")


def test_a_real_viewer_refuses_a_rebinding_host_and_seals_a_live_game(
    live_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server as `play --view` starts it: Host check, sealing and the printed token."""
    from annotation.commands.view import start_live

    viewer = start_live(live_run)
    try:
        err = capsys.readouterr().err
        assert isinstance(viewer, BackgroundViewer)
        analyst_url = viewer.analyst_url
        assert analyst_url in err and "keep it from the players" in err

        def get(url: str, host: str | None = None) -> tuple[int, str]:
            headers = {"Host": host} if host else {}
            try:
                with urllib.request.urlopen(
                    urllib.request.Request(url, headers=headers), timeout=10
                ) as res:
                    return res.status, res.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read().decode()

        rebind = f"rebind.example:{viewer.port}"
        code, text = get(viewer.url + "api/game?analyst=1", rebind)
        assert code == 421 and "impostor" not in text
        code, text = get(viewer.url + "api/game?analyst=1")
        assert code == 200 and json.loads(text)["sealed"] and "impostor" not in text
        assert get(viewer.url + "run/human/red.url")[0] == 403
        analyst = analyst_url.replace("?", "api/game?")
        code, text = get(analyst)
        assert code == 200 and "impostor" in json.loads(text)["roles"].values()
    finally:
        viewer.stop()


# ---------------------------------------------------------------------- remote binds
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.org"])
def test_a_non_loopback_bind_without_the_flag_is_refused(
    played: Path, host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(RemoteBindError, match="--allow-remote"):
        check_bind(host, allow_remote=False)
    with pytest.raises(ViewerError, match="--allow-remote"):
        start_background(played, host=host)
    assert main(["view", str(played), "--host", host]) == 2
    err = capsys.readouterr().err
    assert "--allow-remote" in err and "viewer: " not in err


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_binds_need_no_flag(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, allow_remote=False)


def test_a_remote_bind_with_the_flag_warns_who_can_reach_it(
    played: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, Any] = {}

    def fake_serve(*args: Any, **kwargs: Any) -> None:  # nothing is bound in a test
        seen.update(kwargs, host=args[1])
        viewer = SimpleNamespace(
            port=9000, url="http://0.0.0.0:9000/", analyst_url="http://0.0.0.0:9000/?analyst=t"
        )
        kwargs["on_start"](viewer)

    monkeypatch.setattr(server, "serve", fake_serve)
    assert main(["view", str(played), "--host", "0.0.0.0", "--allow-remote"]) == 0
    err = capsys.readouterr().err
    assert seen["allow_remote"] is True and seen["host"] == "0.0.0.0"
    assert "warning:" in err and "every interface" in err and "anyone who can reach it" in err
