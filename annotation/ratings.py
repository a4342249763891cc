"""Role-split ratings of the player types of one or more studies (`mineamongus rank`).

A game is a match between two teams: the impostor side's player type and the crew
side's; the impostors win or lose. Every type is rated twice, once per role, as two
separate players (`X as impostor`, `X as crew`), so a model that deceives well and
detects poorly is never averaged into the middle.

What a player type is (`PlayedSide`, `type_labels`):

- an ARIA side: its model, with the settings that vary anywhere in the data (the
  side's `profile` first, then the ablation axes its kind declared, then any other
  setting), e.g. `gpt-4.1-mini[memory=window,planning=hierarchical]`; settings that
  never vary are left out of every label. A side is read from the facts its agent kind
  declared in `game_start.sides` (`controller.vocabulary.SideFacts`), never from its
  kind's arguments;
- `scripted`: the scripted ruler, the fixed reference opponent;
- `human:<name>`: a side with a person's seat (the name the person gave, when the
  record holds one, else `human`). A person usually sits at one seat beside agents of
  another kind (a mixed side): the side is rated as the person's type, the teammates
  being part of the conditions the person played under;
- any other agent kind: its kind, with its model when it has one.

Two fits, both by maintained libraries:

- Bradley-Terry by `choix` (I-LSR, regularised by `ALPHA` so that an unbeaten player's
  rating stays finite): P(impostor I beats crew C) = 1 / (1 + exp(-(b_I - b_C))), the
  ratings in log-odds units, centred on 0 over every player of the board. Its 95 %
  intervals and the rank ranges come from a bootstrap over games, clustered by seed
  where a study pairs seeds across arms (seeds drawn with replacement, each with all its
  games), refitting each resample.
- OpenSkill (`openskill`'s Plackett-Luce model with its defaults, mu 25, sigma 25/3),
  updated online over the games in order (studies in the order given, then seed, arm
  and attempt); the conservative score is mu - 3 sigma (`CONSERVATIVE_Z`).

Ranks are per role, by Bradley-Terry rating (1 = best). Adjacent players (in rank order)
whose 95 % rank ranges overlap share a tied group (a letter); a player whose rank range
could not be estimated ties with its neighbours. Since such ties chain (on a board of
many close players every neighbour overlaps the next, and the whole board is one
group), each row also has a tier: players whose range overlaps that of their tier's
first player.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from controller.events import LogVersionError
from controller.record import RecordError, has_log, read_log
from controller.stats import Interval, rate_interval, wilson
from controller.vocabulary import SideFacts

Role = Literal["impostor", "crew"]

ROLES: tuple[Role, Role] = ("impostor", "crew")
"""The two roles every player type is rated in."""
RULER = "scripted"
"""The scripted ruler's player type: the fixed reference opponent."""
HUMAN = "human"
"""The player type of a person whose record gives no name (`human:<name>` otherwise)."""
MIN_GAMES = 30
"""Fewer games than this in a role and the row is marked (an arm needs about 30 games
to be read)."""
DEFAULT_BOOT = 1000
"""Bootstrap resamples per interval."""
ALPHA = 0.01
"""Regularisation of choix's I-LSR fit (a rate added between every pair of players):
keeps an undefeated or winless player's rating finite."""
CONSERVATIVE_Z = 3.0
"""The conservative OpenSkill score is mu - CONSERVATIVE_Z * sigma."""
FEW_CLUSTERS = 20
"""Below this many bootstrap clusters the intervals and rank ranges are flagged: with few
clusters the resamples barely vary, and an interval can shrink to a point."""
MIN_PRESENT = 0.95
"""A player absent from more than 1 - this share of the resamples has its intervals
read from the resamples it played in, and the row says so."""
_SKIPPED_SETTINGS = frozenset({"explicit"})
"""Spec fields that are not settings (which settings were given explicitly)."""

COLUMNS = (
    "player",
    "role",
    "games",
    "wins",
    "win_rate",
    "win_rate_low",
    "win_rate_high",
    "bt",
    "bt_low",
    "bt_high",
    "mu",
    "sigma",
    "conservative",
    "rank",
    "rank_low",
    "rank_high",
    "group",
    "tier",
    "few_games",
    "connected",
    "vs_ruler_games",
    "vs_ruler_wins",
    "vs_ruler_win_rate",
    "vs_ruler_low",
    "vs_ruler_high",
    "mixed_games",
    "boot_present",
    "note",
)
"""The columns of a ratings table, in order."""


# ---------------------------------------------------------------------- who played
@dataclass(frozen=True)
class PlayedSide:
    """Who played one side of one game, as its record says."""

    agent: str
    """The side's agent kind (`aria`, `scripted`, ...)."""
    backend: str
    """The side's backend address (the kind's name for agents without a model)."""
    settings: tuple[tuple[str, str], ...] = ()
    """The side's settings (profile, axes, knobs) as text, sorted by name."""
    humans: tuple[str, ...] = ()
    """The names of the person seats on the side (`human` for an unnamed one)."""
    mixed: bool = False
    """A person's seat among seats played by agents."""
    axes: tuple[str, ...] = ()
    """Which of `settings` are the side's ablation axes, in the order its kind declared
    them (`SideFacts.axes`): a label names them after the profile."""


def _settings(spec: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    out = []
    for key, value in spec.items():
        if key in _SKIPPED_SETTINGS or isinstance(value, dict | list | tuple):
            continue
        out.append((str(key), str(value)))
    return tuple(sorted(out))


def _human_name(seat: str, start: dict[str, Any]) -> str:
    """The name a person gave for the seat (the seat's agent record, else its config
    args); `human` when the record holds none."""
    specs = start.get("agent_specs") or {}
    desc = specs.get(seat) if isinstance(specs, dict) else None
    name = desc.get("name") if isinstance(desc, dict) else None
    if not name:
        seats = (start.get("config") or {}).get("seats") or {}
        entry = seats.get(seat) if isinstance(seats, dict) else None
        args = entry.get("args") if isinstance(entry, dict) else None
        name = args.get("name") if isinstance(args, dict) else None
    return str(name).strip() if name and str(name).strip() else HUMAN


def sides_from_start(start: dict[str, Any]) -> tuple[PlayedSide, PlayedSide]:
    """(impostor side, crew side) of a `game_start` event read as JSON (`read_start`):
    each side from the facts its agent kind declared (`sides`).

    Raises:
        ValueError: The event holds no declared facts for a side (not a `game_start`
            read through `controller.record`, which derives an older log's).
    """
    declared = start.get("sides") or {}
    specs = start.get("agent_specs") or {}
    roles = start.get("roles") or {}
    out = []
    for name, role in (("impostor", "impostor"), ("crew", "crewmate")):
        if name not in declared:
            raise ValueError(
                f"game_start holds no declared facts for the {name} side (`sides`); read "
                "it with `read_start`, which brings an older log's to the current version"
            )
        facts = SideFacts.model_validate(declared[name])
        seats = [s for s in start.get("agents") or [] if roles.get(s) == role]
        kinds = {s: str((specs.get(s) or {}).get("kind") or facts.kind) for s in seats}
        humans = tuple(sorted({_human_name(s, start) for s in seats if kinds[s] == HUMAN}))
        mixed = bool(humans) and any(k != HUMAN for k in kinds.values())
        out.append(
            PlayedSide(
                facts.kind,
                facts.backend,
                _settings(facts.settings),
                humans,
                mixed,
                tuple(facts.axes),
            )
        )
    return out[0], out[1]


def read_start(run: Path) -> dict[str, Any] | None:
    """A run's `game_start` event as JSON, or None when the run folder holds no readable
    log (read through the one record reader)."""
    if not has_log(run):
        return None
    try:
        starts = read_log(run, kinds=("game_start",))
    except (RecordError, LogVersionError, OSError):
        return None
    if not starts:
        return None
    return starts[0].model_dump(mode="json")


def sides_from_row(
    row: pd.Series, seats: pd.DataFrame | None = None
) -> tuple[PlayedSide, PlayedSide]:
    """(impostor side, crew side) from a `results/games.parquet` row alone, for a game
    whose run folder is gone: the side's ablation axes only (its `<side>.<axis>`
    columns; no profile), person seats from `seats.parquet` (unnamed)."""
    out = []
    for name, role in (("impostor", "impostor"), ("crew", "crewmate")):
        prefix = f"{name}."
        spec = {
            str(k)[len(prefix) :]: v
            for k, v in row.items()
            if str(k).startswith(prefix) and _present(v)
        }
        settings = tuple(sorted((k, str(v)) for k, v in spec.items()))
        humans: tuple[str, ...] = ()
        mixed = False
        if seats is not None and len(seats):
            mine = seats[seats["role"] == role]
            kinds = mine["agent_kind"].astype(str)
            if (kinds == HUMAN).any():
                humans = (HUMAN,)
                mixed = bool((kinds != HUMAN).any())
        agent = str(row.get(f"{name}_agent") or "unknown")
        backend = str(row.get(f"{name}_model") or agent)
        out.append(PlayedSide(agent, backend, settings, humans, mixed, tuple(spec)))
    return out[0], out[1]


def _present(value: object) -> bool:
    if value is None:
        return False
    try:
        return not bool(pd.isna(value))
    except (TypeError, ValueError):
        return True


def _model_name(backend: str) -> str:
    return backend.split(":", 1)[1] if ":" in backend else backend


def type_labels(sides: Sequence[PlayedSide]) -> list[str]:
    """The player type of each side (see the module), with the settings that vary
    across the ARIA sides given (the profile, then the axes in the order the sides
    declared them, then the rest by name); a model's full address where two backends
    share a model name."""
    aria = [s for s in sides if s.agent == "aria" and not s.humans]
    values: dict[str, set[str]] = {}
    for s in aria:
        for key, value in s.settings:
            values.setdefault(key, set()).add(value)
    keys = {k for k, v in values.items() if len(v) > 1}
    keys |= {k for k in values if any(k not in dict(s.settings) for s in aria)}
    first = ["profile", *dict.fromkeys(a for s in aria for a in s.axes if a != "profile")]
    order = [k for k in first if k in keys] + sorted(keys - set(first))
    short: dict[str, set[str]] = {}
    for s in sides:
        short.setdefault(_model_name(s.backend), set()).add(s.backend)
    out = []
    for s in sides:
        if s.humans:
            names = [n for n in s.humans if n != HUMAN]
            out.append(f"{HUMAN}:{'+'.join(names)}" if names else HUMAN)
            continue
        if s.agent == RULER:
            out.append(RULER)
            continue
        name = _model_name(s.backend)
        model = s.backend if len(short[name]) > 1 else name
        if s.agent != "aria":
            out.append(s.agent if s.backend == s.agent else f"{s.agent}:{model}")
            continue
        have = dict(s.settings)
        parts = [f"{k}={have.get(k, '-')}" for k in order]
        out.append(f"{model}[{','.join(parts)}]" if parts else model)
    return out


# ---------------------------------------------------------------------- the matches
@dataclass
class Matches:
    """The games a board rests on, one row each, in rating order."""

    games: pd.DataFrame
    """`study, game_id, arm, seed, attempt, impostor, crew, impostor_win (0/1),
    impostor_mixed, crew_mixed, cluster`."""
    cluster_by: str
    """What the bootstrap resamples: `seed` (seeds paired across arms), `game`, or
    `seed and game` (studies of both kinds)."""
    notes: list[str] = field(default_factory=list)
    """What was left out, and why."""


def _clusters(games: pd.DataFrame) -> tuple[list[str], str]:
    """Per game its bootstrap cluster: `study:seed` when its study uses a seed in more
    than one game (seeds paired across arms), else the game itself."""
    keys = []
    kinds = set()
    for study, part in games.groupby("study", sort=False):
        paired = part["seed"].notna().all() and part["seed"].duplicated().any()
        kinds.add("seed" if paired else "game")
        col = part["seed"] if paired else part["game_id"]
        keys.append(pd.Series([f"{study}:{v}" for v in col], index=part.index))
    joined = pd.concat(keys).reindex(games.index) if keys else pd.Series(dtype=str)
    by = " and ".join(sorted(kinds, reverse=True)) if kinds else "game"
    return [str(k) for k in joined], by


def build_matches(
    rows: Iterable[tuple[str, pd.Series, tuple[PlayedSide, PlayedSide]]],
    notes: list[str] | None = None,
) -> Matches:
    """The board's games from (study, games-table row, sides) triples: each side's
    player type and who won, ordered by study (as given), seed, arm and attempt."""
    items = list(rows)
    sides = [s for _st, _r, pair in items for s in pair]
    labels = type_labels(sides)
    study_order = {st: i for i, st in enumerate(dict.fromkeys(st for st, _r, _p in items))}
    records = []
    for i, (study, row, (imp, crew)) in enumerate(items):
        records.append(
            {
                "study": study,
                "game_id": str(row.get("game_id")),
                "arm": str(row.get("arm", "")),
                "seed": row.get("seed"),
                "attempt": row.get("attempt", 1),
                "impostor": labels[2 * i],
                "crew": labels[2 * i + 1],
                "impostor_win": int(row["impostor_win"]),
                "impostor_mixed": imp.mixed,
                "crew_mixed": crew.mixed,
                "_study": study_order[study],
            }
        )
    columns = [
        "study",
        "game_id",
        "arm",
        "seed",
        "attempt",
        "impostor",
        "crew",
        "impostor_win",
        "impostor_mixed",
        "crew_mixed",
    ]
    games = pd.DataFrame(records, columns=[*columns, "_study"])
    if len(games):
        games = games.sort_values(["_study", "seed", "arm", "attempt", "game_id"], kind="stable")
    games = games.drop(columns="_study").reset_index(drop=True)
    clusters, by = _clusters(games)
    games["cluster"] = clusters
    return Matches(games, by, list(notes or []))


def impostor_win(winner: object) -> int | None:
    """1 when the impostors won, 0 when the crew did, None when no side did."""
    if not _present(winner):
        return None
    text = str(winner).lower()
    if text.startswith("impostor"):
        return 1
    if text.startswith("crew"):
        return 0
    return None


def _tables_stale(study: Path) -> bool:
    """Whether the study's tables are missing or older than a game that finished since
    they were written (a game played into the study's layout afterwards, by hand)."""
    tables = [study / "results" / "games.parquet", study / "results" / "seats.parquet"]
    if not all(t.is_file() for t in tables):
        return True
    written = min(t.stat().st_mtime for t in tables)
    return any(s.stat().st_mtime > written for s in study.glob("games/*/*/summary.json"))


def load_studies(studies: Sequence[Path], progress: Callable[[str], None] | None = None) -> Matches:
    """The finished, counted games of one or more study folders (`results/games.parquet`
    and `seats.parquet`, rebuilt by `controller.tournament.collect` when absent or older
    than a game's `summary.json`).

    Raises:
        FileNotFoundError: A path is not a folder.
        ValueError: A folder is not a study folder.
    """
    from controller.tournament.collect import collect

    rows: list[tuple[str, pd.Series, tuple[PlayedSide, PlayedSide]]] = []
    notes: list[str] = []
    for study in studies:
        if not study.is_dir():
            raise FileNotFoundError(f"{study}: no such study folder")
        results = study / "results"
        if _tables_stale(study):
            collect(study, progress=progress)
        games = pd.read_parquet(results / "games.parquet")
        seats = pd.read_parquet(results / "seats.parquet")
        kept = games[games["counted"].astype(bool) & (games["status"] == "done")]
        left = len(games) - len(kept)
        if left:
            notes.append(f"{study}: {left} attempt(s) not counted or not finished (left out)")
        by_game = {g: part for g, part in seats.groupby("game_id", sort=False)}
        no_winner = 0
        for _i, row in kept.iterrows():
            win = impostor_win(row.get("winner"))
            if win is None:
                no_winner += 1
                continue
            row = row.copy()
            row["impostor_win"] = win
            start = read_start(study / str(row.get("run", ""))) if row.get("run") else None
            if start is not None:
                pair = sides_from_start(start)
            else:
                pair = sides_from_row(row, by_game.get(row["game_id"]))
            rows.append((str(study), row, pair))
        if no_winner:
            notes.append(f"{study}: {no_winner} finished game(s) without a winner (left out)")
    return build_matches(rows, notes)


def matches_from_runs(games: pd.DataFrame, study: str = "study") -> Matches:
    """The board of `analyze`'s valid games (one row per game with `folder`, `seed`,
    `arm`, `game_id`, `impostor_win`, and the sides' columns): sides from each run's
    `game_start`, else from the row."""
    rows: list[tuple[str, pd.Series, tuple[PlayedSide, PlayedSide]]] = []
    no_winner = 0
    for _i, row in games.iterrows():
        if "winner" in row.index:
            win = impostor_win(row["winner"])
            if win is None:
                no_winner += 1
                continue
            row = row.copy()
            row["impostor_win"] = win
        folder = row.get("folder")
        start = read_start(Path(str(folder))) if _present(folder) else None
        pair = sides_from_start(start) if start is not None else sides_from_row(row)
        rows.append((study, row, pair))
    notes = [f"{no_winner} game(s) without a winner (left out)"] if no_winner else []
    return build_matches(rows, notes)


# ---------------------------------------------------------------------- the fits
def players_of(games: pd.DataFrame) -> list[tuple[str, Role]]:
    """Every (player type, role) of the board: impostors first, then crews, each sorted."""
    imps = sorted(set(games["impostor"]))
    crews = sorted(set(games["crew"]))
    return [(p, "impostor") for p in imps] + [(p, "crew") for p in crews]


def pairs(imp: np.ndarray, crew: np.ndarray, win: np.ndarray) -> list[tuple[int, int]]:
    """(winner, loser) item indices of each game, as choix reads pairwise data."""
    winners = np.where(win == 1, imp, crew)
    losers = np.where(win == 1, crew, imp)
    return list(zip(winners.tolist(), losers.tolist(), strict=True))


def fit_bt(
    n_items: int, imp: np.ndarray, crew: np.ndarray, win: np.ndarray, alpha: float = ALPHA
) -> np.ndarray:
    """choix's Bradley-Terry fit (I-LSR) over the players that played (NaN for the
    others); raises RuntimeError when it does not converge."""
    import choix

    present = np.unique(np.concatenate([imp, crew]))
    out = np.full(n_items, np.nan)
    if len(present) < 2:
        return out
    where = np.full(n_items, -1)
    where[present] = np.arange(len(present))
    fitted = choix.ilsr_pairwise(
        len(present), pairs(where[imp], where[crew], win), alpha=alpha, max_iter=1000
    )
    out[present] = fitted
    return out


def fit_openskill(
    games: pd.DataFrame, players: Sequence[tuple[str, Role]]
) -> dict[tuple[str, Role], tuple[float, float]]:
    """OpenSkill (Plackett-Luce, the library's defaults) over the games in order: each
    player's final (mu, sigma)."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = {p: model.rating(name=f"{p[0]} ({p[1]})") for p in players}
    for imp, crew, win in zip(games["impostor"], games["crew"], games["impostor_win"], strict=True):
        a, b = ratings[(imp, "impostor")], ratings[(crew, "crew")]
        [[a2], [b2]] = model.rate([[a], [b]], ranks=[1, 2] if win else [2, 1])
        ratings[(imp, "impostor")], ratings[(crew, "crew")] = a2, b2
    return {p: (float(r.mu), float(r.sigma)) for p, r in ratings.items()}


def role_ranks(values: np.ndarray, roles: np.ndarray) -> np.ndarray:
    """Each player's rank within its role by rating (1 = best; equal ratings share the
    better rank); NaN where the rating is NaN."""
    out = np.full(values.shape, np.nan)
    for role in ROLES:
        mine = (roles == role) & np.isfinite(values)
        v = values[mine]
        out[mine] = 1 + (v[None, :] > v[:, None]).sum(axis=1)
    return out


def _draws(clusters: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Per resample, how many times each game is drawn: clusters drawn with
    replacement, each with all its games (B x games)."""
    uniq, inv = np.unique(clusters, return_inverse=True)
    picks = rng.integers(0, len(uniq), size=(n_boot, len(uniq)))
    counts = np.zeros((n_boot, len(uniq)), dtype=int)
    for b in range(n_boot):
        counts[b] = np.bincount(picks[b], minlength=len(uniq))
    draws: np.ndarray = counts[:, inv]
    return draws


@dataclass
class Bootstrap:
    """Bootstrap distributions of the ratings and ranks (B x players; NaN where a
    player did not play in the resample or the fit failed)."""

    bt: np.ndarray
    rank: np.ndarray
    failed: int
    """Resamples on which the fit did not converge."""


def bootstrap(
    games: pd.DataFrame,
    players: Sequence[tuple[str, Role]],
    n_boot: int,
    seed: int,
) -> Bootstrap:
    """Refit the Bradley-Terry ratings on `n_boot` cluster resamples of the games."""
    index = {p: i for i, p in enumerate(players)}
    imp = np.array([index[(p, "impostor")] for p in games["impostor"]], dtype=int)
    crew = np.array([index[(p, "crew")] for p in games["crew"]], dtype=int)
    win = games["impostor_win"].to_numpy(dtype=int)
    roles = np.array([r for _p, r in players])
    rng = np.random.default_rng(seed)
    draws = _draws(games["cluster"].astype(str).to_numpy(), n_boot, rng)
    bt = np.full((n_boot, len(players)), np.nan)
    failed = 0
    # A resample is fixed by its draw counts, and the fit is deterministic: one drawn
    # again (few clusters repeat often) takes the fit already made, the same numbers.
    fits: dict[bytes, np.ndarray | None] = {}
    for b in range(n_boot):
        key = draws[b].tobytes()
        if key not in fits:
            take = np.repeat(np.arange(len(games)), draws[b])
            try:
                fits[key] = fit_bt(len(players), imp[take], crew[take], win[take])
            except RuntimeError:
                fits[key] = None
        fit = fits[key]
        if fit is None:
            failed += 1
        else:
            bt[b] = fit
    rank = np.vstack([role_ranks(row, roles) for row in bt]) if n_boot else bt.copy()
    return Bootstrap(bt, rank, failed)


def _interval(dist: np.ndarray, *, integer: bool = False) -> tuple[float, float]:
    finite = dist[np.isfinite(dist)]
    if not len(finite):
        return math.nan, math.nan
    if integer:
        return (
            float(np.percentile(finite, 2.5, method="lower")),
            float(np.percentile(finite, 97.5, method="higher")),
        )
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return float(lo), float(hi)


def group_letters(n: int) -> list[str]:
    """`A`, `B`, ..., `Z`, `AA`, `AB`, ...: n group names."""
    letters = string.ascii_uppercase
    out = []
    for i in range(n):
        name = ""
        k = i
        while True:
            name = letters[k % 26] + name
            k = k // 26 - 1
            if k < 0:
                break
        out.append(name)
    return out


def _rank_ranges(ranks: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lowest ranks, highest ranks, row order by rank) of one role's players; a missing
    range counts as every rank of the role, a missing rank sorts last."""
    n = len(ranks)
    lo = ranks["rank_low"].fillna(1).to_numpy(dtype=float)
    hi = ranks["rank_high"].fillna(n).to_numpy(dtype=float)
    order = np.lexsort((np.arange(n), ranks["rank"].fillna(n + 1).to_numpy(dtype=float)))
    return lo, hi, order


def tied_groups(ranks: pd.DataFrame) -> list[str]:
    """Tied groups of one role's players given `rank`, `rank_low`, `rank_high` (rows in
    any order; the answer is aligned with them): in rank order, a player joins the
    previous player's group when their rank ranges overlap, else opens the next group.
    A missing range counts as every rank of the role."""
    n = len(ranks)
    if not n:
        return []
    lo, hi, order = _rank_ranges(ranks)
    group = np.zeros(n, dtype=int)
    for prev, cur in zip(order[:-1], order[1:], strict=True):
        overlap = max(lo[prev], lo[cur]) <= min(hi[prev], hi[cur])
        group[cur] = group[prev] + (0 if overlap else 1)
    names = group_letters(int(group.max()) + 1)
    return [names[g] for g in group]


def tiers(ranks: pd.DataFrame) -> list[int]:
    """Tiers of one role's players (same input as `tied_groups`): in rank order, a
    player stays in the current tier while its rank range overlaps the range of the
    tier's first player, else it opens the next tier (1, 2, ...). Unlike the tied
    groups, a tier never chains across players that can be told apart: a board of many
    close players is one tied group but still has tiers."""
    n = len(ranks)
    if not n:
        return []
    lo, hi, order = _rank_ranges(ranks)
    tier = np.zeros(n, dtype=int)
    leader = int(order[0])
    tier[leader] = 1
    for cur in order[1:]:
        if max(lo[leader], lo[cur]) <= min(hi[leader], hi[cur]):
            tier[cur] = tier[leader]
        else:
            tier[cur] = tier[leader] + 1
            leader = int(cur)
    return [int(x) for x in tier]


def _components(games: pd.DataFrame, players: Sequence[tuple[str, Role]]) -> np.ndarray:
    """Per player, whether it is in the board's main connected part (the one with the
    most games): ratings in another part are not comparable with the main one's."""
    index = {p: i for i, p in enumerate(players)}
    parent = list(range(len(players)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for imp, crew in zip(games["impostor"], games["crew"], strict=True):
        a, b = find(index[(imp, "impostor")]), find(index[(crew, "crew")])
        parent[a] = b
    roots = np.array([find(i) for i in range(len(players))])
    weight: dict[int, int] = {}
    for imp in games["impostor"]:
        r = int(roots[index[(imp, "impostor")]])
        weight[r] = weight.get(r, 0) + 1
    main = max(weight, key=lambda r: weight[r]) if weight else -1
    flags: np.ndarray = roots == main
    return flags


@dataclass
class Board:
    """A ratings table and what it rests on."""

    table: pd.DataFrame
    """One row per (player type, role): see `COLUMNS`."""
    n_games: int
    n_clusters: int
    cluster_by: str
    n_boot: int
    failed_fits: int
    """Bootstrap resamples whose fit did not converge (left out)."""
    min_games: int
    notes: list[str] = field(default_factory=list)


def _rate(values: np.ndarray, clusters: np.ndarray | None) -> Interval:
    if not len(values):
        return wilson(0, 0)
    return rate_interval(values.tolist(), None if clusters is None else clusters.tolist())


def rate(
    matches: Matches,
    *,
    min_games: int = MIN_GAMES,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> Board:
    """Fit the board: per (player type, role) its games, wins and Wilson interval, its
    Bradley-Terry rating with a bootstrap interval, its OpenSkill mu, sigma and
    conservative score, its rank, rank range and tied group, and its win rate against
    the scripted ruler.

    Raises:
        ValueError: No games.
    """
    games = matches.games
    if games.empty:
        raise ValueError("no finished, counted game with a winner to rate")
    players = players_of(games)
    index = {p: i for i, p in enumerate(players)}
    imp = np.array([index[(p, "impostor")] for p in games["impostor"]], dtype=int)
    crew = np.array([index[(p, "crew")] for p in games["crew"]], dtype=int)
    win = games["impostor_win"].to_numpy(dtype=int)
    roles = np.array([r for _p, r in players])
    bt = fit_bt(len(players), imp, crew, win)
    ranks = role_ranks(bt, roles)
    skill = fit_openskill(games, players)
    boot = bootstrap(games, players, n_boot, seed)
    connected = _components(games, players)
    clustered = matches.cluster_by != "game"
    cluster = games["cluster"].astype(str).to_numpy()
    rows = []
    for i, (player, role) in enumerate(players):
        mine = (imp == i) if role == "impostor" else (crew == i)
        won = win[mine] if role == "impostor" else 1 - win[mine]
        rate_ = _rate(won, cluster[mine] if clustered else None)
        other = games["crew"] if role == "impostor" else games["impostor"]
        ruler = mine & (other.to_numpy() == RULER)
        ruler_won = win[ruler] if role == "impostor" else 1 - win[ruler]
        vs = _rate(ruler_won, cluster[ruler] if clustered else None)
        mixed_col = "impostor_mixed" if role == "impostor" else "crew_mixed"
        mixed = int(games[mixed_col].to_numpy(dtype=bool)[mine].sum())
        present = float(np.isfinite(boot.bt[:, i]).mean()) if n_boot else math.nan
        bt_lo, bt_hi = _interval(boot.bt[:, i])
        rk_lo, rk_hi = _interval(boot.rank[:, i], integer=True)
        notes = []
        n = int(mine.sum())
        if n < min_games:
            notes.append(f"few games ({n} < {min_games})")
        if not connected[i]:
            notes.append("not connected to the main board: not comparable with it")
        if mixed:
            notes.append(f"{mixed} game(s) as a person among agents")
        if n_boot and present < MIN_PRESENT:
            notes.append(f"played in {present:.0%} of the resamples")
        mu, sigma = skill[(player, role)]
        rows.append(
            {
                "player": player,
                "role": role,
                "games": n,
                "wins": int(won.sum()),
                "win_rate": rate_.value,
                "win_rate_low": rate_.low,
                "win_rate_high": rate_.high,
                "bt": float(bt[i]),
                "bt_low": bt_lo,
                "bt_high": bt_hi,
                "mu": mu,
                "sigma": sigma,
                "conservative": mu - CONSERVATIVE_Z * sigma,
                "rank": float(ranks[i]),
                "rank_low": rk_lo,
                "rank_high": rk_hi,
                "group": "",
                "tier": 0,
                "few_games": n < min_games,
                "connected": bool(connected[i]),
                "vs_ruler_games": int(ruler.sum()),
                "vs_ruler_wins": int(ruler_won.sum()),
                "vs_ruler_win_rate": vs.value,
                "vs_ruler_low": vs.low,
                "vs_ruler_high": vs.high,
                "mixed_games": mixed,
                "boot_present": present,
                "note": "; ".join(notes),
            }
        )
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    for role in ROLES:
        part = table[table["role"] == role]
        table.loc[part.index, "group"] = tied_groups(part)
        table.loc[part.index, "tier"] = tiers(part)
    table["_role"] = table["role"].map({"impostor": 0, "crew": 1})
    table = (
        table.sort_values(["_role", "rank", "player"], kind="stable")
        .drop(columns="_role")
        .reset_index(drop=True)
    )
    for col in ("rank", "rank_low", "rank_high"):
        table[col] = table[col].astype("Int64")
    notes = list(matches.notes)
    n_clusters = int(games["cluster"].nunique())
    if n_clusters < FEW_CLUSTERS:
        notes.append(
            f"only {n_clusters} {matches.cluster_by} cluster(s) (< {FEW_CLUSTERS}): the "
            "bootstrap intervals and rank ranges are unreliable (with so few clusters the "
            "resamples barely vary, and an interval can shrink to a point)"
        )
    if boot.failed:
        notes.append(f"{boot.failed} of {n_boot} resample(s) did not converge (left out)")
    return Board(
        table=table,
        n_games=len(games),
        n_clusters=n_clusters,
        cluster_by=matches.cluster_by,
        n_boot=n_boot,
        failed_fits=boot.failed,
        min_games=min_games,
        notes=notes,
    )


def describe(board: Board) -> str:
    """One paragraph saying what the board rests on and how to read it."""
    return (
        f"{board.n_games} game(s); Bradley-Terry ratings (choix, log-odds, centred on 0) "
        f"with 95 % intervals from {board.n_boot} bootstrap resamples of "
        f"{board.n_clusters} {board.cluster_by} cluster(s); OpenSkill Plackett-Luce mu, "
        f"sigma and mu - {CONSERVATIVE_Z:g} sigma. Ranks per role by rating; players whose "
        "rank ranges overlap with their neighbour's share a group letter, and a tier "
        "holds the players whose range overlaps its first player's; rows with fewer "
        f"than {board.min_games} games in the role are marked."
    )
