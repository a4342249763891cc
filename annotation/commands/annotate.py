"""`mineamongus annotate RUN_OR_TOURNAMENT... --judge [NAME=]BACKEND|none [--judge ...]
[--panel majority|unanimous] [--judge-profile auto|reference|grounded]`: deception
atoms."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotation.deception.judges import JUDGES
from controller.commands import Command

if TYPE_CHECKING:
    from annotation.deception.judge import JudgeSpec
    from annotation.deception.profiles import ProfileChoice

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
        action="append",
        default=None,
        metavar="[NAME=]BACKEND",
        help="judge backend: none (detectors only), fake, openai:MODEL, anthropic:MODEL, "
        "openai-compatible:MODEL; repeatable for several judges, each named by its "
        "backend or by NAME= (two judges of one backend need names: j1=fake j2=fake) "
        "(default: none)",
    )
    p.add_argument(
        "--panel",
        choices=["majority", "unanimous"],
        default=None,
        help="combine the judges (at least 2; an odd number is best) into one more rater, "
        "panel:RULE: an atom is present in a game when more than half (majority) or all "
        "(unanimous) of the judges find it, and a finding is the panel's when they agree "
        "on its atom, actor and step (or meeting)",
    )
    p.add_argument(
        "--base-url",
        default=None,
        help="endpoint for openai-compatible judges (a single judge of any backend uses it)",
    )
    p.add_argument("--concurrency", type=int, default=4, help="games judged at once (default 4)")
    p.add_argument(
        "--cache", type=Path, default=None, help="judge cache folder (default: DIR/judge_cache)"
    )
    p.add_argument(
        "--judge-profile",
        choices=["auto", *JUDGES.names()],
        default="auto",
        help="which judge: reference (the authors' instrument: their log format, prompts "
        "and two passes, findings kept as emitted), grounded (this project's: a rendering "
        "with ground-truth facts, strict prompts, findings filtered), another registered "
        "judge (annotation.deception.judges), or auto: reference for games whose impostors "
        "played the reference harness, else grounded (default)",
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


def _estimate(args: argparse.Namespace, specs: list[JudgeSpec], choice: ProfileChoice) -> int:
    """Print the judges' estimated tokens and cost (per judge when there are several)."""
    from annotation.deception.annotate import estimate_runs

    per: dict[str, dict[str, Any]] = {}
    for spec in specs:
        estimates = estimate_runs(
            args.paths,
            spec.address,
            cache_dir=args.cache,
            expected_out=args.expected_out,
            judge_profile=choice,
            name=spec.name,
        )
        costs = [e.cost_usd for e in estimates]
        known = [c for c in costs if c is not None]
        per[spec.name] = {
            "games": len(estimates),
            "calls": sum(e.calls for e in estimates),
            "cached_calls": sum(e.cached for e in estimates),
            "tokens_in": sum(e.tokens_in for e in estimates),
            "tokens_out": sum(e.tokens_out for e in estimates),
            "cost_usd": round(sum(known), 4) if len(known) == len(costs) else None,
            "note": "" if len(known) == len(costs) else "no list price for this model",
        }
    if len(per) == 1:
        print(json.dumps(next(iter(per.values()))))
        return 0
    rows = list(per.values())
    costs_all = [r["cost_usd"] for r in rows]
    report = {
        "games": rows[0]["games"],
        "calls": sum(r["calls"] for r in rows),
        "cached_calls": sum(r["cached_calls"] for r in rows),
        "tokens_in": sum(r["tokens_in"] for r in rows),
        "tokens_out": sum(r["tokens_out"] for r in rows),
        "cost_usd": None if None in costs_all else round(sum(costs_all), 4),
        "note": "" if None not in costs_all else "a judge's model has no list price",
        "judges": per,
    }
    print(json.dumps(report))
    return 0


def run(args: argparse.Namespace) -> int:
    """Annotate, or estimate with --dry-run."""
    from annotation.deception.annotate import annotate_runs
    from annotation.deception.judge import JudgeTally, NamedJudge, parse_judges
    from annotation.deception.panel import check_panel
    from annotation.deception.profiles import DEFAULTS, backend_settings, profile_of_run
    from controller.record import finished_runs

    choice = args.judge_profile
    try:
        specs = parse_judges(args.judge or ["none"])
        if args.panel is not None:
            for note in check_panel(args.panel, len(specs)):
                print(f"annotate: {note}", file=sys.stderr)
        params = _params(args.detector)
        if args.dry_run:
            if not specs:
                print("--dry-run estimates the judge: pass --judge BACKEND", file=sys.stderr)
                return 2
            return _estimate(args, specs, choice)
        judges: list[NamedJudge] = []
        if specs:
            from annotation.llm import make_judge

            # One backend per judge serves the run: the reference's retries and time
            # limit when every game is judged with its profile.
            profiles = {profile_of_run(f, choice) for f in finished_runs(args.paths)}
            for spec in specs:
                # With several judges --base-url is the openai-compatible ones' server;
                # a single judge uses it whatever its backend.
                local = len(specs) == 1 or spec.address.startswith("openai-compatible:")
                model = make_judge(
                    spec.address,
                    base_url=args.base_url if local else None,
                    max_tokens=args.max_tokens or DEFAULTS["grounded"].max_tokens,
                    settings=backend_settings(profiles),
                )
                judges.append(NamedJudge(spec.name, model))
        totals = asyncio.run(
            annotate_runs(
                args.paths,
                judges or None,
                params=params,
                cache_dir=args.cache,
                concurrency=args.concurrency,
                progress=not args.quiet,
                judge_profile=choice,
                max_tokens=args.max_tokens,
                panel=args.panel,
            )
        )
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"annotate: {exc}", file=sys.stderr)
        return 2
    summary: dict[str, Any] = {
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
    if judges:
        summary["judges"] = {
            j.name: {
                "address": j.address,
                **totals.judge_games.get(j.name, {}),
                **totals.judges.get(j.name, JudgeTally()).as_dict(),
            }
            for j in judges
        }
    if args.panel is not None:
        summary["panel"] = {"name": f"panel:{args.panel}", **totals.panel}
    print(json.dumps(summary))
    return 1 if totals.judge_failed else 0


COMMAND = Command(NAME, add_parser, run)
"""The entry point of `annotate` (group `mineamongus.commands`)."""
