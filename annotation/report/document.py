"""`report.md` and `report.html` from named sections of text, tables, figures and warnings.

A section is a title and a list of blocks. Other analyses add their own sections: pass
them to `write_report(..., sections)` directly, or register a provider, a function
`(context) -> list[Section]`, under a name in `SECTIONS` (`register_section_provider`,
the provider itself or its `"module:function"` path, imported when a report is made);
`mineamongus analyze` puts the sections of every registered provider (`extra_sections`)
after its own, in name order.
"""

from __future__ import annotations

import base64
import html
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from controller.registry import Registry

logger = logging.getLogger(__name__)

SECTIONS: Registry[Callable[[ReportContext], list[Section]]] = Registry(
    "report section provider", group="mineamongus.report_sections"
)
"""Section providers by name, each a function or its `"module:function"` path, imported
when a report is made (so a report without a grounding audit never imports it); another
package names its provider in the `mineamongus.report_sections` entry-point group."""
SECTIONS.register("grounding", "annotation.grounding.metrics:report_sections")


@dataclass(frozen=True)
class Text:
    """A paragraph (markdown; shown escaped in HTML)."""

    text: str


@dataclass(frozen=True)
class Warning_:
    """A plain warning, shown beside what it qualifies."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table (also written as Parquet/CSV elsewhere; here shown, rounded)."""

    frame: pd.DataFrame
    caption: str = ""
    max_rows: int = 60


@dataclass(frozen=True)
class Figure:
    """A PNG file in the output folder."""

    path: Path
    caption: str


@dataclass(frozen=True)
class Raw:
    """Pre-rendered content for both formats."""

    markdown: str
    html: str


Block = Text | Warning_ | Table | Figure | Raw


@dataclass
class Section:
    """A titled part of the report."""

    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass(frozen=True)
class ReportContext:
    """What an extra section provider is given."""

    folders: list[Path]
    """The run folders analysed."""
    games: pd.DataFrame
    """One row per game (see `annotation.stats`)."""
    out: Path
    """The output folder (write figures here)."""


def register_section_provider(
    name: str, provider: Callable[[ReportContext], list[Section]] | str
) -> None:
    """Add (or replace) the report sections provider called `name` (a function, or its
    `"module:function"` path)."""
    SECTIONS.register(name, provider, replace=True)


def extra_sections(context: ReportContext) -> list[Section]:
    """The sections of every registered provider, in name order. A provider that fails
    (to import or to run) becomes a section saying so, never a silent gap."""
    out: list[Section] = []
    for name in sorted(SECTIONS.names()):
        try:
            out.extend(SECTIONS.get(name)(context))
        except Exception as exc:  # shown in the report, never silently skipped
            logger.exception("report section provider %s failed", name)
            out.append(
                Section(
                    f"{name} (failed)",
                    [Warning_(f"the report section provider {name!r} raised {exc!r}")],
                )
            )
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "—"
        return f"{v:.3g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def _md_table(t: Table) -> str:
    df = t.frame.head(t.max_rows)
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        cells = [_fmt(v).replace("|", "\\|").replace("\n", " ") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    if len(t.frame) > t.max_rows:
        lines.append(f"\n({len(t.frame) - t.max_rows} more rows in the table files)")
    cap = f"*{t.caption}*\n\n" if t.caption else ""
    return cap + "\n".join(lines)


def _html_table(t: Table) -> str:
    df = t.frame.head(t.max_rows)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
        for row in df.itertuples(index=False)
    )
    cap = f"<caption>{html.escape(t.caption)}</caption>" if t.caption else ""
    more = (
        f"<p>({len(t.frame) - t.max_rows} more rows in the table files)</p>"
        if len(t.frame) > t.max_rows
        else ""
    )
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


_CSS = """
body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.85em}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
caption{text-align:left;font-style:italic}
.warn{background:#fff3cd;border-left:4px solid #e0a800;padding:.5em 1em}
img{max-width:100%}
"""


def anchors(titles: list[str]) -> list[str]:
    """GitHub-style heading anchors (lower case, punctuation dropped, spaces to `-`,
    `-1`, `-2`... on repeats), so the markdown table of contents links on GitHub too and
    the HTML uses the same ids."""
    seen: dict[str, int] = {}
    out = []
    for t in titles:
        slug = re.sub(r"[^\w\- ]", "", t.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.append(slug if n == 0 else f"{slug}-{n}")
    return out


def write_report(out: Path, title: str, sections: list[Section]) -> tuple[Path, Path]:
    """Write `out/report.md` and `out/report.html` (figures embedded in the HTML), each
    opening with a table of contents linking every section.

    Returns:
        The two paths.
    """
    ids = anchors([sec.title for sec in sections])
    md: list[str] = [f"# {title}\n", "## Contents\n"]
    md += [f"- [{sec.title}](#{a})" for sec, a in zip(sections, ids, strict=True)]
    md.append("")
    ht: list[str] = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title><style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        "<nav><h2>Contents</h2><ul>"
        + "".join(
            f"<li><a href='#{a}'>{html.escape(sec.title)}</a></li>"
            for sec, a in zip(sections, ids, strict=True)
        )
        + "</ul></nav>",
    ]
    for sec, a in zip(sections, ids, strict=True):
        md.append(f"\n## {sec.title}\n")
        ht.append(f"<h2 id='{a}'>{html.escape(sec.title)}</h2>")
        for b in sec.blocks:
            if isinstance(b, Text):
                md.append(b.text + "\n")
                ht.append(f"<p>{html.escape(b.text)}</p>")
            elif isinstance(b, Warning_):
                md.append(f"> **Warning:** {b.text}\n")
                ht.append(f"<p class='warn'><b>Warning:</b> {html.escape(b.text)}</p>")
            elif isinstance(b, Table):
                md.append(_md_table(b) + "\n")
                ht.append(_html_table(b))
            elif isinstance(b, Figure):
                rel = b.path.relative_to(out) if b.path.is_relative_to(out) else b.path
                md.append(f"![{b.caption}]({rel.as_posix()})\n\n*{b.caption}*\n")
                data = base64.b64encode(b.path.read_bytes()).decode("ascii")
                ht.append(
                    f"<figure><img alt='{html.escape(b.caption)}' "
                    f"src='data:image/png;base64,{data}'><figcaption>"
                    f"{html.escape(b.caption)}</figcaption></figure>"
                )
            else:
                md.append(b.markdown + "\n")
                ht.append(b.html)
    ht.append("</body></html>")
    md_path = out / "report.md"
    html_path = out / "report.html"
    md_path.write_text("\n".join(md), encoding="utf-8")
    html_path.write_text("\n".join(ht), encoding="utf-8")
    return md_path, html_path
