"""The examples of docs/environment.md run as written (on the fake world)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "environment.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks()
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)  # the first block writes runs/api-1
    namespace: dict[str, Any] = {}
    try:
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), namespace)
    finally:
        for value in namespace.values():
            close = getattr(value, "close", None)
            if callable(close) and type(value).__module__.startswith(("mineamongus", "pettingzoo")):
                close()
    assert (tmp_path / "runs" / "api-1" / "events.jsonl").exists()
