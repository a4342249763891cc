"""Asking agents: frames, observations, concurrent decisions, validation, the decision log.

Every failure is classified once, here: `harness` (agent code raised, or returned
no decision), `infrastructure` (the provider failed after retries), `model` (the
model's answer was unusable), `rules` (the program or vote broke a rule). None of
them is ever turned into a move, a skip or a pass.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from controller.actions import _Action, dump_actions
from controller.agents.base import AgentDecision, InfrastructureFailure
from controller.engine import Engine
from controller.events import Continuation, Decision, ErrorKind, FrameRef, StepPhase
from controller.programs import (
    Program,
    ProgramError,
    Say,
    parse_program,
    typed_program,
    validate_program,
)
from controller.session import Session
from controller.worlds.base import Frame
from world.geometry import ShipGeometry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Answer:
    """One agent's decision for a step, with how long it took and what went wrong."""

    decision: AgentDecision | None
    latency_ms: float
    error: str = ""
    error_kind: ErrorKind = ""
    frame: FrameRef | None = None


def classify(decision: AgentDecision | None, raised: str) -> tuple[str, ErrorKind]:
    """The decision's error and where it came from ("" when there is none)."""
    if raised:
        return raised, "harness"
    if decision is None:
        return "the agent returned no decision", "harness"
    if decision.infrastructure:
        return decision.invalid or decision.infrastructure, "infrastructure"
    if decision.rules_error:
        return decision.rules_error, "rules"
    if decision.invalid:
        return decision.invalid, "model"
    return "", ""


def _frame_ref(session: Session, frame: Frame | None) -> FrameRef | None:
    if frame is None or frame.path is None:
        return None
    path = Path(frame.path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        rel = path.resolve().relative_to(session.out_dir.resolve()).as_posix()
    except ValueError:
        rel = path.as_posix()
    return FrameRef(path=rel, sha256=digest)


def decide(session: Session, agents: list[str]) -> dict[str, Answer]:
    """Render frames, build observations and ask every listed agent at once."""
    frames: dict[str, Frame] = {}
    if session.config.frames != "off" and agents:
        folder = session.out_dir / "frames" / f"{session.engine.step:04d}"
        frames = session.world.render(agents, folder, session.config.frames)
    refs = {a: _frame_ref(session, frames.get(a)) for a in agents}
    events = session.log.events
    observations = {}
    for a in agents:
        ref = refs[a]
        observations[a] = session.observer.observe(
            a, events, frames.get(a), ref.sha256 if ref is not None else None
        )

    async def one(agent: str) -> Answer:
        t0 = time.perf_counter()
        try:
            decision = await session.agents[agent].decide(observations[agent])
            raised = ""
        except InfrastructureFailure:
            raise
        except Exception as exc:  # agent code's own failure: recorded, never a move
            log.exception("agent %s raised", agent)
            decision, raised = None, f"{type(exc).__name__}: {exc}"
        ms = (time.perf_counter() - t0) * 1000
        error, kind = classify(decision, raised)
        return Answer(decision, ms, error, kind, refs[agent])

    async def every() -> list[Answer]:
        return await asyncio.gather(*(one(a) for a in agents))

    answers = session.loop.run_until_complete(every())
    return dict(zip(agents, answers, strict=True))


Validator = Callable[[Program, str, Engine, ShipGeometry], None]
"""Checks a program before dispatch (`validate_program`, or a ghost's), raising
`ProgramError` with the first reason it may not run."""


def accept(
    session: Session, agent: str, answer: Answer, validate: Validator = validate_program
) -> tuple[Program | None, Answer]:
    """Parse and validate a decision's program; log the decision either way.

    A continuation (`AgentDecision.continued`: the agent was not asked, its running
    program goes on) is validated the same way and logged as a `continuation` event,
    never as a decision; outside free roam it is a harness error.

    Args:
        session: The game's shared state.
        agent: Whose decision.
        answer: The decision and what went wrong getting it.
        validate: The program check (a ghost's programs have their own,
            `controller.freeroam.validate_ghost_program`).

    Returns:
        The program (None when unusable) and the answer with any rules error added.
    """
    e = session.engine
    program: Program | None = None
    if answer.decision is not None and answer.decision.continued and not answer.error:
        if e.phase != "free_roam":
            answer = Answer(
                answer.decision,
                answer.latency_ms,
                f"a continuation outside free roam ({e.phase})",
                "harness",
                answer.frame,
            )
        else:
            return _continue(session, agent, answer, validate)
    if answer.decision is not None and not answer.error:
        try:
            program = _read(answer.decision)
            validate(program, agent, e, session.geometry)
            if e.phase == "meeting" and sum(isinstance(a, Say) for a in program.actions) > 1:
                raise ProgramError("at most one say per meeting turn")
        except ProgramError as exc:
            # a program carrying out the harness's own pick, or actions the harness built
            # around their own checks, is the harness's fault
            built = answer.decision.harness_built or isinstance(exc, _Mistyped)
            kind: ErrorKind = "harness" if built else "rules"
            answer = Answer(answer.decision, answer.latency_ms, str(exc), kind, answer.frame)
            program = None
    phase: StepPhase = "meeting" if e.phase == "meeting" else "free_roam"
    log_decision(session, agent, phase, answer)
    return program, answer


def _continue(
    session: Session, agent: str, answer: Answer, validate: Validator
) -> tuple[Program | None, Answer]:
    """Validate a continued program and log the `continuation` event."""
    d = answer.decision
    assert d is not None
    program: Program | None = None
    try:
        program = _read(d)
        validate(program, agent, session.engine, session.geometry)
    except ProgramError as exc:
        kind: ErrorKind = "harness" if isinstance(exc, _Mistyped) else "rules"
        answer = Answer(d, answer.latency_ms, str(exc), kind, answer.frame)
        program = None
    session.emit(
        Continuation(
            agent=agent,
            module=d.module,
            program=_logged(d.program),
            decision_step=d.continued_from,
            running=d.reasoning,
            valid=not answer.error,
            error=answer.error,
            error_kind=answer.error_kind,
            spec=d.spec,
            **session.base(),
        )
    )
    return program, answer


class _Mistyped(ProgramError):
    """An agent's typed actions fail their own types: built around the checks
    (`model_construct`) or broken afterwards, a bug of the agent's code."""


def _read(decision: AgentDecision) -> Program:
    """A decision's program: its typed actions validated again, or (a list of action
    dicts from outside the project) parsed as untrusted data.

    Raises:
        ProgramError: the data is no program (whoever wrote it broke a rule), or
            `_Mistyped` when the typed actions fail their own types.
    """
    data: object = decision.program
    try:
        typed = typed_program(list(decision.program)) if isinstance(data, list) else None
    except ProgramError as exc:
        raise _Mistyped(str(exc)) from exc
    return typed if typed is not None else parse_program(data)


def _logged(program: object) -> object:
    """A decision's program as the log keeps it: typed actions as their builder gave
    them (`dump_actions`), anything else as it came."""
    if isinstance(program, list) and all(isinstance(a, _Action) for a in program):
        return dump_actions(program)
    return program


def log_decision(
    session: Session, agent: str, phase: StepPhase, answer: Answer, module: str = ""
) -> None:
    """Write one `decision` event."""
    d = answer.decision or AgentDecision()
    session.emit(
        Decision(
            agent=agent,
            phase=phase,
            module=d.module or module,
            program=_logged(d.program),
            vote=d.vote,
            valid=not answer.error,
            error=answer.error,
            error_kind=answer.error_kind,
            raw=d.raw,
            reasoning=d.reasoning,
            narration=d.narration,
            latency_ms=round(answer.latency_ms, 3),
            calls=d.calls,
            spec=d.spec,
            frame=answer.frame,
            view_text=d.view_text,
            deferral=d.deferral,
            **session.base(),
        )
    )
