"""JavaScript parsed, never run: the text goes to a Node process that only parses it.

`parse.js` beside this file reads source text and writes back its ESTree syntax tree as
JSON, using acorn (pinned in `package-lock.json`; found through `NODE_PATH`, the
project's `node_modules`). Nothing on either side evaluates, compiles or loads the text:
acorn builds a tree of plain objects, and Python walks that tree
(`harness_aria.codegen.translate`).

One Node process serves every parse of a Python process (started on first use, about
0.1 s; then about 1 ms a parse, against about 0.1 s for a process per answer), one
request at a time. A parse that takes longer than `timeout_s` kills the process (the
next parse starts another) and raises `ParserUnavailable`: the harness's failure, never
the model's.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from controller.bridge import PROJECT_ROOT

SCRIPT = Path(__file__).with_name("parse.js")
"""The Node script that parses (shipped as package data)."""
NODE_MODULES_ENV = "MINEAMONGUS_NODE_MODULES"
"""Names a `node_modules` folder holding acorn, if not the checkout's."""
DEFAULT_TIMEOUT_S = 5.0
"""Longest wait for one parse (a parse of the longest allowed program takes a few ms)."""


class ParserUnavailable(RuntimeError):
    """The parser could not be started or did not answer: a fault of the set-up or the
    harness, never of the model's answer."""


class JsSyntaxError(ValueError):
    """The text is not JavaScript acorn can read (the message is acorn's)."""


def node_modules() -> Path:
    """The `node_modules` folder acorn is loaded from."""
    named = os.environ.get(NODE_MODULES_ENV)
    return Path(named) if named else PROJECT_ROOT / "node_modules"


class JsParser:
    """A Node process that parses JavaScript into ESTree JSON, one request at a time.

    Args:
        timeout_s: Longest wait for one answer.
    """

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0
        """The pid that started the process (a forked child starts its own)."""
        self._buffer = b""
        self._next_id = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JsParser(timeout_s={self.timeout_s})"

    def _start(self) -> subprocess.Popen[bytes]:
        node = shutil.which("node")
        if node is None:
            raise ParserUnavailable("the JavaScript parser needs Node (`node` is not on PATH)")
        modules = node_modules()
        if not (modules / "acorn" / "package.json").is_file():
            raise ParserUnavailable(
                f"acorn is missing from {modules}: run `npm ci` in the project root (it "
                "installs the pinned version from package-lock.json)"
            )
        env = {"PATH": os.environ.get("PATH", ""), "NODE_PATH": str(modules)}
        proc = subprocess.Popen(
            [node, str(SCRIPT), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._proc, self._owner, self._buffer = proc, os.getpid(), b""
        return proc

    def _process(self) -> subprocess.Popen[bytes]:
        proc = self._proc
        if proc is None or self._owner != os.getpid() or proc.poll() is not None:
            return self._start()
        return proc

    def close(self) -> None:
        """Stop the Node process (if this process started it)."""
        proc, self._proc = self._proc, None
        if proc is None or self._owner != os.getpid():
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def _kill(self, why: str) -> ParserUnavailable:
        proc, self._proc = self._proc, None
        if proc is not None and self._owner == os.getpid():
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
        return ParserUnavailable(why)

    def _read_line(self, proc: subprocess.Popen[bytes]) -> bytes:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + self.timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._kill(f"the JavaScript parser gave no answer in {self.timeout_s} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise self._kill("the JavaScript parser stopped")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def parse(self, code: str) -> dict[str, Any]:
        """The ESTree `Program` of a script.

        Raises:
            JsSyntaxError: the text does not parse (or its tree is too deep to read).
            ParserUnavailable: Node or acorn is missing, or the parser did not answer.
        """
        with self._lock:
            proc = self._process()
            assert proc.stdin is not None
            self._next_id += 1
            wanted = self._next_id
            request = json.dumps({"id": wanted, "code": code}) + "\n"
            try:
                proc.stdin.write(request.encode("utf-8"))
                proc.stdin.flush()
            except OSError as exc:
                raise self._kill(f"the JavaScript parser could not be written to: {exc}") from exc
            line = self._read_line(proc)
            try:
                answer = json.loads(line)
            except RecursionError:
                raise JsSyntaxError("the program is nested too deeply to read") from None
            except ValueError as exc:
                raise self._kill(f"the JavaScript parser answered garbage: {exc}") from exc
            if not isinstance(answer, dict) or answer.get("id") != wanted:
                raise self._kill("the JavaScript parser answered another request")
        if not answer.get("ok"):
            raise JsSyntaxError(str(answer.get("error", "unreadable")))
        ast = answer.get("ast")
        if not isinstance(ast, dict):
            raise ParserUnavailable("the JavaScript parser answered no syntax tree")
        return ast


_DEFAULT: JsParser | None = None
_DEFAULT_LOCK = threading.Lock()


def default_parser() -> JsParser:
    """The process's shared parser (started on first use, stopped at exit)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = JsParser()
            atexit.register(_DEFAULT.close)
        return _DEFAULT


def parse_js(code: str) -> dict[str, Any]:
    """Parse a script with the shared parser (see `JsParser.parse`)."""
    return default_parser().parse(code)
