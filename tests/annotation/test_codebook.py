"""The codebook file: complete, consistent, and the single source of letters."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from annotation.deception.codebook import arc_stages_met, codebook, load_codebook


def test_23_atoms_with_paper_letters_and_clusters() -> None:
    book = codebook()
    assert book.letters == list("ABCDEFGHIJKLMNOPQRSTUVW")
    assert book.letters_of("nonverbal") == list("ABCDEFGHIJK")
    assert book.atom("E").name == "Witness-aware kill"
    assert book.atom("Q").cluster == "V-1"
    assert book.atom("V").idt == "EQVC"
    assert book.atom("A").idt is None
    assert [p.name for p in book.phases] == ["pre_m1", "m1", "m1_m2", "m2", "post_m2"]
    assert "| E | Witness-aware kill |" in book.table(["E"])


def test_arc_stages_in_order() -> None:
    arc = codebook().arcs[0]
    assert arc_stages_met(arc, list("BCEFHL")) == 6
    assert arc_stages_met(arc, list("LHFECB")) == 1  # reversed order meets only one stage
    assert arc_stages_met(arc, []) == 0


def test_bad_codebook_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(Path("annotation/deception/atoms.yaml").read_text())
    data["atoms"][0]["cluster"] = "NV-9"
    bad = tmp_path / "atoms.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="unknown cluster 'NV-9'"):
        load_codebook(bad)
