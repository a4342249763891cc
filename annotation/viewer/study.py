"""The viewer of a study: a page listing every game of a tournament, and each game's
own viewer under it.

Routes:
    `GET /`              the study page (plain static files)
    `GET /api/study`     the study's games: arm, seed, status, attempt folder, steps so far
    `GET /api/live`      server-sent events: `study` whenever that list changes
    `GET /api/board`     the ratings board of the finished games (analyst view;
                         `annotation.viewer.board`)
    `GET /claims/...`    the claim-labelling view (`annotation.viewer.claims`)
    `GET /game/RUN/...`  the game viewer (`annotation.viewer.app`) of the attempt folder
                         RUN (relative to the study folder, e.g. `games/ARM/seed0-try1`)

Like the game viewer it only reads: the study's `manifest.json` (which the runner
replaces atomically) and the tail of each game's `events.jsonl`. Only attempt folders
the manifest names are served. A game whose record cannot be read is listed with its
error (`problem`: file, line, fix; each record is read whole once, and again when it
changes, a few per update of the list) and its page shows that error; the other games
are unaffected. The same rules as the game viewer's apply (`annotation.viewer.access`):
its own Host names only, same-origin JSON writes, and one analyst token for every game
of the study.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
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
from annotation.viewer.board import board_endpoint
from annotation.viewer.claims import create_claims_app
from annotation.viewer.record import RecordProblem, record_problem
from controller.record import SUMMARY_FILE, log_path, log_progress
from controller.tournament.manifest import MANIFEST, Manifest, ManifestError, read_manifest

LIVE_POLL_S = 1.0
"""How often the study stream looks at the manifest and the running games' logs."""
CHECK_BUDGET_S = 0.05
"""Seconds one look at the study may spend reading records whole (the rest wait for
the next look)."""
RECHECK_S = 5.0
"""How often a game still being written is read whole again."""


class StudyRecord:
    """What the study page shows, read from a study folder.

    Args:
        study: The folder `mineamongus tournament --out` writes.
        report: Called once for each game whose record turns out unreadable.
    """

    def __init__(self, study: Path, report: Callable[[RecordProblem], None] | None = None) -> None:
        self.study = Path(study).resolve()
        self._lock = threading.Lock()
        self._progress: dict[str, tuple[tuple[int, int], tuple[int | None, bool]]] = {}
        self._manifest: tuple[tuple[int, int, int], Manifest | None] | None = None
        self._problems: dict[str, tuple[tuple[int, int, int], RecordProblem | None, float]] = {}
        self._found: dict[str, RecordProblem] = {}
        """Problems the games' own pages found (before the list came to read them)."""
        self._report = report
        self._reported: set[str] = set()

    def found(self, run: str, problem: RecordProblem) -> None:
        """A game's own viewer found its record unreadable: list it so."""
        with self._lock:
            self._found[run] = problem
        self._tell(run, problem)

    def _tell(self, run: str, problem: RecordProblem) -> None:
        with self._lock:
            if run in self._reported:
                return
            self._reported.add(run)
        if self._report is not None:
            self._report(problem)

    def problem_of(self, run: str, deadline: float | None = None) -> RecordProblem | None:
        """Why a game's record cannot be read (None: it can, or it is not written yet).

        The whole record is read (`record_problem`), again only when its log or summary
        has changed, and for a game still being written at most every `RECHECK_S`
        seconds. Past `deadline` (`time.monotonic`), a game not yet read keeps its last
        verdict until a later call: a study of a thousand games is read over a few
        updates of its list, never in one.
        """
        with self._lock:
            found = self._found.get(run)
            cached = self._problems.get(run)
        if found is not None:
            return found
        folder = self.study / run
        try:
            st = log_path(folder).stat()
        except OSError:
            return None
        try:
            summary = (folder / SUMMARY_FILE).stat().st_mtime_ns
        except OSError:
            summary = 0
        key = (st.st_size, st.st_mtime_ns, summary)
        now = time.monotonic()
        if cached is not None:
            (was, problem, when) = cached
            # An empty log is looked at again: it turns broken with time alone.
            fresh = was == key and (st.st_size > 0 or problem is not None)
            growing = not summary and now - when < RECHECK_S
            if fresh or growing or (deadline is not None and now > deadline):
                return problem
        elif deadline is not None and now > deadline:
            return None
        problem = record_problem(folder)
        with self._lock:
            self._problems[run] = (key, problem, now)
        if problem is not None:
            self._tell(run, problem)
        return problem

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
        deadline = time.monotonic() + CHECK_BUDGET_S
        for e in manifest.entries():
            run = e.run
            step, over = self._progress_of(run) if run else (None, False)
            problem = self.problem_of(run, deadline) if run else None
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
                    # Without the line's excerpt: the list is for annotators too.
                    "problem": problem.json(redact=True) if problem is not None else None,
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
                app = create_app(
                    self.record.study / run,
                    labels,
                    study_url="/",
                    access=self.access,
                    report=functools.partial(self.record.found, run),
                )
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
    study: Path,
    labels_root: Path | None = None,
    access: Access | None = None,
    report: Callable[[RecordProblem], None] | None = None,
) -> Starlette:
    """The viewer of a study folder (finished or still being run).

    Args:
        study: The study folder.
        labels_root: Where hand labels go: `LABELS_ROOT/RUN/<annotator>.jsonl`
            (default each game's own `RUN/labels/`).
        access: The Host names it answers and the analyst token of all its games
            (default: loopback names on any port, and a fresh token nobody knows).
        report: Called once for each game whose record turns out unreadable;
            `app.state.watch` looks at the study again, for a caller that watches it
            with no page open.
    """
    access = access if access is not None else Access()
    record = StudyRecord(study, report)
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
        Route("/api/board", board_endpoint(record.study, access)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Mount("/game", app=games),
        Mount("/claims", app=create_claims_app(study, access=access, runs=record.runs)),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(LocalGuard, policy=access.hosts)])
    app.state.record = record
    app.state.access = access
    app.state.watch = record.snapshot
    return app


def is_study(folder: Path) -> bool:
    """Whether a folder is a study folder (it holds a tournament manifest)."""
    return (Path(folder) / MANIFEST).is_file()


__all__ = ["StudyRecord", "create_study_app", "is_study"]
