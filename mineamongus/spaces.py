"""The environment's spaces: what a policy is shown, what it may ask, and what the rules allow.

Observation (a `gymnasium.spaces.Dict` per seat):

| key | space | what |
|---|---|---|
| `frame` | `Box(0, 255, (360, 640, 3), uint8)` | first-person picture (not with `frames: off`) |
| `role` | `Discrete(2)` | `crewmate`, `impostor` (`ROLES`) |
| `phase` | `Discrete(4)` | `free_roam`, `meeting`, `voting`, `over` (`PHASES`) |
| `step` | `Discrete(max_steps + 1)` | the step about to be decided |
| `scoreboard` | `Dict` | the on-screen signals of `controller.observation.Scoreboard` |
| `view` | `Text` | the state view (`ego` or `privileged`) the ARIA harness would get |

The scoreboard's players are seat indices (the last value is "nobody"), its area an
index into `Codec.areas`, its station an index into `Codec.stations` (the last is
"none"). The view text is the `controller.views.Knowledge` view of the observation,
so an `ego` seat is told only what its camera showed; characters outside the text
space's set (`VIEW_CHARSET`) are shown as `?`.

Action (a `Dict`): `module` picks one of the eight decision modules (`MODULES`); the
argument it needs is read from its own key: `target` (KILL: a seat), `body` (REPORT:
whose body), `station` (MISSION: an index into `Codec.stations`), `room` (MOVE: an
index into `Codec.rooms`), `text` (MEETING: the line; empty passes), `vote` (VOTE: a
seat, then `skip`, then abstain). Every action becomes the program the controller
would get from any agent (`controller.programs`), validated by the same code; what
the rules refuse is logged as a `rules` failure and the bot stands still.

`Codec.mask` is the action mask: per key, an int8 array of what the rules allow now
as far as the seat may know it (`action_space.sample(mask=...)` takes it as it is).
"""

from __future__ import annotations

import json
import string
from typing import Any

import numpy as np
from gymnasium import spaces

from controller.actions import (
    AnyAction,
    GoTo,
    KillTarget,
    Look,
    PressButton,
    ReportBody,
    Say,
    UseStation,
    build_action,
)
from controller.agents.base import AgentDecision
from controller.config import GameConfig
from controller.observation import FRAME_SHAPE, Observation
from world.chat import chat_rules, normalise_chat
from world.geometry import ShipGeometry

MODULES = (
    "KILL",
    "REPORT",
    "SURVEILLANCE",
    "EMERGENCY",
    "MEETING",
    "VOTE",
    "MOVE",
    "MISSION",
)
"""The eight decision modules, in the order of `harness_aria.modules.MODULES`."""
ROLES = ("crewmate", "impostor")
PHASES = ("free_roam", "meeting", "voting", "over")
EXTRA_AREAS = ("hallway", "ghost_area", "outside")
"""Areas besides the rooms that `ShipGeometry.room_at` names."""
VIEW_MAX_LENGTH = 65536
"""Longest view text (longer ones are cut; a full paper game's view is far shorter)."""
VIEW_CHARSET = (
    string.ascii_letters
    + string.digits
    + string.punctuation
    + " \n"
    + "".join(chr(c) for c in range(0xA0, 0x100) if c != 0xA7)
    + "\u2013\u2014\u2018\u2019\u201c\u201d\u2026"
)
"""Characters of the view text: printable ASCII, newline, Latin-1 and typographic marks."""
SAY_CHARSET = string.ascii_letters + string.digits + " .,!?'-"
"""Characters a sampled utterance is drawn from (any line the chat rule accepts may be
sent; this only bounds what `action_space.sample()` makes up)."""

Mask = dict[str, np.ndarray | None]

_ARGUMENT: dict[str, tuple[str, type[KillTarget | ReportBody | UseStation | GoTo], str]] = {
    "KILL": ("target", KillTarget, "target"),
    "REPORT": ("body", ReportBody, "body"),
    "MISSION": ("station", UseStation, "station"),
    "MOVE": ("room", GoTo, "room"),
}
"""Module -> (its action key, the program action it becomes, that action's field)."""


def _onehot(n: int, chosen: list[int]) -> np.ndarray:
    m = np.zeros(n, dtype=np.int8)
    m[chosen] = 1
    return m


class Codec:
    """Turns observations into the spaces' values and actions into decisions.

    Args:
        config: The game's configuration (seats, rules, frames).
        geometry: The map.
    """

    def __init__(self, config: GameConfig, geometry: ShipGeometry) -> None:
        self.seats = config.agent_ids()
        self.rooms = list(geometry.rooms)
        self.areas = self.rooms + [a for a in EXTRA_AREAS if a not in self.rooms]
        self.stations = list(geometry.station_ids())
        self.frames = config.frames != "off"
        rules = config.rules
        self.max_steps = rules.max_steps
        self.tasks = rules.tasks_per_crewmate
        self.talk_ticks = rules.meeting_max_ticks
        self.text_max = chat_rules().max_length

    # ------------------------------------------------------------------ spaces
    def observation_space(self) -> spaces.Dict:
        """A new observation space (one per seat, so each seeds its own)."""
        n = len(self.seats)
        board = spaces.Dict(
            {
                "kill_ready": spaces.Discrete(2),
                "task_bits": spaces.MultiBinary(self.tasks),
                "dead": spaces.Discrete(2),
                "meeting_countdown": spaces.Box(0, self.talk_ticks, (1,), np.int64),
                "speaker": spaces.Discrete(n + 1),
                "game_over": spaces.Discrete(2),
                "area": spaces.Discrete(len(self.areas)),
                "task_in_progress": spaces.Discrete(len(self.stations) + 1),
                "reported_body": spaces.Discrete(n + 1),
                "emergency_ready": spaces.Discrete(2),
            }
        )
        fields: dict[str, spaces.Space[Any]] = {
            "role": spaces.Discrete(len(ROLES)),
            "phase": spaces.Discrete(len(PHASES)),
            "step": spaces.Discrete(self.max_steps + 1),
            "scoreboard": board,
            "view": spaces.Text(VIEW_MAX_LENGTH, min_length=0, charset=VIEW_CHARSET),
        }
        if self.frames:
            fields["frame"] = spaces.Box(0, 255, FRAME_SHAPE, np.uint8)
        return spaces.Dict(fields)

    def action_space(self) -> spaces.Dict:
        """A new action space (one per seat)."""
        n = len(self.seats)
        return spaces.Dict(
            {
                "module": spaces.Discrete(len(MODULES)),
                "target": spaces.Discrete(n),
                "body": spaces.Discrete(n),
                "station": spaces.Discrete(len(self.stations)),
                "room": spaces.Discrete(len(self.rooms)),
                "text": spaces.Text(self.text_max, min_length=0, charset=SAY_CHARSET),
                "vote": spaces.Discrete(n + 2),
            }
        )

    # ------------------------------------------------------------------ observations
    def _seat(self, name: str | None) -> int:
        return self.seats.index(name) if name in self.seats else len(self.seats)

    def encode(
        self,
        obs: Observation,
        view_text: str,
        *,
        phase: str | None = None,
        dead: bool | None = None,
    ) -> dict[str, Any]:
        """One seat's observation value.

        Args:
            obs: The observation (the filtered one: see `controller.views.Knowledge`).
            view_text: Its state view text.
            phase: Override of the phase (`over` for the observation at the end).
            dead: Override of the dead flag (True for the observation at a death).
        """
        sb = obs.scoreboard
        bits = np.zeros(self.tasks, dtype=np.int8)
        bits[: min(self.tasks, len(sb.task_bits))] = sb.task_bits[: self.tasks]
        shown_phase = phase or sb.phase
        board = {
            "kill_ready": np.int64(sb.kill_ready),
            "task_bits": bits,
            "dead": np.int64(sb.dead if dead is None else dead),
            "meeting_countdown": np.array(
                [min(max(sb.meeting_countdown or 0, 0), self.talk_ticks)], dtype=np.int64
            ),
            "speaker": np.int64(self._seat(sb.speaker)),
            "game_over": np.int64(sb.game_over or shown_phase == "over"),
            "area": np.int64(self.areas.index(sb.area) if sb.area in self.areas else 0),
            "task_in_progress": np.int64(
                self.stations.index(sb.task_in_progress)
                if sb.task_in_progress in self.stations
                else len(self.stations)
            ),
            "reported_body": np.int64(self._seat(sb.reported_body)),
            "emergency_ready": np.int64(sb.emergency_ready),
        }
        value: dict[str, Any] = {
            "role": np.int64(ROLES.index(obs.role)),
            "phase": np.int64(PHASES.index(shown_phase)),
            "step": np.int64(min(max(obs.step, 0), self.max_steps)),
            "scoreboard": board,
            "view": clean_text(view_text),
        }
        if self.frames:
            rgb = obs.rgb
            if rgb is None or rgb.shape != FRAME_SHAPE:
                rgb = np.zeros(FRAME_SHAPE, dtype=np.uint8)
            value["frame"] = np.asarray(rgb, dtype=np.uint8)
        return value

    def blank(self, role: str) -> dict[str, Any]:
        """The observation of a seat the game has not asked yet (all zeros, no text)."""
        n = len(self.seats)
        value: dict[str, Any] = {
            "role": np.int64(ROLES.index(role)),
            "phase": np.int64(0),
            "step": np.int64(0),
            "scoreboard": {
                "kill_ready": np.int64(0),
                "task_bits": np.zeros(self.tasks, dtype=np.int8),
                "dead": np.int64(0),
                "meeting_countdown": np.zeros(1, dtype=np.int64),
                "speaker": np.int64(n),
                "game_over": np.int64(0),
                "area": np.int64(0),
                "task_in_progress": np.int64(len(self.stations)),
                "reported_body": np.int64(n),
                "emergency_ready": np.int64(0),
            },
            "view": "",
        }
        if self.frames:
            value["frame"] = np.zeros(FRAME_SHAPE, dtype=np.uint8)
        return value

    # ------------------------------------------------------------------ masks
    def no_mask(self) -> Mask:
        """Nothing allowed (a seat that does not act this step)."""
        n = len(self.seats)
        return {
            "module": np.zeros(len(MODULES), dtype=np.int8),
            "target": np.zeros(n, dtype=np.int8),
            "body": np.zeros(n, dtype=np.int8),
            "station": np.zeros(len(self.stations), dtype=np.int8),
            "room": np.zeros(len(self.rooms), dtype=np.int8),
            "text": None,
            "vote": np.zeros(n + 2, dtype=np.int8),
        }

    def mask(self, known: Observation) -> Mask:
        """What the rules allow this seat now, as far as it may know.

        `known` is the observation filtered by the seat's `Knowledge`, so the mask tells
        no more than the view: KILL needs the kill ready and a crewmate in view (or on a
        privileged roster), REPORT a body in view. A player killed unseen is still a
        target or a ballot here; choosing it is refused by the rules and logged.
        """
        m = self.no_mask()
        modules = m["module"]
        assert modules is not None
        phase = known.phase
        dead = set(known.known_dead)
        if phase == "meeting":
            modules[MODULES.index("MEETING")] = 1
            return m
        if phase == "voting":
            modules[MODULES.index("VOTE")] = 1
            ballots = [i for i, a in enumerate(self.seats) if a not in dead]
            m["vote"] = _onehot(
                len(self.seats) + 2, [*ballots, len(self.seats), len(self.seats) + 1]
            )
            return m
        impostor = known.role == "impostor"
        prey = [
            a
            for a in {**known.visible_players, **known.roster}
            if a not in known.teammates and a != known.agent and a not in dead and a in self.seats
        ]
        if impostor and known.kill_ready and prey:
            modules[MODULES.index("KILL")] = 1
            m["target"] = _onehot(len(self.seats), [self.seats.index(a) for a in prey])
        bodies = [v for v in known.visible_bodies if v in self.seats]
        if bodies:
            modules[MODULES.index("REPORT")] = 1
            m["body"] = _onehot(len(self.seats), [self.seats.index(v) for v in bodies])
        modules[MODULES.index("SURVEILLANCE")] = 1
        if known.emergency_ready:
            modules[MODULES.index("EMERGENCY")] = 1
        open_tasks = [s for s in known.tasks if s not in known.tasks_done]
        if impostor or open_tasks:
            modules[MODULES.index("MISSION")] = 1
            chosen = (
                range(len(self.stations))
                if impostor
                else (self.stations.index(s) for s in open_tasks if s in self.stations)
            )
            m["station"] = _onehot(len(self.stations), list(chosen))
        modules[MODULES.index("MOVE")] = 1
        m["room"] = np.ones(len(self.rooms), dtype=np.int8)
        return m

    # ------------------------------------------------------------------ actions
    def decide(
        self, action: Any, phase: str, view_text: str, spec: dict[str, Any]
    ) -> AgentDecision:
        """The decision an action stands for (the step loop validates its program).

        Indices may be given as names too, in any case: a module, a seat's colour, a
        room, a station's number as text, `skip` or `abstain` (`{"module": "MOVE",
        "room": "Electrical"}`, `{"module": "MISSION", "station": "7"}`).
        A module the phase has no program for (VOTE outside the vote, anything but VOTE
        at it) or a missing or out-of-range argument is a `rules` failure.
        """
        if not isinstance(action, dict):
            return AgentDecision(
                rules_error=f"an action is a dict of {', '.join(self.action_space())}, "
                f"got {type(action).__name__}",
                view_text=view_text,
                spec=spec,
            )
        module = self._name(action.get("module"), list(MODULES))
        chosen: dict[str, Any] = {"module": module}

        def fail(reason: str) -> AgentDecision:
            return AgentDecision(
                module=module or "",
                raw=_json(chosen),
                rules_error=reason,
                view_text=view_text,
                spec=spec,
            )

        if module is None:
            chosen["module"] = _plain(action.get("module"))
            return fail(f"module {chosen['module']!r} is none of {', '.join(MODULES)}")
        if phase == "voting" and module != "VOTE":
            return fail(f"only VOTE at the vote, not {module}")
        if phase != "voting" and module == "VOTE":
            return fail(f"VOTE only at the vote, not during {phase}")
        program: list[AnyAction] = []
        if module == "VOTE":
            ballots = [*self.seats, "skip", "abstain"]
            vote = self._name(action.get("vote"), ballots)
            chosen["vote"] = vote if vote is not None else _plain(action.get("vote"))
            if vote is None:
                return fail(f"vote {chosen['vote']!r} is none of the seats, 'skip' or 'abstain'")
            return AgentDecision(
                module=module,
                vote=None if vote == "abstain" else vote,
                abstain=vote == "abstain",
                raw=_json(chosen),
                view_text=view_text,
                spec=spec,
            )
        if module in _ARGUMENT:
            key, kind, field = _ARGUMENT[module]
            tables: dict[str, list[Any]] = {
                "target": list(self.seats),
                "body": list(self.seats),
                "station": list(self.stations),
                "room": list(self.rooms),
            }
            table = tables[key]
            value = self._name(action.get(key), table)
            chosen[key] = value if value is not None else _plain(action.get(key))
            if value is None:
                return fail(f"{module} needs {key}: {chosen[key]!r} is not one")
            program = [kind(**{field: value})]
        elif module == "SURVEILLANCE":
            program = [Look(behind=True)]
        elif module == "EMERGENCY":
            program = [PressButton()]
        elif module == "MEETING":
            text = action.get("text", "")
            chosen["text"] = text if isinstance(text, str) else _plain(text)
            if not isinstance(text, str):
                return fail("MEETING needs text: a string (empty passes)")
            # An empty line is the speaker's pass; any other line goes to the chat rule.
            if normalise_chat(text):
                say = build_action(Say, text=text)
                if isinstance(say, str):  # the chat rule refuses the line: the seat's to answer
                    return fail(say)
                program = [say]
        return AgentDecision(
            module=module, program=program, raw=_json(chosen), view_text=view_text, spec=spec
        )

    @staticmethod
    def _name(value: Any, table: list[Any]) -> Any:
        """The table entry an index (or the entry itself, any case) names; None when
        neither."""
        if isinstance(value, np.str_):
            value = str(value)
        if isinstance(value, str):
            by_name = {str(t).lower(): t for t in table}
            return by_name.get(value.strip().lower())
        if isinstance(value, bool | np.bool_) or value is None:
            return None
        try:
            index = int(value)
        except (TypeError, ValueError):
            return None
        if index != value or not 0 <= index < len(table):
            return None
        return table[index]


def clean_text(text: str) -> str:
    """The view text inside the text space: unknown characters as `?`, cut to length."""
    allowed = _VIEW_SET
    out = "".join(c if c in allowed else "?" for c in text)
    return out[:VIEW_MAX_LENGTH]


_VIEW_SET = frozenset(VIEW_CHARSET)


def _plain(value: Any) -> Any:
    """A JSON-able copy of an action value (numpy scalars as Python numbers)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def _json(chosen: dict[str, Any]) -> str:
    return json.dumps({k: _plain(v) for k, v in chosen.items()}, ensure_ascii=False)
