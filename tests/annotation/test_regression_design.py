"""The logistic regression's terms come from the design: RQ1's confounded crew corners
and self-play backbones merged (with a warning), nested and linearly dependent terms
dropped, separated and degenerate fits reported as such, never as huge SEs."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from annotation import stats


def rq1_design(n_rep: int = 3, seed: int = 0) -> pd.DataFrame:
    """RQ1's grid: backbones in self-play x crew corners (crew.memory and crew.planning
    move together) x 16 impostor configurations x `n_rep` seeds; outcomes drawn with
    a planning effect."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    corners = (("semantic", "reactive"), ("window", "hierarchical"))
    grid = itertools.product(
        ("m1", "m2"),
        corners,
        ("window", "semantic"),
        ("reactive", "hierarchical"),
        ("off", "on"),
        ("deterministic", "minimal"),
    )
    for model, (cm, cp), mem, plan, refl, prompt in grid:
        for rep in range(n_rep):
            p = 0.35 + 0.2 * (plan == "hierarchical") + 0.1 * (model == "m2")
            rows.append(
                {
                    "game_id": f"g{len(rows)}",
                    "seed": rep,
                    "impostor_model": model,
                    "crew_model": model,
                    "crew.memory": cm,
                    "crew.planning": cp,
                    "impostor.memory": mem,
                    "impostor.planning": plan,
                    "impostor.reflection": refl,
                    "impostor.prompt": prompt,
                    "impostor_win": int(rng.random() < p),
                }
            )
    return pd.DataFrame(rows)


def test_the_naive_model_on_rq1s_design_cannot_be_estimated() -> None:
    """Why the design check exists: every axis as its own dummy is a singular design."""
    g = rq1_design()
    cols = [c for c in g.columns if c.startswith(("impostor.", "crew."))]
    x = pd.get_dummies(g[cols + ["impostor_model", "crew_model"]], drop_first=True, dtype=float)
    x = sm.add_constant(x)
    assert np.linalg.matrix_rank(x.to_numpy()) < x.shape[1]


def test_confounded_crew_axes_and_backbone_become_one_term_each_with_a_warning() -> None:
    g = rq1_design()
    table = stats.logistic_all_axes(g).set_index("term")
    assert table["error"].eq("").all(), table["error"].iloc[0]
    assert "crew.memory+planning_window+hierarchical" in table.index
    assert "backbone_m2" in table.index
    assert not any(
        t.startswith(("crew.memory_", "crew.planning_", "crew_model")) for t in table.index
    )
    assert len(table) == 1 + 4 + 1 + 1  # constant, 4 impostor axes, crew corner, backbone
    assert np.isfinite(table[["coef", "se", "ci_low", "ci_high"]].to_numpy()).all()
    assert (table["se"] < stats.SE_MAX).all()
    warning = table["warning"].iloc[0]
    assert "crew.memory and crew.planning always change together" in warning
    assert "perfectly confounded" in warning
    assert table.loc["crew.memory+planning_window+hierarchical", "from_columns"] == (
        "crew.memory, crew.planning"
    )
    # the merged term is the same fit as one dummy for the corner, by hand
    x = pd.DataFrame(
        {
            "const": 1.0,
            "mem": (g["impostor.memory"] == "semantic").astype(float),
            "plan": (g["impostor.planning"] == "hierarchical").astype(float),
            "refl": (g["impostor.reflection"] == "on").astype(float),
            "prompt": (g["impostor.prompt"] == "minimal").astype(float),
            "corner": (g["crew.memory"] == "window").astype(float),
            "model": (g["impostor_model"] == "m2").astype(float),
        }
    )
    fit = sm.Logit(g["impostor_win"].to_numpy(float), x).fit(disp=0)
    assert table.loc["crew.memory+planning_window+hierarchical", "coef"] == pytest.approx(
        fit.params["corner"], rel=1e-5
    )
    assert table.loc["impostor.planning_hierarchical", "se"] == pytest.approx(
        fit.bse["plan"], rel=1e-5
    )  # 3 seed clusters: the naive SE


def test_design_notes_say_what_was_merged_kept_and_constant() -> None:
    g = rq1_design().assign(**{"crew.reflection": "on"})
    notes = stats.logit_design(g).set_index("term")
    assert notes.at["crew.memory+planning", "status"] == "merged"
    assert notes.at["backbone", "status"] == "merged"
    assert notes.at["impostor.memory", "status"] == "kept"
    design = stats.design_terms(g, ["crew.reflection", "crew.memory"])
    assert design.notes.set_index("term").at["crew.reflection", "status"] == "constant"


def test_marginals_report_the_crew_contrast_once_under_the_merged_name() -> None:
    table = stats.axis_marginals(rq1_design())
    assert "crew.memory+planning" in set(table["axis"])
    assert not table["axis"].isin(["crew.memory", "crew.planning"]).any()
    crew = table[table["axis"] == "crew.memory+planning"]
    assert list(crew["level"]) == ["semantic+reactive", "window+hierarchical"]
    assert crew["alternative"].iloc[1] == "two-sided"


def test_a_nested_term_is_dropped_with_its_reason() -> None:
    g = rq1_design()
    # a coarser label that one column fixes (reflection by the 4-level group): nested
    g["impostor.group"] = g["impostor.reflection"] + "-" + g["impostor.prompt"]
    g["impostor.size"] = np.where(g["impostor.reflection"] == "on", "small", "big")
    design = stats.design_terms(g, ["impostor.group", "impostor.size"])
    notes = design.notes.set_index("term")
    assert notes.at["impostor.size", "status"] == "dropped"
    assert "fixed by impostor.group" in notes.at["impostor.size", "reason"]
    assert [t.name for t in design.terms] == ["impostor.group"]


def test_a_linear_dependence_no_pair_of_columns_shows_is_dropped() -> None:
    """Two 3-level columns whose 'not baseline' indicators coincide: neither fixes the
    other, yet their dummies are linearly dependent; the rank check drops one."""
    pairs = [("0", "0"), ("1", "1"), ("2", "2"), ("1", "2"), ("2", "1")] * 12
    rng = np.random.default_rng(4)
    g = pd.DataFrame(
        {
            "game_id": [f"g{i}" for i in range(len(pairs))],
            "seed": np.arange(len(pairs)),
            "impostor.memory": [a for a, _ in pairs],
            "impostor.planning": [b for _, b in pairs],
            "impostor_win": (rng.random(len(pairs)) < 0.5).astype(int),
        }
    )
    notes = stats.logit_design(g).set_index("term")
    dropped = notes[notes["status"] == "dropped"]
    assert list(dropped.index) == ["impostor.planning_2"]
    assert "linear combination" in dropped["reason"].iloc[0]
    table = stats.logistic_all_axes(g)
    assert table["error"].eq("").all(), table["error"].iloc[0]
    assert "impostor.planning_2" not in set(table["term"])
    assert "linear combination" in table["warning"].iloc[0]
    assert np.isfinite(table["se"]).all()


def test_separation_is_reported_not_printed_as_a_huge_se() -> None:
    g = rq1_design()
    g.loc[g["impostor.reflection"] == "on", "impostor_win"] = 1  # every reflection-on game won
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = sm.add_constant((g["impostor.reflection"] == "on").astype(float).to_numpy())
        raw = sm.Logit(g["impostor_win"].to_numpy(float), x).fit(disp=0, maxiter=100)
    assert raw.bse[1] > 100  # what a plain fit prints
    table = stats.logistic_all_axes(g)
    assert table["error"].str.startswith("separation").all()
    assert "impostor.reflection_on: all 96 game(s) a win" in table["error"].iloc[0]
    assert table["se"].isna().all() and table["coef"].isna().all()


def test_a_degenerate_fit_is_withheld() -> None:
    g = rq1_design()
    g["impostor_win"] = 0
    table = stats.logistic_all_axes(g)
    assert table["error"].str.contains("all 192 game\\(s\\) are impostor losses").all()
    assert table["se"].isna().all()


def test_near_collinear_terms_are_flagged_by_the_condition_number() -> None:
    rng = np.random.default_rng(3)
    n = 4000
    a = rng.random(n) < 0.5
    b = a.copy()
    flip = rng.choice(n, size=4, replace=False)  # b agrees with a in all but 4 games
    b[flip] = ~b[flip]
    g = pd.DataFrame(
        {
            "game_id": [f"g{i}" for i in range(n)],
            "seed": np.arange(n),
            "impostor.memory": np.where(a, "semantic", "window"),
            "impostor.planning": np.where(b, "hierarchical", "reactive"),
            "impostor_win": (rng.random(n) < 0.5).astype(int),
        }
    )
    table = stats.logistic_all_axes(g)
    assert "condition number" in table["warning"].iloc[0]
    assert table["error"].eq("").all() or table["error"].str.startswith("degenerate").all()


def test_the_backbone_enters_only_when_more_than_one_model_plays() -> None:
    g = rq1_design()
    one = g[g["impostor_model"] == "m1"]
    assert not any(str(t).startswith("backbone") for t in stats.logistic_all_axes(one)["term"])
    named = g.assign(**{"design.backbone": g["impostor_model"].map({"m1": "mini", "m2": "qwen"})})
    terms = set(stats.logistic_all_axes(named)["term"])
    assert "backbone_qwen" in terms and not any("impostor_model" in str(t) for t in terms)


def test_design_terms_leave_out_games_without_the_axes() -> None:
    g = rq1_design()
    control = pd.DataFrame(
        {"game_id": ["c1", "c2"], "seed": [0, 1], "impostor_model": "scripted",
         "crew_model": "scripted", "impostor_win": [1, 0]}
    )  # fmt: skip
    both = pd.concat([g, control], ignore_index=True)
    table = stats.logistic_all_axes(both)
    assert table["error"].eq("").all() and table["n_games"].iloc[0] == len(g)
    assert "2 game(s) lack these columns" in table["warning"].iloc[0]
    assert math.isfinite(table["coef"].iloc[0])
