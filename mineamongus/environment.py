"""MineAmongUs as a PettingZoo environment: `parallel_env(...)` and its AEC form `env(...)`.

One environment step is one step of the game's own step protocol
(`controller.game`): a free-roam step asks every living seat at once, a meeting talk
step asks its speaker only (the other seats' actions are ignored: a no-op, as
PettingZoo allows), a vote step asks every living seat. The step loop runs unchanged
on a thread of its own; the seats the environment plays are agents whose decisions
come from `step(actions)` (`mineamongus.external`). So the record is the loop's own:
every decision, failure and program is logged exactly as for the built-in agents,
and a seat's program is validated by the same code.

`agents` are the seats still deciding: a killed or ejected seat is terminated at
that step and leaves (a crewmate ghost under `rules.ghost_tasks` stays and goes on with
its tasks in free roam); everyone is terminated at the game's end, or truncated when
the step budget (`max_steps`, the rules' `timeout`) ends it or the game turns
invalid. Rewards come from a reward function (`side_reward` by default: +1 to the
winning side's seats still playing at the end, -1 to the losing side's, 0 on every
other step and to the seats that left earlier). Details: `docs/environment.md`.
"""

from __future__ import annotations

import queue
import random
import shutil
import tempfile
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from controller.agents.base import Agent, AgentDecision
from controller.config import GameConfig
from controller.events import Event, Positions, Role
from controller.game import Game, GameResult
from controller.observation import Observation
from controller.record import has_log
from controller.views import Knowledge, StateMode
from mineamongus.api import ConfigLike, WorldKind, load_config, open_world
from mineamongus.external import Broker, ExternalAgent, Finished, GameThread, Request
from mineamongus.spaces import Codec, Mask
from world.geometry import ShipGeometry
from world.spec import MapSpec, load_map

Side = Literal["crew", "impostor"]
SIDE_OF_ROLE: dict[str, Side] = {"crewmate": "crew", "impostor": "impostor"}
WINNER_OF_SIDE = {"crew": "crew", "impostor": "impostors"}
"""A side's name as `GameEnd.winner` spells it."""


@dataclass(frozen=True)
class RewardContext:
    """What a reward function is told about one seat after one environment step.

    Attributes:
        agent: The seat.
        role: Its role.
        alive: Whether it is still in play.
        step: The game's step now.
        events: Every event the game logged during this environment step (rule events,
            decisions, programs, positions; `controller.events`).
        over: The game has ended.
        winner: `crew` or `impostors` once the game ended with a winner, else None.
        ending: The ending (`impostors_outnumber`, `impostors_ejected`, `tasks_done`,
            `timeout`, `invalid`) once over, else None.
    """

    agent: str
    role: Role
    alive: bool
    step: int
    events: tuple[Event, ...]
    over: bool
    winner: str | None
    ending: str | None

    @property
    def side(self) -> Side:
        """`crew` or `impostor`."""
        return SIDE_OF_ROLE[self.role]

    @property
    def won(self) -> bool | None:
        """Whether this seat's side won (None while the game goes on, or if invalid)."""
        if self.winner is None:
            return None
        return self.winner == WINNER_OF_SIDE[self.side]


RewardFn = Callable[[RewardContext], float]


def side_reward(ctx: RewardContext) -> float:
    """+1 to the winning side, -1 to the losing side at the end; 0 otherwise."""
    if ctx.won is None:
        return 0.0
    return 1.0 if ctx.won else -1.0


@dataclass
class _Live:
    """One game being played."""

    game: Game
    thread: GameThread
    broker: Broker
    external: set[str]
    knowledge: dict[str, Knowledge]
    request: Request | None = None
    finished: Finished | None = None
    raw: dict[str, Observation] = field(default_factory=dict)
    known: dict[str, Observation] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    cursor: int = 0


class MineAmongUsEnv(ParallelEnv):  # type: ignore[misc]  # pettingzoo ships no type hints
    """The game as a PettingZoo `ParallelEnv` (see the module docstring and
    `docs/environment.md`).

    Args:
        config: The game's configuration (see `mineamongus.load_config`; the sides'
            agent kinds play the seats the environment does not, see `sides`).
        world: `minecraft` (the embedded server, a fresh one per game) or `fake`.
        render_mode: `rgb_array` for `render()` to return the top-down map, or None.
        max_steps: The step budget (overrides `rules.max_steps`); the game is truncated
            when it is spent.
        state: What the `view` text holds: `ego` (the camera's field of view) or
            `privileged` (all around, the server's roster, the map); the action mask
            is built from the same knowledge.
        sides: The sides whose seats the environment plays (`possible_agents` is
            every seat; `agents` holds only these); the other side is played by its
            configured agent kind.
        reward_fn: Reward of each seat after each step (`side_reward` by default).
        out: Folder for the games' records (`game-0001-seed42/events.jsonl`, ...);
            None keeps them in a temporary folder removed by `close()`.
        spec: The map (default: the configuration's).
        progress: Called with the game's progress lines.
        **overrides: Configuration fields that win over `config` (e.g. `frames="off"`).
    """

    metadata: dict[str, Any] = {
        "name": "mineamongus_v0",
        "render_modes": ["rgb_array"],
        "render_fps": 2,
        "is_parallelizable": True,
    }

    def __init__(
        self,
        config: ConfigLike = None,
        *,
        world: WorldKind = "minecraft",
        render_mode: str | None = None,
        max_steps: int | None = None,
        state: StateMode = "ego",
        sides: Sequence[Side] = ("crew", "impostor"),
        reward_fn: RewardFn = side_reward,
        out: str | Path | None = None,
        spec: MapSpec | None = None,
        progress: Callable[[str], None] | None = None,
        **overrides: Any,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r}; choose 'rgb_array' or None")
        if world not in ("minecraft", "fake"):
            raise ValueError(f"world={world!r}; choose 'minecraft' or 'fake'")
        if state not in ("ego", "privileged"):
            raise ValueError(f"state={state!r}; choose 'ego' or 'privileged'")
        unknown = [s for s in sides if s not in SIDE_OF_ROLE.values()]
        if unknown or not sides:
            raise ValueError(f"sides={list(sides)!r}; name 'crew', 'impostor' or both")
        if max_steps is not None:
            rules = dict(overrides.pop("rules", {}) or {})
            overrides["rules"] = {**rules, "max_steps": max_steps}
        self.config: GameConfig = load_config(config, **overrides)
        self.world_kind: WorldKind = world
        self.render_mode = render_mode
        self.state_mode: StateMode = state
        self.sides = tuple(dict.fromkeys(sides))
        if len(self.sides) < len(SIDE_OF_ROLE):
            from controller.players import check_sides

            check_sides(self.config)  # the configured side must be playable (API keys)
        self.reward_fn = reward_fn
        self.spec = spec if spec is not None else load_map(self.config.map)
        self.geometry = ShipGeometry(self.spec)
        self.codec = Codec(self.config, self.geometry)
        self.possible_agents: list[str] = self.config.agent_ids()
        self.agents: list[str] = []
        self.observation_spaces: dict[str, spaces.Dict] = {
            a: self.codec.observation_space() for a in self.possible_agents
        }
        self.action_spaces: dict[str, spaces.Dict] = {
            a: self.codec.action_space() for a in self.possible_agents
        }
        self.progress = progress
        self._own_root = out is None
        self.root = Path(tempfile.mkdtemp(prefix="mineamongus-env-")) if out is None else Path(out)
        # A temporary records folder goes with the environment even if close() is never
        # called (at garbage collection or at exit).
        self._cleanup = (
            weakref.finalize(self, shutil.rmtree, self.root, True) if self._own_root else None
        )
        self._games = 0
        self._seeds = random.Random(self.config.seed)
        self._seeded = False
        self._live: _Live | None = None
        self._painter: Any = None
        self._closed = False

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Dict:
        """The seat's observation space (the same object every time)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Dict:
        """The seat's action space (the same object every time)."""
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ what is known
    @property
    def seed(self) -> int | None:
        """The seed of the game being played (None before the first reset)."""
        return self._live.game.config.seed if self._live is not None else None

    @property
    def run_dir(self) -> Path | None:
        """The folder of the current game's record (`events.jsonl`, `summary.json`)."""
        return self._live.game.out_dir if self._live is not None else None

    @property
    def result(self) -> GameResult | None:
        """How the current game ended (None while it goes on)."""
        if self._live is None or self._live.finished is None:
            return None
        return self._live.finished.result

    @property
    def acting(self) -> list[str]:
        """The seats the game asks this step (the others' actions are ignored)."""
        if self._live is None or self._live.request is None:
            return []
        return list(self._live.request.observations)

    @property
    def events(self) -> list[Event]:
        """The current game's events so far."""
        return list(self._live.game.log.events) if self._live is not None else []

    def last_observation(self, agent: str) -> Observation:
        """The seat's latest observation exactly as the step loop built it: what every
        built-in agent is given (they filter it themselves; see `mineamongus.policies`).

        Raises:
            KeyError: The seat has not been asked yet in this game.
        """
        if self._live is None or agent not in self._live.raw:
            raise KeyError(f"{agent} has no observation yet")
        return self._live.raw[agent]

    def known_observation(self, agent: str) -> Observation:
        """The seat's latest observation filtered by its state view (`Knowledge`)."""
        if self._live is None or agent not in self._live.known:
            raise KeyError(f"{agent} has no observation yet")
        return self._live.known[agent]

    # ------------------------------------------------------------------ playing
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """Start a fresh game (a fresh world) and return the first observations.

        Args:
            seed: The game's seed (roles, tasks, spawns and every RNG follow from it);
                None takes the configuration's seed at the first reset and then the
                next of a sequence drawn from the last seed given.
            options: Ignored.
        """
        if self._closed:
            raise RuntimeError("the environment is closed")
        self._stop()
        if seed is not None:
            game_seed = int(seed)
            self._seeds = random.Random(game_seed)
        elif not self._seeded:
            game_seed = self.config.seed
        else:
            game_seed = self._seeds.randrange(2**31)
        self._seeded = True
        config = self.config.model_copy(update={"seed": game_seed})
        self._games += 1
        folder = self.root / f"game-{self._games:04d}-seed{game_seed}"
        while has_log(folder):  # a game never appends to a record
            self._games += 1
            folder = self.root / f"game-{self._games:04d}-seed{game_seed}"
        broker = Broker()
        external: set[str] = set()
        builtin: Callable[[str, Role], Agent] | None = None
        description = {"kind": "env", "state": self.state_mode}

        def seat(agent_id: str, role: Role) -> Agent:
            nonlocal builtin
            if SIDE_OF_ROLE[role] in self.sides:
                external.add(agent_id)
                return ExternalAgent(agent_id, broker, description)
            if builtin is None:
                from controller.players import agent_factory

                builtin = agent_factory(config, self.geometry, folder)
            return builtin(agent_id, role)

        world = open_world(self.world_kind, config, self.geometry, folder)
        try:
            game = Game(config, self.spec, world, seat, folder, progress=self.progress)
        except BaseException:
            world.close()
            raise
        live = _Live(
            game=game,
            thread=GameThread(game, world, broker),
            broker=broker,
            external=external,
            knowledge={
                a: Knowledge(self.state_mode, self.geometry, ego_range=config.rules.vision_radius)
                for a in external
            },
        )
        self._live = live
        live.thread.start()
        self._take(live, self._wait(live))
        if live.finished is not None and live.request is None:
            result = live.finished.result
            reason = result.reason if result is not None else "the game thread failed"
            raise RuntimeError(
                f"the game ended before any seat was asked: {reason}"
            ) from live.finished.error
        live.cursor = len(game.log.events)
        self.agents = self._living(live)
        observations = {a: self._value(live, a) for a in self.agents}
        infos = {a: self._info(live, a) for a in self.agents}
        return observations, infos

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[
        dict[str, dict[str, Any]],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Play one step: the asked seats' actions become their decisions.

        Args:
            actions: Seat -> an action of its action space (indices or names), or a
                `controller.agents.base.AgentDecision` (any program of whitelisted
                actions, e.g. from a built-in agent; see `mineamongus.policies`).
                Only the asked seats' actions (`acting`, `infos[seat]["acting"]`) are
                used; each of them must be given.

        Raises:
            ValueError: An asked seat has no action (nothing is played).
            RuntimeError: No game is being played (call `reset`), or it failed.
        """
        live = self._live
        if live is None or live.request is None or live.finished is not None:
            raise RuntimeError("no step to play: call reset() first (the game is over)")
        request = live.request
        missing = [a for a in request.observations if a not in actions]
        if missing:
            raise ValueError(f"no action for {', '.join(missing)} (asked this step)")
        before = list(self.agents)
        decisions = {a: self._decision(live, a, actions[a]) for a in request.observations}
        live.request = None
        live.broker.answer(decisions)
        self._take(live, self._wait(live))
        events = tuple(live.game.log.events[live.cursor :])
        live.cursor = len(live.game.log.events)
        if live.finished is not None and live.finished.result is None:
            self.agents = []
            raise RuntimeError("the game thread failed") from live.finished.error
        result = live.finished.result if live.finished is not None else None
        over = result is not None
        engine = live.game.engine
        alive = {a: engine.players[a].alive for a in before}
        # a crewmate ghost (`rules.ghost_tasks`) still plays: it is not terminated at its death
        playing = {a: a in engine.actors for a in before}
        cut = result is not None and (result.status != "ok" or result.ending == "timeout")
        terminations = {a: (not playing[a]) or (over and not cut) for a in before}
        truncations = {a: playing[a] and over and cut for a in before}
        winner = result.winner if result is not None and result.status == "ok" else None
        rewards = {
            a: float(
                self.reward_fn(
                    RewardContext(
                        agent=a,
                        role=engine.players[a].role,
                        alive=alive[a],
                        step=engine.step,
                        events=events,
                        over=over,
                        winner=winner,
                        ending=result.ending if result is not None else None,
                    )
                )
            )
            for a in before
        }
        self.agents = [] if over else self._living(live)
        staying = set(self.agents)
        observations: dict[str, dict[str, Any]] = {}
        infos: dict[str, dict[str, Any]] = {}
        for a in before:
            if a in staying:
                observations[a] = self._value(live, a)
                infos[a] = self._info(live, a)
            else:
                observations[a] = self._final_value(live, a, dead=not alive[a], over=over)
                infos[a] = self._info(live, a, leaving=True)
        return observations, rewards, terminations, truncations, infos

    def render(self) -> np.ndarray | None:
        """The top-down map now (players, bodies, the step) as an RGB array.

        Drawn as `mineamongus replay` draws `map.mp4` (`controller.replay.MapPainter`),
        from the current game's log and the engine's bodies. None without
        `render_mode="rgb_array"`.
        """
        if self.render_mode is None:
            warnings.warn(
                "render() without a render_mode: pass render_mode='rgb_array'", stacklevel=2
            )
            return None
        from controller.replay import MapPainter

        if self._painter is None:
            self._painter = MapPainter(self.geometry, self.possible_agents)
        live = self._live
        if live is None:
            return np.asarray(self._painter.base, dtype=np.uint8)
        snap = next((e for e in reversed(live.game.log.events) if isinstance(e, Positions)), None)
        if snap is None:
            return np.asarray(self._painter.base, dtype=np.uint8)
        e = live.game.engine
        caption = f"step {e.step}  tick {e.tick}  {e.phase}"
        result = self.result
        if result is not None:
            caption += f"  |  game over: {result.winner or 'invalid'} ({result.ending})"
        frame: np.ndarray = self._painter.paint(snap, e.body_markers(), caption)
        return frame

    def close(self) -> None:
        """End the game being played (recorded as invalid if unfinished), stop its bots
        and server, and remove the temporary records folder (when `out` was None)."""
        if self._closed:
            return
        self._stop()
        self._closed = True
        self.agents = []
        if self._cleanup is not None:
            self._cleanup()

    # ------------------------------------------------------------------ internals
    def _stop(self) -> None:
        live, self._live = self._live, None
        if live is None:
            return
        if live.thread.thread.is_alive():
            live.thread.stop()
        self.agents = []

    @staticmethod
    def _wait(live: _Live) -> Request | Finished:
        while True:
            try:
                return live.broker.outbox.get(timeout=1.0)
            except queue.Empty:
                if not live.thread.thread.is_alive() and live.broker.outbox.empty():
                    return Finished(None, RuntimeError("the game thread ended silently"))

    def _take(self, live: _Live, message: Request | Finished) -> None:
        if isinstance(message, Finished):
            live.finished = message
            return
        live.request = message
        for agent, raw in message.observations.items():
            known = live.knowledge[agent].update(raw)
            text = live.knowledge[agent].view(known).to_text()
            live.raw[agent] = raw
            live.known[agent] = known
            live.texts[agent] = text
            live.values[agent] = self.codec.encode(known, text)

    def _living(self, live: _Live) -> list[str]:
        # the seats still deciding: the living, and the crewmate ghosts that go on with
        # their tasks under `rules.ghost_tasks` (`Engine.actors`)
        actors = set(live.game.engine.actors)
        return [a for a in self.possible_agents if a in live.external and a in actors]

    def _value(self, live: _Live, agent: str) -> dict[str, Any]:
        if agent in live.values:
            return live.values[agent]
        return self.codec.blank(live.game.engine.players[agent].role)

    def _final_value(self, live: _Live, agent: str, *, dead: bool, over: bool) -> dict[str, Any]:
        known = live.known.get(agent)
        if known is None:
            return self._value(live, agent)
        return self.codec.encode(
            known, live.texts[agent], phase="over" if over else None, dead=dead
        )

    def _info(self, live: _Live, agent: str, *, leaving: bool = False) -> dict[str, Any]:
        e = live.game.engine
        acting = not leaving and live.request is not None and agent in live.request.observations
        mask: Mask = self.codec.mask(live.known[agent]) if acting else self.codec.no_mask()
        info: dict[str, Any] = {
            "action_mask": mask,
            "acting": acting,
            "phase": e.phase,
            "step": e.step,
        }
        result = self.result
        if result is not None:
            info.update(status=result.status, winner=result.winner, ending=result.ending)
        return info

    def _decision(self, live: _Live, agent: str, action: Any) -> AgentDecision:
        if isinstance(action, AgentDecision):
            return action
        known = live.known[agent]
        return self.codec.decide(action, known.phase, live.texts[agent], {"state": self.state_mode})


def parallel_env(
    config: ConfigLike = None,
    *,
    world: WorldKind = "minecraft",
    render_mode: str | None = None,
    **kwargs: Any,
) -> MineAmongUsEnv:
    """The game as a PettingZoo `ParallelEnv` (arguments: `MineAmongUsEnv`)."""
    return MineAmongUsEnv(config, world=world, render_mode=render_mode, **kwargs)


def env(
    config: ConfigLike = None,
    *,
    world: WorldKind = "minecraft",
    render_mode: str | None = None,
    **kwargs: Any,
) -> AECEnv:
    """The game as a PettingZoo `AECEnv`: `parallel_env` through PettingZoo's own
    `parallel_to_aec` (seats act one after another within a step; the step is played
    once the last living seat has acted)."""
    aec: AECEnv = parallel_to_aec(
        parallel_env(config, world=world, render_mode=render_mode, **kwargs)
    )
    return aec
