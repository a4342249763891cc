"""Seats played from outside the step loop: the loop asks, the environment answers.

The step loop (`controller.game.Game`) runs unchanged on its own thread. A seat the
environment plays is an `ExternalAgent`: its `decide` hands the observation to the
`Broker` and waits for the decision. All the agents a step asks are asked at once
(`controller.deciding.decide` gathers them), so the broker hands their observations
over as one `Request` after the last of them has asked, and the environment answers
them together. Everything else (validation, the `decision` event, failures, programs)
is the loop's own, exactly as for any other agent.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.agents.base import AgentDecision, InfrastructureFailure
from controller.game import Game, GameResult
from controller.observation import Observation
from controller.worlds.base import World

log = logging.getLogger(__name__)


class EnvironmentReset(InfrastructureFailure):
    """The environment was reset or closed while its game was still being played: the
    game ends `invalid` (and rerunnable), never with a move nobody chose."""

    def __init__(self) -> None:
        super().__init__(
            "environment_reset", "the environment was reset or closed before the game ended"
        )


@dataclass(frozen=True)
class Request:
    """The seats the game asks this step, with the observations the loop built."""

    observations: dict[str, Observation]


@dataclass(frozen=True)
class Finished:
    """The game is over (`result`), or its thread failed (`error`)."""

    result: GameResult | None
    error: BaseException | None = None


Message = Request | Finished


class Broker:
    """Where the game thread's questions meet the environment's answers."""

    def __init__(self) -> None:
        self.outbox: queue.Queue[Message] = queue.Queue()
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[Observation, asyncio.Future[AgentDecision]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handed = False
        self._closed = False

    # ------------------------------------------------------------------ game thread
    def ask(self, agent: str, obs: Observation) -> asyncio.Future[AgentDecision]:
        """Queue one seat's question (on the game's event loop)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[AgentDecision] = loop.create_future()
        with self._lock:
            if self._closed:
                fut.set_exception(EnvironmentReset())
                return fut
            if self._handed:
                # `decide` starts every asked agent before any of them waits, so this
                # cannot happen with the loop as it is; fail loudly (a harness error in
                # the record) rather than hang.
                fut.set_exception(RuntimeError(f"{agent} asked after the step's seats"))
                return fut
            first = not self._pending
            self._pending[agent] = (obs, fut)
            self._loop = loop
        if first:
            # Runs after every agent the step asks has started, and so has asked.
            loop.call_soon(self._hand_over)
        return fut

    def _hand_over(self) -> None:
        with self._lock:
            self._handed = True
            batch = {a: o for a, (o, _) in self._pending.items()}
        self.outbox.put(Request(batch))

    # ------------------------------------------------------------------ environment
    def answer(self, decisions: Mapping[str, AgentDecision]) -> None:
        """Answer every pending seat (the mapping must hold each of them)."""
        with self._lock:
            pending, self._pending, self._handed = self._pending, {}, False
            loop = self._loop
        missing = sorted(set(pending) - set(decisions))
        if missing:
            raise ValueError(f"no decision for {', '.join(missing)}")
        assert loop is not None
        for agent, (_obs, fut) in pending.items():
            loop.call_soon_threadsafe(_settle, fut, decisions[agent], None)

    def abort(self) -> None:
        """Fail every pending and future question: the game ends invalid."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, {}
            loop = self._loop
        for _obs, fut in pending.values():
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(_settle, fut, None, EnvironmentReset())


def _settle(
    fut: asyncio.Future[AgentDecision],
    decision: AgentDecision | None,
    error: BaseException | None,
) -> None:
    if fut.done():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        assert decision is not None
        fut.set_result(decision)


class ExternalAgent:
    """A seat whose decisions come from the environment's caller.

    Args:
        agent_id: The seat.
        broker: Where questions go.
        description: What the game record says of the seat.
    """

    def __init__(self, agent_id: str, broker: Broker, description: Mapping[str, Any]) -> None:
        self.agent_id = agent_id
        self.broker = broker
        self.description = dict(description)

    def describe(self) -> dict[str, Any]:
        """The seat's record entry (`kind: env`)."""
        return dict(self.description)

    async def decide(self, obs: Observation) -> AgentDecision:
        """Wait for the environment's decision for this observation."""
        return await self.broker.ask(self.agent_id, obs)


class GameThread:
    """Plays one game on its own thread and closes its world there.

    The world is started, played and closed on this one thread: the Node and Xvfb
    children are bound to the thread that started them (they die with it).
    """

    def __init__(self, game: Game, world: World, broker: Broker) -> None:
        self.game = game
        self.world = world
        self.broker = broker
        self.thread = threading.Thread(
            target=self._run, name=f"mineamongus-game-{game.config.seed}", daemon=True
        )

    def start(self) -> None:
        """Start playing."""
        self.thread.start()

    def _run(self) -> None:
        message: Finished
        try:
            message = Finished(self.game.run())
        except BaseException as exc:  # reported to the environment, which raises it
            log.exception("the game thread failed")
            message = Finished(None, exc)
        finally:
            try:
                self.world.close()
            except Exception:
                log.exception("closing the world failed")
        self.broker.outbox.put(message)

    def stop(self, timeout_s: float = 120.0) -> None:
        """End the game now (it is recorded as invalid) and wait for its thread."""
        self.broker.abort()
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            log.warning("the game thread did not stop within %.0f s", timeout_s)
