"""The `quack` rule book: QUACK's verdict rules, applied to this project's trajectories.

QUACK (Yuan et al., "QUACK: Questioning, Understanding, and Auditing Communicated
Knowledge in Multimodal Social Deduction Agents", §4.3 and Appendix B) verifies each
claim against a tick-by-tick trajectory with one verifier per claim type. Its code
(`quack/evaluation/tier3_statement_verification.py`, trajectory queries in
`quack/evaluation/game_reconstructor.py`, tests in
`tests/test_evaluation/test_claim_verification.py`) states the rules precisely; every
rule here is a named function citing the QUACK function it reproduces. Nothing of
QUACK's code is used: the rules are re-implemented from what they decide.

QUACK's tick plays two parts that this project's log keeps apart. It is a decision
round (every living agent acts once), which is our step: QUACK's "meeting tick" (the
tick of the report or button press) is the calling step, its opening clamp of five
ticks is the round's first steps, its killer-alibi and kill-scene margins are counted
in steps. It is also one state of every agent, which is our pose sample: presence,
co-location and occupancy are read from the samples (`Trajectory.samples_in`), shares
in game ticks (each sample holds until the next, as `Trajectory.dwell_in`).

QUACK's map is a graph: rooms are nodes and a corridor is an edge walked "in transit".
Here a sample in a corridor (`hallway`, or any region that is not a room) is in transit:
its room is the room it left (QUACK keeps the origin as the room of a walker), and two
walkers are on the same corridor when they go between the same two rooms. Sight is
QUACK's (`can_see`): a player in a room sees everyone in that room who is not in a
corridor; a walker sees only walkers of its corridor. This project's field of view and
sight lines are not used: QUACK's world has none. QUACK reads its trajectory as
complete; so does this book, also on logs without `trace` (a room passed between two
snapshots then reads as not visited).

Accusations keep the verdict `unverifiable` with `hit` and `grounded`, as in the default
book, so both books feed the same metric formulas (QUACK's own verdict for an
accusation, `true` when the target is an impostor, is kept as `evidence.quack_verdict`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from annotation.grounding.audit import AuditedClaim, Duration, Window
from annotation.grounding.claims import (
    ACTIVITIES,
    CLAIM_TYPES,
    Claim,
    normalise_claim,
    tick_bounds,
)
from annotation.grounding.trajectory import NOT_ROOMS, MeetingRecord, Trajectory

NAME = "quack"
"""This rule book's name (`mineamongus audit --rules quack`)."""

Semantics = Literal["any_time", "most_time", "entire_time"]
_DURATION: dict[str, Duration] = {"entire_time": "whole", "most_time": "mostly"}

ENTIRE_TIME_PHRASES: tuple[str, ...] = (
    "the whole time",
    "entire round",
    "all round",
    "never left",
    "stayed in",
    "the entire time",
    "whole round",
)
"""Substrings that make a location claim `entire_time` (QUACK
`_infer_duration_semantics`; checked first)."""
MOST_TIME_PHRASES: tuple[str, ...] = ("mostly", "spent most of", "majority of", "most of")
"""Substrings that make a location claim `most_time` (QUACK `_infer_duration_semantics`)."""
SPAN_CUES: tuple[str, ...] = (
    "until",
    "till",
    "up to",
    "through",
    "to tick",
    "onward",
    "onwards",
    "then",
    "after that",
    "later",
    "whole",
    "entire",
    "all round",
    "the rest",
)
"""Substrings that keep a phrase naming the start from clamping the window (QUACK
`_TEMPORAL_SPAN_CUES`)."""
OPENING_KEYWORDS: tuple[str, ...] = ("start", "beginning", "spawn", "respawn")
"""Substrings that clamp the window to the round's opening (QUACK
`_TEMPORAL_OPENING_KEYWORDS`)."""
OPENING_STEPS = 5
"""The opening clamp: the round's first step and the next five (QUACK: `round_start + 5`
ticks, inclusive; one QUACK tick is one decision, our step)."""
MOST_TIME_FRACTION = 0.5
"""`most_time` holds from this share of the valid ticks, inclusive (QUACK
`verify_location_claim`: `match_rate >= 0.5`)."""
WAIT_NEAR_MISS_FRACTION = 0.8
"""A `waiting` claim over more than one room is `near_miss` from this share in its most
common room (QUACK `verify_activity_claim`)."""
KILLER_ALIBI_STEPS = 1
"""A killer's co-location with its victim in the kill's step and this many steps before
is dropped from a sighting (QUACK `verify_sighting_claim`: ticks `kill - 1` and `kill`)."""
KILL_SCENE_STEPS = 2
"""An accuser in the kill room within this many steps of a kill by the accused is
grounded (QUACK `_is_accusation_grounded`: ±2 ticks)."""

QUACK_ACTIVITY: dict[str, str] = {
    "task": "task",
    "travel": "traveling",
    "wait": "waiting",
    "report": "reporting body",
    "call_meeting": "calling meeting",
}
"""This project's activities (`annotation.grounding.claims.ACTIVITIES`, already normalised from
their synonyms) -> the QUACK activity verified. `kill` has none: QUACK does not verify
kill claims (`verify_activity_claim`: "not supported")."""


@dataclass(frozen=True)
class QuackState:
    """One agent's state at one sample, as QUACK's `PlayerTickState` holds it."""

    step: int
    tick: int
    room: str
    """The room; for a walker in a corridor, the room it left (QUACK's `room` in transit)."""
    transit: bool
    """In a corridor (QUACK's `in_transit`)."""
    origin: str | None
    dest: str | None
    """The rooms a corridor walker goes between (QUACK's `room` and `moving_to`)."""


def _result(verdict: str, reason: str, verifier: str, **evidence: Any) -> dict[str, Any]:
    return {"verdict": verdict, "reason": reason, "evidence": {"verifier": verifier, **evidence}}


# --------------------------------------------------------------------- vocabulary


def room_of(room: str | None, rooms: Iterable[str]) -> str | None:
    """A claimed room if it is one of the map's rooms, else None ("no recognizable room").

    Source: QUACK `normalize_room_name`. Corridors are no rooms in QUACK's graph map, so
    a `hallway` (or `corridor`) word is unrecognised here, where the default book treats
    the hallway as a room. Names are already normalised (`annotation.grounding.claims`).
    """
    if room is None or room in NOT_ROOMS:
        return None
    return room if room in set(rooms) else None


def duration_semantics(temporal: str | None) -> Semantics:
    """How much of the window a location claim asserts, from its time phrase.

    Source: QUACK `_infer_duration_semantics`: `entire_time` if the phrase contains one
    of `ENTIRE_TIME_PHRASES`, else `most_time` for `MOST_TIME_PHRASES`, else `any_time`
    (presence at least once). Substring matching on the lower-cased phrase; "always",
    "all the time" and "the full round" are `any_time`.
    """
    t = (temporal if temporal is not None else "this round").lower().strip()
    if any(kw in t for kw in ENTIRE_TIME_PHRASES):
        return "entire_time"
    if any(kw in t for kw in MOST_TIME_PHRASES):
        return "most_time"
    return "any_time"


def includes_calling_step(claim: Claim) -> bool:
    """Whether the claim's window runs on through the step that called the meeting.

    Source: QUACK `_resolve_window_for_claim` (its "Bug G"): presence claims (a route,
    or a location claim under `any_time`) extend through the meeting tick; sightings,
    activities, accusations and `most_time` / `entire_time` claims do not, so occupancy
    shares keep their denominator. (The default book always counts the calling step.)
    """
    if claim.type != "location":
        return False
    return bool(claim.route) or duration_semantics(claim.temporal) == "any_time"


def resolve_window(claim: Claim, traj: Trajectory, *, calling_step: bool) -> Window | str:
    """The window a claim is checked over, or why there is none.

    Source: QUACK `_determine_round_range`. The base window is the round's free roam
    before the meeting tick: the round's free-roam steps before the calling step. Then,
    in order: (1) the explicit bounds the speaker stated
    (`annotation.grounding.claims.tick_bounds`, shared with the default book, in the
    game's ticks): an upper bound ("until/till/by/before/up to/through tick N") narrows
    the end to N, a lower bound ("from/since/after/starting from/starting at tick M")
    the start to M; an instant or a two-sided span ("at tick N", "around tick N",
    "between ticks A and B", "ticks A-B") narrows both ends, widened for sampling as
    `TickBounds.span` says. Bounds only ever narrow: a bound outside the base window is
    clamped to its edge (QUACK never reads ticks the speaker did not have), so a stated
    span wholly before the round is judged at the round's first moment and one wholly
    after the call at the last moment before it. QUACK's code reads the one-sided forms
    only; the instant and two-sided forms are read here as the intersection of their two
    bounds. (2) A phrase naming the start ("start", "beginning", "spawn", "respawn")
    with no span cue and no upper bound clamps the window to the round's first
    `OPENING_STEPS` + 1 steps; (3) with `calling_step` (`includes_calling_step`) and
    neither an upper bound nor the clamp, the window runs through the calling step to
    the call. Any other phrase is the base window: QUACK has no "last round", "earlier"
    or step phrases, and no phrase is out of its vocabulary.

    A round whose only free-roam step is the calling step has an empty base window:
    presence claims get the calling step, others none (QUACK's code would fall back to
    the previous round's segment there; this book does not read another round).

    Args:
        claim: The claim.
        traj: The game.
        calling_step: Extend through the calling step (`includes_calling_step`).

    Returns:
        The window (`rule` says which parts applied), or a reason string.
    """
    m = traj.meeting(claim.meeting)
    if m is None:
        return f"meeting {claim.meeting} is not in the log"
    phrase = (claim.temporal if claim.temporal is not None else "this round").lower()
    base = traj.free_roam_steps(m.round_first_step, m.step - 1)
    call = traj.steps.get(m.step)
    explicit_upper = False
    clamp = False
    rules = ["round"]
    first_tick = base[0].start_tick if base else (call.start_tick if call else m.tick)
    last_tick = base[-1].end_tick if base else first_tick
    bounds = tick_bounds(claim.temporal)
    if base:
        lo, hi = bounds.span(traj.sample_interval) if bounds is not None else (None, None)
        if hi is not None:
            last_tick = min(last_tick, max(first_tick, hi))
            explicit_upper = True
            rules.append("until_tick")
        if lo is not None:
            first_tick = max(first_tick, min(last_tick, lo))
            rules.append("from_tick")
        span = any(cue in phrase for cue in SPAN_CUES)
        if not span and not explicit_upper and any(kw in phrase for kw in OPENING_KEYWORDS):
            base = base[: OPENING_STEPS + 1]
            last_tick = min(last_tick, base[-1].end_tick)
            clamp = True
            rules.append("opening")
    steps = [s for s in base if s.start_tick <= last_tick and s.end_tick >= first_tick]
    if calling_step and not clamp and not explicit_upper and call is not None:
        steps.append(call)
        last_tick = max(m.tick, call.end_tick)
        rules.append("calling_step")
    if not steps:
        return (
            f"meeting {m.index}'s window has no free-roam step (QUACK's window ends before "
            "the meeting's own step)"
        )
    sem = duration_semantics(claim.temporal) if claim.type == "location" else "any_time"
    return Window(
        first_step=steps[0].step,
        last_step=steps[-1].step,
        first_tick=first_tick,
        last_tick=last_tick,
        rule="quack:" + "+".join(rules),
        duration=_DURATION.get(sem),
    )


# --------------------------------------------------------------------- trajectory


class QuackGame:
    """A trajectory read as QUACK's tick-by-tick timeline (states, sight, shares)."""

    def __init__(self, traj: Trajectory) -> None:
        self.traj = traj
        self._states: dict[tuple[str, int], list[QuackState]] = {}

    @cached_property
    def rooms(self) -> set[str]:
        """The map's rooms (no corridors)."""
        geo = self.traj.geometry
        return set(geo.rooms) - NOT_ROOMS if geo is not None else set()

    def round_states(self, agent: str, rnd: int) -> list[QuackState]:
        """The agent's states over one round, alive only, in order."""
        key = (agent, rnd)
        if key in self._states:
            return self._states[key]
        steps = self.traj.round_steps(rnd)
        # One state per moment, as QUACK's timeline has one per tick: where two samples
        # share a step and tick (a round's first snapshot and the trace's first pose),
        # the later one in the log holds.
        latest = {
            (s.step, s.tick): s
            for s in (self.traj.samples_in(agent, steps[0], steps[-1]) if steps else [])
        }
        samples = sorted(latest.values(), key=lambda s: (s.step, s.tick))
        real = [None if s.room in NOT_ROOMS else s.room for s in samples]
        before: list[str | None] = []
        last: str | None = None
        for r in real:
            last = r or last
            before.append(last)
        after: list[str | None] = [None] * len(real)
        nxt: str | None = None
        for i in range(len(real) - 1, -1, -1):
            nxt = real[i] or nxt
            after[i] = nxt
        out = []
        for i, s in enumerate(samples):
            if real[i] is not None:
                out.append(QuackState(s.step, s.tick, s.room, False, None, None))
                continue
            origin = before[i] or after[i]
            out.append(QuackState(s.step, s.tick, origin or s.room, True, origin, after[i]))
        self._states[key] = out
        return out

    def states_in(self, agent: str, w: Window) -> list[QuackState]:
        """The agent's states in a window (by step, then narrowed by tick)."""
        rounds = sorted(
            {
                r
                for n in range(w.first_step, w.last_step + 1)
                if (r := self.traj.round_of(n)) is not None
            }
        )
        return [
            s
            for r in rounds
            for s in self.round_states(agent, r)
            if w.first_step <= s.step <= w.last_step and w.first_tick <= s.tick <= w.last_tick
        ]

    def ticks_by_room(self, agent: str, w: Window, *, dead_hold: bool = False) -> dict[str, int]:
        """Game ticks spent per room in the window (each state holds until the next, or
        the step's end; a corridor counts for the room left).

        Only alive ticks count, unless `dead_hold`: then the ticks after the agent left
        play count for the room it was last in (QUACK's timeline keeps a dead player's
        last room).
        """
        states = self.states_in(agent, w)
        gone = self.traj.gone_tick(agent)
        out: dict[str, int] = {}
        last_room: str | None = states[-1].room if states else None
        for info in self.traj.free_roam_steps(w.first_step, w.last_step):
            own = [s for s in states if s.step == info.step]
            end = min(info.end_tick, w.last_tick)
            cut = end if dead_hold or gone is None else min(end, gone)
            for i, s in enumerate(own):
                nxt = own[i + 1].tick if i + 1 < len(own) else max(cut, s.tick)
                out[s.room] = out.get(s.room, 0) + max(0, nxt - s.tick)
            if dead_hold and not own and gone is not None and gone <= info.start_tick:
                room = last_room or self._death_room(agent)
                if room is not None:
                    span = end - max(info.start_tick, w.first_tick)
                    out[room] = out.get(room, 0) + max(0, span)
        return out

    def _death_room(self, agent: str) -> str | None:
        for k in self.traj.kills:
            if k.victim == agent:
                return k.room
        return None

    def paired(
        self, a: str, b: str, w: Window
    ) -> list[tuple[int, int, QuackState | None, QuackState | None]]:
        """Every moment in the window where either agent has a state: `(step, tick,
        a's state, b's state)`, each the latest at or before that moment."""
        sa, sb = self.states_in(a, w), self.states_in(b, w)
        keys = sorted({(s.step, s.tick) for s in (*sa, *sb)})
        out: list[tuple[int, int, QuackState | None, QuackState | None]] = []
        ia = ib = 0
        cur_a: QuackState | None = None
        cur_b: QuackState | None = None
        for key in keys:
            while ia < len(sa) and (sa[ia].step, sa[ia].tick) <= key:
                cur_a = sa[ia]
                ia += 1
            while ib < len(sb) and (sb[ib].step, sb[ib].tick) <= key:
                cur_b = sb[ib]
                ib += 1
            out.append((key[0], key[1], cur_a, cur_b))
        return out


def can_see(viewer: QuackState, target: QuackState) -> bool:
    """Whether the viewer could see the target at one moment.

    Source: QUACK `can_see` (its engine's `VisionSystem.compute_visibility`): a viewer in
    a room sees players in the same room who are not in a corridor; a viewer in a corridor
    sees only players walking the same corridor, either way. So a player standing in a
    room never sees one walking a corridor, whatever the sight lines.
    """
    if viewer.transit:
        if not target.transit:
            return False
        same = target.origin == viewer.origin and target.dest == viewer.dest
        opposite = target.origin == viewer.dest and target.dest == viewer.origin
        return same or opposite
    return not target.transit and viewer.room == target.room


# --------------------------------------------------------------------- verifiers


def verify_location(game: QuackGame, claim: Claim, w: Window) -> dict[str, Any]:
    """A single-room location claim.

    Source: QUACK `verify_location_claim`. Valid ticks are those the subject was alive;
    with none the claim is `unverifiable` (the default book says `false` for a subject
    already dead). `any_time`: `true` if in the room at least once, else `false` (never
    `near_miss`). `entire_time`: `true` only if every valid tick was in the room, else
    `false` (never `near_miss`; the default book: `true` from 80 %, else `near_miss`).
    `most_time`: `true` from 50 % inclusive, `near_miss` below if present at all, else
    `false`. A corridor walk counts for the room left.
    """
    room = room_of(claim.room, game.rooms)
    if room is None:
        return _result(
            "unverifiable", f"no recognizable room in {claim.room!r}", "verify_location_claim"
        )
    sem = duration_semantics(claim.temporal)
    states = game.states_in(claim.subject, w)
    ev: dict[str, Any] = {
        "steps": [w.first_step, w.last_step],
        "ticks": [w.first_tick, w.last_tick],
        "rule": w.rule,
        "duration_semantics": sem,
        "valid_states": len(states),
    }
    if not states:
        return _result(
            "unverifiable",
            f"{claim.subject} had no valid (alive) tick in the window",
            "verify_location_claim",
            **ev,
        )
    matched = [s.tick for s in states if s.room == room]
    ticks = game.ticks_by_room(claim.subject, w)
    total = sum(ticks.values())
    rate = ticks.get(room, 0) / total if total else len(matched) / len(states)
    ev.update({"matched_ticks": matched, "room_ticks": ticks, "match_rate": round(rate, 3)})
    if sem == "any_time":
        if matched:
            return _result("true", f"in {room} in the window", "verify_location_claim", **ev)
        return _result("false", f"never in {room} in the window", "verify_location_claim", **ev)
    if sem == "entire_time":
        if all(s.room == room for s in states) and rate >= 1.0:
            return _result("true", f"in {room} every valid tick", "verify_location_claim", **ev)
        return _result(
            "false",
            f"in {room} {rate:.0%} of the valid ticks; entire_time needs all of them",
            "verify_location_claim",
            **ev,
        )
    if rate >= MOST_TIME_FRACTION:
        return _result("true", f"in {room} {rate:.0%} (>= 50 %)", "verify_location_claim", **ev)
    if matched:
        return _result(
            "near_miss", f"in {room} only {rate:.0%} (< 50 %)", "verify_location_claim", **ev
        )
    return _result("false", f"never in {room} in the window", "verify_location_claim", **ev)


def visit_chain(states: Sequence[QuackState]) -> list[str]:
    """The rooms in the order visited, consecutive repeats merged (a corridor walk counts
    for the room left). Source: QUACK `GameTimeline.get_visited_rooms`."""
    out: list[str] = []
    for s in states:
        if s.room in NOT_ROOMS:
            continue
        if not out or out[-1] != s.room:
            out.append(s.room)
    return out


def verify_route(game: QuackGame, claim: Claim, w: Window) -> dict[str, Any]:
    """An ordered route.

    Source: QUACK `verify_route_claim`. Legs that name no room (unknown words, corridors)
    are dropped; with none left the claim is `unverifiable` (the default book: one unknown
    leg makes the claim `unverifiable`). A claimed room never visited: `false`. All
    visited, in the claimed order as a subsequence of the visit chain: `true`; otherwise
    `near_miss` (the default book: `false`). A claimed revisit (A, B, A) needs A visited
    again after B, else `near_miss`.
    """
    legs = [room_of(r, game.rooms) for r in claim.route or []]
    route = [r for r in legs if r is not None]
    dropped = [r for r, ok in zip(claim.route or [], legs, strict=True) if ok is None]
    chain = visit_chain(game.states_in(claim.subject, w))
    ev: dict[str, Any] = {
        "steps": [w.first_step, w.last_step],
        "ticks": [w.first_tick, w.last_tick],
        "rule": w.rule,
        "claimed_route": route,
        "dropped_legs": dropped,
        "chain": chain,
    }
    if not route:
        return _result(
            "unverifiable", f"no recognizable room in route {claim.route!r}", "verify_route_claim"
        )
    missing = [r for r in route if r not in chain]
    if missing:
        return _result(
            "false", f"never in {', '.join(missing)} in the window", "verify_route_claim", **ev
        )
    it = iter(chain)
    if all(r in it for r in route):
        return _result("true", "rooms visited in the claimed order", "verify_route_claim", **ev)
    return _result(
        "near_miss",
        f"every claimed room visited, not in the claimed order ({' -> '.join(chain)})",
        "verify_route_claim",
        **ev,
    )


def verify_sighting(game: QuackGame, claim: Claim, w: Window) -> dict[str, Any]:
    """A sighting of the target in a room.

    Source: QUACK `verify_sighting_claim`. A room is required (none or an unrecognised
    one: `unverifiable`). At each moment of the window where both are alive and the
    subject could see the target (`can_see`): both in the claimed room is a match, both
    in another room a wrong-room moment. When the subject killed the target in the
    window, its moments in the kill's step and the step before are dropped (its
    co-location at its own kill is the kill, not an alibi sighting). Verdict: `true` on a
    match, else `wrong_room`, else `false` (also for a dead target, or a subject with no
    alive moment).
    """
    target = claim.target or ""
    room = room_of(claim.room, game.rooms)
    if room is None:
        return _result(
            "unverifiable", f"no recognizable room in {claim.room!r}", "verify_sighting_claim"
        )
    traj = game.traj
    kill = next(
        (
            k
            for k in traj.kills
            if k.victim == target
            and w.first_step <= k.step <= w.last_step
            and w.first_tick <= k.tick <= w.last_tick
        ),
        None,
    )
    killer = kill is not None and kill.killer == claim.subject
    alibi = (
        set(range(kill.step - KILLER_ALIBI_STEPS, kill.step + 1))
        if killer and kill is not None
        else set()
    )
    matched: list[int] = []
    wrong: list[tuple[int, str]] = []
    dropped: list[int] = []
    dead_target: list[int] = []
    dead_room = game._death_room(target)
    for step, tick, s, t in game.paired(claim.subject, target, w):
        s_alive = s is not None and traj.alive_at(claim.subject, tick)
        t_alive = t is not None and traj.alive_at(target, tick)
        if not (s_alive and t_alive):
            if s_alive and s is not None and s.room == room and dead_room == room:
                dead_target.append(tick)
            continue
        assert s is not None and t is not None
        if not can_see(s, t):
            continue
        here = s.room == room and t.room == room
        if step in alibi and (here or s.room == t.room):
            dropped.append(tick)
        elif here:
            matched.append(tick)
        elif s.room == t.room:
            wrong.append((tick, s.room))
    ev: dict[str, Any] = {
        "steps": [w.first_step, w.last_step],
        "ticks": [w.first_tick, w.last_tick],
        "rule": w.rule,
        "visible_in_room_ticks": matched,
        "visible_elsewhere": [{"tick": k, "room": r} for k, r in wrong],
        "killer_alibi_ticks_dropped": dropped,
        "dead_target_ticks": dead_target,
    }
    if matched:
        return _result("true", f"{target} was visible in {room}", "verify_sighting_claim", **ev)
    if wrong:
        rooms = ", ".join(sorted({r for _, r in wrong}))
        return _result(
            "wrong_room",
            f"{target} was visible together with the subject in {rooms}, not {room}",
            "verify_sighting_claim",
            **ev,
        )
    if dropped:
        return _result(
            "false",
            f"{claim.subject} killed {target}; being with it at the kill is the kill, "
            "not a sighting",
            "verify_sighting_claim",
            **ev,
        )
    if dead_target:
        return _result(
            "false",
            f"{claim.subject} was in {room}, but {target} was already dead",
            "verify_sighting_claim",
            **ev,
        )
    return _result(
        "false",
        f"{target} was never visible to {claim.subject} in {room} in the window",
        "verify_sighting_claim",
        **ev,
    )


def verify_task(game: QuackGame, claim: Claim, w: Window, room: str | None) -> dict[str, Any]:
    """`task`: task work by the subject in the window (an impostor's faked task counts,
    as QUACK's fake tasks emit progress). Source: QUACK `verify_activity_claim` (task):
    with a recognised room, work there is `true`, only elsewhere `wrong_room`; none is
    `false`. The window stops before the calling step."""
    traj = game.traj
    atts = [
        a
        for a in traj.attempts
        if a.agent == claim.subject
        and a.start_step <= w.last_step
        and (a.end_step if a.end_step is not None else w.last_step) >= w.first_step
        and a.start_tick <= w.last_tick
        and (a.end_tick if a.end_tick is not None else traj.end_tick) >= w.first_tick
    ]
    ev: dict[str, Any] = {
        "activity": "task",
        "steps": [w.first_step, w.last_step],
        "ticks": [w.first_tick, w.last_tick],
        "tasks": [{"station": a.station, "room": a.room, "fake": a.fake} for a in atts],
    }
    if not atts:
        return _result("false", "no task work in the window", "verify_activity_claim", **ev)
    if room is None or any(a.room == room for a in atts):
        return _result(
            "true", f"task work in {room or 'the window'}", "verify_activity_claim", **ev
        )
    rooms = ", ".join(sorted({a.room for a in atts}))
    return _result("wrong_room", f"task work in {rooms}, not {room}", "verify_activity_claim", **ev)


def corridor_walks(states: Sequence[QuackState]) -> list[tuple[str, str]]:
    """The moves of the corridor walks in a window: `(room left, room entered next)`.

    Source: QUACK's `player_moved` event, logged when a walk starts with its source and
    destination (`from`, `to`), so a walk whose arrival falls after the window still
    names where it went. Here a walker's state carries the room it left (`origin`) and
    the next room it enters in the round (`dest`, the arrival, wherever it falls); a
    walk the round ended before any room was entered (`dest` None) names no move.
    """
    out: list[tuple[str, str]] = []
    for s in states:
        if s.transit and s.origin is not None and s.dest is not None:
            pair = (s.origin, s.dest)
            if pair not in out:
                out.append(pair)
    return out


def verify_traveling(game: QuackGame, claim: Claim, w: Window, room: str | None) -> dict[str, Any]:
    """`traveling`: the subject moved in the window.

    Source: QUACK `verify_activity_claim` (traveling, its "Bug H"). Not moving between
    rooms (or into a corridor): `false`. Without a recognised room, any move is `true`.
    With one, a move from or to that room is `true`; moves that touched no claimed room
    are `wrong_room`. A move is a change of room in the window or a corridor walk in it
    (`corridor_walks`): a walk counts for the room it left and the room it enters next,
    as QUACK's move event names both when the walk starts, so "heading to X" on a walk
    toward X is `true` even when X is reached after the window, and a walk toward
    another room is `wrong_room`. Only a walk into no room at all (the round ended in
    the corridor) is `unverifiable`. Standing in the claimed room without moving is
    `false` (the default book: `true`, a presence).
    """
    states = game.states_in(claim.subject, w)
    chain = visit_chain(states)
    changes = list(zip(chain, chain[1:], strict=False))
    walks = corridor_walks(states)
    moves = changes + [pair for pair in walks if pair not in changes]
    moved = bool(moves) or any(s.transit for s in states)
    ev: dict[str, Any] = {
        "activity": "traveling",
        "steps": [w.first_step, w.last_step],
        "ticks": [w.first_tick, w.last_tick],
        "moves": [{"from": a, "to": b} for a, b in moves],
        "corridor_walks": [{"from": a, "to": b} for a, b in walks],
    }
    if not moved:
        return _result("false", "did not move in the window", "verify_activity_claim", **ev)
    if room is None:
        return _result("true", "moved in the window", "verify_activity_claim", **ev)
    if any(room in pair for pair in moves):
        if any(room in pair for pair in changes):
            why = f"moved with {room} as source or destination"
        elif any(room == b for _, b in walks):
            why = f"walked a corridor toward {room} (its destination)"
        else:
            why = f"walked a corridor out of {room}"
        return _result("true", why, "verify_activity_claim", **ev)
    if not moves:
        return _result(
            "unverifiable",
            f"walked a corridor into no room before the round ended: nothing to check "
            f"{room} against",
            "verify_activity_claim",
            **ev,
        )
    return _result(
        "wrong_room",
        f"moved in the window but never into or out of {room}",
        "verify_activity_claim",
        **ev,
    )


def verify_waiting(game: QuackGame, claim: Claim, w: Window) -> dict[str, Any]:
    """`waiting`: the subject stayed in one room, whatever room was claimed.

    Source: QUACK `verify_activity_claim` (waiting): one room over the window's ticks is
    `true`; otherwise at least `WAIT_NEAR_MISS_FRACTION` of the ticks in the most common
    room is `near_miss`, else `false`. The claimed room is not consulted (the default
    book: the claimed room for at least 50 %, `wrong_room` when the stay was elsewhere).
    A dead subject keeps its last room (QUACK's timeline does).
    """
    states = game.states_in(claim.subject, w)
    ticks = game.ticks_by_room(claim.subject, w, dead_hold=True)
    rooms = sorted({s.room for s in states} | {r for r, n in ticks.items() if n > 0})
    ev: dict[str, Any] = {
        "activity": "waiting",
        "steps": [w.first_step, w.last_step],
        "ticks": [w.first_tick, w.last_tick],
        "rooms": rooms,
        "room_ticks": ticks,
    }
    if not rooms:
        return _result(
            "unverifiable",
            "no timeline data for the subject in the window",
            "verify_activity_claim",
        )
    if len(rooms) == 1:
        return _result(
            "true", f"stayed in {rooms[0]} the whole window", "verify_activity_claim", **ev
        )
    total = sum(ticks.values())
    where = max(rooms, key=lambda r: ticks.get(r, 0))
    share = ticks.get(where, 0) / total if total else 0.0
    ev["share"] = round(share, 3)
    if share >= WAIT_NEAR_MISS_FRACTION:
        return _result(
            "near_miss",
            f"mostly in {where} ({share:.0%}), with visits to other rooms",
            "verify_activity_claim",
            **ev,
        )
    return _result(
        "false", f"in {len(rooms)} rooms: {', '.join(rooms)}", "verify_activity_claim", **ev
    )


def verify_meeting_act(traj: Trajectory, claim: Claim, m: MeetingRecord) -> dict[str, Any]:
    """`reporting body` / `calling meeting`: the subject called this very meeting.

    Source: QUACK `verify_activity_claim` (reporting body, calling meeting): only the
    meeting's own tick is looked at, so the claim is `true` exactly when the subject
    reported the body (`report`) or pressed the button (`call_meeting`) that called this
    meeting; the time phrase, victim and room are not consulted.
    """
    want = "report" if claim.activity == "report" else "emergency"
    ev = {"activity": QUACK_ACTIVITY[claim.activity or ""], "meeting_step": m.step}
    if m.trigger == want and m.caller == claim.subject:
        return _result("true", f"called meeting {m.index}", "verify_activity_claim", **ev)
    return _result(
        "false",
        f"did not {'report the body' if want == 'report' else 'press the button'} that "
        f"called meeting {m.index}",
        "verify_activity_claim",
        **ev,
    )


def verify_activity(game: QuackGame, claim: Claim, w: Window | None) -> dict[str, Any]:
    """An activity claim, dispatched by QUACK's activity (`QUACK_ACTIVITY`).

    Source: QUACK `verify_activity_claim`. An unrecognised room word is dropped (the
    claim is checked as if it named no room); `kill` is not a QUACK activity
    (`unverifiable`).
    """
    traj = game.traj
    quack = QUACK_ACTIVITY.get(claim.activity or "")
    if quack is None:
        return _result(
            "unverifiable",
            f"activity {claim.activity!r} is not one QUACK verifies "
            f"({', '.join(QUACK_ACTIVITY.values())})",
            "verify_activity_claim",
        )
    m = traj.meeting(claim.meeting)
    if m is None:
        return _result("unverifiable", f"meeting {claim.meeting} is not in the log", "")
    if quack in ("reporting body", "calling meeting"):
        return verify_meeting_act(traj, claim, m)
    if w is None:
        return _result("unverifiable", "no window", "verify_activity_claim")
    room = room_of(claim.room, game.rooms)
    if quack == "task":
        return verify_task(game, claim, w, room)
    if quack == "traveling":
        return verify_traveling(game, claim, w, room)
    return verify_waiting(game, claim, w)


def accusation_grounds(
    game: QuackGame, accuser: str, target: str, m: MeetingRecord
) -> list[dict[str, Any]]:
    """What grounds an accusation, if anything.

    Source: QUACK `_is_accusation_grounded`, over the base window of the meeting's round
    (free roam before the calling step): (c) the accuser called the meeting (reported the
    body or pressed the button); (b) the accuser was in the kill room of a kill by the
    accused within `KILL_SCENE_STEPS` steps of it; (a) the accuser could see the accused
    (`can_see`) at any moment. A self-accusation is never grounded. (The default book
    grounds only on evidence around a kill, in any round, or on a claim of the accused
    verified false.)
    """
    if not accuser or accuser == target:
        return []
    traj = game.traj
    out: list[dict[str, Any]] = []
    if m.caller == accuser:
        out.append({"kind": "accuser_called_meeting", "trigger": m.trigger})
    probe = Claim(
        meeting=m.index,
        speaker=accuser,
        utterance=0,
        type="accusation",
        subject=accuser,
        target=target,
        temporal="this round",
    )
    w = resolve_window(probe, traj, calling_step=False)
    if isinstance(w, str):
        return out
    for k in traj.kills:
        if k.killer != target or not (
            w.first_step - KILL_SCENE_STEPS <= k.step <= w.last_step + KILL_SCENE_STEPS
        ):
            continue
        lo = max(w.first_step, k.step - KILL_SCENE_STEPS)
        hi = min(w.last_step, k.step + KILL_SCENE_STEPS)
        there = [s for s in game.states_in(accuser, w) if lo <= s.step <= hi and s.room == k.room]
        if there:
            out.append(
                {
                    "kind": "accuser_near_kill_scene",
                    "victim": k.victim,
                    "room": k.room,
                    "step": there[0].step,
                    "tick": there[0].tick,
                }
            )
            break
    for step, tick, a, t in game.paired(accuser, target, w):
        if (
            a is not None
            and t is not None
            and traj.alive_at(accuser, tick)
            and traj.alive_at(target, tick)
            and can_see(a, t)
        ):
            out.append({"kind": "accuser_could_see_target", "step": step, "tick": tick})
            break
    return out


def verify_accusation(game: QuackGame, row: AuditedClaim) -> dict[str, Any]:
    """An accusation: `hit` (the accused is an impostor) and `grounded`
    (`accusation_grounds`). Source: QUACK `_verify_accusation`. The verdict stays
    `unverifiable`, as in the default book (accusations are scored on the two axes, not
    in truthfulness); QUACK's own verdict is kept as `evidence.quack_verdict`."""
    traj = game.traj
    m = traj.meeting(row.meeting)
    if m is None:
        return {"reason": f"meeting {row.meeting} is not in the log"}
    target = row.target or ""
    hit = traj.roles.get(target) == "impostor"
    grounds = accusation_grounds(game, row.subject, target, m)
    return {
        "verdict": "unverifiable",
        "reason": "accusations are scored on hit and grounded, not on a verdict",
        "hit": hit,
        "grounded": bool(grounds),
        "window": [m.round_first_step, m.step],
        "evidence": {
            "verifier": "verify_accusation",
            "grounds": grounds,
            "quack_verdict": "true" if hit else "false",
        },
    }


def verify_defense(claim: Claim) -> dict[str, Any]:
    """A defense: always `unverifiable`. Source: QUACK `_verify_claim` (defense): "not
    automatically decomposable". (The default book: `true` when the defender had the
    defended in view in the window.)"""
    return {
        "verdict": "unverifiable",
        "reason": "QUACK does not verify defenses (not decomposable into a checkable "
        "location or alibi)",
        "hit": None,
        "grounded": None,
        "evidence": {"verifier": "verify_defense_claim"},
    }


# --------------------------------------------------------------------- the book


def unknown(claim: Claim, traj: Trajectory) -> str | None:
    """Why a claim names something the game lacks (checked before any verifier).

    Source: QUACK `_verify_claim` and each verifier's registry checks: an unknown claim
    type, player or activity is `unverifiable`. Rooms are each verifier's own business
    (`room_of`): unrecognised rooms make a location or sighting claim unverifiable, are
    dropped from routes and from activities.
    """
    if claim.type not in CLAIM_TYPES:
        return f"unknown claim type {claim.type!r}"
    if claim.speaker not in traj.agents:
        return f"unknown speaker {claim.speaker!r}"
    if claim.subject not in traj.agents:
        return f"subject {claim.subject!r} not found among the players"
    if claim.target is not None and claim.target not in traj.agents:
        return f"target {claim.target!r} not found among the players"
    if claim.type in ("sighting", "accusation") and claim.target is None:
        return f"a {claim.type} claim needs a target"
    if claim.type == "activity" and claim.activity not in ACTIVITIES:
        return f"unknown activity {claim.activity!r}"
    return None


class QuackRuleBook:
    """QUACK's verdict rules (`mineamongus audit --rules quack`)."""

    name = NAME
    note = (
        "Rule book `quack`: QUACK's verdict rules as its paper and code state them, "
        "on the same trajectories (docs/grounding.md, differences table); comparable with "
        "QUACK's published tiers, not with the `mineamongus` book's."
    )

    def audit(self, traj: Trajectory, claims: Iterable[Claim]) -> list[AuditedClaim]:
        """Verify claims against one game's trajectory with QUACK's rules.

        Args:
            traj: The game.
            claims: Its claims (extracted or supplied; normalised first, as in the
                default book).

        Returns:
            One audited row per claim, in the given order, each with `rules="quack"`.
        """
        game = QuackGame(traj)
        rooms = sorted(game.rooms | {"hallway"})
        out = []
        for raw in claims:
            claim = normalise_claim(raw, rooms, traj.agents)
            row = AuditedClaim(
                **claim.model_dump(),
                game=traj.game_id,
                rules=NAME,
                speaker_role=traj.roles.get(claim.speaker, ""),
                speaker_model=traj.model_of(claim.speaker) if claim.speaker in traj.agents else "",
            )
            out.append(row.model_copy(update=self._judge(game, claim, row)))
        return out

    @staticmethod
    def _judge(game: QuackGame, claim: Claim, row: AuditedClaim) -> dict[str, Any]:
        traj = game.traj
        reason = unknown(claim, traj)
        if reason is not None:
            return {"verdict": "unverifiable", "reason": reason}
        if claim.type == "accusation":
            return verify_accusation(game, row)
        if claim.type == "defense":
            return verify_defense(claim)
        if claim.type == "activity" and claim.activity in ("report", "call_meeting", "kill"):
            return verify_activity(game, claim, None)
        if claim.type == "location" and not claim.route and claim.room is None:
            return {"verdict": "unverifiable", "reason": "no recognizable room in the claim"}
        w = resolve_window(claim, traj, calling_step=includes_calling_step(claim))
        if isinstance(w, str):
            return {"verdict": "unverifiable", "reason": w}
        upd: dict[str, Any] = {"window": [w.first_step, w.last_step]}
        if claim.type == "location":
            upd.update(
                verify_route(game, claim, w) if claim.route else verify_location(game, claim, w)
            )
        elif claim.type == "sighting":
            upd.update(verify_sighting(game, claim, w))
        else:
            upd.update(verify_activity(game, claim, w))
        return upd
