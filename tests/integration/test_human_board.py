"""A person's game on the study page's ratings board, in a real browser (Debian's
Chromium, headless, through Selenium; the fake world, no Minecraft server).

A small fake-world study (the scripted ruler on both sides, and the ruler against ARIA
on the fake backend) is run by `mineamongus tournament`. Its page is opened with the
analyst address: the board has no person on it. Then a game with a person at red, who
plays under the name `ada`, is played apart with `mineamongus play --world fake --seat
red=human --config ... --out STUDY/games/human-ada/seed3-try1` (into the study's
layout, as a researcher adds a game to a study) and the test plays red through the
seat's page only: module buttons, the room picker, the meeting's text box, the ballot.
When the game has ended, the open study page shows `human:ada` as a row of the board,
in the role the record gave red, and `mineamongus collect` then `mineamongus rank` on
the study print the same row.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from annotation.viewer.server import start_background
from testkit.browser import headless_chromium, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RULES = {
    "max_steps": 12,
    "emergency_initial_lockout_ticks": 0,
    "initial_kill_cooldown_ticks": 5000,
    "max_utterances": 1,
}
"""Short games; no kill, so red lives to the end (the step limit has a winner)."""
STUDY_SPEC = {
    "name": "board-with-a-person",
    "world": "fake",
    "seeds": [1, 2],
    "base": {"frames": "off", "rules": RULES},
    "arms": [
        {"name": "scripted"},
        {"name": "fake-crew", "overrides": {"crew": {"backend": "fake"}}},
    ],
}
SEAT = {
    "frames": "off",
    "rules": RULES,
    "seats": {"red": {"agent": "human", "args": {"name": "ada", "timeout_s": 120}}},
}
"""The person's game: `--config` gives the seat the name the person plays under."""
HUMAN_RUN = "games/human-ada/seed3-try1"
LINE = "Nothing odd on my way."


def _cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


def _board_players(driver: Any) -> list[list[str]]:
    return [
        [str(x) for x in row]
        for row in driver.execute_script(
            "return [...document.querySelectorAll('#board tr[data-player]')]"
            ".map(tr => [tr.dataset.player, tr.dataset.role])"
        )
    ]


def _click(driver: Any, selector: str) -> None:
    wait_for(driver, f"document.querySelector({json.dumps(selector)})?.disabled === false")
    driver.find_element("css selector", selector).click()


def _play_the_seat(driver: Any, game: subprocess.Popen[str]) -> list[str]:
    """Answer every question the seat's page asks until the game ends, as a person
    would: a move to a room, the meeting line, a skip vote. Returns the phases played."""
    played: list[str] = []
    last = ""
    while game.poll() is None:
        status, question, phase = driver.execute_script(
            "const d = document.body.dataset; return [d.status, d.question, d.phase]"
        )
        if status in ("over", "closed"):
            break
        if status != "asking" or not question or question == last:
            time.sleep(0.05)
            continue
        last = question
        if phase == "free_roam":
            _click(driver, "#modules button[data-module=MOVE]")
            driver.execute_script(
                "const s = document.getElementById('room');"
                "const o = [...s.options].filter(o => !o.disabled).at(-1);"
                "s.value = o.value; s.dispatchEvent(new Event('change'));"
            )
        elif phase == "meeting":
            wait_for(driver, "document.querySelector('.picker.shown')?.dataset.for === 'text'")
            driver.find_element("id", "text").send_keys(LINE)
        else:
            assert phase == "voting", phase
            _click(driver, "#modules button[data-module=VOTE]")
            _click(driver, "#ballot button[data-vote='8']")  # after the 8 seats: skip
        _click(driver, "#send")
        wait_for(driver, "document.getElementById('last').textContent.startsWith('sent')")
        played.append(str(phase))
    return played


def test_a_person_s_game_appears_on_the_study_board(browser: Any, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(STUDY_SPEC))
    study = tmp_path / "study"
    done = _cli("tournament", str(spec), "--out", str(study), "--workers", "2", "--plain")
    assert done.returncode == 0, done.stderr[-3000:]

    viewer = start_background(study)
    try:
        # Without the analyst view the board is withheld; the switch shows it.
        browser.get(viewer.url)
        wait_for(browser, "document.body.dataset.board === 'withheld'")
        assert browser.find_element("id", "board-message").text.startswith("The ratings board")
        assert _board_players(browser) == []
        browser.find_element("id", "board-analyst").click()
        wait_for(browser, "document.body.dataset.board === 'ok'", timeout=60)
        # The analyst address opens it at once: four games, no person yet.
        browser.get(viewer.analyst_url)
        wait_for(browser, "document.body.dataset.board === 'ok'", timeout=60)
        before = _board_players(browser)
        assert ["scripted", "impostor"] in before and ["fake", "crew"] in before
        assert not any(p.startswith("human") for p, _r in before)
        assert "4 game(s)" in browser.find_element("id", "board-describe").text
        study_tab = browser.current_window_handle

        # The person's game, played apart into the study's layout.
        config = tmp_path / "ada.yaml"
        config.write_text(yaml.safe_dump(SEAT))
        run = study / HUMAN_RUN
        err = tmp_path / "play.err"
        with err.open("w") as stderr:
            game = subprocess.Popen(
                [sys.executable, "-m", "controller.cli", "play", "--world", "fake"]
                + ["--seat", "red=human", "--config", str(config), "--seed", "3"]
                + ["--out", str(run), "--quiet"],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                text=True,
            )
        try:
            url_file = run / "human" / "red.url"
            deadline = time.monotonic() + 120
            while not url_file.is_file():
                assert game.poll() is None, err.read_text()
                assert time.monotonic() < deadline, "the seat wrote no address"
                time.sleep(0.05)
            browser.switch_to.new_window("tab")
            browser.get(url_file.read_text().strip())
            wait_for(browser, "document.body.dataset.ready === '1'", timeout=60)
            # While the person plays, the open board has not changed.
            browser.switch_to.window(study_tab)
            assert not any(p.startswith("human") for p, _r in _board_players(browser))
            browser.switch_to.window(browser.window_handles[-1])
            played = _play_the_seat(browser, game)
            assert game.wait(timeout=120) == 0, err.read_text()
        finally:
            if game.poll() is None:
                game.kill()
                game.wait(timeout=30)
        assert "free_roam" in played, played
        summary = json.loads((run / "summary.json").read_text())
        assert summary["status"] == "ok" and summary["winner"] in ("crew", "impostors")
        start = json.loads((run / "events.jsonl").read_text().splitlines()[0])
        assert start["kind"] == "game_start"
        role = "crew" if start["roles"]["red"] == "crewmate" else "impostor"
        decisions = [
            json.loads(line)
            for line in (run / "events.jsonl").read_text().splitlines()
            if '"decision"' in line
        ]
        red = [d for d in decisions if d.get("kind") == "decision" and d.get("agent") == "red"]
        assert len(red) == len(played) and all(d["valid"] for d in red)

        # The study page, left open, shows the person's row once the game has ended.
        browser.close()
        browser.switch_to.window(study_tab)
        wait_for(
            browser,
            "document.querySelector('#board tr[data-player=\"human:ada\"]') !== null",
            timeout=60,
        )
        assert [r for r in _board_players(browser) if r[0] == "human:ada"] == [["human:ada", role]]
        cells = browser.execute_script(
            "return [...document.querySelectorAll('#board tr[data-player=\"human:ada\"] td')]"
            ".map(td => td.textContent)"
        )
        # rank .. tier, then the player with the few-games mark, 1 game, its win count
        assert cells[4] == "human:ada *" and cells[5] == "1"
        assert cells[6] == ("1" if (summary["winner"] == "crew") == (role == "crew") else "0")
        assert cells[12].endswith("(1)")  # one game against the scripted ruler
        table = browser.execute_script(
            "return document.querySelector('#board tr[data-player=\"human:ada\"]')"
            ".closest('table').dataset.role"
        )
        assert table == role
        assert "5 game(s)" in browser.find_element("id", "board-describe").text
    finally:
        viewer.stop()

    # The same game on `rank`'s board, once the study's tables are rebuilt.
    assert _cli("collect", str(study)).returncode == 0
    ranked = _cli("rank", str(study), "--boot", "200")
    assert ranked.returncode == 0, ranked.stderr
    assert any(line.startswith("│ human:ada") for line in ranked.stdout.splitlines())
