"""The model's belief update of semantic memory (`AriaSpec.belief_update: llm`).

The reference's "semantic + LLM" memory asks a model, with the last 20 events and the
current beliefs, for per-player suspicion changes within ±0.3 and a note each
(`mineland/aria/memory/semantic_memory.py`); during meetings it runs after reflection, on
the meeting's chat. Here it runs once a meeting has ended, after the reflector (with
reflection on or off), on the events the memory kept: the game's messages, that is the
meeting's chat and the server's lines about it. This game sends no messages in free
roam (the kill's readiness and an agent's own tasks are on its screen, not in chat), so
the reference's free-roam updates, which its server's messages trigger, have no
counterpart here.

The call is its own purpose (`belief_update`, budget 0.2/256) in the side's `talk`
prefix group; its user text is who the agent is (with its part of the personal message),
its beliefs and the events, then the question. The answer,
`{"updates": [{"player", "suspicion_delta", "note"}]}`, is read like every other
(`harness_aria.parsing.AnswerReader`), each liberty noted on the call's `normalised`: a
player matched leniently (`"Yellow."` -> `yellow`); a delta written as text read as its
number; a delta outside ±`MAX_DELTA` clamped (noted; the reference leaves it to the 0-1
clamp of the score); `delta` for `suspicion_delta` (noted). An update naming no seat, or
the agent itself, a delta that is no finite number, a second update for a player and an
entry of the wrong shape are refused, each noted as `dropped` with the reason. A failed
call (infrastructure or an unreadable answer) changes no belief; its record says why.
Either way the events read are forgotten, as the reference clears them.
"""

from __future__ import annotations

from harness_aria.calls import ask, setup_of
from harness_aria.memory.semantic import SemanticMemory
from harness_aria.modules.registry import is_ghost
from harness_aria.parsing import AnswerReader, finite_number
from harness_aria.toolkit import Toolkit, budget, register_budgets

PURPOSE = "belief_update"
MAX_DELTA = 0.3
KEY = "updates"

register_budgets("memory 'semantic' (belief_update: llm)", {PURPOSE: (0.2, 256)})


def updates_beliefs(tk: Toolkit) -> bool:
    """Whether the agent's memory takes the model's belief updates."""
    memory = tk.memory
    return isinstance(memory, SemanticMemory) and memory.belief_update == "llm"


async def update_beliefs(tk: Toolkit) -> None:
    """Ask the model to update the beliefs from the events kept, and apply its answer.

    Nothing is asked without events (the reference calls only with events pending),
    when the memory does not take model updates, or for a ghost (out of play, it has no
    meeting turn and no ballot; the reference's ghosts only do their tasks). The call's
    record goes onto the decision's calls.
    """
    memory = tk.memory
    if not isinstance(memory, SemanticMemory) or memory.belief_update != "llm":
        return
    if is_ghost(tk.obs):
        memory.clear_events()
        return
    events = memory.events_text()
    if not events:
        return
    memory.clear_events()
    prompt = tk.prompt(PURPOSE)
    # who the agent is and its part of the personal message (the view head's opening
    # lines), then its beliefs and the events, as the reference's update reads them
    identity = "\n".join(
        line
        for line in tk.view_head.splitlines()
        if line.startswith(("You are ", "Your assigned tasks"))
    )
    user = "\n\n".join(t for t in (identity, memory.beliefs_text(), events) if t)
    temperature, max_tokens = budget(PURPOSE)
    record = await ask(
        tk.backend,
        purpose=PURPOSE,
        system=tk.persona.strip(),
        user=user,
        question=prompt.render().strip(),
        prompts=[prompt],
        max_tokens=max_tokens,
        temperature=temperature,
        cache_key=setup_of(tk.backend).cache_key(tk.obs.agent),
    )
    tk.calls.append(record)
    if record.parsed is None:
        return
    read = AnswerReader(record.parsed, record.normalised)
    players = [p for p in tk.obs.players if p != tk.obs.agent]
    for who, delta, note in read_updates(read, players, tk.obs.agent):
        memory.adjust(who, delta, f"belief update: {note}" if note else "belief update")


def read_updates(read: AnswerReader, players: list[str], me: str) -> list[tuple[str, float, str]]:
    """The answer's updates as (player, delta, note), read and noted as the module
    docstring describes.

    Args:
        read: The answer's reader (its notes go onto the call's record).
        players: The seats an update may name (every other player).
        me: The agent (an update of itself is refused).

    Returns:
        The usable updates, in the answer's order.
    """
    raw = read.answer.get(KEY)
    if raw is None:
        return []
    if not isinstance(raw, list):
        read.dropped(KEY, raw, "not a list of {player, suspicion_delta, note}")
        return []
    out: list[tuple[str, float, str]] = []
    named: set[str] = set()
    for i, entry in enumerate(raw):
        field = f"{KEY}[{i}]"
        if not isinstance(entry, dict):
            read.dropped(field, entry, "not an object of player, suspicion_delta, note")
            continue
        name = entry.get("player")
        who = (
            AnswerReader({"player": name}).choice("player", players)
            if isinstance(name, str)
            else None
        )
        if who is None:
            mine = isinstance(name, str) and AnswerReader({"p": name}).choice("p", [me])
            read.dropped(f"{field}.player", name, "the agent itself" if mine else "not a player")
            continue
        if who != name:
            read.note(f"{field}.player", name, who)
        if who in named:
            read.dropped(field, entry, "a second update for the same player")
            continue
        if "suspicion_delta" in entry:
            value = entry["suspicion_delta"]
        elif "delta" in entry:
            value = entry["delta"]
            read.note(f"{field}", "delta", "suspicion_delta")
        else:
            value = None
        number = finite_number(value)
        if number is None:
            read.dropped(f"{field}.suspicion_delta", value, "not a number")
            continue
        if not (isinstance(value, int | float) and not isinstance(value, bool)):
            read.note(f"{field}.suspicion_delta", value, number)
        clamped = max(-MAX_DELTA, min(MAX_DELTA, number))
        if clamped != number:
            read.note(f"{field}.suspicion_delta", number, f"{clamped} (clamped to ±{MAX_DELTA})")
        note = entry.get("note")
        text = note.strip() if isinstance(note, str) else ""
        if note is not None and not isinstance(note, str):
            read.dropped(f"{field}.note", note, "not text")
        named.add(who)
        out.append((who, clamped, text))
    return out
