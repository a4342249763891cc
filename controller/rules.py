"""The rules the engine enforces: the `rules` section of a game's configuration.

A module of its own (re-exported by `controller.config`) so that the agent registry,
whose kinds are handed the rules, needs nothing else of the configuration, which
validates its sides through that registry.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_STEPS_BOUND = 10_000
"""The largest step budget a game may have: 50 times the paper's 200 steps, about a day
of wall time on the embedded world; a larger one is a typo, not a design."""


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
    """Most times one player may speak in one meeting; under `talk: turns`, exactly how
    many talk turns each living player gets (a pass uses one)."""
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
    max_steps: int = Field(default=120, ge=1, le=MAX_STEPS_BOUND)
    """Step budget; when it is exceeded the game ends with the `timeout` ending (at most
    `MAX_STEPS_BOUND`: the paper's games have 200)."""
    timeout_winner: Literal["impostors", "crew"] = "impostors"
    """Who wins the `timeout` ending (the reference code scores it for the impostors)."""
    confirm_ejects: bool = False
    """Whether the server announces the role of an ejected player (`Blue was ejected.
    Blue was an Impostor.`, or `... was a Crewmate.`), as the reference does; off, only
    the ejection is announced and the role stays secret."""
    ghost_tasks: bool = False
    """Whether crewmates out of play (killed or ejected) go on doing their tasks as
    ghosts, as in the reference: a ghost may start and finish its tasks (nothing else),
    and the `tasks_done` ending then needs every crewmate's tasks, the ghosts' too. Off
    (the default, this project's older rule), the dead leave play and the ending needs
    only the living crew's tasks."""
    roles: Literal["seeded", "fixed"] = "seeded"
    """How the impostors are chosen: `seeded` draws them from the game's seed; `fixed`
    makes the seats in `fixed_impostors` the impostors in every game, as the reference's
    roster does (tasks are still drawn from the seed)."""
    fixed_impostors: tuple[str, ...] = ("red", "pink")
    """The impostor seats (colours) when `roles` is `fixed`; exactly `n_impostors` of them,
    each one of the game's seats. The default is the reference's (James at red, Olivia at
    pink). Unused when `roles` is `seeded`."""
    talk: Literal["open", "turns"] = "open"
    """The meeting's talk protocol. `open` (the default, this project's older rule):
    round-robin in seat order, each player at most `max_utterances` spoken lines, a pass
    takes a turn without using a line, and talk ends early after a whole round in which
    nobody spoke. `turns` (the reference's protocol): the living speak in roster (seat)
    order, each gets exactly `max_utterances` turns, a pass or a failed turn uses one of
    them, and talk never ends early on a silent round; it ends when every turn is used
    or the talk time (`meeting_max_ticks`) is spent."""
    impostors_may_skip: bool = True
    """Whether an impostor may vote `skip`. False is the reference's rule (only crewmates
    may skip): the rules refuse an impostor's skip (an `action_rejected` of action `vote`)
    and count its ballot instead for the first other living player in seat order who is
    no impostor, the reference's fallback (the `vote` event's `replaced` says so). True
    (the default, this project's older rule) lets anyone skip."""

    @model_validator(mode="after")
    def _crew_outnumbers(self) -> RulesConfig:
        if self.n_impostors * 2 >= self.n_players:
            raise ValueError(
                f"rules.n_impostors={self.n_impostors} leaves too few crewmates for "
                f"rules.n_players={self.n_players}; use fewer impostors than half the seats"
            )
        return self

    @model_validator(mode="after")
    def _fixed_seats_counted(self) -> RulesConfig:
        # Whether the seats are the game's is checked where the seats are known
        # (`controller.config.resolve_config`, and the engine).
        if self.roles == "fixed":
            seats = self.fixed_impostors
            if len(set(seats)) != len(seats) or len(seats) != self.n_impostors:
                raise ValueError(
                    f"rules.fixed_impostors={list(seats)} must name rules.n_impostors="
                    f"{self.n_impostors} distinct seats when rules.roles is 'fixed'; list "
                    f"that many colours, or set rules.roles: seeded"
                )
        return self
