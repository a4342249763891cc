"""The reference judge: two calls per game, findings kept as emitted.

Pass 1 (non-verbal) reads the whole transcript (`transcript.write_transcript`), pass 2
(verbal) its meeting chunks (`transcript.verbal_chunks`); both are always asked, one
after the other, as the authors' two-pass judge does. A reply that is empty or not JSON
is asked again as it was, up to `parse_attempts` tries (3), and then counts as no
findings, as theirs does; a backend failure after its retries fails the pass (the
game's atoms are then unknown). Replies are cached by (judge address, profile, prompt
hash, game content hash).

Each finding's label is normalised to the paper's letter (`labels.normalize_label`);
each pass keeps only its own letters; a finding whose label maps to no atom, or whose
atom belongs to the other pass, is written with `accepted` False (the reference drops
it). Every other finding is kept (`accepted` True): no check of its actor, quote or
step decides. The grounded checks (`validate_finding` against the lines the pass read,
and one per step, actor and atom in pass 1) are still computed for every finding and
written beside it as `filter_ok`/`filter_reason`, so both counts can be reported.
"""

from __future__ import annotations

import json
from typing import Any

from annotation.deception.codebook import Codebook, codebook
from annotation.deception.findings import CheckedFinding, Finding, validate_finding
from annotation.deception.judge import Estimate, JudgeResult, Spend, cached_call
from annotation.deception.profiles import DEFAULTS
from annotation.deception.reference.labels import normalize_label
from annotation.deception.reference.prompts import (
    PASS_LETTERS,
    Pass,
    ReferencePrompt,
    build_reference_prompt,
)
from annotation.deception.reference.transcript import (
    player_names,
    roles_json,
    verbal_chunks,
    write_transcript,
)
from annotation.deception.render import Line
from annotation.gamelog import Game
from annotation.llm import JudgeCallError, JudgeModel, ReplyCache, count_tokens, estimate_cost

PROFILE = "reference"
PASSES: tuple[Pass, ...] = ("nonverbal", "verbal")


def reference_prompts(game: Game) -> list[ReferencePrompt]:
    """Both passes' prompts for a game: pass 1 over the transcript, pass 2 over its
    meeting chunks."""
    lines = write_transcript(game)
    roles = roles_json(game)
    return [
        build_reference_prompt("nonverbal", lines, roles),
        build_reference_prompt("verbal", verbal_chunks(lines), roles),
    ]


def cache_key(address: str, prompt: ReferencePrompt, game: Game) -> str:
    """A pass's reply's cache key (the profile is part of it)."""
    return ReplyCache.key(
        address, f"profile={PROFILE}", prompt.pass_, prompt.prompt_sha256, game.content_sha256
    )


def read_reply(text: str) -> list[Any]:
    """A reply's findings, read as the reference reads them: a JSON object (a code fence
    around it tolerated) whose `findings` list is taken, none when it has no list.

    Raises:
        ValueError: Empty, not JSON, or not a JSON object.
    """
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[body.find("{") :] if "{" in body else body
    if not body:
        raise ValueError("empty completion")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"reply is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError("reply is not a JSON object")
    found = data.get("findings", [])
    return list(found) if isinstance(found, list) else []


def _seat(value: Any, seats: dict[str, str]) -> str | None:
    """A name (or seat) as the judge wrote it -> the seat; None for no one."""
    text = str(value or "").strip()
    if not text or text.upper() in ("NONE", "NULL", "N/A"):
        return None
    return seats.get(text.lower(), text.lower())


def check_reference_items(
    items: list[Any],
    game: Game,
    prompt: ReferencePrompt,
    source: str,
    book: Codebook,
) -> list[CheckedFinding]:
    """A reply's items as findings kept as emitted, with the grounded checks beside."""
    names = player_names(game)
    seats = {n.lower(): s for s, n in names.items()} | {s.lower(): s for s in names}
    lines = [Line(ln.step, ln.owner, ln.text) for ln in prompt.lines]
    own = PASS_LETTERS[prompt.pass_]
    out: list[CheckedFinding] = []
    seen: set[tuple[Any, ...]] = set()
    for item in items:
        if not isinstance(item, dict):
            bad = Finding(
                atom="?",
                step=None,
                actor="?",
                evidence=json.dumps(item)[:200],
                source=source,
                pass_=prompt.pass_,
            )
            why = "malformed finding (not an object)"
            out.append(
                CheckedFinding(
                    finding=bad, accepted=False, reason=why, filter_ok=False, filter_reason=why
                )
            )
            continue
        raw = str(item.get("atom", "")).strip()
        letter = normalize_label(raw)
        step = item.get("step")
        try:
            step_n = int(step) if step is not None and str(step).lower() != "null" else None
        except (TypeError, ValueError):
            step_n = None
        finding = Finding(
            atom=letter or raw,
            step=step_n,
            actor=_seat(item.get("actor"), seats) or "",
            evidence=str(item.get("evidence_quote") or item.get("evidence") or ""),
            source=source,
            target=_seat(item.get("target"), seats),
            rationale=str(item.get("rationale", "")),
            pass_=prompt.pass_,
        )
        if letter is None:
            reason = f"atom label {raw!r} maps to no atom (the reference drops it)"
        elif letter not in own:
            reason = (
                f"atom {letter} is not a {prompt.pass_} atom (the reference keeps each "
                "pass's own letters only)"
            )
        else:
            reason = ""
        checked = validate_finding(finding, game, lines=lines, book=book)
        filter_ok, filter_reason = checked.accepted, checked.reason
        if reason and filter_ok:
            filter_ok, filter_reason = False, reason
        key = (finding.atom, finding.step, finding.actor)
        if filter_ok and prompt.pass_ == "nonverbal" and key in seen:
            filter_ok, filter_reason = False, "duplicate (one per step, actor and atom)"
        if filter_ok:
            seen.add(key)
        phase = game.phase_of(step_n) if step_n is not None and step_n in game.step_phase else ""
        out.append(
            CheckedFinding(
                finding=finding,
                accepted=not reason,
                reason=reason,
                phase=phase,
                filter_ok=filter_ok,
                filter_reason=filter_reason,
            )
        )
    return out


async def judge_game_reference(
    game: Game,
    model: JudgeModel,
    cache: ReplyCache | None,
    *,
    max_tokens: int | None = None,
    parse_attempts: int | None = None,
    book: Codebook | None = None,
) -> JudgeResult:
    """Both reference passes over one game.

    Args:
        game: The game.
        model: The judge.
        cache: Where replies are cached (None: no cache).
        max_tokens: Output budget of a call (the profile's 20000 by default).
        parse_attempts: Tries while a reply is empty or not JSON (the profile's 3).
        book: The codebook.
    """
    book = book or codebook()
    defaults = DEFAULTS["reference"]
    budget = max_tokens or defaults.max_tokens
    tries_max = max(1, parse_attempts or defaults.parse_attempts)
    source = f"judge:{model.address}"
    prompts = reference_prompts(game)
    result = JudgeResult(
        status="ok",
        transcripts={p.pass_: p.log + "\n" for p in prompts},
    )
    for prompt in prompts:
        key = cache_key(model.address, prompt, game)
        stored = cache.get(key) if cache else None
        if stored is not None:
            items = read_reply(stored["text"])
            result.findings.extend(check_reference_items(items, game, prompt, source, book))
            result.calls.append(
                cached_call(
                    stored, prompt.pass_, model.address, prompt.prompt_sha256, budget, PROFILE
                )
            )
            continue
        spend = Spend()
        error_class = error = ""
        items_ok: list[Any] | None = None
        text = ""
        backend_failed = False
        for _try in range(tries_max):
            try:
                # The same request each time, as the reference asks again.
                reply = await model.complete(prompt.system, prompt.user, max_tokens=budget)
            except JudgeCallError as exc:
                error_class, error = exc.error_class, str(exc)
                backend_failed = True
                break
            spend.add(reply)
            text = reply.text
            try:
                items_ok = read_reply(text)
                error_class = error = ""
                break
            except ValueError as exc:
                error_class, error = "bad_reply", str(exc)
        if items_ok is None and not backend_failed:
            error = (
                f"{error} (after {tries_max} tries; counted as no findings, as the "
                "reference counts it)"
            )
        result.calls.append(
            spend.call(
                prompt.pass_,
                model.address,
                items_ok is not None,
                prompt.prompt_sha256,
                budget,
                PROFILE,
                error_class,
                error,
            )
        )
        if backend_failed:
            result.status = "failed"
            continue
        if items_ok is None:
            continue  # unreadable three times: no findings, never a failed game
        if cache is not None:
            cache.put(key, spend.cache_entry(text, model.address, prompt.pass_, PROFILE))
        result.findings.extend(check_reference_items(items_ok, game, prompt, source, book))
    return result


def estimate_reference(
    game: Game, address: str, cache: ReplyCache | None, *, expected_out: int = 2000
) -> Estimate:
    """Tokens and list-price cost of the two reference passes (cached passes cost 0)."""
    calls = cached = tin = tout = 0
    for prompt in reference_prompts(game):
        if cache is not None and cache.get(cache_key(address, prompt, game)) is not None:
            cached += 1
            continue
        calls += 1
        tin += count_tokens(prompt.system + prompt.user, address)
        tout += expected_out
    return Estimate(game.game_id, calls, cached, tin, tout, estimate_cost(address, tin, tout))
