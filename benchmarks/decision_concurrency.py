"""Whether one step's model calls for all agents really run at once.

Each agent's decision is one model call that takes L milliseconds. A step issues the calls
of all agents (8 by default) together with `asyncio.gather`, and then, for comparison, one
after another. Concurrent decision time should stay near L; sequential near agents * L.

Measured twice: with the fake backend (a fixed `asyncio.sleep`), and through the real
`openai` SDK against the local mock API server holding every answer for L (so the HTTP path,
connection pool included, is shown concurrent too). Nothing leaves 127.0.0.1.

Run: python -m benchmarks.decision_concurrency [--latency-ms 200] [--agents 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from harness_aria.backends.base import Backend, Message, ModelRequest
from harness_aria.backends.fake import FakeBackend
from harness_aria.backends.openai_backend import OpenAIBackend
from harness_aria.backends.registry import make_backend
from harness_aria.backends.settings import BackendSettings
from testkit.mock_api import MockAPIServer, delayed


def _request(agent: int) -> ModelRequest:
    return ModelRequest(
        messages=[
            Message(role="system", text="You are a crewmate."),
            Message(role="user", text=f"Agent {agent}: what do you do next?"),
        ],
        purpose="move",
    )


async def _concurrent_ms(backend: Backend, agents: int) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(backend.complete(_request(a)) for a in range(agents)))
    return (time.perf_counter() - started) * 1000


async def _sequential_ms(backend: Backend, agents: int) -> float:
    started = time.perf_counter()
    for agent in range(agents):
        await backend.complete(_request(agent))
    return (time.perf_counter() - started) * 1000


async def _measure(backend: Backend, agents: int, repeats: int) -> tuple[float, float]:
    await backend.complete(_request(0))  # warm-up: client, connection pool, imports
    concurrent = [await _concurrent_ms(backend, agents) for _ in range(repeats)]
    sequential = [await _sequential_ms(backend, agents) for _ in range(repeats)]
    if isinstance(backend, OpenAIBackend):
        await backend.aclose()
    return statistics.median(concurrent), statistics.median(sequential)


def _report(title: str, latency_ms: float, agents: int, result: tuple[float, float]) -> None:
    concurrent, sequential = result
    lines = [
        f"{title}",
        f"  L (per-call latency): {latency_ms:.0f} ms, agents per step: {agents}",
        f"  concurrent step decision time: {concurrent:.1f} ms",
        f"  sequential step decision time: {sequential:.1f} ms",
        f"  ratio sequential/concurrent: {sequential / concurrent:.2f} (ideal {agents})",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


def main() -> int:
    """Run both measurements and write the figures to stdout.

    Returns:
        The process exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--latency-ms", type=float, default=200.0, help="per-call latency L")
    parser.add_argument("--agents", type=int, default=8, help="calls per step")
    parser.add_argument("--repeats", type=int, default=3, help="steps timed (median kept)")
    args = parser.parse_args()
    latency_s = args.latency_ms / 1000

    fake = FakeBackend("bench", latency_s=latency_s)
    result = asyncio.run(_measure(fake, args.agents, args.repeats))
    _report("fake backend (asyncio.sleep)", args.latency_ms, args.agents, result)

    with MockAPIServer(delayed(latency_s)) as api:
        backend = make_backend(
            "openai-compatible:bench",
            base_url=api.openai_base_url,
            settings=BackendSettings(timeout_s=max(10.0, latency_s * 4), max_retries=0),
        )
        result = asyncio.run(_measure(backend, args.agents, args.repeats))
    _report(
        "openai SDK -> local mock API (server-side delay)", args.latency_ms, args.agents, result
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
