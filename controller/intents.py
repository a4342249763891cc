"""The table from program events to engine calls: the rules' arbiter of a batch.

A world calls the `RuleArbiter` for each `mark` and `reached` event the moment it
happens (`World.run_programs(..., arbiter=...)`), with every player's pose at that
tick. The arbiter hands the event to the engine and answers with a
`RuleDirective`: a kill cancels its victim's program at once; a report or the
button calling a meeting, or the game ending, freezes the whole batch.

| program event               | engine call                   |
|-----------------------------|-------------------------------|
| `mark` `task_start:S`       | `Engine.start_task`           |
| `mark` `task_resume:S`      | `Engine.start_task` (resumes) |
| `mark` `task_done:S`        | `Engine.finish_task`          |
| `mark` `button`             | `Engine.emergency`            |
| `mark` `report:VICTIM`      | `Engine.report`               |
| `reached` (a strike)        | `Engine.kill`                 |

Before each event, every player with a task in progress who stands away from its
station loses it (`Engine.check_presence`), so progress needs continuous standing.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.events import EventBase, Kill, MeetingStart, Vec3
from controller.programs import StrikeGuard
from controller.protocol import PlayerPose, PoseSample, ProgramEvent, RuleDirective
from controller.session import Session


class RuleArbiter:
    """Judges one batch's rule actions as they happen.

    Args:
        session: The game's shared state (engine, log, perception).
    """

    def __init__(
        self, session: Session, guards: Mapping[str, Mapping[str, StrikeGuard]] | None = None
    ) -> None:
        self.session = session
        self.guards = {a: dict(g) for a, g in (guards or {}).items()}
        """Killer -> target -> witness guard of its program's strikes (`KillTarget.guard`)."""
        self.withheld: list[tuple[str, str, list[str]]] = []
        """(killer, target, witnesses) of every strike withheld by its guard."""
        self.seen: set[tuple[str, int, str]] = set()
        """(agent, tick, what) of every event judged, so none is judged twice."""
        self.kills: list[str] = []
        """Victims of this batch's kills, in order."""

    @staticmethod
    def key(agent: str, event: ProgramEvent) -> tuple[str, int, str]:
        """The identity of a program event within a batch."""
        return agent, event.tick, event.tag or f"reached:{event.agent}"

    def __call__(
        self, agent: str, event: ProgramEvent, poses: dict[str, PlayerPose]
    ) -> RuleDirective | None:
        """Apply one program event; return what the world must do at once."""
        key = self.key(agent, event)
        if key in self.seen:
            return None
        self.seen.add(key)
        s = self.session
        e = s.engine
        tick = event.tick
        # The players in play: the living, and the ghosts doing their tasks
        # (`rules.ghost_tasks`), whose tasks need standing as much. Only the living
        # are seen, witness or are struck.
        acting = set(e.actors)
        acting_poses = {a: p for a, p in poses.items() if a in acting}
        living_poses = {a: p for a, p in acting_poses.items() if e.players[a].alive}
        for a, pose in acting_poses.items():
            e.set_pose(a, pose.pos, pose.yaw)
        if agent in acting:
            e.set_pose(agent, event.pos, e.players[agent].yaw)
        where = {a: p.pos for a, p in acting_poses.items()}
        if agent in where:
            where[agent] = event.pos
        events: list[EventBase] = e.check_presence(where, tick)
        withheld = self._witnesses(agent, event, living_poses)
        if withheld:
            s.emit(events)
            target = event.agent or ""
            self.withheld.append((agent, target, withheld))
            seen = ", ".join(withheld)
            return RuleDirective(
                cancel=[agent], reason=f"strike withheld: witness {seen} in view at tick {tick}"
            )
        lying = e.body_markers()  # a called meeting clears them: keep what lay there
        events += self._apply(agent, event)
        s.emit(events)
        views = {a: (p.pos, p.yaw) for a, p in living_poses.items()}
        directive: RuleDirective | None = None
        for ev in events:
            if isinstance(ev, Kill):
                self.kills.append(ev.victim)
                # the victim lies where it was struck; viewers from the poses of the tick
                views.pop(ev.victim, None)
                s.record_visibility("kill", ev.killer, tick, views)
                directive = RuleDirective(cancel=[ev.victim], reason=f"killed by {ev.killer}")
            elif isinstance(ev, MeetingStart):
                s.record_visibility(ev.trigger, ev.caller, tick, views, lying)
                directive = RuleDirective(freeze=True, reason=f"meeting called by {ev.caller}")
        if e.phase == "over":
            return RuleDirective(
                cancel=directive.cancel if directive else [], freeze=True, reason="game over"
            )
        return directive

    def observe(self, samples: list[PoseSample]) -> None:
        """Judge the batch's pose samples taken since the last rule event, in tick order:
        a task whose player is sampled away from its station is lost at that sample's
        tick, before any later event (its completion included) is judged."""
        e = self.session.engine
        for sample in sorted(samples, key=lambda s: s.tick):
            held = {
                a: pose.pos
                for a, pose in sample.players.items()
                if (run := e.task_in_progress(a)) is not None and run.start_tick <= sample.tick
            }
            if held:
                self.session.emit(e.check_presence(held, sample.tick))

    def _witnesses(
        self, agent: str, event: ProgramEvent, poses: Mapping[str, PlayerPose]
    ) -> list[str]:
        """Living crewmates a guarded strike's killer perceives at the strike's tick
        (the target and fellow impostors aside); empty for an unguarded strike."""
        if event.kind != "reached" or event.agent is None:
            return []
        guard = self.guards.get(agent, {}).get(event.agent, "none")
        if guard == "none":
            return []
        e = self.session.engine
        if agent not in poses:
            return []
        views = {a: (p.pos, p.yaw) for a, p in poses.items()}
        views[agent] = (event.pos, poses[agent].yaw)
        sight = self.session.sight(views)
        perceived = set(sight.sees.get(agent, []))
        if guard == "around":
            perceived |= set(sight.near.get(agent, []))
        spare = {agent, event.agent, *e.teammates(agent)}
        return sorted(a for a in perceived if a not in spare and e.players[a].alive)

    def _apply(self, agent: str, event: ProgramEvent) -> list[EventBase]:
        e = self.session.engine
        if event.kind == "reached":
            if event.agent is None or event.target_pos is None:
                return []
            return e.kill(agent, event.agent, event.tick, event.pos, event.target_pos)
        if event.kind != "mark" or not event.tag:
            return []
        name, _, arg = event.tag.partition(":")
        pos: Vec3 = event.pos
        if name in ("task_start", "task_resume", "task_done") and arg.lstrip("-").isdigit():
            station = int(arg)
            if name == "task_done":
                return e.finish_task(agent, station, event.tick, pos)
            return e.start_task(agent, station, event.tick, pos)
        if name == "button":
            return e.emergency(agent, event.tick, pos)
        if name == "report":
            return e.report(agent, arg, event.tick, pos)
        return []


def late_events(
    outcomes: Mapping[str, list[ProgramEvent]], judged: set[tuple[str, int, str]]
) -> list[tuple[int, int, str, ProgramEvent]]:
    """Rule events a world reported only after the batch, in tick order.

    Returns (tick, order, agent, event) for each `mark`/`reached` event the arbiter
    was never called with.
    """
    out: list[tuple[int, int, str, ProgramEvent]] = []
    for agent in sorted(outcomes):
        for i, ev in enumerate(outcomes[agent]):
            if ev.kind in ("mark", "reached") and RuleArbiter.key(agent, ev) not in judged:
                out.append((ev.tick, i, agent, ev))
    return sorted(out, key=lambda t: (t[0], t[2], t[1]))
