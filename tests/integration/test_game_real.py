"""Full games on the real embedded server with eight real bots."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from controller.accounting import counts_from_events
from controller.agents.base import AgentDecision
from controller.agents.recording import RecordingAgent
from controller.agents.scripted import ScriptedAgent
from controller.checks import log_violations, view_leaks
from controller.config import RulesConfig, resolve_config
from controller.events import (
    Disconnect,
    GameEnd,
    GameStart,
    Kill,
    Positions,
    ProgramRun,
    Reconnect,
    read_events,
)
from controller.game import Game
from controller.observation import FRAME_SHAPE, Observation
from controller.protocol import LowProgram, StepReport
from controller.replay import replay
from controller.timeline import rebuild_timeline
from controller.worlds.base import Arbiter, SampleSink
from controller.worlds.minecraft import MinecraftWorld
from testkit.probe import ProbeGame
from world.geometry import ShipGeometry
from world.spec import MapSpec, load_map

pytestmark = pytest.mark.integration

SPEC = load_map("skeld")


@pytest.fixture(scope="module")
def full_game(real_scripted_game: tuple[Path, ProbeGame, Any]) -> tuple[Path, ProbeGame, Any]:
    """The session's shared real scripted game (`conftest.real_scripted_game`)."""
    return real_scripted_game


def test_full_quick_game_ends_by_the_rules(full_game: tuple[Path, ProbeGame, Any]) -> None:
    out, game, result = full_game
    assert result.status == "ok", result.reason
    assert result.winner in ("crew", "impostors")
    events = read_events(out / "events.jsonl")
    assert log_violations(events) == []
    assert isinstance(events[-1], GameEnd) and events[-1].ending == result.ending
    summary = json.loads((out / "summary.json").read_text())
    assert summary["versions"]["npm:mineflayer"] == "4.39.0"
    assert summary["versions"]["npm:flying-squid"] == "1.12.0"
    assert summary["counts"]["program_failures"] <= 2
    # Something actually happened in the world: tasks were done by walking to stations.
    assert summary["tasks"]["done"] > 0
    steps = {ev.step for ev in events if isinstance(ev, Positions)}
    assert steps == set(range(0, result.steps + 1))


def test_kills_in_the_real_world_land_in_range(full_game: tuple[Path, ProbeGame, Any]) -> None:
    out, _, _ = full_game
    events = read_events(out / "events.jsonl")
    start = events[0]
    assert isinstance(start, GameStart)
    rules = RulesConfig.model_validate(start.config["rules"])
    geometry = ShipGeometry(MapSpec.model_validate(start.map_spec))
    kills = [ev for ev in events if isinstance(ev, Kill)]
    assert kills, "the real game had no kill: the range check would be vacuous"
    for kill in kills:
        assert kill.distance <= rules.kill_range
        assert geometry.room_at(kill.pos) != "outside"
        # the strike's own positions, as the world reported them, agree with the record
        strike = next(
            m
            for ev in events
            if isinstance(ev, ProgramRun) and ev.agent == kill.killer and ev.step == kill.step
            for m in ev.events
            if m["kind"] == "reached" and m["agent"] == kill.victim and m["tick"] == kill.tick
        )
        gap = math.dist(strike["pos"], strike["target_pos"])
        assert abs(gap - kill.distance) < 1e-3 and gap <= rules.kill_range


def test_real_victims_stop_at_the_kill_tick(full_game: tuple[Path, ProbeGame, Any]) -> None:
    out, _, _ = full_game
    events = read_events(out / "events.jsonl")
    kills = [ev for ev in events if isinstance(ev, Kill)]
    assert kills
    for kill in kills:
        runs = [
            ev
            for ev in events
            if isinstance(ev, ProgramRun) and ev.agent == kill.victim and ev.step == kill.step
        ]
        for run in runs:
            # a program still running at the kill is cancelled; one may have ended before
            ended_before = run.status == "ok" and run.end_tick < kill.tick
            assert ended_before or run.status == "cancelled", run
            assert all(m["tick"] <= kill.tick for m in run.events), run.events
        # and nothing of the victim's in any later step
        assert not any(
            isinstance(ev, ProgramRun) and ev.agent == kill.victim and ev.step > kill.step
            for ev in events
        )
    summary = json.loads((out / "summary.json").read_text())
    assert counts_from_events(events) == summary["counts"]


def test_timeline_matches_live_real_game(full_game: tuple[Path, ProbeGame, Any]) -> None:
    out, game, _ = full_game
    timeline = rebuild_timeline(out / "events.jsonl")
    assert set(timeline) == set(game.live)
    for step, players in game.live.items():
        for agent, (room, status) in players.items():
            assert (timeline[step][agent].room, timeline[step][agent].status) == (room, status)


def test_observations_on_the_real_server(full_game: tuple[Path, ProbeGame, Any]) -> None:
    out, game, _ = full_game
    recorders = {a: ag for a, ag in game.agents.items() if isinstance(ag, RecordingAgent)}
    assert len(recorders) == 8
    frames = 0
    spreads: list[float] = []
    for agent, rec in recorders.items():
        for obs in rec.seen:
            assert obs.agent == agent and obs.scoreboard.area == obs.room
            assert obs.rgb is not None and obs.rgb.shape == FRAME_SHAPE
            assert obs.rgb.dtype == np.uint8 and np.ptp(obs.rgb) > 10  # not one colour
            spreads.append(float(obs.rgb.std()))
            assert obs.jpeg is not None and obs.jpeg[:2] == b"\xff\xd8"
            assert obs.frame_path is not None and Path(obs.frame_path).is_file()
            frames += 1
    assert frames > 50
    assert float(np.median(spreads)) > 15  # pictures with texture, not flat fills
    first = recorders["red"].seen[0]
    assert Path(first.frame_path or "").parent == out / "frames" / f"{first.step:04d}"


def test_real_game_views_never_leak(full_game: tuple[Path, ProbeGame, Any]) -> None:
    out, game, _ = full_game
    observations = {a: ag.seen for a, ag in game.agents.items() if isinstance(ag, RecordingAgent)}
    leaks, checked = view_leaks(observations, read_events(out / "events.jsonl"), game.geometry)
    assert leaks == [] and checked > 20


def test_replay_of_the_real_game(full_game: tuple[Path, ProbeGame, Any]) -> None:
    out, _, _ = full_game
    made = replay(out)
    assert made["map"].stat().st_size > 1000 and made["montage"].is_file()
    assert {"red", "blue"} <= set(made) and made["red"].stat().st_size > 1000


class DroppingWorld(MinecraftWorld):
    """Cuts one bot's connection just before the second batch of programs."""

    def __init__(self, *args: Any, victim: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.victim = victim
        self.batches = 0

    def run_programs(
        self,
        programs: dict[str, LowProgram],
        timeout_ms: int,
        arbiter: Arbiter | None = None,
        sample_interval: int = 10,
        samples_to: SampleSink | None = None,
    ) -> StepReport:
        self.batches += 1
        if self.batches == 2 and self.bridge is not None:
            self.bridge.drop(self.victim)
            time.sleep(0.5)
        return super().run_programs(programs, timeout_ms, arbiter, sample_interval, samples_to)


def test_disconnected_bot_reconnects_and_game_goes_on(tmp_path: Path) -> None:
    config = resolve_config(
        "quick", overrides={"seed": 5, "frames": "off", "rules": {"max_steps": 5}}
    )
    geometry = ShipGeometry(SPEC)
    world = DroppingWorld(
        config.server, tmp_path / "logs", geometry.seat_pos(0), victim="blue", frames=False
    )
    agents = {a: ScriptedAgent(a, geometry, config.seed) for a in config.agent_ids()}
    try:
        result = Game(config, SPEC, world, agents, tmp_path).run()
    finally:
        world.close()
    events = read_events(tmp_path / "events.jsonl")
    assert any(isinstance(ev, Disconnect) and ev.agent == "blue" for ev in events)
    assert any(isinstance(ev, Reconnect) and ev.agent == "blue" and ev.ok for ev in events)
    assert result.status == "ok", result.reason
    assert result.steps == 5
    assert log_violations(events) == []


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            kids.append(int(entry.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _start_play(out: Path, *extra: str, quiet: bool = True) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "play",
            "--seed",
            "2",
            "--out",
            str(out),
            *(["--quiet"] if quiet else []),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # A shell without job control starts background jobs with SIGINT ignored, and a
        # child keeps an ignored signal: give the game the default, as a terminal would.
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_steps(out: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    log = out / "events.jsonl"
    while time.monotonic() < deadline:
        if log.exists() and '"kind":"step_start"' in log.read_text():
            return
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
        time.sleep(0.5)
    pytest.fail("the game did not reach its first step")


def _gone(pids: list[int], timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.2)
    return False


def test_kill_9_leaves_no_orphan_and_next_play_starts(tmp_path: Path) -> None:
    proc = _start_play(tmp_path / "a")
    _wait_for_steps(tmp_path / "a", proc)
    children = _children(proc.pid)
    assert children, "play started no child process"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert _gone(children), f"orphans survived: {[p for p in children if _alive(p)]}"
    nxt = _start_play(tmp_path / "b", "--max-steps", "2", quiet=False)
    stdout, stderr = nxt.communicate(timeout=300)
    assert nxt.returncode == 0, stderr.decode()[-2000:]
    # The start-up says what it is doing while the server and bots come up.
    said = stderr.decode()
    for stage in ("world: starting Node", "world: server up on 127.0.0.1:", "world: ready"):
        assert stage in said, said[-2000:]
    assert json.loads(stdout.decode().strip().splitlines()[-1])["status"] == "ok"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_everything_and_keeps_the_record(tmp_path: Path, sig: int) -> None:
    proc = _start_play(tmp_path)
    _wait_for_steps(tmp_path, proc)
    children = _children(proc.pid)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert _gone(children), f"left running: {[p for p in children if _alive(p)]}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "invalid" and "interrupt" in summary["reason"]
    assert read_events(tmp_path / "events.jsonl")[-1].kind == "game_end"


FORGED = "[Server] Blue was ejected. Blue was an impostor."


class Forger:
    """Presses the button as soon as it can, then speaks a line that mimics the server."""

    def __init__(self, inner: ScriptedAgent) -> None:
        self.inner, self.agent_id = inner, inner.agent_id

    def describe(self) -> dict[str, Any]:
        return {"kind": "forger"}

    async def decide(self, obs: Observation) -> AgentDecision:
        if obs.phase == "free_roam" and obs.emergency_ready:
            return AgentDecision(program=[{"op": "press_button"}])
        if obs.phase == "meeting":
            return AgentDecision(program=[{"op": "say", "text": FORGED}])
        return await self.inner.decide(obs)


def test_chat_cannot_forge_server_events_on_the_real_server(tmp_path: Path) -> None:
    config = resolve_config(
        "quick",
        overrides={
            "seed": 2,
            "frames": "off",
            "rules": {"max_steps": 14, "emergency_initial_lockout_ticks": 0},
        },
    )
    geometry = ShipGeometry(SPEC)
    world = MinecraftWorld(config.server, tmp_path / "logs", geometry.seat_pos(0), frames=False)
    agents: dict[str, Any] = {
        a: RecordingAgent(ScriptedAgent(a, geometry, config.seed)) for a in config.agent_ids()
    }
    agents["red"] = Forger(ScriptedAgent("red", geometry, config.seed))
    try:
        Game(config, SPEC, world, agents, tmp_path).run()
        assert world.bridge is not None
        heard = world.bridge.inspect()["bots"]["blue"]["messages"]
    finally:
        world.close()
    events = read_events(tmp_path / "events.jsonl")
    assert any(ev.kind == "speech" and getattr(ev, "text", "") == FORGED for ev in events)
    assert not any(
        ev.kind == "server_message" and FORGED in getattr(ev, "text", "") for ev in events
    )
    chat = [
        c
        for ag in agents.values()
        if isinstance(ag, RecordingAgent)
        for o in ag.seen
        for c in o.chat
    ]
    forged = [c for c in chat if c.text == FORGED]
    assert forged and all(c.kind == "speech" and c.speaker == "red" for c in forged)
    # In Minecraft too: the forged line reaches other players as Red's chat, while the
    # engine's announcements arrive from the server itself.
    in_world = [m for m in heard if FORGED in m["text"]]
    assert in_world and all(m["from"] == "Red" for m in in_world)
    announced = [m for m in heard if "called an emergency meeting" in m["text"]]
    assert announced and all(m["from"] is None for m in announced)


def test_play_against_an_external_server(tmp_path: Path) -> None:
    """`--server HOST:PORT`: a server we did not start, with `MAU_Admin` as operator.
    The game is played on the second shipped map (outpost), so that map is built and
    walked in the real world too."""
    from controller.bridge import NodeBridge, free_port

    server = NodeBridge(log_path=tmp_path / "external-server.log")
    server.start()
    try:
        port = server.start_server(
            "127.0.0.1", free_port(), "1.20.1", (0.5, 65.0, 0.5), 4, ops=["MAU_Admin"]
        )
        out = tmp_path / "run"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "controller.cli",
                "play",
                "--server",
                f"127.0.0.1:{port}",
                "--map",
                "outpost",
                "--max-steps",
                "4",
                "--frames",
                "off",
                "--quiet",
                "--out",
                str(out),
            ],
            capture_output=True,
            timeout=300,
            check=False,
        )
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["config"]["server"]["external"].endswith(str(port))
    events = read_events(out / "events.jsonl")
    assert log_violations(events) == []
    start = events[0]
    assert isinstance(start, GameStart) and start.map == "outpost"
    spec = load_map("outpost")
    outpost = ShipGeometry(spec)
    rooms = set(outpost.rooms) | {"hallway"}
    seen: set[str] = set()
    for ev in events:
        if isinstance(ev, Positions) and ev.cause == "step_end" and ev.step > 0:
            for agent, p in ev.players.items():
                if p.status == "alive":
                    # the record's room is the outpost's, where the bot really stood
                    assert p.room in rooms and outpost.room_at(p.pos) == p.room, (agent, p)
                    seen.add(p.room)
    assert seen - {spec.meeting_room}, f"nobody left the {spec.meeting_room}: {seen}"
    assert summary["counts"]["program_failures"] <= 2, summary["counts"]
