"""The viewer in a real browser (Debian's Chromium, headless) on recorded and live games."""

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


def test_a_finished_game_opens_on_its_last_step_with_its_frames(
    browser: Any, tmp_path: Path
) -> None:
    from controller.cli import play_game

    config = resolve_config("quick", overrides={"seed": 2, "frames": "jpg"})
    out = tmp_path / "finished"
    assert play_game(config, load_map(config.map), "fake", out).status == "ok"
    last = max(e["step"] for e in _events(out))
    on_disk = sorted(p.name for p in (out / "frames" / f"{last:04d}").iterdir())
    assert on_disk, "the last step has frames"
    viewer = start_background(out)
    try:
        open_viewer(browser, viewer.url)  # no ?step=
        assert browser.execute_script("return document.body.dataset.step") == str(last)
        assert browser.execute_script("return document.getElementById('scrubber').value") == str(
            last
        )
        srcs = browser.execute_script(
            "return [...document.querySelectorAll('#frames img')].map(i => i.getAttribute('src'))"
        )
        assert sorted(s.rsplit("/", 1)[1] for s in srcs) == on_disk
        wait_for(
            browser,
            "[...document.querySelectorAll('#frames img')]"
            ".every(i => i.complete && i.naturalWidth > 0)",
        )
    finally:
        viewer.stop()


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


def test_scrubbing_moves_every_panel(
    browser: Any, served: tuple[BackgroundViewer, Path], real_scripted_run: Path
) -> None:
    v, _ = served
    steps = _free_roam_steps_with_frames(real_scripted_run)
    a = steps[1]
    open_viewer(browser, f"{v.url}?step={a}")
    wait_for(browser, f"document.body.dataset.step === '{a}'")

    def panels() -> dict[str, Any]:
        return browser.execute_script(
            """const all = (q) => [...document.querySelectorAll(q)];
            return {
              label: document.getElementById('step-label').textContent,
              frames: all('#frames img').map(i => i.getAttribute('src')),
              dots: all('#map .player-dot').map(d => d.getAttribute('cx') + d.getAttribute('cy')),
              decision: document.getElementById('decision').textContent,
              scrubber: document.getElementById('scrubber').value,
            }"""
        )

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
    game = Game(config, spec, FakeWorld(geometry), agents, out)  # type: ignore[arg-type]
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
