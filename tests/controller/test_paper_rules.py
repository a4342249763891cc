"""The reference's rules as settings: fixed impostor seats, the talk protocol of fixed
turns, no skip for impostors, the `paper` preset that sets them, and player names."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from controller.config import ConfigError, RulesConfig, resolve_config
from controller.engine import SKIP, Engine
from controller.events import ActionRejected, MeetingEnd, Speech, Vote

AGENTS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
STATIONS = {i: (float(i * 10), 65.0, 0.0) for i in range(20)}
BUTTON = (0.0, 65.0, 50.0)


def make(seed: int = 7, agents: list[str] = AGENTS, **rules: object) -> Engine:
    base: dict[str, object] = dict(
        kill_cooldown_ticks=0,
        initial_kill_cooldown_ticks=0,
        emergency_initial_lockout_ticks=0,
        emergency_lockout_after_meeting_ticks=0,
        emergency_per_player=3,
        meeting_max_ticks=1000,
        max_utterances=3,
        max_steps=50,
    )
    base.update(rules)
    return Engine(
        RulesConfig.model_validate(base),
        agents,
        seed=seed,
        stations=STATIONS,
        button=BUTTON,
        room_at=lambda p: "hall",
    )


def meeting(e: Engine, tick: int = 10) -> list[str]:
    caller = next(a for a in e.agents if e.players[a].role == "crewmate")
    e.emergency(caller, tick, BUTTON)
    assert e.meeting is not None
    return e.meeting.order


# ------------------------------------------------------------------ fixed seats
def test_fixed_roles_seat_the_same_impostors_whatever_the_seed() -> None:
    tasks = set()
    for seed in range(6):
        e = make(seed=seed, roles="fixed", fixed_impostors=("red", "pink"))
        assert e.impostors() == ["red", "pink"]
        tasks.add(tuple(e.players["blue"].tasks))
    assert len(tasks) > 1  # the tasks are still drawn from the seed
    seeded = {tuple(make(seed=seed).impostors()) for seed in range(6)}
    assert len(seeded) > 1


def test_fixed_impostors_must_be_seats_and_as_many_as_the_rules_say() -> None:
    with pytest.raises(ValueError, match=r"rules\.fixed_impostors.*purple"):
        make(roles="fixed", fixed_impostors=("red", "purple"))
    with pytest.raises(ValidationError, match=r"rules\.fixed_impostors.*n_impostors=2"):
        RulesConfig(roles="fixed", fixed_impostors=("red",))
    with pytest.raises(ValidationError, match=r"rules\.fixed_impostors"):
        RulesConfig(roles="fixed", fixed_impostors=("red", "red"))
    RulesConfig(fixed_impostors=("red",))  # unused while roles are seeded
    with pytest.raises(ConfigError, match=r"rules\.fixed_impostors.*'white'.*rules.roles: seeded"):
        resolve_config(
            "quick",
            overrides={
                "rules": {"n_players": 5, "roles": "fixed", "fixed_impostors": ["red", "white"]}
            },
        )


# ------------------------------------------------------------------ talk: turns
def talk(e: Engine, line: dict[str, list[str]]) -> list[Speech]:
    """Run the talk: each speaker says its next line from `line` (missing: a pass)."""
    out: list[Speech] = []
    said: dict[str, int] = {}
    while (speaker := e.advance()) is not None:
        i = said.get(speaker, 0)
        said[speaker] = i + 1
        lines = line.get(speaker, [])
        text = lines[i] if i < len(lines) else ""
        ev = e.speak(speaker, text, e.tick)
        assert isinstance(ev[0], Speech), ev
        out.append(ev[0])
    return out


def test_turns_give_every_living_player_exactly_max_utterances_turns_in_roster_order() -> None:
    e = make(talk="turns")
    order = meeting(e)
    # a silent first round, then one line from the first seat: talk goes on to the end
    turns = talk(e, {order[0]: ["", "I was in admin"]})
    assert [t.speaker for t in turns] == order * 3
    assert sum(1 for t in turns if t.text) == 1 and e.phase == "voting"


def test_open_talk_ends_after_a_silent_round() -> None:
    e = make(talk="open")
    order = meeting(e)
    turns = talk(e, {order[0]: ["", "I was in admin"]})
    assert [t.speaker for t in turns] == order  # the silent round ended the talk


def test_under_turns_a_failed_turn_uses_a_turn() -> None:
    e = make(talk="turns", max_utterances=2)
    order = meeting(e)
    first = order[0]
    for _ in range(2):
        while (speaker := e.advance()) != first:
            assert speaker is not None
            e.speak(speaker, "hm", e.tick)
        e.speak(first, "", e.tick, failed=True, error_kind="model", error="no answer")
    rest = talk(e, {})
    assert first not in [t.speaker for t in rest]
    assert e.meeting is not None and e.meeting.utterances[first] == 0


def test_under_turns_talk_time_still_ends_the_talk() -> None:
    e = make(talk="turns", meeting_max_ticks=30)
    order = meeting(e)
    speaker = e.advance()
    assert speaker == order[0]
    e.speak(speaker, "long", 40)
    assert e.advance() is None and e.phase == "voting"


def test_turns_out_of_turn_is_refused() -> None:
    e = make(talk="turns")
    order = meeting(e)
    refused = e.speak(order[1], "me first", 11)
    assert isinstance(refused[0], ActionRejected) and refused[0].reason == "not this player's turn"


# ------------------------------------------------------------------ impostors may not skip
def test_an_impostors_skip_is_refused_and_goes_to_the_fallback() -> None:
    e = make(impostors_may_skip=False)
    imps = e.impostors()
    order = meeting(e)
    crew = [a for a in order if a not in imps]
    ballots: dict[str, str | None] = dict.fromkeys(order, SKIP)
    events = e.cast_votes(ballots, 20)
    rejected = [ev for ev in events if isinstance(ev, ActionRejected)]
    assert [(r.agent, r.action, r.target) for r in rejected] == [(i, "vote", SKIP) for i in imps]
    assert all("impostors may not skip" in r.reason for r in rejected)
    votes = {ev.voter: ev for ev in events if isinstance(ev, Vote)}
    for imp in imps:
        assert votes[imp].target == crew[0] and votes[imp].replaced.startswith("skip: ")
        assert not votes[imp].failed
    assert all(votes[c].target == SKIP and votes[c].replaced == "" for c in crew)
    end = next(ev for ev in events if isinstance(ev, MeetingEnd))
    assert end.tally == {crew[0]: 2, SKIP: len(crew)}


def test_the_fallback_is_the_first_other_living_non_impostor_in_seat_order() -> None:
    e = make(impostors_may_skip=False, roles="fixed", fixed_impostors=("blue", "pink"))
    assert [x.kind for x in e.kill("blue", "red", 5, (0.0, 65.0, 0.0), (1.0, 65.0, 0.0))][-2:] == [
        "kill",
        "kill_ready",
    ]
    assert e.skip_fallback("blue") == "green"  # red is dead, pink a fellow impostor
    assert e.skip_fallback("pink") == "green"
    meeting(e)
    events = e.cast_votes({"pink": SKIP}, 20)
    vote = next(ev for ev in events if isinstance(ev, Vote) and ev.voter == "pink")
    assert vote.target == "green"


def test_impostors_may_skip_by_default() -> None:
    e = make()
    order = meeting(e)
    events = e.cast_votes(dict.fromkeys(order, SKIP), 20)
    assert not any(isinstance(ev, ActionRejected) for ev in events)
    end = next(ev for ev in events if isinstance(ev, MeetingEnd))
    assert end.tally == {SKIP: len(order)} and end.outcome == "skipped"


# ------------------------------------------------------------------ the preset and names
def test_the_paper_preset_is_the_reference_game() -> None:
    paper = resolve_config("paper")
    r = paper.rules
    assert r.tasks_per_crewmate == 3
    assert (r.confirm_ejects, r.ghost_tasks, r.talk, r.impostors_may_skip) == (
        True,
        True,
        "turns",
        False,
    )
    assert r.roles == "fixed" and r.fixed_impostors == ("red", "pink")
    assert paper.agent_ids() == [
        "red",
        "blue",
        "green",
        "yellow",
        "pink",
        "white",
        "orange",
        "black",
    ]
    assert list(paper.player_names().values()) == [
        "James",
        "Steve",
        "Jason",
        "Michael",
        "Olivia",
        "Noah",
        "Ethan",
        "Martin",
    ]
    # the other presets keep this project's older rules
    for name in ("quick", "balanced"):
        other = resolve_config(name).rules
        assert (other.ghost_tasks, other.talk, other.impostors_may_skip, other.roles) == (
            False,
            "open",
            True,
            "seeded",
        )


def test_names_default_to_the_colour_and_must_name_seats() -> None:
    quick = resolve_config("quick")
    assert quick.player_names()["red"] == "Red"
    named = resolve_config("quick", overrides={"names": {"blue": "Steve"}})
    assert named.player_names()["blue"] == "Steve" and named.player_names()["red"] == "Red"
    with pytest.raises(ConfigError, match=r"names: no seat has the colour 'white'"):
        resolve_config("quick", overrides={"rules": {"n_players": 5}, "names": {"white": "Noah"}})
