"""``ctxfst-tui serve`` lets no one in: a real server process on a free 127.0.0.1 port, real HTTP
and WebSocket clients (aiohttp), and the refusals a hostile web page or a DNS-rebinding attack would
meet: no or a wrong token, a foreign Origin, a foreign Host."""
from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest

from ctxfst_tui.ui.serve import Door, GuardedServer

WAIT = 40.0  # seconds a loaded machine may take to start the server or the app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A running ``ctxfst-tui serve`` process and what it printed."""

    def __init__(self, proc: subprocess.Popen, port: int, url: str, folder: Path) -> None:
        self.proc, self.port, self.url, self.folder = proc, port, url, folder
        self.token = re.search(r"token=([\w-]+)", url).group(1)
        self.base = f"http://127.0.0.1:{port}"
        self.origin = self.base


def start_server(folder: Path, home: Path) -> Served:
    port = free_port()
    log = home / "serve.err"
    env = {**os.environ, "CTXFST_TUI_CONFIG_DIR": str(home / "config"), "CTXFST_TUI_STATE_DIR": str(home / "state")}
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "ctxfst_tui", "serve", str(folder), "--port", str(port)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.monotonic() + WAIT
    url = None
    while time.monotonic() < deadline and proc.poll() is None:
        found = re.search(r"at (http://\S+\?token=[\w-]+)", log.read_text(errors="replace"))
        if found:
            url = found.group(1)
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return Served(proc, port, url, folder)
            except OSError:
                pass
        time.sleep(0.1)
    proc.kill()
    proc.wait(timeout=10)
    raise AssertionError(f"no server on {port} (printed {url!r}):\n{log.read_text(errors='replace')}")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    home = tmp_path_factory.mktemp("serve")
    folder = home / "docs"
    folder.mkdir()
    (folder / "note.md").write_text("# Note\n\nText.\n")
    server = start_server(folder, home)
    yield server
    server.proc.terminate()
    try:
        server.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait(timeout=10)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, WAIT + 20))


async def get(url: str, **headers: str) -> tuple[int, str, aiohttp.ClientResponse]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as client:
        async with client.get(url, headers=headers, allow_redirects=False) as response:
            return response.status, await response.text(), response


async def ws_status(url: str, **headers: str) -> int:
    """The HTTP status the WebSocket handshake got: 101 when it opened."""
    async with aiohttp.ClientSession() as client:
        try:
            async with client.ws_connect(url, headers=headers, timeout=aiohttp.ClientWSTimeout(ws_receive=5)) as ws:
                await ws.send_str('["stdin", "q"]')
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


async def read_screen(ws: aiohttp.ClientWebSocketResponse, wanted: str) -> str:
    """What the app sends a browser's terminal, until ``wanted`` shows (escape codes and all)."""
    seen = ""
    deadline = asyncio.get_running_loop().time() + WAIT
    while wanted not in seen and asyncio.get_running_loop().time() < deadline:
        try:
            msg = await ws.receive(timeout=2)
        except asyncio.TimeoutError:
            continue
        if msg.type == aiohttp.WSMsgType.BINARY:
            seen += msg.data.decode("utf-8", "replace")
        elif msg.type == aiohttp.WSMsgType.TEXT:
            seen += msg.data
        elif msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.ERROR):
            break
    return seen


# ---------------------------------------------------------------- the way in


def test_start_prints_a_loopback_url_with_a_fresh_token(served, tmp_path):
    assert served.url.startswith(f"http://127.0.0.1:{served.port}/?token=")
    assert len(served.token) >= 40
    other = start_server(served.folder, tmp_path)
    try:
        assert other.token != served.token  # per run, never fixed
    finally:
        other.proc.terminate()
        other.proc.wait(timeout=10)


def test_the_printed_url_opens_the_page_whose_socket_drives_the_workbench(served):
    """As a browser does: open the printed URL, keep the cookie it sets, load the page's script,
    open the socket URL the page names (no token in it: the cookie carries it) from the page's
    origin, and read the workbench of the folder."""

    async def browse() -> tuple[str, str]:
        jar = aiohttp.CookieJar(unsafe=True)  # browsers keep cookies of 127.0.0.1; aiohttp needs telling
        async with aiohttp.ClientSession(cookie_jar=jar) as browser:
            async with browser.get(served.url) as page:
                assert page.status == 200
                html = await page.text()
                cookie = page.headers.getall("Set-Cookie")[0]
                assert served.token in cookie
                assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
                assert page.headers["Referrer-Policy"] == "no-referrer"
            assert "CtxFST Workbench" in html
            script = re.search(r'<script[^>]+src="([^"]+)"', html).group(1)
            async with browser.get(script) as js:
                assert js.status == 200  # static files come in with the cookie too
            ws_url = re.search(r'data-session-websocket-url="([^"]+)"', html).group(1)
            assert ws_url == f"ws://127.0.0.1:{served.port}/ws" and "token" not in ws_url
            # what textual.js does with it: the size as the query
            async with browser.ws_connect(f"{ws_url}?width=100&height=30", headers={"Origin": served.origin}) as ws:
                screen = await read_screen(ws, "note.md")
                await ws.send_str('["stdin", "q"]')
            # a reload: no token in the URL, the cookie alone
            async with browser.get(f"{served.base}/") as again:
                return screen, str(again.status)

    screen, reload_status = run(browse())
    assert "note.md" in screen  # a browser session runs the workbench on the folder
    assert reload_status == "200"


def test_the_token_in_the_socket_url_alone_is_enough(served):
    async def connect() -> str:
        async with aiohttp.ClientSession() as client:
            url = f"ws://127.0.0.1:{served.port}/ws?width=90&height=25&token={served.token}"
            async with client.ws_connect(url, headers={"Origin": served.origin}) as ws:
                screen = await read_screen(ws, "note.md")
                await ws.send_str('["stdin", "q"]')
                return screen

    assert "note.md" in run(connect())


# ---------------------------------------------------------------- refusals


def test_no_token_or_a_wrong_one_is_refused_for_the_page_and_the_socket(served):
    wrong = "x" * len(served.token)
    base, ws = served.base, f"ws://127.0.0.1:{served.port}/ws?width=80&height=24"
    origin = {"Origin": served.origin}
    assert run(get(f"{base}/"))[0] == 403
    assert run(get(f"{base}/?token={wrong}"))[0] == 403
    assert run(get(f"{base}/?token={served.token[:-1]}"))[0] == 403
    assert run(get(f"{base}/?token="))[0] == 403
    assert run(get(f"{base}/static/js/textual.js"))[0] == 403
    assert run(get(f"{base}/", Cookie=f"ctxfst-tui-token-{served.port}={wrong}"))[0] == 403
    assert run(get(f"{base}/", Authorization=f"token {wrong}"))[0] == 403
    assert run(ws_status(ws, **origin)) == 403
    assert run(ws_status(f"{ws}&token={wrong}", **origin)) == 403
    assert run(ws_status(ws, Cookie=f"ctxfst-tui-token-{served.port}={wrong}", **origin)) == 403
    # the same requests with the token go in: the refusals are the token's doing
    assert run(get(f"{base}/", Authorization=f"token {served.token}"))[0] == 200
    assert run(ws_status(f"{ws}&token={served.token}", **origin)) == 101


def test_a_foreign_origin_is_refused_even_with_the_token(served):
    ws = f"ws://127.0.0.1:{served.port}/ws?width=80&height=24&token={served.token}"
    for origin in ("http://evil.example", f"http://evil.example:{served.port}", "null",
                   f"https://127.0.0.1:{served.port}", "http://127.0.0.1", f"http://127.0.0.1:{served.port + 1}",
                   f"http://127.0.0.1.evil.example:{served.port}"):
        assert run(ws_status(ws, Origin=origin)) == 403, origin
        assert run(get(f"{served.url}", Origin=origin))[0] == 403, origin
    status, body, _ = run(get(served.url, Origin="http://evil.example"))
    assert "Origin" in body and served.token not in body
    assert run(ws_status(ws, Origin=f"http://localhost:{served.port}")) == 101


def test_a_foreign_host_is_refused_dns_rebinding(served):
    """A rebinding page reaches 127.0.0.1 under its own name: Host (and Origin) say evil.example."""
    ws = f"ws://127.0.0.1:{served.port}/ws?width=80&height=24&token={served.token}"
    for host in (f"evil.example:{served.port}", "evil.example", f"127.0.0.1:{served.port + 1}", "127.0.0.1",
                 f"localhost.evil.example:{served.port}", f"user@127.0.0.1:{served.port}"):
        assert run(get(served.url, Host=host))[0] == 403, host
        assert run(ws_status(ws, Host=host, Origin=f"http://{host}")) == 403, host
        assert run(ws_status(ws, Host=host)) == 403, host
    for alias in (f"localhost:{served.port}", f"127.0.0.1:{served.port}", f"LOCALHOST:{served.port}"):
        assert run(get(served.url, Host=alias))[0] == 200, alias


def app_processes(server: subprocess.Popen) -> set[int]:
    """The session processes (one workbench each) the server runs now."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children")
    return {int(pid) for pid in children.read_text().split()}


def test_refused_requests_start_no_app_and_leave_the_document_alone(served):
    """The attack of the issue (keys that merge and save) from a foreign origin changes nothing."""
    note = served.folder / "note.md"
    before = note.read_bytes()
    running = app_processes(served.proc)
    ws = f"ws://127.0.0.1:{served.port}/ws?width=80&height=24&token={served.token}"
    assert run(ws_status(ws, Origin="http://evil.example")) == 403
    assert run(ws_status(ws.replace(served.token, "nope"), Origin=served.origin)) == 403
    assert run(ws_status(ws, Host=f"evil.example:{served.port}")) == 403
    assert app_processes(served.proc) <= running  # no workbench was started for them
    assert note.read_bytes() == before


def test_a_closed_page_ends_its_app_process(served):
    """textual-serve alone leaves the session's workbench running once the page is gone."""

    async def open_and_close() -> set[int]:
        async with aiohttp.ClientSession() as client:
            url = f"ws://127.0.0.1:{served.port}/ws?width=80&height=24&token={served.token}"
            async with client.ws_connect(url, headers={"Origin": served.origin}) as ws:
                assert "note.md" in await read_screen(ws, "note.md")
                return app_processes(served.proc)

    during = run(open_and_close())  # closed without quitting, as a closed tab does
    assert during
    deadline = time.monotonic() + 40
    while during & app_processes(served.proc) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not during & app_processes(served.proc)


# ---------------------------------------------------------------- the door's rules


def test_door_names_this_server_only():
    door = Door("t", "127.0.0.1", 8000, "http://127.0.0.1:8000")
    assert door.host_allowed("127.0.0.1:8000") and door.host_allowed("localhost:8000") and door.host_allowed("[::1]:8000")
    assert not door.host_allowed(None) and not door.host_allowed("") and not door.host_allowed("10.0.0.5:8000")
    assert not door.host_allowed("127.0.0.1:8000/x") and not door.host_allowed("127.0.0.1:99999")
    assert door.origin_allowed("http://localhost:8000") and door.origin_allowed("http://[::1]:8000")
    assert not door.origin_allowed("http://localhost:8000/path") and not door.origin_allowed("file://")


def test_door_behind_a_proxy_takes_the_public_url():
    door = Door("t", "127.0.0.1", 8000, "https://work.example.org")
    assert door.host_allowed("work.example.org") and door.origin_allowed("https://work.example.org")
    assert not door.origin_allowed("http://work.example.org") and not door.host_allowed("other.example.org")
    assert door.secure


def test_door_on_every_address_takes_ip_literals_but_no_names():
    door = Door("t", "0.0.0.0", 8000, "http://0.0.0.0:8000")
    assert door.host_allowed("192.168.1.20:8000") and door.origin_allowed("http://192.168.1.20:8000")
    assert door.host_allowed("[fe80::1]:8000")
    assert not door.host_allowed("evil.example:8000") and not door.host_allowed("192.168.1.20:8001")


def test_server_url_carries_the_token():
    server = GuardedServer("true", host="127.0.0.1", port=8123, title="t")
    assert server.url == f"http://127.0.0.1:8123/?token={server.token}"
    assert urlsplit(server.url).query == f"token={server.token}"
