"""Per-role ratings (`annotation.ratings`, `mineamongus rank`, the `core.ratings` result).

Synthetic boards with outcomes fixed by construction (a planted strong and a planted
weak player; identical players drawn from one fair coin), the fits checked against
choix and openskill called here on the same games, and two studies played on the fake
world: a 3-model round robin through the local mock OpenAI endpoint with a scripted
control arm, and a game with a person's seat that nobody answers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from annotation.ratings import (
    ALPHA,
    CONSERVATIVE_Z,
    RULER,
    Board,
    Matches,
    PlayedSide,
    build_matches,
    pairs,
    players_of,
    rate,
    sides_from_start,
    tied_groups,
    tiers,
    type_labels,
)
from controller.vocabulary import SideFacts
from testkit.games import MOCK_ROUND_ROBIN, GameStore
from testkit.logs import sides_of

ROOT = Path(__file__).resolve().parents[2]
TYPES = ["strong", "mid1", "mid2", "weak"]

Outcome = Callable[[str, str, np.random.Generator], int]


def board_of(
    outcome: Outcome,
    types: list[str],
    seeds: range,
    *,
    rng_seed: int = 7,
    extra: list[tuple[str, str, int]] | None = None,
) -> Matches:
    """A round robin of `types` (every impostor type against every crew type, each seed),
    impostor wins drawn by `outcome`; `extra` adds (impostor, crew, win) games."""
    rng = np.random.default_rng(rng_seed)
    rows: list[tuple[str, pd.Series, tuple[PlayedSide, PlayedSide]]] = []

    def add(imp: str, crew: str, seed: int, win: int, k: int) -> None:
        row = pd.Series(
            {
                "game_id": f"{imp}-{crew}-{seed}-{k}",
                "arm": f"i={imp}-c={crew}",
                "seed": seed,
                "attempt": 1,
                "impostor_win": win,
            }
        )
        rows.append(("synthetic", row, (side(imp), side(crew))))

    for seed in seeds:
        for imp in types:
            for crew in types:
                add(imp, crew, seed, outcome(imp, crew, rng), 0)
    for k, (imp, crew, win) in enumerate(extra or []):
        add(imp, crew, 10_000 + k, win, k)
    return build_matches(rows)


def side(name: str) -> PlayedSide:
    """A side of type `name` (`scripted` is the ruler, anything else an ARIA model)."""
    return PlayedSide(RULER, RULER) if name == RULER else PlayedSide("aria", f"fake:{name}")


def planted(imp: str, crew: str, rng: np.random.Generator) -> int:
    """`strong` wins every game it plays against another type and `weak` loses every
    one, in both roles; every other game is a fair coin."""
    if imp == crew:
        return int(rng.random() < 0.5)
    if imp == "strong" or crew == "weak":
        return 1
    if crew == "strong" or imp == "weak":
        return 0
    return int(rng.random() < 0.5)


def coin(imp: str, crew: str, rng: np.random.Generator) -> int:
    """Every game a fair coin, whoever plays."""
    return int(rng.random() < 0.5)


def row(board: Board, player: str, role: str) -> pd.Series:
    table = board.table
    found = table[(table["player"] == player) & (table["role"] == role)]
    assert len(found) == 1, (player, role, table[["player", "role"]])
    return found.iloc[0]


# ---------------------------------------------------------------------- (a) planted
def test_a_planted_strong_and_weak_player_rank_apart_in_both_roles() -> None:
    board = rate(board_of(planted, TYPES, range(25)), n_boot=300, seed=1)
    for role in ("impostor", "crew"):
        strong, weak = row(board, "strong", role), row(board, "weak", role)
        assert strong["rank"] == 1 and weak["rank"] == len(TYPES)
        assert strong["rank_high"] < weak["rank_low"], (strong, weak)
        assert strong["bt_low"] > weak["bt_high"]
        assert strong["group"] != weak["group"]
        assert strong["group"] == "A"
    assert board.cluster_by == "seed" and board.n_clusters == 25
    assert not board.table["few_games"].any()  # 25 x 4 = 100 games per row


def test_identical_players_share_one_tied_group() -> None:
    board = rate(board_of(coin, TYPES, range(30), rng_seed=11), n_boot=300, seed=2)
    for role in ("impostor", "crew"):
        part = board.table[board.table["role"] == role]
        assert len(part) == len(TYPES)
        assert set(part["group"]) == {"A"}, part[["player", "rank", "rank_low", "rank_high"]]
        assert (part["rank_high"] - part["rank_low"]).max() >= 2


def test_tied_groups_open_a_group_where_adjacent_ranges_do_not_overlap() -> None:
    ranks = pd.DataFrame(
        {
            "rank": [1, 2, 3, 5, 4],
            "rank_low": [1, 2, 3, 5, np.nan],
            "rank_high": [1, 3, 4, 5, np.nan],
        }
    )
    # 1..1 | 2..3 overlaps 3..4, which overlaps rank 4 (unknown range: 1..5), then 5..5
    assert tied_groups(ranks) == ["A", "B", "B", "B", "B"]
    apart = pd.DataFrame({"rank": [1, 2, 3], "rank_low": [1, 2, 3], "rank_high": [1, 2, 3]})
    assert tied_groups(apart) == ["A", "B", "C"]


def test_tiers_do_not_chain_across_players_that_can_be_told_apart() -> None:
    ranks = pd.DataFrame(
        {"rank": [1, 2, 3, 4, 5], "rank_low": [1, 1, 2, 4, 9], "rank_high": [3, 4, 5, 8, 12]}
    )
    assert tied_groups(ranks) == ["A", "A", "A", "A", "B"]  # 1..3 ~ 1..4 ~ 2..5 ~ 4..8
    assert tiers(ranks) == [1, 1, 1, 2, 3]  # 4..8 does not overlap the first tier's 1..3


def test_a_board_of_many_close_players_is_one_group_but_several_tiers() -> None:
    strength = {f"m{i:02d}": 1.5 - 0.25 * i for i in range(12)}

    def graded(imp: str, crew: str, rng: np.random.Generator) -> int:
        p = 1 / (1 + np.exp(-(strength[imp] - strength[crew])))
        return int(rng.random() < p)

    board = rate(board_of(graded, list(strength), range(8), rng_seed=5), n_boot=200)
    imp = board.table[board.table["role"] == "impostor"]
    assert imp["tier"].max() >= 2 and imp["tier"].is_monotonic_increasing
    assert imp["tier"].iloc[0] == 1 and imp["group"].iloc[0] == "A"


def test_a_player_with_few_games_is_shown_but_marked() -> None:
    matches = board_of(
        planted, TYPES, range(10), extra=[("rookie", "mid1", 1), ("mid2", "rookie", 0)]
    )
    board = rate(matches, min_games=30, n_boot=100)
    rookie = row(board, "rookie", "impostor")
    assert rookie["games"] == 1 and rookie["few_games"]
    assert "few games (1 < 30)" in rookie["note"]
    assert row(board, "rookie", "crew")["few_games"]
    assert not row(board, "mid1", "impostor")["few_games"]  # 40 games
    assert rate(matches, min_games=1, n_boot=100).table["few_games"].sum() == 0


def test_a_part_of_the_board_no_one_else_played_is_flagged_not_comparable() -> None:
    island = [("lone", "hermit", k % 2) for k in range(4)]
    board = rate(board_of(planted, TYPES, range(5), extra=island), n_boot=100)
    assert not row(board, "lone", "impostor")["connected"]
    assert "not connected" in row(board, "hermit", "crew")["note"]
    assert row(board, "strong", "impostor")["connected"]


def test_win_rate_against_the_ruler_per_role() -> None:
    games = [("mid1", RULER, 1), ("mid1", RULER, 1), ("mid1", RULER, 0), (RULER, "mid1", 1)]
    board = rate(board_of(planted, TYPES, range(4), extra=games), n_boot=100)
    imp = row(board, "mid1", "impostor")
    assert imp["vs_ruler_games"] == 3 and imp["vs_ruler_wins"] == 2
    assert imp["vs_ruler_win_rate"] == pytest.approx(2 / 3)
    assert imp["vs_ruler_low"] < 2 / 3 < imp["vs_ruler_high"]
    crew = row(board, "mid1", "crew")
    assert crew["vs_ruler_games"] == 1 and crew["vs_ruler_wins"] == 0
    assert row(board, "strong", "impostor")["vs_ruler_games"] == 0


# ---------------------------------------------------------------------- (c) the libraries
def library_fit(games: pd.DataFrame) -> tuple[dict[tuple[str, str], float], dict[Any, Any]]:
    """choix and openskill called directly on the same games, in the same order."""
    import choix
    from openskill.models import PlackettLuce

    players = players_of(games)
    index = {p: i for i, p in enumerate(players)}
    imp = np.array([index[(p, "impostor")] for p in games["impostor"]])
    crew = np.array([index[(p, "crew")] for p in games["crew"]])
    win = games["impostor_win"].to_numpy()
    data = [
        (int(i), int(c)) if w else (int(c), int(i)) for i, c, w in zip(imp, crew, win, strict=True)
    ]
    bt = choix.ilsr_pairwise(len(players), data, alpha=ALPHA, max_iter=1000)
    model = PlackettLuce()
    ratings = {p: model.rating() for p in players}
    for i, c, w in zip(games["impostor"], games["crew"], win, strict=True):
        a, b = ratings[(i, "impostor")], ratings[(c, "crew")]
        (a2,), (b2,) = model.rate([[a], [b]], ranks=[1, 2] if w else [2, 1])
        ratings[(i, "impostor")], ratings[(c, "crew")] = a2, b2
    return {p: float(bt[index[p]]) for p in players}, ratings


def check_against_libraries(board: Board, games: pd.DataFrame) -> None:
    bt, skill = library_fit(games)
    for r in board.table.itertuples():
        key = (r.player, r.role)
        assert r.bt == pytest.approx(bt[key], abs=1e-9), key
        assert r.mu == pytest.approx(skill[key].mu, abs=1e-9), key
        assert r.sigma == pytest.approx(skill[key].sigma, abs=1e-9), key
        assert r.conservative == pytest.approx(skill[key].ordinal(z=CONSERVATIVE_Z), abs=1e-9)


def test_the_figures_agree_with_the_libraries_own_fit() -> None:
    matches = board_of(planted, TYPES, range(8), rng_seed=3)
    board = rate(matches, n_boot=100)
    check_against_libraries(board, matches.games)
    games = matches.games
    for r in board.table.itertuples():
        mine = games[games["impostor" if r.role == "impostor" else "crew"] == r.player]
        won = mine["impostor_win"] if r.role == "impostor" else 1 - mine["impostor_win"]
        wins = won.sum()
        assert (r.games, r.wins) == (len(mine), wins)
    # ranks per role follow the ratings
    for role in ("impostor", "crew"):
        part = board.table[board.table["role"] == role]
        assert list(part["player"]) == list(part.sort_values("bt", ascending=False)["player"])
    # the pairwise data is the games' (winner, loser)
    assert pairs(np.array([0, 0]), np.array([1, 1]), np.array([1, 0])) == [(0, 1), (1, 0)]


def test_the_library_check_catches_a_planted_difference() -> None:
    matches = board_of(planted, TYPES, range(8), rng_seed=3)
    board = rate(matches, n_boot=100)
    board.table.loc[0, "bt"] += 0.05
    with pytest.raises(AssertionError):
        check_against_libraries(board, matches.games)
    flipped = matches.games.copy()
    flipped.loc[0, "impostor_win"] = 1 - flipped.loc[0, "impostor_win"]
    with pytest.raises(AssertionError):
        check_against_libraries(rate(matches, n_boot=100), flipped)


# ---------------------------------------------------------------------- player types
def test_types_name_the_model_and_only_the_settings_that_vary() -> None:
    def aria(backend: str, **settings: str) -> PlayedSide:
        base = {"profile": "reference", "state": "privileged", "memory": "window"}
        return PlayedSide("aria", backend, tuple(sorted({**base, **settings}.items())))

    sides = [
        aria("openai:gpt-4.1-mini"),
        aria("openai:gpt-4.1-mini", memory="semantic"),
        aria("openrouter:qwen/qwen3", memory="semantic"),
        PlayedSide(RULER, RULER),
        PlayedSide(RULER, RULER, humans=("ann",), mixed=True),
        PlayedSide("aria", "openai:gpt-4.1-mini", humans=("human",), mixed=True),
        aria("fake"),
    ]
    assert type_labels(sides) == [
        "gpt-4.1-mini[memory=window]",
        "gpt-4.1-mini[memory=semantic]",
        "qwen/qwen3[memory=semantic]",
        "scripted",
        "human:ann",
        "human",
        "fake[memory=window]",
    ]
    # a setting an older record lacks reads as `-` where others name it
    old = type_labels([aria("fake:x"), PlayedSide("aria", "fake:y", (("memory", "window"),))])
    assert old == ["x[profile=reference,state=privileged]", "y[profile=-,state=-]"]
    # the same model name under two providers keeps the full address
    two = type_labels([PlayedSide("aria", "openai:m"), PlayedSide("aria", "other:m")])
    assert two == ["openai:m", "other:m"]


def test_a_person_seat_is_its_own_type_named_as_recorded() -> None:
    start: dict[str, Any] = {
        "kind": "game_start",
        "agents": ["red", "blue", "green", "pink"],
        "roles": {"red": "crewmate", "blue": "crewmate", "green": "impostor", "pink": "impostor"},
        "config": {"crew": {"agent": "scripted"}, "impostor": {"agent": "scripted"}},
        "sides": {side: facts.model_dump(mode="json") for side, facts in sides_of({}).items()},
        "agent_specs": {
            "red": {"kind": "human", "name": "ann"},
            "blue": {"kind": "scripted"},
            "green": {"kind": "scripted"},
            "pink": {"kind": "scripted"},
        },
    }
    imp, crew = sides_from_start(start)
    assert imp.humans == () and not imp.mixed
    assert crew.humans == ("ann",) and crew.mixed
    assert type_labels([imp, crew]) == [RULER, "human:ann"]
    del start["agent_specs"]["red"]["name"]
    assert type_labels(list(sides_from_start(start))) == [RULER, "human"]


def test_a_side_is_read_from_its_declared_facts_never_its_arguments() -> None:
    facts = SideFacts(
        kind="aria",
        backend="openai:gpt-x",
        model="gpt-x",
        billed=True,
        profile="reference",
        settings={"profile": "reference", "zeta": "z", "alpha": "a", "window_k": 10},
        axes=["zeta", "alpha"],
    )
    start: dict[str, Any] = {
        "agents": ["red", "blue"],
        "roles": {"red": "impostor", "blue": "crewmate"},
        # arguments that say otherwise: never read
        "config": {"impostor": {"agent": "aria", "args": {"backend": "openai:other"}}},
        "sides": {
            "impostor": facts.model_dump(mode="json"),
            "crew": SideFacts(kind="scripted", backend="scripted").model_dump(mode="json"),
        },
    }
    imp, crew = sides_from_start(start)
    assert (imp.agent, imp.backend, imp.axes) == ("aria", "openai:gpt-x", ("zeta", "alpha"))
    assert dict(imp.settings)["window_k"] == "10" and crew.agent == RULER
    # the declared axes come after the profile, in the order the kind declared them
    other = PlayedSide("aria", "openai:gpt-x", (("alpha", "b"), ("profile", "p"), ("zeta", "y")))
    assert type_labels([imp, other]) == [
        "gpt-x[profile=reference,zeta=z,alpha=a,window_k=10]",
        "gpt-x[profile=p,zeta=y,alpha=b,window_k=-]",
    ]
    with pytest.raises(ValueError, match="no declared facts for the impostor side"):
        sides_from_start({**start, "sides": {}})


# ---------------------------------------------------------------------- fake-world studies
def _rank(*args: str) -> subprocess.CompletedProcess[str]:
    """`mineamongus rank ARGS` as a user runs it (its own process, a wide terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "rank", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "220"},
    )


def _rank_here(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """`mineamongus rank ARGS` in this process: its exit code and what it wrote to stderr
    (for the checks that read no table)."""
    from controller.cli import main

    try:
        code = main(["rank", *args])
    except SystemExit as exc:  # refused by the argument parser
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def round_robin(fake_games: GameStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's shared mock round robin (`testkit.games.MOCK_ROUND_ROBIN`): 3 models
    served by the mock OpenAI endpoint in a round robin, an arm of one model against the
    scripted crew, and a scripted control arm; 2 seeds, 12 steps. A private copy: `rank`
    writes its board into the study."""
    return fake_games.copy_study_to(tmp_path_factory.mktemp("rank-rr") / "study", MOCK_ROUND_ROBIN)


def test_rank_prints_both_roles_of_every_model_and_the_ruler(round_robin: Path) -> None:
    done = _rank(str(round_robin), "--boot", "200")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Per-role ratings" in out
    lines = [line for line in out.splitlines() if line.startswith("│")]
    cells = [[c.strip() for c in line.strip("│").split("│")] for line in lines]
    seen = {(c[0].rstrip(" *"), c[1]) for c in cells}
    for model in ("mock-a", "mock-b", "mock-c", RULER):
        assert (model, "impostor") in seen and (model, "crew") in seen, seen
    table = pd.read_csv(round_robin / "ranking" / "ratings.csv")
    assert (round_robin / "ranking" / "ratings.parquet").is_file()
    assert len(table) == 8 and table["group"].notna().all()
    assert table["few_games"].all()  # 6-8 games a row, under the default 30
    by = table.set_index(["player", "role"])
    assert by.loc[("mock-a", "impostor"), "games"] == 8  # 6 round-robin + 2 against the ruler
    assert by.loc[("mock-a", "impostor"), "vs_ruler_games"] == 2
    assert by.loc[(RULER, "crew"), "games"] == 4 and by.loc[(RULER, "impostor"), "games"] == 2
    assert table.groupby("role")["games"].sum().tolist() == [22, 22]
    assert "fewer than 30 games" in out and "2 seed cluster(s)" in out
    # every row's figures are the libraries' own fit of the same games
    from annotation.ratings import load_studies

    matches = load_studies([round_robin])
    board = Board(table, 22, 2, "seed", 200, 0, 30)
    check_against_libraries(board, matches.games)


def test_analyze_writes_the_same_board_with_its_figure(
    round_robin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import annotation.report.ratings  # noqa: F401  (registers core.ratings)
    from annotation.report.analysis import analyze
    from annotation.report.figures import figure_title

    analyze([round_robin], tmp_path, n_boot=200, progress=False)
    index = pd.read_csv(tmp_path / "tables" / "results_index.csv").set_index("result")
    assert index.loc["core.ratings", "status"] == "ok"
    ours = pd.read_csv(tmp_path / "tables" / "ratings.csv")
    assert _rank_here(capsys, str(round_robin), "--boot", "200")[0] == 0
    rank = pd.read_csv(round_robin / "ranking" / "ratings.csv")
    cols = ["player", "role", "games", "wins", "bt", "bt_low", "bt_high", "mu", "rank", "group"]
    pd.testing.assert_frame_equal(ours[cols], rank[cols])
    png = tmp_path / "figures" / "ratings.png"
    assert figure_title(png).startswith("Per-role Bradley-Terry ratings")
    import matplotlib.image as mpimg

    image = mpimg.imread(png)
    assert image.shape[0] > 100 and float(image[..., :3].std()) > 0.01
    assert "](figures/ratings.png)" in (tmp_path / "report.md").read_text()


def test_rank_refuses_several_studies_without_out(
    round_robin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _rank_here(capsys, str(round_robin), str(round_robin))
    assert code == 2 and "--out" in err
    assert _rank_here(capsys, str(round_robin), "--boot", "10")[0] == 2


def test_a_game_with_a_person_seat_is_a_human_row(
    fake_games: GameStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = {
        "name": "rank-human",
        "world": "fake",
        "seeds": [5],
        "base": {"frames": "off", "rules": {"max_steps": 10}},
        "arms": [
            {"name": "scripted"},
            {
                "name": "with-human",
                "overrides": {"seats": {"red": {"agent": "human", "args": {"timeout_s": 0.2}}}},
            },
            {
                "name": "with-alice",
                "overrides": {
                    "seats": {
                        "red": {"agent": "human", "args": {"timeout_s": 0.2, "name": "alice"}}
                    }
                },
            },
        ],
    }
    study = fake_games.copy_study_to(tmp_path / "study", spec)
    out = tmp_path / "board"
    # In this process (`rank` in its own process: the round-robin test above).
    from controller.cli import main

    code = main(["rank", str(study), "--out", str(out), "--boot", "100"])
    done = capsys.readouterr()
    assert code == 0, done.err
    table = pd.read_csv(out / "ratings.csv")
    human = table[table["player"] == "human"]
    assert len(human) == 1 and human.iloc[0]["games"] == 1
    assert human.iloc[0]["mixed_games"] == 1 and "a person among agents" in human.iloc[0]["note"]
    assert (table.loc[table["player"] == RULER, "games"] >= 1).all()
    assert any(line.startswith("│ human") for line in done.out.splitlines())
    # A person who gave a name is a row of their own.
    alice = table[table["player"] == "human:alice"]
    assert len(alice) == 1 and alice.iloc[0]["games"] == 1


def test_tables_older_than_a_finished_game_are_stale(tmp_path: Path) -> None:
    """A game played into a study after its tables were written makes `rank` rebuild
    them (planted: a summary newer than the tables)."""
    import os

    from annotation.ratings import _tables_stale

    results = tmp_path / "results"
    results.mkdir()
    assert _tables_stale(tmp_path)  # no tables yet
    game = tmp_path / "games" / "arm" / "seed1-try1"
    game.mkdir(parents=True)
    (game / "summary.json").write_text("{}")
    os.utime(game / "summary.json", (1000, 1000))
    for name in ("games.parquet", "seats.parquet"):
        (results / name).write_text("")
        os.utime(results / name, (2000, 2000))
    assert not _tables_stale(tmp_path)
    late = tmp_path / "games" / "human-ada" / "seed3-try1"
    late.mkdir(parents=True)
    (late / "summary.json").write_text("{}")
    os.utime(late / "summary.json", (3000, 3000))
    assert _tables_stale(tmp_path)
