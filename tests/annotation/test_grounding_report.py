"""The grounding audit's sections in the `analyze` report (through the report's hook)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

from annotation.report import ReportContext, Table, Text, extra_sections

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
    head = tables["Headline metrics (95 % cluster bootstrap)"]
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
