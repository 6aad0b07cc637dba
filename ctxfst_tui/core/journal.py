"""The journal of unsaved edits: what a crash would otherwise lose, kept in the state dir.

Each document with unsaved edits has one entry file under ``journal_dir(folder)``: its path,
the bytes a save would write, the sha256 of what its file held when the edits were based on
it, and when the entry was written. Entries are written atomically (temp file, fsync,
``os.replace``) so a crash mid-write leaves the previous entry, never half of one. At the
next start on the folder, ``pending(folder)`` lists them; an entry whose file changed on
disk since (its sha256 differs from the recorded base) is a conflict, shown with its diff and
never written over silently. No Textual here: the app drives a ``Journal`` from its timer.
"""
from __future__ import annotations

import base64
import difflib
import hashlib
import json
import os
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import Iterable

from ..config import state_dir
from .document import Document
from .entities import DocChange, UndoRecord, Workspace

FORMAT = 1  # the entry file's layout; entries of another format are ignored, never misread
SUFFIX = ".json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _short_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _resolved(path: Path) -> Path:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):  # a symlink loop: the absolute path still names it
        return Path(os.path.abspath(path))


def journal_dir(folder: Path) -> Path:
    """Where the journal of ``folder`` lives: ``<state dir>/journal/<short sha256 of the resolved folder>``."""
    return state_dir() / "journal" / _short_key(str(_resolved(folder)))


def entry_file(folder: Path, path: Path) -> Path:
    return journal_dir(folder) / (_short_key(str(_resolved(path))) + SUFFIX)


def read_disk(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a regular file that can be read, else None (never opens a pipe)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        return Path(path).read_bytes()
    except (OSError, RuntimeError):
        return None


@dataclass
class JournalEntry:
    """One document's unsaved work as journaled."""

    path: Path  # the document (absolute)
    data: bytes  # exactly what a save would write (``Document.encoded()``)
    base_sha256: str  # of the file's bytes the edits were made on
    timestamp: float  # when the entry was written (seconds since the epoch)
    file: Path | None = None  # the entry file in the journal dir

    def disk(self) -> bytes | None:
        """What the document's file holds now (None: gone, or not a regular file)."""
        return read_disk(self.path)

    def state(self, disk: "bytes | None | EllipsisType" = ...) -> str:
        """``unchanged`` (the file still holds the base), ``changed`` or ``deleted`` on disk since.
        ``disk``: the file's bytes if already read (None: not there); default, read it now."""
        disk = self.disk() if disk is ... else disk
        if disk is None:
            return "deleted"
        return "unchanged" if sha256(disk) == self.base_sha256 else "changed"

    @property
    def conflict(self) -> bool:
        """True when the file changed on disk (or went) since the edits were based on it."""
        return self.state() != "unchanged"

    def text(self) -> str:
        return Document(self.data, self.path).text

    def diff(self, label: str | None = None, disk: "bytes | None | EllipsisType" = ...) -> str:
        """Unified diff from what the file holds now (``disk``, as for ``state``) to the journaled text."""
        disk = self.disk() if disk is ... else disk
        before = Document(disk, self.path).text if disk is not None else ""
        name = label or str(self.path)
        lines = difflib.unified_diff(before.splitlines(), self.text().splitlines(),
                                     fromfile=f"{name} (on disk)", tofile=f"{name} (unsaved edits)", lineterm="")
        return "".join(line + "\n" for line in lines)

    # ------------------------------------------------------------ the entry file
    def to_json(self) -> dict:
        try:
            body = {"text": self.data.decode("utf-8")}
        except UnicodeDecodeError:
            body = {"data_base64": base64.b64encode(self.data).decode("ascii")}
        return {"format": FORMAT, "path": str(self.path), "base_sha256": self.base_sha256,
                "timestamp": self.timestamp, **body}

    @classmethod
    def from_json(cls, value: object, file: Path | None = None) -> "JournalEntry | None":
        """The entry an entry file holds, or None when it is not one (a foreign or damaged file)."""
        if not isinstance(value, dict) or value.get("format") != FORMAT:
            return None
        path, base, stamp = value.get("path"), value.get("base_sha256"), value.get("timestamp")
        if not isinstance(path, str) or not isinstance(base, str) or not isinstance(stamp, (int, float)):
            return None
        if isinstance(value.get("text"), str):
            data = value["text"].encode("utf-8")
        elif isinstance(value.get("data_base64"), str):
            try:
                data = base64.b64decode(value["data_base64"], validate=True)
            except ValueError:
                return None
        else:
            return None
        return cls(Path(path), data, base, float(stamp), file)


def write_file_atomic(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` through a temp file in the same folder, fsync, ``os.replace``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=str(target.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # the rename itself is durable once the folder is synced
        dfd = os.open(target.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _inside(path: Path, folder: Path) -> bool:
    try:
        _resolved(path).relative_to(_resolved(folder))
        return True
    except ValueError:
        return False


def pending(folder: Path) -> list[JournalEntry]:
    """The documents of ``folder`` with journaled unsaved work, by path (damaged entries skipped)."""
    entries = []
    d = journal_dir(folder)
    try:
        files = sorted(p for p in d.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith("."))
    except OSError:
        return []
    for f in files:
        try:
            entry = JournalEntry.from_json(json.loads(f.read_bytes()), f)
        except (OSError, ValueError):
            continue
        if entry is not None and _inside(entry.path, folder):  # a journal only ever speaks for its folder
            entries.append(entry)
    return sorted(entries, key=lambda e: str(e.path))


def clear(folder: Path) -> None:
    """Delete the journal of ``folder`` (every entry, then the folder if empty)."""
    d = journal_dir(folder)
    try:
        files = list(d.iterdir())
    except OSError:
        return
    for f in files:
        if f.name.endswith((SUFFIX, ".tmp")):
            try:
                f.unlink()
            except OSError:
                pass
    try:
        d.rmdir()
    except OSError:
        pass


@dataclass(frozen=True)
class Unsaved:
    """What the journal needs of one dirty document, taken on the UI thread (immutable bytes)."""

    path: Path
    data: bytes
    base_sha256: str


def unsaved(docs: Iterable[Document]) -> list[Unsaved]:
    """Snapshot of the documents with unsaved edits: their bytes and the sha256 of their base."""
    return [Unsaved(d.path, d.encoded(), sha256(d.raw)) for d in docs
            if d.path is not None and d.readable and d.dirty]


class Journal:
    """The journal of one folder, kept in step with the dirty documents by ``sync``.

    ``sync`` may run in a worker thread; calls carry a sequence number so an older snapshot
    that loses the race to a newer one is dropped, and ``close`` stops every later write.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._lock = threading.Lock()
        self._seq = -1  # the newest snapshot applied
        self._written: dict[Path, tuple[bytes, str]] = {}  # what each entry file holds
        self._closed = False

    def sync(self, snapshot: list[Unsaved], seq: int) -> bool:
        """Make the journal hold exactly ``snapshot``: write new or changed entries, delete the
        others. Returns False when the snapshot was stale or the journal is closed (nothing done).
        Raises OSError when an entry cannot be written (the entries already there stay)."""
        with self._lock:
            if self._closed or seq <= self._seq:
                return False
            self._seq = seq
            self._apply(snapshot)
            return True

    def _apply(self, snapshot: list[Unsaved]) -> None:
        keep = set()
        for item in snapshot:
            key = _resolved(item.path)
            keep.add(key)
            if self._written.get(key) == (item.data, item.base_sha256):
                continue
            entry = JournalEntry(key, item.data, item.base_sha256, time.time())
            write_file_atomic(entry_file(self.folder, key), json.dumps(entry.to_json(), ensure_ascii=False).encode("utf-8"))
            self._written[key] = (item.data, item.base_sha256)
        for key in [k for k in self._written if k not in keep]:
            self._remove(key)
        if not snapshot:
            clear(self.folder)  # also entries an earlier run left (once they have been dealt with)

    def _remove(self, key: Path) -> None:
        try:
            entry_file(self.folder, key).unlink()
        except FileNotFoundError:
            pass
        self._written.pop(key, None)

    def adopt(self, entries: Iterable[JournalEntry]) -> None:
        """Count entries found on disk (from an earlier run) as this journal's own, so the next
        ``sync`` rewrites or deletes them."""
        with self._lock:
            for e in entries:
                self._written[_resolved(e.path)] = (b"", "")  # never equal to a snapshot: rewritten

    def discard(self) -> None:
        """Delete every entry (the user chose to drop the unsaved work)."""
        with self._lock:
            self._written.clear()
            clear(self.folder)

    def close(self, snapshot: list[Unsaved]) -> None:
        """The app is ending cleanly: clear the journal when nothing is unsaved, else write the
        final snapshot (so the last half second is kept too). Nothing is written after this."""
        with self._lock:
            self._closed = True
            self._apply(snapshot)


def _in_workspace(ws: Workspace, path: Path) -> Path:
    """``path`` spelled as the workspace spells its documents (under its root as given)."""
    if ws.root is not None:
        try:
            return ws.root / path.relative_to(_resolved(ws.root))
        except ValueError:
            pass
    return path


def recover(ws: Workspace, entries: list[JournalEntry]) -> UndoRecord:
    """Put the journaled texts back as unsaved edits, as one undoable step (undo: the disk text).

    Nothing is written to disk. A document the workspace no longer holds (deleted on disk) is
    added back with an empty saved text, so saving writes it again.
    """
    changes: list[DocChange] = []
    for entry in entries:
        recovered = Document(entry.data, entry.path)
        if not recovered.readable:
            continue
        doc = ws.document(entry.path)
        if doc is None or not doc.readable:
            fresh = Document(b"", doc.path if doc is not None else _in_workspace(ws, entry.path))
            if doc is None:
                ws.docs.append(fresh)
            else:
                ws.docs[ws.docs.index(doc)] = fresh
            doc = fresh
        if doc.text == recovered.text:
            continue
        index = ws.docs.index(doc)
        changes.append(DocChange(doc.path, index, doc.text, recovered.text))
        doc.replace_text(recovered.text)
    return UndoRecord("recover", f"Recovered unsaved edits of {len(changes)} document{'s' if len(changes) != 1 else ''}", changes)
