"""Semantic memory: a belief table per player instead of a step log.

Beliefs move by rules (seen near a body, accused in a meeting, blamed by this agent) and
by reflection's deltas. With `AriaSpec.belief_update: llm` (the reference's "semantic +
LLM") the memory also keeps the game's messages as events (the last `EVENTS_SHOWN`), and
a model call reads them with the beliefs and returns per-player suspicion changes and
notes (`harness_aria.reflection.beliefs`), after the meeting's reflection.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field

from controller.observation import Observation
from harness_aria.memory.base import (
    describe_action,
    grouped_by_step,
    register_memory,
    worth_remembering,
)
from harness_aria.view_text import chat_line

NOTES_PER_PLAYER = 10
OWN_ACTIONS_KEPT = 10
OWN_ACTIONS_SHOWN = 6
NEAR_BODY = 6.0
ACCUSING = re.compile(r"\b(suspect|sus|vote|saw|killed|lying|liar)\b", re.I)
EVENTS_SHOWN = 20
"""Events a belief update reads: the last 20, as the reference's."""


@dataclass
class Belief:
    """What this agent believes about one other player."""

    suspicion: float = 0.0
    notes: deque[str] = field(default_factory=lambda: deque(maxlen=NOTES_PER_PLAYER))
    claims: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=NOTES_PER_PLAYER))
    """(step, what the player said)."""


@register_memory("semantic", lambda spec: {"k": spec.window_k, "belief_update": spec.belief_update})
class SemanticMemory:
    """Per-player suspicion, notes and claims; the last three meeting summaries.

    Rules update it from what the agent perceives (being seen near a body raises
    suspicion; so does being accused in a meeting); reflection adds its deltas; with
    `belief_update: llm` a model call adds its own (`harness_aria.reflection.beliefs`).

    Args:
        k: Notes kept.
        belief_update: `rule` or `llm` (`AriaSpec.belief_update`).
    """

    def __init__(self, k: int = 10, belief_update: str = "rule") -> None:
        self.belief_update = belief_update
        self.events: deque[tuple[int, str]] = deque(maxlen=EVENTS_SHOWN)
        """The game's messages since the last belief update (`llm` only): the last
        `EVENTS_SHOWN`, (step, line)."""
        self._seen_chat: set[int] = set()
        self.beliefs: dict[str, Belief] = {}
        self.meetings: deque[str] = deque(maxlen=3)
        self.facts: deque[tuple[int, str]] = deque(maxlen=k)
        self.actions: deque[tuple[int, str]] = deque(maxlen=OWN_ACTIONS_KEPT)
        self.me = ""
        self.meeting_since: int | None = None
        """The first step of the current meeting (None in free roam): claims made since
        are in the state view's meeting chat, so the table does not repeat them."""

    def _belief(self, player: str) -> Belief:
        return self.beliefs.setdefault(player, Belief())

    def observe(self, obs: Observation) -> None:
        """Update beliefs from sightings near bodies and from meeting speech; keep the
        agent's own actions (route, tasks, kills)."""
        self.me = obs.agent
        if obs.phase == "free_roam":
            self.meeting_since = None
        elif self.meeting_since is None:
            self.meeting_since = min([obs.step, *(c.step for c in obs.meeting_chat)])
        for a in obs.own_actions:
            if not worth_remembering(a):
                continue
            self.actions.append((a.step, describe_action(a)))
        for victim, body in obs.visible_bodies.items():
            for other, pos in obs.visible_players.items():
                if other not in obs.teammates and math.dist(pos, body) <= NEAR_BODY:
                    self.adjust(other, 0.2, f"step {obs.step}: near {victim}'s body")
        names = set(obs.players)
        for c in obs.chat:
            if c.kind != "speech" or not c.speaker or c.speaker == obs.agent:
                continue
            self._belief(c.speaker).claims.append((c.step, c.text))
            if ACCUSING.search(c.text):
                for word in re.findall(r"[A-Za-z]+", c.text):
                    name = word.lower()
                    if name in names and name not in (c.speaker, obs.agent):
                        self.adjust(name, 0.05, f"accused by {c.speaker}")
        for c in obs.chat:
            if c.kind == "server":
                self.meetings.append(f"step {c.step}: {c.text}")
        if self.belief_update == "llm":
            for c in [*obs.meeting_chat, *obs.chat]:
                if c.index not in self._seen_chat:
                    self._seen_chat.add(c.index)
                    self.events.append((c.step, chat_line(c)))

    def record(self, step: int, module: str, summary: str) -> None:
        """Semantic memory keeps no step log; decisions are not stored."""

    def note(self, step: int, text: str) -> None:
        """Remember a fact."""
        self.facts.append((step, text))

    def adjust(self, player: str, delta: float, why: str) -> None:
        """Change a player's suspicion and say why."""
        if player == self.me:
            return
        b = self._belief(player)
        b.suspicion = min(1.0, max(0.0, b.suspicion + delta))
        b.notes.append(f"{delta:+.2f} {why}")

    def suspicion(self) -> dict[str, float]:
        """Suspicion per player."""
        return {p: b.suspicion for p, b in self.beliefs.items()}

    def beliefs_text(self) -> str:
        """The beliefs as a belief update reads them: each player's suspicion and notes."""
        lines = ["Your current beliefs (suspicion 0-1, with your notes):"]
        for player, b in sorted(self.beliefs.items()):
            notes = "; ".join(b.notes)
            lines.append(f"  {player}: {b.suspicion:.2f}" + (f"; {notes}" if notes else ""))
        if len(lines) == 1:
            lines.append("  none yet")
        return "\n".join(lines)

    def events_text(self) -> str:
        """The events a belief update reads (the last `EVENTS_SHOWN`), '' for none."""
        if not self.events:
            return ""
        lines = [f"Recent events (the last {len(self.events)}):"]
        lines += [f"  step {step}: {line}" for step, line in self.events]
        return "\n".join(lines)

    def clear_events(self) -> None:
        """Forget the events a belief update has read (or tried to)."""
        self.events.clear()

    def text(self) -> str:
        """The belief table, notes, then own actions (the part that changes every step
        last, so successive prompts share a longer start)."""
        return "\n".join(t for t in self.text_parts() if t)

    def text_parts(self) -> tuple[str, str]:
        """The belief table with the notes (they change now and then), and own actions
        (they change every step)."""
        lines = ["Beliefs about players (suspicion 0-1):"]
        for player, b in sorted(self.beliefs.items()):
            last = f"; {b.notes[-1]}" if b.notes else ""
            said = [c for c in b.claims if self.meeting_since is None or c[0] < self.meeting_since]
            claim = f'; last said: "step {said[-1][0]}: {said[-1][1]}"' if said else ""
            lines.append(f"  {player}: {b.suspicion:.2f}{last}{claim}")
        if len(lines) == 1:
            lines.append("  none yet")
        # `meetings` (the server's meeting lines) is kept but not rendered: the state
        # view's "Earlier meetings" states every meeting already, with its ballots.
        if self.facts:
            lines.append("Notes:")
            lines += grouped_by_step(list(self.facts)[-5:])
        # In a meeting, this agent's own lines of it are in the state view's meeting chat.
        since = self.meeting_since
        actions = [
            (s, t)
            for s, t in self.actions
            if since is None or s < since or not t.startswith("I said")
        ][-OWN_ACTIONS_SHOWN:]
        did = ["What you did:", *grouped_by_step(actions)] if actions else []
        return "\n".join(lines), "\n".join(did)
