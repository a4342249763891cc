"""Claim labels in a real browser (Debian's Chromium, headless, through Selenium): a
person opens the claim-labelling view of an audited fake-world study from the study
page, judges verdicts and extractions of claims of both rule books and counts missed
claims; `mineamongus analyze` then reports exactly the figures recomputed here from the
label file the page wrote. No Minecraft server is needed."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from annotation.viewer.server import BackgroundViewer, start_background
from controller.cli import main, play_game
from controller.config import resolve_config
from controller.tournament.manifest import Attempt, Entry, Manifest, write_manifest
from testkit.browser import headless_chromium, open_viewer, wait_for
from world.spec import load_map

pytestmark = pytest.mark.integration

SEEDS = (1, 2)
ANNOTATOR = "ann1"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study of two fake-world games (quick preset; each has a meeting in which the
    living players speak), audited by both rule books with `mineamongus audit`."""
    out = tmp_path_factory.mktemp("claims-browser")
    games = {}
    for seed in SEEDS:
        run = f"games/arm/seed{seed}-try1"
        config = resolve_config("quick", overrides={"seed": seed})
        assert play_game(config, load_map(config.map), "fake", out / run).status == "ok"
        games[f"arm/seed{seed}"] = Entry(
            arm="arm",
            seed=seed,
            status="done",
            attempts=[Attempt(run=run, started=1.0, ended=2.0, outcome="done")],
        )
    manifest = Manifest(
        name="claims", world="fake", arms={"arm": "x"}, seeds=list(SEEDS), games=games
    )
    write_manifest(out, manifest)
    assert main(["audit", str(out)]) == 0
    assert main(["audit", str(out), "--rules", "quack"]) == 0
    return out


@pytest.fixture
def viewer(study: Path) -> Iterator[BackgroundViewer]:
    v = start_background(study)
    try:
        yield v
    finally:
        v.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


def _saved(browser: Any) -> int:
    return int(browser.execute_script("return Number(document.body.dataset.saved || 0)"))


def _press(browser: Any, claim: Any, field: str, value: bool) -> None:
    """Click one judgement button of a claim and wait until the page has saved it."""
    before = _saved(browser)
    button = claim.find_element(
        "css selector", f"button.judge[data-field='{field}'][data-value='{str(value).lower()}']"
    )
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    wait_for(browser, f"Number(document.body.dataset.saved || 0) === {before + 1}")
    assert browser.find_element("id", "claims-status").text == "saved"


def _missed(browser: Any, utterance: Any, count: int) -> None:
    before = _saved(browser)
    box = utterance.find_element("css selector", "input.missed-count")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
    box.clear()
    box.send_keys(str(count))
    utterance.find_element("css selector", "button.save-missed").click()
    wait_for(browser, f"Number(document.body.dataset.saved || 0) === {before + 1}")


def _open_book(browser: Any, book: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "book")).select_by_value(book)
    wait_for(browser, f"document.body.dataset.rules === '{book}'")


def _label_some(browser: Any, plan: list[tuple[str, bool]], first: int = 0) -> list[str]:
    """Apply `plan` (field, value) to successive claims from `first`; return their ids."""
    claims = browser.find_elements("css selector", ".claim")
    assert len(claims) >= first + len(plan), "too few claims to label"
    done = []
    for claim, (field, value) in zip(claims[first:], plan, strict=False):
        _press(browser, claim, field, value)
        done.append(claim.get_attribute("data-claim"))
    return done


# ---------------------------------------------------------------------- recomputation
def _wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _expected(label_file: Path) -> dict[tuple[str, str, str], tuple[int, int]]:
    """The table's counts, worked out from the raw label file: the last line of each key,
    then the shares as `core.claim_validity` defines them."""
    standing: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for line in label_file.read_text().splitlines():
        x = json.loads(line)
        item = x["claim"] if x["kind"] == "claim" else x["utterance"]
        standing[(x["rules"], x["game"], x["kind"], item)] = x
    out: dict[tuple[str, str, str], tuple[int, int]] = {}
    for book in sorted({k[0] for k in standing}):
        claims = [x for k, x in standing.items() if k[0] == book and k[2] == "claim"]
        said = [x for k, x in standing.items() if k[0] == book and k[2] == "utterance"]
        judged = [c for c in claims if c["verdict_ok"] is not None]
        for kind in sorted({c["verdict"] for c in judged}) + ["*"]:
            some = [c for c in judged if kind in ("*", c["verdict"])]
            out[(book, "verdict_precision", kind)] = (
                sum(c["verdict_ok"] for c in some),
                len(some),
            )
        read = [c for c in claims if c["extraction_ok"] is not None]
        out[(book, "extraction_precision", "*")] = (
            sum(c["extraction_ok"] for c in read),
            len(read),
        )
        both = [c for c in read if c["verdict_ok"] is not None]
        out[(book, "pipeline_precision", "*")] = (
            sum(c["verdict_ok"] and c["extraction_ok"] for c in both),
            len(both),
        )
        got = listed = 0
        for u in said:
            if u["missed"] is None:
                continue
            marks = [
                c
                for c in read
                if c["game"] == u["game"] and c["claim"].startswith(u["utterance"] + ":")
            ]
            if len(marks) == u["extracted"]:
                ok = sum(c["extraction_ok"] for c in marks)
                got += ok
                listed += ok + u["missed"]
        out[(book, "extraction_recall", "*")] = (got, listed)
    return out


def test_verdicts_labelled_in_the_browser_are_what_analyze_reports(
    browser: Any, viewer: BackgroundViewer, study: Path, tmp_path: Path
) -> None:
    # The study page links to the claim-labelling view.
    open_viewer(browser, viewer.url)
    browser.find_element("id", "claims-link").click()
    wait_for(browser, "location.pathname === '/claims/' && document.body.dataset.ready === '1'")
    assert browser.execute_script("return document.getElementById('no-audit').hidden")
    browser.find_element("id", "annotator").send_keys(ANNOTATOR)
    assert browser.execute_script("return document.body.dataset.rules") == "mineamongus"

    # Every audited claim is listed with its utterance, its verdict, reason and evidence.
    audit = [json.loads(x) for x in (study / "audit" / "claims.jsonl").read_text().splitlines()]
    claims = browser.find_elements("css selector", ".claim")
    assert len(claims) == len(audit) >= 6
    first = claims[0]
    row = audit[0]
    assert first.get_attribute("data-verdict") == row["verdict"]
    assert row["reason"] in first.text
    terms = [t.text for t in first.find_elements("css selector", "dl.evidence dt")]
    assert terms == [k.replace("_", " ") for k in row["evidence"]]
    utterance = first.find_element("xpath", "./ancestor::article")
    assert row["text"] in utterance.find_element("css selector", "blockquote").text
    link = utterance.find_element("css selector", "h3 a").get_attribute("href")
    assert "/game/games/arm/seed" in link and "?step=" in link

    # The filter by verdict kind shows only that kind.
    from selenium.webdriver.support.ui import Select

    kinds = sorted({r["verdict"] for r in audit})
    Select(browser.find_element("id", "verdict-filter")).select_by_value(kinds[-1])
    shown = browser.execute_script(
        "return [...document.querySelectorAll('.claim')].filter(c => !c.hidden)"
        ".map(c => c.dataset.verdict)"
    )
    assert shown and set(shown) == {kinds[-1]}
    assert len(shown) == sum(r["verdict"] == kinds[-1] for r in audit)
    Select(browser.find_element("id", "verdict-filter")).select_by_value("")

    # Judge verdicts and extractions of six claims; change one mind, withdraw one mark.
    plan = [
        ("verdict_ok", False),
        ("verdict_ok", True),
        ("verdict_ok", False),
        ("verdict_ok", True),
        ("verdict_ok", True),
        ("verdict_ok", True),
    ]
    ids = _label_some(browser, plan)
    claims = browser.find_elements("css selector", ".claim")
    for i, claim in enumerate(claims[:6]):
        _press(browser, claim, "extraction_ok", i != 4)
    _press(browser, claims[0], "verdict_ok", True)  # changed mind: right after all
    _press(browser, claims[5], "extraction_ok", True)  # pressed again: withdrawn
    assert claims[5].get_attribute("data-extraction-ok") == ""
    # Missed claims: every utterance whose claims are all labelled gets a count.
    for art in browser.find_elements("css selector", "article.utterance")[:3]:
        _missed(browser, art, 1)

    # The other rule book, labelled apart.
    _open_book(browser, "quack")
    quack = _label_some(
        browser, [("verdict_ok", True), ("verdict_ok", False), ("verdict_ok", True)]
    )
    assert len(quack) == 3

    # A reload shows the saved judgements on the buttons.
    browser.refresh()
    wait_for(browser, "document.body.dataset.ready === '1'")
    assert browser.find_element("id", "annotator").get_attribute("value") == ANNOTATOR
    chosen = browser.execute_script(
        "return [...document.querySelectorAll('.claim')].slice(0, 6)"
        ".map(c => [c.dataset.claim, c.dataset.verdictOk, c.dataset.extractionOk])"
    )
    assert [c[0] for c in chosen] == ids
    assert [c[1] for c in chosen] == ["true", "true", "false", "true", "true", "true"]
    assert [c[2] for c in chosen] == ["true", "true", "true", "true", "false", ""]

    # What analyze reports is what the label file says.
    label_file = study / "labels" / "claims" / f"{ANNOTATOR}.jsonl"
    assert label_file.is_file() and not list((study / "games").rglob("claims/*.jsonl"))
    out = tmp_path / "report"
    assert main(["analyze", str(study), "--out", str(out), "--boot", "100", "--quiet"]) == 0
    with (out / "tables" / "claim_validity.csv").open() as fh:
        table = list(csv.DictReader(fh))
    got = {
        (r["rules"], r["measure"], r["verdict"]): (int(r["right"]), int(r["n"]))
        for r in table
        if r["annotator"] == ANNOTATOR
    }
    expected = _expected(label_file)
    assert got == expected
    assert expected[("mineamongus", "verdict_precision", "*")] == (5, 6)
    assert expected[("mineamongus", "extraction_precision", "*")] == (4, 5)
    assert expected[("quack", "verdict_precision", "*")] == (2, 3)
    assert expected[("mineamongus", "extraction_recall", "*")][1] > 0
    for r in table:
        k, n = int(r["right"]), int(r["n"])
        if n:
            low, high = _wilson(k, n)
            assert float(r["value"]) == pytest.approx(k / n)
            assert float(r["ci_low"]) == pytest.approx(low)
            assert float(r["ci_high"]) == pytest.approx(high)
    report = (out / "report.md").read_text()
    assert "## Grounding audit checked by people" in report
