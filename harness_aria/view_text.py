"""The state view as ARIA's prompts carry it: the facts of `controller.views.StateView`,
in fewer words.

`StateView` decides what an agent may know (the state mode's filter is applied before
any of this); this module only lays those facts out for a prompt. It leaves out what
holds no fact for the agent (an impostor's "0/0 tasks", "no task in progress", "no
bodies seen", a dead player's roster line, whose body is in "Dead players", who is in
sight while every living player sits at the meeting table), writes positions as the
blocks players stand on, and writes the roster and earlier meetings' ballots densely:
every player's last-known room, position and age; every ballot, grouped by whom it was
for. Nothing else the view holds is dropped (tested: `tests/harness_aria/test_view_text.py`).
`render_look` is the short view of the calls that judge a frame.

Under `AriaSpec.prompt_content: reference` the view opens with the per-agent part of the
reference's personal message (the side's part is in the shared prefix,
`harness_aria.prompts.personal_message`): who the agent is and its fellow impostors, and
a crewmate's assigned tasks with their stations' positions, all of them in assignment
order (the reference's message lists them whatever the state mode), so the line stays
the same all game.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from controller.events import Vec3
from controller.observation import ChatEntry, MeetingRecord, Observation
from controller.views import (
    InView,
    StateView,
    TaskLocation,
    dead_line,
    meeting_cause,
    meeting_result,
)

if TYPE_CHECKING:
    from world.geometry import ShipGeometry

PromptContent = Literal["reference", "lean"]
"""What each call is told (`AriaSpec.prompt_content`)."""


def _cap(name: str) -> str:
    return name.capitalize()


def _xz(pos: Vec3) -> str:
    """A position as its block's coordinates, `(x, z)`: the block a player stands on
    (Minecraft's own convention; a tenth of a block says nothing a prompt needs)."""
    return f"({math.floor(pos[0])}, {math.floor(pos[2])})"


def _ago(steps: int) -> str:
    if steps <= 0:
        return "now"
    return "1 step ago" if steps == 1 else f"{steps} steps ago"


def _listing(items: dict[str, InView]) -> str:
    return ", ".join(
        f"{_cap(who)} ({v.distance:.1f} blocks, {v.side})"
        for who, v in sorted(items.items(), key=lambda kv: kv[1].distance)
    )


def chat_line(c: ChatEntry) -> str:
    """One chat line: `[Server] ...` or `<Speaker> ...`."""
    who = "[Server]" if c.kind == "server" else f"<{_cap(c.speaker or '?')}>"
    return f"{who} {c.text}"


def meeting_line(m: MeetingRecord) -> str:
    """One earlier meeting: caller, body and room, outcome, and every ballot grouped by
    whom it was for (`Votes: Pink by Green, Orange; skip by Black, Red; abstained: White`)."""
    why, result = meeting_cause(m), meeting_result(m)
    by: dict[str, list[str]] = {}
    for voter, target in sorted(m.votes.items()):
        key = "abstained" if target is None else target.lower()
        by.setdefault(key, []).append(_cap(voter))
    groups = sorted(
        (k for k in by if k != "abstained"), key=lambda k: (k == "skip", -len(by[k]), k)
    )
    parts = [f"{'skip' if k == 'skip' else _cap(k)} by {', '.join(by[k])}" for k in groups]
    if "abstained" in by:
        parts.append("abstained: " + ", ".join(by["abstained"]))
    return f"#{m.index} (step {m.step}): {why}; {result}. Votes: {'; '.join(parts) or 'none'}."


def render_view(v: StateView, content: PromptContent = "reference") -> str:
    """The whole state view as text (what `decision.view_text` records)."""
    return joined_view(render_view_layout(v, content))


def assigned_missions(obs: Observation, geometry: ShipGeometry) -> list[TaskLocation]:
    """An agent's assigned tasks with their stations, in assignment order, from its
    observation and the map: the crewmate's part of the reference's personal message,
    whatever the state mode (an ego view carries no task locations of its own)."""
    done = set(obs.tasks_done)
    return [
        TaskLocation(
            station=s,
            room=geometry.station_room(s),
            pos=geometry.station_pos(s),
            done=s in done,
        )
        for s in obs.tasks
    ]


def _personal(
    v: StateView, content: PromptContent, missions: Sequence[TaskLocation] | None
) -> list[str]:
    """The per-agent lines of the reference's personal message after the identity line:
    a crewmate's assigned tasks and their stations (none under `lean`, or when neither
    `missions` nor the view holds them)."""
    if content != "reference" or v.role != "crewmate":
        return []
    tasks = missions if missions is not None else v.tasks
    if not tasks:
        return []
    listing = "; ".join(f"{t.station} in {t.room} {_xz(t.pos)}" for t in tasks)
    return [f"Your assigned tasks (station in room (x, z)): {listing}."]


def joined_view(parts: tuple[str, str, str]) -> str:
    """The parts of `render_view_layout` as one text, in their order."""
    return "\n".join(t for t in parts if t)


def _identity(v: StateView) -> str:
    return (
        f"You are {_cap(v.agent)}, {'an' if v.role[0] in 'aeiou' else 'a'} {v.role}"
        + (f" (fellow impostors: {', '.join(v.teammates)})" if v.teammates else "")
        + "."
    )


def _where(v: StateView) -> str:
    return (
        f"Step {v.step}. Phase: {v.scoreboard.phase}. You are in {v.room} at {_xz(v.pos)}, "
        f"facing {v.yaw:.0f} degrees."
    )


def _sight(v: StateView) -> list[str]:
    label = "In view now" if v.mode == "ego" else "In sight now"
    lines = [f"{label}: " + (_listing(v.in_view) or "nobody")]
    if v.bodies_in_view:
        lines.append(f"Bodies {label.lower()}: " + _listing(v.bodies_in_view))
    return lines


def render_look(
    v: StateView,
    content: PromptContent = "reference",
    missions: Sequence[TaskLocation] | None = None,
) -> str:
    """What a call that judges a frame is given (KILL's witness scan, SURVEILLANCE): who
    the agent is (under `reference` content with its part of the personal message), the
    dead, where it stands and faces, and whom and which bodies it can see. The
    reference's scan and surveillance prompts carry no state at all; memory, pending
    tasks, the roster and chat are left out here, as they say nothing about a picture."""
    lines = [_identity(v), *_personal(v, content, missions)]
    if v.dead:
        lines.append(dead_line(v.dead, v.body_rooms))
    return "\n".join([*lines, _where(v), *_sight(v)])


def render_view_layout(
    v: StateView,
    content: PromptContent = "reference",
    missions: Sequence[TaskLocation] | None = None,
) -> tuple[str, str, str]:
    """The state view in three parts: the facts that change rarely (who the agent is,
    earlier meetings, the dead, bodies seen), which open every prompt's user text so that
    an agent's successive calls share a long identical start (the part a provider's
    prompt cache can match); the agent's pending tasks (they change with each task done,
    so they follow the memory's settled part, see `Toolkit.context`); and the rest (this
    step's position, status, sight, roster and chat), which follows the agent's skills
    and memory. In a meeting the rest ends with the lines of the moment (step, place,
    whose turn it is) and the roster gives each sighting's step rather than its age, so
    an agent's successive calls of one meeting share everything through the end of the
    earlier call's chat.

    Under `content: reference` the head's identity line is followed by the agent's part
    of the personal message (a crewmate's assigned tasks with their stations: `missions`
    when given, which an ego view needs, else the view's own task list)."""
    sb = v.scoreboard
    crew = v.role == "crewmate"
    head = [_identity(v), *_personal(v, content, missions)]
    if v.past_meetings:
        head.append("Earlier meetings:")
        head += [f"  {meeting_line(m)}" for m in v.past_meetings]
    if v.dead:
        head.append(dead_line(v.dead, v.body_rooms))
    if v.bodies_seen:
        head.append("Bodies you have seen:")
        head += [
            f"  {_cap(who)}: {s.room} {_xz(s.pos)}, step {s.step}"
            for who, s in sorted(v.bodies_seen.items())
        ]
    tasks = ""
    if v.tasks is not None and (crew or v.tasks):
        pending = [f"{t.station} in {t.room} {_xz(t.pos)}" for t in v.tasks if not t.done]
        tasks = "Your pending tasks (station in room (x, z)): " + ("; ".join(pending) or "none")
    meeting = sb.phase != "free_roam"
    # In a meeting the lines of the moment (the step, whose turn it is) close the view:
    # everything before them (roster, the chat so far, which only grows) is then the same
    # in an agent's successive calls of the meeting, the start a prompt cache matches.
    lines = [] if meeting else [_where(v)]
    moment = [_where(v)] if meeting else []
    status = (
        [f"Your tasks done: {sum(sb.task_bits)}/{len(sb.task_bits)}."]
        if crew or sb.task_bits
        else []
    )
    if sb.kill_ready:
        status.append("Your kill is ready.")
    if sb.emergency_ready:
        status.append("You can call an emergency meeting.")
    if status:
        lines.append(" ".join(status))
    tp = v.task_progress
    if tp is not None:
        lines.append(
            f"Task in progress: station {tp.station} in {tp.room}, {tp.ticks_done} of "
            f"{tp.ticks_needed} ticks done (stay at the station to finish it)."
        )
    elif v.task_in_progress is not None:
        lines.append(
            f"Task in progress: station {v.task_in_progress}, not finished "
            f"(stay at the station to finish it)."
        )
    if sb.phase == "free_roam" or v.bodies_in_view:
        # in a meeting every living player sits at the table: whom the seat faces says
        # nothing (the roster lists the living)
        lines += _sight(v)
    if sb.speaker:
        (moment if meeting else lines).append(
            f"Meeting: {_cap(sb.speaker)} is speaking; {sb.meeting_countdown} ticks of talk left."
        )
    if sb.reported_body:
        where = v.body_rooms.get(sb.reported_body)
        lines.append(
            f"This meeting was called over {_cap(sb.reported_body)}'s body"
            + (f", found in {where}." if where else ".")
        )
    if v.seen_before:
        lines.append("Where you last saw each player (in free roam, before any meeting):")
        lines += [
            f"  {_cap(who)}: {s.room} {_xz(s.pos)}, step {s.step}"
            for who, s in sorted(v.seen_before.items())
        ]
    if v.last_seen is not None:
        known = v.last_seen
        entries = []
        for who in v.roster or sorted(known):
            if who in v.dead:  # where the dead lie is in "Dead players" and "Bodies"
                continue
            s = known.get(who)
            entries.append(
                # a meeting stops the clock of sightings: the step itself keeps the
                # line the same from turn to turn (the age would change every step)
                f"{_cap(who)} {s.room} {_xz(s.pos)} "
                + (f"step {s.step}" if meeting else _ago(v.step - s.step))
                if s
                else f"{_cap(who)} never seen"
            )
        lines.append(
            "Roster (the living; last-known room (x, z), when): "
            + ("; ".join(entries) or "nobody yet")
        )
    if v.meeting_chat:
        lines.append("This meeting's chat so far (all of it):")
        lines += [f"  {chat_line(c)}" for c in v.meeting_chat]
    elif v.chat:
        lines.append("Chat:")
        lines += [f"  {chat_line(c)}" for c in v.chat]
    return "\n".join(head), tasks, "\n".join(lines + moment)
