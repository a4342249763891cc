"""`log_violations` under the reference's rules (`ghost_tasks`, `talk: turns`,
`impostors_may_skip: false`, `roles: fixed`): a log the engine writes under them is
clean, and a planted fault of each is caught.

The logs are written by driving the engine itself on the skeld map, step by step, as
the game loop does (a `step_start` per step, talk turns spending their ticks), without
a world: every check that needs the world's record (traces, programs) has nothing to
judge, and the rules are all that is checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.cli import play_game
from controller.config import resolve_config
from controller.engine import SKIP, Engine
from controller.events import (
    Decision,
    Event,
    EventBase,
    GameStart,
    MeetingEnd,
    Speech,
    StepStart,
    TaskDone,
    Vote,
    read_events,
)
from controller.logcheck import derive_ending, log_violations
from controller.players import declared_sides
from world.geometry import ShipGeometry
from world.spec import load_map

GEOMETRY = ShipGeometry(load_map("skeld"))


class Scene:
    """A game on the engine, its events logged as the game loop logs them."""

    def __init__(self, **rules: Any) -> None:
        base = {
            "initial_kill_cooldown_ticks": 0,
            "kill_cooldown_ticks": 0,
            "tasks_per_crewmate": 1,
        }
        config = resolve_config("quick", overrides={"seed": 5, "rules": base | rules})
        self.rules = config.rules
        self.e = Engine(
            config.rules,
            config.agent_ids(),
            config.seed,
            stations={s: GEOMETRY.station_pos(s) for s in GEOMETRY.station_ids()},
            button=GEOMETRY.button_pos(),
            room_at=GEOMETRY.room_at,
        )
        self.events: list[EventBase] = [
            GameStart(
                seed=config.seed,
                agents=config.agent_ids(),
                roles=self.e.roles(),
                tasks={a: list(p.tasks) for a, p in self.e.players.items()},
                map="skeld",
                preset="quick",
                config=config.model_dump(mode="json"),
                sides=declared_sides(config),
                names=config.player_names(),
                step=0,
                tick=0,
            )
        ]

    @property
    def crew(self) -> list[str]:
        return [a for a in self.e.possible_agents if self.e.players[a].role == "crewmate"]

    def step(self, phase: str = "free_roam", speaker: str | None = None) -> None:
        self.e.begin_step()
        self.events.append(
            StepStart(phase=phase, speaker=speaker, step=self.e.step, tick=self.e.tick)  # type: ignore[arg-type]
        )

    def add(self, events: list[EventBase]) -> None:
        assert not any(ev.kind == "action_rejected" for ev in events if ev.kind != "vote"), events
        self.events += events

    def kill(self, killer: str, victim: str, tick: int) -> None:
        at = GEOMETRY.station_pos(0)
        self.add(self.e.kill(killer, victim, tick, (at[0] + 1.0, at[1], at[2]), at))

    def task(self, agent: str, tick: int) -> None:
        station = self.e.players[agent].tasks[0]
        pos = GEOMETRY.station_pos(station)
        self.add(self.e.start_task(agent, station, tick, pos))
        self.add(self.e.finish_task(agent, station, tick + self.rules.task_ticks, pos))

    def talk(self, lines: dict[tuple[str, int], str]) -> None:
        """Every talk turn, as the meeting runs them: `lines[(speaker, turn)]` or a pass."""
        taken: dict[str, int] = {}
        while (speaker := self.e.advance()) is not None:
            self.step("meeting", speaker)
            turn = taken.get(speaker, 0)
            taken[speaker] = turn + 1
            text = lines.get((speaker, turn), "")
            self.add(self.e.speak(speaker, text, self.e.tick))
            cost = self.rules.talk_ticks_per_utterance if text else self.rules.talk_ticks_per_pass
            self.e.set_tick(self.e.tick + cost)

    def vote(self, ballots: dict[str, str | None]) -> None:
        self.step("voting")
        self.events += self.e.cast_votes(ballots, self.e.tick)

    def end(self) -> list[Event]:
        ending = self.e.check_end()
        self.events.append(self.e.end_event() if ending else self.e.end_event("invalid", "cut"))
        return self.events  # type: ignore[return-value]


def with_rules(log: list[Event], **rules: Any) -> list[Event]:
    """The log with `game_start.config.rules` changed."""
    start = log[0]
    assert isinstance(start, GameStart)
    config = {**start.config, "rules": {**start.config["rules"], **rules}}
    return [start.model_copy(update={"config": config}), *log[1:]]


def replace(log: list[Event], old: Event, new: Event) -> list[Event]:
    return [new if ev is old else ev for ev in log]


def caught(violations: list[str], *parts: str) -> None:
    assert any(all(p in v for p in parts) for v in violations), violations


# ------------------------------------------------------------------ ghost tasks
def ghost_game() -> tuple[list[Event], str]:
    """A kill, the living crew's tasks, then the ghost's last task ends the game."""
    s = Scene(ghost_tasks=True)
    killer = s.e.impostors()[0]
    ghost = s.crew[0]
    s.step()
    s.kill(killer, ghost, 100)
    s.step()
    for c in s.crew[1:]:
        s.task(c, 200)
    assert s.e.check_end() is None
    s.step()
    s.events.append(Decision(agent=ghost, phase="free_roam", step=s.e.step, tick=s.e.tick))
    s.task(ghost, 400)
    return s.end(), ghost


def test_a_ghost_task_game_is_clean_and_ends_on_the_ghosts_task() -> None:
    log, ghost = ghost_game()
    assert log_violations(log) == []
    last = next(ev for ev in reversed(log) if isinstance(ev, TaskDone))
    assert last.agent == ghost
    start = log[0]
    assert isinstance(start, GameStart)
    derived = derive_ending(start, log)
    assert derived is not None and (derived.ending, derived.tick) == ("tasks_done", last.tick)


def test_a_ghosts_task_under_ghost_tasks_off_is_caught() -> None:
    log, ghost = ghost_game()
    faults = log_violations(with_rules(log, ghost_tasks=False))
    caught(faults, f"{ghost} is dead but acts (task_done")
    caught(faults, "the game went on")  # without ghosts the living crew's tasks end it


def test_an_ending_that_skips_the_ghosts_tasks_is_caught() -> None:
    log, ghost = ghost_game()
    short = [ev for ev in log if not (isinstance(ev, TaskDone) and ev.agent == ghost)]
    caught(log_violations(short), "the game ends crew/tasks_done; the log gives None")


def test_a_ghost_deciding_in_a_meeting_is_caught() -> None:
    log, ghost = ghost_game()
    planted = Decision(agent=ghost, phase="voting", step=3, tick=log[-1].tick)
    caught(log_violations([*log[:-1], planted, log[-1]]), f"{ghost} is dead but acts (decision")


# ------------------------------------------------------------------ a meeting by the reference
def meeting_game(talk: str = "turns") -> tuple[list[Event], Scene]:
    """red kills blue; green reports; a silent first round, one line in the second;
    everyone votes skip (the impostors' skips go to the fallback)."""
    s = Scene(
        talk=talk,
        max_utterances=2,
        impostors_may_skip=False,
        roles="fixed",
        fixed_impostors=["red", "pink"],
        confirm_ejects=True,
    )
    s.step()
    s.kill("red", "blue", 100)
    body = s.e.bodies["blue"].pos
    s.add(s.e.report("green", "blue", 110, body))
    s.talk({("green", 1): "Blue's body was by the reactor."})
    s.vote(dict.fromkeys(s.e.agents, SKIP))
    return s.end(), s


def test_a_reference_meeting_is_clean() -> None:
    log, s = meeting_game()
    assert log_violations(log) == []
    speeches = [ev for ev in log if isinstance(ev, Speech)]
    assert len(speeches) == 2 * len(s.e.agents)  # a silent round ended nothing
    votes = {ev.voter: ev for ev in log if isinstance(ev, Vote)}
    assert votes["red"].target == "green" and votes["red"].replaced
    assert log[0].names["red"] == "Red"  # type: ignore[union-attr]


def test_the_same_talk_under_open_rules_is_caught() -> None:
    log, _ = meeting_game()
    caught(log_violations(with_rules(log, talk="open")), "speaks after meeting 1's talk was over")


def test_a_fourth_turn_under_turns_is_caught() -> None:
    log, s = meeting_game()
    last = max((i for i, ev in enumerate(log) if isinstance(ev, Speech)))
    extra = log[last].model_copy(update={"tick": log[last].tick + s.rules.talk_ticks_per_pass})
    faults = log_violations([*log[: last + 1], extra, *log[last + 1 :]])
    caught(faults, "takes 3 talk turns in meeting 1", "max_utterances=2")


def test_a_vote_after_a_silent_round_under_turns_is_caught() -> None:
    log, s = meeting_game()
    n = len(s.e.agents)
    speeches = [i for i, ev in enumerate(log) if isinstance(ev, Speech)]
    cut = set(speeches[n:]) | {i - 1 for i in speeches[n:]}  # the second round and its steps
    short = [ev for i, ev in enumerate(log) if i not in cut]
    assert all(isinstance(log[i], Speech | StepStart) for i in cut)
    caught(log_violations(short), "votes while talk time remains")
    assert log_violations(with_rules(short, talk="open")) == []  # open talk ends there


def test_an_impostors_skip_counted_is_caught() -> None:
    log, _ = meeting_game()
    vote = next(ev for ev in log if isinstance(ev, Vote) and ev.voter == "red")
    end = next(ev for ev in log if isinstance(ev, MeetingEnd))
    tally = dict(end.tally)
    tally["green"] -= 1
    tally[SKIP] += 1
    planted = replace(log, vote, vote.model_copy(update={"target": SKIP, "replaced": ""}))
    planted = replace(planted, end, end.model_copy(update={"tally": tally}))
    caught(log_violations(planted), "red, an impostor, votes skip")
    # were impostors allowed to skip, red's skip would be right (pink's replacement not)
    allowed = log_violations(with_rules(planted, impostors_may_skip=True))
    assert allowed and not any("red" in v for v in allowed)


def test_a_replaced_ballot_given_to_the_wrong_player_is_caught() -> None:
    log, _ = meeting_game()
    vote = next(ev for ev in log if isinstance(ev, Vote) and ev.voter == "red")
    end = next(ev for ev in log if isinstance(ev, MeetingEnd))
    tally = dict(end.tally)
    tally["green"] -= 1
    tally["orange"] = 1
    planted = replace(log, vote, vote.model_copy(update={"target": "orange"}))
    planted = replace(planted, end, end.model_copy(update={"tally": tally}))
    caught(log_violations(planted), "red's refused skip in meeting 1 goes to orange", "is green")


def test_a_replaced_ballot_when_impostors_may_skip_is_caught() -> None:
    log, _ = meeting_game()
    caught(log_violations(with_rules(log, impostors_may_skip=True)), "red's ballot", "replaced")


def test_fixed_seats_other_than_the_rules_are_caught() -> None:
    log, _ = meeting_game()
    start = log[0]
    assert isinstance(start, GameStart)
    roles = dict(start.roles) | {"pink": "crewmate", "orange": "impostor"}
    planted = [start.model_copy(update={"roles": roles}), *log[1:]]
    caught(log_violations(planted), "rules.roles is fixed")


# ------------------------------------------------------------------ played games
REFERENCE_RULES = {
    "ghost_tasks": True,
    "talk": "turns",
    "impostors_may_skip": False,
    "roles": "fixed",
    "confirm_ejects": True,
}


def test_fake_world_games_under_the_reference_rules_are_clean(tmp_path: Path) -> None:
    impostor_ballots = 0
    games = [("paper", seed, {}) for seed in (1, 2)]
    games += [("quick", seed, REFERENCE_RULES) for seed in (1, 3)]
    for preset, seed, rules in games:
        config = resolve_config(preset, overrides={"seed": seed, "frames": "off", "rules": rules})
        out = tmp_path / f"{preset}{seed}"
        play_game(config, load_map("skeld"), "fake", out)
        log = read_events(out / "events.jsonl")
        assert log_violations(log) == [], (preset, seed)
        start = log[0]
        assert isinstance(start, GameStart) and start.names == config.player_names()
        assert sorted(a for a, r in start.roles.items() if r == "impostor") == ["pink", "red"]
        # the scripted impostors are handed the rules and never skip where they may not,
        # so the rules never have to replace a ballot (the rules' own refusal is tested
        # on the engine, and a planted counted skip above)
        votes = [ev for ev in log if isinstance(ev, Vote) and start.roles[ev.voter] == "impostor"]
        impostor_ballots += len(votes)
        assert not [v for v in votes if v.target == "skip" or v.replaced], (preset, seed)
    assert impostor_ballots  # impostors voted under the rule
