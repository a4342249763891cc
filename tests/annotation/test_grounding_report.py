"""The grounding audit's sections in the `analyze` report (through the report's hook)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

from annotation.report.document import ReportContext, Table, Text, extra_sections

_spec = importlib.util.spec_from_file_location(
    "audit_cli_helpers", Path(__file__).with_name("test_audit_cli.py")
)
assert _spec is not None and _spec.loader is not None
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
write_run = _helpers.write_run


def test_the_report_hook_audits_the_runs_with_the_rule_extractor(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    ctx = ReportContext(folders=[run], games=pd.DataFrame(), out=tmp_path / "report")
    (section,) = [s for s in extra_sections(ctx) if s.title == "Grounding audit"]
    assert isinstance(section.blocks[0], Text) and "rule extractor" in section.blocks[0].text
    tables = {b.caption: b.frame for b in section.blocks if isinstance(b, Table)}
    assert any("Rule book `mineamongus`" in b.text for b in section.blocks if isinstance(b, Text))
    head = tables["Headline metrics (95 % cluster bootstrap), rule book mineamongus"]
    assert set(head.rules) == {"mineamongus"} and "boot_degenerate" in head
    assert set(head.metric) >= {"truthfulness", "deception_rate", "crew_win"}
    assert "Detection lift (hit minus chance) by meeting index" in tables
    assert (tmp_path / "report" / "audit" / "claims.jsonl").is_file()


def test_the_report_hook_prefers_an_existing_audit(tmp_path: Path) -> None:
    from controller.cli import main

    run = write_run(tmp_path / "run")
    assert main(["audit", str(run)]) == 0  # writes run/audit
    ctx = ReportContext(folders=[run], games=pd.DataFrame(), out=tmp_path / "report")
    (section,) = [s for s in extra_sections(ctx) if s.title == "Grounding audit"]
    assert isinstance(section.blocks[0], Text)
    assert str(run / "audit") in section.blocks[0].text
    assert not (tmp_path / "report" / "audit").exists()


def test_the_report_gives_each_rule_book_its_own_section(tmp_path: Path) -> None:
    from controller.cli import main

    run = write_run(tmp_path / "run")
    assert main(["audit", str(run)]) == 0  # run/audit
    assert main(["audit", str(run), "--rules", "quack"]) == 0  # run/audit-quack
    ctx = ReportContext(folders=[run], games=pd.DataFrame(), out=tmp_path / "report")
    sections = {s.title: s for s in extra_sections(ctx) if s.title.startswith("Grounding")}
    assert set(sections) == {"Grounding audit", "Grounding audit (rule book: quack)"}
    for title, book in (
        ("Grounding audit", "mineamongus"),
        (
            "Grounding audit (rule book: quack)",
            "quack",
        ),
    ):
        blocks = sections[title].blocks
        assert any(f"Rule book `{book}`" in b.text for b in blocks if isinstance(b, Text))
        pooled = next(b.frame for b in blocks if isinstance(b, Table) and "pooled" in b.caption)
        assert set(pooled.rules) == {book}  # never pooled across books


def test_the_report_refuses_an_audit_folder_that_mixes_rule_books(tmp_path: Path) -> None:
    import json

    from annotation.report.document import Warning_
    from controller.cli import main

    run = write_run(tmp_path / "run")
    assert main(["audit", str(run)]) == 0
    claims = run / "audit" / "claims.jsonl"
    rows = [json.loads(line) for line in claims.read_text().splitlines()]
    rows[0]["rules"] = "quack"
    claims.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ctx = ReportContext(folders=[run], games=pd.DataFrame(), out=tmp_path / "report")
    (section,) = [s for s in extra_sections(ctx) if s.title.startswith("Grounding")]
    assert isinstance(section.blocks[0], Warning_) and "mixes" in section.blocks[0].text
