"""The rules engine: the single authority on roles, kills, bodies, tasks, meetings, votes, endings.

Pure and deterministic: it imports nothing from Minecraft, keeps no global state,
draws every random choice from one seeded generator, and reports everything it
decides as events. The step loop feeds it what happened in the world (which may
be the real Minecraft world or the in-process fake one), in tick order, as each
thing happens (see `controller.intents`).

Every action is judged at the tick it was attempted, and every event (a rejection
too) carries that tick. The endings are checked after every rule event, and the
first ending is final: after it every action is refused, so nothing later in the
same step can overturn it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from controller.config import RulesConfig
from controller.events import (
    ActionRejected,
    Emergency,
    ErrorKind,
    EventBase,
    GameEnd,
    Kill,
    KillReady,
    MeetingEnd,
    MeetingOutcome,
    MeetingStart,
    Report,
    Role,
    Speech,
    Status,
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Vec3,
    Vote,
)
from controller.events import Eject as EjectEvent

Phase = Literal["free_roam", "meeting", "voting", "over"]
SKIP = "skip"
InterruptReason = Literal["left_station", "meeting", "killed", "step_end"]


def distance(a: Vec3, b: Vec3) -> float:
    """Euclidean distance in blocks."""
    return math.dist(a, b)


@dataclass
class TaskRun:
    """A task a player is standing at and has not finished."""

    station: int
    start_tick: int
    fake: bool


@dataclass
class Player:
    """One seat's ground truth."""

    agent: str
    role: Role
    tasks: list[int]
    done: list[int] = field(default_factory=list)
    status: Status = "alive"
    pos: Vec3 = (0.0, 0.0, 0.0)
    yaw: float = 0.0
    emergencies: int = 0
    kill_ready_tick: int = 0
    task: TaskRun | None = None
    """The task in progress, if any (progress is lost when the player leaves the
    station, is killed, or a meeting is called)."""

    @property
    def alive(self) -> bool:
        """Whether the player is still in play."""
        return self.status == "alive"


@dataclass
class Body:
    """A dead player's body, shown in the world as a coloured marker."""

    victim: str
    pos: Vec3
    room: str
    tick: int
    step: int
    killer: str
    reported: bool = False
    cleared: bool = False


@dataclass(frozen=True)
class Ballot:
    """One voter's ballot: a living player's id, `skip`, or None (an abstention).

    A `failed` ballot is one the agent could not cast (its error kind and message
    say why); it is an abstention that counts for nobody, never a skip.
    """

    target: str | None
    failed: bool = False
    error_kind: ErrorKind = ""
    error: str = ""


@dataclass
class Meeting:
    """A meeting in progress (and, once over, its record)."""

    index: int
    trigger: Literal["report", "emergency"]
    caller: str
    victim: str | None
    order: list[str]
    start_tick: int
    start_step: int
    utterances: dict[str, int]
    turn: int = 0
    spoke_this_round: bool = False
    round_checked: int = 0
    """The turn at whose round boundary the silent-round rule was last applied."""
    votes: dict[str, str | None] = field(default_factory=dict)
    body_room: str | None = None
    outcome: MeetingOutcome | None = None
    ejected: str | None = None


@dataclass(frozen=True)
class Ending:
    """How a game ended."""

    winner: Literal["crew", "impostors"]
    ending: Literal["impostors_outnumber", "impostors_ejected", "tasks_done", "timeout"]
    tick: int = 0
    """The tick of the rule event that ended the game."""


@dataclass(frozen=True)
class TaskTally:
    """Tasks done and assigned, over all crewmates."""

    done: int
    total: int


@dataclass(frozen=True)
class _Turn:
    """Where the speaking order stands after skipping those who cannot speak."""

    turn: int
    spoke_this_round: bool
    round_checked: int
    speaker: str | None


class Engine:
    """Among Us rules as a deterministic state machine.

    Args:
        rules: The rules configuration.
        agents: Seat ids in seat order (`possible_agents`).
        seed: Seed of role and task assignment.
        stations: Station id -> standing position.
        button: Position of the emergency button.
        room_at: Maps a position to a room name.
    """

    def __init__(
        self,
        rules: RulesConfig,
        agents: Sequence[str],
        seed: int,
        stations: dict[int, Vec3],
        button: Vec3,
        room_at: Callable[[Vec3], str],
    ) -> None:
        if len(agents) != rules.n_players:
            raise ValueError(f"{len(agents)} agents given for rules.n_players={rules.n_players}")
        if rules.tasks_per_crewmate > len(stations):
            raise ValueError(
                f"rules.tasks_per_crewmate={rules.tasks_per_crewmate} exceeds the map's "
                f"{len(stations)} stations"
            )
        self.rules = rules
        self.possible_agents = list(agents)
        self.seed = seed
        self.stations = dict(stations)
        self.button = button
        self.room_at = room_at
        self.rng = random.Random(seed)
        self.step = 0
        self.tick = 0
        self.phase: Phase = "free_roam"
        self.bodies: dict[str, Body] = {}
        self.meeting: Meeting | None = None
        self.past_meetings: list[Meeting] = []
        self.meetings_held = 0
        self.last_meeting_end_tick: int | None = None
        self.ending: Ending | None = None
        self.known_dead: list[str] = []
        """Players everyone knows are out: the dead announced at a meeting, the ejected."""
        impostors = self._draw_impostors()
        station_ids = sorted(self.stations)
        self.players: dict[str, Player] = {}
        for agent in self.possible_agents:
            role: Role = "impostor" if agent in impostors else "crewmate"
            tasks = sorted(self.rng.sample(station_ids, rules.tasks_per_crewmate))
            self.players[agent] = Player(
                agent=agent,
                role=role,
                tasks=tasks if role == "crewmate" else [],
                kill_ready_tick=rules.initial_kill_cooldown_ticks,
            )

    def _draw_impostors(self) -> set[str]:
        """The impostor seats: drawn from the seed, or the rules' fixed seats.

        Raises:
            ValueError: A fixed impostor seat that is not one of the game's seats.
        """
        if self.rules.roles == "seeded":
            return set(self.rng.sample(self.possible_agents, self.rules.n_impostors))
        missing = [a for a in self.rules.fixed_impostors if a not in self.possible_agents]
        if missing:
            raise ValueError(
                f"rules.fixed_impostors names {missing}, which are not seats of this game "
                f"({', '.join(self.possible_agents)}); name seats of the game, or set "
                "rules.roles: seeded"
            )
        return set(self.rules.fixed_impostors)

    # ------------------------------------------------------------------ queries
    @property
    def agents(self) -> list[str]:
        """Living seats, in seat order (PettingZoo's `agents`)."""
        return [a for a in self.possible_agents if self.players[a].alive]

    @property
    def ghosts(self) -> list[str]:
        """Crewmates out of play (dead or ejected) who still do their tasks, in seat
        order; none unless `rules.ghost_tasks`."""
        return [a for a in self.possible_agents if self._is_ghost(a)]

    @property
    def actors(self) -> list[str]:
        """The seats that act in free roam: the living and the ghosts, in seat order."""
        return [a for a in self.possible_agents if self.players[a].alive or self._is_ghost(a)]

    def _is_ghost(self, agent: str) -> bool:
        p = self.players[agent]
        return self.rules.ghost_tasks and p.role == "crewmate" and not p.alive

    def roles(self) -> dict[str, Role]:
        """Every seat's secret role."""
        return {a: p.role for a, p in self.players.items()}

    def impostors(self) -> list[str]:
        """Impostor seats, dead or alive."""
        return [a for a in self.possible_agents if self.players[a].role == "impostor"]

    def teammates(self, agent: str) -> list[str]:
        """The other impostors, for an impostor; nobody for a crewmate."""
        if self.players[agent].role != "impostor":
            return []
        return [a for a in self.impostors() if a != agent]

    def kill_ready_ticks(self) -> dict[str, int]:
        """Every impostor still alive -> the first tick its kill is allowed."""
        return {
            a: p.kill_ready_tick
            for a, p in sorted(self.players.items())
            if p.role == "impostor" and p.alive
        }

    def kill_ready(self, agent: str) -> bool:
        """Whether this impostor's kill cooldown has run out."""
        p = self.players[agent]
        return p.role == "impostor" and p.alive and self.tick >= p.kill_ready_tick

    def emergency_ready(self, agent: str) -> bool:
        """Whether this player may press the emergency button now (range aside)."""
        return self._button_refusal(agent, self.tick) is None

    def emergency_unlock_tick(self) -> int:
        """First tick at which the button works."""
        unlock = self.rules.emergency_initial_lockout_ticks
        if self.last_meeting_end_tick is not None:
            unlock = max(
                unlock,
                self.last_meeting_end_tick + self.rules.emergency_lockout_after_meeting_ticks,
            )
        return unlock

    def task_progress(self) -> TaskTally:
        """Tasks done and assigned, over all crewmates."""
        crew = [p for p in self.players.values() if p.role == "crewmate"]
        return TaskTally(sum(len(p.done) for p in crew), sum(len(p.tasks) for p in crew))

    def task_in_progress(self, agent: str) -> TaskRun | None:
        """The task this player is standing at, if any."""
        return self.players[agent].task

    def body_markers(self) -> dict[str, Vec3]:
        """Victim -> position of every body the world must show now (not yet cleared)."""
        return {v: b.pos for v, b in sorted(self.bodies.items()) if not b.cleared}

    # ------------------------------------------------------------------ time
    def begin_step(self) -> None:
        """Advance the step counter."""
        self.step += 1

    def set_tick(self, tick: int) -> None:
        """Advance the engine's clock to the world's tick (never backwards)."""
        self.tick = max(self.tick, tick)

    def set_pose(self, agent: str, pos: Vec3, yaw: float) -> None:
        """Record where a player is."""
        self.players[agent].pos = pos
        self.players[agent].yaw = yaw

    def _base(self, tick: int | None = None) -> dict[str, int]:
        return {"step": self.step, "tick": self.tick if tick is None else tick}

    def _reject(
        self, agent: str, action: str, reason: str, tick: int, target: str | None = None
    ) -> list[EventBase]:
        return [
            ActionRejected(
                agent=agent, action=action, target=target, reason=reason, **self._base(tick)
            )
        ]

    def _refusal(self, agent: str, action: str, ghosts_may: bool = False) -> str | None:
        """Why no player may act now, or why this one may not (None: it may).

        Only the living act, and, where `ghosts_may` (tasks), the ghosts.
        """
        if self.phase == "over":
            return "the game is over"
        if self.phase != "free_roam":
            return f"no {action} during {self.phase}"
        p = self.players.get(agent)
        if p is None:
            return "unknown player"
        if not p.alive and not (ghosts_may and self._is_ghost(agent)):
            return "player is not alive"
        return None

    # ------------------------------------------------------------------ endings
    def _check_now(self, tick: int) -> None:
        """Decide the ending right after a rule event (the first ending is final)."""
        if self.ending is not None:
            return
        living = [self.players[a] for a in self.agents]
        imps = sum(1 for p in living if p.role == "impostor")
        crew = [p for p in living if p.role == "crewmate"]
        # With ghost tasks the crew's work is every crewmate's; without, the dead's
        # unfinished tasks drop out (they left play and cannot finish them).
        workers = (
            [p for p in self.players.values() if p.role == "crewmate"]
            if self.rules.ghost_tasks
            else crew
        )
        if imps == 0:
            self.ending = Ending("crew", "impostors_ejected", tick)
        elif len(crew) <= imps:
            self.ending = Ending("impostors", "impostors_outnumber", tick)
        elif all(len(p.done) == len(p.tasks) for p in workers):
            self.ending = Ending("crew", "tasks_done", tick)
        if self.ending is not None:
            self._over()

    def _over(self) -> None:
        self.phase = "over"
        for p in self.players.values():
            p.task = None

    def check_end(self) -> Ending | None:
        """The ending, if the game is over (also decides the step-budget `timeout`)."""
        if self.ending is None:
            self._check_now(self.tick)
        if self.ending is None and self.step >= self.rules.max_steps:
            self.ending = Ending(self.rules.timeout_winner, "timeout", self.tick)
            self._over()
        return self.ending

    def end_event(self, status: Literal["ok", "invalid"] = "ok", reason: str = "") -> GameEnd:
        """The `game_end` event for the current ending (or an invalid game)."""
        if status == "invalid" or self.ending is None:
            self.phase = "over"
            return GameEnd(
                winner=None, ending="invalid", status="invalid", reason=reason, **self._base()
            )
        return GameEnd(
            winner=self.ending.winner,
            ending=self.ending.ending,
            status="ok",
            reason=reason,
            **self._base(),
        )

    # ------------------------------------------------------------------ kills
    def kill(
        self, killer: str, victim: str, tick: int, killer_pos: Vec3, victim_pos: Vec3
    ) -> list[EventBase]:
        """An impostor strikes at a player at `tick`, from the given positions."""
        self.set_tick(tick)
        refusal = self._refusal(killer, "kills")
        if refusal is not None:
            return self._reject(killer, "kill", refusal, tick, victim)
        k = self.players[killer]
        v = self.players.get(victim)
        if v is None:
            return self._reject(killer, "kill", "unknown player", tick, victim)
        if k.role != "impostor":
            return self._reject(killer, "kill", "only impostors kill", tick, victim)
        if not v.alive:
            return self._reject(killer, "kill", "target is not alive", tick, victim)
        if v.role == "impostor":
            return self._reject(killer, "kill", "target is an impostor", tick, victim)
        if tick < k.kill_ready_tick:
            return self._reject(
                killer, "kill", f"cooldown: ready at tick {k.kill_ready_tick}", tick, victim
            )
        dist = distance(killer_pos, victim_pos)
        if dist > self.rules.kill_range:
            return self._reject(
                killer, "kill", f"out of range: {dist:.2f} > {self.rules.kill_range}", tick, victim
            )
        events: list[EventBase] = []
        events += self._interrupt(victim, "killed", tick)
        v.status = "dead"
        v.pos = victim_pos
        k.kill_ready_tick = tick + self.rules.kill_cooldown_ticks
        room = self.room_at(victim_pos)
        self.bodies[victim] = Body(
            victim=victim, pos=victim_pos, room=room, tick=tick, step=self.step, killer=killer
        )
        events.append(
            Kill(
                killer=killer,
                victim=victim,
                pos=victim_pos,
                room=room,
                distance=round(dist, 3),
                **self._base(tick),
            )
        )
        events.append(
            KillReady(ready={killer: k.kill_ready_tick}, cause="kill", **self._base(tick))
        )
        self._check_now(tick)
        return events

    # ------------------------------------------------------------------ tasks
    def start_task(self, agent: str, station: int, tick: int, pos: Vec3) -> list[EventBase]:
        """A player begins standing at `station` (at `pos`, at `tick`).

        A task already in progress at the same station goes on (the player resumes
        it); one at another station is lost. Impostors may fake any station. With
        `rules.ghost_tasks` a ghost crewmate may too, as if alive.
        """
        self.set_tick(tick)
        target = str(station)
        refusal = self._refusal(agent, "tasks", ghosts_may=True)
        if refusal is not None:
            return self._reject(agent, "task", refusal, tick, target)
        p = self.players[agent]
        if station not in self.stations:
            return self._reject(agent, "task", "no such station", tick, target)
        gap = distance(pos, self.stations[station])
        if gap > self.rules.station_range:
            return self._reject(
                agent, "task", f"not at the station ({gap:.2f} blocks)", tick, target
            )
        fake = p.role == "impostor"
        if not fake:
            if station not in p.tasks:
                return self._reject(
                    agent, "task", "station is not one of this player's tasks", tick, target
                )
            if station in p.done:
                return self._reject(agent, "task", "task already done", tick, target)
        if p.task is not None and p.task.station == station:
            return []  # still standing there: the task in progress goes on
        events = self._interrupt(agent, "left_station", tick)
        p.task = TaskRun(station=station, start_tick=tick, fake=fake)
        events.append(
            TaskStart(
                agent=agent, station=station, room=self.room_at(pos), fake=fake, **self._base(tick)
            )
        )
        return events

    def finish_task(self, agent: str, station: int, tick: int, pos: Vec3) -> list[EventBase]:
        """A player claims the task at `station` done at `tick`, standing at `pos`.

        It completes only if the player has stood at the station without a break
        (no walk-away, no meeting) for `rules.task_ticks` since the task started.
        """
        self.set_tick(tick)
        target = str(station)
        refusal = self._refusal(agent, "tasks", ghosts_may=True)
        if refusal is not None:
            return self._reject(agent, "task", refusal, tick, target)
        p = self.players[agent]
        run = p.task
        if run is None or run.station != station:
            return self._reject(agent, "task", "no task in progress at this station", tick, target)
        gap = distance(pos, self.stations[station])
        if gap > self.rules.station_range:
            lost = self._interrupt(agent, "left_station", tick)
            return lost + self._reject(
                agent, "task", f"not at the station ({gap:.2f} blocks)", tick, target
            )
        held = tick - run.start_tick
        if held < self.rules.task_ticks:
            return self._reject(
                agent, "task", f"held {held} ticks < {self.rules.task_ticks}", tick, target
            )
        p.task = None
        if not run.fake:
            p.done.append(station)
        events: list[EventBase] = [
            TaskDone(
                agent=agent,
                station=station,
                room=self.room_at(pos),
                fake=run.fake,
                done=len(p.done),
                total=len(p.tasks),
                start_tick=run.start_tick,
                **self._base(tick),
            )
        ]
        self._check_now(tick)
        return events

    def check_presence(self, poses: Mapping[str, Vec3], tick: int) -> list[EventBase]:
        """Lose the task in progress of every player seen away from its station."""
        events: list[EventBase] = []
        for agent, pos in poses.items():
            p = self.players.get(agent)
            if p is None or p.task is None:
                continue
            if distance(pos, self.stations[p.task.station]) > self.rules.station_range:
                events += self._interrupt(agent, "left_station", tick)
        return events

    def _interrupt(self, agent: str, reason: InterruptReason, tick: int) -> list[EventBase]:
        p = self.players[agent]
        run = p.task
        if run is None:
            return []
        p.task = None
        return [
            TaskInterrupted(
                agent=agent,
                station=run.station,
                reason=reason,
                held_ticks=max(0, tick - run.start_tick),
                **self._base(tick),
            )
        ]

    # ------------------------------------------------------------------ meetings called
    def report(self, agent: str, victim: str, tick: int, pos: Vec3) -> list[EventBase]:
        """A player reports a body from `pos`; a valid report starts a meeting."""
        self.set_tick(tick)
        refusal = self._refusal(agent, "reports")
        if refusal is not None:
            return self._reject(agent, "report", refusal, tick, victim)
        body = self.bodies.get(victim)
        if body is None or body.cleared:
            return self._reject(agent, "report", "no such body", tick, victim)
        gap = distance(pos, body.pos)
        if gap > self.rules.report_range:
            return self._reject(
                agent,
                "report",
                f"too far from the body: {gap:.2f} > {self.rules.report_range}",
                tick,
                victim,
            )
        body.reported = True
        events: list[EventBase] = [
            Report(
                reporter=agent,
                victim=victim,
                pos=body.pos,
                room=body.room,
                distance=round(gap, 3),
                **self._base(tick),
            )
        ]
        events += self._start_meeting("report", agent, victim, tick)
        return events

    def _button_refusal(self, agent: str, tick: int) -> str | None:
        """The one button-readiness rule: why `agent` may not press it at `tick`."""
        refusal = self._refusal(agent, "button")
        if refusal is not None:
            return refusal
        if self.players[agent].emergencies >= self.rules.emergency_per_player:
            return "no emergency meetings left"
        unlock = self.emergency_unlock_tick()
        if tick < unlock:
            return f"button locked until tick {unlock}"
        return None

    def emergency(self, agent: str, tick: int, pos: Vec3) -> list[EventBase]:
        """A player presses the emergency button from `pos`."""
        self.set_tick(tick)
        refusal = self._button_refusal(agent, tick)
        if refusal is not None:
            return self._reject(agent, "emergency", refusal, tick)
        gap = distance(pos, self.button)
        if gap > self.rules.button_range:
            return self._reject(agent, "emergency", f"too far from the button ({gap:.2f})", tick)
        self.players[agent].emergencies += 1
        events: list[EventBase] = [Emergency(caller=agent, **self._base(tick))]
        events += self._start_meeting("emergency", agent, None, tick)
        return events

    def _start_meeting(
        self, trigger: Literal["report", "emergency"], caller: str, victim: str | None, tick: int
    ) -> list[EventBase]:
        events: list[EventBase] = []
        for a in self.possible_agents:
            events += self._interrupt(a, "meeting", tick)
        self.meetings_held += 1
        body = self.bodies.get(victim) if victim else None
        for b in self.bodies.values():
            b.cleared = True
        order = self.agents
        self.meeting = Meeting(
            index=self.meetings_held,
            trigger=trigger,
            caller=caller,
            victim=victim,
            order=order,
            start_tick=tick,
            start_step=self.step,
            utterances=dict.fromkeys(order, 0),
            body_room=body.room if body else None,
        )
        self.phase = "meeting"
        dead = [a for a in self.possible_agents if not self.players[a].alive]
        for a in dead:
            if a not in self.known_dead:
                self.known_dead.append(a)
        events.append(
            MeetingStart(
                index=self.meetings_held,
                trigger=trigger,
                caller=caller,
                victim=victim,
                order=order,
                dead=dead,
                **self._base(tick),
            )
        )
        return events

    # ------------------------------------------------------------------ talk
    def talk_ticks_left(self) -> int:
        """Ticks of talk time left in the current meeting."""
        m = self._require_meeting()
        return max(0, m.start_tick + self.rules.meeting_max_ticks - self.tick)

    def _require_meeting(self) -> Meeting:
        if self.meeting is None:
            raise RuntimeError("no meeting in progress")
        return self.meeting

    def _scan(self) -> _Turn:
        """Skip, without changing anything, those who may not speak; find the speaker.

        Talk goes round-robin in seat order, `max_utterances` rounds at most, and ends
        when talk time is used up. Under `rules.talk` `open` a player who has spoken
        `max_utterances` lines is skipped and talk ends when a whole round passes with
        nobody speaking; under `turns` every turn is taken (a pass uses one) and a
        silent round ends nothing.
        """
        m = self._require_meeting()
        turn, spoke, checked = m.turn, m.spoke_this_round, m.round_checked
        if self.phase != "meeting":
            return _Turn(turn, spoke, checked, None)
        n = len(m.order)
        limit = self.rules.max_utterances
        open_talk = self.rules.talk == "open"
        while self.talk_ticks_left() > 0 and turn < n * limit:
            if open_talk and turn > 0 and turn % n == 0 and turn != checked:
                if not spoke:
                    break
                spoke, checked = False, turn
            speaker = m.order[turn % n]
            has_lines = m.utterances[speaker] < limit or not open_talk
            if has_lines and self.players[speaker].alive:
                return _Turn(turn, spoke, checked, speaker)
            turn += 1
        return _Turn(turn, spoke, checked, None)

    def current_speaker(self) -> str | None:
        """Whose turn it is to talk, or None when talk is over. Changes nothing."""
        return self._scan().speaker

    def advance(self) -> str | None:
        """Move the turn to the current speaker; when talk is over, open the vote.

        Returns:
            The speaker whose turn it now is, or None (the phase is then `voting`).
        """
        m = self._require_meeting()
        if self.phase != "meeting":
            return None
        scan = self._scan()
        m.turn, m.spoke_this_round, m.round_checked = (
            scan.turn,
            scan.spoke_this_round,
            scan.round_checked,
        )
        if scan.speaker is None:
            self.phase = "voting"
        return scan.speaker

    def speak(
        self,
        agent: str,
        text: str,
        tick: int,
        failed: bool = False,
        error_kind: ErrorKind = "",
        error: str = "",
    ) -> list[EventBase]:
        """The current speaker's turn: `text` (empty: a pass) or a failed turn.

        A failed turn (the agent could not produce a usable one) uses up the turn
        but is never a pass and never counts as speaking.
        """
        self.set_tick(tick)
        m = self._require_meeting()
        scan = self._scan()
        if self.phase != "meeting" or scan.speaker != agent:
            return self._reject(agent, "speak", "not this player's turn", tick)
        m.turn, m.spoke_this_round, m.round_checked = (
            scan.turn + 1,
            scan.spoke_this_round,
            scan.round_checked,
        )
        if failed:
            return [
                Speech(
                    speaker=agent,
                    text="",
                    utterance=m.utterances[agent],
                    failed=True,
                    error_kind=error_kind,
                    error=error,
                    **self._base(tick),
                )
            ]
        if not text.strip():
            return [
                Speech(
                    speaker=agent,
                    text="",
                    utterance=m.utterances[agent],
                    passed=True,
                    **self._base(tick),
                )
            ]
        m.utterances[agent] += 1
        m.spoke_this_round = True
        return [Speech(speaker=agent, text=text, utterance=m.utterances[agent], **self._base(tick))]

    def close_talk(self) -> None:
        """End talk at once (e.g. the step budget ran out): go to the vote."""
        self._require_meeting()
        if self.phase == "meeting":
            self.phase = "voting"

    # ------------------------------------------------------------------ vote
    def skip_fallback(self, voter: str) -> str | None:
        """Whom an impostor's refused skip votes for instead: the first other living
        player in seat order who is no impostor (the reference's fallback), if any."""
        for a in self.possible_agents:
            p = self.players[a]
            if a != voter and p.alive and p.role != "impostor":
                return a
        return None

    def cast_votes(self, ballots: Mapping[str, str | Ballot | None], tick: int) -> list[EventBase]:
        """Count a simultaneous vote and end the meeting.

        Args:
            ballots: Voter -> a living player's id, `skip`, None (a deliberate
                abstention) or a `Ballot` (which may be a failed one). Living voters
                missing from it abstain. A target that is not a living player makes
                the ballot a failed abstention (`error_kind` `rules`); it never
                becomes a skip. Ballots from non-voters are rejected. Unless
                `rules.impostors_may_skip`, an impostor's skip is rejected and its
                ballot goes to the fallback (`skip_fallback`).
            tick: When the vote closed.
        """
        self.set_tick(tick)
        m = self._require_meeting()
        if self.phase == "over":
            return self._reject(next(iter(ballots), ""), "vote", "the game is over", tick)
        self.phase = "voting"
        events: list[EventBase] = []
        tally: dict[str, int] = {}
        abstained: list[str] = []
        for voter in m.order:
            if not self.players[voter].alive:
                continue
            raw = ballots.get(voter)
            ballot = raw if isinstance(raw, Ballot) else Ballot(target=raw)
            target = ballot.target
            if (
                target is not None
                and target != SKIP
                and (target not in self.players or not self.players[target].alive)
            ):
                ballot = Ballot(
                    target=None,
                    failed=True,
                    error_kind="rules",
                    error=f"vote {target!r} is neither a living player nor {SKIP!r}",
                )
            if ballot.failed:
                ballot = Ballot(None, True, ballot.error_kind, ballot.error)
            replaced = ""
            if (
                ballot.target == SKIP
                and not self.rules.impostors_may_skip
                and self.players[voter].role == "impostor"
            ):
                reason = "impostors may not skip the vote (rules.impostors_may_skip is false)"
                events += self._reject(voter, "vote", reason, tick, SKIP)
                replaced = f"{SKIP}: {reason}"
                fallback = self.skip_fallback(voter)
                # No one to fall back on cannot happen in a game still going (the crew
                # outnumbers the impostors); were it to, the ballot counts for nobody.
                ballot = (
                    Ballot(fallback)
                    if fallback is not None
                    else Ballot(None, True, "rules", f"{reason}; no one to vote for instead")
                )
            m.votes[voter] = ballot.target
            if ballot.target is None:
                abstained.append(voter)
            else:
                tally[ballot.target] = tally.get(ballot.target, 0) + 1
            events.append(
                Vote(
                    voter=voter,
                    target=ballot.target,
                    failed=ballot.failed,
                    error_kind=ballot.error_kind,
                    error=ballot.error,
                    replaced=replaced,
                    **self._base(tick),
                )
            )
        for voter in ballots:
            if voter not in m.order:
                events += self._reject(voter, "vote", "not a voter in this meeting", tick)
        ejected: str | None = None
        outcome: MeetingOutcome
        if not tally:
            outcome = "no_votes"
        else:
            top = max(tally.values())
            leaders = sorted(t for t, c in tally.items() if c == top)
            if len(leaders) > 1:
                outcome = "tie"
            elif leaders[0] == SKIP:
                outcome = "skipped"
            else:
                outcome = "ejected"
                ejected = leaders[0]
        events.append(
            MeetingEnd(
                index=m.index,
                tally=dict(sorted(tally.items())),
                ejected=ejected,
                outcome=outcome,
                abstained=abstained,
                **self._base(tick),
            )
        )
        m.outcome, m.ejected = outcome, ejected
        if ejected is not None:
            p = self.players[ejected]
            p.status = "ejected"
            p.task = None
            if ejected not in self.known_dead:
                self.known_dead.append(ejected)
            events.append(EjectEvent(agent=ejected, role=p.role, **self._base(tick)))
        self.past_meetings.append(m)
        self.meeting = None
        self.phase = "free_roam"
        self.last_meeting_end_tick = tick
        for p in self.players.values():
            if p.role == "impostor":
                p.kill_ready_tick = max(p.kill_ready_tick, tick + self.rules.kill_cooldown_ticks)
        ready = self.kill_ready_ticks()
        if ready:
            events.append(KillReady(ready=ready, cause="meeting_end", **self._base(tick)))
        self._check_now(tick)
        return events
