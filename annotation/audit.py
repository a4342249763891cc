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
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from annotation.claims import ACTIVITIES, CLAIM_TYPES, Claim, normalise_claim
from annotation.trajectory import (
    NOT_ROOMS,
    MeetingRecord,
    Sample,
    Sighting,
    Trajectory,
    dwell_ticks,
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


# --------------------------------------------------------------------- time windows

_DEFAULT = {
    "",
    "this round",
    "this time",
    "today",
    "now",
    "just now",
    "recently",
    "before the meeting",
    "this game round",
    "in this round",
    "during this round",
    "since the last meeting",
}
_START = {"at the start", "at first", "in the beginning", "at the beginning", "early", "first"}
_END = {"at the end", "just before the meeting", "right before the meeting", "before the call"}
_WHOLE = {
    "the whole time",
    "whole time",
    "all the time",
    "the entire time",
    "the whole round",
    "all round",
    "the entire round",
    "all along",
    "always",
}
_MOSTLY = {"mostly", "most of the time", "most of the round"}
_BEFORE_BODY = {
    "before the body was found",
    "before the report",
    "before the body was reported",
    "before the body",
    "before the kill was found",
}
_AT_REPORT = {"when i found the body", "when the body was found", "at the report"}
_EARLIER = {"earlier", "earlier in the game", "last", "before", "last time i saw", "ever"}
_PREVIOUS = {"last round", "the last round", "previous round", "the previous round"}


def _free_span(
    traj: Trajectory, first_step: int, last_step: int
) -> tuple[int, int, int, int] | None:
    steps = traj.free_roam_steps(first_step, last_step)
    if not steps:
        return None
    return steps[0].step, steps[-1].step, steps[0].start_tick, steps[-1].end_tick


def resolve_window(claim: Claim, traj: Trajectory) -> Window | str:
    """The window a claim's temporal phrase points at, or why there is none.

    Rules (phrases are matched after lower-casing and trimming punctuation):
    none / "this round" (default): the free-roam steps since the previous meeting up to
    the step that called this one, ticks up to the report or button press; "at the
    start": the round's first step; "at the end": the calling step; "the whole time":
    the default window, as a duration (`WHOLE_FRACTION`); "mostly": likewise
    (`MOSTLY_FRACTION`); "before the body was found": the default window (a meeting
    without a body makes the claim unverifiable); "when I found the body": the calling
    step; "until step N": the round's first step to N; "at step N" / "steps N-M": those
    steps; "at/around tick N", "ticks N-M": the steps holding those ticks (± one sample
    interval); "earlier" (the scripted agents' "last saw"): every free-roam step of the
    game before the meeting; "last round": the previous meeting's round.

    Args:
        claim: The claim.
        traj: The game.

    Returns:
        The window, or a reason string when it cannot be resolved.
    """
    m = traj.meeting(claim.meeting)
    if m is None:
        return f"meeting {claim.meeting} is not in the log"
    phrase = re.sub(r"[\s.,!?;:]+$", "", (claim.temporal or "").strip().lower())
    phrase = re.sub(r"\s+", " ", phrase)
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

    if phrase in _DEFAULT:
        return Window(
            first_step=d_first, last_step=d_last, first_tick=d_t0, last_tick=d_t1, rule="default"
        )
    if phrase in _WHOLE or phrase in _MOSTLY:
        dur: Duration = "whole" if phrase in _WHOLE else "mostly"
        return Window(
            first_step=d_first,
            last_step=d_last,
            first_tick=d_t0,
            last_tick=d_t1,
            rule=dur,
            duration=dur,
        )
    if phrase in _START:
        return win(d_first, d_first, "start")
    if phrase in _END or phrase in _AT_REPORT:
        return win(d_last, d_last, "end")
    if phrase in _BEFORE_BODY:
        if m.victim is None:
            return f"no body was found before meeting {m.index} (an emergency meeting)"
        return Window(
            first_step=d_first,
            last_step=d_last,
            first_tick=d_t0,
            last_tick=d_t1,
            rule="before_body",
        )
    if phrase in _EARLIER:
        return win(1, m.step, "earlier")
    if phrase in _PREVIOUS:
        prev = traj.meeting(m.index - 1)
        if prev is None:
            return f"meeting {m.index} has no previous round"
        return win(prev.round_first_step, prev.step, "previous_round")
    if mt := re.fullmatch(r"(?:until|up to|till) step (\d+)", phrase):
        return win(d_first, int(mt.group(1)), "until_step")
    if mt := re.fullmatch(r"(?:at |in |during )?steps? (\d+)(?:\s*(?:-|to|and)\s*(\d+))?", phrase):
        a = int(mt.group(1))
        b = int(mt.group(2) or a)
        return win(min(a, b), max(a, b), "steps")
    tick_pat = r"(?:at |around |about |near )?ticks? (\d+)(?:\s*(?:-|to|–)\s*(\d+))?"
    if mt := re.fullmatch(tick_pat, phrase):
        a = int(mt.group(1))
        b = int(mt.group(2) or a)
        lo, hi = min(a, b) - traj.sample_interval, max(a, b) + traj.sample_interval
        steps = [
            s.step
            for s in traj.steps.values()
            if s.phase == "free_roam" and s.end_tick >= lo and s.start_tick <= hi
        ]
        if not steps:
            return f"no free-roam step holds tick {a}"
        w = win(min(steps), max(steps), "ticks")
        if isinstance(w, str):
            return w
        return w.model_copy(
            update={"first_tick": max(w.first_tick, lo), "last_tick": min(w.last_tick, hi)}
        )
    return (
        f"temporal phrase {claim.temporal!r} is not in the documented vocabulary "
        "(docs/grounding.md)"
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


def _fraction(samples: Sequence[Sample], room: str, w: Window) -> float:
    dwell = dwell_ticks(samples, w.last_tick)
    total = sum(dwell.values())
    return dwell.get(room, 0) / total if total else 0.0


class _Auditor:
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
    def _unknown(self, claim: Claim) -> str | None:
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
        reason = self._unknown(claim)
        if reason is not None:
            return row.model_copy(update={"verdict": "unverifiable", "reason": reason})
        if claim.type == "accusation":
            return self._accusation(row)
        w = resolve_window(claim, t)
        if isinstance(w, str):
            return row.model_copy(update={"verdict": "unverifiable", "reason": w})
        upd: dict[str, Any] = {"window": [w.first_step, w.last_step]}
        if claim.type == "location":
            upd.update(self._location(claim, w))
        elif claim.type == "sighting":
            upd.update(self._sighting(claim, w))
        elif claim.type == "activity":
            upd.update(self._activity(claim, w))
        else:
            upd.update(self._defense(claim, w))
        return row.model_copy(update=upd)

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
    def _location(self, claim: Claim, w: Window) -> dict[str, Any]:
        t = self.traj
        dead = self._dead(claim.subject, w, "the subject")
        if dead:
            return dead
        samples = t.samples_between(claim.subject, w.first_tick, w.last_tick)
        if not samples:
            return {"verdict": "unverifiable", "reason": "no position of the subject in the window"}
        ev = _evidence_base(w, samples)
        rooms = _rooms(samples)
        ev["rooms"] = rooms
        ev["room_ticks"] = dwell_ticks(samples, w.last_tick)
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
        frac = _fraction(samples, room, w)
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

    def _recomputed(self, viewer: str, target: str, w: Window) -> list[tuple[int, str]]:
        """Trace ticks at which the target stood in the viewer's field of view."""
        t = self.traj
        if not t.has_trace or self.perception is None:
            return []
        vs = {
            s.tick: s
            for s in t.samples_between(viewer, w.first_tick, w.last_tick)
            if s.source == "trace" and s.yaw is not None
        }
        out = []
        for s in t.samples_between(target, w.first_tick, w.last_tick):
            v = vs.get(s.tick)
            if s.source != "trace" or v is None or v.yaw is None:
                continue
            if self.perception.sees(v.pos, v.yaw, s.pos):
                out.append((s.tick, s.room))
        return out

    def _sighting(self, claim: Claim, w: Window) -> dict[str, Any]:
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
                rows = [{"tick": k, "target_room": r, "recomputed": True} for k, r in again]
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
    def _activity(self, claim: Claim, w: Window) -> dict[str, Any]:
        t = self.traj
        act = claim.activity or ""
        who = claim.subject
        base = {
            "steps": [w.first_step, w.last_step],
            "ticks": [w.first_tick, w.last_tick],
            "rule": w.rule,
        }
        if act in ("wait", "travel"):
            dur = w.duration or ("mostly" if act == "wait" else None)
            if act == "wait":
                if claim.room is None:
                    samples = t.samples_between(who, w.first_tick, w.last_tick)
                    if not samples:
                        return {"verdict": "unverifiable", "reason": "no position in the window"}
                    dwell = dwell_ticks(samples, w.last_tick)
                    room = max(dwell, key=lambda r: dwell[r]) if dwell else samples[0].room
                    claim = claim.model_copy(update={"room": room})
                w2 = w.model_copy(update={"duration": dur})
                return self._location(claim, w2)
            samples = t.samples_between(who, w.first_tick, w.last_tick)
            rooms = _rooms(samples)
            if claim.room is not None:
                return self._location(claim, w)
            moved = len({s.pos for s in samples}) > 1
            return {
                "verdict": "true" if moved else "false",
                "evidence": {**base, "rooms": rooms},
                "reason": "moved in the window" if moved else "never moved in the window",
            }
        dead = self._dead(who, w, "the subject")
        if dead:
            return dead
        if act == "task":
            atts = [
                a
                for a in t.attempts
                if a.agent == who
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
            found = [
                r
                for r in t.reports
                if r.reporter == who and w.first_tick <= r.tick <= max(w.last_tick, w.first_tick)
            ]
            base["reports"] = [{"victim": r.victim, "room": r.room, "tick": r.tick} for r in found]
            if claim.target is not None:
                found = [r for r in found if r.victim == claim.target]
            return self._event_rooms(found, claim, base, f"{who} reported no body")
        if act == "call_meeting":
            calls = [
                (s, k, c)
                for (s, k, c) in t.emergencies
                if c == who and w.first_tick <= k <= w.last_tick
            ]
            base["emergencies"] = [k for _, k, _ in calls]
            if calls:
                return {"verdict": "true", "evidence": base, "reason": "pressed the button"}
            return {"verdict": "false", "evidence": base, "reason": f"{who} called no meeting"}
        kills = [k for k in t.kills if k.killer == who and w.first_tick <= k.tick <= w.last_tick]
        base["kills"] = [{"victim": k.victim, "room": k.room, "tick": k.tick} for k in kills]
        if claim.target is not None:
            kills = [k for k in kills if k.victim == claim.target]
        return self._event_rooms(kills, claim, base, f"{who} killed no one in the window")

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
    def _defense(self, claim: Claim, w: Window) -> dict[str, Any]:
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
    def _accusation(self, row: AuditedClaim) -> AuditedClaim:
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
        """What the accuser could have observed against the target before meeting `m`."""
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
            and s.tick <= m.tick
        ]
        for s in seen_fov:
            if s.cause == "kill" and s.subject == target and (s.fov or s.near):
                out.append({"kind": "saw_at_kill", "tick": s.tick})
        rounds = [(mm.round_start_tick, mm.tick) for mm in t.meetings]
        for k in t.kills:
            if k.tick > m.tick:
                continue
            r0, r1 = next(((a, b) for a, b in rounds if a <= k.tick <= b), (k.tick, m.tick))
            with_victim = {
                s.tick
                for s in t.sightings
                if s.viewer == accuser
                and s.target == k.victim
                and s.fov
                and not s.body
                and not s.round_start
            }
            for s in seen_fov:
                if not s.fov or not (r0 <= s.tick <= r1):
                    continue
                if s.tick <= k.tick and s.tick in with_victim:
                    out.append({"kind": "saw_with_victim", "tick": s.tick, "victim": k.victim})
                    continue
                pos = t.pos_at(target, s.tick, s.step)
                room = t.room_at(target, s.tick, s.step)
                close = (
                    pos is not None
                    and math.dist((pos[0], pos[2]), (k.pos[0], k.pos[2])) <= NEAR_BODY_BLOCKS
                )
                if s.tick >= k.tick and close:
                    out.append({"kind": "saw_near_body", "tick": s.tick, "victim": k.victim})
                elif close or room == k.room:
                    out.append(
                        {
                            "kind": "saw_at_kill_site",
                            "tick": s.tick,
                            "victim": k.victim,
                            "room": room,
                        }
                    )
        return out


def _false_claim_grounds(
    rows: list[AuditedClaim], speech_step: dict[tuple[int, str, int], int]
) -> list[AuditedClaim]:
    """Add `target_claim_false` grounds: the target's claim verified false before."""
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


def audit_claims(traj: Trajectory, claims: Iterable[Claim]) -> list[AuditedClaim]:
    """Verify claims against one game's trajectory.

    Claims are normalised first (rooms, players, activity); a claim that names something
    the game does not have is `unverifiable` with the reason, never an error.

    Args:
        traj: The game.
        claims: Its claims (extracted or supplied).

    Returns:
        One audited row per claim, in the given order.
    """
    auditor = _Auditor(traj)
    rooms = sorted(auditor.rooms)
    rows = [auditor.audit(normalise_claim(c, rooms, traj.agents)) for c in claims]
    return _false_claim_grounds(rows, auditor.speech_step)
