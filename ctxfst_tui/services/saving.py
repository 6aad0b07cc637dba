"""Saving the workspace without losing an edit made while the files are written.

The save is split in three so the live documents are touched only on the UI thread:
``take`` snapshots each dirty document (its text and the exact bytes to write), ``write``
writes those bytes in a worker (``safe_write.write_files``: all or nothing, refusing a file
changed on disk since it was read), and ``mark_saved`` (back on the UI thread) makes clean only
the documents that still hold the text that was written. An edit made during the write
stays unsaved, and the next save writes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ctxfst_tui.core import safe_write
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.workspace import Workspace


@dataclass(frozen=True)
class PendingWrite:
    """One document as it was when the save was asked for."""

    doc: Document  # the live document (identity only: never read from the worker)
    path: Path
    text: str  # its text then
    data: bytes  # the bytes to write (``doc.encoded()`` then)
    read: bytes  # what the file held as last read or written (``doc.raw`` then)

    @property
    def unchanged(self) -> bool:
        """The file already holds these bytes: nothing to write."""
        return self.data == self.read


def take(workspace: Workspace) -> list[PendingWrite]:
    """Snapshot of every document with unsaved changes (UI thread)."""
    return [PendingWrite(d, d.path, d.text, d.encoded(), d.raw) for d in workspace.dirty if d.path is not None]


def write(items: list[PendingWrite], label: Callable[[Path], str] = str) -> tuple[list[Path], str | None]:
    """Write the snapshot's bytes, all or nothing (worker thread), each guarded against a lost
    update (the file must still hold what was read). Returns the paths now holding their
    snapshot and, when the write failed, one message naming each file and what became of it."""
    todo = [i for i in items if not (i.unchanged and i.path.exists())]
    already = [i.path for i in items if i not in todo]
    try:
        # looked up at call time: the one writer of the project (and what a test slows down)
        safe_write.write_files([safe_write.WritePlan(i.path, i.data, expected=i.read) for i in todo])
    except safe_write.WriteError as exc:
        written = [o.path for o in exc.outcomes if o.status == "written"]
        lines = [f"{label(o.path)}: {o.status}" + (f" ({o.detail})" if o.detail else "") for o in exc.outcomes]
        return already + written, "; ".join(lines)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return already, f"{label(Path(getattr(exc, 'filename', '') or '?'))}: {reason}; nothing saved"
    return [i.path for i in items], None


def mark_saved(items: list[PendingWrite], written: list[Path]) -> list[Path]:
    """Record the writes (UI thread). Returns the written paths edited during the save (still unsaved)."""
    done = set(written)
    edited = []
    for item in items:
        if item.path in done and not item.doc.mark_saved(item.text, item.data):
            edited.append(item.path)
    return edited
