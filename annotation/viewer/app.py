"""The viewer's web application: a page, a small JSON API, frames, live updates, labels.

Routes:
    `GET /`                     the page (plain static files, no build step)
    `GET /api/game?analyst=1`   seats, map, every step's positions, trails and bodies
    `GET /api/step/N?analyst=1` one step: frames, decisions, programs, transcript so far
    `GET /api/live`             server-sent events: `step` whenever the log grows,
                                `broken` once the record turns out unreadable
    `GET /api/codebook`         the deception atoms a label may name
    `GET /api/labels`           hand labels saved so far (every annotator)
    `POST /api/labels`          save one label {annotator, atom, step, actor, evidence}
    `GET /run/frames/...`       the frame images of the run folder (nothing else of it)
    `GET /claims/...`           the claim-labelling view of the run viewed alone
                                (`annotation.viewer.claims`; a study serves its own)

Without `analyst=1` the API leaves out what no player knew: roles, impostors'
private narration, and of the game's end all but the winning side and the ending
(what every player is shown when it ends).

A record the shared reader refuses (`annotation.viewer.record`: a line that is not
JSON, a file that is not text, a log cut beside its summary, an empty log nobody
writes) is shown as its error alone (`problem` in `/api/game`: file, line, fix);
every other call answers 409 with the same error.

Who may ask (`annotation.viewer.access`): only requests whose `Host` names this server;
writes only as same-origin JSON. While a person plays a seat of the game and it is not
over, every step, frame, finding and label is withheld, and `analyst=1` unlocks
nothing: only the analyst token (`?analyst=TOKEN` or `X-Analyst-Token`) does. A seat's
address (`human/<seat>.url`) is never served.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path, PurePosixPath
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from annotation.viewer.access import Access, AnalystGrant, LocalGuard
from annotation.viewer.claims import create_claims_app
from annotation.viewer.codebook import atom_letters, codebook
from annotation.viewer.record import (
    SEALED_MESSAGE,
    RecordBroken,
    RecordProblem,
    RunRecord,
    SealedError,
)

STATIC = Path(__file__).parent / "static"
ANNOTATOR = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
LIVE_POLL_S = 0.5
"""How often the live stream looks at the log for new steps."""
FRAME_SUFFIXES = frozenset({".jpg", ".jpeg", ".png"})
"""The files `/run/frames/...` serves."""
PRIVATE_FOLDERS = frozenset({"human"})
"""Run subfolders never served, whatever else changes (a seat's address and token)."""


class LabelError(ValueError):
    """A label the viewer refuses; the message names the field."""


def _refused(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def label_path(labels_dir: Path, annotator: str) -> Path:
    """The file holding one annotator's labels."""
    return labels_dir / f"{annotator}.jsonl"


def validate_label(record: RunRecord, data: Any) -> dict[str, Any]:
    """Check a label against the codebook and the game; return it in the file format.

    Raises:
        LabelError: a field is missing or wrong (the message names it).
    """
    if not isinstance(data, dict):
        raise LabelError("body: expected a JSON object")
    annotator = str(data.get("annotator", "")).strip()
    if not ANNOTATOR.match(annotator):
        raise LabelError("annotator: 1-40 letters, digits, '.', '_' or '-'")
    atom = str(data.get("atom", "")).strip().upper()
    if atom not in atom_letters():
        raise LabelError(f"atom: {atom!r} is not in the codebook ({', '.join(atom_letters())})")
    raw_step = data.get("step")
    try:
        if isinstance(raw_step, bool) or not isinstance(raw_step, int | str):
            raise TypeError(raw_step)
        step = int(raw_step)
    except (TypeError, ValueError) as exc:
        raise LabelError("step: expected an integer") from exc
    if step not in record.steps:
        raise LabelError(f"step: {step} is not a step of this game (0..{record.last_step})")
    actor = str(data.get("actor", "")).strip().lower()
    if actor not in record.game.get("agents", []):
        raise LabelError(f"actor: {actor!r} is not a seat of this game")
    evidence = str(data.get("evidence", "")).strip()
    if len(evidence) > 2000:
        raise LabelError("evidence: at most 2000 characters")
    return {
        "annotator": annotator,
        "game": record.game.get("game_id", ""),
        "atom": atom,
        "step": step,
        "actor": actor,
        "evidence": evidence,
        "source": "viewer",
        "time": round(time.time(), 3),
    }


def read_labels(labels_dir: Path) -> list[dict[str, Any]]:
    """Every label in the folder, file by file."""
    out: list[dict[str, Any]] = []
    if not labels_dir.is_dir():
        return out
    for path in sorted(labels_dir.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return out


def frame_file(run: Path, rel: str) -> Path | None:
    """The file `/run/REL` may serve: a frame image under `RUN/frames/` (symbolic links
    leading out of it included); None for anything else."""
    parts = PurePosixPath(rel).parts
    if len(parts) < 2 or parts[0] != "frames":
        return None
    if any(p in ("", ".", "..") or p.startswith(".") or "\\" in p for p in parts):
        return None
    if PurePosixPath(rel).suffix.lower() not in FRAME_SUFFIXES:
        return None
    root = (run / "frames").resolve()
    path = (run / rel).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return path


def create_app(
    run: Path,
    labels_dir: Path | None = None,
    study_url: str | None = None,
    access: Access | None = None,
    report: Callable[[RecordProblem], None] | None = None,
) -> Starlette:
    """The viewer for one run folder (finished or still being written).

    Args:
        run: The run folder.
        labels_dir: Where hand labels go, one JSONL file per annotator
            (default `RUN/labels/`).
        study_url: The page of the study this game belongs to, when served as part of
            one (`annotation.viewer.study`); the page then links back to it.
        access: The Host names it answers and the analyst token (default: loopback
            names on any port, and a fresh token nobody knows, which keeps a live
            human-seat game sealed).
        report: Called once when the record turns out unreadable (the `view` command
            prints it); `app.state.watch` looks at the record again, for a caller
            that watches it with no page open.
    """
    run = Path(run).resolve()
    record = RunRecord(run, report)
    labels = Path(labels_dir) if labels_dir is not None else run / "labels"
    access = access if access is not None else Access()

    def grant(request: Request) -> AnalystGrant:
        return AnalystGrant.of_request(request, access)

    async def index(_request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def game(request: Request) -> Response:
        g = grant(request)
        return JSONResponse({**record.meta(g.analyst, g.unlocked), "study_url": study_url})

    def broken(request: Request) -> Response | None:
        problem = record.problem_json(grant(request).unlocked)
        if problem is None:
            return None
        return JSONResponse({"error": problem["message"], "problem": problem}, status_code=409)

    async def step(request: Request) -> Response:
        g = grant(request)
        try:
            n = int(request.path_params["n"])
            return JSONResponse(record.step(n, g.analyst, g.unlocked))
        except RecordBroken as exc:
            return broken(request) or _refused(409, str(exc))
        except SealedError as exc:
            return _refused(403, str(exc))
        except (KeyError, ValueError):
            return JSONResponse({"error": "no such step"}, status_code=404)

    async def run_file(request: Request) -> Response:
        rel = str(request.path_params["path"])
        if {p.lower() for p in PurePosixPath(rel).parts} & PRIVATE_FOLDERS:
            return _refused(403, f"{rel} is private (a seat's address is never served)")
        if (refused := broken(request)) is not None:
            return refused
        if record.private(grant(request).unlocked):
            return _refused(403, SEALED_MESSAGE)
        path = frame_file(run, rel)
        if path is None:
            return _refused(404, f"{rel} is not a frame of this run")
        return FileResponse(path)

    async def live(request: Request) -> Response:
        unlocked = grant(request).unlocked

        async def stream() -> AsyncIterator[str]:
            seen: tuple[int, int, bool] = (-1, -1, False)
            over = False
            yield "retry: 1000\n\n"
            while not over:
                if await request.is_disconnected():
                    return
                await asyncio.to_thread(record.refresh)
                problem = record.problem_json(unlocked)
                if problem is not None:
                    # The page shows the error; there is nothing more to follow.
                    yield f"event: broken\ndata: {json.dumps(problem)}\n\n"
                    return
                over = record.end is not None
                now = (record.last_step, len(record.steps), record.stopped is not None)
                if now != seen or over:
                    seen = now
                    payload = json.dumps(
                        {"last_step": now[0], "steps": now[1], "over": over, "stopped": now[2]}
                    )
                    yield f"event: step\ndata: {payload}\n\n"
                if not over:
                    await asyncio.sleep(LIVE_POLL_S)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def get_codebook(_request: Request) -> Response:
        return JSONResponse(codebook())

    async def get_labels(request: Request) -> Response:
        if (refused := broken(request)) is not None:
            return refused
        if record.private(grant(request).unlocked):
            return _refused(403, SEALED_MESSAGE)
        return JSONResponse(read_labels(labels))

    async def post_label(request: Request) -> Response:
        if (refused := broken(request)) is not None:
            return refused
        if record.private(grant(request).unlocked):
            return _refused(403, SEALED_MESSAGE)
        try:
            data = await request.json()
        except ValueError:
            return JSONResponse({"error": "body: not JSON"}, status_code=400)
        try:
            label = validate_label(record, data)
        except LabelError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        labels.mkdir(parents=True, exist_ok=True)
        with label_path(labels, label["annotator"]).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(label) + "\n")
        return JSONResponse(label, status_code=201)

    routes = [
        Route("/", index),
        Route("/api/game", game),
        Route("/api/step/{n}", step),
        Route("/api/live", live),
        Route("/api/codebook", get_codebook),
        Route("/api/labels", get_labels, methods=["GET"]),
        Route("/api/labels", post_label, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Route("/run/{path:path}", run_file, methods=["GET"]),
    ]
    if study_url is None:
        # A run viewed alone labels its own claims (a study serves one page for all).
        claims = create_claims_app(run, access=access, game_prefix="../")
        routes.append(Mount("/claims", app=claims))
    app = Starlette(routes=routes, middleware=[Middleware(LocalGuard, policy=access.hosts)])
    app.state.record = record
    app.state.labels = labels
    app.state.access = access
    app.state.watch = record.refresh
    return app


__all__ = [
    "LabelError",
    "create_app",
    "frame_file",
    "label_path",
    "read_labels",
    "validate_label",
]
