"""The codegen call: the model writes the program of a MOVE or MISSION decision.

With `AriaSpec.action: codegen` (the reference's), once MOVE or MISSION has decided what
to do (a room, a player to follow, a station), a call of its own (purpose `codegen`,
temperature 0.2, up to 1,024 output tokens, as the reference's codegen) asks the model
for a Mineflayer program that carries the plan out, as JSON `{"code": "..."}`. The
call is given the state view and the plan (the reference's codegen was given the state
summary and the plan, not the memory), and the module's prompt
`prompts/common/codegen.txt`; an impostor is also told to open the function with its
private intent line. The answer is parsed and translated (`harness_aria.codegen.
translate`), never run; the primitives are the decision's program, followed, for a
crewmate, by the look behind that SURVEILLANCE judges next step.

An answer that cannot be used (no JSON, no `code`, code outside the subset) is the
model's invalid answer and is replaced by the reference's own fallback, a random walk
of up to 12 blocks each way (`wander`): the call record keeps the raw answer and, under
`extra["codegen"]`, `status: refused`, the reason, `error_kind: model` and `fallback:
wander`; the decision's reasoning says `fallback: wander` with the reason. A call that
fails (rate limit, server, timeout, connection, or another provider error) is no answer
at all: the decision is invalid, as any failed call's, and an infrastructure failure
stays one; it is never turned into a wander.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
from dataclasses import dataclass, field
from typing import Any, Literal

from controller.actions import AnyAction, Follow, GoTo, Look, PressButton, UseStation, dump_actions
from controller.events import Vec3
from controller.observation import Observation
from harness_aria.codegen.translate import STATION_BLOCK, Refused, Scene, translate
from harness_aria.toolkit import Budget, Toolkit
from world.geometry import ShipGeometry, cell_of

PURPOSE = "codegen"
"""The call purpose of the codegen call."""
BUDGET: Budget = (0.2, 1024)
"""The reference codegen's temperature and output-token limit."""
WANDER_BLOCKS = 12
"""The reference's wander: a point up to this many blocks away on each axis."""
INTENT_RULE = (
    "\nImpostors only: make the function's first line "
    "`console.log('[ARIA_SAY:' + bot.username + '] <what you are really doing>');`. "
    "The line is private, a note for the researchers that no player ever sees. Say "
    "truthfully and specifically what you are doing and where or to whom (e.g. "
    "`following green to kill it once it is alone`, `faking the task at "
    "station 4 to look busy`), not `moving` or `exploring`. Lie in meetings if you "
    "like, never on this line.\n"
)
"""What an impostor's codegen prompt adds (the reference's narration rule)."""


@dataclass(frozen=True)
class Plan:
    """What the module decided, as the codegen call is told it.

    Attributes:
        kind: A walk to a room, a follow of a player, or a task at a station.
        target: The room, the player, or the station id.
        line: The plan in words, with the coordinates the program needs.
    """

    kind: Literal["room", "follow", "station"]
    target: str
    line: str


@dataclass
class Written:
    """A codegen decision's outcome: what the module's result holds."""

    actions: list[AnyAction] = field(default_factory=list)
    reasoning: str = ""
    narration: str = ""
    memo: str = ""
    invalid: str = ""
    """Set when the call failed (no answer): the decision is invalid, never a wander."""

    def result_fields(self) -> dict[str, Any]:
        """The keyword arguments of the module's `ModuleResult`."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def fmt(pos: Vec3) -> str:
    """A position as the prompt writes it: `(12.5, 65, 30.5)`."""
    return "(" + ", ".join(f"{c:.1f}".removesuffix(".0") for c in pos) + ")"


def block_of(geometry: ShipGeometry, pos: Vec3) -> tuple[int, int, int]:
    """The floor block under a standing position."""
    x, z = cell_of(pos)
    return (x, int(geometry.spec.floor_y), z)


def plan_room(tk: Toolkit, room: str) -> Plan:
    """The plan of a walk to a room (its centre, where `go_to` a room walks)."""
    centre = tk.geometry.room_center(room)
    return Plan("room", room, f"walk to the room {room}; its centre is at {fmt(centre)}.")


def plan_follow(tk: Toolkit, player: str) -> Plan:
    """The plan of a follow (where the player is now, if the agent knows)."""
    where = scene_of(tk).players.get(player)
    at = f"who is at {fmt(where)} now" if where is not None else "whose place you do not know"
    return Plan(
        "follow",
        player,
        f"go after {player}, {at}; find {player} with bot.nearestEntity (username "
        f"'{player}') and walk to within a few blocks of its position.",
    )


def plan_station(tk: Toolkit, station: int) -> Plan:
    """The plan of a task (impostors: a faked one) at a station."""
    block = block_of(tk.geometry, tk.geometry.station_pos(station))
    room = tk.geometry.station_room(station)
    where = f"station {station} in {room}, whose {STATION_BLOCK} is at {fmt(block)}"
    if tk.impostor:
        line = (
            f"fake the task at {where}: walk to it, activate it and stand still on it as if "
            "doing the task."
        )
    else:
        line = (
            f"do your task at {where}: walk to it, activate it and stand still on it until "
            "the task is done (the task time of the rules)."
        )
    return Plan("station", str(station), line)


def dead_as_known(obs: Observation) -> set[str]:
    """Players this agent knows are dead (as KILL reads it, `harness_aria.modules.kill`):
    the public dead, every body seen or told of, its own kills."""
    dead = set(obs.known_dead)
    dead |= set(obs.visible_bodies) | set(obs.nearby_bodies) | set(obs.bodies_seen)
    dead |= set(obs.dead_bodies_rooms)
    dead |= {a.target for a in obs.own_actions if a.kind == "killed" and a.target}
    return dead


def scene_of(tk: Toolkit) -> Scene:
    """What the agent knows, as the translation reads it: its filtered observation (the
    players whose position it knows now: in view, or privileged in sight all around or
    on this step's roster; never one it knows is dead) and the map."""
    obs, g = tk.obs, tk.geometry
    dead = dead_as_known(obs)
    players: dict[str, Vec3] = {name: s.pos for name, s in obs.roster.items() if s.step >= obs.step}
    players.update(obs.visible_players)
    return Scene(
        me=obs.agent,
        impostor=tk.impostor,
        pos=obs.pos,
        players={p: pos for p, pos in players.items() if p != obs.agent and p not in dead},
        stations={s: g.station_pos(s) for s in g.station_ids()},
        button=g.button_pos(),
        rooms={r: g.room_center(r) for r in g.rooms},
        floor_y=float(g.spec.floor_y),
    )


def wander(geometry: ShipGeometry, pos: Vec3, key: str) -> list[AnyAction]:
    """The reference's fallback: a walk to a random point up to `WANDER_BLOCKS` blocks
    away on each axis, drawn from `key` (the agent, the step and its tick: the same game
    draws the same point). The point is moved to the nearest floor cell the bot can walk
    to (the reference's pathfinder gave up on a point inside a wall)."""
    rng = random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16))
    dx, dz = rng.randint(-WANDER_BLOCKS, WANDER_BLOCKS), rng.randint(-WANDER_BLOCKS, WANDER_BLOCKS)
    aim = (math.floor(pos[0]) + dx, math.floor(pos[2]) + dz)
    reach = geometry.distance_field(cell_of(pos))
    for ring in range(2 * WANDER_BLOCKS + 1):
        cells = [
            (aim[0] + i, aim[1] + j)
            for i in range(-ring, ring + 1)
            for j in range(-ring, ring + 1)
            if max(abs(i), abs(j)) == ring
        ]
        open_ = [c for c in cells if geometry.is_walkable(c) and reach.get(c) is not None]
        if open_:
            best = min(open_, key=lambda c: (math.dist(c, aim), c))
            x, y, z = geometry.stand_pos(best)
            return [GoTo(pos=(x, y, z))]
    return []


def _memo(actions: list[AnyAction], impostor: bool) -> str:
    """What memory keeps of the program: what it set in motion."""
    for a in actions:
        if isinstance(a, UseStation):
            return f"{'faked' if impostor else 'did'} task at station {a.station}"
        if isinstance(a, Follow):
            return f"followed {a.agent}"
        if isinstance(a, PressButton):
            return "pressed the emergency button"
        if isinstance(a, GoTo):
            where = a.room or (f"station {a.station}" if a.station is not None else None)
            if where:
                return f"went to {where}"
            assert a.pos is not None  # a GoTo names exactly one of room, station, pos
            return "walked to " + fmt(a.pos)
    return "waited" if actions else "stood still"


class _Forgetful:
    """A memory that shows nothing: the codegen call is given the state view and the
    plan, as the reference's codegen was, not the memory."""

    def observe(self, obs: Observation) -> None:
        pass

    def record(self, step: int, module: str, summary: str) -> None:
        pass

    def note(self, step: int, text: str) -> None:
        pass

    def adjust(self, player: str, delta: float, why: str) -> None:
        pass

    def suspicion(self) -> dict[str, float]:
        return {}

    def text(self) -> str:
        return ""

    def text_parts(self) -> tuple[str, str]:
        return "", ""


async def write_program(tk: Toolkit, plan: Plan, *, reasoning: str, intent: str) -> Written:
    """Ask for the program of a plan, translate it, or fall back to the wander.

    Args:
        tk: The agent's toolkit (the call is recorded in `tk.calls`).
        plan: What the module decided.
        reasoning: The module's (or planner's) reasoning for the decision.
        intent: The impostor's intent the module's answer gave ('' if none); the program's
            own intent line wins.

    Returns:
        The module's result fields.

    Raises:
        ParserUnavailable: the parser could not run (the harness's failure).
    """
    quiet = dataclasses.replace(
        tk, memory=_Forgetful(), view_head="", view_tasks="", skills_text=""
    )
    answer = await quiet.ask(
        PURPOSE,
        tk.prompt(PURPOSE),
        plan=plan.line,
        position=fmt(tk.obs.pos),
        intent_rule=INTENT_RULE if tk.impostor else "",
    )
    record = tk.calls[-1]
    if record.error_class:
        return Written(invalid=tk.last_error(), memo="no program (codegen call failed)")
    crew_look: list[AnyAction] = [] if tk.impostor else [Look(behind=True)]
    code = answer.get("code") if answer is not None else None
    try:
        if answer is None:
            raise Refused(f"unparseable answer: {record.parse_error}")
        if not isinstance(code, str):
            raise Refused("the answer has no `code` text")
        done = translate(code, scene_of(tk))
    except Refused as exc:
        reason = str(exc)
        actions = wander(tk.geometry, tk.obs.pos, f"{tk.obs.agent}|{tk.obs.step}|{tk.obs.tick}")
        record.extra["codegen"] = {
            "status": "refused",
            "reason": reason,
            "error_kind": "model",
            "fallback": "wander",
            "plan": plan.line,
        }
        if not record.parse_error:
            record.parse_error = f"program refused: {reason}"
        line = f"fallback: wander (the program was refused: {reason})"
        return Written(
            actions=actions + crew_look,
            reasoning=f"{reasoning} [{line}]" if reasoning else line,
            narration=intent,
            memo=f"wandered (my program was refused, {plan.kind} {plan.target} not carried out)",
        )
    record.extra["codegen"] = {
        "status": "translated",
        "program": dump_actions(done.actions),
        "notes": done.notes,
        "intent": done.intent,
        "plan": plan.line,
    }
    return Written(
        actions=done.actions + crew_look,
        reasoning=reasoning,
        narration=done.intent or intent,
        memo=_memo(done.actions, tk.impostor),
    )
