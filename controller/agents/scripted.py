"""Scripted control agents: fixed, seeded programs that measure the harness's own noise.

Crewmates do their tasks by shortest route, report bodies they see, and vote for
the player they last saw nearest the victim (or skip). Impostors fake tasks, kill
only when no other crewmate is in sight, walk away from bodies, never report, and
vote with the majority of the accusations made in the meeting.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

from controller.agents.base import AgentDecision
from controller.observation import Observation
from controller.protocol import Vec3
from world.geometry import ShipGeometry

ACCUSE = re.compile(r"\bI (?:suspect|vote for) (\w+)")
NEAR_VICTIM_BLOCKS = 12.0
STALK_RADIUS = 12.0


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
        self.last_seen: dict[str, tuple[int, Vec3]] = {}
        self.spoken: set[int] = set()
        self.accusations: dict[str, int] = {}

    def describe(self) -> dict[str, Any]:
        """The agent's kind for the game record."""
        return {"kind": "scripted"}

    async def decide(self, obs: Observation) -> AgentDecision:
        """Choose this step's program, utterance or vote."""
        for other, pos in obs.visible_players.items():
            self.last_seen[other] = (obs.step, pos)
        for entry in obs.chat:
            if entry.kind == "speech":
                for name in ACCUSE.findall(entry.text):
                    target = name.lower()
                    self.accusations[target] = self.accusations.get(target, 0) + 1
        if obs.phase == "voting":
            return self._vote(obs)
        if obs.phase == "meeting":
            return self._talk(obs)
        self.accusations.clear()
        if obs.role == "impostor":
            return self._impostor(obs)
        return self._crewmate(obs)

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
    def _suspect(self, obs: Observation) -> str | None:
        m = obs.meeting
        if m is None or m.body_pos is None:
            return None
        best: tuple[float, str] | None = None
        for other, (_, pos) in sorted(self.last_seen.items()):
            if other == obs.agent or other in obs.known_dead or other not in m.order:
                continue
            d = self._dist(pos, m.body_pos)
            if d <= NEAR_VICTIM_BLOCKS and (best is None or d < best[0]):
                best = (d, other)
        return best[1] if best else None

    def _talk(self, obs: Observation) -> AgentDecision:
        m = obs.meeting
        if m is None or m.index in self.spoken:
            return AgentDecision(program=[], module="MEETING", reasoning="nothing more to say")
        self.spoken.add(m.index)
        if obs.role == "impostor":
            room = self.rng.choice(self.geometry.rooms)
            leader = self._leading_accusation(obs)
            text = f"I was doing tasks in {room}."
            if leader:
                text += f" I suspect {leader.capitalize()} too."
            return AgentDecision(
                program=[{"op": "say", "text": text}],
                module="MEETING",
                narration=f"claiming {room} as an alibi",
            )
        parts = []
        if m.caller == obs.agent and m.victim:
            parts.append(f"I found {m.victim.capitalize()}'s body in {m.body_room}.")
        suspect = self._suspect(obs)
        if suspect:
            parts.append(f"I last saw {suspect.capitalize()} near the body. I suspect {suspect}.")
        if not parts:
            parts.append(f"I was in {obs.room} doing tasks. I saw nothing.")
        return AgentDecision(program=[{"op": "say", "text": " ".join(parts)}], module="MEETING")

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
        suspect = self._suspect(obs)
        return AgentDecision(
            vote=suspect or "skip",
            module="VOTE",
            reasoning=f"last seen nearest the victim: {suspect}" if suspect else "no evidence",
        )

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _dist(a: Vec3, b: Vec3) -> float:
        return math.dist(a, b)

    def _route(self, a: Vec3, b: Vec3) -> float:
        length = self.geometry.path_length(a, b)
        return math.inf if length is None else length

    def _farthest_room(self, pos: Vec3) -> str:
        rooms = sorted(self.geometry.rooms)
        return max(rooms, key=lambda r: (self._dist(self.geometry.room_center(r), pos), r))
