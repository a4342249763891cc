"""Fixtures for the harness tests: fake API keys, a scripted local API server, fast retries,
and hand-built scenes (observations, scripted answers) for the agent's knowledge."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import pytest

from controller.actions import dump_actions
from controller.agents.base import AgentDecision
from controller.events import Role, Vec3
from controller.observation import Observation, Scoreboard
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import ModelRequest
from harness_aria.backends.fake import FakeBackend
from harness_aria.backends.settings import BackendSettings
from harness_aria.fake_answers import answer
from harness_aria.spec import AriaSpec
from testkit.mock_api import MockAPIServer, Reply, Responder
from world.geometry import ShipGeometry
from world.spec import load_map

OPENAI_TEST_KEY = "sk-LEAKCHECK-openai-0123456789abcdef"
"""Looks like a real key, so the generic `sk-...` redaction is exercised too."""
ANTHROPIC_TEST_KEY = "LEAKCHECK-anthropic-fedcba9876543210"
"""Does not look like a key: only exact-secret redaction can hide it."""

# Variables the SDKs read on their own; unset so the machine's environment cannot steer tests.
_SDK_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_COMPATIBLE_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_CUSTOM_HEADERS",
)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key or endpoint variable is set."""
    for name in _SDK_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_keys(no_keys: None, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Recognisable fake keys for OpenAI and Anthropic (never valid anywhere), by provider."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_TEST_KEY)
    return {"openai": OPENAI_TEST_KEY, "anthropic": ANTHROPIC_TEST_KEY}


@pytest.fixture
def mock_api() -> Iterator[Callable[..., MockAPIServer]]:
    """Start scripted mock API servers; all are closed after the test."""
    servers: list[MockAPIServer] = []

    def start(script: Sequence[Reply] | Responder | None = None) -> MockAPIServer:
        server = MockAPIServer(script).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def fast() -> BackendSettings:
    """Settings with tiny backoff and timeouts so retry tests take milliseconds."""
    return BackendSettings(
        timeout_s=2.0,
        max_retries=3,
        backoff_base_s=0.001,
        backoff_max_s=0.01,
        retry_after_max_s=1.0,
        jitter_seed=0,
    )


# --------------------------------------------------------------- hand-built scenes
SCENE_GEOMETRY = ShipGeometry(load_map("skeld"))
"""The map every hand-built scene stands on."""
PLAYERS = ["red", "blue", "green", "yellow", "pink", "orange", "white", "black"]
CAFETERIA = SCENE_GEOMETRY.room_center("cafeteria")
"""An open spot: yaw 0 faces +z, so `ahead(4)` is in the cone and `behind(4)` is not."""


def ahead(d: float, at: Vec3 = CAFETERIA) -> Vec3:
    """A point `d` blocks in front of an agent at `at` facing yaw 0."""
    return (at[0], at[1], at[2] + d)


def behind(d: float, at: Vec3 = CAFETERIA) -> Vec3:
    """A point `d` blocks behind an agent at `at` facing yaw 0."""
    return (at[0], at[1], at[2] - d)


def make_obs(
    agent: str = "red",
    role: Role = "crewmate",
    *,
    step: int = 5,
    tick: int = 500,
    phase: Literal["free_roam", "meeting", "voting"] = "free_roam",
    pos: Vec3 = CAFETERIA,
    yaw: float = 0.0,
    players: dict[str, Vec3] | None = None,
    bodies: dict[str, Vec3] | None = None,
    kill_ready: bool = False,
    tasks: list[int] | None = None,
    tasks_done: list[int] | None = None,
    teammates: list[str] | None = None,
    known_dead: list[str] | None = None,
    scoreboard: dict[str, Any] | None = None,
    **extra: Any,
) -> Observation:
    """A hand-built observation; `players`/`bodies` go into both the field-of-view and
    the 360-degree sets, as an observation builder that does not filter would give them."""
    tasks = [0, 1] if tasks is None else tasks
    done = tasks_done or []
    room = SCENE_GEOMETRY.room_at(pos)
    board = Scoreboard(
        phase=phase,
        kill_ready=kill_ready,
        task_bits=[s in done for s in tasks],
        dead=False,
        meeting_countdown=None,
        speaker=None,
        game_over=False,
        area=room,
        task_in_progress=None,
        reported_body=None,
        emergency_ready=False,
    ).model_copy(update=scoreboard or {})
    return Observation(
        agent=agent,
        role=role,
        step=step,
        tick=tick,
        phase=phase,
        pos=pos,
        yaw=yaw,
        room=room,
        tasks=tasks,
        tasks_done=done,
        teammates=teammates or [],
        kill_ready=kill_ready,
        emergency_ready=False,
        known_dead=known_dead or [],
        players=PLAYERS,
        visible_players=dict(players or {}),
        visible_bodies=dict(bodies or {}),
        nearby_players=dict(players or {}),
        nearby_bodies=dict(bodies or {}),
        scoreboard=board,
        **extra,
    )


class Answers:
    """A fake-backend script: a JSON answer per purpose (a dict, or a callable of the
    request), recording every request."""

    def __init__(self, **by_purpose: Any) -> None:
        self.by_purpose = by_purpose
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> str:
        self.requests.append(request)
        value = self.by_purpose.get(request.purpose)
        if callable(value):
            value = value(request)
        return json.dumps(value) if value is not None else answer(request)

    def user(self, purpose: str) -> list[str]:
        """The user texts sent for a purpose, in order."""
        return [
            m.text
            for r in self.requests
            if r.purpose == purpose
            for m in r.messages
            if m.role == "user"
        ]

    def prompt(self, purpose: str) -> list[str]:
        """The whole prompt of each request of a purpose, in order: its messages' texts
        joined (prefix, then the user text ending with the call's question)."""
        return [
            "\n\n".join(m.text for m in r.messages) for r in self.requests if r.purpose == purpose
        ]

    def purposes(self) -> list[str]:
        return [r.purpose for r in self.requests]


def make_agent(agent: str = "red", answers: Answers | None = None, **spec: Any) -> AriaAgent:
    """An ARIA agent on the fake backend with the given script and spec fields."""
    return AriaAgent(
        agent, AriaSpec(**spec), FakeBackend("t", script=answers or Answers()), SCENE_GEOMETRY
    )


def decide(agent: AriaAgent, obs: Observation) -> AgentDecision:
    """One decision, synchronously, its program as the log writes it (`dump_actions`)."""
    d = asyncio.run(agent.decide(obs))
    return dataclasses.replace(d, program=dump_actions(d.program))


class Scene:
    """The scene helpers, handed to tests by the `scene` fixture."""

    geometry = SCENE_GEOMETRY
    players = PLAYERS
    cafeteria = CAFETERIA
    ahead = staticmethod(ahead)
    behind = staticmethod(behind)
    obs = staticmethod(make_obs)
    agent = staticmethod(make_agent)
    decide = staticmethod(decide)
    Answers = Answers


@pytest.fixture
def scene() -> Scene:
    """Helpers to build observations, scripted answers and agents by hand."""
    return Scene()
