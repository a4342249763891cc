"""Ballots and providers that cannot flip an outcome (issue 16, item 7).

Reflection answers are read with every liberty noted; a provider answering 404, or
failing the same way on every call of a side, stops the game as a configuration fault
(never an `ok` game the impostors win); a failed program's reason reaches an ego agent's
memory without what its view does not show. Ballot reading is tested in
`test_parsing.py` and `test_module_answers.py`.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.cli import play_game
from controller.config import resolve_config
from controller.events import GameEnd, read_events
from controller.observation import OwnAction
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import BackendError, ModelRequest
from harness_aria.backends.fake import FakeBackend
from harness_aria.backends.registry import make_backend
from harness_aria.backends.settings import BackendSettings
from harness_aria.calls import (
    STREAK_CALLS,
    CallSetup,
    ConfigurationFailure,
    HarnessedBackend,
    ask,
    start_round,
)
from harness_aria.memory import MEMORIES
from harness_aria.memory.base import outcome_for_view
from harness_aria.reflection import MeetingReflection
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Toolkit
from testkit.mock_api import MockAPIServer, MockError
from world.geometry import ShipGeometry
from world.spec import load_map

GEOMETRY = ShipGeometry(load_map("skeld"))
PLAYERS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
SDK_ADDRESSES = ("openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5")
FAST = {"max_retries": 1, "backoff_base_s": 0.001, "backoff_max_s": 0.002, "timeout_s": 5}

pytestmark = pytest.mark.usefixtures("fake_keys")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_for(api: MockAPIServer, address: str) -> str:
    return api.anthropic_base_url if address.startswith("anthropic") else api.openai_base_url


def ask_once(backend: Any) -> Any:
    return asyncio.run(ask(backend, purpose="vote", system="s", user="u", prompts=[]))


# ------------------------------------------------------------------------ reflection


def reflect(scene: Any, answer: str) -> tuple[Toolkit, MeetingReflection]:
    obs = scene.obs("red")
    tk = Toolkit(
        spec=AriaSpec(reflection="on"),
        backend=FakeBackend("t", script=[answer]),
        geometry=GEOMETRY,
        persona="persona",
        obs=obs,
        view_text="view",
        memory=MEMORIES["semantic"](10),
    )
    reflector = MeetingReflection()
    asyncio.run(reflector.after_meeting(tk, "recap"))
    return tk, reflector


def test_reflection_reads_lenient_keys_and_deltas_and_notes_each_liberty(scene: Any) -> None:
    tk, _ = reflect(
        scene,
        json.dumps(
            {
                "insights": "Blue lied about medbay.",
                "suspicion_deltas": {"Yellow.": "0.2", "BLUE": 0.5, "green": "-0.1"},
            }
        ),
    )
    suspicion = tk.memory.suspicion()
    assert suspicion["yellow"] == pytest.approx(0.2)
    assert suspicion["blue"] == pytest.approx(0.3)  # clamped to the bound
    notes = tk.calls[-1].normalised
    assert "suspicion_deltas: 'Yellow.' -> 'yellow'" in notes
    assert "suspicion_deltas.yellow: '0.2' -> 0.2" in notes
    assert "suspicion_deltas: 'BLUE' -> 'blue'" in notes
    assert "suspicion_deltas.blue: 0.5 -> '0.3 (clamped to ±0.3)'" in notes
    assert "suspicion_deltas.green: '-0.1' -> -0.1" in notes


def test_reflection_logs_what_it_cannot_read_as_dropped_with_the_reason(scene: Any) -> None:
    tk, reflector = reflect(
        scene,
        json.dumps(
            {
                "insights": ["Blue lied.", "Green is safe."],
                "suspicion_deltas": {
                    "ghost": 0.1,
                    "red": 0.2,
                    "pink": "a lot",
                    "orange": True,
                    "blue": 0.1,
                    "Blue.": 0.2,
                },
                "skill": "be quick",
            }
        ),
    )
    notes = tk.calls[-1].normalised
    assert "suspicion_deltas: 'ghost' dropped: not a player" in notes
    assert "suspicion_deltas: 'red' dropped: the agent itself" in notes
    assert "suspicion_deltas.pink: 'a lot' dropped: not a number" in notes
    assert "suspicion_deltas.orange: True dropped: not a number" in notes
    assert "suspicion_deltas.blue: 0.2 dropped: a second delta for the same player" in notes
    assert "skill: 'be quick' dropped: not an object of situation, behavior, outcome" in notes
    assert "insights: ['Blue lied.', 'Green is safe.'] -> 'Blue lied. Green is safe.'" in notes
    assert "reflection: Blue lied. Green is safe." in tk.memory.text()
    assert not reflector.skills
    assert tk.memory.suspicion() == {"blue": pytest.approx(0.1)}


def test_reflection_deltas_that_are_not_an_object_are_logged_as_dropped(scene: Any) -> None:
    tk, _ = reflect(scene, '{"insights": "x", "suspicion_deltas": ["blue", 0.2]}')
    assert tk.calls[-1].normalised == [
        "suspicion_deltas: ['blue', 0.2] dropped: not an object of player: delta"
    ]


# ------------------------------------------------------------------------ providers: 404


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_404_is_a_configuration_fault_naming_the_model_and_the_base_address(
    address: str, mock_api: Callable[..., MockAPIServer], fast: BackendSettings
) -> None:
    api = mock_api([MockError(404, "The model `nope` does not exist")])
    base = base_for(api, address)
    backend = HarnessedBackend(make_backend(address, base_url=base, settings=fast))
    with pytest.raises(ConfigurationFailure) as info:
        ask_once(backend)
    message = str(info.value)
    assert info.value.error_class == "configuration"
    assert "404" in message and address.partition(":")[2] in message
    assert api.root_url in message
    assert len(api.requests) == 1  # never retried


def test_wrong_path_404_names_the_address_that_was_asked(
    mock_api: Callable[..., MockAPIServer], fast: BackendSettings
) -> None:
    api = mock_api(['{"ok": 1}'])
    # The base URL lacks `/v1`: the mock (like any server) answers 404 for the path.
    backend = make_backend("openai:gpt-4.1-mini", base_url=api.root_url, settings=fast)
    with pytest.raises(ConfigurationFailure) as info:
        ask_once(backend)
    assert f"{api.root_url}/chat/completions" in str(info.value)
    assert "gpt-4.1-mini" in str(info.value)


# ------------------------------------------------------------------------ providers: streak


def failing(exc: BaseException) -> FakeBackend:
    def script(request: ModelRequest) -> str:
        raise exc

    return FakeBackend("broken", script=script)


def test_a_failure_repeated_on_every_call_over_two_rounds_stops_the_side() -> None:
    backend = HarnessedBackend(failing(ConnectionRefusedError("refused")), CallSetup())
    start_round(backend, 1)
    for _ in range(STREAK_CALLS + 2):  # one round's concurrent calls are not enough
        assert ask_once(backend).error_class == "connection"
    start_round(backend, 2)
    with pytest.raises(ConfigurationFailure) as info:
        ask_once(backend)
    message = str(info.value)
    assert "every call of the side failed the same way" in message
    assert "fake:broken" in message and "steps 1 to 2" in message


def test_an_answer_in_between_or_a_different_failure_ends_the_streak() -> None:
    answers: list[Any] = [
        ConnectionRefusedError("refused"),
        ConnectionRefusedError("refused"),
        '{"ok": 1}',
        ConnectionRefusedError("refused"),
        ConnectionRefusedError("refused"),
        ValueError("odd"),
        ConnectionRefusedError("refused"),
    ]
    backend = HarnessedBackend(FakeBackend("flaky", script=answers), CallSetup())
    for step in range(len(answers)):
        start_round(backend, step)
        ask_once(backend)  # never raises: no run of three identical failures


@pytest.mark.parametrize("error_class", ["rate_limit", "timeout"])
def test_repeated_rate_limits_and_timeouts_never_stop_the_game(error_class: Any) -> None:
    backend = HarnessedBackend(failing(BackendError(error_class, "busy")), CallSetup())
    for step in range(6):
        start_round(backend, step)
        assert ask_once(backend).error_class == error_class


# ------------------------------------------------------------------------ fake-world games


def play(tmp: Path, backend: str, base_url: str) -> Any:
    config = resolve_config(
        "quick",
        overrides={
            "seed": 3,
            "rules": {"max_steps": 6},
            "frames": "off",
            "crew": {"backend": backend, "base_url": base_url, "settings": FAST},
            "impostor": {"backend": "scripted"},
        },
    )
    return play_game(config, load_map("skeld"), "fake", tmp)


def game_end(tmp: Path) -> GameEnd:
    ends = [e for e in read_events(tmp / "events.jsonl") if isinstance(e, GameEnd)]
    assert len(ends) == 1
    return ends[0]


@pytest.mark.parametrize("address", SDK_ADDRESSES)
def test_game_against_a_404_ends_invalid_with_the_configuration_error(
    address: str, tmp_path: Path
) -> None:
    with MockAPIServer(lambda rec: MockError(404, "model not found")) as server:
        result = play(tmp_path, address, base_for(server, address))
        root = server.root_url
    model = address.partition(":")[2]
    summary = json.loads((tmp_path / "summary.json").read_text())
    end = game_end(tmp_path)
    for status, reason in ((result.status, result.reason), (summary["status"], summary["reason"])):
        assert status == "invalid"
        assert reason.startswith("infrastructure: configuration: ")
        assert "404" in reason and model in reason and root in reason
    assert (end.status, end.reason, end.winner) == ("invalid", summary["reason"], None)
    assert summary["counts"]["invalid_decisions"] == 0


def test_game_with_a_side_at_a_closed_port_ends_invalid(tmp_path: Path) -> None:
    port = closed_port()
    result = play(tmp_path, "openai-compatible:qwen", f"http://127.0.0.1:{port}/v1")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert result.status == summary["status"] == game_end(tmp_path).status == "invalid"
    reason = summary["reason"]
    assert "every call of the side failed the same way" in reason
    assert "qwen" in reason and f"http://127.0.0.1:{port}/v1" in reason
    assert "connection" in reason


# ------------------------------------------------------------------------ program outcomes

LEASH = (
    "failed: step 3: approach: yellow is 27.1 blocks from where the approach began, "
    "beyond its leash of 5"
)


def test_ego_outcomes_lose_other_players_distances() -> None:
    assert outcome_for_view(LEASH, "red", PLAYERS) == (
        "failed: step 3: approach: the target yellow got away, the kill failed"
    )
    assert outcome_for_view(
        "failed: step 0: follow: blue is not visible (disconnected or out of range)",
        "red",
        PLAYERS,
    ) == ("failed: step 0: follow: blue could not be found")
    assert outcome_for_view(
        "failed: step 1: blue stopped 3.5 blocks away at (1.0, 65.0, -2.5)", "red", PLAYERS
    ) == ("failed: step 1: blue stopped some distance away at a position")
    own = "failed: step 0: goto 1,65,2: stopped 2.30 blocks away (range 1)"
    assert outcome_for_view(own, "red", PLAYERS) == own  # the agent's own walk


@pytest.mark.parametrize(("state", "kept"), [("ego", False), ("privileged", True)])
@pytest.mark.parametrize("memory", ["window", "semantic"])
def test_a_failed_kill_reaches_memory_only_as_far_as_the_view_allows(
    scene: Any, state: Any, kept: bool, memory: Any
) -> None:
    obs = scene.obs(
        "red",
        "impostor",
        teammates=["black"],
        own_actions=[OwnAction(step=3, tick=300, kind="program_ended", detail=LEASH)],
    )
    agent = AriaAgent("red", AriaSpec(state=state, memory=memory), FakeBackend(), GEOMETRY)
    asyncio.run(agent.decide(obs))
    text = agent.memory.text()
    assert ("27.1" in text) is kept
    assert ("leash" in text) is kept
    if not kept:
        assert "the target yellow got away, the kill failed" in text
