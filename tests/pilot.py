"""Helpers for the Pilot tests of the workbench, written once.

Every Pilot test drives the App as a user would; what they share is how to wait: for the workers
to finish (``settle``), for a condition that takes a few message hops (``until``), and how to open
a document from the tree. The disk-watch worker never finishes, so ``settle`` never waits for it.
"""
from __future__ import annotations

import asyncio
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest

from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.document.tree import DocumentTree

SIZE = (160, 45)

# The workbench's own test folder: documents valid, invalid (a nested chunk far below the first
# screen), broken YAML, empty, binary, Latin-1, CRLF, BOM, plus files that are not documents.
WORKBENCH_FOLDER = Path(__file__).resolve().parent / "fixtures" / "workbench"
VALID = (WORKBENCH_FOLDER / "valid.md").read_text(encoding="utf-8")
INVALID = (WORKBENCH_FOLDER / "invalid.md").read_text(encoding="utf-8")


def workbench_folder(tmp_path: Path) -> Path:
    """A private copy of tests/fixtures/workbench/ (tests edit and delete its files)."""
    shutil.copytree(WORKBENCH_FOLDER, tmp_path, dirs_exist_ok=True)
    return tmp_path


async def settle(app: WorkbenchApp, pilot) -> None:
    """Let workers finish and their messages (and any mounts they cause) be handled."""
    running = [w for w in app.workers if w.group != "watch"]
    if running:  # wait_for_complete([]) would wait for every worker, the endless watch too
        await app.workers.wait_for_complete(running)
    await pilot.pause()
    await pilot.pause()


async def started(app: WorkbenchApp, pilot) -> WorkbenchScreen:
    await settle(app, pilot)
    assert isinstance(app.screen, WorkbenchScreen)
    return app.screen


async def open_document(app: WorkbenchApp, pilot, document: str | Path) -> None:
    """Walk the tree cursor with Up/Down to ``document`` (relative to the folder, or a full path)
    and press Enter, as a user would."""
    tree = app.screen.query_one(DocumentTree)
    target = app.folder / document
    tree.focus()
    order = [node.data for node in (tree.get_node_at_line(i) for i in range(tree.last_line + 1))]
    assert target in order, f"{document} is not in the tree"
    key = "down" if order.index(target) > tree.cursor_line else "up"
    for _ in range(len(order)):
        if tree.cursor_node is not None and tree.cursor_node.data == target:
            break
        await pilot.press(key)
    assert tree.cursor_node is not None and tree.cursor_node.data == target
    await pilot.press("enter")
    await settle(app, pilot)
    assert app.screen.current == target


async def until(pilot, condition: Callable[[], object], timeout: float = 10.0) -> float:
    """Pause until ``condition()`` holds; the seconds it took. Fails after ``timeout`` seconds
    (messages between panes and workers take a few hops on a busy machine)."""
    t0 = time.monotonic()
    while not condition():
        assert time.monotonic() - t0 < timeout, f"timed out after {timeout} s"
        # a bare sleep lets the App's tasks run; pilot.pause() would also repaint the whole
        # screen every 20 ms, and that painting took the CPU the workers waited on need
        await asyncio.sleep(0.02)
    waited = time.monotonic() - t0
    await pilot.pause()  # what the condition caused is handled and painted before the test looks
    return waited


def notifications(app: WorkbenchApp, monkeypatch=None) -> list[tuple[str, str, str]]:
    """(title, message, severity) of every notification the App shows from now on (all of them when
    called before ``run_test``). Recorded through the public ``App.notify``."""
    seen: list[tuple[str, str, str]] = []
    original = app.notify

    def notify(message, *, title="", severity="information", **kw):
        seen.append((str(title), str(message), str(severity)))
        return original(message, title=title, severity=severity, **kw)

    if monkeypatch is not None:
        monkeypatch.setattr(app, "notify", notify)
    else:
        app.notify = notify  # the App is the test's own: nothing to restore
    return seen


@contextmanager
def kept_failure(error_type: type[BaseException], match: str) -> Iterator[pytest.ExceptionInfo]:
    """Around ``async with app.run_test()`` in a test that provokes a failure on purpose: the
    workbench survives it, and ``run_test`` re-raises the first such failure when it ends (so no
    test passes over one it did not expect); here that one is expected. An error of the test's
    own inside (a failed assert) is raised as itself, not hidden behind the expected one."""
    with pytest.raises(error_type, match=match) as raised:
        yield raised
    if raised.value.__context__ is not None:  # run_test raised the kept failure over it
        raise raised.value.__context__
