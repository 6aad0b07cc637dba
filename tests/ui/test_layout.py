"""The workbench's layout at real sizes: what steps aside on a short terminal, the toggles, the
status bar, and the layout remembered for the folder."""
from __future__ import annotations

import json
from pathlib import Path

from ctxfst_tui import config as cfg
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.diagnosis.findings import FindingsPane
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from ctxfst_tui.ui.widgets.status_bar import StatusBar

from pilot import settle

BROKEN = '---\ntitle: "Broken"\nchunks:\n  - id: a:b\n    entities: [entity:missing]\n    context: "x"\n---\n\n<Chunk id="a:b">\nSome text here.\n</Chunk>\n'


def make_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "broken.md").write_text(BROKEN)
    return folder


async def open_first(app, pilot):
    await settle(app, pilot)
    app.screen.query_one(DocumentTree).focus()
    await pilot.press("down", "enter")
    await settle(app, pilot)
    await settle(app, pilot)


async def test_at_80x24_the_overview_steps_aside_and_the_status_bar_says_what_is_wrong(tmp_path):
    app = WorkbenchApp(make_folder(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_first(app, pilot)
        screen = app.screen
        assert not screen.query_one("#overview").display
        source = screen.query_one(SourceView)
        assert source.size.height >= 12  # the source gets the room
        bar = screen.query_one(StatusBar)
        assert bar.text.startswith("✗ broken.md · invalid, 1 error")
        assert "1 chunk · " in bar.text and "tokens" in bar.text
        await pilot.press("o")  # asked for: the overview comes back, the source keeps some room
        await pilot.pause()
        assert screen.query_one("#overview").display and screen.query_one(FindingsPane).size.height >= 4
        assert source.size.height >= 6
        await pilot.press("o")
        await pilot.pause()
        assert not screen.query_one("#overview").display


async def test_ctrl_b_hides_the_tree_and_brackets_resize_it_and_the_layout_is_remembered_and_a_tall_terminal_shows_the_overview(tmp_path):
    folder = make_folder(tmp_path)
    app = WorkbenchApp(folder)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_first(app, pilot)
        screen = app.screen
        tree = screen.query_one(DocumentTree)
        before = tree.outer_size.width
        tree.focus()
        await pilot.press("]", "]")
        await pilot.pause()
        assert tree.outer_size.width == before + 8
        await pilot.press("[")
        await pilot.pause()
        assert tree.outer_size.width == before + 4
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert not tree.display and not tree.has_focus  # focus moved to the view
        assert screen.query_one(SourceView).outer_size.width == 120
        await pilot.press("q")
        await pilot.pause()
    layout = json.loads(cfg.state_path().read_text())["folders"][str(folder.resolve())]["layout"]
    assert layout == {"tree": False, "tree_width": before + 4, "overview": "auto"}

    # Next time (on a bigger terminal): the tree as it was left.
    app = WorkbenchApp(folder)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        tree = app.screen.query_one(DocumentTree)
        assert not tree.display
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert tree.display and tree.outer_size.width == before + 4
        # A tall terminal shows the overview (auto) and o hides it.
        await open_first(app, pilot)
        overview = app.screen.query_one("#overview")
        assert overview.display
        await pilot.press("o")
        await pilot.pause()
        assert not overview.display
