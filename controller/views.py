"""State views: what of an observation a model is told, and what an agent may know.

Two layers keep an agent's knowledge honest:

* `Knowledge` is a per-agent filter fed every observation in order. It returns the
  observation the agent's components are allowed to work with (an `Observation` of
  the same shape, so no component can reach around it) and keeps the agent's own
  sightings between steps.
* `StateView` renders that filtered observation as the state text a prompt includes.

The two state modes:

* `ego` is what the agent sees, in one of two views (`ego_view`):
  - `camera`: a player or body is known only while it is inside the camera's
    horizontal field of view (`controller.perception.HORIZONTAL_FOV_DEG`, about 102.4
    degrees), within `ego_range` blocks (capped in practice by the rules'
    `vision_radius`, since it reads only the sight sets, never the far sets) and in
    line of sight. Sightings are remembered from free-roam steps only, so the meeting
    teleport never overwrites where a player was last seen.
  - `reference`: the reference implementation's egocentric state: the players and
    bodies within `REFERENCE_EGO_HALF_ANGLE_DEG` (60) degrees of the heading, in line of
    sight through the ship's walls and under `REFERENCE_EGO_RANGE` (36) blocks, this
    step only: nothing is kept between steps. It reads the observation's far sets
    (`far_players`/`far_bodies`: the living and the bodies in line of sight all around
    within `controller.observation.FAR_SIGHT_RANGE`, 36 blocks, in free roam) and its
    sight sets (the meeting table's), which hold only players in play, so it reaches
    the reference's 36 blocks whatever the rules' `vision_radius`. It never reads the
    server's `roster`, which goes on listing a killed player where it fell.
  Everything else an observation may carry (the 360-degree `nearby_*`, the far sets,
  the server's `roster`) is dropped. Only the reference view reads the far sets; the
  camera view and `privileged` never do, and every filtered observation carries them
  empty, so no component (nor the environment's codecs) can reach around the filter.
* `privileged` adds what the server knows, as the reference's privileged state does:
  the map and its connections, the agent's own task locations, and a roster of every
  other player with the last position known within `privileged_radius` blocks
  ("N steps ago", or "never seen"), plus the 360-degree proximity sets.

Neither view holds hidden roles (an impostor knows its teammates). Public facts (the
dead, meeting chat, earlier meetings' votes and outcomes, the reported body's room)
and the agent's own state (task in progress, own actions) are in both.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from controller.events import Vec3
from controller.observation import (
    ChatEntry,
    MeetingRecord,
    Observation,
    Scoreboard,
    Sighting,
    TaskProgress,
)
from controller.perception import HORIZONTAL_FOV_DEG, Perception, bearing_deg, facing, in_cone
from world.geometry import ShipGeometry

StateMode = Literal["ego", "privileged"]
EgoView = Literal["reference", "camera"]
"""What an `ego` state shows: the reference's view (this step only, +-60 degrees, 36
blocks) or the camera's (its field of view, `ego_range`, sightings kept)."""

REFERENCE_EGO_HALF_ANGLE_DEG = 60.0
"""The reference's egocentric view: entities within this many degrees of the heading."""
REFERENCE_EGO_RANGE = 36.0
"""The reference's egocentric view: entities under this many blocks away."""

EGO_RANGE = 12.0
"""Default ego range (blocks): the rules' default `vision_radius`."""
PRIVILEGED_RADIUS = 96.0
"""Default privileged radius (blocks): the server's entity view in the reference."""


class TaskLocation(BaseModel):
    """One of the agent's own tasks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    station: int
    room: str
    pos: Vec3
    done: bool


class InView(BaseModel):
    """A player or body the agent perceives now, relative to itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pos: Vec3
    distance: float
    side: str
    """`ahead`, `ahead-left`, `left`, ... as seen from the agent's heading."""


class StateView(BaseModel):
    """What a model may be told about the game state (plus the frame, sent apart)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: StateMode
    agent: str
    role: str
    teammates: list[str]
    step: int
    pos: Vec3
    yaw: float
    room: str
    scoreboard: Scoreboard
    chat: list[ChatEntry]
    in_view: dict[str, InView] = {}
    """Players in the field of view now (`ego`) or in sight all around (`privileged`)."""
    bodies_in_view: dict[str, InView] = {}
    """Bodies likewise."""
    task_progress: TaskProgress | None = None
    task_in_progress: int | None = None
    """Station of a task in progress when the observation has no `task_progress`."""
    dead: list[str] = []
    body_rooms: dict[str, str] = {}
    meeting_chat: list[ChatEntry] = []
    past_meetings: list[MeetingRecord] = []
    seen_before: dict[str, Sighting] = {}
    """Ego: where each player was last in the field of view (free roam only)."""
    rooms: dict[str, list[str]] | None = None
    """Privileged: the room connections (data only; `to_text` leaves them out, since the
    prompt's shared prefix states them once for every call)."""
    tasks: list[TaskLocation] | None = None
    last_seen: dict[str, Sighting] | None = None
    """Privileged: the roster's last-known position of every player known so far."""
    roster: list[str] | None = None
    """Privileged: every other player, so those never seen are named too."""
    bodies_seen: dict[str, Sighting] | None = None

    def to_text(self) -> str:
        """The view as the plain text a prompt includes."""
        sb = self.scoreboard
        lines = [
            f"You are {_cap(self.agent)}, {'an' if self.role[0] in 'aeiou' else 'a'} {self.role}"
            + (f" (fellow impostors: {', '.join(self.teammates)})" if self.teammates else "")
            + ".",
            f"Step {self.step}. Phase: {sb.phase}. You are in {self.room} at "
            f"({self.pos[0]:.1f}, {self.pos[2]:.1f}), facing {self.yaw:.0f} degrees.",
            f"Your tasks done: {sum(sb.task_bits)}/{len(sb.task_bits)}."
            + (" Your kill is ready." if sb.kill_ready else "")
            + (" You can call an emergency meeting." if sb.emergency_ready else ""),
        ]
        lines.append(self._task_line())
        label = "In view now" if self.mode == "ego" else "In sight now"
        lines.append(f"{label}: " + (_listing(self.in_view) or "nobody"))
        if self.bodies_in_view:
            lines.append(f"Bodies {label.lower()}: " + _listing(self.bodies_in_view))
        if self.dead:
            lines.append(dead_line(self.dead, self.body_rooms))
        if sb.speaker:
            lines.append(
                f"Meeting: {_cap(sb.speaker)} is speaking; "
                f"{sb.meeting_countdown} ticks of talk left."
            )
        if sb.reported_body:
            where = self.body_rooms.get(sb.reported_body)
            lines.append(
                f"This meeting was called over {_cap(sb.reported_body)}'s body"
                + (f", found in {where}." if where else ".")
            )
        if self.past_meetings:
            lines.append("Earlier meetings:")
            lines += [f"  {meeting_summary(m)}" for m in self.past_meetings]
        if self.seen_before:
            lines.append("Where you last saw each player (in free roam, before any meeting):")
            lines += [
                f"  {_cap(who)}: {s.room} ({s.pos[0]:.1f}, {s.pos[2]:.1f}), step {s.step}"
                for who, s in sorted(self.seen_before.items())
            ]
        # `rooms` is not rendered: the room connections are told once per call, in the
        # side's shared prompt prefix (`harness_aria.prompts.shared_prefix`).
        if self.tasks is not None:
            # Pending ones only: how many are done is on the "Your tasks done" line.
            lines.append("Your tasks:")
            lines += [
                f"  station {t.station} in {t.room} at ({t.pos[0]:.1f}, {t.pos[2]:.1f})"
                for t in self.tasks
                if not t.done
            ] or ["  all done"]
        if self.last_seen is not None:
            lines.append("Players you have seen (roster: last-known position, step):")
            known = self.last_seen
            for who in self.roster or sorted(known):
                s = known.get(who)
                dead = " (dead)" if who in self.dead else ""
                if dead:  # where the dead lie is in "Dead players" and "Bodies"
                    lines.append(f"  {_cap(who)}: dead")
                    continue
                lines.append(
                    f"  {_cap(who)}: {s.room} ({s.pos[0]:.1f}, {s.pos[2]:.1f}), step {s.step}"
                    f" ({_ago(self.step - s.step)}){dead}"
                    if s
                    else f"  {_cap(who)}: never seen{dead}"
                )
            if not (self.roster or known):
                lines.append("  nobody yet")
        if self.bodies_seen is not None:
            lines.append("Bodies you have seen:")
            lines += [
                f"  {_cap(who)}: {s.room} ({s.pos[0]:.1f}, {s.pos[2]:.1f}), step {s.step}"
                for who, s in sorted(self.bodies_seen.items())
            ] or ["  none"]
        if self.meeting_chat:
            lines.append("This meeting's chat so far (all of it):")
            lines += [f"  {_chat_line(c)}" for c in self.meeting_chat]
        elif self.chat:
            lines.append("Chat:")
            lines += [f"  {_chat_line(c)}" for c in self.chat]
        return "\n".join(lines)

    def _task_line(self) -> str:
        tp = self.task_progress
        if tp is not None:
            return (
                f"Task in progress: station {tp.station} in {tp.room}, {tp.ticks_done} of "
                f"{tp.ticks_needed} ticks done (stay at the station to finish it)."
            )
        if self.task_in_progress is not None:
            return (
                f"Task in progress: station {self.task_in_progress}, not finished "
                f"(stay at the station to finish it)."
            )
        return "No task in progress."


def dead_line(dead: list[str], body_rooms: dict[str, str]) -> str:
    """`Dead players: Blue (body in admin), Pink.`"""
    return (
        "Dead players: "
        + ", ".join(
            _cap(d) + (f" (body in {body_rooms[d]})" if d in body_rooms else "") for d in dead
        )
        + "."
    )


def meeting_cause(m: MeetingRecord) -> str:
    """Who called an earlier meeting, and why (`Red reported Blue's body in admin`)."""
    if m.trigger == "report":
        return f"{_cap(m.caller)} reported {_cap(m.victim or '?')}'s body" + (
            f" in {m.body_room}" if m.body_room else ""
        )
    return f"{_cap(m.caller)} called an emergency meeting"


def meeting_result(m: MeetingRecord) -> str:
    """How an earlier meeting ended (`Blue was ejected (impostor)`, `a tie, ...`)."""
    if m.outcome == "ejected" and m.ejected:
        return f"{_cap(m.ejected)} was ejected" + (f" ({m.ejected_role})" if m.ejected_role else "")
    return {"tie": "a tie, nobody ejected", "skipped": "skipped, nobody ejected"}.get(
        m.outcome, "no votes, nobody ejected"
    )


def meeting_summary(m: MeetingRecord) -> str:
    """One line on an earlier meeting: who called it, the outcome, every ballot."""
    why, result = meeting_cause(m), meeting_result(m)
    ballots = ", ".join(
        f"{_cap(v)}->{'abstained' if t is None else _cap(t)}" for v, t in sorted(m.votes.items())
    )
    return f"#{m.index} (step {m.step}): {why}; {result}. Votes: {ballots or 'none'}."


def _ago(steps: int) -> str:
    if steps <= 0:
        return "now"
    return "1 step ago" if steps == 1 else f"{steps} steps ago"


def _cap(name: str) -> str:
    return name.capitalize()


def _chat_line(c: ChatEntry) -> str:
    who = "[Server]" if c.kind == "server" else f"<{_cap(c.speaker or '?')}>"
    return f"{who} {c.text}"


def _listing(items: dict[str, InView]) -> str:
    return ", ".join(
        f"{_cap(who)} ({v.distance:.1f} blocks, {v.side})"
        for who, v in sorted(items.items(), key=lambda kv: kv[1].distance)
    )


def side_of(eye: Vec3, yaw: float, target: Vec3) -> str:
    """Where `target` lies relative to a player's heading (ahead, left, behind, ...)."""
    angle = bearing_deg(eye, yaw, target)
    if angle <= 22.5:
        return "ahead"
    fx, fz = facing(yaw)
    # Minecraft: +x is east, +z south; the left of heading (fx, fz) is (fz, -fx).
    left = (target[0] - eye[0]) * fz - (target[2] - eye[2]) * fx > 0
    hand = "left" if left else "right"
    if angle <= 67.5:
        return f"ahead-{hand}"
    if angle <= 112.5:
        return hand
    if angle <= 157.5:
        return f"behind-{hand}"
    return "behind"


class Knowledge:
    """One agent's filter between its observations and everything it may know.

    Feed it every observation of the agent, in order; `update` returns the filtered
    observation (the only one the agent's components see) and `view` its state view.

    Args:
        mode: `ego` or `privileged`.
        geometry: The map (walls block sight).
        ego_range: Ego, `camera` view: how far (blocks) the camera's view reaches in the
            text.
        privileged_radius: Privileged: how far (blocks) from the agent the server's
            roster reports positions.
        ego_view: Ego: `camera` (default) or `reference` (see the module's docstring).
    """

    def __init__(
        self,
        mode: StateMode,
        geometry: ShipGeometry,
        *,
        ego_range: float = EGO_RANGE,
        privileged_radius: float = PRIVILEGED_RADIUS,
        ego_view: EgoView = "camera",
    ) -> None:
        self.mode = mode
        self.geometry = geometry
        self.perception = Perception(geometry, ego_range, HORIZONTAL_FOV_DEG)
        self.ego_view: EgoView = ego_view
        self.privileged_radius = privileged_radius
        self.seen: dict[str, Sighting] = {}
        self.bodies: dict[str, Sighting] = {}
        self.body_rooms: dict[str, str] = {}
        self.meeting_lines: list[ChatEntry] = []
        self.meeting_index: int | None = None

    def _sighting(self, obs: Observation, pos: Vec3, room: str | None = None) -> Sighting:
        return Sighting(
            step=obs.step, tick=obs.tick, pos=pos, room=room or self.geometry.room_at(pos)
        )

    def update(self, obs: Observation) -> Observation:
        """The observation as this agent may know it; remembers its sightings."""
        if self.mode == "ego" and self.ego_view == "reference":
            return self._reference_ego(obs)
        if self.mode == "ego":
            players = {**obs.nearby_players, **obs.visible_players}
            bodies = {**obs.nearby_bodies, **obs.visible_bodies}
            eye, yaw = obs.pos, obs.yaw
            visible = {a: p for a, p in players.items() if self.perception.sees(eye, yaw, p)}
            visible_bodies = {v: p for v, p in bodies.items() if self.perception.sees(eye, yaw, p)}
            nearby: dict[str, Vec3] = {}
            nearby_bodies: dict[str, Vec3] = {}
            known = visible
        else:
            # Privileged: what is in sight all around counts as seen (the reference's
            # server view has no field of view), so modules reading `visible_*` get it.
            nearby = {**obs.nearby_players, **obs.visible_players}
            nearby_bodies = {**obs.nearby_bodies, **obs.visible_bodies}
            visible, visible_bodies = dict(nearby), dict(nearby_bodies)
            known = nearby
        visible.pop(obs.agent, None)
        nearby.pop(obs.agent, None)
        if obs.phase == "free_roam":
            # Meetings seat everyone in the cafeteria: sightings there say nothing about
            # where anyone was, so they never replace a free-roam sighting.
            for a, p in known.items():
                if a != obs.agent:
                    self.seen[a] = self._sighting(obs, p)
            if self.mode == "privileged":
                for a, s in obs.roster.items():
                    if a != obs.agent and math.dist(obs.pos, s.pos) <= self.privileged_radius:
                        self.seen[a] = s
                for a, s in obs.last_seen.items():
                    if a not in self.seen or self.seen[a].tick < s.tick:
                        self.seen[a] = s
            for v, p in (visible_bodies if self.mode == "ego" else nearby_bodies).items():
                self.bodies[v] = self._sighting(obs, p)
                self.body_rooms[v] = self.bodies[v].room
        if obs.meeting is not None and obs.meeting.victim and obs.meeting.body_room:
            self.body_rooms[obs.meeting.victim] = obs.meeting.body_room
        for m in obs.past_meetings:
            if m.victim and m.body_room:
                self.body_rooms[m.victim] = m.body_room
        if self.mode == "privileged":
            for v, room in obs.dead_bodies_rooms.items():
                self.body_rooms.setdefault(v, room)
        return obs.model_copy(
            update={
                "visible_players": visible,
                "visible_bodies": visible_bodies,
                "nearby_players": nearby,
                "nearby_bodies": nearby_bodies,
                "roster": {a: self.seen[a] for a in self.seen} if self.mode == "privileged" else {},
                "last_seen": dict(self.seen),
                "bodies_seen": dict(self.bodies),
                "dead_bodies_rooms": dict(self.body_rooms),
                "meeting_chat": self._meeting_chat(obs),
                "far_players": {},
                "far_bodies": {},
            }
        )

    def _in_reference_view(self, obs: Observation, target: Vec3) -> bool:
        """Within 60 degrees of the heading, in line of sight and under 36 blocks."""
        return in_cone(
            obs.pos, obs.yaw, target, 2 * REFERENCE_EGO_HALF_ANGLE_DEG
        ) and self.geometry.can_see(obs.pos, target, REFERENCE_EGO_RANGE - 1e-9)

    def _reference_ego(self, obs: Observation) -> Observation:
        """The reference's egocentric view of an observation: what is in view now only.

        The players and bodies the observation has in line of sight all around (its far
        sets, out to 36 blocks, and its sight sets), within 60 degrees of the heading and
        under 36 blocks. Only where bodies were found is kept between steps (with the
        dead, the public facts every view shows); no position is.
        """
        players = {
            a: p
            for a, p in {
                **obs.far_players,
                **obs.nearby_players,
                **obs.visible_players,
            }.items()
            if a != obs.agent and self._in_reference_view(obs, p)
        }
        bodies = {
            v: p
            for v, p in {**obs.far_bodies, **obs.nearby_bodies, **obs.visible_bodies}.items()
            if self._in_reference_view(obs, p)
        }
        free = obs.phase == "free_roam"
        if free:
            for v, p in bodies.items():
                self.body_rooms[v] = self.geometry.room_at(p)
        if obs.meeting is not None and obs.meeting.victim and obs.meeting.body_room:
            self.body_rooms[obs.meeting.victim] = obs.meeting.body_room
        for m in obs.past_meetings:
            if m.victim and m.body_room:
                self.body_rooms[m.victim] = m.body_room
        return obs.model_copy(
            update={
                "visible_players": players,
                "visible_bodies": bodies,
                "nearby_players": {},
                "nearby_bodies": {},
                "roster": {},
                # This step's sightings only (free roam: the meeting table says nothing
                # of where anyone was), for the components that read a position there.
                "last_seen": {a: self._sighting(obs, p) for a, p in players.items()}
                if free
                else {},
                "bodies_seen": {v: self._sighting(obs, p) for v, p in bodies.items()}
                if free
                else {},
                "dead_bodies_rooms": dict(self.body_rooms),
                "meeting_chat": self._meeting_chat(obs),
                "far_players": {},
                "far_bodies": {},
            }
        )

    def _meeting_chat(self, obs: Observation) -> list[ChatEntry]:
        """The whole current meeting's chat; gathered here if the observation lacks it."""
        if obs.phase == "free_roam" or obs.meeting is None:
            self.meeting_lines, self.meeting_index = [], None
            return []
        if obs.meeting_chat:
            self.meeting_lines = list(obs.meeting_chat)
        else:
            if self.meeting_index != obs.meeting.index:
                self.meeting_lines = []
            have = {c.index for c in self.meeting_lines}
            self.meeting_lines += [c for c in obs.chat if c.index not in have]
        self.meeting_index = obs.meeting.index
        return list(self.meeting_lines)

    def view(self, known: Observation) -> StateView:
        """The state view of an observation already filtered by `update`."""
        return build_view(known, self.mode, self.geometry, remembered=self.ego_view != "reference")


def build_view(
    obs: Observation, mode: StateMode, geometry: ShipGeometry, *, remembered: bool = True
) -> StateView:
    """The `ego` or `privileged` state view of an observation.

    It renders what it is given: pass `Knowledge.update`'s result (or use
    `Knowledge.view`), never a raw observation, or the ego filter is bypassed.
    `remembered` False (the reference's ego view) leaves out where each player was last
    seen: that view keeps nothing between steps.
    """

    def where(items: dict[str, Vec3]) -> dict[str, InView]:
        return {
            a: InView(
                pos=p, distance=round(math.dist(obs.pos, p), 1), side=side_of(obs.pos, obs.yaw, p)
            )
            for a, p in items.items()
        }

    base = StateView(
        mode=mode,
        agent=obs.agent,
        role=obs.role,
        teammates=list(obs.teammates),
        step=obs.step,
        pos=obs.pos,
        yaw=obs.yaw,
        room=obs.room,
        scoreboard=obs.scoreboard,
        chat=list(obs.chat),
        in_view=where(obs.visible_players if mode == "ego" else obs.nearby_players),
        bodies_in_view=where(obs.visible_bodies if mode == "ego" else obs.nearby_bodies),
        task_progress=obs.task_progress,
        task_in_progress=obs.scoreboard.task_in_progress,
        dead=list(obs.known_dead),
        body_rooms=dict(obs.dead_bodies_rooms),
        meeting_chat=list(obs.meeting_chat),
        past_meetings=list(obs.past_meetings),
        seen_before=dict(obs.last_seen) if mode == "ego" and remembered else {},
    )
    if mode == "ego":
        return base
    done = set(obs.tasks_done)
    return base.model_copy(
        update={
            "rooms": geometry.adjacency(),
            "tasks": [
                TaskLocation(
                    station=s,
                    room=geometry.station_room(s),
                    pos=geometry.station_pos(s),
                    done=s in done,
                )
                for s in obs.tasks
            ],
            "last_seen": dict(obs.roster or obs.last_seen),
            "roster": [p for p in obs.players if p != obs.agent],
            "bodies_seen": dict(obs.bodies_seen),
        }
    )
