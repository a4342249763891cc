"""The human seat locked to its owner: its page answers only its own Host, takes answers
only as same-origin JSON with its token, and its address (which holds the token) is
written for its owner alone and never served by the viewer, not even during the game.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.testclient import TestClient

import mineamongus
from annotation.viewer.server import BackgroundViewer, start_background
from controller.agents.base import AgentDecision
from controller.game import GameResult
from mineamongus.human import Desk, Question, seat_app, seat_url_path, write_private

PORT = 8800
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "seat-token"


class _Codec:
    """Stands in for `mineamongus.spaces.Codec`: the answer's module becomes the decision."""

    def decide(self, action: Any, phase: str, view_text: str, spec: dict[str, Any]) -> Any:
        return AgentDecision(module=str(action["module"]), raw=json.dumps(action))


def _asked(desk: Desk) -> Question:
    """One open question on the desk (its loop closed: the answer only records it)."""
    known: Any = SimpleNamespace(role="crewmate", teammates=[], chat=[], phase="free_roam")

    async def ask() -> Question:
        codec: Any = _Codec()
        return desk.ask(known, "you are in the cafeteria", codec, {"phase": "free_roam"}, None)

    return asyncio.run(ask())


@pytest.fixture
def desk() -> Desk:
    return Desk("red", None, {"state": "ego"})


@pytest.fixture
def page(desk: Desk) -> TestClient:
    return TestClient(seat_app(desk, TOKEN, PORT), base_url=BASE)


def _act(qid: int) -> dict[str, Any]:
    return {"question": qid, "action": {"module": "MOVE", "room": 0}}


def test_the_seats_own_page_and_answer_work(desk: Desk, page: TestClient) -> None:
    q = _asked(desk)
    assert page.get("/").status_code == 200
    assert page.get("/", headers={"Host": f"localhost:{PORT}"}).status_code == 200
    state = page.get("/api/state", headers={"X-Seat-Token": TOKEN})
    assert state.status_code == 200 and state.json()["question"]["id"] == q.id
    same = {"X-Seat-Token": TOKEN, "Origin": BASE, "Sec-Fetch-Site": "same-origin"}
    res = page.post("/api/act", json=_act(q.id), headers=same)
    assert res.status_code == 200 and res.json()["module"] == "MOVE"
    assert q.decision is not None and q.decision.module == "MOVE"


def test_a_foreign_host_reaches_nothing_of_the_seat(desk: Desk, page: TestClient) -> None:
    q = _asked(desk)
    for host in (f"rebind.example:{PORT}", f"127.0.0.1:{PORT + 1}", "rebind.example", ""):
        headers = {"Host": host, "X-Seat-Token": TOKEN}
        assert page.get("/", headers=headers).status_code == 421, host
        state = page.get("/api/state", headers=headers)
        assert state.status_code == 421 and "crewmate" not in state.text, host
        act = page.post(
            "/api/act", json=_act(q.id), headers={**headers, "Origin": f"http://{host}"}
        )
        assert act.status_code == 421, host
    assert q.decision is None


def test_an_answer_from_another_origin_is_refused(desk: Desk, page: TestClient) -> None:
    q = _asked(desk)
    for headers in (
        {"Origin": "http://127.0.0.1:9000"},
        {"Origin": f"http://localhost:{PORT}"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        res = page.post("/api/act", json=_act(q.id), headers={"X-Seat-Token": TOKEN, **headers})
        assert res.status_code == 403, headers
    plain = page.post(
        "/api/act",
        content=json.dumps(_act(q.id)),
        headers={"X-Seat-Token": TOKEN, "Content-Type": "text/plain"},
    )
    assert plain.status_code == 415
    assert q.decision is None  # the question is still the person's to answer
    # Nor does a token that is not the seat's (any text: no server error).
    for token in ("wrong", "ünïcode", ""):
        res = page.post("/api/act", json=_act(q.id), params={"token": token})
        assert res.status_code == 403, token
    assert q.decision is None


def test_the_address_file_is_its_owners_alone(tmp_path: Path) -> None:
    path = seat_url_path(tmp_path, "red")
    path.parent.mkdir()
    path.write_text("old")
    path.chmod(0o644)  # left world-readable by an earlier version
    old = os.umask(0o022)
    try:
        write_private(path, "http://127.0.0.1:1/?token=t\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.read_text() == "http://127.0.0.1:1/?token=t\n"


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers or {}), timeout=10
        ) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _post(url: str, body: Any, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_live_game_hides_the_seat_and_the_roles_from_the_viewer(tmp_path: Path) -> None:
    """`play --seat red=human --view` in-process: what the viewer gives away while red is
    played, then the game played to its end through red's own page."""
    out = tmp_path / "game"
    config = {
        "seed": 4,
        "frames": "jpg",
        "rules": {"max_steps": 6, "initial_kill_cooldown_ticks": 5000},
        "seats": {"red": {"agent": "human", "args": {"timeout_s": 60}}},
    }
    done: dict[str, GameResult] = {}
    game = threading.Thread(
        target=lambda: done.setdefault("result", mineamongus.play(config, world="fake", out=out)),
        daemon=True,
    )
    viewer: BackgroundViewer = start_background(out)
    game.start()
    try:
        url_file = seat_url_path(out, "red")
        deadline = time.monotonic() + 60
        while not (url_file.is_file() and (out / "events.jsonl").is_file()):
            assert time.monotonic() < deadline and game.is_alive(), "no seat address"
            time.sleep(0.05)
        assert stat.S_IMODE(url_file.stat().st_mode) == 0o600
        seat_url = url_file.read_text().strip()
        base, token = seat_url.split("?token=")
        # Attack 1: the seat's address through the viewer.
        code, text = _get(viewer.url + "run/human/red.url")
        assert code == 403 and token not in text
        # Attack 2: the roles while red is played (with the switch, or with nothing).
        seat = {"X-Seat-Token": token}
        while (q := _get(base + "api/state", seat))[0] == 200 and not json.loads(q[1])["question"]:
            assert game.is_alive()
            time.sleep(0.05)
        for query in ("", "?analyst=1"):
            code, text = _get(viewer.url + "api/game" + query)
            meta = json.loads(text)
            assert code == 200 and meta["sealed"] and meta["roles"] == {} and meta["steps"] == []
            assert "impostor" not in text
            assert _get(viewer.url + "api/step/1" + query)[0] == 403
        assert (
            "impostor"
            in json.loads(_get(viewer.analyst_url.replace("?", "api/game?"))[1])["roles"].values()
        )
        # Red plays through its own page: answers from another origin are refused.
        answered = 0
        while game.is_alive():
            code, text = _get(base + "api/state", seat)
            question = json.loads(text)["question"] if code == 200 else None
            if not question:
                time.sleep(0.05)
                continue
            allowed = [m["name"] for m in question["modules"] if m["allowed"]]
            module = "VOTE" if "VOTE" in allowed else "MEETING" if "MEETING" in allowed else "MOVE"
            action = {"module": module, "vote": "skip", "text": "", "room": 0}
            body = {"question": question["id"], "action": action}
            foreign = {**seat, "Origin": "http://127.0.0.1:9"}
            assert _post(base + "api/act", body, foreign)[0] == 403
            code, reply = _post(base + "api/act", body, {**seat, "Origin": base.rstrip("/")})
            assert code in (200, 409), reply  # 409: the step moved on meanwhile
            answered += code == 200
        game.join(60)
        assert done["result"].status == "ok" and answered
        # The game has ended: the analyst switch works again for annotators of the run.
        meta = json.loads(_get(viewer.url + "api/game?analyst=1")[1])
        assert not meta["sealed"] and "impostor" in meta["roles"].values()
        assert json.loads(_get(viewer.url + "api/game")[1])["roles"] == {}
        assert _get(viewer.url + "run/human/red.url")[0] == 403
        events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
        red = [e for e in events if e["kind"] == "decision" and e["agent"] == "red"]
        assert len([d for d in red if d["error_kind"] != "infrastructure"]) == answered
    finally:
        viewer.stop()
        game.join(5)
