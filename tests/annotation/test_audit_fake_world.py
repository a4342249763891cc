"""The audit on a whole fake-world game of scripted agents: crewmates never lie."""

from __future__ import annotations

from pathlib import Path

from annotation.audit import audit_claims
from annotation.claims import RuleExtractor
from annotation.trajectory import load_trajectory
from controller.cli import play_game
from controller.config import resolve_config
from world.spec import load_map


def test_scripted_crewmate_claims_verify_true_or_unverifiable(tmp_path: Path) -> None:
    config = resolve_config("quick", overrides={"seed": 12, "frames": "off"})
    result = play_game(config, load_map(config.map), "fake", tmp_path)
    assert result.status == "ok"
    traj = load_trajectory(tmp_path)
    assert traj.meetings, "seed 12 has meetings"
    rows = audit_claims(traj, RuleExtractor().extract(traj).claims)
    crew = [r for r in rows if r.speaker_role == "crewmate" and r.type != "accusation"]
    assert crew
    bad = [(r.text, r.verdict, r.reason) for r in crew if r.verdict not in ("true", "unverifiable")]
    assert not bad, bad
    # Their claims are checkable, not merely unrefuted.
    assert sum(r.verdict == "true" for r in crew) >= len(crew) // 2
