"""Window memory: the last k steps, verbatim."""

from __future__ import annotations

from collections import deque

from controller.observation import Observation
from harness_aria.memory.base import describe_action, register_memory, worth_remembering

SHOWN = 5


def _own_line(entry: str) -> bool:
    """Whether an entry is this agent's own line in a meeting: the action (`I said ...`)
    or the decision that said it (`mode=MEETING: said: "..."`)."""
    return entry.startswith(("I said", 'mode=MEETING: said: "'))


@register_memory("window", lambda spec: {"k": spec.window_k})
class WindowMemory:
    """Keeps the last `k` steps of decisions, chat and notes; shows the last five.

    Args:
        k: Steps kept.
    """

    def __init__(self, k: int = 10) -> None:
        self.k = k
        self.entries: deque[tuple[int, str]] = deque()
        self._suspicion: dict[str, float] = {}
        self._chat: set[tuple[int, str]] = set()
        """Entries that are chat lines (left out of `text` during the meeting they were
        said in: the state view's meeting chat holds the whole of it)."""
        self.meeting_since: int | None = None
        """The first step of the current meeting (None in free roam)."""

    def _add(self, step: int, text: str) -> None:
        self.entries.append((step, text))
        while self.entries and self.entries[0][0] <= step - self.k:
            self._chat.discard(self.entries.popleft())

    def observe(self, obs: Observation) -> None:
        """Keep the agent's own actions, the chat and who was in sight.

        `obs` is the agent's filtered observation (`controller.views.Knowledge`), so an
        ego agent remembers only what its camera showed.
        """
        if obs.phase == "free_roam":
            self.meeting_since = None
        elif self.meeting_since is None:
            self.meeting_since = min([obs.step, *(c.step for c in obs.meeting_chat)])
        for a in obs.own_actions:
            if not worth_remembering(a):
                continue
            self._add(a.step, describe_action(a))
        for c in obs.chat:
            who = "[Server]" if c.kind == "server" else (c.speaker or "?").capitalize()
            self._add(obs.step, f"{who}: {c.text}")
            self._chat.add((obs.step, f"{who}: {c.text}"))
        # Meeting seats say nothing about where anyone was: only free-roam sightings.
        if obs.visible_players and obs.phase == "free_roam":
            seen = ", ".join(
                f"{a} in {s.room if (s := obs.last_seen.get(a)) else obs.room}"
                for a in sorted(obs.visible_players)
            )
            self._add(obs.step, f"saw {seen}")
        for victim in sorted(obs.visible_bodies):
            self._add(obs.step, f"saw {victim}'s body")

    def record(self, step: int, module: str, summary: str) -> None:
        """Remember a decision."""
        self._add(step, f"mode={module}: {summary}")

    def note(self, step: int, text: str) -> None:
        """Remember a fact."""
        self._add(step, text)

    def adjust(self, player: str, delta: float, why: str) -> None:
        """Window memory keeps no beliefs beyond a plain score."""
        self._suspicion[player] = min(1.0, max(0.0, self._suspicion.get(player, 0.0) + delta))

    def suspicion(self) -> dict[str, float]:
        """Plain scores from adjustments."""
        return dict(self._suspicion)

    def text_parts(self) -> tuple[str, str]:
        """Nothing settled: every entry is a recent step's."""
        return "", self.text()

    def text(self) -> str:
        """The last five entries (in a meeting, not counting what was said in it, nor
        this agent's own lines, as said or as the decision that said them: the state
        view shows that meeting's whole chat)."""
        since = self.meeting_since
        recent = [
            (s, t)
            for s, t in self.entries
            if since is None or s < since or not ((s, t) in self._chat or _own_line(t))
        ][-SHOWN:]
        if not recent:
            return "Memory: nothing yet."
        return "Memory (recent steps):\n" + "\n".join(f"  step {s}: {t}" for s, t in recent)
