"""The journal of unsaved edits: what a crash would otherwise lose, kept in the state dir.

Each running app journals into its own session folder under ``journal_dir(folder)``, locked
while it runs (see "sessions" below). Each document with unsaved edits has one entry file there: its path,
the bytes a save would write, the sha256 of what its file held when the edits were based on
it, and when the entry was written. Entries are written atomically (temp file, fsync,
``os.replace``) so a crash mid-write leaves the previous entry, never half of one. At the
next start on the folder, ``pending(folder)`` lists those of sessions that ended; an entry whose file changed on
disk since (its sha256 differs from the recorded base) is a conflict, shown with its diff and
never written over silently. No Textual here: the app drives a ``Journal`` from its timer.
"""
from __future__ import annotations

import base64
import difflib
import fcntl
import hashlib
import json
import os
import secrets
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import Iterable

from ctxfst_tui.config import state_dir
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.safe_write import write_file
from ctxfst_tui.core.workspace.undo import DocChange, UndoRecord
from ctxfst_tui.core.workspace.workspace import Workspace

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
    """Where the layout before sessions kept ``path``'s entry (still read, as an ended session)."""
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
    older: int = 0  # older versions of this document's edits other ended sessions left (set aside)

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


def _inside(path: Path, folder: Path) -> bool:
    try:
        _resolved(path).relative_to(_resolved(folder))
        return True
    except ValueError:
        return False


# ------------------------------------------------------------ sessions: one per running app
#
# Each running app journals into its own session folder, ``journal_dir(folder)/<session id>/``,
# and holds an exclusive ``flock`` on the ``lock`` file inside it for as long as it runs. The
# kernel drops the lock when the process ends, however it ends (kill -9 included), so a session
# whose lock can be taken is dead and its entries are unsaved work to offer back; one whose lock
# is held belongs to a running app and is never offered (nor touched). A session folder appears
# under its name only once its lock is held (it is made as ``.<id>.new`` and renamed), so no
# one ever sees a live session unlocked. Entry files lying directly in ``journal_dir`` (the
# layout before sessions) are read as a dead session too.

LOCK = "lock"


def _take_lock(path: Path) -> int | None:
    """A descriptor holding the exclusive lock of ``path``, or None when someone holds it (or it is gone).
    The lock conflicts with any other open of the file, in this process too."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _read_entries(d: Path, folder: Path) -> list[JournalEntry]:
    """The entries in the folder ``d`` that speak for ``folder`` (damaged or foreign files skipped)."""
    entries = []
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
    return entries


def _remove_entries(d: Path) -> None:
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


def _rmdir(d: Path) -> None:
    try:
        d.rmdir()
    except OSError:
        pass  # not empty (another session's, or a file someone put there) or gone already


@dataclass
class DeadSession:
    """The journal an ended app left: its folder, its entries, and (while claimed) its lock."""

    dir: Path
    entries: list[JournalEntry]
    fd: int | None  # the session's lock, held by us while claimed (None: the older flat layout)
    legacy: bool = False  # entry files directly in journal_dir (before sessions)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def remove(self) -> None:
        """Delete the session's entries and folder (its lock file last, then let go of it)."""
        _remove_entries(self.dir)
        if not self.legacy:
            try:
                (self.dir / LOCK).unlink()
            except OSError:
                pass
            _rmdir(self.dir)
        self.release()


class Claim:
    """The dead sessions of a folder, locked by us so no other app offers them at the same time.

    ``entries``: one per document, the newest when several dead sessions hold one (``older`` on
    it counts the versions set aside). ``remove`` deletes them once dealt with (recovered or
    discarded); ``release`` lets go of them, left for the next start.
    """

    def __init__(self, folder: Path, sessions: list[DeadSession]) -> None:
        self.folder = Path(folder)
        self.sessions = sessions
        newest: dict[Path, JournalEntry] = {}
        counts: dict[Path, int] = {}
        for s in sessions:
            for e in s.entries:
                key = _resolved(e.path)
                counts[key] = counts.get(key, 0) + 1
                if key not in newest or e.timestamp > newest[key].timestamp:
                    newest[key] = e
        for key, e in newest.items():
            e.older = counts[key] - 1
        self.entries = sorted(newest.values(), key=lambda e: str(e.path))

    def release(self) -> None:
        for s in self.sessions:
            s.release()

    def remove(self) -> None:
        for s in self.sessions:
            s.remove()
        _rmdir(journal_dir(self.folder))


def claim(folder: Path) -> Claim:
    """Lock and read every dead session of ``folder``'s journal (sessions of running apps are left
    alone). Dead sessions with no entry (an app killed before its first one) are removed at once."""
    root = journal_dir(folder)
    sessions: list[DeadSession] = []
    try:
        children = sorted(root.iterdir())
    except OSError:
        return Claim(folder, [])
    if any(p.name.endswith(SUFFIX) and not p.is_dir() for p in children):  # the flat layout (damaged files too)
        sessions.append(DeadSession(root, _read_entries(root, folder), None, legacy=True))
    for d in children:
        if d.name.startswith(".") or not d.is_dir() or d.is_symlink():
            continue
        fd = _take_lock(d / LOCK)
        if fd is None:
            if (d / LOCK).exists():
                continue  # a running app's (or one another app is offering right now)
            # no lock file: damaged, or its app is removing it this instant; read as dead, unlocked
        dead = DeadSession(d, _read_entries(d, folder), fd)
        if dead.entries:
            sessions.append(dead)
        elif fd is not None:
            dead.remove()
    if not sessions:
        _rmdir(root)  # gone when empty (a new session makes it again)
    return Claim(folder, sessions)


def pending(folder: Path) -> list[JournalEntry]:
    """The documents of ``folder`` with unsaved work left by apps that ended (crashed, killed or
    closed with edits), by path; the newest when two ended sessions hold one. Never a running
    app's: its session is locked."""
    c = claim(folder)
    c.release()
    return c.entries


def all_entries(folder: Path) -> list[JournalEntry]:
    """Every entry of ``folder``'s journal, running apps' included (for reports and tests)."""
    root = journal_dir(folder)
    found = _read_entries(root, folder)
    try:
        children = sorted(root.iterdir())
    except OSError:
        return []
    for d in children:
        if not d.name.startswith(".") and d.is_dir() and not d.is_symlink():
            found.extend(_read_entries(d, folder))
    return sorted(found, key=lambda e: (str(e.path), e.timestamp))


def clear(folder: Path) -> None:
    """Delete what ended sessions left in ``folder``'s journal (never a running app's entries)."""
    claim(folder).remove()


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


def _new_session(folder: Path) -> tuple[Path, int]:
    """Make a session folder holding its lock: built as ``.<id>.new``, locked, then renamed, so it is
    never visible unlocked. Returns the folder and the lock's descriptor."""
    root = journal_dir(folder)
    sid = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{secrets.token_hex(3)}"
    tmp = root / f".{sid}.new"
    for attempt in range(5):
        root.mkdir(parents=True, exist_ok=True)
        try:
            tmp.mkdir(mode=0o700)
            break
        except FileNotFoundError:  # the journal folder went with another session's clean-up: again
            if attempt == 4:
                raise
    try:
        fd = os.open(tmp / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        _rmdir(tmp)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file no one else knows: never waits
        os.rename(tmp, root / sid)
    except OSError:
        os.close(fd)
        try:
            (tmp / LOCK).unlink()
        except OSError:
            pass
        _rmdir(tmp)
        raise
    return root / sid, fd


class Journal:
    """This app's journal of ``folder``: its own session, kept in step with the dirty documents by ``sync``.

    The session folder is made (and locked) at the first entry and kept, locked, until ``close``
    or ``discard``. ``sync`` may run in a worker thread; calls carry a sequence number so an older
    snapshot that loses the race to a newer one is dropped, and ``close`` stops every later write.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._lock = threading.Lock()
        self._seq = -1  # the newest snapshot applied
        self._written: dict[Path, tuple[bytes, str]] = {}  # what each entry file holds
        self._closed = False
        self.session: Path | None = None  # our session folder, once the first entry is written
        self._fd: int | None = None  # the lock on it, held while we run
        self._retired: list[Claim] = []  # dead sessions recovered into ours: removed once ours holds them

    def entry_file(self, path: Path) -> Path:
        assert self.session is not None
        return self.session / (_short_key(str(_resolved(path))) + SUFFIX)

    def entries(self) -> list[JournalEntry]:
        """What our own session holds now."""
        return sorted(_read_entries(self.session, self.folder), key=lambda e: str(e.path)) if self.session else []

    def sync(self, snapshot: list[Unsaved], seq: int) -> bool:
        """Make our session hold exactly ``snapshot``: write new or changed entries, delete the
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
            if self.session is None:
                self.session, self._fd = _new_session(self.folder)
            entry = JournalEntry(key, item.data, item.base_sha256, time.time())
            write_file(self.entry_file(key), json.dumps(entry.to_json(), ensure_ascii=False).encode("utf-8"),
                       new_mode=0o600, parents=True)  # unsaved edits stay private to the user
            self._written[key] = (item.data, item.base_sha256)
        for key in [k for k in self._written if k not in keep]:
            self._remove(key)
        for c in self._retired:  # our session now holds what was recovered from them
            c.remove()
        self._retired.clear()

    def _remove(self, key: Path) -> None:
        try:
            self.entry_file(key).unlink()
        except FileNotFoundError:
            pass
        self._written.pop(key, None)

    def retire(self, claimed: Claim) -> None:
        """Dead sessions whose work was recovered into the app: keep them (locked) until the next
        successful ``sync`` has written that work into our session, then remove them."""
        with self._lock:
            self._retired.append(claimed)

    def _end_session(self, remove: bool) -> None:
        if self.session is not None and remove:
            _remove_entries(self.session)
            try:
                (self.session / LOCK).unlink()
            except OSError:
                pass
            _rmdir(self.session)
            _rmdir(self.session.parent)
        if self._fd is not None:
            os.close(self._fd)  # from here on, a session left on disk is dead: offered at the next start
        self.session, self._fd = None, None
        self._written.clear()

    def discard(self) -> None:
        """Delete our session and the dead ones recovered into it (the user drops the unsaved work)."""
        with self._lock:
            for c in self._retired:
                c.remove()
            self._retired.clear()
            self._end_session(remove=True)

    def release(self) -> None:
        """Let go of our session's lock (and of claimed dead sessions), leaving every entry: what the
        end of the process does. For an app unmounted without ``close`` in a process that goes on."""
        with self._lock:
            self._closed = True
            for c in self._retired:
                c.release()
            self._retired.clear()
            self._end_session(remove=False)

    def close(self, snapshot: list[Unsaved]) -> None:
        """The app is ending cleanly: remove our session when nothing is unsaved, else write the
        final snapshot (so the last half second is kept too) and let go of its lock, leaving it for
        the next start. Nothing is written after this."""
        with self._lock:
            self._closed = True
            try:
                self._apply(snapshot)
            finally:
                for c in self._retired:  # not written into ours (a failed write): left for next time
                    c.release()
                self._retired.clear()
                self._end_session(remove=not snapshot)


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
