"""ARIA's rendering of the state view: denser than `StateView.to_text()`, no fact lost."""

from __future__ import annotations

import re
from typing import Any

from controller.observation import MeetingRecord, Sighting
from controller.views import Knowledge
from harness_aria.view_text import meeting_line, render_look, render_view, render_view_layout


def test_meeting_line_keeps_every_ballot_grouped_by_target() -> None:
    m = MeetingRecord(
        index=2,
        step=30,
        trigger="report",
        caller="green",
        victim="yellow",
        body_room="shields",
        ejected=None,
        outcome="skipped",
        votes={"black": "skip", "green": "pink", "orange": "pink", "red": "skip", "white": None},
    )
    line = meeting_line(m)
    assert line.startswith("#2 (step 30): Green reported Yellow's body in shields; skipped")
    assert "Votes: Pink by Green, Orange; skip by Black, Red; abstained: White." in line


def test_roster_is_dense_and_keeps_every_living_player(scene: Any) -> None:
    knowledge = Knowledge("privileged", scene.geometry)
    first = scene.obs(
        step=3,
        tick=300,
        roster={"blue": Sighting(step=3, tick=300, pos=scene.ahead(30), room="cafeteria")},
    )
    knowledge.update(first)
    view = knowledge.view(knowledge.update(scene.obs(step=6, tick=600)))
    text = render_view(view, "lean")  # the lean view: the same facts, densely
    roster = next(line for line in text.splitlines() if line.startswith("Roster"))
    assert "Blue cafeteria (" in roster and "3 steps ago" in roster
    assert "Green never seen" in roster
    for who in view.roster or []:
        assert who.capitalize() in roster
    # The same facts as the controller's rendering, in fewer characters.
    assert len(text) < len(view.to_text())


def test_the_rarely_changing_part_opens_the_view(scene: Any) -> None:
    knowledge = Knowledge("privileged", scene.geometry)
    view = knowledge.view(knowledge.update(scene.obs(step=4, tick=400)))
    head, tasks, rest = render_view_layout(view)
    assert head.startswith("You are ") and "Step 4." not in head
    assert rest.startswith("Step 4.")
    assert not tasks or tasks.startswith("Your pending tasks")
    assert render_view(view) == "\n".join(t for t in (head, tasks, rest) if t)


def test_positions_are_the_blocks_players_stand_on(scene: Any) -> None:
    knowledge = Knowledge("privileged", scene.geometry)
    roster = {"blue": Sighting(step=3, tick=300, pos=(-18.8, 64.0, 2.2), room="security")}
    view = knowledge.view(knowledge.update(scene.obs(step=3, tick=300, roster=roster)))
    text = render_view(view)
    assert "Blue security (-19, 2) now" in text  # floor: the block at x -19 spans -19..-18
    assert re.search(r"\(-?\d+\.\d+, -?\d+\.\d+\)", text) is None  # no tenths of a block


def test_the_look_view_holds_who_and_what_the_agent_sees(scene: Any) -> None:
    knowledge = Knowledge("privileged", scene.geometry)
    obs = scene.obs(step=5, tick=500, players={"blue": scene.ahead(3)})
    view = knowledge.view(knowledge.update(obs))
    look = render_look(view)
    assert look.startswith("You are Red, a crewmate.")
    assert "Step 5. Phase: free_roam." in look
    assert "In sight now: Blue (3.0 blocks, ahead)" in look
    whole = render_view(view)
    for line in look.splitlines():
        assert line in whole.splitlines()  # nothing the full view does not say
    assert "Roster" in whole and "Roster" not in look


def test_aria_args_refuse_scripted_as_a_backend() -> None:
    import pytest
    from pydantic import ValidationError

    from harness_aria.registration import AriaArgs
    from harness_aria.spec import AriaSpec

    with pytest.raises(ValidationError, match="agent: scripted"):
        AriaArgs(backend="scripted")
    # The meeting cap is the rules' `max_utterances`; the spec has no second, dead one.
    assert "max_meeting_utterances" not in AriaSpec.model_fields
