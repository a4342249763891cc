"""Serving the viewer: in the foreground for a finished game, in a thread for a live one."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from annotation.viewer.app import create_app
from annotation.viewer.study import create_study_app, is_study

DEFAULT_HOST = "127.0.0.1"
"""Loopback only unless asked otherwise: the page shows every agent's private record."""


class ViewerError(RuntimeError):
    """The viewer could not start (bad folder, port in use)."""


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port the OS says is free on `host`."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _config(run: Path, host: str, port: int, labels: Path | None) -> uvicorn.Config:
    if not Path(run).is_dir():
        raise ViewerError(f"{run} is not a folder; give the --out folder of a game or a study")
    # A study folder (a tournament's --out) gets the page listing its games.
    app = create_study_app(Path(run), labels) if is_study(run) else create_app(Path(run), labels)
    return uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")


def serve(
    run: Path, host: str = DEFAULT_HOST, port: int = 8765, labels: Path | None = None
) -> None:
    """Serve the viewer of a game or of a study folder until interrupted."""
    server = uvicorn.Server(_config(run, host, port, labels))
    server.run()


@dataclass
class BackgroundViewer:
    """A viewer served from a thread of this process (for a game being played)."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        self.thread.join(timeout=5)


def start_background(
    run: Path, host: str = DEFAULT_HOST, port: int | None = None, labels: Path | None = None
) -> BackgroundViewer:
    """Serve the viewer from a daemon thread; return once it accepts connections.

    `run` is a game's folder, or a study folder (one holding `manifest.json`), which
    gets the page listing its games. The viewer only reads the folder, so it never
    waits on or slows the game's step loop (see `benchmarks/viewer.py`).
    """
    Path(run).mkdir(parents=True, exist_ok=True)
    port = port or free_port(host)
    server = uvicorn.Server(_config(run, host, port, labels))
    # uvicorn leaves signal handling alone off the main thread: Ctrl-C stays the game's.

    def target() -> None:
        asyncio.run(server.serve())

    thread = threading.Thread(target=target, name="viewer", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise ViewerError(f"the viewer could not listen on {host}:{port}")
        time.sleep(0.02)
    return BackgroundViewer(url=f"http://{host}:{port}/", server=server, thread=thread)


__all__ = [
    "DEFAULT_HOST",
    "BackgroundViewer",
    "ViewerError",
    "free_port",
    "serve",
    "start_background",
]
