"""`mineamongus audit`: verify meeting claims against the log and compute the metrics."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from annotation.grounding.books import BOOKS
from controller.commands import Command

NAME = "audit"


def add_parser(subparsers: Any) -> None:
    """Register `audit`."""
    p = subparsers.add_parser(
        NAME,
        help="grounding audit: verify every meeting claim, QUACK metrics, detection lift",
        description=(
            "Extract the claims of every meeting utterance (or read them with --claims), "
            "verify each against the trajectory rebuilt from the log, and write "
            "claims.jsonl and metric tables (CSV and Parquet). See docs/grounding.md."
        ),
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_OR_TOURNAMENT",
        help="run folders (holding events.jsonl) or folders of runs",
    )
    p.add_argument(
        "--extractor",
        default="rules",
        help="'rules' (the scripted agents' templates; default) or a backend "
        "address: fake, openai:MODEL, anthropic:MODEL, openai-compatible:MODEL",
    )
    p.add_argument("--base-url", default=None, help="endpoint for openai-compatible backends")
    p.add_argument(
        "--claims",
        type=Path,
        default=None,
        help="verify these claims (JSONL) instead of extracting",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default: <RUN>/audit for a single path, <RUN>/audit-quack "
        "with --rules quack)",
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="extraction cache folder (default: <out>/extraction_cache/)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument(
        "--rules",
        choices=BOOKS.names(),
        default="mineamongus",
        help="verdict rule book: 'mineamongus' (this project's rules for a 3D world; "
        "default), 'quack' (QUACK's rules, for numbers comparable with QUACK's) or "
        "another registered book (annotation.grounding.books); docs/grounding.md lists "
        "the differences",
    )


def run(args: argparse.Namespace) -> int:
    """Run the audit; 0 on success, 2 on bad input."""
    from annotation.grounding.claims import ModelExtractor, RuleExtractor
    from annotation.grounding.metrics import default_audit_dir, run_audit

    out: Path | None = args.out
    if out is None:
        if len(args.runs) != 1:
            print(
                "mineamongus audit: several paths given; choose the output with --out",
                file=sys.stderr,
            )
            return 2
        out = default_audit_dir(args.runs[0], args.rules)
    extractor: Any = None
    if args.claims is None:
        if args.extractor == "rules":
            extractor = RuleExtractor()
        else:
            from annotation.llm import ReplyCache, make_judge
            from harness_aria.backends.base import CredentialsError

            try:
                model = make_judge(args.extractor, base_url=args.base_url, flag="--extractor")
            except (ValueError, CredentialsError) as exc:
                print(f"mineamongus audit: --extractor: {exc}", file=sys.stderr)
                return 2
            cache = ReplyCache(args.cache or out / "extraction_cache")
            extractor = ModelExtractor(model, cache)
    try:
        result = run_audit(
            args.runs,
            out=out,
            extractor=extractor,
            claims_file=args.claims,
            seed=args.seed,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
            rules=args.rules,
        )
    except (FileNotFoundError, ValueError) as exc:
        print(f"mineamongus audit: {exc}", file=sys.stderr)
        return 2
    print(
        f"audited {result.games} game(s), {result.claims} claim(s), rule book "
        f"{result.rules} -> {result.out}"
    )
    for path in result.files:
        print(f"  {path}")
    return 0


COMMAND = Command(NAME, add_parser, run)
"""The entry point of `audit` (group `mineamongus.commands`)."""
