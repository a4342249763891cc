"""Ghost crewmates (`rules.ghost_tasks`): killed, they walk on and do their tasks, and no
living player learns anything of them: not in sight, not in an observation, not in a
frame, even standing among them; the log keeps where they really walked.

The scene: an impostor strikes the nearest crewmate at the table on the first step (as
in test_strike_guard), so the ghost starts out in the middle of the living.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotation.gamelog import load_game
from annotation.grounding.trajectory import build_trajectory
from controller.agents.base import AgentDecision
from controller.agents.scripted import ScriptedAgent
from controller.config import GameConfig, resolve_config
from controller.events import (
    Decision,
    Eject,
    Event,
    Kill,
    MeetingStart,
    Positions,
    ProgramRun,
    TaskDone,
    Trace,
    Visibility,
    read_events,
)
from controller.game import Game
from controller.observation import Observation
from controller.perception import Perception
from controller.timeline import pose_track
from controller.worlds.base import Seat
from controller.worlds.fake import FakeWorld
from controller.worlds.sketch import sketch
from world.geometry import GHOST_AREA, ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)


@dataclass
class Seen:
    """What one player was told at one decision, with the frames it could have had."""

    obs: Observation
    with_hidden: np.ndarray | None = None
    """The picture drawn with every player in it, hidden ones too."""
    without_hidden: np.ndarray | None = None
    """The picture drawn without the hidden players."""


@dataclass
class Probe:
    world: FakeWorld
    seen: dict[str, list[Seen]] = field(default_factory=dict)


class Player:
    """A scripted player that records what it is told; as a ghost it first asks for the
    button (which a ghost may not press), then works through its tasks."""

    def __init__(
        self,
        inner: ScriptedAgent,
        probe: Probe,
        strike: list[str] | None = None,
        eject: str | None = None,
    ):
        self.inner, self.probe, self.agent_id = inner, probe, inner.agent_id
        self.strike = strike
        self.eject = eject
        """Whom to vote out at the first meeting (None: as the scripted player would)."""
        self.asked_button = False

    def describe(self) -> dict[str, Any]:
        return {"kind": "probe"}

    def _pictures(self, obs: Observation) -> Seen:
        w = self.probe.world
        if obs.rgb is None:
            return Seen(obs)
        me = w.players[self.agent_id]
        markers = {b: pos for pos, b in w._markers().items()}
        everyone = {a: b.pos for a, b in w.players.items() if a != self.agent_id}
        unseen = {a: p for a, p in everyone.items() if a not in w.hidden}
        return Seen(
            obs,
            sketch(GEOMETRY, me.pos, me.yaw, everyone, markers),
            sketch(GEOMETRY, me.pos, me.yaw, unseen, markers),
        )

    async def decide(self, obs: Observation) -> AgentDecision:
        self.probe.seen.setdefault(self.agent_id, []).append(self._pictures(obs))
        if obs.ghost:
            if not self.asked_button:
                self.asked_button = True
                return AgentDecision(program=[{"op": "press_button"}], module="GHOST")
            pending = [t for t in obs.tasks if t not in obs.tasks_done]
            if pending:
                return AgentDecision(
                    program=[{"op": "use_station", "station": pending[0]}], module="GHOST"
                )
            return AgentDecision(program=[{"op": "wait", "ticks": 20}], module="GHOST")
        if self.eject is not None and obs.phase == "voting" and not obs.past_meetings:
            vote = self.eject if self.eject != self.agent_id else "skip"
            return AgentDecision(vote=vote, module="VOTE")
        if self.strike is not None and obs.phase == "free_roam" and obs.step == 1:
            target = min(self.strike, key=lambda c: math.dist(obs.roster[c].pos, obs.pos))
            return AgentDecision(program=[{"op": "kill", "target": target}], module="KILL")
        return await self.inner.decide(obs)


def config(ghosts: bool, frames: str = "jpg") -> GameConfig:
    # 8 tasks pins who walks where at step 1 (as in test_strike_guard)
    rules = {
        "initial_kill_cooldown_ticks": 0,
        "max_steps": 24,
        "max_utterances": 1,  # a short meeting: the body is found at once
        "tasks_per_crewmate": 8,
        "ghost_tasks": ghosts,
    }
    return resolve_config("quick", overrides={"seed": 5, "frames": frames, "rules": rules})


@dataclass
class Played:
    events: list[Event]
    game: Game
    probe: Probe
    kill: Kill
    folder: Path


def play(ghosts: bool, out: Path, frames: str = "jpg", eject: bool = False) -> Played:
    cfg = config(ghosts, frames)
    world = FakeWorld(GEOMETRY)
    probe = Probe(world)
    ids = cfg.agent_ids()
    scout = Game(cfg, SPEC, FakeWorld(GEOMETRY), lambda a, r: ScriptedAgent(a, GEOMETRY, 5), out)
    imps = scout.engine.impostors()
    scout.log.close()
    crew = [a for a in ids if a not in imps]
    voted = crew[-1] if eject else None
    agents: dict[str, Any] = {
        a: Player(
            ScriptedAgent(a, GEOMETRY, cfg.seed),
            probe,
            strike=crew if a == imps[0] else None,
            eject=voted,
        )
        for a in ids
    }
    folder = out / "game"
    game = Game(cfg, SPEC, world, agents, folder)
    game.run()
    events = read_events(folder / "events.jsonl")
    kill = next((e for e in events if isinstance(e, Kill) and e.step == 1), None)
    if kill is None:
        pytest.fail("the scene's first-step strike did not land")
    return Played(events, game, probe, kill, folder)


@pytest.fixture(scope="module")
def ghostly(tmp_path_factory: pytest.TempPathFactory) -> Played:
    return play(True, tmp_path_factory.mktemp("ghosts"))


def test_a_killed_crewmate_walks_on_and_finishes_its_tasks(ghostly: Played) -> None:
    ghost, kill = ghostly.kill.victim, ghostly.kill
    done = [
        e
        for e in ghostly.events
        if isinstance(e, TaskDone) and e.agent == ghost and e.tick > kill.tick
    ]
    assert done, "the ghost finished no task"
    assert all(not e.fake for e in done)
    engine = ghostly.game.engine
    assert engine.players[ghost].status == "dead"
    assert {e.station for e in done} <= set(engine.players[ghost].done)
    assert engine.task_progress().done >= len(engine.players[ghost].done)
    # it left from where it fell, not from the ghost area
    later = [
        e
        for e in ghostly.events
        if isinstance(e, Positions) and e.cause == "step_end" and e.step > kill.step
    ]
    assert later and all(e.players[ghost].status == "dead" for e in later)
    assert all(GEOMETRY.room_at(e.players[ghost].pos) != GHOST_AREA for e in later)
    assert len({e.players[ghost].pos for e in later}) > 1, "the ghost's position never moved"


def test_a_ghost_is_refused_all_but_walking_looking_waiting_and_tasks(ghostly: Played) -> None:
    ghost, kill = ghostly.kill.victim, ghostly.kill
    mine = [
        e
        for e in ghostly.events
        if isinstance(e, Decision) and e.agent == ghost and e.step > kill.step
    ]
    refused = mine[0]
    assert refused.program == [{"op": "press_button"}]
    assert not refused.valid and refused.error_kind == "rules"
    assert "ghost" in refused.error
    # nothing ran for it that step: a refusal is never turned into a move
    assert not any(
        isinstance(e, ProgramRun) and e.agent == ghost and e.step == refused.step
        for e in ghostly.events
    )
    assert any(d.valid for d in mine[1:])


def test_no_living_player_perceives_the_ghost(ghostly: Played) -> None:
    ghost, kill = ghostly.kill.victim, ghostly.kill
    engine = ghostly.game.engine
    checked = 0
    for e in ghostly.events:
        if not isinstance(e, Visibility) or e.tick < kill.tick:
            continue
        assert ghost not in e.sees and ghost not in e.near
        for lists in (e.sees, e.near):
            assert all(ghost not in seen for seen in lists.values()), e
        checked += 1
    assert checked > 2
    perception = Perception(GEOMETRY, engine.rules.vision_radius)
    would_see = drawn = 0
    for agent, seen in ghostly.probe.seen.items():
        if agent == ghost:
            continue
        for s in seen:
            obs = s.obs
            if obs.tick <= kill.tick or obs.ghost:
                continue
            assert ghost not in obs.visible_players and ghost not in obs.nearby_players
            assert obs.roster[ghost].pos == kill.pos, "the roster follows the ghost"
            assert ghost not in obs.last_seen or obs.last_seen[ghost].tick <= kill.tick
            if s.with_hidden is not None and s.without_hidden is not None:
                assert obs.rgb is not None
                assert np.array_equal(obs.rgb, s.without_hidden), "the ghost is in a frame"
                drawn += not np.array_equal(s.with_hidden, s.without_hidden)
            where = _ghost_pos_at(ghostly, obs.tick)
            if where is not None and obs.phase == "free_roam":
                would_see += perception.sees(obs.pos, obs.yaw, where)
    # the test has teeth: the ghost stood in view, and would have been drawn
    assert would_see > 0 and drawn > 0


def _ghost_pos_at(played: Played, tick: int) -> tuple[float, float, float] | None:
    ghost = played.kill.victim
    snaps = [e for e in played.events if isinstance(e, Positions) and e.tick == tick]
    return snaps[-1].players[ghost].pos if snaps else None


def test_a_ghost_is_told_it_is_a_ghost_and_sees_the_living(ghostly: Played) -> None:
    ghost, kill = ghostly.kill.victim, ghostly.kill
    mine = [s.obs for s in ghostly.probe.seen[ghost] if s.obs.tick > kill.tick]
    assert mine and all(o.ghost and o.scoreboard.dead for o in mine)
    living = set(ghostly.game.config.agent_ids()) - {ghost}
    assert any(set(o.visible_players) & living for o in mine)
    assert all(o.role == "crewmate" for o in mine)


def test_the_log_keeps_where_the_ghost_walked(ghostly: Played) -> None:
    ghost, kill = ghostly.kill.victim, ghostly.kill
    traced = [e for e in ghostly.events if isinstance(e, Trace) and e.step > kill.step]
    assert any(ghost in t.players for t in traced)
    # annotation keeps a ghost's samples apart from anyone's whereabouts
    game = load_game(ghostly.folder)
    for step, poses in game.poses.items():
        if step > kill.step:
            assert ghost not in poses.players
    assert any(ghost in p.ghosts for p in game.poses.values())
    traj = build_trajectory(ghostly.events)
    assert traj.ghost_samples.get(ghost)
    assert all(s.step <= kill.step for s in traj.samples[ghost])
    after = [ps for n, ps in traj.players[ghost].items() if n > kill.step]
    assert after and all(not ps.alive and ps.pos == kill.pos for ps in after)
    track = pose_track(ghostly.events)[ghost]
    assert any(p.ghost for p in track) and all(p.ghost == (p.step > kill.step) for p in track)


def test_without_ghost_tasks_the_dead_leave_for_the_ghost_area(tmp_path: Path) -> None:
    played = play(False, tmp_path, frames="off")
    victim, kill = played.kill.victim, played.kill
    assert GEOMETRY.room_at(played.probe.world.players[victim].pos) == GHOST_AREA
    assert not any(
        isinstance(e, Decision) and e.agent == victim and e.step > kill.step for e in played.events
    )
    assert all(not s.obs.ghost for seen in played.probe.seen.values() for s in seen)


def test_the_fake_world_hides_ghosts_from_the_living_only() -> None:
    world = FakeWorld(GEOMETRY)
    x, y, z = GEOMETRY.seat_pos(0)
    world.start([], [Seat("red", "Red", (x, y, z), 0.0), Seat("blue", "Blue", (x, y, z + 2), 0.0)])
    seen = world.render(["red", "blue"], None, "png")
    world.hide_players(["blue"])
    hidden = world.render(["red", "blue"], None, "png")
    alone = sketch(GEOMETRY, (x, y, z), 0.0, {}, {})
    assert not np.array_equal(seen["red"].rgb, alone)  # blue stands in red's view
    assert np.array_equal(hidden["red"].rgb, alone)  # hidden from the living
    assert np.array_equal(hidden["blue"].rgb, seen["blue"].rgb)  # a ghost sees everyone
    world.hide_players([])
    assert np.array_equal(world.render(["red"], None, "png")["red"].rgb, seen["red"].rgb)


def test_ghosts_sit_out_meetings_and_carry_on_from_where_they_were(ghostly: Played) -> None:
    ghost, kill = ghostly.kill.victim, ghostly.kill
    events = ghostly.events
    starts = [e for e in events if isinstance(e, MeetingStart) and e.step > kill.step]
    assert starts, "no meeting after the kill"
    traces = {e.step: e for e in events if isinstance(e, Trace)}
    carried = 0
    for m in starts:
        assert ghost not in m.order and ghost in m.dead
        # no ghost decides at the table
        talk = [e for e in events if isinstance(e, Decision) and e.phase != "free_roam"]
        assert all(d.agent != ghost for d in talk)
        called = traces.get(m.step)
        after = [s for s in traces if s > m.step]
        if called is None or ghost not in called.players or not after:
            continue
        resumed = traces[min(after)]
        assert ghost in resumed.players
        assert called.players[ghost][-1][:3] == resumed.players[ghost][0][:3]
        carried += 1
    assert carried > 0


def test_an_ejected_crewmate_is_a_ghost_the_living_know_only_at_its_seat(
    tmp_path: Path,
) -> None:
    played = play(True, tmp_path, eject=True)
    events, engine = played.events, played.game.engine
    eject = next(e for e in events if isinstance(e, Eject))
    ghost = eject.agent
    assert eject.role == "crewmate" and engine.players[ghost].status == "ejected"
    seat = next(
        e.players[ghost].pos
        for e in events
        if isinstance(e, Positions) and e.cause == "meeting_seats"
    )
    mine = [s.obs for s in played.probe.seen[ghost] if s.obs.tick >= eject.tick]
    assert mine and all(o.ghost for o in mine if o.phase == "free_roam")
    assert any(isinstance(e, Decision) and e.agent == ghost and e.step > eject.step for e in events)
    told = 0
    for agent, seen in played.probe.seen.items():
        if agent in (ghost, played.kill.victim):
            continue
        for s in seen:
            if s.obs.tick < eject.tick or s.obs.step <= eject.step:
                continue
            assert ghost not in s.obs.visible_players and ghost not in s.obs.nearby_players
            assert s.obs.roster[ghost].pos == seat
            if s.without_hidden is not None:
                assert s.obs.rgb is not None and np.array_equal(s.obs.rgb, s.without_hidden)
            told += 1
    assert told > 0
    # the ejected ghost walks on from its seat, never from the sealed ghost area
    later = [
        e.players[ghost].pos for e in events if isinstance(e, Positions) and e.tick > eject.tick
    ]
    assert later
    assert all(GEOMETRY.room_at(pos) != GHOST_AREA for pos in later)
    assert any(math.dist(pos, seat) > 1.0 for pos in later), "the ghost never left its seat"
