"""Hand-built game logs for grounding-audit tests and examples.

`GameBuilder` writes a schema-v2 event list step by step: each free-roam step lasts
`step_ticks` ticks, each player's path is a list of rooms spread evenly over the step's
`trace` samples (standing at the room's centre), and sight is given explicitly as the
`visibility` lists (nothing is inferred from rooms). `v1=True` leaves out `trace`,
visibility causes and task starts, as logs written before schema v2 do.

Meetings are laid out as the game logs them: the meeting seats after the call, a
`step_end` snapshot (everyone on the seats) after each talk turn, and the vote's end.
Each talk turn spends `talk_ticks` (0 by default: the clock stands still through the
meeting, as it did before talk turns cost time, so the previous round's call, the seats
and the next round's start all share one tick).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from controller.events import (
    Emergency,
    EventBase,
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
from world.geometry import ShipGeometry
from world.spec import load_map

Vec3 = tuple[float, float, float]

CORRIDOR: Vec3 = (9.5, 65.0, 1.5)
"""A point of the skeld corridor between the cafeteria and admin (room `hallway`)."""


@functools.cache
def _skeld() -> ShipGeometry:
    return ShipGeometry(load_map("skeld"))


class GameBuilder:
    """Builds a small game's event log.

    Args:
        agents: Seats in order.
        impostors: Which seats are impostors.
        step_ticks: Length of each free-roam step.
        interval: Trace sample spacing.
        v1: Write a log shaped like schema v1 (no trace, no causes, no task starts).
        specs: Per-seat agent spec (defaults to scripted).
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
        self.agents = list(agents)
        self.roles = {a: ("impostor" if a in impostors else "crewmate") for a in self.agents}
        self.step_ticks = step_ticks
        self.interval = interval
        self.v1 = v1
        self.game_id = game_id
        self.talk_ticks = talk_ticks
        self.tick = 0
        self.step = 0
        self.events: list[EventBase] = []
        self.pos: dict[str, Vec3] = {a: self.geo.room_center("cafeteria") for a in self.agents}
        self.status: dict[str, str] = dict.fromkeys(self.agents, "alive")
        self.meetings = 0
        self.tasks_done: dict[str, int] = dict.fromkeys(self.agents, 0)
        spec_map = specs or {}
        self._add(
            GameStart(
                step=0,
                tick=0,
                seed=1,
                agents=self.agents,
                roles=self.roles,
                tasks={a: [0, 1, 2] for a in self.agents if self.roles[a] == "crewmate"},
                map="skeld",
                preset="test",
                config={"rules": {"kill_cooldown_ticks": 150, "initial_kill_cooldown_ticks": 50}},
                agent_specs={a: dict(spec_map.get(a, {"kind": "scripted"})) for a in self.agents},
                sample_interval_ticks=interval,
            )
        )
        self._snapshot("setup")

    def _add(self, ev: EventBase) -> None:
        self.events.append(ev.model_copy(update={"game_id": self.game_id}))

    def _snapshot(self, cause: str) -> None:
        players = {
            a: PlayerSnapshot(
                pos=self.pos[a]
                if self.status[a] == "alive"
                else (50.5, 65.0, 44.5),  # the ghost area
                yaw=0.0,
                room=self.geo.room_at(self.pos[a]) if self.status[a] == "alive" else "ghost_area",
                status=self.status[a],
            )
            for a in self.agents
        }
        c = "step_end" if self.v1 else cause
        self._add(Positions(step=self.step, tick=self.tick, players=players, cause=c))

    def _visibility(
        self,
        sees: Mapping[str, Sequence[str]],
        near: Mapping[str, Sequence[str]] | None = None,
        bodies: Mapping[str, Sequence[str]] | None = None,
        cause: str = "step_end",
        subject: str | None = None,
        tick: int | None = None,
    ) -> None:
        living = [a for a in self.agents if self.status[a] == "alive"]
        self._add(
            Visibility(
                step=self.step,
                tick=self.tick if tick is None else tick,
                sees={a: list(sees.get(a, [])) for a in living},
                bodies={a: list((bodies or {}).get(a, [])) for a in living},
                near={} if self.v1 else {a: list((near or sees).get(a, [])) for a in living},
                bodies_near={} if self.v1 else {a: list((bodies or {}).get(a, [])) for a in living},
                cause="step_end" if self.v1 else cause,
                subject=None if self.v1 else subject,
            )
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
        self.step += 1
        start = self.tick
        self._add(StepStart(step=self.step, tick=start, phase="free_roam"))
        paths = paths or {}
        ticks = list(range(start, start + self.step_ticks + 1, self.interval))
        poses: dict[str, list[tuple[float, float, float, float]]] = {}
        kill_at = {victim: start + off for (_k, victim, off, _w) in kills}
        for a in self.agents:
            if self.status[a] != "alive":
                continue
            here = self.geo.room_at(self.pos[a])
            stay: str | Vec3 = here if here in self.geo.rooms else self.pos[a]
            rooms = list(paths.get(a, [])) or [stay]
            track = []
            for i, t in enumerate(ticks):
                if a in kill_at and t > kill_at[a]:
                    break
                room = rooms[min(len(rooms) - 1, i * len(rooms) // len(ticks))]
                p = self.geo.room_center(room) if isinstance(room, str) else room
                track.append((p[0], p[1], p[2], 0.0))
            poses[a] = track
            last = track[-1]
            self.pos[a] = (last[0], last[1], last[2])
        if not self.v1:
            self._add(
                Trace(
                    step=self.step,
                    tick=start + self.step_ticks,
                    interval=self.interval,
                    ticks=ticks,
                    players=poses,
                )
            )
        for agent, station, s_off, e_off in tasks:
            room = self.geo.station_room(station)
            pos = self.geo.station_pos(station)
            fake = self.roles[agent] == "impostor"
            self._add(
                ProgramRun(
                    step=self.step,
                    tick=start + self.step_ticks,
                    agent=agent,
                    status="ok",
                    start_tick=start,
                    end_tick=start + e_off,
                    events=[
                        {
                            "kind": "mark",
                            "tick": start + s_off,
                            "pos": list(pos),
                            "tag": f"task_start:{station}",
                        },
                        {
                            "kind": "mark",
                            "tick": start + e_off,
                            "pos": list(pos),
                            "tag": f"task_done:{station}",
                        },
                    ],
                )
            )
            if not self.v1:
                self._add(
                    TaskStart(
                        step=self.step,
                        tick=start + s_off,
                        agent=agent,
                        station=station,
                        room=room,
                        fake=fake,
                    )
                )
            if not fake:
                self.tasks_done[agent] += 1
            self._add(
                TaskDone(
                    step=self.step,
                    tick=start + e_off,
                    agent=agent,
                    station=station,
                    room=room,
                    fake=fake,
                    done=self.tasks_done[agent],
                    total=3,
                    start_tick=None if self.v1 else start + s_off,
                )
            )
        for killer, victim, off, witnesses in kills:
            vpos = self.pos[victim]
            self._add(
                Kill(
                    step=self.step,
                    tick=start + off,
                    killer=killer,
                    victim=victim,
                    pos=vpos,
                    room=self.geo.room_at(vpos),
                    distance=1.0,
                )
            )
            self.status[victim] = "dead"
            self.body = (victim, vpos)
            if not self.v1:
                self._visibility(witnesses, cause="kill", subject=killer, tick=start + off)
        self.tick = start + self.step_ticks
        if report is not None:
            reporter, victim = report
            room = self.geo.room_at(self.pos[reporter])
            self._add(
                Report(
                    step=self.step,
                    tick=self.tick,
                    reporter=reporter,
                    victim=victim,
                    pos=self.pos[reporter],
                    room=room,
                )
            )
        self._snapshot("step_end")
        self._visibility(sees or {}, near, bodies)
        if report is not None:
            self._meeting_start("report", report[0], report[1])
        elif emergency is not None:
            self._add(Emergency(step=self.step, tick=self.tick, caller=emergency))
            self._meeting_start("emergency", emergency, None)
        return self.step

    def _meeting_start(self, trigger: str, caller: str, victim: str | None) -> None:
        self.meetings += 1
        living = [a for a in self.agents if self.status[a] == "alive"]
        dead = [a for a in self.agents if self.status[a] == "dead"]
        self._add(
            MeetingStart(
                step=self.step,
                tick=self.tick,
                index=self.meetings,
                trigger=trigger,
                caller=caller,
                victim=victim,
                order=living,
                dead=dead,
            )
        )
        for i, a in enumerate(living):
            self.pos[a] = self.geo.seat_pos(i)
        self._snapshot("meeting_seats")
        self._visibility({a: [b for b in living if b != a] for a in living}, cause="meeting_seats")

    def talk(self, speeches: Sequence[tuple[str, str]]) -> None:
        """Meeting turns, one step each: `(speaker, text)`; utterances counted per speaker."""
        count: dict[str, int] = {}
        for speaker, text in speeches:
            self.step += 1
            count[speaker] = count.get(speaker, 0) + 1
            self._add(StepStart(step=self.step, tick=self.tick, phase="meeting", speaker=speaker))
            self._add(
                Speech(
                    step=self.step,
                    tick=self.tick,
                    speaker=speaker,
                    text=text,
                    utterance=count[speaker],
                )
            )
            self.tick += self.talk_ticks
            self._snapshot("step_end")

    def vote(self, ballots: Mapping[str, str | None], ejected: str | None = None) -> None:
        """The vote step: voter -> target (`skip`, or None for a failed ballot)."""
        self.step += 1
        self._add(StepStart(step=self.step, tick=self.tick, phase="voting"))
        tally: dict[str, int] = {}
        for voter, target in ballots.items():
            self._add(
                Vote(
                    step=self.step,
                    tick=self.tick,
                    voter=voter,
                    target=target,
                    failed=target is None,
                    error_kind="infrastructure" if target is None else "",
                )
            )
            if target is not None:
                tally[target] = tally.get(target, 0) + 1
        self._add(
            MeetingEnd(
                step=self.step,
                tick=self.tick,
                index=self.meetings,
                tally=tally,
                ejected=ejected,
                outcome="ejected" if ejected else "skipped",
            )
        )
        if ejected is not None:
            from controller.events import Eject

            self._add(
                Eject(step=self.step, tick=self.tick, agent=ejected, role=self.roles[ejected])
            )
            self.status[ejected] = "ejected"
        # Everyone still in play sits on the meeting seats as the next round begins.
        living = [a for a in self.agents if self.status[a] == "alive"]
        self._snapshot("vote_end")
        self._visibility({a: [b for b in living if b != a] for a in living})

    def end(self, winner: str = "crew", ending: str = "impostors_ejected") -> list[Any]:
        """Close the game and return its events."""
        self._add(
            GameEnd(
                step=self.step,
                tick=self.tick,
                winner=winner,
                ending=ending,
                status="ok",
            )
        )
        return list(self.events)
