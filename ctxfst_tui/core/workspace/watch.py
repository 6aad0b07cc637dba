"""Watch a folder's documents on disk: what another program added, changed or deleted.

``FolderWatcher(root)`` is an iterator of batches of ``DiskChange`` (one per path, sorted), meant
to run in a thread worker; it ends soon after its stop event is set. It uses watchfiles (the OS
notification API through the Rust ``notify`` crate) and falls back to polling the documents'
stat every second when the OS cannot watch (inotify limit, unsupported file system…).

What counts is the *content*: each document's last known state is a fingerprint (size, mtime,
hash of the bytes). A notification only makes the watcher look again, so

* an atomic save (temp file + rename, as ``Document.save``) is one "modified" of the target, the
  temp file being hidden and ignored; a delete and re-create of a path in one batch is "modified";
* a touch, or a rewrite with the same bytes, is no change at all;
* the app's own saves are no change either: ``remember(path, data)`` the bytes it is about to
  write (before writing them), and the watcher sees its own idea of the file when the event comes.

``plan_reactions`` turns a batch into what the workbench does about it (reload, ask, mark deleted,
rescan the tree): a pure function, so the App's wiring stays trivial.

No Textual here: the App runs ``for batch in watcher`` in a thread worker and posts each batch.
"""
from __future__ import annotations

import hashlib
import logging
import os
import stat
import threading
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import watchfiles

from ctxfst_tui.core.cancel import CancelEvent, EitherEvent
from ctxfst_tui.core.workspace.files import NotRegularFile, read_regular_stat
from ctxfst_tui.core.workspace.scan import (
    DOCUMENT_SUFFIXES,
    SKIP_DIRS,
    is_document,
    iter_documents,
)

log = logging.getLogger(__name__)

ChangeKind = Literal["added", "modified", "deleted"]
Action = Literal["reload", "ask", "mark-deleted", "rescan"]

# Names that are never documents nor folders of documents: editors' and downloaders' temp files,
# and the summaries the app writes next to documents. Hidden names (".x", e.g. the temp files of
# safe_write: ".name.md.XXXX.tmp") are skipped anyway.
JUNK_SUFFIXES = (".tmp", "~", ".swp", ".swx", ".swo", ".part", ".crdownload", ".summary.json", ".pyc")
HASH_LIMIT = 64 * 1024 * 1024  # bigger files are compared by size and mtime only
RACY_NS = 2_000_000_000  # a file changed this recently may change again within the same mtime tick


@dataclass(frozen=True)
class DiskChange:
    """One document that changed on disk since the watcher last looked (coalesced per path)."""

    kind: ChangeKind
    path: Path


@dataclass(frozen=True)
class Reaction:
    """What the workbench does about a change. ``path`` is None for "rescan" (the whole tree);
    ``is_open``: the path is the document the panes show."""

    action: Action
    path: Path | None = None
    is_open: bool = False


@dataclass(frozen=True)
class Fingerprint:
    size: int
    mtime_ns: int | None  # None: remembered from bytes the app wrote, the file's mtime is not known yet
    digest: bytes | None  # None: too big (or unreadable) to hash; compared by size and mtime

    def same_stat(self, st: os.stat_result) -> bool:
        return self.mtime_ns is not None and self.size == st.st_size and self.mtime_ns == st.st_mtime_ns


def digest_of(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def fingerprint_bytes(data: bytes, mtime_ns: int | None = None) -> Fingerprint:
    return Fingerprint(len(data), mtime_ns, digest_of(data))


class FolderWatcher:
    """Batches of document changes under ``root`` (recursive), until stopped.

    ``mode``: "auto" (OS notifications, polling if they fail), "notify" (errors propagate) or "poll".
    ``backend`` says which one runs ("notify" / "poll"; None before iteration), ``fallback_reason``
    why notifications were given up, ``ready`` is set once the watch is surely up (with "notify":
    after ``settle_ms`` without changes). Paths are yielded as ``root / relative`` — the same form as
    ``iter_documents(root)`` gives, so they match the paths the session holds.

    Thread-safety: iterate in one thread; ``remember`` / ``forget`` / ``stop`` from any thread.
    """

    def __init__(
        self,
        root: str | os.PathLike,
        *,
        stop_event: CancelEvent | None = None,
        debounce_ms: int = 800,
        step_ms: int = 150,
        poll_interval: float = 1.0,
        settle_ms: int = 1000,
        mode: Literal["auto", "notify", "poll"] = "auto",
        suffixes: tuple[str, ...] = DOCUMENT_SUFFIXES,
        hash_limit: int = HASH_LIMIT,
    ) -> None:
        self.root = Path(root)
        self._abs_root = Path(os.path.abspath(self.root))
        self._real_root = Path(os.path.realpath(self.root))
        self._stop = EitherEvent(stop_event)  # its own stop() or the caller's (a worker's cancelled_event)
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.poll_interval = poll_interval
        self.settle_ms = settle_ms  # quiet time after which a notify watcher re-checks everything once
        self.mode = mode
        self.suffixes = suffixes
        self.hash_limit = hash_limit
        self.backend: Literal["notify", "poll"] | None = None
        self.fallback_reason: str | None = None
        self.ready = threading.Event()  # set once changes from now on are surely seen
        self._known: dict[Path, Fingerprint] = {}
        self._lock = threading.Lock()
        self._started = False

    # ------------------------------------------------------------ the app's side
    def remember(self, path: str | os.PathLike, data: bytes) -> None:
        """The app is writing ``data`` to ``path``: the change that follows is its own, not news.

        Call it *before* the write (e.g. with ``doc.encoded()`` before ``doc.save()``), so the
        watcher can never see the new file before it knows about it.
        """
        fp = fingerprint_bytes(data)
        with self._lock:
            self._known[self._norm(path)] = fp

    def forget(self, path: str | os.PathLike) -> None:
        """Drop what is known of ``path`` (its next appearance is "added")."""
        with self._lock:
            self._known.pop(self._norm(path), None)

    def stop(self) -> None:
        self._stop.own.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    # ------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[list[DiskChange]]:
        if self._started:
            raise RuntimeError("a FolderWatcher is iterated once")
        self._started = True
        self._snapshot()
        if self.mode == "poll":
            yield from self._poll()
            return
        try:
            yield from self._notify()
        except (OSError, RuntimeError) as exc:  # inotify limit, unsupported FS, watcher internal error
            if self.mode == "notify" or self.stopped:
                raise
            self.fallback_reason = f"{type(exc).__name__}: {exc}"
            log.info("watching %s by polling: %s", self.root, self.fallback_reason)
            batch = self._scan_all()  # whatever happened while notifications were failing
            if batch and not self.stopped:
                yield batch
            yield from self._poll()

    def _notify(self) -> Iterator[list[DiskChange]]:
        self.backend = "notify"
        settled = False
        for raw in _watch(
            self.root,
            stop_event=self._stop,
            debounce=self.debounce_ms,
            step=self.step_ms,
            rust_timeout=self.settle_ms,
            yield_on_timeout=True,
            recursive=True,
            watch_filter=self._accept,
            raise_interrupt=False,
            # False: with True, watchfiles ignores *every* error of setting the watch up, the
            # inotify limit included, and would watch nothing; an unreadable folder polls instead.
            ignore_permission_denied=False,
        ):
            if self.stopped:
                return
            if not raw:
                # Quiet for settle_ms: the watcher is surely up now. Look once at everything, for
                # changes made between the snapshot and the start of the OS watch.
                if settled:
                    continue
                settled = True
                batch = self._scan_all()
                self.ready.set()
            else:
                batch = self._reconcile((Path(p), change) for change, p in raw)
            if batch and not self.stopped:
                yield batch

    def _poll(self) -> Iterator[list[DiskChange]]:
        self.backend = "poll"
        self.ready.set()
        while not self._stop.wait(self.poll_interval):
            batch = self._scan_all()
            if batch and not self.stopped:
                yield batch

    # ------------------------------------------------------------ paths
    def _relative(self, path: str | os.PathLike) -> Path | None:
        p = Path(os.path.abspath(path))
        for base in (self._abs_root, self._real_root):
            try:
                return p.relative_to(base)
            except ValueError:
                continue
        return None

    def _norm(self, path: str | os.PathLike) -> Path:
        """``path`` in the form the watcher yields (``root / relative``)."""
        rel = self._relative(path)
        return self.root / rel if rel is not None else Path(os.path.abspath(path))

    def _accept(self, change: Any, path: str) -> bool:
        """watchfiles' filter: nothing hidden, in a tool folder, or a known kind of junk.

        Other non-documents pass, because they may be folders (a folder moved in or out of the
        tree is one event, not one per document); ``_reconcile`` drops the files among them.
        """
        rel = self._relative(path)
        if rel is None or not rel.parts:
            return False
        for part in rel.parts:
            if part.startswith(".") or part in SKIP_DIRS:
                return False
        return not rel.name.lower().endswith(JUNK_SUFFIXES)

    def _is_document(self, path: Path) -> bool:
        return is_document(path, self.suffixes)

    # ------------------------------------------------------------ comparing
    def _snapshot(self) -> None:
        """The starting state: every document's fingerprint (a remembered one is kept)."""
        for path in iter_documents(self.root, self.suffixes):
            if self.stopped:
                return
            fp = self._read(path, hash_anyway=True)
            if fp is not None:
                with self._lock:
                    self._known.setdefault(path, fp)

    def _scan_all(self) -> list[DiskChange]:
        """Compare every document on disk (and every one known) with what is known."""
        on_disk = set(iter_documents(self.root, self.suffixes)) if self.root.is_dir() else set()
        with self._lock:
            known = set(self._known)
        return self._compare(on_disk | known, trust_stat=True)

    def _reconcile(self, raw: Iterable[tuple[Path, Any]]) -> list[DiskChange]:
        """The documents behind one batch of raw notifications, compared with what is known."""
        targets: set[Path] = set()
        for raw_path, change in raw:
            path = self._norm(raw_path)
            if os.path.isdir(path):
                if change != watchfiles.Change.modified:  # a folder moved or copied in: its documents
                    targets.update(iter_documents(path, self.suffixes))
                    targets.update(self._known_under(path))
            elif self._is_document(path):
                targets.add(path)
            elif not os.path.lexists(path):  # maybe a folder moved out or deleted as a whole
                targets.update(self._known_under(path))
        return self._compare(targets, trust_stat=False)

    def _known_under(self, folder: Path) -> list[Path]:
        prefix = str(folder) + os.sep
        with self._lock:
            return [p for p in self._known if str(p).startswith(prefix)]

    def _compare(self, paths: Iterable[Path], trust_stat: bool) -> list[DiskChange]:
        changes = []
        for path in sorted(paths):
            change = self._check(path, trust_stat)
            if change is not None:
                changes.append(change)
        return changes

    def _check(self, path: Path, trust_stat: bool) -> DiskChange | None:
        """One path now against its last known fingerprint, which is updated.

        ``trust_stat``: an unchanged size and mtime (not too recent) means unchanged bytes; after a
        notification the bytes are read anyway (a rewrite within one mtime tick keeps both).
        """
        with self._lock:  # remember() between our read and our update must not be lost
            old = self._known.get(path)
            try:
                st = os.stat(path)
            except OSError:
                st = None
            if st is None or not stat.S_ISREG(st.st_mode):
                if old is None:
                    return None
                del self._known[path]
                return DiskChange("deleted", path)
            if old is not None and trust_stat and old.same_stat(st) and time.time_ns() - st.st_mtime_ns > RACY_NS:
                return None
            fp = self._read(path, st=st, hash_anyway=old is None or old.digest is not None)
            if fp is None:  # vanished between stat and read
                if old is None:
                    return None
                del self._known[path]
                return DiskChange("deleted", path)
            self._known[path] = fp
        if old is None:
            return DiskChange("added", path)
        if old.digest is not None and fp.digest is not None:
            return None if old.digest == fp.digest else DiskChange("modified", path)
        if old.size == fp.size and old.mtime_ns == fp.mtime_ns:
            return None
        return DiskChange("modified", path)

    def _read(self, path: Path, st: os.stat_result | None = None, hash_anyway: bool = True) -> Fingerprint | None:
        """The file's fingerprint; None if it is gone. Unreadable or huge files get no digest."""
        try:
            if st is None:
                st = os.stat(path)
            if not hash_anyway or st.st_size > self.hash_limit:
                return Fingerprint(st.st_size, st.st_mtime_ns, None)
            data, st = read_regular_stat(path)  # the stat of the bytes read (a rename may have happened)
        except (FileNotFoundError, NotADirectoryError, NotRegularFile):
            return None  # gone, or not a document any more (a pipe or a loop is never opened)
        except OSError:
            return Fingerprint(st.st_size, st.st_mtime_ns, None) if st is not None else None
        return Fingerprint(len(data), st.st_mtime_ns, digest_of(data))


# Indirection so tests (and the fallback test) can replace the OS watcher.
def _watch(path: Path, **kwargs: Any) -> Iterator[set[tuple[Any, str]]]:
    return watchfiles.watch(path, **kwargs)


def plan_reactions(changes: Iterable[DiskChange], open_path: Path | None,
                   dirty_paths: Collection[Path]) -> list[Reaction]:
    """What the workbench does about one batch of changes.

    * modified, no unsaved edits → "reload" (the held document and, if open, the panes);
    * modified, unsaved edits → "ask" (reload and drop them, or keep them);
    * deleted → "mark-deleted" (the tree marks it; unsaved edits stay in memory);
    * added → one "rescan" of the tree per batch, after the rest; a document that comes back
      while it is open or has unsaved edits is treated as modified as well.
    """
    reactions: list[Reaction] = []
    rescan = False
    for change in sorted(changes, key=lambda c: c.path):
        path = change.path
        is_open = open_path is not None and path == open_path
        dirty = path in dirty_paths
        if change.kind == "deleted":
            reactions.append(Reaction("mark-deleted", path, is_open))
            continue
        if change.kind == "added":
            rescan = True
            if not (is_open or dirty):
                continue
        reactions.append(Reaction("ask" if dirty else "reload", path, is_open))
    if rescan:
        reactions.append(Reaction("rescan"))
    return reactions
