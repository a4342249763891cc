"""The rule books of the grounding audit, registered by name (`audit --rules NAME`).

Each entry is a rule book's class (a `RuleBook`: a `name` and `audit(traj, claims)`),
registered as a `"module:attr"` reference so that listing the books (the command's
help) imports none of them. The first is the default. A new book is its own file plus
one registration below (or, from another package, one entry point of the
`mineamongus.rule_books` group naming its class).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from controller.registry import Registry

if TYPE_CHECKING:
    from annotation.grounding.audit import AuditedClaim
    from annotation.grounding.claims import Claim
    from annotation.grounding.trajectory import Trajectory


class RuleBook(Protocol):
    """A set of verdict rules, addressed by name."""

    name: str
    note: str
    """One line naming the book in a report (what its verdicts are comparable with)."""

    def audit(self, traj: Trajectory, claims: Iterable[Claim]) -> list[AuditedClaim]:
        """One audited row per claim, in order, each with `rules` = this book's name."""
        ...


BOOKS: Registry[Callable[[], RuleBook]] = Registry(
    "rule book", group="mineamongus.rule_books", unknown=ValueError
)
"""Rule book classes by name, the default first."""
BOOKS.register("mineamongus", "annotation.grounding.rules:ProjectRuleBook")
BOOKS.register("quack", "annotation.grounding.quack_rules:QuackRuleBook")
BOOKS.register("strict", "annotation.grounding.strict_rules:StrictRuleBook")
