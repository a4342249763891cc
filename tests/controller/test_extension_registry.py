"""`controller.registry.Registry`: the one registration mechanism of every extension point."""

from __future__ import annotations

import sys

import pytest

from controller.commands import Command
from controller.registry import POINTS, Registry, RegistryError, UnknownNameError


def test_register_get_names_and_the_decorator_form() -> None:
    reg: Registry[int] = Registry("test number")
    reg.register("one", 1)
    assert reg.add("two")(2) == 2
    assert reg.names() == ["one", "two"]  # registration order
    assert reg.get("two") == 2 and reg["one"] == 1 and "one" in reg and len(reg) == 2
    assert dict(reg.items()) == {"one": 1, "two": 2}
    reg.register("one", 1)  # the same again: harmless
    with pytest.raises(RegistryError, match="test number 'one' is registered twice"):
        reg.register("one", 3)
    reg.register("one", 3, replace=True)
    assert reg.get("one") == 3
    assert POINTS["test number"] is reg


def test_an_unknown_name_names_the_point_the_name_and_the_known_ones() -> None:
    reg: Registry[int] = Registry("test colour")
    reg.register("red", 1)
    reg.register("blue", 2)
    with pytest.raises(UnknownNameError) as caught:
        reg.get("green", "crew.colour")
    assert str(caught.value) == "crew.colour: unknown test colour 'green'; known: red, blue"
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)
    own: Registry[int] = Registry("test shape", unknown=LookupError)
    with pytest.raises(LookupError, match="unknown test shape 'cube'; known: none"):
        own.get("cube")


def test_a_reference_is_imported_on_first_lookup_only() -> None:
    reg: Registry[object] = Registry("test module")
    reg.register("decoder", "json.decoder:JSONDecoder", about="the stdlib's")
    reg.register("broken", "no_such_module_here:thing")
    assert reg.info("decoder") == {"about": "the stdlib's"}
    assert "no_such_module_here" not in sys.modules
    from json.decoder import JSONDecoder

    assert reg.get("decoder") is JSONDecoder
    with pytest.raises(RegistryError, match="test module 'broken': no_such_module_here:thing"):
        reg.get("broken")
    with pytest.raises(RegistryError, match="a reference is 'module:attr'"):
        reg.register("bad", "json.decoder")


def test_an_entry_point_group_and_a_loader_fill_it_once() -> None:
    calls: list[str] = []
    commands: Registry[Command] = Registry(
        "test command", group="mineamongus.commands", load=lambda: calls.append("load")
    )
    assert {"play", "replay", "annotate"} <= set(commands.names())
    assert commands.names() and calls == ["load"]  # loaded once
    play = commands.get("play")
    assert isinstance(play, Command) and play.name == "play"
