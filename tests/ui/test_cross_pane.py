"""Cross-pane flows: what is selected in one view shows in the others, and an edit made in one
view refreshes the rest (issue 7: finding → jump → fix → report refreshes; merge in the entity
panel → chunk preview updates; chunk ↔ source; entity → its documents and chunks)."""
from __future__ import annotations

from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.diff import DiffScreen
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.diagnosis.pane import DiagnosisTree
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.entities.panel import ClusterList, EntityTable
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from pilot import SIZE, open_document, settle, started, until
from test_entity_panel import folder  # noqa: F401  (frontend.md and backend.md, JS / JavaScript)


TWO_CHUNKS = """\
---
title: "Two chunks"
entities:
  - id: entity:redis
    name: Redis
    type: database
chunks:
  - id: ops:cache
    entities: [entity:redis]
    context: "How the cache is run"
  - id: ops:queue
    context: "How the queue is run"
---

<Chunk id="ops:cache">
## Cache

Redis holds the sessions.
</Chunk>

<Chunk id="ops:queue">
## Queue

The queue is a table.
</Chunk>
"""


async def test_an_entity_marks_its_documents_and_chunks_and_a_merge_updates_preview_and_source(folder):  # noqa: F811
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "frontend.md")
        await settle(app, pilot)
        # -- An entity marks its documents and the chunks that link it.
        assert screen.query_one(DocumentTree).related == set()  # nothing marked before the Entities view is used
        await pilot.press("3")
        await settle(app, pilot)
        table = screen.query_one(EntityTable)
        tree, chunk_map = screen.query_one(DocumentTree), screen.query_one(ChunkMap)
        table.highlight("entity:react")
        await pilot.pause()
        assert tree.related == {folder / "frontend.md"}
        assert chunk_map.marked == {"skill:react-components"}
        table.highlight("entity:node")  # declared and linked only in backend.md
        await pilot.pause()
        assert tree.related == {folder / "backend.md"}
        assert chunk_map.marked == frozenset()
        table.highlight("entity:js")
        await pilot.pause()
        assert tree.related == {folder / "frontend.md", folder / "backend.md"}

        # -- A merge in the entity panel updates the chunk preview and the source.
        source = screen.query_one(SourceView)
        assert "entities: [entity:react, entity:js]" in source.text
        clusters = screen.query_one(ClusterList)
        clusters.focus()
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, DiffScreen)
        await pilot.press("y")
        await settle(app, pilot)
        await settle(app, pilot)
        assert "entities: [entity:react, entity:javascript]" in source.text
        await pilot.press("2")
        await settle(app, pilot)
        assert "entities: [entity:react, entity:javascript]" in chunk_map.text  # the preview shows the merged text


async def test_finding_jump_fix_refresh_and_chunk_and_source_follow_each_other(tmp_path):
    (tmp_path / "ops.md").write_text(TWO_CHUNKS.replace("entities: [entity:redis]", "entities: [entity:redis, entity:memcached]"))
    (tmp_path / "two.md").write_text(TWO_CHUNKS)
    app = WorkbenchApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        # -- A finding: jump to it, fix it, and the report refreshes (ops.md).
        await pilot.press("4")
        await settle(app, pilot)
        tree = screen.query_one(DiagnosisTree)
        target = next(i for i in tree.items if i.rule == "entity-undefined")
        while tree.current != target:
            await pilot.press("n")
        await pilot.press("enter")  # jump: the document opens at the finding's line
        await settle(app, pilot)
        await settle(app, pilot)
        source = screen.query_one(SourceView)
        assert screen.current == tmp_path / "ops.md"
        assert source.cursor_location[0] + 1 == target.line
        assert screen.query_one(ChunkMap).current_span.id == "ops:cache"  # the finding's chunk, in the preview
        await pilot.press("4")
        await settle(app, pilot)
        while tree.current is None or tree.current.rule != "entity-undefined":
            await pilot.press("n")
        await pilot.press("f")  # fix
        await settle(app, pilot)
        await settle(app, pilot)
        assert not [i for i in tree.items if i.rule == "entity-undefined"]  # the report refreshed
        assert "entity:memcached" not in source.text  # and the source shows the fixed text

        # -- The chunk preview and the source follow each other (two.md).
        await open_document(app, pilot, "two.md")
        await settle(app, pilot)
        chunk_map, source = screen.query_one(ChunkMap), screen.query_one(SourceView)
        lines = TWO_CHUNKS.splitlines()
        queue_open = lines.index('<Chunk id="ops:queue">') + 1
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("n")  # the second chunk in the preview …
        await until(pilot, lambda: chunk_map.current_span.id == "ops:queue")
        await until(pilot, lambda: bool(source.highlighted) and source.highlighted[0][0] > 10)
        first, last = source.highlighted[0]
        assert first <= queue_open + 1 <= last  # … is the band highlighted in the source
        await pilot.press("1")
        await pilot.pause()
        source.focus()
        await pilot.press("ctrl+home")
        cache_text = lines.index("Redis holds the sessions.") + 1
        for _ in range(cache_text - 1):
            await pilot.press("down")
        await until(pilot, lambda: chunk_map.current_span.id == "ops:cache")  # the source cursor selects its chunk
