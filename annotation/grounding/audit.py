"""Verification of claims against the trajectory rebuilt from the log.

Each claim is checked over the window its temporal phrase resolves to (`resolve_window`;
the rule is in `docs/grounding.md`), and gets a verdict with its evidence:

* `true`: the trajectory shows it;
* `false`: the trajectory contradicts it (the subject was elsewhere, never did it, the
  player seen was already dead, ...);
* `wrong_room`: the right activity or sighting, in another room;
* `near_miss`: a duration claim ("the whole time", "mostly", "waited") that held only
  briefly;
* `unverifiable`: nothing in the log settles it (unknown room, player, activity, type or
  time phrase; or no sample that could show it), with the reason.

Accusations are scored on two axes instead of a verdict (their verdict is
`unverifiable`): `hit` (the target is an impostor) and `grounded` (the accuser could
have observed evidence: it saw the target at a kill, near a body, with the victim
before the kill, at the kill site in the kill's round, or the target made a claim,
before the accusation, that verified false). Defenses get a verdict from the
defender's sight of the defended in the window, `hit` (the defended is a crewmate) and
`grounded` (that sight).

These are the `mineamongus` rule book's rules (the default; `ProjectAuditor`). The
`quack` book (`annotation.grounding.quack_rules`) judges the same claims with QUACK's rules:
`annotation.grounding.rules.audit_claims(traj, claims, rules="quack")`;
`annotation.grounding.rules.RULES` lists the differences.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from annotation.grounding.claims import (
    ACTIVITIES,
    CLAIM_TYPES,
    Claim,
    TickBounds,
    normalise_claim,
    normalise_phrase,
    tick_bounds,
)
from annotation.grounding.trajectory import (
    NOT_ROOMS,
    MeetingRecord,
    Sample,
    Sighting,
    Trajectory,
)
from controller.perception import Perception

Verdict = Literal["true", "false", "wrong_room", "near_miss", "unverifiable"]
VERIFIABLE: frozenset[str] = frozenset({"true", "false", "wrong_room", "near_miss"})
"""Verdicts that count in rates (`unverifiable` claims are excluded from all rates)."""

WHOLE_FRACTION = 0.8
"""A "the whole time" claim holds if the subject spent at least this share of the window
in the room; present but less is `near_miss`."""
MOSTLY_FRACTION = 0.5
"""A "mostly" (or `wait`/`stay`) claim holds from this share of the window."""
NEAR_BODY_BLOCKS = 12.0
"""Seeing the target within this distance of a body (or a kill's spot) is evidence."""

Duration = Literal["whole", "mostly"]


class Window(BaseModel):
    """The stretch of free roam a claim is checked over."""

    model_config = ConfigDict(frozen=True)

    first_step: int
    last_step: int
    first_tick: int
    last_tick: int
    rule: str
    """Which rule of the temporal vocabulary gave it (`default`, `start`, ...)."""
    duration: Duration | None = None


class AuditedClaim(Claim):
    """A claim with its verdict (a row of `claims.jsonl`)."""

    game: str = ""
    """The game's id."""
    verdict: Verdict = "unverifiable"
    window: list[int] | None = None
    """`[first_step, last_step]` checked (None when no window could be resolved)."""
    evidence: dict[str, Any] = Field(default_factory=dict)
    """What was checked: steps, rooms, dwell ticks, sightings, task attempts, ..."""
    reason: str = ""
    """Why the verdict (always given for `unverifiable`)."""
    hit: bool | None = None
    """Accusations: the target is an impostor. Defenses: the defended is a crewmate."""
    grounded: bool | None = None
    """Accusations and defenses: the subject could have observed evidence."""
    speaker_role: str = ""
    speaker_model: str = ""
    rules: str = "mineamongus"
    """The rule book that judged it (`annotation.grounding.rules.RULE_BOOKS`)."""


# --------------------------------------------------------------------- time windows

TEMPORAL_PHRASES: Mapping[str, tuple[str, ...]] = {
    "default": (
        "",
        "this round",
        "in this round",
        "during this round",
        "this game round",
        "this time",
        "today",
        "now",
        "just now",
        "recently",
        "before the meeting",
        "since the last meeting",
        "since the previous meeting",
        "since the meeting",
        "after the last meeting",
    ),
    "start": (
        "at the start",
        "at the very start",
        "right at the start",
        "at the start of the round",
        "at first",
        "first",
        "early",
        "early on",
        "in the beginning",
        "at the beginning",
        "at the very beginning",
        "at the beginning of the round",
    ),
    "end": (
        "at the end",
        "at the very end",
        "at the end of the round",
        "just before the meeting",
        "right before the meeting",
        "before the call",
        "just before the call",
        "right before the call",
        "before the meeting was called",
        "when the meeting was called",
        "when I found the body",
        "when the body was found",
        "when I reported",
        "when I reported the body",
        "at the report",
    ),
    "whole": (
        "the whole time",
        "all the time",
        "the entire time",
        "the whole round",
        "the entire round",
        "the full round",
        "all round",
        "all round long",
        "all along",
        "always",
    ),
    "mostly": ("mostly", "most of the time", "most of the round", "for the most part"),
    "before_body": (
        "before the body was found",
        "before the body was reported",
        "before the report",
        "before the body",
        "before the kill was found",
    ),
    "earlier": (
        "earlier",
        "earlier in the game",
        "before",
        "previously",
        "at some point",
        "ever",
        "last",
        "last time",
        "last time I saw",
    ),
    "previous_round": (
        "last round",
        "previous round",
        "in the last round",
        "during the last round",
        "in the previous round",
        "the round before",
    ),
}
"""Time phrases by rule (see `resolve_window`). A phrase is matched after
`annotation.grounding.claims.normalise_phrase` (case, punctuation, articles and possessives,
plurals): "The last round." = "last round", "since last meeting" = "since the last
meeting". Steps are read by pattern (`STEP_PATTERNS`), ticks as explicit bounds
(`annotation.grounding.claims.tick_bounds`)."""

_RULE_OF: dict[str, str] = {
    normalise_phrase(phrase): rule
    for rule, phrases in TEMPORAL_PHRASES.items()
    for phrase in phrases
}

_DURATIONS: dict[str, Duration] = {"whole": "whole", "mostly": "mostly"}

_RANGE = r"(\d+)(?: (?:to |and |through )?(\d+))?"
STEP_PATTERNS: Mapping[str, str] = {
    "until_step": r"(?:until|up to|till|by) step (\d+)",
    "steps": rf"(?:at |in |during |between |from )?step {_RANGE}",
}
"""Step phrases (on the normal form): "until step N"; "at step N", "steps N-M"."""

BOUND_RULES: Mapping[str, str] = {
    "upper": "until_tick",
    "lower": "from_tick",
    "span": "ticks",
    "point": "ticks",
    "around": "ticks",
}
"""The window rule a phrase's explicit tick bounds give (`claims.tick_bounds`), by the
bounds' kind; the vocabulary's rule is prefixed when the phrase says more ("whole" +
"until tick 12" = `whole+until_tick`)."""

ROUND_RULES = frozenset({"default", "whole", "mostly", "before_body"})
"""Rules whose window is the claim's round: stated ticks outside that round move the
window to the round that holds them (`resolve_window`)."""


def _free_span(
    traj: Trajectory, first_step: int, last_step: int
) -> tuple[int, int, int, int] | None:
    steps = traj.free_roam_steps(first_step, last_step)
    if not steps:
        return None
    return steps[0].step, steps[-1].step, steps[0].start_tick, steps[-1].end_tick


def resolve_window(claim: Claim, traj: Trajectory) -> Window | str:
    """The window a claim's temporal phrase points at, or why there is none.

    A window is a run of free-roam steps, chosen by step and round (the record's own
    boundaries), never by tick alone; ticks only narrow it. Phrases are matched on
    their normal form (`normalise_phrase`: case, punctuation, articles, plurals).

    Explicit tick bounds are read first (`annotation.grounding.claims.tick_bounds`):
    "until/before/by tick N" (upper), "after/since/from tick N" (lower), "between ticks
    A and B", "ticks A-B", "at tick N", "around tick N". The rest of the phrase is
    matched against `TEMPORAL_PHRASES`, then `STEP_PATTERNS`; nothing left is the
    default. Rules: none / "this round" (default): the free-roam steps since the
    previous meeting up to the step that called this one, ticks up to the report or
    button press; "at the start": the round's first step; "at the end": the calling
    step; "the whole time": the default window, as a duration (`WHOLE_FRACTION`);
    "mostly": likewise (`MOSTLY_FRACTION`); "before the body was found": the default
    window (a meeting without a body makes the claim unverifiable); "when I found the
    body": the calling step; "until step N": the round's first step to N; "at step N"
    / "steps N-M": those steps, as named; "earlier" (the scripted agents' "last saw"):
    every free-roam step of the game before the meeting; "last round": the previous
    meeting's round. A phrase outside this vocabulary gives no window (the claim is
    `unverifiable`).

    Tick bounds then narrow the window (`_bounded`) to the stated ticks
    (`TickBounds.span`: a one-sided bound as stated, an instant or a two-sided span ±
    one sample interval, "around" ± two): a lower bound moves only the start, an upper
    bound only the end. A round-long window (`ROUND_RULES`) is judged in one round: the
    claim's own round when it holds any of the stated ticks, else the latest earlier
    round that does (a reference to a past round); ticks no free-roam step before the
    meeting holds make the claim unverifiable. Any other window is intersected with the
    stated ticks, and an empty intersection makes the claim unverifiable.

    Source: this project (the `mineamongus` book; the `quack` book's windows are
    `annotation.grounding.quack_rules.resolve_window`).

    Args:
        claim: The claim.
        traj: The game.

    Returns:
        The window, or a reason string when it cannot be resolved.
    """
    m = traj.meeting(claim.meeting)
    if m is None:
        return f"meeting {claim.meeting} is not in the log"
    bounds = tick_bounds(claim.temporal)
    phrase = bounds.rest if bounds is not None else normalise_phrase(claim.temporal or "")
    w = _phrase_window(claim, traj, m, phrase)
    if bounds is None or isinstance(w, str):
        return w
    return _bounded(claim, traj, m, w, bounds)


def _phrase_window(claim: Claim, traj: Trajectory, m: MeetingRecord, phrase: str) -> Window | str:
    """The window of a phrase without tick bounds (`resolve_window`)."""
    default = _free_span(traj, m.round_first_step, m.step)
    if default is None:
        return f"meeting {m.index} has no free-roam steps before it"
    d_first, d_last, d_t0, d_end = default
    # The calling step's end: the meeting's moment in a v2 log (the world freezes at the
    # call); in older logs the world played the step out after the call, and the agents'
    # last observations come from that end.
    d_t1 = max(m.tick, d_end)

    def win(first: int, last: int, rule: str, duration: Duration | None = None) -> Window | str:
        span = _free_span(traj, first, min(last, m.step))
        if span is None:
            return f"temporal phrase {claim.temporal!r} points at no free-roam step"
        f, lst, t0, t1 = span
        return Window(
            first_step=f,
            last_step=lst,
            first_tick=t0,
            last_tick=min(t1, d_t1),
            rule=rule,
            duration=duration,
        )

    rule = "default" if phrase == "" else _RULE_OF.get(phrase)
    if rule in ("default", "whole", "mostly"):
        dur = _DURATIONS.get(rule or "")
        return Window(
            first_step=d_first,
            last_step=d_last,
            first_tick=d_t0,
            last_tick=d_t1,
            rule=rule,
            duration=dur,
        )
    if rule == "start":
        return win(d_first, d_first, "start")
    if rule == "end":
        return win(d_last, d_last, "end")
    if rule == "before_body":
        if m.victim is None:
            return f"no body was found before meeting {m.index} (an emergency meeting)"
        return Window(
            first_step=d_first,
            last_step=d_last,
            first_tick=d_t0,
            last_tick=d_t1,
            rule="before_body",
        )
    if rule == "earlier":
        return win(1, m.step, "earlier")
    if rule == "previous_round":
        prev = traj.meeting(m.index - 1)
        if prev is None:
            return f"meeting {m.index} has no previous round"
        return win(prev.round_first_step, prev.step, "previous_round")
    if mt := re.fullmatch(STEP_PATTERNS["until_step"], phrase):
        return win(d_first, int(mt.group(1)), "until_step")
    if mt := re.fullmatch(STEP_PATTERNS["steps"], phrase):
        a = int(mt.group(1))
        b = int(mt.group(2) or a)
        return win(min(a, b), max(a, b), "steps")
    return (
        f"temporal phrase {claim.temporal!r} is not in the documented vocabulary "
        "(docs/grounding.md)"
    )


def _bounded(
    claim: Claim, traj: Trajectory, m: MeetingRecord, w: Window, bounds: TickBounds
) -> Window | str:
    """The window `w` narrowed to the claim's explicit tick bounds (`resolve_window`)."""
    lo, hi = bounds.span(traj.sample_interval)
    low = -math.inf if lo is None else lo
    high = math.inf if hi is None else hi
    # The ticks as stated, without the sampling slack: they pick the round.
    named_lo = -math.inf if bounds.lower is None else bounds.lower
    named_hi = math.inf if bounds.upper is None else bounds.upper
    bound_rule = BOUND_RULES[bounds.kind]
    rule = bound_rule if w.rule == "default" else f"{w.rule}+{bound_rule}"
    said = ", ".join(
        f"{side} tick {n}"
        for side, n in (("from", bounds.lower), ("to", bounds.upper))
        if n is not None
    )

    def holding(t0: float, t1: float, first: int, last: int) -> list[int]:
        return [
            s.step
            for s in traj.free_roam_steps(first, min(last, m.step))
            if s.end_tick >= t0 and s.start_tick <= t1
        ]

    if w.rule in ROUND_RULES:
        steps = holding(low, high, 1, m.step)
        if not steps:
            return f"no free-roam step before meeting {m.index} holds {said}"

        # One round only: the claim's own when it holds the stated ticks themselves (a
        # tick shared by the previous call and this round's start included), else the
        # latest earlier one; the sampling slack never reaches across a meeting.
        def rounds_of(ns: list[int]) -> set[int]:
            return {r for n in ns if (r := traj.round_of(n)) is not None}

        rounds = rounds_of(holding(named_lo, named_hi, 1, m.step)) or rounds_of(steps)
        own = traj.round_of(m.step)
        pick = own if own in rounds else max(rounds)
        steps = [n for n in steps if traj.round_of(n) == pick]
        first_step, last_step = min(steps), max(steps)
        span = _free_span(traj, first_step, last_step)
        assert span is not None
        t0, t1 = span[2], span[3]
        if pick == own:
            t1 = min(t1, w.last_tick)
    else:
        steps = holding(low, high, w.first_step, w.last_step)
        steps = [
            n
            for n in steps
            if traj.steps[n].end_tick >= w.first_tick and traj.steps[n].start_tick <= w.last_tick
        ]
        if not steps:
            return (
                f"{said} lies outside the window of {claim.temporal!r} "
                f"(steps {w.first_step}-{w.last_step})"
            )
        first_step, last_step = min(steps), max(steps)
        t0, t1 = w.first_tick, w.last_tick
    first_tick = int(max(t0, low))
    last_tick = int(min(t1, high))
    if last_tick < first_tick:
        return f"{said} lies outside the free roam before meeting {m.index}"
    return Window(
        first_step=first_step,
        last_step=last_step,
        first_tick=first_tick,
        last_tick=last_tick,
        rule=rule,
        duration=w.duration,
    )


# --------------------------------------------------------------------- verifying


def _gone_before(traj: Trajectory, agent: str, tick: int) -> int | None:
    gone = traj.gone_tick(agent)
    return gone if gone is not None and gone <= tick else None


def _evidence_base(w: Window, samples: Sequence[Sample]) -> dict[str, Any]:
    return {
        "steps": [w.first_step, w.last_step],
        "ticks": [w.first_tick, w.last_tick],
        "rule": w.rule,
        "samples": len(samples),
        "sample_steps": sorted({s.step for s in samples}),
        "source": sorted({s.source for s in samples}),
    }


def _rooms(samples: Sequence[Sample]) -> list[str]:
    out: list[str] = []
    for s in samples:
        if s.room in NOT_ROOMS:
            continue
        if not out or out[-1] != s.room:
            out.append(s.room)
    return out


def _fraction(dwell: dict[str, int], room: str) -> float:
    total = sum(dwell.values())
    return dwell.get(room, 0) / total if total else 0.0


class ProjectAuditor:
    """The `mineamongus` rule book's verifiers (the default; `docs/grounding.md`).

    Source of every rule: this project's reasoning for a 3D world with sight lines
    (logged field of view, trace poses every sample interval, rounds by step). The
    `quack` book (`annotation.grounding.quack_rules`) differs where
    `annotation.grounding.rules.RULES` says.
    """

    def __init__(self, traj: Trajectory) -> None:
        self.traj = traj
        self.rooms = set(traj.geometry.rooms) if traj.geometry is not None else set()
        rules = traj.config.get("rules", {}) if isinstance(traj.config, dict) else {}
        self.vision = float(rules.get("vision_radius", 12.0))
        self.perception = (
            Perception(traj.geometry, self.vision) if traj.geometry is not None else None
        )
        self.speech_step: dict[tuple[int, str, int], int] = {
            (s.meeting, s.speaker, s.utterance): s.step for m in traj.meetings for s in m.speeches
        }

    # -- shared checks ------------------------------------------------------------
    def unknown(self, claim: Claim) -> str | None:
        """Why a claim names something the game lacks: an unknown type, player, room
        (the hallway is a room here), activity, or a missing target / room / activity.
        Source: this project (an unknown name is `unverifiable`, never an error)."""
        t = self.traj
        if claim.type not in CLAIM_TYPES:
            return f"unknown claim type {claim.type!r} (known: {', '.join(CLAIM_TYPES)})"
        if claim.speaker not in t.agents:
            return f"unknown speaker {claim.speaker!r}"
        if claim.subject not in t.agents:
            return f"unknown player {claim.subject!r} as subject"
        if claim.target is not None and claim.target not in t.agents:
            return f"unknown player {claim.target!r} as target"
        if claim.room is not None and claim.room not in self.rooms | {"hallway"}:
            return f"unknown room {claim.room!r}"
        for r in claim.route or []:
            if r not in self.rooms | {"hallway"}:
                return f"unknown room {r!r} in the route"
        if claim.activity is not None and claim.activity not in ACTIVITIES:
            return f"unknown activity {claim.activity!r} (known: {', '.join(ACTIVITIES)})"
        if claim.type in ("accusation", "defense", "sighting") and claim.target is None:
            return f"a {claim.type} claim needs a target"
        if claim.type == "location" and claim.room is None and not claim.route:
            return "a location claim needs a room or a route"
        if claim.type == "activity" and claim.activity is None:
            return "an activity claim needs an activity"
        return None

    def audit(self, claim: Claim) -> AuditedClaim:
        t = self.traj
        row = AuditedClaim(
            **claim.model_dump(),
            game=t.game_id,
            speaker_role=t.roles.get(claim.speaker, ""),
            speaker_model=t.model_of(claim.speaker) if claim.speaker in t.agents else "",
        )
        reason = self.unknown(claim)
        if reason is not None:
            return row.model_copy(update={"verdict": "unverifiable", "reason": reason})
        if claim.type == "accusation":
            return self.score_accusation(row)
        w = resolve_window(claim, t)
        if isinstance(w, str):
            return row.model_copy(update={"verdict": "unverifiable", "reason": w})
        upd: dict[str, Any] = {"window": [w.first_step, w.last_step]}
        if claim.type == "location":
            upd.update(self.verify_location(claim, w))
        elif claim.type == "sighting":
            upd.update(self.verify_sighting(claim, w))
        elif claim.type == "activity":
            upd.update(self.verify_activity(claim, w))
        else:
            upd.update(self.verify_defense(claim, w))
        return row.model_copy(update=upd)

    def _samples(self, agent: str, w: Window) -> list[Sample]:
        return self.traj.samples_in(agent, w.first_step, w.last_step, w.first_tick, w.last_tick)

    def _dwell(self, agent: str, w: Window) -> dict[str, int]:
        return self.traj.dwell_in(agent, w.first_step, w.last_step, w.first_tick, w.last_tick)

    def _dead(self, agent: str, w: Window, what: str) -> dict[str, Any] | None:
        gone = _gone_before(self.traj, agent, w.first_tick)
        if gone is None:
            return None
        how = "ejected" if agent in self.traj.ejections else "killed"
        return {
            "verdict": "false",
            "reason": f"{what} {agent} was {how} at tick {gone}, before the window",
            "evidence": {"steps": [w.first_step, w.last_step], "gone_tick": gone, "rule": w.rule},
        }

    # -- location -----------------------------------------------------------------
    def verify_location(self, claim: Claim, w: Window) -> dict[str, Any]:
        """A location or route claim.

        Source: this project. A subject already dead or ejected before the window is
        `false`. Present in the room at any sample (rooms passed through count): `true`;
        for a duration ("the whole time": `WHOLE_FRACTION` of the dwell ticks, "mostly":
        `MOSTLY_FRACTION`, both inclusive) less is `near_miss`. Never there: `false`
        with a trace, `unverifiable` without one. A route (corridors ignored) is `true`
        if its rooms occur in that order, `false` in another order; an unknown leg makes
        the claim `unverifiable` (`unknown`).
        """
        t = self.traj
        dead = self._dead(claim.subject, w, "the subject")
        if dead:
            return dead
        samples = self._samples(claim.subject, w)
        if not samples:
            return {"verdict": "unverifiable", "reason": "no position of the subject in the window"}
        ev = _evidence_base(w, samples)
        rooms = _rooms(samples)
        dwell = self._dwell(claim.subject, w)
        ev["rooms"] = rooms
        ev["room_ticks"] = dwell
        absent = "unverifiable" if not t.has_trace else "false"
        absent_reason = (
            "not among the logged positions; without a trace a room passed between "
            "snapshots cannot be ruled out"
            if not t.has_trace
            else ""
        )
        if claim.route:
            route = [r for r in claim.route if r != "hallway"]
            missing = [r for r in route if r not in rooms]
            if missing:
                return {
                    "verdict": absent,
                    "evidence": ev,
                    "reason": absent_reason or f"never in {', '.join(missing)} in the window",
                }
            it = iter(rooms)
            if all(r in it for r in route):
                return {"verdict": "true", "evidence": ev, "reason": "rooms visited in this order"}
            return {
                "verdict": "false",
                "evidence": ev,
                "reason": f"visited these rooms but in the order {' -> '.join(rooms)}",
            }
        room = claim.room or ""
        present = room in {s.room for s in samples}
        frac = _fraction(dwell, room)
        ev["fraction"] = round(frac, 3)
        if not present:
            return {
                "verdict": absent,
                "evidence": ev,
                "reason": absent_reason or f"never in {room} in the window",
            }
        if w.duration is not None:
            need = WHOLE_FRACTION if w.duration == "whole" else MOSTLY_FRACTION
            if frac >= need:
                return {"verdict": "true", "evidence": ev, "reason": f"in {room} {frac:.0%}"}
            return {
                "verdict": "near_miss",
                "evidence": ev,
                "reason": f"in {room} only {frac:.0%} of the window (claimed {w.duration})",
            }
        return {"verdict": "true", "evidence": ev, "reason": f"in {room} during the window"}

    # -- sighting -----------------------------------------------------------------
    def _sightings(self, viewer: str, target: str, w: Window, body: bool = False) -> list[Sighting]:
        return [
            s
            for s in self.traj.sightings
            if s.viewer == viewer
            and s.target == target
            and s.body == body
            and w.first_tick <= s.tick <= w.last_tick
            and w.first_step <= s.step <= w.last_step
        ]

    def _recomputed(self, viewer: str, target: str, w: Window) -> list[tuple[int, int, str]]:
        """(step, tick, room) of the trace samples at which the target stood in the
        viewer's field of view."""
        if not self.traj.has_trace or self.perception is None:
            return []
        vs = {
            (s.step, s.tick): s
            for s in self._samples(viewer, w)
            if s.source == "trace" and s.yaw is not None
        }
        out = []
        for s in self._samples(target, w):
            v = vs.get((s.step, s.tick))
            if s.source != "trace" or v is None or v.yaw is None:
                continue
            if self.perception.sees(v.pos, v.yaw, s.pos):
                out.append((s.step, s.tick, s.room))
        return out

    def verify_sighting(self, claim: Claim, w: Window) -> dict[str, Any]:
        """A sighting.

        Source: this project. `true` if the target was in the subject's logged field of
        view (or, with a trace, at a sample recomputed with the game's perception) in
        the window, in the claimed room (the target's or the viewer's; the room is
        optional); `wrong_room` if seen elsewhere; `false` if the target was already
        dead or ejected, or (with a trace) never in view; `unverifiable` if only within
        360-degree proximity, or without a trace. The killer's own sight of its victim
        counts like anyone's.
        """
        t = self.traj
        target = claim.target or ""
        dead = self._dead(claim.subject, w, "the viewer")
        if dead:
            return dead
        gone = _gone_before(t, target, w.first_tick)
        if gone is not None:
            how = "ejected" if target in t.ejections else "killed"
            return {
                "verdict": "false",
                "reason": f"{target} was {how} at tick {gone}, before the window: "
                "it could not have been seen alive",
                "evidence": {"steps": [w.first_step, w.last_step], "gone_tick": gone},
            }
        seen = self._sightings(claim.subject, target, w)
        fov = [s for s in seen if s.fov]
        rows = [
            {
                "tick": s.tick,
                "step": s.step,
                "cause": s.cause,
                "target_room": t.room_at(target, s.tick, s.step),
                "viewer_room": t.room_at(claim.subject, s.tick, s.step),
            }
            for s in fov
        ]
        ev: dict[str, Any] = {
            "steps": [w.first_step, w.last_step],
            "rule": w.rule,
            "sightings": rows,
            "near_only": len(fov) == 0 and len(seen) > 0,
        }
        if not fov:
            again = self._recomputed(claim.subject, target, w)
            if again:
                rows = [
                    {"tick": k, "step": n, "target_room": r, "recomputed": True}
                    for n, k, r in again
                ]
                ev["sightings"] = rows
            elif seen:
                return {
                    "verdict": "unverifiable",
                    "evidence": ev,
                    "reason": f"{target} was only within 360-degree proximity, never "
                    "in the field of view at a logged moment",
                }
            elif t.has_trace:
                return {
                    "verdict": "false",
                    "evidence": ev,
                    "reason": f"{target} was never in {claim.subject}'s field of view "
                    "in the window",
                }
            else:
                return {
                    "verdict": "unverifiable",
                    "evidence": ev,
                    "reason": "no sighting at the logged moments; without a trace, "
                    "sight between snapshots cannot be ruled out",
                }
        if claim.room is None:
            return {"verdict": "true", "evidence": ev, "reason": f"{target} was in view"}
        if any(claim.room in (r.get("target_room"), r.get("viewer_room")) for r in rows):
            return {
                "verdict": "true",
                "evidence": ev,
                "reason": f"{target} was in view in {claim.room}",
            }
        return {
            "verdict": "wrong_room",
            "evidence": ev,
            "reason": f"{target} was seen, but not in {claim.room}",
        }

    # -- activity -----------------------------------------------------------------
    def verify_activity(self, claim: Claim, w: Window) -> dict[str, Any]:
        """An activity claim (`docs/grounding.md`, activity table).

        Source: this project. A subject gone before the window: `false`. `task`: task
        attempts meeting the window (faked ones too), `wrong_room` when only elsewhere;
        `report`, `call_meeting`, `kill`: the subject's rule events logged in the window
        (any meeting's, as the time phrase says), victim and room checked; `wait` and
        `travel`: `wait_or_travel`.
        """
        t = self.traj
        act = claim.activity or ""
        who = claim.subject
        base: dict[str, Any] = {
            "steps": [w.first_step, w.last_step],
            "ticks": [w.first_tick, w.last_tick],
            "rule": w.rule,
        }
        dead = self._dead(who, w, "the subject")
        if dead:
            return dead
        if act in ("wait", "travel"):
            return self.wait_or_travel(claim, w, base)

        def in_window(step: int, tick: int) -> bool:
            return w.first_step <= step <= w.last_step and w.first_tick <= tick <= w.last_tick

        if act == "task":
            # An attempt counts if its steps meet the window's (attempts never outlive
            # a round: a meeting interrupts them) and its ticks meet the window's ticks.
            atts = [
                a
                for a in t.attempts
                if a.agent == who
                and a.start_step <= w.last_step
                and (a.end_step if a.end_step is not None else w.last_step) >= w.first_step
                and a.start_tick <= w.last_tick
                and (a.end_tick if a.end_tick is not None else t.end_tick) >= w.first_tick
            ]
            base["tasks"] = [
                {
                    "station": a.station,
                    "room": a.room,
                    "outcome": a.outcome,
                    "fake": a.fake,
                    "start_tick": a.start_tick,
                    "end_tick": a.end_tick,
                    "start_step": a.start_step,
                    "end_step": a.end_step,
                }
                for a in atts
            ]
            if not atts:
                return {
                    "verdict": "false",
                    "evidence": base,
                    "reason": f"{who} did no task in the window",
                }
            if claim.room is None or any(a.room == claim.room for a in atts):
                faked = any(a.fake for a in atts if claim.room in (None, a.room))
                note = " (faked: an impostor standing a station)" if faked else ""
                return {
                    "verdict": "true",
                    "evidence": base,
                    "reason": f"task activity in {claim.room or 'the window'}{note}",
                }
            return {
                "verdict": "wrong_room",
                "evidence": base,
                "reason": f"tasks in {', '.join(sorted({a.room for a in atts}))}, not {claim.room}",
            }
        if act == "report":
            found = [r for r in t.reports if r.reporter == who and in_window(r.step, r.tick)]
            base["reports"] = [
                {"victim": r.victim, "room": r.room, "tick": r.tick, "step": r.step} for r in found
            ]
            if claim.target is not None:
                found = [r for r in found if r.victim == claim.target]
            return self._event_rooms(found, claim, base, f"{who} reported no body")
        if act == "call_meeting":
            calls = [(n, k, c) for (n, k, c) in t.emergencies if c == who and in_window(n, k)]
            base["emergencies"] = [{"tick": k, "step": n} for n, k, _ in calls]
            if calls:
                return {"verdict": "true", "evidence": base, "reason": "pressed the button"}
            return {"verdict": "false", "evidence": base, "reason": f"{who} called no meeting"}
        kills = [k for k in t.kills if k.killer == who and in_window(k.step, k.tick)]
        base["kills"] = [
            {"victim": k.victim, "room": k.room, "tick": k.tick, "step": k.step} for k in kills
        ]
        if claim.target is not None:
            kills = [k for k in kills if k.victim == claim.target]
        return self._event_rooms(kills, claim, base, f"{who} killed no one in the window")

    def walk_destination(self, agent: str, w: Window) -> tuple[str, int, int] | None:
        """Where a corridor walk at the window's end led: `(room, step, tick)`.

        Source: this project. When the agent's last position in the window is in a
        corridor (any region that is not a room, `NOT_ROOMS`), the first room it entered
        after that position, read from the later samples of the same round (never past
        the round's calling step, never from another round). None when the window ends
        in a room, or the round ended before the walk reached one.
        """
        t = self.traj
        samples = self._samples(agent, w)
        if not samples or samples[-1].room not in NOT_ROOMS:
            return None
        last = samples[-1]
        rnd = t.round_of(last.step)
        if rnd is None:
            return None
        for n in t.round_steps(rnd):
            if n < last.step:
                continue
            for s in t.step_samples(agent, n):
                if (s.step, s.tick) <= (last.step, last.tick):
                    continue
                if s.room not in NOT_ROOMS:
                    return s.room, s.step, s.tick
        return None

    def wait_or_travel(self, claim: Claim, w: Window, base: dict[str, Any]) -> dict[str, Any]:
        """`wait` and `travel`: checked on where the subject was, like a location.

        Source: this project. `travel` without a room: any movement; with one, presence
        in that room (standing still there is `true`), or a corridor walk toward it: the
        subject's last position in the window is in a corridor and the next room it
        enters, in the same round, is the claimed one (`walk_destination`; "heading to
        X" said of a walk cut off by the window's end, as QUACK reads a move by its
        destination). `wait`: the claimed room (or the most visited one) for at least
        `MOSTLY_FRACTION` of the window.

        Done in another room than the one claimed, they are `wrong_room`: a `travel`
        claim when the subject moved in the window but never entered the room; a `wait`
        claim when it never entered the room but spent at least `MOSTLY_FRACTION` of
        the window in one other place.
        """
        act = claim.activity
        who = claim.subject
        samples = self._samples(who, w)
        if not samples:
            return {
                "verdict": "unverifiable",
                "evidence": base,
                "reason": "no position of the subject in the window",
            }
        moved = len({s.pos for s in samples}) > 1
        dwell = self._dwell(who, w)
        if act == "travel" and claim.room is None:
            return {
                "verdict": "true" if moved else "false",
                "evidence": {**_evidence_base(w, samples), "rooms": _rooms(samples)},
                "reason": "moved in the window" if moved else "never moved in the window",
            }
        if act == "wait" and claim.room is None:
            room = max(dwell, key=lambda r: dwell[r]) if dwell else samples[0].room
            claim = claim.model_copy(update={"room": room})
        dur = w.duration or ("mostly" if act == "wait" else None)
        res = self.verify_location(claim, w.model_copy(update={"duration": dur}))
        if act == "travel" and res.get("verdict") != "true" and dur is None:
            dest = self.walk_destination(who, w)
            if dest is not None and dest[0] == claim.room:
                ev = {
                    **res.get("evidence", _evidence_base(w, samples)),
                    "destination": {"room": dest[0], "step": dest[1], "tick": dest[2]},
                }
                return {
                    "verdict": "true",
                    "evidence": ev,
                    "reason": f"walking a corridor toward {claim.room} at the window's end "
                    f"(entered at tick {dest[2]})",
                }
        if res.get("verdict") != "false" or claim.route or claim.room is None:
            return res
        ev = res.get("evidence", {})
        if act == "travel" and moved:
            went = ", ".join(_rooms(samples)) or "corridors only"
            return {
                "verdict": "wrong_room",
                "evidence": ev,
                "reason": f"moved in the window ({went}) but never entered {claim.room}",
            }
        if act == "wait" and dwell:
            where = max(dwell, key=lambda r: dwell[r])
            share = _fraction(dwell, where)
            if where != claim.room and share >= MOSTLY_FRACTION:
                return {
                    "verdict": "wrong_room",
                    "evidence": ev,
                    "reason": f"stayed in {where} ({share:.0%} of the window), "
                    f"never in {claim.room}",
                }
        return res

    @staticmethod
    def _event_rooms(
        found: Sequence[Any], claim: Claim, base: dict[str, Any], none: str
    ) -> dict[str, Any]:
        if not found:
            return {"verdict": "false", "evidence": base, "reason": none}
        if claim.room is None or any(f.room == claim.room for f in found):
            return {"verdict": "true", "evidence": base, "reason": "in the log"}
        return {
            "verdict": "wrong_room",
            "evidence": base,
            "reason": f"in {', '.join(sorted({f.room for f in found}))}, not {claim.room}",
        }

    # -- defense ------------------------------------------------------------------
    def verify_defense(self, claim: Claim, w: Window) -> dict[str, Any]:
        """A defense. Source: this project: `true` (and grounded) if the defender had the
        defended in its logged field of view in the window, else `unverifiable`; `hit` =
        the defended is a crewmate."""
        target = claim.target or ""
        seen = [s for s in self._sightings(claim.subject, target, w) if s.fov]
        hit = self.traj.roles.get(target) == "crewmate"
        ev = {"steps": [w.first_step, w.last_step], "sightings": [s.tick for s in seen]}
        if seen:
            return {
                "verdict": "true",
                "evidence": ev,
                "hit": hit,
                "grounded": True,
                "reason": f"{claim.subject} had {target} in view in the window",
            }
        return {
            "verdict": "unverifiable",
            "evidence": ev,
            "hit": hit,
            "grounded": False,
            "reason": f"{claim.subject} never had {target} in view at a logged moment; "
            "a defense on other grounds cannot be checked",
        }

    # -- accusation ---------------------------------------------------------------
    def score_accusation(self, row: AuditedClaim) -> AuditedClaim:
        """An accusation: verdict `unverifiable`, `hit` (the target is an impostor) and
        `grounded` (`grounds`, plus `false_claim_grounds` after all claims). Source: this
        project."""
        t = self.traj
        accuser, target = row.subject, row.target or ""
        m = t.meeting(row.meeting)
        if m is None:
            return row.model_copy(update={"reason": f"meeting {row.meeting} is not in the log"})
        evidence = self.grounds(accuser, target, m)
        return row.model_copy(
            update={
                "verdict": "unverifiable",
                "reason": "accusations are scored on hit and grounded, not on a verdict",
                "hit": t.roles.get(target) == "impostor",
                "grounded": bool(evidence),
                "window": [1, m.step],
                "evidence": {"grounds": evidence},
            }
        )

    def grounds(self, accuser: str, target: str, m: MeetingRecord) -> list[dict[str, Any]]:
        """What the accuser could have observed against the target before meeting `m`.

        Source: this project. Sight around a kill, in any round before the meeting: the
        target seen at a kill (its visibility), near a body (`NEAR_BODY_BLOCKS`) after
        it, together with the victim before it, or at the kill site in the kill's round.
        Reporting the body, calling the meeting or merely seeing the target are no
        grounds.

        A kill's round is the round of the step it was logged in; only sight logged in
        a step of that round counts for it (never sight that merely shares a tick with
        it across a meeting).
        """
        t = self.traj
        out: list[dict[str, Any]] = []
        # Sight at a round's start (everyone on the meeting seats) is no evidence.
        seen_fov = [
            s
            for s in t.sightings
            if s.viewer == accuser
            and s.target == target
            and not s.body
            and not s.round_start
            and s.step <= m.step
            and s.tick <= m.tick
        ]
        for s in seen_fov:
            if s.cause == "kill" and s.subject == target and (s.fov or s.near):
                out.append({"kind": "saw_at_kill", "tick": s.tick, "step": s.step})
        for k in t.kills:
            if k.step > m.step or k.tick > m.tick:
                continue
            kill_round = t.round_of(k.step)
            with_victim = {
                (s.step, s.tick)
                for s in t.sightings
                if s.viewer == accuser
                and s.target == k.victim
                and s.fov
                and not s.body
                and not s.round_start
            }
            for s in seen_fov:
                if not s.fov or kill_round is None or t.round_of(s.step) != kill_round:
                    continue
                if s.tick <= k.tick and (s.step, s.tick) in with_victim:
                    out.append(
                        {
                            "kind": "saw_with_victim",
                            "tick": s.tick,
                            "step": s.step,
                            "victim": k.victim,
                        }
                    )
                    continue
                pos = t.pos_at(target, s.tick, s.step)
                room = t.room_at(target, s.tick, s.step)
                close = (
                    pos is not None
                    and math.dist((pos[0], pos[2]), (k.pos[0], k.pos[2])) <= NEAR_BODY_BLOCKS
                )
                if s.tick >= k.tick and close:
                    near = {"kind": "saw_near_body", "tick": s.tick, "step": s.step}
                    out.append({**near, "victim": k.victim})
                elif close or room == k.room:
                    out.append(
                        {
                            "kind": "saw_at_kill_site",
                            "tick": s.tick,
                            "step": s.step,
                            "victim": k.victim,
                            "room": room,
                        }
                    )
        return out


def false_claim_grounds(
    rows: list[AuditedClaim], speech_step: dict[tuple[int, str, int], int]
) -> list[AuditedClaim]:
    """Add `target_claim_false` grounds: the target's claim verified false before.

    Source: this project (a lie that was caught is evidence anyone could hear).
    """
    out = []
    for r in rows:
        if r.type != "accusation" or r.target is None:
            out.append(r)
            continue
        here = speech_step.get((r.meeting, r.speaker, r.utterance), 10**9)
        lies = [
            c
            for c in rows
            if c.speaker == r.target
            and c.verdict in ("false", "wrong_room")
            and (
                c.meeting < r.meeting
                or (
                    c.meeting == r.meeting
                    and speech_step.get((c.meeting, c.speaker, c.utterance), 10**9) < here
                )
            )
        ]
        if not lies:
            out.append(r)
            continue
        grounds = list(r.evidence.get("grounds", [])) + [
            {"kind": "target_claim_false", "meeting": c.meeting, "text": c.text} for c in lies
        ]
        out.append(r.model_copy(update={"grounded": True, "evidence": {"grounds": grounds}}))
    return out


def audit_project(traj: Trajectory, claims: Iterable[Claim]) -> list[AuditedClaim]:
    """The `mineamongus` rule book: `ProjectAuditor` on every claim, then
    `false_claim_grounds`."""
    auditor = ProjectAuditor(traj)
    rooms = sorted(auditor.rooms)
    rows = [auditor.audit(normalise_claim(c, rooms, traj.agents)) for c in claims]
    return false_claim_grounds(rows, auditor.speech_step)
