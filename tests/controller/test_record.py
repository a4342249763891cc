"""The one typed reader of a run (`controller.record`), on games the real writer wrote."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pandas as pd
import pytest

import mineamongus
from controller.events import Decision, Eject, GameStart, Kill, LogVersionError
from controller.record import (
    LOG_FILE,
    CallRecord,
    LogFollower,
    NotAGameLog,
    RunRecord,
    SeatAgent,
    Side,
    calls_of,
    find_runs,
    log_progress,
    read_log,
    study_place,
    total_cost,
)
from controller.tournament.collect import collect
from controller.upgrade import OLD_ARIA_AXES, upgrade_event
from harness_aria.spec import AXES
from testkit.logs import LogBuilder, described, resolved_config, sides_of

ROOT = Path(__file__).resolve().parents[2]
ARIA = {"agent": "aria", "args": {"backend": "fake"}}


@pytest.fixture(scope="module")
def aria_game(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake-world game of offline ARIA agents, the impostors planning hierarchically."""
    out = tmp_path_factory.mktemp("aria") / "run"
    impostor = {"agent": "aria", "args": {"backend": "fake", "spec": {"planning": "hierarchical"}}}
    mineamongus.play(
        {"seed": 3, "frames": "off", "crew": ARIA, "impostor": impostor},
        world="fake",
        out=out,
        rules={"max_steps": 16},
    )
    return out


def test_the_upgrader_knows_the_harness_axes() -> None:
    # Logs before `game_start.sides` are read through the one function that knows
    # ARIA's old config form; its axes are the harness's.
    assert OLD_ARIA_AXES == AXES


def test_a_real_game_reads_typed(aria_game: Path) -> None:
    record = RunRecord.read(aria_game)
    setup = record.setup
    assert setup.impostor.agent == "aria" and setup.impostor.backend == "fake"
    assert setup.impostor.axes["planning"] == "hierarchical"
    assert setup.crew.axes["planning"] == "reactive"
    assert setup.axes["impostor.planning"] == "hierarchical"
    assert set(setup.axes) == {f"{s}.{a}" for s in ("impostor", "crew") for a in AXES}
    # The sides are the facts the `aria` kind declared at the start, not its parsed args.
    impostor = record.start.sides["impostor"]
    assert (impostor.kind, impostor.backend, impostor.billed) == ("aria", "fake", False)
    assert impostor.axes == list(AXES) and impostor.profile == "reference"
    assert impostor.settings["planning"] == "hierarchical" and "explicit" not in impostor.settings
    assert record.summary is not None and record.summary.version == 3
    imp = next(a for a, r in record.start.roles.items() if r == "impostor")
    assert setup.seats[imp].kind == "aria" and setup.seats[imp].axes["planning"] == "hierarchical"
    assert setup.side_of(imp) is setup.impostor
    assert setup.geometry() is not None
    assert record.summary is not None and record.summary.status == "ok"
    assert record.summary.counts["model_calls"] == sum(1 for _ in record.calls())
    calls = [c for _d, c in record.calls()]
    assert calls and all(isinstance(c, CallRecord) for c in calls)
    assert total_cost(calls) == record.summary.cost_usd
    assert record.end is not None and record.game_id == record.start.game_id
    # the same log read by folder, by file, and by kinds
    assert len(read_log(aria_game)) == len(read_log(aria_game / LOG_FILE)) == len(record.events)
    light = RunRecord.read(aria_game, kinds={"kill", "eject"})
    assert {e.kind for e in light.events} <= {"game_start", "game_end", "kill", "eject"}
    assert light.alive_at(10**6, 10**9) == record.alive_at(10**6, 10**9)
    with pytest.raises(ValueError, match="were not read"):
        RunRecord.read(aria_game, kinds={"kill"}).alive_at(1, 1)


def test_out_of_play_is_what_the_engine_logged(aria_game: Path) -> None:
    record = RunRecord.read(aria_game)
    gone = record.out_of_play()
    kills = record.of_kind(Kill)
    ejects = record.of_kind(Eject)
    assert {k.victim for k in kills} | {e.agent for e in ejects} == set(gone)
    final = record.summary.final_status if record.summary else {}
    assert {a for a, s in final.items() if s != "alive"} == set(gone)
    for k in kills:
        assert k.victim in record.alive_at(k.step, k.tick - 1)
        assert k.victim not in record.alive_at(k.step, k.tick)


def test_sides_in_every_layout() -> None:
    new = Side.from_config(
        {"agent": "aria", "args": {"backend": "openai:gpt-4.1-mini", "spec": {"memory": "window"}}}
    )
    assert (new.agent, new.backend, new.model, new.axes) == (
        "aria",
        "openai:gpt-4.1-mini",
        "gpt-4.1-mini",
        {"memory": "window"},
    )
    legacy = Side.from_config(
        {"backend": "anthropic:claude-haiku-4-5", "spec": {"prompt": "minimal"}}
    )
    assert (legacy.agent, legacy.model, legacy.axes) == (
        "aria",
        "claude-haiku-4-5",
        {"prompt": "minimal"},
    )
    assert Side.from_config({"backend": "scripted"}).agent == "scripted"
    assert Side.from_config({"agent": "scripted", "args": {}}).backend == "scripted"
    assert Side.from_config(None).backend == "unknown"
    assert SeatAgent.from_description({"kind": "scripted"}).backend == "scripted"


def test_typed_calls_keep_an_unknown_price_unknown() -> None:
    # A v2 line: its calls were untyped dicts, so an unreadable one is upgraded to a
    # failed call naming why (a v3 decision with such a call is refused when written).
    line = {
        "v": 2,
        "kind": "decision",
        "step": 1,
        "tick": 0,
        "agent": "red",
        "phase": "free_roam",
        "calls": [
            {"purpose": "planner", "model": "m", "tokens_in": None, "cost_usd": 0.5},
            {"purpose": "planner", "model": "m", "cost_usd": None},
            {"purpose": "planner", "tokens_in": "not a number"},
        ],
    }
    d = Decision.model_validate(upgrade_event(line))
    first, second, bad = calls_of(d)
    assert first.tokens_in == 0 and first.cost_usd == 0.5
    assert second.cost_usd is None and total_cost([first, second]) is None
    assert bad.error_class == "unreadable_record" and bad.cost_usd is None
    assert total_cost([first]) == 0.5


def test_the_synthetic_writer_writes_what_a_game_writes(aria_game: Path, tmp_path: Path) -> None:
    """The test logs come from the game's own writer, config resolver and record shapes."""
    real = RunRecord.read(aria_game)
    b = LogBuilder(seed=3, models=("fake", "fake"), spec={"impostor": {"planning": "hierarchical"}})
    b.finish("crew", "tasks_done")
    syn = RunRecord.read(b.write(tmp_path / "syn"))
    for side in ("crew", "impostor"):
        got, want = syn.start.config[side], real.start.config[side]
        assert got.keys() == want.keys() and got["args"].keys() == want["args"].keys()
        assert got == want, side  # same sides: the same resolved config
    seat = next(iter(real.start.agent_specs))
    assert described(real.start.config["crew"]).keys() == real.start.agent_specs[seat].keys()
    assert syn.setup.axes == real.setup.axes
    real_summary = json.loads((aria_game / "summary.json").read_text())
    syn_summary = json.loads((tmp_path / "syn" / "summary.json").read_text())
    assert set(syn_summary) == set(real_summary)
    assert set(syn_summary["counts"]) == set(real_summary["counts"])
    assert resolved_config(3, impostor=("scripted", {}))["impostor"] == {
        "agent": "scripted",
        "args": {},
    }


def test_a_log_without_game_start_or_from_a_newer_schema(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / LOG_FILE).write_text(
        '{"v": 2, "kind": "step_start", "step": 1, "tick": 0, "phase": "free_roam"}\n'
    )
    with pytest.raises(NotAGameLog):
        RunRecord.read(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / LOG_FILE).write_text(
        '{"v": 99, "kind": "step_start", "step": 1, "tick": 0}\n{}\n'
    )
    with pytest.raises(LogVersionError):
        RunRecord.read(tmp_path / "b")
    with pytest.raises(FileNotFoundError):
        RunRecord.read(tmp_path / "nothing")


def test_follower_reads_a_growing_log(tmp_path: Path) -> None:
    log = tmp_path / LOG_FILE
    follower = LogFollower(tmp_path)
    assert follower.poll() is None
    start = GameStart(
        step=0, tick=0, seed=0, agents=["red"], roles={"red": "crewmate"}, tasks={},
        map="skeld", preset="quick", config={}, sides=sides_of({}),
    )  # fmt: skip
    line = start.model_dump_json()
    log.write_text(line + "\n" + line[:20])
    got = follower.poll()
    assert got is not None and [e["kind"] for e in got] == ["game_start"]
    assert follower.poll() is None  # unchanged
    with log.open("a") as fh:
        fh.write(line[20:] + "\n")
    again = follower.poll()
    assert again is not None and [e["kind"] for e in again] == ["game_start"]
    assert log_progress(tmp_path) == (0, False)


def test_runs_and_study_places(tmp_path: Path) -> None:
    run = tmp_path / "study" / "games" / "planning=hierarchical" / "seed7-try2"
    LogBuilder(seed=7).write(run)
    assert find_runs([tmp_path]) == [run]
    place = study_place(run)
    assert place is not None and (place.arm, place.seed, place.attempt) == (
        "planning=hierarchical",
        7,
        2,
    )
    assert study_place(tmp_path) is None


def test_collect_keeps_unknown_prices_and_harness_errors_apart(tmp_path: Path) -> None:
    """seats.parquet counts as summary.json does: an unpriced call makes the seat's cost
    unknown (null, never $0), and a harness error is not an invalid decision."""
    study = tmp_path / "study"
    for arm, planning in (
        ("planning=reactive", "reactive"),
        ("planning=hierarchical", "hierarchical"),
    ):
        b = LogBuilder(
            ("red", "blue"), seed=1, models=("openai:model-x", "fake"),
            spec={"impostor": {"planning": planning}}, game_id=f"g-{planning}",
        )  # fmt: skip
        b.end_step()
        b.begin()
        b.decide("red", [], calls=[{"purpose": "planner", "model": "model-x", "cost_usd": None}])
        b.decide("blue", [], error="agent code raised", error_kind="harness", valid=False)
        b.decide("green", [], error="bad answer", error_kind="model", valid=False)
        b.decide("pink", [], calls=[{"purpose": "planner", "model": "fake", "cost_usd": 0.25}])
        b.end_step()
        b.finish("crew", "tasks_done")
        b.write(study / "games" / arm / "seed1-try1")
    collect(study)
    games = pd.read_parquet(study / "results" / "games.parquet").set_index("arm")
    seats = pd.read_parquet(study / "results" / "seats.parquet")
    summary = json.loads(
        (study / "games" / "planning=reactive" / "seed1-try1" / "summary.json").read_text()
    )
    assert summary["cost_usd"] is None and summary["counts"]["harness_errors"] == 1
    assert games.at["planning=reactive", "impostor.planning"] == "reactive"
    assert games.at["planning=hierarchical", "impostor.planning"] == "hierarchical"
    assert games.at["planning=reactive", "impostor_model"] == "openai:model-x"
    assert games.at["planning=reactive", "crew_model"] == "fake"
    assert games.at["planning=reactive", "harness_errors"] == 1
    assert games.at["planning=reactive", "invalid_decisions"] == 1
    assert pd.isna(games.at["planning=reactive", "cost_usd"])
    one = seats[seats["arm"] == "planning=reactive"].set_index("seat")
    assert pd.isna(one.at["red", "cost_usd"])  # unknown, never $0
    assert one.at["pink", "cost_usd"] == 0.25
    assert (one.at["blue", "harness_errors"], one.at["blue", "invalid_decisions"]) == (1, 0)
    assert (one.at["green", "harness_errors"], one.at["green", "invalid_decisions"]) == (0, 1)
    assert one.at["red", "model"] == "model-x" and one.at["red", "planning"] == "reactive"
    assert one.at["green", "planning"] == "reactive"  # crew: the default
    assert seats["harness_errors"].sum() == games["harness_errors"].sum()


# ---------------------------------------------------------------------- one reader
PACKAGES = ("controller", "world", "harness_aria", "annotation", "mineamongus")
READER = "controller/record.py"
ALLOWED = {
    "controller/events.py": "the schema, the writer (`EventLog`) and the parser the reader uses",
    "controller/game.py": "the writer: opens the new log",
    "controller/commands/play.py": "CLI: refuses an --out folder that already holds a run",
}


def _log_uses() -> dict[str, list[int]]:
    uses: dict[str, list[int]] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                hit = isinstance(node, ast.Constant) and node.value == LOG_FILE
                if isinstance(node, ast.Call):
                    fn = node.func
                    name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "")
                    hit = name in ("read_events", "iter_events")
                if hit:
                    uses.setdefault(rel, []).append(node.lineno)
    return uses


def test_exactly_one_module_reads_the_event_log() -> None:
    uses = _log_uses()
    assert READER in uses
    strays = {p: lines for p, lines in uses.items() if p != READER and p not in ALLOWED}
    assert not strays, f"read events.jsonl through controller.record, not here: {strays}"
    unused = sorted(set(ALLOWED) - set(uses))
    assert not unused, f"{unused} no longer touch the log: take them off ALLOWED"
    doc = (ROOT / "docs" / "event-log.md").read_text(encoding="utf-8")
    assert "controller.record" in doc and "RunRecord" in doc
