"""The audit on whole fake-world games of scripted agents.

Crewmates never lie; and over several games no claim is judged on a sample, sighting or
event of another round. The games are played with the clock standing still in meetings
(talk turns cost no ticks), the case where rounds share a tick at every meeting, so a
window chosen by tick would reach across. The seeds are pinned: each is checked to hold
the meetings it was chosen for, so a change to the scripted agents or the rules that
takes them away fails here, naming the seed (`testkit.games.first_seed` finds another).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.grounding.audit import AuditedClaim
from annotation.grounding.claims import Claim, RuleExtractor
from annotation.grounding.rules import audit_claims
from annotation.grounding.trajectory import Trajectory, load_trajectory
from testkit.games import GameStore

STILL_CLOCK = {"talk_ticks_per_utterance": 0, "talk_ticks_per_pass": 0}
STILL_CLOCK_SEEDS = (0, 1, 2, 3)
"""Quick games (frames off, clock still in meetings) that each hold a meeting; seed 0
holds three and seed 3 two (the games a round boundary bends)."""
CREW_SEED = 69
"""A quick game (frames off, one of the run's shared games) with a meeting."""
ONE_ROUND_RULES = {"default", "start", "end", "whole", "mostly", "before_body", "ticks"}


@pytest.fixture(scope="module")
def still_clock_games(fake_games: GameStore) -> list[tuple[Path, Trajectory]]:
    """The `STILL_CLOCK_SEEDS` games (the run's store), each checked to hold a meeting,
    one at least two."""
    found: list[tuple[Path, Trajectory]] = []
    for seed in STILL_CLOCK_SEEDS:
        out = fake_games.game(seed=seed, frames="off", rules=STILL_CLOCK)
        traj = load_trajectory(out)
        assert traj.meetings, f"seed {seed} holds no meeting now; pin another"
        found.append((out, traj))
    multi = sum(len(t.meetings) >= 2 for _, t in found)
    assert multi >= 1, f"no game of seeds {STILL_CLOCK_SEEDS} holds two meetings now"
    # The hazard these games test: a round starts at the tick the previous one ended.
    shared = [
        t.steps[m.end_step + 1].start_tick == t.steps[m.step].end_tick
        for _, t in found
        for m in t.meetings
        if m.end_step is not None and m.end_step + 1 in t.steps
    ]
    assert any(shared), "with talk turns free, a round should start at the last call's tick"
    return found


def test_scripted_crewmate_claims_verify_true_or_unverifiable(fake_games: GameStore) -> None:
    traj = load_trajectory(fake_games.game(seed=CREW_SEED, frames="off"))
    assert traj.meetings, f"seed {CREW_SEED} holds no meeting now; pin another"
    rows = audit_claims(traj, RuleExtractor().extract(traj).claims)
    crew = [r for r in rows if r.speaker_role == "crewmate" and r.type != "accusation"]
    assert crew
    bad = [(r.text, r.verdict, r.reason) for r in crew if r.verdict not in ("true", "unverifiable")]
    assert not bad, bad
    # Their claims are checkable, not merely unrefuted.
    assert sum(r.verdict == "true" for r in crew) >= len(crew) // 2


def _probes(t: Trajectory) -> list[Claim]:
    """Claims for every meeting, player and room: at the round's edges and ticks."""
    rooms = sorted(t.geometry.rooms) if t.geometry is not None else []
    out: list[Claim] = []
    for m in t.meetings:
        prev = t.meeting(m.index - 1)
        ticks = {m.tick, t.steps[m.round_first_step].start_tick}
        if prev is not None:
            ticks.add(prev.tick)
        phrases = [None, "at the start", "at the end", "the whole time", "last round"]
        phrases += [f"at tick {k}" for k in sorted(ticks)]
        for who in t.agents:
            base = {"meeting": m.index, "speaker": who, "subject": who, "utterance": 1}
            for temporal in phrases:
                for room in rooms:
                    out.append(Claim(**base, type="location", room=room, temporal=temporal))
                for act in ("task", "travel", "wait", "report", "kill", "call_meeting"):
                    out.append(Claim(**base, type="activity", activity=act, temporal=temporal))
                for room in rooms[::3]:
                    out.append(
                        Claim(
                            **base, type="activity", activity="travel", room=room, temporal=temporal
                        )
                    )
                for other in t.agents:
                    if other != who:
                        out.append(Claim(**base, type="sighting", target=other, temporal=temporal))
            for other in t.agents:
                if other != who:
                    out.append(Claim(**base, type="accusation", target=other))
    return out


def _evidence_steps(row: AuditedClaim) -> set[int]:
    ev = row.evidence
    steps = set(ev.get("sample_steps", []))
    steps |= {r["step"] for r in ev.get("sightings", []) if isinstance(r, dict) and "step" in r}
    for key in ("reports", "kills", "emergencies"):
        steps |= {r["step"] for r in ev.get(key, [])}
    for task in ev.get("tasks", []):
        steps |= {task["start_step"]} | ({task["end_step"]} - {None})
    return steps


def test_no_claim_is_judged_on_another_rounds_record(
    still_clock_games: list[tuple[Path, Trajectory]],
) -> None:
    checked = 0
    for _, t in still_clock_games:
        claims = RuleExtractor().extract(t).claims + _probes(t)
        kill_round = {k.victim: t.round_of(k.step) for k in t.kills}
        for row in audit_claims(t, claims):
            m = t.meeting(row.meeting)
            assert m is not None
            if row.type == "accusation":
                for g in row.evidence.get("grounds", []):
                    if "victim" in g:
                        assert t.round_of(g["step"]) == kill_round[g["victim"]], (row.text, g)
                continue
            if row.window is None:
                continue
            rule = row.evidence.get("rule")
            window = {
                n for n in range(row.window[0], row.window[1] + 1) if t.round_of(n) is not None
            }
            rounds = {t.round_of(n) for n in window}
            if rule in ONE_ROUND_RULES:
                assert len(rounds) == 1, (row.temporal, row.window)
                if rule != "ticks":
                    assert rounds == {t.round_of(m.step)}, (row.temporal, row.window)
            if rule == "previous_round":
                assert rounds == {t.round_of(m.step) - 1}  # type: ignore[operator]
            used = _evidence_steps(row)
            assert {t.round_of(n) for n in used} <= rounds, (row.type, row.temporal, used, rounds)
            assert all(n <= m.step for n in used)
            checked += 1
    assert checked > 1000


def _round_rooms(run: Path, t: Trajectory) -> dict[tuple[int, str], set[str]]:
    """(round, player) -> rooms seen in the raw log: the round's trace poses, marks,
    step-end snapshots and the snapshot it began with (read here, not by the trajectory).
    """
    geo = t.geometry
    assert geo is not None
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    calls = {e["step"] for e in events if e["kind"] == "meeting_start"}
    free: dict[int, int] = {}
    round_no = 1
    for e in events:
        if e["kind"] == "step_start" and e["phase"] == "free_roam":
            free[e["step"]] = round_no
        if e["kind"] == "meeting_start":
            round_no += 1
    died = {e["victim"]: e["tick"] for e in events if e["kind"] == "kill"}
    out: dict[tuple[int, str], set[str]] = {}

    def add(rnd: int | None, who: str, pos: list[float], tick: int) -> None:
        if rnd is not None and (who not in died or tick <= died[who]):
            out.setdefault((rnd, who), set()).add(geo.room_at((pos[0], pos[1], pos[2])))

    for e in events:
        kind, step = e["kind"], e["step"]
        if kind == "trace" and step in free:
            for who, poses in e["players"].items():
                for tick, pose in zip(e["ticks"], poses, strict=False):
                    add(free[step], who, pose, tick)
        elif kind == "program" and step in free:
            for pe in e["events"]:
                if pe.get("kind") == "mark" and pe.get("pos"):
                    add(free[step], e["agent"], pe["pos"], pe["tick"])
        elif kind == "positions" and e.get("cause") in ("setup", "vote_end", "step_end"):
            rnd = free.get(step) if e["cause"] == "step_end" else free.get(step + 1)
            for who, snap in e["players"].items():
                if snap["status"] == "alive":
                    add(rnd, who, snap["pos"], e["tick"])
        elif kind == "kill" and step in free:
            add(free[step], e["victim"], e["pos"], e["tick"])
    assert set(free.values()) >= {t.round_of(m.step) for m in t.meetings}
    assert calls
    return out


def test_a_location_claim_is_true_exactly_when_its_rounds_own_log_shows_the_room(
    still_clock_games: list[tuple[Path, Trajectory]],
) -> None:
    for run, t in still_clock_games:
        seen = _round_rooms(run, t)
        rooms = sorted(t.geometry.rooms) if t.geometry is not None else []
        for m in t.meetings:
            rnd = t.round_of(m.step)
            assert rnd is not None
            start = t.steps[m.round_first_step].start_tick
            living = [a for a in t.agents if t.alive_at(a, start + 1)]
            claims = [
                Claim(meeting=m.index, speaker=a, subject=a, utterance=1, type="location", room=r)
                for a in living
                for r in rooms
            ]
            for row in audit_claims(t, claims):
                expect = row.room in seen.get((rnd, row.subject), set())
                assert (row.verdict == "true") == expect, (
                    m.index,
                    row.subject,
                    row.room,
                    row.verdict,
                    row.reason,
                )
