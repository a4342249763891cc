"""The far sets (`Observation.far_players`/`far_bodies`) and the reference's ego view.

The observation carries the living players and the bodies in line of sight all around
out to `FAR_SIGHT_RANGE` (36 blocks), beyond the rules' `vision_radius` (12), for the
reference's egocentric view (`ego_view: reference`) alone: it shows what of them lies
within 60 degrees of the heading and under 36 blocks. The camera view and the privileged
view never read them, a ghost is never in them, and `controller.checks.view_leaks`
checks the entries beyond 12 blocks from the logged poses.

The scene, on the fake world (skeld): the upper engine's corridor runs east in the
clear from (-33.5, -16.5) past 40 blocks. The viewer stands at its west end facing
east; ahead of it stand players at 8, 25, 35 and 40 blocks, a killer at 30 blocks
facing away (over its victim's body), and one player in medbay, 20 blocks off at 15
degrees, behind a wall.
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.agents.recording import RecordingAgent
from controller.agents.scripted import ScriptedAgent
from controller.checks import view_leaks
from controller.config import resolve_config
from controller.events import Decision, Event, Kill, Positions, read_events
from controller.game import Game
from controller.observation import FAR_SIGHT_RANGE, Observation
from controller.perception import Perception, in_cone
from controller.protocol import Teleport
from controller.session import Session
from controller.views import REFERENCE_EGO_RANGE, Knowledge
from controller.worlds.fake import FakeWorld
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")
G = ShipGeometry(SPEC)

EYE = (-33.5, 65.0, -16.5)
EAST = 270.0  # Minecraft yaw: facing +x
WEST = 90.0


def ahead(d: float) -> tuple[float, float, float]:
    """`d` blocks east of the viewer, down the corridor."""
    return (EYE[0] + d, EYE[1], EYE[2])


WALLED = (-14.18, 65.0, -11.32)  # medbay: 20 blocks off, 15 degrees left, behind a wall


def test_the_scene_is_what_it_says() -> None:
    for d in (8, 25, 30, 35, 40):
        assert G.line_of_sight(EYE, ahead(d)) and in_cone(EYE, EAST, ahead(d), 10)
    assert not G.line_of_sight(EYE, WALLED)
    assert 19.5 < math.dist(EYE, WALLED) < 20.5 and in_cone(EYE, EAST, WALLED, 120)
    assert REFERENCE_EGO_RANGE == FAR_SIGHT_RANGE == 36.0


@dataclass
class Scene:
    session: Session
    slots: dict[str, str]
    """Part -> seat: viewer, near (8), mid (25), edge (35), far (40), walled, killer
    (30, facing away), victim (its body at 30)."""

    @property
    def events(self) -> list[Event]:
        return list(self.session.log.events)

    def observe(self, part: str) -> Observation:
        return self.session.observer.observe(self.slots[part], self.session.log.events)


def scene(tmp_path: Path, preset: str = "quick") -> Scene:
    """The scene played on the fake world through the step loop's own calls: set-up, the
    players moved to their places, the kill, then the end of a step (positions and
    visibility logged, perception taken)."""
    config = resolve_config(
        preset,
        overrides={"seed": 1, "frames": "off", "rules": {"initial_kill_cooldown_ticks": 0}},
    )
    world = FakeWorld(G)
    game = Game(config, SPEC, world, lambda a, r: ScriptedAgent(a, G, 1), tmp_path)
    s = Session(
        config=config,
        geometry=G,
        engine=game.engine,
        world=world,
        log=game.log,
        out_dir=tmp_path,
        agents=game.agents,
        observer=game.observer,
        perception=Perception(G, config.rules.vision_radius),
        loop=asyncio.new_event_loop(),
        progress=lambda _line: None,
        seat_index=game.seat_index,
    )
    game._setup(s)
    e = game.engine
    killer = e.impostors()[0]
    rest = [a for a in e.possible_agents if a != killer]
    victim = next(a for a in rest if e.players[a].role == "crewmate")
    rest.remove(victim)
    slots = dict(zip(("viewer", "near", "mid", "edge", "far", "walled"), rest, strict=True))
    slots |= {"killer": killer, "victim": victim}
    places = {
        "viewer": (EYE, EAST),
        "near": (ahead(8), WEST),
        "mid": (ahead(25), WEST),
        "edge": (ahead(35), WEST),
        "far": (ahead(40), WEST),
        "walled": (WALLED, 0.0),
        "killer": (ahead(30), EAST),
        "victim": (ahead(30), WEST),
    }
    e.begin_step()
    e.set_tick(100)
    poses = world.teleport(
        {slots[p]: Teleport(pos=pos, yaw=yaw) for p, (pos, yaw) in places.items()}
    )
    s.record_positions(poses, "step_end")
    s.emit(e.kill(killer, victim, 100, ahead(30), ahead(30)))
    assert victim in e.bodies, "the scene's kill did not land"
    e.set_tick(200)
    s.record_positions(world.teleport({}), "step_end")
    s.observer.perceive(s.record_visibility("step_end").joined(s.ghost_sight()), free_roam=True)
    s.loop.close()
    return Scene(s, slots)


def names(scene: Scene, parts: set[str]) -> set[str]:
    return {scene.slots[p] for p in parts}


def test_far_players_reach_36_blocks_in_line_of_sight_all_around(tmp_path: Path) -> None:
    sc = scene(tmp_path)
    obs = sc.observe("viewer")
    assert set(obs.far_players) == names(sc, {"near", "mid", "edge", "killer"})
    assert obs.far_players[sc.slots["mid"]] == ahead(25)
    assert obs.far_bodies == {sc.slots["victim"]: ahead(30)}
    # the sight sets stop at the vision radius
    assert set(obs.nearby_players) == names(sc, {"near"}) and obs.nearby_bodies == {}
    # all around: the killer has the viewer 30 blocks behind it
    assert sc.slots["viewer"] in sc.observe("killer").far_players


def test_the_reference_view_reaches_36_blocks_and_the_camera_12(tmp_path: Path) -> None:
    sc = scene(tmp_path)
    obs = sc.observe("viewer")
    reference = Knowledge("ego", G, ego_view="reference")
    known = reference.update(obs)
    assert set(known.visible_players) == names(sc, {"near", "mid", "edge", "killer"})
    assert known.visible_bodies == {sc.slots["victim"]: ahead(30)}
    text = reference.view(known).to_text()
    assert f"{sc.slots['mid'].capitalize()} (25.0 blocks, ahead)" in text
    assert sc.slots["far"].capitalize() not in text  # 40 blocks
    assert sc.slots["walled"].capitalize() not in text  # behind a wall
    # the camera's view: the near one only, whatever its range
    for ego_range in (12.0, 48.0):
        camera = Knowledge("ego", G, ego_range=ego_range).update(obs)
        assert set(camera.visible_players) == names(sc, {"near"})
        assert camera.visible_bodies == {}
    # behind is out of the reference's view, though in the far set
    killer = Knowledge("ego", G, ego_view="reference").update(sc.observe("killer"))
    assert sc.slots["viewer"] not in killer.visible_players
    assert sc.slots["far"] in killer.visible_players  # 10 blocks ahead of the killer


@pytest.mark.parametrize(
    ("mode", "view"), [("ego", "camera"), ("privileged", "camera"), ("ego", "reference")]
)
def test_no_filtered_observation_carries_the_far_sets(tmp_path: Path, mode: Any, view: Any) -> None:
    """Every component (and the environment's codecs, which encode the filtered
    observation and its view text) works from a filtered observation: none carries the
    far sets. The camera and privileged views are the same with or without them."""
    sc = scene(tmp_path)
    obs = sc.observe("viewer")
    assert obs.far_players and obs.far_bodies
    known = Knowledge(mode, G, ego_view=view).update(obs)
    assert known.far_players == {} and known.far_bodies == {}
    if view == "camera":
        without = obs.model_copy(update={"far_players": {}, "far_bodies": {}})
        plain = Knowledge(mode, G).update(without)
        assert known.model_dump(exclude={"rgb"}) == plain.model_dump(exclude={"rgb"})


def test_a_ghost_is_never_in_the_far_sets(tmp_path: Path) -> None:
    """Under the paper rules the victim plays on as a ghost: walked to 10 blocks in
    front of the viewer, it is in no living player's far set; a ghost has none."""
    sc = scene(tmp_path, "paper")
    s, ghost = sc.session, sc.slots["victim"]
    assert ghost in s.engine.ghosts
    s.engine.set_tick(300)
    s.record_positions(s.world.teleport({ghost: Teleport(pos=ahead(10), yaw=WEST)}), "step_end")
    s.observer.perceive(s.record_visibility("step_end").joined(s.ghost_sight()), free_roam=True)
    assert G.can_see(EYE, s.engine.players[ghost].pos, FAR_SIGHT_RANGE)
    for part in ("viewer", "near", "mid", "killer"):
        obs = sc.observe(part)
        assert ghost not in obs.far_players and ghost not in obs.nearby_players
        assert obs.far_players, part
    own = sc.observe("victim")
    assert own.ghost and own.far_players == {} and own.far_bodies == {}


def test_the_leak_check_passes_the_scene_and_catches_planted_faults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sc = scene(tmp_path)
    viewer, killer = sc.slots["viewer"], sc.slots["killer"]
    obs, theirs = sc.observe("viewer"), sc.observe("killer")
    events = sc.events
    leaks, checked = view_leaks({viewer: [obs], killer: [theirs]}, events, G)
    assert leaks == [] and checked >= 6
    where = f"{viewer} (ego reference) step {obs.step}"

    def planted(o: Observation, **far: Any) -> list[str]:
        forged = o.model_copy(update=far)
        found, _ = view_leaks({o.agent: [forged]}, events, G)
        return [leak for leak in found if "(ego reference)" in leak]

    # a dead player named in view (where its body lies, in the cone and under 36)
    victim = sc.slots["victim"]
    assert planted(obs, far_players={**obs.far_players, victim: ahead(30)}) == [
        f"{where}: names {victim}, out of play, in view"
    ]
    # a far player at the wrong place
    mid = sc.slots["mid"]
    assert planted(obs, far_players={**obs.far_players, mid: ahead(20)}) == [
        f"{where}: wrong position of {mid} in view"
    ]
    # a body where nobody died
    assert planted(obs, far_bodies={mid: ahead(25)}) == [
        f"{where}: names {mid}'s body, lying nowhere then"
    ]
    # a filter that keeps everything: 40 blocks, behind a wall, behind the agent (each
    # planted alone: the sight sets emptied)
    monkeypatch.setattr(Knowledge, "_in_reference_view", lambda self, o, target: True)
    far, walled = sc.slots["far"], sc.slots["walled"]
    alone: dict[str, Any] = {"visible_players": {}, "nearby_players": {}}
    assert planted(obs, far_players={far: ahead(40), walled: WALLED}, **alone) == [
        f"{where}: names {far} outside the field of view",
        f"{where}: names {walled} outside the field of view",
    ]
    assert planted(theirs, far_players={viewer: EYE}, **alone) == [
        f"{killer} (ego reference) step {theirs.step}: names {viewer} outside the field of view"
    ]


def test_the_leak_check_reads_far_names_sent_to_a_reference_agent(tmp_path: Path) -> None:
    sc = scene(tmp_path)
    viewer, mid, far = sc.slots["viewer"], sc.slots["mid"], sc.slots["far"]
    obs = sc.observe("viewer")
    knowledge = Knowledge("ego", G, ego_view="reference")
    honest = knowledge.view(knowledge.update(obs)).to_text()
    assert f"{mid.capitalize()} (25.0 blocks" in honest
    sent = Decision(
        step=obs.step,
        tick=obs.tick,
        agent=viewer,
        phase="free_roam",
        spec={"state": "ego", "ego_view": "reference"},
        view_text=honest,
    )
    assert view_leaks({}, [*sc.events, sent], G)[0] == []
    forged = sent.model_copy(
        update={"view_text": f"In view now: {far.capitalize()} (40.0 blocks, ahead)"}
    )
    assert view_leaks({}, [*sc.events, forged], G)[0] == [
        f"{viewer} (ego, sent) step {obs.step}: names {far} outside the field of view"
    ]
    # the same text sent to a camera-view agent names three players and a body beyond
    # the camera's 12 blocks: each is a leak, the one at 8 blocks is not
    camera = sent.model_copy(update={"spec": {"state": "ego", "ego_view": "camera"}})
    flagged = view_leaks({}, [*sc.events, camera], G)[0]
    named = {sc.slots[p] for p in ("mid", "edge", "killer")}
    assert flagged == [
        f"{viewer} (ego, sent) step {obs.step}: names {what} outside the field of view"
        for what in [
            *sorted(named, key=lambda a: math.dist(EYE, sc.session.engine.players[a].pos)),
            f"{sc.slots['victim']}'s body",
        ]
    ]


# ------------------------------------------------------------------ played games
def _played(tmp: Path, seed: int) -> tuple[dict[str, RecordingAgent], list[Event]]:
    """A paper game on the fake world, every seat an ARIA agent (fake backend) with the
    reference's ego view, every observation kept."""
    from controller.players import agent_factory

    side = {"backend": "fake", "spec": {"state": "ego", "ego_view": "reference"}}
    config = resolve_config(
        "paper", overrides={"seed": seed, "frames": "off", "crew": side, "impostor": side}
    )
    out = tmp / f"seed{seed}"
    make = agent_factory(config, G, out)
    kept: dict[str, RecordingAgent] = {}

    def agent(seat: str, role: Any) -> RecordingAgent:
        kept[seat] = RecordingAgent(make(seat, role))
        return kept[seat]

    Game(config, SPEC, FakeWorld(G), agent, out).run()
    return kept, read_events(out / "events.jsonl")


def test_reference_ego_games_pass_the_leak_check_beyond_12_blocks(tmp_path: Path) -> None:
    """The leak check passes played games of reference-ego agents, whose views and
    decisions named players beyond 12 blocks; it catches a fault planted in one (a dead
    player in a living player's far set, standing in front of it)."""
    beyond = sent_beyond = planted = 0
    for seed in (2, 3):
        agents, events = _played(tmp_path, seed)
        observations = {a: r.seen for a, r in agents.items()}
        leaks, checked = view_leaks(observations, events, G)
        assert leaks == [] and checked > 50
        for kill in (e for e in events if isinstance(e, Kill)):
            obs = next(
                o
                for r in agents.values()
                for o in r.seen
                if o.tick > kill.tick and o.phase == "free_roam" and not o.ghost
            )
            forged = obs.model_copy(
                update={"far_players": {**obs.far_players, kill.victim: obs.pos}}
            )
            found, _ = view_leaks({obs.agent: [forged]}, events, G)
            assert found == [
                f"{obs.agent} (ego reference) step {obs.step}: names {kill.victim}, "
                "out of play, in view"
            ]
            planted += 1
        for a, seen in observations.items():
            knowledge = Knowledge("ego", G, ego_view="reference")
            for obs in seen:
                if obs.phase != "free_roam" or obs.ghost:
                    assert obs.far_players == {} and obs.far_bodies == {}
                    continue
                assert a not in obs.far_players
                assert set(obs.nearby_players) <= set(obs.far_players)
                view = knowledge.view(knowledge.update(obs))
                beyond += sum(v.distance > 12 for v in view.in_view.values())
        for d in events:
            if isinstance(d, Decision) and d.view_text and "blocks" in d.view_text:
                line = next(
                    (x for x in d.view_text.splitlines() if x.startswith("In view now: ")), ""
                )
                sent_beyond += any(float(n) > 12 for n in _distances(line))
    # the test has teeth: the reference's views and what was sent reached past 12
    assert beyond > 0 and sent_beyond > 0 and planted > 0


def _distances(line: str) -> list[str]:
    return re.findall(r"\((\d+\.\d) blocks", line)


GHOST_SEED = 1
"""A paper-rules game of the scripted agents (frames off, first kill no sooner than tick
200) in which a ghost stands in line of sight of a living player under 36 blocks."""


def test_no_ghost_in_a_living_players_far_set_over_a_paper_game(tmp_path: Path) -> None:
    """Scripted players under the paper rules: no living player's far set ever holds a
    ghost, though one stood in line of sight under 36 blocks of it."""
    seed = GHOST_SEED
    config = resolve_config(
        "paper",
        overrides={
            "seed": seed,
            "frames": "off",
            "rules": {"initial_kill_cooldown_ticks": 200},
        },
    )
    agents = {a: RecordingAgent(ScriptedAgent(a, G, seed)) for a in config.agent_ids()}
    Game(config, SPEC, FakeWorld(G), agents, tmp_path).run()
    events = read_events(tmp_path / "events.jsonl")
    kills = {ev.victim: ev.tick for ev in events if isinstance(ev, Kill)}
    assert kills, f"seed {seed} has no kill now; pin another"
    snapshots = [ev for ev in events if isinstance(ev, Positions)]
    would = 0
    for rec in agents.values():
        for obs in rec.seen:
            if obs.ghost:
                continue
            for ghost, tick in kills.items():
                if obs.tick <= tick:
                    continue
                assert ghost not in obs.far_players and ghost not in obs.nearby_players
                at = [p for p in snapshots if p.tick == obs.tick and ghost in p.players]
                if obs.phase == "free_roam" and at:
                    would += G.can_see(obs.pos, at[-1].players[ghost].pos, FAR_SIGHT_RANGE)
    leaks, _ = view_leaks({a: r.seen for a, r in agents.items()}, events, G)
    assert leaks == []
    assert would, f"seed {seed}: no ghost in a living player's line of sight; pin another"
