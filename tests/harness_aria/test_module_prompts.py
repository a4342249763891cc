"""What each agent was told: prompt layout, the run's prompt store, text-only wording."""

from __future__ import annotations

import json
import re
import string
from importlib import resources
from pathlib import Path

import pytest

from controller.cli import play_game
from controller.config import RulesConfig, resolve_config
from controller.events import Decision, read_events
from controller.tokens import count_tokens
from harness_aria.calls import PromptStore, picture_wording
from harness_aria.prompts import (
    CACHE_MINIMUM_TOKENS,
    PREFIX_GROUPS,
    shared_prefix,
)
from testkit.games import OFFLINE_ARIA, GameStore
from world.geometry import ShipGeometry
from world.spec import load_map

PICTURE_WORDS = re.compile(
    r"\b(pictures?|images?|screenshots?|photos?|camera|first-person)\b", re.IGNORECASE
)
GEOMETRY = ShipGeometry(load_map("skeld"))


def _templates() -> list[tuple[str, str]]:
    root = resources.files("harness_aria").joinpath("prompts")
    out = []
    for folder in root.iterdir():
        if folder.is_dir():
            for f in folder.iterdir():
                if f.name.endswith(".txt"):
                    out.append((f"{folder.name}/{f.name}", f.read_text(encoding="utf-8")))
    return sorted(out)


@pytest.mark.parametrize(("name", "text"), _templates())
def test_no_text_only_prompt_mentions_a_picture(name: str, text: str) -> None:
    rendered = picture_wording(string.Template(text).safe_substitute(), with_picture=False)
    assert not PICTURE_WORDS.search(rendered), f"{name}: {PICTURE_WORDS.search(rendered)}"
    assert "[[" not in rendered


def test_picture_wording_is_kept_when_a_picture_is_sent() -> None:
    scan = dict(_templates())["common/kill_scan.txt"]
    assert "picture" in picture_wording(scan, with_picture=True)
    assert "picture" not in picture_wording(scan, with_picture=False)
    plain = "  a line\n  indented  twice"
    assert picture_wording(plain, with_picture=False) == plain  # data is left alone


def test_shared_prefix_is_lean_by_default_and_the_map_extras_are_options() -> None:
    prefix = shared_prefix(GEOMETRY, RulesConfig(), content="lean")
    assert prefix == shared_prefix(GEOMETRY, RulesConfig(), content="lean")  # nothing per call
    for room, near in GEOMETRY.adjacency().items():
        assert f"- {room}: {', '.join(near)}" in prefix  # room adjacency, as the reference
    assert not PICTURE_WORDS.search(prefix)
    # The reference's prompts carry no map drawing, distance tables or corridor lists.
    for extra in ("Walking distance", "Corridors", "```"):
        assert extra not in prefix
    assert count_tokens(prefix, "gpt-4.1-mini") < 1000
    tables = shared_prefix(GEOMETRY, RulesConfig(), map_detail="tables", content="lean")
    full = shared_prefix(GEOMETRY, RulesConfig(), map_detail="full", content="lean")
    assert "Walking distance" in tables and "```" not in tables
    assert "Walking distance" in full and "```" in full
    assert (
        count_tokens(prefix, "gpt-4.1-mini")
        < count_tokens(tables, "gpt-4.1-mini")
        < count_tokens(full, "gpt-4.1-mini")
    )
    # The extras state the map's own figures: a room's size is its cells along x and z,
    # a station's walking distance is the path's, the drawing starts at the stated block.
    cafeteria = next(r for r in GEOMETRY.spec.rooms if r.name == "cafeteria").rect
    assert f" {cafeteria.width}x{cafeteria.depth}\n" in tables
    length = GEOMETRY.path_length(GEOMETRY.station_pos(0), GEOMETRY.station_pos(1))
    assert length is not None and f"- from 0: 1:{length:.0f} " in tables
    x0, z0, _, _ = GEOMETRY.ship_bounds
    assert f"the top-left character is the block x = {x0}, z = {z0}" in full
    assert GEOMETRY.render_ascii(ghost_area=False) in full
    # A crewmate's prefix names no impostor-only field; the impostors' explains them.
    impostor = shared_prefix(GEOMETRY, RulesConfig(), role="impostor", content="lean")
    assert "intent" not in prefix and "intent" in impostor
    assert max(CACHE_MINIMUM_TOKENS.values()) > count_tokens(impostor, "gpt-4.1-mini")


def test_prompt_store_deduplicates_and_is_atomic(tmp_path: Path) -> None:
    store = PromptStore(tmp_path)
    a = store.put("hello")
    assert store.put("hello") == a
    assert store.get(a) == "hello"
    assert [p.name for p in (tmp_path / "prompts").iterdir()] == [f"{a}.txt"]


def test_a_game_records_every_prompt_once_and_text_only_never_mentions_a_picture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = resolve_config(
        "quick",
        overrides={
            "seed": 2,
            "rules": {"max_steps": 6},
            "crew": {"backend": "fake", "text_only": True},
            "impostor": {"backend": "fake", "text_only": True},
        },
    )
    play_game(config, load_map("skeld"), "fake", tmp_path)
    folder = tmp_path / "prompts"
    stored = {p.stem: p.read_text(encoding="utf-8") for p in folder.glob("*.txt")}
    calls = [
        c
        for d in read_events(tmp_path / "events.jsonl")
        if isinstance(d, Decision)
        for c in d.calls
    ]
    assert calls
    prefixes = set()
    for call in calls:
        sent = call.sent.model_dump() if call.sent is not None else {}
        assert sent["system_sha256"] is None  # ARIA sends no persona text
        for key in ("prefix_sha256", "user_sha256"):
            assert sent[key] in stored, (key, call.purpose)
        assert sent["image_sha256"] is None
        prefixes.add(sent["prefix_sha256"])
        assert call.finish_reason == "stop" and "max_tokens" in call.settings
    # one shared prefix per side (crewmates', impostors') and prefix group (decide, talk,
    # look): at most 6, whichever groups the short game called
    assert 2 <= len(prefixes) <= 6
    for sha, text in stored.items():
        assert not PICTURE_WORDS.search(text), sha
    size = sum(p.stat().st_size for p in folder.glob("*.txt"))
    texts_sent = sum(
        len(stored[getattr(c.sent, k)].encode())
        for c in calls
        for k in ("prefix_sha256", "user_sha256")
    )
    assert size < texts_sent  # de-duplicated
    with capsys.disabled():
        print(
            f"\nprompt record: {len(calls)} calls, {len(stored)} texts, {size / 1024:.0f} KiB "
            f"stored for {texts_sent / 1024:.0f} KiB sent ({size / texts_sent:.0%})"
        )


def test_each_section_is_sent_once_and_crewmates_never_see_impostor_formats(
    fake_games: GameStore,
) -> None:
    """Every call of a game holds its prefix group's sections (`PREFIX_GROUPS`: the rules,
    each room's connections, how answers are read), the state view (the look view for a
    call that judges a frame) and its one answer format exactly once, and no section of
    another group; a crewmate's calls name no
    impostor-only field or module (the private `intent`, KILL, the witness scan)."""
    # The offline game of seed 1 (the run's store): it holds meetings.
    run = fake_games.game(seed=1, **OFFLINE_ARIA)
    events = read_events(run / "events.jsonl")
    assert any(e.kind == "meeting_start" for e in events), "seed 1 holds no meeting now"
    roles = json.loads((run / "summary.json").read_text())["roles"]
    stored = run / "prompts"
    purposes: dict[str, set[str]] = {"crewmate": set(), "impostor": set()}
    rooms = GEOMETRY.adjacency()
    for d in events:
        if not isinstance(d, Decision):
            continue
        for call in d.calls:
            sent = call.sent.model_dump() if call.sent is not None else {}
            parts = [
                (stored / f"{sent[k]}.txt").read_text()
                for k in ("prefix_sha256", "user_sha256")
                if sent[k]
            ]
            whole = "\n".join(parts)
            # the call's question comes last, after the context an agent's successive
            # calls share (what a provider's prompt cache can match)
            user = (stored / f"{sent['user_sha256']}.txt").read_text()
            assert user.rstrip().splitlines()[-1].startswith("Answer as JSON"), call.purpose
            assert sent["system_sha256"] is None
            role = roles[d.agent]
            purposes[role].add(call.purpose)
            group = PREFIX_GROUPS[call.purpose]
            sections = {
                "## Rules": group != "look",
                "## Players\n": group == "look",
                "## The map": group == "decide",
                "## How to answer": True,
                # the default profile's reference content: the personal message in every
                # group, in place of the lean conduct lines
                "## Conduct": False,
                "## Your role": True,
            }
            for section, held in sections.items():
                assert whole.count(section) == int(held), (call.purpose, section)
            for room, near in rooms.items():
                line = f"- {room}: {', '.join(near)}"
                assert whole.count(line) == int(group == "decide"), room
            assert whole.count("Answer as JSON") == 1, call.purpose
            assert whole.count(f"You are {d.agent.capitalize()}, a") == 1
            assert "Map (room: connected rooms)" not in whole
            if group == "look":  # a frame is judged from the look view alone
                for kept in ("Step ", "In sight now", "Answer as JSON"):
                    assert kept in user, (call.purpose, kept)
                for left in ("Roster", "Beliefs", "What you did", "Your pending", "Chat"):
                    assert left not in user, (call.purpose, left)
            if role == "crewmate":
                for word in ("intent", "impostors only", "KILL", "witness", "safe to kill"):
                    assert word not in whole, (call.purpose, word)
    assert {"planner", "meeting", "vote"} <= purposes["crewmate"]
    assert "kill_scan" in purposes["impostor"]


def test_an_agents_calls_in_one_meeting_share_their_start_through_the_chat(
    fake_games: GameStore,
) -> None:
    """In a meeting, the lines that change every step (the step, whose turn it is) close
    the state view and the roster gives sightings by step, not by age: in an agent's next
    call of the same meeting (a turn, then the ballot), the view from the roster on
    starts with all of its last call's, through the end of that call's chat, which only
    grows. (Memory before it changes only when the agent's beliefs do.) Unchanged, the
    whole start is what a provider's prompt cache matches."""
    # The offline game of seed 3 (the run's store): four meetings.
    run = fake_games.game(seed=3, **OFFLINE_ARIA)
    stored = run / "prompts"
    last: dict[str, str] = {}
    pairs = 0
    for d in read_events(run / "events.jsonl"):
        if not isinstance(d, Decision):
            continue
        for call in d.calls:
            if call.purpose not in ("meeting", "vote"):
                last.pop(d.agent, None)  # a call of another kind ends the run
                continue
            user = (stored / f"{call.sent.user_sha256 if call.sent else ''}.txt").read_text()
            assert "steps ago" not in user and "1 step ago" not in user
            lines = user.splitlines()
            chat = lines.index("This meeting's chat so far (all of it):")
            ends = chat + 1
            while ends < len(lines) and lines[ends].startswith("  "):
                ends += 1
            assert any(line.startswith("Step ") for line in lines[ends:]), "step line last"
            roster = next(i for i, line in enumerate(lines) if line.startswith("Roster"))
            view = "\n".join(lines[roster:])
            before = last.get(d.agent)
            if before is not None and d.step - int(before.split("\n", 1)[0]) < 30:
                assert view.startswith(before.split("\n", 1)[1]), (d.agent, d.step)
                pairs += 1
            last[d.agent] = f"{d.step}\n" + "\n".join(lines[roster:ends]) + "\n"
    assert pairs >= 5, "the game held too few meeting turns to check"


def test_a_planner_call_orders_its_context_from_the_least_changing(tmp_path: Path) -> None:
    """A crewmate's planner call lays its context out from what changes least often to
    what changes every step, so successive calls share a long start: who it is and
    earlier meetings, beliefs and notes, pending tasks (they change with each task
    done), skills (too), own actions (every step), then this step's view, the plan and
    the question."""
    config = resolve_config(
        "quick",
        overrides={
            "seed": 3,
            "frames": "off",
            "rules": {"max_steps": 30},
            "crew": {"backend": "fake", "spec": {"reflection": "on"}},
            "impostor": {"backend": "fake"},
        },
    )
    play_game(config, load_map("skeld"), "fake", tmp_path)
    order = (
        "You are ",
        "Earlier meetings:",
        "Beliefs about players",
        "Notes:",
        "Your pending tasks",
        "Skills that worked before:",
        "What you did:",
        "Step ",
        "Decide what to do this step.",
    )
    checked = 0
    for d in read_events(tmp_path / "events.jsonl"):
        if not isinstance(d, Decision):
            continue
        for call in d.calls:
            if call.purpose != "planner":
                continue
            lines = (
                tmp_path / "prompts" / f"{call.sent.user_sha256 if call.sent else ''}.txt"
            ).read_text()
            starts = [
                next((i for i, line in enumerate(lines.splitlines()) if line.startswith(h)), -1)
                for h in order
            ]
            if -1 in starts:
                continue  # not every section yet (no meeting, skill or note so far)
            assert starts == sorted(starts), (d.agent, d.step, starts)
            checked += 1
    assert checked >= 3
