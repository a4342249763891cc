"""How long `analyze` takes over a paper-sized study: 1152 synthetic games.

Generates 1152 schema-following games (16 impostor configurations of the four axes x
6 impostor models x 12 paired seeds) with `annotations.jsonl` (the engine detectors'
findings plus synthetic judge findings of every atom), then times
`annotation.report.analysis.analyze` over them (generation is not timed). The grounding audit,
which `analyze` reuses from its output folder, is run first and timed on its own line.
Target: under 30 s on a 2-core machine. The last line printed is `analyze: N s`.

Run: python -m benchmarks.analyze [--games 1152] [--boot 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

# Import this checkout's code, whichever copy of the package is installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.deception.annotate import annotate_one  # noqa: E402
from annotation.deception.codebook import codebook  # noqa: E402
from annotation.deception.detectors import DetectorParams  # noqa: E402
from annotation.deception.findings import (  # noqa: E402
    CheckedFinding,
    Finding,
    read_annotations,
    write_annotations,
)
from annotation.gamelog import load_game  # noqa: E402
from annotation.grounding.claims import RuleExtractor  # noqa: E402
from annotation.grounding.metrics import run_audit  # noqa: E402
from annotation.report.analysis import analyze  # noqa: E402
from testkit.logs import AXES_LEVELS, random_game  # noqa: E402

TARGET_S = 30.0
MODELS = [f"fake:model{i}" for i in range(6)]


def _judge_findings(folder: Path, rng: random.Random, model: str) -> None:
    """Add synthetic judge findings (valid by construction) to a game's annotations."""
    ann = read_annotations(folder)
    assert ann is not None
    game = load_game(folder)
    book = codebook()
    free = [s for s in game.steps if game.step_phase[s] == "free_roam"]
    talk = [s for s in game.steps if game.step_phase[s] != "free_roam"]
    source = f"judge:{model}"
    for _ in range(rng.randint(3, 25)):
        verbal = bool(talk) and rng.random() < 0.4
        letters = book.letters_of("verbal" if verbal else "nonverbal")
        step = rng.choice(talk if verbal else free)
        f = Finding(
            atom=rng.choice(letters),
            step=step,
            actor=rng.choice(game.impostors),
            evidence=f"[step {step}] synthetic",
            source=source,
        )
        ann.findings.append(CheckedFinding(finding=f, accepted=True, phase=game.phase_of(step)))
    ann.sources.append(source)
    ann.judge_status = "ok"
    write_annotations(folder, ann)


def generate(root: Path, n_games: int, seed: int) -> None:
    """Write `n_games` annotated synthetic games under `root`."""
    rng = random.Random(seed)
    configs = [
        dict(zip(AXES_LEVELS, combo, strict=True))
        for combo in itertools.product(*AXES_LEVELS.values())
    ]
    arms = [(c, m) for m in MODELS for c in configs]
    params = DetectorParams()
    started = time.perf_counter()
    for i in range(n_games):
        spec, model = arms[i % len(arms)]
        game_seed = i // len(arms)
        folder = root / f"g{i:04d}"
        random_game(folder, rng, seed=game_seed, spec=spec, model=model)
        asyncio.run(annotate_one(folder, None, params=params, cache_dir=None))
        _judge_findings(folder, rng, "fake:judge")
        if (i + 1) % 100 == 0:
            elapsed = time.perf_counter() - started
            print(f"generated {i + 1}/{n_games} games ({elapsed:.0f} s)", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1152)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="keep the games in this folder")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="mau-analyze-bench-"))
    try:
        if not any(root.glob("g*/annotations.jsonl")):
            generate(root, args.games, args.seed)
        out = root / "_analysis"
        if not (out / "audit" / "metrics_pooled.parquet").is_file():
            # The grounding audit is its own command (`mineamongus audit`); `analyze` reuses
            # an audit in its output folder and runs one only when there is none. It is
            # timed apart so each pipeline's figure reads on its own.
            started = time.perf_counter()
            run_audit([root], out=out / "audit", extractor=RuleExtractor())
            print(f"grounding audit (reused by analyze): {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        tables = analyze([root], out, n_boot=args.boot, progress=False)
        elapsed = time.perf_counter() - started
        print(f"games: {len(tables['games'])}; findings: {len(tables['findings'])}")
        print(f"report: {out / 'report.html'}")
        verdict = "within" if elapsed < TARGET_S else "OVER"
        print(f"target: < {TARGET_S:.0f} s ({verdict})")
        print(f"analyze: {elapsed:.1f} s")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
