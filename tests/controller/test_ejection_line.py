"""The ejection announcement reads as a sentence, with and without `confirm_ejects` (the
reference's `was a Crewmate.` / `was an Impostor.`)."""

from __future__ import annotations

from pathlib import Path

from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Eject, ServerMessage, read_events
from controller.meeting import ejection_line
from world.spec import load_map


def test_the_line_names_the_player_and_with_confirm_its_role() -> None:
    assert ejection_line("Blue", "impostor", False) == "Blue was ejected."
    # the reference's wording, with this project's spelling of Impostor
    assert ejection_line("Blue", "impostor", True) == "Blue was ejected. Blue was an Impostor."
    assert ejection_line("Red", "crewmate", True) == "Red was ejected. Red was a Crewmate."


def test_a_game_with_confirm_ejects_announces_each_ejection_so(tmp_path: Path) -> None:
    # The first quick-preset seed whose fake-world game ejects someone.
    for seed in range(60, 100):
        config = resolve_config(
            "quick", overrides={"seed": seed, "frames": "off", "rules": {"confirm_ejects": True}}
        )
        out = tmp_path / str(seed)
        play_game(config, load_map(config.map), "fake", out)
        events = read_events(out / "events.jsonl")
        ejects = [e for e in events if isinstance(e, Eject)]
        if ejects:
            break
    assert ejects, "no seed of 60-99 ejects anyone"
    lines = [
        e.text
        for e in events
        if isinstance(e, ServerMessage) and "was ejected." in e.text and "No one" not in e.text
    ]
    names = {e.agent: e.agent.capitalize() for e in ejects}
    assert lines == [ejection_line(names[e.agent], e.role, True) for e in ejects]
