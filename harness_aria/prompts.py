"""Prompt templates: text files loaded by name, each with a content hash logged per call.

Templates live in `harness_aria/prompts/<style>/<name>.txt` (style-specific) or
`harness_aria/prompts/common/<name>.txt` (shared); placeholders are `$name`.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any


class PromptError(KeyError):
    """A template is missing or a placeholder has no value."""


@dataclass(frozen=True)
class Prompt:
    """A loaded template."""

    name: str
    style: str
    text: str
    sha: str

    @property
    def ref(self) -> str:
        """`style/name@hash`, the reference logged with every call."""
        return f"{self.style}/{self.name}@{self.sha}"

    def render(self, **values: Any) -> str:
        """Fill the placeholders; every placeholder must be given."""
        try:
            return string.Template(self.text).substitute({k: str(v) for k, v in values.items()})
        except KeyError as exc:
            raise PromptError(f"prompt {self.ref} needs a value for {exc}") from exc


@lru_cache(maxsize=128)
def load_prompt(name: str, style: str) -> Prompt:
    """The template `name` for a prompt style, falling back to the shared one."""
    root = resources.files("harness_aria").joinpath("prompts")
    for folder in (style, "common"):
        f = root.joinpath(folder, f"{name}.txt")
        if f.is_file():
            text = f.read_text(encoding="utf-8")
            sha = hashlib.sha256(text.encode()).hexdigest()[:12]
            return Prompt(name=name, style=folder, text=text, sha=sha)
    raise PromptError(f"no prompt {name!r} for style {style!r} (looked in {style}/ and common/)")
