"""The editing session: the in-memory workspace (the source of truth) and its undo stack.

Plain Python, no Textual: the App owns one Session; the screen calls it on the main thread
(entity operations and fixes are fast). Workers never touch the live documents: they get
``snapshots`` (immutable bytes) and parse their own copies, so an edit can never race a
worker that is validating or diagnosing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.entity_ops import EntityOpError
from ctxfst_tui.core.workspace.undo import UndoRecord, UndoStack, combine
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.services.report import display_path

Step = tuple[Callable[..., Any], tuple, dict]


def snapshot(doc: Document) -> bytes:
    """What a worker needs to rebuild ``doc``: its in-memory text (raw bytes if it cannot be decoded)."""
    return doc.encoded() if doc.readable else doc.raw


class Session:
    """One workspace, its undo/redo history, and a version bumped on every change."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.workspace: Workspace | None = None
        self.undo = UndoStack()
        self.listeners: list[Callable[[], None]] = []  # called after every change (e.g. the journal's timer)
        self._version = 0

    @property
    def version(self) -> int:
        """Bumped whenever a document's text changes: older results are stale."""
        return self._version

    @version.setter
    def version(self, value: int) -> None:
        self._version = value
        for listener in list(self.listeners):
            listener()

    # ------------------------------------------------------------ the workspace
    @property
    def ready(self) -> bool:
        return self.workspace is not None

    def adopt(self, ws: Workspace) -> set[Path]:
        """Take a freshly loaded workspace. Documents held with unsaved edits are kept as they are;
        held ones without edits take the text read from disk (another program may have changed it).
        Returns the paths whose held text was replaced."""
        replaced: set[Path] = set()
        if self.workspace is None:
            self.workspace = ws
        else:
            held = {d.path: d for d in self.workspace.docs if d.path is not None}

            def pick(d: Document) -> Document:
                old = held.get(d.path) if d.path is not None else None
                if old is None or old.dirty or (old.readable == d.readable and old.text == d.text):
                    return old or d
                replaced.add(d.path)
                self.undo.forget(d.path)
                return d

            fresh = [pick(d) for d in ws.docs]
            kept = {d.path for d in fresh}
            # A dirty document whose file has gone is kept: its edits are not lost without asking.
            fresh += [d for p, d in held.items() if p not in kept and d.readable and d.dirty]
            self.workspace = Workspace(fresh, ws.root)
        self.version += 1
        return replaced

    def document(self, path: Path | None) -> Document | None:
        if self.workspace is None or path is None:
            return None
        return self.workspace.document(path)

    def replace_document(self, doc: Document) -> bool:
        """Swap in ``doc`` (re-read from disk) for the held document of the same path."""
        ws = self.workspace
        if ws is None or doc.path is None:
            return False
        for i, held in enumerate(ws.docs):
            if held.path == doc.path:
                if held.readable and doc.readable and held.text == doc.text and not held.dirty:
                    return False  # the same text: keep the held document and its undo history
                ws.docs[i] = doc
                self.undo.forget(doc.path)  # its records describe text that is gone
                self.version += 1
                return True
        return False

    def drop(self, path: Path) -> bool:
        """Forget a document whose file was deleted, unless it has unsaved edits (those are kept)."""
        ws = self.workspace
        if ws is None:
            return False
        for i, held in enumerate(ws.docs):
            if held.path == path and not (held.readable and held.dirty):
                del ws.docs[i]
                self.undo.forget(path)
                self.version += 1
                return True
        return False

    def snapshot(self, path: Path) -> bytes | None:
        doc = self.document(path)
        return snapshot(doc) if doc is not None else None

    def snapshots(self) -> list[tuple[Path, bytes]]:
        if self.workspace is None:
            return []
        return [(d.path, snapshot(d)) for d in self.workspace.docs if d.path is not None]

    def is_dirty(self, path: Path | None) -> bool:
        doc = self.document(path)
        return doc is not None and doc.readable and doc.dirty

    @property
    def dirty_paths(self) -> set[Path]:
        if self.workspace is None:
            return set()
        return {d.path for d in self.workspace.dirty if d.path is not None}

    def label(self, path: Path | str | None) -> str:
        return display_path(Path(path), self.root) if path is not None else "<document>"

    # ------------------------------------------------------------ editing
    def _require(self) -> Workspace:
        if self.workspace is None:
            raise EntityOpError("the workspace is still loading; try again in a moment")
        return self.workspace

    def preview(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
        """The unified diff ``op`` would apply (paths shown relative to the root)."""
        diff = op(self._require(), *args, dry_run=True, **kwargs)
        return self.relative_diff(diff)

    def relative_diff(self, diff: str) -> str:
        out = []
        for line in diff.splitlines():
            if line.startswith(("--- ", "+++ ")):
                line = line[:4] + self.label(line[4:])
            out.append(line)
        return "\n".join(out)

    def run(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> UndoRecord:
        """Apply one operation and record it for undo (raises EntityOpError / FixError)."""
        record = self.undo.run(self._require(), op, *args, **kwargs)
        if record.changes:
            self.version += 1
        return record

    def run_all(self, description: str, steps: list[Step]) -> UndoRecord:
        """Apply several operations as one undoable edit; all or nothing."""
        ws = self._require()
        done: list[UndoRecord] = []
        try:
            for op, args, kwargs in steps:
                done.append(op(ws, *args, **kwargs))
        except Exception:
            for record in reversed(done):
                record.undo(ws)
            raise
        record = self.undo.push(combine(description, done))
        if record.changes:
            self.version += 1
        return record

    def undo_last(self) -> UndoRecord | None:
        record = self.undo.undo(self._require())
        if record is not None:
            self.version += 1
        return record

    def redo_last(self) -> UndoRecord | None:
        record = self.undo.redo(self._require())
        if record is not None:
            self.version += 1
        return record
