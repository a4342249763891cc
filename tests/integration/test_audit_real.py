"""The grounding audit on a real-server game: the scripted crewmates do not lie."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.grounding.claims import RuleExtractor
from annotation.grounding.metrics import game_metrics
from annotation.grounding.rules import audit_claims
from annotation.grounding.trajectory import load_trajectory

pytestmark = pytest.mark.integration


def test_every_scripted_crewmate_claim_verifies_true_or_unverifiable(
    real_meeting_run: Path,
) -> None:
    traj = load_trajectory(real_meeting_run)
    extraction = RuleExtractor().extract(traj)
    rows = audit_claims(traj, extraction.claims)
    crew = [r for r in rows if r.speaker_role == "crewmate" and r.type != "accusation"]
    assert traj.meetings and crew, "the real game's crewmates spoke, so they made claims"
    # Something was checked against the engine, not only declared unverifiable.
    assert any(r.verdict == "true" for r in crew), [(r.text, r.reason) for r in crew]
    bad = [
        (r.meeting, r.speaker, r.text, r.verdict, r.reason)
        for r in crew
        if r.verdict not in ("true", "unverifiable")
    ]
    assert not bad, bad
    # The trajectory covers every seat and every step of the real game.
    assert set(traj.players) == set(traj.agents)
    assert all(len(steps) == len(traj.steps) for steps in traj.players.values())
    # Metrics compute on the real record (no exclusions for a clean scripted game).
    gm = game_metrics(traj, rows, extraction)
    assert gm.control and gm.rows
    assert gm.exclusions["extraction_failed_infrastructure"] == 0
