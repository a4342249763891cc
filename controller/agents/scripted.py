"""Scripted control agents: fixed, seeded programs that measure the harness's own noise.

Crewmates keep their own memory of what they saw in free roam (field of view only:
`Observation.visible_players` and `visible_bodies`, with the step, tick and room of
each sighting); the meeting teleport never touches it. From it they draw evidence:

* `near_body`: a player seen within `NEAR_BODY_BLOCKS` of a body the first time the
  crewmate saw that body;
* `with_victim`: a player seen within `WITH_VICTIM_BLOCKS` of the victim the last time
  the crewmate saw the victim alive, when that was its previous look (the kill lies in
  the one step between);
* `near_scene`: a player seen within `NEAR_BODY_BLOCKS` of where the reported body
  lies, after the crewmate last saw the victim alive.

Crewmates do their tasks by shortest route, holding each station facing into its room,
report bodies they see, press the emergency button when they hold evidence against a
living player but no body is in sight (once per piece of evidence), say in meetings
only what they saw or did (the `SPEECH_TEMPLATES`), and vote for their best suspect;
with no evidence of their own they vote for the player named in another speaker's
eyewitness claim (`saw_near_body`, `saw_with_victim`, `saw_near_scene`) and otherwise
skip.

Impostors see what crewmates see (field of view, their own memory of it) and:

* strike the most isolated crewmate in view with a `sight`-guarded `kill` (the strike
  is withheld at its own tick if any other living crewmate is in the killer's view),
  following a walking one for `FOLLOW_TICKS` first; with nobody in view they go back for
  a crewmate seen alone at one of their last looks, else patrol a room with stations;
* while the kill cooldown runs, keep a crewmate in view from `SHADOW_BLOCKS` behind, or
  fake a task facing into a room where they saw one;
* after a kill, fake a task at a station out of sight of the body, or (with chance
  `SELF_REPORT_P`, drawn from the seat's stream) stay by the body and report it;
* walk away from any body in view;
* in meetings say where they really were at their last look, unless that is the
  body's room: then one cover room drawn for the whole game (`IMPOSTOR_TEMPLATES`);
  pile onto the leading accusation of a crewmate, and vote for it or skip.

Everything is deterministic given the game seed.
"""

from __future__ import annotations

import math
import random
import re
import string
from dataclasses import dataclass
from typing import Any, Literal

from controller.agents.base import AgentDecision
from controller.observation import MeetingView, Observation, Sighting
from controller.protocol import Vec3
from world.geometry import ShipGeometry, yaw_towards

SPEECH_TEMPLATES: dict[str, str] = {
    "found_body": "I found {victim}'s body in {room}.",
    "pressed_button": "I pressed the emergency button.",
    "saw_near_body": "I saw {suspect} next to {victim}'s body in {room} at tick {tick}.",
    "saw_with_victim": "I saw {suspect} with {victim} in {room} at tick {tick}.",
    "saw_near_scene": "I saw {suspect} near where {victim}'s body was, in {room} at tick {tick}.",
    "heard_claim": "I believe {accuser}.",
    "accuse": "I suspect {suspect}.",
    "no_evidence": "I have no evidence against anyone.",
    "was_in": "I was in {room} at tick {tick}.",
    "tasks_done": "I have done {done} of my {total} tasks.",
}
"""Every sentence a scripted crewmate says in a meeting; a speech is some of them
joined by single spaces, in this order of keys. All are true of the log:

* `found_body`: the speaker reported `victim`'s body, lying in `room` (the meeting's
  `report` event).
* `pressed_button`: the speaker called this meeting with the button (`emergency`).
* `saw_near_body`: at `tick` the speaker saw `suspect` (field of view) standing within
  `NEAR_BODY_BLOCKS` of `victim`'s body, in `room` (the suspect's room), the first
  time the speaker saw that body.
* `saw_with_victim`: at `tick` the speaker saw both `suspect` and the living `victim`
  within `WITH_VICTIM_BLOCKS` of each other, in `room` (the suspect's room); the last
  sighting of the victim alive.
* `saw_near_scene`: at `tick` the speaker saw `suspect` within `NEAR_BODY_BLOCKS` of
  the spot where `victim`'s body was reported, in `room` (the suspect's room), after
  the speaker last saw the victim alive.
* `heard_claim`: the speaker has no evidence of its own and relies on `accuser`'s
  eyewitness claim made earlier in this meeting.
* `accuse`: the speaker's vote intention (an opinion, not a claim of fact).
* `no_evidence`: the speaker holds no evidence.
* `was_in`: the speaker stood in `room` at `tick` (its last free-roam observation).
* `tasks_done`: how many of its own tasks the speaker has completed so far.

Names are capitalised player ids (`Red`); rooms are the map's room ids; ticks are
game ticks of the pose the sighting comes from (a `positions`/`trace` sample).
"""

IMPOSTOR_TEMPLATES: dict[str, str] = {
    "alibi": "I was doing tasks in {room}.",
    "pile_on": "I suspect {suspect} too.",
}
"""What a scripted impostor says: a random room as an alibi (`alibi`, usually a lie),
then `pile_on` naming the most accused non-teammate, when anyone was accused."""

EvidenceKind = Literal["near_body", "with_victim", "near_scene"]
EVIDENCE_TEMPLATE: dict[EvidenceKind, str] = {
    "near_body": "saw_near_body",
    "with_victim": "saw_with_victim",
    "near_scene": "saw_near_scene",
}
"""Which speech template states each kind of evidence."""
EVIDENCE_RANK: dict[EvidenceKind, int] = {"near_body": 0, "with_victim": 1, "near_scene": 2}
"""Strongest first: seen at the body beats seen with the victim beats seen near the spot."""

FRESH_TICKS = 600
"""Longest window (ticks) in which a kill can lie for a sighting to count as evidence."""
NEAR_BODY_BLOCKS = 6.0
"""How close to a body (or its spot) a player must be seen to be suspected."""
WITH_VICTIM_BLOCKS = 4.0
"""How close to the victim a player must be seen to count as `with_victim`."""
NEAR_VICTIM_BLOCKS = 12.0
"""Impostors: a body this close is one to walk away from."""
STRIKE_REACH = 8.0
"""Impostors: a crewmate in view this close that stood still since their previous look is
struck at once (the `kill` approach lets a target go once it is 10 blocks,
`rules.kill_defer_distance`, from where the approach began); any other is followed
first (`FOLLOW_TICKS`)."""
ISOLATED_BLOCKS = 8.0
"""Impostors: a crewmate with no other crewmate seen this close counts as alone (to be
hunted down from memory)."""
SHADOW_BLOCKS = 7.0
"""Impostors: how far behind they keep a crewmate in view while the kill cooldown runs
(beyond `NEAR_BODY_BLOCKS` and `WITH_VICTIM_BLOCKS`, so being seen then is no evidence)."""
SHADOW_TICKS = 400
"""Impostors: how long one such shadowing lasts (a step's worth)."""
GETAWAY_BLOCKS = 14.0
"""Impostors: after a kill they fake a task at a station at least this far (by path)
from the victim and in another room: out of the sight range of 12 blocks."""
FOLLOW_TICKS = 160
"""Impostors: how long they follow a crewmate seen walking (or out of reach) before the
strike, 4 blocks behind, so that it has stopped at a station by then."""
FOLLOWED_BLOCKS = 40.0
"""Impostors: how far (by path) a crewmate may walk while they follow it for
`FOLLOW_TICKS`, so how far from where they saw it such a strike may land; the getaway
station is chosen beyond that."""
PATROL_MEMORY = 3
"""Impostors: a patrol skips the rooms of their last this many views (seen empty)."""
HUNT_VIEWS = 2
"""Impostors: how many of their latest views they remember crewmates from, to hunt."""
HUNT_BLOCKS = 40.0
"""Impostors: the farthest (by path) they walk back to a crewmate seen alone."""
SELF_REPORT_P = 0.2
"""Impostors: the chance, drawn per strike from the seat's stream, that they stay by the
body and report it at their next decision instead of walking away."""
COVER_ROOMS = 2
"""Impostors: how many cover rooms they draw for the game (a second one for when the
body lies in the first)."""

ACCUSE = re.compile(r"\bI (?:suspect|vote for) (\w+)")
"""Any accusation in chat (crewmate `accuse` or impostor `pile_on`, or model speech)."""


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex matching one filled-in template, with a named group per placeholder.

    `{tick}`, `{done}` and `{total}` match digits; the other placeholders match one
    word (names and room ids have no spaces).
    """
    out = ""
    for literal, field, _, _ in string.Formatter().parse(template):
        out += re.escape(literal)
        if field is not None:
            out += (
                rf"(?P<{field}>\d+)" if field in ("tick", "done", "total") else rf"(?P<{field}>\w+)"
            )
    return re.compile(out)


EYEWITNESS = {name: template_pattern(SPEECH_TEMPLATES[name]) for name in EVIDENCE_TEMPLATE.values()}
"""Patterns of the eyewitness claims other crewmates may follow."""


@dataclass(frozen=True)
class Evidence:
    """One thing a crewmate saw that points at a player."""

    kind: EvidenceKind
    suspect: str
    victim: str
    room: str
    """The suspect's room when seen."""
    tick: int
    distance: float
    """Suspect to body (or to the victim, for `with_victim`), in blocks."""
    window: int
    """Ticks between the last time this crewmate saw the victim alive (or the last
    meeting) and the time it saw the body (or heard of the death): the kill lies in
    that window, so the shorter it is the more the sighting says."""

    def rank(self) -> tuple[int, int, float, int, str]:
        """Sort key: strongest kind, then the shortest window, closest, earliest."""
        return (EVIDENCE_RANK[self.kind], self.window, self.distance, self.tick, self.suspect)

    def claim(self) -> str:
        """The true sentence stating this evidence."""
        return SPEECH_TEMPLATES[EVIDENCE_TEMPLATE[self.kind]].format(
            suspect=self.suspect.capitalize(),
            victim=self.victim.capitalize(),
            room=self.room,
            tick=self.tick,
        )


@dataclass(frozen=True)
class _View:
    """One free-roam observation as the agent remembers it."""

    step: int
    tick: int
    pos: Vec3
    room: str
    players: dict[str, Vec3]
    bodies: dict[str, Vec3]


class ScriptedAgent:
    """A deterministic rule-based player.

    Args:
        agent_id: The seat this agent plays.
        geometry: The map's geometry (routes and rooms).
        seed: Game seed; combined with the seat so every seat has its own stream.
    """

    def __init__(self, agent_id: str, geometry: ShipGeometry, seed: int) -> None:
        self.agent_id = agent_id
        self.geometry = geometry
        self.rng = random.Random(f"{seed}:{agent_id}")
        self.views: list[_View] = []
        self.last_seen: dict[str, Sighting] = {}
        self.bodies_seen: dict[str, Sighting] = {}
        self.evidence: list[Evidence] = []
        self.button_for: set[Evidence] = set()
        self.spoken: set[int] = set()
        self.since_meeting = 0
        """Tick of the last meeting this agent sat in (sightings before it are stale)."""
        self.meeting_index: int | None = None
        self.meeting_lines: dict[int, tuple[str, str]] = {}
        self.accusations: dict[str, int] = {}
        self.report_victim: str | None = None
        """Impostors: the crewmate just killed whose body they stayed by, to report it."""
        self.cover_rooms: list[str] = []
        """Impostors: the rooms they claim when the truth would place them at the body."""
        self.alibis: list[str] = []
        """Impostors: the room claimed at each meeting they spoke in, in order."""
        self.killed: set[str] = set()
        """Impostors: the crewmates they killed themselves."""

    def describe(self) -> dict[str, Any]:
        """The agent's kind for the game record."""
        return {"kind": "scripted"}

    async def decide(self, obs: Observation) -> AgentDecision:
        """Choose this step's program, utterance or vote."""
        self.killed |= {a.target for a in obs.own_actions if a.kind == "killed" and a.target}
        if obs.phase == "free_roam":
            self._remember(obs)
        else:
            self._listen(obs)
        if obs.phase == "voting":
            return self._vote(obs)
        if obs.phase == "meeting":
            return self._talk(obs)
        self.accusations.clear()
        if obs.role == "impostor":
            return self._impostor(obs)
        return self._crewmate(obs)

    # ------------------------------------------------------------------ memory
    def _remember(self, obs: Observation) -> None:
        """Keep this free-roam observation's field-of-view sightings and draw evidence."""
        view = _View(
            step=obs.step,
            tick=obs.tick,
            pos=obs.pos,
            room=obs.room,
            players={a: p for a, p in obs.visible_players.items() if a != obs.agent},
            bodies=dict(obs.visible_bodies),
        )
        for other, pos in sorted(view.players.items()):
            self.last_seen[other] = self._sighting(obs, pos)
        for victim, pos in sorted(view.bodies.items()):
            if victim in self.bodies_seen:
                continue
            self.bodies_seen[victim] = self._sighting(obs, pos)
            alive = self._last_alive(victim)
            window = obs.tick - (alive.tick if alive is not None else self.since_meeting)
            if window > FRESH_TICKS:
                continue  # the body is too old to say who was there at the kill
            for other, where in sorted(view.players.items()):
                d = self._dist(where, pos)
                if d <= NEAR_BODY_BLOCKS:
                    room = self._room(where)
                    self._add(Evidence("near_body", other, victim, room, obs.tick, d, window))
            self._with_victim(victim, alive, window)
        self.views.append(view)

    def _with_victim(self, victim: str, alive: _View | None, window: int) -> None:
        """Who stood close to the victim the last time I saw it alive."""
        if alive is None or not self.views or alive is not self.views[-1]:
            return  # only when I saw the victim alive at my previous look: the kill is fresh
        vpos = alive.players[victim]
        for other, where in sorted(alive.players.items()):
            d = self._dist(where, vpos)
            if other != victim and d <= WITH_VICTIM_BLOCKS:
                room = self._room(where)
                self._add(Evidence("with_victim", other, victim, room, alive.tick, d, window))

    def _sighting(self, obs: Observation, pos: Vec3) -> Sighting:
        return Sighting(step=obs.step, tick=obs.tick, pos=pos, room=self._room(pos))

    def _last_alive(self, victim: str) -> _View | None:
        return next((v for v in reversed(self.views) if victim in v.players), None)

    def _add(self, ev: Evidence) -> None:
        if ev.suspect != self.agent_id and ev not in self.evidence:
            self.evidence.append(ev)

    def _scene_evidence(self, obs: Observation) -> None:
        """At a report meeting: who I saw near the body's spot since the victim was alive."""
        m = obs.meeting
        if m is None or m.victim is None or m.body_pos is None or m.victim in self.bodies_seen:
            return  # a body I saw myself gave its evidence when I saw it
        alive = self._last_alive(m.victim)
        since = alive.tick if alive is not None else self.since_meeting
        window = obs.tick - since
        if window > FRESH_TICKS:
            return
        self._with_victim(m.victim, alive, window)
        for view in self.views:
            if view.tick <= since:
                continue
            for other, where in sorted(view.players.items()):
                d = self._dist(where, m.body_pos)
                if other != m.victim and d <= NEAR_BODY_BLOCKS:
                    room = self._room(where)
                    self._add(Evidence("near_scene", other, m.victim, room, view.tick, d, window))

    def _listen(self, obs: Observation) -> None:
        """Collect the current meeting's speech (for accusations and eyewitness claims)."""
        m = obs.meeting
        if m is not None and m.index != self.meeting_index:
            self.meeting_index = m.index
            self.meeting_lines = {}
            if obs.role == "crewmate":
                self._scene_evidence(obs)
            self.since_meeting = obs.tick
        for entry in [*obs.meeting_chat, *obs.chat]:
            if entry.kind != "speech" or entry.speaker is None:
                continue
            if entry.index in self.meeting_lines:
                continue
            self.meeting_lines[entry.index] = (entry.speaker, entry.text)
            for name in ACCUSE.findall(entry.text):
                target = name.lower()
                self.accusations[target] = self.accusations.get(target, 0) + 1

    def _open_evidence(self, obs: Observation) -> list[Evidence]:
        """Evidence against players still in the game, strongest first."""
        gone = set(obs.known_dead) | {obs.agent}
        living = set(obs.meeting.order) if obs.meeting else set(obs.players)
        return sorted(
            (e for e in self.evidence if e.suspect not in gone and e.suspect in living),
            key=Evidence.rank,
        )

    def _best_evidence(self, obs: Observation) -> Evidence | None:
        """This meeting's victim first, then any other open evidence."""
        open_ = self._open_evidence(obs)
        victim = obs.meeting.victim if obs.meeting else None
        about = [e for e in open_ if e.victim == victim]
        ranked = about or open_
        return ranked[0] if ranked else None

    def _heard(self, obs: Observation) -> tuple[str, str] | None:
        """(accuser, suspect) when this meeting's eyewitness claims make one clear case.

        A case is clear when every eyewitness claim names the same living player, that
        player made no eyewitness claim of its own (word against word), and no claim
        names this agent (which knows itself innocent, so knows the claims unreliable).
        """
        m = obs.meeting
        living = set(m.order) if m else set()
        named: set[str] = set()
        makers: set[str] = set()
        first: tuple[str, str] | None = None
        for _, (speaker, text) in sorted(self.meeting_lines.items()):
            for pattern in EYEWITNESS.values():
                for match in pattern.finditer(text):
                    suspect = match.group("suspect").lower()
                    makers.add(speaker)
                    named.add(suspect)
                    if first is None and speaker != obs.agent:
                        first = (speaker, suspect)
        if first is None or len(named) != 1 or obs.agent in named:
            return None
        suspect = first[1]
        if suspect in makers or suspect not in living:
            return None
        return first

    # ------------------------------------------------------------------ free roam
    def _crewmate(self, obs: Observation) -> AgentDecision:
        if obs.visible_bodies:
            victim = min(
                obs.visible_bodies, key=lambda v: self._dist(obs.pos, obs.visible_bodies[v])
            )
            return AgentDecision(
                program=[{"op": "report", "body": victim}],
                module="REPORT",
                reasoning=f"{victim}'s body is in sight",
            )
        unused = [e for e in self._open_evidence(obs) if e not in self.button_for]
        if unused and obs.emergency_ready:
            self.button_for.add(unused[0])
            return AgentDecision(
                program=[{"op": "press_button"}],
                module="BUTTON",
                reasoning=f"evidence against {unused[0].suspect} and no body in sight",
            )
        pending = [s for s in obs.tasks if s not in obs.tasks_done]
        if pending:
            station = min(
                pending, key=lambda s: (self._route(obs.pos, self.geometry.station_pos(s)), s)
            )
            return AgentDecision(
                program=self._watched_task(station),
                module="MISSION",
                reasoning=f"nearest pending task {station}",
            )
        room = self.rng.choice(self.geometry.rooms)
        return AgentDecision(
            program=[{"op": "go_to", "room": room}], module="MOVE", reasoning="tasks done; wander"
        )

    def _impostor(self, obs: Observation) -> AgentDecision:
        """Report an own kill (sometimes), leave bodies, strike a lone crewmate, hunt, or
        fake a task while the cooldown runs."""
        crew = self._crew_in_view(obs)
        victim = self.report_victim
        self.report_victim = None
        if victim is not None and victim in obs.visible_bodies:
            return AgentDecision(
                program=[{"op": "report", "body": victim}],
                module="REPORT",
                reasoning=f"{victim}'s body is in sight",
                narration=f"reporting my own kill of {victim} to look like a finder",
            )
        near = [
            p for p in obs.visible_bodies.values() if self._dist(obs.pos, p) < NEAR_VICTIM_BLOCKS
        ]
        if near:
            body = min(near, key=lambda p: self._dist(obs.pos, p))
            station = self._getaway(body)
            return AgentDecision(
                program=self._watched_task(station),
                module="MOVE",
                reasoning="walk away from the body",
                narration=f"leaving the body for station {station} so no one ties me to it",
            )
        if not obs.kill_ready:
            if crew:
                # the most isolated, one a fellow impostor in view is not already near
                mates = [p for a, p in obs.visible_players.items() if a in obs.teammates]

                def free(a: str) -> bool:
                    return all(self._dist(crew[a], m) > ISOLATED_BLOCKS for m in mates)

                target = max(crew, key=lambda a: (free(a), self._isolation(a, crew), a))
                return AgentDecision(
                    program=[
                        {
                            "op": "follow",
                            "agent": target,
                            "distance": SHADOW_BLOCKS,
                            "ticks": SHADOW_TICKS,
                        }
                    ],
                    module="KILL",
                    reasoning="kill cooldown running; keep a crewmate in sight",
                    narration=f"trailing {target} at a distance until I can kill again",
                    deferral="cooldown",
                )
            return self._fake_task(obs)
        if crew:
            # the most isolated one; the strike's guard withholds it if anyone else is in
            # view at its tick
            target = max(crew, key=lambda a: (self._isolation(a, crew), a))
            return self._strike(obs, target, crew[target])
        known = self._hunt_target(obs)
        if known is not None:
            target, pos = known
            return self._strike(obs, target, pos, go_first=True)
        # rooms with more stations draw more crewmates; skip the rooms just seen empty
        empty = {v.room for v in self.views[-PATROL_MEMORY:]} | {obs.room}
        stations = self.geometry.station_ids()
        station = self.rng.choice(
            [s for s in stations if self.geometry.station_room(s) not in empty] or stations
        )
        room = self.geometry.station_room(station)
        return AgentDecision(
            program=self._watched_task(station),
            module="KILL",
            reasoning="no crewmate known: patrol",
            narration=f"heading to {room}, faking a task there, to find someone alone",
            deferral="no_target",
        )

    def _crew_in_view(self, obs: Observation) -> dict[str, Vec3]:
        """Crewmates in the field of view now (fellow impostors aside)."""
        return {
            a: p
            for a, p in obs.visible_players.items()
            if a != obs.agent and a not in obs.teammates
        }

    def _isolation(self, agent: str, crew: dict[str, Vec3]) -> float:
        """Blocks from `agent` to the nearest other crewmate in the same view (inf if none)."""
        others = [p for b, p in crew.items() if b != agent]
        return min((self._dist(crew[agent], p) for p in others), default=math.inf)

    def _strike(
        self, obs: Observation, target: str, pos: Vec3, *, go_first: bool = False
    ) -> AgentDecision:
        """A guarded strike on `target` (seen at `pos`), then walk away or stay to report."""
        program: list[dict[str, Any]] = []
        roam = 0.0  # how far from `pos` the strike may land
        if go_first:
            program.append({"op": "go_to", "pos": list(pos)})
        elif self._dist(obs.pos, pos) > STRIKE_REACH or not self._still(target, pos):
            program.append(
                {"op": "follow", "agent": target, "distance": 4.0, "ticks": FOLLOW_TICKS}
            )
            roam = FOLLOWED_BLOCKS
        program.append({"op": "kill", "target": target, "guard": "sight"})
        stay = self.rng.random() < SELF_REPORT_P
        if stay:
            self.report_victim = target
            program.append({"op": "wait", "ticks": 20})
            after = "stay by the body to report it"
        else:
            station = self._getaway(pos, roam)
            program += self._watched_task(station)
            after = f"walk away to fake a task at station {station}"
        return AgentDecision(
            program=program,
            module="KILL",
            reasoning=f"{target} is alone",
            narration=f"killing {target} while nobody else can see, then {after}",
        )

    def _still(self, agent: str, pos: Vec3) -> bool:
        """Whether `agent` stood at `pos` in my previous view too (busy at a task)."""
        if len(self.views) < 2:
            return False
        before = self.views[-2].players.get(agent)
        return before is not None and self._dist(before, pos) < 0.5

    def _recent_crew(self, obs: Observation) -> dict[str, tuple[Vec3, float]]:
        """Living crewmates in my last `HUNT_VIEWS` views: last position and isolation.

        One seen with a fellow impostor near it is left to that impostor (two hunting
        the same crewmate waste a look, and one may walk up to a body it cannot know of).
        """
        gone = set(obs.known_dead) | set(obs.teammates) | set(self.bodies_seen) | self.killed
        out: dict[str, tuple[Vec3, float]] = {}
        for view in self.views[-HUNT_VIEWS:]:
            crew = {a: p for a, p in view.players.items() if a not in gone}
            mates = [p for a, p in view.players.items() if a in obs.teammates]
            for a, pos in crew.items():
                if any(self._dist(pos, m) <= ISOLATED_BLOCKS for m in mates):
                    out.pop(a, None)
                else:
                    out[a] = (pos, self._isolation(a, crew))
        return out

    def _hunt_target(self, obs: Observation) -> tuple[str, Vec3] | None:
        """The nearest crewmate seen alone in my last views, to go back for."""
        known = [
            (self._route(obs.pos, pos), a, pos)
            for a, (pos, iso) in self._recent_crew(obs).items()
            if iso > ISOLATED_BLOCKS
        ]
        known = [k for k in known if k[0] <= HUNT_BLOCKS]
        if not known:
            return None
        _, target, pos = min(known)
        return target, pos

    def _watched_task(self, station: int) -> list[dict[str, Any]]:
        """Hold `station` facing into its room (watching it), not the wall."""
        pos = self.geometry.station_pos(station)
        yaw = yaw_towards(pos, self.geometry.room_center(self.geometry.station_room(station)))
        return [
            {"op": "go_to", "station": station},
            {"op": "look", "yaw": round(yaw, 1)},
            {"op": "use_station", "station": station},
        ]

    def _getaway(self, pos: Vec3, roam: float = 0.0) -> int:
        """A station out of sight of a body at `pos` (or anywhere within `roam` blocks
        of it by path), the nearest to `pos` among those; else the farthest station."""
        stations = self.geometry.station_ids()
        route = {s: self._route(pos, self.geometry.station_pos(s)) for s in stations}
        far = [
            s
            for s in stations
            if route[s] >= GETAWAY_BLOCKS + roam
            and self.geometry.station_room(s) != self._room(pos)
        ]
        if not far:
            return max(stations, key=lambda s: (route[s], s))
        return min(far, key=lambda s: (route[s], s))

    def _fake_task(self, obs: Observation) -> AgentDecision:
        """While the cooldown runs: fake a task in the room of a crewmate seen lately (at
        another station than its own), else at a random station of another room."""
        stations = self.geometry.station_ids()
        recent = self._recent_crew(obs)
        pool: list[int] = []
        if recent:
            near = min(recent, key=lambda a: (self._route(obs.pos, recent[a][0]), a))
            pos = recent[near][0]
            pool = [
                s
                for s in stations
                if self.geometry.station_room(s) == self._room(pos)
                and self._dist(self.geometry.station_pos(s), pos) > WITH_VICTIM_BLOCKS
            ]
        if not pool:
            pool = [s for s in stations if self.geometry.station_room(s) != obs.room]
        station = self.rng.choice(pool)
        return AgentDecision(
            program=self._watched_task(station),
            module="MISSION",
            reasoning="kill cooldown running; fake a task",
            narration=f"faking a task at station {station} to look busy",
        )

    # ------------------------------------------------------------------ meetings
    def _talk(self, obs: Observation) -> AgentDecision:
        m = obs.meeting
        if m is None or m.index in self.spoken:
            return AgentDecision(program=[], module="MEETING", reasoning="nothing more to say")
        self.spoken.add(m.index)
        if obs.role == "impostor":
            return self._impostor_speech(obs, m)
        return AgentDecision(
            program=[{"op": "say", "text": self._crew_speech(obs)}], module="MEETING"
        )

    def _impostor_speech(self, obs: Observation, m: MeetingView) -> AgentDecision:
        """The report it made (true), else its alibi; then pile onto the leading accusation."""
        parts: list[str] = []
        if m.caller == obs.agent and m.trigger == "report" and m.victim and m.body_room:
            room = m.body_room
            parts.append(
                SPEECH_TEMPLATES["found_body"].format(victim=m.victim.capitalize(), room=room)
            )
            narration = f"reporting {m.victim}'s body as if I had just found it"
        else:
            room = self._alibi(m)
            self.alibis.append(room)
            parts.append(IMPOSTOR_TEMPLATES["alibi"].format(room=room))
            truth = self.views[-1].room if self.views else None
            narration = (
                f"saying I was in {room}, where I really was"
                if room == truth
                else f"claiming my cover room {room}: I was really in {truth}"
            )
        leader = self._leading_accusation(obs)
        if leader:
            parts.append(IMPOSTOR_TEMPLATES["pile_on"].format(suspect=leader.capitalize()))
        return AgentDecision(
            program=[{"op": "say", "text": " ".join(parts)}], module="MEETING", narration=narration
        )

    def _alibi(self, m: MeetingView) -> str:
        """Where I was at my last free-roam look, unless that is where the body lies; then
        the game's cover room (the same one every time)."""
        truth = self.views[-1].room if self.views else None
        if truth is not None and truth != m.body_room:
            return truth
        if not self.cover_rooms:
            rooms = sorted({self.geometry.station_room(s) for s in self.geometry.station_ids()})
            self.cover_rooms = self.rng.sample(rooms, COVER_ROOMS)
        return next((r for r in self.cover_rooms if r != m.body_room), self.cover_rooms[0])

    def _crew_speech(self, obs: Observation) -> str:
        """Only true sentences: what this crewmate did and saw."""
        m = obs.meeting
        assert m is not None
        t = SPEECH_TEMPLATES
        parts: list[str] = []
        if m.caller == obs.agent and m.trigger == "report" and m.victim and m.body_room:
            parts.append(t["found_body"].format(victim=m.victim.capitalize(), room=m.body_room))
        if m.caller == obs.agent and m.trigger == "emergency":
            parts.append(t["pressed_button"])
        best = self._best_evidence(obs)
        heard = self._heard(obs) if best is None else None
        if best is not None:
            parts += [best.claim(), t["accuse"].format(suspect=best.suspect.capitalize())]
        elif heard is not None:
            accuser, suspect = heard
            parts += [
                t["heard_claim"].format(accuser=accuser.capitalize()),
                t["accuse"].format(suspect=suspect.capitalize()),
            ]
        else:
            parts.append(t["no_evidence"])
        last = self.views[-1] if self.views else None
        if last is not None:
            parts.append(t["was_in"].format(room=last.room, tick=last.tick))
        parts.append(t["tasks_done"].format(done=len(obs.tasks_done), total=len(obs.tasks)))
        return " ".join(parts)

    def _leading_accusation(self, obs: Observation) -> str | None:
        m = obs.meeting
        alive = set(m.order) if m else set()
        ranked = sorted(
            (
                (c, a)
                for a, c in self.accusations.items()
                if a in alive and a != obs.agent and a not in obs.teammates
            ),
            key=lambda t: (-t[0], t[1]),
        )
        return ranked[0][1] if ranked else None

    def _vote(self, obs: Observation) -> AgentDecision:
        if obs.role == "impostor":
            target = self._leading_accusation(obs)
            return AgentDecision(
                vote=target or "skip",
                module="VOTE",
                reasoning="vote with the majority",
                narration="following the crowd keeps suspicion off us",
            )
        best = self._best_evidence(obs)
        if best is not None:
            return AgentDecision(
                vote=best.suspect, module="VOTE", reasoning=f"evidence: {best.claim()}"
            )
        heard = self._heard(obs)
        if heard is not None:
            return AgentDecision(
                vote=heard[1], module="VOTE", reasoning=f"{heard[0]}'s eyewitness claim"
            )
        return AgentDecision(vote="skip", module="VOTE", reasoning="no evidence")

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _dist(a: Vec3, b: Vec3) -> float:
        return math.dist(a, b)

    def _room(self, pos: Vec3) -> str:
        return self.geometry.room_at(pos)

    def _route(self, a: Vec3, b: Vec3) -> float:
        length = self.geometry.path_length(a, b)
        return math.inf if length is None else length

    def _farthest_room(self, pos: Vec3) -> str:
        rooms = sorted(self.geometry.rooms)
        return max(rooms, key=lambda r: (self._dist(self.geometry.room_center(r), pos), r))
