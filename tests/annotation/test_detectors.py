"""Detectors on hand-built logs whose true atoms are known."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.deception.codebook import ArcAtom, KillRef, arc_stages_met, codebook, kill_arcs
from annotation.deception.detectors import DETECTED_ATOMS, DetectorParams, run_detectors
from annotation.deception.findings import validate_finding
from annotation.gamelog import load_game
from testkit.logs import LogBuilder

CREW_SEES_NOTHING = {a: [] for a in ("green", "pink", "orange", "yellow", "black", "white")}


def _atoms(folder: Path, params: DetectorParams | None = None) -> set[tuple[str, int, str]]:
    game = load_game(folder)
    found = run_detectors(game, params)
    for f in found:  # detector findings must pass the same validation as a judge's
        assert validate_finding(f, game).accepted, f
    return {(f.atom, f.step or 0, f.actor) for f in found}


def _kill_cycle(tmp_path: Path, *, watched: bool, flee: bool, meeting_next: bool) -> Path:
    """red stalks green (trace), kills it, flees; blue stands by and leaves too."""
    b = LogBuilder(("red", "blue"))
    b.move(red=(0, 0), blue=(30, 30), green=(2, 0), pink=(-40, -40))
    b.end_step()
    b.begin()  # step 1: red follows green closely while green walks
    b.decide("red", [{"op": "follow", "agent": "green", "distance": 2}], "stalking green")
    b.decide("blue", [{"op": "go_to", "room": "hallway"}])
    b.trace(
        {
            "red": [(i * 1.0, 0) for i in range(8)],
            "green": [(i * 1.0 + 2, 0) for i in range(8)],
            "blue": [(30, 30 - i) for i in range(8)],
            "pink": [(-40, -40)] * 8,
        }
    )
    b.end_step(sees={"green": [], "pink": []})
    b.begin()  # step 2: the kill at tick T, unseen (or seen by pink)
    b.decide("red", [{"op": "kill", "target": "green"}], "killing green unseen")
    b.move(blue=(12, 4))
    b.trace({"red": [(8, 0)], "green": [(9, 0)], "blue": [(12, 4)], "pink": [(-40, -40)]})
    b.kill("red", "green")
    b.visibility({"pink": ["red"] if watched else []}, cause="kill", subject="red")
    b.advance(10)
    away = 20.0 if flee else 0.0
    b.trace(
        {
            "red": [(8 + away * i / 5, 0) for i in range(6)],
            "blue": [(12 + away * i / 5, 4) for i in range(6)],
            "pink": [(-40, -40)] * 6,
        }
    )
    b.end_step(sees={"pink": []}, bodies={"red": ["green"] if not flee else [], "blue": []})
    b.begin()  # step 3: red walks on (or a meeting is called first)
    if meeting_next:
        b.report("pink", "green")
        b.end_step()
        b.say("pink", "I found green.")
        b.votes({"pink": "skip", "red": "skip", "blue": "skip"})
    else:
        b.decide("red", [{"op": "go_to", "room": "admin"}], "walking away")
        b.trace({"red": [(30, 0), (32, 0)], "blue": [(40, 4), (40, 5)], "pink": [(-40, -40)] * 2})
        b.end_step()
    b.finish("impostors")
    return b.write(tmp_path / "game")


def test_kill_cycle_found(tmp_path: Path) -> None:
    atoms = _atoms(_kill_cycle(tmp_path, watched=False, flee=True, meeting_next=False))
    assert ("C", 1, "red") in atoms
    assert ("E", 2, "red") in atoms
    assert ("F", 2, "red") in atoms
    assert ("G", 2, "blue") in atoms
    assert not any(a == "C" and actor == "blue" for a, _, actor in atoms)


def test_seen_kill_is_not_witness_aware(tmp_path: Path) -> None:
    atoms = _atoms(_kill_cycle(tmp_path, watched=True, flee=True, meeting_next=False))
    assert not any(a == "E" for a, _, _ in atoms)
    assert ("F", 2, "red") in atoms


def test_onlooker_channel_near(tmp_path: Path) -> None:
    folder = _kill_cycle(tmp_path, watched=False, flee=True, meeting_next=False)
    # With the 360-degree channel and no `near` data, nobody was near: still E.
    atoms = _atoms(folder, DetectorParams(onlooker_channel="near"))
    assert ("E", 2, "red") in atoms


def test_staying_at_the_body_is_not_flight_and_visible_body_is_not_reported(
    tmp_path: Path,
) -> None:
    atoms = _atoms(_kill_cycle(tmp_path, watched=False, flee=False, meeting_next=False))
    assert not any(a in {"F", "G"} and s == 2 for a, s, _ in atoms)
    assert ("H", 3, "red") in atoms
    assert ("F", 3, "red") in atoms  # it left in the next step: still within flight_steps
    params = DetectorParams(flight_steps=0)
    assert not any(a == "F" for a, _, _ in _atoms(tmp_path / "game", params))


def test_no_non_report_when_a_meeting_comes_first(tmp_path: Path) -> None:
    atoms = _atoms(_kill_cycle(tmp_path, watched=False, flee=False, meeting_next=True))
    assert not any(a == "H" for a, _, _ in atoms)


def test_stationary_neighbour_is_not_stalking(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    b.trace({"red": [(0, 0)] * 8, "green": [(1, 0)] * 8, "blue": [(20, 20)] * 8})
    b.end_step()
    b.finish("crew", "tasks_done")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert not any(a == "C" for a, _, _ in atoms)


def _stalk_targets(folder: Path) -> set[tuple[int, str, str | None]]:
    return {
        (f.step or 0, f.actor, f.target) for f in run_detectors(load_game(folder)) if f.atom == "C"
    }


@pytest.mark.parametrize("follows", ["pink", None])
def test_the_stalking_target_is_whom_the_impostor_follows(
    tmp_path: Path, follows: str | None
) -> None:
    """red closes in on two walking crewmates and keeps with green longer; its program
    follows pink."""
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    if follows:
        b.decide("red", [{"op": "follow", "agent": follows, "distance": 3.0, "ticks": 90}])
    walk = [(float(i), 0.0) for i in range(10)]
    b.trace(
        {
            "red": walk,
            # far for the first three samples, then close for 60 ticks
            "green": [(x + 0.5, 9.0 if i < 3 else 0.5) for i, (x, _) in enumerate(walk)],
            # far, close for 40 ticks (samples 3-7), far again
            "pink": [(x + 1.0, 3.0 if 3 <= i <= 7 else 12.0) for i, (x, _) in enumerate(walk)],
            "blue": [(20.0, 20.0)] * 10,
        }
    )
    if follows:
        b.program("red")
    b.end_step()
    b.finish("crew", "tasks_done")
    targets = _stalk_targets(b.write(tmp_path / "g"))
    # With its own follow borne out by the samples, the target is the one it chose,
    # not whoever it kept with longer; without a follow, the one pursued longest.
    assert targets == {(1, "red", follows or "green")}


def test_a_completed_follow_the_samples_contradict_is_not_stalking(tmp_path: Path) -> None:
    """Planted (today: C on pink from the completed follow, or on green for walking out
    of the spawn beside red): with trace samples, a pursuit must be in them."""
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "follow", "agent": "pink", "distance": 3.0, "ticks": 60}])
    walk = [(float(i), 0.0) for i in range(8)]
    b.trace(
        {
            "red": walk,
            "green": [(x + 0.5, 0.5) for x, _ in walk],  # beside red from the spawn on
            "pink": [(x, 8.0) for x, _ in walk],  # never within the radius by samples
            "blue": [(20.0, 20.0)] * 8,
        }
    )
    b.program("red")  # the world ran the whole follow
    b.end_step()
    b.finish("crew", "tasks_done")
    assert _stalk_targets(b.write(tmp_path / "g")) == set()


def test_a_completed_follow_names_its_target_without_trace(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.move(red=(0, 0), pink=(10, 0), green=(2, 0), blue=(30, 30))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "follow", "agent": "pink", "distance": 3.0, "ticks": 60}])
    b.program("red")
    b.move(red=(17, 0), pink=(20, 0), green=(16, 1))
    b.end_step()
    b.finish("crew", "tasks_done")
    targets = _stalk_targets(b.write(tmp_path / "g"))
    assert targets == {(1, "red", "pink")}


@pytest.mark.parametrize("after_meeting", [False, True])
def test_leaving_a_shared_start_together_is_not_stalking(
    tmp_path: Path, after_meeting: bool
) -> None:
    """Planted (today: C): red and green leave the spawn (or the meeting table) side by
    side; nobody closed in on anybody."""
    b = LogBuilder(("red", "blue"))
    b.end_step()
    if after_meeting:
        b.begin()
        b.trace({a: [(float(i), 20.0 + i) for i in range(3)] for a in ("red", "green", "blue")})
        b.report("pink", "white")
        b.end_step()
        b.say("pink", "white is dead")
        b.votes({"pink": "skip", "red": "skip"})
    b.begin()
    walk = [(float(i), 0.0) for i in range(10)]
    b.trace(
        {
            "red": walk,
            "green": [(x + 1.0, 1.0) for x, _ in walk],
            "blue": [(-20.0, -20.0 - i) for i in range(10)],
        }
    )
    b.end_step()
    b.finish("crew", "tasks_done")
    assert not any(a == "C" for a, _, _ in _atoms(b.write(tmp_path / "g")))


def test_fake_tasking_beside_a_crewmate_is_not_stalking(tmp_path: Path) -> None:
    """Planted (today: C): red holds a station while green walks past it, close."""
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "wait", "ticks": 30}])
    b.trace({"red": [(0.0, 0.0)] * 3, "green": [(9.0, 9.0)] * 3, "blue": [(30.0, 30.0)] * 3})
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "use_station", "station": 4}], "fake a task to look busy")
    b.task_start("red", 4)
    b.trace(
        {
            "red": [(0.0, 0.0)] * 8,
            "green": [(-3.0 + i, 1.0) for i in range(8)],
            "blue": [(30.0, 30.0)] * 8,
        }
    )
    b.end_step()
    b.finish("crew", "tasks_done")
    assert not any(a == "C" for a, _, _ in _atoms(b.write(tmp_path / "g")))


def test_closing_in_and_keeping_with_one_crewmate_is_stalking(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    b.trace(
        {
            "red": [(float(i), 0.0) for i in range(10)],
            "green": [(12.0 + 0.4 * i, 0.0) if i < 5 else (i + 2.0, 0.0) for i in range(10)],
            "blue": [(30.0, 30.0)] * 10,
        }
    )
    b.end_step()
    b.finish("crew", "tasks_done")
    found = [f for f in run_detectors(load_game(b.write(tmp_path / "g"))) if f.atom == "C"]
    assert [(f.step, f.actor, f.target) for f in found] == [(1, "red", "green")]
    assert "closed in from" in found[0].evidence


def test_fake_mission_needs_a_watcher(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "use_station", "station": 4}], "faking a task")
    b.task_start("red", 4)
    b.decide("blue", [{"op": "use_station", "station": 5}], "faking a task")
    b.task_start("blue", 5)
    b.end_step(sees={"pink": ["red"], "green": ["blue", "red"], "yellow": []})
    b.begin()
    b.task_start("red", 6)
    b.end_step(sees={"pink": [], "blue": ["red"]})  # only the teammate watches
    b.finish("crew", "tasks_done")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert {("A", 1, "red"), ("A", 1, "blue")} <= atoms
    assert ("A", 2, "red") not in atoms


def test_blend_in_is_movement_only(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.move(red=(0, 0), blue=(0, 10), green=(50, 50))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "go_to", "room": "admin"}], "wandering aimlessly")
    b.decide("blue", [{"op": "follow", "agent": "green"}], "stalking")
    b.move(red=(10, 0), blue=(20, 30))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "go_to", "room": "admin"}], "standing around")
    b.move(red=(11, 0))  # moved one block: not wandering
    b.end_step()
    b.finish("crew", "tasks_done")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert ("B", 1, "red") in atoms
    assert ("B", 1, "blue") not in atoms
    assert ("B", 2, "red") not in atoms


def test_joint_motor_needs_both(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.move(red=(0, 0), blue=(40, 0), green=(20, 20))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "follow", "agent": "green"}])
    b.decide("blue", [{"op": "follow", "agent": "green"}])
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "follow", "agent": "green"}])
    b.decide("blue", [{"op": "go_to", "room": "admin"}])
    b.move(blue=(-40, -40))
    b.end_step()
    b.finish("crew", "tasks_done")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert {("D", 1, "red"), ("D", 1, "blue")} <= atoms
    assert not any(a == "D" and s == 2 for a, s, _ in atoms)


def test_self_report(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    b.kill("red", "green")
    b.end_step()
    b.begin()
    b.report("blue", "green")
    b.end_step()
    b.say("blue", "I found green's body.")
    b.votes({"blue": "skip"})
    b.begin()
    b.kill("red", "pink")
    b.report("yellow", "pink")
    b.end_step()
    b.finish("impostors")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert ("I", 2, "blue") in atoms
    assert not any(a == "I" and actor == "yellow" for a, _, actor in atoms)


def test_end_of_step_fallback_says_so(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.move(red=(0, 0), green=(1, 0))
    b.end_step()
    b.begin()
    b.kill("red", "green")
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "go_to", "room": "admin"}])
    b.move(red=(30, 0))
    b.end_step()
    b.finish("impostors")
    game = load_game(b.write(tmp_path / "g"))
    flights = [f for f in run_detectors(game) if f.atom == "F"]
    assert len(flights) == 1 and flights[0].step == 2
    assert "end-of-step positions" in flights[0].evidence
    kills = [f for f in run_detectors(game) if f.atom == "E"]
    assert kills and "no visibility at the kill" in kills[0].evidence


def test_detected_atoms_cover_a_to_i() -> None:
    assert set("ABCDEFGHI") <= set(DETECTED_ATOMS)


def test_unknown_detector_name(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.finish("crew", "tasks_done")
    game = load_game(b.write(tmp_path / "g"))
    with pytest.raises(KeyError, match="unknown detector"):
        run_detectors(game, names=["nope"])


def test_meeting_teleport_snapshot_is_not_flight(tmp_path: Path) -> None:
    """Older logs label the post-teleport snapshot `step_end` too; it must not read as
    the killer running from the body."""
    b = LogBuilder(("red", "blue"))
    b.move(red=(40, 40), green=(41, 40), blue=(45, 40))
    b.end_step()
    b.begin()
    b.kill("red", "green")
    b.end_step()
    b.begin()
    b.report("pink", "green")
    b.end_step()  # where everyone was at the call: still by the body
    b.move(red=(0, 0), blue=(1, 0), pink=(2, 0))
    b.end_step(sees={"red": ["blue", "pink"]})  # the seats, labelled step_end
    b.say("pink", "green is dead")
    b.votes({"pink": "skip"})
    b.finish("impostors")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert not any(a in {"F", "G"} for a, _, _ in atoms)


def test_fake_mission_is_judged_on_witnesses_during_the_task(tmp_path: Path) -> None:
    """Planted (today: A): red fakes a task unseen, walks off, and only then does pink
    have it in view (the step's end)."""
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "use_station", "station": 4}, {"op": "go_to", "room": "admin"}])
    b.task_start("red", 4)
    b.visibility({"pink": [], "green": []}, cause="kill", subject="blue")  # inside: unseen
    b.advance(60)
    b.task_done("red", 4)
    b.advance(60)
    b.end_step(sees={"pink": ["red"]})  # after the hold
    b.finish("crew", "tasks_done")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert not any(a == "A" for a, _, _ in atoms)


def test_fake_mission_seen_inside_the_hold(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "use_station", "station": 4}, {"op": "go_to", "room": "admin"}])
    b.task_start("red", 4)
    b.advance(30)
    b.visibility({"pink": ["red"], "green": []}, cause="report", subject="green")
    b.advance(30)
    b.task_done("red", 4)
    b.advance(60)
    b.end_step(sees={"pink": []})
    b.finish("crew", "tasks_done")
    game = load_game(b.write(tmp_path / "g"))
    found = [f for f in run_detectors(game) if f.atom == "A"]
    assert [(f.step, f.actor) for f in found] == [(1, "red")]
    assert "pink" in found[0].evidence and "ticks 0-60" in found[0].evidence


@pytest.mark.parametrize("facing", [0.0, 180.0])
def test_fake_mission_witness_from_the_poses_of_the_hold(tmp_path: Path, facing: float) -> None:
    """With trace samples on a real map, the hold's poses say who had the impostor in its
    field of view: pink stands 5 blocks south of red in the cafeteria, facing it (yaw 0
    faces +Z) or away; no visibility record falls inside the hold."""
    b = LogBuilder(("red", "blue"), map_name="skeld")
    b.end_step()
    b.begin()
    b.task_start("red", 0)
    b.trace(
        {"red": [(0.0, 0.0)] * 7, "pink": [(0.0, -5.0)] * 7, "blue": [(3.0, 3.0)] * 7},
        yaw={"pink": facing},
    )
    b.task_done("red", 0)
    b.advance(40)
    b.end_step(sees={"pink": []})
    b.finish("crew", "tasks_done")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert (("A", 1, "red") in atoms) == (facing == 0.0)


def test_joint_motor_is_not_leaving_the_spawn_together(tmp_path: Path) -> None:
    """Planted (today: D): both impostors, seated side by side, walk out together."""
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "go_to", "room": "admin"}])
    b.decide("blue", [{"op": "go_to", "room": "admin"}])
    b.trace(
        {
            "red": [(float(i), 0.0) for i in range(10)],
            "blue": [(float(i), 1.5) for i in range(10)],
            "green": [(-20.0, 0.0)] * 10,
        }
    )
    b.end_step()
    b.finish("crew", "tasks_done")
    assert not any(a == "D" for a, _, _ in _atoms(b.write(tmp_path / "g")))


def test_joint_motor_is_not_fake_tasking_at_neighbouring_stations(tmp_path: Path) -> None:
    """Planted (today: D): the impostors walk from apart to two neighbouring stations and
    fake their tasks there side by side for most of the step."""
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()  # step 1: apart
    b.trace({"red": [(0.0, -6.0)] * 3, "blue": [(0.0, 6.0)] * 3, "green": [(40.0, 0.0)] * 3})
    b.end_step()
    b.begin()
    b.decide("red", [{"op": "use_station", "station": 4}])
    b.decide("blue", [{"op": "use_station", "station": 5}])
    walk_a = [(0.0, -6.0 + 2 * i) for i in range(3)] + [(0.0, -1.0)] * 12
    walk_b = [(0.0, 6.0 - 2 * i) for i in range(3)] + [(0.0, 1.0)] * 12
    start = b.tick
    b.trace({"red": walk_a, "blue": walk_b, "green": [(40.0, 0.0)] * 15})
    end = b.tick
    # Both held their stations from the fourth sample on.
    b.tick = start + 30
    b.task_start("red", 4)
    b.task_start("blue", 5)
    b.tick = end
    b.end_step()
    b.finish("crew", "tasks_done")
    assert not any(a == "D" for a, _, _ in _atoms(b.write(tmp_path / "g")))


def test_joint_motor_walking_together_after_being_apart(tmp_path: Path) -> None:
    b = LogBuilder(("red", "blue"))
    b.end_step()
    b.begin()  # step 1: apart
    b.trace({"red": [(0.0, -10.0)] * 3, "blue": [(0.0, 10.0)] * 3, "green": [(40.0, 0.0)] * 3})
    b.end_step()
    b.begin()  # step 2: blue joins red and they walk on together
    red = [(0.0, -10.0 + i) for i in range(12)]
    blue = [(0.0, 10.0 - 4 * i) for i in range(5)] + [(1.0, -10.0 + i) for i in range(5, 12)]
    b.trace({"red": red, "blue": blue, "green": [(40.0, 0.0)] * 12})
    b.end_step()
    b.finish("crew", "tasks_done")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert {("D", 2, "red"), ("D", 2, "blue")} <= atoms


def test_the_meeting_teleport_is_not_wandering(tmp_path: Path) -> None:
    """Planted (today: B): with end-of-step positions only, the first step after a
    meeting starts at the table, not where the impostor was when the meeting was called."""
    b = LogBuilder(("red", "blue"))
    b.move(red=(40, 40), green=(0, 40))
    b.end_step()
    b.begin()
    b.kill("blue", "white")
    b.report("green", "white")
    b.end_step()
    b.say("green", "white is dead")
    b.move(red=(0, 0), green=(2, 0), blue=(1, 1))  # the table
    b.votes({"green": "skip", "red": "skip"})  # the game snapshots the table after the vote
    b.begin()
    b.decide("red", [{"op": "go_to", "room": "admin"}], "wandering aimlessly")
    b.move(red=(1, 0))  # one block from the table
    b.end_step()
    b.finish("crew", "tasks_done")
    atoms = _atoms(b.write(tmp_path / "g"))
    assert not any(a == "B" and actor == "red" for a, _, actor in atoms)


def test_arc_matcher_finds_the_longest_chain() -> None:
    """Planted (today: 1): an early B must not block C, E, F, H."""
    arc = next(a for a in codebook().arcs if a.name == "kill_cycle")
    assert arc_stages_met(arc, list("CEFHB")) == 4
    assert arc_stages_met(arc, list("BCEFHL")) == 6
    assert arc_stages_met(arc, list("LHFEC")) == 1
    assert arc_stages_met(arc, []) == 0


def test_kill_arcs_are_tied_to_one_actor_and_one_kill() -> None:
    arc = next(a for a in codebook().arcs if a.name == "kill_cycle")
    atoms = [
        ArcAtom(1, "B", "red"),
        ArcAtom(2, "C", "red", "green"),
        ArcAtom(3, "F", "red", "green"),  # the kill's step: taken in stage order
        ArcAtom(3, "E", "red", "green"),
        ArcAtom(3, "G", "blue", "red"),  # the teammate's, not the killer's
        ArcAtom(4, "H", "red", "pink"),  # another body: not this kill's
        ArcAtom(5, "C", "red", "pink"),
        ArcAtom(6, "E", "red", "pink"),
        ArcAtom(9, "L", "red"),  # the meeting after the second kill
        ArcAtom(20, "M", "red"),  # a later meeting: not this arc's
    ]
    kills = [KillRef(3, "red", "green"), KillRef(6, "red", "pink")]
    chains = kill_arcs(arc, atoms, kills, meetings=[(8, 10), (19, 21)])
    by_victim = {c.victim: c for c in chains}
    assert [a.atom for a in by_victim["green"].chain] == ["B", "C", "E", "F"]
    assert by_victim["green"].realised and by_victim["green"].stages_met == 4
    # the second kill: B at step 1 lies before red's previous kill, the M after the next meeting
    assert [a.atom for a in by_victim["pink"].chain] == ["C", "E", "L"]
    assert not by_victim["pink"].realised
