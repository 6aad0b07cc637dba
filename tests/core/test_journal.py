"""The journal of unsaved edits (core, no UI): entries on real files in the private state dir."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxfst_tui.config import state_dir
from ctxfst_tui.core.workspace import journal as journal_module
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.undo import UndoStack
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.workspace.journal import (
    Journal,
    JournalEntry,
    all_entries,
    claim,
    clear,
    entry_file,
    journal_dir,
    pending,
    recover,
    sha256,
    unsaved,
)

ROOT = Path(__file__).resolve().parents[2]
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
    assert j.session is not None and j.session.parent == journal_dir(folder)
    files = sorted(j.session.iterdir())
    assert files == [j.entry_file(folder / "a.md"), j.session / "lock"]
    saved = json.loads(files[0].read_text(encoding="utf-8"))
    assert saved["path"] == str((folder / "a.md").resolve())
    assert saved["base_sha256"] == sha256((folder / "a.md").read_bytes())
    assert pending(folder) == []  # this journal's session is live (locked): nothing to offer
    j.close(unsaved([a, clean]))  # the app ends with the edit unsaved: its session is now an ended one
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
    assert len(j.entries()) == 2
    b.replace_text((folder / "b.md").read_text(encoding="utf-8"))  # undone back to the saved text
    j.sync(unsaved([a, b]), 2)
    assert [e.path.name for e in j.entries()] == ["a.md"]
    a.save()
    j.sync(unsaved([a, b]), 3)
    assert j.entries() == [] and all_entries(folder) == []
    j.close([])
    assert not journal_dir(folder).exists()


def test_a_stale_snapshot_never_overwrites_a_newer_one(folder):
    j = Journal(folder)
    newer = edited(folder / "a.md", "Newer")
    older = edited(folder / "a.md", "Older")
    assert j.sync(unsaved([newer]), 5)
    assert not j.sync(unsaved([older]), 4)  # a worker that lost the race
    assert b'"Newer"' in j.entries()[0].data


def test_binary_safe_entry_round_trip(tmp_path):
    entry = JournalEntry(tmp_path / "x.md", b"\xff\xfe not utf-8", "0" * 64, 1.5)
    back = JournalEntry.from_json(json.loads(json.dumps(entry.to_json())))
    assert back is not None and back.data == entry.data and back.timestamp == 1.5


def test_conflict_when_the_file_changed_or_went_since(folder):
    a, b = edited(folder / "a.md"), edited(folder / "b.md")
    Journal(folder).close(unsaved([a, b]))
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
    (entry,) = j.entries()
    assert b'"First"' in entry.data
    assert sorted(p.name for p in j.session.iterdir()) == sorted([j.entry_file(folder / "a.md").name, "lock"])  # no temp


def test_damaged_and_foreign_entries_are_skipped(folder):
    j = Journal(folder)
    j.close(unsaved([edited(folder / "a.md")]))
    d = j_dir = journal_dir(folder)
    (d / "broken.json").write_bytes(b"{not json")
    (d / "other.json").write_text(json.dumps({"format": 99}), encoding="utf-8")
    outside = JournalEntry(Path("/etc/passwd"), b"x", "0" * 64, 0.0)
    (d / "outside.json").write_text(json.dumps(outside.to_json()), encoding="utf-8")
    assert [e.path.name for e in pending(folder)] == ["a.md"]
    clear(folder)
    assert not j_dir.exists()


def test_close_clears_when_clean_and_keeps_the_last_edits_otherwise(folder):
    j = Journal(folder)
    j.sync(unsaved([edited(folder / "a.md", "Old")]), 1)
    j.close(unsaved([edited(folder / "a.md", "Latest")]))
    assert b'"Latest"' in pending(folder)[0].data
    assert not j.sync(unsaved([]), 99)  # closed: nothing written after
    assert pending(folder)
    Journal(folder).close([])  # another app ending clean leaves the ended session alone
    assert pending(folder)
    clear(folder)
    assert pending(folder) == []


def test_recover_restores_the_text_as_one_undoable_edit(folder):
    Journal(folder).close(unsaved([edited(folder / "a.md"), edited(folder / "b.md")]))
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


# ---------------------------------------------------------------- sessions: one per running app

CHILD = r"""
import sys, time
from pathlib import Path
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.journal import Journal, unsaved
folder, title = Path(sys.argv[1]), sys.argv[2]
doc = Document.load(folder / "a.md")
doc.replace_text(doc.text.replace('title: "Notes"', f'title: "{title}"'))
journal = Journal(folder)
journal.sync(unsaved([doc]), 1)
print(journal.session, flush=True)
time.sleep(120)
"""


def journaling_child(folder: Path, title: str) -> tuple[subprocess.Popen, Path]:
    """A real process that journals an edit of a.md through the API and then waits (holding its lock)."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(folder), title], stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, text=True)
    line = proc.stdout.readline().strip()
    assert line, f"the child ended: {proc.wait(10)}"
    return proc, Path(line)


def kill_9(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(10) == -signal.SIGKILL


def test_a_running_process_s_entries_are_not_pending_until_it_is_killed(folder):
    proc, session = journaling_child(folder, "Child")
    try:
        assert session.parent == journal_dir(folder) and (session / "lock").is_file()
        assert [e.path.name for e in all_entries(folder)] == ["a.md"]  # on disk within the child's session
        assert pending(folder) == []  # but the child runs: its lock is held
        ours = Journal(folder)  # a second app on the same folder journals into its own session
        ours.sync(unsaved([edited(folder / "b.md", "Ours")]), 1)
        assert ours.session != session and pending(folder) == []
        assert claim(folder).entries == [] and session.is_dir()  # nothing claimed, nothing removed
    finally:
        kill_9(proc)
    (entry,) = pending(folder)  # the kernel dropped the lock with the process
    assert entry.path.name == "a.md" and b'"Child"' in entry.data and entry.older == 0
    assert [e.path.name for e in all_entries(folder)] == ["a.md", "b.md"]
    c = claim(folder)  # an app offering it holds the dead session's lock: no other app offers it too
    assert [e.path.name for e in c.entries] == ["a.md"] and pending(folder) == []
    c.remove()  # recovered or discarded: the dead session's folder goes
    assert not session.exists() and pending(folder) == []
    assert [e.path.name for e in ours.entries()] == ["b.md"]  # the live session is untouched
    ours.close([])
    assert not journal_dir(folder).exists()


def test_two_dead_sessions_with_the_same_document_offer_the_newest(folder):
    first, s1 = journaling_child(folder, "First")
    kill_9(first)
    time.sleep(0.05)
    second, s2 = journaling_child(folder, "Second")
    kill_9(second)
    legacy = JournalEntry((folder / "a.md").resolve(), b"oldest", sha256((folder / "a.md").read_bytes()), 1.0)
    entry_file(folder, folder / "a.md").write_text(json.dumps(legacy.to_json()), encoding="utf-8")  # the flat layout
    (entry,) = pending(folder)
    assert b'"Second"' in entry.data and entry.older == 2
    c = claim(folder)
    assert len(c.sessions) == 3
    c.remove()
    assert not s1.exists() and not s2.exists() and not journal_dir(folder).exists()


def test_an_ended_session_without_entries_is_removed(folder):
    j = Journal(folder)
    j.sync(unsaved([edited(folder / "a.md")]), 1)
    j.sync(unsaved([]), 2)  # undone: the session stays (locked) but holds nothing
    session = j.session
    assert session.is_dir() and j.entries() == []
    j.release()  # let go of the lock, leaving the session on disk: what the end of the process does
    assert pending(folder) == [] and not session.exists()
