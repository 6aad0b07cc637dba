"""Pilot tests for the entity panel: the table, suggested merges with their diff, edits, undo/redo, save, quit."""
from __future__ import annotations

from pathlib import Path

import pytest

from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.screens.modals.diff import DiffScreen
from ctxfst_tui.ui.screens.modals.entity_edit import (
    AliasEditScreen,
    EntityEditScreen,
    split_aliases,
)
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.document.summary import DocumentSummary
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.entities.panel import ClusterList, EntityPanel, EntityTable
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from pilot import SIZE, open_document, settle, started

FRONTEND = """\
---
title: "Frontend notes"
# Entities shared with the backend notes: keep the ids in step.
entities:
  - id: entity:javascript
    name: JavaScript  # the language, not the runtime
    type: skill
    aliases: [ECMAScript]
  - id: entity:js
    name: JS
    type: skill
  - id: entity:react
    name: React
    type: framework
chunks:
  - id: skill:react-components
    tags: [Frontend, React]
    entities: [entity:react, entity:js]  # the components are plain JS
    context: "How the dashboard's React components are organised, typed and tested, and which state they keep"
---

<Chunk id="skill:react-components">
## React components

Function components with hooks, written in JavaScript; shared state goes through a context.
</Chunk>
"""

BACKEND = """\
---
title: "Backend notes"
entities:
  - id: entity:js
    name: JS
    type: skill
    description: "Scripts run by the build"
  - id: entity:node
    name: Node.js
    type: platform
chunks:
  - id: skill:build-scripts
    tags: [Build]
    entities: [entity:js, entity:node]
    context: "Which build steps are scripts run on Node.js, and how they are tested before a release"
---

<Chunk id="skill:build-scripts">
## Build scripts

The build runs JavaScript scripts on Node.js; each script has a test.
</Chunk>
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "frontend.md").write_text(FRONTEND, encoding="utf-8")
    (tmp_path / "backend.md").write_text(BACKEND, encoding="utf-8")
    return tmp_path


def table(app) -> EntityTable:
    return app.screen.query_one(EntityTable)


def clusters(app) -> ClusterList:
    return app.screen.query_one(ClusterList)


async def show_entities(app, pilot) -> None:
    await pilot.press("3")
    await settle(app, pilot)
    assert app.focused is table(app)


async def to_clusters(app, pilot) -> None:
    await pilot.press("tab")
    assert app.focused is clusters(app)


def on_disk(folder: Path) -> tuple[str, str]:
    return (folder / "frontend.md").read_text(encoding="utf-8"), (folder / "backend.md").read_text(encoding="utf-8")


async def test_the_table_suggestions_edits_delete_merge_undo_redo_save_and_quit(folder, monkeypatch):
    """One app walks the panel; each step but the last leaves the workspace as it found it (a
    cancel, or an undo), so the next one starts from the two documents as they are on disk."""
    original = on_disk(folder)
    app = WorkbenchApp(folder)
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        notify = app.notify
        monkeypatch.setattr(app, "notify", lambda message, **kw: (notes.append(str(message)), notify(message, **kw)))

        # -- Undo with nothing to undo, redo with nothing to redo, save with nothing to save.
        await pilot.press("u", "U", "ctrl+s")
        await settle(app, pilot)
        assert app.is_running
        assert on_disk(folder) == (FRONTEND, BACKEND)

        # -- The entity table and the suggested merges.
        await show_entities(app, pilot)
        t = table(app)
        assert t.ids == ["entity:js", "entity:node", "entity:javascript", "entity:react"]
        js = next(e for e in t.entities if e.id == "entity:js")
        assert js.chunks == 2 and set(js.documents) == {"backend.md", "frontend.md"}
        row = [str(c) for c in t.get_row("entity:javascript")]
        assert row[:4] == ["entity:javascript", "JavaScript", "skill", "ECMAScript"]
        shown = clusters(app).clusters
        sure = [c for c in shown if set(c.members) == {"entity:javascript", "entity:js"}]
        assert sure and sure[0].tier == "sure" and sure[0].canonical == "entity:javascript"
        assert "sure" in str(clusters(app).border_subtitle)

        # -- The canonical can be cycled before merging; escape in the diff changes nothing.
        await to_clusters(app, pilot)
        cluster = clusters(app).current
        assert clusters(app).canonical(cluster) == "entity:javascript"
        await pilot.press("c")
        assert clusters(app).canonical(cluster) == "entity:js"
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, DiffScreen)
        assert "+    entities: [entity:react, entity:js]" not in app.screen.diff
        assert "-  - id: entity:javascript" in app.screen.diff
        await pilot.press("escape")  # cancel: nothing changes
        await settle(app, pilot)
        assert "entity:javascript" in table(app).ids
        assert not app.session.dirty_paths
        await pilot.press("c")  # (back to the suggested canonical for the merge below)
        assert clusters(app).canonical(clusters(app).current) == "entity:javascript"

        # -- Edit (rename and new id) and aliases are one undoable edit each.
        await show_entities(app, pilot)
        t = table(app)
        assert t.cursor_row == 0
        for _ in range(t.ids.index("entity:react")):
            await pilot.press("down")
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EntityEditScreen)
        await pilot.press("ctrl+u", *"React.js")  # the name field has focus
        app.screen.query_one("#entity-id").value = "entity:reactjs"
        await pilot.press("enter")
        await settle(app, pilot)
        ids = table(app).ids
        assert "entity:reactjs" in ids and "entity:react" not in ids
        react = next(e for e in table(app).entities if e.id == "entity:reactjs")
        assert react.name == "React.js"
        assert "[entity:reactjs, entity:js]" in app.session.document(folder / "frontend.md").text
        await pilot.press("u")  # one undo undoes both the rename and the new id
        await settle(app, pilot)
        assert "entity:react" in table(app).ids
        assert next(e for e in table(app).entities if e.id == "entity:react").name == "React"
        # Aliases: edit the comma-separated list (add two, drop one).
        table(app).highlight("entity:javascript")
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AliasEditScreen)
        await pilot.press("ctrl+u", *"JS6, es")
        await pilot.press("enter")
        await settle(app, pilot)
        js = next(e for e in table(app).entities if e.id == "entity:javascript")
        assert js.aliases == ("JS6", "es")
        await pilot.press("u")
        await settle(app, pilot)
        assert next(e for e in table(app).entities if e.id == "entity:javascript").aliases == ("ECMAScript",)

        # -- Delete asks first; a refused edit is a notification.
        table(app).highlight("entity:node")
        await pilot.press("delete")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "entity:node" in app.screen.question
        await pilot.press("n")
        await settle(app, pilot)
        assert "entity:node" in table(app).ids
        await pilot.press("delete")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert "entity:node" not in table(app).ids
        assert "entity:node" not in app.session.document(folder / "backend.md").text
        # Renaming an id to one that exists is refused by the core: a notification, no traceback.
        table(app).highlight("entity:js")
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#entity-id").value = "entity:javascript"
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.is_running and isinstance(app.screen, WorkbenchScreen)
        assert any("already exists" in n for n in notes)
        assert "entity:js" in table(app).ids
        await pilot.press("u")  # (the delete undone: the merge below starts from the disk's state)
        await settle(app, pilot)
        assert "entity:node" in table(app).ids and not app.session.dirty_paths

        # -- The merge shows its diff; then undo, redo, save and quit.
        await open_document(app, pilot, "frontend.md")
        await show_entities(app, pilot)
        await to_clusters(app, pilot)
        await pilot.press("m")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, DiffScreen)
        assert "entity:js" in modal.title_text and "entity:javascript" in modal.title_text
        assert "-  - id: entity:js" in modal.diff
        assert "-    entities: [entity:react, entity:js]  # the components are plain JS" in modal.diff
        assert "+    entities: [entity:react, entity:javascript]  # the components are plain JS" in modal.diff
        assert "--- backend.md" in modal.diff and "--- frontend.md" in modal.diff
        await pilot.press("y")
        await settle(app, pilot)
        assert app.screen is screen
        # The workspace changed in memory: table, suggestions, open document, chunk preview.
        assert "entity:js" not in table(app).ids
        assert not any("entity:js" in c.members for c in clusters(app).clusters)
        source = screen.query_one(SourceView)
        assert "entities: [entity:react, entity:javascript]" in source.text
        assert "- id: entity:js\n" not in source.text
        assert "# Entities shared with the backend notes" in source.text
        assert "entity:javascript" in screen.query_one(ChunkMap).text
        assert "Unsaved" in screen.query_one(DocumentSummary).text
        # ... but not on disk, and the tree and the header say so.
        assert on_disk(folder) == original
        tree = screen.query_one(DocumentTree)
        assert tree.unsaved(folder / "frontend.md") and tree.unsaved(folder / "backend.md")
        assert "2 unsaved" in app.sub_title
        node = next(tree.get_node_at_line(i) for i in range(tree.last_line + 1) if tree.get_node_at_line(i).data == folder / "frontend.md")
        assert tree.render_label(node, tree.rich_style, tree.rich_style).plain.endswith("●")

        await pilot.press("u")  # undo (an app key: works from any pane)
        await settle(app, pilot)
        assert "entity:js" in table(app).ids
        assert source.text == original[0]
        assert not tree.unsaved(folder / "frontend.md") and "unsaved" not in app.sub_title

        await pilot.press("ctrl+y")  # redo
        await settle(app, pilot)
        assert "entity:js" not in table(app).ids
        assert "entities: [entity:react, entity:javascript]" in source.text

        await pilot.press("ctrl+s")
        await settle(app, pilot)
        front, back = on_disk(folder)
        assert "entities: [entity:react, entity:javascript]  # the components are plain JS" in front
        assert "# Entities shared with the backend notes: keep the ids in step." in front
        assert "name: JavaScript  # the language, not the runtime" in front
        assert "entity:js," not in back and "entities: [entity:javascript, entity:node]" in back
        assert 'description: "Scripts run by the build"' in back  # the replaced entry keeps its fields
        assert not tree.unsaved(folder / "frontend.md") and "unsaved" not in app.sub_title

        # Undo after saving: unsaved again, so quitting asks first.
        await pilot.press("u")
        await settle(app, pilot)
        assert "1 unsaved" not in app.sub_title and "2 unsaved" in app.sub_title
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "unsaved" in app.screen.question
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running and app.screen is screen
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert not app.is_running
    # Quitting without saving left the saved merge on disk.
    assert "entity:javascript]" in on_disk(folder)[0]


async def test_reload_of_an_edited_document_asks_before_dropping_the_edits(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "frontend.md")
        await show_entities(app, pilot)
        await to_clusters(app, pilot)
        await pilot.press("m", "y")
        await settle(app, pilot)
        tree = screen.query_one(DocumentTree)
        assert tree.unsaved(folder / "frontend.md")
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("enter")  # Cancel has the focus: Enter keeps the edits
        await settle(app, pilot)
        assert tree.unsaved(folder / "frontend.md")
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert screen.query_one(SourceView).text == FRONTEND
        assert not tree.unsaved(folder / "frontend.md")
        assert tree.unsaved(folder / "backend.md")  # the other document keeps its part of the merge
        assert "entity:js" in table(app).ids  # frontend.md declares it again

        # -- An edited document (not open when it was edited) opens with its unsaved text.
        await open_document(app, pilot, "backend.md")
        text = screen.query_one(SourceView).text
        assert "entities: [entity:javascript, entity:node]" in text
        assert "backend.md ●" in str(screen.query_one(SourceView).border_title)
        assert (folder / "backend.md").read_text(encoding="utf-8") == BACKEND


def test_split_aliases():
    assert split_aliases(" K8s, kube ,, K8S, ") == ["K8s", "kube"]
    assert split_aliases("") == []


def test_entity_panel_bindings_have_ids():
    for owner in (EntityTable, ClusterList, EntityPanel, DiffScreen, EntityEditScreen, AliasEditScreen, WorkbenchApp):
        for binding in owner.BINDINGS:
            assert binding.id, f"{owner.__name__}: {binding} has no id"


def test_fit_names_keeps_a_cell_within_its_width():
    from ctxfst_tui.ui.widgets.entities.panel import fit_names

    names = ["backend.md", "frontend.md", "platform-runbook.ctxfst.md"]
    assert fit_names(names, 100) == "backend.md, frontend.md, platform-runbook.ctxfst.md"
    assert fit_names(names, 30) == "backend.md, frontend.md +1"
    assert fit_names(names, 16) == "backend.md +2"
    assert fit_names(["platform-runbook.ctxfst.md", "a.md"], 12) == "platform… +1"
    assert fit_names(["platform-runbook.ctxfst.md"], 10) == "platform-…"
    assert fit_names([], 10) == ""
    for width in range(6, 60):
        assert len(fit_names(names, width)) <= max(width, 6)


async def test_documents_column_fits_the_table_without_sideways_scrolling(tmp_path):
    # one entity linked from four documents with long names: at 100 columns the names do not fit
    for stem in ("platform-runbook-for-the-on-call-team", "frontend-architecture-notes",
                 "backend-build-scripts-and-tooling", "release-checklist"):
        (tmp_path / f"{stem}.md").write_text(BACKEND.replace("entity:node", f"entity:{stem[:8]}"), encoding="utf-8")
    app = WorkbenchApp(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await started(app, pilot)
        await show_entities(app, pilot)
        t = table(app)
        js = next(e for e in t.entities if e.id == "entity:js")
        assert len(js.documents) == 4
        cell = str(t.get_row("entity:js")[-1])
        assert cell.endswith(("+1", "+2", "+3")) and cell != ", ".join(js.documents)
        assert t.max_scroll_x == 0  # nothing hidden to the right
        await pilot.resize_terminal(250, 30)
        await settle(app, pilot)
        assert str(t.get_row("entity:js")[-1]) == ", ".join(js.documents)
        assert t.max_scroll_x == 0
