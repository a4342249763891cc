"""The timeline and pose tracks rebuilt from a log alone."""

from __future__ import annotations

from pathlib import Path

from controller.agents.scripted import ScriptedAgent
from controller.config import resolve_config
from controller.events import (
    GameStart,
    MeetingStart,
    PlayerSnapshot,
    Positions,
    Trace,
    read_events,
)
from controller.game import Game
from controller.timeline import pose_track, rebuild_timeline
from controller.worlds.fake import FakeWorld
from testkit.logs import sides_of
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)


def _snap(room: str, x: float) -> PlayerSnapshot:
    return PlayerSnapshot(pos=(x, 65.0, 0.0), yaw=0.0, room=room, status="alive")


def _start() -> GameStart:
    return GameStart(
        step=0, tick=0, seed=0, agents=["red"], roles={"red": "crewmate"}, tasks={},
        map="skeld", preset="quick", config={}, sides=sides_of({}),
    )  # fmt: skip


def test_step_end_snapshot_wins_over_the_meeting_table() -> None:
    events = [
        _start(),
        Positions(step=3, tick=90, players={"red": _snap("electrical", 1.0)}, cause="step_end"),
        Positions(step=3, tick=91, players={"red": _snap("cafeteria", 2.0)}, cause="meeting_seats"),
    ]
    assert rebuild_timeline(events)[3]["red"].room == "electrical"  # type: ignore[arg-type]
    # the other order too: a later step_end replaces an earlier meeting_seats
    events = [events[0], events[2], events[1]]
    assert rebuild_timeline(events)[3]["red"].room == "electrical"  # type: ignore[arg-type]


def test_old_logs_without_causes_keep_the_last_snapshot() -> None:
    events = [
        _start(),
        Positions(step=1, tick=5, players={"red": _snap("admin", 1.0)}),
        Positions(step=1, tick=6, players={"red": _snap("storage", 2.0)}),
    ]
    assert rebuild_timeline(events)[1]["red"].room == "storage"  # type: ignore[arg-type]


def test_pose_track_uses_trace_and_falls_back_on_positions() -> None:
    samples = [(0.0, 65.0, 0.0, 0.0), (1.0, 65.0, 0.0, 0.0), (2.0, 65.0, 0.0, 90.0)]
    events = [
        _start(),
        Trace(step=1, tick=20, interval=10, ticks=[0, 10, 20], players={"red": samples}),
        Positions(step=1, tick=20, players={"red": _snap("admin", 2.0)}, cause="step_end"),
        Positions(step=2, tick=30, players={"red": _snap("admin", 5.0)}, cause="step_end"),
    ]
    track = pose_track(events)  # type: ignore[arg-type]
    assert [(p.tick, p.pos[0]) for p in track["red"]] == [(0, 0.0), (10, 1.0), (20, 2.0), (30, 5.0)]


def test_meeting_step_keeps_where_everyone_was_when_it_was_called(tmp_path: Path) -> None:
    for seed in range(1, 9):
        out = tmp_path / str(seed)
        config = resolve_config("quick", overrides={"seed": seed, "frames": "off"})
        agents = {a: ScriptedAgent(a, GEOMETRY, seed) for a in config.agent_ids()}
        Game(config, SPEC, FakeWorld(GEOMETRY), agents, out).run()
        events = read_events(out / "events.jsonl")
        starts = [ev for ev in events if isinstance(ev, MeetingStart)]
        if not starts:
            continue
        timeline = rebuild_timeline(events)
        for start in starts:
            snaps = [ev for ev in events if isinstance(ev, Positions) and ev.step == start.step]
            end = next(ev for ev in snaps if ev.cause == "step_end")
            assert {a: p.room for a, p in timeline[start.step].items()} == {
                a: p.room for a, p in end.players.items()
            }
            seats = [
                ev for ev in events if isinstance(ev, Positions) and ev.cause == "meeting_seats"
            ]
            assert seats and all(ev.step > start.step for ev in seats)
        track = pose_track(events)
        assert all(len(t) > len(timeline) for a, t in track.items() if a in starts[0].order)
        return
    raise AssertionError("no seed produced a meeting")
