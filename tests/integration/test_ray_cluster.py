"""Studies on a real multi-node Ray cluster on loopback.

The cluster is `ray start` processes on 127.0.0.1: a head with no CPUs (so no game
runs on it) and worker nodes, each its own raylet. Worker node A runs in its own mount
namespace (`unshare -m`) with a private, empty tmpfs mounted over the folder that holds
every study of this module, so it cannot see a study folder: its games must be played
on the node and shipped back. The driver is `mineamongus tournament` in a subprocess,
so it can be SIGKILLed. Games are fake-world ones, except the game past its time limit,
which is a real embedded-server game with frames on (node server and bots, Xvfb), so
the test sees that none of its processes outlives the limit.

Every cluster process is a descendant of a `ray start --block` process this module
started; teardown ends them by pid and asserts that no Ray, node or Xvfb process of
the module is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml

from controller.tournament.collect import collect
from controller.tournament.manifest import Manifest, read_manifest

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

FAKE = {
    "world": "fake",
    "arms": [{"name": "a", "overrides": {}}],
    "base": {"frames": "off", "rules": {"max_steps": 8}},
    "runner": {"cpus_per_game": 1, "memory_gb_per_game": 0.3, "retries": 1},
}


RAY_ENV = {**os.environ, "RAY_AUTH_MODE": "disabled"}
"""Every process of the cluster and its drivers: Ray 2.5x+ `ray start` turns token
authentication on unless told otherwise, and this loopback cluster needs none."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int, ctime: float) -> bool:
    try:
        return abs(psutil.Process(pid).create_time() - ctime) < 0.01
    except psutil.Error:
        return False


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _kill(procs: list[psutil.Process], sig: int = signal.SIGKILL, wait_s: float = 20) -> None:
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.Error:
            continue
    psutil.wait_procs(procs, timeout=wait_s)


class LoopbackCluster:
    """A head (0 CPUs) and worker nodes as `ray start --block` processes on 127.0.0.1."""

    def __init__(self, base: Path) -> None:
        # Ray's socket paths must stay short: a temp dir of its own under /tmp.
        self.temp = Path(tempfile.mkdtemp(prefix="maur-", dir="/tmp"))
        self.base = base
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: dict[str, subprocess.Popen[bytes]] = {}
        self.seen: dict[tuple[int, float], str] = {}

    def start(self) -> None:
        """Start the head and wait for it."""
        # The GCS notices a killed node within about 2 s instead of about 30 s.
        env = {"RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "4"}
        self._start(
            "head",
            [
                "--head",
                f"--port={self.port}",
                "--num-cpus=0",
                f"--temp-dir={self.temp}",
                "--include-dashboard=false",
            ],
            env=env,
        )
        self._wait_nodes(1)

    def _start(
        self,
        name: str,
        args: list[str],
        hide: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        cmd = [
            "ray",
            "start",
            "--node-ip-address=127.0.0.1",
            "--disable-usage-stats",
            "--block",
            *args,
        ]
        if hide is not None:
            # Its own mount namespace, with an empty tmpfs over the folder of the studies.
            cmd = [
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                f'mount -t tmpfs tmpfs "{hide}" && exec "$0" "$@"',
                *cmd,
            ]
        log = open(self.temp / f"{name}.log", "wb")  # noqa: SIM115 (lives with the node)
        self.nodes[name] = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**RAY_ENV, **(env or {})},
        )

    def _wait_nodes(self, n: int, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    f"import ray; ray.init(address={self.address!r}, log_to_driver=False); "
                    "print(sum(1 for n in ray.nodes() if n['Alive']))",
                ],
                capture_output=True,
                text=True,
                env=RAY_ENV,
            )
            if out.returncode == 0 and out.stdout.strip().splitlines()[-1:] == [str(n)]:
                self.remember()
                return
            time.sleep(1)
        raise AssertionError(f"cluster did not reach {n} node(s): {self.logs()}")

    def add_worker(self, name: str, cpus: int, hide: Path | None = None) -> None:
        """Start a worker node and wait until it has joined."""
        alive = sum(1 for p in self.nodes.values() if p.poll() is None)
        self._start(name, [f"--address={self.address}", f"--num-cpus={cpus}"], hide=hide)
        self._wait_nodes(alive + 1)

    def remember(self) -> None:
        """Note every process of the cluster now (teardown checks them all)."""
        for p in self.nodes.values():
            for q in _tree(p.pid):
                try:
                    self.seen[(q.pid, q.create_time())] = q.name()
                except psutil.Error:
                    continue

    def games_on(self, name: str) -> list[psutil.Process]:
        """The game processes (`controller.cli play`) running on a node now."""
        out = []
        for p in _tree(self.nodes[name].pid):
            try:
                cmd = p.cmdline()
            except psutil.Error:
                continue
            if "controller.cli" in cmd and "play" in cmd:
                out.append(p)
        return out

    def kill_node(self, name: str) -> None:
        """Lose a node: SIGKILL its raylet, its workers and their games at once."""
        self.remember()
        _kill(_tree(self.nodes[name].pid))

    def logs(self) -> str:
        return " | ".join(
            f"{f.name}: {f.read_text(errors='replace')[-800:]}" for f in self.temp.glob("*.log")
        )

    def shutdown(self) -> list[str]:
        """End every node (SIGTERM, then SIGKILL); return what is still alive after."""
        self.remember()
        procs = [q for p in self.nodes.values() for q in _tree(p.pid)]
        _kill(procs, signal.SIGTERM, wait_s=5)
        _kill([p for p in procs if p.is_running()])
        left = [f"{pid} {name}" for (pid, ct), name in self.seen.items() if _alive(pid, ct)]
        left += leftovers(self.temp) + leftovers(self.base)
        shutil.rmtree(self.temp, ignore_errors=True)
        return left


def leftovers(marker: Path) -> list[str]:
    """Processes whose command line names `marker` (a study's games, a cluster's daemons)."""
    out = []
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            if str(marker) in " ".join(p.info["cmdline"] or []) and p.pid != os.getpid():
                out.append(f"{p.pid} {p.info['name']}")
        except psutil.Error:
            continue
    return out


@pytest.fixture(scope="module")
def studies() -> Iterator[Path]:
    """The folder of this module's studies (hidden from worker node A)."""
    base = Path(tempfile.mkdtemp(prefix="mau-ray-studies-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(studies: Path) -> Iterator[LoopbackCluster]:
    """Head (0 CPUs) + worker node A (2 CPUs) that cannot see `studies`."""
    if shutil.which("ray") is None or shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs the `ray` CLI and `unshare -m` (root) for a node without the folder")
    c = LoopbackCluster(studies)
    try:
        c.start()
        c.add_worker("a", cpus=2, hide=studies)
        yield c
    finally:
        left = c.shutdown()
        assert not left, f"processes left behind by the cluster tests: {left}"


def _spec(studies: Path, name: str, seeds: list[int], **extra: object) -> Path:
    path = studies / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "seeds": seeds, **FAKE, **extra}))
    return path


def _driver(spec: Path, out: Path, address: str, *extra: str) -> subprocess.Popen[bytes]:
    log = open(out.parent / f"{out.name}-driver.log", "ab")  # noqa: SIM115
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "tournament",
            str(spec),
            "--out",
            str(out),
            "--backend",
            "ray",
            "--ray-address",
            address,
            "--plain",
            *extra,
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=RAY_ENV,
    )


def _manifest(out: Path) -> Manifest | None:
    try:
        return read_manifest(out)
    except (OSError, ValueError):
        return None


def _wait(out: Path, until: object, timeout_s: float = 120) -> Manifest:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        m = _manifest(out)
        if m is not None and until(m):  # type: ignore[operator]
            return m
        time.sleep(0.1)
    raise AssertionError(f"{out}: timed out waiting; manifest: {_manifest(out)}")


def _finish(p: subprocess.Popen[bytes], out: Path, timeout_s: float = 240) -> int:
    try:
        return p.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        log = (out.parent / f"{out.name}-driver.log").read_text(errors="replace")
        raise AssertionError(f"driver did not finish: {log[-2000:]}") from None


def _log(out: Path) -> str:
    return (out.parent / f"{out.name}-driver.log").read_text(errors="replace")[-3000:]


def _counted_once(out: Path, m: Manifest) -> None:
    """Every game done by exactly one attempt, in the manifest and in the tables."""
    assert m.counts()["done"] == len(m.games), m.counts()
    for e in m.games.values():
        assert [a.outcome for a in e.attempts].count("done") == 1, e
    games = collect(out).games
    import pandas as pd

    table = pd.read_parquet(games)
    counted = table[table.counted]
    assert sorted(zip(counted.arm, counted.seed, strict=True)) == sorted(
        (e.arm, e.seed) for e in m.games.values()
    )
    assert (counted.status == "done").all()
    assert int((table.status == "done").sum()) == len(m.games)


def test_dry_run_counts_the_games_the_cluster_runs_at_once(
    cluster: LoopbackCluster, studies: Path
) -> None:
    spec = _spec(studies, "dry", [1, 2, 3])
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "tournament",
            str(spec),
            "--dry-run",
            "--backend",
            "ray",
            "--ray-address",
            cluster.address,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=RAY_ENV,
    )
    assert out.returncode == 0, out.stderr
    # Head: 0 CPUs; node A: 2 CPUs and far more than 2 x 0.3 GB.
    assert "2 node(s), 2 CPU(s)" in out.stdout, out.stdout
    assert "games at once: 2 (each game declares 1 CPU(s) and 0.3 GB" in out.stdout


def test_node_without_the_folder_plays_locally_and_ships_the_record(
    cluster: LoopbackCluster, studies: Path
) -> None:
    spec = _spec(studies, "hidden", [1, 2])
    out = studies / "hidden"
    driver = _driver(spec, out, cluster.address)
    assert _finish(driver, out) == 0, _log(out)
    cluster.remember()
    m = read_manifest(out)
    assert m is not None
    _counted_once(out, m)
    for e in m.games.values():
        a = e.attempts[-1]
        # Only node A has CPUs, and it sees an empty tmpfs where the study folder is.
        assert a.shipped, a
        record = out / a.run
        assert json.loads((record / "summary.json").read_text())["status"] == "ok"
        assert (record / "events.jsonl").is_file() and (record / "play.log").is_file()


def test_driver_killed_and_restarted_resumes_from_the_manifest(
    cluster: LoopbackCluster, studies: Path
) -> None:
    spec = _spec(studies, "restart", [1, 2, 3, 4])
    out = studies / "restart"
    first = _driver(spec, out, cluster.address)

    # Kill it while tasks run, after at least one game is done.
    def unfinished(m: Manifest) -> bool:
        return any(
            e.status == "running"
            and e.attempts
            and not (out / e.attempts[-1].run / "summary.json").exists()
            for e in m.games.values()
        )

    _wait(out, lambda m: m.counts()["done"] >= 1 and unfinished(m), timeout_s=180)
    cluster.remember()
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    before = _manifest(out)
    assert before is not None
    done_before = {k for k, e in before.games.items() if e.status == "done"}
    running_before = {k for k, e in before.games.items() if e.status == "running"}
    assert done_before and running_before
    second = _driver(spec, out, cluster.address)
    assert _finish(second, out) == 0, _log(out)
    m = read_manifest(out)
    assert m is not None
    _counted_once(out, m)
    for k in done_before:
        # A finished game is kept, never replayed.
        assert m.games[k].attempts == before.games[k].attempts
    for k in running_before:
        opening = m.games[k].attempts[0]
        if opening.outcome == "done":
            # It finished between the manifest's last write and the kill: its record
            # was complete, so the restarted driver keeps it (played once, never twice).
            assert len(m.games[k].attempts) == 1, m.games[k]
            summary = json.loads((out / opening.run / "summary.json").read_text())
            assert summary["status"] == "ok", summary
            continue
        assert opening.outcome == "interrupted", m.games[k]
        assert m.games[k].attempts[-1].outcome == "done"
    assert any(m.games[k].attempts[0].outcome == "interrupted" for k in running_before) or (
        not running_before
    ), "no game was interrupted: the kill came too late to test a resume"
    assert "resuming: " in _log(out)
    # The dead driver's tasks died with it: no game of its attempts still runs.
    assert not [p for p in leftovers(out) if "-try1" in p], leftovers(out)


def test_game_past_its_limit_is_cancelled_and_leaves_nothing_on_its_node(
    cluster: LoopbackCluster, studies: Path
) -> None:
    if shutil.which("node") is None or shutil.which("Xvfb") is None:
        pytest.skip("needs Node and Xvfb for a real game")
    # A real game (server, bots, Xvfb) whose limit ends it in mid-play.
    spec = studies / "timeout.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "timeout",
                "world": "minecraft",
                "preset": "quick",
                "seeds": [1],
                "arms": [{"name": "a", "overrides": {}}],
                "base": {
                    "crew": {"backend": "scripted"},
                    "impostor": {"backend": "scripted"},
                    "frames": "jpg",
                    "rules": {"max_steps": 40},
                    # Real time, so the game is surely still playing at its limit (at
                    # `max` a 40-step game can end within it).
                    "server": {"speed": 1},
                },
                "runner": {"cpus_per_game": 1, "memory_gb_per_game": 1.6, "retries": 0},
            }
        )
    )
    out = studies / "timeout"
    driver = _driver(spec, out, cluster.address, "--game-timeout", "45")
    assert _finish(driver, out, timeout_s=240) == 1, _log(out)
    cluster.remember()
    m = read_manifest(out)
    assert m is not None
    (e,) = m.games.values()
    (a,) = e.attempts
    assert e.status == "failed" and a.outcome == "failed", a
    assert a.reason == "no end within the game time limit (killed)"
    assert a.shipped and a.wall_s is not None and 45 <= a.wall_s < 120
    names = {name for _pid, _ct, name in a.processes}
    assert "node" in names and "Xvfb" in names, names
    alive = [f"{pid} {name}" for pid, ct, name in a.processes if _alive(pid, ct)]
    assert not alive, f"processes of the timed-out game still running: {alive}"


def test_lost_node_fails_its_games_and_they_rerun_elsewhere(
    cluster: LoopbackCluster, studies: Path
) -> None:
    spec = _spec(studies, "node-loss", [1, 2])
    out = studies / "node-loss"
    driver = _driver(spec, out, cluster.address)
    # Both games are playing on node A (the only node with CPUs) ...
    deadline = time.monotonic() + 120
    while len(cluster.games_on("a")) < 2:
        assert time.monotonic() < deadline and driver.poll() is None, _log(out)
        time.sleep(0.05)
    # ... when A is lost with everything on it; node B joins after.
    cluster.kill_node("a")
    cluster.add_worker("b", cpus=2)
    assert _finish(driver, out) == 0, _log(out)
    cluster.remember()
    m = read_manifest(out)
    assert m is not None
    _counted_once(out, m)
    lost = [a for e in m.games.values() for a in e.attempts if a.outcome == "failed"]
    assert lost and all(a.reason.startswith("ray: ") for a in lost), lost
    for e in m.games.values():
        # The rerun is on B, which sees the study folder: written directly.
        assert not e.attempts[-1].shipped
