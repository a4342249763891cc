"""Who plays each seat: the scripted control agent or ARIA on a model backend."""

from __future__ import annotations

from collections.abc import Callable

from controller.agents.base import Agent
from controller.agents.scripted import ScriptedAgent
from controller.config import GameConfig, SideConfig
from controller.events import Role
from harness_aria.agent import AriaAgent
from harness_aria.backends.base import Backend
from harness_aria.backends.fake import FakeBackend
from harness_aria.backends.registry import check_credentials, make_backend
from harness_aria.fake_answers import answer
from world.geometry import ShipGeometry


def check_sides(config: GameConfig) -> None:
    """Fail early (before any server starts) if a side's backend cannot be built.

    Raises:
        ValueError: a malformed address or a missing `--base-url`.
        CredentialsError: the provider's API key variable is unset.
    """
    for side in (config.crew, config.impostor):
        if side.backend != "scripted":
            check_credentials(side.backend, side.base_url, settings=side.settings)


def _backend(side: SideConfig) -> Backend:
    if side.backend == "fake" or side.backend.startswith("fake:"):
        # The fake answers every ARIA prompt validly, so an ARIA game runs offline.
        return FakeBackend(side.backend.partition(":")[2], script=answer, text_only=side.text_only)
    return make_backend(
        side.backend, base_url=side.base_url, text_only=side.text_only, settings=side.settings
    )


def agent_factory(config: GameConfig, geometry: ShipGeometry) -> Callable[[str, Role], Agent]:
    """A function giving each seat its agent once roles are drawn.

    Each side shares one backend (one client, one connection pool).
    """
    backends: dict[str, Backend] = {}
    rules = config.rules

    def make(agent_id: str, role: Role) -> Agent:
        side = config.crew if role == "crewmate" else config.impostor
        if side.backend == "scripted":
            return ScriptedAgent(agent_id, geometry, config.seed)
        if role not in backends:
            backends[role] = _backend(side)
        return AriaAgent(
            agent_id,
            side.spec,
            backends[role],
            geometry,
            kill_range=rules.kill_range,
            report_range=rules.report_range,
            max_utterances=rules.max_utterances,
        )

    return make
