"""The command palette offers every action of the workbench (issue 7: open, re-chunk, convert,
validate, diagnose, apply fix, merge, undo/redo, save, contextualize, extract entities, summarize,
cancel, theme, help), and running an entry does what its key does."""
from __future__ import annotations

from pathlib import Path

from textual.command import CommandList, CommandPalette

from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.workbench.commands import COMMANDS
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


# What issue 7 names -> the palette entry that does it (the start of the entry's text).
WANTED = {
    "open tale": "Open novels/tale.txt", "re-chunk": "Re-chunk", "convert": "Convert to CtxFST",
    "validate": "Validate folder", "diagnose": "Diagnose workspace", "apply fix": "Apply fix",
    "merge": "Merge entities", "undo": "Undo", "redo": "Redo", "save": "Save",
    "contextualize": "Contextualize document", "extract": "Extract entities",
    "summarize book": "Summarize book", "theme": "Theme", "help": "Help",
    "model settings": "Model settings", "toggle tree": "Toggle document tree",
}
FROM_TEXTUAL = {"Theme"}  # Textual's own system commands


def test_the_workbench_commands_hold_every_action_the_issue_names():
    names = {c.name for c in COMMANDS}
    for query, name in WANTED.items():
        if not name.startswith("Open ") and name not in FROM_TEXTUAL:
            assert name in names, query


async def test_every_action_the_issue_names_is_in_the_palette_which_opens_and_validates(tmp_path):
    folder = make_folder(tmp_path)
    app = WorkbenchApp(folder)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.screen.open_path(folder / "novels" / "tale.txt")
        await settle(app, pilot)
        # The palette with nothing typed lists every command that makes sense now (a novel is
        # open: the summary commands too); "Open …" entries come from what is typed.
        listed = await palette_hits(app, pilot, "")
        await close_palette(app, pilot)
        for query, name in WANTED.items():
            if name.startswith("Open "):
                hits = await palette_hits(app, pilot, query)
                await close_palette(app, pilot)
            else:
                hits = listed
            assert any(h.startswith(name) for h in hits), (query, hits)
        # Cancel is offered only while a job runs.
        assert not any(h.startswith("Cancel model job") for h in listed)
        hits = await palette_hits(app, pilot, "cancel model")
        assert not any(h.startswith("Cancel model job") for h in hits)
        await close_palette(app, pilot)

        # Running an entry does what its key does: "Open one.md" opens the document …
        await palette_hits(app, pilot, "open one")
        await pilot.press("enter")
        await settle(app, pilot)
        await settle(app, pilot)
        assert app.screen.current == folder / "one.md"
        # … and when another program breaks the document, "Validate folder" sees it.
        (folder / "one.md").write_text(DOC.replace('context: "x"', 'context: [unclosed'))
        await palette_hits(app, pilot, "validate folder")
        await pilot.press("enter")
        await settle(app, pilot)
        await settle(app, pilot)
        assert app.screen.query_one(DocumentTree).status(folder / "one.md").state == "errors"
