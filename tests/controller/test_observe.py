"""The observation fields: field of view vs 360 degrees, memory, meetings, own actions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.agents.base import AgentDecision
from controller.agents.scripted import ScriptedAgent
from controller.config import resolve_config
from controller.events import MeetingStart, StepStart, Visibility, read_events
from controller.game import Game
from controller.observation import Observation
from controller.worlds.fake import FakeWorld
from world.geometry import ShipGeometry
from world.spec import load_map

SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)


class Keep:
    """Records every observation of a scripted agent."""

    def __init__(self, inner: ScriptedAgent) -> None:
        self.inner, self.agent_id = inner, inner.agent_id
        self.seen: list[Observation] = []

    def describe(self) -> dict[str, Any]:
        return {"kind": "keep"}

    async def decide(self, obs: Observation) -> AgentDecision:
        self.seen.append(obs)
        return await self.inner.decide(obs)


def game(tmp_path: Path, seed: int = 4) -> tuple[dict[str, Keep], list[Any]]:
    config = resolve_config("quick", overrides={"seed": seed, "frames": "off"})
    agents = {a: Keep(ScriptedAgent(a, GEOMETRY, seed)) for a in config.agent_ids()}
    Game(config, SPEC, FakeWorld(GEOMETRY), agents, tmp_path).run()
    return agents, read_events(tmp_path / "events.jsonl")


def test_observation_fields_follow_the_log(tmp_path: Path) -> None:
    agents, events = game(tmp_path)
    phases = {ev.step: ev.phase for ev in events if isinstance(ev, StepStart)}
    phases[0] = "free_roam"
    meetings = [ev for ev in events if isinstance(ev, MeetingStart)]
    assert meetings
    vis_before: dict[int, Visibility] = {}
    for ev in events:
        if isinstance(ev, Visibility) and ev.cause in ("step_end", "setup", "meeting_seats"):
            vis_before[ev.step] = ev
    saw_progress = saw_moved = saw_past = saw_meeting = False
    for keep in agents.values():
        for obs in keep.seen:
            # field of view inside 360 degrees; neither names the player itself
            assert set(obs.visible_players) <= set(obs.nearby_players)
            assert obs.agent not in obs.nearby_players
            assert set(obs.roster) == set(obs.players) - {obs.agent}
            # last seen only from free-roam steps, never from the meeting table
            for s in obs.last_seen.values():
                assert phases[s.step] == "free_roam" and s.step <= obs.step
            if obs.task_progress is not None:
                saw_progress = True
                assert obs.task_progress.station == obs.scoreboard.task_in_progress
                assert 0 <= obs.task_progress.ticks_done < obs.task_progress.ticks_needed
            saw_moved |= any(a.kind == "moved" and ">" in a.detail for a in obs.own_actions)
            if obs.past_meetings:
                saw_past = True
                assert obs.past_meetings[0].index == 1
            if obs.meeting is not None:
                saw_meeting = True
                m = meetings[obs.meeting.index - 1]
                assert set(m.dead) <= set(obs.known_dead)
                assert obs.meeting_chat and obs.meeting_chat[0].kind == "server"
                assert all(c.index >= obs.meeting_chat[0].index for c in obs.meeting_chat)
                if m.victim is not None:
                    assert m.victim in obs.dead_bodies_rooms
    assert saw_moved and saw_past and saw_meeting
    assert saw_progress or any(ev.kind == "task_start" for ev in events)


def test_own_actions_since_the_previous_observation(tmp_path: Path) -> None:
    agents, events = game(tmp_path)
    for keep in agents.values():
        done = [a for obs in keep.seen for a in obs.own_actions if a.kind == "task_done"]
        logged = [ev for ev in events if ev.kind == "task_done" and ev.agent == keep.agent_id]
        seen_last = keep.seen[-1].step if keep.seen else 0
        assert len(done) == len([ev for ev in logged if ev.step < seen_last])
        ended = [a for obs in keep.seen for a in obs.own_actions if a.kind == "program_ended"]
        assert all(
            a.detail.split(":")[0] in {"ok", "timeout", "failed", "cancelled"} for a in ended
        )
