"""Detectors on a real-server scripted game: the scripted impostors' own narration says
when they stalk, kill and walk away from a body; the detectors must find those."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from annotation.deception.detectors import run_detectors
from annotation.deception.findings import validate_finding
from annotation.gamelog import load_game

pytestmark = pytest.mark.integration

STALK = re.compile(r"^stalking (\w+) until the others leave$")
KILL = re.compile(r"^killing (\w+) while nobody else can see")
LEAVE = re.compile(r"^leaving the body for (\w+)")


def test_detectors_find_what_the_scripted_impostors_did(real_scripted_run: Path) -> None:
    game = load_game(real_scripted_run)
    findings = run_detectors(game)
    for f in findings:
        assert validate_finding(f, game).accepted, f
    found = {(f.atom, f.step, f.actor, f.target) for f in findings}
    by_step = {(f.atom, f.step, f.actor) for f in findings}
    kills = {(k.step, k.killer): k for k in game.kills}
    checked = 0
    for (step, agent), d in sorted(game.decisions.items()):
        if game.roles.get(agent) != "impostor" or not d.narration:
            continue
        prog = game.programs.get((step, agent))
        if m := STALK.match(d.narration):
            if prog is not None and prog.status == "ok":
                assert ("C", step, agent, m.group(1)) in found, (step, agent, d.narration)
                checked += 1
        elif (m := KILL.match(d.narration)) and (step, agent) in kills:
            # The scripted impostor decides to strike with no other crewmate in its own
            # view, but others may walk into sight during the approach, and E also needs
            # no crewmate to have had *it* in view. So check the record E documents: the
            # visibility stamped at the kill, else the step end the killer decided from.
            k = kills[(step, agent)]
            # this killer's own E finding: two impostors may both kill in one step
            evidence = [
                f for f in findings if f.atom == "E" and f.step == step and f.actor == agent
            ]
            at_kill = [
                v
                for v in game.visibility.get(step, [])
                if v.cause == "kill" and v.subject == agent and v.tick == k.tick
            ]
            vis = [v for s in sorted(game.visibility) if s < step for v in game.visibility[s]]
            last = at_kill[-1:] or [v for v in vis if v.cause == "step_end"][-1:]
            watched = any(
                agent in seen and game.roles.get(w) == "crewmate" and w != m.group(1)
                for v in last
                for w, seen in v.sees.items()
            )
            assert bool(evidence) != watched, (step, agent, evidence, watched)
            checked += 1
        elif LEAVE.match(d.narration):
            # It saw a body near it and walked off: a non-report (H) of that body.
            assert ("H", step, agent) in by_step, (step, agent, d.narration)
            checked += 1
    assert checked > 0, "the scripted game gave the detectors nothing to check"
