"""The chunk controls as a newcomer uses them (issue 16, defects 1 and 2, and "each document keeps
its own chunk settings"): Enter or escape leaves the size field and says so, focus is never put
back into it behind the user's back, invalid values are shown as invalid with the range and never
used, and a budget set on one document does not chunk another.

Each test walks its cases in one workbench (a launch costs seconds); the rules themselves (which
sizes and overlaps are valid, the reasons' wording) are checked case by case in test_chunk_budget.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static

from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.chunks.preview import ChunkPreview
from pilot import SIZE, VALID, open_document, settle, started, until
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


def spans(app) -> list[tuple[int, int]]:
    return [(s.line, s.end_line) for s in app.screen.query_one(ChunkMap).spans]


def chunked_with(app, size: int) -> bool:
    return f"chunker · {size} tokens" in preview(app).border_subtitle


async def edit_size(app, pilot, value: str, *, done, tab: bool = True) -> None:
    """(`2`,) `s`, type ``value`` and wait until ``done()`` says the debounced check ran (and the
    chunker, if it was asked), staying in the field."""
    await pilot.press(*(["2"] if tab else []), "s")
    await pilot.press(*value)
    await until(pilot, done)
    await settle(app, pilot)


async def set_size(app, pilot, value: int, *, tab: bool = True) -> None:
    """(`2`,) `s`, a valid size (as pasted: only what is typed is under test), Enter: the chunks are
    drawn again with it and the keys are back on the map."""
    shown = app.screen.query_one(ChunkMap).spans
    await pilot.press(*(["2"] if tab else []), "s")
    field(app, "size").value = str(value)
    await pilot.press("enter")
    await until(pilot, lambda: app.screen.query_one(ChunkMap).spans is not shown and chunked_with(app, value))
    await settle(app, pilot)


async def test_leaving_the_size_field_and_each_documents_own_settings(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "guide.md")
        m = app.screen.query_one(ChunkMap)

        # -- at 80x24 the field says how to leave it; nothing is said while the map has the keys
        assert hint(app) == ""
        await pilot.press("2", "s")
        await pilot.pause()
        assert "Enter or esc: back to the chunks" in hint(app)
        assert "Enter or esc" in str(field(app, "size").tooltip)
        assert "Enter or esc" in str(field(app, "overlap").tooltip)

        # -- Enter (here) or escape (below, at the full size) leaves the field and the keys work again
        for leave in ("enter", "escape"):
            if leave == "escape":
                await pilot.resize_terminal(*SIZE)
                await pilot.press("2", "s")
            await pilot.press("6", "4", leave)  # Enter / escape at once: the entry is taken, no wait
            await settle(app, pilot)
            assert hint(app) == "", leave
            assert isinstance(app.focused, ChunkMap), leave
            assert "chunker · 64 tokens" in preview(app).border_subtitle, leave
            assert len(m.spans) > 2 and m.selected == 0, leave
            await pilot.press("n", "n", "p")
            assert m.selected == 1, leave
            await pilot.press("1")  # a view key switches the view, it is not typed into the size
            assert app.screen.query_one("#lower").active == "source-tab", leave
            assert field(app, "size").value == "64", leave
            await pilot.press("2", "c")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen), leave
            await pilot.press("n")  # no conversion
            await until(pilot, lambda: isinstance(app.screen, WorkbenchScreen))
            if leave == "enter":  # back to the default and the first chunk before the next case
                await set_size(app, pilot, 256)
                await pilot.press("home")
                assert m.selected == 0

        # -- focus is not put back in the field after the palette, and other.md keeps its own size
        await edit_size(app, pilot, "40", done=lambda: chunked_with(app, 40))  # still in the field
        assert isinstance(app.focused, Input)
        guide_chunks = len(m.spans)
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
        assert "chunker · 256 tokens" in preview(app).border_subtitle  # not the guide's 40

        # -- each document keeps its own settings: a CtxFST document its tags, the guide its 40
        await open_document(app, pilot, "valid.ctxfst.md")
        assert preview(app).border_subtitle.startswith("current <Chunk> tags")  # its own tags, still
        await open_document(app, pilot, "guide.md")
        assert field(app, "size").value == "40"
        assert "chunker · 40 tokens" in preview(app).border_subtitle
        assert len(app.screen.query_one(ChunkMap).spans) == guide_chunks


# Typed as they come (keys, not a paste): none filtered (1.5e3 was 153, -5 was 5). Every other
# invalid size, and the wording of each reason, is checked in test_chunk_budget.py.
INVALID_SIZES = ["5", "1.5e3", "-5", "40x", "200001"]


async def test_invalid_sizes_and_overlaps_are_shown_as_invalid_and_not_used(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "guide.md")
        before = spans(app)
        size = field(app, "size")
        await pilot.press("2")  # the Chunks tab, the keys on the map
        for typed in INVALID_SIZES:
            # -- an invalid size: marked, the range said, the chunks keep 256 (restored after each case)
            await edit_size(app, pilot, typed, done=lambda: f"not {typed}." in hint(app), tab=False)
            assert size.value == typed, f"typed {typed!r}"  # as typed: nothing filtered
            assert size.has_class("-invalid"), f"typed {typed!r}"
            assert "Size must be a whole number from 32 to 200000 tokens" in hint(app), f"typed {typed!r}"
            assert "The chunks keep 256 tokens" in hint(app), f"typed {typed!r}"
            assert "chunker · 256 tokens, overlap 32" in preview(app).border_subtitle, f"typed {typed!r}"
            assert spans(app) == before, f"typed {typed!r}"
            await pilot.press("enter")  # leaving does not make it valid
            await settle(app, pilot)
            assert size.value == typed and size.has_class("-invalid") and "whole number" in hint(app), f"typed {typed!r}"
            assert spans(app) == before, f"typed {typed!r}"
            # -- a valid size clears the mark and is used: the default again between cases (the
            # chunks as before), a new size after the last
            valid = 64 if typed == INVALID_SIZES[-1] else 256
            await set_size(app, pilot, valid, tab=False)
            assert not size.has_class("-invalid") and "whole number" not in hint(app), f"typed {typed!r}"
            assert f"chunker · {valid} tokens" in preview(app).border_subtitle, f"typed {typed!r}"
            if valid == 256:
                assert "chunker · 256 tokens, overlap 32" in preview(app).border_subtitle and spans(app) == before
            else:
                assert spans(app) != before, f"typed {typed!r}"

        # -- an overlap over half the size is lowered where it is seen, or refused when typed
        assert "chunker · 64 tokens, overlap 32" in preview(app).border_subtitle  # the default overlap
        await edit_size(app, pilot, "40", done=lambda: chunked_with(app, 40), tab=False)
        overlap = field(app, "overlap")
        # the default overlap 32 no longer fits: the field shows what is used, and says so
        assert overlap.value == "20"
        assert "Overlap lowered from 32 to 20" in hint(app)
        assert "chunker · 40 tokens, overlap 20" in preview(app).border_subtitle
        overlap.focus()
        overlap.value = "32"  # as pasted: typing 3 then 2 could let a slow machine chunk with 3 between
        await until(pilot, lambda: overlap.has_class("-invalid"))
        await settle(app, pilot)
        assert overlap.value == "32" and overlap.has_class("-invalid")
        assert "Overlap must be a whole number from 0 to 20 (half the size), not 32." in hint(app)
        assert "chunker · 40 tokens, overlap 20" in preview(app).border_subtitle
