"""The command palette offers every action of the workbench (issue 7: open, re-chunk, convert,
validate, diagnose, apply fix, merge, undo/redo, save, contextualize, extract entities, summarize,
cancel, theme, help), and running an entry does what its key does."""
from __future__ import annotations

from pathlib import Path

from textual.command import CommandList, CommandPalette

from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.widgets.document.tree import DocumentTree

from pilot import settle

DOC = '---\ntitle: "One"\nchunks:\n  - id: a:b\n    context: "x"\n---\n\n<Chunk id="a:b">\nSome text here.\n</Chunk>\n'


async def palette_hits(app, pilot, query: str) -> list[str]:
    await pilot.press("ctrl+p")
    await pilot.pause()
    assert isinstance(app.screen, CommandPalette)
    await pilot.press(*query)
    for _ in range(40):
        await pilot.pause(0.05)
        options = app.screen.query_one(CommandList)
        if options.option_count:
            break
    options = app.screen.query_one(CommandList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def close_palette(app, pilot):
    await pilot.press("escape")
    await pilot.pause()


def make_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "novels").mkdir(parents=True)
    (folder / "one.md").write_text(DOC)
    (folder / "novels" / "tale.txt").write_text("CHAPTER I.\n\nIt was a dark night. " * 20 + "\n")
    return folder


async def test_every_action_the_issue_names_is_in_the_palette(tmp_path):
    app = WorkbenchApp(make_folder(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.screen.open_path(tmp_path / "docs" / "novels" / "tale.txt")
        await settle(app, pilot)
        wanted = {
            "open tale": "Open novels/tale.txt", "re-chunk": "Re-chunk", "convert": "Convert to CtxFST",
            "validate": "Validate folder", "diagnose": "Diagnose workspace", "apply fix": "Apply fix",
            "merge": "Merge entities", "undo": "Undo", "redo": "Redo", "save": "Save",
            "contextualize": "Contextualize document", "extract": "Extract entities",
            "summarize book": "Summarize book", "theme": "Theme", "help": "Help",
            "model settings": "Model settings", "toggle tree": "Toggle document tree",
        }
        for query, name in wanted.items():
            hits = await palette_hits(app, pilot, query)
            assert any(h.startswith(name) for h in hits), (query, hits)
            await close_palette(app, pilot)


async def test_palette_open_opens_the_document_and_validate_revalidates(tmp_path):
    folder = make_folder(tmp_path)
    app = WorkbenchApp(folder)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await palette_hits(app, pilot, "open one")
        await pilot.press("enter")
        await settle(app, pilot)
        await settle(app, pilot)
        assert app.screen.current == folder / "one.md"
        # another program breaks the document; "Validate folder" sees it
        (folder / "one.md").write_text(DOC.replace('context: "x"', 'context: [unclosed'))
        await palette_hits(app, pilot, "validate folder")
        await pilot.press("enter")
        await settle(app, pilot)
        await settle(app, pilot)
        assert app.screen.query_one(DocumentTree).status(folder / "one.md").state == "errors"


async def test_palette_cancel_is_offered_only_while_a_job_runs(tmp_path):
    app = WorkbenchApp(make_folder(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        hits = await palette_hits(app, pilot, "cancel model")
        assert not any(h.startswith("Cancel model job") for h in hits)
