"""Observation building: what each agent is told, from the engine and the log.

The `Observer` keeps what an agent's memory holds beyond the engine's state: the
chat with a cursor per agent, what each agent perceives now (field of view and
360 degree proximity, kept apart), its free-roam sightings (which the meeting
teleport never overwrites), and a cursor into the event log from which its own
actions since its previous observation are read.

Beside the sight sets (the rules' `vision_radius`), a living player's free-roam
observation carries the far sets (`Observation.far_players`/`far_bodies`: the living
and the bodies in line of sight within `FAR_SIGHT_RANGE`, 36 blocks), computed here
from the engine's poses and never logged, for the reference's egocentric view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.engine import Engine
from controller.events import (
    Emergency,
    EventBase,
    Kill,
    ProgramRun,
    Report,
    Speech,
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Trace,
    Vec3,
    Vote,
)
from controller.observation import (
    FAR_SIGHT_RANGE,
    ChatEntry,
    MeetingRecord,
    MeetingView,
    Observation,
    OwnAction,
    Scoreboard,
    Sighting,
    TaskProgress,
)
from controller.perception import Sight
from controller.worlds.base import Frame
from world.geometry import ShipGeometry


@dataclass
class _Memory:
    """One agent's perception and memory."""

    sees: list[str] = field(default_factory=list)
    near: list[str] = field(default_factory=list)
    bodies: list[str] = field(default_factory=list)
    bodies_near: list[str] = field(default_factory=list)
    last_seen: dict[str, Sighting] = field(default_factory=dict)
    bodies_seen: dict[str, Sighting] = field(default_factory=dict)
    chat_cursor: int = 0
    event_cursor: int = 0


class Observer:
    """Builds every agent's `Observation`.

    Args:
        engine: The rules engine (ground truth).
        geometry: The map.
    """

    def __init__(self, engine: Engine, geometry: ShipGeometry) -> None:
        self.engine = engine
        self.geometry = geometry
        self.chat: list[ChatEntry] = []
        self.meeting_chat_start = 0
        self.memory = {a: _Memory() for a in engine.possible_agents}
        self.departed: dict[str, Vec3] = {}
        """Player out of play -> where it left play (its body, or where it was ejected
        from): all the living are ever told of a ghost's whereabouts."""
        self._far_tick = -1
        self._far_los: dict[tuple[Vec3, Vec3], bool] = {}
        """Line of sight within `FAR_SIGHT_RANGE` between two positions, this tick's
        (symmetric, so each pair of the living is cast once for both)."""

    # ------------------------------------------------------------------ feeding
    def add_chat(self, kind: str, text: str, speaker: str | None = None) -> ChatEntry:
        """Append a chat line (`server` or `speech`) at the engine's step and tick."""
        entry = ChatEntry(
            index=len(self.chat),
            step=self.engine.step,
            tick=self.engine.tick,
            kind="server" if kind == "server" else "speech",
            speaker=speaker,
            text=text,
        )
        self.chat.append(entry)
        return entry

    def meeting_started(self) -> None:
        """The current meeting's chat starts with the next line."""
        self.meeting_chat_start = len(self.chat)

    def note_departures(self) -> None:
        """Remember where each player newly out of play left it: where its body lies,
        or, ejected, the engine's position at the ejection (its seat). Call it before
        a ghost's walk moves the engine's position (`Session.record_positions` does)."""
        e = self.engine
        for agent, p in e.players.items():
            if not p.alive and agent not in self.departed:
                body = e.bodies.get(agent)
                self.departed[agent] = body.pos if body is not None else p.pos

    def perceive(self, sight: Sight, free_roam: bool) -> None:
        """What everyone perceives now; free-roam field-of-view sightings are remembered.

        Sightings in a meeting (everyone sits at one table) are never remembered: they
        would overwrite what each player saw while the ship was in play.
        """
        e = self.engine
        for agent, mem in self.memory.items():
            mem.sees = list(sight.sees.get(agent, []))
            mem.near = list(sight.near.get(agent, []))
            mem.bodies = list(sight.bodies.get(agent, []))
            mem.bodies_near = list(sight.bodies_near.get(agent, []))
            if not free_roam:
                continue
            for other in mem.sees:
                pos = e.players[other].pos
                mem.last_seen[other] = Sighting(
                    step=e.step, tick=e.tick, pos=pos, room=self.geometry.room_at(pos)
                )
            for victim in mem.bodies:
                body = e.bodies[victim]
                mem.bodies_seen[victim] = Sighting(
                    step=e.step, tick=e.tick, pos=body.pos, room=body.room
                )

    # ------------------------------------------------------------------ building
    def observe(
        self,
        agent: str,
        events: Sequence[EventBase],
        frame: Frame | None = None,
        frame_sha256: str | None = None,
    ) -> Observation:
        """The observation of `agent` now; `events` is the whole log so far."""
        e = self.engine
        p = e.players[agent]
        mem = self.memory[agent]
        chat = self.chat[mem.chat_cursor :]
        mem.chat_cursor = len(self.chat)
        own = self._own_actions(agent, events[mem.event_cursor :])
        mem.event_cursor = len(events)
        meeting: MeetingView | None = None
        if e.meeting is not None:
            m = e.meeting
            body = e.bodies.get(m.victim) if m.victim else None
            meeting = MeetingView(
                index=m.index,
                trigger=m.trigger,
                caller=m.caller,
                victim=m.victim,
                body_room=body.room if body else None,
                body_pos=body.pos if body else None,
                order=list(m.order),
                speaker=e.current_speaker(),
                utterances_left=e.rules.max_utterances - m.utterances.get(agent, 0),
                talk_ticks_left=e.talk_ticks_left(),
            )
        phase = e.phase if e.phase in ("free_roam", "meeting", "voting") else "free_roam"
        done = set(p.done)
        run = e.task_in_progress(agent)
        room = self.geometry.room_at(p.pos)
        scoreboard = Scoreboard(
            phase=e.phase,
            kill_ready=e.kill_ready(agent),
            task_bits=[s in done for s in p.tasks],
            dead=not p.alive,
            meeting_countdown=meeting.talk_ticks_left if meeting else None,
            speaker=meeting.speaker if meeting else None,
            game_over=e.phase == "over",
            area=room,
            task_in_progress=run.station if run else None,
            reported_body=meeting.victim if meeting else None,
            emergency_ready=e.emergency_ready(agent),
        )
        progress = None
        if run is not None:
            progress = TaskProgress(
                station=run.station,
                room=self.geometry.station_room(run.station),
                ticks_done=max(0, e.tick - run.start_tick),
                ticks_needed=e.rules.task_ticks,
            )
        dead_rooms = {v: s.room for v, s in mem.bodies_seen.items()}
        if meeting is not None and meeting.victim and meeting.body_room:
            dead_rooms[meeting.victim] = meeting.body_room
        ghost = agent in e.ghosts
        roster = {
            o: Sighting(step=e.step, tick=e.tick, pos=pos, room=self.geometry.room_at(pos))
            for o, pos in self._roster(agent, ghost).items()
        }
        far_players, far_bodies = self._far(agent)
        return Observation(
            agent=agent,
            role=p.role,
            ghost=ghost,
            step=e.step,
            tick=e.tick,
            phase=phase,
            pos=p.pos,
            yaw=p.yaw,
            room=room,
            tasks=list(p.tasks),
            tasks_done=list(p.done),
            teammates=e.teammates(agent),
            kill_ready=e.kill_ready(agent),
            emergency_ready=e.emergency_ready(agent),
            known_dead=list(e.known_dead),
            players=list(e.possible_agents),
            visible_players=self._positions(mem.sees, ghost),
            visible_bodies=self._bodies(mem.bodies),
            nearby_players=self._positions(mem.near, ghost),
            nearby_bodies=self._bodies(mem.bodies_near),
            chat=chat,
            meeting_chat=self.chat[self.meeting_chat_start :] if meeting else [],
            meeting=meeting,
            scoreboard=scoreboard,
            last_seen=dict(mem.last_seen),
            bodies_seen=dict(mem.bodies_seen),
            roster=roster,
            past_meetings=self._past_meetings(),
            task_progress=progress,
            own_actions=own,
            dead_bodies_rooms=dead_rooms,
            frame_sha256=frame_sha256,
            rgb=frame.rgb if frame else None,
            jpeg=frame.jpeg if frame else None,
            frame_path=frame.path if frame else None,
            far_players=far_players,
            far_bodies=far_bodies,
        )

    def _far(self, agent: str) -> tuple[dict[str, Vec3], dict[str, Vec3]]:
        """The far sets of `agent` now: the other living players and the uncleared bodies
        within `FAR_SIGHT_RANGE` blocks all around and in line of sight, from the engine's
        poses (those the log records at this tick).

        Living players in free roam only: a ghost's own sight is never the reference
        view's business, and at the meeting table the sight sets already hold everyone
        seated (within 6 blocks of each other), the bodies being cleared. Ghosts are
        never targets: the living learn nothing of them.
        """
        e = self.engine
        me = e.players[agent]
        if e.phase != "free_roam" or not me.alive:
            return {}, {}
        if e.tick != self._far_tick:
            self._far_tick, self._far_los = e.tick, {}
        eye = me.pos
        players = {
            o: e.players[o].pos
            for o in e.agents
            if o != agent and self._sees_far(eye, e.players[o].pos)
        }
        bodies = {v: pos for v, pos in e.body_markers().items() if self._sees_far(eye, pos)}
        return players, bodies

    def _sees_far(self, a: Vec3, b: Vec3) -> bool:
        """`ShipGeometry.can_see(a, b, FAR_SIGHT_RANGE)`, cast once a tick per pair."""
        key = (a, b) if a <= b else (b, a)
        seen = self._far_los.get(key)
        if seen is None:
            seen = self._far_los[key] = self.geometry.can_see(a, b, FAR_SIGHT_RANGE)
        return seen

    def _roster(self, agent: str, ghost: bool) -> dict[str, Vec3]:
        """Every other player's position as the server knows it, as `agent` may know it:
        to the living a ghost stays where it left play (as it would in the ghost area);
        a ghost knows everyone as they are."""
        e = self.engine
        ghosts = set() if ghost else set(e.ghosts)
        return {
            o: self.departed.get(o, q.pos) if o in ghosts else q.pos
            for o, q in e.players.items()
            if o != agent
        }

    def _positions(self, agents: list[str], ghost: bool) -> dict[str, Vec3]:
        """Where the listed players are: the living, and for a ghost the other ghosts.

        The lists may be older than a player's leaving play (they are the last
        perception, e.g. at the meeting table before an ejection): who is out of play
        now is dropped, unless a ghost is told of another.
        """
        e = self.engine
        shown = set(e.actors if ghost else e.agents)
        return {o: e.players[o].pos for o in agents if o in shown}

    def _bodies(self, victims: list[str]) -> dict[str, Vec3]:
        bodies = self.engine.bodies
        return {v: bodies[v].pos for v in victims if v in bodies and not bodies[v].cleared}

    def _past_meetings(self) -> list[MeetingRecord]:
        e = self.engine
        out = []
        for m in e.past_meetings:
            ejected_role = None
            if m.ejected is not None and e.rules.confirm_ejects:
                ejected_role = e.players[m.ejected].role
            out.append(
                MeetingRecord(
                    index=m.index,
                    step=m.start_step,
                    trigger=m.trigger,
                    caller=m.caller,
                    victim=m.victim,
                    body_room=m.body_room,
                    ejected=m.ejected,
                    outcome=m.outcome or "no_votes",
                    votes=dict(m.votes),
                    ejected_role=ejected_role,
                )
            )
        return out

    def _own_actions(self, agent: str, events: Sequence[EventBase]) -> list[OwnAction]:
        """What `agent` did in these events, in order (its own memory of its actions)."""
        out: list[OwnAction] = []
        for ev in events:
            base = {"step": ev.step, "tick": ev.tick}
            if isinstance(ev, Trace) and agent in ev.players:
                rooms: list[str] = []
                for x, y, z, _yaw in ev.players[agent]:
                    room = self.geometry.room_at((x, y, z))
                    if not rooms or rooms[-1] != room:
                        rooms.append(room)
                if len(rooms) > 1:
                    out.append(
                        OwnAction(kind="moved", room=rooms[-1], detail=" > ".join(rooms), **base)
                    )
            elif isinstance(ev, TaskStart) and ev.agent == agent:
                out.append(OwnAction(kind="task_started", room=ev.room, station=ev.station, **base))
            elif isinstance(ev, TaskDone) and ev.agent == agent:
                out.append(OwnAction(kind="task_done", room=ev.room, station=ev.station, **base))
            elif isinstance(ev, TaskInterrupted) and ev.agent == agent:
                out.append(
                    OwnAction(kind="task_interrupted", station=ev.station, detail=ev.reason, **base)
                )
            elif isinstance(ev, Kill) and ev.killer == agent:
                out.append(OwnAction(kind="killed", room=ev.room, target=ev.victim, **base))
            elif isinstance(ev, Report) and ev.reporter == agent:
                out.append(OwnAction(kind="reported", room=ev.room, target=ev.victim, **base))
            elif isinstance(ev, Emergency) and ev.caller == agent:
                out.append(OwnAction(kind="pressed_button", **base))
            elif isinstance(ev, Speech) and ev.speaker == agent and ev.text:
                out.append(OwnAction(kind="spoke", detail=ev.text, **base))
            elif isinstance(ev, Vote) and ev.voter == agent:
                out.append(OwnAction(kind="voted", target=ev.target, **base))
            elif isinstance(ev, ProgramRun) and ev.agent == agent:
                detail = ev.status + (f": {ev.reason}" if ev.reason else "")
                out.append(OwnAction(kind="program_ended", detail=detail, **base))
        return out
