"""Agent kinds found through the registry; side configs old and new; the CLI's side flags."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from controller.agents.base import AgentDecision
from controller.agents.registry import (
    AgentKindError,
    SideContext,
    SideFactory,
    get_kind,
    kinds,
    register,
)
from controller.cli import build_parser, config_from_args
from controller.config import ConfigError, load_config_file, resolve_config
from controller.observation import Observation
from controller.players import agent_factory, check_sides
from world.geometry import ShipGeometry
from world.spec import load_map

GEOMETRY = ShipGeometry(load_map("skeld"))


def test_the_controller_does_not_import_the_harness() -> None:
    code = (
        "import sys, controller.game, controller.config, controller.players, "
        "controller.agents.registry; "
        "assert 'harness_aria' not in sys.modules, sorted(m for m in sys.modules "
        "if m.startswith('harness_aria'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_builtin_kinds() -> None:
    assert {"scripted", "aria"} <= set(kinds())
    with pytest.raises(AgentKindError, match="crew.agent: unknown agent kind 'nobody'"):
        get_kind("nobody", "crew.agent")


def test_old_side_form_is_translated() -> None:
    config = resolve_config(
        "quick",
        overrides={
            "crew": {"backend": "openai:gpt-4.1-mini", "spec": {"memory": "window"}},
            "impostor": {"backend": "scripted"},
        },
    )
    assert config.crew.agent == "aria" and config.impostor.agent == "scripted"
    args = config.crew.args
    assert args["backend"] == "openai:gpt-4.1-mini" and args["spec"]["memory"] == "window"
    assert args["settings"]["timeout_s"] == 60.0  # resolved: every default filled in
    assert config.impostor.args == {}


def test_old_yaml_file_still_works(tmp_path: Path) -> None:
    f = tmp_path / "old.yaml"
    f.write_text("crew:\n  backend: fake\n  text_only: true\n  spec:\n    state: ego\n")
    config = resolve_config("quick", load_config_file(f))
    assert config.crew.agent == "aria"
    assert config.crew.args["text_only"] is True and config.crew.args["spec"]["state"] == "ego"


def test_new_side_form_with_model_settings() -> None:
    config = resolve_config(
        "quick",
        overrides={
            "crew": {
                "agent": "aria",
                "args": {"backend": "fake", "temperature": 0.3, "seed": 5, "max_tokens": 400},
            }
        },
    )
    args = get_kind("aria").parse_args(config.crew.args)
    settings = args.model_settings()  # type: ignore[attr-defined]
    assert (settings.temperature, settings.seed, settings.max_tokens) == (0.3, 5, 400)


@pytest.mark.parametrize(
    ("side", "field"),
    [
        ({"agent": "aria", "args": {"temperature": "hot"}}, "crew.args.temperature"),
        ({"agent": "aria", "args": {"temperature": 5}}, "crew.args.temperature"),
        ({"agent": "aria", "args": {"reasoning_effort": "max!"}}, "crew.args.reasoning_effort"),
        ({"agent": "aria", "args": {"spec": {"memory": "forever"}}}, "crew.args.spec.memory"),
        ({"agent": "aria", "args": {"colour": "red"}}, "crew.args.colour"),
        ({"agent": "aria", "args": {"backend": "gemini:pro"}}, "crew.args.backend"),
        ({"agent": "scripted", "args": {"temperature": 0.2}}, "crew.args.temperature"),
        ({"agent": "nobody"}, "crew.agent"),
    ],
)
def test_bad_side_values_name_the_field(side: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        resolve_config("quick", overrides={"crew": side})


def test_missing_key_is_caught_before_anything_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = resolve_config("quick", overrides={"impostor": {"backend": "anthropic:claude-x"}})
    with pytest.raises(AgentKindError, match="impostor.args.backend: ANTHROPIC_API_KEY"):
        check_sides(config)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ticks: int = 5


class _Waiter:
    agent_id = ""

    def __init__(self, agent_id: str, ticks: int) -> None:
        self.agent_id, self.ticks = agent_id, ticks

    async def decide(self, obs: Observation) -> AgentDecision:
        return AgentDecision(program=[{"op": "wait", "ticks": self.ticks}])

    def describe(self) -> dict[str, Any]:
        return {"kind": "waiter", "ticks": self.ticks}


class _WaiterKind:
    name = "waiter"

    def parse_args(self, args: Mapping[str, Any]) -> BaseModel:
        return _Args.model_validate(dict(args))

    def check(self, args: BaseModel, side: str) -> None:
        pass

    def side(self, args: BaseModel, context: SideContext) -> SideFactory:
        assert isinstance(args, _Args)
        return lambda agent_id: _Waiter(agent_id, args.ticks)


def test_a_plugin_kind_plays_a_side() -> None:
    register(_WaiterKind())
    config = resolve_config("quick", overrides={"crew": {"agent": "waiter", "args": {"ticks": 9}}})
    assert config.crew.args == {"ticks": 9}
    make = agent_factory(config, GEOMETRY)
    agent = make("red", "crewmate")
    assert isinstance(agent, _Waiter) and agent.ticks == 9
    assert type(make("blue", "impostor")).__name__ == "ScriptedAgent"
    with pytest.raises(ConfigError, match=r"crew\.args\.ticks"):
        resolve_config("quick", overrides={"crew": {"agent": "waiter", "args": {"ticks": "x"}}})


def _cli(*argv: str) -> Any:
    return config_from_args(build_parser().parse_args(["play", *argv]))


def test_cli_sides_and_per_side_text_only() -> None:
    both = _cli("--crew", "fake", "--impostor", "fake", "--text-only")
    assert both.crew.args["text_only"] and both.impostor.args["text_only"]
    crew = _cli("--crew", "fake", "--impostor", "fake", "--text-only", "crew")
    assert crew.crew.args["text_only"] and not crew.impostor.args["text_only"]
    imp = _cli("--crew", "fake", "--impostor", "fake", "--text-only", "impostor")
    assert not imp.crew.args["text_only"] and imp.impostor.args["text_only"]
    with pytest.raises(ConfigError, match="plays no model"):
        _cli("--crew", "fake", "--text-only", "impostor")
    one = _cli("--crew", "fake", "--text-only")  # the old flag: every side with a model
    assert one.crew.args["text_only"] and one.impostor.agent == "scripted"
    with pytest.raises(ConfigError, match="no side plays a model"):
        _cli("--text-only")


def test_cli_ablation_reaches_the_args() -> None:
    config = _cli("--crew", "fake", "--ablation", "crew.memory=window")
    assert config.crew.args["spec"]["memory"] == "window"


def test_cli_flags_override_a_new_form_file(tmp_path: Path) -> None:
    f = tmp_path / "new.yaml"
    f.write_text("crew:\n  agent: aria\n  args:\n    backend: fake\n    spec:\n      state: ego\n")
    config = _cli("--config", str(f), "--ablation", "crew.memory=window", "--text-only", "crew")
    args = config.crew.args
    assert args["spec"]["state"] == "ego" and args["spec"]["memory"] == "window"
    assert args["text_only"] is True


def test_kinds_describe_and_price_themselves() -> None:
    from controller.agents.registry import side_facts, side_price

    assert side_facts("scripted", {}).billed is False
    config = resolve_config(
        "quick",
        overrides={"crew": {"backend": "openai:gpt-4.1-mini", "text_only": True}},
    )
    facts = side_facts(config.crew.agent, config.crew.args)
    assert (facts.backend, facts.model, facts.billed, facts.text_only) == (
        "openai:gpt-4.1-mini",
        "gpt-4.1-mini",
        True,
        True,
    )
    # the spec as resolved, less which settings were given explicitly (not a setting)
    spec = dict(config.crew.args["spec"])
    assert spec.pop("explicit") == [] and facts.axes == spec
    assert facts.axes["profile"] == "reference"
    price = side_price(config.crew.agent, config.crew.args)
    assert price is not None and price.cost(uncached_in=1_000_000) > 0
    assert side_facts("aria", {"backend": "fake"}).billed is False
    assert side_price("aria", {"backend": "openai:no-such-model"}) is None


@pytest.mark.parametrize(
    "side",
    [
        {"backend": "fake", "memory": "window"},
        {"agent": "aria", "args": {"backend": "fake", "memory": "window"}},
    ],
)
def test_a_spec_field_beside_the_backend_is_refused_naming_spec(side: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"`memory` is a field of ARIA's spec: write it under "):
        resolve_config("quick", overrides={"crew": side})
    # where it belongs, it is taken
    config = resolve_config(
        "quick", overrides={"crew": {"backend": "fake", "spec": {"memory": "window"}}}
    )
    assert config.crew.args["spec"]["memory"] == "window"
