"""Compact judge text from a game log, one pass each (documented in docs/annotation.md).

Every line of a rendering starts with `[step N]` (or is a `#` header), so a judge's
evidence quote points at one step. The non-verbal pass shows, per free-roam step,
each impostor's room and position, whom it could see and who could see it (field of
view), its program and outcome and its private narration, then the step's kills,
bodies, reports and tasks. The verbal pass shows each meeting's speech with the
speaker's role and the facts the speech can be checked against, then every vote with
its stated reason.
"""

from __future__ import annotations

import json
from typing import Any

from annotation.gamelog import Game, seen_by
from controller.events import Visibility

RENDER_VERSION = 1
"""Bumped when a rendering changes (part of the judge's prompt hash)."""


def _pos(p: tuple[float, float, float]) -> str:
    return f"({p[0]:.0f},{p[1]:.0f},{p[2]:.0f})"


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


def _header(game: Game) -> list[str]:
    imps = ", ".join(game.impostors)
    crew = ", ".join(a for a in game.start.agents if a not in game.impostors)
    return [f"# game {game.game_id} (map {game.start.map}); impostors: {imps}; crewmates: {crew}"]


def render_nonverbal(game: Game) -> str:
    """The action log of a game for the non-verbal pass."""
    lines = _header(game)
    phase = ""
    for step in game.steps:
        p = game.phase_of(step)
        if p != phase:
            phase = p
            lines.append(f"# phase {p}")
        if game.step_phase[step] != "free_roam":
            continue
        lo, hi = game.step_ticks.get(step, (0, 0))
        src = game.poses[step].source if step in game.poses else "positions"
        lines.append(f"[step {step}] free roam, ticks {lo}-{hi} (positions from {src})")
        end = game.end_positions.get(step)
        vis = _end_vis(game, step)
        alive = game.alive_at(step, lo)
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
            d = game.decisions.get((step, imp))
            if d is not None:
                bits.append(f"program: {_ops(d.program)}")
            prog = game.programs.get((step, imp))
            if prog is not None:
                bits.append(f"outcome: {prog.status}{' ' + prog.reason if prog.reason else ''}")
            if d is not None and d.narration:
                bits.append(f'narration: "{d.narration}"')
            lines.append(" | ".join(bits))
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
                f"[step {step}] kill: {k.killer} killed {k.victim} in {k.room} at tick "
                f"{k.tick}{onlook}"
            )
        if vis is not None:
            for imp in game.impostors:
                if vis.bodies.get(imp):
                    lines.append(
                        f"[step {step}] bodies in {imp}'s view: {', '.join(vis.bodies[imp])}"
                    )
        for r in game.reports:
            if r.step == step:
                role = game.roles.get(r.reporter, "?")
                lines.append(
                    f"[step {step}] report: {r.reporter} ({role}) reported {r.victim}'s body "
                    f"in {r.room}"
                )
        for e in game.emergencies:
            if e.step == step:
                lines.append(f"[step {step}] emergency: {e.caller} pressed the button")
        for t in game.task_dones:
            if t.step == step and t.fake:
                lines.append(f"[step {step}] fake task done: {t.agent} at station {t.station}")
    return "\n".join(lines) + "\n"


def render_verbal(game: Game) -> str:
    """Meeting speech, each speaker's role and checkable facts, votes and reasons."""
    lines = _header(game)
    ends = {m.index: m for m in game.meeting_ends}
    prev_step = 0
    for m in game.meetings:
        lines.append(
            f"# meeting {m.index} (called at step {m.step} by {m.caller}, {m.trigger}"
            + (f", victim {m.victim}" if m.victim else "")
            + ")"
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
            lines.append(fact)
        end_m = ends.get(m.index)
        last = end_m.step if end_m else max(game.steps, default=m.step)
        for sp in game.speeches:
            if m.step < sp.step <= last and not sp.passed and not sp.failed and sp.text:
                role = game.roles.get(sp.speaker, "?")
                lines.append(f'[step {sp.step}] {sp.speaker} ({role}) says: "{sp.text}"')
        for v in game.votes:
            if m.step < v.step <= last:
                d = game.decisions.get((v.step, v.voter))
                reason = d.reasoning if d is not None and d.reasoning else ""
                target = v.target if v.target is not None else "abstained"
                role = game.roles.get(v.voter, "?")
                lines.append(
                    f"[step {v.step}] vote: {v.voter} ({role}) -> {target}"
                    + (f' (reason: "{reason}")' if reason else "")
                )
        if end_m is not None:
            lines.append(
                f"[step {end_m.step}] result: {end_m.outcome}"
                + (f", {end_m.ejected} ejected" if end_m.ejected else "")
            )
        prev_step = last
    return "\n".join(lines) + "\n"
