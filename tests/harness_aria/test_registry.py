"""The harness's registries: decision modules, the axis catalogues and call budgets."""

from __future__ import annotations

import pytest

from harness_aria.memory import MEMORIES, SemanticMemory, WindowMemory
from harness_aria.modules import MODULES
from harness_aria.modules.registry import (
    RegistryError,
    enabled,
    entry,
    register_module,
    registered,
)
from harness_aria.planner import PLANNERS, HierarchicalPlanner, ReactivePlanner
from harness_aria.reflection import REFLECTORS, MeetingReflection, NoReflection
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import UnknownPurposeError, budget
from mineamongus.spaces import MODULES as ACTION_MODULES


def test_the_reference_modules_are_registered_in_their_order() -> None:
    names = [e.name for e in registered() if e.number is not None]
    assert names == list(ACTION_MODULES)  # the gym action space's eight, in its order
    assert list(MODULES) == names  # the gym environment's action order
    assert [e.name for e in enabled(AriaSpec()) if e.number is not None] == names


def test_a_module_registered_twice_or_never_offered_is_refused() -> None:
    with pytest.raises(RegistryError, match="registered twice"):
        register_module("MOVE", budgets={})(type("Again", (), {"name": "MOVE"}))
    with pytest.raises(RegistryError, match="needs `offered`"):
        register_module("NEVER_OFFERED", budgets={})(type("N", (), {"name": "NEVER_OFFERED"}))
    with pytest.raises(RegistryError, match="its class's name"):
        register_module("SOMETHING", budgets={}, offered=lambda o, s: True)(
            type("S", (), {"name": "OTHER"})
        )


def test_an_unknown_module_names_the_registered_ones() -> None:
    with pytest.raises(KeyError, match="registered: KILL, REPORT"):
        entry("TELEPORT")


def test_every_axis_is_rebuilt_from_its_name_and_the_specs_arguments() -> None:
    spec = AriaSpec(memory="window", window_k=7, planning="hierarchical", replan_every=4)
    memory = MEMORIES.build(spec)
    assert isinstance(memory, WindowMemory)
    assert isinstance(MEMORIES.build(AriaSpec(memory="semantic")), SemanticMemory)
    planner = PLANNERS.build(spec)
    assert isinstance(planner, HierarchicalPlanner) and planner.replan_every == 4
    assert isinstance(PLANNERS.build(AriaSpec(planning="reactive")), ReactivePlanner)
    assert isinstance(REFLECTORS.build(AriaSpec(reflection="off")), NoReflection)
    assert isinstance(REFLECTORS.build(AriaSpec(reflection="on")), MeetingReflection)
    assert PLANNERS.arguments(spec) == ("hierarchical", {"replan_every": 4})


def test_a_call_purpose_without_a_registered_budget_is_an_error() -> None:
    assert budget("planner") == (0.3, 256)
    assert budget("kill_scan") == (0.2, 256)
    with pytest.raises(UnknownPurposeError, match="'gossip'"):
        budget("gossip")
