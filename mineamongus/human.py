"""`human`: a seat played by a person, through a page served on loopback.

Configured like any kind, for a side (`crew: {agent: human}`) or, more usually, for one
seat beside the models (`seats: {red: {agent: human, args: {port: 8800}}}`, see
`GameConfig.seats`). Each human seat serves its own page (Starlette + uvicorn, the
viewer's stack) on 127.0.0.1, a free port unless `port` is given, and prints its
address (also written to `<run>/human/<seat>.url`, readable by its owner only, mode
0600 in a 0700 folder, and never served by the viewer); the address carries a token
the page's API requires. The page answers only requests whose `Host` is its own
(`127.0.0.1`, `localhost` or `[::1]` on its port: a rebinding name gets 421), and an
answer only as JSON from its own origin (`Origin` and `Sec-Fetch-Site`, when sent).

The page shows what the seat's state view allows and nothing more: the first-person
frame (when frames are on), the state-view text (`controller.views.Knowledge`, `ego`
by default), the eight decision modules with the action mask (what the rules allow
now, as far as the seat may know: `mineamongus.spaces.Codec.mask`), the pickers of
each module's argument (target, body, station, room), the chat with a text box for
the seat's line, and the ballot. Beside them, a top-down map of the ship (its rooms,
corridors and emergency button: the map every player is given) with the seat's own
position and facing, and the seat's own task list (each task's station, room and
whether it is done, from the seat's observation; an impostor is given none, so it
sees none). No other player's position or role is on the map.

The step loop waits for the person as it waits for a model: `decide` returns when the
page answers. A person's answer becomes the seat's decision through the same code an
environment's action goes through (`Codec.decide`), and the loop validates its
program like any agent's, so a choice the rules refuse is the seat's logged `rules`
failure, never replaced. The per-decision time limit follows a model call's rule:
past `timeout_s` (300 s by default) with no answer, the decision is an
`infrastructure` failure of class `timeout` and the bot stands still; the game goes
on. The record names the seat `{"kind": "human", ...}` in `game_start.agent_specs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.agents.base import Agent, AgentDecision
from controller.agents.registry import register
from controller.observation import Observation

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

    from controller.agents.registry import SideContext, SideFactory
    from controller.config import RulesConfig
    from controller.views import Knowledge
    from mineamongus.spaces import Codec
    from world.geometry import ShipGeometry
    from world.spec import MapSpec

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
"""The only address a seat listens on: the page shows the seat's private view."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""The host names a browser on this machine may use for the seat's page."""
DEFAULT_TIMEOUT_S = 300.0
"""Seconds a decision waits for the person by default (`timeout_s`)."""
LINGER_S = 10.0
"""Seconds the page stays up after the game ended (to show the result)."""
POLL_S = 0.5
"""How often the seat looks for the game's end (`summary.json` in the run folder)."""

ARGUMENT = {
    "KILL": "target",
    "REPORT": "body",
    "MISSION": "station",
    "MOVE": "room",
    "MEETING": "text",
    "VOTE": "vote",
}
"""Module -> the action key its argument is read from (`mineamongus.spaces`)."""


class HumanSeatError(RuntimeError):
    """The seat's page could not be served (its port is taken, the server did not start)."""


class HumanArgs(BaseModel):
    """Arguments of the `human` agent kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    port: int | None = Field(default=None, ge=1, le=65535)
    """Port of the seat's page on 127.0.0.1; None takes a free one. A side of several
    human seats serves them on `port`, `port + 1`, ... in seat order."""
    timeout_s: float | None = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    """Seconds each decision waits for the person's answer (a model call's time limit,
    as a human's). Past it the decision is logged as an `infrastructure` failure of
    class `timeout` and the bot stands still, as after a model call that timed out;
    None waits as long as it takes."""
    state: Literal["ego", "privileged"] = "ego"
    """What the page's state view shows: `ego` (what the camera's field of view showed)
    or `privileged` (all around, the server's roster, the map); the action mask is
    built from the same knowledge."""
    name: str | None = Field(
        default=None, min_length=1, max_length=32, pattern=r"^[A-Za-z0-9][A-Za-z0-9 _.-]*$"
    )
    """The name the person plays under (a short handle they choose, never more: letters,
    digits, space, `_ . -`), recorded with the seat so the person's games form one row of
    the ratings (`mineamongus rank`); None records none (the row reads `human`)."""


# ---------------------------------------------------------------------- the desk
@dataclass
class Question:
    """One decision the seat is asked, as the page shows it."""

    id: int
    phase: str
    view_text: str
    codec: Codec
    loop: asyncio.AbstractEventLoop
    wake: asyncio.Future[None]
    payload: dict[str, Any]
    jpeg: bytes | None
    asked: float = field(default_factory=time.monotonic)
    decision: AgentDecision | None = None
    closed: bool = False


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Desk:
    """Where the game thread's questions meet the page's answers (thread-safe).

    Args:
        seat: The seat's colour.
        timeout_s: The per-decision time limit (None: none).
        spec: Written beside every decision (`{"state": ...}`).
    """

    def __init__(
        self,
        seat: str,
        timeout_s: float | None,
        spec: dict[str, Any],
        sketch: dict[str, Any] | None = None,
    ) -> None:
        self.seat = seat
        self.timeout_s = timeout_s
        self.spec = spec
        self.sketch: dict[str, Any] = dict(sketch or {})
        """The map the page draws (`map_sketch`); empty when none was given."""
        self.role = ""
        self._place: dict[str, Any] | None = None
        self.teammates: list[str] = []
        self._lock = threading.Lock()
        self._current: Question | None = None
        self._count = 0
        self._chat: dict[int, dict[str, Any]] = {}
        self._last: dict[str, Any] | None = None
        self._result: dict[str, Any] | None = None

    # ------------------------------------------------------------------ game thread
    def ask(
        self,
        known: Observation,
        view_text: str,
        codec: Codec,
        payload: dict[str, Any],
        jpeg: bytes | None,
        place: dict[str, Any] | None = None,
    ) -> Question:
        """Open a question (on the game's event loop); the page shows it from now on.

        `place` is where the seat stands and its own tasks (`seat_place`), drawn on
        the page's map until the next question."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._count += 1
            self.role = known.role
            self.teammates = list(known.teammates)
            if place is not None:
                self._place = dict(place)
            for entry in known.chat:
                self._chat[entry.index] = {
                    "index": entry.index,
                    "step": entry.step,
                    "kind": entry.kind,
                    "speaker": entry.speaker,
                    "text": entry.text,
                }
            q = Question(
                id=self._count,
                phase=known.phase,
                view_text=view_text,
                codec=codec,
                loop=loop,
                wake=loop.create_future(),
                payload={**payload, "id": self._count},
                jpeg=jpeg,
            )
            self._current = q
        return q

    def close(self, q: Question) -> AgentDecision | None:
        """Close a question: its decision, or None when the page gave none."""
        with self._lock:
            q.closed = True
            if self._current is q:
                self._current = None
            if q.decision is None:
                limit = f"within {self.timeout_s:g} s" if self.timeout_s is not None else "in time"
                self._last = {
                    "question": q.id,
                    "message": f"no answer {limit}: this step passed without a decision "
                    "(your bot stood still)",
                    "refused": "",
                }
            return q.decision

    def finish(self, summary: Mapping[str, Any]) -> None:
        """The game has ended: the page shows how."""
        with self._lock:
            self._current = None
            self._result = {
                "status": summary.get("status"),
                "winner": summary.get("winner"),
                "ending": summary.get("ending"),
                "reason": summary.get("reason") or "",
            }

    # ------------------------------------------------------------------ web thread
    def state(self) -> dict[str, Any]:
        """What the page shows now."""
        with self._lock:
            q = self._current
            question = None
            if q is not None:
                question = dict(q.payload)
                if self.timeout_s is not None:
                    left = self.timeout_s - (time.monotonic() - q.asked)
                    question["seconds_left"] = round(max(0.0, left), 1)
            status = "over" if self._result else ("asking" if q is not None else "waiting")
            return {
                "seat": self.seat,
                "role": self.role,
                "teammates": list(self.teammates),
                "status": status,
                "question": question,
                "chat": [self._chat[i] for i in sorted(self._chat)][-200:],
                "last": self._last,
                "result": self._result,
                "timeout_s": self.timeout_s,
                "place": self._place,
            }

    def frame(self, qid: int) -> bytes | None:
        """The frame of an open question."""
        with self._lock:
            q = self._current
            return q.jpeg if q is not None and q.id == qid else None

    def answer(self, qid: Any, action: Any) -> tuple[int, dict[str, Any]]:
        """Take the page's answer to question `qid`: (HTTP status, reply)."""
        with self._lock:
            q = self._current
            if q is None or q.id != qid or q.closed or q.decision is not None:
                return 409, {
                    "ok": False,
                    "message": "that question is no longer open (answered, timed out, or "
                    "the game moved on)",
                }
            decision = q.codec.decide(action, q.phase, q.view_text, dict(self.spec))
            q.decision = decision
            self._current = None
            self._last = {
                "question": q.id,
                "module": decision.module,
                "raw": decision.raw,
                "refused": decision.rules_error,
                "message": (
                    f"refused by the rules: {decision.rules_error} (logged as your decision; "
                    "your bot stands still this step)"
                    if decision.rules_error
                    else f"sent {decision.raw}"
                ),
            }
            reply = {"ok": True, **self._last}
        # The game's loop may be gone already (the game ended meanwhile).
        with contextlib.suppress(RuntimeError):
            q.loop.call_soon_threadsafe(_wake, q.wake)
        return 200, reply


# ---------------------------------------------------------------------- the page
def seat_refusal(method: str, headers: Mapping[str, str], port: int) -> tuple[int, str] | None:
    """Why the seat's page refuses a request (status, message), before its token is
    looked at; None when it may go on.

    Only its own `Host` (a loopback name on `port`) is answered; a write must be JSON
    from the page's own origin (a cross-site page may post to loopback, and may reach
    it under a rebinding name).
    """
    host = headers.get("host", "").strip().lower()
    if host not in {f"{name}:{port}" for name in LOOPBACK_NAMES}:
        return 421, "this page answers only its own address (127.0.0.1 and its port)"
    if method in ("GET", "HEAD", "OPTIONS"):
        return None
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        return 415, "send application/json"
    origin = headers.get("origin")
    if origin is not None and origin.strip().lower() != f"http://{host}":
        return 403, f"an answer from another origin ({origin}) is refused"
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in ("same-origin", "none"):
        return 403, f"an answer from another site ({site}) is refused"
    return None


def seat_app(desk: Desk, token: str, port: int) -> Starlette:
    """The seat's page and its API (see `mineamongus.human_page`).

    Args:
        desk: What the page shows and where its answers go.
        token: The seat's token, which every API call must carry.
        port: The port it is served on (the only one its `Host` check accepts).
    """
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route
    from starlette.types import ASGIApp, Receive, Scope, Send

    from mineamongus.human_page import PAGE

    class Guard:
        """Refuses what `seat_refusal` refuses, for every route."""

        def __init__(self, app: ASGIApp) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                request = Request(scope)
                why = seat_refusal(request.method, request.headers, port)
                if why is not None:
                    reply = JSONResponse({"ok": False, "message": why[1]}, status_code=why[0])
                    await reply(scope, receive, send)
                    return
            await self.app(scope, receive, send)

    def allowed(request: Request) -> bool:
        given = request.headers.get("x-seat-token") or request.query_params.get("token", "")
        return bool(given) and secrets.compare_digest(given.encode(), token.encode())

    denied = {"ok": False, "message": "open the address the seat printed (it holds a token)"}

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE, headers={"Cache-Control": "no-store"})

    async def state(request: Request) -> Response:
        if not allowed(request):
            return JSONResponse(denied, status_code=403)
        return JSONResponse(desk.state(), headers={"Cache-Control": "no-store"})

    async def ship(request: Request) -> Response:
        if not allowed(request):
            return JSONResponse(denied, status_code=403)
        return JSONResponse(desk.sketch)

    async def frame(request: Request) -> Response:
        if not allowed(request):
            return JSONResponse(denied, status_code=403)
        data = desk.frame(int(request.path_params["qid"]))
        if data is None:
            return Response(status_code=404)
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "no-store"})

    async def act(request: Request) -> Response:
        if not allowed(request):
            return JSONResponse(denied, status_code=403)
        # JSON only: a cross-site form post cannot send it without the browser asking first.
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"ok": False, "message": "send application/json"}, status_code=415)
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError):
            return JSONResponse({"ok": False, "message": "the body is not JSON"}, 400)
        if not isinstance(body, dict) or not isinstance(body.get("question"), int):
            return JSONResponse(
                {"ok": False, "message": 'send {"question": ID, "action": {...}}'}, 400
            )
        code, reply = desk.answer(body["question"], body.get("action"))
        return JSONResponse(reply, status_code=code)

    return Starlette(
        routes=[
            Route("/", page),
            Route("/api/state", state),
            Route("/api/map", ship),
            Route("/api/frame/{qid:int}", frame),
            Route("/api/act", act, methods=["POST"]),
        ],
        middleware=[Middleware(Guard)],
    )


def _listen(port: int | None, where: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port or 0))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise HumanSeatError(
                f"{where}: port {port} on {LOOPBACK} is in use; choose another, or leave "
                "`port` out for a free one"
            ) from exc
        raise HumanSeatError(f"{where}: cannot listen on {LOOPBACK}:{port}: {exc}") from exc
    sock.set_inheritable(False)
    return sock


class SeatServer:
    """The seat's page, served from a daemon thread of this process.

    Args:
        desk: What the page shows and where its answers go.
        port: The port (None: a free one).
        where: The configuration field, for error messages.

    Raises:
        HumanSeatError: The port is taken or the server did not start.
    """

    def __init__(self, desk: Desk, port: int | None, where: str) -> None:
        import uvicorn

        self.token = secrets.token_urlsafe(12)
        sock = _listen(port, where)
        self.port = int(sock.getsockname()[1])
        self.url = f"http://{LOOPBACK}:{self.port}/?token={self.token}"
        config = uvicorn.Config(
            seat_app(desk, self.token, self.port),
            host=LOOPBACK,
            port=self.port,
            log_level="warning",
            lifespan="off",
        )
        self.server: uvicorn.Server = uvicorn.Server(config)

        def serve() -> None:
            try:
                asyncio.run(self.server.serve(sockets=[sock]))
            finally:
                sock.close()

        self.thread = threading.Thread(target=serve, name=f"human-seat-{desk.seat}", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.server.should_exit = True
                raise HumanSeatError(f"{where}: the seat's page did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=5)


# ---------------------------------------------------------------------- the address
def seat_url_path(run_dir: Path, seat: str) -> Path:
    """Where a seat's address (with its token) is written: `RUN/human/<seat>.url`."""
    return Path(run_dir) / "human" / f"{seat}.url"


def write_private(path: Path, text: str) -> None:
    """Write `text` readable by this user only (file 0600, its folder 0700), whatever
    the umask; a file left by an earlier game is narrowed first."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(text)


# ---------------------------------------------------------------------- the map
def map_sketch(spec: MapSpec) -> dict[str, Any]:
    """The ship as the seat's page draws it: rooms, corridors, the emergency button and
    the meeting room, in block coordinates (`x` east, `z` south). What every player is
    given; no station, no player."""
    return {
        "name": spec.name,
        "rooms": [{"name": r.name, "rect": r.rect.model_dump()} for r in spec.rooms],
        "corridors": [{"name": c.name, "rect": c.rect.model_dump()} for c in spec.corridors],
        "button": list(spec.emergency_button),
        "meeting_room": spec.meeting_room,
    }


def seat_place(known: Observation, geometry: ShipGeometry) -> dict[str, Any]:
    """Where the seat stands (position, facing, room) and its own tasks, each with its
    station's name, room and cell and whether it is done: only what the seat's own
    observation holds. An impostor's observation lists no task, so neither does this.
    """
    names = {s.id: s.name for s in geometry.spec.stations}
    done = set(known.tasks_done)
    return {
        # As observed (the view's text rounds the same numbers: no second rounding).
        "pos": [float(v) for v in known.pos],
        "yaw": round(float(known.yaw), 1),
        "room": known.room,
        "ghost": known.ghost,
        "tasks": [
            {
                "station": s,
                "name": names.get(s, f"station {s}"),
                "room": geometry.station_room(s),
                "cell": list(geometry.station_cell(s)),
                "done": s in done,
            }
            for s in known.tasks
        ],
    }


# ---------------------------------------------------------------------- the agent
def _options(labels: list[str], allowed: Any) -> list[dict[str, Any]]:
    return [
        {"value": i, "label": label, "allowed": bool(allowed is not None and allowed[i])}
        for i, label in enumerate(labels)
    ]


class HumanAgent:
    """One seat played by a person through its page.

    Args:
        agent_id: The seat.
        geometry: The map.
        rules: The game's rules (for the view's range and the codec).
        args: The kind's arguments.
        run_dir: The run folder (the page's address goes to `human/<seat>.url`, mode
            0600; the seat watches for the game's `summary.json` there to show the
            result).
        port: The port to serve on (None: a free one).
        where: The configuration field naming the seat, for error messages.
    """

    def __init__(
        self,
        agent_id: str,
        geometry: ShipGeometry,
        rules: RulesConfig,
        args: HumanArgs,
        run_dir: Path | None = None,
        port: int | None = None,
        where: str = "human",
    ) -> None:
        from controller.views import Knowledge

        self.agent_id = agent_id
        self.geometry = geometry
        self.rules = rules
        self.args = args
        self.run_dir = run_dir
        self.knowledge: Knowledge = Knowledge(args.state, geometry, ego_range=rules.vision_radius)
        self._codec: Codec | None = None
        self.desk = Desk(agent_id, args.timeout_s, {"state": args.state}, map_sketch(geometry.spec))
        self.server = SeatServer(self.desk, port, where)
        self.url = self.server.url
        self._stopped = threading.Event()
        # The address is for the person at the keyboard, not a log line: it goes to
        # stderr whatever the logging set-up (a study's game writes it to play.log).
        print(
            f"human seat {agent_id}: open {self.url} in a browser to play it",
            file=sys.stderr,
            flush=True,
        )
        log.info("human seat %s serves %s", agent_id, self.url)
        if run_dir is not None:
            write_private(seat_url_path(Path(run_dir), agent_id), self.url + "\n")
            threading.Thread(
                target=self._watch, name=f"human-seat-{agent_id}-end", daemon=True
            ).start()

    def describe(self) -> dict[str, Any]:
        """The seat's record entry: a person."""
        entry: dict[str, Any] = {
            "kind": "human",
            "state": self.args.state,
            "timeout_s": self.args.timeout_s,
        }
        if self.args.name is not None:
            entry["name"] = self.args.name
        return entry

    def codec(self, obs: Observation) -> Codec:
        """The spaces of this game (built from the first observation's seats)."""
        if self._codec is None:
            from controller.config import GameConfig
            from mineamongus.spaces import Codec

            config = GameConfig(
                rules=self.rules,
                colors=tuple(obs.players),
                frames="jpg" if obs.jpeg is not None else "off",
            )
            self._codec = Codec(config, self.geometry)
        return self._codec

    def _payload(
        self, known: Observation, text: str, codec: Codec, jpeg: bytes | None
    ) -> dict[str, Any]:
        from mineamongus.spaces import MODULES

        mask = codec.mask(known)
        modules = mask["module"]
        names = [s.capitalize() for s in codec.seats]
        stations = [f"{s} ({self.geometry.station_room(s)})" for s in codec.stations]
        return {
            "phase": known.phase,
            "step": known.step,
            "view": text,
            "frame": jpeg is not None,
            "modules": [
                {"name": m, "argument": ARGUMENT.get(m), "allowed": bool(modules[i])}
                for i, m in enumerate(MODULES)
                if modules is not None
            ],
            "options": {
                "target": _options(names, mask["target"]),
                "body": _options(names, mask["body"]),
                "station": _options(stations, mask["station"]),
                "room": _options(list(codec.rooms), mask["room"]),
                "vote": _options([*names, "Skip", "Abstain"], mask["vote"]),
            },
            "max_text": codec.text_max,
            "speaker": known.scoreboard.speaker,
        }

    async def decide(self, obs: Observation) -> AgentDecision:
        """Show the observation on the page and wait for the person's answer."""
        known = self.knowledge.update(obs)
        text = self.knowledge.view(known).to_text()
        codec = self.codec(obs)
        jpeg = obs.jpeg
        q = self.desk.ask(
            known,
            text,
            codec,
            self._payload(known, text, codec, jpeg),
            jpeg,
            seat_place(known, self.geometry),
        )
        try:
            await asyncio.wait({q.wake}, timeout=self.args.timeout_s)
        finally:
            decision = self.desk.close(q)
        if decision is not None:
            return decision
        return AgentDecision(
            infrastructure="timeout",
            invalid=f"the person at {self.agent_id} gave no answer within "
            f"{self.args.timeout_s:g} s (human.timeout_s)",
            view_text=text,
            spec={"state": self.args.state},
        )

    def _watch(self) -> None:
        assert self.run_dir is not None
        summary = Path(self.run_dir) / "summary.json"
        while not self._stopped.is_set():
            if summary.is_file():
                try:
                    data = json.loads(summary.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    data = None
                if isinstance(data, dict):
                    self.desk.finish(data)
                    self._stopped.wait(LINGER_S)
                    self.close()
                    return
            self._stopped.wait(POLL_S)

    def close(self) -> None:
        """Stop serving the page (it also stops by itself once the game has ended)."""
        self._stopped.set()
        self.server.stop()


# ---------------------------------------------------------------------- the kind
class HumanKind:
    """`human`: a person plays the seat through a page on loopback (see the module)."""

    name = "human"

    def parse_args(self, args: Mapping[str, Any]) -> BaseModel:
        """Validate `port`, `timeout_s`, `state`."""
        return HumanArgs.model_validate(dict(args))

    def check(self, args: BaseModel, side: str) -> None:
        """A fixed port must be free now (it is bound again when the seat is built)."""
        from controller.agents.registry import AgentKindError

        assert isinstance(args, HumanArgs)
        if args.port is None:
            return
        try:
            _listen(args.port, f"{side}.args.port").close()
        except HumanSeatError as exc:
            raise AgentKindError(str(exc)) from exc

    def side(self, args: BaseModel, context: SideContext) -> SideFactory:
        """One page per seat (ports `port`, `port + 1`, ... in seat order when fixed)."""
        assert isinstance(args, HumanArgs)
        built = 0

        def make(agent_id: str) -> Agent:
            nonlocal built
            port = args.port + built if args.port is not None else None
            built += 1
            return HumanAgent(
                agent_id,
                context.geometry,
                context.rules,
                args,
                context.run_dir,
                port=port,
                where=f"human seat {agent_id} ({context.side}), args.port",
            )

        return make


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "Desk",
    "HumanAgent",
    "HumanArgs",
    "HumanKind",
    "HumanSeatError",
    "SeatServer",
    "map_sketch",
    "register_kinds",
    "seat_app",
    "seat_place",
    "seat_refusal",
    "seat_url_path",
    "write_private",
]


def register_kinds() -> None:
    """Register the `human` kind (the entry point of `mineamongus.agents`)."""
    register(HumanKind())
