"""Claims made in meetings: one structure, normalisation, and two extractors.

A claim is one checkable statement in one meeting utterance (one JSON object a line in
`claims.jsonl`), the same structure whether an extractor produced it or it was supplied
from outside:

    {"meeting": 1, "speaker": "red", "utterance": 1, "type": "location",
     "subject": "red", "room": "admin", "route": null, "target": null,
     "activity": null, "temporal": null, "confidence": null, "text": "I was in admin."}

`type` is one of `CLAIM_TYPES`. `subject` is whom the claim is about (the speaker for
"I ..."; the accuser for an accusation; the defender for a defense); `target` is the
player seen, accused or defended. Rooms, players and activities are normalised
(`normalise_room`, `normalise_player`, `normalise_activity`); a value that cannot be
normalised is kept as written and the audit marks the claim `unverifiable` with the
reason, never an error.

Extractors: `RuleExtractor` (`--extractor rules`) parses the scripted control agents'
templated speech deterministically; `ModelExtractor` asks any harness backend
(`fake`, `openai:...`, `anthropic:...`) with a fixed, versioned prompt through the same
model path as the judge (`annotation.llm`), and keeps each answer in the same kind of
reply cache (`annotation.llm.ReplyCache`) by (model, prompt version, speaker, meeting,
message hash).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from annotation.grounding.trajectory import SpeechRecord, Trajectory
from annotation.llm import JudgeCallError, JudgeModel, ReplyCache
from world.geometry import HALLWAY
from world.spec import HALLWAY_ALIASES, packaged_room_aliases

log = logging.getLogger(__name__)

ClaimType = Literal["location", "sighting", "activity", "accusation", "defense"]
CLAIM_TYPES: tuple[str, ...] = ("location", "sighting", "activity", "accusation", "defense")
"""The five claim types."""


class Claim(BaseModel):
    """One claim from one meeting utterance.

    Unknown field names are ignored; QUACK-style aliases are accepted (`accuser` and
    `defender` for `subject`, `defended` for `target`, `basis` is kept in `text` only).
    `type` is kept as written so that an unknown type is audited `unverifiable`.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    meeting: int
    """The meeting's index (1-based, as in `meeting_start.index`)."""
    speaker: str
    """Who said it (agent id)."""
    utterance: int
    """The speaker's turn number within the meeting (`speech.utterance`, 1-based)."""
    type: str
    """One of `location`, `sighting`, `activity`, `accusation`, `defense`."""
    subject: str
    """Whom the claim is about (the speaker for "I ..."; the accuser; the defender)."""
    room: str | None = None
    """The room claimed (normalised to the map's room ids where possible)."""
    route: list[str] | None = None
    """An ordered multi-room route (location claims), normalised."""
    target: str | None = None
    """The player seen, accused or defended (or the victim of a report)."""
    activity: str | None = None
    """An activity from `ACTIVITIES` (normalised)."""
    temporal: str | None = None
    """The time phrase as said ("at the start", "the whole time", ...); None = this round."""
    confidence: float | str | None = None
    """An accusation's strength as given (`strong`/`moderate`/`weak` or a number)."""
    text: str = ""
    """The utterance (or the part of it) the claim comes from."""

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        d = dict(data)
        for alias in ("accuser", "defender"):
            if d.get("subject") in (None, "") and d.get(alias):
                d["subject"] = d[alias]
        if d.get("target") in (None, "") and d.get("defended"):
            d["target"] = d["defended"]
        if d.get("subject") in (None, "") and d.get("speaker"):
            d["subject"] = d["speaker"]
        if isinstance(d.get("type"), str):
            d["type"] = d["type"].strip().lower()
        return d

    def key(self) -> tuple[Any, ...]:
        """What makes two claims of one utterance duplicates."""
        return (
            self.meeting,
            self.speaker,
            self.utterance,
            self.type,
            self.subject,
            self.room,
            tuple(self.route or ()),
            self.target,
            self.activity,
            self.temporal,
        )


# --------------------------------------------------------------------- normalising

ACTIVITIES: Mapping[str, tuple[str, ...]] = {
    "task": (
        "task",
        "do_task",
        "doing_task",
        "did_task",
        "complete_task",
        "completing_task",
        "completed_task",
        "finish_task",
        "finishing_task",
        "finished_task",
        "working_on_task",
        "mission",
        "working",
        "fixing",
    ),
    "report": (
        "report",
        "reported",
        "reporting",
        "report_body",
        "reported_body",
        "reporting_body",
        "find_body",
        "found_body",
        "finding_body",
        "discovered_body",
        "dead_body",
        "body",
    ),
    "call_meeting": (
        "call_meeting",
        "called_meeting",
        "calling_meeting",
        "call_emergency_meeting",
        "called_emergency_meeting",
        "calling_emergency_meeting",
        "meeting_called",
        "emergency_meeting",
        "emergency",
        "press_button",
        "pressed_button",
        "pressing_button",
        "press_emergency_button",
        "pressed_emergency_button",
        "pressing_emergency_button",
        "hit_button",
        "emergency_button",
        "button",
    ),
    "wait": (
        "wait",
        "waiting",
        "waited",
        "stay",
        "stayed",
        "staying",
        "stand",
        "standing",
        "stood",
        "idle",
        "idling",
    ),
    "travel": (
        "travel",
        "traveling",
        "travelling",
        "traveled",
        "travelled",
        "move",
        "moving",
        "moved",
        "walk",
        "walking",
        "walked",
        "run",
        "running",
        "ran",
        "roaming",
        "wandering",
        "wandered",
        "passing",
        "pass_through",
        "passing_through",
        "passed_through",
        "going_through",
        "went_through",
    ),
    "kill": ("kill", "killed", "killing", "murder", "murdered", "murdering", "stabbed"),
}
"""Activity vocabulary: canonical name -> synonyms, in normal form (`phrase_words`
joined by `_`: lower case, no articles or possessives, nouns singular), so "Doing my
tasks", "doing tasks" and "doing a task" all match `doing_task`."""

PHRASE_FILLERS = frozenset({"a", "an", "the", "my", "our", "his", "her", "their", "its"})
"""Articles and possessives dropped before a phrase is matched ("the last round" =
"last round", "doing my tasks" = "doing tasks")."""


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def phrase_words(text: str) -> list[str]:
    """A spoken phrase as the words it is matched by.

    Lower case; punctuation, hyphens and underscores separate words; digit groups
    ("1,050") are joined; articles and possessives (`PHRASE_FILLERS`) are dropped;
    plurals are made singular by spelling ("tasks" -> "task", "bodies" -> "body",
    "presses" -> "press"). The same rule is applied to the vocabulary, so it only has
    to be consistent, not grammatical.

    Args:
        text: The phrase as said.

    Returns:
        Its words in order.
    """
    low = re.sub(r"(\d),(\d{3})\b", r"\1\2", text.lower())
    words = re.findall(r"[a-z]+|\d+", low)
    return [_singular(w) for w in words if w not in PHRASE_FILLERS]


def normalise_phrase(text: str) -> str:
    """`phrase_words` joined by single spaces (how time phrases are matched)."""
    return " ".join(phrase_words(text))


# --------------------------------------------------------------------- tick bounds

BoundKind = Literal["upper", "lower", "span", "point", "around"]

UPPER_WORDS: tuple[str, ...] = ("until", "till", "by", "before", "up to", "through")
"""Words that make "WORD tick N" an upper bound (QUACK's `_EXPLICIT_UPPER_TICK_RE`)."""
LOWER_WORDS: tuple[str, ...] = ("from", "since", "after", "starting from", "starting at")
"""Words that make "WORD tick N" a lower bound (QUACK's `_EXPLICIT_LOWER_TICK_RE`)."""
AROUND_WORDS: tuple[str, ...] = ("around", "about", "near", "roughly", "approximately")
"""Words that make "WORD tick N" an approximate instant (`AROUND_SAMPLES`)."""
POINT_SAMPLES = 1
"""A stated instant ("at tick N") or a span with both ends ("between ticks A and B") is
read this many sample intervals wider on each side: poses are logged one sample interval
apart and each holds until the next, so the pose holding tick N may lie up to one
interval before it, and the next one shows where the speaker went."""
AROUND_SAMPLES = 2
"""An approximate instant ("around tick N") is read this many sample intervals wide on
each side: one more sample each way than an exact instant."""

_ALT = "|".join
_N = r"(\d+)"
_SPAN_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"\bbetween tick {_N} and (?:tick )?{_N}\b"),
    re.compile(
        rf"\b(?:{_ALT(LOWER_WORDS)}) tick {_N} (?:to|until|till|through|and) (?:tick )?{_N}\b"
    ),
    re.compile(
        rf"\b(?:(?:at|in|during|between|from) )?tick {_N} "
        rf"(?:(?:to|through|and|until|till) )?{_N}\b"
    ),
)
_AROUND_PATTERN = re.compile(rf"\b(?:{_ALT(AROUND_WORDS)}) tick {_N}\b")
_UPPER_PATTERN = re.compile(rf"\b(?:{_ALT(UPPER_WORDS)}) tick {_N}\b")
_LOWER_PATTERN = re.compile(rf"\b(?:{_ALT(LOWER_WORDS)}) tick {_N}(?: (?:on|onward))?\b")
_POINT_PATTERN = re.compile(rf"\b(?:(?:at|in|during|on) )?tick {_N}\b")
_GLUE = frozenset({"and", "then", "but"})


@dataclass(frozen=True)
class TickBounds:
    """The explicit tick bounds a time phrase states (`tick_bounds`).

    Ticks are the game's ticks (20 a second), as the scripted agents' speech names
    them ("at tick 640"). `lower` / `upper` are as stated, None where the phrase sets
    no bound on that side; `rest` is the phrase's normal form without the bound's
    words (e.g. "whole time" for "the whole time until tick 12"), "" when nothing else
    was said.
    """

    kind: BoundKind
    lower: int | None
    upper: int | None
    rest: str

    def span(self, sample_interval: int) -> tuple[int | None, int | None]:
        """The ticks a claim is judged over: the stated bounds, widened for sampling.

        A one-sided bound is taken as stated (the window runs on to the round's edge,
        so it holds samples anyway); an instant or a span with both ends is widened by
        `POINT_SAMPLES` sample intervals each side, an approximate instant by
        `AROUND_SAMPLES`.

        Args:
            sample_interval: The game's pose spacing in ticks
                (`Trajectory.sample_interval`).

        Returns:
            `(first_tick, last_tick)`; None for an unbounded side.
        """
        if self.kind in ("upper", "lower"):
            return self.lower, self.upper
        slack = max(0, sample_interval) * (
            AROUND_SAMPLES if self.kind == "around" else POINT_SAMPLES
        )
        lo = None if self.lower is None else self.lower - slack
        hi = None if self.upper is None else self.upper + slack
        return lo, hi


def tick_bounds(temporal: str | None) -> TickBounds | None:
    """The explicit tick bounds of a time phrase, or None when it names no tick.

    Read on the phrase's normal form (`normalise_phrase`: "ticks" = "tick", "8-11" =
    "8 11", "1,050" = "1050"), first match wins in this order:

    * a span: "between ticks A and B", "from tick A to B", "from tick A until tick B",
      "ticks A-B", "ticks A to B" -> `span` (A and B in either order);
    * an approximate instant: "around/about/near/roughly/approximately tick N" ->
      `around`;
    * one-sided bounds, either or both: "until/till/by/before/up to/through tick N"
      (`UPPER_WORDS`) -> `upper`; "from/since/after/starting from/starting at tick N"
      (`LOWER_WORDS`), optionally followed by "on"/"onward(s)" -> `lower`; both in one
      phrase ("after tick 8 and before tick 11") -> `span`;
    * an instant: "tick N", "at/in/during/on tick N" -> `point`.

    Seconds are not read: the game's speech names ticks and steps only (the scripted
    agents say "at tick N"; the model harness's views count steps).

    Args:
        temporal: The claim's time phrase as said (None: no phrase).

    Returns:
        The bounds, or None.
    """
    if not temporal:
        return None
    phrase = normalise_phrase(temporal)
    if "tick" not in phrase.split():
        return None
    cuts: list[re.Match[str]] = []
    kind: BoundKind
    lower: int | None = None
    upper: int | None = None
    span = next((m for p in _SPAN_PATTERNS if (m := p.search(phrase))), None)
    around = _AROUND_PATTERN.search(phrase)
    if span is not None:
        a, b = int(span.group(1)), int(span.group(2))
        kind, lower, upper = "span", min(a, b), max(a, b)
        cuts.append(span)
    elif around is not None:
        kind, lower, upper = "around", int(around.group(1)), int(around.group(1))
        cuts.append(around)
    else:
        up = _UPPER_PATTERN.search(phrase)
        low = _LOWER_PATTERN.search(phrase)
        if up is None and low is None:
            point = _POINT_PATTERN.search(phrase)
            if point is None:
                return None
            kind, lower, upper = "point", int(point.group(1)), int(point.group(1))
            cuts.append(point)
        else:
            if up is not None:
                upper = int(up.group(1))
                cuts.append(up)
            if low is not None:
                lower = int(low.group(1))
                cuts.append(low)
            kind = (
                "span"
                if up is not None and low is not None
                else ("upper" if up is not None else "lower")
            )
            if lower is not None and upper is not None and lower > upper:
                lower, upper = upper, lower
    rest = phrase
    for m in sorted(cuts, key=lambda m: m.start(), reverse=True):
        rest = rest[: m.start()] + " " + rest[m.end() :]
    words = rest.split()
    while words and words[0] in _GLUE:
        words.pop(0)
    while words and words[-1] in _GLUE:
        words.pop()
    return TickBounds(kind=kind, lower=lower, upper=upper, rest=" ".join(words))


_ACTIVITY_OF: dict[str, str] = {}
for _name, _syns in ACTIVITIES.items():
    for _syn in (_name, *_syns):
        _ACTIVITY_OF["_".join(phrase_words(_syn))] = _name


def _slug(text: str) -> str:
    s = text.strip().lower()
    s = re.sub(r"^(the|a)\s+", "", s)
    s = re.sub(r"[\s\-]+", "_", s)
    s = re.sub(r"[^a-z0-9_]", "", s)
    return s.strip("_")


def room_aliases(traj: Trajectory) -> dict[str, str]:
    """The aliases of the rooms of the game's map (`Room.aliases`): spoken name -> room.

    The map is the one the record says was played (`game_start.map_spec`, else its
    `map`); a game whose map cannot be read has none.
    """
    return traj.geometry.spec.room_aliases() if traj.geometry is not None else {}


def _fallback_aliases(known: set[str]) -> dict[str, str]:
    """For a caller that names rooms but no map: the packaged maps' aliases of those
    rooms (an alias two maps give to two of them is dropped as ambiguous)."""
    out: dict[str, str] = {}
    ambiguous: set[str] = set()
    for table in packaged_room_aliases().values():
        for alias, room in table.items():
            if room not in known:
                continue
            if out.get(alias, room) != room:
                ambiguous.add(alias)
            out[alias] = room
    for alias in ambiguous:
        del out[alias]
    return out


def normalise_room(
    name: str, rooms: Iterable[str], aliases: Mapping[str, str] | None = None
) -> str | None:
    """A spoken room name as one of the map's room ids.

    Case, spaces, hyphens, a leading article and a trailing `room` do not matter; the
    map's room aliases map short names (`oxygen` -> `o2`, `elec` -> `electrical` on the
    Skeld), and `world.spec.HALLWAY_ALIASES` the corridor words (`corridor` ->
    `hallway`) on every map.

    Args:
        name: The room as written.
        rooms: The map's room ids (plus `hallway` for corridors).
        aliases: The map's aliases (`MapSpec.room_aliases`, `room_aliases(traj)`). None
            (a caller that has no map): the packaged maps' aliases of `rooms`.

    Returns:
        The room id, or None if it names no room of the map.
    """
    known = set(rooms) | {HALLWAY}
    table = dict(HALLWAY_ALIASES)
    table.update(_fallback_aliases(known) if aliases is None else aliases)
    s = _slug(name)
    for cand in (s, s.removesuffix("_room"), s.replace("_", "")):
        if cand in known:
            return cand
        if cand in table and table[cand] in known:
            return table[cand]
    squashed = {r.replace("_", ""): r for r in known}
    return squashed.get(s.replace("_", ""))


def normalise_player(name: str, agents: Iterable[str]) -> str | None:
    """A spoken player name (colour, any case, `player red`, `Red's`) as an agent id."""
    known = {a.lower(): a for a in agents}
    s = _slug(name).removeprefix("player_").removesuffix("_s")
    if s.endswith("s") and s[:-1] in known:
        s = s[:-1]
    return known.get(s)


def normalise_activity(name: str) -> str | None:
    """An activity phrase as a canonical name of `ACTIVITIES`, or None.

    The phrase is put in normal form (`phrase_words`) and looked up whole; failing
    that, its longest run of words that is a synonym, leftmost first ("called a meeting
    after finding the body" -> `call_meeting`). None when no run matches.
    """
    words = phrase_words(name)
    for n in range(len(words), 0, -1):
        for i in range(len(words) - n + 1):
            hit = _ACTIVITY_OF.get("_".join(words[i : i + n]))
            if hit is not None:
                return hit
    return None


def normalise_claim(
    claim: Claim,
    rooms: Iterable[str],
    agents: Iterable[str],
    aliases: Mapping[str, str] | None = None,
) -> Claim:
    """The claim with room, route, players and activity normalised where they can be.

    `aliases` are the map's room aliases (see `normalise_room`). A value that cannot be
    normalised is left as written (the audit then says why the claim is unverifiable).
    """
    rooms = list(rooms)
    agents = list(agents)
    upd: dict[str, Any] = {}
    if claim.room is not None:
        upd["room"] = normalise_room(claim.room, rooms, aliases) or claim.room
    if claim.route is not None:
        upd["route"] = [normalise_room(r, rooms, aliases) or r for r in claim.route]
    for fld in ("speaker", "subject", "target"):
        val = getattr(claim, fld)
        if isinstance(val, str) and val:
            upd[fld] = normalise_player(val, agents) or val
    if claim.activity is not None:
        upd["activity"] = normalise_activity(claim.activity) or claim.activity
    return claim.model_copy(update=upd)


def dedupe(claims: Iterable[Claim]) -> list[Claim]:
    """Claims with duplicates (same key within one utterance) dropped, order kept."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for c in claims:
        k = c.key()
        if k not in seen:
            seen.add(k)
            out.append(c)
    return out


def read_claims(path: str | Path) -> list[Claim]:
    """Read claims from a JSONL file (one claim a line; blank lines skipped).

    Raises:
        ValueError: a line is not JSON or lacks a required field (names the line and field).
    """
    return [c for _, c in read_claim_rows(path)]


def write_claims(path: str | Path, rows: Iterable[BaseModel]) -> None:
    """Write claims (or audited claims) as JSONL, one a line."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(p.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(r.model_dump_json() + "\n")
    tmp.replace(p)


# --------------------------------------------------------------------- extractors


class ExtractionFailure(BaseModel):
    """An utterance whose claims could not be extracted (excluded from metrics, counted)."""

    model_config = ConfigDict(frozen=True)

    meeting: int
    speaker: str
    utterance: int
    error_kind: Literal["infrastructure", "model"]
    """`infrastructure`: the backend failed after retries; `model`: unusable answer."""
    error: str


class ExtractionResult(BaseModel):
    """What an extractor produced for one game."""

    claims: list[Claim] = Field(default_factory=list)
    failures: list[ExtractionFailure] = Field(default_factory=list)
    utterances: int = 0
    """Meeting utterances looked at (spoken turns, not passes or failed turns)."""
    skipped_failed_turns: int = 0
    """Turns whose speech itself failed (`speech.failed`): no utterance to extract from."""


class Extractor(Protocol):
    """Turns a game's meeting utterances into claims."""

    name: str

    def extract(self, traj: Trajectory) -> ExtractionResult:
        """Claims from every meeting utterance of the game."""
        ...


def spoken_turns(traj: Trajectory) -> tuple[list[SpeechRecord], int]:
    """The game's spoken meeting turns, and how many turns failed (never extracted)."""
    turns = []
    failed = 0
    for m in traj.meetings:
        for s in m.speeches:
            if s.failed:
                failed += 1
            elif not s.passed and s.text.strip():
                turns.append(s)
    return turns, failed


def _rooms_of(traj: Trajectory) -> list[str]:
    return list(traj.geometry.rooms) if traj.geometry is not None else []


def _legacy(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


_WORD = r"(?P<{}>[A-Za-z][\w]*)"
_LEGACY_ROOM = r"(?P<room>[A-Za-z][\w \-]*?)"

LEGACY_TEMPLATES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("in_room_tasks", _legacy(rf"\bI was in {_LEGACY_ROOM} doing tasks\b")),
    ("last_saw_near_body", _legacy(rf"\bI last saw {_WORD.format('suspect')} near the body\b")),
)
"""Sentences of an older revision of the scripted speech, still found in old logs."""


def _templates() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The scripted agents' named templates as patterns (`SPEECH_TEMPLATES` first)."""
    from controller.agents.scripted import (
        IMPOSTOR_TEMPLATES,
        SPEECH_TEMPLATES,
        template_pattern,
    )

    named = [(name, template_pattern(t)) for name, t in SPEECH_TEMPLATES.items()]
    named += [(f"impostor_{name}", template_pattern(t)) for name, t in IMPOSTOR_TEMPLATES.items()]
    return tuple(named) + LEGACY_TEMPLATES


class RuleExtractor:
    """Deterministic claims from the scripted control agents' templated speech.

    The patterns come from the agents' own named templates
    (`controller.agents.scripted.SPEECH_TEMPLATES` and `IMPOSTOR_TEMPLATES`), so a
    template edit cannot silently stop the extractor. Each template yields fixed claims:

    * `found_body` -> activity `report` in the room, target the victim;
    * `pressed_button` -> activity `call_meeting`;
    * `saw_near_body`, `saw_near_scene` -> a sighting of the suspect in the room at the tick;
    * `saw_with_victim` -> sightings of the suspect (in the room) and of the victim, at the tick;
    * `saw_kill` -> sightings of the suspect and the victim at the first tick, and of the
      suspect in the room at the second;
    * `saw_elsewhere`, `saw_fake_task` -> a sighting of the suspect in the room at the tick;
    * `accuse`, `impostor_pile_on` -> an accusation of the suspect;
    * `was_in` -> a location in the room at the tick;
    * `impostor_alibi` -> a location and an activity `task` in the room;
    * `heard_claim`, `no_evidence`, `tasks_done` -> no claim (an opinion, nothing, or a
      count the claim structure has no field for).

    Older logs: "I was in R doing tasks" (location + task in R) and "I last saw X near
    the body" (a sighting with temporal `earlier`: that memory spanned rounds).
    """

    name = "rules"

    def __init__(self) -> None:
        self.templates = _templates()

    def extract(self, traj: Trajectory) -> ExtractionResult:
        """Claims from every spoken turn; utterances without a template yield none."""
        turns, failed = spoken_turns(traj)
        rooms, aliases = _rooms_of(traj), room_aliases(traj)
        claims: list[Claim] = []
        for t in turns:
            claims.extend(normalise_claim(c, rooms, traj.agents, aliases) for c in self.parse(t))
        return ExtractionResult(
            claims=dedupe(claims), utterances=len(turns), skipped_failed_turns=failed
        )

    def parse(self, turn: SpeechRecord) -> list[Claim]:
        """The claims of one utterance, in the order they were said."""
        base = {"meeting": turn.meeting, "speaker": turn.speaker, "utterance": turn.utterance}
        me = turn.speaker
        found: list[tuple[int, list[Claim]]] = []
        covered: list[tuple[int, int]] = []
        for name, pat in self.templates:
            for m in pat.finditer(turn.text):
                if any(a <= m.start() < b for a, b in covered):
                    continue
                covered.append((m.start(), m.end()))
                g = m.groupdict()
                frag = m.group(0).strip()
                at = f"at tick {g['tick']}" if g.get("tick") else None
                out: list[Claim] = []
                if name == "found_body":
                    out.append(
                        Claim(
                            **base,
                            type="activity",
                            subject=me,
                            activity="report",
                            target=g["victim"],
                            room=g["room"],
                            text=frag,
                        )
                    )
                elif name == "pressed_button":
                    out.append(
                        Claim(
                            **base, type="activity", subject=me, activity="call_meeting", text=frag
                        )
                    )
                elif name == "saw_kill":
                    # two looks: the suspect beside the victim, then by the body in the room
                    before = f"at tick {g['before']}" if g.get("before") else None
                    for target, room, when in (
                        (g["suspect"], None, before),
                        (g["victim"], None, before),
                        (g["suspect"], g["room"], at),
                    ):
                        out.append(
                            Claim(
                                **base,
                                type="sighting",
                                subject=me,
                                target=target,
                                room=room,
                                temporal=when,
                                text=frag,
                            )
                        )
                elif name in (
                    "saw_near_body",
                    "saw_near_scene",
                    "saw_with_victim",
                    "saw_elsewhere",
                    "saw_fake_task",
                ):
                    out.append(
                        Claim(
                            **base,
                            type="sighting",
                            subject=me,
                            target=g["suspect"],
                            room=g["room"],
                            temporal=at,
                            text=frag,
                        )
                    )
                    if name == "saw_with_victim":
                        out.append(
                            Claim(
                                **base,
                                type="sighting",
                                subject=me,
                                target=g["victim"],
                                temporal=at,
                                text=frag,
                            )
                        )
                elif name in ("accuse", "impostor_pile_on"):
                    out.append(
                        Claim(**base, type="accusation", subject=me, target=g["suspect"], text=frag)
                    )
                elif name == "was_in":
                    out.append(
                        Claim(
                            **base,
                            type="location",
                            subject=me,
                            room=g["room"],
                            temporal=at,
                            text=frag,
                        )
                    )
                elif name in ("impostor_alibi", "in_room_tasks"):
                    out.append(
                        Claim(**base, type="location", subject=me, room=g["room"], text=frag)
                    )
                    out.append(
                        Claim(
                            **base,
                            type="activity",
                            subject=me,
                            activity="task",
                            room=g["room"],
                            text=frag,
                        )
                    )
                elif name == "last_saw_near_body":
                    out.append(
                        Claim(
                            **base,
                            type="sighting",
                            subject=me,
                            target=g["suspect"],
                            temporal="earlier",
                            text=frag,
                        )
                    )
                found.append((m.start(), out))
        return [c for _, cs in sorted(found, key=lambda x: x[0]) for c in cs]


EXTRACTION_PROMPT = (
    resources.files("annotation.grounding")
    .joinpath("prompts/claim_extraction.txt")
    .read_text(encoding="utf-8")
)
"""The extraction prompt (`annotation/grounding/prompts/claim_extraction.txt`, a `str.format`
template); `PROMPT_VERSION` is its hash, part of every cache key."""

PROMPT_VERSION = "claims-v1-" + hashlib.sha256(EXTRACTION_PROMPT.encode()).hexdigest()[:12]
"""Changes whenever the prompt's text changes, so cached answers never outlive it."""


def cache_key(model: str, speaker: str, meeting: int, message: str) -> str:
    """The cache key: (model, prompt version, speaker, meeting, message hash)."""
    msg = hashlib.sha256(message.encode()).hexdigest()
    return ReplyCache.key(model, PROMPT_VERSION, speaker, str(meeting), msg)


def parse_model_claims(answer: str, turn: SpeechRecord) -> list[Claim]:
    """The claims in a model's answer (an object with `claims`, or a bare array).

    Raises:
        ValueError: the answer is not JSON of that shape.
    """
    text = answer.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.S)
    if fence:
        text = fence.group(1)
    data = json.loads(text)
    items = data.get("claims") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("the answer holds no `claims` list")
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError(f"a claim is not an object: {item!r}")
        row = dict(item)
        row.update(meeting=turn.meeting, speaker=turn.speaker, utterance=turn.utterance)
        row.setdefault("text", turn.text)
        if isinstance(row.get("subject"), str) and row["subject"].strip().lower() in ("i", "me"):
            row["subject"] = turn.speaker
        out.append(Claim.model_validate(row))
    return out


class ModelExtractor:
    """Claims extracted by a model, through annotation's one model path
    (`annotation.llm.JudgeModel`, as the judge) and its one reply cache.

    Args:
        model: The model (`annotation.llm.make_judge(address, flag="--extractor")`).
        cache: Where answers are kept (`annotation.llm.ReplyCache`; a folder, or None
            for memory only).
        max_tokens: The answer budget per utterance.
    """

    def __init__(self, model: JudgeModel, cache: ReplyCache, max_tokens: int = 800) -> None:
        self.model = model
        self.cache = cache
        self.max_tokens = max_tokens
        self.name = model.address

    def extract(self, traj: Trajectory) -> ExtractionResult:
        """Claims from every spoken turn (asks the model only for uncached ones)."""
        return asyncio.run(self._extract(traj))

    async def _extract(self, traj: Trajectory) -> ExtractionResult:
        turns, failed = spoken_turns(traj)
        rooms, aliases = _rooms_of(traj), room_aliases(traj)
        result = ExtractionResult(utterances=len(turns), skipped_failed_turns=failed)
        claims: list[Claim] = []
        for i, t in enumerate(turns, start=1):
            key = cache_key(self.name, t.speaker, t.meeting, t.text)
            stored = self.cache.get(key)
            if stored is not None:
                answer = str(stored["answer"])
            else:
                prompt = EXTRACTION_PROMPT.format(
                    rooms=", ".join(rooms),
                    players=", ".join(traj.agents),
                    speaker=t.speaker,
                    meeting=t.meeting,
                    message=t.text.replace('"', "'"),
                )
                try:
                    reply = await self.model.complete(
                        "", prompt, max_tokens=self.max_tokens, purpose="claim_extraction"
                    )
                except JudgeCallError as exc:
                    kind: Literal["infrastructure", "model"] = (
                        "infrastructure" if exc.infrastructure else "model"
                    )
                    result.failures.append(
                        ExtractionFailure(
                            meeting=t.meeting,
                            speaker=t.speaker,
                            utterance=t.utterance,
                            error_kind=kind,
                            error=str(exc),
                        )
                    )
                    continue
                answer = reply.text
                self.cache.put(
                    key,
                    {
                        "answer": answer,
                        "model": self.name,
                        "prompt_version": PROMPT_VERSION,
                        "speaker": t.speaker,
                        "meeting": t.meeting,
                        "game_id": traj.game_id,
                        "tokens_in": reply.tokens_in,
                        "tokens_out": reply.tokens_out,
                        "cost_usd": reply.cost_usd,
                    },
                )
            try:
                parsed = parse_model_claims(answer, t)
            except (ValueError, ValidationError) as exc:
                result.failures.append(
                    ExtractionFailure(
                        meeting=t.meeting,
                        speaker=t.speaker,
                        utterance=t.utterance,
                        error_kind="model",
                        error=f"unusable answer: {exc}",
                    )
                )
                continue
            claims.extend(normalise_claim(c, rooms, traj.agents, aliases) for c in parsed)
            if i % 20 == 0:
                log.info("%s: extracted %d/%d utterances", traj.game_id, i, len(turns))
        result.claims = dedupe(claims)
        return result


def read_claim_rows(path: str | Path) -> list[tuple[str | None, Claim]]:
    """Claims from a JSONL file with the game each names (its `game` field, if any).

    Raises:
        ValueError: a line is not JSON or lacks a required field (names the line and field).
    """
    out: list[tuple[str | None, Claim]] = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{i}: not JSON ({exc.msg}); one claim object a line") from exc
        if not isinstance(raw, dict):
            raise ValueError(f"{path}:{i}: expected a JSON object (one claim a line)")
        try:
            claim = Claim.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "?"
            raise ValueError(
                f"{path}:{i}: field {loc!r}: {err['msg']}; each line needs meeting, speaker, "
                "utterance, type and subject (see docs/grounding.md)"
            ) from exc
        game = raw.get("game")
        out.append((str(game) if game else None, claim))
    return out
