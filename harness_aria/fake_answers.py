"""Deterministic, valid answers to every ARIA prompt, for the `fake` backend.

With `--crew fake` / `--impostor fake` a whole ARIA game runs offline: this
responder reads the request (allowed modules, station list, roster) and answers
in each module's JSON format with a plausible, rule-abiding choice.
"""

from __future__ import annotations

import json
import re

from harness_aria.backends.base import ModelRequest

_MODULES = re.compile(r"Modules you may choose: ([A-Z, ]+)\.")
_STATIONS = re.compile(r"Stations you may use: (\d+)")
_ROOMS = re.compile(r"Rooms: ([a-z0-9_]+)")
_TASKS_DONE = re.compile(r"Your tasks done: (\d+)/(\d+)")


def _system(request: ModelRequest) -> str:
    # The call's own system text is the last one; a shared prefix (rules, map, formats)
    # may come first and mentions every module, so it must not steer the answer.
    systems = [m.text for m in request.messages if m.role == "system"]
    return systems[-1] if systems else ""


# A phrase of each template that tells which module is asking (for requests that
# arrive over HTTP, where the purpose is not sent).
_PURPOSE_MARKERS = (
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
)


def infer_purpose(system: str) -> str:
    """Which ARIA prompt a system text belongs to ('' if none)."""
    return next((purpose for marker, purpose in _PURPOSE_MARKERS if marker in system), "")


def answer(request: ModelRequest) -> str:
    """A valid JSON answer for the request's purpose."""
    system = _system(request)
    user = "\n".join(m.text for m in request.messages if m.role == "user")
    return answer_for(request.purpose or infer_purpose(system), system, user)


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
    # The last system text is the call's own (see `_system`).
    own = texts[-1] if texts else ""
    return answer_for(infer_purpose(own), own, "\n".join(users))


def answer_for(purpose: str, system: str, user: str = "") -> str:
    """A valid JSON answer to an ARIA prompt of the given purpose."""
    impostor = "Your role: impostor" in system
    out: dict[str, object]
    if purpose == "planner":
        found = _MODULES.search(system)
        allowed = [m.strip() for m in found.group(1).split(",")] if found else []
        order = ["REPORT", "KILL", "MISSION", "MOVE"] if impostor else ["REPORT", "MISSION", "MOVE"]
        # A crewmate halfway through its tasks calls a meeting (when the button is ready),
        # so offline games reach meetings even when no kill lands.
        done = _TASKS_DONE.search(user)
        if not impostor and done and int(done.group(1)) * 2 == int(done.group(2)):
            order.insert(1, "EMERGENCY")
        module = next((m for m in order if m in allowed), allowed[0] if allowed else "MOVE")
        out = {"module": module, "target": None, "reasoning": f"fake: {module.lower()}"}
        if impostor:
            out["intent"] = f"fake impostor intent: {module.lower()}"
        if '"plan"' in system:
            out["plan"] = "keep going"
    elif purpose == "planner_long":
        out = {
            "strategy": "do tasks and stay with others",
            "priority_target": None,
            "reasoning": "fake",
        }
    elif purpose == "kill_scan":
        out = {
            "players_seen": [],
            "witnesses_visible": False,
            "target_visible": True,
            "detail": "fake scan",
            "intent": "kill while nobody watches",
        }
    elif purpose == "report":
        out = {
            "should_report": not impostor,
            "reasoning": "fake",
            "intent": "walk away from the body",
        }
    elif purpose == "emergency":
        out = {"should_call": not impostor, "reasoning": "fake: tasks done, let us talk"}
    elif purpose == "surveillance":
        out = {"players_seen": [], "detail": "nothing unusual", "suspect": None}
    elif purpose == "mission":
        station = _STATIONS.search(system)
        out = {"station": int(station.group(1)) if station else 0, "objective": "fake task"}
        if impostor:
            out["intent"] = "fake a task to look busy"
    elif purpose == "move":
        room = _ROOMS.search(system)
        out = {"room": room.group(1) if room else None, "follow": None, "reasoning": "fake"}
        if impostor:
            out["intent"] = "wander to find a target"
    elif purpose == "meeting":
        out = {
            "response_text": "I was doing my tasks and saw nothing unusual.",
            "suspicion_cast_on": None,
            "reasoning": "fake",
        }
        if impostor:
            out["intent"] = "look innocent"
    elif purpose == "vote":
        out = {"vote_target": "skip", "reasoning": "fake"}
        if impostor:
            out["intent"] = "avoid attention"
    elif purpose == "reflection":
        out = {
            "insights": "fake reflection",
            "suspicion_deltas": {},
            "skill": {"situation": "a meeting", "behavior": "stay calm", "outcome": "fine"},
        }
    else:
        out = {"reasoning": "fake"}
    return json.dumps(out)
