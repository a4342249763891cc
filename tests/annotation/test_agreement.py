"""Agreement metrics against sklearn/scipy/krippendorff; the human label format."""

from __future__ import annotations

import math
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats as st
from sklearn.metrics import (  # type: ignore[import-untyped]
    cohen_kappa_score,
    f1_score,
    precision_score,
    recall_score,
)

from annotation.deception import agreement
from annotation.deception.human import label_counts, read_labels, resolve_games

ATOMS = list("ABCDEF")


def _raters(seed: int = 0, n_games: int = 30) -> dict[str, pd.DataFrame]:
    """A human, a noisy second human and a judge that over-labels (so the F1 direction
    matters): per-game counts."""
    rng = np.random.default_rng(seed)
    idx = pd.Index([f"g{i}" for i in range(n_games)])
    truth = rng.poisson(0.6, (n_games, len(ATOMS)))
    h2 = np.where(rng.random(truth.shape) < 0.15, rng.poisson(0.6, truth.shape), truth)
    judge = truth + rng.binomial(1, 0.35, truth.shape)  # extra positives: high recall
    return {
        "human:h1": pd.DataFrame(truth, index=idx, columns=ATOMS),
        "human:h2": pd.DataFrame(h2, index=idx, columns=ATOMS),
        "judge:x": pd.DataFrame(judge, index=idx, columns=ATOMS),
    }


KINDS = {"human:h1": "human", "human:h2": "human", "judge:x": "judge"}


def test_kappa_known_value_and_sklearn() -> None:
    # 2x2 table [[20, 5], [10, 15]]: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4
    a = np.array([1] * 25 + [0] * 25, dtype=bool)
    b = np.array([1] * 20 + [0] * 5 + [1] * 10 + [0] * 15, dtype=bool)
    assert agreement.cohen_kappa(a, b) == pytest.approx(0.4)
    assert agreement.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert agreement.cohen_kappa(a, a) == pytest.approx(1.0)
    assert math.isnan(agreement.cohen_kappa(np.zeros(5, bool), np.zeros(5, bool)))


def test_weighted_f1_known_value_and_sklearn() -> None:
    ref = pd.DataFrame({"X": [1, 1, 0, 0], "Y": [1, 0, 0, 0], "Z": [0, 0, 0, 0]})
    pred = pd.DataFrame({"X": [2, 1, 0, 0], "Y": [1, 1, 0, 0], "Z": [0, 0, 1, 0]})
    # X: F1 1 (support 2); Y: P 0.5, R 1, F1 2/3 (support 1); Z weighs 0
    assert agreement.weighted_f1(ref, pred) == pytest.approx((2 * 1 + 1 * 2 / 3) / 3)
    sk = f1_score(ref.to_numpy() > 0, pred.to_numpy() > 0, average="weighted", zero_division=0)
    assert agreement.weighted_f1(ref, pred) == pytest.approx(sk)


def test_spearman_known_value() -> None:
    assert agreement.spearman(np.array([1, 2, 3, 4]), np.array([10, 20, 30, 40])) == 1.0
    assert agreement.spearman(np.array([1, 2, 3, 4]), np.array([4, 3, 2, 1])) == -1.0
    assert math.isnan(agreement.spearman(np.array([1, 1, 1]), np.array([1, 2, 3])))


def test_krippendorff_known_value() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders x 12
    # units, nominal alpha = 0.743.
    nan = np.nan
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    assert agreement.krippendorff_alpha(np.array(data)) == pytest.approx(0.743, abs=1e-3)


def test_binary_alpha_closed_form_equals_the_package() -> None:
    rng = np.random.default_rng(3)
    present = (rng.random((4, 25, 6)) < 0.3).astype(float)
    present[rng.random(present.shape) < 0.2] = np.nan  # some units unrated
    parts = agreement._alpha_parts(present).sum(axis=0)
    ours = float(agreement.alpha_from_parts(parts))
    ref = krippendorff.alpha(
        reliability_data=present.reshape(4, -1), level_of_measurement="nominal"
    )
    assert ours == pytest.approx(ref)


def test_judge_human_f1_takes_the_human_as_reference_both_directions_shown() -> None:
    r = _raters()
    table = agreement.agreement_table(r, KINDS, ATOMS, n_boot=200, seed=1)
    row = table[table["pair"] == "judge:x vs human:h1"].iloc[0]
    assert row["kind"] == "judge-human"
    assert row["reference"] == "human:h1" and row["other"] == "judge:x"
    human = r["human:h1"].to_numpy() > 0
    judge = r["judge:x"].to_numpy() > 0
    as_ref = f1_score(human, judge, average="weighted", zero_division=0)
    reversed_ = f1_score(judge, human, average="weighted", zero_division=0)
    assert row["f1_weighted"] == pytest.approx(as_ref)
    assert row["f1_weighted_reversed"] == pytest.approx(reversed_)
    assert row["f1_weighted"] != pytest.approx(row["f1_weighted_reversed"])  # it matters here
    assert row["kappa"] == pytest.approx(cohen_kappa_score(human.ravel(), judge.ravel()))
    pooled = st.spearmanr(r["human:h1"].to_numpy().ravel(), r["judge:x"].to_numpy().ravel())
    assert row["spearman"] == pytest.approx(pooled.statistic)
    alpha = krippendorff.alpha(
        reliability_data=np.vstack([human.ravel(), judge.ravel()]).astype(float),
        level_of_measurement="nominal",
    )
    assert row["alpha"] == pytest.approx(alpha)
    assert row["paper_kappa"] == 0.709 and row["paper_f1_weighted"] == 0.792
    hh = table[table["pair"] == "human:h1 vs human:h2"].iloc[0]
    assert hh["kind"] == "human-human" and hh["reference"] == "human:h1"
    assert hh["paper_spearman"] == 0.803


def test_agreement_intervals_are_the_game_bootstrap() -> None:
    """Recompute each interval by resampling games with sklearn, scipy and krippendorff on
    the very resamples the vectorised code draws."""
    r = _raters(seed=4, n_games=20)
    ref, oth = r["human:h1"], r["judge:x"]
    n_boot, seed = 150, 7
    res = agreement.compare(ref, oth, ATOMS, n_boot=n_boot, seed=seed)
    picks = np.random.default_rng(seed).integers(0, len(ref), size=(n_boot, len(ref)))
    x, y = ref.sort_index().to_numpy(), oth.sort_index().to_numpy()  # games in id order
    kap, f1, rho, alp = [], [], [], []
    for idx in picks:
        a, b = x[idx] > 0, y[idx] > 0
        kap.append(cohen_kappa_score(a.ravel(), b.ravel()))
        f1.append(f1_score(a, b, average="weighted", zero_division=0))
        rho.append(st.spearmanr(x[idx].ravel(), y[idx].ravel()).statistic)
        alp.append(
            krippendorff.alpha(
                reliability_data=np.vstack([a.ravel(), b.ravel()]).astype(float),
                level_of_measurement="nominal",
            )
        )
    for name, dist in (("kappa", kap), ("f1_weighted", f1), ("spearman", rho), ("alpha", alp)):
        lo, hi = np.percentile(np.asarray(dist, dtype=float), [2.5, 97.5])
        assert res[f"{name}_low"] == pytest.approx(lo), name
        assert res[f"{name}_high"] == pytest.approx(hi), name
        low, value, high = (float(str(res[k])) for k in (f"{name}_low", name, f"{name}_high"))
        assert low <= value <= high
        assert res[f"{name}_degenerate"] == 0.0


def test_per_atom_agreement_against_sklearn_and_scipy() -> None:
    r = _raters(seed=5)
    table = agreement.per_atom(r["human:h1"], r["judge:x"], ATOMS, n_boot=100).set_index("atom")
    for atom in ATOMS:
        h = r["human:h1"][atom].to_numpy()
        j = r["judge:x"][atom].to_numpy()
        if len(set(h > 0)) > 1 or len(set(j > 0)) > 1:
            assert table.loc[atom, "kappa"] == pytest.approx(cohen_kappa_score(h > 0, j > 0))
        assert table.loc[atom, "f1"] == pytest.approx(f1_score(h > 0, j > 0))
        assert table.loc[atom, "f1_reversed"] == pytest.approx(f1_score(j > 0, h > 0))
        assert table.loc[atom, "spearman"] == pytest.approx(st.spearmanr(h, j).statistic)
        assert table.loc[atom, "kappa_low"] <= table.loc[atom, "kappa_high"]
    # the per-atom rho interval is scipy's Spearman on the same game resamples
    n = len(r["human:h1"])
    picks = np.random.default_rng(0).integers(0, n, size=(100, n))
    h = r["human:h1"].sort_index()["A"].to_numpy()
    j = r["judge:x"].sort_index()["A"].to_numpy()
    dist = [st.spearmanr(h[i], j[i]).statistic for i in picks]
    lo, hi = np.nanpercentile(np.asarray(dist, dtype=float), [2.5, 97.5])
    assert table.loc["A", "spearman_low"] == pytest.approx(lo)
    assert table.loc["A", "spearman_high"] == pytest.approx(hi)
    pairs = agreement.agreement_per_atom(r, KINDS, ATOMS, n_boot=50)
    assert set(pairs["pair"]) == {
        "judge:x vs human:h1",
        "judge:x vs human:h2",
        "human:h1 vs human:h2",
    }
    assert set(pairs[pairs["kind"] == "judge-human"]["reference"]) == {"human:h1", "human:h2"}


def test_precision_and_recall_against_the_human_with_the_game_bootstrap() -> None:
    """QUACK's units: the rater's per-(game, atom) presence scored against the human's,
    pooled over units (sklearn's binary precision and recall), the interval recomputed on
    the very game resamples the vectorised code draws."""
    r = _raters(seed=8, n_games=25)
    ref, oth = r["human:h1"], r["judge:x"]
    res = agreement.compare(ref, oth, ATOMS, n_boot=150, seed=2)
    h, j = ref.to_numpy().ravel() > 0, oth.to_numpy().ravel() > 0
    assert res["precision"] == pytest.approx(precision_score(h, j))
    assert res["recall"] == pytest.approx(recall_score(h, j))
    assert res["precision"] != pytest.approx(res["recall"])  # the judge over-labels
    assert (res["n_tp"], res["n_fp"], res["n_fn"]) == (
        int((h & j).sum()),
        int((~h & j).sum()),
        int((h & ~j).sum()),
    )
    picks = np.random.default_rng(2).integers(0, len(ref), size=(150, len(ref)))
    x, y = ref.sort_index().to_numpy() > 0, oth.sort_index().to_numpy() > 0
    prec = [precision_score(x[i].ravel(), y[i].ravel(), zero_division=np.nan) for i in picks]
    rec = [recall_score(x[i].ravel(), y[i].ravel(), zero_division=np.nan) for i in picks]
    for name, dist in (("precision", prec), ("recall", rec)):
        lo, hi = np.nanpercentile(np.asarray(dist, dtype=float), [2.5, 97.5])
        assert res[f"{name}_low"] == pytest.approx(lo), name
        assert res[f"{name}_high"] == pytest.approx(hi), name
    # a rater that marks nothing has no precision (never 0 or 1) and recall 0
    none = agreement.compare(ref, oth * 0, ATOMS, n_boot=50)
    assert math.isnan(float(none["precision"])) and none["recall"] == 0.0  # type: ignore[arg-type]


def test_rater_table_puts_each_judge_and_panel_against_each_human() -> None:
    r = _raters(seed=9)
    r["panel:majority"] = r["judge:x"].clip(upper=1)
    r["judge:y"] = r["human:h1"]  # a judge that agrees with h1 exactly
    kinds = {**KINDS, "panel:majority": "panel", "judge:y": "judge"}
    table = agreement.agreement_table(r, kinds, ATOMS, n_boot=100)
    assert "panel-human" in set(table["kind"]) and "judge-panel" in set(table["kind"])
    raters = agreement.rater_table(table, kinds)
    assert list(zip(raters["human"], raters["rater"], strict=True)) == [
        ("human:h1", "judge:x"),
        ("human:h1", "judge:y"),
        ("human:h1", "panel:majority"),
        ("human:h2", "judge:x"),
        ("human:h2", "judge:y"),
        ("human:h2", "panel:majority"),
    ]  # judge-judge, judge-panel and human-human pairs are not rater rows
    exact = raters[(raters["rater"] == "judge:y") & (raters["human"] == "human:h1")].iloc[0]
    for m in agreement.RATER_MEASURES:
        assert exact[m] == pytest.approx(1.0), m
    assert exact["n_fp"] == 0 and exact["n_fn"] == 0
    panel = raters[(raters["rater"] == "panel:majority") & (raters["human"] == "human:h1")]
    h = r["human:h1"].to_numpy().ravel() > 0
    p = r["panel:majority"].to_numpy().ravel() > 0
    assert panel.iloc[0]["precision"] == pytest.approx(precision_score(h, p))
    assert panel.iloc[0]["rater_kind"] == "panel"
    assert agreement.rater_table(pd.DataFrame(), kinds).empty


def test_alpha_over_three_humans_with_interval() -> None:
    r = _raters(seed=6)
    r3 = {**r, "human:h3": r["human:h2"].iloc[:20]}  # h3 read 20 of the 30 games
    kinds = {**KINDS, "human:h3": "human"}
    table = agreement.agreement_table(r3, kinds, ATOMS, n_boot=200)
    row = table[table["pair"].str.startswith("krippendorff")].iloc[0]
    games = sorted(r["human:h1"].index)
    mat = np.vstack(
        [
            np.where(
                r3[h].reindex(index=games, columns=ATOMS).isna(),
                np.nan,
                (r3[h].reindex(index=games, columns=ATOMS) > 0).astype(float),
            ).ravel()
            for h in ("human:h1", "human:h2", "human:h3")
        ]
    )
    assert row["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=mat, level_of_measurement="nominal")
    )
    assert row["alpha_low"] <= row["alpha"] <= row["alpha_high"]


def test_label_files(tmp_path: Path) -> None:
    csv = tmp_path / "labels.csv"
    csv.write_text(
        "annotator,game,atom,step,actor,evidence\n"
        "h1,g1,E,7,Red,killed alone\nh1,g1,l,,red,alibi\nh1,g2,none,,,read it all\n"
    )
    labels = read_labels(csv)
    assert [(lab.atom, lab.step, lab.actor) for lab in labels] == [
        ("E", 7, "red"),
        ("L", None, "red"),
        ("none", None, ""),
    ]
    assert labels[2].nothing_found and not labels[0].nothing_found
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_text('{"annotator": "h2", "game": "g1", "atom": "E", "step": 7, "actor": "red"}\n')
    assert read_labels(jsonl)[0].annotator == "h2"
    bad = tmp_path / "bad.csv"
    bad.write_text("annotator,game,atom,step,actor\nh1,g1,Z,1,red\n")
    with pytest.raises(ValueError, match=r"line 2: field 'atom'.*unknown atom letter 'Z'"):
        read_labels(bad)
    no_actor = tmp_path / "no_actor.csv"
    no_actor.write_text("annotator,game,atom,step,actor\nh1,g1,E,1,\n")
    with pytest.raises(ValueError, match=r"line 2.*actor must not be empty"):
        read_labels(no_actor)
    missing = tmp_path / "missing.csv"
    missing.write_text("annotator,game,step,actor\n")
    with pytest.raises(ValueError, match="missing column"):
        read_labels(missing)


def _games_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "game_id": ["id-a1", "id-b1", "id-c"],
            "folder": ["/runs/t/armA/seed1-try1", "/runs/t/armB/seed1-try1", "/runs/t/armA/s2"],
        }
    )


def test_a_folder_name_shared_by_two_games_is_refused_with_the_candidates() -> None:
    games = _games_table()
    with pytest.raises(ValueError, match=r"'seed1-try1' matches 2 games") as err:
        resolve_games({"seed1-try1"}, games)
    assert "id-a1" in str(err.value) and "id-b1" in str(err.value)
    assert "armA/seed1-try1" in str(err.value) and "armB/seed1-try1" in str(err.value)
    mapping, unknown = resolve_games({"armB/seed1-try1", "id-a1", "s2", "nope"}, games)
    assert mapping == {"armB/seed1-try1": "id-b1", "id-a1": "id-a1", "s2": "id-c"}
    assert unknown == ["nope"]


def test_nothing_found_games_count_as_all_negative(tmp_path: Path) -> None:
    csv = tmp_path / "labels.csv"
    csv.write_text(
        "annotator,game,atom,step,actor,evidence\n"
        "h1,id-a1,E,7,red,\nh1,id-b1,none,,,\nh2,id-a1,E,7,red,\nh2,id-b1,B,2,red,\n"
    )
    got = label_counts(read_labels(csv), _games_table())
    assert sorted(got.counts["h1"].index) == ["id-a1", "id-b1"]
    assert got.counts["h1"].loc["id-b1"].sum() == 0
    assert got.nothing_found["h1"] == ["id-b1"]
    # the all-negative game is a unit of agreement: h1 and h2 disagree on B there
    per = agreement.per_atom(got.counts["h1"], got.counts["h2"], ["B", "E"], n_boot=0)
    row = per.set_index("atom").loc["B"]
    assert row["n_games"] == 2 and row["games_ref"] == 0 and row["games_other"] == 1
    both = tmp_path / "both.csv"
    both.write_text("annotator,game,atom,step,actor,evidence\nh1,id-c,none,,,\nh1,id-c,E,3,red,\n")
    with pytest.raises(ValueError, match=r"'h1' marks game\(s\) id-c both 'none'"):
        label_counts(read_labels(both), _games_table())
