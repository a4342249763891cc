"""Agreement metrics on cases with known values; the human label format."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from annotation import agreement
from annotation.human import read_labels


def test_kappa_known_value() -> None:
    # 2x2 table [[20, 5], [10, 15]]: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4
    a = np.array([1] * 25 + [0] * 25, dtype=bool)
    b = np.array([1] * 20 + [0] * 5 + [1] * 10 + [0] * 15, dtype=bool)
    assert agreement.cohen_kappa(a, b) == pytest.approx(0.4)
    assert agreement.cohen_kappa(a, a) == pytest.approx(1.0)
    assert math.isnan(agreement.cohen_kappa(np.zeros(5, bool), np.zeros(5, bool)))


def test_weighted_f1_known_value() -> None:
    ref = pd.DataFrame({"X": [1, 1, 0, 0], "Y": [1, 0, 0, 0], "Z": [0, 0, 0, 0]})
    pred = pd.DataFrame({"X": [2, 1, 0, 0], "Y": [1, 1, 0, 0], "Z": [0, 0, 1, 0]})
    # X: F1 1 (support 2); Y: P 0.5, R 1, F1 2/3 (support 1); Z weighs 0
    assert agreement.weighted_f1(ref, pred) == pytest.approx((2 * 1 + 1 * 2 / 3) / 3)


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


def test_agreement_table_pairs_and_paper_figures() -> None:
    idx = pd.Index(["g1", "g2", "g3", "g4"])
    h1 = pd.DataFrame({"A": [1, 0, 2, 0], "B": [0, 1, 1, 0]}, index=idx)
    h2 = pd.DataFrame({"A": [1, 0, 1, 0], "B": [0, 1, 0, 0]}, index=idx)
    h3 = pd.DataFrame({"A": [1, 1, 1, 0], "B": [0, 1, 1, 0]}, index=idx)
    judge = h1.copy()
    table = agreement.agreement_table(
        {"h1": h1, "h2": h2, "h3": h3, "judge:x": judge},
        {"h1": "human", "h2": "human", "h3": "human", "judge:x": "judge"},
        ["A", "B"],
    )
    jh = table[table["pair"] == "judge:x vs h1"].iloc[0]
    assert jh["kind"] == "judge-human"
    assert jh["kappa"] == pytest.approx(1.0) and jh["paper_kappa"] == 0.709
    hh = table[table["pair"] == "h1 vs h2"].iloc[0]
    assert hh["kind"] == "human-human" and hh["paper_spearman"] == 0.803
    alpha = table[table["pair"].str.startswith("krippendorff")].iloc[0]
    assert -1 <= alpha["alpha"] <= 1


def test_label_files(tmp_path: Path) -> None:
    csv = tmp_path / "labels.csv"
    csv.write_text(
        "annotator,game,atom,step,actor,evidence\nh1,g1,E,7,Red,killed alone\nh1,g1,l,,red,alibi\n"
    )
    labels = read_labels(csv)
    assert [(lab.atom, lab.step, lab.actor) for lab in labels] == [
        ("E", 7, "red"),
        ("L", None, "red"),
    ]
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_text('{"annotator": "h2", "game": "g1", "atom": "E", "step": 7, "actor": "red"}\n')
    assert read_labels(jsonl)[0].annotator == "h2"
    bad = tmp_path / "bad.csv"
    bad.write_text("annotator,game,atom,step,actor\nh1,g1,Z,1,red\n")
    with pytest.raises(ValueError, match=r"line 2: field 'atom'.*unknown atom letter 'Z'"):
        read_labels(bad)
    missing = tmp_path / "missing.csv"
    missing.write_text("annotator,game,step,actor\n")
    with pytest.raises(ValueError, match="missing column"):
        read_labels(missing)
