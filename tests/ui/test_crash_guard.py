"""A native crash of the workbench on a real terminal: the watcher gives the terminal back, says
what happened in one line, and the journaled edit is offered at the next start."""
from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from ctxfst_tui.core.workspace.journal import all_entries, pending
from ctxfst_tui.ui.crash_guard import TERMINAL_RESET, crash_message

ROOT = Path(__file__).resolve().parents[2]

DOC = """\
---
title: "Notes"
entities:
  - id: entity:javascript
    name: JavaScript
    type: skill
  - id: entity:js
    name: JS
    type: skill
chunks:
  - id: note:intro
    tags: [Intro]
    entities: [entity:javascript, entity:js]
    context: "Why the front end is written in JavaScript and which parts use plain JS"
---

<Chunk id="note:intro">
The front end is JavaScript; a few scripts are plain JS.
</Chunk>
"""


def _read(master: int, sink: bytearray, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            sink.extend(data)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def start_workbench(folder: Path, slave: int, screen: bytearray, master: int) -> subprocess.Popen:
    """``python -m ctxfst_tui FOLDER`` on the pty, crash guard on; returns once it drew its screen."""
    (folder / "notes.md").write_text(DOC, encoding="utf-8")
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    env.pop("CTXFST_TUI_NO_CRASH_GUARD", None)
    proc = subprocess.Popen([sys.executable, "-m", "ctxfst_tui", str(folder)], stdin=slave, stdout=slave,
                            stderr=slave, env=env, cwd=ROOT, start_new_session=True)
    deadline = time.monotonic() + 90
    while b"Entities" not in screen:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the workbench never drew its screen: {bytes(screen[-2000:])!r}")
        _read(master, screen, 0.2)
    return proc


def test_crash_message_names_the_signal_and_the_journal() -> None:
    line = crash_message(signal.SIGSEGV, "/state/journal/abc", "/state/logs/crash.log")
    assert "crashed (SIGSEGV)" in line and "/state/journal/abc" in line and "/state/logs/crash.log" in line
    assert "\n" not in line
    assert "out of memory" in crash_message(signal.SIGKILL, None, None)
    assert "stopped (SIGTERM)" in crash_message(signal.SIGTERM, None, None)


@pytest.mark.timeout(180)
def test_a_segfault_of_the_real_workbench_gives_the_terminal_back(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    state = Path(os.environ["CTXFST_TUI_STATE_DIR"])
    master, slave = pty_pair()
    before = termios.tcgetattr(slave)
    screen = bytearray()
    proc = start_workbench(folder, slave, screen, master)
    try:
        deadline = time.monotonic() + 90
        _read(master, screen, 2.0)  # the folder scan and the first analysis
        assert termios.tcgetattr(slave)[3] & termios.ICANON == 0  # the workbench has the tty in raw mode
        children = _children(proc.pid)
        assert len(children) == 1, "the workbench runs in a child of the watcher"
        app_pid = children[0]
        while not all_entries(folder):  # merge JS into JavaScript by keys until it is journaled
            assert time.monotonic() < deadline, bytes(screen[-2000:])
            for key in (b"3", b"\t", b"m", b"y"):
                os.write(master, key)
                _read(master, screen, 0.5)
            _read(master, screen, 1.0)
        mark = len(screen)
        os.kill(app_pid, signal.SIGSEGV)
        assert proc.wait(30) == 128 + signal.SIGSEGV
        _read(master, screen, 0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    after = bytes(screen[mark:])
    assert TERMINAL_RESET.encode() in after  # alternate screen left, mouse reporting off
    text = after.decode("utf-8", "replace")
    assert "the workbench crashed (SIGSEGV)" in text and "journal" in text
    assert "Traceback" not in text
    restored = termios.tcgetattr(slave)
    assert restored[3] == before[3]  # the tty's local modes (echo, canonical input) are back
    assert (state / "logs" / "crash.log").read_text(encoding="utf-8").count("Segmentation fault") >= 1
    assert pending(folder), "the journaled merge is offered at the next start"
    os.close(master)
    os.close(slave)


def test_killing_the_watcher_ends_the_workbench(tmp_path: Path) -> None:
    """kill -9 of the process a user sees ends the workbench too (PR_SET_PDEATHSIG)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    master, slave = pty_pair()
    screen = bytearray()
    proc = start_workbench(folder, slave, screen, master)
    try:
        (app_pid,) = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        end = time.monotonic() + 10
        while os.path.exists(f"/proc/{app_pid}") and time.monotonic() < end:
            time.sleep(0.05)
        alive = os.path.exists(f"/proc/{app_pid}")
        if alive:  # reap a zombie: it is dead if only its exit status is left
            with open(f"/proc/{app_pid}/status") as fh:
                alive = "zombie" not in fh.read()
        assert not alive
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
        os.close(slave)


def pty_pair() -> tuple[int, int]:
    import pty

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    return master, slave
