"""An audit of a finished game's event log against the rules, from the log alone.

`log_violations` replays the log with its own bookkeeping (it never calls the engine
and shares none of its code) and returns one message per breach, each naming the
step. It reads schema v2 (`controller.events`) and tolerates v1 logs: a check whose
evidence is missing from a log falls back to what the log has (documented per check
in `docs/checks.md`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from controller.config import RulesConfig
from controller.events import (
    Continuation,
    Decision,
    Disconnect,
    Eject,
    Emergency,
    Event,
    GameEnd,
    GameStart,
    Kill,
    MeetingEnd,
    MeetingStart,
    Positions,
    ProgramRun,
    Report,
    Speech,
    StepStart,
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Trace,
    Vec3,
    Vote,
)
from controller.record import read_log

SKIP = "skip"
"""The ballot that votes for nobody; it is a candidate of the plurality."""
TOLERANCE = 1e-6
"""Slack for distances logged rounded to 3 decimals."""
POSE_SLACK = 0.25
"""Blocks of slack on `station_range` for sampled poses (bots jitter on a real server)."""
RULE_EVENTS = (Kill, TaskDone, Report, Emergency, MeetingStart, Speech, Vote, MeetingEnd, Eject)
"""Events that change the game's state or are a player's rule action."""
SAMPLED_CAUSES = {"step_end", "meeting_call"}
"""`positions` causes that show where players stood in free roam (not seats or set-up)."""

Winner = Literal["crew", "impostors"]

SPEED_LIMIT = 0.40
"""Most blocks a player covers per tick of the game clock (sprinting is about 0.28;
a sprint-jump a little more): a faster pair of pose samples means the record's clock
and the players' movement came apart."""
ROUNDING_SLACK = 0.3
"""Blocks of slack per sample pair on `SPEED_LIMIT` (rounded poses, a step's jitter)."""
RECENTRE_SLACK = 0.71
"""Blocks a walk's end may move a player at once on the real server: mineflayer-
pathfinder's stop puts a bot whose box is more than 0.2 from its block's centre on that
centre, up to half a block on each axis (0.71 diagonally) within one tick. The record
is right to show it; it is no sign of the clock and the positions coming apart."""
SPEED_SPAN = 5
"""Fewest ticks a sample pair must span to count towards `RecordFigures.worst_speed`
(over a tick or two, the rounding of positions dominates the figure)."""
MARK_SLACK = 0.3
"""Most blocks between a program's rule event (mark or strike) and the same player's
pose sample at the event's tick."""


BATCH_START_SLACK = 0.01
"""Most blocks (horizontally) between where a `positions` snapshot leaves a player and
the same player's first pose sample of the next batch: between batches a player stands
exactly where the record says (positions and samples are logged to 0.01 block)."""


CANCEL_SLACK_TICKS = 10
"""How long after its kill a victim's program may still read as running (half a second).
The cancel directive reaches the bot after one round trip (Node -> rules -> Node); on a
busy machine running two real-server games at once that was measured at up to 4 ticks.
Nothing the victim does meanwhile counts (the rules refuse a dead player's actions), and
a victim that walks on, the fault this check exists for, runs far longer than this."""


@dataclass(frozen=True)
class DerivedEnding:
    """The ending the log's own events reach, and where."""

    winner: Winner
    ending: str
    step: int
    tick: int
    index: int
    """Position of the deciding event in the log (-1 for a timeout)."""


@dataclass
class _Meeting:
    start: MeetingStart
    turn: int = 0
    spoke_this_round: bool = False
    talk_over: bool = False
    utterances: dict[str, int] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)
    """Talk turns taken (spoken, passed or failed), for `talk: turns`."""
    votes: dict[str, Vote] = field(default_factory=dict)
    last_talk: Speech | None = None
    """The meeting's latest talk turn (its cost must pass before the next turn or vote)."""


@dataclass
class _TaskClock:
    """A task some player began standing at."""

    station: int
    tick: int
    step: int


class _Audit:
    """One pass over a log; `out` collects the violations."""

    def __init__(self, start: GameStart, events: Sequence[Event]) -> None:
        self.start = start
        self.events = events
        self.out: list[str] = []
        self.rules = self._rules(start)
        self.roles = start.roles
        self.order = list(start.agents)
        self.status = dict.fromkeys(start.agents, "alive")
        t0 = start.tick
        self.kill_ready = {
            a: t0 + self.rules.initial_kill_cooldown_ticks
            for a in start.agents
            if self.roles.get(a) == "impostor"
        }
        self.button_unlock = t0 + self.rules.emergency_initial_lockout_ticks
        self.buttons = dict.fromkeys(start.agents, 0)
        self.done: dict[str, set[int]] = {a: set() for a in start.agents}
        self.bodies: dict[str, Kill] = {}
        """Bodies lying since the last meeting (reportable)."""
        self.meeting: _Meeting | None = None
        self.meetings = 0
        self.meeting_ticks: list[int] = []
        self.killed_at: dict[str, Kill] = {}
        self.clocks: dict[str, _TaskClock] = {}
        self.step_phase: dict[int, str] = {}
        """Each step's phase, from its `step_start`."""
        self.stations = self._stations(start)
        self.strict_cancel = any(isinstance(e, Trace) for e in events)
        """Logs of the v2 game loop (which writes `trace`) must stop a victim's program
        at the kill; older logs let it run to the end of the step."""
        self.task_starts = any(isinstance(e, TaskStart) for e in events)
        given = start.config.get("rules", {}) if isinstance(start.config, dict) else {}
        self.talk_costs = "talk_ticks_per_utterance" in given
        """Logs of games whose talk turns cost game time (older logs: talk was free)."""

    # ------------------------------------------------------------------ set-up
    def _rules(self, start: GameStart) -> RulesConfig:
        try:
            given = start.config.get("rules", {})
            # Rules this reader does not know (a newer or extended engine) are ignored,
            # like unknown event fields; the known ones are checked.
            known = {k: v for k, v in given.items() if k in RulesConfig.model_fields}
            return RulesConfig.model_validate(known)
        except ValidationError as exc:
            self.out.append(f"step {start.step}: game_start config.rules is not valid: {exc}")
            return RulesConfig()

    def _stations(self, start: GameStart) -> dict[int, Vec3] | None:
        """Station standing positions from the recorded map spec (or the named map)."""
        from world.geometry import ShipGeometry
        from world.spec import MapSpecError, load_map, parse_map

        try:
            spec = parse_map(start.map_spec) if start.map_spec else load_map(start.map)
        except (MapSpecError, OSError, ValueError):
            return None
        geometry = ShipGeometry(spec)
        return {s: geometry.station_pos(s) for s in geometry.station_ids()}

    def flag(self, step: int, message: str) -> None:
        self.out.append(f"step {step}: {message}")

    def living(self) -> list[str]:
        return [a for a in self.order if self.status[a] == "alive"]

    # ------------------------------------------------------------------ the pass
    def run(self) -> None:
        self._check_setup()
        self._check_tick_order()
        self._check_record()
        self._check_step_deadlines()
        self._check_batch_starts()
        for i, ev in enumerate(self.events):
            if isinstance(ev, StepStart):
                self.step_phase[ev.step] = ev.phase
            self._dead_acting(ev)
            if isinstance(ev, Kill):
                self._kill(ev)
            elif isinstance(ev, Report):
                self._report(ev)
            elif isinstance(ev, Emergency):
                self._emergency(ev)
            elif isinstance(ev, MeetingStart):
                self._meeting_start(ev, i)
            elif isinstance(ev, StepStart) and ev.phase != "free_roam" and self.meeting is None:
                self.flag(ev.step, f"a {ev.phase} step outside a meeting")
            elif isinstance(ev, Speech):
                self._speech(ev)
            elif isinstance(ev, Vote):
                self._vote(ev)
            elif isinstance(ev, MeetingEnd):
                self._meeting_end(ev, i)
            elif isinstance(ev, Eject):
                self._eject(ev, i)
            elif isinstance(ev, TaskStart):
                self._task_start(ev)
            elif isinstance(ev, TaskInterrupted):
                self.clocks.pop(ev.agent, None)
            elif isinstance(ev, TaskDone):
                self._task_done(ev)
        self._check_ending()

    def _check_record(self) -> None:
        """The record under the clock: pose samples no faster than walking and no
        farther apart than the sample interval, a meeting's freeze on its call's tick,
        marks and strikes where the samples have their players at that tick."""
        figures = record_figures(self.events)
        interval = int(self.start.config.get("sample_interval_ticks", 10) or 10)
        for f in figures.fast:
            self.flag(
                f.step,
                f"{f.agent} covers {f.distance:.2f} blocks in {f.ticks} ticks "
                f"(ticks {f.tick - f.ticks}-{f.tick}), faster than {SPEED_LIMIT} blocks a "
                "tick: positions and the clock came apart",
            )
        for step, gap, tick in figures.gaps:
            if gap > interval:
                self.flag(
                    step,
                    f"pose samples {gap} ticks apart before tick {tick}; "
                    f"sample_interval_ticks is {interval}",
                )
        for step, overshoot, tick in figures.overshoots:
            if overshoot != 0:
                self.flag(
                    step,
                    f"the batch froze by meeting at tick {tick} ran on {overshoot} ticks past it",
                )
        for m in figures.marks:
            if m.distance > MARK_SLACK:
                self.flag(
                    m.step,
                    f"{m.agent}'s {m.what} at tick {m.tick} is {m.distance:.2f} "
                    "blocks from its pose sample at that tick",
                )

    def _check_step_deadlines(self) -> None:
        """A program that ran into its step's deadline ended exactly
        `step_timeout_ms / 50` ticks of game time after its free-roam step began, on
        either world (the deadline is game time, not wall time), and a reason that names
        the ticks names those. A shorter step means the clock and the deadline came
        apart (a wall-time deadline under load); the wall guard (reason `wall guard`)
        is flagged in `game_end.flags` instead and not checked here."""
        config = self.start.config if isinstance(self.start.config, dict) else {}
        timeout_ms = config.get("step_timeout_ms")
        if not isinstance(timeout_ms, int) or timeout_ms <= 0:
            return
        want = timeout_ms // 50
        began: dict[int, int] = {}
        for ev in self.events:
            if isinstance(ev, StepStart) and ev.phase == "free_roam":
                began[ev.step] = ev.tick
            elif isinstance(ev, ProgramRun) and ev.status == "timeout" and ev.step in began:
                if not ev.reason.startswith("step timeout"):
                    continue
                lasted = ev.end_tick - began[ev.step]
                named = ev.reason.removeprefix("step timeout after ").split(" ", 1)[0]
                if lasted != want or (named.isdigit() and int(named) != want):
                    self.flag(
                        ev.step,
                        f"{ev.agent}'s program timed out {lasted} ticks into the step "
                        f"({ev.reason!r}); step_timeout_ms={timeout_ms} is {want} ticks",
                    )

    def _check_batch_starts(self) -> None:
        """Every batch starts where the record left its players: the first sample of a
        `trace` finds each sampled player where the latest `positions` snapshot before
        it put that player, within `BATCH_START_SLACK` horizontally. A player who slid
        on after its program's stop (still walking when the step's deadline came)
        stood elsewhere than its step's closing snapshot says. A player the world
        placed anew in between (a dropped bot's reconnection, logged as `disconnect`)
        is not checked against that snapshot."""
        last: Positions | None = None
        placed: set[str] = set()
        for ev in self.events:
            if isinstance(ev, Positions):
                last, placed = ev, set()
            elif isinstance(ev, Disconnect):
                placed.add(ev.agent)
            elif isinstance(ev, Trace) and last is not None and ev.ticks:
                for agent, poses in ev.players.items():
                    snap = last.players.get(agent)
                    if snap is None or not poses or agent in placed:
                        continue
                    x, _, z, _ = poses[0]
                    d = math.hypot(x - snap.pos[0], z - snap.pos[2])
                    if d > BATCH_START_SLACK + TOLERANCE:
                        self.flag(
                            ev.step,
                            f"{agent} starts the batch at tick {ev.ticks[0]} at "
                            f"({x:.2f}, {z:.2f}), {d:.2f} blocks from where the positions "
                            f"snapshot of tick {last.tick} left it "
                            f"({snap.pos[0]:.2f}, {snap.pos[2]:.2f}): it moved between batches",
                        )

    def _check_setup(self) -> None:
        s, r = self.start, self.rules
        imps = sorted(a for a, role in self.roles.items() if role == "impostor")
        if len(s.agents) != r.n_players:
            self.flag(s.step, f"{len(s.agents)} seats but rules.n_players={r.n_players}")
        if len(imps) != r.n_impostors:
            self.flag(s.step, f"{len(imps)} impostors {imps} but rules.n_impostors={r.n_impostors}")
        if r.roles == "fixed" and imps != sorted(r.fixed_impostors):
            self.flag(
                s.step,
                f"the impostors are {imps} but rules.roles is fixed with "
                f"rules.fixed_impostors={list(r.fixed_impostors)}",
            )
        for a in s.agents:
            tasks = s.tasks.get(a, [])
            want = r.tasks_per_crewmate if self.roles.get(a) == "crewmate" else 0
            if len(set(tasks)) != len(tasks) or len(tasks) != want:
                self.flag(s.step, f"{a} is assigned tasks {tasks}; expected {want} distinct")
            if self.stations is not None and any(t not in self.stations for t in tasks):
                self.flag(s.step, f"{a} is assigned a station the map lacks: {tasks}")

    def _check_tick_order(self) -> None:
        """Rule events of one free-roam step must come in the order they happened."""
        last: dict[int, tuple[int, str]] = {}
        for ev in self.events:
            if isinstance(ev, Kill | TaskDone | Report | Emergency):
                prev = last.get(ev.step)
                if prev is not None and ev.tick < prev[0]:
                    self.flag(
                        ev.step,
                        f"{ev.kind} at tick {ev.tick} is logged after {prev[1]} at tick {prev[0]}",
                    )
                last[ev.step] = (ev.tick, ev.kind)

    # ------------------------------------------------------------------ actors
    def _dead_acting(self, ev: Event) -> None:
        actor: str | None = None
        if isinstance(ev, Decision | Continuation | ProgramRun | TaskStart | TaskDone):
            actor = ev.agent
        elif isinstance(ev, Report):
            actor = ev.reporter
        elif isinstance(ev, Emergency):
            actor = ev.caller
        elif isinstance(ev, Speech):
            actor = ev.speaker
        elif isinstance(ev, Vote):
            actor = ev.voter
        elif isinstance(ev, Kill):
            actor = ev.killer
        if actor is None:
            return
        state = self.status.get(actor)
        kill = self.killed_at.get(actor)
        if isinstance(ev, ProgramRun) and kill is not None and kill.step == ev.step:
            # The victim's own program record of the step it died in: written when the
            # batch ends, it must show the program stopped at the kill (v2 loop).
            if self.strict_cancel and ev.end_tick > kill.tick + CANCEL_SLACK_TICKS:
                self.flag(
                    ev.step,
                    f"{actor} was killed at tick {kill.tick} but its program ran to "
                    f"tick {ev.end_tick} ({ev.status})",
                )
            return
        if state is None:
            self.flag(ev.step, f"{ev.kind} by {actor}, who has no seat")
        elif state != "alive" and not self._ghost_may(actor, ev):
            self.flag(ev.step, f"{actor} is {state} but acts ({ev.kind} at tick {ev.tick})")

    def _ghost_may(self, actor: str, ev: Event) -> bool:
        """Whether this is a ghost's own free-roam work under `rules.ghost_tasks`: a
        crewmate out of play deciding, running a program, starting or finishing a task
        in a free-roam step (the rest, meetings included, stays the living's)."""
        if not self.rules.ghost_tasks or self.roles.get(actor) != "crewmate":
            return False
        if not isinstance(ev, Decision | Continuation | ProgramRun | TaskStart | TaskDone):
            return False
        phase = ev.phase if isinstance(ev, Decision) else self.step_phase.get(ev.step)
        return phase in (None, "free_roam")

    # ------------------------------------------------------------------ kills
    def _kill(self, ev: Kill) -> None:
        r = self.rules
        if self.roles.get(ev.killer) != "impostor":
            self.flag(ev.step, f"{ev.killer} kills {ev.victim} but is not an impostor")
        if self.roles.get(ev.victim) != "crewmate":
            self.flag(ev.step, f"{ev.killer} kills {ev.victim}, who is not a crewmate")
        elif self.status.get(ev.victim) != "alive":
            self.flag(
                ev.step, f"{ev.killer} kills {ev.victim}, who is already {self.status[ev.victim]}"
            )
        if self.meeting is not None:
            self.flag(
                ev.step, f"{ev.killer} kills {ev.victim} during meeting {self.meeting.start.index}"
            )
        ready = self.kill_ready.get(ev.killer)
        if ready is not None and ev.tick < ready:
            self.flag(
                ev.step,
                f"{ev.killer} kills {ev.victim} at tick {ev.tick} during its cooldown "
                f"(ready at tick {ready})",
            )
        gap = self._strike_distance(ev)
        if gap > r.kill_range + TOLERANCE:
            self.flag(
                ev.step,
                f"{ev.killer} kills {ev.victim} from {gap:.3f} blocks > kill_range {r.kill_range}",
            )
        self.kill_ready[ev.killer] = ev.tick + r.kill_cooldown_ticks
        if self.status.get(ev.victim) == "alive":
            self.status[ev.victim] = "dead"
        self.bodies[ev.victim] = ev
        self.killed_at[ev.victim] = ev
        self.clocks.pop(ev.victim, None)

    def _strike_distance(self, ev: Kill) -> float:
        """The kill's distance: from the killer's own `reached` program event when the
        log has it (positions of both at the strike), else the logged `distance`."""
        for run in self.events:
            if not (isinstance(run, ProgramRun) and run.agent == ev.killer and run.step == ev.step):
                continue
            for pe in run.events:
                if (
                    pe.get("kind") == "reached"
                    and pe.get("agent") == ev.victim
                    and pe.get("tick") == ev.tick
                    and pe.get("pos")
                    and pe.get("target_pos")
                ):
                    return max(ev.distance, math.dist(pe["pos"], pe["target_pos"]))
        return ev.distance

    # ------------------------------------------------------------------ meetings
    def _report(self, ev: Report) -> None:
        body = self.bodies.get(ev.victim)
        if self.meeting is not None:
            self.flag(ev.step, f"{ev.reporter} reports during meeting {self.meeting.start.index}")
        if body is None:
            self.flag(ev.step, f"{ev.reporter} reports {ev.victim}, who has no body lying")
        if ev.distance > self.rules.report_range + TOLERANCE:
            self.flag(
                ev.step,
                f"{ev.reporter} reports from {ev.distance} blocks > report_range "
                f"{self.rules.report_range}",
            )

    def _emergency(self, ev: Emergency) -> None:
        r = self.rules
        if self.meeting is not None:
            self.flag(ev.step, f"{ev.caller} presses the button during a meeting")
        if ev.tick < self.button_unlock:
            self.flag(
                ev.step,
                f"{ev.caller} presses the button at tick {ev.tick} during its lockout "
                f"(unlocked at tick {self.button_unlock})",
            )
        self.buttons[ev.caller] = self.buttons.get(ev.caller, 0) + 1
        if self.buttons[ev.caller] > r.emergency_per_player:
            self.flag(
                ev.step,
                f"{ev.caller} presses the button {self.buttons[ev.caller]} times; "
                f"the budget is {r.emergency_per_player}",
            )

    def _meeting_start(self, ev: MeetingStart, i: int) -> None:
        self.meetings += 1
        if self.meeting is not None:
            self.flag(
                ev.step, f"meeting {ev.index} starts inside meeting {self.meeting.start.index}"
            )
        if ev.index != self.meetings:
            self.flag(ev.step, f"meeting index {ev.index}, expected {self.meetings}")
        if ev.order != self.living():
            self.flag(
                ev.step, f"meeting {ev.index} order {ev.order} is not the living {self.living()}"
            )
        dead = [a for a in self.order if self.status[a] != "alive"]
        if sorted(ev.dead) != sorted(dead):
            self.flag(ev.step, f"meeting {ev.index} lists dead {ev.dead}, expected {dead}")
        caller = self._caller_event(i)
        if caller is None:
            self.flag(ev.step, f"meeting {ev.index} has no report or emergency before it")
        elif isinstance(caller, Report):
            if (ev.trigger, ev.caller, ev.victim) != ("report", caller.reporter, caller.victim):
                self.flag(ev.step, f"meeting {ev.index} does not match the report before it")
        elif (ev.trigger, ev.caller) != ("emergency", caller.caller):
            self.flag(ev.step, f"meeting {ev.index} does not match the button press before it")
        self.meeting = _Meeting(ev, utterances=dict.fromkeys(ev.order, 0))
        self.meeting_ticks.append(ev.tick)
        self.bodies = {}
        for a, clock in list(self.clocks.items()):
            if clock.tick <= ev.tick:
                del self.clocks[a]  # a meeting interrupts every task in progress

    def _caller_event(self, i: int) -> Report | Emergency | None:
        for ev in reversed(self.events[:i]):
            if isinstance(ev, Report | Emergency):
                return ev
            if isinstance(ev, MeetingEnd | MeetingStart):
                return None
        return None

    def _expected_speaker(self, m: _Meeting) -> str | None:
        """Round-robin over the meeting order, `max_utterances` rounds. Under `talk:
        open` players out of utterances are skipped and talk is over after a whole round
        without a spoken line; under `turns` every living player takes every turn."""
        n = len(m.start.order)
        limit = self.rules.max_utterances
        open_talk = self.rules.talk == "open"
        while not m.talk_over:
            if m.turn >= n * limit:
                m.talk_over = True
                break
            if open_talk and m.turn > 0 and m.turn % n == 0:
                if not m.spoke_this_round:
                    m.talk_over = True
                    break
                m.spoke_this_round = False
            speaker = m.start.order[m.turn % n]
            has_lines = m.utterances.get(speaker, 0) < limit or not open_talk
            if has_lines and self.status.get(speaker) == "alive":
                return speaker
            m.turn += 1
        return None

    def _speech(self, ev: Speech) -> None:
        m = self.meeting
        if m is None:
            self.flag(ev.step, f"{ev.speaker} speaks outside a meeting")
            return
        if ev.speaker not in m.start.order:
            self.flag(ev.step, f"{ev.speaker} speaks in meeting {m.start.index} but is not in it")
            return
        limit_tick = m.start.tick + self.rules.meeting_max_ticks
        if ev.tick > limit_tick or (self.talk_costs and ev.tick == limit_tick):
            self.flag(ev.step, f"{ev.speaker} speaks after meeting {m.start.index}'s talk time")
        self._talk_time_spent(m, ev, f"{ev.speaker}'s turn")
        expected = self._expected_speaker(m)
        spoken = not (ev.passed or ev.failed or not ev.text.strip())
        m.turns[ev.speaker] = m.turns.get(ev.speaker, 0) + 1
        if self.rules.talk == "turns" and m.turns[ev.speaker] > self.rules.max_utterances:
            self.flag(
                ev.step,
                f"{ev.speaker} takes {m.turns[ev.speaker]} talk turns in meeting "
                f"{m.start.index}; under talk: turns each player has max_utterances="
                f"{self.rules.max_utterances}",
            )
        if spoken:
            m.utterances[ev.speaker] = m.utterances.get(ev.speaker, 0) + 1
            if m.utterances[ev.speaker] > self.rules.max_utterances:
                self.flag(
                    ev.step,
                    f"{ev.speaker} speaks {m.utterances[ev.speaker]} times in meeting "
                    f"{m.start.index}; max_utterances is {self.rules.max_utterances}",
                )
        if expected is None:
            self.flag(ev.step, f"{ev.speaker} speaks after meeting {m.start.index}'s talk was over")
        elif ev.speaker != expected:
            self.flag(
                ev.step,
                f"{ev.speaker} speaks out of turn in meeting {m.start.index} "
                f"(it was {expected}'s turn)",
            )
        m.turn += 1
        if spoken:
            m.spoke_this_round = True
        m.last_talk = ev

    def _talk_cost(self, ev: Speech) -> int:
        """Game ticks a talk turn costs: a spoken line, or a pass or failed turn."""
        if not self.talk_costs:
            return 0
        spoken = not (ev.passed or ev.failed or not ev.text.strip())
        r = self.rules
        return r.talk_ticks_per_utterance if spoken else r.talk_ticks_per_pass

    def _talk_time_spent(self, m: _Meeting, ev: Speech | Vote, what: str) -> None:
        """The previous talk turn's cost must have passed on the clock before `ev`."""
        last = m.last_talk
        if last is None:
            return
        cost = self._talk_cost(last)
        if ev.tick < last.tick + cost:
            self.flag(
                ev.step,
                f"{what} in meeting {m.start.index} at tick {ev.tick}, but {last.speaker}'s "
                f"turn at tick {last.tick} costs {cost} ticks of talk time",
            )

    def _talk_left_at_vote(self, m: _Meeting, ev: Vote) -> None:
        """A vote opens only once talk is over: time used up, or no speaker left."""
        if not self.talk_costs or ev.step > self.rules.max_steps:
            return
        last = m.last_talk
        now = last.tick + self._talk_cost(last) if last is not None else m.start.tick
        if now >= m.start.tick + self.rules.meeting_max_ticks:
            return
        speaker = self._expected_speaker(m)
        if speaker is not None:
            self.flag(
                ev.step,
                f"meeting {m.start.index} votes while talk time remains and it is "
                f"{speaker}'s turn to speak",
            )

    def _vote(self, ev: Vote) -> None:
        m = self.meeting
        if m is None:
            self.flag(ev.step, f"{ev.voter} votes outside a meeting")
            return
        if ev.voter not in m.start.order:
            self.flag(ev.step, f"{ev.voter} votes in meeting {m.start.index} but is not in it")
        if ev.voter in m.votes:
            self.flag(ev.step, f"{ev.voter} votes twice in meeting {m.start.index}")
        if not m.votes:
            self._talk_time_spent(m, ev, "the vote")
            self._talk_left_at_vote(m, ev)
        m.votes[ev.voter] = ev
        target = ev.target
        if target is not None and target != SKIP and self.status.get(target) != "alive":
            self.flag(ev.step, f"{ev.voter} votes for {ev.target}, who is not a living player")
        self._skip_rule(ev, m)

    def _skip_rule(self, ev: Vote, m: _Meeting) -> None:
        """Under `impostors_may_skip: false` no impostor's skip counts, and its refused
        skip goes to the first other living non-impostor in seat order; only such a
        ballot is ever `replaced`."""
        impostor = self.roles.get(ev.voter) == "impostor"
        barred = not self.rules.impostors_may_skip
        where = f"meeting {m.start.index}"
        if barred and impostor and ev.target == SKIP:
            self.flag(
                ev.step,
                f"{ev.voter}, an impostor, votes skip in {where}; rules.impostors_may_skip "
                "is false",
            )
        if not ev.replaced:
            return
        if not (barred and impostor and ev.replaced.startswith(SKIP)):
            self.flag(
                ev.step,
                f"{ev.voter}'s ballot in {where} is replaced ({ev.replaced!r}); the rules "
                "replace only an impostor's skip, under impostors_may_skip: false",
            )
            return
        fallback = next(
            (
                a
                for a in self.order
                if a != ev.voter and self.status[a] == "alive" and self.roles.get(a) != "impostor"
            ),
            None,
        )
        if ev.target != fallback:
            self.flag(
                ev.step,
                f"{ev.voter}'s refused skip in {where} goes to {ev.target}; the fallback "
                f"is {fallback} (the first other living non-impostor in seat order)",
            )

    def _meeting_end(self, ev: MeetingEnd, i: int) -> None:
        m = self.meeting
        if m is None:
            self.flag(ev.step, f"meeting {ev.index} ends but none was going on")
            return
        tally: dict[str, int] = {}
        abstained: list[str] = []
        for voter, vote in m.votes.items():
            if vote.target is None or vote.failed:
                abstained.append(voter)  # an abstention or a failed ballot counts for nobody
            else:
                tally[vote.target] = tally.get(vote.target, 0) + 1
        counted = {k: v for k, v in ev.tally.items() if v}
        if counted != tally:
            self.flag(ev.step, f"meeting {ev.index} tally {ev.tally}; the votes give {tally}")
        if ev.abstained and sorted(ev.abstained) != sorted(abstained):
            self.flag(
                ev.step, f"meeting {ev.index} abstained {ev.abstained}; the votes give {abstained}"
            )
        outcome, ejected = _plurality(tally)
        if (ev.outcome, ev.ejected) != (outcome, ejected):
            self.flag(
                ev.step,
                f"meeting {ev.index} ends {ev.outcome} ejecting {ev.ejected}; the votes give "
                f"{outcome} ejecting {ejected}",
            )
        nxt = self.events[i + 1] if i + 1 < len(self.events) else None
        eject_next = isinstance(nxt, Eject)
        if ev.ejected is not None and not (eject_next and nxt.agent == ev.ejected):  # type: ignore[union-attr]
            self.flag(ev.step, f"meeting {ev.index} ejects {ev.ejected} but no eject event follows")
        if ev.ejected is None and eject_next:
            self.flag(ev.step, f"meeting {ev.index} ejects nobody but an eject event follows")
        self.meeting = None
        self.button_unlock = max(
            self.button_unlock, ev.tick + self.rules.emergency_lockout_after_meeting_ticks
        )
        for imp in self.kill_ready:
            self.kill_ready[imp] = max(
                self.kill_ready[imp], ev.tick + self.rules.kill_cooldown_ticks
            )

    def _eject(self, ev: Eject, i: int) -> None:
        prev = self.events[i - 1] if i > 0 else None
        if not (isinstance(prev, MeetingEnd) and prev.ejected == ev.agent):
            self.flag(ev.step, f"{ev.agent} is ejected without a vote that ejects it")
        if self.roles.get(ev.agent) != ev.role:
            self.flag(
                ev.step, f"{ev.agent} is ejected as {ev.role} but is {self.roles.get(ev.agent)}"
            )
        if self.status.get(ev.agent) != "alive":
            self.flag(ev.step, f"{ev.agent} is ejected but was {self.status.get(ev.agent)}")
        self.status[ev.agent] = "ejected"

    # ------------------------------------------------------------------ tasks
    def _task_start(self, ev: TaskStart) -> None:
        if self.meeting is not None:
            self.flag(ev.step, f"{ev.agent} starts a task during a meeting")
        self.clocks[ev.agent] = _TaskClock(ev.station, ev.tick, ev.step)

    def _task_done(self, ev: TaskDone) -> None:
        r = self.rules
        role = self.roles.get(ev.agent)
        if self.meeting is not None:
            self.flag(ev.step, f"{ev.agent} completes a task during a meeting")
        if ev.fake != (role == "impostor"):
            self.flag(ev.step, f"{ev.agent} ({role}) completes a task marked fake={ev.fake}")
        if not ev.fake:
            if ev.station not in self.start.tasks.get(ev.agent, []):
                self.flag(
                    ev.step,
                    f"{ev.agent} completes a task at station {ev.station}, which is not one "
                    f"of its tasks {self.start.tasks.get(ev.agent, [])}",
                )
            elif ev.station in self.done[ev.agent]:
                self.flag(ev.step, f"{ev.agent} completes station {ev.station} twice")
            else:
                self.done[ev.agent].add(ev.station)
                if ev.done != len(self.done[ev.agent]):
                    self.flag(
                        ev.step,
                        f"{ev.agent}'s task count says {ev.done}, the log gives "
                        f"{len(self.done[ev.agent])}",
                    )
        start = self._task_start_tick(ev)
        if start is None:
            self.flag(
                ev.step, f"{ev.agent} completes station {ev.station} with no start in the log"
            )
            return
        held = ev.tick - start
        if held < r.task_ticks:
            self.flag(
                ev.step,
                f"{ev.agent} completes station {ev.station} after {held} ticks "
                f"< task_ticks {r.task_ticks} (started at tick {start})",
            )
        crossed = [t for t in self.meeting_ticks if start <= t <= ev.tick]
        if crossed:
            self.flag(
                ev.step,
                f"{ev.agent}'s task at station {ev.station} (ticks {start}-{ev.tick}) spans "
                f"the meeting called at tick {crossed[0]}",
            )
        clock = self.clocks.get(ev.agent)
        first_step = clock.step if clock is not None and clock.tick == start else 0
        away = self._away_from_station(ev.agent, ev.station, start, ev.tick, (first_step, ev.step))
        if away is not None:
            self.flag(
                ev.step,
                f"{ev.agent} completes station {ev.station} but was {away[1]:.2f} blocks "
                f"from it at tick {away[0]}",
            )
        self.clocks.pop(ev.agent, None)

    def _task_start_tick(self, ev: TaskDone) -> int | None:
        """When the player began standing at the station: the `task_start` event (v2),
        else the `start_tick` field, else the last `task_start` program mark."""
        clock = self.clocks.get(ev.agent)
        if clock is not None and clock.station != ev.station:
            clock = None
        if self.task_starts and (clock is not None or not ev.fake):
            # Real tasks need their `task_start`; a fake one is held to it when logged.
            if clock is None:
                return None
            if ev.start_tick is not None and ev.start_tick != clock.tick:
                self.flag(
                    ev.step,
                    f"{ev.agent}'s task_done says it started at tick {ev.start_tick}; its "
                    f"task_start is at tick {clock.tick}",
                )
            return clock.tick
        if ev.start_tick is not None:
            return ev.start_tick
        tag = f"task_start:{ev.station}"
        ticks = [
            int(pe["tick"])
            for run in self.events
            if isinstance(run, ProgramRun) and run.agent == ev.agent and run.step <= ev.step
            for pe in run.events
            if pe.get("kind") == "mark" and pe.get("tag") == tag and int(pe["tick"]) <= ev.tick
        ]
        return max(ticks) if ticks else None

    def _away_from_station(
        self, agent: str, station: int, start: int, end: int, steps: tuple[int, int]
    ) -> tuple[int, float] | None:
        """The first pose sampled in [start, end], by the steps from the task's start
        to its completion, away from the station, if any."""
        if self.stations is None or station not in self.stations:
            return None
        target = self.stations[station]
        limit = self.rules.station_range + POSE_SLACK
        for tick, pos in self._poses(agent, start, end, steps):
            gap = math.dist(pos, target)
            if gap > limit:
                return tick, gap
        return None

    def _poses(
        self, agent: str, start: int, end: int, steps: tuple[int, int]
    ) -> Iterable[tuple[int, Vec3]]:
        # Only samples of the steps the task ran in: a meeting may take no ticks, so
        # the step after it samples the seats at the very tick the step before it
        # ended; a sample at the same tick in another step is not this task's.
        for ev in self.events:
            if not steps[0] <= ev.step <= steps[1]:
                continue
            if isinstance(ev, Trace) and agent in ev.players:
                for tick, sample in zip(ev.ticks, ev.players[agent], strict=False):
                    if start <= tick <= end:
                        yield tick, (sample[0], sample[1], sample[2])
            elif (
                isinstance(ev, Positions)
                and ev.cause in SAMPLED_CAUSES
                and start < ev.tick < end
                and agent in ev.players
            ):
                yield ev.tick, ev.players[agent].pos

    # ------------------------------------------------------------------ endings
    def _check_ending(self) -> None:
        end = next((e for e in reversed(self.events) if isinstance(e, GameEnd)), None)
        if end is None:
            self.out.append("no game_end event")
            return
        derived = derive_ending(self.start, self.events, self.rules)
        if derived is not None and derived.index >= 0:
            for ev in self.events[derived.index + 1 :]:
                if isinstance(ev, RULE_EVENTS) or (
                    isinstance(ev, StepStart) and ev.step > derived.step
                ):
                    self.flag(
                        ev.step,
                        f"the game went on ({ev.kind} at tick {ev.tick}) after it was decided: "
                        f"{derived.ending} at step {derived.step}, tick {derived.tick}",
                    )
                    break
        last_step = max((e.step for e in self.events), default=0)
        if last_step > self.rules.max_steps:
            self.flag(
                last_step, f"the game reached step {last_step} > max_steps {self.rules.max_steps}"
            )
        if end.status != "ok":
            return
        got = (end.winner, end.ending)
        want = (derived.winner, derived.ending) if derived else None
        if got != want:
            self.flag(end.step, f"the game ends {end.winner}/{end.ending}; the log gives {want}")


@dataclass(frozen=True)
class FastPair:
    """Two consecutive pose samples of one player too far apart for their ticks."""

    step: int
    agent: str
    tick: int
    """The later sample's tick."""
    ticks: int
    distance: float


@dataclass(frozen=True)
class MarkDistance:
    """A program rule event against its player's pose sample at the same tick."""

    step: int
    agent: str
    tick: int
    what: str
    distance: float


@dataclass
class RecordFigures:
    """How faithful a log's record of movement is to its clock (`record_figures`)."""

    worst_speed: float = 0.0
    """Largest blocks per tick over consecutive sample pairs of one player that span
    at least `SPEED_SPAN` ticks."""
    moving_pairs: int = 0
    fast: list[FastPair] = field(default_factory=list)
    """Pairs beyond `SPEED_LIMIT` per tick plus `RECENTRE_SLACK` and `ROUNDING_SLACK`."""
    gaps: list[tuple[int, int, int]] = field(default_factory=list)
    """(step, gap, tick) of every step's largest sample gap."""
    overshoots: list[tuple[int, int, int]] = field(default_factory=list)
    """(step, ticks past the call, call tick) of every batch a meeting froze."""
    marks: list[MarkDistance] = field(default_factory=list)
    """Every mark and strike that has a pose sample of its player at its tick."""

    @property
    def largest_gap(self) -> int:
        return max((g for _, g, _ in self.gaps), default=0)

    @property
    def largest_overshoot(self) -> int:
        return max((o for _, o, _ in self.overshoots), default=0)

    @property
    def largest_mark_distance(self) -> float:
        return max((m.distance for m in self.marks), default=0.0)


def record_figures(events: Sequence[Event]) -> RecordFigures:
    """Measure a log's movement record against its clock, from the log alone.

    Per free-roam step: the speed of every player between consecutive `trace` samples
    (horizontal distance over ticks), the largest gap between samples, how far past a
    meeting call's tick the step's samples and programs ran, and the distance between
    every `mark`/`reached` program event (a strike's target too) and the same player's
    sample at that tick, where the trace has one.
    """
    out = RecordFigures()
    traces = {ev.step: ev for ev in events if isinstance(ev, Trace)}
    for step, trace in sorted(traces.items()):
        ticks = trace.ticks
        gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
        if gaps:
            i = max(range(len(gaps)), key=lambda k: gaps[k])
            out.gaps.append((step, gaps[i], ticks[i + 1]))
        for agent, poses in trace.players.items():
            for i in range(1, min(len(poses), len(ticks))):
                dt = ticks[i] - ticks[i - 1]
                if dt <= 0:
                    continue
                (x0, _, z0, _), (x1, _, z1, _) = poses[i - 1], poses[i]
                d = math.hypot(x1 - x0, z1 - z0)
                if d > 0.05:
                    out.moving_pairs += 1
                    if dt >= SPEED_SPAN:
                        out.worst_speed = max(out.worst_speed, d / dt)
                if d > SPEED_LIMIT * dt + RECENTRE_SLACK + ROUNDING_SLACK:
                    out.fast.append(FastPair(step, agent, ticks[i], dt, d))
    calls = [ev for ev in events if isinstance(ev, MeetingStart)]
    runs = [ev for ev in events if isinstance(ev, ProgramRun)]
    for call in calls:
        called_in = traces.get(call.step)
        if called_in is None:
            continue  # a meeting called from no free-roam batch
        last = max([*called_in.ticks, *(r.end_tick for r in runs if r.step == call.step)])
        out.overshoots.append((call.step, last - call.tick, call.tick))
    for run in runs:
        ran_in = traces.get(run.step)
        if ran_in is None:
            continue
        index = {t: i for i, t in enumerate(ran_in.ticks)}
        for ev in run.events:
            if ev.get("kind") not in ("mark", "reached") or ev.get("tick") not in index:
                continue
            i = index[ev["tick"]]
            pairs = [(run.agent, ev.get("pos"), str(ev.get("tag") or "strike"))]
            if ev.get("kind") == "reached" and ev.get("agent"):
                pairs.append((str(ev["agent"]), ev.get("target_pos"), "strike's target"))
            for agent, pos, what in pairs:
                sampled = ran_in.players.get(agent)
                if not pos or not sampled or i >= len(sampled):
                    continue
                x, _, z, _ = sampled[i]
                d = math.hypot(float(pos[0]) - x, float(pos[2]) - z)
                out.marks.append(MarkDistance(run.step, agent, int(ev["tick"]), what, d))
    return out


@dataclass(frozen=True)
class FreeRoamPace:
    """How fast a game's world played its free roam, from the log alone
    (`free_roam_pace`)."""

    ticks: int
    """Game ticks from each free-roam step's `step_start` to the next step's."""
    wall_s: float
    """Wall seconds between the same `step_start` events (decisions, frames and the
    rules included, as a game spends them)."""
    steps: int
    """Free-roam steps counted (each followed by another step)."""

    @property
    def ticks_per_s(self) -> float:
        """Game ticks per wall second over the free-roam steps (real time is 20)."""
        return self.ticks / self.wall_s if self.wall_s > 0 else 0.0


def free_roam_pace(events: Sequence[Event]) -> FreeRoamPace:
    """Game ticks and wall seconds over a game's free-roam steps, step to step: from
    each free-roam `step_start` to the step that follows it (the last step, which no
    step follows, is left out)."""
    starts = [ev for ev in events if isinstance(ev, StepStart)]
    ticks, wall, steps = 0, 0.0, 0
    for a, b in zip(starts, starts[1:], strict=False):
        if a.phase == "free_roam":
            ticks += b.tick - a.tick
            wall += b.wall - a.wall
            steps += 1
    return FreeRoamPace(ticks=ticks, wall_s=wall, steps=steps)


def _plurality(tally: dict[str, int]) -> tuple[str, str | None]:
    """Outcome and ejected player of a tally (skip is a candidate; a tie ejects no one)."""
    if not tally:
        return "no_votes", None
    top = max(tally.values())
    leaders = [t for t, c in tally.items() if c == top]
    if len(leaders) > 1:
        return "tie", None
    if leaders[0] == SKIP:
        return "skipped", None
    return "ejected", leaders[0]


def derive_ending(
    start: GameStart, events: Sequence[Event], rules: RulesConfig | None = None
) -> DerivedEnding | None:
    """The first ending the log's rule events reach, taken in tick order.

    After each kill, ejection and completed task (in tick order, log order breaking
    ties) the state is tested: no impostor alive (crew, `impostors_ejected`); living
    crewmates no more than living impostors (impostors, `impostors_outnumber`); every
    living crewmate (every crewmate, ghosts too, under `rules.ghost_tasks`) done with
    all its tasks (crew, `tasks_done`). The first one reached is final. With none, a
    log whose last step reached `rules.max_steps` ends in `timeout`; otherwise there is
    no ending.
    """
    if rules is None:
        given = start.config.get("rules", {})
        rules = RulesConfig.model_validate(
            {k: v for k, v in given.items() if k in RulesConfig.model_fields}
        )
    roles = start.roles
    alive = {a: True for a in start.agents}
    done: dict[str, set[int]] = {a: set() for a in start.agents}
    changes = [
        (ev.tick, i, ev)
        for i, ev in enumerate(events)
        if isinstance(ev, Kill | Eject) or (isinstance(ev, TaskDone) and not ev.fake)
    ]
    for _, i, ev in sorted(changes, key=lambda c: (c[0], c[1])):
        if isinstance(ev, Kill):
            alive[ev.victim] = False
        elif isinstance(ev, Eject):
            alive[ev.agent] = False
        elif isinstance(ev, TaskDone) and ev.station in start.tasks.get(ev.agent, []):
            done[ev.agent].add(ev.station)
        living = [a for a in start.agents if alive[a]]
        imps = sum(roles.get(a) == "impostor" for a in living)
        crew = [a for a in living if roles.get(a) == "crewmate"]
        workers = (
            [a for a in start.agents if roles.get(a) == "crewmate"] if rules.ghost_tasks else crew
        )
        found: tuple[Winner, str] | None = None
        if imps == 0:
            found = ("crew", "impostors_ejected")
        elif len(crew) <= imps:
            found = ("impostors", "impostors_outnumber")
        elif all(done[a] >= set(start.tasks.get(a, [])) for a in workers):
            found = ("crew", "tasks_done")
        if found is not None:
            return DerivedEnding(found[0], found[1], ev.step, ev.tick, i)
    last = max((e.step for e in events), default=0)
    if last >= rules.max_steps:
        tick = max((e.tick for e in events), default=0)
        return DerivedEnding(rules.timeout_winner, "timeout", last, tick, -1)
    return None


def log_violations(events: list[Event] | str | Path) -> list[str]:
    """Every breach of the rules the log shows; an empty list means none.

    Checks, each by its own bookkeeping from the log alone: set-up (seats, impostor
    count, task assignment); kills (by a living impostor, of a living crewmate, out
    of meetings, after the cooldown, within `kill_range`, from the strike's positions
    when logged); rule events of a step in tick order; reports (a lying body, in
    range); the button (lockouts after the start and after each meeting, the
    per-player budget); meetings (index, order = the living, caller); turn order
    (round-robin over the living, at most `max_utterances` lines each, or under `talk:
    turns` turns each, none after talk is over or its time); votes (one each, for a
    living player, skip, or an abstention that counts for nobody; no impostor's skip
    under `impostors_may_skip: false`, whose replacement goes to the fallback), the
    tally, the plurality and the ejection;
    tasks (only an assigned station, once, held for `task_ticks` from its start,
    at the station in every sampled pose, never across a meeting); nobody dead or
    ejected acts (but a ghost crewmate's free-roam work under `rules.ghost_tasks`);
    fixed impostor seats under `rules.roles: fixed`; every batch starting where the
    last `positions` snapshot left its players; the ending (derived by
    `derive_ending`, and nothing happens after it). Messages start with the step.
    """
    evs = read_log(events) if isinstance(events, str | Path) else list(events)
    start = next((e for e in evs if isinstance(e, GameStart)), None)
    if start is None:
        return ["no game_start event"]
    audit = _Audit(start, evs)
    audit.run()
    return audit.out


__all__ = ["DerivedEnding", "FreeRoamPace", "derive_ending", "free_roam_pace", "log_violations"]
