"""Talk turns spend game time, so `rules.meeting_max_ticks` ends a long meeting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.agents.base import AgentDecision
from controller.agents.scripted import ScriptedAgent
from controller.checks import log_violations
from controller.config import GameConfig, resolve_config
from controller.events import (
    Event,
    GameStart,
    MeetingEnd,
    MeetingStart,
    Speech,
    Vote,
    read_events,
)
from controller.game import Game
from controller.observation import Observation
from controller.worlds.fake import FakeWorld
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")


class Talker:
    """Presses the button at once (the caller), speaks at every turn, votes skip."""

    def __init__(self, inner: ScriptedAgent, caller: bool) -> None:
        self.inner, self.caller, self.agent_id = inner, caller, inner.agent_id

    def describe(self) -> dict[str, Any]:
        return {"kind": "talker"}

    async def decide(self, obs: Observation) -> AgentDecision:
        if obs.phase == "meeting":
            return AgentDecision(program=[{"op": "say", "text": f"{obs.agent} speaks."}])
        if obs.phase == "voting":
            return AgentDecision(vote="skip")
        if self.caller and obs.emergency_ready:
            return AgentDecision(program=[{"op": "press_button"}], module="EMERGENCY")
        return AgentDecision(program=[{"op": "wait", "ticks": 20}])


def config(**rules: Any) -> GameConfig:
    base = {
        "emergency_initial_lockout_ticks": 0,
        "initial_kill_cooldown_ticks": 100000,
        "meeting_max_ticks": 350,
        "talk_ticks_per_utterance": 100,
        "talk_ticks_per_pass": 20,
        "max_steps": 30,
    }
    return resolve_config("quick", overrides={"seed": 3, "frames": "off", "rules": base | rules})


def play_talkers(cfg: GameConfig, out: Path) -> list[Event]:
    geometry = ShipGeometry(SPEC)
    ids = cfg.agent_ids()
    agents = {a: Talker(ScriptedAgent(a, geometry, cfg.seed), a == ids[0]) for a in ids}
    Game(cfg, SPEC, FakeWorld(geometry), agents, out).run()
    return read_events(out / "events.jsonl")


def first_meeting(events: list[Event]) -> tuple[MeetingStart, list[Speech], list[Vote]]:
    start = next(e for e in events if isinstance(e, MeetingStart))
    end_i = next(i for i, e in enumerate(events) if isinstance(e, MeetingEnd))
    speeches = [e for e in events[:end_i] if isinstance(e, Speech)]
    votes = [e for e in events[:end_i] if isinstance(e, Vote)]
    return start, speeches, votes


def test_talk_time_ends_a_long_meeting(tmp_path: Path) -> None:
    events = play_talkers(config(), tmp_path / "g")
    start, speeches, votes = first_meeting(events)
    # 8 players could speak 3 times each, but 350 ticks hold four 100-tick lines
    assert [s.tick - start.tick for s in speeches] == [0, 100, 200, 300]
    assert all(s.text and not s.passed for s in speeches)
    assert votes and all(v.tick >= start.tick + 350 for v in votes)
    assert log_violations(events) == []


def test_passes_cost_less_than_lines(tmp_path: Path) -> None:
    class Quiet(Talker):
        async def decide(self, obs: Observation) -> AgentDecision:
            if obs.phase == "meeting":
                return AgentDecision(program=[])
            return await super().decide(obs)

    cfg = config(meeting_max_ticks=5000)
    geometry = ShipGeometry(SPEC)
    ids = cfg.agent_ids()
    agents = {a: Quiet(ScriptedAgent(a, geometry, cfg.seed), a == ids[0]) for a in ids}
    Game(cfg, SPEC, FakeWorld(geometry), agents, tmp_path / "q").run()
    events = read_events(tmp_path / "q" / "events.jsonl")
    start, speeches, votes = first_meeting(events)
    # a silent round ends talk: eight passes of 20 ticks each
    assert len(speeches) == 8 and all(s.passed for s in speeches)
    assert [s.tick - start.tick for s in speeches] == [20 * i for i in range(8)]
    assert votes[0].tick == start.tick + 160
    assert log_violations(events) == []


def _replace(events: list[Event], old: Event, new: Event) -> list[Event]:
    return [new if e is old else e for e in events]


def test_logcheck_catches_free_talk_and_talk_past_its_time(tmp_path: Path) -> None:
    events = play_talkers(config(), tmp_path / "g")
    start, speeches, votes = first_meeting(events)
    # a turn that spent no time
    free = _replace(events, speeches[1], speeches[1].model_copy(update={"tick": start.tick}))
    assert any("costs 100 ticks of talk time" in v for v in log_violations(free))
    # a line at the very tick talk time runs out
    late = _replace(events, speeches[3], speeches[3].model_copy(update={"tick": start.tick + 350}))
    assert any("after meeting 1's talk time" in v for v in log_violations(late))
    # the record claims more talk time than was used: the vote came early
    g = next(e for e in events if isinstance(e, GameStart))
    rules = dict(g.config["rules"], meeting_max_ticks=5000)
    longer = _replace(events, g, g.model_copy(update={"config": {**g.config, "rules": rules}}))
    assert any("votes while talk time remains" in v for v in log_violations(longer))


def test_logs_without_talk_costs_are_judged_as_free_talk(tmp_path: Path) -> None:
    events = play_talkers(config(), tmp_path / "g")
    g = next(e for e in events if isinstance(e, GameStart))
    rules = {
        k: v
        for k, v in g.config["rules"].items()
        if k not in ("talk_ticks_per_utterance", "talk_ticks_per_pass")
    }
    old = _replace(events, g, g.model_copy(update={"config": {**g.config, "rules": rules}}))
    assert log_violations(old) == []
