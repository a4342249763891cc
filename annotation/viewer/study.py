"""The viewer of a study: a page listing every game of a tournament, and each game's
own viewer under it.

Routes:
    `GET /`              the study page (plain static files)
    `GET /api/study`     the study's games: arm, seed, status, attempt folder, steps so far
    `GET /api/live`      server-sent events: `study` whenever that list changes
    `GET /game/RUN/...`  the game viewer (`annotation.viewer.app`) of the attempt folder
                         RUN (relative to the study folder, e.g. `games/ARM/seed0-try1`)

Like the game viewer it only reads: the study's `manifest.json` (which the runner
replaces atomically) and the tail of each game's `events.jsonl`. Only attempt folders
the manifest names are served. The same rules as the game viewer's apply
(`annotation.viewer.access`): its own Host names only, same-origin JSON writes, and one
analyst token for every game of the study.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from annotation.viewer.access import Access, LocalGuard
from annotation.viewer.app import STATIC, create_app
from controller.record import log_path, log_progress
from controller.tournament.manifest import MANIFEST, Manifest, ManifestError, read_manifest

LIVE_POLL_S = 1.0
"""How often the study stream looks at the manifest and the running games' logs."""


class StudyRecord:
    """What the study page shows, read from a study folder.

    Args:
        study: The folder `mineamongus tournament --out` writes.
    """

    def __init__(self, study: Path) -> None:
        self.study = Path(study).resolve()
        self._lock = threading.Lock()
        self._progress: dict[str, tuple[tuple[int, int], tuple[int | None, bool]]] = {}
        self._manifest: tuple[tuple[int, int, int], Manifest | None] | None = None

    def manifest(self) -> Manifest | None:
        """The study's manifest, read again only when the file has changed (the runner
        replaces it by rename, so a new version has a new stat); None while it is missing.

        Raises:
            ManifestError, ValueError: it cannot be read.
        """
        try:
            st = (self.study / MANIFEST).stat()
        except OSError:
            return None
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if self._manifest is not None and self._manifest[0] == key:
                return self._manifest[1]
        manifest = read_manifest(self.study)
        with self._lock:
            self._manifest = (key, manifest)
        return manifest

    def runs(self) -> set[str]:
        """Every attempt folder the manifest names (relative to the study folder); none
        while the manifest is missing or unreadable (the study page says why)."""
        try:
            manifest = self.manifest()
        except (ManifestError, ValueError):
            return set()
        if manifest is None:
            return set()
        return {a.run for e in manifest.games.values() for a in e.attempts}

    def _progress_of(self, run: str) -> tuple[int | None, bool]:
        events = log_path(self.study / run)
        try:
            st = events.stat()
        except OSError:
            return None, False
        key = (st.st_size, st.st_mtime_ns)
        with self._lock:
            cached = self._progress.get(run)
            if cached is not None and cached[0] == key:
                return cached[1]
        value = log_progress(events)
        with self._lock:
            self._progress[run] = (key, value)
        return value

    def snapshot(self) -> dict[str, Any]:
        """The study as the page shows it (games in arm order, then seed order)."""
        try:
            manifest = self.manifest()
        except (ManifestError, ValueError) as exc:
            return {"name": "", "error": str(exc), "games": [], "counts": {}}
        if manifest is None:
            return {
                "name": "",
                "error": f"{self.study}/{MANIFEST} not found yet",
                "games": [],
                "counts": {},
            }
        games = []
        for e in manifest.entries():
            run = e.run
            step, over = self._progress_of(run) if run else (None, False)
            attempt = e.attempts[-1] if e.attempts else None
            games.append(
                {
                    "key": e.key,
                    "arm": e.arm,
                    "seed": e.seed,
                    "status": e.status,
                    "attempts": len(e.attempts),
                    "run": run,
                    "url": f"game/{run}/" if run else None,
                    "step": step,
                    "over": over,
                    "reason": attempt.reason if attempt else "",
                }
            )
        return {
            "name": manifest.name,
            "world": manifest.world,
            "counts": manifest.counts(),
            "games": games,
            "paused": manifest.paused,
            "stopped": manifest.stopped,
            "error": None,
        }


class _Games:
    """Dispatches `/game/RUN/...` to the game viewer of RUN, built on first use."""

    def __init__(self, record: StudyRecord, labels_root: Path | None, access: Access) -> None:
        self.record = record
        self.labels_root = labels_root
        self.access = access
        self._mounts: dict[str, Mount] = {}
        self._lock = threading.Lock()

    def _mount(self, run: str) -> Mount:
        with self._lock:
            mount = self._mounts.get(run)
            if mount is None:
                labels = self.labels_root / run if self.labels_root is not None else None
                app = create_app(self.record.study / run, labels, study_url="/", access=self.access)
                mount = Mount(f"/{run}", app=app)
                self._mounts[run] = mount
            return mount

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        route = path[len(root) :] if root and path.startswith(root) else path
        known = await asyncio.to_thread(self.record.runs)
        # Longest first, so that no attempt folder is taken for the prefix of another.
        for run in sorted(known, key=len, reverse=True):
            prefix = f"/{run}"
            if route == prefix:
                await RedirectResponse(root + prefix + "/")(scope, receive, send)
                return
            if route.startswith(prefix + "/"):
                mount = self._mount(run)
                match, child = mount.matches(scope)
                if match == Match.FULL:
                    await mount.handle({**scope, **child}, receive, send)
                    return
        await JSONResponse({"error": "not a game of this study"}, status_code=404)(
            scope, receive, send
        )


def create_study_app(
    study: Path, labels_root: Path | None = None, access: Access | None = None
) -> Starlette:
    """The viewer of a study folder (finished or still being run).

    Args:
        study: The study folder.
        labels_root: Where hand labels go: `LABELS_ROOT/RUN/<annotator>.jsonl`
            (default each game's own `RUN/labels/`).
        access: The Host names it answers and the analyst token of all its games
            (default: loopback names on any port, and a fresh token nobody knows).
    """
    access = access if access is not None else Access()
    record = StudyRecord(study)
    games = _Games(record, labels_root, access)

    async def index(_request: Request) -> Response:
        return FileResponse(STATIC / "study.html")

    async def study_json(_request: Request) -> Response:
        return JSONResponse(await asyncio.to_thread(record.snapshot))

    async def live(request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            seen = ""
            yield "retry: 1000\n\n"
            while True:
                if await request.is_disconnected():
                    return
                payload = json.dumps(await asyncio.to_thread(record.snapshot))
                if payload != seen:
                    seen = payload
                    yield f"event: study\ndata: {payload}\n\n"
                await asyncio.sleep(LIVE_POLL_S)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    routes = [
        Route("/", index),
        Route("/api/study", study_json),
        Route("/api/live", live),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Mount("/game", app=games),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(LocalGuard, policy=access.hosts)])
    app.state.record = record
    app.state.access = access
    return app


def is_study(folder: Path) -> bool:
    """Whether a folder is a study folder (it holds a tournament manifest)."""
    return (Path(folder) / MANIFEST).is_file()


__all__ = ["StudyRecord", "create_study_app", "is_study"]
