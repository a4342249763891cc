"""How fast the grounding audit runs: trajectories, verification, metrics, pooling.

Builds synthetic games (no world, no model), then times each stage over all of them
and prints games per second and claims per second. Pooling (the cluster bootstrap) is
timed separately because it grows with the number of (metric, role, model) cells.

Run from the repository root: python -m benchmarks.audit_speed [--games 200] [--claims 40]
"""

from __future__ import annotations

import argparse
import random
import time

from annotation.grounding.claims import Claim
from annotation.grounding.metrics import game_metrics, pool, pool_lift
from annotation.grounding.rules import audit_claims
from annotation.grounding.trajectory import build_trajectory
from testkit.logs import GameBuilder

ROOMS = ["admin", "storage", "electrical", "medbay", "o2", "navigation", "cafeteria"]
AGENTS = ["red", "blue", "green", "pink", "orange"]


def synthetic_events(seed: int) -> list[object]:
    rng = random.Random(seed)
    g = GameBuilder(game_id=f"g{seed}")
    for _ in range(6):
        paths = {a: rng.sample(ROOMS, 3) for a in AGENTS}
        sees = {a: [b for b in AGENTS if b != a and rng.random() < 0.3] for a in AGENTS}
        g.free_roam(paths, sees=sees)
    g.free_roam({"green": ["admin"]}, emergency="green")
    g.talk([(a, "...") for a in AGENTS])
    g.vote({a: rng.choice(AGENTS + ["skip"]) for a in AGENTS})
    return g.end()


def synthetic_claims(seed: int, n: int) -> list[Claim]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        speaker = rng.choice(AGENTS)
        kind = rng.choice(["location", "sighting", "activity", "accusation"])
        out.append(
            Claim(
                meeting=1,
                speaker=speaker,
                utterance=1,
                type=kind,
                subject=speaker,
                room=rng.choice(ROOMS) if kind != "accusation" else None,
                target=rng.choice(AGENTS) if kind in ("sighting", "accusation") else None,
                activity="task" if kind == "activity" else None,
                temporal=rng.choice([None, "the whole time", "at the start"]),
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--claims", type=int, default=40, help="claims per game")
    args = parser.parse_args()
    events = [synthetic_events(s) for s in range(args.games)]
    claims = [synthetic_claims(s, args.claims) for s in range(args.games)]
    t0 = time.perf_counter()
    trajs = [build_trajectory(e) for e in events]  # type: ignore[arg-type]
    t1 = time.perf_counter()
    audited = [audit_claims(t, c) for t, c in zip(trajs, claims, strict=True)]
    t2 = time.perf_counter()
    metrics = [game_metrics(t, a) for t, a in zip(trajs, audited, strict=True)]
    t3 = time.perf_counter()
    rows = [r for m in metrics for r in m.rows]
    lift = [r for m in metrics for r in m.lift]
    pooled = pool(rows)
    pooled_lift = pool_lift(lift)
    t4 = time.perf_counter()
    n_claims = sum(len(a) for a in audited)
    print(f"games {args.games}, claims {n_claims}")
    print(f"trajectories  {t1 - t0:7.2f} s  {args.games / (t1 - t0):8.1f} games/s")
    print(f"verification  {t2 - t1:7.2f} s  {n_claims / (t2 - t1):8.1f} claims/s")
    print(f"game metrics  {t3 - t2:7.2f} s  {args.games / (t3 - t2):8.1f} games/s")
    print(
        f"pooling       {t4 - t3:7.2f} s  {len(pooled) + len(pooled_lift)} cells "
        "(cluster bootstrap, 2000 resamples each)"
    )


if __name__ == "__main__":
    main()
