"""`annotation.gamelog`: a step in which a meeting was called, as it is read and the
judge's rendering shows it (where everyone was when the step's programs ended and who saw
whom there, never the meeting table), and an arm's label from the sides' declared axes.

Today's games log the call (`meeting_start`) while the step's programs run, so the step's
own `step_end` positions and visibility come after it; a log written before the
`meeting_seats` cause labels the table `step_end` too, the calling step's second such
record. Both read the same: the first is the step's end, the second the table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.deception.render import render_nonverbal, render_verbal
from annotation.gamelog import Game, arm_label, load_game, seen_by
from controller.events import GameStart, MeetingStart, Positions
from controller.record import GameSetup
from testkit.games import GameStore
from testkit.logs import GameBuilder, resolved_config, sides_of


@pytest.fixture(scope="module")
def quick3(fake_games: GameStore) -> Game:
    """Quick seed 3 (fake world): two meetings, each called by a report."""
    return load_game(fake_games.game("quick", seed=3, frames="off"))


def test_the_pinned_game_calls_meetings_before_its_steps_end(quick3: Game) -> None:
    g = quick3
    assert [m.trigger for m in g.meetings] == ["report", "report"]
    for m in g.meetings:
        at = g.events.index(m)
        end = g.end_positions[m.step]
        assert end is g.index.step_end(m.step)
        assert end.cause == "step_end" and g.events.index(end) > at
        sight = [v for v in g.visibility[m.step] if v.cause == "step_end"]
        assert len(sight) == 1 and g.events.index(sight[0]) > at
        assert not [v for v in g.visibility[m.step] if v.cause == "meeting_seats"]


def test_a_calling_steps_end_and_sight_reach_the_judge(quick3: Game) -> None:
    g = quick3
    nonverbal = render_nonverbal(g).splitlines()
    for m in g.meetings:
        end = g.end_positions[m.step]
        (vis,) = [v for v in g.visibility[m.step] if v.cause == "step_end"]
        living = [i for i in g.impostors if i in g.alive_at(m.step, g.step_ticks[m.step][0])]
        assert living
        for imp in living:
            (line,) = [x for x in nonverbal if x.startswith(f"[step {m.step}] {imp} (impostor)")]
            snap = end.players[imp]
            assert f"| in {snap.room} at ({snap.pos[0]:.0f}," in line
            assert f"| sees: {', '.join(vis.sees.get(imp, [])) or 'nobody'} |" in line
            assert f"| seen by: {', '.join(seen_by(vis, imp)) or 'nobody'} |" in line
            assert "| near at end: " in line


def test_a_speakers_rooms_end_where_the_calling_step_ended(quick3: Game) -> None:
    g = quick3
    verbal = render_verbal(g).splitlines()
    for m in g.meetings:
        end = g.end_positions[m.step]
        for speaker in m.order:
            head = f"# fact: {speaker} ({g.roles[speaker]}) rooms since last meeting: "
            facts = [x for x in verbal if x.startswith(head)]
            assert facts, speaker
            rooms = [x[len(head) :].split(";")[0].split(" > ")[-1] for x in facts]
            assert end.players[speaker].room in rooms


def _old_log(tmp_path: Path, *, called_first: bool) -> Game:
    """A v1-shaped log (no causes: the meeting table is a second `step_end` snapshot and
    sight of the calling step), with the call logged after the step's end or, as the
    engine logs it, before."""
    b = GameBuilder(v1=True)
    b.free_roam({"pink": ["admin"], "blue": ["admin"]}, kills=[("pink", "red", 50, {})])
    b.free_roam(
        {"green": ["admin"]},
        sees={"green": ["pink", "blue"], "pink": ["green", "blue"], "blue": ["pink"]},
        report=("green", "red"),
    )
    b.talk([("green", "Red is dead; I was in admin with Pink and Blue.")])
    b.vote({"green": "pink", "blue": "skip", "pink": "skip", "orange": "skip"})
    events = b.end()
    if called_first:
        call = next(e for e in events if isinstance(e, MeetingStart))
        end = next(e for e in events if isinstance(e, Positions) and e.step == call.step)
        events.remove(call)
        events.insert(events.index(end), call)
        b.events = events
    return load_game(b.write(tmp_path / "run"))


@pytest.mark.parametrize("called_first", [False, True], ids=["call-after-end", "call-first"])
def test_an_old_logs_table_labelled_step_end_is_the_seats(
    tmp_path: Path, called_first: bool
) -> None:
    g = _old_log(tmp_path, called_first=called_first)
    (m,) = g.meetings
    ends = [e for e in g.snapshots if e.step == m.step]
    assert [e.cause for e in ends] == ["step_end", "step_end"]
    assert g.end_positions[m.step] is ends[0]
    assert ends[0].players["pink"].room == "admin"
    assert ends[1].players["pink"].room != "admin"
    assert [v.cause for v in g.visibility[m.step]] == ["step_end", "meeting_seats"]
    (line,) = [x for x in render_nonverbal(g).splitlines() if x.startswith(f"[step {m.step}] pink")]
    assert "| in admin at " in line
    assert "| sees: green, blue | seen by: blue, green |" in line


def test_an_arm_label_names_the_axes_each_side_declared() -> None:
    """Each side's axes in the order its kind declared them (`SideFacts.axes`): ARIA's
    five for an `aria` side, none for a scripted one."""
    config = resolved_config(
        1,
        impostor=("fake:imp", {"state": "ego", "planning": "hierarchical"}),
        crew=("scripted", {}),
    )
    start = GameStart(
        step=0, tick=0, seed=1, agents=["red"], roles={"red": "impostor"}, tasks={},
        map="skeld", preset="quick", config=config, sides=sides_of(config),
    )  # fmt: skip
    setup = GameSetup.from_start(start)
    assert setup.impostor.facts.axes == ["state", "memory", "planning", "reflection", "prompt"]
    label = arm_label(setup)
    assert label.startswith("imp=fake:imp/ego/semantic/hierarchical/off/minimal crew=scripted ")
    assert label.endswith(f" rules={setup.rules_sha256[:8]}")
