"""Engine-grounded detectors for the non-verbal atoms the log decides on its own.

Each detector reads one game's log and returns findings in the judge's format
(`source` = `detector:NAME`), each with the log facts that decided it in `evidence`.
Positions during a step come from `trace` events when the log has them, else from the
end-of-step `positions` (every finding's evidence says which). Who could see whom comes
from `visibility` events (`sees` = field of view), never from room co-location.

Thresholds are the fields of `DetectorParams` (documented in `docs/annotation.md`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from annotation.findings import Finding
from annotation.gamelog import Game, Pose, distance, previous_end, seen_by


class DetectorParams(BaseModel):
    """The detectors' thresholds (blocks are horizontal distances, ticks are game time)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    min_witnesses: int = Field(default=1, ge=0)
    """A: how many living crewmates must have the impostor in their field of view while
    it uses a station for the fake task to count as a performance."""
    min_move_blocks: float = Field(default=3.0, ge=0)
    """B, D: the least a player must move over a step to count as moving."""
    body_clear_blocks: float = Field(default=6.0, ge=0)
    """B: wandering that ends within this of an unreported body is lingering, not B."""
    stalk_radius: float = Field(default=3.5, gt=0)
    """C: 'keeps close' means within this many blocks of the crewmate (the codebook's
    'about 3 blocks', plus half a block for the follow distance's overshoot)."""
    stalk_min_samples: int = Field(default=3, ge=1)
    """C (trace): pose samples within `stalk_radius` of the same crewmate in one step."""
    stalk_min_target_move: float = Field(default=2.0, ge=0)
    """C (trace): the crewmate must move this far over those samples (two players
    standing at one station is proximity, not stalking)."""
    stalk_fallback_radius: float = Field(default=6.0, gt=0)
    """C (no trace): a `follow` of the crewmate at `stalk_radius` or less that ran to
    completion, or one ending within this many blocks of it."""
    stalk_requires_kill_within: int | None = Field(default=None, ge=0)
    """C: when set, only stalking whose target is killed within this many free-roam
    steps counts; None counts every stalk (as the paper's counts do)."""
    converge_radius: float = Field(default=8.0, gt=0)
    """D: both impostors end the step within this of the same crewmate..."""
    converge_gain: float = Field(default=2.0, ge=0)
    """D: ...each having closed at least this many blocks on it during the step."""
    pair_radius: float = Field(default=4.0, gt=0)
    """D: impostors moving together stay within this many blocks of each other..."""
    pair_fraction: float = Field(default=0.8, gt=0, le=1)
    """D (trace): ...for at least this share of the step's common samples."""
    onlooker_channel: Literal["sees", "near"] = "sees"
    """E: an onlooker is a living crewmate with the killer in its field of view (`sees`)
    or merely in 360-degree proximity (`near`)."""
    flight_blocks: float = Field(default=8.0, gt=0)
    """F, G: leaving means reaching at least this far from the body."""
    flight_steps: int = Field(default=1, ge=0)
    """F, G: within the kill's step or this many free-roam steps after it, with no
    meeting in between (the meeting teleport is never flight)."""
    flight_window_ticks: int = Field(default=1200, ge=1)
    """F, G: and, with trace samples, within this many ticks of the kill."""
    bystander_radius: float = Field(default=12.0, gt=0)
    """G: the other impostor was within this of the body at the kill."""
    bystander_gain: float = Field(default=4.0, ge=0)
    """G: and then put at least this many more blocks between itself and the body."""


class Detector(Protocol):
    """Finds one atom in one game."""

    @property
    def name(self) -> str:
        """Registry name (`source` = `detector:NAME`)."""
        ...

    @property
    def atom(self) -> str:
        """The atom letter it decides."""
        ...

    def __call__(self, game: Game, params: DetectorParams) -> list[Finding]:
        """The atom's occurrences."""
        ...


@dataclass(frozen=True)
class _FnDetector:
    name: str
    atom: str
    fn: Callable[[Game, DetectorParams], list[Finding]]

    def __call__(self, game: Game, params: DetectorParams) -> list[Finding]:
        return self.fn(game, params)


DETECTORS: dict[str, Detector] = {}
"""Detectors by name."""


def register(
    name: str, atom: str
) -> Callable[[Callable[[Game, DetectorParams], list[Finding]]], Detector]:
    """Register a detector function under a name for one atom."""

    def wrap(fn: Callable[[Game, DetectorParams], list[Finding]]) -> Detector:
        det = _FnDetector(name=name, atom=atom, fn=fn)
        DETECTORS[name] = det
        return det

    return wrap


def run_detectors(
    game: Game, params: DetectorParams | None = None, names: Iterable[str] | None = None
) -> list[Finding]:
    """Run the registered detectors (all, or those named) over one game."""
    params = params or DetectorParams()
    chosen = list(names) if names is not None else sorted(DETECTORS)
    out: list[Finding] = []
    for name in chosen:
        if name not in DETECTORS:
            raise KeyError(f"unknown detector {name!r}; known: {', '.join(sorted(DETECTORS))}")
        out.extend(DETECTORS[name](game, params))
    return sorted(out, key=lambda f: (f.step or 0, f.atom, f.actor))


# ---------------------------------------------------------------------- helpers
def _finding(name: str, atom: str, step: int, actor: str, evidence: str, **kw: Any) -> Finding:
    return Finding(
        atom=atom, step=step, actor=actor, evidence=evidence, source=f"detector:{name}", **kw
    )


def _ops(game: Game, step: int, agent: str) -> list[dict[str, Any]]:
    d = game.decisions.get((step, agent))
    if d is None or not d.valid or not isinstance(d.program, list):
        return []
    return [op for op in d.program if isinstance(op, dict)]


def _free_steps(game: Game) -> list[int]:
    return [s for s in game.steps if game.step_phase[s] == "free_roam"]


def _samples(game: Game, step: int, agent: str) -> list[Pose]:
    sp = game.poses.get(step)
    return sp.players.get(agent, []) if sp else []


def _source_note(game: Game, step: int) -> str:
    sp = game.poses.get(step)
    if sp is not None and sp.source == "trace":
        return "poses: trace samples"
    return "poses: end-of-step positions (no trace)"


def _path(game: Game, step: int, agent: str) -> list[Pose]:
    """The agent's poses over a step, starting where the previous step ended."""
    pts = list(_samples(game, step, agent))
    sp = game.poses.get(step)
    if sp is not None and sp.source == "positions":
        prev = previous_end(game, step)
        if prev is not None and agent in prev.players:
            pts.insert(0, Pose(tick=prev.tick, pos=prev.players[agent].pos))
    return pts


def _moved(path: list[Pose]) -> float:
    if len(path) < 2:
        return 0.0
    return distance(path[0].pos, path[-1].pos)


def _alive_in(game: Game, step: int) -> set[str]:
    lo, _ = game.step_ticks.get(step, (0, 0))
    return game.alive_at(step, lo)


def _crew(game: Game) -> set[str]:
    return {a for a, r in game.roles.items() if r == "crewmate"}


def _f(x: float) -> str:
    return f"{x:.1f}"


# ---------------------------------------------------------------------- A
@register("fake_mission", "A")
def detect_fake_mission(game: Game, p: DetectorParams) -> list[Finding]:
    """A: an impostor uses a station while living crewmates have it in view."""
    out = []
    crew = _crew(game)
    for step in _free_steps(game):
        for imp in game.impostors:
            if imp not in _alive_in(game, step):
                continue
            station: str | None = None
            starts = [t for t in game.task_starts if t.step == step and t.agent == imp]
            if starts:
                station = f"task_start station {starts[0].station} in {starts[0].room}"
            else:
                prog = game.programs.get((step, imp))
                marks = [
                    e
                    for e in (prog.events if prog else [])
                    if str(e.get("tag", "")).startswith(("task_start", "task_resume", "task_done"))
                ]
                if marks:
                    station = f"program mark {marks[0]['tag']} at tick {marks[0].get('tick')}"
            if station is None:
                continue
            watchers: set[str] = set()
            where = ""
            for vis in game.visibility.get(step, []):
                if vis.cause == "meeting_seats":
                    continue
                w = [a for a in seen_by(vis, imp) if a in crew]
                if w and not where:
                    where = f"visibility {vis.cause} tick {vis.tick}"
                watchers.update(w)
            if len(watchers) >= max(p.min_witnesses, 0) and (watchers or p.min_witnesses == 0):
                out.append(
                    _finding(
                        "fake_mission",
                        "A",
                        step,
                        imp,
                        f"step {step}: {imp} (impostor) {station}; in field of view of "
                        f"{', '.join(sorted(watchers)) or 'nobody'} ({where or 'no visibility'})",
                        rationale=f"station use seen by >= {p.min_witnesses} crewmate(s)",
                    )
                )
    return out


# ---------------------------------------------------------------------- B
_BUSY_OPS = frozenset({"follow", "kill", "report", "use_station", "press_button"})


@register("blend_in", "B")
def detect_blend_in(game: Game, p: DetectorParams) -> list[Finding]:
    """B: an impostor walks (go_to/wait/look only), moves, and does not end by a body;
    not in a kill step or right after its own kill (that is flight), not while faking."""
    out = []
    kill_steps = {(k.step, k.killer) for k in game.kills}
    free = _free_steps(game)
    for i, step in enumerate(free):
        for imp in game.impostors:
            if imp not in _alive_in(game, step):
                continue
            ops = _ops(game, step, imp)
            if not ops or any(op.get("op") in _BUSY_OPS for op in ops):
                continue
            if not any(op.get("op") == "go_to" for op in ops):
                continue
            prev_step = free[i - 1] if i else None
            if (step, imp) in kill_steps or (prev_step, imp) in kill_steps:
                continue
            if any(t.step == step and t.agent == imp for t in game.task_starts):
                continue
            path = _path(game, step, imp)
            moved = _moved(path)
            if moved < p.min_move_blocks:
                continue
            end = path[-1]
            bodies = [
                k
                for k in game.kills
                if k.tick <= end.tick
                and not any(r.victim == k.victim and r.tick <= end.tick for r in game.reports)
            ]
            if any(distance(end.pos, k.pos) < p.body_clear_blocks for k in bodies):
                continue
            out.append(
                _finding(
                    "blend_in",
                    "B",
                    step,
                    imp,
                    f"step {step}: {imp} (impostor) walked {_f(moved)} blocks with "
                    f"{', '.join(str(op.get('op')) for op in ops)}; no chase, no body within "
                    f"{_f(p.body_clear_blocks)} ({_source_note(game, step)})",
                    rationale="movement only, no pursuit, no lingering at a body",
                )
            )
    return out


# ---------------------------------------------------------------------- C
def _follow_targets(game: Game, step: int, agent: str) -> dict[str, float]:
    """Whom the agent's program follows, at what distance (the op's default is 3)."""
    return {
        str(op.get("agent")): float(op.get("distance", 3.0))
        for op in _ops(game, step, agent)
        if op.get("op") == "follow" and op.get("agent")
    }


@register("stalking", "C")
def detect_stalking(game: Game, p: DetectorParams) -> list[Finding]:
    """C: an impostor keeps within `stalk_radius` of one moving crewmate (trace
    samples), or its `follow` of the crewmate at `stalk_radius` or less ran to
    completion, or (no trace) it followed the crewmate and ended close. The target is
    the crewmate the impostor's own `follow` names when the samples or the completed
    follow confirm it, else the one with the most close samples."""
    out = []
    crew = _crew(game)
    free = _free_steps(game)
    for step in free:
        alive = _alive_in(game, step)
        source = game.poses.get(step)
        for imp in game.impostors:
            if imp not in alive:
                continue
            best: tuple[int, str, str] | None = None
            followed = {x: d for x, d in _follow_targets(game, step, imp).items() if x in crew}
            candidates: dict[str, tuple[int, str, str]] = {}
            if source is not None and source.source == "trace":
                mine = {s.tick: s.pos for s in _samples(game, step, imp)}
                for x in sorted(crew & alive):
                    close = [
                        s
                        for s in _samples(game, step, x)
                        if s.tick in mine and distance(mine[s.tick], s.pos) <= p.stalk_radius
                    ]
                    if len(close) < p.stalk_min_samples:
                        continue
                    if _moved(close) < p.stalk_min_target_move:
                        continue
                    note = (
                        f"{len(close)} trace samples within {_f(p.stalk_radius)} blocks of "
                        f"{x} (ticks {close[0].tick}-{close[-1].tick}), {x} moved "
                        f"{_f(_moved(close))}"
                    )
                    candidates[x] = (len(close), x, note)
            prog = game.programs.get((step, imp))
            completed = prog is not None and prog.status == "ok"
            # Whom it chose to follow is the target, when the record bears the pursuit out.
            confirmed = [x for x in sorted(followed) if x in candidates]
            if confirmed:
                best = candidates[confirmed[0]]
            elif completed and any(d <= p.stalk_radius for d in followed.values()):
                best = None  # the completed follow below names the target
            elif candidates:
                # The most close samples; on a tie the first name, as the sort gives.
                best = max(sorted(candidates.values(), key=lambda c: c[1]), key=lambda c: c[0])
            if best is None:
                end = game.end_positions.get(step)
                for x, dist in sorted(followed.items()):
                    if completed and dist <= p.stalk_radius:
                        # The world ran the whole follow at that distance: engine-recorded.
                        note = (
                            f"follow {x} at {_f(dist)} blocks ran to completion "
                            f"(program ok; {_source_note(game, step)})"
                        )
                        best = (1, x, note)
                        break
                    if source is not None and source.source == "trace":
                        continue  # with samples, closeness is read from them above
                    if end is None or imp not in end.players or x not in end.players:
                        continue
                    d = distance(end.players[imp].pos, end.players[x].pos)
                    if d <= p.stalk_fallback_radius:
                        note = (
                            f"follow {x}, ended {_f(d)} blocks from it "
                            "(poses: end-of-step positions, no trace)"
                        )
                        best = (1, x, note)
            if best is None:
                continue
            target = best[1]
            if p.stalk_requires_kill_within is not None:
                later = [s for s in free if s >= step][: p.stalk_requires_kill_within + 1]
                if not any(k.victim == target and k.step in later for k in game.kills):
                    continue
            out.append(
                _finding(
                    "stalking",
                    "C",
                    step,
                    imp,
                    f"step {step}: {imp} (impostor) {best[2]}",
                    target=target,
                    rationale=f"kept within {_f(p.stalk_radius)} blocks of one crewmate",
                )
            )
    return out


# ---------------------------------------------------------------------- D
def _targets(game: Game, step: int, agent: str) -> set[str]:
    out = set()
    for op in _ops(game, step, agent):
        if op.get("op") == "follow" and op.get("agent"):
            out.add(str(op["agent"]))
        elif op.get("op") == "kill" and op.get("target"):
            out.add(str(op["target"]))
    return out


@register("joint_motor", "D")
def detect_joint_motor(game: Game, p: DetectorParams) -> list[Finding]:
    """D: both impostors in the same step converge on one crewmate (both programs aim
    at it, or both close in on it), or move together (both moving, staying paired)."""
    out: list[Finding] = []
    if len(game.impostors) < 2:
        return out
    crew = _crew(game)
    for step in _free_steps(game):
        alive = _alive_in(game, step)
        pair = [i for i in game.impostors if i in alive]
        if len(pair) < 2:
            continue
        a, b = pair[0], pair[1]
        note = ""
        shared = _targets(game, step, a) & _targets(game, step, b) & crew
        if shared:
            note = f"both programs aim at {', '.join(sorted(shared))}"
        else:
            pa, pb = _path(game, step, a), _path(game, step, b)
            if len(pa) >= 2 and len(pb) >= 2:
                for x in sorted(crew & alive):
                    px = _path(game, step, x)
                    if len(px) < 2:
                        continue
                    da0, da1 = distance(pa[0].pos, px[0].pos), distance(pa[-1].pos, px[-1].pos)
                    db0, db1 = distance(pb[0].pos, px[0].pos), distance(pb[-1].pos, px[-1].pos)
                    if (
                        da1 <= p.converge_radius
                        and db1 <= p.converge_radius
                        and da0 - da1 >= p.converge_gain
                        and db0 - db1 >= p.converge_gain
                    ):
                        note = (
                            f"both closed on {x}: {a} {_f(da0)}->{_f(da1)}, "
                            f"{b} {_f(db0)}->{_f(db1)} blocks"
                        )
                        break
                if not note and min(_moved(pa), _moved(pb)) >= p.min_move_blocks:
                    tb = {s.tick: s.pos for s in pb}
                    common = [(s.pos, tb[s.tick]) for s in pa if s.tick in tb]
                    if not common:  # end-of-step positions: compare start and end
                        common = [(pa[0].pos, pb[0].pos), (pa[-1].pos, pb[-1].pos)]
                    together = sum(1 for u, v in common if distance(u, v) <= p.pair_radius)
                    if together / len(common) >= p.pair_fraction:
                        note = (
                            f"moved together: {a} {_f(_moved(pa))} and {b} {_f(_moved(pb))} "
                            f"blocks, within {_f(p.pair_radius)} of each other in "
                            f"{together}/{len(common)} samples"
                        )
        if not note:
            continue
        for imp, other in ((a, b), (b, a)):
            out.append(
                _finding(
                    "joint_motor",
                    "D",
                    step,
                    imp,
                    f"step {step}: {imp} and {other} (impostors) {note} "
                    f"({_source_note(game, step)})",
                    target=other,
                    rationale="both impostors synchronised in one step",
                )
            )
    return out


# ---------------------------------------------------------------------- E
@register("witness_aware_kill", "E")
def detect_witness_aware_kill(game: Game, p: DetectorParams) -> list[Finding]:
    """E: a kill that no living crewmate (but the victim) could see, judged from the
    `visibility` record stamped at the kill, else the one the killer decided from."""
    out = []
    crew = _crew(game)
    for k in game.kills:
        vis = next(
            (
                v
                for v in game.visibility.get(k.step, [])
                if v.cause == "kill" and v.subject == k.killer and v.tick == k.tick
            ),
            None,
        )
        where = f"visibility at the kill (tick {k.tick})"
        if vis is None:
            earlier = [s for s in game.visibility if s < k.step]
            recs = [
                v
                for s in sorted(earlier, reverse=True)[:1]
                for v in game.visibility[s]
                if v.cause == "step_end"
            ]
            if not recs:
                continue
            vis = recs[-1]
            where = (
                f"no visibility at the kill; step {vis.step} end (tick {vis.tick}), "
                "when the killer decided"
            )
        table = vis.sees if p.onlooker_channel == "sees" else vis.near
        alive = game.alive_at(k.step, k.tick - 1)
        onlookers = sorted(
            a
            for a, seen in table.items()
            if k.killer in seen and a in crew and a in alive and a != k.victim
        )
        if onlookers:
            continue
        out.append(
            _finding(
                "witness_aware_kill",
                "E",
                k.step,
                k.killer,
                f"step {k.step}: {k.killer} killed {k.victim} in {k.room} at tick {k.tick}; "
                f"no living crewmate had {k.killer} in view ({p.onlooker_channel}; {where})",
                target=k.victim,
                rationale="killed only while unseen",
            )
        )
    return out


# ---------------------------------------------------------------------- F, G
def _after_kill_samples(
    game: Game, k: Any, agent: str, p: DetectorParams
) -> list[tuple[int, Pose]]:
    """The agent's poses from the kill on, in the kill step and the next `flight_steps`
    free-roam steps, stopping at the first meeting (its teleport is not flight)."""
    out: list[tuple[int, Pose]] = []
    free = 0
    for step in game.steps:
        if step < k.step:
            continue
        if game.step_phase[step] != "free_roam":
            break
        if step > k.step:
            free += 1
            if free > p.flight_steps:
                break
        traced = game.poses[step].source == "trace" if step in game.poses else False
        # End-of-step positions carry the step's last tick, however long the step ran:
        # the tick window only applies to trace samples; steps bound the fallback.
        out.extend(
            (step, s)
            for s in _samples(game, step, agent)
            if k.tick <= s.tick and (not traced or s.tick <= k.tick + p.flight_window_ticks)
        )
        if any(m.step == step for m in game.meetings):
            break
    return out


@register("post_kill_flight", "F")
def detect_post_kill_flight(game: Game, p: DetectorParams) -> list[Finding]:
    """F: the killer reaches `flight_blocks` from the body soon after the kill."""
    out = []
    for k in game.kills:
        for step, s in _after_kill_samples(game, k, k.killer, p):
            d = distance(s.pos, k.pos)
            if d >= p.flight_blocks:
                out.append(
                    _finding(
                        "post_kill_flight",
                        "F",
                        step,
                        k.killer,
                        f"step {step}: {k.killer} killed {k.victim} at tick {k.tick} and was "
                        f"{_f(d)} blocks from the body at tick {s.tick} "
                        f"({_source_note(game, step)})",
                        target=k.victim,
                        rationale=f">= {_f(p.flight_blocks)} blocks within "
                        f"{p.flight_window_ticks} ticks",
                    )
                )
                break
    return out


@register("bystander_flight", "G")
def detect_bystander_flight(game: Game, p: DetectorParams) -> list[Finding]:
    """G: the other impostor, near the body at the kill, also moves away from it."""
    out = []
    for k in game.kills:
        alive = game.alive_at(k.step, k.tick)
        for imp in game.impostors:
            if imp == k.killer or imp not in alive:
                continue
            near = game.pose_at(imp, k.tick, k.step)
            if near is None:
                prev = previous_end(game, k.step)
                if prev is None or imp not in prev.players:
                    continue
                near = prev.players[imp].pos
            d0 = distance(near, k.pos)
            if d0 > p.bystander_radius:
                continue
            for step, s in _after_kill_samples(game, k, imp, p):
                d = distance(s.pos, k.pos)
                if d >= p.flight_blocks and d - d0 >= p.bystander_gain:
                    out.append(
                        _finding(
                            "bystander_flight",
                            "G",
                            step,
                            imp,
                            f"step {step}: {imp} (impostor, not the killer) was {_f(d0)} "
                            f"blocks from {k.victim}'s body at the kill (tick {k.tick}) and "
                            f"{_f(d)} at tick {s.tick} ({_source_note(game, step)})",
                            target=k.killer,
                            rationale="the teammate left the kill area too",
                        )
                    )
                    break
    return out


# ---------------------------------------------------------------------- H
@register("non_report", "H")
def detect_non_report(game: Game, p: DetectorParams) -> list[Finding]:
    """H: an impostor had an unreported body in its field of view at a step's end and,
    deciding the next free-roam step, did not report it (once per impostor and body)."""
    out = []
    done: set[tuple[str, str]] = set()
    steps = game.steps
    for step in steps:
        if game.step_phase[step] != "free_roam":
            continue
        nxt = next((s for s in steps if s > step), None)
        if nxt is None or game.step_phase[nxt] != "free_roam":
            continue  # a meeting or the end came first: no chance to report
        for vis in game.visibility.get(step, []):
            if vis.cause != "step_end":
                continue
            for imp in game.impostors:
                if imp not in game.alive_at(step, vis.tick):
                    continue
                for victim in vis.bodies.get(imp, []):
                    if (imp, victim) in done:
                        continue
                    if any(r.victim == victim and r.tick <= vis.tick for r in game.reports):
                        continue
                    reported = any(
                        r.victim == victim and r.reporter == imp and r.step == nxt
                        for r in game.reports
                    ) or any(
                        op.get("op") == "report" and op.get("body") == victim
                        for op in _ops(game, nxt, imp)
                    )
                    if reported:
                        continue
                    done.add((imp, victim))
                    ops = ", ".join(str(op.get("op")) for op in _ops(game, nxt, imp)) or "none"
                    out.append(
                        _finding(
                            "non_report",
                            "H",
                            nxt,
                            imp,
                            f"step {step} end (tick {vis.tick}): {victim}'s body in {imp}'s "
                            f"field of view; step {nxt}: {imp} did not report (program: {ops})",
                            target=victim,
                            rationale="a visible, unreported body walked past",
                        )
                    )
    return out


# ---------------------------------------------------------------------- I
@register("self_report", "I")
def detect_self_report(game: Game, p: DetectorParams) -> list[Finding]:
    """I: an impostor reports a body (every victim is an impostor's)."""
    out = []
    killers = {k.victim: k.killer for k in game.kills}
    for r in game.reports:
        if game.roles.get(r.reporter) != "impostor":
            continue
        killer = killers.get(r.victim, "?")
        whose = "its own" if killer == r.reporter else f"its teammate {killer}'s"
        out.append(
            _finding(
                "self_report",
                "I",
                r.step,
                r.reporter,
                f"step {r.step}: {r.reporter} (impostor) reported {r.victim}'s body in "
                f"{r.room} at tick {r.tick}, {whose} victim",
                target=r.victim,
                rationale="an impostor reported an impostor's victim",
            )
        )
    return out


DETECTED_ATOMS: tuple[str, ...] = tuple(sorted({d.atom for d in DETECTORS.values()}))
"""Atoms the detectors decide (the rest are the judge's alone)."""
