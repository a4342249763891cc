"""Supervised bridge to the Node bot runtime (`bots/main.js`).

The controller talks to one Node child process over two pipes mapped to the child's
file descriptors 3 (requests, Python -> Node) and 4 (responses and events,
Node -> Python), one JSON object per line; see `docs/bridge-protocol.md`. The child's
stdout and stderr are appended to a log file chosen by the caller.

The child never outlives the controller: it gets SIGKILL when the thread that
started it dies (Linux `PR_SET_PDEATHSIG`), and it exits by itself when its request
pipe reaches end-of-file (which also happens when this process dies). Because the
death signal follows the *thread* that forked, create and start a `NodeBridge` from a
long-lived thread (normally the main thread).

Example:
    >>> with NodeBridge(log_path=Path("runs/x/node.log")) as bridge:  # doctest: +SKIP
    ...     port = bridge.start_server("127.0.0.1", free_port(), "1.20.1", (0.5, 65, 0.5), 4)
    ...     bridge.set_blocks(blocks)
    ...     poses = bridge.connect("127.0.0.1", port, "1.20.1", bots)
    ...     report = bridge.run_programs(programs, timeout_ms=10_000)
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import logging
import os
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from controller.protocol import (
    BlockPlacement,
    FrameFiles,
    LowProgram,
    PlayerPose,
    PoseSample,
    ProgramEvent,
    RenderRequest,
    RuleDirective,
    StepReport,
    Teleport,
    Vec3,
)
from controller.supervise import Readiness, Supervised, spawn
from controller.supervise import tail as log_tail
from controller.supervise import terminate as terminate  # re-exported for older imports

log = logging.getLogger(__name__)

BatchArbiter = Callable[[str, ProgramEvent, dict[str, PlayerPose]], RuleDirective | None]
"""The rules' hook into a running batch (same shape as `controller.worlds.base.Arbiter`)."""

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""Repository root: holds `bots/main.js` and `node_modules/`."""

REQUIRED_NODE_PACKAGES = (
    "flying-squid",
    "mineflayer",
    "mineflayer-pathfinder",
    "minecraft-protocol",
    "minecraft-data",
    "vec3",
)
"""npm packages the bot runtime loads; all must be installed in `node_modules/`."""

MIN_NODE_MAJOR = 20
# A program's `timeout_ms` is game time; Node ends one still running after this many
# times that in wall time whatever the clock says (its reason begins "wall guard").
WALL_GUARD_FACTOR = 4
_CHILD_REQUEST_FD = 3
_CHILD_RESPONSE_FD = 4


class BridgeError(Exception):
    """A request failed on the Node side (`ok: false`), or the bridge itself failed.

    Attributes:
        type: Machine-readable error type (the Node side's `error.type`, or
            `timeout` / `closed` / `setup` for failures of the bridge itself).
        message: Human-readable explanation.
    """

    def __init__(self, type: str, message: str) -> None:
        super().__init__(f"[{type}] {message}")
        self.type = type
        self.message = message


class BridgeTimeout(BridgeError):
    """No answer within the request's timeout (the Node process may be stuck)."""

    def __init__(self, message: str) -> None:
        super().__init__("timeout", message)


class BridgeClosed(BridgeError):
    """The Node process is gone (exited, crashed or was closed)."""

    def __init__(self, message: str) -> None:
        super().__init__("closed", message)


class BotSpec(BaseModel):
    """One bot to join: its agent id, Minecraft username and where to place it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    """Agent id used in every other request (e.g. `red`)."""
    username: str = Field(pattern=r"^[A-Za-z0-9_]{1,16}$")
    """Minecraft username (e.g. `Red`)."""
    pos: Vec3
    """Where the bot is teleported once everybody has joined (feet position)."""
    yaw: float = 0.0
    """Heading after the teleport, protocol degrees (0 = south, 270 = east)."""


class BridgeState(NamedTuple):
    """Answer of `NodeBridge.state()`."""

    tick: int
    """Current tick of the Node process clock."""
    players: dict[str, PlayerPose]
    """Pose of every bot, keyed by agent id."""


class CleanCheck(NamedTuple):
    """Answer of `NodeBridge.verify_clean()`: how the world differs from a fresh server's."""

    clean: bool
    """True when nothing differs."""
    traces: list[str]
    """One line per difference found (at most 40; `found` says how many in all)."""
    found: int
    """How many differences were found."""
    ms: float
    """How long the check took in Node."""


class _Pending:
    """One request waiting for its response."""

    __slots__ = ("done", "notify", "response")

    def __init__(self, notify: queue.SimpleQueue[dict[str, Any] | None] | None = None) -> None:
        self.done = threading.Event()
        self.response: dict[str, Any] | None = None
        self.notify = notify
        """Also told (with None) when the answer arrives: the batch inbox of `run_programs`."""

    def finish(self) -> None:
        self.done.set()
        if self.notify is not None:
            self.notify.put(None)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on `host` that is free right now.

    Args:
        host: Address to probe (loopback by default).

    Returns:
        A port number the OS just handed out (another process may take it later).
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def find_node(node: str | None = None) -> str:
    """Locate the `node` executable and check its version.

    Args:
        node: Explicit path; otherwise `$MAU_NODE`, then `node` on `PATH`.

    Returns:
        Absolute path of the executable.

    Raises:
        BridgeError: `setup` if Node is missing or older than 20.
    """
    candidate = node or os.environ.get("MAU_NODE") or shutil.which("node")
    if not candidate or not Path(candidate).exists():
        raise BridgeError(
            "setup",
            "Node.js not found (looked at $MAU_NODE and PATH); install Node >= 20 "
            "(see scripts/setup.sh)",
        )
    try:
        out = subprocess.run(
            [candidate, "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        major = int(out.lstrip("v").split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise BridgeError("setup", f"cannot run {candidate} --version: {exc}") from exc
    if major < MIN_NODE_MAJOR:
        raise BridgeError("setup", f"{candidate} is Node {out}; Node >= {MIN_NODE_MAJOR} needed")
    return str(Path(candidate).resolve())


def check_node_modules(root: Path) -> Path:
    """Check that the project's npm dependencies are installed.

    Args:
        root: Project root (holds `package.json`).

    Returns:
        The `node_modules` directory.

    Raises:
        BridgeError: `setup` naming the missing packages. Nothing is installed here:
            installing at run time would fetch unpinned versions.
    """
    modules = root / "node_modules"
    missing = [p for p in REQUIRED_NODE_PACKAGES if not (modules / p / "package.json").is_file()]
    if missing:
        raise BridgeError(
            "setup",
            f"Node packages missing from {modules}: {', '.join(missing)}. Run "
            "scripts/setup.sh (it installs the pinned versions from package-lock.json); "
            "the bridge never installs packages itself.",
        )
    return modules


def _high_fd(fd: int) -> int:
    """Move `fd` to a number >= 10 (close-on-exec) so the child's dup2 to 3/4 cannot clash."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class NodeBridge:
    """A supervised `node bots/main.js` child and the request/response protocol.

    Args:
        log_path: File the child's stdout and stderr are appended to.
        root: Project root (default: this repository).
        node: Node executable (default: `$MAU_NODE`, then `node` on PATH).
        ready_timeout_s: How long `start()` waits for the `ready` event.
        env: Extra environment variables for the child.
    """

    def __init__(
        self,
        log_path: Path,
        *,
        root: Path = PROJECT_ROOT,
        node: str | None = None,
        ready_timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.log_path = Path(log_path)
        self.root = Path(root)
        self.node = node
        self.ready_timeout_s = ready_timeout_s
        self.extra_env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._events: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._ready = threading.Event()
        self._closed = threading.Event()
        self._close_reason = ""
        self._req_w: int | None = None
        self._resp_r: IO[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._child: Supervised | None = None
        self._close_lock = threading.Lock()
        self._close_started = False
        self._batch_inbox: queue.SimpleQueue[dict[str, Any] | None] | None = None

    # ---- lifecycle ------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """PID of the Node child (None before `start()`)."""
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        """Start the child and wait for its `ready` event.

        Raises:
            BridgeError: `setup` when Node or its packages are missing.
            BridgeTimeout: No `ready` within `ready_timeout_s` (the child is killed).
            BridgeClosed: The child exited during start-up.
        """
        if self.proc is not None:
            raise BridgeError("bad_state", "bridge already started")
        node = find_node(self.node)
        check_node_modules(self.root)
        main_js = self.root / "bots" / "main.js"
        if not main_js.is_file():
            raise BridgeError("setup", f"{main_js} not found")
        req_r, req_w = os.pipe()  # Python writes req_w; the child reads it as fd 3
        resp_r, resp_w = os.pipe()  # the child writes fd 4; Python reads resp_r
        child_req, child_resp = _high_fd(req_r), _high_fd(resp_w)

        def map_fds() -> None:  # between fork and exec: dup2 targets are inheritable
            os.dup2(child_req, _CHILD_REQUEST_FD)
            os.dup2(child_resp, _CHILD_RESPONSE_FD)

        env = {**os.environ, **self.extra_env}
        env.setdefault("FORCE_COLOR", "0")  # plain text in the log file (flying-squid colours)
        try:
            # close_fds=False: with close_fds=True (which pass_fds implies) the child's
            # fds 3 and 4, created in map_fds(), would be closed again before exec.
            # Python's own descriptors are close-on-exec by default (PEP 446), so only
            # the two dup2'd pipe ends reach Node.
            self._child = spawn(
                [node, str(main_js)],
                name="node",
                log_path=self.log_path,
                death_signal=signal.SIGKILL,
                prepare=map_fds,
                env=env,
                cwd=self.root,
                close_fds=False,
            )
        except BaseException:
            for fd in (req_w, resp_r, child_req, child_resp):
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise
        self.proc = self._child.proc
        os.close(child_req)
        os.close(child_resp)
        self._req_w = req_w
        self._resp_r = os.fdopen(resp_r, "rb", buffering=0)
        self._reader = threading.Thread(
            target=self._read_loop, name=f"node-bridge-reader-{self.proc.pid}", daemon=True
        )
        self._reader.start()

        # Ready on the `ready` event; a closed output channel means it is exiting.
        readiness = self._child.wait_ready(
            lambda: self._ready.wait(0.05) or self._closed.is_set(),
            self.ready_timeout_s,
            poll_s=0.0,
        )
        if readiness is Readiness.TIMEOUT:
            msg = f"no ready event from node within {self.ready_timeout_s:.0f} s"
            self.close()
            raise BridgeTimeout(self._with_log(msg))
        if readiness is Readiness.EXITED or not self._ready.is_set():
            self._child.wait(2.0)
            msg = f"node exited during start-up (code {self.proc.poll()})"
            self.close()
            raise BridgeClosed(self._with_log(msg))

    def close(self, timeout_s: float = 5.0) -> None:
        """Shut the child down: `shutdown` request, EOF, then SIGTERM/SIGKILL by PID.

        Idempotent and safe to call from any state.

        Args:
            timeout_s: How long to wait for a clean exit before signalling.
        """
        with self._close_lock:
            if self._close_started:
                return
            self._close_started = True
        proc = self.proc
        if proc is not None and proc.poll() is None and not self._closed.is_set():
            try:
                self.request("shutdown", {}, timeout_s=min(timeout_s, 3.0))
            except BridgeError as exc:
                log.debug("shutdown request failed: %s", exc)
        if self._req_w is not None:
            with self._write_lock, contextlib.suppress(OSError):
                os.close(self._req_w)
            self._req_w = None
        if proc is not None:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                log.warning("node pid=%d did not exit; sending SIGTERM", proc.pid)
                terminate(proc, "node", 2.0)  # by PID
        self._mark_closed("bridge closed")
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=2.0)
        if self._resp_r is not None:
            with contextlib.suppress(OSError):
                self._resp_r.close()
            self._resp_r = None
        if self._child is not None:
            self._child.close_log()

    def __enter__(self) -> NodeBridge:
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

    # ---- protocol -------------------------------------------------------------------

    def _with_log(self, message: str) -> str:
        tail = log_tail(self.log_path)
        return f"{message}\n--- last lines of {self.log_path} ---\n{tail}" if tail else message

    def _mark_closed(self, reason: str) -> None:
        with self._lock:
            if not self._closed.is_set():
                self._close_reason = reason
                self._closed.set()
            pending = list(self._pending.values())
        for p in pending:
            p.finish()

    def _read_loop(self) -> None:
        stream = self._resp_r
        assert stream is not None
        buf = b""
        try:
            while True:
                chunk = stream.read(65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        self._dispatch(line)
        except (OSError, ValueError) as exc:  # ValueError: read on a closed file
            log.debug("bridge reader stopped: %s", exc)
        code = self.proc.poll() if self.proc is not None else None
        self._mark_closed(f"node closed its output (exit code {code})")

    def _dispatch(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            log.warning("unparsable line from node: %r", line[:200])
            return
        if not isinstance(msg, dict):
            log.warning("unexpected message from node: %r", line[:200])
            return
        if "event" in msg:
            if msg["event"] == "ready":
                self._ready.set()
            elif msg["event"] == "program_event":
                inbox = self._batch_inbox
                if inbox is None:
                    log.warning("program event outside a batch: %r", line[:300])
                else:
                    inbox.put(msg)
            else:
                self._events.put(msg)
            return
        req_id = msg.get("id")
        with self._lock:
            pending = self._pending.pop(req_id, None) if isinstance(req_id, int) else None
        if pending is None:
            log.warning("response for unknown or abandoned request: %r", line[:300])
            return
        pending.response = msg
        pending.finish()

    def request(
        self, op: str, args: Mapping[str, Any] | None = None, timeout_s: float = 30.0
    ) -> dict[str, Any]:
        """Send one request and wait for its response.

        Safe to call from several threads; Node answers `state` and `hello` even while
        another request runs, everything else in order.

        Args:
            op: Operation name (see docs/bridge-protocol.md).
            args: Its arguments (JSON-serialisable).
            timeout_s: How long to wait for the answer.

        Returns:
            The response's `result` object.

        Raises:
            BridgeError: The Node side answered `ok: false`.
            BridgeTimeout: No answer in time (the request may still complete in Node;
                its late answer is dropped).
            BridgeClosed: The Node process is gone.
        """
        req_id, pending = self._submit(op, args)
        return self._await(op, req_id, pending, timeout_s)

    def _submit(
        self,
        op: str,
        args: Mapping[str, Any] | None,
        notify: queue.SimpleQueue[dict[str, Any] | None] | None = None,
    ) -> tuple[int, _Pending]:
        """Write one request; the answer is awaited with `_await`."""
        if self.proc is None:
            raise BridgeClosed("bridge not started")
        if self._closed.is_set():
            raise BridgeClosed(self._with_log(f"cannot send {op}: {self._close_reason}"))
        req_id = next(self._ids)
        pending = _Pending(notify)
        with self._lock:
            self._pending[req_id] = pending
        data = (json.dumps({"id": req_id, "op": op, "args": dict(args or {})}) + "\n").encode()
        try:
            with self._write_lock:
                if self._req_w is None:
                    raise BridgeClosed("bridge closed")
                view = memoryview(data)
                while view:
                    n = os.write(self._req_w, view)
                    view = view[n:]
        except OSError as exc:
            with self._lock:
                self._pending.pop(req_id, None)
            raise BridgeClosed(self._with_log(f"cannot send {op}: {exc}")) from exc
        except BridgeClosed:
            with self._lock:
                self._pending.pop(req_id, None)
            raise
        return req_id, pending

    def _await(self, op: str, req_id: int, pending: _Pending, timeout_s: float) -> dict[str, Any]:
        """Wait for the answer of a submitted request and unpack it (see `request`)."""
        if not pending.done.wait(timeout_s):
            with self._lock:
                self._pending.pop(req_id, None)
            raise BridgeTimeout(
                self._with_log(f"{op} (id {req_id}) got no answer in {timeout_s} s")
            )
        response = pending.response
        if response is None:
            raise BridgeClosed(self._with_log(f"{op} (id {req_id}): {self._close_reason}"))
        if response.get("ok"):
            result = response.get("result")
            return result if isinstance(result, dict) else {}
        error = response.get("error") or {}
        raise BridgeError(str(error.get("type", "unknown")), str(error.get("message", "")))

    def drain_events(self) -> list[dict[str, Any]]:
        """Unsolicited events received so far (e.g. `disconnect`), oldest first."""
        out: list[dict[str, Any]] = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    # ---- typed operations -----------------------------------------------------------

    def hello(self) -> dict[str, Any]:
        """Node version, npm package versions and the current tick."""
        return self.request("hello", {}, timeout_s=10.0)

    def start_server(
        self,
        host: str,
        port: int,
        version: str,
        spawn: Vec3,
        view_distance: int,
        *,
        ops: Sequence[str] = (),
        speed: int | Literal["max"] = 1,
        timeout_s: float = 30.0,
    ) -> int:
        """Start the embedded flying-squid server (offline mode, loopback only).

        Args:
            host: Loopback address to bind.
            port: TCP port (0 = any free port).
            version: Minecraft version (e.g. `1.20.1`).
            spawn: World spawn point (where players appear before `connect` moves them).
            view_distance: Server view distance in chunks.
            ops: Usernames given operator rights (e.g. an admin account for tests of
                external mode); the embedded bots need none.
            speed: Simulation speed of every batch: 1 = real time, N = N times real
                time, `max` = as fast as the bots can be simulated (see "Simulation
                speed" in docs/bridge-protocol.md).
            timeout_s: Request timeout.

        Returns:
            The port the server listens on.
        """
        result = self.request(
            "start_server",
            {
                "host": host,
                "port": port,
                "version": version,
                "spawn": list(spawn),
                "view_distance": view_distance,
                "ops": list(ops),
                "speed": speed,
            },
            timeout_s=timeout_s,
        )
        return int(result["port"])

    def connect(
        self,
        host: str,
        port: int,
        version: str,
        bots: Sequence[BotSpec | Mapping[str, Any]],
        external: bool = False,
        admin: str = "MAU_Admin",
        *,
        timeout_s: float = 120.0,
    ) -> dict[str, PlayerPose]:
        """Join the bots, wait until all see each other, place each at its `pos`.

        Args:
            host: Server address.
            port: Server port.
            version: Minecraft version.
            bots: One spec per bot (`BotSpec` or a mapping with the same fields).
            external: The server is not the embedded one: server-side operations are
                then done through commands of the operator account `admin`.
            admin: Operator username (external mode only).
            timeout_s: Request timeout.

        Returns:
            Pose of every bot after placement, keyed by agent id.
        """
        specs = [b if isinstance(b, BotSpec) else BotSpec.model_validate(dict(b)) for b in bots]
        result = self.request(
            "connect",
            {
                "host": host,
                "port": port,
                "version": version,
                "external": external,
                "admin": admin,
                "bots": [s.model_dump(mode="json") for s in specs],
            },
            timeout_s=timeout_s,
        )
        return _poses(result)

    def set_blocks(self, blocks: Sequence[BlockPlacement], *, timeout_s: float = 120.0) -> int:
        """Place blocks (by name, e.g. `stone_bricks`); returns how many were set."""
        payload = [[b.x, b.y, b.z, b.block] for b in blocks]
        result = self.request("set_blocks", {"blocks": payload}, timeout_s=timeout_s)
        return int(result["count"])

    def run_programs(
        self,
        programs: Mapping[str, LowProgram],
        timeout_ms: int,
        *,
        arbiter: BatchArbiter | None = None,
        sample_interval: int = 10,
        margin_s: float = 15.0,
        samples_to: Callable[[list[PoseSample]], None] | None = None,
        wall_guard_ms: int | None = None,
    ) -> StepReport:
        """Run each bot's steps concurrently; bots without a program stand still.

        The game clock runs only during this call. With an `arbiter`, every `mark` and
        `reached` event is handed to it here, in the calling thread, the moment Node
        reports it (with every connected bot's pose at that tick); its directive goes
        straight back and Node applies it before the acting bot's next step. If the
        arbiter raises, the batch is frozen and the exception propagates once Node
        has answered.

        Args:
            programs: Low-level program per agent id.
            timeout_ms: Deadline of every program in game time (`timeout_ms / 50` ticks of
                the game clock; its steps are then cancelled), as in the fake world.
            arbiter: Called for each rule event; None streams nothing.
            sample_interval: Most ticks between two pose samples.
            margin_s: Extra time allowed for the round trip beyond the wall guard.
            samples_to: Gets the pose samples Node took since the previous rule event
                (they come with each event), before the arbiter judges it.
            wall_guard_ms: Wall time after which Node ends a program whatever the clock
                says (default `WALL_GUARD_FACTOR` times `timeout_ms`).

        Returns:
            Every program's outcome, every bot's pose afterwards and the pose samples.
        """
        if sample_interval < 1:
            raise BridgeError(
                "bad_request", f"sample_interval must be at least 1 tick, got {sample_interval}"
            )
        guard_ms = wall_guard_ms if wall_guard_ms is not None else timeout_ms * WALL_GUARD_FACTOR
        payload = {
            agent: [step.model_dump(mode="json") for step in program.steps]
            for agent, program in programs.items()
        }
        args = {
            "programs": payload,
            "timeout_ms": timeout_ms,
            "sample_interval": sample_interval,
            "arbiter": arbiter is not None,
            "wall_guard_ms": guard_ms,
        }
        inbox: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        timeout_s = guard_ms / 1000.0 + margin_s
        failure: BaseException | None = None
        self._batch_inbox = inbox
        try:
            req_id, pending = self._submit("run_programs", args, notify=inbox)
            deadline = time.monotonic() + timeout_s
            # Until the answer's marker (None): every event queued before it is handled,
            # even one whose program was cut short by its timeout.
            while True:
                try:
                    msg = inbox.get(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
                except queue.Empty:
                    if time.monotonic() >= deadline:
                        break
                    continue
                if msg is None:
                    break
                failure = self._arbitrate(msg, arbiter, failure, samples_to)
            result = self._await("run_programs", req_id, pending, 0.0)
        finally:
            self._batch_inbox = None
        if failure is not None:
            raise failure
        return step_report(result)

    def _arbitrate(
        self,
        msg: dict[str, Any],
        arbiter: BatchArbiter | None,
        failure: BaseException | None,
        samples_to: Callable[[list[PoseSample]], None] | None = None,
    ) -> BaseException | None:
        """Answer one `program_event` with the arbiter's directive; returns any failure."""
        directive: RuleDirective | None = None
        if arbiter is not None and failure is None:
            try:
                if samples_to is not None and msg.get("samples"):
                    samples_to(_samples(msg["samples"]))
                event = ProgramEvent.model_validate(msg["data"])
                poses = {
                    str(a): PlayerPose.model_validate(p)
                    for a, p in dict(msg.get("players") or {}).items()
                }
                directive = arbiter(str(msg["agent"]), event, poses)
            except Exception as exc:  # noqa: BLE001 - re-raised after the batch stops
                failure = exc
        if failure is not None:
            directive = RuleDirective(freeze=True, reason=f"controller error: {failure}")
        directive = directive or RuleDirective()
        args = {"batch": msg.get("batch"), "seq": msg.get("seq"), **directive.model_dump()}
        try:
            self.request("directive", args, timeout_s=10.0)
        except BridgeError as exc:
            if exc.type != "bad_state":
                raise
            # The batch ended (its timeout) while the event was on its way: nothing
            # is left to cancel; the report says how each program ended.
            log.warning("directive for event %s came after its batch: %s", msg.get("seq"), exc)
        return failure

    def teleport(
        self, moves: Mapping[str, Teleport], *, timeout_s: float = 30.0
    ) -> dict[str, PlayerPose]:
        """Server-side teleports; returns every bot's pose once the moved bots arrived."""
        payload = {agent: t.model_dump(mode="json") for agent, t in moves.items()}
        return _poses(self.request("teleport", {"moves": payload}, timeout_s=timeout_s))

    def broadcast(self, text: str) -> None:
        """A server chat line to every player, attributed to no player."""
        self.request("broadcast", {"text": text}, timeout_s=10.0)

    def state(self) -> BridgeState:
        """Current tick and every bot's pose (answered even while programs run)."""
        result = self.request("state", {}, timeout_s=10.0)
        return BridgeState(int(result["tick"]), _poses(result))

    def advance_clock(self, ticks: int) -> int:
        """Move the stopped game clock forward by `ticks`; return the new tick."""
        result = self.request("advance_clock", {"ticks": int(ticks)}, timeout_s=10.0)
        return int(result["tick"])

    def inspect(self, blocks: Sequence[tuple[int, int, int]] | None = None) -> dict[str, Any]:
        """Diagnostics of what each bot perceives (for tests and debugging).

        Args:
            blocks: Positions whose block names to report, as the first connected bot
                sees them (None for unloaded chunks).

        Returns:
            `{"tick", "bots": {id: {"connected", "sees": {other: {"pos", "yaw"}},
            "cursor": {"block", "pos"} | None, "messages": [{"tick", "from", "text",
            "position"}]}}, "blocks": [name | None]}` (`blocks` only when asked).
        """
        args: dict[str, Any] = {}
        if blocks is not None:
            args["blocks"] = [list(b) for b in blocks]
        return self.request("inspect", args, timeout_s=10.0)

    def reset(
        self,
        blocks: Sequence[BlockPlacement],
        bots: Sequence[BotSpec | Mapping[str, Any]],
        *,
        timeout_s: float = 60.0,
    ) -> dict[str, PlayerPose]:
        """Put a warm embedded server back as a fresh one holds it for the next game.

        Every block of every column the server holds back to the ground and `blocks`,
        other entities removed, inventories emptied, effects cleared, health and food
        full, each bot teleported to its seat, chat heard so far forgotten, the game
        clock back at tick 0 (see "Warm server" in docs/bridge-protocol.md).

        Args:
            blocks: The next game's map, as `set_blocks` builds it.
            bots: The next game's seats: the connected bots, by id and username.
            timeout_s: Request timeout.

        Returns:
            Every bot's pose once seated.
        """
        specs = [b if isinstance(b, BotSpec) else BotSpec.model_validate(dict(b)) for b in bots]
        payload = {
            "blocks": [[b.x, b.y, b.z, b.block] for b in blocks],
            "bots": [s.model_dump(mode="json") for s in specs],
        }
        return _poses(self.request("reset", payload, timeout_s=timeout_s))

    def verify_clean(
        self,
        blocks: Sequence[BlockPlacement] | None = None,
        bots: Sequence[BotSpec | Mapping[str, Any]] | None = None,
        *,
        timeout_s: float = 30.0,
    ) -> CleanCheck:
        """Compare the world with what a fresh embedded server holds for a game.

        Args:
            blocks: The map (default: the last `reset`'s, or the blocks set before
                `connect` on a cold start).
            bots: The seats (default: as `blocks`); give both or neither.
            timeout_s: Request timeout.

        Returns:
            Whether it is clean, and every difference found.
        """
        args: dict[str, Any] = {}
        if blocks is not None or bots is not None:
            specs = [
                b if isinstance(b, BotSpec) else BotSpec.model_validate(dict(b))
                for b in (bots or [])
            ]
            args = {
                "blocks": [[b.x, b.y, b.z, b.block] for b in (blocks or [])],
                "bots": [s.model_dump(mode="json") for s in specs],
            }
        result = self.request("verify_clean", args, timeout_s=timeout_s)
        return CleanCheck(
            clean=bool(result["clean"]),
            traces=[str(t) for t in result.get("traces", [])],
            found=int(result.get("count", 0)),
            ms=float(result.get("ms", 0.0)),
        )

    def debug_plant(
        self, kind: str, agent: str | None = None, pos: Vec3 | None = None
    ) -> dict[str, Any]:
        """Test only: plant a leftover no game makes (`item` on the ground, `inventory`,
        `effect`, `health`) for `verify_clean` to find."""
        args: dict[str, Any] = {"kind": kind}
        if agent is not None:
            args["id"] = agent
        if pos is not None:
            args["pos"] = list(pos)
        return self.request("debug_plant", args, timeout_s=10.0)

    def drop(self, agent: str) -> None:
        """Cut one bot's connection abruptly (fault injection; a `disconnect` event follows)."""
        self.request("drop", {"id": agent}, timeout_s=10.0)

    def reconnect(
        self, agent: str, pos: Vec3, *, yaw: float = 0.0, timeout_s: float = 60.0
    ) -> dict[str, PlayerPose]:
        """Join a new bot under the same username and place it at `pos`."""
        result = self.request(
            "reconnect", {"id": agent, "pos": list(pos), "yaw": yaw}, timeout_s=timeout_s
        )
        return _poses(result)

    def render_init(
        self,
        agents: Sequence[str] | None = None,
        *,
        width: int | None = None,
        height: int | None = None,
        view_distance: int | None = None,
        timeout_s: float = 120.0,
    ) -> dict[str, Any]:
        """Create the first-person renderers now instead of at the first `render`.

        Needs the bridge started with `DISPLAY` of an X server (`controller.xvfb.Xvfb`).

        Args:
            agents: Bots to prepare (default: all).
            width: Frame width in pixels for renderers created from now on (default 640).
            height: Frame height in pixels (default 360).
            view_distance: Chunks drawn around each bot (default 3).
            timeout_s: Request timeout (set-up takes seconds per bot).

        Returns:
            `{"ready": {id: setup_ms}, "errors": {id: message}, "settings": {...}, "ms"}`.
        """
        args: dict[str, Any] = {}
        if agents is not None:
            args["agents"] = list(agents)
        for key, value in (("width", width), ("height", height), ("view_distance", view_distance)):
            if value is not None:
                args[key] = value
        return self.request("render_init", args, timeout_s=timeout_s)

    def render(
        self,
        agents: Sequence[str],
        files: Mapping[str, Mapping[str, str | None]],
        quality: int = 85,
        timeout_s: float = 60.0,
        hidden: Mapping[str, Sequence[str]] | None = None,
    ) -> dict[str, Any]:
        """Render one first-person frame per bot and write it to files (from Node).

        Call it between programs (it blocks the Node event loop ~25 ms per bot). A bot
        without a renderer gets one first (seconds). Needs the bridge started with
        `DISPLAY` of an X server (`controller.xvfb.Xvfb`).

        Args:
            agents: Bots to render.
            files: Per bot, absolute paths for `raw` (RGB24, height x width x 3 bytes,
                top row first), `jpg` and `png`; a kind left out or None is not written.
            quality: JPEG quality 1..100.
            timeout_s: Request timeout.
            hidden: Per bot, the other bots its frame must not show (ghosts in a
                living player's frame); a bot left out hides nobody.

        Returns:
            `{"frames": {id: {"raw", "jpg", "png", "ms"}}, "errors": {id: message},
            "setup_ms": {id: ms}, "ms": total}`; a bot that could not be rendered (e.g.
            not connected) is absent from `frames` and listed in `errors`.

        Raises:
            pydantic.ValidationError: An unknown file kind.
        """
        req = RenderRequest(
            agents=list(agents),
            files={agent: FrameFiles.model_validate(dict(spec)) for agent, spec in files.items()},
            quality=quality,
            hidden={agent: list(others) for agent, others in (hidden or {}).items() if others},
        )
        return self.request(
            "render",
            req.model_dump(exclude=set() if req.hidden else {"hidden"}),
            timeout_s=timeout_s,
        )


def step_report(result: Mapping[str, Any]) -> StepReport:
    """A `StepReport` from Node's `run_programs` result (samples in compact form)."""
    data = dict(result)
    return StepReport.model_validate({**data, "samples": _samples(data.pop("samples", None))})


def _samples(compact: Any) -> list[PoseSample]:
    """Pose samples from Node's compact form (see docs/bridge-protocol.md)."""
    if not compact:
        return []
    agents = [str(a) for a in compact["agents"]]
    out: list[PoseSample] = []
    for tick, row in zip(compact["ticks"], compact["poses"], strict=True):
        players = {
            agent: PlayerPose(pos=(p[0], p[1], p[2]), yaw=p[3], pitch=p[4])
            for agent, p in zip(agents, row, strict=True)
            if p is not None
        }
        out.append(PoseSample(tick=int(tick), players=players))
    return out


def _poses(result: Mapping[str, Any]) -> dict[str, PlayerPose]:
    players = result.get("players") or {}
    return {agent: PlayerPose.model_validate(p) for agent, p in dict(players).items()}
