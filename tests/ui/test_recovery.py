"""Crash-proof editing: the journal of unsaved edits, its recovery at the next start, and the save race.

Pilot tests drive the workbench by keys; one test runs the real app under a pseudo-terminal,
kills it with SIGKILL and recovers its edits in a new app.
"""
from __future__ import annotations

import asyncio
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ctxfst_tui.core import safe_write
from ctxfst_tui.core.workspace.entity_ops import add_alias, merge_entities
from ctxfst_tui.core.workspace.journal import Journal, all_entries, journal_dir, pending, unsaved
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.screens.modals.recovery import RecoveryScreen
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from pilot import SIZE, notifications, open_document, settle, started, until
from test_entity_panel import BACKEND, FRONTEND, show_entities, to_clusters

ROOT = Path(__file__).resolve().parents[2]
MERGED = "entities: [entity:react, entity:javascript]"  # frontend.md's chunk line after JS → JavaScript


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "frontend.md").write_text(FRONTEND, encoding="utf-8")
    (root / "backend.md").write_text(BACKEND, encoding="utf-8")
    return root


def on_disk(folder: Path) -> tuple[str, str]:
    return (folder / "frontend.md").read_text(encoding="utf-8"), (folder / "backend.md").read_text(encoding="utf-8")


async def merge_js(app: WorkbenchApp, pilot) -> None:
    """Entities view, suggested merges, m, y: JS is merged into JavaScript (both documents change)."""
    await show_entities(app, pilot)
    await to_clusters(app, pilot)
    await pilot.press("m")
    await pilot.pause()
    await pilot.press("y")
    await settle(app, pilot)
    assert MERGED in app.session.document(app.folder / "frontend.md").text


async def merge_js_by_api(app: WorkbenchApp, pilot) -> None:
    """The same merge as ``merge_js``, applied as the Entities view applies it, without walking the
    view (for tests of saving and sessions, which never look at it)."""
    app.screen.editing.apply("Merged", lambda: app.session.run(merge_entities, "entity:javascript", ["entity:js"]))
    await settle(app, pilot)
    assert MERGED in app.session.document(app.folder / "frontend.md").text


def left_by_a_killed_app(folder: Path) -> None:
    """What an app killed after merging JS into JavaScript leaves: an ended session holding both
    documents' edits. Built through the core API (the first test shows the app journaling them)."""
    ws = Workspace.load(folder)
    merge_entities(ws, "entity:javascript", ["entity:js"])
    assert MERGED in ws.document(folder / "frontend.md").text
    journal = Journal(folder)
    assert journal.sync(unsaved(ws.docs), 1)
    journal.release()  # the kernel drops a killed process's lock
    assert len(pending(folder)) == 2


async def journaled(folder: Path, pilot, count: int, timeout: float = 5.0) -> float:
    """Wait until the journal holds ``count`` entries (the running app's included); returns the seconds it took."""
    start = time.monotonic()
    while len(all_entries(folder)) != count:
        assert time.monotonic() - start < timeout, f"journal holds {len(all_entries(folder))} entries, not {count}"
        await pilot.pause(0.05)
    return time.monotonic() - start


async def recovery_offered(app: WorkbenchApp, pilot) -> RecoveryScreen:
    await settle(app, pilot)
    for _ in range(50):
        if isinstance(app.screen, RecoveryScreen):
            return app.screen
        await pilot.pause(0.05)
    raise AssertionError(f"no recovery dialog; the screen is {app.screen!r}")


async def test_an_edit_is_journaled_within_a_second_and_a_new_app_offers_it_back(folder):
    original = on_disk(folder)
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        edits: list[float] = []  # wall-clock time of each change of the session
        app.session.listeners.append(lambda: edits.append(time.time()))
        await merge_js(app, pilot)
        await journaled(folder, pilot, 2)
        assert pending(folder) == []  # a running app's edits are never offered
        entries = {e.path.name: e for e in all_entries(folder)}
        delay = max(e.timestamp for e in entries.values()) - edits[0]
        print(f"journaled {delay:.2f} s after the edit")
        # Written right after the edit's handler (measured 0.3-1.0 s on a 2-core machine at load 7);
        # the bound leaves room for a loaded CI machine.
        assert 0 < delay < 2.0
        assert entries["frontend.md"].data == app.session.document(folder / "frontend.md").encoded()
    app.journal.release()  # its process would end here: the kernel drops its lock
    # The app ended with unsaved edits (as a crash would): the journal is kept, the files untouched.
    assert on_disk(folder) == original
    assert len(pending(folder)) == 2

    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        modal = await recovery_offered(app, pilot)
        assert sorted(i.label for i in modal.items) == ["backend.md", "frontend.md"]
        assert not modal.conflicts
        front = next(i for i in modal.items if i.label == "frontend.md")
        assert f"+    {MERGED}  # the components are plain JS" in front.diff
        await pilot.press("enter")  # Enter is "Recover", as y is (the other tests press y)
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, WorkbenchScreen)
        tree = screen.query_one(DocumentTree)
        assert tree.unsaved(folder / "frontend.md") and tree.unsaved(folder / "backend.md")
        assert "2 unsaved" in app.sub_title
        assert MERGED in app.session.document(folder / "frontend.md").text
        assert on_disk(folder) == original  # recovering writes nothing
        await open_document(app, pilot, "frontend.md")
        assert MERGED in screen.query_one(SourceView).text  # the panes show the recovered text, not the file's
        await pilot.press("u")  # the recovery is one undoable step: back to the disk text
        await settle(app, pilot)
        assert app.session.document(folder / "frontend.md").text == original[0]
        assert not tree.unsaved(folder / "frontend.md") and "unsaved" not in app.sub_title
        await journaled(folder, pilot, 0)  # undone back to the saved state: nothing left to keep
        await pilot.press("U")
        await settle(app, pilot)
        await journaled(folder, pilot, 2)
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert MERGED in on_disk(folder)[0]
        await journaled(folder, pilot, 0)  # saved: the journal is cleared
        await pilot.press("q")  # nothing unsaved: a clean quit
        await pilot.pause()
        assert not app.is_running
    assert pending(folder) == []  # nothing unsaved: nothing to offer, and the empty session is gone
    assert not journal_dir(folder).exists()


async def test_n_discards_the_journal_and_quitting_without_saving_leaves_none(folder):
    original = on_disk(folder)
    left_by_a_killed_app(folder)
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        # 1. n discards the journal offered: nothing is left to offer again.
        await recovery_offered(app, pilot)
        await pilot.press("n")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, WorkbenchScreen)
        assert not app.session.dirty_paths and "unsaved" not in app.sub_title
        assert pending(folder) == [] and not journal_dir(folder).exists()
        # 2. "Quit without saving" drops the edits on purpose: nothing is journaled for later.
        screen.editing.apply("Aliases", lambda: app.session.run(add_alias, "entity:react", "ReactJS"))
        await journaled(folder, pilot, 1)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
        assert not app.is_running
    assert on_disk(folder) == original
    assert pending(folder) == []


def slow_writer(monkeypatch) -> tuple[threading.Event, list[list[str]], list[int]]:
    """Replace the workspace writer with one that waits for ``release`` before writing (a slow disk).
    Returns the event, the file names of each write call, and [writing now, most at once]."""
    release = threading.Event()
    calls: list[list[str]] = []
    active = [0, 0]
    real = safe_write.write_files
    lock = threading.Lock()

    def write_files(plans):
        plans = list(plans)
        with lock:
            active[0] += 1
            active[1] = max(active)
        try:
            calls.append([p.path.name for p in plans])
            assert release.wait(20), "the test never released the write"
            return real(plans)
        finally:
            with lock:
                active[0] -= 1

    monkeypatch.setattr(safe_write, "write_files", write_files)
    return release, calls, active


async def test_saves_over_a_changed_file_or_during_an_edit_lose_nothing_and_one_runs_at_a_time(folder, monkeypatch):
    original = on_disk(folder)
    release, calls, active = slow_writer(monkeypatch)
    app = WorkbenchApp(folder)
    notified = notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await merge_js_by_api(app, pilot)
        merged_front = app.session.document(folder / "frontend.md").text

        # 0. A save over a file changed on disk writes nothing and keeps the edits.
        release.set()  # this save is not slow
        theirs = original[1] + "\nAppended by another program.\n"
        (folder / "backend.md").write_text(theirs, encoding="utf-8")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert on_disk(folder) == (original[0], theirs)  # all or nothing: frontend.md is not written either
        assert app.session.dirty_paths == {folder / "frontend.md", folder / "backend.md"}
        errors = [message for _, message, severity in notified if severity == "error"]
        assert any("backend.md" in m and "changed on disk" in m for m in errors)
        await journaled(folder, pilot, 2)  # the edits stay protected
        (folder / "backend.md").write_text(original[1], encoding="utf-8")  # the other program puts it back
        release.clear()
        calls.clear()

        # 1. An edit made while the save writes stays unsaved.
        await pilot.press("ctrl+s")
        await until(pilot, lambda: calls)  # the worker is writing now
        screen.editing.apply("Aliases", lambda: app.session.run(add_alias, "entity:react", "ReactJS"))  # typed meanwhile
        front = app.session.document(folder / "frontend.md")
        assert "ReactJS" in front.text
        release.set()
        await settle(app, pilot)
        # The file holds the snapshot taken when ctrl+s was pressed; the later edit is still unsaved.
        assert (folder / "frontend.md").read_text(encoding="utf-8") == merged_front
        assert "ReactJS" not in on_disk(folder)[0]
        assert front.dirty and "ReactJS" in front.text
        assert not app.session.document(folder / "backend.md").dirty  # written and unchanged since: saved
        tree = screen.query_one(DocumentTree)
        assert tree.unsaved(folder / "frontend.md") and not tree.unsaved(folder / "backend.md")
        assert "1 unsaved" in app.sub_title
        assert any("edited while saving" in message for _, message, _ in notified)
        await journaled(folder, pilot, 1)  # the unsaved edit is journaled; the saved document is not
        assert b"ReactJS" in all_entries(folder)[0].data

        # 2. One save at a time: a ctrl+s pressed while a save writes saves again after it.
        release.clear()
        await pilot.press("ctrl+s")
        await until(pilot, lambda: len(calls) == 2)  # writing frontend.md (with ReactJS) now
        screen.editing.apply("Aliases", lambda: app.session.run(add_alias, "entity:react", "ReactDOM"))
        seen = len(notified)
        await pilot.press("ctrl+s")  # while the save is writing
        await pilot.pause()
        assert any("Saving…" in message for _, message, _ in notified[seen:])
        release.set()
        await settle(app, pilot)
        await until(pilot, lambda: not app.session.dirty_paths)
        await settle(app, pilot)
        front_text, back_text = on_disk(folder)
        assert "ReactJS" in front_text and "ReactDOM" in front_text and MERGED in front_text
        assert "entity:javascript" in back_text
        assert active[1] == 1  # never two writes at once
        assert [sorted(c) for c in calls] == [["backend.md", "frontend.md"], ["frontend.md"], ["frontend.md"]]
        await journaled(folder, pilot, 0)


# ---------------------------------------------------------------- a real process, killed

def _read_all(fd: int, sink: bytearray, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            data = os.read(fd, 65536)
        except OSError:
            return
        if not data:
            return
        sink.extend(data)


async def test_kill_9_of_a_real_app_loses_no_edit(folder):
    """The workbench as a user runs it (``python -m ctxfst_tui FOLDER`` on a terminal), an edit by
    keys, SIGKILL once it is journaled; a new app offers the edit back and restores it."""
    original = on_disk(folder)
    master, slave = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen([sys.executable, "-m", "ctxfst_tui", str(folder)], stdin=slave, stdout=slave, stderr=slave,
                            env=env, cwd=ROOT, start_new_session=True, close_fds=True)
    os.close(slave)
    screen_bytes = bytearray()
    stop = threading.Event()
    reader = threading.Thread(target=_read_all, args=(master, screen_bytes, stop), daemon=True)
    reader.start()
    deadline = time.monotonic() + 60

    async def drawn(marker: bytes, since: int, what: str) -> None:
        """Wait until the app draws ``marker`` (in what it wrote after byte ``since``)."""
        while marker not in screen_bytes[since:]:
            assert proc.poll() is None, f"the app ended: {bytes(screen_bytes[-2000:])!r}"
            assert time.monotonic() < deadline, f"{what}: {bytes(screen_bytes[-2000:])!r}"
            await asyncio.sleep(0.05)

    try:
        await drawn(b"Entities", 0, "the app never drew its screen")
        mark = len(screen_bytes)
        os.write(master, b"3")  # the Entities view
        # its suggested merges' subtitle ("1 sure · 0 to review") once the scan and first analysis are in
        await drawn(b"to review", mark, "no suggested merges were drawn")
        mark = len(screen_bytes)
        os.write(master, b"\tm")  # to the suggested merges, merge: keys are handled in order
        await drawn(b"Cancel", mark, "no diff to confirm was drawn")
        os.write(master, b"y")  # confirm the diff
        while len(all_entries(folder)) != 2:
            assert time.monotonic() < deadline, f"no journal entry appeared: {bytes(screen_bytes[-2000:])!r}"
            await asyncio.sleep(0.05)
        assert pending(folder) == []  # the app runs: its session is locked
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        stop.set()
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        os.close(master)
    assert on_disk(folder) == original  # killed before any save

    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        modal = await recovery_offered(app, pilot)
        assert sorted(i.label for i in modal.items) == ["backend.md", "frontend.md"] and not modal.conflicts
        await pilot.press("y")
        await settle(app, pilot)
        front = app.session.document(folder / "frontend.md")
        back = app.session.document(folder / "backend.md")
        assert front.dirty and back.dirty
        assert f"{MERGED}  # the components are plain JS" in front.text
        assert "entities: [entity:javascript, entity:node]" in back.text
        assert app.screen.query_one(DocumentTree).unsaved(folder / "frontend.md")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        await journaled(folder, pilot, 0)
    assert MERGED in on_disk(folder)[0]


# ---------------------------------------------------------------- two apps on one folder

CHILD = r"""
import sys, time
from pathlib import Path
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.journal import Journal, unsaved
doc = Document.load(Path(sys.argv[1]))
doc.replace_text(doc.text + "\nTyped in the other app.\n")
journal = Journal(Path(sys.argv[1]).parent)
journal.sync(unsaved([doc]), 1)
print(journal.session, flush=True)
time.sleep(120)
"""


async def test_a_second_app_never_offers_a_running_app_s_edits_and_offers_them_once_it_is_killed(folder):
    """Another app (a real process, journaling through the API) edits frontend.md; an app started
    meanwhile offers nothing and journals into its own session; after SIGKILL of the other, both
    ended sessions hold frontend.md and the newest version is offered, saying so. backend.md, changed
    on disk before the next start, is a conflict shown with its diff and never overwritten."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(folder / "frontend.md")], stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, text=True)
    try:
        other = Path(proc.stdout.readline().strip())
        assert other.is_dir(), f"the other app ended: {proc.poll()}"
        app = WorkbenchApp(folder)
        async with app.run_test(size=SIZE) as pilot:
            await started(app, pilot)
            await pilot.pause(0.3)
            assert isinstance(app.screen, WorkbenchScreen)  # no recovery offered: the other app runs
            await merge_js_by_api(app, pilot)
            await journaled(folder, pilot, 3)  # the other app's entry and our two
            ours = app.journal.journal.session
            assert ours != other and ours.parent == other.parent
            assert pending(folder) == []
            assert [e.path.name for e in app.journal.journal.entries()] == ["backend.md", "frontend.md"]
            (theirs,) = [e for e in all_entries(folder) if e.file.parent == other]
            assert b"Typed in the other app." in theirs.data  # never overwritten by us
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(10) == -signal.SIGKILL
            (dead,) = pending(folder)  # the kernel dropped its lock: now it is offered (we still run)
            assert dead.file.parent == other and dead.older == 0
        app.journal.release()  # its process would end here: the kernel drops its lock
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()

    offered = {e.path.name: e for e in pending(folder)}
    assert sorted(offered) == ["backend.md", "frontend.md"]
    assert offered["frontend.md"].older == 1 and offered["frontend.md"].file.parent == ours  # ours is newer
    # Another program changes backend.md meanwhile: its journaled edits are now a conflict.
    theirs = BACKEND.replace("each script has a test.", "each script has a test (edited elsewhere).")
    (folder / "backend.md").write_text(theirs, encoding="utf-8")
    app = WorkbenchApp(folder)
    notified = notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        modal = await recovery_offered(app, pilot)
        front = next(i for i in modal.items if i.label == "frontend.md")
        assert front.older == 1
        assert "Newest of 2 unsaved versions" in str(modal.query_one("#recovery-body").render())
        (conflict,) = modal.conflicts
        assert conflict.label == "backend.md" and conflict.state == "changed"
        assert "-The build runs JavaScript scripts on Node.js; each script has a test (edited elsewhere)." in conflict.diff
        assert "+    entities: [entity:javascript, entity:node]" in conflict.diff
        shown = str(modal.query_one("#recovery-conflict").render())
        assert "changed on disk" in shown and "backend.md" in shown
        await pilot.press("y")
        await settle(app, pilot)
        text = app.session.document(folder / "frontend.md").text
        assert MERGED in text and "Typed in the other app." not in text
        # The conflict's journaled text is held as an unsaved edit; the disk keeps the other program's text.
        held = app.session.document(folder / "backend.md")
        assert held.dirty and "entities: [entity:javascript, entity:node]" in held.text
        assert (folder / "backend.md").read_text(encoding="utf-8") == theirs
        assert any("changed on disk" in message for _, message, _ in notified)
        await journaled(folder, pilot, 2)  # now held by this app's session alone
        mine = app.journal.journal.session
        assert [p for p in journal_dir(folder).iterdir()] == [mine]  # both ended sessions removed
        assert not other.exists() and not ours.exists()
        await pilot.press("u")  # undo goes back to what the disk holds now
        await settle(app, pilot)
        assert held.text == theirs and not held.dirty
    assert (folder / "backend.md").read_text(encoding="utf-8") == theirs
