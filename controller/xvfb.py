"""A private X server (Debian's `Xvfb`) for headless OpenGL rendering.

headless-gl, which the Node renderer (`bots/render.js`) draws with, gets no OpenGL
context without an X server. `Xvfb` lets the X server pick a free display number
itself (`-displayfd`), so several runs on one machine never collide; the Node bridge
is then started with `DISPLAY` set to it:

Example:
    >>> with Xvfb(log_path=Path("runs/x/xvfb.log")) as xvfb:  # doctest: +SKIP
    ...     bridge = NodeBridge(log_path=Path("runs/x/node.log"), env=xvfb.env())

Like the Node child (see `controller.bridge`), the X server never outlives the
controller: it gets SIGTERM when the thread that started it dies (Linux
`PR_SET_PDEATHSIG`), so start it from a long-lived thread (normally the main thread).
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from types import TracebackType

from controller.supervise import Readiness, Supervised, spawn

log = logging.getLogger(__name__)

DEFAULT_SCREEN = "1280x720x24"
"""Screen 0 geometry and depth (the renderer draws off-screen; this only sizes the root)."""


class XvfbError(RuntimeError):
    """Xvfb is missing, failed to start, or did not report its display in time."""


def find_xvfb(executable: str | None = None) -> str:
    """Locate the `Xvfb` executable.

    Args:
        executable: Explicit path; otherwise `$MAU_XVFB`, then `Xvfb` on `PATH`.

    Returns:
        Absolute path of the executable.

    Raises:
        XvfbError: Xvfb is not installed.
    """
    candidate = executable or os.environ.get("MAU_XVFB") or shutil.which("Xvfb")
    if not candidate or not Path(candidate).is_file():
        raise XvfbError(
            "Xvfb not found (looked at $MAU_XVFB and PATH): run scripts/setup.sh "
            "(it installs the Debian packages xvfb and xauth)"
        )
    return str(Path(candidate).resolve())


class Xvfb:
    """One supervised `Xvfb` process on a display number it chose itself.

    Args:
        log_path: File Xvfb's stdout and stderr are appended to.
        screen: Geometry and depth of screen 0 (`WIDTHxHEIGHTxDEPTH`).
        executable: Xvfb executable (default: `$MAU_XVFB`, then `Xvfb` on PATH).
        ready_timeout_s: How long `start()` waits for Xvfb to report its display.
    """

    def __init__(
        self,
        log_path: Path,
        *,
        screen: str = DEFAULT_SCREEN,
        executable: str | None = None,
        ready_timeout_s: float = 15.0,
    ) -> None:
        self.log_path = Path(log_path)
        self.screen = screen
        self.executable = executable
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self._display: str | None = None
        self._child: Supervised | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def pid(self) -> int | None:
        """PID of the Xvfb process (None before `start()`)."""
        return self.proc.pid if self.proc is not None else None

    @property
    def display(self) -> str:
        """The X display, e.g. `:99`.

        Raises:
            XvfbError: Not started.
        """
        if self._display is None:
            raise XvfbError("Xvfb is not started")
        return self._display

    def env(self) -> dict[str, str]:
        """Environment for a child that must draw on this display (`DISPLAY`)."""
        return {"DISPLAY": self.display}

    def start(self) -> str:
        """Start Xvfb and wait until it accepts connections.

        Returns:
            The display (e.g. `:99`).

        Raises:
            XvfbError: Xvfb is missing, exited, or reported no display within
                `ready_timeout_s` (it is then terminated).
        """
        if self.proc is not None:
            raise XvfbError("Xvfb already started")
        executable = find_xvfb(self.executable)
        # Xvfb writes the display number to this pipe once it accepts connections.
        ready_r, ready_w = os.pipe()
        cmd = [
            executable,
            "-displayfd",
            str(ready_w),
            "-screen",
            "0",
            self.screen,
            "-nolisten",
            "tcp",
        ]
        try:
            # SIGTERM (not SIGKILL) at the parent's death, so Xvfb removes its lock
            # file and socket.
            self._child = spawn(
                cmd,
                name="Xvfb",
                log_path=self.log_path,
                death_signal=signal.SIGTERM,
                pass_fds=(ready_w,),
            )
        except OSError as exc:
            os.close(ready_r)
            os.close(ready_w)
            raise XvfbError(f"cannot start {executable}: {exc}") from exc
        self.proc = self._child.proc
        os.close(ready_w)
        try:
            number = self._read_display(ready_r)
        except XvfbError:
            self.close()
            raise
        finally:
            os.close(ready_r)
        self._display = f":{number}"
        log.info("Xvfb pid=%d serves display %s", self.proc.pid, self._display)
        return self._display

    def _read_display(self, fd: int) -> int:
        """Read the display number Xvfb writes to `fd` (a line such as `99\\n`)."""
        child = self._child
        assert child is not None
        got = bytearray()
        eof = False

        def written() -> bool:
            nonlocal eof
            readable, _, _ = select.select([fd], [], [], 0.1)
            if readable:
                chunk = os.read(fd, 64)
                eof = not chunk  # EOF: Xvfb exited (or closed the fd) without a display
                got.extend(chunk)
            return b"\n" in got or eof

        readiness = child.wait_ready(written, self.ready_timeout_s, poll_s=0.0)
        if readiness is Readiness.TIMEOUT:
            raise XvfbError(
                f"Xvfb reported no display within {self.ready_timeout_s:.0f} s "
                f"(see {self.log_path})"
            )
        text = bytes(got).decode("ascii", errors="replace").strip()
        if not text.isdigit():
            code = child.proc.poll()
            raise XvfbError(
                f"Xvfb did not start (exit code {code}, reported {text!r}); see {self.log_path}"
            )
        return int(text)

    def close(self, timeout_s: float = 5.0) -> None:
        """Terminate Xvfb by PID (SIGTERM, then SIGKILL). Idempotent.

        Args:
            timeout_s: How long to wait for Xvfb to exit after SIGTERM.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._child is not None:
            self._child.stop(timeout_s)  # by PID: SIGTERM, then SIGKILL

    def __enter__(self) -> Xvfb:
        if self.proc is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
