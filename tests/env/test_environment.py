"""The environment's behaviour on the fake world: random masked games, invalid actions,
the meeting's speaker, deaths, rewards, render, reset, close, sides and the facade."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

import mineamongus
from controller.checks import log_violations, view_leaks
from controller.events import Decision, Kill, Positions, ProgramRun, read_events
from controller.observation import Observation
from harness_aria.modules import MODULES as ARIA_MODULES
from mineamongus.environment import MineAmongUsEnv, RewardContext
from mineamongus.policies import random_action
from mineamongus.spaces import MODULES

Step = tuple[
    dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]
]


def _fake(**kwargs: Any) -> MineAmongUsEnv:
    kwargs.setdefault("frames", "off")
    return MineAmongUsEnv(world="fake", **kwargs)


def _play_random(
    env: MineAmongUsEnv, seed: int, until: Callable[[Step], bool] | None = None
) -> tuple[list[Step], dict[str, list[Observation]]]:
    """Random masked actions from reset to the end (or until `until` holds)."""
    obs, infos = env.reset(seed=seed)
    for a in env.action_spaces:
        env.action_space(a).seed(seed)
    seen: dict[str, list[Observation]] = {}
    steps: list[Step] = []
    while env.agents:
        for a in env.acting:
            seen.setdefault(a, []).append(env.last_observation(a))
        result = env.step({a: random_action(env, a, infos[a]) for a in env.agents})
        steps.append(result)
        infos = result[4]
        if until is not None and until(result):
            break
    return steps, seen


def _unexplained(
    leaks: list[str], seen: dict[str, list[Observation]], events: list[Any]
) -> list[str]:
    """The leaks `view_leaks` finds that its known blind spot does not explain.

    `view_leaks` takes a tick's poses from the last `positions` snapshot of that tick.
    On the fake world a free-roam batch of instant programs (a look behind, a walk to
    the room one stands in) ends at the tick it began, right after the vote: the vote's
    pose (what the seat saw when it decided) and the turned pose then share a tick,
    and the checker judges the decision (and the sighting it remembers from it) by the
    turned one. Such a leak is explained when the seat's snapshots at that
    observation's tick disagree.
    """
    ticks = {(a, o.step): o.tick for a, obs in seen.items() for o in obs}
    out = []
    for leak in leaks:
        match = re.match(r"(\w+) \(ego(?:, sent)?\) step (\d+):", leak)
        if match is None:
            out.append(leak)
            continue
        agent, step = match.group(1), int(match.group(2))
        remembered = re.search(r"remembers \w+ at step (\d+)", leak)
        if remembered is not None:  # judged at the sighting's tick
            step = int(remembered.group(1))
        tick = ticks.get((agent, step))
        poses = {
            (e.players[agent].pos, e.players[agent].yaw)
            for e in events
            if isinstance(e, Positions) and e.tick == tick and agent in e.players
        }
        if len(poses) < 2:
            out.append(leak)
    return out


def test_module_order_is_the_harness_order() -> None:
    assert list(MODULES) == list(ARIA_MODULES)


def test_a_random_masked_game_runs_to_its_end_and_its_record_passes_the_audit() -> None:
    env = _fake(max_steps=80, render_mode="rgb_array")
    try:
        steps, seen = _play_random(env, seed=11)
        result = env.result
        assert result is not None and result.status == "ok"
        assert env.agents == []
        _obs, rewards, terms, truncs, infos = steps[-1]
        ended = {a for a in terms if terms[a] or truncs[a]}
        assert ended == set(terms)
        if result.ending == "timeout":
            assert all(truncs.values()) or any(terms.values())
        for a, r in rewards.items():
            assert r in (1.0, -1.0)
            assert infos[a]["winner"] == result.winner
        assert env.run_dir is not None
        events = read_events(env.run_dir / "events.jsonl")
        assert log_violations(events) == []
        leaks, checked = view_leaks(seen, events, env.geometry)
        assert checked > 0
        assert _unexplained(leaks, seen, events) == []
        # Every decision is a `decision` event of the seat's own, with its view text.
        decisions = [e for e in events if isinstance(e, Decision)]
        assert len(decisions) == sum(len(v) for v in seen.values())
        assert all(d.spec == {"state": "ego"} and d.view_text for d in decisions)
        picture = env.render()
        assert picture is not None and picture.dtype == np.uint8 and picture.shape[2] == 3
    finally:
        env.close()


def test_reset_with_a_seed_is_deterministic() -> None:
    a, b = _fake(max_steps=40), _fake(max_steps=40)
    try:
        steps_a, _ = _play_random(a, seed=5)
        steps_b, _ = _play_random(b, seed=5)
        assert len(steps_a) == len(steps_b)
        assert all(data_equivalence(x, y) for x, y in zip(steps_a, steps_b, strict=True))
        first_a, _ = a.reset(seed=5)
        first_b, _ = b.reset(seed=6)
        assert a.seed == 5 and b.seed == 6
        roles_a = {s: int(o["role"]) for s, o in first_a.items()}
        again, _ = a.reset(seed=5)
        assert {s: int(o["role"]) for s, o in again.items()} == roles_a
    finally:
        a.close()
        b.close()


def test_reset_without_a_seed_follows_the_last_seed() -> None:
    a, b = _fake(), _fake()
    try:
        a.reset(seed=9)
        b.reset(seed=9)
        a.reset()
        b.reset()
        assert a.seed == b.seed and a.seed != 9
    finally:
        a.close()
        b.close()


def _seat_of(obs: dict[str, Any], role: int) -> str:
    return next(s for s, o in obs.items() if int(o["role"]) == role)


def test_invalid_actions_are_rules_failures_never_replaced(tmp_path: Path) -> None:
    env = _fake(out=tmp_path)
    try:
        obs, _ = env.reset(seed=3)
        crew = _seat_of(obs, 0)
        victim = next(s for s in env.agents if s != crew)
        actions: dict[str, Any] = {a: {"module": "SURVEILLANCE"} for a in env.agents}
        actions[crew] = {"module": 0, "target": env.possible_agents.index(victim)}  # KILL
        others = [a for a in env.agents if a != crew]
        actions[others[0]] = {"module": "VOTE", "vote": 0}  # no vote in free roam
        actions[others[1]] = {"module": 42}
        actions[others[2]] = {"module": "MOVE", "room": 99}
        actions[others[3]] = {"module": "MOVE", "room": "Electrical"}  # by name
        env.step(actions)
        assert env.run_dir is not None
        events = read_events(env.run_dir / "events.jsonl")
        by_seat = {e.agent: e for e in events if isinstance(e, Decision) and e.step == 1}
        kill = by_seat[crew]
        assert (kill.module, kill.valid, kill.error_kind) == ("KILL", False, "rules")
        assert "only impostors kill" in kill.error
        assert kill.program == [{"op": "kill", "target": victim}]
        for seat in others[:3]:
            assert (by_seat[seat].valid, by_seat[seat].error_kind) == (False, "rules")
        moved = by_seat[others[3]]
        assert moved.valid and moved.program == [{"op": "go_to", "room": "electrical"}]
        ran = {e.agent for e in events if isinstance(e, ProgramRun) and e.step == 1}
        assert crew not in ran and not ran & set(others[:3])  # they stood still
        assert others[3] in ran
    finally:
        env.close()


def test_a_missing_action_of_an_asked_seat_plays_nothing() -> None:
    env = _fake()
    try:
        env.reset(seed=1)
        with pytest.raises(ValueError, match="no action for"):
            env.step({})
        assert env.acting == env.agents  # still waiting for the same step
    finally:
        env.close()


def test_meeting_talk_steps_ask_the_speaker_only(tmp_path: Path) -> None:
    env = _fake(out=tmp_path)
    try:

        def in_meeting(step: Step) -> bool:
            return any(i["phase"] == "meeting" for i in step[4].values())

        steps, _ = _play_random(env, seed=3, until=in_meeting)
        assert env.agents, "the game should call a meeting before it ends"
        infos = steps[-1][4]
        acting = [a for a in env.agents if infos[a]["acting"]]
        assert acting == env.acting and len(acting) == 1
        speaker = acting[0]
        for a in env.agents:
            if a != speaker:
                assert not infos[a]["action_mask"]["module"].any()
        step = env.last_observation(speaker).step
        env.step({a: {"module": "MEETING", "text": f"I am {a}"} for a in env.agents})
        assert env.run_dir is not None
        events = read_events(env.run_dir / "events.jsonl")
        asked = [e.agent for e in events if isinstance(e, Decision) and e.step == step]
        assert asked == [speaker]
        said = [e for e in events if e.kind == "speech" and e.step == step]
        assert [(e.speaker, e.text) for e in said] == [(speaker, f"I am {speaker}")]
    finally:
        env.close()


def test_the_dead_leave_agents_terminated() -> None:
    env = _fake(max_steps=120)
    try:
        steps, _ = _play_random(env, seed=11)
        assert env.run_dir is not None
        events = read_events(env.run_dir / "events.jsonl")
        killed = {e.victim for e in events if isinstance(e, Kill)}
        assert killed, "random impostors should kill someone in this seed"
        left: set[str] = set()
        for obs, _rewards, terms, truncs, _infos in steps[:-1]:
            assert not left & set(terms), "a seat that left is still stepped"
            for a, done in terms.items():
                if done:
                    left.add(a)
                    assert not truncs[a]
                    assert int(obs[a]["scoreboard"]["dead"]) == 1
        final = steps[-1][0]
        assert all(int(o["phase"]) == 3 for o in final.values())  # `over`
        assert killed <= left | set(final)
    finally:
        env.close()


def test_the_reward_function_hook_sees_every_seat_every_step() -> None:
    calls: list[RewardContext] = []

    def kills(ctx: RewardContext) -> float:
        calls.append(ctx)
        return float(sum(isinstance(e, Kill) and e.killer == ctx.agent for e in ctx.events))

    env = _fake(max_steps=60, reward_fn=kills)
    try:
        steps, _ = _play_random(env, seed=11)
        assert len(calls) == sum(len(r) for _o, r, *_ in steps)
        assert calls[-1].over and not calls[0].over
        total = sum(sum(r.values()) for _o, r, *_ in steps)
        assert env.run_dir is not None
        events = read_events(env.run_dir / "events.jsonl")
        assert total == sum(isinstance(e, Kill) for e in events)
    finally:
        env.close()


def test_frames_and_the_ego_mask() -> None:
    env = MineAmongUsEnv(world="fake", frames="jpg")
    try:
        obs, infos = env.reset(seed=4)
        for a in env.agents:
            assert env.observation_space(a).contains(obs[a])
            assert obs[a]["frame"].shape == (360, 640, 3) and obs[a]["frame"].any()
            known = env.known_observation(a)
            mask = infos[a]["action_mask"]
            seats = env.possible_agents
            assert {seats[i] for i in np.flatnonzero(mask["target"])} <= set(known.visible_players)
            assert bool(mask["module"][MODULES.index("REPORT")]) == bool(known.visible_bodies)
            assert not mask["module"][MODULES.index("VOTE")]
            assert not mask["module"][MODULES.index("MEETING")]
    finally:
        env.close()


def test_close_mid_game_records_an_invalid_game(tmp_path: Path) -> None:
    env = _fake(out=tmp_path)
    env.reset(seed=1)
    folder = env.run_dir
    env.close()
    env.close()  # idempotent
    assert folder is not None
    end = read_events(folder / "events.jsonl")[-1]
    assert end.kind == "game_end" and end.status == "invalid"
    assert "environment_reset" in end.reason
    with pytest.raises(RuntimeError):
        env.reset()


def test_a_temporary_records_folder_goes_with_close() -> None:
    env = _fake()
    env.reset(seed=1)
    assert env.run_dir is not None and env.run_dir.exists()
    root = env.root
    env.close()
    assert not root.exists()


def test_render_without_a_game_and_without_a_mode() -> None:
    env = _fake(render_mode="rgb_array")
    try:
        picture = env.render()
        assert picture is not None and picture.ndim == 3
    finally:
        env.close()
    plain = _fake()
    with pytest.warns(UserWarning):
        assert plain.render() is None
    plain.close()


def test_the_environment_can_play_one_side_only() -> None:
    env = _fake(sides=("impostor",), max_steps=60)
    try:
        obs, _ = env.reset(seed=6)
        assert len(env.agents) == 2 and all(int(o["role"]) == 1 for o in obs.values())
        impostors = set(env.agents)
        infos = env.reset(seed=6)[1]
        while env.agents:
            infos = env.step({a: random_action(env, a, infos[a]) for a in env.agents})[4]
        assert env.run_dir is not None
        events = read_events(env.run_dir / "events.jsonl")
        start = events[0]
        assert start.kind == "game_start"
        kinds = {a: spec["kind"] for a, spec in start.agent_specs.items()}
        assert {a for a, k in kinds.items() if k == "env"} == impostors
        assert {k for a, k in kinds.items() if a not in impostors} == {"scripted"}
        assert log_violations(events) == []
    finally:
        env.close()


def test_the_aec_form_plays_seat_by_seat() -> None:
    aec = mineamongus.env(world="fake", frames="off", max_steps=10)
    try:
        aec.reset(seed=3)
        for agent in aec.agent_iter():
            _obs, _reward, term, trunc, info = aec.last()
            action = None if term or trunc else random_action(aec, agent, info)
            aec.step(action)
        assert aec.agents == []
        assert aec.unwrapped.result is not None
    finally:
        aec.close()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="render_mode"):
        _fake(render_mode="human")
    with pytest.raises(ValueError, match="state"):
        _fake(state="all")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sides"):
        _fake(sides=("ghosts",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="world"):
        MineAmongUsEnv(world="moon")  # type: ignore[arg-type]


def test_a_crewmate_ghost_keeps_deciding_until_the_end() -> None:
    """Under `rules.ghost_tasks` a killed crewmate is not terminated: it stays in
    `agents` and is asked in free roam (its tasks still count), never in a meeting."""
    env = _fake(max_steps=120, rules={"ghost_tasks": True, "initial_kill_cooldown_ticks": 0})
    try:
        steps, _ = _play_random(env, seed=11)
        assert env.run_dir is not None
        events = read_events(env.run_dir / "events.jsonl")
        roles = next(e for e in events if e.kind == "game_start").roles
        killed = [e.victim for e in events if isinstance(e, Kill)]
        assert killed, "random impostors should kill someone in this seed"
        ghost = killed[0]
        assert roles[ghost] == "crewmate"
        asked_after = [
            e.step
            for e in events
            if isinstance(e, Decision)
            and e.agent == ghost
            and e.step > next(k.step for k in events if isinstance(k, Kill))
        ]
        assert asked_after, "the ghost was not asked after its death"
        assert all(not terms.get(ghost) for _o, _r, terms, _t, _i in steps[:-1])
        phases = {e.step: e.phase for e in events if e.kind == "step_start"}
        assert all(phases[s] == "free_roam" for s in asked_after)
    finally:
        env.close()
