"""One game from set-up to `summary.json`: the orchestration of the step kinds.

Free roam steps every living agent at once (PettingZoo's parallel API,
`controller.freeroam`); meetings take one speaker per step, round-robin, then a
simultaneous vote (`controller.meeting`). The same loop drives the real Minecraft
world and the in-process fake one. Where each responsibility lives is described in
`docs/architecture.md`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from controller.accounting import cost_from_events, counts_from_events, flags_from_counts
from controller.agents.base import Agent, InfrastructureFailure
from controller.config import GameConfig
from controller.engine import Engine
from controller.events import EventLog, GameEnd, GameStart, KillReady, Role
from controller.freeroam import free_roam_step
from controller.meeting import meeting
from controller.observe import Observer
from controller.perception import Perception
from controller.players import declared_sides
from controller.session import GameInvalid, Progress, Session, StepTiming
from controller.versions import python_versions, source_revision
from controller.vocabulary import RunSummary, TaskTally
from controller.worlds.base import Seat, World, WorldFault
from world.builder import build_blocks
from world.geometry import ShipGeometry
from world.spec import MapSpec

log = logging.getLogger(__name__)


@dataclass
class GameResult:
    """How a game ended and where its record is."""

    game_id: str
    status: Literal["ok", "invalid"]
    winner: str | None
    ending: str
    reason: str
    steps: int
    out_dir: Path
    summary: dict[str, Any] = field(default_factory=dict)


def map_record(spec: MapSpec) -> tuple[dict[str, Any], str]:
    """The map spec as played (JSON) and the sha256 of its canonical form."""
    data = spec.model_dump(mode="json")
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return data, hashlib.sha256(canonical.encode()).hexdigest()


class Game:
    """One game from set-up to `summary.json`.

    Args:
        config: The resolved configuration.
        spec: The map.
        world: The world to play in (started by `run`, closed by the caller).
        agents: One agent per seat, or a factory `(seat, role) -> agent`.
        out_dir: Where `events.jsonl` and `summary.json` go (a new log: a game never
            appends to another game's log).
        progress: Called with one line of text per step.
    """

    def __init__(
        self,
        config: GameConfig,
        spec: MapSpec,
        world: World,
        agents: Mapping[str, Agent] | Callable[[str, Role], Agent],
        out_dir: Path,
        progress: Progress | None = None,
    ) -> None:
        self.config = config
        self.spec = spec
        self.geometry = ShipGeometry(spec)
        self.world = world
        self.out_dir = Path(out_dir)
        self.progress = progress or (lambda _line: None)
        ids = config.agent_ids()
        self.engine = Engine(
            config.rules,
            ids,
            config.seed,
            stations={s: self.geometry.station_pos(s) for s in self.geometry.station_ids()},
            button=self.geometry.button_pos(),
            room_at=self.geometry.room_at,
        )
        if callable(agents):
            self.agents = {a: agents(a, self.engine.players[a].role) for a in ids}
        else:
            self.agents = dict(agents)
        missing = [a for a in ids if a not in self.agents]
        if missing:
            raise ValueError(f"no agent for seats {missing}")
        self.seat_index = {a: i for i, a in enumerate(ids)}
        self.game_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{config.seed}-{uuid.uuid4().hex[:6]}"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.log = EventLog(self.out_dir / "events.jsonl", self.game_id)
        self.observer = Observer(self.engine, self.geometry)
        self.resumable = False
        self.versions: dict[str, str] = python_versions()
        self.session: Session | None = None

    # ------------------------------------------------------------------ views of the state
    @property
    def counts(self) -> dict[str, int]:
        """The game's counts so far, derived from its events."""
        return counts_from_events(self.log.events)

    @property
    def timings(self) -> list[StepTiming]:
        """Where each step's wall time went (for benchmarks)."""
        return self.session.timings if self.session is not None else []

    def after_step(self) -> None:
        """Called after set-up and after every step (an extension point for probes)."""

    # ------------------------------------------------------------------ run
    def run(self) -> GameResult:
        """Play the game to its end; always write the final events and the summary."""
        started = time.monotonic()
        # One event loop for the whole game: model clients keep connections bound to it.
        loop = asyncio.new_event_loop()
        s = Session(
            config=self.config,
            geometry=self.geometry,
            engine=self.engine,
            world=self.world,
            log=self.log,
            out_dir=self.out_dir,
            agents=self.agents,
            observer=self.observer,
            perception=Perception(self.geometry, self.config.rules.vision_radius),
            loop=loop,
            progress=self.progress,
            seat_index=self.seat_index,
            started=started,
            on_step_end=self.after_step,
        )
        self.session = s
        e = self.engine
        end: GameEnd | None = None
        try:
            self._setup(s)
            while e.check_end() is None:
                free_roam_step(s)
                self._progress_line()
                if e.phase in ("meeting", "voting") and e.check_end() is None:
                    meeting(s)
            end = e.end_event()
        except GameInvalid as exc:
            log.error("game invalid: %s", exc)
            end = e.end_event("invalid", str(exc))
        except KeyboardInterrupt:
            end = e.end_event("invalid", "interrupted by the user")
            raise
        except WorldFault as exc:
            end = e.end_event("invalid", f"world fault: {exc}")
        except InfrastructureFailure as exc:
            self.resumable = True
            end = e.end_event(
                "invalid", f"infrastructure: {exc.error_class}: {exc} (the game can be rerun)"
            )
        finally:
            if end is None:
                end = e.end_event("invalid", "controller error (see logs)")
            if not any(ev.kind == "game_start" for ev in self.log.events):
                self._emit_start()
            counts = counts_from_events(self.log.events)
            flags = sorted(set(flags_from_counts(counts)) | s.flags)
            end = end.model_copy(update={"flags": flags})
            s.emit(end)
            self.log.close()
            loop.close()
            result = self._write_summary(end, started)
        return result

    def _emit_start(self) -> None:
        spec, digest = map_record(self.spec)
        self.log.write(
            GameStart(
                seed=self.config.seed,
                agents=self.config.agent_ids(),
                roles=self.engine.roles(),
                tasks={a: list(p.tasks) for a, p in self.engine.players.items()},
                map=self.spec.name,
                preset=self.config.preset,
                config=self.config.model_dump(mode="json"),
                agent_specs={a: ag.describe() for a, ag in self.agents.items()},
                sides=declared_sides(self.config),
                map_spec=spec,
                map_sha256=digest,
                source_revision=source_revision(),
                versions=self.versions,
                sample_interval_ticks=self.config.sample_interval_ticks,
                names=self.config.player_names(),
                # a world that can be reused across games says how it started this one
                world_start=getattr(self.world, "start_record", None),
                step=self.engine.step,
                tick=self.engine.tick,
            )
        )
        self.log.write(
            KillReady(
                ready=self.engine.kill_ready_ticks(),
                cause="start",
                step=self.engine.step,
                tick=self.engine.tick,
            )
        )

    def _setup(self, s: Session) -> None:
        seats = [
            Seat(
                agent=a,
                username=s.name(a),
                pos=self.geometry.seat_pos(i),
                yaw=round(self.geometry.seat_yaw(i), 1),
            )
            for i, a in enumerate(self.config.agent_ids())
        ]
        self.progress(f"building the map ({self.spec.name}) and bringing in {len(seats)} bots")
        self.world.start(build_blocks(self.spec), seats, progress=self.progress)
        self.versions = {**python_versions(), **self.world.versions()}
        tick, poses = self.world.state()
        self.engine.set_tick(tick)
        self._emit_start()
        s.record_positions(poses, "setup")
        s.observer.perceive(s.record_visibility("setup"), free_roam=True)
        self.after_step()

    # ------------------------------------------------------------------ reporting
    def _progress_line(self, extra: str = "") -> None:
        e = self.engine
        tally = e.task_progress()
        line = (
            f"step {e.step:>3}/{e.rules.max_steps} {e.phase:<9} tick {e.tick:>6} "
            f"alive {len(e.agents)}/{len(e.possible_agents)} tasks {tally.done}/{tally.total} "
            f"kills {len(e.bodies)} meetings {e.meetings_held}"
        )
        self.progress(line + (f"  {extra}" if extra else ""))

    def _write_summary(self, end: GameEnd, started: float) -> GameResult:
        e = self.engine
        tally = e.task_progress()
        # Built through the record's model, so a misspelt field fails here, not in a reader.
        summary = RunSummary(
            game_id=self.game_id,
            status=end.status,
            reason=end.reason,
            flags=list(end.flags),
            winner=end.winner,
            ending=end.ending,
            steps=e.step,
            ticks=e.tick,
            seed=self.config.seed,
            roles=dict(e.roles()),
            final_status={a: p.status for a, p in e.players.items()},
            tasks=TaskTally(done=tally.done, total=tally.total),
            resumable=self.resumable,
            counts=counts_from_events(self.log.events),
            cost_usd=cost_from_events(self.log.events),
            wall_seconds=round(time.monotonic() - started, 3),
            config=self.config.model_dump(mode="json"),
            agents={a: ag.describe() for a, ag in self.agents.items()},
            versions=self.versions,
        ).model_dump(mode="json")
        path = self.out_dir / "summary.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")
        tmp.replace(path)
        return GameResult(
            game_id=self.game_id,
            status=end.status,
            winner=end.winner,
            ending=end.ending,
            reason=end.reason,
            steps=e.step,
            out_dir=self.out_dir,
            summary=summary,
        )


__all__ = ["Game", "GameInvalid", "GameResult"]
