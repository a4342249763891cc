"""The `strict` rule book: this project's rules with a yes-or-no verdict.

The `mineamongus` book grades a claim that is nearly right: `near_miss` for a duration
claim that held only part of the window ("I was in admin the whole time", and it was
there for half of it) and `wrong_room` for the right activity or sighting in another
room. Studies that score statements as simply true or false (and the rates people
compare across papers) need those graded verdicts settled: the `strict` book counts
both as `false`, everything else as the default book decides, with the same windows,
evidence and reasons. The graded verdict is kept in the evidence (`graded_verdict`) and
the reason says it was settled, so a row can always be read back to the default book.

A claim settled as false is also a lie for the accusations made after it (an accuser's
`target_claim_false` grounds), as `false` is in the default book.
"""

from __future__ import annotations

from collections.abc import Iterable

from annotation.grounding.audit import AuditedClaim, ProjectAuditor, false_claim_grounds
from annotation.grounding.claims import Claim, normalise_claim
from annotation.grounding.trajectory import Trajectory

NAME = "strict"
SETTLED = frozenset({"near_miss", "wrong_room"})
"""The default book's graded verdicts, which this book counts as `false`."""


def settle(row: AuditedClaim) -> AuditedClaim:
    """One row of the default book under this book: a graded verdict made `false`."""
    if row.verdict not in SETTLED:
        return row.model_copy(update={"rules": NAME})
    return row.model_copy(
        update={
            "rules": NAME,
            "verdict": "false",
            "evidence": {**row.evidence, "graded_verdict": row.verdict},
            "reason": f"{row.verdict} counted as false (strict): {row.reason}".rstrip(": "),
        }
    )


class StrictRuleBook:
    """This project's rules, `near_miss` and `wrong_room` counted as `false`."""

    name = NAME
    note = (
        "Rule book `strict`: this project's rules with `near_miss` and `wrong_room` "
        "counted as false (the graded verdict kept in the evidence); comparable with "
        "studies that score statements only as true or false."
    )

    def audit(self, traj: Trajectory, claims: Iterable[Claim]) -> list[AuditedClaim]:
        """Verify claims with the `mineamongus` rules, then settle the graded verdicts
        (before the accusations' grounds are read from the verdicts).

        Returns:
            One audited row per claim, in order, each with `rules="strict"`.
        """
        auditor = ProjectAuditor(traj)
        rooms = sorted(auditor.rooms)
        rows = [settle(auditor.audit(normalise_claim(c, rooms, traj.agents))) for c in claims]
        return false_claim_grounds(rows, auditor.speech_step)
