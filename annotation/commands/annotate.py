"""`mineamongus annotate RUN_OR_TOURNAMENT... --judge BACKEND|none [--judge-profile
auto|reference|grounded]`: deception atoms."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from controller.commands import Command

NAME = "annotate"


def add_parser(subparsers: Any) -> None:
    """Register the subcommand."""
    p = subparsers.add_parser(
        NAME,
        help="label deception atoms with the engine detectors and an LLM judge",
        description=(
            "Write DIR/annotations.jsonl for every run folder at or under the given paths: "
            "engine detectors always, the LLM judge unless --judge none."
        ),
    )
    p.add_argument("paths", nargs="+", type=Path, help="run folders or tournament folders")
    p.add_argument(
        "--judge",
        default="none",
        help="judge backend: none (detectors only), fake, openai:MODEL, anthropic:MODEL, "
        "openai-compatible:MODEL (default: none)",
    )
    p.add_argument("--base-url", default=None, help="endpoint for openai-compatible judges")
    p.add_argument("--concurrency", type=int, default=4, help="games judged at once (default 4)")
    p.add_argument(
        "--cache", type=Path, default=None, help="judge cache folder (default: DIR/judge_cache)"
    )
    p.add_argument(
        "--judge-profile",
        choices=["auto", "reference", "grounded"],
        default="auto",
        help="which judge: reference (the authors' instrument: their log format, prompts "
        "and two passes, findings kept as emitted), grounded (this project's: a rendering "
        "with ground-truth facts, strict prompts, findings filtered), or auto: reference "
        "for games whose impostors played the reference harness, else grounded (default)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="judge output cap per call (default: the profile's, 8000 grounded, 20000 reference)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the judge's estimated tokens and cost for the selected games; call nothing",
    )
    p.add_argument(
        "--expected-out",
        type=int,
        default=2000,
        help="output tokens assumed per judge call in --dry-run estimates (default 2000)",
    )
    p.add_argument(
        "--detector",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="detector threshold, repeatable, e.g. --detector stalk_radius=4",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _params(items: list[str]) -> Any:
    from annotation.deception.detectors import DetectorParams

    values: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in DetectorParams.model_fields:
            known = ", ".join(DetectorParams.model_fields)
            raise ValueError(f"--detector {item!r}: expected FIELD=VALUE with FIELD one of {known}")
        values[key] = value
    return DetectorParams.model_validate(values)


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return out


def run(args: argparse.Namespace) -> int:
    """Annotate, or estimate with --dry-run."""
    from annotation.deception.annotate import annotate_runs, estimate_runs
    from annotation.deception.profiles import DEFAULTS, backend_settings, profile_of_run
    from controller.record import finished_runs

    judge_address = None if args.judge.strip().lower() == "none" else args.judge.strip()
    choice = args.judge_profile
    try:
        params = _params(args.detector)
        if args.dry_run:
            if judge_address is None:
                print("--dry-run estimates the judge: pass --judge BACKEND", file=sys.stderr)
                return 2
            estimates = estimate_runs(
                args.paths,
                judge_address,
                cache_dir=args.cache,
                expected_out=args.expected_out,
                judge_profile=choice,
            )
            tin = sum(e.tokens_in for e in estimates)
            tout = sum(e.tokens_out for e in estimates)
            costs = [e.cost_usd for e in estimates]
            known = [c for c in costs if c is not None]
            report = {
                "games": len(estimates),
                "calls": sum(e.calls for e in estimates),
                "cached_calls": sum(e.cached for e in estimates),
                "tokens_in": tin,
                "tokens_out": tout,
                "cost_usd": round(sum(known), 4) if len(known) == len(costs) else None,
                "note": "" if len(known) == len(costs) else "no list price for this model",
            }
            print(json.dumps(report))
            return 0
        judge = None
        if judge_address is not None:
            from annotation.llm import make_judge

            # One backend serves the run: the reference's retries and time limit when
            # every game is judged with its profile.
            profiles = {profile_of_run(f, choice) for f in finished_runs(args.paths)}
            judge = make_judge(
                judge_address,
                base_url=args.base_url,
                max_tokens=args.max_tokens or DEFAULTS["grounded"].max_tokens,
                settings=backend_settings(profiles),
            )
        totals = asyncio.run(
            annotate_runs(
                args.paths,
                judge,
                params=params,
                cache_dir=args.cache,
                concurrency=args.concurrency,
                progress=not args.quiet,
                judge_profile=choice,
                max_tokens=args.max_tokens,
            )
        )
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"annotate: {exc}", file=sys.stderr)
        return 2
    print(
        json.dumps(
            {
                "games": totals.games,
                "accepted": totals.accepted,
                "rejected": totals.rejected,
                "rejected_by_reason": totals.reasons,
                "judge_profiles": _count(totals.profiles.values()),
                "kept_but_filtered": totals.filtered_out,
                "judge_failed": totals.judge_failed,
                "calls": totals.calls,
                "cached_calls": totals.cached_calls,
                "tokens_in": totals.tokens_in,
                "tokens_out": totals.tokens_out,
                "cost_usd": None if totals.spend_usd is None else round(totals.spend_usd, 6),
                "unpriced_calls": totals.unpriced_calls,
            }
        )
    )
    return 1 if totals.judge_failed else 0


COMMAND = Command(NAME, add_parser, run)
"""The entry point of `annotate` (group `mineamongus.commands`)."""
