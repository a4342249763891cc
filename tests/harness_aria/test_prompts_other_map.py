"""What agents are told of the map comes from the map: nothing of the Skeld's names leaks
into the prompts of another map."""

from __future__ import annotations

from pathlib import Path

from controller.config import resolve_config
from harness_aria.prompts import shared_prefixes
from world.geometry import ShipGeometry
from world.spec import load_map

SKELD = Path(__file__).resolve().parents[2] / "world" / "maps" / "skeld.yaml"


def test_the_prompts_of_another_map_name_its_rooms(tmp_path: Path) -> None:
    # the Skeld with its meeting room renamed: the same shape, another map's words
    other = tmp_path / "mess.yaml"
    text = SKELD.read_text(encoding="utf-8").replace("cafeteria", "mess_hall")
    other.write_text(text)
    geometry = ShipGeometry(load_map(str(other)))
    rules = resolve_config("paper").rules
    for role in ("crewmate", "impostor"):
        for detail in ("none", "tables", "full"):
            prefixes = shared_prefixes(geometry, rules, role, detail)
            for group, text in prefixes.items():
                assert "cafeteria" not in text.lower(), (role, detail, group)
                assert "CAF " not in text, (role, detail, group)
            assert "mess_hall" in prefixes["decide"]
            assert "the mess_hall table" in prefixes["talk"]
    full = shared_prefixes(geometry, rules, "crewmate", "full")["decide"]
    assert "MH mess_hall" in full
