"""The LLM judge: two passes per game (non-verbal over actions, verbal over meetings).

Each pass sends the codebook rows of its channel (from `atoms.yaml`), its rules and the
game's rendering (`annotation.deception.render`). The reply's findings are validated against the
game (`annotation.deception.findings.validate_finding`: each quote must be a line its actor owns);
rejected ones are kept with the reason. Replies are cached by (judge model, profile,
prompt hash, game content hash): a re-run with the same judge, prompts and log makes no
call. This is the `grounded` judge profile (`annotation.deception.profiles`); the
authors' instrument is `annotation.deception.reference`.

No call is ever repeated as it was: a reply cut off at its output budget is asked again
with twice the budget (up to the judge's `max_tokens_cap`; a reply cut off there fails
as `truncated`, naming the budget), and a reply that is not the asked-for JSON is asked
again with the reason appended (up to `parse_attempts` tries). A backend failure after
its retries marks the pass `failed` (the game's atoms are then unknown, never zero).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from annotation.deception.codebook import Codebook, codebook
from annotation.deception.findings import CheckedFinding, Finding, JudgeCall, validate_finding
from annotation.deception.render import RENDER_VERSION, Line, nonverbal_lines, text_of, verbal_lines
from annotation.gamelog import Game
from annotation.llm import (
    JudgeCallError,
    JudgeModel,
    JudgeReply,
    ReplyCache,
    count_tokens,
    estimate_cost,
)

PassName = Literal["nonverbal", "verbal"]
PASSES: tuple[PassName, ...] = ("nonverbal", "verbal")
PROMPT_DIR = Path(__file__).with_name("prompts")
PROFILE = "grounded"
JUDGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
"""What a judge's own name may be (`--judge NAME=ADDRESS`): it names a cache folder."""


@dataclass(frozen=True)
class JudgeSpec:
    """One `--judge` value: a name and a backend address."""

    name: str
    """What the judge is called (its findings' source is `judge:NAME`); the address
    unless given."""
    address: str
    """The backend address (`fake`, `openai:MODEL`, `anthropic:MODEL`,
    `openai-compatible:MODEL`)."""

    @property
    def named(self) -> bool:
        """Whether the judge was given a name of its own."""
        return self.name != self.address


def parse_judges(values: Sequence[str], flag: str = "--judge") -> list[JudgeSpec]:
    """Read the `--judge` values: `none` (alone: detectors only), `ADDRESS` or
    `NAME=ADDRESS`.

    Returns:
        The judges in the order given (empty for `none`).

    Raises:
        ValueError: `none` beside a judge, an empty or malformed name or address, or two
            judges with one name (naming the flag and how to tell them apart).
    """
    items = [v.strip() for v in values]
    if any(v.lower() == "none" for v in items):
        if len(items) > 1:
            raise ValueError(f"{flag} none means detectors only; it cannot stand beside a judge")
        return []
    out: list[JudgeSpec] = []
    for item in items:
        name, sep, address = item.partition("=")
        if not sep:
            name = address = item
        name, address = name.strip(), address.strip()
        if not address:
            raise ValueError(f"{flag} {item!r}: no backend address (use NAME=ADDRESS)")
        if sep and not JUDGE_NAME.match(name):
            raise ValueError(
                f"{flag} {item!r}: a judge's name is letters, digits, '.', '_' or '-' "
                "(e.g. j1=openai:gpt-4.1-mini)"
            )
        if sep and name.lower() in ("none", "panel", "detector"):
            raise ValueError(f"{flag} {item!r}: {name!r} is reserved; choose another name")
        out.append(JudgeSpec(name=name, address=address))
    names = [j.name for j in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(
            f"{flag}: two judges are called {', '.join(twice)}; tell them apart with "
            f"NAME=ADDRESS (e.g. {flag} j1={out[0].address} {flag} j2={out[0].address})"
        )
    return out


@dataclass(frozen=True)
class NamedJudge:
    """A judge model with the name its findings carry (`judge:NAME`)."""

    name: str
    model: JudgeModel

    @property
    def address(self) -> str:
        """The backend address."""
        return self.model.address

    @property
    def source(self) -> str:
        """Its findings' source, `judge:NAME`."""
        return f"judge:{self.name}"

    @property
    def named(self) -> bool:
        """Whether it has a name of its own (else its name is its address)."""
        return self.name != self.address


def as_judges(
    judge: JudgeModel | NamedJudge | Iterable[JudgeModel | NamedJudge] | None,
) -> list[NamedJudge]:
    """One or several judges as named judges (a bare model is named by its address).

    Raises:
        ValueError: Two judges with one name.
    """
    if judge is None:
        return []
    given = [judge] if isinstance(judge, (JudgeModel, NamedJudge)) else list(judge)
    out = [j if isinstance(j, NamedJudge) else NamedJudge(j.address, j) for j in given]
    names = [j.name for j in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"two judges are called {', '.join(twice)}; give each its own name")
    return out


def _template(name: str) -> str:
    return (PROMPT_DIR / f"{name}.txt").read_text(encoding="utf-8")


@dataclass(frozen=True)
class PassPrompt:
    """One pass's prompt for one game."""

    pass_: PassName
    system: str
    user: str
    rendered: str
    prompt_sha256: str
    """Hash of everything but the game: system text, template, codebook rows, render version."""
    lines: tuple[Line, ...] = ()
    """The rendering's lines with their owners (what a quote is checked against)."""


def build_prompt(game: Game, pass_: PassName, book: Codebook | None = None) -> PassPrompt:
    """The system and user text of one pass for one game."""
    book = book or codebook()
    system = _template("judge_system")
    template = _template(f"judge_{pass_}")
    table = book.table(book.letters_of(pass_))
    fixed = "\n".join([system, template, table, f"render v{RENDER_VERSION}"])
    prompt_hash = hashlib.sha256(fixed.encode("utf-8")).hexdigest()
    lines = nonverbal_lines(game) if pass_ == "nonverbal" else verbal_lines(game)
    rendered = text_of(lines)
    user = (
        template.replace("{codebook}", table)
        .replace("{impostors}", ", ".join(game.impostors))
        .replace("{log}", rendered.rstrip("\n"))
    )
    return PassPrompt(
        pass_=pass_,
        system=system,
        user=user,
        rendered=rendered,
        prompt_sha256=prompt_hash,
        lines=tuple(lines),
    )


@dataclass
class JudgeResult:
    """One game's judge output."""

    status: Literal["ok", "failed"]
    findings: list[CheckedFinding] = field(default_factory=list)
    calls: list[JudgeCall] = field(default_factory=list)
    transcripts: dict[str, str] = field(default_factory=dict)
    """What each pass read, by pass (`nonverbal`, `verbal`)."""


@dataclass
class Spend:
    """What one pass's replies cost, summed over its tries."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False
    """A reply had no price: the cost is unknown, not lower."""
    attempts: int = 0
    latency_ms: float = 0.0
    truncated: bool = False

    def add(self, reply: JudgeReply) -> None:
        """Count one reply."""
        self.tokens_in += reply.tokens_in
        self.tokens_out += reply.tokens_out
        if reply.cost_usd is None:
            self.unpriced = True
        else:
            self.cost_usd += reply.cost_usd
        self.attempts += reply.attempts
        self.latency_ms += reply.latency_ms
        self.truncated = self.truncated or reply.truncated

    def call(
        self,
        pass_: str,
        model: str,
        ok: bool,
        prompt_sha256: str,
        max_tokens: int,
        profile: str,
        error_class: str = "",
        error: str = "",
    ) -> JudgeCall:
        """The pass's accounting record."""
        return JudgeCall(
            pass_=pass_,
            model=model,
            status="ok" if ok else "failed",
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            cost_usd=None if self.unpriced else self.cost_usd,
            attempts=self.attempts,
            latency_ms=self.latency_ms,
            error_class=error_class,
            error=error,
            prompt_sha256=prompt_sha256,
            max_tokens=max_tokens,
            truncated=self.truncated,
            profile=profile,
        )

    def cache_entry(self, text: str, model: str, pass_: str, profile: str) -> dict[str, Any]:
        """What the reply cache keeps of a readable reply."""
        return {
            "text": text,
            "model": model,
            "pass": pass_,
            "profile": profile,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": self.cost_usd,
        }


@dataclass
class JudgeTally:
    """One judge's spend over a run, summed from its calls: what `annotate` prints per
    judge (and, summed over judges, in its progress line)."""

    calls: int = 0
    cached_calls: int = 0
    tokens_in: int = 0
    """Input tokens of the new calls (a cached pass costs nothing and counts 0)."""
    tokens_out: int = 0
    cost_usd: float = 0.0
    """Cost of the priced new calls; see `unpriced_calls`."""
    unpriced_calls: int = 0

    def add(self, call: JudgeCall) -> None:
        """Count one pass's accounting record."""
        self.calls += 1
        self.cached_calls += int(call.cached)
        if call.cached:
            return
        self.tokens_in += call.tokens_in
        self.tokens_out += call.tokens_out
        if call.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += call.cost_usd

    @property
    def spend_usd(self) -> float | None:
        """What the new calls cost; None (unknown, never 0) when a call had no price."""
        return None if self.unpriced_calls else self.cost_usd

    def as_dict(self) -> dict[str, Any]:
        """The tally as plain values (cost rounded to 1e-6 dollars; None when unknown)."""
        spend = self.spend_usd
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": None if spend is None else round(spend, 6),
            "unpriced_calls": self.unpriced_calls,
        }


def cached_call(
    stored: dict[str, Any],
    pass_: str,
    model: str,
    prompt_sha256: str,
    max_tokens: int,
    profile: str,
) -> JudgeCall:
    """The accounting record of a pass answered from the cache (no new spend)."""
    return JudgeCall(
        pass_=pass_,
        model=model,
        status="ok",
        cached=True,
        tokens_in=int(stored.get("tokens_in", 0)),
        tokens_out=int(stored.get("tokens_out", 0)),
        cost_usd=0.0,
        prompt_sha256=prompt_sha256,
        max_tokens=max_tokens,
        profile=profile,
    )


class ReplyFormatError(ValueError):
    """The judge's reply is not a JSON object with a `findings` list."""


def parse_reply(text: str) -> list[Any]:
    """The `findings` list of a reply (a code fence around the JSON is tolerated).

    Raises:
        ReplyFormatError: Not JSON, not an object, or no `findings` list.
    """
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[body.find("{") :] if "{" in body else body
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ReplyFormatError(f"reply is not JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise ReplyFormatError("reply is not an object with a `findings` list")
    findings: list[Any] = data["findings"]
    return findings


def check_items(
    items: list[Any], game: Game, prompt: PassPrompt, source: str, book: Codebook
) -> list[CheckedFinding]:
    """Turn a reply's items into checked findings (malformed items are kept, rejected)."""
    out: list[CheckedFinding] = []
    seen: set[tuple[Any, ...]] = set()
    allowed = set(book.letters_of(prompt.pass_))
    for item in items:
        if not isinstance(item, dict):
            bad = Finding(
                atom="?", step=None, actor="?", evidence=json.dumps(item)[:200], source=source
            )
            out.append(_rejected(bad, "malformed finding"))
            continue
        step = item.get("step")
        try:
            step_n = int(step) if step is not None else None
        except (TypeError, ValueError):
            step_n = None
        atom = str(item.get("atom", "")).strip().upper()
        f = Finding(
            atom=atom,
            step=step_n,
            actor=str(item.get("actor", "")).strip().lower(),
            evidence=str(item.get("evidence") or item.get("evidence_quote") or ""),
            source=source,
            target=(str(item["target"]).lower() if item.get("target") else None),
            rationale=str(item.get("rationale", "")),
            pass_=prompt.pass_,
        )
        if atom in book.letters and atom not in allowed:
            why = f"atom {atom} is not a {prompt.pass_} atom (asked in the other pass)"
            out.append(_rejected(f, why))
            continue
        checked = validate_finding(f, game, lines=prompt.lines, book=book)
        key = (f.atom, f.step, f.actor)
        if checked.accepted and prompt.pass_ == "nonverbal" and key in seen:
            why = "duplicate (one per step, actor and atom)"
            checked = checked.model_copy(
                update={"accepted": False, "reason": why, "filter_ok": False, "filter_reason": why}
            )
        seen.add(key)
        out.append(checked)
    return out


def _rejected(finding: Finding, why: str) -> CheckedFinding:
    return CheckedFinding(
        finding=finding, accepted=False, reason=why, filter_ok=False, filter_reason=why
    )


def cache_key(address: str, prompt: PassPrompt, game: Game) -> str:
    """A pass's reply's cache key (the profile is part of it)."""
    return ReplyCache.key(address, f"profile={PROFILE}", prompt.prompt_sha256, game.content_sha256)


async def judge_game(
    game: Game,
    model: JudgeModel,
    cache: ReplyCache | None,
    *,
    parse_attempts: int = 2,
    book: Codebook | None = None,
) -> JudgeResult:
    """Both passes over one game.

    Args:
        game: The game.
        model: The judge.
        cache: Where replies are cached (None: no cache).
        parse_attempts: Tries per pass while the reply is not the asked-for JSON.
        book: The codebook.
    """
    book = book or codebook()
    source = f"judge:{model.address}"
    result = JudgeResult(status="ok")
    for pass_ in PASSES:
        prompt = build_prompt(game, pass_, book)
        result.transcripts[pass_] = prompt.rendered
        if pass_ == "verbal" and not game.meetings:
            continue  # nothing was said: no call, no findings
        key = cache_key(model.address, prompt, game)
        stored = cache.get(key) if cache else None
        if stored is not None:
            items = parse_reply(stored["text"])
            result.findings.extend(check_items(items, game, prompt, source, book))
            result.calls.append(
                cached_call(stored, pass_, model.address, prompt.prompt_sha256, 0, PROFILE)
            )
            continue
        spend = Spend()
        error_class = error = ""
        items_ok: list[Any] | None = None
        text = ""
        budget = model.max_tokens
        note = ""
        tries = 0
        while True:
            try:
                reply = await model.complete(prompt.system, prompt.user + note, max_tokens=budget)
            except JudgeCallError as exc:
                error_class, error = exc.error_class, str(exc)
                break
            spend.add(reply)
            text = reply.text
            if reply.truncated:
                if budget < model.max_tokens_cap:
                    budget = min(2 * budget, model.max_tokens_cap)  # a larger budget
                    continue
                error_class = "truncated"
                error = (
                    f"the {pass_} reply was cut off at {budget} output tokens, the judge's "
                    "cap; raise --max-tokens or use a judge with a larger output limit"
                )
                break
            try:
                items_ok = parse_reply(text)
                error_class = error = ""
                break
            except ReplyFormatError as exc:
                error_class, error = "bad_reply", str(exc)
            tries += 1
            if tries >= max(1, parse_attempts):
                break
            # Asked again with the reason, never as it was (temperature 0 would repeat it).
            note = (
                f"\n\nYour previous answer (try {tries}) could not be read: {error}. "
                'Answer again with only the JSON object {"findings": [...]}.'
            )
        result.calls.append(
            spend.call(
                pass_,
                model.address,
                items_ok is not None,
                prompt.prompt_sha256,
                budget,
                PROFILE,
                error_class,
                error,
            )
        )
        if items_ok is None:
            result.status = "failed"
            continue
        if cache is not None:
            cache.put(key, spend.cache_entry(text, model.address, pass_, PROFILE))
        result.findings.extend(check_items(items_ok, game, prompt, source, book))
    return result


@dataclass(frozen=True)
class Estimate:
    """A dry run's estimate for one game."""

    game_id: str
    calls: int
    cached: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None


def estimate_game(
    game: Game,
    address: str,
    cache: ReplyCache | None,
    *,
    expected_out: int = 2000,
    book: Codebook | None = None,
) -> Estimate:
    """Tokens and list-price cost the judge would spend on a game (cached passes cost 0)."""
    calls = cached = tin = tout = 0
    for pass_ in PASSES:
        if pass_ == "verbal" and not game.meetings:
            continue
        prompt = build_prompt(game, pass_, book)
        if cache is not None and cache.get(cache_key(address, prompt, game)) is not None:
            cached += 1
            continue
        calls += 1
        tin += count_tokens(prompt.system + prompt.user, address)
        tout += expected_out
    cost = estimate_cost(address, tin, tout)
    return Estimate(game.game_id, calls, cached, tin, tout, cost)
