"""The rules engine: the single authority on roles, kills, bodies, tasks, meetings, votes, endings.

Pure and deterministic: it imports nothing from Minecraft, keeps no global state,
draws every random choice from one seeded generator, and reports everything it
decides as events. The step loop feeds it what happened in the world (which may
be the real Minecraft world or the in-process fake one), in tick order.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from controller.config import RulesConfig
from controller.events import (
    ActionRejected,
    Emergency,
    EventBase,
    GameEnd,
    Kill,
    MeetingEnd,
    MeetingStart,
    Report,
    Role,
    Speech,
    Status,
    TaskDone,
    Vec3,
    Vote,
)
from controller.events import Eject as EjectEvent

Phase = Literal["free_roam", "meeting", "voting", "over"]
SKIP = "skip"


def distance(a: Vec3, b: Vec3) -> float:
    """Euclidean distance in blocks."""
    return math.dist(a, b)


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


@dataclass
class Meeting:
    """A meeting in progress."""

    index: int
    trigger: Literal["report", "emergency"]
    caller: str
    victim: str | None
    order: list[str]
    start_tick: int
    utterances: dict[str, int]
    turn: int = 0
    spoke_this_round: bool = False
    votes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ending:
    """How a game ended."""

    winner: Literal["crew", "impostors"]
    ending: Literal["impostors_outnumber", "impostors_ejected", "tasks_done", "timeout"]


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
        self.meetings_held = 0
        self.last_meeting_end_tick: int | None = None
        self.ending: Ending | None = None
        impostors = set(self.rng.sample(self.possible_agents, rules.n_impostors))
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

    # ------------------------------------------------------------------ queries
    @property
    def agents(self) -> list[str]:
        """Living seats, in seat order (PettingZoo's `agents`)."""
        return [a for a in self.possible_agents if self.players[a].alive]

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

    def kill_ready(self, agent: str) -> bool:
        """Whether this impostor's kill cooldown has run out."""
        p = self.players[agent]
        return p.role == "impostor" and p.alive and self.tick >= p.kill_ready_tick

    def emergency_ready(self, agent: str) -> bool:
        """Whether this player may press the emergency button now."""
        p = self.players[agent]
        return (
            p.alive
            and self.phase == "free_roam"
            and p.emergencies < self.rules.emergency_per_player
            and self.tick >= self.emergency_unlock_tick()
        )

    def emergency_unlock_tick(self) -> int:
        """First tick at which the button works."""
        unlock = self.rules.emergency_initial_lockout_ticks
        if self.last_meeting_end_tick is not None:
            unlock = max(
                unlock,
                self.last_meeting_end_tick + self.rules.emergency_lockout_after_meeting_ticks,
            )
        return unlock

    def task_progress(self) -> tuple[int, int]:
        """Tasks done and assigned, over all crewmates."""
        crew = [p for p in self.players.values() if p.role == "crewmate"]
        return sum(len(p.done) for p in crew), sum(len(p.tasks) for p in crew)

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
        self,
        agent: str,
        action: str,
        reason: str,
        target: str | None = None,
        tick: int | None = None,
    ) -> list[EventBase]:
        return [
            ActionRejected(
                agent=agent, action=action, target=target, reason=reason, **self._base(tick)
            )
        ]

    # ------------------------------------------------------------------ actions
    def kill(
        self, killer: str, victim: str, tick: int, killer_pos: Vec3, victim_pos: Vec3
    ) -> list[EventBase]:
        """An impostor strikes at a player at `tick`, from the given positions."""
        self.set_tick(tick)
        k = self.players.get(killer)
        v = self.players.get(victim)
        if k is None or v is None:
            return self._reject(killer, "kill", "unknown player", victim)
        if self.phase != "free_roam":
            return self._reject(killer, "kill", f"no kills during {self.phase}", victim)
        if not k.alive:
            return self._reject(killer, "kill", "killer is not alive", victim)
        if k.role != "impostor":
            return self._reject(killer, "kill", "only impostors kill", victim)
        if not v.alive:
            return self._reject(killer, "kill", "target is not alive", victim)
        if v.role == "impostor":
            return self._reject(killer, "kill", "target is an impostor", victim)
        if tick < k.kill_ready_tick:
            return self._reject(
                killer, "kill", f"cooldown: ready at tick {k.kill_ready_tick}", victim
            )
        dist = distance(killer_pos, victim_pos)
        if dist > self.rules.kill_range:
            return self._reject(
                killer, "kill", f"out of range: {dist:.2f} > {self.rules.kill_range}", victim
            )
        v.status = "dead"
        v.pos = victim_pos
        k.kill_ready_tick = tick + self.rules.kill_cooldown_ticks
        room = self.room_at(victim_pos)
        self.bodies[victim] = Body(
            victim=victim, pos=victim_pos, room=room, tick=tick, step=self.step, killer=killer
        )
        return [
            Kill(
                killer=killer,
                victim=victim,
                pos=victim_pos,
                room=room,
                distance=round(dist, 3),
                **self._base(tick),
            )
        ]

    def complete_task(
        self, agent: str, station: int, start_tick: int, end_tick: int, pos: Vec3
    ) -> list[EventBase]:
        """A player stood at `station` from `start_tick` to `end_tick`, ending at `pos`."""
        self.set_tick(end_tick)
        p = self.players[agent]
        target = str(station)
        if self.phase != "free_roam":
            return self._reject(agent, "task", f"no tasks during {self.phase}", target)
        if not p.alive:
            return self._reject(agent, "task", "player is not alive", target)
        if station not in self.stations:
            return self._reject(agent, "task", "no such station", target)
        held = end_tick - start_tick
        if held < self.rules.task_ticks:
            return self._reject(
                agent, "task", f"held {held} ticks < {self.rules.task_ticks}", target
            )
        gap = distance(pos, self.stations[station])
        if gap > self.rules.station_range:
            return self._reject(agent, "task", f"not at the station ({gap:.2f} blocks)", target)
        fake = p.role == "impostor"
        if not fake:
            if station not in p.tasks:
                return self._reject(
                    agent, "task", "station is not one of this player's tasks", target
                )
            if station in p.done:
                return self._reject(agent, "task", "task already done", target)
            p.done.append(station)
        return [
            TaskDone(
                agent=agent,
                station=station,
                room=self.room_at(pos),
                fake=fake,
                done=len(p.done),
                total=len(p.tasks),
                **self._base(end_tick),
            )
        ]

    def report(self, agent: str, victim: str, tick: int, pos: Vec3) -> list[EventBase]:
        """A player reports a body from `pos`; a valid report starts a meeting."""
        self.set_tick(tick)
        p = self.players[agent]
        body = self.bodies.get(victim)
        if self.phase != "free_roam":
            return self._reject(agent, "report", f"no reports during {self.phase}", victim)
        if not p.alive:
            return self._reject(agent, "report", "player is not alive", victim)
        if body is None or body.cleared:
            return self._reject(agent, "report", "no such body", victim)
        gap = distance(pos, body.pos)
        if gap > self.rules.report_range:
            return self._reject(
                agent,
                "report",
                f"too far from the body: {gap:.2f} > {self.rules.report_range}",
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

    def emergency(self, agent: str, tick: int, pos: Vec3) -> list[EventBase]:
        """A player presses the emergency button from `pos`."""
        self.set_tick(tick)
        p = self.players[agent]
        if self.phase != "free_roam":
            return self._reject(agent, "emergency", f"no button during {self.phase}")
        if not p.alive:
            return self._reject(agent, "emergency", "player is not alive")
        if p.emergencies >= self.rules.emergency_per_player:
            return self._reject(agent, "emergency", "no emergency meetings left")
        if tick < self.emergency_unlock_tick():
            return self._reject(
                agent, "emergency", f"button locked until tick {self.emergency_unlock_tick()}"
            )
        gap = distance(pos, self.button)
        if gap > self.rules.button_range:
            return self._reject(agent, "emergency", f"too far from the button ({gap:.2f})")
        p.emergencies += 1
        events: list[EventBase] = [Emergency(caller=agent, **self._base(tick))]
        events += self._start_meeting("emergency", agent, None, tick)
        return events

    # ------------------------------------------------------------------ meetings
    def _start_meeting(
        self, trigger: Literal["report", "emergency"], caller: str, victim: str | None, tick: int
    ) -> list[EventBase]:
        self.meetings_held += 1
        for body in self.bodies.values():
            body.cleared = True
        order = self.agents
        self.meeting = Meeting(
            index=self.meetings_held,
            trigger=trigger,
            caller=caller,
            victim=victim,
            order=order,
            start_tick=tick,
            utterances=dict.fromkeys(order, 0),
        )
        self.phase = "meeting"
        dead = [a for a in self.possible_agents if not self.players[a].alive]
        return [
            MeetingStart(
                index=self.meetings_held,
                trigger=trigger,
                caller=caller,
                victim=victim,
                order=order,
                dead=dead,
                **self._base(tick),
            )
        ]

    def talk_ticks_left(self) -> int:
        """Ticks of talk time left in the current meeting."""
        m = self._require_meeting()
        return max(0, m.start_tick + self.rules.meeting_max_ticks - self.tick)

    def _require_meeting(self) -> Meeting:
        if self.meeting is None:
            raise RuntimeError("no meeting in progress")
        return self.meeting

    def next_speaker(self) -> str | None:
        """Whose turn it is to talk, or None when talk is over (the vote comes next).

        Talk goes round-robin in seat order. It ends when talk time is used up, when
        every player has spoken `max_utterances` times, or when a whole round passes
        with nobody speaking.
        """
        m = self._require_meeting()
        if self.phase != "meeting":
            return None
        n = len(m.order)
        limit = self.rules.max_utterances
        while True:
            if self.talk_ticks_left() <= 0 or m.turn >= n * limit:
                break
            if m.turn > 0 and m.turn % n == 0:
                if not m.spoke_this_round:
                    break
                m.spoke_this_round = False
            speaker = m.order[m.turn % n]
            if m.utterances[speaker] < limit and self.players[speaker].alive:
                return speaker
            m.turn += 1
        self.phase = "voting"
        return None

    def speak(self, agent: str, text: str, tick: int) -> list[EventBase]:
        """The current speaker says `text` (an empty text passes the turn)."""
        self.set_tick(tick)
        m = self._require_meeting()
        if self.phase != "meeting" or m.order[m.turn % len(m.order)] != agent:
            return self._reject(agent, "speak", "not this player's turn")
        m.turn += 1
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
        self.phase = "voting"

    def cast_votes(self, ballots: dict[str, str], tick: int) -> list[EventBase]:
        """Count a simultaneous vote and end the meeting.

        Args:
            ballots: Voter -> a living player's id or `skip`. Living players missing
                from it did not vote. Ballots from non-voters are rejected.
            tick: When the vote closed.
        """
        self.set_tick(tick)
        m = self._require_meeting()
        self.phase = "voting"
        events: list[EventBase] = []
        tally: dict[str, int] = {}
        for voter in m.order:
            if voter not in ballots or not self.players[voter].alive:
                continue
            target = ballots[voter]
            if target != SKIP and (target not in self.players or not self.players[target].alive):
                events += self._reject(voter, "vote", "target is not a living player", target)
                continue
            m.votes[voter] = target
            tally[target] = tally.get(target, 0) + 1
            events.append(Vote(voter=voter, target=target, **self._base(tick)))
        for voter in ballots:
            if voter not in m.order:
                events += self._reject(voter, "vote", "not a voter in this meeting")
        ejected: str | None = None
        outcome: Literal["ejected", "tie", "skipped", "no_votes"]
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
                **self._base(tick),
            )
        )
        if ejected is not None:
            p = self.players[ejected]
            p.status = "ejected"
            events.append(EjectEvent(agent=ejected, role=p.role, **self._base(tick)))
        self.meeting = None
        self.phase = "free_roam"
        self.last_meeting_end_tick = tick
        for p in self.players.values():
            if p.role == "impostor":
                p.kill_ready_tick = max(p.kill_ready_tick, tick + self.rules.kill_cooldown_ticks)
        return events

    # ------------------------------------------------------------------ endings
    def check_end(self) -> Ending | None:
        """Decide whether the game is over; remember and return the ending."""
        if self.ending is not None:
            return self.ending
        living = [self.players[a] for a in self.agents]
        imps = sum(1 for p in living if p.role == "impostor")
        crew = [p for p in living if p.role == "crewmate"]
        if imps == 0:
            self.ending = Ending("crew", "impostors_ejected")
        elif len(crew) <= imps:
            self.ending = Ending("impostors", "impostors_outnumber")
        elif all(len(p.done) == len(p.tasks) for p in crew):
            self.ending = Ending("crew", "tasks_done")
        elif self.step >= self.rules.max_steps:
            self.ending = Ending(self.rules.timeout_winner, "timeout")
        if self.ending is not None:
            self.phase = "over"
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
