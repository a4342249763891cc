"""Input tokens of ARIA per decision and per game, the share a provider can cache, and the
size of the game's prompt record.

Two measurements, both on the fake world with the default ablation spec on both sides:

1. **Fake backend** (no network): tokens are the fake's estimate (a quarter of the
   characters of everything sent). The cacheable share is the shared prefix's part of the
   input (the same text opens every call of a side).
2. **Real SDKs against the local mock API** (`harness_aria/testing/mock_api.py`, 127.0.0.1
   only): the crew on `openai:gpt-4.1-mini`, the impostors on `anthropic:claude-haiku-4-5`,
   answered by the offline responder. The mock reports cached tokens the way each API does
   (OpenAI: automatic, from 1024 tokens in 128-token steps; Anthropic: the block marked
   `cache_control`, from the model's minimum), so the cached share is what the record says.

Run from the repository root: python -m benchmarks.aria_tokens [--seed 2] [--max-steps 40]
[--skip-mock] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import harness_aria.registration  # noqa: F401  (registers the `aria` agent kind)
from controller.cli import play_game
from controller.config import resolve_config
from controller.events import Decision, read_events
from harness_aria.fake_answers import answer_http
from harness_aria.prompts import estimate_tokens
from harness_aria.testing.mock_api import MockAPIServer, RecordedRequest
from world.spec import load_map


def _play(out: Path, seed: int, max_steps: int, crew: dict[str, Any], imp: dict[str, Any]) -> None:
    config = resolve_config(
        "quick",
        overrides={
            "seed": seed,
            "frames": "off",
            "rules": {"max_steps": max_steps},
            "crew": crew,
            "impostor": imp,
        },
    )
    started = time.perf_counter()
    result = play_game(config, load_map("skeld"), "fake", out)
    print(
        f"  played seed {seed}: {result.status} {result.ending or ''} in {result.steps} steps "
        f"({time.perf_counter() - started:.1f} s)",
        file=sys.stderr,
    )


def _figures(out: Path, label: str) -> None:
    roles = json.loads((out / "summary.json").read_text())["roles"]
    prompts = out / "prompts"
    prefix_tokens: dict[str, int] = {}
    per_decision: list[int] = []
    by_side: dict[str, dict[str, int]] = {}
    total_in = total_prefix = 0
    for d in read_events(out / "events.jsonl"):
        if not isinstance(d, Decision) or not d.calls:
            continue
        side = "crew" if roles[d.agent] == "crewmate" else "impostors"
        acc = by_side.setdefault(side, {"in": 0, "cached": 0, "calls": 0})
        tokens = 0
        for call in d.calls:
            tokens += int(call.get("tokens_in", 0))
            acc["in"] += int(call.get("tokens_in", 0))
            acc["cached"] += int(call.get("tokens_cached", 0))
            acc["calls"] += 1
            sha = (call.get("sent") or {}).get("prefix_sha256")
            if sha:
                if sha not in prefix_tokens:
                    prefix_tokens[sha] = estimate_tokens((prompts / f"{sha}.txt").read_text())
                total_prefix += prefix_tokens[sha]
        total_in += tokens
        per_decision.append(tokens)
    size = sum(p.stat().st_size for p in prompts.glob("*.txt"))
    files = len(list(prompts.glob("*.txt")))
    print(f"{label}:")
    print(
        f"  decisions with model calls: {len(per_decision)}; mean input tokens per decision: "
        f"{statistics.mean(per_decision):.0f} (median {statistics.median(per_decision):.0f})"
    )
    print(f"  input tokens per game: {total_in}")
    print(f"  shared prefix: {max(prefix_tokens.values(), default=0)} tokens (estimated)")
    print(f"  share cacheable (shared prefix / input): {total_prefix / max(1, total_in):.1%}")
    for side, acc in sorted(by_side.items()):
        print(
            f"  {side}: {acc['calls']} calls, {acc['in']} input tokens, {acc['cached']} cached "
            f"({acc['cached'] / max(1, acc['in']):.1%})"
        )
    print(f"  prompt record: {files} texts, {size / 1024:.0f} KiB in {prompts}")


def main() -> int:
    """Run the measurements and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--skip-mock", action="store_true", help="only the fake backend")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folders here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="aria-tokens-"))
    print(f"runs in {root}", file=sys.stderr)
    _play(root / "fake", args.seed, args.max_steps, {"backend": "fake"}, {"backend": "fake"})
    _figures(root / "fake", "fake backend (token estimate: characters / 4)")
    if args.skip_mock:
        return 0
    os.environ.setdefault("OPENAI_API_KEY", "sk-mock-benchmark")
    os.environ.setdefault("ANTHROPIC_API_KEY", "mock-benchmark")

    def respond(request: RecordedRequest) -> str:
        return answer_http(request.body)

    with MockAPIServer(respond) as api:
        _play(
            root / "mock",
            args.seed,
            args.max_steps,
            {"backend": "openai:gpt-4.1-mini", "base_url": api.openai_base_url},
            {"backend": "anthropic:claude-haiku-4-5", "base_url": api.anthropic_base_url},
        )
    _figures(root / "mock", "real SDKs against the mock API (cached as each API reports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
