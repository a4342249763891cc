"""Trajectories rebuilt from hand-built logs (schema v2 and v1-shaped) and a fake-world log."""

from __future__ import annotations

from annotation.grounding.trajectory import build_trajectory
from testkit.logs import GameBuilder


def _game(v1: bool = False) -> GameBuilder:
    g = GameBuilder(v1=v1)
    g.free_roam(
        {"red": ["cafeteria", "admin"], "blue": ["cafeteria", "storage", "electrical"]},
        sees={"red": ["green"], "green": ["red"]},
        tasks=[("red", 11, 60, 100), ("pink", 13, 10, 50)],
    )
    g.free_roam(
        {"blue": ["electrical"], "pink": ["electrical"]},
        kills=[("pink", "blue", 40, {"orange": ["pink"]})],
        sees={"pink": []},
    )
    g.free_roam({"green": ["electrical"]}, bodies={"green": ["blue"]}, report=("green", "blue"))
    g.talk([("green", "I found Blue's body in electrical.")])
    g.vote({"red": "pink", "green": "pink", "pink": "skip", "orange": None}, ejected="pink")
    return g


def test_rooms_passed_through_come_from_the_trace_samples() -> None:
    traj = build_trajectory(_game().end())
    blue = traj.players["blue"][1]
    assert blue.rooms == ["cafeteria", "storage", "electrical"]
    assert blue.room_ticks == {"cafeteria": 40, "storage": 40, "electrical": 20}
    assert traj.has_trace
    assert sum(blue.room_ticks.values()) == 100


def test_alive_tasks_and_sight_per_step() -> None:
    traj = build_trajectory(_game().end())
    assert traj.players["blue"][1].alive and not traj.players["blue"][2].alive
    assert traj.deaths == {"blue": 140}
    assert traj.players["red"][1].tasks == {11: "done"}
    assert traj.players["pink"][1].tasks == {13: "faked"}
    assert traj.players["red"][1].sees == ["green"]
    # The kill's own visibility stamps the kill tick; the orange witness saw pink then.
    at_kill = [s for s in traj.sightings if s.cause == "kill"]
    assert [(s.viewer, s.target, s.tick, s.subject) for s in at_kill] == [
        ("orange", "pink", 140, "pink")
    ]
    assert traj.players["green"][3].bodies_seen == ["blue"]
    # Seat visibility after the teleport is kept apart from free-roam sight.
    assert all(s.cause != "meeting_seats" for s in traj.sightings)
    assert any(s.cause == "meeting_seats" for s in traj.seat_sightings)


def test_meeting_round_speeches_votes_and_ejection() -> None:
    traj = build_trajectory(_game().end())
    (m,) = traj.meetings
    assert (m.index, m.step, m.round_first_step, m.trigger, m.victim) == (1, 3, 1, "report", "blue")
    assert [s.text for s in m.speeches] == ["I found Blue's body in electrical."]
    assert {v.voter: v.target for v in m.votes}["orange"] is None
    assert m.ejected == "pink" and "pink" in traj.ejections


def test_v1_log_falls_back_to_positions_and_marks() -> None:
    traj = build_trajectory(_game(v1=True).end())
    assert not traj.has_trace
    red = traj.players["red"][1]
    # Start (cafeteria), the task marks (admin) and the end snapshot (admin).
    assert red.rooms == ["cafeteria", "admin"]
    assert red.tasks == {11: "done"}
    # v1 has no kill-time visibility and no causes; the post-teleport snapshot is still
    # recognised as the meeting's seats.
    assert not [s for s in traj.sightings if s.cause == "kill"]
    assert traj.players["green"][3].room == "electrical"


def test_meeting_teleport_never_overwrites_the_calling_position() -> None:
    traj = build_trajectory(_game().end())
    assert traj.players["green"][3].room == "electrical"
    assert traj.room_at("green", 300) == "electrical"


def test_a_start_reported_twice_in_either_order_is_one_attempt() -> None:
    # v2 logs write task_start/task_done before the program whose marks repeat them.
    events = _game().end()
    programs = [e for e in events if e.kind == "program"]
    rest = [e for e in events if e.kind != "program"]
    at = max(i for i, e in enumerate(rest) if e.kind == "task_done" and e.step == 1) + 1
    traj = build_trajectory(rest[:at] + programs + rest[at:])
    assert [(a.agent, a.station, a.outcome) for a in traj.attempts] == [
        ("red", 11, "done"),
        ("pink", 13, "faked"),
    ]
    assert traj.players["red"][2].tasks == {}


_SIGHTINGS = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("t", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
sys.modules["t"] = mod
spec.loader.exec_module(mod)
traj = mod.build_trajectory(mod._game().end())
print([(s.tick, s.viewer, s.target, s.cause) for s in traj.sightings + traj.seat_sightings])
"""


def test_sightings_come_in_the_same_order_whatever_the_hash_seed() -> None:
    """Who saw whom is listed in one order in every process (string hashing is salted per
    process, so an order taken from a set would change from run to run)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    orders = set()
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", _SIGHTINGS, __file__],
            capture_output=True,
            text=True,
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
            check=True,
        )
        orders.add(done.stdout)
    assert len(orders) == 1, orders
