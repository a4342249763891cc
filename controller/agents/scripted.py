"""Scripted control agents: fixed, seeded programs that measure the harness's own noise.

Crewmates keep their own memory of what they saw in free roam (field of view only:
`Observation.visible_players` and `visible_bodies`, with the step, tick and room of
each sighting); the meeting teleport never touches it. From it, and from what players
say in meetings, they draw evidence, each kind with a weight (`EVIDENCE_WEIGHT`, in
bits: the log of the likelihood ratio measured on the tuning seeds):

* `saw_kill`: a player seen within `WITH_VICTIM_BLOCKS` of the victim at one look and
  within `NEAR_BODY_BLOCKS` of its body at the next (the kill lies between the two);
* `near_body`: a player seen within `NEAR_BODY_BLOCKS` of a fresh body the first time
  the crewmate saw that body;
* `false_alibi`: a player who said in a meeting it was in a room other than the one the
  crewmate saw it in at that moment;
* `with_victim`: a player seen within `WITH_VICTIM_BLOCKS` of the victim the last time
  the crewmate saw the victim alive, when that was its previous look;
* `fake_task`: a player seen at a station between two sightings away from it too close
  in time for any task to be done there (`rules.task_ticks`);
* `near_scene`: a player seen within `NEAR_BODY_BLOCKS` of where the reported body
  lies, after the crewmate last saw the victim alive (measured to say little).

A crewmate's suspicion of a player is the sum of its own evidence (per victim, lie or
fake task the strongest piece) and of what other speakers said they saw, each claim
weighed by `hearsay_weight` (a speaker may be an impostor: `SPEAKER_TRUST`); claims of
a speaker who named this crewmate, which knows itself innocent, and claims two players
make against each other count for nothing. It votes for the most suspected player when
that suspicion reaches `VOTE_THRESHOLD` (the evidence that makes it `VOTE_CONFIDENCE`
sure) and nobody ties it, and skips otherwise.

Crewmates do their tasks by shortest route, holding each station facing into its room,
report bodies they see, press the emergency button when their own evidence against a
living player reaches the threshold but no body is in sight (once per suspect), and
say in meetings only what they saw or did (the `SPEECH_TEMPLATES`). A crewmate out of play under
`rules.ghost_tasks` (`Observation.ghost`) only does its remaining tasks.

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
  pile onto the leading accusation of a crewmate, and vote for it or skip (under
  `rules.impostors_may_skip: false` never skip: the leading accusation, else the
  crewmate it would frame, else the first other living crewmate in roster order).

Everything is deterministic given the game seed.
"""

from __future__ import annotations

import math
import random
import re
import string
from dataclasses import dataclass
from typing import Any, Literal

from controller.actions import (
    AnyAction,
    Follow,
    GoTo,
    KillTarget,
    Look,
    PressButton,
    ReportBody,
    Say,
    UseStation,
    Wait,
)
from controller.agents.base import AgentDecision
from controller.observation import MeetingView, Observation, Sighting
from controller.protocol import Vec3
from controller.rules import RulesConfig
from world.chat import chat_rules, utf16_length
from world.geometry import ShipGeometry, yaw_towards

SPEECH_TEMPLATES: dict[str, str] = {
    "found_body": "I found {victim}'s body in {room}.",
    "pressed_button": "I pressed the emergency button.",
    "saw_kill": (
        "I saw {suspect} with {victim} at tick {before} and by the body in {room} at tick {tick}."
    ),
    "saw_near_body": "I saw {suspect} next to {victim}'s body in {room} at tick {tick}.",
    "saw_elsewhere": "I saw {suspect} in {room} at tick {tick}.",
    "saw_with_victim": "I saw {suspect} with {victim} in {room} at tick {tick}.",
    "saw_fake_task": (
        "I saw {suspect} at station {station} in {room} at tick {tick}, too briefly for a task."
    ),
    "saw_near_scene": "I saw {suspect} near where {victim}'s body was, in {room} at tick {tick}.",
    "heard_claim": "I believe {accuser}.",
    "accuse": "I suspect {suspect}.",
    "no_evidence": "I have no evidence against anyone.",
    "was_in": "I was in {room} at tick {tick}.",
    "tasks_done": "I have done {done} of my {total} tasks.",
}
"""Every sentence a scripted crewmate says in a meeting; a speech is some of them
joined by single spaces, in this order of keys (the claims strongest first). All are
true of the log:

* `found_body`: the speaker reported `victim`'s body, lying in `room` (the meeting's
  `report` event).
* `pressed_button`: the speaker called this meeting with the button (`emergency`).
* `saw_kill`: at `before` the speaker saw `suspect` within `WITH_VICTIM_BLOCKS` of the
  living `victim`, and at `tick`, its next look, `suspect` within `NEAR_BODY_BLOCKS` of
  `victim`'s body, in `room` (the suspect's room then).
* `saw_near_body`: at `tick` the speaker saw `suspect` (field of view) standing within
  `NEAR_BODY_BLOCKS` of `victim`'s body, in `room` (the suspect's room), the first
  time the speaker saw that body.
* `saw_elsewhere`: at `tick` the speaker saw `suspect` in `room`; said when `suspect`
  claimed in this meeting to have been in another room then.
* `saw_with_victim`: at `tick` the speaker saw both `suspect` and the living `victim`
  within `WITH_VICTIM_BLOCKS` of each other, in `room` (the suspect's room); the last
  sighting of the victim alive.
* `saw_fake_task`: at `tick` the speaker saw `suspect` standing at `station` (within
  `rules.station_range`), in `room`, and saw it away from the station at its sightings
  just before and just after, too close in time for a task to be done there.
* `saw_near_scene`: at `tick` the speaker saw `suspect` within `NEAR_BODY_BLOCKS` of
  the spot where `victim`'s body was reported, in `room` (the suspect's room), after
  the speaker last saw the victim alive.
* `heard_claim`: the speaker's vote rests on what others said they saw, `accuser`'s
  claims the strongest of them (its own evidence is below `VOTE_THRESHOLD`).
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
"""What a scripted impostor says: where it was at its last look (`alibi`, a lie when
that was the body's room), then `pile_on` naming the most accused non-teammate, when
anyone was accused."""

EvidenceKind = Literal[
    "saw_kill", "near_body", "false_alibi", "with_victim", "fake_task", "near_scene"
]
EVIDENCE_TEMPLATE: dict[EvidenceKind, str] = {
    "saw_kill": "saw_kill",
    "near_body": "saw_near_body",
    "false_alibi": "saw_elsewhere",
    "with_victim": "saw_with_victim",
    "fake_task": "saw_fake_task",
    "near_scene": "saw_near_scene",
}
"""Which speech template states each kind of evidence."""
EVIDENCE_WEIGHT: dict[EvidenceKind, float] = {
    "saw_kill": 5.0,
    "false_alibi": 6.5,
    "near_body": 3.0,
    "with_victim": 3.0,
    "fake_task": 2.5,
    "near_scene": 0.5,
}
"""What one piece of a crewmate's own evidence says, in bits: log2 of how much likelier
an impostor is to be seen so than a crewmate. Measured on the tuning games (fake world,
seeds 1-200 of the quick and balanced presets, 400 games), as the share of such
sightings that named an impostor (add-one smoothed) against the 2 in 7 of a player
drawn blind: `near_body` 44 of 55, `with_victim` 50 of 62, both at once (`saw_kill`)
10 of 10, a room claim contradicted (`false_alibi`) 39 of 39, `fake_task` 1 of 1,
`near_scene` 17 of 50 (barely above the blind 2 in 7: crewmates gather where a body
lies, and the killer has left)."""
PRIOR_ODDS = 2 / 5
"""Odds that another player is an impostor before any evidence (2 of the 7 others)."""
SPEAKER_TRUST = 5 / 7
"""The chance that a speaker's claim is a crewmate's true sighting: 5 of the 7 others
are crewmates, and an impostor's claim says nothing. A claim that would weigh `w` bits
from one's own sight weighs `hearsay_weight(w)`, less."""


def hearsay_weight(bits: float) -> float:
    """What a claim worth `bits` from one's own sight is worth heard from another: the
    log likelihood ratio of a sighting that is true with chance `SPEAKER_TRUST` and
    otherwise says nothing (ratio 1)."""
    return math.log2(SPEAKER_TRUST * 2**bits + 1 - SPEAKER_TRUST)


VOTE_CONFIDENCE = 2 / 3
"""How sure a crewmate must be that a player is an impostor to vote it out."""
VOTE_THRESHOLD = math.log2(VOTE_CONFIDENCE / (1 - VOTE_CONFIDENCE) / PRIOR_ODDS)
"""The suspicion (bits) at which a crewmate votes and presses the button: the evidence
that takes the prior odds to `VOTE_CONFIDENCE` (2.9 bits); below it, it skips."""

FRESH_TICKS = 600
"""Longest window (ticks) in which a kill can lie for a sighting to count as evidence."""
NEAR_BODY_BLOCKS = 6.0
"""How close to a body (or its spot) a player must be seen to be suspected."""
WITH_VICTIM_BLOCKS = 4.0
"""How close to the victim a player must be seen to count as `with_victim`."""
MAX_CLAIMS = 3
"""Crewmates: the most claims one meeting line states (the strongest)."""
CHAT_LIMIT = chat_rules().max_length
"""The longest line the chat takes (UTF-16 units); a longer speech drops claims."""
GHOST_WAIT_TICKS = 200
"""A ghost with no task left waits this long between decisions."""
MAX_WALK_BLOCKS_PER_TICK = 0.28
"""The fastest anyone crosses ground (a Minecraft sprint; the fake world walks 0.25):
the time a player seen away from a station needs to get there, at least."""
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


NUMBER_FIELDS = ("tick", "before", "station", "done", "total")
"""Template placeholders that hold numbers."""


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex matching one filled-in template, with a named group per placeholder.

    `NUMBER_FIELDS` match digits; the other placeholders match one word (names and
    room ids have no spaces).
    """
    out = ""
    for literal, field, _, _ in string.Formatter().parse(template):
        out += re.escape(literal)
        if field is not None:
            out += rf"(?P<{field}>\d+)" if field in NUMBER_FIELDS else rf"(?P<{field}>\w+)"
    return re.compile(out)


EYEWITNESS: dict[EvidenceKind, re.Pattern[str]] = {
    kind: template_pattern(SPEECH_TEMPLATES[name]) for kind, name in EVIDENCE_TEMPLATE.items()
}
"""Patterns of the eyewitness claims, by the kind of evidence each states."""
LOCATION_CLAIMS = (
    template_pattern(SPEECH_TEMPLATES["was_in"]),
    template_pattern(IMPOSTOR_TEMPLATES["alibi"]),
)
"""Where a speaker says it was: at a tick, or (no tick) at its last look."""


@dataclass(frozen=True)
class Evidence:
    """One thing a crewmate saw that points at a player."""

    kind: EvidenceKind
    suspect: str
    victim: str
    """The victim it concerns ("" for `false_alibi` and `fake_task`)."""
    room: str
    """The suspect's room when seen."""
    tick: int
    distance: float
    """Suspect to body (or to the victim, for `with_victim`), in blocks."""
    window: int
    """Ticks between the last time this crewmate saw the victim alive (or the last
    meeting) and the time it saw the body (or heard of the death): the kill lies in
    that window, so the shorter it is the more the sighting says."""
    before: int = 0
    """`saw_kill`: the tick it saw the suspect with the living victim."""
    station: int = 0
    """`fake_task`: the station the suspect stood at."""

    @property
    def weight(self) -> float:
        """How much this piece raises suspicion (`EVIDENCE_WEIGHT`)."""
        return EVIDENCE_WEIGHT[self.kind]

    def rank(self) -> tuple[float, int, float, int, str]:
        """Sort key: heaviest kind, then the shortest window, closest, earliest."""
        return (-self.weight, self.window, self.distance, self.tick, self.suspect)

    def claim(self) -> str:
        """The true sentence stating this evidence."""
        return SPEECH_TEMPLATES[EVIDENCE_TEMPLATE[self.kind]].format(
            suspect=self.suspect.capitalize(),
            victim=self.victim.capitalize(),
            room=self.room,
            tick=self.tick,
            before=self.before,
            station=self.station,
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
        rules: The game's rules, which every player knows (task time, station range,
            whether impostors may skip); None reads the defaults and learns the task
            time from its own tasks.
    """

    def __init__(
        self,
        agent_id: str,
        geometry: ShipGeometry,
        seed: int,
        rules: RulesConfig | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.geometry = geometry
        self.rng = random.Random(f"{seed}:{agent_id}")
        self.rules = rules if rules is not None else RulesConfig()
        self.task_ticks: int | None = rules.task_ticks if rules is not None else None
        """How long a task takes: from the rules, else learnt from its own task in progress."""
        self.views: list[_View] = []
        self.last_seen: dict[str, Sighting] = {}
        self.bodies_seen: dict[str, Sighting] = {}
        self.evidence: list[Evidence] = []
        self.button_for: set[str] = set()
        """Crewmates: the suspects it already pressed the button about."""
        self.spoken: set[int] = set()
        self.since_meeting = 0
        """Tick of the last meeting this agent sat in (sightings before it are stale)."""
        self.meeting_index: int | None = None
        self.meeting_lines: dict[int, tuple[str, str]] = {}
        self.stated: set[Evidence] = set()
        """Crewmates: the evidence it stated in the current meeting."""
        self.said_suspect: str | None = None
        """Crewmates: whom it said it suspects in the current meeting."""
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
        if getattr(obs, "ghost", False):
            return self._ghost(obs)
        self.killed |= {a.target for a in obs.own_actions if a.kind == "killed" and a.target}
        if obs.task_progress is not None and self.task_ticks is None:
            self.task_ticks = obs.task_progress.ticks_needed
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

    def _ghost(self, obs: Observation) -> AgentDecision:
        """A crewmate out of play (`rules.ghost_tasks`): its remaining tasks by shortest
        route, else wait; never a report, the button, a word or a vote."""
        if obs.phase == "voting":
            return AgentDecision(abstain=True, module="VOTE", reasoning="a ghost does not vote")
        if obs.phase == "meeting":
            return AgentDecision(program=[], module="MEETING", reasoning="a ghost does not talk")
        pending = (
            [s for s in obs.tasks if s not in obs.tasks_done] if obs.role == "crewmate" else []
        )
        if not pending:
            return AgentDecision(
                program=[Wait(ticks=GHOST_WAIT_TICKS)],
                module="MISSION",
                reasoning="a ghost with no task left",
            )
        station = self._nearest_station(obs.pos, pending)
        return AgentDecision(
            program=self._watched_task(station),
            module="MISSION",
            reasoning=f"a ghost: nearest pending task {station}",
        )

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
            near: dict[str, float] = {}
            for other, where in sorted(view.players.items()):
                d = self._dist(where, pos)
                if d <= NEAR_BODY_BLOCKS:
                    near[other] = d
                    room = self._room(where)
                    self._add(Evidence("near_body", other, victim, room, obs.tick, d, window))
            for ev in self._with_victim(victim, alive, window):
                if ev.suspect in near and alive is not None:
                    # by the victim at one look and by its body at the next: the kill
                    # lies between them, with this player at both ends
                    where = view.players[ev.suspect]
                    kill = Evidence(
                        "saw_kill",
                        ev.suspect,
                        victim,
                        self._room(where),
                        obs.tick,
                        near[ev.suspect],
                        window,
                        before=alive.tick,
                    )
                    self._add(kill)
        self._fake_tasks(view)
        self.views.append(view)

    def _with_victim(self, victim: str, alive: _View | None, window: int) -> list[Evidence]:
        """Who stood close to the victim the last time I saw it alive."""
        if alive is None or not self.views or alive is not self.views[-1]:
            return []  # only when I saw the victim alive at my previous look: the kill is fresh
        vpos = alive.players[victim]
        out: list[Evidence] = []
        for other, where in sorted(alive.players.items()):
            d = self._dist(where, vpos)
            if other != victim and d <= WITH_VICTIM_BLOCKS:
                room = self._room(where)
                ev = Evidence("with_victim", other, victim, room, alive.tick, d, window)
                self._add(ev)
                out.append(ev)
        return out

    def _fake_tasks(self, view: _View) -> None:
        """Players seen at a station at their previous sighting, and away from it at the
        one before and now, too close in time to have done a task there.

        However fast it walked, a player seen away from a station at tick a and at tick
        c cannot have stood at it for longer than c - a minus the walk there and back;
        below the task time (`rules.task_ticks`) its stay was no task. Only within one
        stretch of free roam (a meeting interrupts tasks).
        """
        if self.task_ticks is None:
            return
        stretch = [v for v in self.views if v.tick > self.since_meeting]
        for other, now in sorted(view.players.items()):
            seen = [v for v in stretch if other in v.players]
            if len(seen) < 2:
                continue
            at, away = seen[-1], seen[-2]
            station = self._station_at(at.players[other])
            if station is None:
                continue
            spot = self.geometry.station_pos(station)
            reach = self.rules.station_range
            if self._dist(away.players[other], spot) <= reach or self._dist(now, spot) <= reach:
                continue
            walk = self._walk(away.players[other], spot) + self._walk(spot, now)
            longest = view.tick - away.tick - walk / MAX_WALK_BLOCKS_PER_TICK
            if longest < self.task_ticks:
                where = at.players[other]
                d = self._dist(where, spot)
                self._add(
                    Evidence(
                        "fake_task", other, "", self._room(where), at.tick, d, 0, station=station
                    )
                )

    def _walk(self, a: Vec3, b: Vec3) -> float:
        """The shortest walk from `a` to `b`: by path, or (no path known) the straight
        line, which no walk beats."""
        length = self.geometry.path_length(a, b)
        return self._dist(a, b) if length is None else length

    def _station_at(self, pos: Vec3) -> int | None:
        """The station `pos` stands at (within `rules.station_range`), if any."""
        reach = self.rules.station_range
        near = [
            (self._dist(pos, self.geometry.station_pos(s)), s) for s in self.geometry.station_ids()
        ]
        d, station = min(near)
        return station if d <= reach else None

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
        """Collect the current meeting's speech (accusations, claims, alibis to check)."""
        m = obs.meeting
        if m is not None and m.index != self.meeting_index:
            self.meeting_index = m.index
            self.meeting_lines = {}
            self.stated = set()
            self.said_suspect = None
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
            if obs.role == "crewmate" and entry.speaker != obs.agent:
                self._check_alibi(entry.speaker, entry.text)

    def _check_alibi(self, speaker: str, text: str) -> None:
        """Where the speaker says it was, against where I saw it then."""
        for pattern in LOCATION_CLAIMS:
            for match in pattern.finditer(text):
                fields = match.groupdict()
                if "tick" in fields:
                    tick = int(fields["tick"])
                    view = next((v for v in self.views if v.tick == tick), None)
                else:  # no tick: its last look before the meeting, which is also mine
                    view = self.views[-1] if self.views else None
                if view is None or speaker not in view.players:
                    continue
                where = view.players[speaker]
                seen = self._room(where)
                if seen != fields["room"]:
                    self._add(Evidence("false_alibi", speaker, "", seen, view.tick, 0.0, 0))

    # ------------------------------------------------------------------ suspicion
    def _living(self, obs: Observation) -> set[str]:
        """The other players still in the game, as far as this agent knows."""
        gone = set(obs.known_dead) | {obs.agent}
        living = set(obs.meeting.order) if obs.meeting else set(obs.players)
        return living - gone

    def _open_evidence(self, obs: Observation) -> list[Evidence]:
        """Own evidence against players still in the game, strongest first."""
        living = self._living(obs)
        return sorted((e for e in self.evidence if e.suspect in living), key=Evidence.rank)

    def _own_suspicion(self, obs: Observation) -> dict[str, float]:
        """Suspect -> the weight of my own evidence: per victim (or per lie, per fake
        task) the strongest piece, summed."""
        best: dict[tuple[str, str], float] = {}
        for e in self._open_evidence(obs):
            key = (e.suspect, e.victim or f"{e.kind}@{e.tick}")
            best[key] = max(best.get(key, 0.0), e.weight)
        out: dict[str, float] = {}
        for (suspect, _), w in best.items():
            out[suspect] = out.get(suspect, 0.0) + w
        return out

    def _claims(self, obs: Observation) -> dict[str, dict[str, float]]:
        """Speaker -> suspect -> what it said it saw is worth to me (`hearsay_weight`).

        Counted: eyewitness claims of other speakers, per victim the strongest. Not
        counted: the claims of a speaker who named me (I know I am innocent, so it is
        wrong or lying); claims two speakers make against each other (word against
        word); a `saw_elsewhere` the suspect's own words do not contradict.
        """
        said: dict[str, dict[str, dict[str, float]]] = {}
        where: dict[str, list[tuple[int | None, str]]] = {}
        for _, (speaker, text) in sorted(self.meeting_lines.items()):
            for pattern in LOCATION_CLAIMS:
                for match in pattern.finditer(text):
                    tick = match.groupdict().get("tick")
                    where.setdefault(speaker, []).append(
                        (int(tick) if tick else None, match["room"])
                    )
        last_look = self.views[-1].tick if self.views else None
        for _, (speaker, text) in sorted(self.meeting_lines.items()):
            if speaker == obs.agent:
                continue
            for kind, pattern in EYEWITNESS.items():
                for match in pattern.finditer(text):
                    suspect = match["suspect"].lower()
                    fields = match.groupdict()
                    if kind == "false_alibi":
                        tick = int(fields["tick"])
                        told = [
                            room
                            for t, room in where.get(suspect, [])
                            if t == tick or (t is None and tick == last_look)
                        ]
                        if not any(room != fields["room"] for room in told):
                            continue
                    key = fields.get("victim") or f"{kind}@{fields['tick']}"
                    per = said.setdefault(speaker, {}).setdefault(suspect, {})
                    per[key.lower()] = max(per.get(key.lower(), 0.0), EVIDENCE_WEIGHT[kind])
        out: dict[str, dict[str, float]] = {}
        for speaker, against in said.items():
            if obs.agent in against:
                continue
            for suspect, per in against.items():
                if suspect == speaker or speaker in said.get(suspect, {}):
                    continue
                out.setdefault(speaker, {})[suspect] = sum(hearsay_weight(w) for w in per.values())
        return out

    def _suspicion(self, obs: Observation) -> dict[str, float]:
        """Suspect -> own evidence plus what others said they saw (`hearsay_weight`)."""
        living = self._living(obs)
        score = dict(self._own_suspicion(obs))
        for against in self._claims(obs).values():
            for suspect, w in against.items():
                if suspect in living:
                    score[suspect] = score.get(suspect, 0.0) + w
        return score

    def _suspect(self, obs: Observation) -> str | None:
        """The player to vote for: the most suspected, at `VOTE_THRESHOLD` or more and
        with nobody tied."""
        score = self._suspicion(obs)
        if not score:
            return None
        ranked = sorted(score.items(), key=lambda t: (-t[1], t[0]))
        top, w = ranked[0]
        tied = len(ranked) > 1 and ranked[1][1] == w
        return top if w >= VOTE_THRESHOLD and not tied else None

    def _accuser(self, obs: Observation, suspect: str) -> str | None:
        """The speaker whose claims against `suspect` weigh most."""
        claims = self._claims(obs)
        ranked = sorted(
            (-against[suspect], speaker)
            for speaker, against in claims.items()
            if suspect in against
        )
        return ranked[0][1] if ranked else None

    # ------------------------------------------------------------------ free roam
    def _crewmate(self, obs: Observation) -> AgentDecision:
        if obs.visible_bodies:
            victim = min(
                obs.visible_bodies, key=lambda v: self._dist(obs.pos, obs.visible_bodies[v])
            )
            return AgentDecision(
                program=[ReportBody(body=victim)],
                module="REPORT",
                reasoning=f"{victim}'s body is in sight",
            )
        own = self._own_suspicion(obs)
        press = sorted(
            (-w, s) for s, w in own.items() if w >= VOTE_THRESHOLD and s not in self.button_for
        )
        if press and obs.emergency_ready:
            suspect = press[0][1]
            self.button_for.add(suspect)
            return AgentDecision(
                program=[PressButton()],
                module="BUTTON",
                reasoning=f"evidence against {suspect} ({-press[0][0]:.1f}) and no body in sight",
            )
        pending = [s for s in obs.tasks if s not in obs.tasks_done]
        if pending:
            station = self._nearest_station(obs.pos, pending)
            return AgentDecision(
                program=self._watched_task(station),
                module="MISSION",
                reasoning=f"nearest pending task {station}",
            )
        room = self.rng.choice(self.geometry.rooms)
        return AgentDecision(
            program=[GoTo(room=room)], module="MOVE", reasoning="tasks done; wander"
        )

    def _nearest_station(self, pos: Vec3, stations: list[int]) -> int:
        return min(stations, key=lambda s: (self._route(pos, self.geometry.station_pos(s)), s))

    def _impostor(self, obs: Observation) -> AgentDecision:
        """Report an own kill (sometimes), leave bodies, strike a lone crewmate, hunt, or
        fake a task while the cooldown runs."""
        crew = self._crew_in_view(obs)
        victim = self.report_victim
        self.report_victim = None
        if victim is not None and victim in obs.visible_bodies:
            return AgentDecision(
                program=[ReportBody(body=victim)],
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
                    program=[Follow(agent=target, distance=SHADOW_BLOCKS, ticks=SHADOW_TICKS)],
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
        program: list[AnyAction] = []
        roam = 0.0  # how far from `pos` the strike may land
        if go_first:
            program.append(GoTo(pos=pos))
        elif self._dist(obs.pos, pos) > STRIKE_REACH or not self._still(target, pos):
            program.append(Follow(agent=target, distance=4.0, ticks=FOLLOW_TICKS))
            roam = FOLLOWED_BLOCKS
        program.append(KillTarget(target=target, guard="sight"))
        stay = self.rng.random() < SELF_REPORT_P
        if stay:
            self.report_victim = target
            program.append(Wait(ticks=20))
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

    def _watched_task(self, station: int) -> list[AnyAction]:
        """Hold `station` facing into its room (watching it), not the wall."""
        pos = self.geometry.station_pos(station)
        yaw = yaw_towards(pos, self.geometry.room_center(self.geometry.station_room(station)))
        return [
            GoTo(station=station),
            Look(yaw=round(yaw, 1)),
            UseStation(station=station),
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
        if m is None:
            return AgentDecision(program=[], module="MEETING", reasoning="nothing more to say")
        if obs.role == "impostor":
            if m.index in self.spoken:
                return AgentDecision(program=[], module="MEETING", reasoning="nothing more to say")
            self.spoken.add(m.index)
            return self._impostor_speech(obs, m)
        first = m.index not in self.spoken
        self.spoken.add(m.index)
        text = self._crew_speech(obs, first)
        if not text:
            return AgentDecision(program=[], module="MEETING", reasoning="nothing new to say")
        return AgentDecision(program=[Say(text=text)], module="MEETING")

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
            program=[Say(text=" ".join(parts))], module="MEETING", narration=narration
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

    def _crew_speech(self, obs: Observation, first: bool) -> str:
        """Only true sentences: what this crewmate did and saw, and whom it suspects.

        The first line of a meeting says everything (the report or button press, its
        claims, its suspect or that it has no evidence, where it was, its tasks); a later
        turn says only what is new since (a claim it could make only after hearing
        someone, e.g. a false alibi, or a changed suspect), and nothing when nothing is.
        A line longer than the chat allows drops its weakest claims first, then where
        it was and its task count.
        """
        m = obs.meeting
        assert m is not None
        t = SPEECH_TEMPLATES
        head: list[str] = []
        if first:
            if m.caller == obs.agent and m.trigger == "report" and m.victim and m.body_room:
                head.append(t["found_body"].format(victim=m.victim.capitalize(), room=m.body_room))
            if m.caller == obs.agent and m.trigger == "emergency":
                head.append(t["pressed_button"])
        claims = [e for e in self._claims_to_state(obs) if e not in self.stated]
        suspect = self._suspect(obs)
        verdict: list[str] = []
        if suspect is not None and suspect != self.said_suspect:
            if self._own_suspicion(obs).get(suspect, 0.0) < VOTE_THRESHOLD:
                accuser = self._accuser(obs, suspect)
                if accuser is not None:
                    verdict.append(t["heard_claim"].format(accuser=accuser.capitalize()))
            verdict.append(t["accuse"].format(suspect=suspect.capitalize()))
        tail: list[str] = []
        if first:
            if not self.stated and not claims and suspect is None:
                verdict.append(t["no_evidence"])
            last = self.views[-1] if self.views else None
            if last is not None:
                tail.append(t["was_in"].format(room=last.room, tick=last.tick))
            tail.append(t["tasks_done"].format(done=len(obs.tasks_done), total=len(obs.tasks)))

        def line() -> str:
            return " ".join([*head, *(e.claim() for e in claims), *verdict, *tail])

        while utf16_length(line()) > CHAT_LIMIT and (claims or tail):
            if len(claims) > 1 or not tail:
                claims.pop()
            else:
                tail.pop()
        self.stated |= set(claims)
        if verdict and suspect is not None:
            self.said_suspect = suspect
        return line()

    def _claims_to_state(self, obs: Observation) -> list[Evidence]:
        """My evidence worth saying, strongest first: per suspect and victim (or lie,
        or fake task) the strongest piece, at most `MAX_CLAIMS`."""
        best: dict[tuple[str, str], Evidence] = {}
        for e in self._open_evidence(obs):
            if e.weight <= 0:
                continue  # says nothing (`EVIDENCE_WEIGHT`)
            best.setdefault((e.suspect, e.victim or f"{e.kind}@{e.tick}"), e)
        return sorted(best.values(), key=Evidence.rank)[:MAX_CLAIMS]

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
            return self._impostor_vote(obs)
        score = self._suspicion(obs)
        why = self._why(obs, score)
        suspect = self._suspect(obs)
        if suspect is not None:
            return AgentDecision(vote=suspect, module="VOTE", reasoning=why)
        return AgentDecision(vote="skip", module="VOTE", reasoning=why)

    def _why(self, obs: Observation, score: dict[str, float]) -> str:
        """The vote's reasoning: every suspicion and what it rests on (own evidence by
        kind, and the speakers whose claims count)."""
        if not score:
            return "no evidence"
        own: dict[str, list[str]] = {}
        for e in self._open_evidence(obs):
            own.setdefault(e.suspect, []).append(f"{e.kind}@{e.tick}")
        heard: dict[str, list[str]] = {}
        for speaker, against in sorted(self._claims(obs).items()):
            for suspect in against:
                heard.setdefault(suspect, []).append(speaker)
        parts = []
        for suspect, w in sorted(score.items(), key=lambda t: (-t[1], t[0])):
            rests = own.get(suspect, []) + [f"heard:{s}" for s in heard.get(suspect, [])]
            parts.append(f"{suspect} {w:.2f} ({', '.join(rests)})")
        return f"suspicion (vote at {VOTE_THRESHOLD:g}): " + "; ".join(parts)

    def _impostor_vote(self, obs: Observation) -> AgentDecision:
        """The leading accusation of a crewmate, else skip; where impostors may not skip
        (`rules.impostors_may_skip` false), the crewmate it would frame, else the first
        other living crewmate in roster order."""
        target = self._leading_accusation(obs)
        if target is None and not getattr(self.rules, "impostors_may_skip", True):
            target = self._frame_target(obs)
            if target is None:
                living = self._living(obs)
                target = next(
                    (a for a in obs.players if a in living and a not in obs.teammates), None
                )
        return AgentDecision(
            vote=target or "skip",
            module="VOTE",
            reasoning="vote with the majority" if target else "nobody accused",
            narration="following the crowd keeps suspicion off us",
        )

    def _frame_target(self, obs: Observation) -> str | None:
        """The living crewmate I last saw nearest the reported body's spot (the one the
        crew would most readily believe did it)."""
        m = obs.meeting
        if m is None or m.body_pos is None:
            return None
        living = self._living(obs) - set(obs.teammates)
        seen = [
            (self._dist(s.pos, m.body_pos), a) for a, s in self.last_seen.items() if a in living
        ]
        return min(seen)[1] if seen else None

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
