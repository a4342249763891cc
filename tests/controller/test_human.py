"""The `human` seat without a browser: its page's API drives a fake-world game in-process.

The page's own JavaScript is driven in Chromium by tests/integration/test_human_seat.py;
here the same HTTP calls the page makes answer the seat, so the record can be checked
against them quickly: the answers are the seat's decisions, a refused one is a logged
`rules` failure, silence past the time limit an `infrastructure` timeout, and the seat
is marked human.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import mineamongus
from controller.agents.registry import AgentKindError, get_kind, kinds
from controller.checks import log_violations
from controller.config import ConfigError, resolve_config
from controller.game import GameResult
from controller.players import check_sides

RULES = {
    "max_steps": 12,
    "emergency_initial_lockout_ticks": 0,
    "initial_kill_cooldown_ticks": 5000,
    "max_utterances": 1,
}
"""No kill before the meeting the human calls (the seat must live to speak and vote)."""


class Seat:
    """The seat's page API, as the page calls it."""

    def __init__(self, run: Path, seat: str = "red", timeout_s: float = 60.0) -> None:
        path = run / "human" / f"{seat}.url"
        deadline = time.monotonic() + timeout_s
        while not path.is_file():
            assert time.monotonic() < deadline, f"no {path}"
            time.sleep(0.02)
        self.url = path.read_text().strip()
        self.base, self.token = self.url.split("?token=")

    def call(
        self, path: str, body: Any = None, token: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        headers = {"X-Seat-Token": self.token if token is None else token}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                return res.status, json.loads(res.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def question(self, after: int, game: threading.Thread) -> dict[str, Any] | None:
        """The next open question after id `after` (None once the game has ended)."""
        while game.is_alive():
            code, state = self.call("api/state")
            assert code == 200
            q = state["question"]
            if q is not None and q["id"] > after:
                return dict(q)
            time.sleep(0.02)
        return None


def _start(config: dict[str, Any], out: Path) -> tuple[threading.Thread, dict[str, GameResult]]:
    done: dict[str, GameResult] = {}
    game = threading.Thread(
        target=lambda: done.setdefault("result", mineamongus.play(config, world="fake", out=out)),
        daemon=True,
    )
    game.start()
    return game, done


def _events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def _allowed(q: dict[str, Any]) -> list[str]:
    return [m["name"] for m in q["modules"] if m["allowed"]]


def test_human_is_a_registered_kind_with_validated_args() -> None:
    assert "human" in kinds()
    config = resolve_config(
        "quick", overrides={"seats": {"red": {"agent": "human", "args": {"timeout_s": 5}}}}
    )
    assert config.seats["red"].agent == "human"
    assert config.seats["red"].args == {
        "port": None,
        "timeout_s": 5.0,
        "state": "ego",
        "name": None,
    }
    with pytest.raises(ConfigError, match=r"seats\.red\.args\.timeout_s"):
        resolve_config(
            "quick", overrides={"seats": {"red": {"agent": "human", "args": {"timeout_s": 0}}}}
        )
    with pytest.raises(ConfigError, match=r"seats\.red\.args\.colour: Extra inputs"):
        resolve_config(
            "quick", overrides={"seats": {"red": {"agent": "human", "args": {"colour": 1}}}}
        )


def test_a_bad_seat_colour_names_the_field_and_the_fix() -> None:
    with pytest.raises(ConfigError) as err:
        resolve_config("quick", overrides={"seats": {"purple": {"agent": "human"}}})
    text = str(err.value)
    assert "seats.purple" in text and "red, blue, green" in text and "seats: {red:" in text
    # A colour beyond `rules.n_players` is no seat either.
    with pytest.raises(ConfigError, match=r"seats\.white: no seat"):
        resolve_config(
            "quick",
            overrides={"rules": {"n_players": 5, "n_impostors": 1}, "seats": {"white": {}}},
        )
    with pytest.raises(ConfigError, match=r"seats\.red\.agent: unknown agent kind 'nobody'"):
        resolve_config("quick", overrides={"seats": {"red": {"agent": "nobody"}}})


def test_a_fixed_port_in_use_is_refused_before_the_game() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        config = resolve_config(
            "quick", overrides={"seats": {"red": {"agent": "human", "args": {"port": port}}}}
        )
        with pytest.raises(AgentKindError, match=rf"seats\.red\.args\.port: port {port}.*in use"):
            check_sides(config)
    kind = get_kind("human")
    kind.check(kind.parse_args({}), "crew")  # a free port cannot be taken


def test_the_pages_answers_are_the_seats_decisions(tmp_path: Path) -> None:
    out = tmp_path / "game"
    config = {
        "seed": 3,
        "frames": "jpg",
        "rules": RULES,
        "seats": {"red": {"agent": "human", "args": {"timeout_s": 60}}},
    }
    game, done = _start(config, out)
    seat = Seat(out)
    assert seat.url.startswith("http://127.0.0.1:")
    assert seat.call("api/state", token="wrong")[0] == 403
    sent: list[tuple[int, dict[str, Any]]] = []
    places: list[tuple[int, dict[str, Any]]] = []
    last, phases = 0, set()
    refused = False
    while (q := seat.question(last, game)) is not None:
        last = q["id"]
        phases.add(q["phase"])
        allowed = _allowed(q)
        # Where the page draws the seat and its tasks while this question is open.
        places.append((q["step"], seat.call("api/state")[1]["place"]))
        if q["phase"] == "free_roam" and q["frame"]:
            with urllib.request.urlopen(
                f"{seat.base}api/frame/{q['id']}?token={seat.token}", timeout=10
            ) as res:
                assert res.headers["content-type"] == "image/jpeg" and res.read(2) == b"\xff\xd8"
        if q["phase"] == "free_roam" and not refused:
            # Not allowed now, and not replaced: a rules failure of the seat.
            action: dict[str, Any] = {"module": "VOTE", "vote": "skip"}
            refused = True
        elif q["phase"] == "free_roam" and "EMERGENCY" in allowed and "meeting" not in phases:
            action = {"module": "EMERGENCY"}
        elif q["phase"] == "free_roam":
            room = next(o for o in q["options"]["room"] if o["allowed"])
            action = {"module": "MOVE", "room": room["value"]}
        elif q["phase"] == "meeting":
            assert allowed == ["MEETING"]
            action = {"module": "MEETING", "text": "I was fixing wires in electrical."}
        else:
            assert allowed == ["VOTE"]
            action = {"module": "VOTE", "vote": "skip"}
        code, reply = seat.call("api/act", {"question": q["id"], "action": action})
        assert code == 200, reply
        assert bool(reply["refused"]) == (action["module"] == "VOTE" and q["phase"] != "voting")
        assert seat.call("api/act", {"question": q["id"], "action": action})[0] == 409
        sent.append((q["step"], action))
    game.join(60)
    result = done["result"]
    assert result.status == "ok"
    assert {"free_roam", "meeting", "voting"} <= phases
    events = _events(out)
    assert events[0]["agent_specs"]["red"] == {"kind": "human", "state": "ego", "timeout_s": 60.0}
    assert all(events[0]["agent_specs"][a]["kind"] == "scripted" for a in events[0]["agents"][1:])
    decisions = [e for e in events if e["kind"] == "decision" and e["agent"] == "red"]
    assert [d["step"] for d in decisions] == [step for step, _ in sent]
    for d, (_step, action) in zip(decisions, sent, strict=True):
        assert json.loads(d["raw"])["module"] == action["module"] == d["module"]
        assert d["spec"] == {"state": "ego"} and d["view_text"]
    first = decisions[0]
    assert not first["valid"] and first["error_kind"] == "rules" and first["program"] == []
    said = next(d for d in decisions if d["module"] == "MEETING")
    assert said["program"] == [{"op": "say", "text": "I was fixing wires in electrical."}]
    assert any(
        e["kind"] == "speech" and e["speaker"] == "red" and "electrical" in e["text"]
        for e in events
    )
    vote = next(d for d in decisions if d["phase"] == "voting" and d["module"] == "VOTE")
    assert vote["vote"] == "skip" and vote["valid"]
    # The map's place is the seat's own: where its view said it stood, its own tasks
    # (the game's list for red) and those it had done before the step.
    own = events[0]["tasks"]["red"]
    assert own, "red plays a crewmate in this game"
    for (step, place), d in zip(places, decisions, strict=True):
        x, z = place["pos"][0], place["pos"][2]
        assert f"You are in {place['room']} at ({x:.1f}, {z:.1f})" in d["view_text"]
        assert [t["station"] for t in place["tasks"]] == own
        done_before = {
            e["station"]
            for e in events
            if e["kind"] == "task_done" and e["agent"] == "red" and e["step"] < step
        }
        assert {t["station"] for t in place["tasks"] if t["done"]} == done_before
    assert log_violations(out / "events.jsonl") == []


def test_no_answer_within_the_limit_is_an_infrastructure_timeout(tmp_path: Path) -> None:
    out = tmp_path / "game"
    config = {
        "seed": 1,
        "frames": "off",
        "rules": {"max_steps": 4},
        "seats": {"blue": {"agent": "human", "args": {"timeout_s": 0.2}}},
    }
    game, done = _start(config, out)
    seat = Seat(out, "blue")
    game.join(60)
    assert done["result"].status == "ok"
    decisions = [e for e in _events(out) if e["kind"] == "decision" and e["agent"] == "blue"]
    assert decisions and all(
        not d["valid"] and d["error_kind"] == "infrastructure" and d["program"] == []
        for d in decisions
    )
    assert "no answer within 0.2 s" in decisions[0]["error"]
    # The page shows the game's end (it looks for it every half second) before it closes.
    deadline = time.monotonic() + 10
    while (state := seat.call("api/state")[1])["status"] != "over":
        assert time.monotonic() < deadline, state
        time.sleep(0.1)
    assert state["result"]["status"] == "ok" and state["question"] is None
