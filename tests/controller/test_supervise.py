"""Process supervision shared by the Node bridge and Xvfb: logs, readiness, stop by PID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from controller.supervise import Readiness, spawn, tail


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def test_output_goes_to_the_log_and_stop_ends_the_child(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "child.log"
    child = spawn(
        [sys.executable, "-c", "import time; print('hello', flush=True); time.sleep(30)"],
        name="child",
        log_path=log,
    )
    assert child.wait_ready(lambda: "hello" in tail(log), 10.0) is Readiness.READY
    assert child.alive()
    child.stop(wait_s=5.0)
    assert not child.alive() and child.proc.returncode == -signal.SIGTERM
    child.stop()  # idempotent
    assert "hello" in child.with_log("it said")


def test_a_child_ignoring_sigterm_gets_sigkill(tmp_path: Path) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    code += "print('armed', flush=True); time.sleep(30)"
    log = tmp_path / "stubborn.log"
    child = spawn([sys.executable, "-c", code], name="stubborn", log_path=log)
    assert child.wait_ready(lambda: "armed" in tail(log), 10.0) is Readiness.READY
    t0 = time.monotonic()
    child.stop(wait_s=0.5)
    assert child.proc.returncode == -signal.SIGKILL
    assert time.monotonic() - t0 < 5.0


def test_readiness_reports_an_early_exit_and_a_timeout(tmp_path: Path) -> None:
    quitter = spawn([sys.executable, "-c", "pass"], name="quitter", log_path=tmp_path / "q.log")
    assert quitter.wait_ready(lambda: False, 10.0) is Readiness.EXITED
    sleeper = spawn(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        name="sleeper",
        log_path=tmp_path / "s.log",
    )
    try:
        assert sleeper.wait_ready(lambda: False, 0.3) is Readiness.TIMEOUT
    finally:
        sleeper.stop()


def test_a_missing_executable_raises_and_leaves_the_log_closed(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        spawn(["/nonexistent/binary"], name="ghost", log_path=tmp_path / "g.log")


def test_the_child_dies_with_the_thread_that_started_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    parent = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from controller.supervise import spawn
        child = spawn([sys.executable, "-c", "import time; time.sleep(60)"],
                      name="orphan", log_path=Path({str(tmp_path / "o.log")!r}))
        Path({str(pid_file)!r}).write_text(str(child.pid))
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", parent])
    try:
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the parent did not start its child"
            time.sleep(0.05)
        child_pid = int(pid_file.read_text())
        assert _alive(child_pid)
        proc.kill()  # the parent dies without any clean-up
        proc.wait(5)
        deadline = time.monotonic() + 5
        while _alive(child_pid):
            assert time.monotonic() < deadline, "the child outlived its parent"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
