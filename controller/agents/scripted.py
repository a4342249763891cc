"""Scripted control agents: fixed, seeded programs that measure the harness's own noise.

Crewmates keep their own memory of what they saw in free roam (field of view only:
`Observation.visible_players` and `visible_bodies`, with the step, tick and room of
each sighting); the meeting teleport never touches it. From it they draw evidence:

* `near_body`: a player seen within `NEAR_BODY_BLOCKS` of a body the first time the
  crewmate saw that body;
* `with_victim`: a player seen within `WITH_VICTIM_BLOCKS` of the victim the last time
  the crewmate saw the victim alive;
* `near_scene`: a player seen within `NEAR_BODY_BLOCKS` of where the reported body
  lies, after the crewmate last saw the victim alive.

Crewmates do their tasks by shortest route, report bodies they see, press the
emergency button when they hold evidence against a living player but no body is in
sight (once per piece of evidence), say in meetings only what they saw or did (the
`SPEECH_TEMPLATES`), and vote for their best suspect; with no evidence of their own
they vote for the player named in another speaker's eyewitness claim
(`saw_near_body`, `saw_with_victim`, `saw_near_scene`) and otherwise skip.

Impostors fake tasks, kill only when no other crewmate is in sight, walk away from
bodies, never report, claim a random room as an alibi (`IMPOSTOR_TEMPLATES`, which
may be lies) and vote with the majority of the accusations made in the meeting.
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
from controller.observation import Observation, Sighting
from controller.protocol import Vec3
from world.geometry import ShipGeometry

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
STALK_RADIUS = 12.0
"""Impostors: how close a lone crewmate must be to be worth a kill attempt."""

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

    def describe(self) -> dict[str, Any]:
        """The agent's kind for the game record."""
        return {"kind": "scripted"}

    async def decide(self, obs: Observation) -> AgentDecision:
        """Choose this step's program, utterance or vote."""
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
        if alive is None:
            return
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
                program=[{"op": "use_station", "station": station}],
                module="MISSION",
                reasoning=f"nearest pending task {station}",
            )
        room = self.rng.choice(self.geometry.rooms)
        return AgentDecision(
            program=[{"op": "go_to", "room": room}], module="MOVE", reasoning="tasks done; wander"
        )

    def _impostor(self, obs: Observation) -> AgentDecision:
        crew_in_sight = {a: p for a, p in obs.visible_players.items() if a not in obs.teammates}
        if obs.visible_bodies:
            body = min(obs.visible_bodies.values(), key=lambda p: self._dist(obs.pos, p))
            if self._dist(obs.pos, body) < NEAR_VICTIM_BLOCKS:
                room = self._farthest_room(body)
                return AgentDecision(
                    program=[{"op": "go_to", "room": room}],
                    module="MOVE",
                    reasoning="walk away from the body",
                    narration=f"leaving the body for {room} so no one ties me to it",
                )
        if obs.kill_ready and len(crew_in_sight) == 1:
            target, pos = next(iter(crew_in_sight.items()))
            if self._dist(obs.pos, pos) <= STALK_RADIUS:
                return AgentDecision(
                    program=[{"op": "kill", "target": target}],
                    module="KILL",
                    reasoning="alone with one crewmate",
                    narration=f"killing {target} while nobody else can see",
                )
        if obs.kill_ready and crew_in_sight:
            # Stalk the crewmate standing farthest from the others: the likeliest to be alone.
            def isolation(a: str) -> tuple[float, str]:
                others = [p for b, p in crew_in_sight.items() if b != a]
                return (-min(self._dist(crew_in_sight[a], p) for p in others), a)

            target = min(crew_in_sight, key=isolation)
            return AgentDecision(
                program=[{"op": "follow", "agent": target, "distance": 3.0, "ticks": 60}],
                module="KILL",
                reasoning="witnesses around; stalk",
                narration=f"stalking {target} until the others leave",
            )
        if obs.kill_ready:
            rooms = sorted({self.geometry.station_room(s) for s in self.geometry.station_ids()})
            room = self.rng.choice([r for r in rooms if r != obs.room] or rooms)
            return AgentDecision(
                program=[{"op": "go_to", "room": room}],
                module="MOVE",
                reasoning="hunt for a lone crewmate",
                narration=f"heading to {room} to find someone alone",
            )
        station = self.rng.choice(sorted(self.geometry.station_ids()))
        return AgentDecision(
            program=[{"op": "use_station", "station": station}],
            module="MISSION",
            reasoning="fake a task",
            narration=f"faking a task at station {station} to look busy",
        )

    # ------------------------------------------------------------------ meetings
    def _talk(self, obs: Observation) -> AgentDecision:
        m = obs.meeting
        if m is None or m.index in self.spoken:
            return AgentDecision(program=[], module="MEETING", reasoning="nothing more to say")
        self.spoken.add(m.index)
        if obs.role == "impostor":
            room = self.rng.choice(self.geometry.rooms)
            leader = self._leading_accusation(obs)
            text = IMPOSTOR_TEMPLATES["alibi"].format(room=room)
            if leader:
                text += " " + IMPOSTOR_TEMPLATES["pile_on"].format(suspect=leader.capitalize())
            return AgentDecision(
                program=[{"op": "say", "text": text}],
                module="MEETING",
                narration=f"claiming {room} as an alibi",
            )
        return AgentDecision(
            program=[{"op": "say", "text": self._crew_speech(obs)}], module="MEETING"
        )

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
