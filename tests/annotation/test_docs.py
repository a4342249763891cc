"""docs/annotation.md shows the codebook and thresholds the code uses."""

from __future__ import annotations

from annotation.report.docs import DOC, render


def test_doc_is_in_sync_with_the_codebook_and_thresholds() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert render(text) == text, "run `python -m annotation.report.docs` to regenerate"
    assert "| E | Witness-aware kill |" in text
    assert "`stalk_radius` | 3.5 |" in text
