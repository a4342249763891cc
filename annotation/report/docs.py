"""Generated parts of `docs/annotation.md`: the codebook table and the detector thresholds.

`python -m annotation.report.docs` rewrites the marked blocks of the doc from `atoms.yaml` and
`DetectorParams`; a test checks the doc is in sync, so the doc reads the same data as
the judge and the detectors.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from annotation.deception.codebook import codebook
from annotation.deception.detectors import DETECTORS, DetectorParams

DOC = Path(__file__).resolve().parents[2] / "docs" / "annotation.md"


def codebook_markdown() -> str:
    """The 23 atoms, clusters and arcs as markdown."""
    book = codebook()
    lines = ["| cluster | name | channel | meaning |", "|---|---|---|---|"]
    for cid, c in book.clusters.items():
        lines.append(f"| {cid} | {c.name} | {c.channel} | {c.meaning} |")
    lines += ["", book.table(), ""]
    for arc in book.arcs:
        stages = " → ".join("/".join(s) for s in arc.stages)
        lines.append(
            f"Arc `{arc.name}`: {stages} (realised with at least {arc.min_stages} stages "
            f"in order). {arc.description}"
        )
    lines.append("")
    lines.append("Phases: " + ", ".join(f"`{p.name}` ({p.label})" for p in book.phases) + ".")
    return "\n".join(lines)


def detectors_markdown() -> str:
    """The detectors and their thresholds as markdown."""
    lines = ["| detector | atom | what it decides |", "|---|---|---|"]
    for name, det in sorted(DETECTORS.items(), key=lambda kv: kv[1].atom):
        fn = getattr(det, "fn", None)
        doc = (fn.__doc__ or "").split("\n\n")[0] if fn else ""
        lines.append(f"| `{name}` | {det.atom} | {' '.join(doc.split())} |")
    lines += ["", "| threshold | default | meaning |", "|---|---|---|"]
    for field, info in DetectorParams.model_fields.items():
        text = " ".join((info.description or "").split())
        lines.append(f"| `{field}` | {info.default} | {text} |")
    return "\n".join(lines)


def render(text: str) -> str:
    """The doc text with its generated blocks replaced."""
    for name, body in (("codebook", codebook_markdown()), ("detectors", detectors_markdown())):
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", flags=re.S)
        if not pattern.search(text):
            raise ValueError(f"{DOC}: no <!-- {name}:start --> ... <!-- {name}:end --> block")
        block = body + "\n"

        def fill(m: re.Match[str], block: str = block) -> str:
            return m.group(1) + block + m.group(2)

        text = pattern.sub(fill, text)
    return text


def main() -> int:
    """Rewrite the doc's generated blocks."""
    DOC.write_text(render(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    sys.stderr.write(f"updated {DOC}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
