"""The record's vocabulary round-trips: every event kind and the summary, written by the
real writer (`EventLog`, `RunSummary`) and read back by the one reader
(`controller.record`), come back typed and equal field by field; a current-version line
or summary with an unknown key is refused naming it; older versions are upgraded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from controller.events import (
    KNOWN_KINDS,
    SCHEMA_VERSION,
    ActionRejected,
    Continuation,
    Decision,
    Disconnect,
    Eject,
    Emergency,
    EventBase,
    EventLog,
    FrameRef,
    GameEnd,
    GameStart,
    Kill,
    KillReady,
    MeetingEnd,
    MeetingStart,
    PlayerSnapshot,
    Positions,
    ProgramRun,
    Reconnect,
    Report,
    ServerMessage,
    Speech,
    StepStart,
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Trace,
    Visibility,
    Vote,
    read_events,
)
from controller.record import LOG_FILE, SUMMARY_FILE, RecordError, RunRecord, calls_of, read_log
from controller.upgrade import EVENT_UPGRADES, SUMMARY_UPGRADES, upgrade_event
from controller.vocabulary import (
    SUMMARY_VERSION,
    ModelCall,
    PromptRefs,
    RunSummary,
    SideFacts,
    TaskTally,
)

CONFIG: dict[str, Any] = {
    "crew": {
        "agent": "aria",
        "args": {"backend": "openai:gpt-x", "spec": {"planning": "reactive"}},
    },
    "impostor": {"agent": "scripted", "args": {}},
    "rules": {"kill_cooldown_ticks": 100},
}
SIDES = {
    "crew": SideFacts(
        kind="aria",
        backend="openai:gpt-x",
        model="gpt-x",
        billed=True,
        text_only=True,
        profile="reference",
        settings={"planning": "reactive", "window_k": 10, "ego_range": 12.0, "strike_guard": False},
        axes=["planning"],
    ),
    "impostor": SideFacts(kind="scripted", backend="scripted"),
}
CALL = ModelCall(
    purpose="move",
    prompts=["reference/move@abc"],
    model="openai:gpt-x",
    image=True,
    sent=PromptRefs(prefix_sha256="p", user_sha256="u", image_sha256="i"),
    raw='{"action": "MOVE"}',
    parsed={"action": "MOVE"},
    normalised=["json: code fence"],
    finish_reason="stop",
    settings={"temperature": 0.2, "max_tokens": 256},
    tokens_in=100,
    tokens_out=20,
    tokens_cached=64,
    latency_ms=12.5,
    cost_usd=None,
    attempts=2,
    extra={"codegen": {"status": "translated"}},
)
_AT = {"step": 1, "tick": 40}


def every_event() -> list[EventBase]:
    """One event of every kind, its optional fields set away from their defaults."""
    return [
        GameStart(
            step=0,
            tick=0,
            seed=7,
            agents=["red", "blue"],
            roles={"red": "impostor", "blue": "crewmate"},
            tasks={"blue": [1, 2]},
            map="skeld",
            preset="quick",
            config=CONFIG,
            agent_specs={"red": {"kind": "scripted"}, "blue": {"kind": "aria", "spec": {}}},
            sides=SIDES,
            map_spec={"name": "skeld"},
            map_sha256="00",
            source_revision="abc+dirty",
            versions={"python": "3.11"},
            sample_interval_ticks=5,
            names={"red": "James"},
            world_start={"warm": False},
        ),
        StepStart(phase="meeting", speaker="red", **_AT),
        Positions(
            players={
                "red": PlayerSnapshot(pos=(1.0, 65.0, 2.0), yaw=90.0, room="admin", status="alive")
            },
            cause="meeting_seats",
            **_AT,
        ),
        Trace(interval=5, ticks=[35, 40], players={"red": [(1.0, 65.0, 2.0, 90.0)]}, **_AT),
        Visibility(
            sees={"red": ["blue"]},
            bodies={"red": []},
            near={"red": ["blue"]},
            bodies_near={"blue": ["green"]},
            cause="kill",
            subject="red",
            **_AT,
        ),
        Decision(
            agent="blue",
            phase="voting",
            module="VOTE",
            vote="red",
            valid=False,
            error="bad answer",
            raw="x",
            reasoning="r",
            narration="n",
            latency_ms=3.0,
            error_kind="model",
            calls=[CALL, ModelCall(purpose="vote", error_class="timeout", error="slow")],
            spec={"planning": "reactive"},
            frame=FrameRef(path="frames/0001/blue.jpg", sha256="ff"),
            view_text="view",
            deferral="cooldown",
            **_AT,
        ),
        Continuation(
            agent="blue",
            module="MISSION",
            decision_step=0,
            running="walk to admin",
            valid=False,
            error="refused",
            error_kind="rules",
            spec={"planning": "reactive"},
            **_AT,
        ),
        ProgramRun(
            agent="red",
            status="cancelled",
            reason="meeting",
            start_tick=30,
            end_tick=40,
            steps_done=2,
            low_steps=5,
            events=[{"tick": 33, "mark": "button"}],
            **_AT,
        ),
        Kill(killer="red", victim="green", pos=(1.0, 65.0, 2.0), room="admin", distance=1.5, **_AT),
        KillReady(ready={"red": 140}, cause="kill", **_AT),
        ActionRejected(agent="red", action="kill", target="blue", reason="cooldown", **_AT),
        TaskStart(agent="blue", station=1, room="admin", fake=True, **_AT),
        TaskInterrupted(agent="blue", station=1, reason="meeting", held_ticks=12, **_AT),
        TaskDone(
            agent="blue", station=2, room="admin", fake=False, done=1, total=2, start_tick=20, **_AT
        ),
        Report(
            reporter="blue", victim="green", pos=(1.0, 65.0, 2.0), room="admin", distance=2.0, **_AT
        ),
        Emergency(caller="blue", **_AT),
        MeetingStart(
            index=1,
            trigger="report",
            caller="blue",
            victim="green",
            order=["blue", "red"],
            dead=["green"],
            **_AT,
        ),
        Speech(
            speaker="blue",
            text="",
            utterance=2,
            passed=False,
            failed=True,
            error_kind="infrastructure",
            error="timeout",
            **_AT,
        ),
        Vote(
            voter="red",
            target="blue",
            failed=False,
            error_kind="rules",
            error="e",
            replaced="skip: impostors may not skip",
            **_AT,
        ),
        MeetingEnd(
            index=1, tally={"red": 1}, ejected="red", outcome="ejected", abstained=["blue"], **_AT
        ),
        Eject(agent="red", role="impostor", **_AT),
        ServerMessage(text="Red was ejected.", **_AT),
        Disconnect(agent="blue", reason="socket closed", **_AT),
        Reconnect(agent="blue", ok=False, reason="refused", **_AT),
        GameEnd(
            winner="crew",
            ending="impostors_ejected",
            status="ok",
            reason="all impostors out",
            flags=["harness_errors"],
            **_AT,
        ),
    ]


def summary_of(end: GameEnd) -> RunSummary:
    return RunSummary(
        game_id="g1",
        status=end.status,
        reason=end.reason,
        flags=list(end.flags),
        winner=end.winner,
        ending=end.ending,
        steps=1,
        ticks=40,
        seed=7,
        roles={"red": "impostor", "blue": "crewmate"},
        final_status={"red": "ejected", "blue": "alive"},
        tasks=TaskTally(done=1, total=2),
        resumable=True,
        counts={"kills": 1},
        cost_usd=None,
        wall_seconds=1.5,
        config=CONFIG,
        agents={"red": {"kind": "scripted"}},
        versions={"python": "3.11"},
    )


def write_game(folder: Path) -> tuple[list[EventBase], RunSummary]:
    """Write every event with the game's writer and the summary as a game does."""
    log = EventLog(folder / LOG_FILE, "g1")
    try:
        written = [log.write(ev) for ev in every_event()]
    finally:
        log.close()
    end = written[-1]
    assert isinstance(end, GameEnd)
    summary = summary_of(end)
    (folder / SUMMARY_FILE).write_text(json.dumps(summary.model_dump(mode="json"), indent=2))
    return written, summary


def assert_same(got: Any, want: Any) -> None:
    """Equal field by field, each value of the same type (a typed value stays typed)."""
    assert type(got) is type(want)
    for name in type(want).model_fields:
        a, b = getattr(got, name), getattr(want, name)
        assert a == b, (type(want).__name__, name, a, b)
        assert type(a) is type(b), (type(want).__name__, name, type(a), type(b))


def _lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / LOG_FILE).read_text().splitlines()]


def _rewrite(folder: Path, lines: list[dict[str, Any]]) -> None:
    (folder / LOG_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_the_test_covers_every_event_kind() -> None:
    kinds = [type(e).model_fields["kind"].default for e in every_event()]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == KNOWN_KINDS  # a new kind fails here until it is added above


def test_every_event_and_the_summary_round_trip_typed(tmp_path: Path) -> None:
    written, summary = write_game(tmp_path)
    record = RunRecord.read(tmp_path)
    assert len(record.events) == len(written)
    for got, want in zip(record.events, written, strict=True):
        assert_same(got, want)
        assert got.v == SCHEMA_VERSION
    for got, want in zip(read_log(tmp_path), written, strict=True):
        assert_same(got, want)
    for got, want in zip(read_events(tmp_path / LOG_FILE), written, strict=True):
        assert_same(got, want)
    assert record.summary is not None
    assert_same(record.summary, summary)
    assert record.summary.version == SUMMARY_VERSION
    # The nested vocabulary comes back typed and unchanged too.
    start, decision = record.start, record.of_kind(Decision)[0]
    for side in ("crew", "impostor"):
        assert_same(start.sides[side], SIDES[side])
    assert calls_of(decision)[0] == CALL and isinstance(calls_of(decision)[0].sent, PromptRefs)
    assert record.setup.crew.axes == {"planning": "reactive"} and record.setup.impostor.axes == {}
    assert record.setup.seats["blue"].axes_of == ("planning",)


@pytest.mark.parametrize(
    ("index", "path", "key"),
    [
        (1, (), "colour"),  # step_start, top level
        (2, ("players", "red"), "speed"),  # positions: a player snapshot
        (5, ("calls", 0), "temprature"),  # decision: a model call
        (0, ("sides", "crew"), "modle"),  # game_start: a side's facts
    ],
)
def test_a_current_line_with_an_unknown_key_is_refused_naming_it(
    tmp_path: Path, index: int, path: tuple[Any, ...], key: str
) -> None:
    write_game(tmp_path)
    lines = _lines(tmp_path)
    target = lines[index]
    for step in path:
        target = target[step]
    target[key] = 1
    _rewrite(tmp_path, lines)
    with pytest.raises(RecordError, match=rf"line {index + 1}: .*unknown key `{key}`") as info:
        RunRecord.read(tmp_path)
    assert info.value.file == tmp_path / LOG_FILE and info.value.line == index + 1


def test_a_current_game_start_without_both_sides_facts_is_refused(tmp_path: Path) -> None:
    start = every_event()[0]
    assert isinstance(start, GameStart)
    with pytest.raises(ValidationError, match="sides"):
        GameStart.model_validate(start.model_dump(exclude={"sides"}))
    write_game(tmp_path)
    lines = _lines(tmp_path)
    del lines[0]["sides"]  # nothing falls back on the config's side arguments
    _rewrite(tmp_path, lines)
    with pytest.raises(RecordError, match=r"line 1: a `game_start` event without the key `sides`"):
        RunRecord.read(tmp_path)
    lines[0]["sides"] = {"crew": SIDES["crew"].model_dump(mode="json")}
    _rewrite(tmp_path, lines)
    with pytest.raises(RecordError, match=r"line 1: .*sides are \['crew'\]"):
        RunRecord.read(tmp_path)


def test_a_current_summary_with_an_unknown_key_is_refused_naming_it(tmp_path: Path) -> None:
    write_game(tmp_path)
    data = json.loads((tmp_path / SUMMARY_FILE).read_text())
    data["winer"] = "crew"
    (tmp_path / SUMMARY_FILE).write_text(json.dumps(data))
    with pytest.raises(RecordError, match=r"summary.json: not a readable summary.*`winer`"):
        RunRecord.read(tmp_path)


def test_a_misspelt_field_fails_where_it_is_written() -> None:
    with pytest.raises(ValidationError, match="winer"):
        RunSummary(winer="crew")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="colour"):
        StepStart(step=1, tick=0, phase="free_roam", colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="temprature"):
        ModelCall(temprature=0.2)  # type: ignore[call-arg]


def test_upgraders_chain_every_older_version_to_the_current_one() -> None:
    assert sorted(EVENT_UPGRADES) == list(range(1, SCHEMA_VERSION))
    assert sorted(SUMMARY_UPGRADES) == list(range(1, SUMMARY_VERSION))
    assert upgrade_event({"kind": "emergency", "step": 1, "tick": 0, "caller": "red"})["v"] == 3


def test_a_v2_record_is_upgraded_and_read(tmp_path: Path) -> None:
    written, _ = write_game(tmp_path)
    lines = _lines(tmp_path)
    for line in lines:
        line["v"] = 2
    start = lines[0]
    del start["sides"]  # v2 recorded no facts: the upgrader derives them from the config
    decision = lines[5]
    decision["calls"][0]["judge"] = "j1"  # v2 readers ignored a call's unknown keys
    decision["calls"].append({"purpose": "move", "tokens_in": "many"})  # unreadable
    lines[1].pop("v")  # a v1 line (no `v`)
    _rewrite(tmp_path, lines)
    data = json.loads((tmp_path / SUMMARY_FILE).read_text())
    data["version"] = 2
    (tmp_path / SUMMARY_FILE).write_text(json.dumps(data))

    record = RunRecord.read(tmp_path)
    assert all(e.v == SCHEMA_VERSION for e in record.events)
    crew, impostor = record.start.sides["crew"], record.start.sides["impostor"]
    assert (crew.kind, crew.backend, crew.model, crew.billed) == (
        "aria",
        "openai:gpt-x",
        "gpt-x",
        True,
    )
    assert crew.settings == {"planning": "reactive"} and crew.axes == ["planning"]
    assert (impostor.kind, impostor.model, impostor.billed) == ("scripted", None, False)
    assert record.setup.crew.axes == {"planning": "reactive"}
    first, second, unreadable = calls_of(record.of_kind(Decision)[0])
    assert first.model_copy(update={"extra": CALL.extra}) == CALL
    assert first.extra["v2"] == {"judge": "j1"}
    assert second.error_class == "timeout"
    assert unreadable.error_class == "unreadable_record" and unreadable.cost_usd is None
    assert record.summary is not None and record.summary.version == SUMMARY_VERSION
    for got, want in zip(record.events[1:5], written[1:5], strict=True):
        assert_same(got, want.model_copy(update={"v": SCHEMA_VERSION}))
