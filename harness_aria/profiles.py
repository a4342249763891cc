"""ARIA's profiles: which harness the unset settings of a spec come from.

A profile is a value: a table from each of the settings it governs (`SETTINGS`) to
that setting's value. `reference` is the authors' harness as their code builds it (every
living agent asked every step, every module making its call, model-written programs, a
model call updating beliefs, the reference's prompt content and per-call sampling, the
reference's egocentric view); `lean` is this project's cheaper harness (continuation,
calls only where needed, programs built from primitives, rule belief updates, the short
prompts, the model's own sampling, the camera's view with sightings kept).

`harness_aria.spec.AriaSpec` fills every governed setting that is not given explicitly
from its `profile` (the reference's by default) and records which were given
(`AriaSpec.explicit`), so a setting given in a side's `spec:`, by `--ablation` or by a
study's axes wins, and changing the profile re-resolves the rest. This module imports
nothing of the harness, so the spec (and a reader of a record) can use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

ProfileName = Literal["reference", "lean"]

DEFAULT_PROFILE: ProfileName = "reference"
"""The profile a spec takes when it names none."""

SETTINGS = (
    "continuation",
    "module_calls",
    "action",
    "belief_update",
    "prompt_content",
    "call_sampling",
    "ego_view",
)
"""The spec's fields a profile governs, in the order they are written."""


@dataclass(frozen=True)
class Profile:
    """One profile: its name, what it is, and its value of every governed setting."""

    name: ProfileName
    about: str
    values: Mapping[str, str]
    """Setting -> value, for every name in `SETTINGS`."""

    def __post_init__(self) -> None:
        missing = [s for s in SETTINGS if s not in self.values]
        extra = [s for s in self.values if s not in SETTINGS]
        if missing or extra:
            raise ValueError(f"profile {self.name!r}: settings missing {missing}, unknown {extra}")


REFERENCE = Profile(
    name="reference",
    about="the authors' harness, as their code builds it",
    values=MappingProxyType(
        {
            "continuation": "off",
            "module_calls": "reference",
            "action": "codegen",
            "belief_update": "llm",
            "prompt_content": "reference",
            "call_sampling": "reference",
            "ego_view": "reference",
        }
    ),
)
LEAN = Profile(
    name="lean",
    about="this project's cheaper harness (the defaults before profiles)",
    values=MappingProxyType(
        {
            "continuation": "on",
            "module_calls": "needed",
            "action": "primitives",
            "belief_update": "rule",
            "prompt_content": "lean",
            "call_sampling": "model",
            "ego_view": "camera",
        }
    ),
)

PROFILES: Mapping[str, Profile] = MappingProxyType({p.name: p for p in (REFERENCE, LEAN)})
"""Every profile by name."""


def profile_values(name: str) -> Mapping[str, str]:
    """The governed settings' values of a profile.

    Raises:
        KeyError: no profile of that name, with the names there are.
    """
    try:
        return PROFILES[name].values
    except KeyError:
        raise KeyError(f"no ARIA profile {name!r} (profiles: {', '.join(PROFILES)})") from None
