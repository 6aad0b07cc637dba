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


async def step_to(app, pilot, wanted) -> None:
    """Press n (then p) until the current finding is one ``wanted(item)`` accepts; fail, not
    loop, if the pane holds none."""
    for key in "np":
        for _ in range(len(tree(app).items) + 1):
            current = tree(app).current
            if current is not None and wanted(current):
                return
            await pilot.press(key)
    raise AssertionError(f"no such finding: {[i.rule for i in tree(app).items]}")


async def test_the_pane_groups_steps_jumps_fixes_and_undoes(folder, monkeypatch):
    """One app walks the pane: grouped findings with counts; n/p stepping; enter opens the
    document at the finding's line; f fixes and u brings the finding back; a fix that fails is a
    notification. Each step leaves the workspace as it found it (the fix is undone)."""
    app = WorkbenchApp(folder)
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        original = app.notify
        monkeypatch.setattr(app, "notify", lambda message, **kw: (notes.append(str(message)), original(message, **kw)))

        # -- Findings are grouped by category, with counts (no document open).
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

        # -- n and p step through the findings across categories.
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

        # -- Enter opens the finding's document (another one is open) at the finding's line.
        await open_document(app, pilot, "a-clean.md")
        await show_diagnosis(app, pilot)
        target = undefined(app)[0]
        await step_to(app, pilot, lambda item: item == target)
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
        source.move_cursor((0, 0))
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("enter")
        await settle(app, pilot)
        assert source.cursor_location[0] == UNDEFINED_LINE - 1

        # -- f applies the fix (cache.md is open) and u brings the finding back.
        await show_diagnosis(app, pilot)
        assert undefined(app)
        await step_to(app, pilot, lambda item: item.rule == "entity-undefined")
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

        # -- A fix that fails is a notification, and nothing changes.
        def refuse(ws, fix, path=None):
            raise FixError("the chunk changed since the diagnosis")

        monkeypatch.setattr("ctxfst_tui.ui.screens.workbench.editing.apply_fix", refuse)
        assert not any("changed since the diagnosis" in n for n in notes)
        await show_diagnosis(app, pilot)
        await step_to(app, pilot, lambda item: item.fixable)
        await pilot.press("f")
        await settle(app, pilot)
        assert app.is_running
        assert any("changed since the diagnosis" in n for n in notes)
        assert not app.session.dirty_paths


def test_diagnosis_bindings_have_ids():
    for binding in DiagnosisPane.BINDINGS:
        assert binding.id, f"DiagnosisPane: {binding} has no id"
