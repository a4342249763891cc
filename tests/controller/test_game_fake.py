"""Whole games on the in-process fake world: rules, log, timeline, determinism, faults."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from controller.agents.base import AgentDecision
from controller.agents.scripted import ScriptedAgent
from controller.checks import determinism_check, log_violations, rule_events, world_conformance
from controller.config import GameConfig, resolve_config
from controller.events import (
    ActionRejected,
    Decision,
    GameEnd,
    GameStart,
    Kill,
    LogExistsError,
    MeetingEnd,
    MeetingStart,
    Positions,
    ProgramRun,
    Speech,
    TaskDone,
    Trace,
    Visibility,
    read_events,
)
from controller.game import Game, GameResult
from controller.observation import Observation
from controller.timeline import rebuild_timeline
from controller.worlds.fake import FakeWorld
from testkit.games import GameStore
from world.geometry import ShipGeometry
from world.spec import MapSpec, load_map

SPEC: MapSpec = load_map("skeld")


class ProbeGame(Game):
    """A Game that remembers the engine's live state at every step."""

    live: dict[int, dict[str, tuple[str, str]]]
    marker_mismatches: list[str]

    def after_step(self) -> None:
        if not hasattr(self, "live"):
            self.live, self.marker_mismatches = {}, []
        if isinstance(self.world, FakeWorld):
            shown = sorted(self.world._markers().values())
            if shown != sorted(self.engine.body_markers()):
                self.marker_mismatches.append(f"step {self.engine.step}: world shows {shown}")
        self.live[self.engine.step] = {
            a: (self.geometry.room_at(p.pos), p.status) for a, p in self.engine.players.items()
        }


def play(
    config: GameConfig,
    out: Path,
    world: FakeWorld | None = None,
    agents: dict[str, Any] | None = None,
) -> tuple[GameResult, ProbeGame]:
    geometry = ShipGeometry(SPEC)
    world = world or FakeWorld(geometry)
    agents = agents or {a: ScriptedAgent(a, geometry, config.seed) for a in config.agent_ids()}
    game = ProbeGame(config, SPEC, world, agents, out)
    return game.run(), game


def quick(seed: int, frames: str = "off", **rules: Any) -> GameConfig:
    """The quick preset, no frames rendered unless a test reads them."""
    return resolve_config("quick", overrides={"seed": seed, "frames": frames, "rules": rules})


SHARED_SEEDS = range(69, 81)
"""The quick scripted games (frames off) the tests that only read a game's log take from
the run's store (`fake_games`); `tests/controller/test_scripted.py` counts the same."""


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_scripted_games_finish_by_the_rules(seed: int, tmp_path: Path) -> None:
    result, game = play(quick(seed), tmp_path)
    assert result.status == "ok"
    assert game.marker_mismatches == []  # the world's body markers are the engine's bodies
    assert result.ending in {"impostors_outnumber", "impostors_ejected", "tasks_done", "timeout"}
    events = read_events(tmp_path / "events.jsonl")
    assert log_violations(events) == []
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["winner"] == result.winner in ("crew", "impostors")
    assert summary["seed"] == seed and summary["steps"] == result.steps
    assert sorted(summary["roles"].values()).count("impostor") == 2
    assert summary["config"]["rules"]["kill_cooldown_ticks"] == 160
    assert "python" in summary["versions"]
    # every step has everyone's position and room
    steps = {ev.step for ev in events if isinstance(ev, Positions)}
    assert steps == set(range(0, result.steps + 1))


def test_scripted_games_show_kills_meetings_and_votes(fake_games: GameStore) -> None:
    kinds: set[str] = set()
    endings: set[str] = set()
    for seed in SHARED_SEEDS:
        events = fake_games.events(seed=seed, frames="off")
        end = events[-1]
        assert isinstance(end, GameEnd) and end.status == "ok"
        endings.add(end.ending)
        kinds |= {ev.kind for ev in events}
    assert {"kill", "report", "meeting_start", "speech", "vote", "meeting_end"} <= kinds
    assert {"task_start", "task_done", "trace", "visibility"} <= kinds
    assert {"tasks_done", "impostors_outnumber", "impostors_ejected"} <= endings


def test_timeline_rebuilt_from_log_matches_live_game(tmp_path: Path) -> None:
    result, game = play(quick(3), tmp_path)
    timeline = rebuild_timeline(tmp_path / "events.jsonl")
    assert set(timeline) == set(game.live)
    for step, players in game.live.items():
        for agent, (room, status) in players.items():
            assert timeline[step][agent].room == room, (step, agent)
            assert timeline[step][agent].status == status, (step, agent)


def test_same_seed_same_engine_events(tmp_path: Path) -> None:
    def run(config: GameConfig, out: Path) -> Path:
        play(config, out)
        return out / "events.jsonl"

    assert determinism_check(run, quick(11), tmp_path) == []
    a = rule_events(read_events(tmp_path / "a" / "events.jsonl"))
    play(quick(12), tmp_path / "c")
    c = rule_events(read_events(tmp_path / "c" / "events.jsonl"))
    assert a != c


def test_determinism_check_catches_a_game_that_changes(tmp_path: Path) -> None:
    calls: list[int] = []

    def drifting(config: GameConfig, out: Path) -> Path:
        # the second game is played with another seed: a planted nondeterminism
        calls.append(1)
        play(config.model_copy(update={"seed": config.seed + len(calls) - 1}), out)
        return out / "events.jsonl"

    diffs = determinism_check(drifting, quick(11, max_steps=6), tmp_path)
    assert diffs


def test_timeout_ending_uses_configured_winner(tmp_path: Path) -> None:
    result, _ = play(quick(2, max_steps=2, timeout_winner="crew"), tmp_path)
    assert (result.ending, result.winner) == ("timeout", "crew")
    assert log_violations(tmp_path / "events.jsonl") == []


def test_disconnected_bot_is_reconnected_and_game_goes_on(tmp_path: Path) -> None:
    world = FakeWorld(ShipGeometry(SPEC))
    world.inject_disconnect("blue", "connection reset")
    result, _ = play(quick(4), tmp_path, world=world)
    assert result.status == "ok"
    kinds = [ev.kind for ev in read_events(tmp_path / "events.jsonl")]
    assert "disconnect" in kinds and "reconnect" in kinds
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["disconnects"] == 1 and summary["counts"]["reconnects"] == 1


def test_unrecoverable_disconnect_makes_the_game_invalid(tmp_path: Path) -> None:
    world = FakeWorld(ShipGeometry(SPEC))
    world.inject_disconnect("green", "server closed")
    world.refuse_reconnect.add("green")
    result, _ = play(quick(4), tmp_path, world=world)
    assert result.status == "invalid" and result.winner is None
    assert "green" in result.reason and "reconnect" in result.reason
    end = read_events(tmp_path / "events.jsonl")[-1]
    assert isinstance(end, GameEnd) and end.status == "invalid"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "invalid" and summary["winner"] is None


class Rogue:
    """Wraps a scripted agent; on free-roam steps sends a program it may not run."""

    def __init__(self, inner: ScriptedAgent, program: list[dict[str, Any]]) -> None:
        self.inner, self.program, self.agent_id = inner, program, inner.agent_id

    def describe(self) -> dict[str, Any]:
        return {"kind": "rogue"}

    async def decide(self, obs: Observation) -> AgentDecision:
        if obs.phase == "free_roam":
            return AgentDecision(program=self.program, raw="rogue")
        return await self.inner.decide(obs)


@pytest.mark.parametrize(
    ("program", "error"),
    [
        ([{"op": "say", "text": "hi"}], "meetings"),
        ([{"op": "kill", "target": "red"}], "kill"),
        ([{"op": "go_to", "room": "bridge"}], "unknown room"),
        ([{"op": "exec", "code": "import os"}], "action 0"),
        ("not a list", "list of actions"),
    ],
)
def test_invalid_programs_are_recorded_not_replaced(
    tmp_path: Path, program: Any, error: str
) -> None:
    config = quick(5, max_steps=3)
    geometry = ShipGeometry(SPEC)
    agents: dict[str, Any] = {a: ScriptedAgent(a, geometry, 5) for a in config.agent_ids()}
    crew = next(a for a in config.agent_ids() if game_roles(config)[a] == "crewmate" and a != "red")
    agents[crew] = Rogue(agents[crew], program)
    world = FakeWorld(geometry)
    result, game = play(config, tmp_path, world=world, agents=agents)
    decisions = [
        ev
        for ev in read_events(tmp_path / "events.jsonl")
        if isinstance(ev, Decision) and ev.agent == crew and ev.phase == "free_roam"
    ]
    assert decisions and all(not d.valid and error in d.error for d in decisions)
    programs = [
        ev
        for ev in read_events(tmp_path / "events.jsonl")
        if ev.kind == "program" and getattr(ev, "agent", None) == crew
    ]
    assert programs == []  # nothing dispatched in its place
    assert game.counts["invalid_decisions"] >= len(decisions)


def game_roles(config: GameConfig) -> dict[str, str]:
    geometry = ShipGeometry(SPEC)
    with tempfile.TemporaryDirectory(prefix="mau-roles-probe-") as tmp:
        game = Game(
            config,
            SPEC,
            FakeWorld(geometry),
            {a: ScriptedAgent(a, geometry, 0) for a in config.agent_ids()},
            Path(tmp),
        )
        game.log.close()
    return dict(game.engine.roles())


def test_meeting_speech_limits_and_vote_in_log(fake_games: GameStore) -> None:
    meetings = spoken = 0
    for seed in SHARED_SEEDS:
        events = fake_games.events(seed=seed, frames="off")
        meetings += sum(isinstance(ev, MeetingEnd) for ev in events)
        speeches = [ev for ev in events if isinstance(ev, Speech) and not ev.passed]
        assert all(1 <= s.utterance <= 3 for s in speeches)
        spoken += len(speeches)
        assert log_violations(events) == []
    assert meetings and spoken, "no shared game held a meeting with a spoken line"


class Eager:
    """An impostor that strikes at the two nearest crewmates on every free-roam step."""

    def __init__(self, inner: ScriptedAgent, crew: list[str]) -> None:
        self.inner, self.crew, self.agent_id = inner, crew, inner.agent_id

    def describe(self) -> dict[str, Any]:
        return {"kind": "eager"}

    async def decide(self, obs: Observation) -> AgentDecision:
        if obs.phase != "free_roam":
            return await self.inner.decide(obs)
        living = [c for c in self.crew if c not in obs.known_dead and c in obs.roster]
        near = sorted(living, key=lambda c: math.dist(obs.roster[c].pos, obs.pos))
        # two strikes in a row: the second comes inside the cooldown of the first
        return AgentDecision(program=[{"op": "kill", "target": t} for t in near[:2]])


def test_kills_respect_cooldown_even_if_agents_try(tmp_path: Path) -> None:
    # No leash on the approach: this test is about the cooldown, not about deferring.
    config = quick(
        6,
        kill_cooldown_ticks=400,
        initial_kill_cooldown_ticks=0,
        max_steps=8,
        kill_defer_distance=500.0,
    )
    roles = game_roles(config)
    geometry = ShipGeometry(SPEC)
    crew = [a for a, r in roles.items() if r == "crewmate"]
    agents: dict[str, Any] = {a: ScriptedAgent(a, geometry, 6) for a in config.agent_ids()}
    for imp in (a for a, r in roles.items() if r == "impostor"):
        agents[imp] = Eager(agents[imp], crew)
    play(config, tmp_path, agents=agents)
    events = read_events(tmp_path / "events.jsonl")
    kills = [ev for ev in events if isinstance(ev, Kill)]
    refused = [
        ev
        for ev in events
        if isinstance(ev, ActionRejected) and ev.action == "kill" and "cooldown" in ev.reason
    ]
    assert kills and refused  # the rule was exercised both ways
    by_killer: dict[str, list[int]] = {}
    for k in kills:
        by_killer.setdefault(k.killer, []).append(k.tick)
    for ticks in by_killer.values():
        assert all(b - a >= 400 for a, b in zip(ticks, ticks[1:], strict=False))
    for r in refused:
        last = max(t for t in by_killer.get(r.agent, [-(10**9)]) if t <= r.tick)
        assert r.tick - last < 400  # refused only while the cooldown ran
    assert log_violations(events) == []


def test_bug5_victims_stop_at_the_kill_and_meetings_stop_the_step(fake_games: GameStore) -> None:
    """Bug 5: victims kept acting until the step ended, a called meeting did not stop
    the step, and rejections carried the end-of-step tick."""
    checked_kills = checked_meetings = 0
    for seed in SHARED_SEEDS:
        events = fake_games.events(seed=seed, frames="off")
        runs = [ev for ev in events if isinstance(ev, ProgramRun)]
        for kill in (ev for ev in events if isinstance(ev, Kill)):
            run = next(r for r in runs if r.step == kill.step and r.agent == kill.victim)
            # a program still running at the kill is cancelled at the kill's tick
            ended_before = run.status == "ok" and run.end_tick < kill.tick
            assert ended_before or (run.status == "cancelled" and run.end_tick == kill.tick)
            assert all(m["tick"] <= kill.tick for m in run.events)
            checked_kills += 1
        for start in (ev for ev in events if isinstance(ev, MeetingStart)):
            step_runs = [r for r in runs if r.step == start.step]
            assert step_runs and all(r.end_tick <= start.tick for r in step_runs)
            assert all(m["tick"] <= start.tick for r in step_runs for m in r.events)
            assert not any(
                isinstance(ev, TaskDone | Kill) and ev.step == start.step and ev.tick > start.tick
                for ev in events
            )
            checked_meetings += 1
        for rej in (ev for ev in events if isinstance(ev, ActionRejected)):
            step_end = max(r.end_tick for r in runs if r.step == rej.step)
            assert rej.tick <= step_end
    assert checked_kills and checked_meetings


class Slow:
    """Wraps an agent and thinks for `seconds` of wall time before every answer."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self.inner, self.seconds, self.agent_id = inner, seconds, inner.agent_id

    def describe(self) -> dict[str, Any]:
        return dict(self.inner.describe())

    async def decide(self, obs: Observation) -> AgentDecision:
        await asyncio.sleep(self.seconds)
        decision: AgentDecision = await self.inner.decide(obs)
        return decision


ENGINE_KINDS = {
    "step_start",
    "kill",
    "task_start",
    "task_done",
    "task_interrupted",
    "report",
    "emergency",
    "meeting_start",
    "speech",
    "vote",
    "meeting_end",
    "eject",
    "action_rejected",
    "positions",
    "game_end",
}


def test_decision_latency_does_not_bend_the_rule_timeline(tmp_path: Path) -> None:
    """The same scripted moves with no thinking and with a quarter second of it before
    every answer (a free-roam step's answers arrive together, each meeting turn's
    alone) give the same game: the game's clock is its ticks, never the wall's."""
    config = quick(4, max_steps=5, emergency_initial_lockout_ticks=0)
    geometry = ShipGeometry(SPEC)
    timelines = []
    for seconds in (0.0, 0.25):
        out = tmp_path / str(seconds)
        agents = {a: Slow(ScriptedAgent(a, geometry, 4), seconds) for a in config.agent_ids()}
        play(config, out, agents=agents)
        events = read_events(out / "events.jsonl")
        timelines.append(
            [ev.model_dump(exclude={"wall", "game_id"}) for ev in events if ev.kind in ENGINE_KINDS]
        )
        slow = [ev.latency_ms for ev in events if isinstance(ev, Decision)]
        assert min(slow) >= seconds * 1000
    assert timelines[0] == timelines[1]
    assert any(ev["kind"] == "task_done" for ev in timelines[0])


def test_tasks_longer_than_a_step_resume_at_the_station(tmp_path: Path) -> None:
    # 400-tick tasks with 8 s (160-tick) steps: a task needs several steps at its station.
    config = resolve_config(
        "quick",
        overrides={
            "seed": 2,
            "step_timeout_ms": 8000,
            "frames": "off",
            "rules": {"task_ticks": 400, "max_steps": 30},
        },
    )
    play(config, tmp_path)
    events = read_events(tmp_path / "events.jsonl")
    done = [ev for ev in events if ev.kind == "task_done" and not getattr(ev, "fake", True)]
    assert done
    resumed = [
        m
        for ev in events
        if ev.kind == "program"
        for m in getattr(ev, "events", [])
        if m.get("tag", "").startswith("task_resume:")
    ]
    assert resumed
    assert all(
        ev.kind != "action_rejected" or "held" not in getattr(ev, "reason", "") for ev in events
    )
    assert log_violations(events) == []


def test_paper_preset_tasks_complete(tmp_path: Path) -> None:
    config = resolve_config(
        "paper", overrides={"seed": 1, "frames": "off", "rules": {"max_steps": 30}}
    )
    play(config, tmp_path)
    events = read_events(tmp_path / "events.jsonl")
    assert any(ev.kind == "task_done" and not getattr(ev, "fake", True) for ev in events)
    assert log_violations(events) == []


def test_fake_world_conforms() -> None:
    world = FakeWorld(ShipGeometry(SPEC))
    assert world_conformance(world, ShipGeometry(SPEC)) == []


class Faulty:
    """Wraps a scripted agent and fails in a chosen way in chosen phases."""

    def __init__(self, inner: ScriptedAgent, phases: set[str], how: str) -> None:
        self.inner, self.phases, self.how, self.agent_id = inner, phases, how, inner.agent_id

    def describe(self) -> dict[str, Any]:
        return {"kind": "faulty", "how": self.how}

    async def decide(self, obs: Observation) -> AgentDecision:
        if obs.phase not in self.phases:
            return await self.inner.decide(obs)
        if self.how == "raise":
            raise ValueError("agent code bug")
        if self.how == "infrastructure":
            return AgentDecision(infrastructure="RateLimitError", invalid="429 after retries")
        if self.how == "abstain":
            return AgentDecision(abstain=True, module="VOTE")
        return AgentDecision(invalid="unparseable answer", raw="???")


_MEETING_SEED = 4
"""A seed whose quick scripted game holds a meeting."""


@pytest.fixture(scope="module")
def first_meeting_crewmate(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A crewmate (not the caller) who sits at the first meeting of the normal
    `_MEETING_SEED` game. The faulty agent behaves normally until the first meeting, so
    it sits at that meeting in the faulty game too."""
    config = quick(_MEETING_SEED, max_steps=40)
    out = tmp_path_factory.mktemp("normal")
    play(config, out)
    first = next(ev for ev in read_events(out / "events.jsonl") if isinstance(ev, MeetingStart))
    roles = game_roles(config)
    return next(a for a in first.order if roles[a] == "crewmate" and a != first.caller)


def _faulty_game(tmp_path: Path, agent: str, how: str, phases: set[str]) -> tuple[list[Any], str]:
    config = quick(_MEETING_SEED, max_steps=40)
    geometry = ShipGeometry(SPEC)
    agents: dict[str, Any] = {
        a: ScriptedAgent(a, geometry, _MEETING_SEED) for a in config.agent_ids()
    }
    agents[agent] = Faulty(agents[agent], phases, how)
    play(config, tmp_path / "faulty", agents=agents)
    return read_events(tmp_path / "faulty" / "events.jsonl"), agent


@pytest.mark.parametrize(
    ("how", "kind"), [("infrastructure", "infrastructure"), ("model", "model")]
)
def test_failed_ballots_are_abstentions_not_skips(
    tmp_path: Path, first_meeting_crewmate: str, how: str, kind: str
) -> None:
    events, agent = _faulty_game(tmp_path, first_meeting_crewmate, how, {"voting"})
    votes = [ev for ev in events if ev.kind == "vote" and ev.voter == agent]
    assert votes, "the faulty agent never voted"
    for v in votes:
        assert v.target is None and v.failed and v.error_kind == kind and v.error
    ends = [ev for ev in events if isinstance(ev, MeetingEnd)]
    assert all(agent in end.abstained for end in ends)
    assert all(sum(end.tally.values()) + len(end.abstained) <= 8 for end in ends)
    summary = json.loads((tmp_path / "faulty" / "summary.json").read_text())
    assert summary["counts"]["failed_votes"] == len(votes)


def test_deliberate_abstention_is_not_failed(tmp_path: Path, first_meeting_crewmate: str) -> None:
    events, agent = _faulty_game(tmp_path, first_meeting_crewmate, "abstain", {"voting"})
    votes = [ev for ev in events if ev.kind == "vote" and ev.voter == agent]
    assert votes and all(v.target is None and not v.failed for v in votes)


def test_failed_talk_turn_is_not_a_pass(tmp_path: Path, first_meeting_crewmate: str) -> None:
    events, agent = _faulty_game(tmp_path, first_meeting_crewmate, "model", {"meeting"})
    turns = [ev for ev in events if isinstance(ev, Speech) and ev.speaker == agent]
    assert turns and all(t.failed and not t.passed and t.error_kind == "model" for t in turns)


def test_agent_code_errors_are_harness_errors_and_flag_the_game(
    tmp_path: Path, first_meeting_crewmate: str
) -> None:
    events, agent = _faulty_game(
        tmp_path, first_meeting_crewmate, "raise", {"free_roam", "meeting", "voting"}
    )
    bad = [ev for ev in events if isinstance(ev, Decision) and ev.agent == agent]
    assert bad and all(d.error_kind == "harness" and "agent code bug" in d.error for d in bad)
    end = events[-1]
    assert isinstance(end, GameEnd) and end.status == "ok" and "harness_errors" in end.flags
    summary = json.loads((tmp_path / "faulty" / "summary.json").read_text())
    assert summary["flags"] == end.flags
    assert summary["counts"]["harness_errors"] == len(bad)
    assert summary["counts"]["invalid_decisions"] == 0  # not a model error


class Narrating:
    """Wraps a scripted agent and reports a state-view text on each decision."""

    def __init__(self, inner: ScriptedAgent) -> None:
        self.inner, self.agent_id = inner, inner.agent_id
        self.seen: list[Observation] = []

    def describe(self) -> dict[str, Any]:
        return {"kind": "narrating"}

    async def decide(self, obs: Observation) -> AgentDecision:
        self.seen.append(obs)
        d = await self.inner.decide(obs)
        return replace(d, view_text=f"view of {obs.agent} at step {obs.step}")


def test_log_v2_answers_the_measurement_questions(tmp_path: Path) -> None:
    config = quick(4, frames="jpg", max_steps=30)
    geometry = ShipGeometry(SPEC)
    agents = {a: Narrating(ScriptedAgent(a, geometry, 4)) for a in config.agent_ids()}
    play(config, tmp_path, agents=agents)
    events = read_events(tmp_path / "events.jsonl")
    start = events[0]
    assert isinstance(start, GameStart)
    assert start.map_spec == SPEC.model_dump(mode="json")
    canonical = json.dumps(start.map_spec, sort_keys=True, separators=(",", ":"))
    assert start.map_sha256 == hashlib.sha256(canonical.encode()).hexdigest()
    assert start.source_revision and "python" in start.versions and "world" in start.versions
    assert start.sample_interval_ticks == config.sample_interval_ticks <= 10
    # dense free-roam poses
    traces = [ev for ev in events if isinstance(ev, Trace)]
    assert traces
    for t in traces:
        assert all(b - a <= t.interval for a, b in zip(t.ticks, t.ticks[1:], strict=False))
        assert all(len(v) == len(t.ticks) for v in t.players.values())
    # visibility at each kill, at the kill's tick, field of view inside proximity
    kills = [ev for ev in events if isinstance(ev, Kill)]
    assert kills
    for k in kills:
        vis = [
            ev
            for ev in events
            if isinstance(ev, Visibility) and ev.cause == "kill" and ev.tick == k.tick
        ]
        assert len(vis) == 1 and vis[0].subject == k.killer and k.victim not in vis[0].sees
    for snap in (ev for ev in events if isinstance(ev, Visibility)):
        for a, seen in snap.sees.items():
            assert set(seen) <= set(snap.near[a])
    reports = [ev for ev in events if ev.kind == "report"]
    for r in reports:
        at = next(
            ev
            for ev in events
            if isinstance(ev, Visibility) and ev.cause == "report" and ev.tick == r.tick
        )
        assert at.subject == r.reporter and r.victim in at.bodies_near[r.reporter]
    causes = {ev.cause for ev in events if isinstance(ev, Visibility)}
    assert {"setup", "step_end", "kill", "meeting_seats"} <= causes
    assert causes & {"report", "emergency"}
    # each decision names its frame (path in the run folder and hash) and view text
    decisions = [ev for ev in events if isinstance(ev, Decision)]
    for d in decisions:
        assert d.frame is not None and d.view_text == f"view of {d.agent} at step {d.step}"
        data = (tmp_path / d.frame.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == d.frame.sha256
    observed = [o for ag in agents.values() for o in ag.seen]
    assert all(o.frame_sha256 is not None for o in observed)
    # the log refuses to be appended to
    with pytest.raises(LogExistsError):
        Game(config, SPEC, FakeWorld(geometry), agents, tmp_path)


class Shoving(FakeWorld):
    """Reports one player holding a task as pushed off its station in one pose sample."""

    shoved: tuple[str, int] | None = None

    def run_programs(self, programs: Any, timeout_ms: int, *args: Any, **kw: Any) -> Any:
        report = super().run_programs(programs, timeout_ms, *args, **kw)
        if self.shoved is not None or len(report.samples) < 3:
            return report
        for agent, outcome in sorted(report.outcomes.items()):
            tags = [m.tag or "" for m in outcome.events]
            if any(t.startswith("task_start") for t in tags) and not any(
                t.startswith("task_done") for t in tags
            ):
                sample = report.samples[-2]
                x, y, z = sample.players[agent].pos
                moved = sample.players[agent].model_copy(update={"pos": (x + 6.0, y, z)})
                players = {**sample.players, agent: moved}
                samples = list(report.samples)
                samples[-2] = sample.model_copy(update={"players": players})
                self.shoved = (agent, sample.tick)
                return report.model_copy(update={"samples": samples})
        return report


def test_a_break_seen_in_the_pose_samples_loses_the_task(tmp_path: Path) -> None:
    config = resolve_config(
        "quick",
        overrides={
            "seed": 2,
            "step_timeout_ms": 8000,
            "frames": "off",
            "rules": {"task_ticks": 400, "max_steps": 6},
        },
    )
    world = Shoving(ShipGeometry(SPEC))
    play(config, tmp_path, world=world)
    assert world.shoved is not None
    agent, tick = world.shoved
    events = read_events(tmp_path / "events.jsonl")
    lost = [
        ev
        for ev in events
        if ev.kind == "task_interrupted" and ev.agent == agent and ev.tick == tick
    ]
    assert lost and lost[0].reason == "left_station"


class WallGuarded(FakeWorld):
    """Ends one program of the second batch by the wall guard, as a loaded server would."""

    batches = 0

    def run_programs(self, programs: Any, timeout_ms: int, *args: Any, **kw: Any) -> Any:
        report = super().run_programs(programs, timeout_ms, *args, **kw)
        self.batches += 1
        if self.batches != 2 or not report.outcomes:
            return report
        agent = sorted(report.outcomes)[0]
        guarded = report.outcomes[agent].model_copy(
            update={"status": "timeout", "reason": "wall guard: 16000 ms passed at tick 90 of 160"}
        )
        return report.model_copy(update={"outcomes": {**report.outcomes, agent: guarded}})


def test_a_program_ended_by_the_wall_guard_flags_the_game(tmp_path: Path) -> None:
    config = resolve_config(
        "quick", overrides={"seed": 3, "frames": "off", "rules": {"max_steps": 4}}
    )
    play(config, tmp_path / "guarded", world=WallGuarded(ShipGeometry(SPEC)))
    end = read_events(tmp_path / "guarded" / "events.jsonl")[-1]
    assert end.kind == "game_end" and "wall_guard" in end.flags
    play(config, tmp_path / "plain", world=FakeWorld(ShipGeometry(SPEC)))
    end = read_events(tmp_path / "plain" / "events.jsonl")[-1]
    assert end.kind == "game_end" and "wall_guard" not in end.flags
