"""Pilot tests for the diagnosis pane: grouped findings with counts, stepping, jumping, fixing with undo."""
from __future__ import annotations

from pathlib import Path

import pytest

from ctxfst_tui.core.workspace.fixes import FixError
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.diagnosis.pane import DiagnosisPane, DiagnosisTree
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from pilot import SIZE, open_document, settle, started

CACHE = """\
---
title: "Session cache"
entities:
  - id: entity:redis
    name: Redis
    type: database
chunks:
  - id: reference:cache
    tags: [Cache]
    entities: [entity:redis, entity:memcached]
    context: "How sessions are cached in Redis and when the cache is bypassed for writes and for admin tools"
  - id: reference:eviction
    tags: [Cache]
    entities: [entity:redis]
    context: "The eviction policy"
---

<Chunk id="reference:cache">
## Cache

Sessions are read from Redis first and from the database on a miss.
</Chunk>

<Chunk id="reference:eviction">
## Eviction

Redis runs with `allkeys-lru` so the least recently used sessions go first.
</Chunk>
"""
UNDEFINED_LINE = CACHE.splitlines().index("    entities: [entity:redis, entity:memcached]") + 1

CLEAN = """\
---
title: "Clean"
entities:
  - id: entity:python
    name: Python
    type: skill
chunks:
  - id: skill:python-basics
    tags: [Python]
    entities: [entity:python]
    context: "Python basics for data work: the language features the analysis notebooks rely on every day"
---

<Chunk id="skill:python-basics">
Python is the language of the analysis notebooks.
</Chunk>
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "a-clean.md").write_text(CLEAN, encoding="utf-8")
    (tmp_path / "cache.md").write_text(CACHE, encoding="utf-8")
    return tmp_path


def pane(app) -> DiagnosisPane:
    return app.screen.query_one(DiagnosisPane)


def tree(app) -> DiagnosisTree:
    return app.screen.query_one(DiagnosisTree)


def undefined(app):
    return [i for i in tree(app).items if i.rule == "entity-undefined"]


async def show_diagnosis(app, pilot) -> None:
    await pilot.press("4")
    await settle(app, pilot)
    assert app.focused is tree(app)


async def test_findings_are_grouped_by_category_with_counts(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await show_diagnosis(app, pilot)
        t = tree(app)
        items = t.items
        assert items, "the sample folder has findings"
        assert {i.display for i in items} <= {"cache.md", "a-clean.md"}
        assert any(i.rule == "entity-undefined" and i.severity == "error" for i in items)
        assert any(i.rule == "context-short" for i in items)
        branches = list(t.root.children)
        assert [b.data for b in branches][0] == "entity_linking"  # broken links first (a fixed order)
        for branch in branches:
            members = [c.data for c in branch.children]
            assert all(m.category == branch.data for m in members)
            ranks = [{"error": 0, "warning": 1, "info": 2}[m.severity] for m in members]
            assert ranks == sorted(ranks)  # worst first inside a category
            label = t.render_label(branch, t.rich_style, t.rich_style).plain
            assert f"  {len(members)}" in label
            errors = sum(m.severity == "error" for m in members)
            if errors:
                assert f"✗ {errors}" in label
        assert f"{len(items)} finding" in str(pane(app).border_subtitle)


async def test_n_and_p_step_through_findings_across_categories(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await show_diagnosis(app, pilot)
        items = tree(app).items
        assert len(items) >= 3
        await pilot.press("n")
        assert tree(app).current == items[0]
        await pilot.press("n", "n")
        assert tree(app).current == items[2]
        await pilot.press("p")
        assert tree(app).current == items[1]
        for _ in range(len(items) + 2):
            await pilot.press("n")
        assert tree(app).current == items[-1]  # stays on the last
        # A collapsed category is opened when stepping into it.
        first_branch = tree(app).root.children[0]
        first_branch.collapse()
        await pilot.pause()
        for _ in range(len(items) + 2):
            await pilot.press("p")
        assert tree(app).current == items[0] and first_branch.is_expanded


async def test_enter_opens_the_document_and_moves_the_source_to_the_line(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "a-clean.md")
        await show_diagnosis(app, pilot)
        target = undefined(app)[0]
        while tree(app).current != target:
            await pilot.press("n")
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.current == folder / "cache.md"
        assert screen.query_one(DocumentTree).opened == folder / "cache.md"
        source = screen.query_one(SourceView)
        assert app.focused is source
        assert source.cursor_location[0] == UNDEFINED_LINE - 1
        assert "cache.md" in str(source.border_title)
        chunk_map = screen.query_one(ChunkMap)
        assert chunk_map.current_span is not None and chunk_map.current_span.id == "reference:cache"
        # Back to the pane (same document now): enter jumps without reopening.
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("enter")
        await settle(app, pilot)
        assert source.cursor_location[0] == UNDEFINED_LINE - 1


async def test_f_applies_the_fix_and_u_brings_the_finding_back(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "cache.md")
        await show_diagnosis(app, pilot)
        assert undefined(app)
        while tree(app).current is None or tree(app).current.rule != "entity-undefined":
            await pilot.press("n")
        assert tree(app).current.fixable
        assert "memcached" in tree(app).current.fix_description
        before = len(tree(app).items)
        await pilot.press("f")
        await settle(app, pilot)
        assert len(tree(app).items) < before
        assert not undefined(app)  # the report refreshed: that finding is gone
        assert tree(app).current is not None  # the cursor moved on to another finding
        assert "entity:memcached" not in screen.query_one(SourceView).text  # and the open document shows the fix
        assert (folder / "cache.md").read_text(encoding="utf-8") == CACHE  # nothing saved
        assert screen.query_one(DocumentTree).unsaved(folder / "cache.md")
        assert app.focused is tree(app)
        await pilot.press("u")
        await settle(app, pilot)
        assert undefined(app) and len(tree(app).items) == before
        assert "entity:memcached" in screen.query_one(SourceView).text
        assert not screen.query_one(DocumentTree).unsaved(folder / "cache.md")


async def test_a_fix_that_fails_is_a_notification(folder, monkeypatch):
    def refuse(ws, fix, path=None):
        raise FixError("the chunk changed since the diagnosis")

    monkeypatch.setattr("ctxfst_tui.ui.screens.workbench.editing.apply_fix", refuse)
    app = WorkbenchApp(folder)
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        original = app.notify
        monkeypatch.setattr(app, "notify", lambda message, **kw: (notes.append(str(message)), original(message, **kw)))
        await show_diagnosis(app, pilot)
        while tree(app).current is None or not tree(app).current.fixable:
            await pilot.press("n")
        await pilot.press("f")
        await settle(app, pilot)
        assert app.is_running
        assert any("changed since the diagnosis" in n for n in notes)
        assert not app.session.dirty_paths


def test_diagnosis_bindings_have_ids():
    for binding in DiagnosisPane.BINDINGS:
        assert binding.id, f"DiagnosisPane: {binding} has no id"
