"""A panel of judges: several named judges, their panel per (game, atom) and per
finding, each judge's spend, and agreement with human labels for every judge and the
panel (the paper's units and QUACK's)."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score  # type: ignore[import-untyped]

from annotation.deception.annotate import annotate_runs
from annotation.deception.codebook import codebook
from annotation.deception.findings import Finding, read_annotations, write_annotations
from annotation.deception.human import label_counts, read_labels
from annotation.deception.judge import NamedJudge, parse_judges
from annotation.deception.panel import (
    check_panel,
    combine_counts,
    combine_findings,
    panel_table,
)
from annotation.gamelog import load_game
from annotation.llm import make_judge
from annotation.report import core
from annotation.report.analysis import build_study, load_dataset
from controller.cli import main, play_game
from controller.config import resolve_config
from harness_aria.backends import ModelRequest
from harness_aria.backends.settings import BackendSettings
from testkit.mock_api import MockAPIServer, MockText, RecordedRequest
from world.spec import load_map

FAST = BackendSettings(backoff_base_s=0.0, backoff_max_s=0.0, jitter=False, timeout_s=10)
KILL = re.compile(r"^\[step (\d+)\] kill: (\w+) killed (\w+)", re.M)
SAYS = re.compile(r'^\[step (\d+)\] (\w+) \(impostor\) says: "(.+)"$', re.M)
WANT_GAMES = 4
MAX_SEEDS = 15


# ---------------------------------------------------------------------- the games
@pytest.fixture(scope="module")
def fake_world(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Fake-world games of scripted agents, each with a kill and an impostor speaking in
    a meeting (seeds are played until `WANT_GAMES` such games are found)."""
    root = tmp_path_factory.mktemp("panel_games")
    found: list[Path] = []
    for seed in range(MAX_SEEDS):
        out = root / f"seed{seed}"
        config = resolve_config("quick", overrides={"seed": seed, "frames": "off"})
        assert play_game(config, load_map(config.map), "fake", out).status == "ok"
        game = load_game(out)
        if game.kills and any(s.speaker in game.impostors and s.text for s in game.speeches):
            found.append(out)
        if len(found) == WANT_GAMES:
            break
    assert len(found) == WANT_GAMES, f"only {len(found)} usable games in {MAX_SEEDS} seeds"
    return found


@pytest.fixture
def games(fake_world: list[Path], tmp_path: Path) -> list[Path]:
    """Fresh copies (annotations are written into the run folders)."""
    return [shutil.copytree(g, tmp_path / "runs" / g.name) for g in fake_world]


# ---------------------------------------------------------------------- scripted judges
def _findings(user: str, *, kills: str, alibis: bool) -> str:
    """A judge that reads the grounded rendering: E for kills (`all`, `even` steps only,
    or `none`) in the non-verbal pass, L for every impostor line in the verbal pass."""
    out: list[dict[str, object]] = []
    if "Pass: NON-VERBAL" in user:
        for m in KILL.finditer(user):
            step = int(m.group(1))
            if kills == "all" or (kills == "even" and step % 2 == 0):
                out.append(
                    {
                        "atom": "E",
                        "step": step,
                        "actor": m.group(2),
                        "target": m.group(3),
                        "evidence": m.group(0).split("] ", 1)[1],
                    }
                )
    elif alibis:
        for m in SAYS.finditer(user):
            out.append(
                {"atom": "L", "step": int(m.group(1)), "actor": m.group(2), "evidence": m.group(3)}
            )
    return json.dumps({"findings": out})


def _j1(request: ModelRequest) -> str:
    return _findings(request.messages[-1].text, kills="all", alibis=True)


def _j2(request: ModelRequest) -> str:
    return _findings(request.messages[-1].text, kills="all", alibis=False)


def _j3(request: RecordedRequest) -> MockText:
    user = request.body["messages"][-1]["content"]
    text = _findings(user, kills="even", alibis=True)
    return MockText(text, prompt_tokens=1000, completion_tokens=50)


def _expected(folder: Path) -> dict[str, dict[str, int]]:
    """What each scripted judge finds in a game, from the game's own facts (not from the
    annotation files)."""
    game = load_game(folder)
    kills = [k for k in game.kills]
    even = [k for k in kills if k.step % 2 == 0]
    alibis = [s for s in game.speeches if s.speaker in game.impostors and s.text]
    return {
        "judge:j1": {"E": len(kills), "L": len(alibis)},
        "judge:j2": {"E": len(kills), "L": 0},
        "judge:j3": {"E": len(even), "L": len(alibis)},
    }


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    yield


def _panel_of_three(api: MockAPIServer) -> list[NamedJudge]:
    mock = make_judge("openai-compatible:mock", base_url=api.openai_base_url, settings=FAST)
    return [
        NamedJudge("j1", make_judge("fake", script=_j1)),
        NamedJudge("j2", make_judge("fake", script=_j2)),
        NamedJudge("j3", mock),
    ]


# ---------------------------------------------------------------------- the end to end
def test_panel_of_three_judges_agreement_against_planted_labels(
    games: list[Path], tmp_path: Path, key: None
) -> None:
    with MockAPIServer(_j3) as api:
        judges = _panel_of_three(api)
        totals = asyncio.run(
            annotate_runs(games, judges, progress=False, panel="majority", concurrency=2)
        )
        assert len(api.requests) == 2 * len(games)  # the mock judge's two passes per game
        # the unanimous panel over the same judges: every reply cached, no new call
        again = asyncio.run(annotate_runs(games, judges, progress=False, panel="unanimous"))
        assert len(api.requests) == 2 * len(games)
    # each judge's spend on its own: the mock's tokens are the API's usage, and its model
    # has no price (unknown spend), while the fakes cost nothing
    assert set(totals.judges) == {"j1", "j2", "j3"}
    j1, j3 = totals.judges["j1"], totals.judges["j3"]
    assert j3.tokens_in == 1000 * 2 * len(games) and j3.tokens_out == 50 * 2 * len(games)
    assert j3.unpriced_calls == 2 * len(games) and j3.spend_usd is None
    assert j1.calls == 2 * len(games) and j1.spend_usd == 0.0 and j1.tokens_in != j3.tokens_in
    assert totals.tokens_in == sum(t.tokens_in for t in totals.judges.values())
    assert totals.spend_usd is None
    assert again.judges["j3"].cached_calls == 2 * len(games)
    assert totals.panel["games"] == len(games) and totals.panel["failed"] == 0

    expected = {g: _expected(g) for g in games}
    ids = {}
    for g in games:
        ann = read_annotations(g)
        assert ann is not None
        ids[g] = ann.game_id
        assert ann.judges == {"judge:j1": "ok", "judge:j2": "ok", "judge:j3": "ok"}
        for source, atoms in expected[g].items():
            found = [c.finding for c in ann.findings if c.finding.source == source and c.accepted]
            assert {a: sum(f.atom == a for f in found) for a in atoms} == atoms, source
        assert {c.judge for c in ann.calls} == {"j1", "j2", "j3"}
        assert {c.model for c in ann.calls if c.judge == "j3"} == {"openai-compatible:mock"}
        # majority: E (j1, j2) and L (j1, j3); unanimous: E only when j3 saw an even kill
        e = expected[g]
        major = ann.panels["panel:majority"]
        assert major.judges == ["judge:j1", "judge:j2", "judge:j3"]
        assert major.counts == {"E": e["judge:j1"]["E"], "L": e["judge:j1"]["L"]}
        assert major.votes["L"] == ["judge:j1", "judge:j3"]
        unan = ann.panels["panel:unanimous"]
        assert unan.counts == ({"E": e["judge:j1"]["E"]} if e["judge:j3"]["E"] else {})
        # per finding: one per kill; one per impostor and meeting for L
        game = load_game(g)
        mine = [p for p in ann.panel_findings if p.source == "panel:majority"]
        kills = {(k.step, k.killer) for k in game.kills}
        assert {(p.step, p.actor) for p in mine if p.atom == "E"} == kills
        for p in mine:
            if p.atom == "E":
                assert p.supporters[:2] == ["judge:j1", "judge:j2"]
                assert ("judge:j3" in p.supporters) == (p.step % 2 == 0)
                assert p.meeting is None and p.steps == [p.step]
            else:
                assert p.supporters == ["judge:j1", "judge:j3"] and p.meeting is not None
        said = {
            (s.speaker, max(i for i, first in game.meeting_steps.items() if first <= s.step))
            for s in game.speeches
            if s.speaker in game.impostors and s.text
        }
        assert {(p.actor, p.meeting) for p in mine if p.atom == "L"} == said

    # planted human labels: E where there is a kill; L in the first half of the games
    # only; and a C that no judge finds
    order = sorted(games, key=lambda g: ids[g])
    human: dict[str, set[str]] = {}
    rows = ["annotator,game,atom,step,actor,evidence"]
    for i, g in enumerate(order):
        marked = {"E"} | ({"L"} if i < len(order) // 2 else set()) | ({"C"} if i == 0 else set())
        human[ids[g]] = marked
        rows += [f"h1,{ids[g]},{a},,{load_game(g).impostors[0]},planted" for a in sorted(marked)]
    labels = tmp_path / "labels.csv"
    labels.write_text("\n".join(rows) + "\n", encoding="utf-8")

    ds = load_dataset(games, progress=False)
    label_set = label_counts(read_labels(labels), ds.games)
    data = build_study(ds, tmp_path / "out", n_boot=200, seed=3, labels=label_set)
    out = core.agreement_result(data)
    raters = out.tables["agreement_raters"]
    assert set(raters["rater"]) == {
        "judge:j1",
        "judge:j2",
        "judge:j3",
        "panel:majority",
        "panel:unanimous",
    }
    assert set(raters["human"]) == {"human:h1"}
    assert dict(zip(raters["rater"], raters["rater_kind"], strict=True))["panel:majority"] == (
        "panel"
    )

    def present(source: str, g: Path) -> set[str]:
        e = expected[g]
        if source.startswith("judge:"):
            return {a for a, n in e[source].items() if n}
        need = 2 if source == "panel:majority" else 3
        return {a for a in ("E", "L") if sum(e[j][a] > 0 for j in e) >= need}

    letters = codebook().letters
    for source in raters["rater"]:
        row = raters[raters["rater"] == source].iloc[0]
        got = {ids[g]: present(source, g) for g in games}
        tp = sum(len(got[i] & human[i]) for i in got)
        fp = sum(len(got[i] - human[i]) for i in got)
        fn = sum(len(human[i] - got[i]) for i in got)
        assert (row["n_tp"], row["n_fp"], row["n_fn"]) == (tp, fp, fn), source
        assert row["precision"] == pytest.approx(tp / (tp + fp) if tp + fp else np.nan, nan_ok=True)
        assert row["recall"] == pytest.approx(tp / (tp + fn)), source
        a = [x in human[i] for i in sorted(got) for x in letters]
        b = [x in got[i] for i in sorted(got) for x in letters]
        assert row["kappa"] == pytest.approx(cohen_kappa_score(a, b)), source
        assert row["n_games"] == len(games)
        for m in ("kappa", "recall", "f1_weighted"):
            assert row[f"{m}_low"] <= row[m] + 1e-12 and row[m] <= row[f"{m}_high"] + 1e-12
    # the panel is also in the pairwise tables and the judge-detector table
    pairs = out.tables["agreement"]
    assert "panel-human" in set(pairs["kind"])
    assert "panel:majority" in set(out.tables["judge_detector_agreement"]["judge"])
    # the panel's counts in the files are the ones the report recomputes from its judges
    counts = {n: s.counts for n, s in data.sources.items() if n.startswith("judge:")}
    table = panel_table(counts, "majority")
    for g in games:
        ann = read_annotations(g)
        assert ann is not None
        row_counts = table.loc[ann.game_id]
        stored = ann.panels["panel:majority"].counts
        assert {a: int(n) for a, n in row_counts.items() if n} == stored


def test_rerunning_one_judge_rebuilds_the_panel_from_its_new_findings(
    games: list[Path], key: None
) -> None:
    run = games[:1]
    with MockAPIServer(_j3) as api:
        asyncio.run(annotate_runs(run, _panel_of_three(api), progress=False, panel="majority"))
    ann = read_annotations(run[0])
    assert ann is not None and "L" in ann.panels["panel:majority"].counts
    # j1 again, now finding nothing: L has one vote left (j3), so the panel drops it
    silent = NamedJudge("j1", make_judge("fake", script=lambda _r: '{"findings": []}'))
    cache = run[0].parent / "other_cache"
    asyncio.run(annotate_runs(run, silent, progress=False, cache_dir=cache))
    ann = read_annotations(run[0])
    assert ann is not None
    assert ann.panels["panel:majority"].votes["L"] == ["judge:j3"]
    assert "L" not in ann.panels["panel:majority"].counts
    assert not [p for p in ann.panel_findings if p.atom == "L"]
    assert {c.judge for c in ann.calls} == {"j1", "j2", "j3"} and len(ann.calls) == 6


def test_a_failed_member_fails_the_panel(games: list[Path], key: None) -> None:
    run = games[:1]
    broken = NamedJudge("j2", make_judge("fake", script=lambda _r: "not json"))
    judges = [NamedJudge("j1", make_judge("fake", script=_j1)), broken]
    judges.append(NamedJudge("j3", make_judge("fake", script=_j1)))
    totals = asyncio.run(annotate_runs(run, judges, progress=False, panel="majority"))
    ann = read_annotations(run[0])
    assert ann is not None and ann.panels["panel:majority"].status == "failed"
    assert ann.panels["panel:majority"].counts == {} and not ann.panel_findings
    assert totals.panel["failed"] == 1 and totals.judge_failed == [str(run[0])]


# ---------------------------------------------------------------------- the rule by hand
def _f(atom: str, step: int, actor: str = "red", target: str | None = None) -> Finding:
    return Finding(atom=atom, step=step, actor=actor, evidence="x" * 8, source="", target=target)


# Meeting 1 runs over steps 7-9, meeting 2 over steps 12-14.
MEETINGS = {7: 1, 8: 1, 9: 1, 12: 2, 13: 2, 14: 2}
HAND = {
    "judge:a": [
        _f("B", 2),
        _f("E", 4, target="green"),
        _f("E", 10),
        _f("F", 5),
        _f("L", 7),
        _f("N", 8),
    ],
    "judge:b": [_f("B", 2), _f("E", 4, target="green"), _f("L", 9), _f("N", 13)],
    "judge:c": [_f("B", 3), _f("L", 8, target="pink")],
}
"""Three judges' findings in one game: B found by all (a and b at step 2, c at step 3);
E by a (twice) and b (once) at step 4, 2 of 3; F by a alone, 1 of 3; L by all three in
meeting 1 on different utterances; N by a in meeting 1 and b in meeting 2."""


def test_majority_and_unanimous_per_game_and_atom_by_hand() -> None:
    counts = {j: {a: sum(f.atom == a for f in fs) for a in "BEFLN"} for j, fs in HAND.items()}
    present, votes = combine_counts(counts, "majority")
    # E 2 of 3 (counts 2, 1, 0: lower median 1); F 1 of 3 absent; N 2 of 3 present
    assert present == {"B": 1, "E": 1, "L": 1, "N": 1}
    assert votes["E"] == ["judge:a", "judge:b"] and votes["F"] == ["judge:a"]
    unanimous, _ = combine_counts(counts, "unanimous")
    assert unanimous == {"B": 1, "L": 1}
    # four judges: a majority is 3; the count is the lower of the two middle counts
    four = {"w": {"E": 0}, "x": {"E": 1}, "y": {"E": 2}, "z": {"E": 3}}
    assert combine_counts(four, "majority")[0] == {"E": 1}
    assert combine_counts({**four, "x": {"E": 0}}, "majority")[0] == {}
    # the vectorised table gives the same
    tables = {
        j: pd.DataFrame([c], index=pd.Index(["g"], name="game_id")) for j, c in counts.items()
    }
    table = panel_table(tables, "majority")
    assert {a: int(n) for a, n in table.loc["g"].items() if n} == present
    assert {a: int(n) for a, n in panel_table(tables, "unanimous").loc["g"].items() if n} == (
        unanimous
    )


def test_majority_and_unanimous_per_finding_by_hand() -> None:
    major = combine_findings(HAND, "majority", meeting_of=MEETINGS)
    got = {(p.atom, p.step, tuple(p.steps), p.meeting, tuple(p.supporters)) for p in major}
    assert got == {
        ("B", 2, (2,), None, ("judge:a", "judge:b")),  # c's B is another step
        ("E", 4, (4,), None, ("judge:a", "judge:b")),  # 2 of 3
        ("L", 7, (7, 8, 9), 1, ("judge:a", "judge:b", "judge:c")),  # one meeting
    }  # F (1 of 3), E at step 10 (1 of 3) and N (two meetings) are no panel finding
    e = next(p for p in major if p.atom == "E")
    assert e.target == "green" and e.source == "panel:majority"
    assert next(p for p in major if p.atom == "L").target == "pink"
    unanimous = combine_findings(HAND, "unanimous", meeting_of=MEETINGS)
    assert [(p.atom, p.meeting, p.supporters) for p in unanimous] == [
        ("L", 1, ["judge:a", "judge:b", "judge:c"])
    ]
    # without meetings every step is its own place: the L's no longer meet
    assert not [p for p in combine_findings(HAND, "majority") if p.atom == "L"]


# ---------------------------------------------------------------------- refusals
def test_a_panel_of_one_judge_is_refused_naming_the_flag(
    games: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = str(games[0])
    assert main(["annotate", run, "--judge", "fake", "--panel", "majority", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--panel majority" in err and "at least 2" in err and "got 1" in err
    assert main(["annotate", run, "--panel", "unanimous", "--quiet"]) == 2  # judge none
    assert "--panel unanimous" in capsys.readouterr().err
    assert not (games[0] / "annotations.jsonl").exists()  # refused before anything ran
    with pytest.raises(ValueError, match="--panel majority"):
        check_panel("majority", 1)
    with pytest.raises(ValueError, match="at least 2"):
        asyncio.run(annotate_runs([games[0]], make_judge("fake"), progress=False, panel="majority"))
    assert check_panel("majority", 3) == [] and check_panel("majority", 2)  # even: a note


def test_judge_names_are_read_and_clashes_refused(
    games: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert parse_judges(["none"]) == []
    specs = parse_judges(["j1=fake", "openai:gpt-4.1-mini", "j2 = openai-compatible:m"])
    assert [(s.name, s.address, s.named) for s in specs] == [
        ("j1", "fake", True),
        ("openai:gpt-4.1-mini", "openai:gpt-4.1-mini", False),
        ("j2", "openai-compatible:m", True),
    ]
    for bad, why in (
        (["fake", "fake"], "two judges are called fake"),
        (["a=fake", "a=openai:x"], "two judges are called a"),
        (["none", "fake"], "none means detectors only"),
        (["a b=fake"], "a judge's name"),
        (["panel=fake"], "reserved"),
        (["j1="], "no backend address"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_judges(bad)
    run = str(games[0])
    assert main(["annotate", run, "--judge", "fake", "--judge", "fake", "--quiet"]) == 2
    assert "NAME=ADDRESS" in capsys.readouterr().err


# ---------------------------------------------------------------------- the command
def test_the_command_runs_a_panel_and_prints_each_judges_spend(
    games: list[Path], capsys: pytest.CaptureFixture[str], key: None
) -> None:
    with MockAPIServer(_j3) as api:
        args = ["annotate", *map(str, games[:2]), "--judge", "j1=fake", "--judge", "j2=fake"]
        args += ["--judge", "j3=openai-compatible:mock", "--base-url", api.openai_base_url]
        assert main([*args, "--panel", "majority", "--quiet"]) == 0
        assert len(api.requests) == 4
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(out["judges"]) == {"j1", "j2", "j3"}
    assert out["judges"]["j3"]["address"] == "openai-compatible:mock"
    assert out["judges"]["j3"]["tokens_in"] == 4000 and out["judges"]["j3"]["calls"] == 4
    assert out["judges"]["j3"]["cost_usd"] is None  # no price for this model: unknown
    assert out["judges"]["j1"]["cost_usd"] == 0.0 and out["judges"]["j1"]["games"] == 2
    assert out["tokens_in"] == sum(j["tokens_in"] for j in out["judges"].values())
    assert out["panel"]["name"] == "panel:majority" and out["panel"]["games"] == 2
    ann = read_annotations(games[0])
    assert ann is not None and set(ann.judges) == {"judge:j1", "judge:j2", "judge:j3"}
    # the two fakes (no script: they find nothing) outvote the mock: nothing is present
    assert ann.panels["panel:majority"].counts == {}
    assert ann.panels["panel:majority"].votes.get("E", ["judge:j3"]) == ["judge:j3"]
    # named judges of one address keep their replies apart
    assert (games[0] / "judge_cache" / "j1").is_dir() and (games[0] / "judge_cache" / "j2").is_dir()


def test_a_file_written_before_judge_names_reads_and_is_kept(games: list[Path]) -> None:
    run = games[0]
    asyncio.run(annotate_runs([run], make_judge("fake:a", script=_j1), progress=False))
    ann = read_annotations(run)
    assert ann is not None
    # as an older version wrote it: v2, no judge names on calls, no panels
    lines = []
    for line in (run / "annotations.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["kind"] == "header":
            row["v"] = 2
            row.pop("panels")
        row.pop("judge", None)
        lines.append(json.dumps(row))
    (run / "annotations.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    old = read_annotations(run)
    assert old is not None and old.panels == {} and old.calls
    assert all(c.judge == "" and c.judge_name == "fake:a" for c in old.calls)
    assert old.judge_calls("judge:fake:a") == old.calls
    # a panel of the old judge and a new named one keeps the old judge's calls once
    named = NamedJudge("b", make_judge("fake", script=_j2))
    asyncio.run(
        annotate_runs(
            [run], [make_judge("fake:a", script=_j1), named], progress=False, panel="unanimous"
        )
    )
    ann = read_annotations(run)
    assert ann is not None
    assert sorted(c.judge_name for c in ann.calls) == ["b", "b", "fake:a", "fake:a"]
    assert ann.panels["panel:unanimous"].judges == ["judge:fake:a", "judge:b"]
    assert ann.panels["panel:unanimous"].counts.get("E", 0) > 0
    write_annotations(run, ann)  # round trip
    again = read_annotations(run)
    assert again is not None and again.panel_findings == ann.panel_findings
