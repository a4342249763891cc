"""Games as Ray tasks on an existing cluster (`tournament --backend ray`).

Each game is one Ray task with declared resources (`runner.cpus_per_game` CPUs and
`runner.memory_gb_per_game` of memory), so Ray never packs more games on a node than
it can hold. The task runs the same `mineamongus play` process as a local run. Its
record reaches the study folder on the driver: written there directly when the
folder is on a filesystem the node shares (checked with a probe file the driver
writes), otherwise played into a temporary folder on the node and shipped back as a
compressed archive in the task's result. The driver's manifest stays the single
source of progress; a task only returns what happened.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray

import controller
from controller.tournament.executors import Message
from controller.tournament.process import GameJob, ProcessReport, run_game_process

PROBE = ".ray-shared-probe"
CANCEL_GRACE_S = 120.0
"""Beyond a game's own limit (which its task enforces), the driver cancels a task that
has still not returned: its node or worker hangs. The game then counts as failed."""


@dataclass
class RayGameResult:
    """What a game task returns to the driver."""

    report: ProcessReport
    archive: bytes | None
    """The run folder as a `.tar.gz` when the driver's folder was not reachable."""


def _pack(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    return buf.getvalue()


def unpack(archive: bytes, folder: Path) -> None:
    """Extract a shipped run folder (only plain files and folders, inside `folder`)."""
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(folder, filter="data")


def play_task(job: GameJob, folder: str, probe: str, token: str) -> RayGameResult:
    """Body of a game task: play into the shared folder, or locally and ship it back."""
    probe_path = Path(probe)
    shared = probe_path.is_file() and probe_path.read_text() == token
    if shared:
        return RayGameResult(run_game_process(job, Path(folder)), None)
    scratch = Path(tempfile.mkdtemp(prefix="mau-game-"))
    try:
        report = run_game_process(job, scratch / "game")
        return RayGameResult(report, _pack(scratch / "game"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def cluster_nodes(address: str) -> list[dict[str, Any]]:
    """`ray.nodes()` of a running cluster (for the dry-run; disconnects after)."""
    connected = ray.is_initialized()
    if not connected:
        ray.init(address=address, log_to_driver=False)
    try:
        return list(ray.nodes())  # type: ignore[no-untyped-call]
    finally:
        if not connected:
            ray.shutdown()


class RayExecutor:
    """Runs games as Ray tasks.

    Args:
        out: The study folder on the driver.
        address: Cluster address (`auto`, `ray://host:10001`, `host:6379`); None starts a
            local Ray instance on loopback.
        slots: Games in flight at once; None: the cluster's CPUs / CPUs per game.
        cpus_per_game: Ray `num_cpus` of a game task.
        memory_gb: Ray `memory` of a game task.
    """

    def __init__(
        self,
        out: Path,
        address: str | None,
        slots: int | None,
        cpus_per_game: float,
        memory_gb: float,
    ) -> None:
        self._owns = False
        if not ray.is_initialized():
            if address is None:
                # A local instance: its workers import this checkout, like local games do.
                root = str(Path(controller.__file__).resolve().parent.parent)
                ray.init(
                    include_dashboard=False,
                    runtime_env={"env_vars": {"PYTHONPATH": root}},
                    log_to_driver=False,
                )
            else:
                ray.init(address=address, log_to_driver=False)
            self._owns = True
        cpus = float(ray.cluster_resources().get("CPU", 1.0))  # type: ignore[no-untyped-call]
        self.slots = slots if slots is not None else max(1, int(cpus // cpus_per_game))
        self._task = ray.remote(
            num_cpus=cpus_per_game, memory=int(memory_gb * 2**30), max_retries=0
        )(play_task)
        self._token = uuid.uuid4().hex
        out.mkdir(parents=True, exist_ok=True)
        self._probe = out.resolve() / PROBE
        self._probe.write_text(self._token)
        self._refs: dict[Any, tuple[str, Path]] = {}
        self._deadlines: dict[Any, float] = {}
        self._cancelled: set[Any] = set()

    def submit(self, job: GameJob, folder: Path) -> None:
        """Start one game task."""
        ref = self._task.remote(job, str(folder.resolve()), str(self._probe), self._token)
        self._refs[ref] = (job.key, folder)
        self._deadlines[ref] = time.monotonic() + job.timeout_s + CANCEL_GRACE_S

    def messages(self, timeout_s: float) -> list[Message]:
        """Finished tasks since the last call (shipped records are unpacked here)."""
        if not self._refs:
            return []
        now = time.monotonic()
        for ref, deadline in self._deadlines.items():
            if now > deadline and ref not in self._cancelled:
                ray.cancel(ref, force=True)
                self._cancelled.add(ref)
        ready, _ = ray.wait(list(self._refs), num_returns=1, timeout=timeout_s)
        if ready:
            ready, _ = ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
        out = []
        for ref in ready:
            key, folder = self._refs.pop(ref)
            self._deadlines.pop(ref, None)
            try:
                result: RayGameResult = ray.get(ref)
            except Exception as exc:  # a lost node or a cancelled task: a failed game
                why = f"ray: {type(exc).__name__}: {exc}"
                if ref in self._cancelled:
                    why = f"no result {CANCEL_GRACE_S:g} s past the game time limit; {why}"
                self._cancelled.discard(ref)
                out.append(Message("finished", key, error=why))
                continue
            if result.archive is not None:
                unpack(result.archive, folder)
            out.append(
                Message("finished", key, report=result.report, shipped=result.archive is not None)
            )
        return out

    def running(self) -> int:
        """Tasks in flight."""
        return len(self._refs)

    def stop_all(self) -> None:
        """Cancel every task (its worker dies; the game process follows by PDEATHSIG)."""
        for ref in list(self._refs):
            ray.cancel(ref, force=True)

    def close(self) -> None:
        """Remove the probe; shut down a Ray instance this executor started."""
        self._probe.unlink(missing_ok=True)
        if self._owns:
            ray.shutdown()
