"""``ctxfst-tui serve``: textual-serve behind a door that opens for this run's token only.

textual-serve (aiohttp) answers any Origin and any Host with no credential, so any web page the
user visits could open ``ws://127.0.0.1:PORT`` and type into the workbench, and a DNS-rebinding
page could read it. :class:`GuardedServer` adds one middleware in front of every route (the page,
its static files, the WebSocket):

- the request carries the per-run token: ``?token=`` in the URL (printed on start, as Jupyter
  does), the cookie the page sets from it (HttpOnly, SameSite=Strict, so reloads work and no other
  site's page sends it), or an ``Authorization: token ...`` header;
- its ``Host`` names this server: the bound address, a loopback alias on the bound port, or the
  public URL's host (any IP literal on the port too when bound to every address: DNS rebinding
  needs a name);
- its ``Origin``, when it has one (a browser's WebSocket always has), is this server's own.

Anything else is refused with 403 before textual-serve sees it, so no app process starts.

textual-serve also leaves a session's app process running when its socket closes (the quit it
sends is not acted on once the page is gone, and the process outlives the server): here each
session's process gets :data:`SESSION_GRACE` seconds to end after its socket closes, and is killed
after that, or when the server stops (unsaved edits are in the app's journal).
"""
from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import secrets
import sys
from pathlib import Path
from typing import Awaitable, Callable, TextIO
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server

TOKEN_PARAM = "token"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_HOSTS = ("", "0.0.0.0", "::")
SESSION_GRACE = 10.0  # seconds a session's app has to end by itself once its socket is closed

log = logging.getLogger("ctxfst-tui.serve")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """A fresh secret for one run of the server."""
    return secrets.token_urlsafe(32)


def _host_port(netloc: str, default_port: int) -> tuple[str, int] | None:
    """(lower-case host without brackets, port) of ``host[:port]``; None when it does not parse."""
    try:
        parts = urlsplit(f"//{netloc}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host or parts.username is not None or parts.password is not None or parts.path:
        return None
    return host.lower(), port if port is not None else default_port


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Door:
    """Who may come in: the token, the hosts and the origins of one server."""

    def __init__(self, token: str, host: str, port: int, public_url: str) -> None:
        self.token = token
        self.port = port
        self.cookie_name = f"ctxfst-tui-token-{port}"  # cookies ignore ports: one per server
        self.wildcard = host in WILDCARD_HOSTS
        public = urlsplit(public_url)
        self.secure = public.scheme == "https"
        public_port = public.port or (443 if self.secure else 80)
        # (scheme, host, port) this server is reached at.
        self.addresses: set[tuple[str, str, int]] = {("http", name, port) for name in LOOPBACK_NAMES}
        if not self.wildcard:
            self.addresses.add(("http", host.strip("[]").lower(), port))
        if public.hostname:
            self.addresses.add((public.scheme or "http", public.hostname.lower(), public_port))

    def host_allowed(self, value: str | None) -> bool:
        """Whether a ``Host`` header names this server (DNS rebinding sends another name)."""
        if not value:
            return False
        for scheme in {scheme for scheme, _, _ in self.addresses}:
            parsed = _host_port(value, 443 if scheme == "https" else 80)
            if parsed is None:
                return False
            if (scheme, *parsed) in self.addresses:
                return True
            if self.wildcard and parsed[1] == self.port and _is_ip_literal(parsed[0]):
                return True
        return False

    def origin_allowed(self, value: str) -> bool:
        """Whether an ``Origin`` header is a page of this server (``null`` and other sites are not)."""
        try:
            origin = urlsplit(value)
            port = origin.port
        except ValueError:
            return False
        if origin.scheme not in ("http", "https") or not origin.hostname or origin.path not in ("", "/"):
            return False
        port = port if port is not None else (443 if origin.scheme == "https" else 80)
        host = origin.hostname.lower()
        if (origin.scheme, host, port) in self.addresses:
            return True
        return self.wildcard and origin.scheme == "http" and port == self.port and _is_ip_literal(host)

    def token_in(self, request: web.Request) -> tuple[bool, bool]:
        """(the request carries the right token, it came in the URL)."""
        in_url = request.query.get(TOKEN_PARAM)
        if in_url is not None:
            return self._right(in_url), True
        header = request.headers.get("Authorization", "")
        if header.lower().startswith("token "):
            return self._right(header[6:].strip()), False
        cookie = request.cookies.get(self.cookie_name)
        return (cookie is not None and self._right(cookie)), False

    def _right(self, candidate: str) -> bool:
        return hmac.compare_digest(candidate.encode("utf-8", "replace"), self.token.encode())

    def refusal(self, request: web.Request) -> str | None:
        """Why ``request`` is refused, or None to let it in."""
        if not self.host_allowed(request.headers.get("Host")):
            return f"Host {request.headers.get('Host')!r} is not this server"
        origin = request.headers.get("Origin")
        if origin is not None and not self.origin_allowed(origin):
            return f"Origin {origin!r} is not this server"
        right, _ = self.token_in(request)
        if not right:
            return "no valid token"
        return None


class GuardedServer(Server):
    """textual-serve's Server with :class:`Door` in front of every route."""

    def __init__(self, command: str, *, host: str, port: int, title: str, public_url: str | None = None,
                 token: str | None = None, folder: Path | None = None, out: TextIO = sys.stderr) -> None:
        super().__init__(command, host=host, port=port, title=title, public_url=public_url)
        self.public_url = self.public_url.rstrip("/")
        self.token = token or new_token()
        self.door = Door(self.token, host, port, self.public_url)
        self.folder = folder
        self.out = out
        self._sessions: set[AppService] = set()  # app processes whose socket is open
        self._reapers: set[asyncio.Task] = set()

    @property
    def url(self) -> str:
        """The address to open, token included."""
        return f"{self.public_url}/?{TOKEN_PARAM}={self.token}"

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    async def on_startup(self, app: web.Application) -> None:
        where = f"{self.folder} " if self.folder is not None else ""
        print(f"ctxfst-tui: serving {where}at {self.url} (ctrl+c stops)", file=self.out, flush=True)

    async def on_shutdown(self, app: web.Application) -> None:
        """No app process outlives the server."""
        ending = [self._end(session, grace=2.0) for session in list(self._sessions)]
        await asyncio.gather(*ending, *self._reapers, return_exceptions=True)

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        self._sessions.add(app_service)
        try:
            await super()._process_messages(websocket, app_service)
        finally:
            self._sessions.discard(app_service)
            reaper = asyncio.get_running_loop().create_task(self._end(app_service, SESSION_GRACE))
            self._reapers.add(reaper)
            reaper.add_done_callback(self._reapers.discard)

    @staticmethod
    async def _end(app_service: AppService, grace: float) -> None:
        """Let the session's app end within ``grace`` seconds, else kill it."""
        process = getattr(app_service, "_process", None)
        if process is None or process.returncode is not None:
            return
        await app_service.send_meta({"type": "quit"})
        try:
            await asyncio.wait_for(process.wait(), grace)
        except asyncio.TimeoutError:
            log.warning("app process %s did not end after its page closed: killed", process.pid)
            try:
                process.kill()
            except ProcessLookupError:
                pass
            await process.wait()

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        reason = self.door.refusal(request)
        if reason is not None:
            log.warning("refused %s %s: %s", request.method, request.path, reason)
            return web.Response(status=403, text=f"403 Forbidden: {reason}\n", headers=_HEADERS)
        response = await handler(request)
        if not response.prepared:  # a WebSocket has sent its headers already
            for name, value in _HEADERS.items():
                response.headers.setdefault(name, value)
            _, in_url = self.door.token_in(request)
            if in_url:
                response.set_cookie(self.door.cookie_name, self.token, path="/", httponly=True,
                                    samesite="Strict", secure=self.door.secure)
        return response


# The token is in the page's URL: never send it on as a Referer; and no other site frames the page.
_HEADERS = {"Referrer-Policy": "no-referrer", "Content-Security-Policy": "frame-ancestors 'none'",
            "X-Frame-Options": "DENY", "Cache-Control": "no-store"}
