"""ESCORT, the optional module added as one file and its prompt: off unless a spec lists
it, offered to a crewmate with a player in view, follows only a player in view."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Decision, read_events
from controller.game import Game
from controller.worlds.fake import FakeWorld
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import ModelRequest
from harness_aria.backends.fake import FakeBackend
from harness_aria.fake_answers import answer
from harness_aria.modules.registry import entry, optional_names
from harness_aria.registration import AriaArgs
from harness_aria.spec import AriaSpec
from world.geometry import ShipGeometry
from world.spec import load_map

OFFERED = re.compile(r"Modules you may choose: ([A-Z, ]+)\.")
IN_VIEW = re.compile(r"In view: ([A-Za-z, ]+)\. The planner suggested")
WITH_ESCORT = {"extra_modules": ("ESCORT",)}


def offered(answers: Any) -> list[str]:
    line = answers.prompt("planner")[-1].split("Modules you may choose: ")[1]
    return line.split(".")[0].split(", ")


def test_escort_is_registered_off_by_default() -> None:
    assert "ESCORT" in optional_names()
    assert entry("ESCORT").default is False
    assert "ESCORT" not in AriaSpec().model_dump().get("extra_modules", ())


def test_without_the_spec_listing_it_escort_is_never_offered(scene: Any) -> None:
    answers = scene.Answers(planner={"module": "MOVE", "target": "admin"})
    scene.decide(scene.agent("red", answers), scene.obs(players={"blue": scene.ahead(4)}))
    assert "ESCORT" not in offered(answers)
    assert "ESCORT" not in answers.prompt("planner")[-1]


def test_listed_it_is_offered_and_follows_the_player_named(scene: Any) -> None:
    answers = scene.Answers(
        planner={"module": "ESCORT", "target": "blue", "reasoning": "stay safe"},
        escort={"follow": "Blue", "reasoning": "blue is doing tasks"},
    )
    aria = scene.agent("red", answers, **WITH_ESCORT)
    decision = scene.decide(aria, scene.obs(players={"blue": scene.ahead(4)}))
    assert "ESCORT" in offered(answers)
    assert "ESCORT: a player in view to stay with" in answers.prompt("planner")[-1]
    assert "In view: Blue" in answers.prompt("escort")[0]
    assert decision.module == "ESCORT" and not decision.invalid
    assert decision.program == [{"op": "follow", "agent": "blue", "distance": 2.5, "ticks": 100}]


def test_nobody_in_view_means_not_offered(scene: Any) -> None:
    answers = scene.Answers(planner={"module": "MOVE", "target": "admin"})
    scene.decide(scene.agent("red", answers, **WITH_ESCORT), scene.obs(players={}))
    assert "ESCORT" not in offered(answers)


def test_a_player_not_in_view_is_refused_never_guessed(scene: Any) -> None:
    answers = scene.Answers(
        planner={"module": "ESCORT", "target": None}, escort={"follow": "green"}
    )
    aria = scene.agent("red", answers, **WITH_ESCORT)
    decision = scene.decide(aria, scene.obs(players={"blue": scene.ahead(4)}))
    assert decision.module == "ESCORT"
    assert decision.program == [] and "no player in view" in decision.invalid


def test_an_impostor_is_never_offered_it(scene: Any) -> None:
    answers = scene.Answers(planner={"module": "MOVE", "target": "admin"})
    obs = scene.obs(role="impostor", teammates=["white"], players={"blue": scene.ahead(4)})
    scene.decide(scene.agent("red", answers, **WITH_ESCORT), obs)
    assert "ESCORT" not in offered(answers)
    assert "ESCORT" not in answers.prompt("planner")[-1]


@pytest.mark.parametrize(
    ("names", "match"),
    [(("NOPE",), "not a registered decision module"), (("MOVE",), "on in every game")],
)
def test_extra_modules_names_the_field_and_the_choices(names: tuple[str, ...], match: str) -> None:
    # Where a side is configured (the spec itself checks only the form, so it stays
    # below the module registry).
    with pytest.raises(ValidationError, match=match) as info:
        AriaArgs(spec={"extra_modules": names})
    assert "extra_modules" in str(info.value) and "ESCORT" in str(info.value)
    with pytest.raises(ValidationError, match="listed twice"):
        AriaSpec(extra_modules=("ESCORT", "escort"))


class ChoosesEscort:
    """The fake answers, except that a crewmate offered ESCORT takes it every other time
    and names the first player the escort question lists."""

    def __init__(self) -> None:
        self.offers = 0
        self.asked = 0

    def __call__(self, request: ModelRequest) -> str:
        text = "\n\n".join(m.text for m in request.messages)
        found = OFFERED.search(text)
        if request.purpose == "planner" and found and "ESCORT" in found.group(1):
            self.offers += 1
            if self.offers % 2:
                return json.dumps({"module": "ESCORT", "target": None, "reasoning": "fake"})
        if request.purpose == "escort":
            self.asked += 1
            seen = IN_VIEW.search(text)
            first = seen.group(1).split(",")[0].strip() if seen else None
            return json.dumps({"follow": first, "reasoning": "fake"})
        return answer(request)


def test_a_fake_world_game_choosing_escort_plays_to_its_end(tmp_path: Path) -> None:
    spec_map = load_map("skeld")
    geometry = ShipGeometry(spec_map)
    script = ChoosesEscort()
    crew, impostors = FakeBackend("crew", script=script), FakeBackend("imp", script=answer)
    config = resolve_config("quick", overrides={"seed": 3, "frames": "off"})

    def factory(agent: str, role: str) -> AriaAgent:
        if role == "crewmate":
            return AriaAgent(agent, AriaSpec(**WITH_ESCORT), crew, geometry)
        return AriaAgent(agent, AriaSpec(), impostors, geometry)

    result = Game(config, spec_map, FakeWorld(geometry), factory, tmp_path).run()
    assert result.winner in ("crew", "impostors")
    escorts = [
        d
        for d in read_events(tmp_path / "events.jsonl")
        if isinstance(d, Decision) and d.module == "ESCORT"
    ]
    assert script.offers and script.asked == len(escorts) > 0
    follows = [d for d in escorts if d.valid]
    assert follows, [d.error for d in escorts]
    for d in follows:
        assert [a["op"] for a in d.program] == ["follow"]
        assert list(d.spec["extra_modules"]) == ["ESCORT"]


def test_a_configured_game_lists_escort_in_the_crews_spec(tmp_path: Path) -> None:
    """Through the config (`crew.args.spec.extra_modules`), as a command line run gives it."""
    config = resolve_config(
        "quick",
        overrides={
            "seed": 2,
            "rules": {"max_steps": 6},
            "crew": {"backend": "fake", "spec": {"extra_modules": ["ESCORT"]}},
            "impostor": {"backend": "fake"},
        },
    )
    play_game(config, load_map("skeld"), "fake", tmp_path)
    decisions = [d for d in read_events(tmp_path / "events.jsonl") if isinstance(d, Decision)]
    crew = [d for d in decisions if d.spec.get("extra_modules")]
    assert crew and all(list(d.spec["extra_modules"]) == ["ESCORT"] for d in crew)
    assert len(crew) < len(decisions)  # the impostors' spec lists no extra module
