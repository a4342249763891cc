"""A game that remembers what its engine held live at every step, for checking the
record against it (`tests/integration`)."""

from __future__ import annotations

from controller.game import Game


class ProbeGame(Game):
    """Remembers the engine's live room and status of every player at every step
    (`live[step][agent] = (room, status)`)."""

    live: dict[int, dict[str, tuple[str, str]]]

    def after_step(self) -> None:
        if not hasattr(self, "live"):
            self.live = {}
        self.live[self.engine.step] = {
            a: (self.geometry.room_at(p.pos), p.status) for a, p in self.engine.players.items()
        }
