"""Schema-following synthetic game logs: hand-built scenes for tests, random games for
the benchmark.

`LogBuilder` writes its log through the game's own writer (`controller.events.EventLog`)
and typed events, with a config resolved by the game's own `resolve_config` (so a side
reads `{agent: aria, args: {backend, spec}}` with every default filled in, exactly as a
game writes it), the seats' `agent_specs` in the shape each agent kind describes itself,
and a `summary.json` whose counts and cost come from `controller.accounting` and whose
keys are `controller.record.RunSummary`'s. So tests and the benchmark read what a game
writes and cannot drift from it. Scenes are laid out on a flat plane (y = 65); rooms
are given by the caller.
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Any

from controller.accounting import cost_from_events, counts_from_events
from controller.config import resolve_config
from controller.events import (
    Decision,
    Eject,
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
    Visibility,
    Vote,
)
from controller.record import LOG_FILE, SUMMARY_FILE, RunSummary, TaskTally

Y = 65.0
SEATS = ("red", "blue", "green", "pink", "orange", "yellow", "black", "white")
SCRIPTED = "scripted"
"""A side model that seats the scripted agents (any other is an ARIA backend address)."""


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


def _xyz(p: tuple[float, float]) -> tuple[float, float, float]:
    return (float(p[0]), Y, float(p[1]))


class LogBuilder:
    """Builds one game's log event by event.

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
        self.agents = list(agents)
        self.roles = {a: ("impostor" if a in impostors else "crewmate") for a in agents}
        self.seed = seed
        self.game_id = game_id
        self.events: list[EventBase] = []
        self.step = 0
        self.tick = 0
        self.status = dict.fromkeys(agents, "alive")
        self.pos: dict[str, tuple[float, float]] = {a: (0.0, 0.0) for a in agents}
        self.rooms: dict[str, str] = dict.fromkeys(agents, "cafeteria")
        spec = spec or {}
        self.config: dict[str, Any] = resolved_config(
            seed,
            impostor=(models[0], spec.get("impostor", {})),
            crew=(models[1], spec.get("crew", {})),
        )
        self.kills = 0
        self.meetings = 0
        self.tasks_done = 0
        self.tasks_total = 3 * sum(1 for r in self.roles.values() if r == "crewmate")
        self._add(
            GameStart(
                step=0,
                tick=0,
                seed=seed,
                agents=self.agents,
                roles=self.roles,
                tasks={a: [1, 2, 3] for a in agents if self.roles[a] == "crewmate"},
                map=map_name,
                preset="quick",
                config=self.config,
                agent_specs={
                    a: described(self.config["impostor" if r == "impostor" else "crew"])
                    for a, r in self.roles.items()
                },
            )
        )

    def _add(self, ev: EventBase) -> None:
        self.events.append(ev.model_copy(update={"game_id": self.game_id}))

    # ---------------------------------------------------------------- steps
    def begin(self, phase: str = "free_roam", speaker: str | None = None) -> int:
        """Start the next step."""
        self.step += 1
        self._add(StepStart(step=self.step, tick=self.tick, phase=phase, speaker=speaker))
        return self.step

    def decide(
        self, agent: str, program: list[dict[str, Any]], narration: str = "", **kw: Any
    ) -> None:
        """Record a decision with a program (free roam)."""
        self._add(
            Decision(
                step=self.step,
                tick=self.tick,
                agent=agent,
                phase="free_roam",
                program=program,
                narration=narration,
                **kw,
            )
        )

    def program(self, agent: str, events: list[dict[str, Any]] | None = None) -> None:
        """Record a program's end."""
        self._add(
            ProgramRun(
                step=self.step,
                tick=self.tick,
                agent=agent,
                status="ok",
                start_tick=self.tick,
                end_tick=self.tick,
                events=events or [],
            )
        )

    def task_start(self, agent: str, station: int, room: str = "cafeteria") -> None:
        """Record a task start (an impostor's is fake)."""
        self._add(
            TaskStart(
                step=self.step,
                tick=self.tick,
                agent=agent,
                station=station,
                room=room,
                fake=self.roles[agent] == "impostor",
            )
        )

    def task_done(self, agent: str, station: int, room: str = "cafeteria") -> None:
        """Record a task's completion at the current tick (an impostor's is fake)."""
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
        self._add(
            TaskDone(
                step=self.step,
                tick=self.tick,
                agent=agent,
                station=station,
                room=room,
                fake=fake,
                done=self.tasks_done,
                total=self.tasks_total,
                start_tick=start,
            )
        )

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
        self._add(
            Trace(
                step=self.step,
                tick=self.tick,
                interval=interval,
                ticks=ticks,
                players={
                    a: [(x, Y, z, heading.get(a, 0.0)) for x, z in p] for a, p in paths.items()
                },
            )
        )
        for a, p in paths.items():
            self.pos[a] = p[-1]
        self.tick = ticks[-1]

    def advance(self, ticks: int) -> None:
        """Move the clock."""
        self.tick += ticks

    def move(self, **where: tuple[float, float]) -> None:
        """Set players' positions (for the next `positions` snapshot)."""
        self.pos.update(where)

    def kill(self, killer: str, victim: str, room: str = "cafeteria") -> None:
        """A kill at the victim's position."""
        self.status[victim] = "dead"
        self.kills += 1
        p = self.pos[victim]
        dist = ((self.pos[killer][0] - p[0]) ** 2 + (self.pos[killer][1] - p[1]) ** 2) ** 0.5
        self._add(
            Kill(
                step=self.step,
                tick=self.tick,
                killer=killer,
                victim=victim,
                pos=_xyz(p),
                room=room,
                distance=dist,
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
    ) -> None:
        """A visibility record at the current tick."""
        self._add(
            Visibility(
                step=self.step,
                tick=self.tick,
                sees=sees,
                bodies=bodies or {},
                near=near or {},
                cause=cause,
                subject=subject,
            )
        )

    def snapshot(self, cause: str = "step_end") -> None:
        """Everyone's position, room and status now (a `positions` event)."""
        players = {
            a: PlayerSnapshot(
                pos=_xyz(self.pos[a]),
                yaw=0.0,
                room=self.rooms[a],
                status=self.status[a],
            )
            for a in self.agents
        }
        self._add(Positions(step=self.step, tick=self.tick, players=players, cause=cause))

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

    # ---------------------------------------------------------------- meetings
    def report(self, reporter: str, victim: str, room: str = "cafeteria") -> None:
        """A report that starts a meeting."""
        self._add(
            Report(
                step=self.step,
                tick=self.tick,
                reporter=reporter,
                victim=victim,
                pos=_xyz(self.pos[victim]),
                room=room,
            )
        )
        self.meetings += 1
        alive = [a for a in self.agents if self.status[a] == "alive"]
        dead = [a for a in self.agents if self.status[a] != "alive"]
        self._add(
            MeetingStart(
                step=self.step,
                tick=self.tick,
                index=self.meetings,
                trigger="report",
                caller=reporter,
                victim=victim,
                order=alive,
                dead=dead,
            )
        )

    def say(self, speaker: str, text: str, utterance: int = 1) -> None:
        """One meeting turn (its own step)."""
        self.begin("meeting", speaker)
        self._add(
            Speech(step=self.step, tick=self.tick, speaker=speaker, text=text, utterance=utterance)
        )

    def votes(self, ballots: dict[str, str | None], reasons: dict[str, str] | None = None) -> None:
        """The voting step and the meeting's end (plurality ejects)."""
        self.begin("voting")
        for voter, target in ballots.items():
            self._add(
                Decision(
                    step=self.step,
                    tick=self.tick,
                    agent=voter,
                    phase="voting",
                    vote=target,
                    reasoning=(reasons or {}).get(voter, ""),
                )
            )
            self._add(Vote(step=self.step, tick=self.tick, voter=voter, target=target))
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
        if ejected is not None:  # the engine logs the ejection right after the tally
            role = self.roles[ejected]
            self._add(Eject(step=self.step, tick=self.tick, agent=ejected, role=role))
        self.snapshot("vote_end")  # as the game does after every vote

    # ---------------------------------------------------------------- output
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
            version=2,
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
            x, z = b.pos[a]
            dx, dz = rng.uniform(-2, 2), rng.uniform(-2, 2)
            paths[a] = [(x + dx * i, z + dz * i) for i in range(8)]
        for imp in imps:
            if b.status[imp] == "alive":
                b.decide(imp, [{"op": "go_to", "room": "hallway"}], "wandering to blend in")
        b.trace(paths)
        if kills_left and alive_crew and rng.random() < 0.4:
            killer = rng.choice([i for i in imps if b.status[i] == "alive"] or [imps[0]])
            victim = rng.choice(alive_crew)
            b.move(**{killer: b.pos[victim]})
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
