"""The human seat in a real browser (Debian's Chromium, headless, through Selenium).

A fake-world game (fast; the page is the same on the real server) seats a person at
red beside scripted agents. The test plays red through the page only: it clicks module
buttons (a move with the room picker, the emergency button), types a meeting line and
votes, then reads the game's record and checks that those are red's decisions. On the
way it reads the page's map (the ship's rooms, red where its view says it stands) and
task list (red's own tasks, done or not), and checks them against the record too.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mineamongus
from controller.checks import log_violations
from controller.game import GameResult
from testkit.browser import headless_chromium, wait_for
from world.spec import load_map

pytestmark = pytest.mark.integration

LINE = "I saw nothing odd in the cafeteria."
CONFIG = {
    "seed": 3,
    "frames": "jpg",
    "rules": {
        "max_steps": 12,
        "emergency_initial_lockout_ticks": 0,
        "initial_kill_cooldown_ticks": 5000,
        "max_utterances": 1,
    },
    "seats": {"red": {"agent": "human", "args": {"timeout_s": 120}}},
}
"""No kill before red's meeting (red must live to speak and vote); one line each."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


def _click(driver: Any, selector: str) -> None:
    wait_for(driver, f"document.querySelector({json.dumps(selector)})?.disabled === false")
    driver.find_element("css selector", selector).click()


def _next_question(driver: Any, after: str, game: threading.Thread) -> str | None:
    """Wait until the page shows a question other than `after`; None once the game ended."""
    while game.is_alive():
        q = driver.execute_script(
            "return document.body.dataset.status === 'asking' ? document.body.dataset.question : ''"
        )
        if q and q != after:
            return str(q)
        time.sleep(0.05)
    return None


def test_a_person_plays_red_through_the_page(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "game"
    done: dict[str, GameResult] = {}
    game = threading.Thread(
        target=lambda: done.setdefault("result", mineamongus.play(CONFIG, world="fake", out=out)),
        daemon=True,
    )
    game.start()
    url_file = out / "human" / "red.url"
    deadline = time.monotonic() + 60
    while not url_file.is_file():
        assert time.monotonic() < deadline and game.is_alive(), "the seat printed no address"
        time.sleep(0.05)
    browser.get(url_file.read_text().strip())
    wait_for(browser, "document.body.dataset.ready === '1'")

    played: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []  # the map and the task list, as each question showed them
    question = ""
    while (q := _next_question(browser, question, game)) is not None:
        question = q
        phase = browser.execute_script("return document.body.dataset.phase")
        step = int(browser.execute_script("return document.body.dataset.step"))
        view = browser.find_element("id", "view").text
        assert "You are Red" in view
        where = re.search(r"You are in (\w+) at \((-?[\d.]+), (-?[\d.]+)\)", view)
        assert where is not None, view
        wait_for(
            browser,
            "document.body.dataset.map === '1' && document.getElementById('me')?.dataset.room"
            f" === {json.dumps(where.group(1))}",
        )
        seen.append(
            {
                "step": step,
                "where": where.groups(),
                **browser.execute_script(
                    """const me = document.getElementById('me');
                    return {rooms: [...document.querySelectorAll('#map .room')]
                              .map(r => r.dataset.room),
                            me: [me.dataset.room, Number(me.dataset.x), Number(me.dataset.z)],
                            tasks: [...document.querySelectorAll('#tasks li')]
                              .map(l => [Number(l.dataset.station), l.dataset.done === '1']),
                            drawn: [...document.querySelectorAll('#map .task')]
                              .map(t => Number(t.dataset.station)),
                            note: document.getElementById('tasks-note').textContent}"""
                ),
            }
        )
        if phase == "free_roam":
            # The first-person frame is shown, decoded at the frame's size.
            wait_for(browser, "document.getElementById('frame').naturalWidth === 640")
            met = any(p["phase"] == "meeting" for p in played)
            emergency = browser.execute_script(
                "return !document.querySelector('#modules button[data-module=EMERGENCY]').disabled"
            )
            if emergency and not met:
                _click(browser, "#modules button[data-module=EMERGENCY]")
                played.append({"step": step, "phase": phase, "module": "EMERGENCY"})
            else:
                _click(browser, "#modules button[data-module=MOVE]")
                room = browser.execute_script(
                    "const s = document.getElementById('room');"
                    "const o = [...s.options].filter(o => !o.disabled).at(-1);"
                    "s.value = o.value; s.dispatchEvent(new Event('change'));"
                    "return o.textContent"
                )
                played.append({"step": step, "phase": phase, "module": "MOVE", "room": room})
        elif phase == "meeting":
            # The only module allowed on a talk turn is chosen for the person.
            wait_for(browser, "document.querySelector('.picker.shown')?.dataset.for === 'text'")
            browser.find_element("id", "text").send_keys(LINE)
            played.append({"step": step, "phase": phase, "module": "MEETING", "text": LINE})
        else:
            assert phase == "voting"
            _click(browser, "#modules button[data-module=VOTE]")
            _click(browser, "#ballot button[data-vote='8']")  # after the 8 seats: skip
            played.append({"step": step, "phase": phase, "module": "VOTE", "vote": "skip"})
        _click(browser, "#send")
        wait_for(browser, "document.getElementById('last').textContent.startsWith('sent')")
    game.join(60)
    assert done["result"].status == "ok", done["result"].reason
    assert {p["module"] for p in played} >= {"EMERGENCY", "MEETING", "VOTE", "MOVE"}
    # The page shows the end before it closes.
    wait_for(browser, "['over', 'closed'].includes(document.body.dataset.status)")

    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert events[0]["agent_specs"]["red"]["kind"] == "human"
    decisions = [e for e in events if e["kind"] == "decision" and e["agent"] == "red"]
    assert [(d["step"], d["module"]) for d in decisions] == [
        (p["step"], p["module"]) for p in played
    ]
    for d, p in zip(decisions, played, strict=True):
        assert d["valid"], d
        if p["module"] == "MOVE":
            assert d["program"] == [{"op": "go_to", "room": p["room"]}]
        if p["module"] == "EMERGENCY":
            assert d["program"] == [{"op": "press_button"}]
        if p["module"] == "MEETING":
            assert d["program"] == [{"op": "say", "text": LINE}]
        if p["module"] == "VOTE":
            assert d["vote"] == "skip"
    assert any(
        e["kind"] == "speech" and e["speaker"] == "red" and e["text"] == LINE for e in events
    )
    assert log_violations(out / "events.jsonl") == []
    # The map is the ship's; red stood where its view said; the task list is red's own.
    rooms = [r.name for r in load_map(events[0]["map"]).rooms]
    own = events[0]["tasks"]["red"]
    assert events[0]["roles"]["red"] == "crewmate" and own
    assert [s["step"] for s in seen] == [p["step"] for p in played]
    for s in seen:
        room, x, z = s["where"]
        assert s["rooms"] == rooms
        assert s["me"][0] == room and (f"{s['me'][1]:.1f}", f"{s['me'][2]:.1f}") == (x, z)
        done_before = {
            e["station"]
            for e in events
            if e["kind"] == "task_done" and e["agent"] == "red" and e["step"] < s["step"]
        }
        assert s["tasks"] == [[t, t in done_before] for t in own]
        assert (
            s["drawn"] == own and s["note"] == f"{len(own) - len(done_before)} of {len(own)} to do"
        )
