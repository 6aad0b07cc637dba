"""Pilot test of the disk watch: reload, ask, own saves, deleted, added (the App started with watch_disk=True)."""
from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from ctxfst_tui.core.workspace.watch import FolderWatcher
from ctxfst_tui.ui import app as app_module
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.workbench import disk as wb
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from pilot import SIZE, VALID, open_document, settle, until


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """valid.md (opened, changed, saved) and other.md (deleted): the smallest folder that shows it."""
    (tmp_path / "valid.md").write_text(VALID, encoding="utf-8")
    (tmp_path / "other.md").write_text(VALID.replace("A valid document", "Another document"), encoding="utf-8")
    return tmp_path


async def test_disk_changes_reach_the_workbench(folder: Path, monkeypatch) -> None:
    seen = []
    real = wb.plan_reactions

    def spy(changes, open_path, dirty):
        seen.extend(changes)
        return real(changes, open_path, dirty)

    monkeypatch.setattr(wb, "plan_reactions", spy)
    # The App's watcher with the short timings of test_watch.py (not 0.8 s debounce, 1 s settle per change).
    monkeypatch.setattr(app_module, "FolderWatcher", partial(FolderWatcher, debounce_ms=300, step_ms=50, settle_ms=200))
    app = WorkbenchApp(folder, watch_disk=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await until(pilot, lambda: app.watcher is not None and app.watcher.ready.is_set())
        screen = app.screen
        tree = screen.query_one(DocumentTree)
        await open_document(app, pilot, "valid.md")
        path = folder / "valid.md"

        # changed outside, no unsaved edits: reloaded (panes and the held document)
        path.write_text(VALID.replace("A valid document", "Changed outside"), encoding="utf-8")
        await until(pilot, lambda: screen.current_doc is not None and "Changed outside" in screen.current_doc.text
                    and "Changed outside" in app.session.document(path).text)

        # changed outside while edited here: asked; yes drops the edits
        doc = app.session.document(path)
        doc.replace_text(doc.text.replace("Python is a language.", "Edited here."))
        assert app.session.is_dirty(path)
        path.write_text(VALID.replace("A valid document", "Changed outside again"), encoding="utf-8")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(app, pilot)
        await until(pilot, lambda: "Changed outside again" in app.session.document(path).text)
        assert not app.session.is_dirty(path)

        # our own save is not reported
        seen.clear()
        doc = app.session.document(path)
        doc.replace_text(doc.text.replace("Python is a language.", "Saved by us."))
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert b"Saved by us." in path.read_bytes()

        # deleted: marked in the tree, dropped from the session; added: the tree is rescanned
        (folder / "other.md").unlink()
        await until(pilot, lambda: tree.deleted(folder / "other.md"))
        assert app.session.document(folder / "other.md") is None
        (folder / "new.md").write_text("# New\n")
        await until(pilot, lambda: folder / "new.md" in tree.documents)
        assert all(c.path != path for c in seen), seen  # (the sentinel: later changes did arrive)
