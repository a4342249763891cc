"""The claim-labelling view: people judge the grounding audit's verdicts and extractions.

Served under a study's viewer at `/claims/` (`annotation.viewer.study`):

Routes:
    `GET /`              the page (plain static files)
    `GET /api/claims?rules=BOOK[&analyst=1]`
                         the audited claims of one rule book, grouped by utterance:
                         game, attempt folder, meeting, step, speaker, what was said,
                         and per claim its fields, verdict, reason, window and evidence
    `GET /api/labels`    the standing claim labels (every annotator; the last line of
                         each key)
    `POST /api/labels`   save one label: `{kind: "claim", annotator, game, rules, claim,
                         verdict_ok, extraction_ok}` or `{kind: "utterance", annotator,
                         game, rules, utterance, missed}`

The claims are read from the audits already written beside the study
(`<STUDY>/audit/claims.jsonl`, `<STUDY>/audit-quack/claims.jsonl`: `mineamongus audit
STUDY [--rules quack]`); what each utterance said, with its step, from the games' logs
(only attempt folders the manifest names). Without an audit the page names the command
that writes one. Labels go to `<STUDY>/labels/claims/<annotator>.jsonl`
(`annotation.grounding.labels`), never into a game's folder; the verdict and the
number of claims extracted are filled in from the audit, not taken from the page.

The same rules as every viewer page apply (`annotation.viewer.access`): only this
server's Host names, writes only as same-origin JSON. Only finished games are audited,
so nothing of a live game is listed; the speaker's role and whether an accusation hit
an impostor are left out unless the analyst view is asked for (`analyst=1` or the
analyst token).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from annotation.grounding.audit import AuditedClaim
from annotation.grounding.labels import (
    ClaimLabel,
    ClaimLabelError,
    UtteranceLabel,
    append_label,
    claim_id,
    claim_labels_dir,
    current_labels,
    label_key,
    new_label,
    utterance_id,
)
from annotation.grounding.metrics import default_audit_dir
from annotation.grounding.rules import RULE_BOOKS
from annotation.viewer.access import Access, AnalystGrant, LocalGuard
from controller.events import MeetingStart, Speech
from controller.record import RecordError, iter_log, log_path

STATIC = Path(__file__).parent / "static"
ROLE_FIELDS = frozenset({"speaker_role", "hit"})
"""Claim fields that tell roles: shown only in the analyst view."""
CLAIM_FIELDS = frozenset(
    {"kind", "annotator", "game", "rules", "claim", "verdict_ok", "extraction_ok"}
)
"""What a page may send for a claim label (the verdict is filled in from the audit)."""
UTTERANCE_FIELDS = frozenset({"kind", "annotator", "game", "rules", "utterance", "missed"})
"""What a page may send for an utterance label (the count extracted comes from the audit)."""


@dataclass(frozen=True)
class Utterance:
    """One meeting turn as the log has it."""

    meeting: int
    speaker: str
    utterance: int
    step: int
    text: str

    @property
    def id(self) -> str:
        """Its id (`annotation.grounding.labels.utterance_id`)."""
        return utterance_id(self.meeting, self.speaker, self.utterance)


def read_utterances(run: Path) -> list[Utterance]:
    """Every spoken meeting turn of a game, in order (passes and failed turns left out).

    Raises:
        controller.record.RecordError: the log cannot be read.
    """
    out: list[Utterance] = []
    meeting = 0
    for ev in iter_log(run, kinds=("meeting_start", "speech")):
        if isinstance(ev, MeetingStart):
            meeting = ev.index
        elif isinstance(ev, Speech) and ev.text and not ev.passed and not ev.failed:
            out.append(Utterance(meeting, ev.speaker, ev.utterance, ev.step, ev.text))
    return out


def _game_id(run: Path) -> str | None:
    """The game id on a log's first line (its `game_start`), without reading the rest."""
    try:
        with log_path(run).open(encoding="utf-8") as fh:
            first = json.loads(fh.readline())
    except (OSError, ValueError):
        return None
    return str(first["game_id"]) if isinstance(first, dict) and "game_id" in first else None


class ClaimsBoard:
    """The audited claims of a study (or of one run) and their labels.

    Args:
        folder: The study folder (or a run folder): its audits are `folder/audit*/`.
        labels_dir: Where claim labels go (default `folder/labels/claims/`).
        runs: The attempt folders (relative to `folder`) whose logs may be read for
            what was said; default the folder itself (a run viewed alone).
    """

    def __init__(
        self,
        folder: Path,
        labels_dir: Path | None = None,
        runs: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self.folder = Path(folder).resolve()
        self.labels_dir = Path(labels_dir) if labels_dir is not None else claim_labels_dir(folder)
        self._runs = runs if runs is not None else (lambda: ["."])
        self._lock = threading.Lock()
        self._write = threading.Lock()
        self._claims: dict[str, tuple[tuple[int, int], list[AuditedClaim]]] = {}
        self._ids: dict[str, tuple[tuple[int, int], str | None]] = {}
        self._said: dict[str, tuple[tuple[int, int], list[Utterance]]] = {}

    # ------------------------------------------------------------------ reading
    def audit_file(self, book: str) -> Path:
        """Where the audit of `book` keeps its claims."""
        return default_audit_dir(self.folder, book) / "claims.jsonl"

    def books(self) -> list[str]:
        """The rule books whose audit of this folder exists, in `RULE_BOOKS` order."""
        return [b for b in RULE_BOOKS if self.audit_file(b).is_file()]

    def claims(self, book: str) -> list[AuditedClaim]:
        """The audited claims of one book (read again when the file changes)."""
        path = self.audit_file(book)
        try:
            st = path.stat()
        except OSError:
            return []
        key = (st.st_size, st.st_mtime_ns)
        with self._lock:
            cached = self._claims.get(book)
        if cached is not None and cached[0] == key:
            return cached[1]
        rows: list[AuditedClaim] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = AuditedClaim.model_validate_json(line)
                rows.append(row)
        with self._lock:
            self._claims[book] = (key, rows)
        return rows

    def _stat_key(self, run: str) -> tuple[int, int] | None:
        try:
            st = log_path(self.folder / run).stat()
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns)

    def runs_by_game(self) -> dict[str, str]:
        """Game id -> attempt folder, for every run this board may read."""
        out: dict[str, str] = {}
        for run in sorted(self._runs()):
            key = self._stat_key(run)
            if key is None:
                continue
            with self._lock:
                cached = self._ids.get(run)
            if cached is None or cached[0] != key:
                cached = (key, _game_id(self.folder / run))
                with self._lock:
                    self._ids[run] = cached
            if cached[1] is not None:
                out.setdefault(cached[1], run)
        return out

    def said(self, run: str) -> list[Utterance]:
        """What was said in one run's meetings (an unreadable log says nothing)."""
        key = self._stat_key(run)
        if key is None:
            return []
        with self._lock:
            cached = self._said.get(run)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            found = read_utterances(self.folder / run)
        except (RecordError, OSError, ValueError):
            found = []
        with self._lock:
            self._said[run] = (key, found)
        return found

    # ------------------------------------------------------------------ answers
    def missing(self) -> str | None:
        """What to run when this folder has no audit yet (None when it has one)."""
        if self.books():
            return None
        return f"mineamongus audit {self.folder}"

    def snapshot(self, book: str, analyst: bool) -> dict[str, Any]:
        """The page's content for one rule book: every utterance of the audited games,
        each with its claims.

        Args:
            book: The rule book whose audit is shown.
            analyst: Include the speaker's role and an accusation's hit.
        """
        books = self.books()
        base: dict[str, Any] = {
            "books": books,
            "rules": book,
            "folder": str(self.folder),
            "labels": str(self.labels_dir),
            "missing": self.missing(),
            "commands": {b: _audit_command(self.folder, b) for b in RULE_BOOKS},
            "utterances": [],
            "verdicts": [],
            "claims": 0,
        }
        if book not in books:
            return base
        rows = self.claims(book)
        runs = self.runs_by_game()
        groups: dict[tuple[str, str], list[AuditedClaim]] = {}
        for row in rows:
            uid = utterance_id(row.meeting, row.speaker, row.utterance)
            groups.setdefault((row.game, uid), []).append(row)
        games = list(dict.fromkeys(row.game for row in rows))
        utterances: list[dict[str, Any]] = []
        for game in games:
            run = runs.get(game)
            spoken = self.said(run) if run is not None else []
            listed = {u.id for u in spoken}
            order: list[tuple[str, Utterance | None]] = [(u.id, u) for u in spoken]
            # Claims of an utterance the log does not hold (claims supplied by hand).
            order += [(uid, None) for (g, uid) in groups if g == game and uid not in listed]
            for uid, said in order:
                claims = groups.get((game, uid), [])
                first = claims[0] if claims else None
                utterances.append(
                    {
                        "id": uid,
                        "game": game,
                        "run": run,
                        "meeting": said.meeting if said else first.meeting if first else None,
                        "speaker": said.speaker if said else first.speaker if first else "",
                        "step": said.step if said else None,
                        "text": said.text if said else first.text if first else "",
                        "claims": [_claim_json(c, analyst) for c in claims],
                    }
                )
        base["utterances"] = utterances
        base["verdicts"] = sorted({r.verdict for r in rows})
        base["claims"] = len(rows)
        return base

    def find_claim(self, book: str, game: str, claim: str) -> AuditedClaim | None:
        """The audited claim of that id, or None."""
        for row in self.claims(book):
            if row.game == game and claim_id(row) == claim:
                return row
        return None

    def extracted(self, book: str, game: str, utterance: str) -> int | None:
        """How many claims the audit extracted from an utterance; None when no such
        utterance was said in an audited game."""
        rows = [r for r in self.claims(book) if r.game == game]
        if not rows:
            return None
        n = sum(1 for r in rows if utterance_id(r.meeting, r.speaker, r.utterance) == utterance)
        if n:
            return n
        run = self.runs_by_game().get(game)
        if run is not None and any(u.id == utterance for u in self.said(run)):
            return 0
        return None

    # ------------------------------------------------------------------ labels
    def standing(self) -> list[ClaimLabel | UtteranceLabel]:
        """The standing labels (the last line of each key).

        Raises:
            ClaimLabelError: a bad line in a label file (file and line named).
        """
        return current_labels(self.labels_dir)

    def save(self, data: Any) -> ClaimLabel | UtteranceLabel:
        """Check a label a page sent against the audit, complete it and append it.

        A claim label keeps the standing judgement of a field the page did not send
        (one button press changes one judgement).

        Raises:
            ClaimLabelError: the body names no audited claim or utterance, or a field is
                wrong (the message names it).
        """
        if not isinstance(data, dict):
            raise ClaimLabelError("body: expected a JSON object")
        kind = data.get("kind")
        allowed = CLAIM_FIELDS if kind == "claim" else UTTERANCE_FIELDS
        if kind not in ("claim", "utterance"):
            raise ClaimLabelError("kind: 'claim' or 'utterance'")
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ClaimLabelError(f"{unknown[0]}: not a field a page may send")
        book = str(data.get("rules", ""))
        if book not in self.books():
            raise ClaimLabelError(f"rules: no audit of this folder by the rule book {book!r}")
        game = str(data.get("game", ""))
        with self._write:
            if kind == "claim":
                item = str(data.get("claim", ""))
                row = self.find_claim(book, game, item)
                if row is None:
                    raise ClaimLabelError(
                        f"claim: {item!r} is not a claim of game {game!r} in the {book} audit"
                    )
                body: dict[str, Any] = {**data, "verdict": row.verdict}
                previous = self._standing_of("claim", data, item)
                if isinstance(previous, ClaimLabel):
                    for field in ("verdict_ok", "extraction_ok"):
                        if field not in data:
                            body[field] = getattr(previous, field)
            else:
                item = str(data.get("utterance", ""))
                n = self.extracted(book, game, item)
                if n is None:
                    raise ClaimLabelError(
                        f"utterance: {item!r} is not an utterance of game {game!r} in the "
                        f"{book} audit"
                    )
                body = {**data, "extracted": n}
            label = new_label(body)
            append_label(self.labels_dir, label)
        return label

    def _standing_of(
        self, kind: str, data: dict[str, Any], item: str
    ) -> ClaimLabel | UtteranceLabel | None:
        key = (str(data.get("annotator", "")), str(data.get("game", "")), str(data["rules"]))
        for label in reversed(self.standing()):
            if label_key(label) == (*key, kind, item):
                return label
        return None


def _audit_command(folder: Path, book: str) -> str:
    return f"mineamongus audit {folder}" + ("" if book == RULE_BOOKS[0] else f" --rules {book}")


def _claim_json(row: AuditedClaim, analyst: bool) -> dict[str, Any]:
    data = row.model_dump(mode="json")
    if not analyst:
        for name in ROLE_FIELDS:
            data.pop(name, None)
    data["id"] = claim_id(row)
    return data


def create_claims_app(
    folder: Path,
    labels_dir: Path | None = None,
    access: Access | None = None,
    runs: Callable[[], Iterable[str]] | None = None,
    game_prefix: str = "../game/",
) -> Starlette:
    """The claim-labelling page and API of a study (or of a run viewed alone).

    Args:
        folder: The study folder (or a run folder).
        labels_dir: Where claim labels go (default `folder/labels/claims/`).
        access: The Host names it answers and the analyst token (the study's).
        runs: The attempt folders whose logs it may read (default: the folder itself).
        game_prefix: What the page puts before an attempt folder to link a game's
            viewer (a study serves them at `/game/RUN/`).
    """
    access = access if access is not None else Access()
    board = ClaimsBoard(folder, labels_dir, runs)

    def grant(request: Request) -> AnalystGrant:
        return AnalystGrant.of_request(request, access)

    async def index(_request: Request) -> Response:
        return FileResponse(STATIC / "claims.html")

    async def get_claims(request: Request) -> Response:
        books = board.books()
        book = request.query_params.get("rules") or (books[0] if books else RULE_BOOKS[0])
        if book not in RULE_BOOKS:
            return JSONResponse({"error": f"rules: unknown rule book {book!r}"}, status_code=400)
        snap = await asyncio.to_thread(board.snapshot, book, grant(request).analyst)
        snap["game_prefix"] = game_prefix
        return JSONResponse(snap)

    async def get_labels(_request: Request) -> Response:
        try:
            labels = await asyncio.to_thread(board.standing)
        except ClaimLabelError as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        return JSONResponse([label.model_dump(mode="json") for label in labels])

    async def post_label(request: Request) -> Response:
        try:
            data = await request.json()
        except ValueError:
            return JSONResponse({"error": "body: not JSON"}, status_code=400)
        try:
            label = await asyncio.to_thread(board.save, data)
        except ClaimLabelError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(label.model_dump(mode="json"), status_code=201)

    routes = [
        Route("/", index),
        Route("/api/claims", get_claims),
        Route("/api/labels", get_labels, methods=["GET"]),
        Route("/api/labels", post_label, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(LocalGuard, policy=access.hosts)])
    app.state.board = board
    return app


__all__ = ["ClaimsBoard", "Utterance", "create_claims_app", "read_utterances"]
