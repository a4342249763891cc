"""The ejection announcement reads as a sentence, with and without `confirm_ejects` (the
reference's `was a Crewmate.` / `was an Impostor.`)."""

from __future__ import annotations

from controller.events import Eject, ServerMessage
from controller.meeting import ejection_line
from testkit.games import GameStore


def test_the_line_names_the_player_and_with_confirm_its_role() -> None:
    assert ejection_line("Blue", "impostor", False) == "Blue was ejected."
    # the reference's wording, with this project's spelling of Impostor
    assert ejection_line("Blue", "impostor", True) == "Blue was ejected. Blue was an Impostor."
    assert ejection_line("Red", "crewmate", True) == "Red was ejected. Red was a Crewmate."


EJECTING_SEED = 60
"""A quick fake-world game (frames off) that ejects someone."""


def test_a_game_with_confirm_ejects_announces_each_ejection_so(fake_games: GameStore) -> None:
    events = fake_games.events(seed=EJECTING_SEED, frames="off", rules={"confirm_ejects": True})
    ejects = [e for e in events if isinstance(e, Eject)]
    assert ejects, f"seed {EJECTING_SEED} ejects no one now; pin another"
    lines = [
        e.text
        for e in events
        if isinstance(e, ServerMessage) and "was ejected." in e.text and "No one" not in e.text
    ]
    names = {e.agent: e.agent.capitalize() for e in ejects}
    assert lines == [ejection_line(names[e.agent], e.role, True) for e in ejects]
