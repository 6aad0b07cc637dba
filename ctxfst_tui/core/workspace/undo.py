"""Undo records: each document's text before and after an operation, and the stack that replays them.

An operation (entity edit, fix, contextualize, extract) returns one :class:`UndoRecord`; the
workbench's :class:`UndoStack` undoes and redoes it byte for byte across every document it touched.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ctxfst_tui.core.workspace.workspace import Workspace


class EntityOpError(ValueError):
    """An entity operation (or its undo) that cannot be applied; the message is one line."""


@dataclass
class DocChange:
    """One document's text before and after an operation (``index`` = position in the workspace)."""

    path: Path | None
    index: int
    before: str
    after: str

    @property
    def label(self) -> str:
        return str(self.path) if self.path is not None else f"<document {self.index + 1}>"

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.before.splitlines(), self.after.splitlines(), fromfile=self.label, tofile=self.label, lineterm=""
        )
        return "".join(line + "\n" for line in lines)


@dataclass
class UndoRecord:
    """What an operation changed, enough to undo and redo it in memory."""

    op: str
    description: str
    changes: list[DocChange] = field(default_factory=list)

    @property
    def paths(self) -> list[Path | None]:
        return [c.path for c in self.changes]

    def diff(self) -> str:
        return "".join(c.diff() for c in self.changes)

    def _apply(self, ws: "Workspace", undo: bool) -> None:
        docs = [(c, ws.document_for(c)) for c in self.changes]
        for c, doc in docs:  # check everything first: all or nothing
            expected = c.after if undo else c.before
            if doc is None:
                raise EntityOpError(f"{c.label} is no longer in the workspace")
            if doc.text != expected:
                raise EntityOpError(f"{c.label} changed since '{self.description}'; cannot {'undo' if undo else 'redo'} it")
        for c, doc in docs:
            doc.replace_text(c.before if undo else c.after)

    def undo(self, ws: "Workspace") -> None:
        self._apply(ws, undo=True)

    def redo(self, ws: "Workspace") -> None:
        self._apply(ws, undo=False)


class UndoStack:
    """Session undo/redo of entity operations; a new operation clears the redo side."""

    def __init__(self, limit: int = 200):
        self.limit = limit
        self._undo: list[UndoRecord] = []
        self._redo: list[UndoRecord] = []

    def push(self, record: UndoRecord) -> UndoRecord:
        if record.changes:
            self._undo.append(record)
            del self._undo[: -self.limit]
            self._redo.clear()
        return record

    def run(self, ws: "Workspace", op: Callable[..., UndoRecord], *args: Any, **kwargs: Any) -> UndoRecord:
        """Apply an operation (e.g. ``merge_entities``) and record it."""
        return self.push(op(ws, *args, **kwargs))

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    @property
    def done(self) -> tuple[UndoRecord, ...]:
        """The records undo would take back, oldest first (read only)."""
        return tuple(self._undo)

    @property
    def undone(self) -> tuple[UndoRecord, ...]:
        """The records redo would apply again, the next one last (read only)."""
        return tuple(self._redo)

    def undo(self, ws: "Workspace") -> UndoRecord | None:
        if not self._undo:
            return None
        record = self._undo[-1]
        record.undo(ws)
        self._redo.append(self._undo.pop())
        return record

    def redo(self, ws: "Workspace") -> UndoRecord | None:
        if not self._redo:
            return None
        record = self._redo[-1]
        record.redo(ws)
        self._undo.append(self._redo.pop())
        return record

    def clear(self) -> None:
        self._undo.clear()
        self._redo.clear()

    def forget(self, path: Path) -> int:
        """Drop every record touching ``path`` (its text was replaced, e.g. re-read from disk):
        they could never apply again and would block the records below them. Returns how many."""
        before = len(self._undo) + len(self._redo)
        self._undo = [r for r in self._undo if path not in r.paths]
        self._redo = [r for r in self._redo if path not in r.paths]
        return before - len(self._undo) - len(self._redo)


def combine(description: str, records: list[UndoRecord]) -> UndoRecord:
    """One record for several applied in sequence: each document's first 'before', last 'after'."""
    changes: dict[Any, DocChange] = {}
    for record in records:
        for c in record.changes:
            key = c.path if c.path is not None else c.index
            if key in changes:
                changes[key].after = c.after
            else:
                changes[key] = DocChange(c.path, c.index, c.before, c.after)
    kept = [c for c in changes.values() if c.before != c.after]
    op = records[0].op if len(records) == 1 else "edit"
    return UndoRecord(op, description, kept)


# ---------------------------------------------------------------- workspace


