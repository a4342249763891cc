"""The game's counts, derived from the event stream alone.

`counts_from_events` is the only place the summary's `counts` come from: the game
calls it on the events it wrote, and anyone can call it on a finished log and get
the same numbers (a test does exactly that).
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.events import (
    ActionRejected,
    Continuation,
    Decision,
    Disconnect,
    Eject,
    EventBase,
    Kill,
    MeetingStart,
    ProgramRun,
    Reconnect,
    Speech,
    TaskDone,
    TaskInterrupted,
    Vote,
)

COUNT_KEYS = (
    "invalid_decisions",
    "infra_errors",
    "harness_errors",
    "program_timeouts",
    "program_failures",
    "programs_cancelled",
    "disconnects",
    "reconnects",
    "kills",
    "meetings",
    "ejections",
    "rejected_actions",
    "tasks_done",
    "tasks_interrupted",
    "failed_votes",
    "failed_turns",
    "model_calls",
    "failed_calls",
    "tokens_in",
    "tokens_out",
    "tokens_cached",
    "continuations",
    "replaced_votes",
)
"""Every key of `counts`, in the order the summary lists them."""


def counts_from_events(events: Iterable[EventBase]) -> dict[str, int]:
    """Count what happened in a game from its events.

    `invalid_decisions` are decisions the model or the rules made unusable;
    `infra_errors` failed for infrastructure reasons after retries; `harness_errors`
    are exceptions raised by agent code (counted apart: they flag the game).
    `tasks_done` counts real (not faked) tasks. `continuations` are steps an agent was
    not asked because its program was still running (no decision, no model call); a
    continuation whose program the rules refused counts as `invalid_decisions` too.
    `replaced_votes` are ballots the rules cast in place of a refused one (an impostor's
    skip under `rules.impostors_may_skip: false`); each refusal is also one of the
    `rejected_actions`.
    """
    c = dict.fromkeys(COUNT_KEYS, 0)
    for ev in events:
        if isinstance(ev, Decision):
            if ev.error_kind == "infrastructure":
                c["infra_errors"] += 1
            elif ev.error_kind == "harness":
                c["harness_errors"] += 1
            elif ev.error:
                c["invalid_decisions"] += 1
            for call in ev.calls:
                c["model_calls"] += 1
                c["tokens_in"] += call.tokens_in
                c["tokens_out"] += call.tokens_out
                c["tokens_cached"] += call.tokens_cached
                if call.error_class:
                    c["failed_calls"] += 1
        elif isinstance(ev, Continuation):
            c["continuations"] += 1
            if ev.error:
                c["invalid_decisions"] += 1
        elif isinstance(ev, ProgramRun):
            key = {
                "timeout": "program_timeouts",
                "failed": "program_failures",
                "cancelled": "programs_cancelled",
            }.get(ev.status)
            if key:
                c[key] += 1
        elif isinstance(ev, Disconnect):
            c["disconnects"] += 1
        elif isinstance(ev, Reconnect):
            c["reconnects"] += int(ev.ok)
        elif isinstance(ev, Kill):
            c["kills"] += 1
        elif isinstance(ev, MeetingStart):
            c["meetings"] += 1
        elif isinstance(ev, Eject):
            c["ejections"] += 1
        elif isinstance(ev, ActionRejected):
            c["rejected_actions"] += 1
        elif isinstance(ev, TaskDone):
            c["tasks_done"] += int(not ev.fake)
        elif isinstance(ev, TaskInterrupted):
            c["tasks_interrupted"] += 1
        elif isinstance(ev, Vote):
            c["failed_votes"] += int(ev.failed)
            c["replaced_votes"] += int(bool(ev.replaced))
        elif isinstance(ev, Speech):
            c["failed_turns"] += int(ev.failed)
    return c


def cost_from_events(events: Iterable[EventBase]) -> float | None:
    """Estimated model cost (USD) of every call recorded on the decisions.

    None when any call's model has no known price: the game's cost is then unknown,
    never the lower sum of the priced calls.
    """
    total = 0.0
    for ev in events:
        if isinstance(ev, Decision):
            for call in ev.calls:
                if call.cost_usd is None:
                    return None
                total += call.cost_usd
    return round(total, 6)


def flags_from_counts(counts: dict[str, int]) -> list[str]:
    """Reasons to distrust an `ok` game's numbers, from its counts."""
    return ["harness_errors"] if counts.get("harness_errors", 0) else []
