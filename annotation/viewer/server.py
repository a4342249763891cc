"""Serving the viewer: in the foreground for a finished game, in a thread for a live one."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from starlette.applications import Starlette

from annotation.viewer.access import (
    Access,
    HostPolicy,
    RemoteBindError,
    check_bind,
    new_token,
)
from annotation.viewer.app import create_app
from annotation.viewer.record import RecordProblem
from annotation.viewer.study import create_study_app, is_study

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
"""Loopback only unless asked otherwise: the page shows every agent's private record."""


class ViewerError(RuntimeError):
    """The viewer could not start (bad folder, port in use)."""


DEFAULT_PORT = 8765
"""The port `mineamongus view` tries first."""
WATCH_S = 1.0
"""How often a viewer with a `report` looks at its record with no page open."""


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port the OS says is free on `host` (it may be taken again before it is used:
    prefer `listen`, which keeps the socket)."""
    with socket.socket(_family(host)) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def listen(
    host: str = DEFAULT_HOST, port: int | None = None, fallback: bool = False
) -> socket.socket:
    """A socket listening on `host:port`, held from here on, so that the address printed
    is the one this process serves (never another process's viewer on that port).

    Args:
        host: Address to listen on.
        port: The port; None (or 0) for any free one.
        fallback: When `port` is taken, listen on a free port instead of refusing.

    Raises:
        ViewerError: `port` is taken (and no fallback), naming it; or `host` is not an
            address of this machine.
    """
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    # SO_REUSEADDR lets a restarted viewer take back a port in TIME_WAIT; on Linux it
    # never lets two sockets listen on one port.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        try:
            sock.bind((host, port or 0))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise ViewerError(f"cannot listen on {host}:{port or 0}: {exc.strerror}") from exc
            if not fallback:
                raise ViewerError(
                    f"port {port} on {host} is in use (another viewer or program); "
                    "choose another port, or leave it out for a free one"
                ) from exc
            sock.bind((host, 0))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


Report = Callable[[RecordProblem], None]
"""Told once about each record that turns out unreadable (`view` prints it)."""


def _app(
    run: Path, host: str, port: int, labels: Path | None, token: str, report: Report | None
) -> Starlette:
    if not Path(run).is_dir():
        raise ViewerError(f"{run} is not a folder; give the --out folder of a game or a study")
    access = Access(HostPolicy.for_bind(host, port), token)
    # A study folder (a tournament's --out) gets the page listing its games.
    return (
        create_study_app(Path(run), labels, access, report)
        if is_study(run)
        else create_app(Path(run), labels, access=access, report=report)
    )


def _watch(look: Callable[[], object], server: uvicorn.Server, thread: threading.Thread) -> None:
    """Look at the record every `WATCH_S` while the server runs, so that a record
    turning unreadable is reported with no page open."""
    while thread.is_alive() and not server.should_exit:
        thread.join(timeout=WATCH_S)
        try:
            look()
        except Exception:  # noqa: BLE001 - the page reports the same error; keep watching
            log.exception("the viewer could not look at its record")


@dataclass
class BackgroundViewer:
    """A viewer served from a thread of this process (for a game being played).

    Attributes:
        url: The page's address.
        port: The port it listens on.
        server: The uvicorn server.
        thread: The thread serving it.
        analyst_token: Opens a live game a person plays (`analyst_url`); for the
            experimenter's eyes only.
    """

    url: str
    port: int
    server: uvicorn.Server
    thread: threading.Thread
    analyst_token: str = ""

    @property
    def analyst_url(self) -> str:
        """The page's address with the analyst token: roles and private records even
        while a person plays a seat."""
        return f"{self.url}?analyst={self.analyst_token}"

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        self.thread.join(timeout=5)

    def wait(self) -> None:
        """Block until the server ends (Ctrl-C in the calling thread interrupts it)."""
        while self.thread.is_alive():
            self.thread.join(timeout=0.5)


def start_background(
    run: Path,
    host: str = DEFAULT_HOST,
    port: int | None = None,
    labels: Path | None = None,
    fallback: bool = False,
    allow_remote: bool = False,
    analyst_token: str | None = None,
    report: Report | None = None,
) -> BackgroundViewer:
    """Serve the viewer from a daemon thread; return once it accepts connections.

    `run` is a game's folder, or a study folder (one holding `manifest.json`), which
    gets the page listing its games. The viewer only reads the folder, so it never
    waits on or slows the game's step loop (see `benchmarks/viewer.py`).

    Args:
        run: The folder to show.
        host: Address to listen on (loopback by default).
        port: Port to listen on; None for a free one.
        labels: Where hand labels go (default `RUN/labels/`).
        fallback: When `port` is taken, serve on a free port instead of refusing.
        allow_remote: Permit a `host` that is not loopback (anyone who reaches it can
            read every private record).
        analyst_token: The token that opens a live human-seat game (default: a fresh
            one, in the returned viewer's `analyst_token`).
        report: Told once about each record that turns out unreadable; with it, a
            thread looks at the record every `WATCH_S` seconds even with no page open.

    Raises:
        ViewerError: `host` is not loopback (without `allow_remote`), `port` is taken
            (without `fallback`), or the server did not start.
    """
    try:
        check_bind(host, allow_remote)
    except RemoteBindError as exc:
        raise ViewerError(str(exc)) from exc
    token = analyst_token or new_token()
    Path(run).mkdir(parents=True, exist_ok=True)
    sock = listen(host, port, fallback)
    bound = int(sock.getsockname()[1])
    try:
        app = _app(run, host, bound, labels, token, report)
        server = uvicorn.Server(
            uvicorn.Config(app, host=host, port=bound, log_level="warning", lifespan="off")
        )
    except BaseException:
        sock.close()
        raise
    # uvicorn leaves signal handling alone off the main thread: Ctrl-C stays the caller's.

    def target() -> None:
        try:
            asyncio.run(server.serve(sockets=[sock]))
        finally:
            sock.close()

    thread = threading.Thread(target=target, name="viewer", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise ViewerError(f"the viewer could not start on {host}:{bound}")
        time.sleep(0.02)
    if report is not None:
        # A record already unreadable is reported before the address is printed.
        app.state.watch()
        threading.Thread(
            target=_watch, args=(app.state.watch, server, thread), name="viewer-watch", daemon=True
        ).start()
    shown = f"[{host}]" if ":" in host else host
    return BackgroundViewer(
        url=f"http://{shown}:{bound}/",
        port=bound,
        server=server,
        thread=thread,
        analyst_token=token,
    )


def serve(
    run: Path,
    host: str = DEFAULT_HOST,
    port: int | None = DEFAULT_PORT,
    labels: Path | None = None,
    fallback: bool = False,
    on_start: Callable[[BackgroundViewer], None] | None = None,
    allow_remote: bool = False,
    report: Report | None = None,
) -> None:
    """Serve the viewer of a game or of a study folder until interrupted (Ctrl-C).

    `on_start` is called with the running viewer (its address) before serving;
    `allow_remote` permits a non-loopback `host`, and `report` is told about records
    that turn out unreadable (see `start_background`).
    """
    viewer = start_background(
        run, host, port, labels, fallback, allow_remote=allow_remote, report=report
    )
    try:
        if on_start is not None:
            on_start(viewer)
        viewer.wait()
    finally:
        viewer.stop()


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "BackgroundViewer",
    "ViewerError",
    "free_port",
    "listen",
    "serve",
    "start_background",
]
