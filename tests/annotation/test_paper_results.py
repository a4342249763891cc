"""`docs/paper-results.md` against what `analyze` writes on real fake-world studies.

The doc maps each of the paper's RQ1 and RQ2 tables and figures to a registered result
and the files it writes. Two studies are played with `mineamongus tournament` on the
fake world (ARIA on both sides), annotated by the detectors and a scripted judge (the
reference profile's for the ARIA games, as `annotate` picks it), and analysed: an
RQ1-shaped one (2 named fake backbones x 2 crew corners x 2 impostor axes, 2 seeds, plus
a scripted control arm) and an RQ2-shaped 3-model round robin whose models answer
through the local mock OpenAI endpoint (the run's shared one, `MOCK_ROUND_ROBIN`, which
the ratings tests read too). Every file the doc names for the study's design
must be written, and every figure must be a readable, non-blank PNG with a title.

The full RQ1 shape (16 impostor configurations, backbones served by the local mock
OpenAI endpoint) takes minutes: it runs with `MINEAMONGUS_SLOW=1`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from annotation.report.figures import figure_title
from annotation.report.results import RESULTS
from harness_aria.backends import ModelRequest
from testkit.games import MOCK_ROUND_ROBIN, GameStore

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "paper-results.md"
SLOW = os.environ.get("MINEAMONGUS_SLOW", "") not in ("", "0")

FILE = re.compile(r"`((?:tables|figures)/[A-Za-z0-9_.+-]+\.(?:csv|png))`")
RESULT = re.compile(r"`((?:core|rq1|rq2)\.[a-z0-9_]+)`")
RULES = {"max_steps": 12, "tasks_per_crewmate": 2}
SEEDS = [3, 4]
CREW_CORNERS = [
    {"label": label, "set": {"crew": {"spec": {"memory": memory, "planning": planning}}}}
    for label, memory, planning in (
        ("crew=sem-rea", "semantic", "reactive"),
        ("crew=win-hie", "window", "hierarchical"),
    )
]


@dataclass(frozen=True)
class DocRow:
    """One row of the doc's map."""

    item: str
    results: list[str]
    files: list[str]
    written_for: str


def doc_rows(text: str) -> list[DocRow]:
    """The rows of the `## Map` table."""
    section = text.split("## Map", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("Paper item", "") or set(cells[0]) <= {"-"}:
            continue
        rows.append(DocRow(cells[0], RESULT.findall(cells[2]), FILE.findall(cells[3]), cells[4]))
    return rows


def files_for(design: str) -> dict[str, str]:
    """Every file the doc names for an RQ1 or RQ2 study -> the paper item it serves."""
    wanted = {"rq1": "RQ1 study", "rq2": "RQ2 study"}[design]
    return {
        f: row.item
        for row in doc_rows(DOC.read_text())
        if row.written_for in (wanted, "every study")
        for f in row.files
    }


def check_png(path: Path) -> None:
    """A readable, non-blank PNG with a title in its `Title` chunk."""
    import matplotlib.image as mpimg

    assert path.stat().st_size > 0, path
    image = mpimg.imread(path)
    assert image.ndim == 3 and image.shape[0] > 50 and image.shape[1] > 50, path
    assert float(image[..., :3].std()) > 0.01, f"{path.name} is blank"
    assert figure_title(path).strip(), f"{path.name} has no title"


# ---------------------------------------------------------------------- studies
NONVERBAL = re.compile(
    r'^\[step (\d+)\] (\w+) \(impostor\) \|.*?module: (\w+).*?narration: "([^"]+)"', re.M
)
SPEECH = re.compile(r'^\[step (\d+)\] (\w+) \(impostor\) says: "([^"]+)"', re.M)
MODULE_ATOM = {"MISSION": "A", "MOVE": "B", "KILL": "E", "SURVEILLANCE": "C"}


REF_MODULE = re.compile(r"^\[step=(\d+)\]\[(\w+)\] \[(\w+)Module:\w+\] (.+)$", re.M)
REF_SPEECH = re.compile(r"^<(\w+)> (.+)$", re.M)
REF_ROLES = re.compile(r"^Roles: (\{.*\})$", re.M)


def reference_script(user: str) -> str:
    """The same scripted judge for the reference profile's prompts: module lines of the
    impostors in the non-verbal pass, their chat lines in the verbal pass (steps from the
    meeting speaker lines are not needed: the reference keeps a finding as emitted)."""
    roles = REF_ROLES.search(user)
    assert roles, "the reference prompt gives the roles"
    imps = {n for n, r in json.loads(roles.group(1)).items() if r == "impostor"}
    found: list[dict[str, Any]] = []
    if "This is the NON-VERBAL pass" in user:
        for m in REF_MODULE.finditer(user):
            atom = MODULE_ATOM.get(m.group(3).upper())
            if atom and m.group(2) in imps:
                found.append({"atom": atom, "step": int(m.group(1)), "actor": m.group(2),
                              "evidence_quote": m.group(0)})  # fmt: skip
    else:
        for i, m in enumerate(m for m in REF_SPEECH.finditer(user) if m.group(1) in imps):
            found.append({"atom": "LMNO"[i % 4], "step": None, "actor": m.group(1),
                          "evidence_quote": m.group(0)})  # fmt: skip
    return json.dumps({"findings": found})


def judge_script(request: ModelRequest) -> str:
    """A scripted judge: one non-verbal atom per impostor step by its module (quoting the
    narration), one verbal atom per impostor utterance (quoting it); in either profile's
    prompt format."""
    user = request.messages[-1].text
    if "This is the NON-VERBAL pass" in user or "This is the VERBAL pass" in user:
        return reference_script(user)
    found: list[dict[str, Any]] = []
    if "Pass: NON-VERBAL" in user:
        for m in NONVERBAL.finditer(user):
            atom = MODULE_ATOM.get(m.group(3).upper())
            if atom:
                found.append(
                    {"atom": atom, "step": int(m.group(1)), "actor": m.group(2),
                     "evidence": m.group(4)}
                )  # fmt: skip
    else:
        for i, m in enumerate(SPEECH.finditer(user)):
            found.append(
                {"atom": "LMNO"[i % 4], "step": int(m.group(1)), "actor": m.group(2),
                 "evidence": m.group(3)}
            )  # fmt: skip
    return json.dumps({"findings": found})


def play_annotate_analyze(
    base: Path, spec: dict[str, Any], env: dict[str, str] | None = None
) -> Path:
    """Play the spec's study, annotate it (detectors and the scripted judge), analyse it;
    the analysis folder."""
    path = base / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    study = base / "study"
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "tournament", str(path), "--out", str(study)]
        + ["--workers", "2", "--plain"],
        cwd=ROOT,
        capture_output=True,
        timeout=1800,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return annotate_analyze(study, base)


def annotate_analyze(study: Path, base: Path) -> Path:
    """Annotate a played study (detectors and the scripted judge) and analyse it into
    `base/analysis`; that folder."""
    from annotation.deception.annotate import annotate_runs
    from annotation.llm import make_judge
    from annotation.report.analysis import analyze

    judge = make_judge("fake:judge", script=judge_script)
    totals = asyncio.run(annotate_runs([study], judge, progress=False))
    assert totals.accepted > 0 and not totals.judge_failed
    # The games of the reference harness are judged with the reference instrument.
    assert "reference" in set(totals.profiles.values())
    out = base / "analysis"
    analyze([study], out, n_boot=200, progress=False)
    return out


def rq1_spec(backbones: dict[str, dict[str, Any]], axes: dict[str, list[str]]) -> dict[str, Any]:
    """An RQ1-shaped study: backbones (self-play) x crew corners x impostor axes, the
    crew fixed at reflection on and minimal prompts, plus a scripted control arm."""
    return {
        "name": "rq1-shape",
        "world": "fake",
        "seeds": SEEDS,
        "control": True,
        "base": {
            "frames": "off",
            "rules": RULES,
            "crew": {"spec": {"reflection": "on", "prompt": "minimal"}},
        },
        "sweep": {
            "axes": {
                "backbone": [
                    {"label": label, "set": {"crew": side, "impostor": side}}
                    for label, side in backbones.items()
                ],
                "crew": CREW_CORNERS,
                **{f"impostor.spec.{a}": levels for a, levels in axes.items()},
            }
        },
    }


@pytest.fixture(scope="module")
def rq1_out(fake_games: GameStore) -> Path:
    """The RQ1-shaped study on two offline fake backbones (the run's store plays it),
    annotated and analysed in a private copy, once per run (`GameStore.built`: the
    parallel workers read the same analysis)."""
    backbones = {m: {"backend": f"fake:{m}"} for m in ("alpha", "beta")}
    axes = {"memory": ["window", "semantic"], "planning": ["reactive", "hierarchical"]}
    spec = rq1_spec(backbones, axes)

    def build(base: Path) -> None:
        annotate_analyze(fake_games.copy_study_to(base / "study", spec), base)

    return fake_games.built("paper-results-rq1", build) / "analysis"


@pytest.fixture(scope="module")
def rq2_out(fake_games: GameStore) -> Path:
    """The run's shared mock round robin (`testkit.games.MOCK_ROUND_ROBIN`: 3 models
    answering through the local mock OpenAI endpoint, the real SDK over HTTP, with a
    ruler arm and a scripted control arm beside the round robin), annotated and
    analysed in a private copy, once per run (`GameStore.built`)."""
    assert fake_games.study_facts(MOCK_ROUND_ROBIN)["mock_api_requests"] > 0, (
        "the models were asked through the mock endpoint"
    )

    def build(base: Path) -> None:
        annotate_analyze(fake_games.copy_study_to(base / "study", MOCK_ROUND_ROBIN), base)

    return fake_games.built("paper-results-rq2", build) / "analysis"


def _check_files(out: Path, design: str) -> None:
    index = pd.read_csv(out / "tables" / "results_index.csv")
    failed = index[index["status"] != "ok"]
    assert failed.empty, failed.to_string()
    wanted = files_for(design)
    missing = {f: item for f, item in wanted.items() if not (out / f).is_file()}
    assert not missing, f"not written: {missing}"
    report = (out / "report.md").read_text()
    for f in wanted:
        if f.endswith(".png"):
            check_png(out / f)
            assert f"]({f})" in report, f"{f} is not shown in the report"


# ---------------------------------------------------------------------- the doc
def test_the_doc_maps_every_paper_item_to_registered_results_and_files() -> None:
    from annotation.report.analysis import load_result_modules

    assert load_result_modules() == []  # every result module imports cleanly
    rows = doc_rows(DOC.read_text())
    assert len(rows) >= 15
    items = " ".join(r.item for r in rows)
    for needed in ("ego collapse", "cell table", "axes figure", "z-tests", "atom table",
                   "arc-level", "scatter", "cluster shares", "Judge validation"):  # fmt: skip
        assert needed in items, needed
    for row in rows:
        assert row.results and row.files, row
        assert row.written_for in ("RQ1 study", "RQ2 study", "every study", "`--human` labels")
        for name in row.results:
            assert name in RESULTS, f"{name} is not a registered result"
    rq2_files = set(files_for("rq2")) - set(files_for("rq1"))
    for stem in ("rq2_model_win_rates", "rq2_win_rate_correlation", "rq2_top_worst",
                 "rq2_cluster_shares", "rq2_cluster_share_correlation"):  # fmt: skip
        assert f"tables/{stem}.csv" in rq2_files
    assert {"figures/rq2_win_rates.png", "figures/rq2_cluster_shares.png"} <= rq2_files


def test_a_doc_naming_an_unwritten_file_is_caught(tmp_path: Path) -> None:
    """The checker itself: a file the study did not write, a blank or untitled PNG."""
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "results_index.csv").write_text("result,status\ncore.facts,ok\n")
    (tmp_path / "report.md").write_text("")
    with pytest.raises(AssertionError, match="not written"):
        _check_files(tmp_path, "rq1")
    from annotation.report.figures import new_figure, save

    fig, axes = new_figure()
    axes[0, 0].plot([0, 1], [0, 1])
    with pytest.raises(ValueError, match="no title"):
        save(fig, tmp_path / "untitled.png")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    fig.savefig(tmp_path / "blank.png")
    plt.close(fig)
    with pytest.raises(AssertionError):
        check_png(tmp_path / "blank.png")


# ---------------------------------------------------------------------- RQ1
def test_rq1_study_writes_every_file_the_doc_names(rq1_out: Path) -> None:
    _check_files(rq1_out, "rq1")


def test_rq1_study_cells_control_arm_and_merged_crew(rq1_out: Path) -> None:
    tables = rq1_out / "tables"
    cells = pd.read_csv(tables / "rq1_cell_win_rates.csv")
    grid = cells[(cells["backbone"] != "all") & (cells["crew"] != "all")]
    # the study's own design labels name the cells (design.backbone, design.crew)
    assert set(grid["backbone"]) == {"alpha", "beta"}
    assert set(grid["crew"]) == {"crew=sem-rea", "crew=win-hie"}
    assert (grid["n_games"] == 4 * len(SEEDS)).all()  # 2 x 2 impostor configurations
    report = (rq1_out / "report.md").read_text()
    assert "2 game(s) without impostor ARIA axes (a scripted control arm)" in report
    # the results every study gets come first, whatever order the modules were imported in
    order = ["## Overview", "## Study design and results", "## The paper's figures beside ours"]
    order += ["## Ablation axes", "## RQ1: impostor win rate per backbone x crew cell"]
    assert [report.index(h) for h in order] == sorted(report.index(h) for h in order)
    design = pd.read_csv(tables / "logit_design.csv")
    status = design.set_index("term")["status"]
    assert status["crew.memory+planning"] == "merged" and status["backbone"] == "kept"
    logit = pd.read_csv(tables / "logit.csv")
    assert {"backbone_beta", "crew.memory+planning_window+hierarchical"} <= set(logit["term"])
    marg = pd.read_csv(tables / "axis_marginals.csv")
    assert "crew.memory" not in set(marg["axis"]) and "crew.memory+planning" in set(marg["axis"])
    boot = pd.read_csv(tables / "rq1_paired_bootstrap.csv").set_index(["scope", "axis"])
    pooled = boot.loc[("pooled", "impostor.memory")]
    assert pooled["n_pairs"] == 2 * 2 * 2 and pooled["alternative"] == "larger"
    assert pooled["first"] == "window"
    atoms = pd.read_csv(tables / "rq1_atoms.csv")
    assert len(atoms) == 23 and atoms["occurrences"].sum() > 0
    assert pd.read_csv(tables / "facts_mismatch.csv").empty  # log and table agree


# ---------------------------------------------------------------------- RQ2
def test_rq2_study_writes_every_file_the_doc_names(rq2_out: Path) -> None:
    _check_files(rq2_out, "rq2")
    index = pd.read_csv(rq2_out / "tables" / "results_index.csv")
    assert not index["result"].str.startswith("rq1.").any()  # an RQ2 study gets no RQ1 result


# ---------------------------------------------------------------------- full RQ1 shape
@pytest.mark.skipif(not SLOW, reason="the full RQ1 shape takes minutes: MINEAMONGUS_SLOW=1")
def test_full_rq1_shape_on_the_mock_endpoint(tmp_path: Path) -> None:
    """2 backbones served by the local mock OpenAI endpoint x 2 crew corners x 16 impostor
    configurations x 2 seeds (+ control): every RQ1 file, 8 matched pairs per axis per
    cell."""
    from harness_aria.fake_answers import answer_http
    from testkit.mock_api import MockAPIServer

    with MockAPIServer(lambda rec: answer_http(rec.body)) as api:
        backbones = {
            m: {"backend": f"openai-compatible:{m}", "base_url": api.openai_base_url}
            for m in ("mock-a", "mock-b")
        }
        axes = {
            "memory": ["window", "semantic"],
            "planning": ["reactive", "hierarchical"],
            "reflection": ["off", "on"],
            "prompt": ["deterministic", "minimal"],
        }
        out = play_annotate_analyze(
            tmp_path, rq1_spec(backbones, axes), env={"OPENAI_COMPATIBLE_API_KEY": "sk-mock"}
        )
    _check_files(out, "rq1")
    boot = pd.read_csv(out / "tables" / "rq1_paired_bootstrap.csv")
    cells = boot[boot["scope"] != "pooled"]
    assert set(cells["axis"]) == {f"impostor.{a}" for a in axes}
    assert (cells["n_pairs"] == 8).all() and len(cells) == 4 * 4
    prompt = boot[boot["axis"] == "impostor.prompt"]
    assert set(prompt["alternative"]) == {"two-sided"}
