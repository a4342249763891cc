"""A run folder, indexed step by step for the viewer.

The viewer reads only the record: `events.jsonl`, `summary.json`, the frames on disk,
and (when present) `annotations.jsonl` and `claims.jsonl`. The index is rebuilt
whenever the log has grown, so the same code serves a finished game and one that is
still being played. Lines are read as plain JSON (a newer minor revision's fields are
carried through untouched); a truncated last line is left for the next refresh.

A game a person plays (a seat of kind `human`) is *sealed* while it runs: without the
analyst token (`unlocked`) the record answers no role, no step, no frame and no
finding, whatever the analyst switch says, since the person could read them too. Once
the game has ended (`game_end` logged, or `summary.json` written) it is served like
any other.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.record import LogFollower, log_path
from world.spec import MapSpec, MapSpecError, load_map, parse_map

log = logging.getLogger(__name__)

SECRET_DECISION_FIELDS = ("narration",)
"""Decision fields shown only with the analyst switch (an impostor's private intent)."""


@dataclass
class StepInfo:
    """What the viewer shows for one step."""

    step: int
    phase: str
    tick: int
    speaker: str | None = None
    players: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Agent -> {pos: [x, y, z], yaw, room, status} at the end of the step."""
    trail: dict[str, list[list[float]]] = field(default_factory=dict)
    """Agent -> [[x, z], ...] sampled while the step's programs ran."""
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    programs: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    """Rule events, chat, votes and meeting outcomes of this step, in log order."""
    bodies: dict[str, list[float]] = field(default_factory=dict)
    """Victim -> body position, for bodies lying at the end of the step."""


TRANSCRIPT_KINDS = frozenset(
    {"server_message", "speech", "vote", "meeting_start", "meeting_end", "eject"}
)
RULE_KINDS = frozenset(
    {"kill", "report", "emergency", "task_done", "task_start", "task_interrupted"}
)


class SealedError(PermissionError):
    """A live game a person plays was asked for without the analyst token."""


SEALED_MESSAGE = (
    "a person plays a seat of this game: its roles, steps, frames and findings stay "
    "hidden until it ends (open the analyst address the viewer printed at start to "
    "see them now)"
)


class RunRecord:
    """The viewer's index of one run folder.

    Args:
        run: The folder `mineamongus play --out` wrote.
    """

    def __init__(self, run: Path) -> None:
        self.run = Path(run)
        self._lock = threading.Lock()
        self._follower = LogFollower(self.run)
        self.game: dict[str, Any] = {}
        self.end: dict[str, Any] | None = None
        self.steps: dict[int, StepInfo] = {}
        self.transcript: list[dict[str, Any]] = []
        self._bodies: dict[str, list[float]] = {}
        self._snapped: set[int] = set()
        self.map_spec: MapSpec | None = None
        self.map_error: str | None = None
        """Why the record has no map (its `game_start` names none, or it cannot be read)."""
        self.refresh()

    @property
    def events_path(self) -> Path:
        """The run's event log."""
        return log_path(self.run)

    # ------------------------------------------------------------------ reading
    def refresh(self) -> bool:
        """Read what the log gained since the last call; True if anything was new."""
        with self._lock:
            new = self._follower.poll()
            if not new:
                return False
            for ev in new:
                self._add(ev)
            return True

    def _step(self, n: int, phase: str = "free_roam", tick: int = 0) -> StepInfo:
        info = self.steps.get(n)
        if info is None:
            info = StepInfo(step=n, phase=phase, tick=tick)
            prev = self.steps.get(n - 1)
            if prev is not None:
                info.players = {a: dict(p) for a, p in prev.players.items()}
            info.bodies = dict(self._bodies)
            self.steps[n] = info
        return info

    def _add(self, ev: dict[str, Any]) -> None:
        kind = ev.get("kind")
        step = int(ev.get("step", 0))
        if kind == "game_start":
            self.game = ev
            self._load_map(ev)
            self._step(0, "setup", int(ev.get("tick", 0)))
            return
        if kind == "game_end":
            self.end = ev
            self.transcript.append(ev)
            return
        if kind == "step_start":
            info = self._step(step, str(ev.get("phase", "")), int(ev.get("tick", 0)))
            info.phase = str(ev.get("phase", info.phase))
            info.tick = int(ev.get("tick", info.tick))
            info.speaker = ev.get("speaker")
            return
        info = self._step(step)
        if kind == "positions":
            # Where everyone was when the step ended wins over a later snapshot of the
            # same step (the teleport to the meeting seats belongs to the next step).
            cause = ev.get("cause", "step_end")
            if cause == "step_end" or step not in self._snapped:
                self._set_players(info, ev)
            if cause == "step_end":
                self._snapped.add(step)
        elif kind == "trace":
            for agent, samples in ev.get("players", {}).items():
                trail = info.trail.setdefault(agent, [])
                trail.extend([[round(s[0], 2), round(s[2], 2)] for s in samples])
        elif kind == "decision":
            info.decisions[str(ev.get("agent"))] = ev
        elif kind == "program":
            info.programs[str(ev.get("agent"))] = ev
        elif kind == "kill":
            self._bodies[str(ev["victim"])] = list(ev.get("pos", [0, 0, 0]))
            info.bodies = dict(self._bodies)
            info.events.append(ev)
        elif kind == "meeting_start":
            self._bodies = {}
            info.events.append(ev)
            self.transcript.append(ev)
        elif kind in TRANSCRIPT_KINDS:
            info.events.append(ev)
            self.transcript.append(ev)
        elif kind in RULE_KINDS or kind == "action_rejected":
            info.events.append(ev)

    def _set_players(self, info: StepInfo, ev: dict[str, Any]) -> None:
        for agent, snap in ev.get("players", {}).items():
            info.players[agent] = {
                "pos": list(snap.get("pos", [0, 0, 0])),
                "yaw": snap.get("yaw", 0.0),
                "room": snap.get("room", ""),
                "status": snap.get("status", "alive"),
            }

    def _load_map(self, start: dict[str, Any]) -> None:
        """The map as played (`map_spec`), else the map `game_start.map` (or the
        record's `config.map`) names. A record that names none gets no map and a
        `map_error` naming the field: no map is ever guessed."""
        self.map_spec, self.map_error = None, None
        spec = start.get("map_spec")
        problem = ""
        if spec:
            try:
                self.map_spec = parse_map(spec, "game_start.map_spec")
                return
            except MapSpecError as exc:
                problem = f"{exc}; "
        config = start.get("config")
        name = start.get("map") or (config.get("map") if isinstance(config, dict) else None)
        if not name:
            self.map_error = (
                f"{problem}game_start names no map: it has no `map` field (nor `map_spec` or "
                "`config.map`), so the viewer cannot tell which map was played"
            )
        else:
            try:
                self.map_spec = load_map(str(name))
            except (MapSpecError, OSError) as exc:
                self.map_error = f"{problem}game_start.map {name!r}: {exc}"
        if self.map_error is not None:
            log.warning("%s: %s", self.run, self.map_error)

    # ------------------------------------------------------------------ sealing
    def human_seats(self) -> list[str]:
        """The seats a person plays (`game_start.agent_specs` kind `human`, or a
        `config.seats` entry of agent `human`)."""
        seats: list[str] = []
        specs = self.game.get("agent_specs")
        if isinstance(specs, dict):
            seats += [
                a for a, s in specs.items() if isinstance(s, dict) and s.get("kind") == "human"
            ]
        config = self.game.get("config")
        chosen = config.get("seats") if isinstance(config, dict) else None
        if isinstance(chosen, dict):
            seats += [
                a for a, s in chosen.items() if isinstance(s, dict) and s.get("agent") == "human"
            ]
        return sorted(set(seats))

    @property
    def over(self) -> bool:
        """Whether the game has ended (`game_end` logged or `summary.json` written)."""
        return self.end is not None or (self.run / "summary.json").is_file()

    def _sealed(self, unlocked: bool) -> bool:
        return not unlocked and bool(self.human_seats()) and not self.over

    def private(self, unlocked: bool = False) -> bool:
        """Whether the run's files (frames, labels) are withheld from this asker: the
        game is sealed, or its start is not logged yet (so it may turn out sealed)."""
        self.refresh()
        with self._lock:
            return not self.game or self._sealed(unlocked)

    # ------------------------------------------------------------------ answers
    @property
    def last_step(self) -> int:
        """The highest step the log has reached."""
        return max(self.steps) if self.steps else 0

    def meta(self, analyst: bool, unlocked: bool = False) -> dict[str, Any]:
        """The game as a whole: seats, map, steps, and per-step positions for the map.

        Args:
            analyst: Include the roles and the game's result.
            unlocked: The asker holds the analyst token; without it a live game a
                person plays answers only its seats, its map and how far it has got.
        """
        self.refresh()
        with self._lock:
            if self._sealed(unlocked):
                return self._sealed_meta()
            return self._meta(analyst)

    def _sealed_meta(self) -> dict[str, Any]:
        # No game id or seed either: the id carries the seed, and the seed derives the roles.
        return {
            "game_id": "",
            "seed": None,
            "agents": list(self.game.get("agents", [])),
            "roles": {},
            "map": self._map_json(),
            "steps": [],
            "last_step": self.last_step,
            "over": False,
            "end": None,
            "annotations": [],
            "claims": [],
            "sealed": True,
            "sealed_message": SEALED_MESSAGE,
        }

    def _meta(self, analyst: bool) -> dict[str, Any]:
        agents = list(self.game.get("agents", []))
        roles = self.game.get("roles", {}) if analyst else {}
        steps = []
        for n in sorted(self.steps):
            s = self.steps[n]
            steps.append(
                {
                    "step": n,
                    "phase": s.phase,
                    "tick": s.tick,
                    "speaker": s.speaker,
                    "players": s.players,
                    "trail": s.trail,
                    "bodies": s.bodies,
                }
            )
        return {
            "game_id": self.game.get("game_id", ""),
            "seed": self.game.get("seed"),
            "agents": agents,
            "roles": roles,
            "map": self._map_json(),
            "steps": steps,
            "last_step": self.last_step,
            "over": self.end is not None,
            "end": self.end if self.end is None or analyst else _public_end(self.end),
            "annotations": self._annotations(),
            "claims": self._claims(),
            "sealed": False,
        }

    def step(self, n: int, analyst: bool, unlocked: bool = False) -> dict[str, Any]:
        """Everything about one step: frames, decisions, outcomes and the transcript.

        Raises:
            KeyError: No such step.
            SealedError: A person plays this game, it is live, and `unlocked` is False.
        """
        self.refresh()
        with self._lock:
            if self._sealed(unlocked):
                raise SealedError(SEALED_MESSAGE)
            return self._step_json(n, analyst)

    def _step_json(self, n: int, analyst: bool) -> dict[str, Any]:
        info = self.steps.get(n)
        if info is None:
            raise KeyError(n)
        decisions = {}
        for agent, d in info.decisions.items():
            shown = {k: v for k, v in d.items() if analyst or k not in SECRET_DECISION_FIELDS}
            decisions[agent] = shown
        frames = {}
        for agent in self.game.get("agents", []):
            path = self.frame_path(n, agent)
            if path is not None:
                frames[agent] = f"run/{path}"  # relative: the page may sit under a prefix
        upto = [
            e
            for e in self.transcript
            if int(e.get("step", 0)) <= n and (e.get("kind") != "game_end" or analyst)
        ]
        return {
            "step": n,
            "phase": info.phase,
            "tick": info.tick,
            "speaker": info.speaker,
            "players": info.players,
            "bodies": info.bodies,
            "frames": frames,
            "decisions": decisions,
            "programs": info.programs,
            "events": info.events,
            "transcript": upto,
        }

    def frame_path(self, step: int, agent: str) -> str | None:
        """The frame an agent decided `step` on, relative to the run folder, if saved."""
        info = self.steps.get(step)
        d = info.decisions.get(agent) if info else None
        ref = d.get("frame") if d else None
        if isinstance(ref, dict) and ref.get("path"):
            return str(ref["path"])
        for ext in ("jpg", "png"):
            rel = f"frames/{step:04d}/{agent}.{ext}"
            if (self.run / rel).is_file():
                return rel
        return None

    def _map_json(self) -> dict[str, Any]:
        spec = self.map_spec
        if spec is None:
            return {"error": self.map_error} if self.map_error else {}
        return {
            "name": spec.name,
            "rooms": [{"name": r.name, "rect": r.rect.model_dump()} for r in spec.rooms],
            "corridors": [{"name": c.name, "rect": c.rect.model_dump()} for c in spec.corridors],
            "stations": [
                {"id": s.id, "name": s.name, "room": s.room, "cell": list(s.cell)}
                for s in spec.stations
            ],
            "button": list(spec.emergency_button),
            "meeting_room": spec.meeting_room,
        }

    def _jsonl(self, name: str) -> list[dict[str, Any]]:
        path = self.run / name
        if not path.is_file():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return out

    def _annotations(self) -> list[dict[str, Any]]:
        return self._jsonl("annotations.jsonl")

    def _claims(self) -> list[dict[str, Any]]:
        return self._jsonl("claims.jsonl")


def _public_end(end: dict[str, Any]) -> dict[str, Any]:
    return {k: end[k] for k in ("winner", "ending", "status", "step") if k in end}


__all__ = ["SEALED_MESSAGE", "RunRecord", "SealedError", "StepInfo"]
