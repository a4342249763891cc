"""Deterministic, valid answers to every ARIA prompt, for the `fake` backend.

With `--crew fake` / `--impostor fake` a whole ARIA game runs offline. This responder
plays a plausible game from what the agent is told, and from nothing else: it reads the
request's texts (the module's template, the state view, memory, the meeting chat) and
answers in each module's JSON format. It never sees the game's ground truth, so what it
"knows" is exactly what the agent's state view and memory hold.

How it plays:

* impostor: chooses KILL whenever it is offered, and judges a kill scan by the players
  the state lists in view (or in sight all around): anyone but the target and its
  fellow impostors is a witness, so it kills only when alone with its target. A body in
  view is REPORTed: it self-reports (atom I) half the time when someone can see it
  there, and one time in five otherwise; else it walks away (flees). Between
  kills it fakes tasks at stations in the room it is in (MISSION) or shadows a crewmate
  (MOVE). In meetings it answers an accusation of itself or a fellow impostor with a
  counter-accusation, joins an accusation of a crewmate, or gives an alibi; it votes
  for the most accused crewmate, else skips.
* both, with `AriaSpec.action: codegen`: the codegen call's program (`_codegen`) is
  written in the reference's style for the plan it is told (a walk with GoalNear, GoalXZ
  or GoalBlock, a follow through `bot.nearestEntity`, a task through `findBlock` or
  `blockAt` and `activateBlock` with a wait; an impostor's opens with its intent line);
  about one in twenty breaks a rule of the subset (chat, a loop, `require`, try/catch,
  or nothing at all), so offline games exercise the refusal and its wander too.
* crewmate: REPORTs a body in view, presses the button (EMERGENCY) with evidence or
  halfway through its tasks, otherwise does its tasks (those in its room first) and
  follows others. Evidence is what its memory holds: a player seen near a body (window
  memory's sightings at the step it saw the body; semantic memory's note "near X's
  body" or a suspicion of at least `EVIDENCE`), or a player its own surveillance saw
  near a body. In meetings it names
  its suspect with that evidence, or asks questions; it votes for its suspect, or for a
  player accused by at least `BANDWAGON` others, else skips.

Choices that would be a coin toss (self-reporting, which room, fake task or walk) are
drawn from a hash of the agent's name, the step and the purpose, so the answers are
deterministic for a given game (seed) and vary between games.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from harness_aria.backends.base import ModelRequest
from harness_aria.prompts import COLORS

_MODULES = re.compile(r"Modules you may choose: ([A-Z, ]+)\.")
_STATIONS = re.compile(r"Stations you may use: (.+)$", re.M)
_STATION = re.compile(r"(\d+) in ([a-z0-9_]+)")
_OWN_TASKS = re.compile(r"^Your pending tasks [^:]*: (.*)$", re.M)
"""A pending task of a privileged view's "Your tasks" list (done ones end "(done)")."""
_ROOMS = re.compile(r"Rooms: ([a-z0-9_, ]+)\.")
_ROOM_LINE = re.compile(r"^- ([a-z0-9_]+): [a-z0-9_, ]+$", re.M)
"""A room of the shared prefix's room list (`- medbay: upper_engine, cafeteria`)."""
_TASKS_DONE = re.compile(r"Your tasks done: (\d+)/(\d+)")
_ME = re.compile(
    r"^You are (\w+), an? (crewmate|impostor)(?: \(fellow impostors: ([^)]*)\))?\.", re.M
)
_WHERE = re.compile(r"^Step (\d+)\. Phase: (\w+)\. You are in ([a-z0-9_]+)", re.M)
_IN_VIEW = re.compile(r"^In (?:view|sight) now: (.*)$", re.M)
_BODIES = re.compile(r"^Bodies in (?:view|sight) now: (.*)$", re.M)
_ENTRY = re.compile(r"([A-Z][a-z]+) \(([\d.]+) blocks")
_DEAD = re.compile(r"^Dead players: (.*)$", re.M)
_REPORTED = re.compile(r"called over (\w+)'s body(?:, found in ([a-z0-9_]+))?")
_SPEECH = re.compile(r"^\s+<(\w+)> (.*)$", re.M)
_BELIEF = re.compile(r"^\s+([a-z]+): ([\d.]+)(.*)$", re.M)
_SAW = re.compile(r"^\s+step (\d+): saw (.*)$", re.M)
_LOOKED = re.compile(r"looked around: saw [^.]*\. (\w+) is near a body")
_KILLED = re.compile(r"\bI killed (\w+)")
_ACCUSING = re.compile(r"\b(suspect|sus|vote|saw|killed|lying|liar|near|strange|blame)\b", re.I)
_TARGET = re.compile(r"safe to kill (\w+)")
_TEAM = re.compile(r"fellow impostors \(([^)]*)\)")

EVIDENCE = 0.45
"""Semantic memory's suspicion at which a crewmate suspects a player without a note of
it near a body (two sightings near a body, or one and several accusations; a player's
own accusation adds 0.15 and another's 0.05, so talk alone rarely reaches it)."""
BANDWAGON = 3
"""Distinct accusers (not counting itself) at which a crewmate without evidence of its
own votes for the accused (two impostors alone cannot make it)."""
SELF_REPORT = 0.2
"""How often an impostor nobody can see reports a body it finds (atom I)."""
SELF_REPORT_SEEN = 0.5
"""How often an impostor reports a body it finds while someone can see it there."""


def _own(systems: list[str], users: list[str]) -> tuple[str, str]:
    """The call's own instruction (its question: the module's template) and the user
    text before it. The question is the user text's last paragraph (see
    `harness_aria.calls.ask`); a request whose last system text names a purpose (an older
    layout, or another harness's) carries it there. A shared prefix (rules, map, formats)
    may come first and mentions every module, so it must not steer the answer."""
    user = "\n".join(users)
    if systems and infer_purpose(systems[-1]):
        return systems[-1], user
    head, sep, tail = user.rpartition("\n\n")
    if sep and infer_purpose(tail):
        return tail, head
    # The codegen question runs over several paragraphs (its examples): it starts at the
    # paragraph its marker opens.
    at = user.rfind("\n\n" + _CODEGEN_MARKER)
    if at >= 0:
        return user[at + 2 :], user[:at]
    return (systems[-1] if systems else ""), user


# A phrase of each template that tells which module is asking (for requests that
# arrive over HTTP, where the purpose is not sent).
_CODEGEN_MARKER = "Write the Mineflayer program"
_PURPOSE_MARKERS = (
    (_CODEGEN_MARKER, "codegen"),
    ("Set your strategy", "planner_long"),
    ("Decide what to do this step", "planner"),
    ("checking whether it is safe to kill", "kill_scan"),
    ("You see the body of", "report"),
    ("You just looked around", "surveillance"),
    ("press the emergency button", "emergency"),
    ("Choose the task station", "mission"),
    ("Decide where to move", "move"),
    ("your turn to speak in the meeting", "meeting"),
    ("Vote now", "vote"),
    ("The meeting is over. Reflect", "reflection"),
    ("Update your beliefs about the players", "belief_update"),
)


def infer_purpose(system: str) -> str:
    """Which ARIA prompt a system text belongs to ('' if none)."""
    return next((purpose for marker, purpose in _PURPOSE_MARKERS if marker in system), "")


def answer(request: ModelRequest) -> str:
    """A valid JSON answer for the request's purpose."""
    systems = [m.text for m in request.messages if m.role == "system"]
    own, user = _own(systems, [m.text for m in request.messages if m.role == "user"])
    return answer_for(request.purpose or infer_purpose(own), own, user, "\n".join(systems))


def answer_http(body: dict[str, object]) -> str:
    """The same answers for a request body of the OpenAI or Anthropic API (mock servers)."""
    texts: list[str] = []
    users: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        texts.append(system)
    elif isinstance(system, list):
        texts += [str(b.get("text", "")) for b in system if isinstance(b, dict)]
    messages = body.get("messages")
    for m in messages if isinstance(messages, list) else []:
        if not isinstance(m, dict):
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if m.get("role") == "system":
            texts.append(str(content))
        elif m.get("role") == "user":
            users.append(str(content))
    own, user = _own(texts, users)
    return answer_for(infer_purpose(own), own, user, "\n".join(texts))


# ---------------------------------------------------------------------- what it is told
def _names(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"\b([A-Z][a-z]+)\b", text) if w.lower() in COLORS]


def _block(text: str, header: str) -> str:
    """The indented lines under a header line of the state or memory text."""
    start = text.find(header)
    if start < 0:
        return ""
    lines = []
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("  "):
            break
        lines.append(line)
    return "\n".join(lines)


@dataclass
class Told:
    """What a request tells the agent (read from its state view, memory and chat)."""

    me: str = ""
    impostor: bool = False
    teammates: list[str] = field(default_factory=list)
    step: int = 0
    room: str = ""
    in_view: dict[str, float] = field(default_factory=dict)
    """Players in view (ego) or in sight (privileged) now -> distance."""
    bodies: dict[str, float] = field(default_factory=dict)
    dead: set[str] = field(default_factory=set)
    reported: str | None = None
    body_room: str | None = None
    speech: list[tuple[str, str]] = field(default_factory=list)
    """(speaker, text) of every line players said that the request shows."""
    suspicion: dict[str, float] = field(default_factory=dict)
    near_body: list[str] = field(default_factory=list)
    """Players the memory saw at a step it also saw a body, most recent first."""
    killed: list[str] = field(default_factory=list)

    @property
    def living_others(self) -> list[str]:
        return [c for c in COLORS if c != self.me and c not in self.dead]

    def crewmates(self) -> list[str]:
        """Living players this agent does not know to be impostors."""
        return [c for c in self.living_others if c not in self.teammates]

    def accusations(self) -> dict[str, set[str]]:
        """Accused -> the speakers who accused them (never themselves)."""
        out: dict[str, set[str]] = {}
        for speaker, text in self.speech:
            if not _ACCUSING.search(text):
                continue
            for name in _names(text):
                if name != speaker and name not in self.dead:
                    out.setdefault(name, set()).add(speaker)
        return out

    def suspect(self) -> str | None:
        """A crewmate's suspect from its own evidence (None without any)."""
        living = set(self.living_others)
        for name in self.near_body:
            if name in living:
                return name
        ranked = sorted(
            ((s, n) for n, s in self.suspicion.items() if n in living and s >= EVIDENCE),
            reverse=True,
        )
        return ranked[0][1] if ranked else None


def read_told(system: str, user: str) -> Told:
    """Parse what the agent is told from a request's texts."""
    t = Told(impostor="Your role: impostor" in system)
    if m := _ME.search(user):
        t.me = m.group(1).lower()
        t.impostor = t.impostor or m.group(2) == "impostor"
        if m.group(3):
            t.teammates = [n.strip().lower() for n in m.group(3).split(",") if n.strip()]
    if m := _WHERE.search(user):
        t.step, t.room = int(m.group(1)), m.group(3)
    if m := _IN_VIEW.search(user):
        t.in_view = {n.lower(): float(d) for n, d in _ENTRY.findall(m.group(1))}
    if m := _BODIES.search(user):
        t.bodies = {n.lower(): float(d) for n, d in _ENTRY.findall(m.group(1))}
    if m := _DEAD.search(user):
        t.dead = set(_names(m.group(1)))
    if m := _REPORTED.search(user):
        t.reported, t.body_room = m.group(1).lower(), m.group(2)
    t.speech = [(s.lower(), text) for s, text in _SPEECH.findall(user)]
    beliefs = _block(user, "Beliefs about players")
    for name, score, notes in _BELIEF.findall(beliefs):
        t.suspicion[name] = float(score)
        if re.search(r"; [+-][\d.]+ step \d+: near \w+'s body", notes):
            t.near_body.append(name)  # the belief's latest note: seen near a body
    body_steps = {int(s) for s, what in _SAW.findall(user) if "'s body" in what}
    for s, what in reversed(_SAW.findall(user)):
        if int(s) in body_steps and "'s body" not in what:
            t.near_body += [n for n in re.findall(r"(\w+) in ", what) if n in COLORS]
    for m in _LOOKED.finditer(user):  # its own surveillance answers, as memory keeps them
        if m.group(1).lower() in COLORS:
            t.near_body.append(m.group(1).lower())
    t.killed = [n.lower() for n in _KILLED.findall(user)]
    return t


def _draw(*key: object) -> float:
    """A number in [0, 1) fixed by the key (the coin of an otherwise tied choice)."""
    digest = hashlib.sha256("|".join(map(str, key)).encode()).hexdigest()
    return int(digest[:8], 16) / 2**32


def _pick(options: list[str], *key: object) -> str | None:
    return options[int(_draw(*key) * len(options))] if options else None


# ---------------------------------------------------------------------- the answers
def answer_for(purpose: str, system: str, user: str = "", prefix: str = "") -> str:
    """A valid JSON answer to an ARIA prompt of the given purpose.

    `prefix` is every system text of the request (the shared prefix's room list is read
    from it, for a planner target); only the call's own `system` steers the answer."""
    t = read_told(system, user)
    impostor = t.impostor
    out: dict[str, object]
    if purpose == "planner":
        out = _planner(t, system, user, _ROOM_LINE.findall(prefix))
    elif purpose == "planner_long":
        out = {
            "strategy": "isolate a lone crewmate and kill it unseen; fake tasks in between"
            if impostor
            else "do my tasks, stay near others and report what I see",
            "priority_target": None,
            "reasoning": "fake",
        }
    elif purpose == "kill_scan":
        out = _kill_scan(t, system)
    elif purpose == "report":
        out = _report(t, system)
    elif purpose == "emergency":
        suspect = t.suspect()
        out = {
            "should_call": not impostor,
            "reasoning": f"fake: I have seen {suspect.capitalize()} near a body"
            if suspect
            else "fake: let us compare notes",
        }
        if impostor:
            out["intent"] = "keep hunting rather than call a meeting"
    elif purpose == "surveillance":
        seen = sorted(t.in_view, key=t.in_view.__getitem__)
        suspect = next((p for p in seen if p not in t.teammates), None) if t.bodies else None
        detail = f"{suspect.capitalize()} is near a body" if suspect else "nothing unusual"
        out = {"players_seen": seen, "detail": detail, "suspect": suspect}
    elif purpose == "mission":
        out = _mission(t, system)
    elif purpose == "move":
        out = _move(t, system)
    elif purpose == "meeting":
        out = _impostor_meeting(t) if impostor else _crew_meeting(t)
    elif purpose == "vote":
        out = _vote(t)
    elif purpose == "codegen":
        out = {"code": _codegen(t, system)}
    elif purpose == "reflection":
        suspect = t.suspect()
        out = {
            "insights": "fake reflection",
            "suspicion_deltas": {suspect: 0.1} if suspect and not impostor else {},
            "skill": {"situation": "a meeting", "behavior": "stay calm", "outcome": "fine"},
        }
    elif purpose == "belief_update":
        out = {"updates": _belief_updates(t, user)}
    else:
        out = {"reasoning": "fake"}
    return json.dumps(out)


_EVENT_SPEECH = re.compile(r"^\s+step \d+: <(\w+)> (.*)$", re.M)
"""A player's line among a belief update's events (`  step 12: <Red> I saw ...`)."""


def _belief_updates(t: Told, user: str) -> list[dict[str, object]]:
    """A belief update from the events it is shown: +0.1 for each player another
    player accused in them (never itself or, for an impostor, a fellow impostor), by
    name, with the accusers in the note."""
    accused: dict[str, set[str]] = {}
    for speaker, text in _EVENT_SPEECH.findall(user):
        if not _ACCUSING.search(text):
            continue
        for name in _names(text):
            if name not in (speaker.lower(), t.me) and name not in t.teammates:
                accused.setdefault(name, set()).add(speaker.lower())
    return [
        {
            "player": name,
            "suspicion_delta": 0.1,
            "note": "accused by " + ", ".join(sorted(by)) + " in the meeting",
        }
        for name, by in sorted(accused.items())
    ]


def _planner(t: Told, system: str, user: str, rooms: list[str]) -> dict[str, object]:
    found = _MODULES.search(system)
    allowed = [m.strip() for m in found.group(1).split(",")] if found else []
    if t.impostor:
        busy = "MISSION" if _draw(t.me, t.step, "busy") < 0.75 else "MOVE"
        order = ["REPORT", "KILL", busy, "MISSION", "MOVE"]
    else:
        order = ["REPORT", "MISSION", "MOVE"]
        # A crewmate with evidence, or halfway through its tasks, calls a meeting (when
        # the button is ready), so offline games reach meetings even when no kill lands.
        done = _TASKS_DONE.search(user)
        halfway = bool(done) and int(done.group(1)) * 2 == int(done.group(2))  # type: ignore[union-attr]
        if halfway or t.suspect():
            order.insert(1, "EMERGENCY")
    if t.impostor and "REPORT" in allowed and t.bodies:
        # Self-report or walk away (what the impostor's report question used to decide).
        victim = min(t.bodies, key=t.bodies.__getitem__)
        if not _report(t, f"body of {victim}")["should_report"] and "MOVE" in allowed:
            allowed = [m for m in allowed if m != "REPORT"]
    module = next((m for m in order if m in allowed), allowed[0] if allowed else "MOVE")
    target: object = None
    if module == "MISSION":
        target = _mission(t, system, user)["station"]
    elif module == "MOVE" and rooms:
        move = _move(t, "Rooms: " + ", ".join(rooms) + ".")
        target = move["follow"] or move["room"]
    out: dict[str, object] = {
        "module": module,
        "target": target,
        "reasoning": f"fake: {module.lower()}",
    }
    if t.impostor:
        out["intent"] = {
            "KILL": "kill a crewmate while nobody watches",
            "REPORT": "report the body to look innocent",
            "MOVE": "leave the body behind" if t.bodies else "keep moving to find a target",
        }.get(module, f"look busy: {module.lower()}")
    if '"plan"' in system:
        out["plan"] = "keep going"
    return out


def _kill_scan(t: Told, system: str) -> dict[str, object]:
    target = m.group(1).lower() if (m := _TARGET.search(system)) else ""
    team = set(t.teammates)
    if m := _TEAM.search(system):
        team |= {n.strip().lower() for n in m.group(1).split(",")}
    seen = sorted(t.in_view, key=t.in_view.__getitem__)
    witnesses = [p for p in seen if p != target and p not in team and p not in t.dead]
    return {
        "players_seen": seen,
        "witnesses_visible": bool(witnesses),
        "target_visible": target in seen,
        "detail": f"{', '.join(w.capitalize() for w in witnesses)} could see me"
        if witnesses
        else "nobody but my target can see me",
        "intent": "wait for the witness to leave" if witnesses else f"kill {target} now",
    }


def _report(t: Told, system: str) -> dict[str, object]:
    victim = m.group(1).lower() if (m := re.search(r"body of (\w+)", system)) else ""
    if not t.impostor:
        return {"should_report": True, "reasoning": f"fake: {victim}'s body must be reported"}
    watched = [p for p in t.in_view if p not in t.teammates]
    chance = SELF_REPORT_SEEN if watched else SELF_REPORT
    report = _draw(t.me, t.step, victim, "self-report") < chance
    return {
        "should_report": report,
        "reasoning": "fake: report it as the innocent finder" if report else "fake: walk away",
        "intent": "report the body to look innocent"
        if report
        else "get away from the body before anyone sees me",
    }


def _mission(t: Told, system: str, user: str = "") -> dict[str, object]:
    listed = _STATIONS.search(system)
    stations = [(int(s), r) for s, r in _STATION.findall(listed.group(1))] if listed else []
    if not stations:  # a privileged crewmate's planner: its pending tasks are in the view
        own = _OWN_TASKS.search(user)
        stations = [(int(s), r) for s, r in _STATION.findall(own.group(1))] if own else []
    here = [s for s, r in stations if r == t.room]
    if t.impostor:
        # Half the time a station in this room (seen busy where it is), else anywhere.
        if here and _draw(t.me, t.step, "here") < 0.5:
            station = here[0]
        else:
            pick = _pick([str(s) for s, _ in stations], t.me, t.step, "station")
            station = int(pick) if pick is not None else 0
    else:
        station = here[0] if here else stations[0][0] if stations else 0
    out: dict[str, object] = {"station": station, "objective": "fake task"}
    if t.impostor:
        out["intent"] = "fake a task to look busy"
    return out


def _move(t: Told, system: str) -> dict[str, object]:
    rooms = [r.strip() for r in m.group(1).split(",")] if (m := _ROOMS.search(system)) else []
    elsewhere = [r for r in rooms if r != t.room] or rooms
    room = _pick(elsewhere, t.me, t.step, "room")
    near = sorted((p for p in t.in_view if p not in t.teammates), key=t.in_view.__getitem__)
    follow = None
    if not t.bodies and near and _draw(t.me, t.step, "follow") < 0.5:
        follow = near[0]
    out: dict[str, object] = {
        "room": None if follow else room,
        "follow": follow,
        "reasoning": "fake: get away from the body" if t.bodies else "fake: keep moving",
    }
    if t.impostor:
        out["intent"] = (
            "leave the body behind"
            if t.bodies
            else f"shadow {follow} for a chance to kill"
            if follow
            else "wander to find a target"
        )
    return out


def _crew_meeting(t: Told) -> dict[str, object]:
    suspect = t.suspect()
    if suspect is not None:
        victim = t.reported or next(iter(sorted(t.dead)), None)
        where = f" near {victim.capitalize()}'s body" if victim else " near a body"
        return {
            "response_text": f"I saw {suspect.capitalize()}{where}. {suspect.capitalize()}, "
            "what were you doing there?",
            "suspicion_cast_on": suspect,
            "reasoning": "fake: what I saw",
        }
    accused = sorted(t.accusations().items(), key=lambda kv: (-len(kv[1]), kv[0]))
    if accused and accused[0][0] != t.me:
        who = accused[0][0].capitalize()
        text = f"I did not see it myself. {who}, where were you when it happened?"
    else:
        text = f"I was doing my tasks in {t.room or 'my rooms'} and saw nothing unusual."
    return {"response_text": text, "suspicion_cast_on": None, "reasoning": "fake: no evidence"}


def _impostor_meeting(t: Told) -> dict[str, object]:
    accusations = t.accusations()
    team = {t.me, *t.teammates}
    accusers = sorted({s for n in team for s in accusations.get(n, set()) if s not in team})
    alibi = f"I was doing my tasks in {t.room or 'my rooms'}"
    crew_accused = sorted(
        ((len(s), n) for n, s in accusations.items() if n not in team and n in t.crewmates()),
        reverse=True,
    )
    if accusers:
        who = accusers[0]
        text = f"That is not true; {alibi}. {who.capitalize()} is trying to shift the blame."
        cast: str | None = who
        intent = "turn suspicion back on my accuser"
    elif crew_accused:
        cast = crew_accused[0][1]
        text = f"I agree, {cast.capitalize()} was acting strangely near the body."
        intent = f"let {cast} take the blame"
    elif t.reported and _draw(t.me, t.step, "frame") < 0.5 and t.crewmates():
        cast = _pick(sorted(t.crewmates()), t.me, t.step, "scapegoat")
        where = f" near {t.body_room}" if t.body_room else ""
        text = f"I think I saw {str(cast).capitalize()}{where} before the meeting."
        intent = f"frame {cast}"
    else:
        cast, text, intent = None, f"{alibi} and saw nothing unusual.", "look innocent"
    return {
        "response_text": text,
        "suspicion_cast_on": cast,
        "reasoning": "fake",
        "intent": intent,
    }


def _vote(t: Told) -> dict[str, object]:
    accused = t.accusations()
    if t.impostor:
        crew = set(t.crewmates())
        ranked = sorted(((len(s), n) for n, s in accused.items() if n in crew), reverse=True)
        target = ranked[0][1] if ranked else "skip"
        return {
            "vote_target": target,
            "reasoning": "fake: follow the accusations" if ranked else "fake: nothing clear",
            "intent": f"get {target} ejected" if ranked else "avoid attention",
        }
    suspect = t.suspect()
    if suspect is not None:
        return {"vote_target": suspect, "reasoning": "fake: I saw them near a body"}
    others = sorted(
        ((len(s - {t.me}), n) for n, s in accused.items() if n != t.me and n not in t.dead),
        reverse=True,
    )
    if others and others[0][0] >= BANDWAGON:
        return {"vote_target": others[0][1], "reasoning": "fake: several players accuse them"}
    return {"vote_target": "skip", "reasoning": "fake: nothing points at anyone"}


# ---------------------------------------------------------------------- codegen
_PLAN_ROOM = re.compile(
    r"walk to the room (\w+); its centre is at \(([-\d.]+), ([-\d.]+), ([-\d.]+)\)"
)
_PLAN_FOLLOW = re.compile(r"go after (\w+), (?:who is at \(([-\d.]+), ([-\d.]+), ([-\d.]+)\) now)?")
_PLAN_STATION = re.compile(
    r"task at station (\d+) in (\w+), whose \w+ is at \(([-\d.]+), ([-\d.]+), ([-\d.]+)\)"
)
_STANDING = re.compile(r"You stand at \(([-\d.]+), ([-\d.]+), ([-\d.]+)\)")
BROKEN = 0.05
"""How often the fake's program breaks a rule of the codegen subset (and is refused)."""
_BROKEN_LINES = (
    "  bot.chat('on my way');",
    "  while (bot.entity.position.x < 0) { await bot.waitForTicks(1); }",
    "  const fs = require('fs');",
    "  try { await bot.waitForTicks(5); } catch (e) {}",
    "  bot.on('chat', () => {});",
)


def _num(text: str) -> str:
    """A coordinate as a program writes it."""
    return f"{float(text):g}"


def _codegen(t: Told, system: str) -> str:
    """A reference-style Mineflayer program for the plan the codegen prompt states."""
    coin = _draw(t.me, t.step, "codegen")
    name = "act"
    body: list[str] = []
    said = ""
    if m := _PLAN_STATION.search(system):
        station, room = m.group(1), m.group(2)
        x, y, z = (_num(v) for v in m.group(3, 4, 5))
        name = "doTask"
        said = f"faking the task at station {station} in {room} to look busy"
        if coin < 0.5:
            body = [
                f"  await bot.pathfinder.goto(new GoalNear({x}, {y}, {z}, 1));",
                "  const block = bot.findBlock({",
                "    matching: b => b.name === 'emerald_block',",
                "    maxDistance: 4,",
                "  });",
                "  if (block) {",
                "    bot.activateBlock(bot.blockAt(block.position));",
                "    await bot.waitForTicks(1200);",
                "  }",
            ]
        else:
            body = [
                f"  await bot.pathfinder.goto(new GoalBlock({x}, {float(y) + 1:g}, {z}));",
                f"  bot.activateBlock(bot.blockAt(new Vec3({x}, {y}, {z})));",
                "  await bot.waitForTicks(1200);",
            ]
    elif m := _PLAN_FOLLOW.search(system):
        who = m.group(1)
        name = "shadow" if t.impostor else "stayClose"
        said = f"following {who} to kill it once nobody is watching"
        found = (
            f"  const target = bot.nearestEntity(e => e.type === 'player' && "
            f"e.username === '{who}' && e.position.distanceTo(bot.entity.position) < 120);"
        )
        if m.group(2) is not None and coin < 0.5:
            x, z = _num(m.group(2)), _num(m.group(4))
            body = [
                found,
                "  if (target) {",
                "    await bot.pathfinder.goto(new GoalNear(target.position.x, "
                "target.position.y, target.position.z, 3));",
                "  } else {",
                f"    await bot.pathfinder.goto(new GoalXZ({x}, {z}));",
                "  }",
            ]
        else:
            body = [
                found,
                "  if (!target) {",
                "    await bot.waitForTicks(20);",
                "    return;",
                "  }",
                "  const p = target.position;",
                "  await bot.pathfinder.goto(new GoalNear(p.x, p.y, p.z, 2));",
            ]
    elif m := _PLAN_ROOM.search(system):
        room = m.group(1)
        x, y, z = (_num(v) for v in m.group(2, 3, 4))
        name = "walkTo" + room.title().replace("_", "")
        said = f"walking to {room} to find a crewmate on its own"
        shape = int(coin * 4)
        goal = (
            f"new GoalNear({x}, {y}, {z}, 1)",
            f"new GoalXZ({x}, {z})",
            f"new GoalBlock({x}, {y}, {z})",
            f"new GoalNear({x}, {y}, {z}, 1)",
        )[shape]
        if shape == 3:
            body = [
                "  const here = bot.entity.position;",
                f"  if (here.distanceTo(new Vec3({x}, {y}, {z})) > 2) {{",
                f"    await bot.pathfinder.goto({goal});",
                "  }",
                "  await bot.waitForTicks(20);",
            ]
        else:
            body = [f"  await bot.pathfinder.goto({goal});"]
    else:
        body = ["  await bot.waitForTicks(20);"]
    if t.impostor:
        body.insert(0, f"  console.log('[ARIA_SAY:' + bot.username + '] I am {said}');")
    broken = _draw(t.me, t.step, "codegen-broken")
    if broken < BROKEN:
        if broken < BROKEN / len(_BROKEN_LINES) / 2:
            return ""
        body.append(_BROKEN_LINES[int(broken / BROKEN * len(_BROKEN_LINES))])
    return "\n".join([f"async function {name}(bot) {{", *body, "}", f"await {name}(bot);"])
