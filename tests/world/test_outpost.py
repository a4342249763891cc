"""The second shipped map, `outpost`: a small station that plays.

Valid and small; the presets' task loads fit its stations; scripted games end on it with
both sides winning; ARIA prompts name its rooms and no Skeld room; the grounding audit
verifies claims that name its rooms by name and by alias.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from annotation.grounding.audit import VERIFIABLE
from annotation.grounding.claims import (
    Claim,
    ModelExtractor,
    normalise_room,
    room_aliases,
    spoken_turns,
)
from annotation.grounding.metrics import run_audit
from annotation.grounding.rules import audit_claims
from annotation.grounding.trajectory import Trajectory, load_trajectory
from annotation.llm import JudgeModel, ReplyCache
from controller.cli import play_game
from controller.config import resolve_config
from harness_aria.backends.base import ModelRequest
from harness_aria.backends.fake import FakeBackend
from world.geometry import ShipGeometry
from world.spec import MapSpec, load_map

OUTPOST_ROOMS = ("hub", "lab", "greenhouse", "generator", "quarters", "dock", "radio")
FAKE_ARIA = {"agent": "aria", "args": {"backend": "fake"}}


@pytest.fixture(scope="module")
def outpost() -> MapSpec:
    return load_map("outpost")


def _play(out: Path, seed: int, **overrides: Any) -> Path:
    config = resolve_config(
        "quick", overrides={"seed": seed, "frames": "off", "map": "outpost", **overrides}
    )
    result = play_game(config, load_map(config.map), "fake", out)
    assert result.status == "ok", (seed, result)
    return out


ARIA_SEED = 2
"""A quick outpost game (frames off) of fake ARIA agents with meeting speech."""
SCRIPTED_SEEDS = (1, 2, 3, 4)
"""Quick outpost games (frames off) of the scripted agents: each side wins two."""


@pytest.fixture(scope="module")
def aria_game(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Trajectory]:
    """The `ARIA_SEED` game."""
    root = tmp_path_factory.mktemp("outpost-aria")
    run = _play(root / f"seed{ARIA_SEED}", ARIA_SEED, crew=FAKE_ARIA, impostor=FAKE_ARIA)
    traj = load_trajectory(run)
    assert traj.meetings and spoken_turns(traj)[0], f"seed {ARIA_SEED}: no speech; pin another"
    return run, traj


# -- the map ----------------------------------------------------------------------


def test_outpost_is_small_and_has_its_own_meeting_room(outpost: MapSpec) -> None:
    assert outpost.name == "outpost"
    assert tuple(room.name for room in outpost.rooms) == OUTPOST_ROOMS
    assert outpost.meeting_room == "hub"
    hub = outpost.room("hub").rect
    assert len(outpost.seats) == 8 and all(hub.contains(seat) for seat in outpost.seats)
    assert hub.contains(outpost.emergency_button)
    every = outpost.room_aliases()
    assert every["mess"] == "hub" and every["crew_quarters"] == "quarters"
    assert all(room.aliases for room in outpost.rooms)
    skeld = load_map("skeld")
    assert not {r.name for r in skeld.rooms} & set(OUTPOST_ROOMS)
    assert len(outpost.rooms) < len(skeld.rooms)


def test_the_presets_task_loads_fit_its_stations(outpost: MapSpec) -> None:
    for preset in ("quick", "paper"):
        assert resolve_config(preset).rules.tasks_per_crewmate <= len(outpost.stations)
    assert {s.room for s in outpost.stations} == set(OUTPOST_ROOMS)


def test_every_room_is_reachable_and_walks_are_short(outpost: MapSpec) -> None:
    geometry = ShipGeometry(outpost)
    hub = geometry.room_center("hub")
    for room in OUTPOST_ROOMS:
        length = geometry.path_length(hub, geometry.room_center(room))
        assert length is not None and length < 45, room
    assert set(geometry.adjacency()["hub"]) >= {"quarters", "generator", "radio"}


# -- playing it --------------------------------------------------------------------


def test_scripted_games_end_and_both_sides_win(tmp_path: Path) -> None:
    winners: dict[str, int] = {}
    for seed in SCRIPTED_SEEDS:
        run = _play(tmp_path / f"seed{seed}", seed)
        summary = json.loads((run / "summary.json").read_text())
        assert summary["ending"] != "timeout", seed
        winners[summary["winner"]] = winners.get(summary["winner"], 0) + 1
    assert winners == {"crew": 2, "impostors": 2}, winners


def _prompts(run: Path) -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted((run / "prompts").glob("*.txt"))]
    assert texts, "the run wrote no prompts"
    return texts


def _skeld_rooms_in(texts: list[str]) -> set[str]:
    found = set()
    for room in load_map("skeld").rooms:
        words = {room.name, room.name.replace("_", " ")}
        for text in texts:
            if any(re.search(rf"\b{re.escape(w)}\b", text, re.I) for w in words):
                found.add(room.name)
    return found


def test_aria_prompts_name_its_rooms(aria_game: tuple[Path, Trajectory]) -> None:
    texts = _prompts(aria_game[0])
    for room in OUTPOST_ROOMS:
        assert any(room in text for text in texts), room
    assert not _skeld_rooms_in(texts)


# -- auditing it -------------------------------------------------------------------


def _spoken(alias: str) -> str:
    return alias.replace("_", " ").title()


def _extraction_answers(outpost: MapSpec) -> Any:
    """A fake claim extractor that names every room it reads by its first alias, as said
    aloud ("Crew Quarters", "the Mess")."""
    first = {room.name: _spoken(room.aliases[0]) for room in outpost.rooms}
    pattern = re.compile(r"\b(" + "|".join(first) + r")\b")

    def answer(request: ModelRequest) -> str:
        prompt = request.messages[0].text
        statement = prompt.rsplit("Statement by ", 1)[1]
        claims: list[dict[str, Any]] = []
        for room in pattern.findall(statement):
            claims.append({"type": "location", "subject": "I", "room": first[room]})
            claims.append(
                {"type": "activity", "subject": "I", "activity": "task", "room": room + " room"}
            )
        return json.dumps({"claims": claims})

    return answer


def test_the_audit_verifies_claims_naming_its_rooms_and_aliases(
    aria_game: tuple[Path, Trajectory], outpost: MapSpec, tmp_path: Path
) -> None:
    run, traj = aria_game
    assert room_aliases(traj) == outpost.room_aliases()  # read from the record's map
    backend = FakeBackend("outpost", script=_extraction_answers(outpost))
    result = run_audit(
        [run],
        out=tmp_path / "audit",
        extractor=ModelExtractor(JudgeModel(backend), ReplyCache(None)),
    )
    assert result.claims > 0
    rows = [json.loads(line) for line in (tmp_path / "audit" / "claims.jsonl").open()]
    located = [r for r in rows if r["room"] is not None]
    assert located
    assert {r["room"] for r in located} <= set(OUTPOST_ROOMS)  # aliases were resolved
    for row in located:
        # checked against the record (true, false, wrong_room, near_miss), never
        # unverifiable for want of the room's name
        assert row["verdict"] in VERIFIABLE, (row["text"], row["room"], row["reason"])


def test_supplied_claims_by_alias_verify_like_claims_by_name(
    aria_game: tuple[Path, Trajectory], outpost: MapSpec
) -> None:
    _, traj = aria_game
    meeting = traj.meetings[0]
    base = {"meeting": meeting.index, "utterance": 1, "type": "location"}
    by_name, by_alias = [], []
    for agent in traj.agents:
        for room in outpost.rooms:
            by_name.append(Claim(**base, speaker=agent, subject=agent, room=room.name))
            for alias in room.aliases:
                spoken = "the " + _spoken(alias)
                by_alias.append(
                    (room.name, Claim(**base, speaker=agent, subject=agent, room=spoken))
                )
    truth = {(r.subject, r.room): r.verdict for r in audit_claims(traj, by_name)}
    assert set(truth.values()) <= {"true", "false"} and "true" in truth.values()
    rows = audit_claims(traj, [c for _, c in by_alias])
    for (named, _), row in zip(by_alias, rows, strict=True):
        assert row.room == named
        assert row.verdict == truth[(row.subject, named)], (row.subject, named)
    # a Skeld room is no room of the outpost: unverifiable, and says why
    assert normalise_room("electrical", traj.geometry.rooms if traj.geometry else []) is None
    (skeld_row,) = audit_claims(traj, [Claim(**base, speaker="red", subject="red", room="elec")])
    assert skeld_row.verdict == "unverifiable"
