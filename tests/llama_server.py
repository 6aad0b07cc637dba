"""A real ``llama_cpp.server`` on a free port for the tests of the HTTP paths (completions and
embeddings), started and stopped in one place so every test module waits and fails alike."""
from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator, Sequence

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_unavailable() -> str | None:
    """Why the server cannot start here (its extra is missing), or None."""
    try:
        import fastapi  # noqa: F401
        import llama_cpp.server.app  # noqa: F401
        import sse_starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        return f"llama-cpp-python[server] extra not installed ({exc.name}); pip install 'llama-cpp-python[server]'"
    return None


@contextlib.contextmanager
def llama_server(model: Path, extra: Sequence[str] = (), *, ready_within: float = 90.0) -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:PORT``) once ``/v1/models`` answers; skip when the
    server extra is missing, fail when it exits or is not ready in time; always stopped after."""
    why = server_unavailable()
    if why:
        pytest.skip(why)
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
           "--port", str(port), "--verbose", "False", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + ready_within
    try:
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode("utf-8", "replace")[-800:] if proc.stderr else ""
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {err}")
            try:
                with urllib.request.urlopen(base + "/v1/models", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not become ready within {ready_within:g} s")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait(5)
