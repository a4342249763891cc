"""Compact judge text from a game log, one pass each (documented in docs/annotation.md).

Every line of a rendering starts with `[step N]` (or is a `#` header), so a judge's
evidence quote points at one step, and every line has an owner: the player whose act,
decision or words it records (None for headers and results). A judge's finding must quote
a line its actor owns (`annotation.deception.findings.validate_finding`).

The non-verbal pass shows, per free-roam step, one line per living impostor: its room and
position, whom it could see and who could see it (field of view), the players near it at
the step's end with their distances and the closest each came during the step (trace),
the decision's module, its program and outcome, the module's reasoning, the planner's
reasoning and intent, and the private narration; then that impostor's kill scans
(whom it saw, whether a witness was visible) and, for a KILL that sent no strike, why
(the deferral); then the step's kills (with the onlookers at the kill tick when
recorded), the bodies in each impostor's view, reports, emergencies and fake task
completions. The verbal pass shows each meeting's speech with the speaker's role and the
facts the speech can be checked against, then every vote with its stated reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from annotation.gamelog import Game, distance, seen_by
from controller.events import DEFERRALS, Decision, Visibility
from controller.record import calls_of

RENDER_VERSION = 3
"""Bumped when a rendering changes (part of the judge's prompt hash). 3: a step in which a
meeting was called shows where it ended and who saw whom there."""

NEAR_BLOCKS = 12.0
"""Players within this many blocks of an impostor (the default vision radius) are listed
with their distances."""
CLOSEST_BLOCKS = 8.0
"""Players that came within this many blocks during the step are listed with their
closest distance and its tick (enough to judge C's 'about 3 blocks' and D's pairing)."""
TEXT_CHARS = 240
"""Free text (reasoning, scan details) is cut to this many characters."""


@dataclass(frozen=True)
class Line:
    """One line of a rendering and whose it is."""

    step: int | None
    """The step it records (None for headers)."""
    owner: str | None
    """The player whose act, decision or words the line records (None: a header or a
    result that is no one's own)."""
    text: str


def _pos(p: tuple[float, float, float]) -> str:
    return f"({p[0]:.0f},{p[1]:.0f},{p[2]:.0f})"


def _cut(text: str, n: int = TEXT_CHARS) -> str:
    text = " ".join(str(text).split()).replace('"', "'")
    return text if len(text) <= n else text[: n - 1] + "…"


def _ops(program: Any) -> str:
    if not isinstance(program, list) or not program:
        return "none"
    parts = []
    for op in program:
        if not isinstance(op, dict):
            parts.append(json.dumps(op))
            continue
        args = " ".join(f"{k}={v}" for k, v in op.items() if k != "op")
        parts.append(f"{op.get('op', '?')} {args}".strip())
    return "; ".join(parts)


def _end_vis(game: Game, step: int) -> Visibility | None:
    return next((v for v in game.visibility.get(step, []) if v.cause == "step_end"), None)


def _header(game: Game) -> list[Line]:
    imps = ", ".join(game.impostors)
    crew = ", ".join(a for a in game.start.agents if a not in game.impostors)
    text = f"# game {game.game_id} (map {game.start.map}); impostors: {imps}; crewmates: {crew}"
    return [Line(None, None, text)]


def _near(game: Game, step: int, imp: str, alive: set[str]) -> list[str]:
    """`near:` and `closest:` bits: who was around the impostor, with distances."""
    bits = []
    end = game.end_positions.get(step)
    if end is not None and imp in end.players:
        me = end.players[imp].pos
        near = sorted(
            (distance(me, snap.pos), a)
            for a, snap in end.players.items()
            if a != imp and a in alive and snap.status == "alive"
        )
        listed = [
            f"{a}{' (impostor)' if a in game.impostors else ''} {d:.1f}"
            for d, a in near
            if d <= NEAR_BLOCKS
        ]
        bits.append(f"near at end: {', '.join(listed) or 'nobody within 12 blocks'}")
    sp = game.poses.get(step)
    if sp is not None and sp.source == "trace" and sp.players.get(imp):
        mine = {s.tick: s.pos for s in sp.players[imp]}
        closest = []
        for a in sorted(sp.players):
            if a == imp:
                continue
            pairs = [
                (distance(mine[s.tick], s.pos), s.tick) for s in sp.players[a] if s.tick in mine
            ]
            if not pairs:
                continue
            d, tick = min(pairs)
            if d <= CLOSEST_BLOCKS:
                within = [t for dd, t in pairs if dd <= 3.5]
                span = (
                    f", within 3.5 in {len(within)} samples (ticks {min(within)}-{max(within)})"
                    if within
                    else ""
                )
                closest.append(f"{a} {d:.1f} at tick {tick}{span}")
        if closest:
            bits.append(f"closest in step: {'; '.join(closest)}")
    return bits


def _thinking(d: Decision) -> list[str]:
    """The planner's reasoning and intent behind a decision (its `planner` calls)."""
    bits = []
    for call in calls_of(d):
        parsed = call.parsed or {}
        if call.purpose == "planner_long" and parsed.get("strategy"):
            bits.append(f'strategy: "{_cut(parsed["strategy"])}"')
        elif call.purpose == "planner":
            said = [str(parsed[k]) for k in ("reasoning", "intent") if parsed.get(k)]
            if said:
                bits.append(f'planner: "{_cut(" / ".join(said))}"')
    return bits


def _scans(game: Game, step: int, imp: str, d: Decision) -> list[Line]:
    """The impostor's kill scans and, for a KILL without a strike, why."""
    out = []
    for call in calls_of(d):
        if call.purpose != "kill_scan":
            continue
        parsed = call.parsed or {}
        if not parsed:
            what = f"unreadable answer ({_cut(call.parse_error or call.error or call.raw, 80)})"
        else:
            seen = parsed.get("players_seen")
            seen_txt = ", ".join(map(str, seen)) if isinstance(seen, list) and seen else "nobody"
            what = (
                f"saw {seen_txt}; witnesses visible: {parsed.get('witnesses_visible')}; "
                f"target visible: {parsed.get('target_visible')}"
            )
            if parsed.get("detail"):
                what += f'; "{_cut(parsed["detail"])}"'
        out.append(Line(step, imp, f"[step {step}] {imp} kill scan: {what}"))
    if d.module.upper() == "KILL":
        if d.deferral:
            why = DEFERRALS.get(d.deferral, d.deferral)
            out.append(Line(step, imp, f"[step {step}] {imp} kill deferred ({d.deferral}): {why}"))
        else:
            prog = game.programs.get((step, imp))
            reached = [e for e in (prog.events if prog else []) if e.get("kind") == "reached"]
            landed = any(k.step == step and k.killer == imp for k in game.kills)
            result = "landed" if landed else (prog.reason or prog.status) if prog else "no outcome"
            out.append(
                Line(
                    step,
                    imp,
                    f"[step {step}] {imp} kill strike sent: {result}"
                    + (f" (reached {reached[0].get('agent')})" if reached else ""),
                )
            )
    return out


def nonverbal_lines(game: Game) -> list[Line]:
    """The action log of a game for the non-verbal pass, line by line."""
    lines = _header(game)
    phase = ""
    for step in game.steps:
        p = game.phase_of(step)
        if p != phase:
            phase = p
            lines.append(Line(None, None, f"# phase {p}"))
        if game.step_phase[step] != "free_roam":
            continue
        lo, hi = game.step_ticks.get(step, (0, 0))
        src = game.poses[step].source if step in game.poses else "positions"
        lines.append(
            Line(step, None, f"[step {step}] free roam, ticks {lo}-{hi} (positions from {src})")
        )
        end = game.end_positions.get(step)
        vis = _end_vis(game, step)
        alive = game.alive_at(step, lo)
        extra: list[Line] = []
        for imp in game.impostors:
            if imp not in alive:
                continue
            bits = [f"[step {step}] {imp} (impostor)"]
            if end is not None and imp in end.players:
                snap = end.players[imp]
                bits.append(f"in {snap.room} at {_pos(snap.pos)}")
            if vis is not None:
                bits.append(f"sees: {', '.join(vis.sees.get(imp, [])) or 'nobody'}")
                bits.append(f"seen by: {', '.join(seen_by(vis, imp)) or 'nobody'}")
            bits.extend(_near(game, step, imp, alive))
            d = game.decisions.get((step, imp))
            if d is not None:
                if d.module:
                    bits.append(f"module: {d.module}")
                bits.append(f"program: {_ops(d.program)}")
            prog = game.programs.get((step, imp))
            if prog is not None:
                bits.append(f"outcome: {prog.status}{' ' + prog.reason if prog.reason else ''}")
            if d is not None:
                if d.reasoning:
                    bits.append(f'reasoning: "{_cut(d.reasoning)}"')
                bits.extend(_thinking(d))
                if d.narration:
                    bits.append(f'narration: "{d.narration}"')
                extra.extend(_scans(game, step, imp, d))
            lines.append(Line(step, imp, " | ".join(bits)))
        lines.extend(extra)
        for k in game.kills:
            if k.step != step:
                continue
            at = next(
                (
                    v
                    for v in game.visibility.get(step, [])
                    if v.cause == "kill" and v.subject == k.killer and v.tick == k.tick
                ),
                None,
            )
            onlook = ""
            if at is not None:
                onlook = f" | onlookers: {', '.join(seen_by(at, k.killer)) or 'none'}"
            lines.append(
                Line(
                    step,
                    k.killer,
                    f"[step {step}] kill: {k.killer} killed {k.victim} in {k.room} at tick "
                    f"{k.tick}{onlook}",
                )
            )
        if vis is not None:
            for imp in game.impostors:
                if vis.bodies.get(imp):
                    lines.append(
                        Line(
                            step,
                            imp,
                            f"[step {step}] bodies in {imp}'s view: {', '.join(vis.bodies[imp])}",
                        )
                    )
        for r in game.reports:
            if r.step == step:
                role = game.roles.get(r.reporter, "?")
                lines.append(
                    Line(
                        step,
                        r.reporter,
                        f"[step {step}] report: {r.reporter} ({role}) reported {r.victim}'s "
                        f"body in {r.room}",
                    )
                )
        for e in game.emergencies:
            if e.step == step:
                lines.append(
                    Line(step, e.caller, f"[step {step}] emergency: {e.caller} pressed the button")
                )
        for t in game.task_dones:
            if t.step == step and t.fake:
                lines.append(
                    Line(
                        step,
                        t.agent,
                        f"[step {step}] fake task done: {t.agent} at station {t.station}",
                    )
                )
    return lines


def verbal_lines(game: Game) -> list[Line]:
    """Meeting speech, each speaker's role and checkable facts, votes and reasons."""
    lines = _header(game)
    ends = {m.index: m for m in game.meeting_ends}
    prev_step = 0
    for m in game.meetings:
        lines.append(
            Line(
                None,
                None,
                f"# meeting {m.index} (called at step {m.step} by {m.caller}, {m.trigger}"
                + (f", victim {m.victim}" if m.victim else "")
                + ")",
            )
        )
        free = [
            s for s in game.steps if prev_step < s <= m.step and game.step_phase[s] == "free_roam"
        ]
        for speaker in m.order:
            role = game.roles.get(speaker, "?")
            rooms: list[str] = []
            saw: set[str] = set()
            for s in free:
                end = game.end_positions.get(s)
                if end is not None and speaker in end.players:
                    room = end.players[speaker].room
                    if not rooms or rooms[-1] != room:
                        rooms.append(room)
                vis = _end_vis(game, s)
                if vis is not None:
                    saw.update(vis.sees.get(speaker, []))
            kills = [
                f"{k.victim} (step {k.step})"
                for k in game.kills
                if k.killer == speaker and k.step in free
            ]
            fact = f"# fact: {speaker} ({role}) rooms since last meeting: "
            fact += " > ".join(rooms) or "unknown"
            fact += f"; saw: {', '.join(sorted(saw)) or 'nobody'}"
            if kills:
                fact += f"; killed: {', '.join(kills)}"
            lines.append(Line(None, None, fact))
        end_m = ends.get(m.index)
        last = end_m.step if end_m else max(game.steps, default=m.step)
        for sp in game.speeches:
            if m.step < sp.step <= last and not sp.passed and not sp.failed and sp.text:
                role = game.roles.get(sp.speaker, "?")
                lines.append(
                    Line(
                        sp.step,
                        sp.speaker,
                        f'[step {sp.step}] {sp.speaker} ({role}) says: "{sp.text}"',
                    )
                )
        for v in game.votes:
            if m.step < v.step <= last:
                d = game.decisions.get((v.step, v.voter))
                reason = d.reasoning if d is not None and d.reasoning else ""
                target = v.target if v.target is not None else "abstained"
                role = game.roles.get(v.voter, "?")
                lines.append(
                    Line(
                        v.step,
                        v.voter,
                        f"[step {v.step}] vote: {v.voter} ({role}) -> {target}"
                        + (f' (reason: "{reason}")' if reason else ""),
                    )
                )
        if end_m is not None:
            lines.append(
                Line(
                    end_m.step,
                    None,
                    f"[step {end_m.step}] result: {end_m.outcome}"
                    + (f", {end_m.ejected} ejected" if end_m.ejected else ""),
                )
            )
        prev_step = last
    return lines


def text_of(lines: list[Line]) -> str:
    """A rendering's text, one line each."""
    return "\n".join(line.text for line in lines) + "\n"


def render_nonverbal(game: Game) -> str:
    """The action log of a game for the non-verbal pass."""
    return text_of(nonverbal_lines(game))


def render_verbal(game: Game) -> str:
    """Meeting speech, each speaker's role and checkable facts, votes and reasons."""
    return text_of(verbal_lines(game))
