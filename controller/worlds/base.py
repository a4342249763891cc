"""The interface every world implements (the real Minecraft one and the fake one)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from controller.protocol import (
    BlockPlacement,
    LowProgram,
    PlayerPose,
    PoseSample,
    ProgramEvent,
    RuleDirective,
    StepReport,
    Teleport,
    Vec3,
)

Arbiter = Callable[[str, ProgramEvent, dict[str, PlayerPose]], RuleDirective | None]
SampleSink = Callable[[list[PoseSample]], None]
"""Takes the pose samples of a running batch taken since the last rule event, before
the arbiter judges the next one (so rules can read every pose up to that tick)."""
"""Called by a world for each `mark` and `reached` event the moment it happens, in
tick order, with the acting agent, the event and every connected player's pose at
that tick; its answer cancels programs (a kill's victim) or freezes the batch (a
meeting was called)."""


class WorldFault(RuntimeError):
    """The world could not do what was asked (an infrastructure failure, never a move)."""


@dataclass(frozen=True)
class Seat:
    """One player to put into the world."""

    agent: str
    username: str
    pos: Vec3
    yaw: float = 0.0


@dataclass(frozen=True)
class WorldEvent:
    """Something the world reports on its own, e.g. a bot's disconnection."""

    kind: str
    agent: str
    reason: str = ""


@dataclass(frozen=True)
class Frame:
    """One first-person picture of a player's view."""

    rgb: np.ndarray
    """uint8 pixels, shape (360, 640, 3)."""
    jpeg: bytes
    """The same picture JPEG-encoded (what models are sent)."""
    path: str | None = None
    """Where it was saved, if it was."""


FrameFormat = Literal["jpg", "png"]


class World(Protocol):
    """Space, movement and pixels; no rules."""

    def start(
        self,
        blocks: list[BlockPlacement],
        seats: list[Seat],
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, PlayerPose]:
        """Build the map, bring every seat in, and return their poses; `progress`, when
        given, is called with one line per stage of a start that takes a while."""
        ...

    def run_programs(
        self,
        programs: dict[str, LowProgram],
        timeout_ms: int,
        arbiter: Arbiter | None = None,
        sample_interval: int = 10,
        samples_to: SampleSink | None = None,
    ) -> StepReport:
        """Run one batch of programs concurrently; return when all finished or timed out.

        The game clock advances only while the batch plays. Poses are sampled at most
        `sample_interval` ticks apart into `StepReport.samples`. Each `mark` and
        `reached` event goes to `arbiter` as it happens; its directive is applied at once.
        Before each, `samples_to` gets the samples taken since the previous one.
        """
        ...

    def teleport(self, moves: dict[str, Teleport]) -> dict[str, PlayerPose]:
        """Move players server-side."""
        ...

    def set_blocks(self, blocks: list[BlockPlacement]) -> None:
        """Place or clear blocks (body markers)."""
        ...

    def broadcast(self, text: str) -> None:
        """Announce a message to every player as the server."""
        ...

    def render(
        self, agents: list[str], save_dir: Path | None, fmt: FrameFormat
    ) -> dict[str, Frame]:
        """First-person frames of the listed players, each saved as `save_dir/<agent>.<fmt>`.

        A frame of a player not hidden (`hide_players`) shows no hidden player; a
        hidden player's frame shows everyone.
        """
        ...

    def hide_players(self, agents: Collection[str]) -> None:
        """From now on these players (ghosts, `rules.ghost_tasks`) are in no other
        player's frame but each other's: the living cannot see them. Replaces the
        previous set; empty shows everyone again."""
        ...

    def state(self) -> tuple[int, dict[str, PlayerPose]]:
        """The current tick and every player's pose."""
        ...

    def advance_clock(self, ticks: int) -> int:
        """Move the stopped game clock forward by `ticks` (meeting talk time, while no
        program runs and every player is seated); return the new tick."""
        ...

    def reconnect(self, agent: str, pos: Vec3) -> None:
        """Bring a disconnected bot back at `pos`; raise WorldFault if impossible."""
        ...

    def drain_events(self) -> list[WorldEvent]:
        """Events the world reported since the last call."""
        ...

    def versions(self) -> dict[str, str]:
        """Versions of the world's own software."""
        ...

    def close(self) -> None:
        """Stop everything the world started."""
        ...
