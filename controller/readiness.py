"""When each impostor's kill was ready, read from the log.

The rules engine logs every change of an impostor's kill readiness as a `kill_ready`
event (`controller.events.KillReady`: at the start, after its kill, at a meeting's end).
`kill_readiness` returns those events; for a log written before the event existed it
derives the same events once, here beside the engine, from the rules in `game_start`
and the logged kills and meeting ends (the upgrader of such logs), so no analysis
replays the cooldown rules itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller.events import Event, GameStart, Kill, KillReady, MeetingEnd


def _rules_of(start: GameStart) -> tuple[int, int]:
    """(kill cooldown, initial kill cooldown) in ticks, from the game's configuration."""
    rules: dict[str, Any] = dict(start.config.get("rules", {})) if start.config else {}
    cooldown = int(rules.get("kill_cooldown_ticks", 0))
    return cooldown, int(rules.get("initial_kill_cooldown_ticks", cooldown))


def derive_kill_readiness(events: Sequence[Event]) -> list[KillReady]:
    """The `kill_ready` events a log without them would hold, from its rules, kills and
    meeting ends (the engine's rules: `controller.engine.Engine.kill`, `end_meeting`)."""
    start = next((e for e in events if isinstance(e, GameStart)), None)
    if start is None:
        return []
    cooldown, initial = _rules_of(start)
    impostors = sorted(a for a, r in start.roles.items() if r == "impostor")
    ready = dict.fromkeys(impostors, initial)
    out = [KillReady(ready=dict(ready), cause="start", step=start.step, tick=start.tick)]
    alive = set(impostors)
    for ev in events:
        if isinstance(ev, Kill) and ev.killer in ready:
            ready[ev.killer] = ev.tick + cooldown
            out.append(
                KillReady(
                    ready={ev.killer: ready[ev.killer]}, cause="kill", step=ev.step, tick=ev.tick
                )
            )
        elif isinstance(ev, MeetingEnd):
            alive.discard(ev.ejected or "")
            for a in ready:
                ready[a] = max(ready[a], ev.tick + cooldown)
            now = {a: ready[a] for a in impostors if a in alive}
            if now:
                out.append(KillReady(ready=now, cause="meeting_end", step=ev.step, tick=ev.tick))
    return out


def kill_readiness(events: Sequence[Event]) -> list[KillReady]:
    """Every change of kill readiness in the game, in log order: the logged `kill_ready`
    events, or for a log that has none (written before they were logged) the derived
    ones (`derive_kill_readiness`)."""
    logged = [e for e in events if isinstance(e, KillReady)]
    return logged if logged else derive_kill_readiness(events)
