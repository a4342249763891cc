"""The rules the engine enforces: the `rules` section of a game's configuration.

A module of its own (re-exported by `controller.config`) so that the agent registry,
whose kinds are handed the rules, needs nothing else of the configuration, which
validates its sides through that registry.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class RulesConfig(BaseModel):
    """The rules the engine enforces. Ticks are 1/20 s."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_players: int = Field(default=8, ge=3, le=8)
    """Number of seats in the game (each gets one of the eight colours)."""
    n_impostors: int = Field(default=2, ge=1)
    """How many seats are impostors; must leave more crewmates than impostors."""
    kill_range: float = Field(default=3.0, gt=0)
    """Largest killer-to-victim distance (blocks) at which a kill lands."""
    kill_cooldown_ticks: int = Field(default=240, ge=0)
    """Ticks an impostor must wait after a kill (and after each meeting) before the next."""
    initial_kill_cooldown_ticks: int = Field(default=100, ge=0)
    """Ticks from the start of the game before the first kill is allowed."""
    kill_defer_distance: float = Field(default=10.0, gt=0)
    """Leash of every `kill` program (blocks): its approach gives up, and the program
    fails saying so, once the target is farther than this from where the approach began;
    a strike never lands far from the place the killer judged safe."""
    report_range: float = Field(default=2.0, gt=0)
    """Largest distance (blocks) from a body at which it can be reported."""
    button_range: float = Field(default=2.5, gt=0)
    """Largest distance (blocks) from the emergency button at which it can be pressed."""
    station_range: float = Field(default=1.5, gt=0)
    """Largest distance (blocks) from a station's centre that counts as standing at it."""
    task_ticks: int = Field(default=40, ge=0)
    """Ticks a crewmate must stand at a station for its task to complete."""
    tasks_per_crewmate: int = Field(default=3, ge=1)
    """Distinct stations assigned to each crewmate."""
    emergency_initial_lockout_ticks: int = Field(default=300, ge=0)
    """Ticks from the start of the game during which the emergency button is locked."""
    emergency_lockout_after_meeting_ticks: int = Field(default=200, ge=0)
    """Ticks after each meeting during which the emergency button is locked."""
    emergency_per_player: int = Field(default=1, ge=0)
    """How many emergency meetings each player may call in one game."""
    max_utterances: int = Field(default=3, ge=1)
    """Most times one player may speak in one meeting."""
    meeting_max_ticks: int = Field(default=2400, ge=1)
    """Talk time of a meeting (game ticks from its call); when it is used up the meeting
    goes to the vote. Talk turns spend it (`talk_ticks_per_utterance`, `_per_pass`)."""
    talk_ticks_per_utterance: int = Field(default=100, ge=0)
    """Game ticks one spoken line costs. The reference's 6000-tick meeting holds 8
    players x 3 utterances, 250 ticks a line (the paper preset); the quick preset's
    2400-tick meeting gives 100."""
    talk_ticks_per_pass: int = Field(default=20, ge=0)
    """Game ticks a pass or a failed talk turn costs (a fifth of a line)."""
    vision_radius: float = Field(default=12.0, gt=0)
    """How far (blocks) a player can see another player or a body, line of sight permitting."""
    max_steps: int = Field(default=120, ge=1)
    """Step budget; when it is exceeded the game ends with the `timeout` ending."""
    timeout_winner: Literal["impostors", "crew"] = "impostors"
    """Who wins the `timeout` ending (the reference code scores it for the impostors)."""
    confirm_ejects: bool = False
    """Whether the server announces the role of an ejected player."""

    @model_validator(mode="after")
    def _crew_outnumbers(self) -> RulesConfig:
        if self.n_impostors * 2 >= self.n_players:
            raise ValueError(
                f"rules.n_impostors={self.n_impostors} leaves too few crewmates for "
                f"rules.n_players={self.n_players}; use fewer impostors than half the seats"
            )
        return self
