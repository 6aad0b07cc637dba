"""The chunk controls as a newcomer uses them (issue 16, defects 1 and 2, and "each document keeps
its own chunk settings"): Enter or escape leaves the size field and says so, focus is never put
back into it behind the user's back, invalid values are shown as invalid with the range and never
used, and a budget set on one document does not chunk another."""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static

from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.chunks.preview import ChunkPreview
from pilot import SIZE, VALID, open_document, settle, started
from test_palette import palette_hits
from test_preview import NOTE

OTHER = "# Other note\n\n" + "".join(
    f"Paragraph {i} says one thing about the index, then another about the queue.\n\n" for i in range(60)
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "guide.md").write_text(NOTE, encoding="utf-8")
    (tmp_path / "other.md").write_text(OTHER, encoding="utf-8")
    (tmp_path / "valid.ctxfst.md").write_text(VALID, encoding="utf-8")
    return tmp_path


def preview(app) -> ChunkPreview:
    return app.screen.query_one(ChunkPreview)


def field(app, name: str) -> Input:
    return app.screen.query_one(f"#preview-{name}", Input)


def hint(app) -> str:
    widget = app.screen.query_one("#preview-hint", Static)
    return str(widget.render()) if widget.display else ""


async def edit_size(app, pilot, value: str) -> None:
    """`2`, `s`, type ``value`` and wait past the debounce and the chunker, staying in the field."""
    await pilot.press("2", "s")
    await pilot.pause()
    await pilot.press(*value)
    await pilot.pause(0.5)
    await settle(app, pilot)


@pytest.mark.parametrize("leave", ["enter", "escape"])
async def test_enter_or_escape_leaves_the_size_field_and_the_keys_work_again(folder, leave):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "guide.md")
        await pilot.press("2", "s")
        await pilot.press("6", "4", leave)  # Enter / escape at once: the entry is taken, no wait
        await settle(app, pilot)
        assert isinstance(app.focused, ChunkMap)
        assert "chunker · 64 tokens" in preview(app).border_subtitle
        m = app.screen.query_one(ChunkMap)
        assert len(m.spans) > 2 and m.selected == 0
        await pilot.press("n", "n", "p")
        assert m.selected == 1
        await pilot.press("1")  # a view key switches the view, it is not typed into the size
        assert app.screen.query_one("#lower").active == "source-tab"
        assert field(app, "size").value == "64"
        await pilot.press("2", "c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)


async def test_the_field_says_how_to_leave_it(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "guide.md")
        assert hint(app) == ""  # nothing said while the map has the keys
        await pilot.press("2", "s")
        await pilot.pause()
        assert "Enter or esc: back to the chunks" in hint(app)
        assert "Enter or esc" in str(field(app, "size").tooltip)
        assert "Enter or esc" in str(field(app, "overlap").tooltip)
        await pilot.press("enter")
        await pilot.pause()
        assert hint(app) == ""


async def test_focus_is_not_put_back_in_the_field_after_the_palette(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "guide.md")
        await edit_size(app, pilot, "40")  # still in the field
        assert isinstance(app.focused, Input)
        await palette_hits(app, pilot, "open other")
        await pilot.press("enter")
        await settle(app, pilot)
        await settle(app, pilot)
        assert app.screen.current == folder / "other.md"
        assert not isinstance(app.focused, Input)
        await pilot.press("1", "2")  # views, not digits of the size
        await settle(app, pilot)
        assert app.screen.query_one("#lower").active == "chunks-tab"
        assert field(app, "size").value == "256"  # other.md's own (default) size, no "12" appended


@pytest.mark.parametrize("typed", ["0", "1", "5", "1.5e3", "-5", "40x", "200001"])
async def test_an_invalid_size_is_shown_as_invalid_and_not_used(folder, typed):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "guide.md")
        before = [(s.line, s.end_line) for s in app.screen.query_one(ChunkMap).spans]
        await edit_size(app, pilot, typed)
        size = field(app, "size")
        assert size.value == typed  # as typed: nothing filtered (1.5e3 was 153, -5 was 5)
        assert size.has_class("-invalid")
        assert "Size must be a whole number from 32 to 200000 tokens" in hint(app)
        assert "The chunks keep 256 tokens" in hint(app)
        assert "chunker · 256 tokens, overlap 32" in preview(app).border_subtitle
        assert [(s.line, s.end_line) for s in app.screen.query_one(ChunkMap).spans] == before
        await pilot.press("enter")  # leaving does not make it valid
        await settle(app, pilot)
        assert size.value == typed and size.has_class("-invalid") and "whole number" in hint(app)
        await pilot.press("s", "4", "0", "enter")  # a valid size clears the mark and is used
        await settle(app, pilot)
        assert not size.has_class("-invalid")
        assert "chunker · 40 tokens" in preview(app).border_subtitle


async def test_an_overlap_over_half_the_size_is_refused_or_lowered_where_it_is_seen(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "guide.md")
        await edit_size(app, pilot, "40")
        overlap = field(app, "overlap")
        # the default overlap 32 no longer fits: the field shows what is used, and says so
        assert overlap.value == "20"
        assert "Overlap lowered from 32 to 20" in hint(app)
        assert "chunker · 40 tokens, overlap 20" in preview(app).border_subtitle
        overlap.focus()
        overlap.value = "32"  # as pasted: typing 3 then 2 could let a slow machine chunk with 3 between
        await pilot.pause(0.5)
        await settle(app, pilot)
        assert overlap.value == "32" and overlap.has_class("-invalid")
        assert "Overlap must be a whole number from 0 to 20 (half the size), not 32." in hint(app)
        assert "chunker · 40 tokens, overlap 20" in preview(app).border_subtitle


async def test_each_document_keeps_its_own_chunk_settings(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "guide.md")
        await edit_size(app, pilot, "40")
        await pilot.press("enter")
        await settle(app, pilot)
        guide_chunks = len(app.screen.query_one(ChunkMap).spans)
        await open_document(app, pilot, "other.md")
        assert "chunker · 256 tokens" in preview(app).border_subtitle  # not the guide's 40
        assert field(app, "size").value == "256"
        await open_document(app, pilot, "valid.ctxfst.md")
        assert preview(app).border_subtitle.startswith("current <Chunk> tags")  # its own tags, still
        await open_document(app, pilot, "guide.md")
        assert field(app, "size").value == "40"
        assert "chunker · 40 tokens" in preview(app).border_subtitle
        assert len(app.screen.query_one(ChunkMap).spans) == guide_chunks
