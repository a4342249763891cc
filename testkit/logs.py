"""Hand-built and random game logs for tests and benchmarks, emitted through the typed
events (`controller.events`).

One builder, two scenes. `EventBuilder` holds a game's event list, its seats (roles,
status, positions, rooms), its clock and step counter, and one primitive per event
type; `write` puts the log through the game's own writer (`controller.events.EventLog`)
beside a `summary.json` whose counts and cost come from `controller.accounting` and
whose keys are `controller.record.RunSummary`'s. So tests and benchmarks read what a
game writes and cannot drift from it. The scenes are laid on those primitives:

- `LogBuilder`, a flat plane (y = 65) with rooms given by the caller, for the deception
  tests and the benchmark's `random_game`. Its config is resolved by the game's own
  `resolve_config` (so a side reads `{agent: aria, args: {backend, spec}}` with every
  default filled in, exactly as a game writes it) and the seats' `agent_specs` take the
  shape each agent kind describes itself. Every scene's `game_start.sides` holds the
  facts each side's kind declares for its config (`sides_of`), as a game records them.
- `GameBuilder`, the skeld map's geometry, for the grounding audit. Each free-roam step
  lasts `step_ticks` ticks, each player's path is a list of rooms spread evenly over
  the step's `trace` samples (standing at the room's centre), and sight is given
  explicitly as the `visibility` lists (nothing is inferred from rooms). `v1=True`
  leaves out `trace`, visibility causes and task starts, as logs written before schema
  v2 do. Meetings are laid out as the game logs them: the meeting seats after the call,
  a `step_end` snapshot (everyone on the seats) after each talk turn, and the vote's
  end. Each talk turn spends `talk_ticks` (0 by default: the clock stands still through
  the meeting, as it did before talk turns cost time, so the previous round's call, the
  seats and the next round's start all share one tick).
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.accounting import cost_from_events, counts_from_events
from controller.actions import AnyAction, GoTo, KillTarget, dump_actions
from controller.config import GameConfig, resolve_config
from controller.events import (
    Decision,
    Eject,
    Emergency,
    EventBase,
    EventLog,
    GameEnd,
    GameStart,
    Kill,
    MeetingEnd,
    MeetingStart,
    PlayerSnapshot,
    Positions,
    ProgramRun,
    Report,
    Speech,
    StepStart,
    TaskDone,
    TaskStart,
    Trace,
    Vec3,
    Visibility,
    Vote,
)
from controller.players import declared_sides
from controller.record import LOG_FILE, SUMMARY_FILE, RunSummary, TaskTally
from controller.vocabulary import SideFacts
from world.geometry import ShipGeometry
from world.spec import load_map

Pose = tuple[float, float, float, float]
"""One `trace` sample: x, y, z and heading (degrees, 0 faces +Z)."""

Y = 65.0
"""The flat plane's height."""
SEATS = ("red", "blue", "green", "pink", "orange", "yellow", "black", "white")
SCRIPTED = "scripted"
"""A side model that seats the scripted agents (any other is an ARIA backend address)."""
TASKS_PER_SEAT = 3
"""Tasks each crewmate is handed."""

CORRIDOR: Vec3 = (9.5, 65.0, 1.5)
"""A point of the skeld corridor between the cafeteria and admin (room `hallway`)."""
GHOST_AREA: Vec3 = (50.5, 65.0, 44.5)
"""Where skeld's dead and ejected players stand."""


class EventBuilder:
    """A game's log, built event by event: the seats, the clock and one primitive per
    event type. Each primitive stamps the current step and (unless given a `tick`) the
    current tick; the scenes (`LogBuilder`, `GameBuilder`) are built on them.

    Args:
        agents: All seats, in order.
        impostors: The impostor seats.
        seed: The game seed.
        game_id: The game's id.
        config: The config `game_start` carries (and `summary.json` repeats).
        spawn: Where every player stands at the start.
    """

    def __init__(
        self,
        agents: Sequence[str],
        impostors: Sequence[str],
        *,
        seed: int,
        game_id: str,
        config: dict[str, Any],
        spawn: Vec3,
    ) -> None:
        self.agents = list(agents)
        self.roles = {a: ("impostor" if a in impostors else "crewmate") for a in self.agents}
        self.seed = seed
        self.game_id = game_id
        self.config = config
        self.events: list[EventBase] = []
        self.step = 0
        self.tick = 0
        self.status: dict[str, str] = dict.fromkeys(self.agents, "alive")
        self.pos: dict[str, Vec3] = dict.fromkeys(self.agents, spawn)
        self.rooms: dict[str, str] = dict.fromkeys(self.agents, "cafeteria")
        self.kills = 0
        self.meetings = 0
        self.tasks_done = 0
        """The crew's finished tasks."""
        self.tasks_of: dict[str, int] = dict.fromkeys(self.agents, 0)
        """Each seat's finished tasks."""
        crew = sum(1 for r in self.roles.values() if r == "crewmate")
        self.tasks_total = TASKS_PER_SEAT * crew

    def _add(self, ev: EventBase) -> None:
        self.events.append(ev.model_copy(update={"game_id": self.game_id}))

    def _at(self, tick: int | None) -> int:
        return self.tick if tick is None else tick

    def _place(self, agent: str) -> tuple[Vec3, str]:
        """Where a `positions` snapshot puts a player: its position and room."""
        return self.pos[agent], self.rooms[agent]

    def _tally(self, agent: str) -> tuple[int, int]:
        """`(done, total)` of a `task_done` by this agent: the crew's tasks."""
        return self.tasks_done, self.tasks_total

    # ---------------------------------------------------------------- the game
    def game_start(
        self,
        *,
        tasks: Sequence[int],
        map_name: str,
        preset: str,
        agent_specs: dict[str, dict[str, Any]],
        sample_interval_ticks: int = 10,
    ) -> None:
        """The game's start (step 0, tick 0).

        Args:
            tasks: The stations each crewmate is handed.
            map_name: The map named in `game_start`.
            preset: The preset named in `game_start`.
            agent_specs: Each seat's agent, as its agent kind describes itself.
            sample_interval_ticks: The `trace` sample spacing the game announces.
        """
        self._add(
            GameStart(
                step=0,
                tick=0,
                seed=self.seed,
                agents=self.agents,
                roles=self.roles,
                tasks={a: list(tasks) for a in self.agents if self.roles[a] == "crewmate"},
                map=map_name,
                preset=preset,
                config=self.config,
                agent_specs=agent_specs,
                sides=sides_of(self.config),
                sample_interval_ticks=sample_interval_ticks,
            )
        )

    def finish(self, winner: str, ending: str = "impostors_outnumber") -> None:
        """The game's end."""
        self._add(
            GameEnd(
                step=self.step,
                tick=self.tick,
                winner=winner,
                ending=ending,
                status="ok",
            )
        )

    # ---------------------------------------------------------------- steps
    def begin(self, phase: str = "free_roam", speaker: str | None = None) -> int:
        """Start the next step."""
        self.step += 1
        self._add(StepStart(step=self.step, tick=self.tick, phase=phase, speaker=speaker))
        return self.step

    def advance(self, ticks: int) -> None:
        """Move the clock."""
        self.tick += ticks

    def decide(
        self,
        agent: str,
        program: Sequence[AnyAction | dict[str, Any]] | None = None,
        narration: str = "",
        *,
        phase: str = "free_roam",
        **kw: Any,
    ) -> None:
        """Record a decision: a program in free roam, a `vote=` in the voting step (other
        `Decision` fields by keyword). Typed actions are logged as the controller logs
        them (`dump_actions`); a dict is logged as given (a log written by hand)."""
        self._add(
            Decision(
                step=self.step,
                tick=self.tick,
                agent=agent,
                phase=phase,
                program=[a if isinstance(a, dict) else dump_actions([a])[0] for a in program or []],
                narration=narration,
                **kw,
            )
        )

    def program(
        self,
        agent: str,
        events: list[dict[str, Any]] | None = None,
        *,
        tick: int | None = None,
        start_tick: int | None = None,
        end_tick: int | None = None,
    ) -> None:
        """Record a program's end (run from `start_tick` to `end_tick`; both default to
        the current tick)."""
        self._add(
            ProgramRun(
                step=self.step,
                tick=self._at(tick),
                agent=agent,
                status="ok",
                start_tick=self._at(start_tick),
                end_tick=self._at(end_tick),
                events=events or [],
            )
        )

    def task_start(
        self, agent: str, station: int, room: str = "cafeteria", *, tick: int | None = None
    ) -> None:
        """Record a task start (an impostor's is fake)."""
        self._add(
            TaskStart(
                step=self.step,
                tick=self._at(tick),
                agent=agent,
                station=station,
                room=room,
                fake=self.roles[agent] == "impostor",
            )
        )

    def task_done(
        self, agent: str, station: int, room: str = "cafeteria", *, tick: int | None = None
    ) -> None:
        """Record a task's completion (an impostor's is fake); it started at the agent's
        last `task_start` at this station, if any."""
        start = next(
            (
                e.tick
                for e in reversed(self.events)
                if isinstance(e, TaskStart) and e.agent == agent and e.station == station
            ),
            None,
        )
        fake = self.roles[agent] == "impostor"
        if not fake:
            self.tasks_done += 1
            self.tasks_of[agent] += 1
        done, total = self._tally(agent)
        self._add(
            TaskDone(
                step=self.step,
                tick=self._at(tick),
                agent=agent,
                station=station,
                room=room,
                fake=fake,
                done=done,
                total=total,
                start_tick=start,
            )
        )

    def poses(
        self,
        ticks: list[int],
        players: dict[str, list[Pose]],
        *,
        interval: int,
        tick: int | None = None,
    ) -> None:
        """Record pose samples (a `trace` event) taken at `ticks`."""
        self._add(
            Trace(
                step=self.step,
                tick=self._at(tick),
                interval=interval,
                ticks=ticks,
                players=players,
            )
        )

    def kill(
        self,
        killer: str,
        victim: str,
        room: str = "cafeteria",
        *,
        tick: int | None = None,
        distance: float | None = None,
    ) -> None:
        """A kill at the victim's position (`distance` defaults to the players' distance
        across the floor)."""
        self.status[victim] = "dead"
        self.kills += 1
        p, k = self.pos[victim], self.pos[killer]
        if distance is None:
            distance = ((k[0] - p[0]) ** 2 + (k[2] - p[2]) ** 2) ** 0.5
        self._add(
            Kill(
                step=self.step,
                tick=self._at(tick),
                killer=killer,
                victim=victim,
                pos=p,
                room=room,
                distance=distance,
            )
        )

    def visibility(
        self,
        sees: dict[str, list[str]],
        bodies: dict[str, list[str]] | None = None,
        *,
        cause: str = "step_end",
        subject: str | None = None,
        near: dict[str, list[str]] | None = None,
        bodies_near: dict[str, list[str]] | None = None,
        tick: int | None = None,
    ) -> None:
        """A visibility record, the lists as given."""
        self._add(
            Visibility(
                step=self.step,
                tick=self._at(tick),
                sees=sees,
                bodies=bodies or {},
                near=near or {},
                bodies_near=bodies_near or {},
                cause=cause,
                subject=subject,
            )
        )

    def snapshot(self, cause: str = "step_end") -> None:
        """Everyone's position, room and status now (a `positions` event)."""
        players: dict[str, PlayerSnapshot] = {}
        for a in self.agents:
            pos, room = self._place(a)
            players[a] = PlayerSnapshot(pos=pos, yaw=0.0, room=room, status=self.status[a])
        self._add(Positions(step=self.step, tick=self.tick, players=players, cause=cause))

    # ---------------------------------------------------------------- meetings
    def report(
        self, reporter: str, victim: str, room: str = "cafeteria", *, pos: Vec3 | None = None
    ) -> None:
        """A body's report (`pos` defaults to the victim's position)."""
        self._add(
            Report(
                step=self.step,
                tick=self.tick,
                reporter=reporter,
                victim=victim,
                pos=self.pos[victim] if pos is None else pos,
                room=room,
            )
        )

    def emergency(self, caller: str) -> None:
        """An emergency call."""
        self._add(Emergency(step=self.step, tick=self.tick, caller=caller))

    def meeting_start(
        self,
        trigger: str,
        caller: str,
        victim: str | None = None,
        *,
        dead: list[str] | None = None,
    ) -> list[str]:
        """A meeting's start, the living in seat order.

        Args:
            trigger: `report` or `emergency`.
            caller: Who called it.
            victim: The reported body.
            dead: The seats listed as dead (default: everyone not alive).

        Returns:
            The living, in seat order.
        """
        self.meetings += 1
        alive = [a for a in self.agents if self.status[a] == "alive"]
        if dead is None:
            dead = [a for a in self.agents if self.status[a] != "alive"]
        self._add(
            MeetingStart(
                step=self.step,
                tick=self.tick,
                index=self.meetings,
                trigger=trigger,
                caller=caller,
                victim=victim,
                order=alive,
                dead=dead,
            )
        )
        return alive

    def say(self, speaker: str, text: str, utterance: int = 1) -> None:
        """One meeting turn (its own step)."""
        self.begin("meeting", speaker)
        self._add(
            Speech(step=self.step, tick=self.tick, speaker=speaker, text=text, utterance=utterance)
        )

    def ballot(self, voter: str, target: str | None, *, failed: bool = False) -> None:
        """One vote (`failed`: the voter's model could not be reached)."""
        self._add(
            Vote(
                step=self.step,
                tick=self.tick,
                voter=voter,
                target=target,
                failed=failed,
                error_kind="infrastructure" if failed else "",
            )
        )

    def meeting_end(self, tally: dict[str, int], ejected: str | None, outcome: str) -> None:
        """The meeting's end and, right after the tally as the engine logs it, the
        ejection."""
        if ejected is not None:
            self.status[ejected] = "ejected"
        self._add(
            MeetingEnd(
                step=self.step,
                tick=self.tick,
                index=self.meetings,
                tally=tally,
                ejected=ejected,
                outcome=outcome,
            )
        )
        if ejected is not None:
            role = self.roles[ejected]
            self._add(Eject(step=self.step, tick=self.tick, agent=ejected, role=role))

    # ---------------------------------------------------------------- output
    def write(self, folder: Path) -> Path:
        """Write `events.jsonl` (through the game's `EventLog`) and `summary.json` into
        `folder` (created; a folder that already holds a log is refused, as a game does)."""
        log = EventLog(folder / LOG_FILE, self.game_id)
        try:
            written = [log.write(ev) for ev in self.events]
        finally:
            log.close()
        end = next((e for e in reversed(written) if isinstance(e, GameEnd)), None)
        start = self.events[0]
        summary = RunSummary(
            game_id=self.game_id,
            status=end.status if end else "invalid",
            reason=end.reason if end else "no game_end",
            flags=list(end.flags) if end else [],
            winner=end.winner if end else None,
            ending=end.ending if end else "invalid",
            steps=self.step,
            ticks=self.tick,
            seed=self.seed,
            roles=dict(self.roles),
            final_status=dict(self.status),
            tasks=TaskTally(done=self.tasks_done, total=self.tasks_total),
            counts=counts_from_events(written),
            cost_usd=cost_from_events(written),
            wall_seconds=0.0,
            config=self.config,
            agents=dict(start.agent_specs) if isinstance(start, GameStart) else {},
        )
        (folder / SUMMARY_FILE).write_text(summary.model_dump_json(indent=2), encoding="utf-8")
        return folder


def sides_of(config: Mapping[str, Any]) -> dict[str, SideFacts]:
    """`game_start.sides` for a config: the facts each side's agent kind declares, as the
    game records them (`controller.players.declared_sides`; a config that names no side
    plays the default, scripted)."""
    return dict(_declared(json.dumps(config, sort_keys=True, default=str)))


@functools.lru_cache(maxsize=512)
def _declared(config: str) -> tuple[tuple[str, SideFacts], ...]:
    import harness_aria.registration  # noqa: F401  (registers the `aria` kind)

    return tuple(declared_sides(GameConfig.model_validate(json.loads(config))).items())


# -------------------------------------------------------------------- the flat plane
def _side(model: str, spec: dict[str, str]) -> dict[str, Any]:
    if model == SCRIPTED:
        return {"agent": "scripted", "args": {}}
    return {"agent": "aria", "args": {"backend": model, "spec": dict(spec)}}


@functools.lru_cache(maxsize=512)
def _resolved(seed: int, sides: str) -> str:
    import harness_aria.registration  # noqa: F401  (registers the `aria` kind)

    chosen = json.loads(sides)
    config = resolve_config("quick", {"seed": seed, "frames": "off", **chosen})
    return json.dumps(config.model_dump(mode="json"))


def resolved_config(
    seed: int,
    *,
    impostor: tuple[str, dict[str, str]] = ("fake:imp", {}),
    crew: tuple[str, dict[str, str]] = ("fake:crew", {}),
) -> dict[str, Any]:
    """The config a game of this seed and these sides writes (`GameConfig`, resolved:
    each side `{agent, args: {backend, spec, ...}}` with every default filled in).

    Args:
        seed: The game seed.
        impostor: (backend address or `scripted`, ARIA axes) of the impostor side.
        crew: The same for the crew.
    """
    sides = {"impostor": _side(*impostor), "crew": _side(*crew)}
    data: dict[str, Any] = json.loads(_resolved(seed, json.dumps(sides, sort_keys=True)))
    return data


def described(side: dict[str, Any]) -> dict[str, Any]:
    """A seat's `agent_specs` entry for a resolved side, as its agent kind describes
    itself (`ScriptedAgent.describe`, `AriaAgent.describe`)."""
    if side.get("agent") != "aria":
        return {"kind": str(side.get("agent", "scripted"))}
    args = side.get("args", {})
    return {
        "kind": "aria",
        "backend": args.get("backend"),
        "vision": not args.get("text_only", False),
        "spec": dict(args.get("spec", {})),
    }


class LogBuilder(EventBuilder):
    """A game on a flat plane (y = 65), positions given as `(x, z)`; rooms are the
    caller's (`rooms`, all `cafeteria` unless set).

    Args:
        impostors: The impostor seats.
        agents: All seats (the eight colours by default).
        seed: The game seed.
        game_id: The game's id.
        spec: The impostor side's ARIA axes (`spec["impostor"]`) and the crew's
            (`spec["crew"]`); unset axes take the defaults, as in a game.
        models: (impostor backend, crew backend): ARIA backend addresses, or
            `scripted` for the scripted agents.
        map_name: The map named in `game_start` (a packaged map such as `skeld` gives
            readers its geometry; the default names none).
    """

    def __init__(
        self,
        impostors: tuple[str, ...] = ("red", "blue"),
        *,
        agents: tuple[str, ...] = SEATS,
        seed: int = 0,
        game_id: str = "synthetic",
        spec: dict[str, dict[str, str]] | None = None,
        models: tuple[str, str] = ("fake:imp", "fake:crew"),
        map_name: str = "synthetic",
    ) -> None:
        spec = spec or {}
        config = resolved_config(
            seed,
            impostor=(models[0], spec.get("impostor", {})),
            crew=(models[1], spec.get("crew", {})),
        )
        super().__init__(
            agents, impostors, seed=seed, game_id=game_id, config=config, spawn=(0.0, Y, 0.0)
        )
        self.game_start(
            tasks=(1, 2, 3),
            map_name=map_name,
            preset="quick",
            agent_specs={
                a: described(config["impostor" if r == "impostor" else "crew"])
                for a, r in self.roles.items()
            },
        )

    def move(self, **where: tuple[float, float]) -> None:
        """Set players' positions (for the next `positions` snapshot)."""
        for a, (x, z) in where.items():
            self.pos[a] = (x, Y, z)

    def trace(
        self,
        paths: dict[str, list[tuple[float, float]]],
        interval: int = 10,
        yaw: dict[str, float] | None = None,
    ) -> None:
        """Record pose samples `interval` ticks apart (all paths the same length) and move
        the clock and every traced player to its last sample; `yaw` gives players a
        heading (degrees, 0 faces +Z), else 0."""
        n = max(len(p) for p in paths.values())
        ticks = [self.tick + i * interval for i in range(n)]
        heading = yaw or {}
        self.poses(
            ticks,
            {a: [(x, Y, z, heading.get(a, 0.0)) for x, z in p] for a, p in paths.items()},
            interval=interval,
        )
        for a, p in paths.items():
            self.move(**{a: p[-1]})
        self.tick = ticks[-1]

    def end_step(
        self,
        sees: dict[str, list[str]] | None = None,
        bodies: dict[str, list[str]] | None = None,
        advance: int = 0,
    ) -> None:
        """Positions and visibility at the end of the step."""
        self.tick += advance
        self.snapshot("step_end")
        self.visibility(sees or {}, bodies)

    def report(
        self, reporter: str, victim: str, room: str = "cafeteria", *, pos: Vec3 | None = None
    ) -> None:
        """A report that starts a meeting."""
        super().report(reporter, victim, room, pos=pos)
        self.meeting_start("report", reporter, victim)

    def votes(self, ballots: dict[str, str | None], reasons: dict[str, str] | None = None) -> None:
        """The voting step and the meeting's end (plurality ejects)."""
        self.begin("voting")
        for voter, target in ballots.items():
            self.decide(
                voter, phase="voting", vote=target, reasoning=(reasons or {}).get(voter, "")
            )
            self.ballot(voter, target)
        tally: dict[str, int] = {}
        for t in ballots.values():
            if t is not None:
                tally[t] = tally.get(t, 0) + 1
        top = sorted(tally.items(), key=lambda kv: -kv[1])
        ejected = None
        outcome = "no_votes"
        if top:
            tie = len(top) > 1 and top[0][1] == top[1][1]
            outcome = "tie" if tie else ("skipped" if top[0][0] == "skip" else "ejected")
            if outcome == "ejected":
                ejected = top[0][0]
        self.meeting_end(tally, ejected, outcome)
        self.snapshot("vote_end")  # as the game does after every vote


def unseen_kill_game(
    folder: Path,
    *,
    then: Sequence[tuple[str, str]] = (("pink", "I found green in admin."),),
    reasons: dict[str, str] | None = None,
    game_id: str | None = None,
    spec: dict[str, dict[str, str]] | None = None,
    models: tuple[str, str] = ("fake:imp", "fake:crew"),
) -> Path:
    """A small game written into `folder`: red kills green where nobody sees it, pink
    reports the body, red says it was in medbay doing tasks all along and the lines of
    `then` (speaker, text) follow; the vote ejects pink (`reasons`: the voters' reasons,
    by default red's "pink found the body") and the impostors (red and blue) win.
    `game_id` defaults to the folder's name; `spec` and `models` are as `LogBuilder`
    takes them.

    Returns:
        The folder.
    """
    b = LogBuilder(("red", "blue"), game_id=game_id or folder.name, spec=spec, models=models)
    b.move(red=(0, 0), green=(1, 0))
    b.end_step()
    b.begin()
    b.decide("red", [KillTarget(target="green")], "killing green while nobody watches")
    b.kill("red", "green", room="admin")
    b.end_step(sees={"pink": []})
    b.begin()
    b.report("pink", "green", room="admin")
    b.end_step()
    b.say("red", "I was in medbay doing tasks all along.")
    for speaker, text in then:
        b.say(speaker, text)
    b.votes(
        {"red": "pink", "pink": "red", "blue": "pink"},
        reasons if reasons is not None else {"red": "pink found the body"},
    )
    b.finish("impostors")
    return b.write(folder)


AXES_LEVELS: dict[str, tuple[str, str]] = {
    "memory": ("window", "semantic"),
    "planning": ("reactive", "hierarchical"),
    "reflection": ("off", "on"),
    "prompt": ("minimal", "deterministic"),
}


def random_game(
    folder: Path, rng: random.Random, *, seed: int, spec: dict[str, str], model: str
) -> Path:
    """A random but schema-following game with kills, a meeting and speech.

    Args:
        folder: Where to write it.
        rng: The RNG to draw from (one per benchmark; never the global one).
        seed: The game's seed (paired across arms).
        spec: The impostor side's axes.
        model: The impostor side's backend.

    Returns:
        The folder.
    """
    imps = tuple(rng.sample(SEATS, 2))
    b = LogBuilder(
        imps,
        seed=seed,
        game_id=f"syn-{folder.name}",
        spec={"impostor": spec, "crew": {"memory": "semantic", "planning": "reactive"}},
        models=(model, "fake:crew"),
    )
    crew = [a for a in SEATS if a not in imps]
    for a in SEATS:
        b.move(**{a: (rng.uniform(-40, 40), rng.uniform(-30, 30))})
    kills_left = rng.randint(0, 3)
    for _ in range(rng.randint(6, 14)):
        b.begin()
        alive_crew = [c for c in crew if b.status[c] == "alive"]
        paths: dict[str, list[tuple[float, float]]] = {}
        for a in SEATS:
            if b.status[a] != "alive":
                continue
            x, _, z = b.pos[a]
            dx, dz = rng.uniform(-2, 2), rng.uniform(-2, 2)
            paths[a] = [(x + dx * i, z + dz * i) for i in range(8)]
        for imp in imps:
            if b.status[imp] == "alive":
                b.decide(imp, [GoTo(room="hallway")], "wandering to blend in")
        b.trace(paths)
        if kills_left and alive_crew and rng.random() < 0.4:
            killer = rng.choice([i for i in imps if b.status[i] == "alive"] or [imps[0]])
            victim = rng.choice(alive_crew)
            b.pos[killer] = b.pos[victim]
            b.kill(killer, victim)
            b.visibility({c: [] for c in alive_crew}, cause="kill", subject=killer)
            kills_left -= 1
        sees = {
            a: [o for o in SEATS if o != a and b.status[o] == "alive" and rng.random() < 0.2]
            for a in SEATS
            if b.status[a] == "alive"
        }
        b.end_step(sees)
    dead = [c for c in crew if b.status[c] == "dead"]
    if dead:
        reporter = rng.choice([c for c in crew if b.status[c] == "alive"] or [imps[0]])
        b.report(reporter, dead[0])
        for a in [x for x in SEATS if b.status[x] == "alive"]:
            b.say(
                a, rng.choice(["I was in medbay doing tasks.", "Honestly I saw nothing.", "skip"])
            )
        b.votes({a: "skip" for a in SEATS if b.status[a] == "alive"})
    b.finish(rng.choice(["impostors", "crew"]))
    return b.write(folder)


# -------------------------------------------------------------------- the skeld map
@functools.cache
def _skeld() -> ShipGeometry:
    return ShipGeometry(load_map("skeld"))


class GameBuilder(EventBuilder):
    """A small game on the skeld map, laid out step by step.

    Args:
        agents: Seats in order.
        impostors: Which seats are impostors.
        step_ticks: Length of each free-roam step.
        interval: Trace sample spacing.
        v1: Write a log shaped like schema v1 (no trace, no causes, no task starts).
        specs: Per-seat agent spec (defaults to scripted).
        game_id: The game's id.
        talk_ticks: Game ticks each talk turn spends.
    """

    def __init__(
        self,
        agents: Sequence[str] = ("red", "blue", "green", "pink", "orange"),
        impostors: Sequence[str] = ("pink",),
        *,
        step_ticks: int = 100,
        interval: int = 10,
        v1: bool = False,
        specs: Mapping[str, Mapping[str, Any]] | None = None,
        game_id: str = "g1",
        talk_ticks: int = 0,
    ) -> None:
        self.geo = _skeld()
        self.step_ticks = step_ticks
        self.interval = interval
        self.v1 = v1
        self.talk_ticks = talk_ticks
        super().__init__(
            agents,
            impostors,
            seed=1,
            game_id=game_id,
            config={"rules": {"kill_cooldown_ticks": 150, "initial_kill_cooldown_ticks": 50}},
            spawn=self.geo.room_center("cafeteria"),
        )
        spec_map = specs or {}
        self.game_start(
            tasks=(0, 1, 2),
            map_name="skeld",
            preset="test",
            agent_specs={a: dict(spec_map.get(a, {"kind": "scripted"})) for a in self.agents},
            sample_interval_ticks=interval,
        )
        self.snapshot("setup")

    def _place(self, agent: str) -> tuple[Vec3, str]:
        """The living stand where they are, in the room the map finds there; the dead and
        ejected in the ghost area."""
        if self.status[agent] != "alive":
            return GHOST_AREA, "ghost_area"
        return self.pos[agent], self.geo.room_at(self.pos[agent])

    def _tally(self, agent: str) -> tuple[int, int]:
        """`(done, total)` of a `task_done`: the agent's own tasks."""
        return self.tasks_of[agent], TASKS_PER_SEAT

    def snapshot(self, cause: str = "step_end") -> None:
        """Everyone's position, room and status now (a v1 log has only `step_end`)."""
        super().snapshot("step_end" if self.v1 else cause)

    def _living(self) -> list[str]:
        return [a for a in self.agents if self.status[a] == "alive"]

    def _sight(
        self,
        sees: Mapping[str, Sequence[str]],
        near: Mapping[str, Sequence[str]] | None = None,
        bodies: Mapping[str, Sequence[str]] | None = None,
        cause: str = "step_end",
        subject: str | None = None,
        tick: int | None = None,
    ) -> None:
        """A visibility record over the living (`near` defaults to `sees`, bodies near to
        bodies in view; a v1 log has neither, nor a cause or subject)."""
        living = self._living()
        self.visibility(
            {a: list(sees.get(a, [])) for a in living},
            {a: list((bodies or {}).get(a, [])) for a in living},
            cause="step_end" if self.v1 else cause,
            subject=None if self.v1 else subject,
            near={} if self.v1 else {a: list((near or sees).get(a, [])) for a in living},
            bodies_near={} if self.v1 else {a: list((bodies or {}).get(a, [])) for a in living},
            tick=tick,
        )

    def free_roam(
        self,
        paths: Mapping[str, Sequence[str | Vec3]] | None = None,
        *,
        sees: Mapping[str, Sequence[str]] | None = None,
        near: Mapping[str, Sequence[str]] | None = None,
        bodies: Mapping[str, Sequence[str]] | None = None,
        tasks: Sequence[tuple[str, int, int, int]] = (),
        kills: Sequence[tuple[str, str, int, Mapping[str, Sequence[str]]]] = (),
        report: tuple[str, str] | None = None,
        emergency: str | None = None,
    ) -> int:
        """One free-roam step.

        Args:
            paths: Agent -> rooms in order, spread evenly over the step (others stay put);
                an entry may also be a position (e.g. `CORRIDOR`, a corridor point).
            sees: Field-of-view lists at the step's end.
            near: Proximity lists at the step's end (default: `sees`).
            bodies: Bodies in view at the step's end.
            tasks: `(agent, station, start_offset, end_offset)`: the agent stood at the
                station from `start + start_offset` to `start + end_offset` and finished.
            kills: `(killer, victim, offset, witnesses)`: a kill at `start + offset`; the
                witnesses' field of view at that moment.
            report: `(reporter, victim)`: a report at the step's end; a meeting follows.
            emergency: The caller of an emergency meeting at the step's end.

        Returns:
            The step number.
        """
        start = self.tick
        self.begin("free_roam")
        end = start + self.step_ticks
        paths = paths or {}
        ticks = list(range(start, end + 1, self.interval))
        poses: dict[str, list[Pose]] = {}
        kill_at = {victim: start + off for (_k, victim, off, _w) in kills}
        for a in self._living():
            here = self.geo.room_at(self.pos[a])
            stay: str | Vec3 = here if here in self.geo.rooms else self.pos[a]
            rooms = list(paths.get(a, [])) or [stay]
            track: list[Pose] = []
            for i, t in enumerate(ticks):
                if a in kill_at and t > kill_at[a]:
                    break
                room = rooms[min(len(rooms) - 1, i * len(rooms) // len(ticks))]
                p = self.geo.room_center(room) if isinstance(room, str) else room
                track.append((p[0], p[1], p[2], 0.0))
            poses[a] = track
            self.pos[a] = track[-1][:3]
        if not self.v1:
            self.poses(ticks, poses, interval=self.interval, tick=end)
        for agent, station, s_off, e_off in tasks:
            room = self.geo.station_room(station)
            at = self.geo.station_pos(station)
            marks = [
                {"kind": "mark", "tick": start + off, "pos": list(at), "tag": f"{tag}:{station}"}
                for tag, off in (("task_start", s_off), ("task_done", e_off))
            ]
            self.program(agent, marks, tick=end, start_tick=start, end_tick=start + e_off)
            if not self.v1:
                self.task_start(agent, station, room, tick=start + s_off)
            self.task_done(agent, station, room, tick=start + e_off)
        for killer, victim, off, witnesses in kills:
            room = self.geo.room_at(self.pos[victim])
            self.kill(killer, victim, room, tick=start + off, distance=1.0)
            if not self.v1:
                self._sight(witnesses, cause="kill", subject=killer, tick=start + off)
        self.tick = end
        if report is not None:
            reporter, victim = report
            room = self.geo.room_at(self.pos[reporter])
            self.report(reporter, victim, room, pos=self.pos[reporter])
        self.snapshot("step_end")
        self._sight(sees or {}, near, bodies)
        if report is not None:
            self._meeting("report", report[0], report[1])
        elif emergency is not None:
            self.emergency(emergency)
            self._meeting("emergency", emergency, None)
        return self.step

    def _meeting(self, trigger: str, caller: str, victim: str | None) -> None:
        """The meeting's start (the ejected are not listed as dead), the seats taken and
        everyone seeing everyone."""
        dead = [a for a in self.agents if self.status[a] == "dead"]
        living = self.meeting_start(trigger, caller, victim, dead=dead)
        for i, a in enumerate(living):
            self.pos[a] = self.geo.seat_pos(i)
        self.snapshot("meeting_seats")
        self._sight({a: [b for b in living if b != a] for a in living}, cause="meeting_seats")

    def talk(self, speeches: Sequence[tuple[str, str]]) -> None:
        """Meeting turns, one step each: `(speaker, text)`; utterances counted per speaker."""
        count: dict[str, int] = {}
        for speaker, text in speeches:
            count[speaker] = count.get(speaker, 0) + 1
            self.say(speaker, text, count[speaker])
            self.tick += self.talk_ticks
            self.snapshot("step_end")

    def vote(self, ballots: Mapping[str, str | None], ejected: str | None = None) -> None:
        """The vote step: voter -> target (`skip`, or None for a failed ballot)."""
        self.begin("voting")
        tally: dict[str, int] = {}
        for voter, target in ballots.items():
            self.ballot(voter, target, failed=target is None)
            if target is not None:
                tally[target] = tally.get(target, 0) + 1
        self.meeting_end(tally, ejected, "ejected" if ejected else "skipped")
        # Everyone still in play sits on the meeting seats as the next round begins.
        living = self._living()
        self.snapshot("vote_end")
        self._sight({a: [b for b in living if b != a] for a in living})

    def end(self, winner: str = "crew", ending: str = "impostors_ejected") -> list[Any]:
        """Close the game and return its events."""
        self.finish(winner, ending)
        return list(self.events)
