"""A folder of hostile files: nothing in it ends the workbench or hangs a command.

Special files (a symlink loop, a named pipe, a socket, a dangling link, a folder named ``*.md``)
are skipped and named; odd frontmatter (list / map / null ids and names), binary, UTF-16, NUL
bytes and deeply nested tags are reported; a merge, a fix and a save still work on the good
documents beside them. The commands run as real processes under a timeout; the app under Pilot.
"""
from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.workspace.entity_ops import merge_entities
from ctxfst_tui.core.workspace.files import (
    NotRegularFile,
    read_regular,
    regular_file,
    safe_resolve,
)
from ctxfst_tui.core.workspace.watch import FolderWatcher
from ctxfst_tui.core.workspace.scan import iter_documents, scan_documents

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / ".venv" / "bin" / "ctxfst-tui"
TIMEOUT = 30
NESTED_LEVELS = 10_000

FRONTEND = """\
---
title: "Frontend notes"
entities:
  - id: entity:javascript
    name: JavaScript
    type: skill
  - id: entity:js
    name: JS
    type: skill
chunks:
  - id: skill:react-components
    tags: [Frontend]
    entities: [entity:js]
    context: "How the dashboard's components are organised, typed and tested, and which state they keep"
---

<Chunk id="skill:react-components">
Function components with hooks, written in JavaScript.
</Chunk>
"""

CACHE = """\
---
title: "Session cache"
entities:
  - id: entity:redis
    name: Redis
    type: database
chunks:
  - id: reference:cache
    tags: [Cache]
    entities: [entity:redis, entity:memcached]
    context: "How sessions are cached in Redis and when the cache is bypassed for writes and for admin tools"
---

<Chunk id="reference:cache">
Sessions are read from Redis first and from the database on a miss.
</Chunk>
"""

# Entities and chunks whose ids and names are lists, maps, null and numbers (valid YAML).
ODD_IDS = """\
---
title: "Odd ids"
entities:
  - id: [entity:js, entity:b]
    name: List id
    type: skill
  - id: {x: 1}
    name: [A, B]
    type: skill
  - id: null
    name: null
  - id: 42
    name: {n: 1}
    aliases: [[x], {y: 1}, null, JS]
  - id: entity:ok
    name: 7
    type: skill
    aliases: {a: b}
chunks:
  - id: [c, d]
    entities: [[entity:ok], {a: 1}, null, entity:js]
    context: null
  - id: skill:odd
    entities: [entity:ok, entity:js]
    context: "A chunk that links the odd entities of this document to the frontend notes beside it"
---

<Chunk id="skill:odd">
Odd but readable.
</Chunk>
"""

SPECIAL = {  # file name -> the reason the tool gives
    "a-loop.md": "a symlink loop",
    "x.md": "a named pipe",
    "sock.md": "a socket",
    "dangling.md": "a dangling symlink",
}


def nested_chunks(levels: int) -> str:
    opening = "".join(f'<Chunk id="n:{i}">\n' for i in range(levels))
    return f"---\ntitle: Nested\n---\n\n{opening}deep\n" + "</Chunk>\n" * levels


def build_hostile_folder(folder: Path) -> Path:
    """The hostile files, beside documents a merge (JS → JavaScript) and a fix can act on."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "frontend.md").write_text(FRONTEND, encoding="utf-8")
    (folder / "cache.md").write_text(CACHE, encoding="utf-8")
    (folder / "odd-ids.md").write_text(ODD_IDS, encoding="utf-8")
    (folder / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01" + bytes(range(256)))
    (folder / "utf16.md").write_bytes(FRONTEND.replace("Frontend", "Sixteen").encode("utf-16"))  # with a BOM
    (folder / "nul.md").write_bytes(b"---\ntitle: \"NUL\x00inside\"\n---\n\n<Chunk id=\"a:b\">x\x00y</Chunk>\n")
    (folder / "nested.md").write_text(nested_chunks(NESTED_LEVELS), encoding="utf-8")
    (folder / "notes.txt").write_text("A plain note.\n", encoding="utf-8")
    os.symlink("a-loop.md", folder / "a-loop.md")
    os.symlink("missing-target.md", folder / "dangling.md")
    os.mkfifo(folder / "x.md")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(folder / "sock.md"))
    sock.close()  # the socket file stays
    (folder / "dir.md").mkdir()
    (folder / "dir.md" / "inside.md").write_text("# Inside a folder named dir.md\n", encoding="utf-8")
    return folder


@pytest.fixture
def hostile_folder(tmp_path: Path) -> Path:
    return build_hostile_folder(tmp_path / "hostile")


# ---------------------------------------------------------------- the one place that decides

def test_special_files_are_named_and_never_opened(hostile_folder: Path) -> None:
    for name, reason in SPECIAL.items():
        assert regular_file(hostile_folder / name) == reason
        with pytest.raises(NotRegularFile, match=reason):
            read_regular(hostile_folder / name)  # a pipe would block here if it were opened
    assert regular_file(hostile_folder / "dir.md") == "a folder"
    assert regular_file(hostile_folder / "frontend.md") is None
    assert regular_file(hostile_folder / "nope.md") == "no such file"
    assert safe_resolve(hostile_folder / "a-loop.md") == hostile_folder / "a-loop.md"


def test_a_pipe_swapped_in_after_the_check_is_refused_without_blocking(hostile_folder: Path, monkeypatch) -> None:
    import ctxfst_tui.core.workspace.files as files

    monkeypatch.setattr(files, "regular_file", lambda _path: None)  # the check saw a regular file
    with pytest.raises(NotRegularFile, match="a named pipe"):
        read_regular(hostile_folder / "x.md")  # the non-blocking open returns; fstat says what it is


def test_the_remembered_document_may_be_a_symlink_loop(hostile_folder: Path) -> None:
    from ctxfst_tui.config import State

    state = State()
    state.remember(hostile_folder, hostile_folder / "a-loop.md", tab="source")  # RuntimeError before
    assert state.folder_state(hostile_folder).document == "a-loop.md"
    assert state.document_in(hostile_folder) is None  # not a file: nothing to restore
    state.remember(hostile_folder, hostile_folder / "frontend.md")
    assert state.document_in(hostile_folder) == hostile_folder / "frontend.md"


def test_the_folder_scan_skips_them_with_the_reason(hostile_folder: Path) -> None:
    scan = scan_documents(hostile_folder)
    assert {s.path.name: s.reason for s in scan.skipped} == SPECIAL
    names = {p.name for p in scan.documents}
    assert names.isdisjoint(SPECIAL) and {"frontend.md", "inside.md", "notes.txt", "nested.md"} <= names
    assert iter_documents(hostile_folder) == scan.documents
    assert scan.skipped[0].one_line().endswith(": a symlink loop, skipped")


@pytest.mark.parametrize("name", sorted(SPECIAL) + ["dir.md"])
def test_document_load_gives_a_finding_not_an_exception(hostile_folder: Path, name: str) -> None:
    doc = Document.load(hostile_folder / name)
    assert not doc.readable and not doc.dirty
    [finding] = doc.load_findings
    assert finding.rule == "file-not-regular" and finding.severity == "error"
    assert finding.message == f"{SPECIAL.get(name, 'a folder')}, not read"


def test_the_watcher_never_opens_a_pipe(hostile_folder: Path) -> None:
    import queue
    import threading

    # Polling, as the App's worker iterates it: the first look is the starting snapshot, which
    # would block on x.md if it opened it (then ``ready`` would never be set).
    watcher = FolderWatcher(hostile_folder, mode="poll", poll_interval=0.3)
    batches: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [batches.put(b) for b in watcher], daemon=True).start()
    try:
        assert watcher.ready.wait(TIMEOUT), "the starting snapshot never finished"
        (hostile_folder / "frontend.md").write_text(FRONTEND + "\nMore.\n", encoding="utf-8")
        os.unlink(hostile_folder / "notes.txt")
        os.mkfifo(hostile_folder / "notes.txt")  # a document replaced by a pipe: gone, not read
        changes = batches.get(timeout=TIMEOUT)
        while len(changes) < 2:  # a poll may fall between the two edits
            changes += batches.get(timeout=TIMEOUT)
    finally:
        watcher.stop()
    # frontend.md was in the snapshot (modified, not added); no special file was (none is "deleted")
    assert [(c.kind, c.path.name) for c in changes] == [("modified", "frontend.md"), ("deleted", "notes.txt")]


def test_merge_skips_entities_whose_ids_are_not_strings(hostile_folder: Path) -> None:
    ws = Workspace.load(hostile_folder)
    record = merge_entities(ws, "entity:javascript", ["entity:js"])
    changed = {Path(c.path).name for c in record.changes}
    assert "frontend.md" in changed
    odd = ws.document(hostile_folder / "odd-ids.md")
    assert "[entity:js, entity:b]" in odd.text  # a list id is not the entity entity:js: left alone
    assert "entities: [entity:ok, entity:javascript]" in odd.text  # but its string references follow


# ---------------------------------------------------------------- every subcommand, as a process

def run_cli(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    p = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=TIMEOUT,
                       stdin=subprocess.DEVNULL)
    assert p.returncode >= 0 and p.returncode != 139, f"{args}: killed by a signal ({p.returncode})"
    assert "Traceback" not in p.stderr + p.stdout, p.stderr
    assert "internal error" not in p.stderr, p.stderr
    return p


FOLDER_COMMANDS = [
    ["validate", "{d}"],
    ["validate", "{d}", "--json"],
    ["export", "{d}", "-o", "{out}/chunks.json"],
    ["diagnose", "{d}"],
    ["diagnose", "{d}", "--level", "fix", "--json"],
    ["diagnose", "{d}", "--apply", "--dry-run"],
    ["entities", "list", "{d}"],
    ["entities", "suggest", "{d}"],
    ["entities", "merge", "{d}", "--into", "entity:javascript", "entity:js", "--dry-run"],
]


@pytest.mark.skipif(not CLI.exists(), reason="the console script is installed by make")
@pytest.mark.parametrize("argv", FOLDER_COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_folder_commands_finish_and_name_the_special_files(hostile_folder: Path, tmp_path: Path, argv: list[str]) -> None:
    p = run_cli(*(a.format(d=hostile_folder, out=tmp_path) for a in argv), cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    for name, reason in SPECIAL.items():
        assert f"{hostile_folder / name}: {reason}, skipped" in p.stderr


FILE_COMMANDS = {
    "validate": ["validate", "{f}"], "export": ["export", "{f}", "-o", "{out}/c.json"], "diagnose": ["diagnose", "{f}"],
    "entities-list": ["entities", "list", "{f}"], "entities-suggest": ["entities", "suggest", "{f}"],
    "entities-merge": ["entities", "merge", "{f}", "--into", "entity:a", "entity:b"], "chunk": ["chunk", "{f}"],
    "convert": ["convert", "{f}", "-o", "{out}/c.ctxfst.md"], "summarize": ["summarize", "{f}", "--outline"],
    "profiles": ["profiles", "{f}"], "graph": ["graph", "{f}"],
    "contextualize": ["contextualize", "{f}", "--endpoint", "http://127.0.0.1:9"],
    "entities-extract": ["entities", "extract", "{f}", "--no-model"],
}
# Every command on the named pipe (the file that hangs a reader); three on each other special file.
SPECIAL_CASES = [("x.md", c) for c in FILE_COMMANDS] + [
    (name, c) for name in [*sorted(set(SPECIAL) - {"x.md"}), "dir.md"] for c in ("validate", "chunk", "summarize")]


@pytest.mark.skipif(not CLI.exists(), reason="the console script is installed by make")
@pytest.mark.parametrize(("name", "command"), SPECIAL_CASES, ids=[f"{n}-{c}" for n, c in SPECIAL_CASES])
def test_each_command_on_a_special_file_says_what_it_is(hostile_folder: Path, tmp_path: Path, name: str, command: str) -> None:
    path = hostile_folder / name
    p = run_cli(*(a.format(f=path, out=tmp_path) for a in FILE_COMMANDS[command]), cwd=tmp_path)
    reason = SPECIAL.get(name, "a folder")
    if name == "dir.md" and command == "validate":
        assert p.returncode == 0 and "inside.md" in p.stdout  # a folder named dir.md is walked like any folder
        return
    assert p.returncode in (1, 2), p.stdout + p.stderr
    assert f"{path}: {reason}" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "c.ctxfst.md").exists()


@pytest.mark.skipif(not CLI.exists(), reason="the console script is installed by make")
@pytest.mark.parametrize("name", ["odd-ids.md", "binary.md", "utf16.md", "nul.md", "nested.md", "frontend.md"])
def test_file_commands_on_odd_documents(hostile_folder: Path, tmp_path: Path, name: str) -> None:
    path = hostile_folder / name
    # validate, export, diagnose and entities read these files in the folder runs above
    for argv in (["chunk", path], ["convert", path, "-o", tmp_path / "c.ctxfst.md", "--force"], ["summarize", path, "--outline"]):
        p = run_cli(*argv, cwd=tmp_path)
        assert p.returncode in (0, 1, 2), (argv, p.stderr)
        if p.returncode:
            assert name in p.stderr + p.stdout, argv  # a failure names the file


@pytest.mark.skipif(not CLI.exists(), reason="the console script is installed by make")
def test_profiles_and_graph_on_an_export_of_the_folder(hostile_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "chunks.json"
    run_cli("export", hostile_folder / "frontend.md", "-o", out, cwd=tmp_path)
    assert out.exists()
    p = run_cli("profiles", out, "-o", tmp_path / "profiles.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = run_cli("graph", tmp_path / "profiles.json", "-o", tmp_path / "graph.json", "--mode", "metadata", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = run_cli("graph", out, "--extra-edges", hostile_folder / "x.md", "-o", tmp_path / "g2.json", cwd=tmp_path)
    assert p.returncode != 0 and f"{hostile_folder / 'x.md'}: a named pipe" in p.stderr


# ---------------------------------------------------------------- the workbench

class Notes:
    """Every notification the app shows: (severity, title, message)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from ctxfst_tui.ui.app import WorkbenchApp

        self.seen: list[tuple[str, str, str]] = []
        original = WorkbenchApp.notify

        def notify(app, message, *, title="", severity="information", **kw):
            self.seen.append((severity, str(title), str(message)))
            return original(app, message, title=title, severity=severity, **kw)

        monkeypatch.setattr(WorkbenchApp, "notify", notify)

    def errors(self) -> list[tuple[str, str, str]]:
        return [n for n in self.seen if n[0] == "error"]

    def text(self) -> str:
        return "\n".join(f"{t}: {m}" for _s, t, m in self.seen)


@pytest.mark.timeout(600)  # about 40 s on an idle 2-core machine; much more when it is shared
async def test_every_view_a_merge_a_fix_and_a_save_in_the_hostile_folder(hostile_folder: Path, monkeypatch) -> None:
    from ctxfst_tui.ui.app import WorkbenchApp
    from ctxfst_tui.ui.screens.modals.diff import DiffScreen
    from ctxfst_tui.ui.widgets.diagnosis.findings import FindingsPane
    from ctxfst_tui.ui.widgets.diagnosis.pane import DiagnosisTree
    from ctxfst_tui.ui.widgets.document.tree import DocumentTree
    from ctxfst_tui.ui.widgets.entities.panel import ClusterList
    from pilot import open_document, settle, started

    notes = Notes(monkeypatch)
    app = WorkbenchApp(hostile_folder)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await started(app, pilot)
        # The special files are named, once, and are not in the tree.
        skipped = [n for n in notes.seen if "skipped" in n[1]]
        assert len(skipped) == 1 and skipped[0][1] == "4 files skipped"
        for name, reason in SPECIAL.items():
            assert f"{name}: {reason}" in skipped[0][2]
        tree = screen.query_one(DocumentTree)
        listed = {p.relative_to(hostile_folder).as_posix() for p in screen.documents}
        assert listed.isdisjoint(SPECIAL) and {"frontend.md", "nested.md", "utf16.md", "dir.md/inside.md"} <= listed
        # A special file opened by path (as the palette's "Open …" would): no resolve() crash, the
        # Diagnosis findings say what it is.
        for name, reason in SPECIAL.items():
            screen.open_path(hostile_folder / name)
            await settle(app, pilot)
            table = screen.query_one(FindingsPane)
            rows = [" ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]
            assert any("file-not-regular" in r and f"{reason}, not read" in r for r in rows), (name, rows)
        # Every document through the tree, each in a view (in turn Source, Chunks, Entities,
        # Diagnosis, Summary); the oddest ones (below) in every view and with the overview toggled,
        # the good ones (frontend.md, cache.md) in the Entities and Diagnosis views of the merge
        # and the fix further down.
        oddest = ("odd-ids.md", "nested.md")
        for i, rel in enumerate(sorted(listed)):
            if rel in oddest or rel in ("frontend.md", "cache.md"):
                continue
            await open_document(app, pilot, rel)
            await pilot.press("12345"[i % 5])
            await settle(app, pilot)
            tree.focus()
        for rel in oddest:
            await open_document(app, pilot, rel)
            for key in "12345":
                await pilot.press(key)
                await settle(app, pilot)
            await pilot.press("1", "o")
            await settle(app, pilot)
            await pilot.press("o")
            tree.focus()
        assert app.is_running
        # A merge JS -> JavaScript while odd-ids.md declares a list id holding entity:js.
        await open_document(app, pilot, "frontend.md")
        await pilot.press("3")
        await settle(app, pilot)
        await pilot.press("tab")
        clusters = screen.query_one(ClusterList)
        assert app.focused is clusters
        target = next(i for i, c in enumerate(clusters.clusters) if set(c.members) == {"entity:javascript", "entity:js"})
        clusters.highlighted = target
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, DiffScreen)
        await pilot.press("y")
        await settle(app, pilot)
        assert app.screen is screen and tree.unsaved(hostile_folder / "frontend.md")
        # A fix in the Diagnosis tab: the undefined entity:memcached of cache.md.
        await open_document(app, pilot, "cache.md")
        await pilot.press("4")
        await settle(app, pilot)
        diagnosis = screen.query_one(DiagnosisTree)
        for _ in range(len(diagnosis.items) + 1):
            current = diagnosis.current
            if current is not None and current.rule == "entity-undefined" and "memcached" in (current.fix_description or ""):
                break
            await pilot.press("n")
        assert diagnosis.current.rule == "entity-undefined"
        await pilot.press("f")
        await settle(app, pilot)
        assert tree.unsaved(hostile_folder / "cache.md")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert app.is_running and not screen.session.dirty_paths
        assert notes.errors() == [], notes.text()
    frontend = (hostile_folder / "frontend.md").read_text(encoding="utf-8")
    assert "- id: entity:js\n" not in frontend and "entities: [entity:javascript]" in frontend
    assert "entity:memcached" not in (hostile_folder / "cache.md").read_text(encoding="utf-8")
    odd = (hostile_folder / "odd-ids.md").read_text(encoding="utf-8")
    assert "- id: [entity:js, entity:b]" in odd and "entities: [entity:ok, entity:javascript]" in odd
    assert stat_kind(hostile_folder / "x.md") == "fifo" and os.path.islink(hostile_folder / "a-loop.md")


def stat_kind(path: Path) -> str:
    import stat as st

    mode = os.lstat(path).st_mode
    return "fifo" if st.S_ISFIFO(mode) else "link" if st.S_ISLNK(mode) else "other"


async def test_a_handler_that_raises_is_notified_logged_and_the_app_goes_on(tmp_path: Path, monkeypatch) -> None:
    from textual.widgets import TabbedContent

    from ctxfst_tui.ui.app import WorkbenchApp
    from ctxfst_tui.ui.error_log import log_path
    from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
    from pilot import kept_failure, open_document, settle, started

    (tmp_path / "frontend.md").write_text(FRONTEND, encoding="utf-8")
    notes = Notes(monkeypatch)

    def undo_on_fire(self) -> None:
        raise RuntimeError("the undo stack is on fire")

    monkeypatch.setattr(WorkbenchScreen, "action_undo", undo_on_fire)
    app = WorkbenchApp(tmp_path)
    # Pilot raises the first failure the app survived when the test ends: this one is expected.
    with kept_failure(RuntimeError, "the undo stack is on fire"):
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await started(app, pilot)
            await pilot.press("u")  # a key binding's action: runs in the App's own message pump
            await pilot.pause()
            assert app.is_running
            [(_sev, title, message)] = notes.errors()
            assert title == "Failed: the u key"
            assert message.startswith("RuntimeError: the undo stack is on fire") and str(log_path()) in message
            log = log_path().read_text(encoding="utf-8")
            assert "the u key failed" in log and "Traceback (most recent call last)" in log and "undo_on_fire" in log
            # The App's pump still handles keys, and a screen's pump survives a failing callback too.
            await pilot.press("3")
            await settle(app, pilot)
            assert screen.query_one(TabbedContent).active == "entities-tab"
            screen.call_later(lambda: 1 / 0)
            await pilot.pause()
            ran: list[int] = []
            screen.call_later(lambda: ran.append(1))
            await pilot.pause()
            assert ran == [1] and app.is_running
            assert "ZeroDivisionError" in notes.errors()[-1][2]
            log = log_path().read_text(encoding="utf-8")
            assert "ZeroDivisionError" in log  # logged as well
            await open_document(app, pilot, "frontend.md")  # the workbench works as before


async def test_a_failing_worker_leaves_its_traceback_in_the_log(tmp_path: Path, monkeypatch) -> None:
    from ctxfst_tui.ui.app import WorkbenchApp
    from ctxfst_tui.ui.error_log import log_path
    from pilot import open_document, started

    (tmp_path / "frontend.md").write_text(FRONTEND, encoding="utf-8")

    def boom(*_args, **_kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr("ctxfst_tui.ui.app.build_report", boom)
    app = WorkbenchApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "frontend.md")
        assert app.is_running
    log = log_path().read_text(encoding="utf-8")
    assert "opening the document failed: OSError: disk on fire" in log and "in boom" in log
