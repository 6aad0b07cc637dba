"""Changes other programs make to the folder: what the workbench does about each.

``plan_reactions`` (core) decides per change (rescan, mark deleted, reload, ask); this
controller carries the plan out: a clean held copy follows the file, a document with unsaved
edits asks first (once per document while the question is open).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.watch import plan_reactions
from ctxfst_tui.ui.messages import DiskChanged
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.status_bar import StatusBar
from ctxfst_tui.ui.screens.workbench.controller import Controller

if TYPE_CHECKING:
    from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen


class DiskReactions(Controller):
    """The workbench's answers to the folder watcher."""

    def __init__(self, screen: "WorkbenchScreen") -> None:
        super().__init__(screen)
        self.asking: set[Path] = set()  # documents changed on disk whose "reload?" question is open

    def changed(self, message: DiskChanged) -> None:
        screen = self.screen
        tree = screen.query_one(DocumentTree)
        for change in message.changes:
            if change.kind != "deleted" and not self.session.is_dirty(change.path):
                # A novel saved by the writer's editor (often a new file renamed over the old one):
                # the Summary tab reads it again, and a summarized one is re-summarized.
                screen.summary.saved(change.path)
        for reaction in plan_reactions(message.changes, screen.current, self.session.dirty_paths):
            path = reaction.path
            if reaction.action == "rescan":
                screen.workbench.scan_folder(screen.root, screen)
            elif path is None:
                continue
            elif reaction.action == "mark-deleted":
                tree.mark_deleted(path)
                if reaction.is_open:
                    screen.query_one(StatusBar).show_document(self.session.label(path), deleted=True)
                kept = self.session.is_dirty(path)
                self.session.drop(path)  # a clean held copy goes; unsaved edits stay (ctrl+s writes them again)
                if reaction.is_open or kept:
                    more = " Its unsaved edits are kept; ctrl+s writes it again." if kept else ""
                    screen.notify(f"{self.session.label(path)} was deleted on disk.{more}", severity="warning", timeout=6)
                if not kept:
                    screen.editing.analyse()
            elif reaction.action == "reload":
                tree.mark_deleted(path, False)
                self.reload(path)
            elif reaction.action == "ask":
                tree.mark_deleted(path, False)
                self.ask_reload(path)

    def reload(self, path: Path) -> None:
        """Take the file's new text: the open document through the open worker, any other held one here."""
        screen = self.screen
        if path == screen.current:
            screen.open(path, reloaded=True, from_disk=True)
            return
        if self.session.document(path) is None:
            return  # not held (e.g. a .txt): the tree's status is refreshed when it is opened
        try:
            doc = Document.load(path)
        except OSError:
            return  # gone again: its "deleted" follows
        if self.session.replace_document(doc):
            screen.editing.edited(refresh_open=False)

    def ask_reload(self, path: Path) -> None:
        if path in self.asking:
            return
        self.asking.add(path)
        screen = self.screen

        def answered(yes: bool | None) -> None:
            self.asking.discard(path)
            if not yes:
                screen.notify(f"Kept your edits of {self.session.label(path)}; saving will overwrite the file.", timeout=4)
                return
            if path == screen.current:
                screen.discard = path  # the document's load may drop the edits now
                screen.open(path, reloaded=True, from_disk=True)
                return
            try:
                doc = Document.load(path)
            except OSError as exc:
                screen.notify(f"{self.session.label(path)}: {exc.strerror or exc}", title="Not reloaded", severity="error")
                return
            if self.session.replace_document(doc):
                screen.editing.edited(refresh_open=False)

        question = (f"[b]{self.session.label(path)}[/] was changed on disk by another program, "
                    "and it has unsaved changes here.\n\nRead it again from disk and drop your edits?")
        screen.app.push_screen(ConfirmScreen(question, yes="Reload from disk", no="Keep my edits", focus_yes=False), answered)
