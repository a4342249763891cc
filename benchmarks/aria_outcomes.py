"""Outcomes of fake-world paper games on ARIA's RQ1 base settings, one line per seed.

Plays `--seeds` (default 1-24) fake-world paper games with the offline `fake` backend on
both sides (both sides privileged, the crew with reflection on, everything else at
`AriaSpec`'s defaults, the `reference` profile; `--change profile=lean` plays the lean
harness; frames on), as `benchmarks.aria_tokens` does, and prints per game
the winner, kills, meetings, ejections, tasks done, steps, model calls and input tokens
(characters / 4 as the fake backend counts), then the totals. `--json FILE` writes the
per-game rows, so a change to what agents are told can be compared before and after:
`--compare FILE` prints, per seed, what differs from such a file.

Run from the repository root: python -m benchmarks.aria_outcomes [--seeds 1 2 ...]
[--change FIELD=VALUE ...] [--json OUT] [--compare BEFORE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.aria_tokens import play

FIELDS = ("winner", "kills", "meetings", "ejections", "tasks_done", "steps")
"""The outcome fields compared before and after."""


def outcome(run: Path) -> dict[str, Any]:
    """One game's outcome and its calls and tokens, from its `summary.json`."""
    s = json.loads((run / "summary.json").read_text())
    c = s["counts"]
    return {
        "seed": s["seed"],
        "status": s["status"],
        "winner": s["winner"],
        "kills": c["kills"],
        "meetings": c["meetings"],
        "ejections": c["ejections"],
        "tasks_done": c["tasks_done"],
        "steps": s["steps"],
        "model_calls": c["model_calls"],
        "tokens_in": c["tokens_in"],
        "continuations": c.get("continuations", 0),
        "invalid_decisions": c["invalid_decisions"],
    }


def main() -> int:
    """Play the seeds and print (and optionally write or compare) their outcomes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(1, 25)))
    parser.add_argument(
        "--change", nargs="*", default=[], help="FIELD=VALUE set on both sides' specs"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    parser.add_argument("--compare", type=Path, default=None, help="rows to compare with")
    args = parser.parse_args()
    change = dict(item.split("=", 1) for item in args.change)
    root = Path(tempfile.mkdtemp(prefix="aria-outcomes-"))
    rows = []
    for seed in args.seeds:
        out = root / str(seed)
        play(out, seed, change)
        rows.append(outcome(out))
        r = rows[-1]
        print(
            f"seed {seed:2d}: {r['status']} winner {r['winner']}, kills {r['kills']}, "
            f"meetings {r['meetings']}, ejections {r['ejections']}, tasks {r['tasks_done']}, "
            f"steps {r['steps']}, calls {r['model_calls']}, input {r['tokens_in']}, "
            f"invalid {r['invalid_decisions']}"
        )
    n = max(1, len(rows))
    wins = sum(r["winner"] == "impostors" for r in rows)
    print(
        f"impostor wins {wins}/{len(rows)}; a game: "
        + ", ".join(
            f"{k} {sum(r[k] for r in rows) / n:.2f}"
            for k in ("kills", "meetings", "ejections", "tasks_done", "steps", "model_calls")
        )
        + f", input tokens {sum(r['tokens_in'] for r in rows) / n:,.0f}"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    if args.compare:
        before = {r["seed"]: r for r in json.loads(args.compare.read_text())}
        same = 0
        for r in rows:
            b = before.get(r["seed"])
            if b is None:
                continue
            diff = {k: (b[k], r[k]) for k in FIELDS if b[k] != r[k]}
            same += not diff
            if diff:
                print(f"seed {r['seed']:2d} differs: {diff}")
        print(f"same outcome ({', '.join(FIELDS)}) in {same} of {len(rows)} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
