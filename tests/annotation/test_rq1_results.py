"""RQ1's registered results on a hand-built study of the paper's shape: 2 backbones x 2
crew corners x 16 impostor configurations x 3 repetitions (+ a scripted control arm),
checked against the arithmetic done here by hand."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from annotation import stats
from annotation.deception.codebook import codebook
from annotation.report import rq1
from annotation.report.figures import figure_title
from annotation.report.results import RESULTS, StudyData, study_design
from controller.stats import rate_interval

BACKBONES = ("openai:gpt-4.1-mini", "openai-compatible:qwen3.6-27b")
CORNERS = (("semantic", "reactive"), ("window", "hierarchical"))
LEVELS = {
    "memory": ("window", "semantic"),
    "planning": ("reactive", "hierarchical"),
    "reflection": ("off", "on"),
    "prompt": ("deterministic", "minimal"),
}


def rq1_games(win: object = None, *, seed: int = 0) -> pd.DataFrame:
    """The paper's grid, 3 seeds per configuration, and 3 control games. `win` maps a row
    to its impostor win (default: random at 0.5)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for b, (cm, cp), *imp in itertools.product(BACKBONES, CORNERS, *LEVELS.values()):
        for rep in range(3):
            row = {
                "game_id": f"g{len(rows)}",
                "arm": f"{b}-{cm}-{'-'.join(str(v) for v in imp)}",
                "seed": rep,
                "status": "ok",
                "impostor_model": b,
                "crew_model": b,
                "kills": int(rng.integers(0, 3)),
                "meetings": 1,
                "steps": 40,
                "tasks_done": 10,
                "impostor.state": "privileged",
                "crew.state": "privileged",
                "crew.memory": cm,
                "crew.planning": cp,
                "crew.reflection": "on",
                "crew.prompt": "minimal",
                **{f"impostor.{a}": v for a, v in zip(LEVELS, imp, strict=True)},
            }
            row["impostor_win"] = int(win(row)) if callable(win) else int(rng.random() < 0.5)
            rows.append(row)
    for rep in range(3):
        rows.append(
            {"game_id": f"c{rep}", "arm": "control", "seed": rep, "status": "ok",
             "impostor_model": "scripted", "crew_model": "scripted", "kills": 1, "meetings": 1,
             "steps": 40, "tasks_done": 10, "impostor_win": 1}
        )  # fmt: skip
    return pd.DataFrame(rows)


def study(tmp_path: Path, games: pd.DataFrame, *, filtered: bool = False) -> StudyData:
    """A StudyData over `games`: E counts follow the win, the rest are noise; one
    accepted finding per counted atom with a phase."""
    book = codebook()
    rng = np.random.default_rng(1)
    ids = list(games["game_id"])
    counts = pd.DataFrame(0, index=pd.Index(ids, name="game_id"), columns=book.letters)
    counts["E"] = games["impostor_win"].to_numpy() * 2 + rng.integers(0, 2, len(ids))
    counts["A"] = rng.integers(0, 4, len(ids))
    counts["L"] = rng.integers(0, 2, len(ids))
    phases = [p.name for p in book.phases]
    findings = [
        {"game_id": gid, "atom": a, "step": 1, "actor": "red", "source": "judge:j",
         "kind": "judge", "accepted": True, "phase": phases[(i + k) % len(phases)]}
        for i, gid in enumerate(ids)
        for a in ("A", "E", "L")
        for k in range(int(counts.at[gid, a]))
    ]  # fmt: skip
    out = tmp_path / "out"
    (out / "figures").mkdir(parents=True, exist_ok=True)
    return StudyData(
        games=games,
        findings=pd.DataFrame(findings),
        counts=counts,
        counts_source="judge:j",
        counts_filtered=(counts.assign(E=counts["E"] // 2) if filtered else None),
        book=book,
        out=out,
        figdir=out / "figures",
        n_boot=400,
        seed=0,
        n_perm=200,
    )


def test_the_study_is_rq1_and_the_frame_labels_cells(tmp_path: Path) -> None:
    games = rq1_games()
    assert study_design(games) == "rq1"
    frame = rq1.rq1_frame(study(tmp_path, games))
    assert frame.left_out == 3  # the control arm has no impostor axes
    assert frame.axes == [f"impostor.{a}" for a in LEVELS]  # the paper's order
    assert frame.crews == ["semantic+reactive", "window+hierarchical"]
    assert frame.crew_name == "crew.memory+planning"
    assert len(frame.cells()) == 4 and len(frame.games) == 2 * 2 * 16 * 3


def test_cell_win_rates_by_hand_with_the_paper_beside(tmp_path: Path) -> None:
    games = rq1_games(seed=3)
    data = study(tmp_path, games)
    got = rq1.cell_win_rates(data)
    table = got.tables["rq1_cell_win_rates"].set_index(["backbone", "crew"])
    cell = games[(games["impostor_model"] == BACKBONES[0]) & (games["crew.memory"] == "window")]
    row = table.loc[(BACKBONES[0], "window+hierarchical")]
    assert row["n_games"] == 48 and row["win_rate"] == pytest.approx(cell["impostor_win"].mean())
    ci = rate_interval(list(cell["impostor_win"].astype(float)), list(cell["seed"].astype(str)))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(ci.bounds())
    first = table.loc[(BACKBONES[0], "semantic+reactive"), "win_rate"]
    assert row["delta_vs_first_crew"] == pytest.approx(row["win_rate"] - first)
    assert row["paper_win_rate"] == 0.25  # GPT-4.1-mini, (window, hierarchical)
    assert table.loc[(BACKBONES[1], "semantic+reactive"), "paper_win_rate"] == 0.44
    assert table.loc[("all", "all"), "n_games"] == 192  # the control games left out
    assert figure_title(got.figures[0]).startswith("Impostor win rate per backbone")


def test_marginals_per_cell_and_pooled(tmp_path: Path) -> None:
    games = rq1_games(seed=4)
    got = rq1.axis_marginals(study(tmp_path, games))
    table = got.tables["rq1_axis_marginals"]
    corners = ("semantic+reactive", "window+hierarchical")
    cells = {f"{b} / {c}" for b in BACKBONES for c in corners}
    assert set(table["scope"]) == cells | {"pooled"}
    pooled = table[(table["scope"] == "pooled") & (table["axis"] == "impostor.reflection")]
    on = games[games["impostor.reflection"] == "on"]
    assert pooled.set_index("level").at["on", "win_rate"] == pytest.approx(
        on["impostor_win"].mean()
    )
    assert (table.groupby(["scope", "axis"]).size() == 2).all()  # two levels each
    path = got.figures[0]
    assert "per backbone x crew cell and pooled" in figure_title(path)


def test_z_tests_follow_the_preregistered_directions(tmp_path: Path) -> None:
    table = rq1.z_tests(study(tmp_path, rq1_games(seed=5))).tables["rq1_z_tests"]
    pooled = table[table["scope"] == "pooled"].set_index("axis")
    assert pooled.at["impostor.memory", "level"] == "semantic"  # against window
    assert pooled.at["impostor.memory", "alternative"] == "smaller"  # window > semantic
    assert pooled.at["impostor.planning", "alternative"] == "larger"
    assert pooled.at["impostor.reflection", "alternative"] == "larger"
    assert pooled.at["impostor.prompt", "alternative"] == "two-sided"
    assert math.isnan(pooled.at["impostor.prompt", "p_one_sided"])
    # the crew corner: one merged contrast, two-sided, never crew.memory on its own
    assert pooled.at["crew.memory+planning", "alternative"] == "two-sided"
    assert not table["axis"].isin(["crew.memory", "crew.planning"]).any()
    cells = table[table["scope"] != "pooled"]
    assert set(cells["axis"]) == {f"impostor.{a}" for a in LEVELS}
    w, n = (
        int(pooled.at["impostor.planning", "wins"]),
        int(pooled.at["impostor.planning", "n_games"]),
    )
    w0, n0 = (
        int(pooled.at["impostor.planning", "wins_ref"]),
        int(pooled.at["impostor.planning", "n_ref"]),
    )
    _, p = stats.two_proportion_z(w, n, w0, n0, "larger")
    assert pooled.at["impostor.planning", "p_one_sided"] == pytest.approx(p)


def test_paired_bootstrap_pairs_and_delta_by_hand(tmp_path: Path) -> None:
    games = rq1_games(seed=6)
    got = rq1.paired_bootstrap(study(tmp_path, games))
    table = got.tables["rq1_paired_bootstrap"].set_index(["scope", "axis"])
    row = table.loc[("pooled", "impostor.memory")]
    assert (row["first"], row["second"], row["alternative"]) == ("window", "semantic", "larger")
    assert row["n_pairs"] == 2 * 2 * 8  # 8 pairs per cell: the other three axes' corners
    aria = games[games["impostor.memory"].notna()]
    keys = ["impostor_model", "crew.memory", "impostor.planning", "impostor.reflection",
            "impostor.prompt"]  # fmt: skip
    rates = aria.groupby([*keys, "impostor.memory"])["impostor_win"].mean().unstack()
    assert row["delta"] == pytest.approx((rates["window"] - rates["semantic"]).mean())
    assert row["ci_low"] <= row["delta"] <= row["ci_high"]
    cells = table.drop(index="pooled", level="scope")
    assert (cells["n_pairs"] == 8).all() and len(cells) == 4 * 4
    prompt = table.xs("impostor.prompt", level="axis")
    assert set(prompt["alternative"]) == {"two-sided"}
    assert set(prompt["first"]) == {"deterministic"}
    assert len(got.tables["rq1_matched_pairs"]) == 4 * 32


def test_a_planted_axis_effect_is_found_one_sided(tmp_path: Path) -> None:
    def win(row: dict[str, object]) -> bool:  # window memory always wins, semantic never
        return row["impostor.memory"] == "window"

    table = rq1.paired_bootstrap(study(tmp_path, rq1_games(win))).tables["rq1_paired_bootstrap"]
    row = table.set_index(["scope", "axis"]).loc[("pooled", "impostor.memory")]
    assert row["delta"] == 1.0 and row["p"] == 0.0 and "p < 1/400" in row["note"]
    other = table.set_index(["scope", "axis"]).loc[("pooled", "impostor.planning")]
    assert other["delta"] == 0.0 and other["p"] == 1.0  # all at 0: the wrong side


def test_cluster_paired_bootstrap_p_is_the_share_on_the_wrong_side() -> None:
    # Two pairs, +1 and -1: a resampled mean is <= 0 unless both draws are +1 (p = 3/4).
    got = stats.cluster_paired_bootstrap([1.0, -1.0], "larger", n_boot=20000, seed=2)
    assert got.delta == 0.0 and got.n_pairs == 2
    assert got.p == pytest.approx(0.75, abs=0.01)
    two = stats.cluster_paired_bootstrap([1.0, -1.0], "two-sided", n_boot=20000, seed=2)
    assert two.p == 1.0
    none = stats.cluster_paired_bootstrap([], "larger")
    assert none.n_pairs == 0 and math.isnan(none.p)


def test_atom_table_has_the_23_atoms_both_counts_and_the_paper(tmp_path: Path) -> None:
    games = rq1_games(seed=7)
    data = study(tmp_path, games, filtered=True)
    got = rq1.atoms(data)
    table = got.tables["rq1_atoms"].set_index("atom")
    assert len(table) == 23 and table.loc["E", "rank"] == 1  # E follows the win
    aria = data.counts.loc[games.loc[games["impostor.memory"].notna(), "game_id"]]
    assert table.loc["E", "occurrences"] == int(aria["E"].sum())
    assert table.loc["E", "occurrences_filtered"] == int((aria["E"] // 2).sum())
    assert table.loc["E", "r"] > 0.5 and table.loc["E", "paper_r"] == 0.434
    assert table.loc["C", "paper_occurrences"] == 1803
    assert table.loc["E", "n_games"] == 192
    assert figure_title(got.figures[0]).startswith("The 23 atoms")


def test_arcs_over_the_five_phases(tmp_path: Path) -> None:
    data = study(tmp_path, rq1_games(seed=8))
    got = rq1.arcs(data)
    table = got.tables["rq1_arcs"]
    assert list(dict.fromkeys(table["phase"])) == [p.name for p in codebook().phases]
    aria_ids = set(rq1.rq1_frame(data).games["game_id"])
    f = data.findings[data.findings["game_id"].isin(aria_ids)]
    assert table["occurrences"].sum() == len(f)
    assert table["per_game"].sum() == pytest.approx(len(f) / len(aria_ids))
    assert "five phases" in figure_title(got.figures[0])


def test_state_table_shows_an_ego_collapse(tmp_path: Path) -> None:
    games = rq1_games(seed=9)
    ego = games.index[(games["impostor.memory"] == "semantic").to_numpy()]
    games.loc[ego, "impostor.state"] = "ego"
    games.loc[ego, "kills"] = 0
    games.loc[ego, "impostor_win"] = 0
    table = rq1.state(study(tmp_path, games)).tables["rq1_state"].set_index(["backbone", "state"])
    row = table.loc[(BACKBONES[0], "ego")]
    assert row["kills"] == 0 and row["zero_kill_games"] == row["n_games"] == 48
    assert row["win_rate"] == 0.0


def test_rq1_results_register_for_rq1_and_the_state_check_for_other_studies() -> None:
    names = [n for n, spec in RESULTS.items() if n.startswith("rq1.")]
    assert len(names) == 7
    assert all(RESULTS[n].designs == ("rq1",) for n in names if n != "rq1.state")
    assert RESULTS["rq1.state"].designs == ("rq1", "other")


def test_the_ego_collapse_study_gets_its_table(tmp_path: Path) -> None:
    """ego_collapse.yaml: impostors fixed at ego state, only the backbone varies (a study
    of no RQ design); the state result reports its kills per backbone."""
    games = rq1_games(seed=10)
    ego = games[
        (games["impostor.memory"] == "semantic") & (games["impostor.planning"] == "reactive")
    ]
    ego = ego[(ego["impostor.reflection"] == "on") & (ego["impostor.prompt"] == "minimal")]
    ego = ego[ego["crew.memory"] == "semantic"].assign(**{"impostor.state": "ego"}, kills=0)
    assert study_design(ego) == "other" and len(ego) == 2 * 3
    table = rq1.state(study(tmp_path, ego)).tables["rq1_state"].set_index("backbone")
    assert set(table.index) == set(BACKBONES) and (table["state"] == "ego").all()
    assert (table["kills"] == 0).all() and (table["zero_kill_games"] == 3).all()
    none = rq1.state(study(tmp_path, rq1_games().tail(3).reset_index(drop=True)))
    assert not none.tables and not none.sections  # no ARIA impostor: nothing to say


def test_a_study_without_aria_impostors_gets_a_note_not_a_crash(tmp_path: Path) -> None:
    games = rq1_games().tail(3).reset_index(drop=True)  # the control games alone
    got = rq1.cell_win_rates(study(tmp_path, games))
    assert not got.tables and "nothing to show" in str(got.sections[0].blocks[0])
