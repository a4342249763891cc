"""Who may reach the viewer, what a request may change, and who may see a live game.

The viewer serves private records (every role, an impostor's narration, every seat's
frames), so three rules keep it to the person at this machine:

- **Host check.** A request is answered only when its `Host` header names this server:
  `127.0.0.1`, `localhost` or `[::1]` on its port, plus the address it was bound to on
  purpose (`--allow-remote`). A page on some other name that resolves to 127.0.0.1 (DNS
  rebinding) gets 421, so it can neither read nor write.
- **Writes are same-origin JSON.** A request that changes state must send
  `Content-Type: application/json` (which a foreign page cannot send without the
  browser asking first, and the viewer never says yes); its `Origin`, when sent, must
  be this server's own, and its `Sec-Fetch-Site`, when sent, `same-origin` or `none`.
- **Loopback unless asked.** Binding any other address needs `allow_remote`
  (`view --allow-remote`); `check_bind` refuses it otherwise, naming the flag.

While a person plays a seat, the game's roles and private records are kept for the
holder of the analyst token (`AnalystGrant`), printed when the viewer starts.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
from dataclasses import dataclass, field

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
"""The names a browser on this machine uses for a loopback server."""
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
"""Addresses that bind every interface."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing; every other one is a write."""
ANALYST_HEADER = "x-analyst-token"
"""The header that may carry the analyst token (as may `?analyst=TOKEN`)."""
ALLOW_REMOTE_FLAG = "--allow-remote"
"""The `view` flag that permits a non-loopback address."""


class RemoteBindError(ValueError):
    """A non-loopback address was asked for without `allow_remote`."""


def new_token() -> str:
    """A fresh unguessable token."""
    return secrets.token_urlsafe(18)


def token_matches(given: str, token: str) -> bool:
    """Whether `given` is `token`, compared in constant time (any text is safe to pass)."""
    return bool(given) and secrets.compare_digest(given.encode(), token.encode())


def _bare(host: str) -> str:
    return host.strip().lower().removeprefix("[").removesuffix("]")


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is loopback."""
    name = _bare(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless `allow_remote` is set.

    Raises:
        RemoteBindError: `host` is not loopback and `allow_remote` is False (the message
            names the flag and says who could reach the page).
    """
    if is_loopback(host) or allow_remote:
        return
    raise RemoteBindError(
        f"--host {host} is not a loopback address: anyone who can reach this machine "
        "could read every role and private record and save labels. Add "
        f"{ALLOW_REMOTE_FLAG} to serve it anyway"
    )


def remote_warning(host: str, port: int) -> str:
    """The warning printed when the viewer serves a non-loopback address on purpose."""
    where = "every interface of this machine" if _bare(host) in WILDCARDS else host
    return (
        f"warning: the viewer listens on {where} (port {port}): anyone who can reach it "
        "(the local network, or further without a firewall) can read every role, every "
        "agent's private record and every seat's frames, and can save labels; serve it "
        "this way only on a network you trust"
    )


def _split(header: str) -> tuple[str, str] | None:
    """A Host header as (name, port text); None when it is malformed."""
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        if end < 0:
            return None
        name, rest = header[: end + 1], header[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        return name, rest[1:]
    if header.count(":") > 1:
        return None  # an IPv6 address without brackets is no Host header
    name, _, port = header.partition(":")
    return name, port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(_bare(name))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostPolicy:
    """The `Host` headers a server answers.

    Attributes:
        names: Host names, lower case, IPv6 addresses in brackets.
        port: The port they must carry; None accepts any (or none).
        ip_literals: Also accept any IP address as the name (a server bound to every
            interface on purpose: an address typed by a person is never a rebinding
            name, which must be a DNS name).
    """

    names: frozenset[str] = LOOPBACK_NAMES
    port: int | None = None
    ip_literals: bool = False

    @classmethod
    def for_bind(cls, host: str, port: int) -> HostPolicy:
        """The names of a server bound to `host:port`: loopback, plus `host` itself (and,
        for a wildcard address, this machine's name and any IP address)."""
        bare = _bare(host)
        names = set(LOOPBACK_NAMES)
        if bare in WILDCARDS:
            names.add(socket.gethostname().lower())
            return cls(frozenset(names), port, ip_literals=True)
        names.add(f"[{bare}]" if ":" in bare else bare)
        return cls(frozenset(names), port)

    def allows(self, header: str) -> bool:
        """Whether a request with this `Host` header is for this server."""
        parts = _split(header)
        if parts is None:
            return False
        name, port = parts
        if port and not port.isdigit():
            return False
        if self.port is not None and int(port or 80) != self.port:
            return False
        return name in self.names or (self.ip_literals and _is_ip(name))


def write_refusal(headers: Headers) -> tuple[int, str] | None:
    """Why a state-changing request is refused (status, message); None when it is a
    same-origin JSON request (or one from a program that sends no `Origin`)."""
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        return 415, "send Content-Type: application/json"
    host = headers.get("host", "").strip().lower()
    origin = headers.get("origin")
    if origin is not None and origin.strip().lower() != f"http://{host}":
        return 403, f"a write from another origin ({origin}) is refused"
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in ("same-origin", "none"):
        return 403, f"a write from another site ({site}) is refused"
    return None


class LocalGuard:
    """ASGI middleware: answers only `policy`'s Host names; writes only same-origin JSON.

    Args:
        app: The application behind it.
        policy: The Host headers it answers.
    """

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a foreign Host (421) or a cross-origin or non-JSON write (403/415)."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not self.policy.allows(headers.get("host", "")):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            refused = JSONResponse(
                {"error": "this server answers only its own address (127.0.0.1, localhost)"},
                status_code=421,
            )
            await refused(scope, receive, send)
            return
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            why = write_refusal(headers)
            if why is not None:
                await JSONResponse({"error": why[1]}, status_code=why[0])(scope, receive, send)
                return
        await self.app(scope, receive, send)


@dataclass(frozen=True)
class Access:
    """What a viewer lets a request do.

    Attributes:
        hosts: The Host headers it answers.
        analyst_token: Unlocks a live game that a person plays (`?analyst=TOKEN` or the
            `X-Analyst-Token` header); printed when the viewer starts.
    """

    hosts: HostPolicy = field(default_factory=HostPolicy)
    analyst_token: str = field(default_factory=new_token)


@dataclass(frozen=True)
class AnalystGrant:
    """What one request asked for and may have.

    Attributes:
        unlocked: It holds the analyst token (a live human-seat game is open to it).
        analyst: It asked for the analyst view (`analyst=1` or `analyst=TOKEN`); while a
            person plays a seat this counts only when `unlocked`.
    """

    unlocked: bool
    analyst: bool

    @classmethod
    def of(cls, query: str, header: str, token: str) -> AnalystGrant:
        """The grant of a request's `analyst` query value and analyst header."""
        by_query = token_matches(query, token)
        unlocked = by_query or token_matches(header, token)
        return cls(unlocked, by_query or query.strip().lower() in ("1", "true", "yes"))

    @classmethod
    def of_request(cls, request: Request, access: Access) -> AnalystGrant:
        """The grant of a request (its `analyst` query value and `ANALYST_HEADER`) under
        a viewer's `access`."""
        return cls.of(
            request.query_params.get("analyst", ""),
            request.headers.get(ANALYST_HEADER, ""),
            access.analyst_token,
        )


__all__ = [
    "ALLOW_REMOTE_FLAG",
    "ANALYST_HEADER",
    "LOOPBACK_NAMES",
    "Access",
    "AnalystGrant",
    "HostPolicy",
    "LocalGuard",
    "RemoteBindError",
    "check_bind",
    "is_loopback",
    "new_token",
    "remote_warning",
    "token_matches",
    "write_refusal",
]
