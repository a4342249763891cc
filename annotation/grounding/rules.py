"""Rule books: which verdict rules judge the claims of a grounding audit.

The books are registered by name (`annotation.grounding.books.BOOKS`, `mineamongus audit
--rules NAME`); the first two:

* `mineamongus` (the default): this project's rules, built for a 3D world with logged
  sight lines (`annotation.grounding.audit.ProjectAuditor`, `docs/grounding.md`);
* `quack`: QUACK's verdict rules as its paper and code state them
  (`annotation.grounding.quack_rules`), so that the tiers can be put beside QUACK's published
  figures.

Both read the same trajectories and the same (normalised) claims; every audited row
and table says which book judged it (`AuditedClaim.rules`, the `rules` column, the audit
folder's `audit.json`), and the analysis never pools two books.

`RULES` lists, aspect by aspect, the function of each book that decides it, and what
differs; `docs/grounding.md` shows it as the table of differences (a test keeps the two
in step).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from annotation.grounding.audit import AuditedClaim, audit_project
from annotation.grounding.books import BOOKS, RuleBook
from annotation.grounding.claims import Claim
from annotation.grounding.trajectory import Trajectory

DEFAULT_RULES = "mineamongus"
"""The rule book used unless another is asked for."""
RULE_BOOKS: tuple[str, ...] = tuple(BOOKS.names())
"""Every registered rule book, by name, the default first."""


class ProjectRuleBook:
    """This project's rules (`annotation.grounding.audit.audit_project`)."""

    name = DEFAULT_RULES
    note = (
        "Rule book `mineamongus`: this project's verdict rules for a 3D world "
        "with sight lines (docs/grounding.md)."
    )

    def audit(self, traj: Trajectory, claims: Iterable[Claim]) -> list[AuditedClaim]:
        """Verify claims with the `mineamongus` rules."""
        return audit_project(traj, claims)


def rule_book(name: str) -> RuleBook:
    """The rule book of that name.

    Raises:
        ValueError: an unknown name.
    """
    return BOOKS.get(name)()


def audit_claims(
    traj: Trajectory, claims: Iterable[Claim], rules: str = DEFAULT_RULES
) -> list[AuditedClaim]:
    """Verify claims against one game's trajectory under a rule book.

    Claims are normalised first (rooms, players, activity); a claim that names something
    the game does not have is `unverifiable` with the reason, never an error.

    Args:
        traj: The game.
        claims: Its claims (extracted or supplied).
        rules: The rule book (`RULE_BOOKS`): `mineamongus` (this project's rules, the
            default), `quack` (QUACK's) or another registered one.

    Returns:
        One audited row per claim, in the given order; each row's `rules` names the book.

    Raises:
        ValueError: an unknown rule book.
    """
    return rule_book(rules).audit(traj, claims)


@dataclass(frozen=True)
class Rule:
    """One aspect of judging a claim, and the function each book decides it with."""

    aspect: str
    mineamongus: str
    """Dotted name of the default book's function (under `annotation.grounding.`)."""
    quack: str
    """Dotted name of the QUACK book's function (under `annotation.grounding.`)."""
    quack_source: str
    """QUACK's function it reproduces (`quack/evaluation/tier3_statement_verification.py`
    unless a path is given)."""
    difference: str
    """What the QUACK book decides differently (empty when nothing)."""


RULES: tuple[Rule, ...] = (
    Rule(
        "unknown names",
        "audit.ProjectAuditor.unknown",
        "quack_rules.unknown",
        "_verify_claim, verifier registry checks",
        "rooms are each verifier's: an unrecognised room makes a location or sighting "
        "unverifiable, is dropped from a route or an activity",
    ),
    Rule(
        "rooms",
        "claims.normalise_room",
        "quack_rules.room_of",
        "normalize_room_name",
        "a corridor (`hallway`, `corridor`) is no room: unverifiable",
    ),
    Rule(
        "time window",
        "audit.resolve_window",
        "quack_rules.resolve_window",
        "_determine_round_range",
        "the round before the calling step; explicit tick bounds (the same forms) only "
        "narrow it, a bound outside it clamped to its edge (here: the round holding the "
        "stated ticks); a phrase naming the start takes the first 6 steps; every other "
        "phrase is the round (nothing is out of vocabulary, no 'last round', 'earlier' or "
        "step phrases)",
    ),
    Rule(
        "the calling step",
        "audit.resolve_window",
        "quack_rules.includes_calling_step",
        "_resolve_window_for_claim",
        "counted only for presence claims (routes, 'any time' locations) without an "
        "explicit upper bound or the opening clamp; never for sightings, activities, "
        "accusations, 'most of' or 'whole time' claims",
    ),
    Rule(
        "duration phrases",
        "audit.TEMPORAL_PHRASES",
        "quack_rules.duration_semantics",
        "_infer_duration_semantics",
        "substrings: 'whole round', 'stayed in', 'never left', ... are entire time; "
        "'most of', 'majority of', ... most of the time; 'always', 'all the time' are "
        "presence",
    ),
    Rule(
        "location",
        "audit.ProjectAuditor.verify_location",
        "quack_rules.verify_location",
        "verify_location_claim",
        "whole time needs every valid tick, else false (never near_miss; here 80 %, "
        "near_miss below); majority over the round before the call, 50 % inclusive (as "
        "here); a subject with no alive tick is unverifiable (false here); a corridor "
        "walk counts for the room left",
    ),
    Rule(
        "route",
        "audit.ProjectAuditor.verify_location",
        "quack_rules.verify_route",
        "verify_route_claim, GameTimeline.get_visited_rooms (game_reconstructor.py)",
        "wrong order is near_miss (false here); legs naming no room are dropped "
        "(unverifiable here); a claimed revisit that did not happen is near_miss",
    ),
    Rule(
        "sight",
        "audit.ProjectAuditor.verify_sighting",
        "quack_rules.can_see",
        "can_see",
        "room co-location, not the field of view: one in a room sees everyone in it, "
        "never a corridor walker; walkers see walkers of their corridor",
    ),
    Rule(
        "sighting",
        "audit.ProjectAuditor.verify_sighting",
        "quack_rules.verify_sighting",
        "verify_sighting_claim, _find_target_kill",
        "a room is required; both must be in the claimed room; the killer's co-location "
        "at its own kill is dropped (false); only-near is not a category",
    ),
    Rule(
        "task",
        "audit.ProjectAuditor.verify_activity",
        "quack_rules.verify_task",
        "verify_activity_claim (task)",
        "window ends before the calling step",
    ),
    Rule(
        "traveling",
        "audit.ProjectAuditor.wait_or_travel",
        "quack_rules.verify_traveling",
        "verify_activity_claim (traveling)",
        "a move into or out of the claimed room, not presence: standing there is false; "
        "a corridor walk is a move from the room left to the room entered next (here: a "
        "walk toward the room at the window's end); moves touching no claimed room are "
        "wrong_room, also without a trace",
    ),
    Rule(
        "waiting",
        "audit.ProjectAuditor.wait_or_travel",
        "quack_rules.verify_waiting",
        "verify_activity_claim (waiting)",
        "one room over the window (any room, the claimed one is not consulted); 80 % in "
        "one room is near_miss, else false",
    ),
    Rule(
        "report, call meeting",
        "audit.ProjectAuditor.verify_activity",
        "quack_rules.verify_meeting_act",
        "verify_activity_claim (reporting body, calling meeting)",
        "only this meeting's own report or button press; time phrase, victim and room ignored",
    ),
    Rule(
        "kill",
        "audit.ProjectAuditor.verify_activity",
        "quack_rules.verify_activity",
        "verify_activity_claim (unsupported activity)",
        "not a QUACK activity: unverifiable",
    ),
    Rule(
        "accusation grounds",
        "audit.ProjectAuditor.grounds",
        "quack_rules.accusation_grounds",
        "_is_accusation_grounded",
        "also grounded when the accuser called the meeting or could see the accused in "
        "the round; kill scene = the kill room within 2 steps; this round only; a "
        "caught lie is no ground",
    ),
    Rule(
        "caught lie as ground",
        "audit.false_claim_grounds",
        "quack_rules.verify_accusation",
        "_verify_accusation",
        "no such ground",
    ),
    Rule(
        "defense",
        "audit.ProjectAuditor.verify_defense",
        "quack_rules.verify_defense",
        "_verify_claim (defense)",
        "always unverifiable",
    ),
)
"""Aspect by aspect: the deciding function of each book and the difference."""


DOC_BLOCK = "rules"
"""The marked block of `docs/grounding.md` that holds `differences_markdown()`."""


def differences_markdown() -> str:
    """`RULES` as the side-by-side table of `docs/grounding.md`."""
    lines = [
        "| aspect | `mineamongus` (default) | `quack` | QUACK's code "
        "| what QUACK decides differently |",
        "|---|---|---|---|---|",
    ]
    for r in RULES:
        lines.append(
            f"| {r.aspect} | `{r.mineamongus}` | `{r.quack}` | `{r.quack_source}` | "
            f"{r.difference or '-'} |"
        )
    return "\n".join(lines)


def render_doc(text: str) -> str:
    """The doc's text with its rules block replaced by `differences_markdown()`."""
    import re

    pattern = re.compile(rf"(<!-- {DOC_BLOCK}:start -->\n).*?(<!-- {DOC_BLOCK}:end -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"no <!-- {DOC_BLOCK}:start --> ... <!-- {DOC_BLOCK}:end --> block")
    table = differences_markdown() + "\n"
    return pattern.sub(lambda m: m.group(1) + table + m.group(2), text)


if __name__ == "__main__":
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "grounding.md"
    doc.write_text(render_doc(doc.read_text(encoding="utf-8")), encoding="utf-8")
