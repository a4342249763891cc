"""The fake world's side of the world contract: game clock, arbiter, directives, samples."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from controller.checks import world_conformance
from controller.protocol import (
    ApproachStep,
    BlockPlacement,
    ChatStep,
    FollowStep,
    GotoStep,
    LookStep,
    LowProgram,
    MarkStep,
    PlayerPose,
    ProgramEvent,
    RuleDirective,
    StepReport,
    Teleport,
    WaitStep,
)
from controller.worlds.base import Arbiter, Seat
from controller.worlds.fake import FakeWorld
from world.geometry import ShipGeometry
from world.spec import load_map

GEOMETRY = ShipGeometry(load_map("skeld"))


def _world(n: int = 3) -> FakeWorld:
    world = FakeWorld(GEOMETRY)
    names = ["red", "blue", "green", "pink"][:n]
    world.start([], [Seat(a, a.capitalize(), GEOMETRY.seat_pos(i)) for i, a in enumerate(names)])
    return world


def _far_target() -> tuple[float, float, float]:
    return GEOMETRY.room_center("reactor")  # ~35 blocks of corridor from seat 0


def test_the_clock_does_not_move_outside_a_batch(tmp_path: Path) -> None:
    world = _world()
    tick0, _ = world.state()
    world.teleport({"red": Teleport(pos=GEOMETRY.seat_pos(5))})
    world.set_blocks([BlockPlacement(x=0, y=0, z=0, block="red_carpet")])
    world.render(["red"], tmp_path, "jpg")
    world.broadcast("hello")
    assert world.state()[0] == tick0
    world.run_programs({"red": LowProgram(steps=[WaitStep(ticks=7)])}, 30000)
    assert world.state()[0] == tick0 + 7


def test_a_batch_of_instant_steps_costs_no_tick() -> None:
    world = _world()
    tick0, _ = world.state()
    report = world.run_programs(
        {"red": LowProgram(steps=[LookStep(yaw=90), ChatStep(text="hi"), MarkStep(tag="m")])},
        30000,
    )
    assert report.tick == tick0
    assert report.outcomes["red"].status == "ok"
    assert report.players["red"].yaw == 90.0


def test_walking_n_ticks_covers_n_times_the_speed() -> None:
    world = _world()
    start = world.players["red"].pos
    report = world.run_programs({"red": LowProgram(steps=[GotoStep(pos=_far_target())])}, 1000)
    assert report.outcomes["red"].status == "timeout"
    assert report.tick == 20
    moved = math.dist(start, report.players["red"].pos)
    assert moved <= 20 * world.speed + 1e-6
    assert moved > 15 * world.speed


def test_the_arbiter_sees_each_mark_and_reached_as_it_happens() -> None:
    world = _world()
    calls: list[tuple[str, ProgramEvent, dict[str, PlayerPose]]] = []

    def arbiter(
        agent: str, event: ProgramEvent, poses: dict[str, PlayerPose]
    ) -> RuleDirective | None:
        calls.append((agent, event, poses))
        return None

    report = world.run_programs(
        {
            "red": LowProgram(steps=[WaitStep(ticks=5), MarkStep(tag="a"), ChatStep(text="x")]),
            "blue": LowProgram(steps=[ApproachStep(agent="green", range=1.5), MarkStep(tag="b")]),
        },
        30000,
        arbiter=arbiter,
    )
    kinds = [(agent, ev.kind) for agent, ev, _ in calls]
    assert ("red", "mark") in kinds and ("blue", "reached") in kinds and ("blue", "mark") in kinds
    assert all(ev.kind != "chat" for _, ev, _ in calls)
    ticks = [ev.tick for _, ev, _ in calls]
    assert ticks == sorted(ticks)
    red_call = next(c for c in calls if c[0] == "red")
    assert red_call[1].tick == 5
    assert set(red_call[2]) == {"red", "blue", "green"}
    assert red_call[2]["red"].pos == red_call[1].pos
    assert report.tick == 5


def test_cancel_ends_the_victims_program_at_once_and_it_stops() -> None:
    world = _world()

    seen: list[dict[str, PlayerPose]] = []

    def arbiter(
        agent: str, event: ProgramEvent, poses: dict[str, PlayerPose]
    ) -> RuleDirective | None:
        seen.append(poses)
        if event.tag == "kill":
            return RuleDirective(cancel=["blue"], reason="killed")
        return None

    report = world.run_programs(
        {
            "red": LowProgram(steps=[WaitStep(ticks=10), MarkStep(tag="kill"), WaitStep(ticks=30)]),
            "blue": LowProgram(steps=[GotoStep(pos=_far_target()), MarkStep(tag="arrived")]),
        },
        30000,
        arbiter=arbiter,
    )
    blue = report.outcomes["blue"]
    assert blue.status == "cancelled" and blue.reason == "killed"
    assert blue.end_tick == 10
    assert all(ev.tag != "arrived" for ev in blue.events)
    at_kill = next(s for s in report.samples if s.tick == 10).players["blue"].pos
    assert report.players["blue"].pos == at_kill  # it did not walk on after the kill
    assert seen[0]["blue"].pos == at_kill  # the arbiter saw the poses of the kill's tick
    red = report.outcomes["red"]
    assert red.status == "ok" and red.end_tick == 40


def test_a_cancel_naming_the_actor_stops_its_own_program() -> None:
    world = _world()
    report = world.run_programs(
        {"red": LowProgram(steps=[MarkStep(tag="x"), MarkStep(tag="never")])},
        30000,
        arbiter=lambda agent, ev, poses: RuleDirective(cancel=[agent], reason="stop"),
    )
    out = report.outcomes["red"]
    assert out.status == "cancelled" and [e.tag for e in out.events] == ["x"]
    assert out.steps_done == 1  # the mark itself happened


def test_freeze_stops_every_program_and_the_clock() -> None:
    world = _world()

    def arbiter(
        agent: str, event: ProgramEvent, poses: dict[str, PlayerPose]
    ) -> RuleDirective | None:
        return RuleDirective(freeze=True, reason="meeting") if event.tag == "report" else None

    report = world.run_programs(
        {
            "red": LowProgram(steps=[WaitStep(ticks=12), MarkStep(tag="report")]),
            "blue": LowProgram(steps=[GotoStep(pos=_far_target())]),
            "green": LowProgram(steps=[FollowStep(agent="blue", ticks=200)]),
        },
        30000,
        arbiter=arbiter,
    )
    assert report.tick == 12
    assert world.state()[0] == 12
    assert {o.status for a, o in report.outcomes.items() if a != "red"} == {"cancelled"}
    assert all(o.end_tick == 12 for o in report.outcomes.values())
    assert report.outcomes["blue"].reason == "meeting"
    assert report.outcomes["red"].status == "cancelled"  # the caller's own program too


def test_a_finished_program_is_not_cancelled() -> None:
    world = _world()
    report = world.run_programs(
        {
            "red": LowProgram(steps=[WaitStep(ticks=3)]),
            "blue": LowProgram(steps=[WaitStep(ticks=8), MarkStep(tag="k")]),
        },
        30000,
        arbiter=lambda a, ev, p: RuleDirective(cancel=["red"], reason="killed"),
    )
    assert report.outcomes["red"].status == "ok"
    assert report.outcomes["blue"].status == "ok"


@pytest.mark.parametrize("interval", [1, 4, 10])
def test_samples_are_dense_and_follow_the_walk(interval: int) -> None:
    world = _world()
    report = world.run_programs(
        {"red": LowProgram(steps=[GotoStep(pos=_far_target())])},
        1500,
        sample_interval=interval,
    )
    ticks = [s.tick for s in report.samples]
    assert ticks[0] == 0 and ticks[-1] == report.tick == 30
    assert all(0 < b - a <= interval for a, b in zip(ticks, ticks[1:], strict=False))
    assert report.samples[-1].players == {a: p for a, p in report.players.items() if p.connected}
    for a, b in zip(report.samples, report.samples[1:], strict=False):
        step = math.dist(a.players["red"].pos, b.players["red"].pos)
        assert step <= (b.tick - a.tick) * world.speed + 1e-6
    assert report.samples[0].players["red"].pos == GEOMETRY.seat_pos(0)


def test_samples_leave_out_disconnected_players() -> None:
    world = _world()
    world.inject_disconnect("blue")
    report = world.run_programs(
        {"red": LowProgram(steps=[WaitStep(ticks=3)]), "blue": LowProgram(steps=[])}, 30000
    )
    assert report.outcomes["blue"].status == "failed"
    assert all("blue" not in s.players for s in report.samples)


def test_a_bad_sample_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="sample_interval"):
        _world().run_programs({}, 1000, sample_interval=0)


def test_the_same_programs_give_the_same_report() -> None:
    def once() -> object:
        world = _world()
        return world.run_programs(
            {
                "red": LowProgram(steps=[GotoStep(pos=_far_target()), MarkStep(tag="m")]),
                "blue": LowProgram(steps=[FollowStep(agent="red", ticks=40)]),
            },
            30000,
            arbiter=lambda a, ev, p: None,
            sample_interval=5,
        )

    assert once() == once()


class _TickingTeleport(FakeWorld):
    """Fault: a teleport costs game time (as a wall-clock world would)."""

    def teleport(self, moves: dict[str, Teleport]) -> dict[str, PlayerPose]:
        self.tick += 3
        return super().teleport(moves)


class _DeafWorld(FakeWorld):
    """Fault: the arbiter is never called, so no directive is applied."""

    def run_programs(
        self,
        programs: dict[str, LowProgram],
        timeout_ms: int,
        arbiter: Arbiter | None = None,
        sample_interval: int = 10,
    ) -> StepReport:
        return super().run_programs(programs, timeout_ms, None, sample_interval)


class _SparseWorld(FakeWorld):
    """Fault: only the batch's first and last poses are sampled."""

    def run_programs(
        self,
        programs: dict[str, LowProgram],
        timeout_ms: int,
        arbiter: Arbiter | None = None,
        sample_interval: int = 10,
    ) -> StepReport:
        report = super().run_programs(programs, timeout_ms, arbiter, sample_interval)
        return report.model_copy(update={"samples": report.samples[:1] + report.samples[-1:]})


def test_world_conformance_passes_the_fake_world() -> None:
    assert world_conformance(FakeWorld(GEOMETRY), GEOMETRY) == []


@pytest.mark.parametrize(
    ("world", "caught"),
    [
        (_TickingTeleport(GEOMETRY), "clock: moved outside a batch"),
        (_DeafWorld(GEOMETRY), "arbiter: not called"),
        (_SparseWorld(GEOMETRY), "samples: more than 5 ticks apart"),
    ],
)
def test_world_conformance_catches_a_planted_fault(world: FakeWorld, caught: str) -> None:
    problems = world_conformance(world, GEOMETRY)
    assert any(p.startswith(caught) for p in problems), problems
