"""The journal of unsaved edits (core, no UI): entries on real files in the private state dir."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ctxfst_tui.config import state_dir
from ctxfst_tui.core import journal as journal_module
from ctxfst_tui.core.document import Document
from ctxfst_tui.core.entities import UndoStack, Workspace
from ctxfst_tui.core.journal import (
    Journal,
    JournalEntry,
    clear,
    entry_file,
    journal_dir,
    pending,
    recover,
    sha256,
    unsaved,
)

DOC = '---\ntitle: "Notes"\nentities:\n  - id: entity:js\n    name: JS\n---\n\n<Chunk id="a:b">\nBody.\n</Chunk>\n'


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text(DOC, encoding="utf-8")
    (root / "b.md").write_text(DOC.replace("Notes", "Other"), encoding="utf-8")
    return root


def edited(path: Path, new_title: str = "Edited") -> Document:
    doc = Document.load(path)
    doc.replace_text(doc.text.replace('title: "Notes"', f'title: "{new_title}"').replace('"Other"', f'"{new_title}"'))
    assert doc.dirty
    return doc


def test_journal_dir_is_in_the_state_dir_keyed_by_the_resolved_folder(folder, monkeypatch):
    d = journal_dir(folder)
    assert d.parent == state_dir() / "journal"
    assert len(d.name) == 16 and all(c in "0123456789abcdef" for c in d.name)
    monkeypatch.chdir(folder.parent)
    assert journal_dir(Path("docs")) == d  # the same folder named relatively
    assert journal_dir(folder.parent) != d


def test_sync_writes_one_entry_per_dirty_document_and_pending_reads_them(folder):
    a = edited(folder / "a.md")
    clean = Document.load(folder / "b.md")
    j = Journal(folder)
    assert j.sync(unsaved([a, clean]), 1)
    files = sorted(journal_dir(folder).iterdir())
    assert files == [entry_file(folder, folder / "a.md")]
    saved = json.loads(files[0].read_text(encoding="utf-8"))
    assert saved["path"] == str((folder / "a.md").resolve())
    assert saved["base_sha256"] == sha256((folder / "a.md").read_bytes())
    (entry,) = pending(folder)
    assert entry.path == (folder / "a.md").resolve()
    assert entry.data == a.encoded()
    assert entry.state() == "unchanged" and not entry.conflict
    assert "+title: \"Edited\"" in entry.diff("a.md") and "-title: \"Notes\"" in entry.diff("a.md")
    assert (folder / "a.md").read_text(encoding="utf-8") == DOC  # the document itself is never touched


def test_sync_drops_entries_of_documents_no_longer_dirty_and_clears_when_none(folder):
    a, b = edited(folder / "a.md"), edited(folder / "b.md")
    j = Journal(folder)
    j.sync(unsaved([a, b]), 1)
    assert len(pending(folder)) == 2
    b.replace_text((folder / "b.md").read_text(encoding="utf-8"))  # undone back to the saved text
    j.sync(unsaved([a, b]), 2)
    assert [e.path.name for e in pending(folder)] == ["a.md"]
    a.save()
    j.sync(unsaved([a, b]), 3)
    assert pending(folder) == []
    assert not journal_dir(folder).exists()


def test_a_stale_snapshot_never_overwrites_a_newer_one(folder):
    j = Journal(folder)
    newer = edited(folder / "a.md", "Newer")
    older = edited(folder / "a.md", "Older")
    assert j.sync(unsaved([newer]), 5)
    assert not j.sync(unsaved([older]), 4)  # a worker that lost the race
    assert b'"Newer"' in pending(folder)[0].data


def test_binary_safe_entry_round_trip(tmp_path):
    entry = JournalEntry(tmp_path / "x.md", b"\xff\xfe not utf-8", "0" * 64, 1.5)
    back = JournalEntry.from_json(json.loads(json.dumps(entry.to_json())))
    assert back is not None and back.data == entry.data and back.timestamp == 1.5


def test_conflict_when_the_file_changed_or_went_since(folder):
    a, b = edited(folder / "a.md"), edited(folder / "b.md")
    Journal(folder).sync(unsaved([a, b]), 1)
    (folder / "a.md").write_text(DOC.replace("Body.", "Changed by another program."), encoding="utf-8")
    (folder / "b.md").unlink()
    entries = {e.path.name: e for e in pending(folder)}
    assert entries["a.md"].state() == "changed" and entries["a.md"].conflict
    assert entries["b.md"].state() == "deleted" and entries["b.md"].conflict
    diff = entries["a.md"].diff("a.md")
    assert "-Changed by another program." in diff and "+Body." in diff and "+title: \"Edited\"" in diff


def test_the_write_is_atomic_a_failed_write_keeps_the_previous_entry(folder, monkeypatch):
    j = Journal(folder)
    j.sync(unsaved([edited(folder / "a.md", "First")]), 1)
    real_replace = os.replace

    def full_disk(src, dst):
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(journal_module.os, "replace", full_disk)
    with pytest.raises(OSError):
        j.sync(unsaved([edited(folder / "a.md", "Second")]), 2)
    monkeypatch.setattr(journal_module.os, "replace", real_replace)
    (entry,) = pending(folder)
    assert b'"First"' in entry.data
    assert [p.name for p in journal_dir(folder).iterdir()] == [entry_file(folder, folder / "a.md").name]  # no temp left


def test_damaged_and_foreign_entries_are_skipped(folder):
    j = Journal(folder)
    j.sync(unsaved([edited(folder / "a.md")]), 1)
    d = journal_dir(folder)
    (d / "broken.json").write_bytes(b"{not json")
    (d / "other.json").write_text(json.dumps({"format": 99}), encoding="utf-8")
    outside = JournalEntry(Path("/etc/passwd"), b"x", "0" * 64, 0.0)
    (d / "outside.json").write_text(json.dumps(outside.to_json()), encoding="utf-8")
    assert [e.path.name for e in pending(folder)] == ["a.md"]
    clear(folder)
    assert not d.exists()


def test_close_clears_when_clean_and_keeps_the_last_edits_otherwise(folder):
    j = Journal(folder)
    j.sync(unsaved([edited(folder / "a.md", "Old")]), 1)
    j.close(unsaved([edited(folder / "a.md", "Latest")]))
    assert b'"Latest"' in pending(folder)[0].data
    assert not j.sync(unsaved([]), 99)  # closed: nothing written after
    assert pending(folder)
    Journal(folder).close([])
    assert pending(folder) == []


def test_recover_restores_the_text_as_one_undoable_edit(folder):
    Journal(folder).sync(unsaved([edited(folder / "a.md"), edited(folder / "b.md")]), 1)
    (folder / "b.md").unlink()
    ws = Workspace.load(folder)
    stack = UndoStack()
    record = stack.run(ws, recover, pending(folder))
    assert len(record.changes) == 2
    a = ws.document(folder / "a.md")
    assert a.dirty and 'title: "Edited"' in a.text
    b = ws.document(folder / "b.md")
    assert b is not None and b.dirty and b.path == folder / "b.md"  # added back, spelled as the workspace does
    assert (folder / "a.md").read_text(encoding="utf-8") == DOC and not (folder / "b.md").exists()  # nothing written
    stack.undo(ws)
    assert not a.dirty and a.text == DOC


def test_mark_saved_keeps_an_edit_made_after_the_snapshot_dirty(folder):
    doc = edited(folder / "a.md", "Written")
    text, data = doc.text, doc.encoded()
    doc.replace_text(doc.text.replace("Body.", "Typed during the save."))
    assert not doc.mark_saved(text, data)
    assert doc.dirty and doc.raw == data
    doc.replace_text(text)  # undone back to what was written: clean
    assert not doc.dirty
