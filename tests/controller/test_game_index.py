"""The one index of a game (`controller.timeline.GameIndex`) answers as the readers that
each rebuilt it for themselves did: the step-end timeline and pose tracks, the
annotation's poses, end positions and sight (`annotation.gamelog`), and the audit's
samples, sightings and ghosts (`annotation.grounding.trajectory`).

The oracles below are those readers' own rebuilding rules, kept here only to hold the
index to them, on fake-world games of the run's shared store with meetings, kills and
ghosts (`rules.ghost_tasks`), and on a planted old log whose meeting teleport is
labelled `step_end`.
"""

from __future__ import annotations

from typing import Any

import pytest

from annotation.gamelog import load_game
from annotation.grounding.trajectory import build_trajectory
from controller.events import (
    Eject,
    Event,
    GameStart,
    Kill,
    MeetingStart,
    PlayerSnapshot,
    Positions,
    ProgramRun,
    StepStart,
    Trace,
    Visibility,
    read_events,
)
from controller.timeline import GameIndex, pose_track, rebuild_timeline
from testkit.games import GameStore
from testkit.logs import sides_of

GAMES: dict[str, tuple[str, dict[str, Any]]] = {
    "quick3": ("quick", {"seed": 3, "frames": "off"}),
    "quick3-ghosts": ("quick", {"seed": 3, "frames": "off", "rules": {"ghost_tasks": True}}),
    "paper5": ("paper", {"seed": 5, "frames": "off"}),
}
"""Quick seed 3: four kills, two meetings (one ends in an ejection); with ghost tasks
its dead walk on; the paper preset plays ghost tasks too (one meeting, two kills)."""

_RANK = {"step_end": 3, "vote_end": 2, "setup": 2, "meeting_seats": 1, "meeting_call": 0}


# ---------------------------------------------------------------------- the oracles
def _old_timeline(evs: list[Event]) -> dict[int, dict[str, tuple[str, str, Any]]]:
    status: dict[str, str] = {}
    out: dict[int, dict[str, tuple[str, str, Any]]] = {}
    rank: dict[int, int] = {}
    for ev in evs:
        if isinstance(ev, GameStart):
            status = dict.fromkeys(ev.agents, "alive")
        elif isinstance(ev, Kill):
            status[ev.victim] = "dead"
        elif isinstance(ev, Eject):
            status[ev.agent] = "ejected"
        elif isinstance(ev, Positions):
            r = _RANK.get(ev.cause, 0)
            if ev.step in rank and r < rank[ev.step]:
                continue
            rank[ev.step] = r
            out[ev.step] = {
                a: (s.room, status.get(a, "alive"), s.pos) for a, s in ev.players.items()
            }
    return out


def _old_tracks(evs: list[Event]) -> dict[str, list[tuple[int, int, Any, float, bool]]]:
    traced = {ev.step for ev in evs if isinstance(ev, Trace)}
    out: dict[str, list[tuple[int, int, Any, float, bool]]] = {}
    left: dict[str, int] = {}
    for ev in evs:
        if isinstance(ev, Kill):
            left.setdefault(ev.victim, ev.step)
        elif isinstance(ev, Eject):
            left.setdefault(ev.agent, ev.step)
        elif isinstance(ev, Trace):
            for agent, samples in ev.players.items():
                ghost = agent in left and ev.step > left[agent]
                for t, (x, y, z, yaw) in zip(ev.ticks, samples, strict=False):
                    out.setdefault(agent, []).append((t, ev.step, (x, y, z), yaw, ghost))
        elif isinstance(ev, Positions) and ev.cause == "step_end" and ev.step not in traced:
            for agent, snap in ev.players.items():
                if snap.status == "alive":
                    out.setdefault(agent, []).append((ev.tick, ev.step, snap.pos, snap.yaw, False))
    for track in out.values():
        track.sort(key=lambda p: p[0])
    return out


def _old_gamelog(evs: list[Event]) -> tuple[dict[int, int], dict[int, list[str]]]:
    """Step -> tick of its end positions; step -> causes of its visibility records (a
    calling step's first `step_end` record is its end, a second one the meeting table)."""
    phase: dict[int, str] = {}
    called: set[int] = set()
    ends: dict[int, int] = {}
    seen: set[int] = set()
    vis: dict[int, list[str]] = {}
    for ev in evs:
        if isinstance(ev, StepStart):
            phase[ev.step] = ev.phase
        elif isinstance(ev, MeetingStart):
            called.add(ev.step)
        elif isinstance(ev, Positions):
            if ev.cause == "step_end" and ev.step not in ends:
                ends[ev.step] = ev.tick
        elif isinstance(ev, Visibility):
            cause = ev.cause
            here = phase.get(ev.step, "free_roam")
            table = here == "meeting" or (ev.step in called and ev.step in seen)
            if cause == "step_end" and table:
                cause = "meeting_seats"
            elif cause == "step_end" and here == "free_roam":
                seen.add(ev.step)
            vis.setdefault(ev.step, []).append(cause)
    return ends, vis


def _old_samples(evs: list[Event]) -> tuple[dict[str, list[Any]], dict[str, list[Any]], list[Any]]:
    """The audit's samples (living, ghosts') and (seat?, step, tick, cause) of its sight."""
    phase: dict[int, str] = {0: "setup"}
    samples: dict[str, list[Any]] = {}
    ghosts: dict[str, list[Any]] = {}
    left: dict[str, int] = {}
    ends: set[int] = set()
    called: set[int] = set()
    end_seen: set[int] = set()
    sight: list[Any] = []

    def into(agent: str, step: int) -> list[Any]:
        if agent in left and step > left[agent]:
            return ghosts.setdefault(agent, [])
        return samples.setdefault(agent, [])

    for ev in evs:
        step = ev.step
        if isinstance(ev, StepStart):
            phase[step] = ev.phase
        elif isinstance(ev, Trace):
            for agent, poses in ev.players.items():
                for t, p in zip(ev.ticks, poses, strict=False):
                    into(agent, step).append((t, step, (p[0], p[1], p[2]), "trace"))
        elif isinstance(ev, Positions):
            seats = ev.cause == "meeting_seats" or (step in called and step in ends)
            if seats or ev.cause == "meeting_call":
                continue
            here = phase.get(step, "free_roam")
            at = step + 1 if (here in ("setup", "voting") or ev.cause == "vote_end") else step
            ends.add(step)
            for agent, snap in ev.players.items():
                if snap.status == "alive":
                    samples.setdefault(agent, []).append((ev.tick, at, snap.pos, "positions"))
        elif isinstance(ev, Visibility):
            here = phase.get(step, "free_roam")
            seats = (
                ev.cause == "meeting_seats"
                or here == "meeting"
                or (ev.cause == "step_end" and step in called and step in end_seen)
            )
            at = step + 1 if (here in ("setup", "voting") or ev.cause == "setup") else step
            if not seats and ev.cause == "step_end" and here == "free_roam":
                end_seen.add(step)
            sight.append((seats, at, ev.tick, ev.cause))
        elif isinstance(ev, ProgramRun):
            for pe in ev.events:
                pos = pe.get("pos")
                if pe.get("kind") == "mark" and isinstance(pos, list) and len(pos) == 3:
                    tick = int(pe.get("tick", ev.end_tick))
                    into(ev.agent, step).append((tick, step, tuple(pos), "mark"))
        elif isinstance(ev, Kill):
            left.setdefault(ev.victim, step)
            samples.setdefault(ev.victim, []).append((ev.tick, step, ev.pos, "kill"))
        elif isinstance(ev, MeetingStart):
            called.add(step)
        elif isinstance(ev, Eject):
            left.setdefault(ev.agent, step)
    for lst in samples.values():
        lst.sort(key=lambda s: (s[0], s[3] != "positions"))
    for lst in ghosts.values():
        lst.sort(key=lambda s: s[0])
    return samples, ghosts, sight


# ---------------------------------------------------------------------- the games
@pytest.fixture(scope="module", params=sorted(GAMES))
def game(request: pytest.FixtureRequest, fake_games: GameStore) -> tuple[str, list[Event], Any]:
    preset, overrides = GAMES[request.param]
    folder = fake_games.game(preset, **overrides)
    return request.param, read_events(folder / "events.jsonl"), folder


def test_the_games_hold_meetings_kills_and_ghosts(game: tuple[str, list[Event], Any]) -> None:
    name, evs, _ = game
    index = GameIndex.of(evs)
    assert index.meeting_starts and index.left_play, name
    if name != "quick3":
        assert any(p.ghost for t in index.trace_poses.values() for p in t), name
    assert any(s.role == "seats" for s in index.snapshots)


def test_timeline_and_tracks_are_the_old_ones(game: tuple[str, list[Event], Any]) -> None:
    _, evs, _ = game
    timeline = rebuild_timeline(evs)
    assert {
        n: {a: (p.room, p.status, p.pos) for a, p in players.items()}
        for n, players in timeline.items()
    } == _old_timeline(evs)
    tracks = pose_track(evs)
    assert {
        a: [(p.tick, p.step, p.pos, p.yaw, p.ghost) for p in t] for a, t in tracks.items()
    } == _old_tracks(evs)


def test_gamelog_reads_the_index_as_it_read_the_log(game: tuple[str, list[Event], Any]) -> None:
    _, evs, folder = game
    g = load_game(folder)
    ends, vis = _old_gamelog(evs)
    assert {n: p.tick for n, p in g.end_positions.items()} == ends
    assert {n: [v.cause for v in vs] for n, vs in g.visibility.items()} == vis
    index = g.index
    for step, poses in g.poses.items():
        traced = index.trace_of(step)
        if poses.source == "trace":
            assert set(poses.players) | set(poses.ghosts) == set(traced)
            for agent, track in traced.items():
                mine = poses.ghosts if index.is_ghost(agent, step) else poses.players
                assert [(p.tick, p.pos) for p in mine[agent]] == [(p.tick, p.pos) for p in track]
        else:
            end = g.end_positions.get(step)
            alive = {a for a, s in end.players.items() if s.status == "alive"} if end else set()
            assert set(poses.players) == alive


def test_trajectory_samples_and_sight_are_the_old_ones(
    game: tuple[str, list[Event], Any],
) -> None:
    _, evs, _ = game
    traj = build_trajectory(evs)
    samples, ghosts, sight = _old_samples(evs)

    def key(s: Any) -> tuple[Any, ...]:
        return (s.tick, s.step, s.pos, s.source)

    assert {a: [key(s) for s in lst] for a, lst in traj.samples.items() if lst} == {
        a: lst for a, lst in samples.items() if lst
    }
    assert {a: [key(s) for s in lst] for a, lst in traj.ghost_samples.items()} == ghosts
    mine = {(False, s.step, s.tick, s.cause) for s in traj.sightings} | {
        (True, s.step, s.tick, s.cause) for s in traj.seat_sightings
    }
    assert mine <= set(sight)
    assert {x[:2] for x in sight if x[0]} >= {x[:2] for x in mine if x[0]}


def test_an_old_logs_meeting_table_labelled_step_end_is_seats() -> None:
    """Before the `meeting_seats` cause the teleport's snapshot was labelled `step_end`;
    the index reads the calling step's second one as the table, never as its end."""

    def snap(room: str, x: float) -> PlayerSnapshot:
        return PlayerSnapshot(pos=(x, 65.0, 0.0), yaw=0.0, room=room, status="alive")

    start = GameStart(
        step=0, tick=0, seed=0, agents=["red"], roles={"red": "crewmate"}, tasks={},
        map="skeld", preset="quick", config={}, sides=sides_of({}),
    )  # fmt: skip
    meeting = MeetingStart(
        step=2, tick=40, index=1, trigger="emergency", caller="red", order=["red"], dead=[]
    )
    evs: list[Event] = [
        start,
        StepStart(step=2, tick=30, phase="free_roam"),
        meeting,
        Positions(step=2, tick=40, players={"red": snap("admin", 1.0)}),
        Positions(step=2, tick=40, players={"red": snap("cafeteria", 2.0)}),
    ]
    index = GameIndex.of(evs)
    assert [s.role for s in index.snapshots] == ["end", "seats"]
    assert index.step_end(2) is evs[3]
    assert rebuild_timeline(evs)[2]["red"].room == "admin"
    traj = build_trajectory(evs)
    assert traj.players["red"][2].pos == (1.0, 65.0, 0.0)
    assert [s.pos for s in traj.samples["red"]] == [(1.0, 65.0, 0.0)]


def test_the_index_is_built_once_per_event_list(game: tuple[str, list[Event], Any]) -> None:
    _, evs, _ = game
    assert GameIndex.of(evs) is GameIndex.of(evs)
    assert GameIndex.of(list(evs)) is not GameIndex.of(evs)


def test_kill_readiness_is_the_logged_one(game: tuple[str, list[Event], Any]) -> None:
    _, evs, folder = game
    index = GameIndex.of(evs)
    traj = build_trajectory(evs)
    assert traj.kill_ready == [(e.tick, a, r) for e in index.kill_ready for a, r in e.ready.items()]
    g = load_game(folder)
    for tick in sorted({e.tick for e in index.kill_ready}):
        assert g.index.kill_ready_at(tick) == g.record.kill_ready_at(tick)
