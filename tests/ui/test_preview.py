"""Pilot tests for the chunk-boundary preview: live re-chunking, stepping, converting.

One workbench walks them all (a launch costs seconds), each step starting from what the one before
left: the CtxFST document first, then the plain note converted at the default budget, re-chunked
smaller, stepped through, and last switched to another unit."""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Select

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.validate import has_errors, validate
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.chunks.preview import ChunkPreview
from pilot import SIZE, VALID, open_document, settle, started, until

SECTION = (
    "The ingestion service reads documents from the queue and writes chunks to the index. "
    "Each worker takes one document at a time, so a slow document never blocks the others. "
    "Retries back off exponentially and give up after five attempts.\n\n"
)
NOTE = "# Ingestion guide\n\n" + "".join(
    f"## Step {i}: stage {i}\n\n" + SECTION * 3 for i in range(1, 9)
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "guide.md").write_text(NOTE, encoding="utf-8")
    (tmp_path / "valid.md").write_text(VALID, encoding="utf-8")
    return tmp_path


def chunk_map(app) -> ChunkMap:
    return app.screen.query_one(ChunkMap)


async def type_size(app, pilot, value: str) -> None:
    await pilot.press("2")  # the Chunks tab, focus on the map
    await pilot.press("s")  # edit the size
    await pilot.pause()
    await pilot.press(*value)
    # past the debounce: the chunker's spans for this size are shown
    await until(pilot, lambda: f"chunker · {value} tokens" in app.screen.query_one(ChunkPreview).border_subtitle)
    await settle(app, pilot)


async def test_the_preview_shows_tags_or_chunks_converts_rechunks_steps_and_switches_units(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        preview = app.screen.query_one(ChunkPreview)

        # -- a CtxFST document shows its own tags, and converting it is refused with a notice
        await open_document(app, pilot, "valid.md")
        spans = chunk_map(app).spans
        assert [s.id for s in spans] == ["skill:python-basics"]
        assert spans[0].tokens > 0
        assert "current <Chunk> tags" in preview.border_subtitle
        # one chunk: "1 chunk · 57 tok", not "1 chunks · 57–57–57 tok"
        assert str(preview.query_one("#preview-stats").render()).startswith(f"1 chunk · {spans[0].tokens} tok")
        await pilot.press("2", "c")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert not (folder / "valid.ctxfst.md").exists()

        # -- a plain note is chunked at the default budget
        await open_document(app, pilot, "guide.md")
        spans = chunk_map(app).spans
        assert spans, "the chunker proposed no chunks"
        before = [s.line for s in spans]
        assert "chunker · 256 tokens" in preview.border_subtitle

        # -- convert asks, then writes a valid document
        await pilot.press("2", "c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "guide.ctxfst.md" in app.screen.question
        await pilot.press("n")  # cancel: nothing written
        await pilot.pause()
        assert not (folder / "guide.ctxfst.md").exists()
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        target = folder / "guide.ctxfst.md"
        assert target.exists()
        doc = Document.load(target)
        assert not has_errors(validate(doc))
        assert len(doc.body_chunks) == len(chunk_map(app).spans)
        # the original text survives between the tags
        assert SECTION.strip() in target.read_text()
        # converting again warns that the file exists
        await pilot.press("c")
        await pilot.pause()
        assert "exists and will be overwritten" in app.screen.question
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, WorkbenchScreen))
        assert app.screen.current == folder / "guide.md"

        # -- a size change moves the boundaries
        await type_size(app, pilot, "64")
        after = chunk_map(app).spans
        assert len(after) > len(spans)
        assert [s.line for s in after] != before
        assert "chunker · 64 tokens" in preview.border_subtitle
        # every line of the note is inside some chunk: nothing is lost
        covered = set()
        for s in after:
            covered.update(range(s.line, s.end_line + 1))
        text_lines = [i + 1 for i, l in enumerate(NOTE.splitlines()) if l.strip()]
        assert set(text_lines) <= covered

        # -- step through the chunks
        await pilot.press("escape")
        m = chunk_map(app)
        m.focus()
        await pilot.pause()
        assert m.selected == 0
        await pilot.press("n", "n")
        assert m.selected == 2
        assert m.scroll_offset.y > 0
        await pilot.press("p")
        assert m.selected == 1
        await pilot.press("end")
        assert m.selected == len(m.spans) - 1
        await pilot.press("n")  # stays on the last
        assert m.selected == len(m.spans) - 1

        # -- a unit switch resets the size and overlap to that unit's defaults
        preview.query_one("#preview-unit", Select).value = "chars"
        await until(pilot, lambda: "1024 chars" in preview.border_subtitle)
        await settle(app, pilot)
        assert preview.budget == ("chars", 1024, 128)
        assert "1024 chars" in preview.border_subtitle
