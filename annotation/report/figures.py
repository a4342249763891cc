"""Figures of the report: matplotlib (Agg) pictures saved as titled PNGs.

Every figure goes through `save`, which refuses a figure without a title and writes the
title into the PNG's `Title` text chunk as well, so a reader (or a test) can tell which
figure a file is without rendering it. `figure_title` reads it back. `titles_recorded`
holds every figure saved while it is active (by any result, whatever helper it uses) to
the same rule.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def new_figure(
    rows: int = 1, cols: int = 1, *, size: tuple[float, float] = (8.0, 3.2)
) -> tuple[Figure, np.ndarray]:
    """A figure on the Agg backend (no display needed) and its axes as a 2-D array."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False)
    return fig, np.asarray(axes)


def title_of(fig: Figure) -> str:
    """The figure's title: its suptitle, else the first non-empty axes title."""
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text().strip():
        return str(sup.get_text()).strip()
    for ax in fig.axes:
        text = ax.get_title().strip()
        if text:
            return text
    return ""


def save(fig: Figure, path: Path, *, dpi: int = 110) -> Path:
    """Write `fig` as a PNG with its title in the file's `Title` chunk, and close it.

    Raises:
        ValueError: The figure has no title (every figure of the report says what it is).
    """
    import matplotlib.pyplot as plt

    title = title_of(fig)
    if not title:
        plt.close(fig)
        raise ValueError(f"figure {path.name} has no title")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi, metadata={"Title": title})
    plt.close(fig)
    return path


@contextmanager
def titles_recorded() -> Iterator[None]:
    """While active, a matplotlib figure saved as PNG must have a title (else
    `ValueError`), and the title goes into the file's `Title` chunk.

    `mineamongus analyze` runs each registered result inside it, so the rule holds for
    results that draw and save their figures themselves. It swaps `Figure.savefig` for
    the duration (restored on exit): the one place a result's figures pass through.
    """
    from matplotlib.figure import Figure as MplFigure

    original = MplFigure.savefig

    def savefig(self: MplFigure, fname: Any, *args: Any, **kwargs: Any) -> None:
        fmt = kwargs.get("format") or Path(str(fname)).suffix.lstrip(".").lower()
        if fmt == "png":
            title = title_of(self)
            if not title:
                raise ValueError(f"figure {Path(str(fname)).name} has no title")
            kwargs["metadata"] = {"Title": title, **(kwargs.get("metadata") or {})}
        original(self, fname, *args, **kwargs)

    MplFigure.savefig = savefig  # type: ignore[method-assign]
    try:
        yield
    finally:
        MplFigure.savefig = original  # type: ignore[method-assign]


def figure_title(path: Path) -> str:
    """The title `save` wrote into a PNG (empty when there is none)."""
    from PIL import Image

    with Image.open(path) as image:
        text: Any = getattr(image, "text", {})
        return str(text.get("Title", ""))


def empty_panel(ax: Axes, message: str) -> None:
    """Say on the panel why it has nothing to show (never a blank picture)."""
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=9, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


def error_bars(
    value: Sequence[float] | np.ndarray,
    low: Sequence[float] | np.ndarray,
    high: Sequence[float] | np.ndarray,
) -> np.ndarray:
    """Asymmetric error-bar lengths (2 x n) from an estimate and its interval; a missing
    bound draws no bar."""
    v = np.asarray(value, dtype=float)
    lo = np.asarray(low, dtype=float)
    hi = np.asarray(high, dtype=float)
    err: np.ndarray = np.nan_to_num(np.vstack([v - lo, hi - v]), nan=0.0).clip(min=0)
    return err
