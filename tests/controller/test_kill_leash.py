"""The kill program's leash: a strike never lands far from where the approach began."""

from __future__ import annotations

from controller.config import RulesConfig
from controller.programs import KillTarget, Program, compile_program
from controller.protocol import ApproachStep, GotoStep, LowProgram
from controller.worlds.base import Seat
from controller.worlds.fake import FakeWorld
from world.builder import build_blocks
from world.geometry import ShipGeometry
from world.spec import load_map

GEOMETRY = ShipGeometry(load_map("skeld"))
CAFE = GEOMETRY.room_center("cafeteria")


def _world() -> FakeWorld:
    world = FakeWorld(GEOMETRY)
    x, y, z = CAFE
    world.start(
        build_blocks(GEOMETRY.spec),
        [Seat("red", "Red", (x, y, z)), Seat("blue", "Blue", (x + 3.0, y, z))],
    )
    return world


def test_kill_compiles_to_a_leashed_approach() -> None:
    rules = RulesConfig()

    class _Engine:
        pass

    engine = _Engine()
    engine.rules = rules  # type: ignore[attr-defined]
    low = compile_program(Program(actions=[KillTarget(target="blue")]), engine, GEOMETRY)  # type: ignore[arg-type]
    assert low.steps == [
        ApproachStep(agent="blue", range=rules.kill_range * 0.6, leash=rules.kill_defer_distance)
    ]
    tight = compile_program(
        Program(actions=[KillTarget(target="blue", max_distance=4.0)]),
        engine,  # type: ignore[arg-type]
        GEOMETRY,
    )
    assert tight.steps[0] == ApproachStep(agent="blue", range=rules.kill_range * 0.6, leash=4.0)
    loose = compile_program(
        Program(actions=[KillTarget(target="blue", max_distance=99.0)]),
        engine,  # type: ignore[arg-type]
        GEOMETRY,
    )
    assert isinstance(loose.steps[0], ApproachStep)
    assert loose.steps[0].leash == rules.kill_defer_distance  # the rules cap the agent's leash


def test_far_away_strike_is_given_up() -> None:
    # Blue walks off to another room while red chases: unleashed, red would follow it
    # across the map and strike there; leashed, the approach gives up and says why.
    world = _world()
    far = GEOMETRY.room_center("admin")
    report = world.run_programs(
        {
            "blue": LowProgram(steps=[GotoStep(pos=far, range=1.0)]),
            "red": LowProgram(steps=[ApproachStep(agent="blue", range=1.8, leash=5.0)]),
        },
        10000,
    )
    red = report.outcomes["red"]
    assert red.status == "failed"
    assert "beyond its leash of 5" in red.reason
    assert not any(e.kind == "reached" for e in red.events)


def test_unleashed_approach_chases_anywhere() -> None:
    world = _world()
    far = GEOMETRY.room_center("admin")
    report = world.run_programs(
        {
            "blue": LowProgram(steps=[GotoStep(pos=far, range=1.0)]),
            "red": LowProgram(steps=[ApproachStep(agent="blue", range=1.8)]),
        },
        10000,
    )
    reached = [e for e in report.outcomes["red"].events if e.kind == "reached"]
    assert reached, "the control case must show the long chase the leash prevents"


def test_a_near_target_is_struck_within_the_leash() -> None:
    world = _world()
    report = world.run_programs(
        {"red": LowProgram(steps=[ApproachStep(agent="blue", range=1.8, leash=5.0)])}, 5000
    )
    assert report.outcomes["red"].status == "ok"
    assert any(e.kind == "reached" for e in report.outcomes["red"].events)
