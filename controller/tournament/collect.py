"""Result tables of a study, rebuilt from its run folders alone (`mineamongus collect DIR`).

`results/games.parquet` has one row per run folder (every attempt of every game) and
`results/seats.parquet` one row per seat of each. Arm and attempt come from the
folder path (`games/<arm>/seed<N>-try<K>`); everything else from the game's own
`summary.json` and `events.jsonl`, so a table can never disagree with the records.
The manifest is read for one thing only, each arm's design labels (what the spec meant
by the arm, never what a game did): both tables carry them as `design.<name>` columns
(`design.backbone`, `design.case`, `design.matchup`, ...), after the fixed ones, in the
order the arms first name them; a column whose every value is a whole number is an
integer column, any other a text column. A study whose manifest holds no labels (one
run before labels existed) has no `design.` columns; an arm without a label a study's
other arms have is null there. The `counted` column marks the one attempt per
(arm, seed) that counts: the first finished (`done`) one, else the latest.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from controller.events import Decision, Kill, TaskDone
from controller.record import NotAGameLog, RunRecord, Side, calls_of, has_log
from controller.tournament.manifest import read_manifest
from controller.tournament.process import read_summary

_ATTEMPT = re.compile(r"^seed(-?\d+)-try(\d+)$")
_WHOLE = re.compile(r"^-?\d+$")

DESIGN_PREFIX = "design."
"""Prefix of the columns of the arms' design labels (`Arm.labels`)."""

GAME_COLUMNS = (
    "game_id",
    "arm",
    "seed",
    "attempt",
    "counted",
    "status",
    "reason",
    "winner",
    "ending",
    "steps",
    "ticks",
    "kills",
    "meetings",
    "ejections",
    "tasks_done",
    "tasks_total",
    "invalid_decisions",
    "infra_errors",
    "harness_errors",
    "wall_seconds",
    "cost_usd",
    "run",
    "impostor_agent",
    "impostor_model",
    "crew_agent",
    "crew_model",
)
"""`impostor_model`/`crew_model` are each side's backend address, from the record's set-up.
After them come `impostor.<axis>` and `crew.<axis>` for every ablation axis a side of
the study declared (`SideFacts.axes`: ARIA's five), null for a side without it."""

SEAT_COLUMNS = (
    "game_id",
    "arm",
    "seed",
    "attempt",
    "counted",
    "seat",
    "role",
    "agent_kind",
    "backend",
    "model",
    "alive_at_end",
    "final_status",
    "kills",
    "tasks_done",
    "decisions",
    "invalid_decisions",
    "infra_errors",
    "harness_errors",
    "tokens_in",
    "tokens_out",
    "tokens_cached",
    "cost_usd",
)
"""After `model`, the seat's side's value of every ablation axis of the study (below)."""
_SEAT_AXES_AFTER = SEAT_COLUMNS.index("model") + 1


class CollectError(ValueError):
    """A folder is not a study folder."""


@dataclass(frozen=True)
class Tables:
    """Where the tables went and how many rows each has."""

    games: Path
    seats: Path
    n_games: int
    n_seats: int


def _run_folders(out: Path) -> list[tuple[str, int, int, Path]]:
    games = out / "games"
    if not games.is_dir():
        raise CollectError(f"{out}: no games/ folder; is it a study folder (--out of tournament)?")
    found = []
    for arm_dir in sorted(p for p in games.iterdir() if p.is_dir()):
        for run in sorted(p for p in arm_dir.iterdir() if p.is_dir()):
            m = _ATTEMPT.match(run.name)
            if m:
                found.append((arm_dir.name, int(m.group(1)), int(m.group(2)), run))
    return found


def design_labels(out: Path) -> dict[str, dict[str, str]]:
    """Arm name -> design labels, from the study's manifest (empty when it has none, or
    no readable manifest: such a study's tables have no `design.` columns)."""
    try:
        manifest = read_manifest(out)
    except (ValueError, OSError):
        return {}
    return dict(manifest.labels) if manifest is not None else {}


def design_columns(
    labels: dict[str, dict[str, str]],
) -> tuple[tuple[str, ...], dict[str, pa.DataType]]:
    """The `design.<name>` columns of a study's labels (in the order the arms first name
    them) and their types: int64 when every value is a whole number, else string."""
    names: dict[str, None] = {}
    for arm_labels in labels.values():
        names.update(dict.fromkeys(arm_labels))
    types: dict[str, pa.DataType] = {}
    for name in names:
        values = [a[name] for a in labels.values() if name in a]
        whole = all(_WHOLE.match(v) for v in values)
        types[DESIGN_PREFIX + name] = pa.int64() if whole else pa.string()
    return tuple(DESIGN_PREFIX + n for n in names), types


def _design_row(
    labels: dict[str, str], types: dict[str, pa.DataType]
) -> dict[str, str | int | None]:
    row: dict[str, str | int | None] = {}
    for column, kind in types.items():
        value = labels.get(column.removeprefix(DESIGN_PREFIX))
        row[column] = int(value) if value is not None and kind == pa.int64() else value
    return row


def _side_columns(crew: Side, impostor: Side, axes: dict[str, None]) -> dict[str, Any]:
    """A game's side columns; the axes its sides declare are added to `axes`."""
    out: dict[str, Any] = {}
    for name, side in (("impostor", impostor), ("crew", crew)):
        out[f"{name}_agent"] = side.agent
        out[f"{name}_model"] = side.backend
        out.update({f"{name}.{a}": v for a, v in side.axes.items()})
        axes.update(dict.fromkeys(side.facts.axes))
    return out


def _seat_rows(
    record: RunRecord, base: dict[str, Any], summary: dict[str, Any]
) -> list[dict[str, Any]]:
    # Counted as `summary.json` counts them (`controller.accounting`): harness errors apart
    # from invalid decisions, and a seat's cost unknown (null) once one of its calls had
    # no price, never $0.
    per: dict[str, dict[str, Any]] = defaultdict(
        lambda: (
            dict.fromkeys(
                (
                    "kills",
                    "tasks_done",
                    "decisions",
                    "invalid_decisions",
                    "infra_errors",
                    "harness_errors",
                    "tokens_in",
                    "tokens_out",
                    "tokens_cached",
                ),
                0,
            )
            | {"cost_usd": 0.0}
        )
    )
    for ev in record.events:
        if isinstance(ev, Kill):
            per[ev.killer]["kills"] += 1
        elif isinstance(ev, TaskDone) and not ev.fake:
            per[ev.agent]["tasks_done"] += 1
        elif isinstance(ev, Decision):
            row = per[ev.agent]
            row["decisions"] += 1
            if ev.error_kind == "infrastructure":
                row["infra_errors"] += 1
            elif ev.error_kind == "harness":
                row["harness_errors"] += 1
            elif ev.error:
                row["invalid_decisions"] += 1
            for call in calls_of(ev):
                row["tokens_in"] += call.tokens_in
                row["tokens_out"] += call.tokens_out
                row["tokens_cached"] += call.tokens_cached
                if call.cost_usd is None or row["cost_usd"] is None:
                    row["cost_usd"] = None
                else:
                    row["cost_usd"] = round(row["cost_usd"] + call.cost_usd, 6)
    final = summary.get("final_status") or {}
    start = record.start
    rows = []
    for seat in start.agents:
        agent = record.setup.seats[seat]
        status = final.get(seat)
        rows.append(
            {
                **base,
                "seat": seat,
                "role": start.roles.get(seat),
                "agent_kind": agent.kind,
                "backend": agent.backend,
                "model": agent.model,
                **{axis: agent.spec.get(axis) for axis in agent.axes_of},
                "alive_at_end": None if status is None else status == "alive",
                "final_status": status,
                **per[seat],
            }
        )
    return rows


def _record(run: Path) -> RunRecord | None:
    """The run's record, or None when it has no readable log with a `game_start`."""
    if not has_log(run):
        return None
    try:
        return RunRecord.read(run, partial=True)
    except NotAGameLog:
        return None


TABLES = ("games.parquet", "seats.parquet")
"""The tables `collect` writes under `results/`."""


def remove_tables(out: Path) -> list[Path]:
    """Delete a study's result tables (before its records change, so that no reader
    ever takes a table that predates them); return what was removed."""
    removed = []
    for name in TABLES:
        path = out / "results" / name
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


def collect(out: Path, progress: Callable[[str], None] | None = None) -> Tables:
    """Rebuild `results/games.parquet` and `results/seats.parquet` from the run folders.

    Raises:
        CollectError: `out` holds no `games/` folder.
    """
    runs = _run_folders(out)
    labels = design_labels(out)
    design, design_types = design_columns(labels)
    summaries = {run: read_summary(run) for _a, _s, _k, run in runs}
    counted: dict[tuple[str, int], Path] = {}
    for arm, seed, _k, run in sorted(runs, key=lambda r: r[2]):
        s = summaries[run]
        key = (arm, seed)
        prev = counted.get(key)
        prev_done = prev is not None and (summaries[prev] or {}).get("status") == "ok"
        if not prev_done:
            counted[key] = run
    game_rows: list[dict[str, Any]] = []
    seat_rows: list[dict[str, Any]] = []
    axes: dict[str, None] = {}
    for i, (arm, seed, attempt, run) in enumerate(runs):
        s = summaries[run] or {}
        counts = s.get("counts") or {}
        tasks = s.get("tasks") or {}
        status = "failed" if not s else "done" if s.get("status") == "ok" else "invalid"
        base = {
            "game_id": s.get("game_id") or f"{arm}/{run.name}",
            "arm": arm,
            "seed": seed,
            "attempt": attempt,
            "counted": counted[(arm, seed)] == run,
            **_design_row(labels.get(arm, {}), design_types),
        }
        game_rows.append(
            {
                **base,
                "status": status,
                "reason": s.get("reason") or ("no summary.json" if not s else ""),
                "winner": s.get("winner"),
                "ending": s.get("ending"),
                "steps": s.get("steps"),
                "ticks": s.get("ticks"),
                "kills": counts.get("kills"),
                "meetings": counts.get("meetings"),
                "ejections": counts.get("ejections"),
                "tasks_done": tasks.get("done"),
                "tasks_total": tasks.get("total"),
                "invalid_decisions": counts.get("invalid_decisions"),
                "infra_errors": counts.get("infra_errors"),
                "harness_errors": counts.get("harness_errors"),
                "wall_seconds": s.get("wall_seconds"),
                "cost_usd": s.get("cost_usd"),
                "run": str(run.relative_to(out)),
            }
        )
        record = _record(run)
        if record is not None:
            game_rows[-1].update(_side_columns(record.setup.crew, record.setup.impostor, axes))
        elif s.get("config"):
            cfg = s["config"]
            game_rows[-1].update(
                _side_columns(
                    Side.from_config(cfg.get("crew")), Side.from_config(cfg.get("impostor")), axes
                )
            )
        if s and record is not None:
            seat_rows += _seat_rows(record, base, s)
        if progress is not None and (i + 1) % 50 == 0:
            progress(f"collect: {i + 1}/{len(runs)} run folders read")
    results = out / "results"
    results.mkdir(exist_ok=True)
    games_path, seats_path = (results / name for name in TABLES)
    game_columns = (
        *GAME_COLUMNS,
        *(f"impostor.{a}" for a in axes),
        *(f"crew.{a}" for a in axes),
        *design,
    )
    seat_columns = (
        *SEAT_COLUMNS[:_SEAT_AXES_AFTER],
        *axes,
        *SEAT_COLUMNS[_SEAT_AXES_AFTER:],
        *design,
    )
    _write(game_rows, game_columns, games_path, design_types)
    _write(seat_rows, seat_columns, seats_path, design_types)
    return Tables(games_path, seats_path, len(game_rows), len(seat_rows))


_TYPES = {
    "seed": pa.int64(),
    "attempt": pa.int64(),
    "counted": pa.bool_(),
    "steps": pa.int64(),
    "ticks": pa.int64(),
    "kills": pa.int64(),
    "meetings": pa.int64(),
    "ejections": pa.int64(),
    "tasks_done": pa.int64(),
    "tasks_total": pa.int64(),
    "invalid_decisions": pa.int64(),
    "infra_errors": pa.int64(),
    "harness_errors": pa.int64(),
    "decisions": pa.int64(),
    "tokens_in": pa.int64(),
    "tokens_out": pa.int64(),
    "tokens_cached": pa.int64(),
    "wall_seconds": pa.float64(),
    "cost_usd": pa.float64(),
    "alive_at_end": pa.bool_(),
}


def _write(
    rows: list[dict[str, Any]],
    columns: tuple[str, ...],
    path: Path,
    types: dict[str, pa.DataType] | None = None,
) -> None:
    # A fixed schema, so an empty table or an all-null column still has its types.
    known = {**_TYPES, **(types or {})}
    schema = pa.schema([(c, known.get(c, pa.string())) for c in columns])
    table = pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows], schema=schema)
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
