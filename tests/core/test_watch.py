"""FolderWatcher on the real file system (OS notifications and the polling fallback) and plan_reactions."""
from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path

import pytest

from ctxfst_tui.core.workspace import watch as watch_mod
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.safe_write import write_file as write_atomic
from ctxfst_tui.core.workspace.watch import DiskChange, FolderWatcher, Reaction, plan_reactions
from ctxfst_tui.core.workspace.scan import iter_documents

WAIT = 10.0  # generous for a loaded 2-core machine; the tests normally finish far sooner
FAST = dict(debounce_ms=300, step_ms=50, settle_ms=200, poll_interval=0.1)
MODES = ["notify", "poll"]


class Running:
    """A watcher iterated in a thread (as the App's worker does); its batches land in a queue."""

    def __init__(self, watcher: FolderWatcher) -> None:
        self.watcher = watcher
        self.batches: queue.Queue = queue.Queue()
        self.seen: list[DiskChange] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for batch in self.watcher:
                assert batch, "empty batches are never yielded"
                self.batches.put(batch)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            self.batches.put(None)

    def wait_ready(self) -> None:
        assert self.watcher.ready.wait(WAIT), f"watcher not ready (error: {self.error!r})"

    def wait_for(self, pred, timeout: float = WAIT) -> list[DiskChange]:
        """Collect changes until ``pred(all changes so far)``; all of them are returned."""
        deadline = time.monotonic() + timeout
        while not pred(self.seen):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out; changes seen: {self.seen} (error: {self.error!r})")
            try:
                batch = self.batches.get(timeout=left)
            except queue.Empty:
                continue
            if batch is None:
                raise AssertionError(f"watcher ended; changes seen: {self.seen} (error: {self.error!r})")
            self.seen.extend(batch)
        return self.seen

    def until_sentinel(self, root: Path) -> list[DiskChange]:
        """Write a sentinel document and wait for it: what came before it has surely been reported."""
        sentinel = root / "zz-sentinel.md"
        sentinel.write_text(f"sentinel {time.monotonic_ns()}\n")
        self.wait_for(lambda seen: any(c.path == sentinel for c in seen))
        return [c for c in self.seen if c.path != sentinel]

    def stop(self) -> None:
        self.watcher.stop()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nalpha\n")
    (root / "sub" / "b.ctxfst.md").write_text("# B\n")
    (root / "notes.txt").write_text("plain\n")
    return root


@pytest.fixture
def start(request):
    running: list[Running] = []

    def start(root: Path, mode: str, **kwargs) -> Running:
        options = {**FAST, **kwargs}
        run = Running(FolderWatcher(root, mode=mode, **options))
        running.append(run)
        run.wait_ready()
        return run

    yield start
    for run in running:
        run.stop()


def kinds(changes: list[DiskChange]) -> set[tuple[str, str]]:
    return {(c.kind, c.path.name) for c in changes}


# ------------------------------------------------------------ changes from another program
@pytest.mark.parametrize("mode", MODES)
def test_outside_write_is_one_modified(folder, start, mode):
    run = start(folder, mode)
    assert run.watcher.backend == mode
    target = folder / "a.md"
    target.write_text("# A\n\nchanged by another program\n")
    seen = run.wait_for(lambda seen: any(c.path == target for c in seen))
    assert DiskChange("modified", target) in seen
    assert [c for c in run.until_sentinel(folder) if c.path == target] == [DiskChange("modified", target)]


@pytest.mark.parametrize("mode", MODES)
def test_outside_atomic_save_is_one_modified(folder, start, mode):
    """temp file + rename (as editors and Document.save do): one "modified", nothing about the temp file."""
    run = start(folder, mode)
    target = folder / "sub" / "b.ctxfst.md"
    write_atomic(target, b"# B\n\nrewritten atomically\n")
    assert run.until_sentinel(folder) == [DiskChange("modified", target)]


@pytest.mark.parametrize("mode", MODES)
def test_create_and_delete(folder, start, mode):
    run = start(folder, mode)
    new = folder / "sub" / "new.md"
    new.write_text("# New\n")
    run.wait_for(lambda seen: DiskChange("added", new) in seen)
    (folder / "notes.txt").unlink()
    run.wait_for(lambda seen: DiskChange("deleted", folder / "notes.txt") in seen)
    assert run.until_sentinel(folder) == [DiskChange("added", new), DiskChange("deleted", folder / "notes.txt")]


@pytest.mark.parametrize("mode", MODES)
def test_delete_and_recreate_is_modified(folder, start, mode):
    run = start(folder, mode)
    target = folder / "a.md"
    target.unlink()
    target.write_text("# A\n\nrecreated\n")
    assert run.until_sentinel(folder) == [DiskChange("modified", target)]


@pytest.mark.parametrize("mode", MODES)
def test_non_documents_ignored(folder, start, mode):
    run = start(folder, mode)
    (folder / "data.json").write_text("{}")
    (folder / "a.summary.json").write_text("{}")
    (folder / ".hidden.md").write_text("# hidden\n")
    (folder / ".a.md.x1y2.tmp").write_text("temp of an atomic save")
    (folder / "a.md~").write_text("backup")
    for tool in (".git", ".venv", "node_modules", ".cache"):
        (folder / tool).mkdir()
        (folder / tool / "inside.md").write_text("# not a document of the workspace\n")
    (folder / "sub" / "image.png").write_bytes(b"\x89PNG")
    assert run.until_sentinel(folder) == []


@pytest.mark.parametrize("mode", MODES)
def test_folder_moved_in_and_out(folder, start, mode, tmp_path):
    """A folder moved in (or out) is one OS event: its documents are found all the same."""
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "c.md").write_text("# C\n")
    (outside / "skip.json").write_text("{}")
    run = start(folder, mode)
    moved = folder / "moved"
    os.rename(outside, moved)
    c = moved / "deep" / "c.md"
    run.wait_for(lambda seen: DiskChange("added", c) in seen)
    os.rename(folder / "sub", tmp_path / "sub-gone")
    gone = folder / "sub" / "b.ctxfst.md"
    run.wait_for(lambda seen: DiskChange("deleted", gone) in seen)
    assert run.until_sentinel(folder) == [DiskChange("added", c), DiskChange("deleted", gone)]


# ------------------------------------------------------------ what is not news
@pytest.mark.parametrize("mode", MODES)
def test_own_remembered_save_is_no_event(folder, start, mode):
    run = start(folder, mode)
    target = folder / "a.md"
    doc = Document.load(target)
    doc.replace_text("# A\n\nedited in the workbench\n")
    run.watcher.remember(target, doc.encoded())  # before the write, as the App does
    assert doc.save()
    assert run.until_sentinel(folder) == []
    # ... and a later outside change of the same file is news again
    target.write_text("# A\n\nthen changed outside\n")
    run.wait_for(lambda seen: DiskChange("modified", target) in seen)


@pytest.mark.parametrize("mode", MODES)
def test_touch_or_same_bytes_is_no_event(folder, start, mode):
    run = start(folder, mode)
    a, b = folder / "a.md", folder / "notes.txt"
    later = time.time() + 5
    os.utime(a, (later, later))
    b.write_bytes(b.read_bytes())  # rewritten with the same content
    write_atomic(folder / "sub" / "b.ctxfst.md", (folder / "sub" / "b.ctxfst.md").read_bytes())
    assert run.until_sentinel(folder) == []


def test_remember_normalises_the_path(folder, monkeypatch):
    """Paths are yielded as root/relative (as iter_documents gives them), however remember() was called."""
    monkeypatch.chdir(folder.parent)
    run = Running(FolderWatcher("docs", mode="poll", poll_interval=0.05))
    try:
        run.wait_ready()
        data = b"# A\n\nsaved by the workbench\n"
        run.watcher.remember(folder / "a.md", data)  # absolute, while the root is relative
        (folder / "a.md").write_bytes(data)
        assert run.until_sentinel(Path("docs")) == []  # known under docs/a.md: our own save, no news
    finally:
        run.stop()
    assert Path("docs/a.md") in iter_documents("docs")


def test_relative_root_yields_relative_paths(folder, monkeypatch):
    monkeypatch.chdir(folder.parent)
    run = Running(FolderWatcher("docs", mode="poll", poll_interval=0.05))
    try:
        run.wait_ready()
        (folder / "a.md").write_text("changed\n")
        assert DiskChange("modified", Path("docs/a.md")) in run.wait_for(lambda seen: bool(seen))
    finally:
        run.stop()


# ------------------------------------------------------------ stopping
@pytest.mark.parametrize("mode", MODES)
def test_stop_event_ends_iteration_quickly(folder, mode):
    cancelled = threading.Event()  # as a Textual worker's cancelled_event
    run = Running(FolderWatcher(folder, stop_event=cancelled, mode=mode, **{**FAST, "poll_interval": 1.0}))
    run.wait_ready()
    t0 = time.monotonic()
    cancelled.set()
    run.thread.join(WAIT)
    assert not run.thread.is_alive()
    assert time.monotonic() - t0 < 2.0
    assert run.error is None
    assert run.batches.get_nowait() is None  # ended, with no batch


def test_stop_before_ready(folder):
    watcher = FolderWatcher(folder, **FAST)
    watcher.stop()
    t0 = time.monotonic()
    assert list(watcher) == []
    assert time.monotonic() - t0 < 2.0


# ------------------------------------------------------------ the polling fallback
def _failing_watch(*args, **kwargs):
    raise OSError(28, "OS file watch limit reached")
    yield  # a generator, as watchfiles.watch: the error comes on the first next()


def test_falls_back_to_polling_when_the_os_cannot_watch(folder, start, monkeypatch):
    monkeypatch.setattr(watch_mod, "_watch", _failing_watch)
    run = start(folder, "auto")
    assert run.watcher.backend == "poll"
    assert "watch limit" in run.watcher.fallback_reason
    target = folder / "a.md"
    target.write_text("# A\n\nchanged while polling\n")
    run.wait_for(lambda seen: DiskChange("modified", target) in seen)
    os.utime(folder / "notes.txt", (time.time() + 9, time.time() + 9))
    assert run.until_sentinel(folder) == [DiskChange("modified", target)]


def test_fallback_mid_watch_catches_up(folder, start, monkeypatch):
    """If notifications fail after a while, what changed meanwhile is found by the first poll."""
    target = folder / "a.md"

    def flaky_watch(*args, **kwargs):
        yield set()  # up (the settle pass)
        target.write_text("# A\n\nchanged while the OS watcher was failing\n")
        raise RuntimeError("error in underlying watcher")

    monkeypatch.setattr(watch_mod, "_watch", flaky_watch)
    run = start(folder, "auto")
    run.wait_for(lambda seen: DiskChange("modified", target) in seen)
    assert run.watcher.backend == "poll"


def test_notify_mode_does_not_fall_back(folder, monkeypatch):
    monkeypatch.setattr(watch_mod, "_watch", _failing_watch)
    with pytest.raises(OSError, match="watch limit"):
        list(FolderWatcher(folder, mode="notify", **FAST))


def test_missing_root_polls_without_failing(tmp_path):
    root = tmp_path / "later"
    run = Running(FolderWatcher(root, **FAST))
    try:
        run.wait_ready()
        assert run.watcher.backend == "poll"  # watchfiles cannot watch a missing path
        root.mkdir()
        (root / "x.md").write_text("# X\n")
        run.wait_for(lambda seen: DiskChange("added", root / "x.md") in seen)
    finally:
        run.stop()


def test_iterated_once(folder):
    watcher = FolderWatcher(folder, mode="poll")
    watcher.stop()
    assert list(watcher) == []
    with pytest.raises(RuntimeError):
        list(watcher)


# ------------------------------------------------------------ plan_reactions
A, B, C, D = (Path(f"/w/{n}.md") for n in "abcd")


@pytest.mark.parametrize(
    "changes, open_path, dirty, expected",
    [
        ([DiskChange("modified", A)], A, set(), [Reaction("reload", A, True)]),
        ([DiskChange("modified", A)], A, {A}, [Reaction("ask", A, True)]),
        ([DiskChange("modified", B)], A, set(), [Reaction("reload", B, False)]),
        ([DiskChange("modified", B)], A, {B}, [Reaction("ask", B, False)]),
        ([DiskChange("modified", A)], None, set(), [Reaction("reload", A, False)]),
        ([DiskChange("deleted", A)], A, set(), [Reaction("mark-deleted", A, True)]),
        ([DiskChange("deleted", A)], A, {A}, [Reaction("mark-deleted", A, True)]),
        ([DiskChange("deleted", B)], A, set(), [Reaction("mark-deleted", B, False)]),
        ([DiskChange("added", B)], A, set(), [Reaction("rescan")]),
        ([DiskChange("added", B), DiskChange("added", C)], A, set(), [Reaction("rescan")]),
        # a document that comes back while open or edited: as if modified, and the tree is rescanned
        ([DiskChange("added", A)], A, set(), [Reaction("reload", A, True), Reaction("rescan")]),
        ([DiskChange("added", B)], A, {B}, [Reaction("ask", B, False), Reaction("rescan")]),
        (
            [DiskChange("added", D), DiskChange("deleted", C), DiskChange("modified", B), DiskChange("modified", A)],
            A, {A},
            [Reaction("ask", A, True), Reaction("reload", B, False), Reaction("mark-deleted", C, False), Reaction("rescan")],
        ),
        ([], A, {A}, []),
    ],
)
def test_plan_reactions(changes, open_path, dirty, expected):
    assert plan_reactions(changes, open_path, dirty) == expected
