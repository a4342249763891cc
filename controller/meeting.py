"""The meeting: to the table, one speaker per step in seat order, then a simultaneous vote.

A failed talk turn (the agent could not produce a usable turn, or the world refused
its line) is logged as failed, never as a pass; a failed ballot is an abstention
marked as failed, never a skip.
"""

from __future__ import annotations

import time

from controller.deciding import Answer, accept, decide, log_decision
from controller.engine import SKIP, Ballot
from controller.events import Eject, ErrorKind, MeetingEnd, Speech, StepStart
from controller.freeroam import run_batch
from controller.programs import compile_program
from controller.protocol import LowProgram, Teleport
from controller.session import Session


def meeting(s: Session) -> None:
    """Run the meeting the engine has open, from the teleport to the vote's result."""
    e = s.engine
    m = e.meeting
    if m is None:
        raise RuntimeError("no meeting to hold")
    first = True
    while True:
        if e.step >= e.rules.max_steps:
            return  # the step budget is spent: the game ends on `timeout`, no vote
        speaker = e.advance()
        if speaker is None:
            break
        talk_step(s, speaker, seat_everyone=first)
        first = False
    vote_step(s, seat_everyone=first)


def _seat_everyone(s: Session) -> None:
    """Bring the living to the table, clear the bodies, announce the meeting."""
    e = s.engine
    m = e.meeting
    assert m is not None
    moves = {
        a: Teleport(
            pos=s.geometry.seat_pos(s.seat_index[a]),
            yaw=round(s.geometry.seat_yaw(s.seat_index[a]), 1),
        )
        for a in e.agents
    }
    s.sync_markers()
    poses = s.world.teleport(moves)
    s.record_positions(poses, "meeting_seats")
    s.observer.perceive(s.record_visibility("meeting_seats"), free_roam=False)
    s.observer.meeting_started()
    if m.trigger == "report" and m.victim:
        s.announce(f"{s.name(m.caller)} reported {s.name(m.victim)}'s body. Meeting called.")
    else:
        s.announce(f"{s.name(m.caller)} called an emergency meeting.")


def talk_step(s: Session, speaker: str, seat_everyone: bool = False) -> None:
    """One speaker's turn (the first step of a meeting also seats everyone)."""
    t0 = time.perf_counter()
    e = s.engine
    e.begin_step()
    s.emit(StepStart(phase="meeting", speaker=speaker, **s.base()))
    if seat_everyone:
        _seat_everyone(s)
    answer = decide(s, [speaker])[speaker]
    t_decided = time.perf_counter()
    program, answer = accept(s, speaker, answer)
    programs: dict[str, LowProgram] = {}
    if program is not None and program.actions:
        programs[speaker] = compile_program(program, e, s.geometry)
    t_world = time.perf_counter()
    report = run_batch(s, programs)
    world_ms = (time.perf_counter() - t_world) * 1000
    outcome = report.outcomes.get(speaker)
    said = [ev.text for ev in (outcome.events if outcome else []) if ev.kind == "chat" and ev.text]
    wanted = program is not None and any(a.op == "say" for a in program.actions)
    failed, kind, error = False, answer.error_kind, answer.error
    if answer.error:
        failed = True
    elif wanted and not said:
        # the line never reached the chat: the world refused or failed it
        failed = True
        kind = "rules" if outcome is not None and outcome.status == "invalid" else "infrastructure"
        error = (outcome.reason if outcome is not None else "") or "the line was not sent"
    text = said[0] if said else ""
    events = e.speak(speaker, text, e.tick, failed=failed, error_kind=kind, error=error)
    s.emit(events)
    spent = e.rules.talk_ticks_per_utterance if text else e.rules.talk_ticks_per_pass
    if spent and e.phase == "meeting":
        # talk spends game time (the world's stopped clock jumps, nobody moves)
        e.set_tick(s.world.advance_clock(spent))
    if any(isinstance(ev, Speech) and ev.text for ev in events):
        s.observer.add_chat("speech", text, speaker)
    s.record_positions(report.players, "step_end")
    s.end_step("meeting", t0, t_decided, world_ms)
    s.progress(f"{s.name(speaker)}: {text or ('(failed turn)' if failed else '(passes)')}")


def _ballot(answer: Answer, living: list[str]) -> tuple[Ballot, Answer]:
    """The ballot an answer casts, and the answer with any rules error added."""
    if answer.error:
        return Ballot(None, True, answer.error_kind, answer.error), answer
    d = answer.decision
    assert d is not None
    if d.abstain:
        return Ballot(None), answer
    kind: ErrorKind
    if d.vote is None:
        error, kind = "no vote given (neither a player, 'skip', nor an abstention)", "model"
    elif d.vote != SKIP and d.vote not in living:
        error, kind = f"vote {d.vote!r} is neither a living player nor 'skip'", "rules"
    else:
        return Ballot(d.vote), answer
    failed = Answer(d, answer.latency_ms, error, kind, answer.frame)
    return Ballot(None, True, kind, error), failed


def vote_step(s: Session, seat_everyone: bool = False) -> None:
    """Everyone alive votes at once; the engine counts and ends the meeting."""
    t0 = time.perf_counter()
    e = s.engine
    if e.meeting is None:
        return
    e.close_talk()
    e.begin_step()
    s.emit(StepStart(phase="voting", **s.base()))
    if seat_everyone:
        _seat_everyone(s)
    living = e.agents
    answers = decide(s, living)
    t_decided = time.perf_counter()
    ballots: dict[str, str | Ballot | None] = {}
    for agent in living:
        ballot, answer = _ballot(answers[agent], living)
        ballots[agent] = ballot
        log_decision(s, agent, "voting", answer, module="VOTE")
    tick, _ = s.world.state()
    events = e.cast_votes(ballots, max(tick, e.tick))
    s.emit(events)
    ejected = next((ev for ev in events if isinstance(ev, Eject)), None)
    end = next(ev for ev in events if isinstance(ev, MeetingEnd))
    if ejected is not None:
        s.announce(ejection_line(s.name(ejected.agent), ejected.role, e.rules.confirm_ejects))
        if ejected.agent not in e.ghosts:
            # out of play: to the sealed ghost area; a crewmate ghost (`rules.ghost_tasks`)
            # stays at its seat and walks on from there, unseen by the living
            s.world.teleport(
                {ejected.agent: Teleport(pos=s.geometry.ghost_pos(s.seat_index[ejected.agent]))}
            )
    elif end.outcome == "tie":
        s.announce("The vote was tied. No one was ejected.")
    else:
        s.announce("No one was ejected.")
    tick, poses = s.world.state()
    e.set_tick(tick)
    s.record_positions(poses, "vote_end")
    e.check_end()
    s.end_step("voting", t0, t_decided)
    s.progress(
        f"meeting {end.index}: {end.outcome}" + (f" {s.name(end.ejected)}" if end.ejected else "")
    )


def ejection_line(name: str, role: str, confirm: bool) -> str:
    """The server's announcement of an ejection; with `confirm_ejects`, the role too.

    The role is told as the reference tells it (`Blue was an Impostor.`, `Red was a
    Crewmate.`), except that the reference's spelling `Imposter` becomes `Impostor`, the
    word every prompt, view and role name of this project uses: an agent must not
    read the announcement's role as another word than its own rules'.
    """
    line = f"{name} was ejected."
    if confirm:
        line += f" {name} was {'an Impostor' if role == 'impostor' else 'a Crewmate'}."
    return line
