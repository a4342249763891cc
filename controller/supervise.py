"""Supervision of the child processes the controller starts (the Node runtime, Xvfb).

One way to start, watch and stop a child, so every child gets the same guarantees:
its output goes to its own log file (appended); it never outlives the controller
(Linux `PR_SET_PDEATHSIG` delivers a signal when the *thread* that started it dies,
and a child whose parent already died before that took effect exits at once);
readiness is awaited with a deadline while watching for an early exit; and it is
stopped by its PID only (SIGTERM, then SIGKILL if it ignores that), never by name.

Example:
    >>> child = spawn(["Xvfb", "-displayfd", "5"], name="Xvfb",  # doctest: +SKIP
    ...               log_path=Path("runs/x/xvfb.log"), death_signal=signal.SIGTERM,
    ...               pass_fds=(5,))
    >>> child.wait_ready(lambda: display_written(), timeout_s=15.0)  # doctest: +SKIP
    >>> child.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
"""prctl option: the signal a process gets when its parent (thread) dies."""

LOG_TAIL_LINES = 30


def _load_libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name or "libc.so.6", use_errno=True)
    except OSError:
        return None


LIBC = _load_libc()
"""The C library, for `prctl` (None where it cannot be loaded: no parent-death signal)."""


class Readiness(Enum):
    """How waiting for a child's readiness ended."""

    READY = "ready"
    EXITED = "exited"
    TIMEOUT = "timeout"


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """Last lines of a log file (empty if it cannot be read), for error messages."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 16384))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def terminate(proc: subprocess.Popen[bytes], name: str, wait_s: float) -> None:
    """Stop a child we started, by its PID: SIGTERM, then SIGKILL if it ignores it.

    Args:
        proc: The child.
        name: Its name for the log.
        wait_s: How long SIGTERM is given before SIGKILL.
    """
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        log.warning("%s pid=%d ignored SIGTERM; sending SIGKILL", name, proc.pid)
        proc.kill()
        proc.wait(timeout=5.0)


def death_hook(death_signal: int, prepare: Callable[[], None] | None = None) -> Callable[[], None]:
    """The function a child runs between fork and exec (keep `prepare` minimal).

    Args:
        death_signal: Signal the child gets when the thread that started it dies
            (SIGKILL for a child with nothing to clean up, SIGTERM for one that must
            remove lock files).
        prepare: Runs first (e.g. `dup2` of pipe ends to fixed descriptors).
    """
    libc = LIBC
    parent_pid = os.getpid()

    def in_child() -> None:
        if prepare is not None:
            prepare()
        if libc is not None:
            libc.prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return in_child


class Supervised:
    """One running child, its log file and how to stop it.

    Made by `spawn`; `stop()` is idempotent.
    """

    def __init__(self, proc: subprocess.Popen[bytes], name: str, log_path: Path, log_fh: IO[bytes]):
        self.proc = proc
        self.name = name
        self.log_path = log_path
        self._log_fh: IO[bytes] | None = log_fh

    @property
    def pid(self) -> int:
        """The child's PID."""
        return self.proc.pid

    def alive(self) -> bool:
        """Whether the child is still running."""
        return self.proc.poll() is None

    def wait_ready(
        self, check: Callable[[], bool], timeout_s: float, poll_s: float = 0.05
    ) -> Readiness:
        """Call `check` until it is true, the child exits or `timeout_s` passes.

        Args:
            check: True once the child is ready (it may block up to about `poll_s`).
            timeout_s: Deadline.
            poll_s: Pause between checks.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            if check():
                return Readiness.READY
            if not self.alive():
                return Readiness.EXITED
            if time.monotonic() > deadline:
                return Readiness.TIMEOUT
            time.sleep(poll_s)

    def with_log(self, message: str) -> str:
        """`message` followed by the last lines of the child's log."""
        text = tail(self.log_path)
        return f"{message}\n--- last lines of {self.log_path} ---\n{text}" if text else message

    def wait(self, timeout_s: float) -> bool:
        """Wait for the child to exit by itself; True if it did in time."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self, wait_s: float = 5.0) -> None:
        """Terminate the child by PID (SIGTERM, then SIGKILL) and close its log."""
        terminate(self.proc, self.name, wait_s)
        self.close_log()

    def close_log(self) -> None:
        """Close the parent's handle on the log file."""
        if self._log_fh is not None:
            with contextlib.suppress(OSError):
                self._log_fh.close()
            self._log_fh = None


def spawn(
    cmd: Sequence[str],
    *,
    name: str,
    log_path: Path,
    death_signal: int = signal.SIGKILL,
    prepare: Callable[[], None] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    pass_fds: Sequence[int] = (),
    close_fds: bool = True,
) -> Supervised:
    """Start a supervised child; its stdout and stderr are appended to `log_path`.

    Args:
        cmd: Executable and arguments.
        name: Name for logs and messages.
        log_path: Log file (its folder is created).
        death_signal: Signal the child gets if the starting thread dies.
        prepare: Extra work between fork and exec (see `death_hook`).
        env: Full environment (default: this process's).
        cwd: Working directory.
        pass_fds: Descriptors the child inherits.
        close_fds: Close other inherited descriptors (False when `prepare` creates
            descriptors that must survive exec).

    Raises:
        OSError: The executable could not be started (the log is closed again).
    """
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_fh = log_path.open("ab")
    try:
        proc = subprocess.Popen(
            list(cmd),
            cwd=str(cwd) if cwd is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=log_fh,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            pass_fds=tuple(pass_fds),
            close_fds=close_fds,
            preexec_fn=death_hook(death_signal, prepare),  # PDEATHSIG needs it
        )
    except BaseException:
        log_fh.close()
        raise
    log.info("started %s pid=%d (log: %s)", name, proc.pid, log_path)
    return Supervised(proc, name, log_path, log_fh)
