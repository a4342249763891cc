"""A game's event log written as the authors' judge reads a game: their `game.log` lines.

The authors' judge never re-renders a game: it reads the runner's verbose console log,
drops everything before the first step-tagged line and keeps only the lines of a few
kinds (step-tagged agent output, chat, `[Meeting]`, `[ARIA_SAY:`, `[Scoreboard]`,
"has DIED" and `[Sync]` lines). `write_transcript` writes our record as those lines,
in the order their runner prints them, one `TranscriptLine` each, and nothing else:
no `# fact` lines and no roles (the roles go to the judge apart, as a JSON object).

Players are named by their player names (`game_start.names`, the reference's roster
James ... Martin under the paper preset), as the authors' log names them; a record
without names uses the seat colours. Free text (reasoning, intents, speech, vote
reasons) names players by colour in our games, so colour words in it are replaced by
the player names too, or the transcript would name one player two ways.

What each line kind carries, and where it comes from in the record (`LINE_KINDS` holds
one pattern per kind; `check_transcript` checks every line against its kind):

- `sync`: `[Sync] step N, reasoning for 8 agents`, each free-roam and voting step.
- `entity_check`: `[step=N][Name] [Aria:Name] ENTITY_CHECK raw_te=K visible=[...]
  tick=T`, who was in sight as the step began (the last `visibility` record).
- `plan`: `... [Aria:Name] plan: mode=MODE | reasoning`, the decision's module (MOVE is
  the reference's `explore`) and its planner's reasoning.
- `plan_line`: `... [Aria:Name] PLAN_LINE mode=MODE long_term='...' short_term='...'`,
  the long-term planner's strategy and the planner's intent.
- `agent_note`: `... [Aria:Name] ghost → mission`, `corpse detected → REPORT`,
  `EMERGENCY MEETING CALLED!`: a ghost's decision, a report, a button press.
- `move`, `mission`: `... [MoveModule:Name] target=T | why`, `... [MissionModule:Name]
  mission=missionS | objective`, the module's answer.
- `kill_scan`: `... [KillModule:Name] scan forward: target=True witnesses=False |
  detail`, `scanning: behind (phase 1/2) target=T`, `behind_clear=... forward_target=...
  forward_witnesses=...`: the KILL decision's witness scans.
- `kill_decision`: `... [KillModule:Name] behind clear + target forward + no witnesses
  → KILL!`, `witness forward → DEFER`, `T too far (dist=D > 4) → stalk first`, `rule:
  stalk (cooldown)`, `... → defer to planner`, `no target forward → stalk to approach`:
  the KILL decision's outcome (its strike, or `Decision.deferral` in the kill module's
  words).
- `vote`: `... [VoteModule:Name] VOTE → Target (reason: ...)`, each ballot with the first
  80 characters of the voter's reasoning.
- `meeting_speaker`: `[Meeting] step N, speaker=Name (count=k/3)`, each talk turn.
- `meeting_note`: `  [Meeting] new dead since last: [...]`, `  [Meeting] Dead players:
  [...]`, `[Meeting] All agents reached 3 speaks — VOTE transition`.
- `chat`: `<Name> text`, each spoken meeting line.
- `intent`: `[ARIA_SAY:Name] intent`, an impostor decision's private narration.
- `scoreboard`: `[Scoreboard] 📍 Name area updated to: admin` and the like, from rule
  events: tasks (`doing_mission`, `missionS`), kills (`atk_ready`, `ghost`), reports
  (`reported_id`: the victim's seat number), meetings (`phase`, `talk`), ejections,
  room changes, the end; `atk_ready` 1 when the impostor's view says its kill is ready.
- `death`: `  Name has DIED (ghost=1)`, at the step after a player left play.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from annotation.gamelog import Game, distance, start_positions
from controller.events import (
    Decision,
    Eject,
    Event,
    GameEnd,
    Kill,
    MeetingEnd,
    MeetingStart,
    Positions,
    Report,
    Speech,
    TaskDone,
    TaskInterrupted,
    TaskStart,
    Visibility,
    Vote,
)
from controller.record import CallRecord, calls_of

TRANSCRIPT_VERSION = 1
"""Bumped when the transcript's lines change (part of the reference prompts' hash)."""

STRIKE_REACH = 4
"""Blocks within which the harness strikes (`harness_aria.modules.kill.STRIKE_REACH`; a
test keeps them equal): the threshold a `too far` kill line names."""
VOTE_REASON_CHARS = 80
"""A vote line carries the first this many characters of the reason, as theirs does."""

_N = r"[A-Za-z]+"
_TAG = rf"\[step=\d{{3,}}\]\[{_N}\] "

LINE_KINDS: dict[str, re.Pattern[str]] = {
    "sync": re.compile(r"\[Sync\] step \d+, reasoning for \d+ agents"),
    "entity_check": re.compile(
        _TAG + rf"\[Aria:{_N}\] ENTITY_CHECK raw_te=\d+ visible=\[.*\] tick=\d+"
    ),
    "plan": re.compile(_TAG + rf"\[Aria:{_N}\] plan: mode=[a-z_]+ \|(?: .*)?"),
    "plan_line": re.compile(
        _TAG + rf"\[Aria:{_N}\] PLAN_LINE mode=[a-z_]+ long_term=(['\"]).*\1 short_term=(['\"]).*\2"
    ),
    "agent_note": re.compile(
        _TAG
        + rf"\[Aria:{_N}\] (?:ghost → mission|corpse detected → REPORT|EMERGENCY MEETING CALLED!)"
    ),
    "move": re.compile(_TAG + rf"\[MoveModule:{_N}\] target=\S+ \|(?: .*)?"),
    "mission": re.compile(_TAG + rf"\[MissionModule:{_N}\] mission=\S+ \|(?: .*)?"),
    "kill_scan": re.compile(
        _TAG
        + rf"\[KillModule:{_N}\] (?:scan behind: witnesses=(?:True|False) \|(?: .*)?"
        + r"|scan forward: target=(?:True|False) witnesses=(?:True|False) \|(?: .*)?"
        + r"|scan (?:behind|forward) error: .*"
        + r"|scanning: behind \(phase 1/2\) target=\S+"
        + r"|behind_clear=(?:True|False) forward_target=(?:True|False)"
        + r" forward_witnesses=(?:True|False))"
    ),
    "kill_decision": re.compile(
        _TAG
        + rf"\[KillModule:{_N}\] (?:behind clear \+ target forward \+ no witnesses → KILL!"
        + r"|witness (?:behind|forward) → DEFER"
        + r"|rule: stalk \(cooldown\)"
        + r"|\S+ too far \(dist=\S+ > \d+\) → stalk first"
        + r"|target \S+ (?:not in sight \(dist=\S+\)|never_seen|invalid) → defer to planner"
        + r"|no target known → defer to planner"
        + r"|no target forward → stalk to approach"
        + r"|kill deferred \(\w+\) → DEFER)"
    ),
    "vote": re.compile(
        _TAG + rf"\[VoteModule:{_N}\] VOTE → \S+ \(reason: .{{0,{VOTE_REASON_CHARS}}}\)"
    ),
    "meeting_speaker": re.compile(rf"\[Meeting\] step \d+, speaker={_N} \(count=\d+/\d+\)"),
    "meeting_note": re.compile(
        r"\s*\[Meeting\] (?:All agents reached \d+ speaks — VOTE transition"
        + r"|new dead since last: \[.*\]|Dead players: \[.*\])"
    ),
    "chat": re.compile(rf"<{_N}> \S.*"),
    "intent": re.compile(rf"\[ARIA_SAY:{_N}\] \S.*"),
    "scoreboard": re.compile(rf"\[Scoreboard\] \S+ {_N} [a-z_]+\d* updated to: \S.*"),
    "death": re.compile(rf"  {_N} has DIED \(ghost=1\)"),
}
"""The line format: one pattern per line kind (each line matches its kind whole)."""

# The authors' judge keeps a line when one of these is found in it (and drops every
# line before the first step-tagged one); its meeting chunks anchor on MEETING, CHAT and
# VOTE lines and add STEP, MEETING, SAY and VOTE lines within 3 lines of an anchor.
STEP_RE = re.compile(r"\[step=(\d+)\]")
CHAT_RE = re.compile(r"<([A-Za-z]+)>")
MEETING_RE = re.compile(r"\[Meeting\]")
SAY_RE = re.compile(r"\[ARIA_SAY:")
SCORE_RE = re.compile(r"\[Scoreboard\]")
DEATH_RE = re.compile(r"has DIED", re.IGNORECASE)
SYNC_RE = re.compile(r"\[Sync\]")
VOTE_RE = re.compile(r"\[VoteModule:[A-Za-z]+\]\s*VOTE")
KEPT = (STEP_RE, CHAT_RE, MEETING_RE, SAY_RE, SCORE_RE, DEATH_RE, SYNC_RE)
"""What the authors' judge keeps of a log."""
CHUNK_CONTEXT = 3
"""Lines either side of a meeting anchor the verbal pass also reads."""

MODES = {
    "MOVE": "explore",
    "MISSION": "mission",
    "KILL": "kill",
    "REPORT": "report",
    "EMERGENCY": "emergency",
    "MEETING": "meeting",
    "VOTE": "vote",
    "SURVEILLANCE": "surveillance",
    "ESCORT": "escort",
}
"""Our modules by the planner mode the reference prints (MOVE is its `explore`)."""

_SCORE_ICONS = {
    "mission": "📊",
    "atk_ready": "⚔️",
    "phase": "🎮",
    "ghost": "👻",
    "talk": "💬",
    "area": "📍",
    "reported_id": "📣",
    "doing_mission": "🔧",
    "game_end": "🏁",
}


@dataclass(frozen=True)
class TranscriptLine:
    """One line of a reference transcript."""

    kind: str
    """Its kind (a key of `LINE_KINDS`)."""
    text: str
    step: int | None
    """The step it belongs to (the step tag, or the step it was printed in)."""
    owner: str | None
    """The seat whose act, decision or words it records (None: a header, or a state no
    one chose)."""


def player_names(game: Game) -> dict[str, str]:
    """Seat -> the name the transcript calls it: its player name (letters only, as the
    authors' log patterns read names), else the seat itself."""
    out: dict[str, str] = {}
    for seat in game.start.agents:
        raw = game.start.names.get(seat, "")
        name = "".join(ch for ch in raw if ch.isascii() and ch.isalpha())
        out[seat] = name or "".join(ch for ch in seat if ch.isascii() and ch.isalpha()) or "P"
    if len(set(out.values())) < len(out):  # names that collide: the seats, which never do
        out = {seat: seat for seat in game.start.agents}
    return out


def roles_json(game: Game) -> str:
    """The roles object the judge is given: player name -> `impostor`/`crewmate`."""
    names = player_names(game)
    return json.dumps({names[a]: game.roles.get(a, "crewmate") for a in game.start.agents})


def text_of(lines: Sequence[TranscriptLine]) -> str:
    """A transcript's text, one line each (no trailing newline, as theirs joins it)."""
    return "\n".join(line.text for line in lines)


def kept(text: str) -> bool:
    """Whether the authors' judge keeps a line of this text."""
    return any(p.search(text) for p in KEPT)


def clean(lines: Sequence[TranscriptLine]) -> list[TranscriptLine]:
    """What the authors' judge keeps of a log: nothing before the first step-tagged line,
    then the lines of the kinds it reads (blank lines dropped)."""
    out: list[TranscriptLine] = []
    started = False
    for line in lines:
        if not started:
            if not STEP_RE.search(line.text):
                continue
            started = True
        if line.text.strip() and kept(line.text):
            out.append(line)
    return out


def verbal_chunks(lines: Sequence[TranscriptLine]) -> list[TranscriptLine]:
    """The verbal pass's input: every `[Meeting]`, chat and VOTE line, and the step,
    `[Meeting]`, `[ARIA_SAY:` and VOTE lines within `CHUNK_CONTEXT` lines of one."""
    texts = [line.text for line in lines]
    keep: set[int] = set()
    for i, text in enumerate(texts):
        if not (MEETING_RE.search(text) or CHAT_RE.search(text) or VOTE_RE.search(text)):
            continue
        keep.add(i)
        for j in range(max(0, i - CHUNK_CONTEXT), min(len(texts), i + CHUNK_CONTEXT + 1)):
            near = texts[j]
            if (
                STEP_RE.search(near)
                or MEETING_RE.search(near)
                or SAY_RE.search(near)
                or VOTE_RE.search(near)
            ):
                keep.add(j)
    return [lines[i] for i in sorted(keep)]


def check_transcript(lines: Sequence[TranscriptLine]) -> list[str]:
    """Every way the lines break the format (empty when none): a line of an unknown
    kind or not matching its kind's pattern, a line the authors' judge would not keep,
    a line break inside a line, a ground-truth fact line, a first line without a step
    tag."""
    problems: list[str] = []
    for n, line in enumerate(lines, 1):
        text = line.text
        if "\n" in text or "\r" in text:
            problems.append(f"line {n}: a line break inside the line")
        if text.lstrip().startswith("#") or "# fact" in text:
            problems.append(f"line {n}: a ground-truth fact line: {text[:80]!r}")
        pattern = LINE_KINDS.get(line.kind)
        if pattern is None:
            problems.append(f"line {n}: unknown kind {line.kind!r}")
        elif not pattern.fullmatch(text):
            problems.append(f"line {n}: not a {line.kind} line: {text[:120]!r}")
        if not kept(text):
            problems.append(f"line {n}: the reference judge would drop it: {text[:80]!r}")
    if lines and not STEP_RE.search(lines[0].text):
        problems.append("line 1: the transcript must begin with a step-tagged line")
    return problems


def kind_of(text: str) -> str | None:
    """The kind whose pattern a line's text matches whole (None: no kind)."""
    return next((k for k, p in LINE_KINDS.items() if p.fullmatch(text)), None)


def write_transcript(game: Game) -> list[TranscriptLine]:
    """The game as the authors' judge reads a log (see the module docstring)."""
    return clean(_Writer(game).write())


def _flag(value: Any, *, unclear: bool) -> bool:
    """A scan answer's yes/no as their log prints it; `unclear` is what anything but a
    clear answer counts as (a witness: the reference counts an error as one)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("true", "yes"):
        return True
    if word in ("false", "no"):
        return False
    return unclear


def _ops(d: Decision) -> list[dict[str, Any]]:
    prog = d.program
    return [op for op in prog if isinstance(op, dict)] if isinstance(prog, list) else []


class _Writer:
    """Walks a game's events step by step and writes the lines its runner would print."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.names = player_names(game)
        self.seats = list(game.start.agents)
        self.impostors = set(game.impostors)
        rules = game.setup.rules
        self.max_turns = int(rules.get("max_utterances", 3) or 3)
        self.lines: list[TranscriptLine] = []
        self.announced: set[str] = set()
        self.doing: dict[str, int] = {}
        self.ready: dict[str, bool] = {}
        self.rooms: dict[str, str] = {}
        self.last_vis: Visibility | None = None
        self.last_kill: dict[str, Decision] = {}
        """Each impostor's latest KILL decision (whose look behind the next one judges)."""
        self.last_forward: dict[str, tuple[bool, bool]] = {}
        """Each impostor's latest forward scan: (target visible, witness)."""
        self.turns: dict[str, int] = {}
        """Talk turns taken in the current meeting, by seat."""
        self.opened: set[int] = set()
        """Meetings whose start was written."""
        self.dead_before: list[str] = []
        self.living: list[str] = list(self.seats)
        colours = sorted((s for s in self.seats if self.names[s] != s), key=len, reverse=True)
        self._colour_re = (
            re.compile(r"\b(" + "|".join(map(re.escape, colours)) + r")\b", re.IGNORECASE)
            if colours
            else None
        )
        self._by_colour = {s.lower(): self.names[s] for s in self.seats}

    # ------------------------------------------------------------------ helpers
    def name(self, seat: str | None) -> str:
        if seat is None:
            return "none"
        return self.names.get(seat, "".join(ch for ch in seat if ch.isalpha()) or "none")

    def text(self, value: Any) -> str:
        """Free text on one line, colours named as players."""
        text = " ".join(str(value or "").split())
        if self._colour_re is not None:
            text = self._colour_re.sub(lambda m: self._by_colour[m.group(1).lower()], text)
        return text

    def add(self, kind: str, text: str, step: int | None, owner: str | None) -> None:
        # Their judge reads each line with its trailing blanks stripped.
        self.lines.append(TranscriptLine(kind, text.rstrip(), step, owner))

    def score(self, step: int, seat: str, objective: str, value: str) -> None:
        base = "mission" if objective.startswith("mission") else objective
        icon = _SCORE_ICONS[base]
        owner = seat if base in ("doing_mission", "mission", "reported_id", "atk_ready") else None
        text = f"[Scoreboard] {icon} {self.name(seat)} {objective} updated to: {value}"
        self.add("scoreboard", text, step, owner)

    # ------------------------------------------------------------------ the walk
    def write(self) -> list[TranscriptLine]:
        by_step: dict[int, list[Event]] = {}
        for ev in self.game.events:
            if ev.step > 0:
                by_step.setdefault(ev.step, []).append(ev)
            elif isinstance(ev, Visibility):
                self.last_vis = ev  # the set-up's: who is in sight as play begins
            elif isinstance(ev, Positions):
                self.rooms.update({a: p.room for a, p in ev.players.items()})
        steps = self.game.steps
        for i, step in enumerate(steps):
            events = by_step.get(step, [])
            phase = self.game.step_phase[step]
            nxt = self.game.step_phase.get(steps[i + 1]) if i + 1 < len(steps) else None
            self._deaths(step)
            if phase == "free_roam":
                self._free_roam(step, events)
            elif phase == "meeting":
                self._talk(step, events, last=nxt != "meeting")
            else:
                self._voting(step, events)
            self._effects(step, events)
        return self.lines

    def _deaths(self, step: int) -> None:
        gone = self.game.record.out_of_play()
        for seat in self.seats:
            left = gone.get(seat)
            if left is not None and left[0] < step and seat not in self.announced:
                self.announced.add(seat)
                self.add("death", f"  {self.name(seat)} has DIED (ghost=1)", step, None)

    def _decisions(self, events: list[Event]) -> list[Decision]:
        return [e for e in events if isinstance(e, Decision)]

    def _free_roam(self, step: int, events: list[Event]) -> None:
        decisions = self._decisions(events)
        for d in decisions:  # the kill cooldown ran out: the scoreboard says so first
            if d.agent in self.impostors and d.view_text:
                ready = "Your kill is ready." in d.view_text
                if ready and not self.ready.get(d.agent, False):
                    self.score(step, d.agent, "atk_ready", "1")
                self.ready[d.agent] = ready
        # The reference runner's sync line counts every seat, asked or not.
        self.add("sync", f"[Sync] step {step}, reasoning for {len(self.seats)} agents", step, None)
        gone = self.game.record.out_of_play()
        for d in decisions:
            left = gone.get(d.agent)
            self._decision(d, step, "free_roam", ghost=left is not None and left[0] < step)
        self._intents(step, decisions)

    def _talk(self, step: int, events: list[Event], *, last: bool) -> None:
        called = [m for m in self.game.meetings if m.step < step]
        start = called[-1] if called else None
        if start is not None and start.index not in self.opened:
            self.opened.add(start.index)
            self.turns = {}
            dead = [self.name(a) for a in start.dead]
            new = [n for n in dead if n not in self.dead_before]
            if new:
                self.add("meeting_note", f"  [Meeting] new dead since last: {new}", step, None)
            if dead:
                self.add("meeting_note", f"  [Meeting] Dead players: {dead}", step, None)
            self.dead_before = dead
        speech = next((e for e in events if isinstance(e, Speech)), None)
        speaker = speech.speaker if speech is not None else None
        if speaker is None:
            speaker = next((d.agent for d in self._decisions(events)), None)
        if speaker is not None:
            self.turns[speaker] = self.turns.get(speaker, 0) + 1
            self.add(
                "meeting_speaker",
                f"[Meeting] step {step}, speaker={self.name(speaker)} "
                f"(count={self.turns[speaker]}/{self.max_turns})",
                step,
                None,
            )
        decisions = self._decisions(events)
        for d in decisions:
            self._decision(d, step, "meeting", ghost=False)
        self._intents(step, decisions)
        if speech is not None and speech.text and not speech.passed and not speech.failed:
            said = self.text(speech.text)
            if said:
                self.add("chat", f"<{self.name(speech.speaker)}> {said}", step, speech.speaker)
        if last:
            self.add(
                "meeting_note",
                f"[Meeting] All agents reached {self.max_turns} speaks — VOTE transition",
                step,
                None,
            )
            for seat in self.living:
                self.score(step, seat, "talk", "0")

    def _voting(self, step: int, events: list[Event]) -> None:
        self.add("sync", f"[Sync] step {step}, reasoning for {len(self.seats)} agents", step, None)
        decisions = self._decisions(events)
        votes = {v.voter: v for v in events if isinstance(v, Vote)}
        done: set[str] = set()
        for d in decisions:
            self._decision(d, step, "voting", ghost=False)
            vote = votes.get(d.agent)
            if vote is not None:
                self._vote(step, vote, d)
                done.add(d.agent)
        for voter, vote in votes.items():
            if voter not in done:
                self._vote(step, vote, None)
        self._intents(step, decisions)

    def _vote(self, step: int, vote: Vote, d: Decision | None) -> None:
        if vote.target is None:
            return  # an abstention: no ballot was cast
        reason = ""
        if d is not None:
            parsed = next((c.parsed for c in calls_of(d) if c.purpose == "vote" and c.parsed), {})
            reason = self.text(d.reasoning or (parsed or {}).get("reasoning", ""))
        target = "skip" if vote.target == "skip" else self.name(vote.target)
        name = self.name(vote.voter)
        self.add(
            "vote",
            f"[step={step:03d}][{name}] [VoteModule:{name}] VOTE → {target} "
            f"(reason: {reason[:VOTE_REASON_CHARS]})",
            step,
            vote.voter,
        )

    def _intents(self, step: int, decisions: list[Decision]) -> None:
        for d in decisions:
            if d.agent in self.impostors and d.narration.strip():
                self.add(
                    "intent",
                    f"[ARIA_SAY:{self.name(d.agent)}] {self.text(d.narration)}",
                    step,
                    d.agent,
                )

    # ------------------------------------------------------------------ one decision
    def _decision(self, d: Decision, step: int, phase: str, *, ghost: bool) -> None:
        name = self.name(d.agent)
        tag = f"[step={step:03d}][{name}] "
        calls = calls_of(d)
        module = d.module.upper()

        def line(kind: str, body: str) -> None:
            self.add(kind, tag + body, step, d.agent)

        if ghost:
            line("agent_note", f"[Aria:{name}] ghost → mission")
            if module == "MISSION":
                line("mission", self._mission(d, name, calls))
            return
        if phase == "free_roam":
            seen = self._in_sight(d.agent)
            if seen:
                line(
                    "entity_check",
                    f"[Aria:{name}] ENTITY_CHECK raw_te={len(seen)} visible={seen!r} tick={d.tick}",
                )
        mode = MODES.get(module, re.sub(r"[^a-z_]", "", module.lower()) or "explore")
        planner = _parsed(calls, "planner")
        strategy = _parsed(calls, "planner_long")
        reasoning = self.text(planner.get("reasoning") or d.reasoning)
        line("plan", f"[Aria:{name}] plan: mode={mode} | {reasoning}")
        long_term = self.text(strategy.get("strategy", ""))
        short_term = self.text(planner.get("intent", ""))
        line(
            "plan_line",
            f"[Aria:{name}] PLAN_LINE mode={mode} long_term={long_term!r} "
            f"short_term={short_term!r}",
        )
        ops = _ops(d)
        if module == "MOVE" and phase == "free_roam":
            move = _parsed(calls, "move")
            follow = move.get("follow") or next(
                (op.get("agent") for op in ops if op.get("op") == "follow"), None
            )
            room = move.get("room") or next(
                (op.get("room") for op in ops if op.get("op") == "go_to" and op.get("room")), None
            )
            target = self.name(str(follow)) if follow in self.names else str(room or "wander")
            why = self.text(move.get("reasoning") or d.reasoning) or "Explore."
            line("move", f"[MoveModule:{name}] target={_token(target)} | {why}")
        elif module == "MISSION" and phase == "free_roam":
            line("mission", self._mission(d, name, calls))
        elif module == "KILL" and phase == "free_roam":
            for kind, body in self._kill(d, step, name, calls, planner):
                line(kind, body)
        elif module == "REPORT" and any(op.get("op") == "report" for op in ops):
            line("agent_note", f"[Aria:{name}] corpse detected → REPORT")
        elif module == "EMERGENCY" and any(op.get("op") == "press_button" for op in ops):
            line("agent_note", f"[Aria:{name}] EMERGENCY MEETING CALLED!")

    def _mission(self, d: Decision, name: str, calls: list[CallRecord]) -> str:
        mission = _parsed(calls, "mission")
        station = mission.get("station")
        if station is None:
            station = next(
                (op.get("station") for op in _ops(d) if op.get("op") == "use_station"), None
            )
        key = f"mission{station}" if station is not None else "none"
        objective = self.text(mission.get("objective") or d.reasoning) or f"Work on {key}"
        return f"[MissionModule:{name}] mission={_token(key)} | {objective}"

    def _in_sight(self, seat: str) -> list[str]:
        vis = self.last_vis
        if vis is None:
            return []
        seen = vis.near.get(seat) if vis.near else None
        if seen is None:
            seen = vis.sees.get(seat, [])
        order = {s: i for i, s in enumerate(self.seats)}
        return [self.name(s) for s in sorted(set(seen), key=lambda s: order.get(s, 99))]

    def _distance(self, seat: str, other: str | None, step: int) -> float | None:
        if other is None:
            return None
        snap = start_positions(self.game, step)
        if snap is None or seat not in snap.players or other not in snap.players:
            return None
        return distance(snap.players[seat].pos, snap.players[other].pos)

    def _kill(
        self,
        d: Decision,
        step: int,
        name: str,
        calls: list[CallRecord],
        planner: dict[str, Any],
    ) -> list[tuple[str, str]]:
        """The kill module's lines for one KILL decision: its scans, then its outcome."""
        ops = _ops(d)
        strike = next((op for op in ops if op.get("op") == "kill"), None)
        follow = next((op for op in ops if op.get("op") == "follow"), None)
        turned = any(op.get("op") == "look" and op.get("behind") for op in ops)
        seat = (strike or {}).get("target") or (follow or {}).get("agent") or planner.get("target")
        target_seat = str(seat) if seat in self.names else None
        target = self.name(target_seat)
        dist = self._distance(d.agent, target_seat, step)
        dist_txt = f"{dist:.0f}" if dist is not None else "?"
        prev = self.last_kill.get(d.agent)
        behind = (
            prev is not None
            and prev.deferral in ("scan", "too_far", "target_lost")
            and any(op.get("op") == "look" and op.get("behind") for op in _ops(prev))
            and self._previous_free_step(step) == prev.step
        )
        self.last_kill[d.agent] = d
        direction = "behind" if behind else "forward"
        tag = f"[KillModule:{name}] "
        out: list[tuple[str, str]] = []
        witness = False
        target_seen = True
        scanned = False
        for c in calls:
            if c.purpose != "kill_scan":
                continue
            scanned = True
            answer = c.parsed or {}
            if not answer:
                why = self.text(c.parse_error or c.error or "no readable answer")
                out.append(("kill_scan", f"{tag}scan {direction} error: {why}"))
                witness = True
                continue
            witness = _flag(answer.get("witnesses_visible"), unclear=True)
            detail = self.text(answer.get("detail", ""))
            if direction == "behind":
                out.append(("kill_scan", f"{tag}scan behind: witnesses={witness} | {detail}"))
            else:
                target_seen = _flag(answer.get("target_visible"), unclear=False)
                self.last_forward[d.agent] = (target_seen, witness)
                out.append(
                    (
                        "kill_scan",
                        f"{tag}scan forward: target={target_seen} witnesses={witness} | {detail}",
                    )
                )
        deferral = d.deferral
        if scanned and deferral in ("", "witness", "unclear"):
            if direction == "behind":
                ahead_target, ahead_witness = self.last_forward.get(d.agent, (True, False))
                clear = f"behind_clear={not witness} forward_target={ahead_target} "
                clear += f"forward_witnesses={ahead_witness}"
            else:
                clear = f"behind_clear=True forward_target={target_seen} "
                clear += f"forward_witnesses={witness}"
            out.append(("kill_scan", tag + clear))
        scanning = ("kill_scan", f"{tag}scanning: behind (phase 1/2) target={target}")
        if not deferral:
            if strike is not None:
                kill = "behind clear + target forward + no witnesses → KILL!"
                out.append(("kill_decision", tag + kill))
        elif deferral in ("witness", "unclear"):
            out.append(("kill_decision", f"{tag}witness {direction} → DEFER"))
        elif deferral == "scan":
            out.append(scanning)
        elif deferral == "too_far":
            out.append(
                (
                    "kill_decision",
                    f"{tag}{target} too far (dist={dist_txt} > {STRIKE_REACH}) → stalk first",
                )
            )
            if turned:
                out.append(scanning)
        elif deferral == "cooldown":
            out.append(("kill_decision", f"{tag}rule: stalk (cooldown)"))
        elif deferral == "hunting":
            out.append(
                (
                    "kill_decision",
                    f"{tag}target {target} not in sight (dist={dist_txt}) → defer to planner",
                )
            )
        elif deferral == "no_target":
            text = (
                f"target {target} never_seen → defer to planner"
                if target_seat
                else "no target known → defer to planner"
            )
            out.append(("kill_decision", tag + text))
        elif deferral in ("target_lost", "out_of_leash"):
            out.append(("kill_decision", f"{tag}no target forward → stalk to approach"))
        elif deferral == "invalid_target":
            out.append(("kill_decision", f"{tag}target {target} invalid → defer to planner"))
        else:
            out.append(("kill_decision", f"{tag}kill deferred ({_token(deferral)}) → DEFER"))
        return out

    def _previous_free_step(self, step: int) -> int | None:
        phase = self.game.step_phase
        earlier = [s for s in self.game.steps if s < step and phase[s] == "free_roam"]
        return earlier[-1] if earlier else None

    # ------------------------------------------------------------------ the rules' effects
    def _effects(self, step: int, events: list[Event]) -> None:
        """The scoreboard lines of the step's rule events, in log order."""
        order = {s: i + 1 for i, s in enumerate(self.seats)}
        for ev in events:
            if isinstance(ev, Visibility):
                if ev.cause in ("step_end", "meeting_seats", "setup"):
                    self.last_vis = ev
            elif isinstance(ev, TaskStart):
                self._doing(step, ev.agent, 1)
            elif isinstance(ev, TaskDone):
                self._doing(step, ev.agent, 0)
                if not ev.fake:
                    self.score(step, ev.agent, f"mission{ev.station}", "1")
            elif isinstance(ev, TaskInterrupted):
                self._doing(step, ev.agent, 0)
            elif isinstance(ev, Kill):
                self.ready[ev.killer] = False
                self.score(step, ev.killer, "atk_ready", "0")
                self.score(step, ev.victim, "ghost", "1")
                self.living = [a for a in self.living if a != ev.victim]
            elif isinstance(ev, Report):
                self.score(step, ev.reporter, "reported_id", str(order.get(ev.victim, 0)))
            elif isinstance(ev, MeetingStart):
                self.living = list(ev.order)
                for seat in ev.order:
                    self.score(step, seat, "phase", "1 (hearing_distance=64)")
                for seat in ev.order:
                    self.score(step, seat, "talk", "1")
            elif isinstance(ev, MeetingEnd):
                for seat in self.living:
                    self.score(step, seat, "phase", "0 (hearing_distance=0)")
            elif isinstance(ev, Eject):
                self.score(step, ev.agent, "ghost", "1")
                self.living = [a for a in self.living if a != ev.agent]
            elif isinstance(ev, Positions) and ev.cause != "meeting_call":
                for seat in self.seats:
                    snap = ev.players.get(seat)
                    if snap is None:
                        continue
                    if seat in self.rooms and self.rooms[seat] != snap.room:
                        self.score(step, seat, "area", _token(snap.room))
                    self.rooms[seat] = snap.room
            elif isinstance(ev, GameEnd):
                for seat in self.seats:
                    self.score(step, seat, "game_end", "1")

    def _doing(self, step: int, seat: str, value: int) -> None:
        if self.doing.get(seat, 0) != value:
            self.doing[seat] = value
            self.score(step, seat, "doing_mission", str(value))


def _parsed(calls: list[CallRecord], purpose: str) -> dict[str, Any]:
    """The first readable answer of a call of this purpose ({} when none)."""
    return next((c.parsed for c in calls if c.purpose == purpose and c.parsed), None) or {}


def _token(value: str) -> str:
    """A value printed where the format wants one word."""
    return re.sub(r"\s+", "_", str(value).strip()) or "none"
