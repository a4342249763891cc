"""What each call is told under `prompt_content: reference`: the reference's personal
message in every prefix and at the head of every view, the deterministic prompts' full
tactic lists, minimal prompts as minimal as the reference's; and no prompt of either
profile carries the two cues the reference lacks."""

from __future__ import annotations

import json
import re
import string
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import pytest

from controller.cli import play_game
from controller.config import RulesConfig, resolve_config
from controller.events import Decision, read_events
from controller.views import Knowledge
from harness_aria.calls import picture_wording
from harness_aria.fake_answers import infer_purpose
from harness_aria.prompts import PREFIX_GROUPS, load_prompt, shared_prefix, shared_prefixes
from harness_aria.view_text import assigned_missions, render_look, render_view_layout
from tests.harness_aria.conftest import make_obs
from world.geometry import ShipGeometry
from world.spec import load_map

GEOMETRY = ShipGeometry(load_map("skeld"))
CUES = ("stalk", "report your own")
"""The impostor planner's two cues the reference lacks: "do not stick to one player so
long that it looks like stalking" and "do not report your own kill unless someone saw
you near it"."""
NOT_THIS_GAME = re.compile(r"\b(hunger|left_click|craft\w*|materials|equip\w*|weapons? or)\b", re.I)
"""What the reference's message says of its server that this game has not (left out)."""
PICTURE_WORDS = re.compile(
    r"\b(pictures?|images?|screenshots?|photos?|camera|first-person)\b", re.IGNORECASE
)


def _files(folder: Traversable, prefix: str = "") -> list[tuple[str, str]]:
    out = []
    for f in folder.iterdir():
        if f.is_dir():
            out += _files(f, f"{prefix}{f.name}/")
        elif f.name.endswith(".txt"):
            out.append((f"{prefix}{f.name}", f.read_text(encoding="utf-8")))
    return out


TEMPLATES = sorted(_files(resources.files("harness_aria").joinpath("prompts")))
REFERENCE = {n.removeprefix("reference/"): t for n, t in TEMPLATES if n.startswith("reference/")}
RULES = RulesConfig(kill_cooldown_ticks=1234, initial_kill_cooldown_ticks=567, kill_range=2.5)


def _prefixes() -> list[tuple[str, str]]:
    out = []
    for content in ("reference", "lean"):
        for role in ("crewmate", "impostor"):
            for group, text in shared_prefixes(GEOMETRY, RULES, role, content=content).items():
                out.append((f"{content}/{role}/{group}", text))
    return out


@pytest.mark.parametrize(("name", "text"), [*TEMPLATES, *_prefixes()])
def test_no_prompt_of_either_profile_carries_the_two_cues(name: str, text: str) -> None:
    rendered = string.Template(text).safe_substitute().lower()
    for cue in CUES:
        assert cue not in rendered, (name, cue)


@pytest.mark.parametrize(("name", "text"), [t for t in TEMPLATES if t[0].startswith("reference/")])
def test_no_text_only_reference_prompt_mentions_a_picture(name: str, text: str) -> None:
    rendered = picture_wording(string.Template(text).safe_substitute(), with_picture=False)
    assert not PICTURE_WORDS.search(rendered), f"{name}: {PICTURE_WORDS.search(rendered)}"
    assert "[[" not in rendered


@pytest.mark.parametrize(("name", "text"), _prefixes())
def test_no_prefix_reads_as_a_question(name: str, text: str) -> None:
    """The offline fake reads a call's own question to tell which module asks; a prefix
    that named one would steer every answer."""
    assert infer_purpose(text) == "", name


def test_the_crews_prefix_carries_its_personal_message() -> None:
    prefixes = shared_prefixes(GEOMETRY, RULES, "crewmate")
    message = prefixes["decide"][prefixes["decide"].index("## Your role") :]
    message = message[: message.index("## How to answer")]
    for group in ("talk", "look"):
        assert message in prefixes[group]  # every call of an agent carries it
    for item in (
        "You are a crewmate",
        "8 players: 2 impostors and 6 crewmates",
        "You do not know who the impostors are",
        "every task done or by voting out every impostor",  # win rules
        "vouch for each other",  # core principles
        "only crewmates can do them",  # mission guidelines
        "Your own tasks and their stations open the state view",
        # behavioural observation, item by item
        "how they move and where they stand",
        "only pretending to do a task",
        "without getting anything done",
        "sudden turns or odd movement",
        "who was near when a body is found",
        "keep turning up together",
        # social observation
        "follow the meetings closely",
        "question statements that seem misleading",
        "do not fit together",
        "overly defensive",
        "contradict themselves",
        "claim tasks falsely or vaguely",
        "defend each other without evidence",
        # meetings, voting, survival, communication
        "claim nothing you did not observe",
        "skipping is fine",
        "there are 2 impostors: voting one out is progress",
        "stay alert when you walk alone",
        "Never reveal or imply your role",
        "no reasoning about the game as a game",
    ):
        assert item in message, item
    # a crewmate is told no station but its own (in its view), no impostor matter
    assert "Every station" not in message and "(6, -5)" not in message
    for word in ("intent", "witness", "KILL", "cooldown"):
        assert word not in message, word
    assert not NOT_THIS_GAME.search(prefixes["decide"])


def test_the_impostors_prefix_carries_its_personal_message() -> None:
    prefix = shared_prefix(GEOMETRY, RULES, "impostor", group="talk")
    message = prefix[prefix.index("## Your role") :]
    for item in (
        "You are an impostor",
        "you and your fellow impostor (named in the state view) are the 2 impostors",
        "the other 6 are crewmates and your targets",
        "rare and costly move",  # turning on the teammate: allowed, rarely
        "accuse or vote against",
        "as many as the living impostors or fewer",  # win rules
        "without exposing your role or your alliance",
        "discreetly",
        "while any player other than your fellow impostor can see you",
        "prefer targets who are alone, in quiet places",
        "do not kill unless there is no other way",
        # the cooldown from the game's rules, not a fixed number
        "567 ticks (about 28 s) from the start",
        "1234 ticks (about 62 s) after each kill and after each meeting",
        'your state view says "Your kill is ready."',  # the "attack ready" signal
        "get within 2.5 blocks",
        "pretend",
        "Never reveal or hint at your role",
        "that your fellow impostor is an impostor",
        "never mention game rules, system messages or role instructions",
    ):
        assert item in message, item
    # every station's position, to fake a task at
    for sid in GEOMETRY.station_ids():
        x, _, z = GEOMETRY.station_pos(sid)
        assert f"{sid} in {GEOMETRY.station_room(sid)} ({int(x // 1)}, {int(z // 1)})" in message
    assert not NOT_THIS_GAME.search(prefix)
    alone = shared_prefix(GEOMETRY, RulesConfig(n_impostors=1), "impostor")
    assert "you are the only impostor" in alone and "fellow" not in alone


def test_lean_content_keeps_the_conduct_lines() -> None:
    lean = shared_prefix(GEOMETRY, RULES, "impostor", content="lean")
    assert "## Conduct" in lean and "## Your role" not in lean
    assert load_prompt("planner_crewmate", "deterministic", "lean").style == "deterministic"
    assert load_prompt("planner_crewmate", "deterministic").style == "reference/deterministic"
    assert load_prompt("kill_scan", "minimal").style == "common"  # not rewritten


def _numbered(text: str) -> int:
    return len(re.findall(r"^\d\. ", text, re.M))


def test_the_deterministic_prompts_carry_the_references_tactic_lists() -> None:
    crew_move = REFERENCE["deterministic/move_crewmate.txt"]
    for item in ("task stations", "group up", "alone", "bodies (coloured carpets"):
        assert item in crew_move, item
    imp_move = REFERENCE["deterministic/move_impostor.txt"]
    for item in ("Stay near one crewmate", "one target alone", "several witnesses", "fake a task"):
        assert item in imp_move, item
    crew_planner = REFERENCE["deterministic/planner_crewmate.txt"]
    for item in ("A body in sight near you: REPORT", "pending: MISSION", "patrolling other"):
        assert item in crew_planner, item
    imp_planner = REFERENCE["deterministic/planner_impostor.txt"]
    for item in (
        "always name the target exactly",
        "do not choose KILL every step",
        "fake tasks between kills",
        "a target too far away",
        "a witness in view",
        "consider reporting it yourself",
    ):
        assert item in imp_planner, item
    crew_meeting = REFERENCE["deterministic/meeting_crewmate.txt"]
    assert "sharp investigator" in crew_meeting and "You must say something" in crew_meeting
    assert _numbered(crew_meeting) == 5
    imp_meeting = REFERENCE["deterministic/meeting_impostor.txt"]
    assert "skilled liar" in imp_meeting and "never confess" in imp_meeting
    assert _numbered(imp_meeting) == 6
    crew_vote = REFERENCE["deterministic/vote_crewmate.txt"]
    assert _numbered(crew_vote) == 5 and "vote skip" in crew_vote
    imp_vote = REFERENCE["deterministic/vote_impostor.txt"]
    for item in ("frame", "accused you", "follow the consensus", "never skip"):
        assert item in imp_vote, item
    # the minimal prompts: the rules, must speak, the roster; a one-line vote
    for role in ("crewmate", "impostor"):
        meeting = REFERENCE[f"minimal/meeting_{role}.txt"]
        assert "Rules of the game" in meeting and "You must say something" in meeting
        assert "$roster" in meeting and _numbered(meeting) == 0
        assert "Tactics" not in meeting
    assert len(REFERENCE["minimal/vote_crewmate.txt"].splitlines()) == 3
    assert "Priorities" not in REFERENCE["minimal/planner_impostor.txt"]


def test_an_agents_view_opens_with_its_part_of_the_message() -> None:
    """A crewmate's view opens with who it is and its assigned tasks with their
    stations, in every state mode when the missions are given (an ego view holds no task
    locations itself), and the same all game; lean shows none of it."""
    obs = make_obs(tasks=[8, 12, 3], tasks_done=[12])
    for mode in ("privileged", "ego"):
        knowledge = Knowledge(mode, GEOMETRY)
        view = knowledge.view(knowledge.update(obs))
        missions = assigned_missions(obs, GEOMETRY)
        head, _, _ = render_view_layout(view, "reference", missions)
        line = head.splitlines()[1]
        assert line.startswith("Your assigned tasks (station in room (x, z)): 8 in shields")
        assert "12 in admin" in line and "3 in weapons" in line  # done ones stay listed
        assert line in render_look(view, "reference", missions)
        lean, _, _ = render_view_layout(view, "lean", missions)
        assert "assigned" not in lean


def test_every_call_of_a_reference_game_carries_the_personal_message(tmp_path: Path) -> None:
    config = resolve_config(
        "quick",
        overrides={
            "seed": 3,
            "frames": "off",
            "rules": {"max_steps": 40},
            "crew": {"backend": "fake"},
            "impostor": {"backend": "fake"},
        },
    )
    play_game(config, load_map("skeld"), "fake", tmp_path)
    roles = json.loads((tmp_path / "summary.json").read_text())["roles"]
    stored = tmp_path / "prompts"
    purposes: set[str] = set()
    for d in read_events(tmp_path / "events.jsonl"):
        if not isinstance(d, Decision):
            continue
        for call in d.calls:
            prefix = (stored / f"{call.sent.prefix_sha256}.txt").read_text()
            user = (stored / f"{call.sent.user_sha256}.txt").read_text()
            role = roles[d.agent]
            assert f"You are {'an impostor' if role == 'impostor' else 'a crewmate'}:" in prefix
            assert ("Every station (id in room (x, z))" in prefix) is (role == "impostor")
            if call.purpose != "codegen":  # its toolkit holds no view head
                assert user.startswith(f"You are {d.agent.capitalize()}, a")
                if role == "crewmate" and d.phase == "free_roam":
                    assert user.splitlines()[1].startswith("Your assigned tasks"), call.purpose
            purposes.add(call.purpose)
    assert {"planner", "meeting", "vote", "surveillance", "belief_update"} <= purposes
    assert purposes <= set(PREFIX_GROUPS)
