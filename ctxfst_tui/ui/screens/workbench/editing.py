"""Editing on the workbench: entity merges and edits, alias changes, fixes, undo/redo, save, convert.

The entity operations and fixes are fast: they run here, on the UI thread, on the session's
in-memory workspace (one undoable edit each); writing files goes through the App's workers.
After every edit, undo or redo, :meth:`Editing.edited` refreshes what depends on the
workspace: the open document, the entity table and merge suggestions, the diagnosis, the
tree's statuses and unsaved markers.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ctxfst_tui.core.chunking.convert import default_target
from ctxfst_tui.core.chunking.preview import Budget
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.text.plural import count
from ctxfst_tui.core.workspace.alias_diff import diff_aliases
from ctxfst_tui.core.workspace.entity_ops import (
    EntityOpError,
    delete_entity,
    merge_entities,
    rename_entity_id,
    update_entity,
)
from ctxfst_tui.core.workspace.fixes import FixError, apply_fix
from ctxfst_tui.core.workspace.undo import UndoRecord
from ctxfst_tui.services.analysis import DiagnosisItem, EntityInfo
from ctxfst_tui.ui.messages import DocumentConverted, WorkspaceSaved
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.screens.modals.diff import DiffScreen
from ctxfst_tui.ui.screens.modals.entity_edit import AliasEditScreen, EntityEditScreen
from ctxfst_tui.ui.widgets.chunks.preview import ChunkPreview
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.status_bar import StatusBar
from ctxfst_tui.ui.screens.workbench.controller import Controller


class Editing(Controller):
    """The workbench's edits of the session, and what follows each one."""

    # ------------------------------------------------------------ one edit, and what follows
    def apply(self, verb: str, edit: Callable[[], UndoRecord | None], what: str = "", detail: str = "") -> None:
        """Run one edit of the session; a refused edit is a notification, never a traceback.

        ``detail``: a line added to the notification (e.g. how a model job went).
        """
        try:
            record = edit()
        except (EntityOpError, FixError) as exc:
            self.notify(str(exc), title=f"Not {verb.lower()}" if verb not in ("Undo", "Redo") else f"Cannot {verb.lower()}",
                        severity="error", timeout=8)
            return
        if record is None:
            self.notify(what or "Nothing to do.", timeout=2)
            return
        if not record.changes:
            self.notify(f"Nothing changed ({record.description})." + (f"\n{detail}" if detail else ""), timeout=6 if detail else 3)
            return
        hint = "U or ctrl+y redoes it" if verb == "Undo" else "u undoes it"
        changed = {p for p in record.paths if p is not None}
        unsaved = len(changed & self.session.dirty_paths)
        if changed and not unsaved:  # e.g. undone back to the text on disk: nothing to save
            done = {"Undo": "Undone: ", "Redo": "Redone: "}.get(verb, "")
            text = f"{done}{record.description} — back to the saved text, nothing to save; {hint}."
        elif unsaved < len(changed):
            text = f"{record.description} — {count(len(changed), 'document')} changed, {unsaved} not yet saved; {hint}."
        else:
            text = f"{record.description} — {count(len(record.changes), 'document')} changed, not yet saved; {hint}."
        self.notify(text + (f"\n{detail}" if detail else ""), title=verb, timeout=6 if detail else 4)
        self.edited(paths=set(record.paths))

    def edited(self, paths: set[Path | None] | None = None, refresh_open: bool = True) -> None:
        """Refresh everything that depends on the workspace after it changed."""
        screen = self.screen
        self.show_unsaved()
        if refresh_open and screen.current is not None and (paths is None or screen.current in paths):
            screen.open(screen.current, reloaded=True)
        self.analyse()

    def analyse(self) -> None:
        screen = self.screen
        if self.session.ready:
            screen.workbench.analyse_workspace(self.session.snapshots(), screen.root, self.session.version, screen)

    def show_unsaved(self) -> None:
        screen = self.screen
        dirty = self.session.dirty_paths
        screen.query_one(DocumentTree).set_unsaved(dirty)
        base = str(screen.root.resolve())
        n = len(dirty)
        screen.query_one(StatusBar).show_unsaved(n)
        screen.app.sub_title = f"{base}  ·  ● {n} unsaved (ctrl+s saves)" if n else base

    def undo(self) -> None:
        self.apply("Undo", self.session.undo_last, "Nothing to undo.")

    def redo(self) -> None:
        self.apply("Redo", self.session.redo_last, "Nothing to redo.")

    # ------------------------------------------------------------ entities and fixes
    def merge(self, into: str, merged: list[str], tier: str) -> None:
        """Show the merge's diff; merge once it is confirmed."""
        try:
            diff = self.session.preview(merge_entities, into, merged)
        except EntityOpError as exc:
            self.notify(str(exc), title="Cannot merge", severity="error", timeout=8)
            return
        title = f"Merge [b]{', '.join(merged)}[/] into [b]{into}[/]?"
        note = None
        if tier != "sure":
            note = "A suggestion to review: these entities only look alike. Check the diff before merging."

        def answered(yes: bool | None) -> None:
            if yes:
                self.apply("Merged", lambda: self.session.run(merge_entities, into, merged))

        self.screen.app.push_screen(DiffScreen(title, diff, yes="Merge", note=note), answered)

    def edit_requested(self, entity: EntityInfo, what: str) -> None:
        """``what``: "entity" (id, name, type), "aliases" or "delete"; each asks first."""
        app = self.screen.app
        if what == "entity":
            app.push_screen(EntityEditScreen(entity), lambda result: self.edit_entity(entity, result))
        elif what == "aliases":
            if not entity.declared:
                self.notify(f"{entity.id} is declared nowhere: it has no aliases to edit.", severity="warning", timeout=4)
                return
            app.push_screen(AliasEditScreen(entity), lambda result: self.edit_aliases(entity, result))
        elif what == "delete":
            links = f"{entity.chunks} chunk link{'s' if entity.chunks != 1 else ''}"
            question = (
                f"Delete [b]{entity.id}[/]? Its declarations and {links} (and any state references) "
                f"are removed from {len(entity.documents)} document{'s' if len(entity.documents) != 1 else ''}.\n\n"
                "Nothing is written until you save; u undoes it."
            )

            def answered(yes: bool | None) -> None:
                if yes:
                    self.apply("Deleted", lambda: self.session.run(delete_entity, entity.id))

            app.push_screen(ConfirmScreen(question, yes="Delete"), answered)

    def edit_entity(self, entity: EntityInfo, result: dict | None) -> None:
        if not result:
            return
        steps: list[tuple[Callable[..., Any], tuple, dict]] = []
        what = []
        if "name" in result or "type" in result:
            steps.append((update_entity, (entity.id,), {"name": result.get("name"), "type": result.get("type")}))
            what += [f"{k} '{result[k]}'" for k in ("name", "type") if k in result]
        if "id" in result:
            steps.append((rename_entity_id, (entity.id, result["id"]), {}))
            what.append(f"id '{result['id']}'")
        description = f"set {' and '.join(what)} of {entity.id}"
        self.apply("Edited", lambda: self.session.run_all(description, steps))

    def edit_aliases(self, entity: EntityInfo, result: dict | None) -> None:
        if result is None:
            return
        diff = diff_aliases(entity.id, list(entity.aliases), result.get("aliases", []))
        if diff:
            self.apply("Aliases", lambda: self.session.run_all(diff.description, diff.steps))

    def fix(self, item: DiagnosisItem) -> None:
        self.apply("Fixed", lambda: self.session.run(apply_fix, dict(item.fix), path=item.path))

    # ------------------------------------------------------------ files
    def save(self) -> None:
        if not self.session.ready or not self.session.dirty_paths:
            self.notify("Nothing to save: every document matches its file.", timeout=2)
            return
        self.screen.workbench.save_workspace(self.session.workspace, self.screen)

    def saved(self, message: WorkspaceSaved) -> None:
        screen = self.screen
        edited = screen.workbench.save_finished(message)  # only documents still holding the written text are clean
        self.show_unsaved()
        if edited:
            self.notify(f"{', '.join(self.session.label(p) for p in edited)}: edited while saving; "
                        "those edits are not saved yet (ctrl+s saves them).", severity="warning", timeout=6)
        if message.error:
            self.notify(message.error, title="Not saved", severity="error", timeout=8)
        elif message.written:
            names = ", ".join(self.session.label(p) for p in message.written[:3]) + (" …" if len(message.written) > 3 else "")
            self.notify(f"Saved {count(len(message.written), 'document')}: {names}", title="Saved", timeout=4)
        for path in message.written:
            screen.summary.saved(path)
        if screen.current is not None and (message.written and screen.current in message.written):
            screen.open(screen.current, reloaded=True)

    def convert(self, why: str = "") -> None:
        """Ask, then write the open plain document as CtxFST with the chunks shown.

        ``why``: what the question starts with when another action needs the conversion first."""
        screen = self.screen
        if screen.current is None:
            self.notify("Select a document first.", severity="warning", timeout=2)
            return
        if screen.current_has_tags:
            self.notify("This is already a CtxFST document: its <Chunk> tags are the boundaries.", severity="warning")
            return
        source = screen.current
        target = default_target(source)
        budget = screen.budget or Budget(*screen.query_one(ChunkPreview).budget)
        n = len(screen.spans)
        if why:
            question = f"{why}\n\nConvert it now, with the {count(n, 'chunk')} shown ({budget.size} {budget.unit})?"
        else:
            question = f"Convert [b]{source.name}[/] to CtxFST with the {count(n, 'chunk')} shown ({budget.size} {budget.unit})?"
        question += f"\n\nIt will be written to [b]{target}[/]."
        if target.exists():
            question += "\n\n[b $warning]That file exists and will be overwritten.[/]"
            if self.session.is_dirty(target):
                question += "\n[b $error]It also has unsaved edits here, which will be lost.[/]"

        def answered(yes: bool | None) -> None:
            if yes:
                screen.workbench.convert_document(source, budget, target, screen)

        screen.app.push_screen(ConfirmScreen(question, yes="Convert"), answered)

    def converted(self, message: DocumentConverted) -> None:
        if message.error:
            self.notify(f"{message.source.name}: {message.error}", title="Not converted", severity="error", timeout=8)
            return
        self.notify(f"Wrote {message.target} ({count(message.chunks, 'chunk')}).", title="Converted", timeout=5)
        held = self.session.document(message.target)
        if held is not None and message.target is not None:
            # The file was overwritten on disk: hold the new text (the old edits are gone).
            self.session.replace_document(Document.load(message.target))
        self.screen.cursor_to = message.target  # the tree is listed again: its cursor on the new file
        self.screen.workbench.scan_folder(self.screen.root, self.screen)
