"""The viewer in a real browser (Debian's Chromium, headless) on recorded and live games:
frames, map, scrubbing, labels, the winner banner, the chat that follows its newest
line, the default "Decision of" seat, a broken record's error, a live game and a
study."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from annotation.viewer.record import result_line
from annotation.viewer.server import BackgroundViewer, start_background
from controller.agents.base import AgentDecision
from controller.agents.scripted import ScriptedAgent
from controller.config import resolve_config
from controller.game import Game
from controller.observation import Observation
from controller.worlds.fake import FakeWorld
from testkit.browser import headless_chromium, open_viewer, wait_for
from world.geometry import ShipGeometry
from world.spec import load_map

pytestmark = pytest.mark.integration


def _events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def _step_end_players(run: Path, step: int) -> dict[str, dict[str, Any]]:
    """Where the log says everyone was when `step` ended (step-end snapshots win)."""
    players: dict[str, dict[str, Any]] = {}
    snapped: set[int] = set()
    for e in _events(run):
        if e["kind"] != "positions" or e["step"] > step:
            continue
        cause = e.get("cause", "step_end")
        if cause == "step_end" or e["step"] not in snapped:
            players = e["players"]
        if cause == "step_end":
            snapped.add(e["step"])
    return players


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


@pytest.fixture
def served(real_scripted_run: Path, tmp_path: Path) -> Iterator[tuple[BackgroundViewer, Path]]:
    labels = tmp_path / "labels"
    v = start_background(real_scripted_run, labels=labels)
    try:
        yield v, labels
    finally:
        v.stop()


def _free_roam_steps_with_frames(run: Path) -> list[int]:
    return sorted(
        {
            e["step"]
            for e in _events(run)
            if e["kind"] == "step_start" and e["phase"] == "free_roam"
            if (run / "frames" / f"{e['step']:04d}").is_dir()
        }
    )


def test_frames_of_a_chosen_step_are_the_files_on_disk(
    browser: Any, served: tuple[BackgroundViewer, Path], real_scripted_run: Path
) -> None:
    v, _ = served
    step = _free_roam_steps_with_frames(real_scripted_run)[2]
    open_viewer(browser, f"{v.url}?step={step}")
    wait_for(browser, f"document.body.dataset.step === '{step}'")
    srcs = browser.execute_script(
        "return [...document.querySelectorAll('#frames img')].map(i => i.getAttribute('src'))"
    )
    on_disk = sorted(p.name for p in (real_scripted_run / "frames" / f"{step:04d}").iterdir())
    assert sorted(s.rsplit("/", 1)[1] for s in srcs) == on_disk
    for src in srcs:
        with urllib.request.urlopen(v.url + src.lstrip("/"), timeout=10) as res:
            assert res.read() == (real_scripted_run / src.removeprefix("run/")).read_bytes()
    # Every frame is actually decoded and shown by the browser.
    wait_for(
        browser,
        "[...document.querySelectorAll('#frames img')]"
        ".every(i => i.complete && i.naturalWidth === 640)",
    )


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished fake-world game with frames (quick preset, seed 2: kills, a meeting in
    which every living player speaks in turn, a vote)."""
    from controller.cli import play_game

    config = resolve_config("quick", overrides={"seed": 2, "frames": "jpg"})
    out = tmp_path_factory.mktemp("finished")
    assert play_game(config, load_map(config.map), "fake", out).status == "ok"
    return out


@pytest.fixture
def finished_viewer(finished: Path) -> Iterator[BackgroundViewer]:
    v = start_background(finished)
    try:
        yield v
    finally:
        v.stop()


CHAT = """const t = document.getElementById('transcript');
const hint = document.getElementById('chat-new');
return {top: t.scrollTop, end: t.scrollHeight - t.scrollTop - t.clientHeight < 4,
        overflow: t.scrollHeight > t.clientHeight + 20, lines: t.children.length,
        hint: hint.hidden ? '' : hint.textContent}"""
"""The chat panel's scroll state, as the reader sees it."""


def _key(browser: Any, key: str, step: int) -> None:
    from selenium.webdriver.common.keys import Keys

    browser.find_element("tag name", "h1").click()  # the keys go to the page, not a field
    browser.find_element("tag name", "body").send_keys(getattr(Keys, key))
    wait_for(browser, f"document.body.dataset.step === '{step}'")


def _transcript_steps(run: Path) -> set[int]:
    kinds = {"server_message", "speech", "vote", "meeting_start", "meeting_end", "eject"}
    return {e["step"] for e in _events(run) if e["kind"] in kinds}


def test_the_chat_follows_its_newest_line_unless_the_reader_scrolls_up(
    browser: Any, finished_viewer: BackgroundViewer, finished: Path
) -> None:
    talk = _transcript_steps(finished)
    s0 = max(s for s in talk if {s + 1, s + 2, s + 3} <= talk)  # late: many lines above
    open_viewer(browser, f"{finished_viewer.url}?step={s0}")
    # A short panel, so that these few lines overflow it whatever the fonts.
    browser.execute_script("document.getElementById('transcript').style.maxHeight = '80px'")
    _key(browser, "ARROW_RIGHT", s0 + 1)
    chat = browser.execute_script(CHAT)
    assert chat["overflow"] and chat["end"] and not chat["hint"], chat
    # The reader scrolls up: stepping on adds lines below and leaves the view where it is.
    browser.execute_script(
        "const t = document.getElementById('transcript'); t.scrollTop = 0;"
        "t.dispatchEvent(new Event('scroll'))"
    )
    lines = chat["lines"]
    _key(browser, "ARROW_RIGHT", s0 + 2)
    chat = browser.execute_script(CHAT)
    added = chat["lines"] - lines
    assert added > 0 and chat["top"] == 0 and not chat["end"], chat
    assert chat["hint"].startswith(f"{added} new line"), chat
    # The hint takes them to the newest line, and the chat follows it again.
    browser.find_element("id", "chat-new").click()
    chat = browser.execute_script(CHAT)
    assert chat["end"] and not chat["hint"], chat
    _key(browser, "ARROW_RIGHT", s0 + 3)
    assert browser.execute_script(CHAT)["end"]
    _key(browser, "ARROW_LEFT", s0 + 2)  # stepping back keeps the newest line in view too
    assert browser.execute_script(CHAT)["end"]


def test_decision_of_defaults_to_a_living_player_who_acted_and_keeps_a_choice(
    browser: Any, finished_viewer: BackgroundViewer, finished: Path
) -> None:
    events = _events(finished)
    agents = events[0]["agents"]
    speakers = {
        e["step"]: e["speaker"]
        for e in events
        if e["kind"] == "step_start" and e["phase"] == "meeting" and e["speaker"] != agents[0]
    }
    turn = min(s for s in speakers if s + 1 in speakers)
    open_viewer(browser, f"{finished_viewer.url}?step={turn}")
    selected = "return document.getElementById('player').value"
    # The meeting's speaker is the only one who acted: it is shown, not the first seat.
    assert browser.execute_script(selected) == speakers[turn]
    assert "made no decision" not in browser.find_element("id", "decision").text
    # After a kill: the first living seat that acted (the dead are passed over).
    kill = next(e for e in events if e["kind"] == "kill")
    open_viewer(browser, f"{finished_viewer.url}?step={kill['step'] + 1}")
    alive = _step_end_players(finished, kill["step"] + 1)
    acted = {
        e["agent"] for e in events if e["kind"] == "decision" and e["step"] == kill["step"] + 1
    }
    first = next(a for a in agents if a in acted and alive[a]["status"] == "alive")
    assert browser.execute_script(selected) == first
    # A seat the reader picks stays theirs while stepping.
    open_viewer(browser, f"{finished_viewer.url}?step={turn}")
    from selenium.webdriver.support.ui import Select

    picked = next(a for a in agents[1:] if a not in (speakers[turn], speakers[turn + 1]))
    Select(browser.find_element("id", "player")).select_by_value(picked)
    _key(browser, "ARROW_RIGHT", turn + 1)
    assert browser.execute_script(selected) == picked
    assert f"{picked.capitalize()} made no decision at step {turn + 1}" in (
        browser.find_element("id", "decision").text
    )


def test_the_winner_banner_names_the_side_and_the_ending(
    browser: Any, finished_viewer: BackgroundViewer, finished: Path
) -> None:
    events = _events(finished)
    end = events[-1]
    impostors = [a.capitalize() for a, r in events[0]["roles"].items() if r == "impostor"]
    open_viewer(browser, finished_viewer.url)
    banner = browser.find_element("id", "winner")
    assert banner.is_displayed() and banner.text == result_line(end)
    assert banner.get_attribute("data-winner") == end["winner"]
    assert not any(name in banner.text for name in impostors)  # a blind annotator's page
    browser.find_element("id", "analyst").click()
    wait_for(browser, "document.getElementById('winner').textContent.includes('impostors:')")
    assert all(name in browser.find_element("id", "winner").text for name in impostors)


def test_a_broken_record_shows_its_error_and_nothing_else(
    browser: Any, finished: Path, tmp_path: Path
) -> None:
    import os
    import shutil

    run = tmp_path / "broken"
    shutil.copytree(finished, run)
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    lines[40] = "this is not json\n"
    (run / "events.jsonl").write_text("".join(lines))
    os.utime(run / "events.jsonl", (time.time() - 60, time.time() - 60))
    viewer = start_background(run)
    try:
        open_viewer(browser, viewer.url)
        assert browser.execute_script("return document.body.dataset.broken") == "1"
        assert browser.find_element("id", "record-error").is_displayed()
        assert browser.find_element("id", "error-file").text == str(run.resolve() / "events.jsonl")
        assert browser.find_element("id", "error-line").text == "41"
        assert "not a JSON event" in browser.find_element("id", "error-problem").text
        assert not browser.find_element("id", "frames").is_displayed()
        assert browser.execute_script("return document.querySelectorAll('#frames img').length") == 0
    finally:
        viewer.stop()


def test_a_finished_game_opens_on_its_last_step_with_its_frames(
    browser: Any, finished_viewer: BackgroundViewer, finished: Path
) -> None:
    out, viewer = finished, finished_viewer
    last = max(e["step"] for e in _events(out))
    on_disk = sorted(p.name for p in (out / "frames" / f"{last:04d}").iterdir())
    assert on_disk, "the last step has frames"
    open_viewer(browser, viewer.url)  # no ?step=
    assert browser.execute_script("return document.body.dataset.step") == str(last)
    assert browser.execute_script("return document.getElementById('scrubber').value") == str(last)
    srcs = browser.execute_script(
        "return [...document.querySelectorAll('#frames img')].map(i => i.getAttribute('src'))"
    )
    assert sorted(s.rsplit("/", 1)[1] for s in srcs) == on_disk
    wait_for(
        browser,
        "[...document.querySelectorAll('#frames img')]"
        ".every(i => i.complete && i.naturalWidth > 0)",
    )
    # The chat opens on its newest line.
    assert browser.execute_script(CHAT)["end"]


def test_map_shows_the_living_players(
    browser: Any, served: tuple[BackgroundViewer, Path], real_scripted_run: Path
) -> None:
    v, _ = served
    events = _events(real_scripted_run)
    kills = [e for e in events if e["kind"] == "kill"]
    assert kills, "the shared real game has a kill"
    step = kills[0]["step"]
    open_viewer(browser, f"{v.url}?step={step}")
    wait_for(browser, f"document.body.dataset.step === '{step}'")
    alive = sum(p["status"] == "alive" for p in _step_end_players(real_scripted_run, step).values())
    assert alive < 8
    dots = browser.execute_script("return document.querySelectorAll('#map .player-dot').length")
    assert dots == alive
    dead_frames = browser.execute_script(
        "return [...document.querySelectorAll('#frames figure.dead')].map(f => f.dataset.agent)"
    )
    assert kills[0]["victim"] in dead_frames
    # "Decision of" opens on the first living seat that acted at this step.
    players = _step_end_players(real_scripted_run, step)
    acted = {e["agent"] for e in events if e["kind"] == "decision" and e["step"] == step}
    first = next(a for a in events[0]["agents"] if a in acted and players[a]["status"] == "alive")
    assert browser.execute_script("return document.getElementById('player').value") == first


def test_scrubbing_moves_every_panel(
    browser: Any, served: tuple[BackgroundViewer, Path], real_scripted_run: Path
) -> None:
    v, _ = served
    steps = _free_roam_steps_with_frames(real_scripted_run)
    a = steps[1]
    open_viewer(browser, f"{v.url}?step={a}")
    wait_for(browser, f"document.body.dataset.step === '{a}'")

    def panels() -> dict[str, Any]:
        shown: dict[str, Any] = browser.execute_script(
            """const all = (q) => [...document.querySelectorAll(q)];
            return {
              label: document.getElementById('step-label').textContent,
              frames: all('#frames img').map(i => i.getAttribute('src')),
              dots: all('#map .player-dot').map(d => d.getAttribute('cx') + d.getAttribute('cy')),
              decision: document.getElementById('decision').textContent,
              scrubber: document.getElementById('scrubber').value,
            }"""
        )
        return shown

    before = panels()
    browser.find_element("tag name", "body").click()
    from selenium.webdriver.common.keys import Keys

    browser.find_element("tag name", "body").send_keys(Keys.ARROW_RIGHT)
    wait_for(browser, f"document.body.dataset.step === '{a + 1}'")
    after = panels()
    assert after["scrubber"] == str(a + 1)
    assert f"step {a + 1}" in after["label"] and f"step {a}" in before["label"]
    for key in ("frames", "dots", "decision"):
        assert after[key] != before[key], key
    # Dragging the scrubber (an input event) jumps as well.
    browser.execute_script(
        "const s = document.getElementById('scrubber'); s.value = arguments[0];"
        "s.dispatchEvent(new Event('input'))",
        str(steps[-1]),
    )
    wait_for(browser, f"document.body.dataset.step === '{steps[-1]}'")


def test_a_label_saved_in_the_page_lands_in_the_label_file(
    browser: Any, served: tuple[BackgroundViewer, Path], real_scripted_run: Path
) -> None:
    v, labels = served
    step = _free_roam_steps_with_frames(real_scripted_run)[3]
    impostor = next(a for a, r in _events(real_scripted_run)[0]["roles"].items() if r == "impostor")
    open_viewer(browser, f"{v.url}?step={step}")
    wait_for(browser, f"document.body.dataset.step === '{step}'")
    from selenium.webdriver.support.ui import Select

    browser.find_element("id", "annotator").clear()
    browser.find_element("id", "annotator").send_keys("ann_b")
    Select(browser.find_element("id", "atom")).select_by_value("C")
    Select(browser.find_element("id", "actor")).select_by_value(impostor)
    browser.find_element("id", "evidence").send_keys("stays right behind its victim")
    browser.find_element("id", "save-label").click()
    wait_for(browser, "document.getElementById('label-status').textContent === 'saved'")
    lines = (labels / "ann_b.jsonl").read_text().splitlines()
    saved = json.loads(lines[-1])
    assert (saved["atom"], saved["step"], saved["actor"], saved["annotator"]) == (
        "C",
        step,
        impostor,
        "ann_b",
    )
    assert saved["game"] == _events(real_scripted_run)[0]["game_id"]
    browser.refresh()
    wait_for(browser, "document.body.dataset.ready === '1'")
    shown = browser.execute_script("return document.getElementById('labels').textContent")
    assert "ann_b: C at step" in shown


class _Slow:
    """A scripted agent that takes a while to decide, so the game is watched live."""

    def __init__(self, inner: ScriptedAgent, seconds: float) -> None:
        self.inner = inner
        self.agent_id = inner.agent_id
        self.seconds = seconds

    async def decide(self, obs: Observation) -> AgentDecision:
        await asyncio.sleep(self.seconds)
        return await self.inner.decide(obs)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


def test_the_live_page_receives_new_steps_from_a_running_game(browser: Any, tmp_path: Path) -> None:
    spec = load_map("skeld")
    geometry = ShipGeometry(spec)
    config = resolve_config("quick", overrides={"seed": 4, "frames": "off"})
    out = tmp_path / "live"
    agents = {a: _Slow(ScriptedAgent(a, geometry, config.seed), 0.25) for a in config.agent_ids()}
    game = Game(config, spec, FakeWorld(geometry), agents, out)
    thread = threading.Thread(target=game.run, daemon=True)
    thread.start()
    viewer = start_background(out)
    try:
        wait = time.monotonic() + 20
        while not (out / "events.jsonl").exists() and time.monotonic() < wait:
            time.sleep(0.05)
        open_viewer(browser, viewer.url)
        first = int(wait_for(browser, "document.body.dataset.step"))
        assert browser.execute_script("return !document.getElementById('live-badge').hidden")
        # New steps arrive without a reload and the page follows them.
        wait_for(browser, f"Number(document.body.dataset.step) >= {first + 3}", timeout=60)
        thread.join(timeout=300)
        assert not thread.is_alive()
        wait_for(browser, "document.getElementById('live-badge').hidden", timeout=20)
        last = max(e["step"] for e in _events(out))
        wait_for(browser, f"Number(document.getElementById('scrubber').max) === {last}")
        # The banner appears once game_end arrives, without a reload.
        wait_for(browser, "!document.getElementById('winner').hidden", timeout=10)
        banner = browser.find_element("id", "winner").text
        assert banner == result_line(_events(out)[-1])
        # Followed live, the chat stays on its newest line.
        wait_for(browser, f"document.body.dataset.step === '{last}'", timeout=10)
        assert browser.execute_script(CHAT)["end"]
    finally:
        viewer.stop()


STUDY_SPEC = {
    "name": "viewer-study",
    "world": "fake",
    "seeds": [1, 2],
    "base": {"frames": "jpg", "rules": {"max_steps": 30}},
    "sweep": {"axes": {"rules.kill_cooldown_ticks": [100, 160]}},
}


def test_tournament_view_serves_the_running_games_of_a_study(browser: Any, tmp_path: Path) -> None:
    """`tournament --view`: the study page follows the games as they run, each opens."""
    import subprocess
    import sys

    import yaml

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(STUDY_SPEC))
    out = tmp_path / "study"
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "tournament", str(spec), "--out", str(out)]
        + ["--workers", "1", "--plain", "--view"],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = ""
        lines: list[str] = []
        while not url:
            line = proc.stderr.readline()
            assert line, f"tournament --view printed no address: {lines}"
            lines.append(line)
            if line.startswith("viewer: "):
                url = line.split(" ", 1)[1].strip()
        open_viewer(browser, url)
        total = int(wait_for(browser, "document.body.dataset.games"))
        assert total == 4
        first_update = int(browser.execute_script("return Number(document.body.dataset.updates)"))
        # The page is pushed new states while games run (no reload).
        statuses: set[str] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            statuses |= set(
                browser.execute_script(
                    "return [...document.querySelectorAll('#games tbody tr')]"
                    ".map(r => r.dataset.status)"
                )
            )
            if "done" in statuses:
                break
            time.sleep(0.1)
        assert "done" in statuses, statuses
        assert int(browser.execute_script("return Number(document.body.dataset.updates)")) > (
            first_update
        )
        # A finished game of the study opens in the game viewer, frames and all.
        link = browser.find_element("css selector", "#games tr[data-status='done'] a")
        link.click()
        wait_for(browser, "document.body.dataset.ready === '1'")
        assert "/game/games/" in browser.current_url
        assert browser.execute_script("return !document.getElementById('study-link').hidden")
        page = browser.current_url.split("?")[0]
        run = out / page.split("/game/", 1)[1]
        step = _free_roam_steps_with_frames(run)[0]
        open_viewer(browser, f"{page}?step={step}")
        wait_for(browser, f"document.body.dataset.step === '{step}'")
        srcs = browser.execute_script(
            "return [...document.querySelectorAll('#frames img')].map(i => i.getAttribute('src'))"
        )
        assert sorted(srcs) == sorted(
            f"run/frames/{step:04d}/{p.name}" for p in (run / "frames" / f"{step:04d}").iterdir()
        )
        with urllib.request.urlopen(page + srcs[0], timeout=10) as res:
            assert res.read() == (run / srcs[0].removeprefix("run/")).read_bytes()
        rest = proc.stderr.read()
        assert proc.wait(timeout=300) == 0, rest[-3000:]
        assert "replay with: mineamongus view" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
