"""`annotate` and `analyze` end to end on synthetic games (fake judge, no network)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pandas as pd
import pytest

from annotation.deception.codebook import codebook
from annotation.llm import make_judge
from annotation.report import document as report
from annotation.report.document import ReportContext, Section, Text
from controller.cli import main
from controller.registry import Registry
from harness_aria.backends import ModelRequest
from testkit.logs import random_game

STEP = re.compile(r"^\[step (\d+)\] free roam", re.M)
IMPS = re.compile(r"impostors: (\w+), (\w+)")


def _judge_script(request: ModelRequest) -> str:
    """Label B on the first free-roam step of the non-verbal log, quoting its header."""
    user = request.messages[-1].text
    if "Pass: NON-VERBAL" not in user:
        return '{"findings": []}'
    m = STEP.search(user)
    imps = IMPS.search(user)
    assert m and imps
    step = int(m.group(1))
    finding = {
        "atom": "B",
        "step": step,
        "actor": imps.group(1),
        "evidence": f"[step {step}] free roam",
    }
    return json.dumps({"findings": [finding, {**finding, "actor": "nobody"}]})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tournament")
    rng = random.Random(5)
    for i in range(12):
        spec = {"memory": "window" if i % 2 else "semantic", "planning": "reactive"}
        random_game(root / f"g{i:02d}", rng, seed=i // 2, spec=spec, model=f"fake:m{(i // 2) % 3}")
    return root


def test_annotate_cli_detectors_only(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["annotate", str(runs), "--judge", "none", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["games"] == 12 and out["calls"] == 0
    assert all((runs / f"g{i:02d}" / "annotations.jsonl").is_file() for i in range(12))


def test_annotate_dry_run_estimates(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["annotate", str(runs), "--judge", "openai:gpt-4.1-mini", "--dry-run"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["games"] == 12 and out["calls"] > 0 and out["tokens_in"] > 0
    assert out["cost_usd"] > 0


def test_bad_detector_threshold_names_the_field(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["annotate", str(runs), "--detector", "stalk_radious=3"]) == 2
    assert "stalk_radius" in capsys.readouterr().err


def test_analyze_report_tables_figures(runs: Path, tmp_path: Path) -> None:
    import asyncio

    from annotation.deception.annotate import annotate_runs

    judge = make_judge("fake:judge", script=_judge_script)
    asyncio.run(annotate_runs([runs], judge, progress=False, judge_profile="grounded"))
    first, second = sorted(runs.glob("g*"))[:2]
    gid = json.loads((first / "summary.json").read_text())["game_id"]
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "annotator,game,atom,step,actor,evidence\n"
        f"h1,{gid},B,1,red,walks\nh2,{gid},B,1,red,walks\nh2,{first.name},E,2,red,kill\n"
        f"h1,{second.name},none,,,\nh2,{second.name},none,,,\n"
    )
    results = runs / "results"
    results.mkdir(exist_ok=True)
    table = pd.DataFrame({"game_id": [gid], "winner": ["nobody"], "arm": ["armX"]})
    table.to_parquet(results / "games.parquet")
    out = tmp_path / "analysis"
    extra = Section("Extra analysis", [Text("added by a caller")])
    from annotation.report.analysis import analyze

    tables = analyze([runs], out, human=[labels], n_boot=200, progress=False, sections=[extra])
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert "too small a sample to read" in md
    assert "## Atoms and impostor win (judge:fake:judge)" in md
    assert "## Extra analysis" in md and "added by a caller" in html
    assert "data:image/png;base64," in html
    for name in ("rpb", "partial_rpb", "axis_marginals", "logit", "cross_model", "agreement"):
        assert (out / "tables" / f"{name}.parquet").is_file()
        assert (out / "tables" / f"{name}.csv").is_file()
    assert len(list((out / "figures").glob("*.png"))) >= 4
    rejected = tables["rejected"]
    assert (rejected["reason"].str.contains("not a seat")).sum() == 12
    jd = tables["judge_detector_agreement"]
    assert set(jd["atom"]) == set("ABCDEFGHI")
    agree = tables["agreement"]
    assert "human:h1 vs human:h2" in set(agree["pair"])
    jh = agree[agree["kind"] == "judge-human"]
    assert jh["paper_kappa"].eq(0.709).all()
    assert set(jh["reference"]) == {"human:h1", "human:h2"}  # the human is the reference
    assert agree["n_games"].max() == 2  # the game read with nothing found counts
    assert {"kappa_low", "kappa_high", "spearman_low", "alpha_high"} <= set(agree.columns)
    per_atom = tables["agreement_per_atom"]
    assert set(per_atom["atom"]) == set(codebook().letters)
    assert "2 read (1 with nothing found)" in md
    # a table of contents, and the paper's figures beside ours
    assert "## Contents" in md and "- [Overview](#overview)" in md
    assert "<nav><h2>Contents</h2>" in html and "id='overview'" in html
    assert "## The paper's figures beside ours" in md
    paper = tables["paper_vs_ours"]
    assert {"r_pb atom E with impostor win", "judge-human kappa"} <= set(paper["figure"])
    rpb = tables["rpb"]
    assert {"p_perm", "p_perm_holm", "p_perm_bh", "boot_degenerate", "n_clusters"} <= set(
        rpb.columns
    )
    kills = tables["atoms_vs_kills"]
    assert {"per_kill", "per_step", "r", "partial_r"} <= set(kills.columns)
    freq = tables["atom_frequency"]
    assert "per_100_steps" in freq.columns
    cross = tables["cross_model"]
    assert set(cross["source"]) == {"detector", "judge:fake:judge"}
    judge_atoms = cross[cross["source"] == "judge:fake:judge"]["measure"]
    assert "atom L vs impostor win rate" in set(judge_atoms)  # verbal atoms included
    assert "atom L vs impostor win rate" not in set(cross[cross["source"] == "detector"]["measure"])
    mism = tables["facts_mismatch"]
    assert set(mism["column"]) == {"winner", "arm"}
    assert "disagreement(s) between games.parquet and the logs" in md
    assert tables["games"].set_index("game_id").at[gid, "arm"] == "armX"
    marg = tables["axis_marginals"]
    assert set(marg["axis"]) == {"impostor.memory"}
    assert {"p_one_sided", "p_two_sided", "alternative"} <= set(marg.columns)
    assert marg["n_pairs"].max() > 0  # games 2k, 2k+1 share a seed: paired
    (results / "games.parquet").unlink()


def test_labels_keyed_by_a_folder_name_of_two_games_are_refused(tmp_path: Path) -> None:
    from annotation.report.analysis import analyze

    root = tmp_path / "study"
    rng = random.Random(8)
    for arm in ("armA", "armB"):
        run = root / arm / "seed1-try1"
        random_game(run, rng, seed=1, spec={"memory": "window"}, model="fake:m")
        for name in ("events.jsonl", "summary.json"):  # the writer names games by folder
            text = (run / name).read_text().replace("syn-seed1-try1", f"syn-{arm}-1")
            (run / name).write_text(text)
    copy = tmp_path / "copied"
    for arm in ("armA", "armB"):  # one game copied into a second folder: one id, twice
        random_game(copy / arm / "g", random.Random(1), seed=1, spec={}, model="fake:m")
    with pytest.raises(ValueError, match="2 run folders share a game id"):
        analyze([copy], tmp_path / "out", n_boot=100, progress=False)
    labels = tmp_path / "labels.csv"
    labels.write_text("annotator,game,atom,step,actor,evidence\nh1,seed1-try1,B,1,red,\n")
    with pytest.raises(ValueError, match=r"'seed1-try1' matches 2 games") as err:
        analyze([root], tmp_path / "out", human=[labels], n_boot=100, progress=False)
    assert "armA/seed1-try1" in str(err.value) and "armB/seed1-try1" in str(err.value)
    assert main(["analyze", str(root), "--out", str(tmp_path / "o2"), "--human", str(labels)]) == 2
    labels.write_text("annotator,game,atom,step,actor,evidence\nh1,armB/seed1-try1,none,,,\n")
    tables = analyze([root], tmp_path / "out", human=[labels], n_boot=100, progress=False)
    assert "agreement" in tables


def test_registered_section_providers_are_called_and_failures_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def sections(context: ReportContext) -> list[Section]:
        return [Section("Extra", [Text(f"{len(context.folders)} runs")])]

    def broken(context: ReportContext) -> list[Section]:
        raise RuntimeError("no audit")

    monkeypatch.setattr(report, "SECTIONS", Registry("report section provider (test)"))
    report.register_section_provider("extra", sections)
    report.register_section_provider("broken", broken)
    ctx = ReportContext(folders=[tmp_path], games=pd.DataFrame(), out=tmp_path)
    got = report.extra_sections(ctx)
    assert [s.title for s in got] == ["broken (failed)", "Extra"]
    assert "no audit" in str(got[0].blocks[0])


def test_tournament_facts_compare_as_typed_values() -> None:
    """66 and 66.0 agree, `done` in the table is `ok` in the log, a failed game is
    invalid; a real disagreement is still reported; `design.*` labels are merged in."""
    from annotation.report.analysis import _merge_tournament, same_fact

    games = pd.DataFrame(
        {
            "game_id": ["a", "b"],
            "arm": ["x", "y"],
            "seed": [1, 2],
            "status": ["ok", "invalid"],
            "winner": ["crew", None],
            "ending": ["tasks", "invalid"],
            "steps": [66, 12],
            "kills": [0, 1],
            "meetings": [1, 0],
        }
    )
    table = games.assign(
        seed=[1.0, 2.0],
        status=["done", "failed"],
        steps=[66.0, 12.0],
        **{"design.backbone": ["mini", "qwen"]},
    )
    merged, mism = _merge_tournament(games, table)
    assert mism.empty, mism
    assert list(merged["design.backbone"]) == ["mini", "qwen"]
    planted = table.assign(winner=["impostors", None], steps=[66.0, 13.0])
    _, mism = _merge_tournament(games, planted)
    assert set(zip(mism["game_id"], mism["column"], strict=True)) == {
        ("a", "winner"),
        ("b", "steps"),
    }
    assert not same_fact("status", "ok", "invalid") and same_fact("status", "invalid", "failed")
    assert same_fact("winner", None, float("nan")) and not same_fact("winner", "crew", None)


OWN_LINE = re.compile(r'^\[step (\d+)\] (\w+) \(impostor\) \|.*narration: "([^"]+)"', re.M)


def _quoting_judge(request: ModelRequest) -> str:
    """Label B on the first impostor line of the non-verbal log, quoting its narration
    (a line the actor owns, so the grounded checks accept it)."""
    user = request.messages[-1].text
    m = OWN_LINE.search(user) if "Pass: NON-VERBAL" in user else None
    if m is None:
        return '{"findings": []}'
    step, actor, said = int(m.group(1)), m.group(2), m.group(3)
    return json.dumps({"findings": [{"atom": "B", "step": step, "actor": actor, "evidence": said}]})


def _small_study(root: Path, n: int = 6) -> Path:
    import asyncio

    from annotation.deception.annotate import annotate_runs

    rng = random.Random(11)
    for i in range(n):
        spec = {"memory": "window" if i % 2 else "semantic", "planning": "reactive"}
        random_game(root / f"g{i:02d}", rng, seed=i // 2, spec=spec, model="fake:m")
    judge = make_judge("fake:judge", script=_quoting_judge)
    totals = asyncio.run(annotate_runs([root], judge, progress=False, judge_profile="grounded"))
    assert totals.accepted > 0
    return root


def test_findings_kept_as_emitted_are_counted_both_ways(tmp_path: Path) -> None:
    """A judge whose findings are kept as emitted (`accepted`) with the grounded filters'
    verdict in `filter_ok`: the atom counts give both, and StudyData has both."""
    from annotation.report.analysis import analyze, build_study, load_dataset

    root = _small_study(tmp_path / "runs")
    for i, run in enumerate(sorted(root.glob("g*"))):
        lines = [json.loads(x) for x in (run / "annotations.jsonl").read_text().splitlines()]
        for row in lines:
            if row["kind"] == "header":
                row["judge_profiles"] = {"judge:fake:judge": "reference"}
            elif i == 0 and row["kind"] == "finding" and row["source"].startswith("judge"):
                row["accepted"] = True  # kept as emitted; the filters would drop it
                row["filter_ok"], row["filter_reason"] = False, "evidence is not on the lines"
        (run / "annotations.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    ds = load_dataset([root], progress=False)
    judge = ds.findings[ds.findings["kind"] == "judge"]
    assert set(judge["filter_ok"].map(repr)) == {"True", "False"}
    assert ds.profiles["judge:fake:judge"] == "reference"
    data = build_study(ds, tmp_path / "o")
    assert data.counts_source == "judge:fake:judge" and data.counts_filtered is not None
    assert data.counts["B"].sum() == data.counts_filtered["B"].sum() + 1
    tables = analyze([root], tmp_path / "out", n_boot=100, progress=False)
    counts = tables["atom_counts"].set_index(["source", "atom"])
    row = counts.loc[("judge:fake:judge", "B")]
    assert row["occurrences"] == row["occurrences_filtered"] + 1
    assert "occurrences_filtered" in tables["rq1_atoms"].columns


def test_a_result_that_raises_is_a_failed_section_and_the_rest_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from annotation.report.analysis import analyze
    from annotation.report.results import RESULTS, ResultOutput, ResultSpec, StudyData

    def broken(data: StudyData) -> ResultOutput:
        raise RuntimeError("planted failure")

    monkeypatch.setitem(
        RESULTS, "test.broken", ResultSpec("test.broken", "A broken result", ("rq1",), broken)
    )
    root = _small_study(tmp_path / "runs", n=4)
    tables = analyze([root], tmp_path / "out", n_boot=100, progress=False)
    index = tables["results_index"].set_index("result")
    assert index.at["test.broken", "status"] == "failed"
    assert "planted failure" in index.at["test.broken", "error"]
    assert (index.drop(index="test.broken")["status"] == "ok").all()
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## A broken result (failed)" in md and "RuntimeError: planted failure" in md
    assert "1 result(s) failed: test.broken" in md
    assert (tmp_path / "out" / "tables" / "rq1_cell_win_rates.csv").is_file()
