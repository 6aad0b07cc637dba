"""Issue #16, defect 5: feedback that was missing or wrong in the workbench.

One App walks every case in turn (each launch costs seconds): (1) "Validate folder" from the
palette says what it found once the scan ends; (2) the tree's ◆ marks of the highlighted entity go
when the Entities tab is left; (3) undoing back to the saved text says so, not "not yet saved";
(4) ctrl+e on a broken frontmatter still says to fix it, ctrl+k on a plain note (no frontmatter)
offers the conversion, and (5) after it the tree's cursor is on the new file; (6) a novel's first
chunk is headed by the file's name and first words, not a path and a hash; (7) a cancelled summary
says how far it got and what was not reached, without the whole run's counts.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from textual.command import CommandList, CommandPalette
from textual.widgets import TabbedContent

from conftest import SAMPLE_DOCS
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.services.report import status_for, validation_summary
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.entities.panel import EntityTable
from ctxfst_tui.ui.widgets.summary.tree import SummaryPane, SummaryTree
from fakes import BlockingStoryBackend
from pilot import INVALID, SIZE, VALID, WORKBENCH_FOLDER, notifications, open_document, settle, started, until

STORY = SAMPLE_DOCS / "novels" / "the-keeper-of-gull-rock.txt"
PLAIN = ("Deploys go out on Tuesdays after the standup, never on Fridays.\n\n"
         "The release manager checks the dashboards for an hour after each deploy, "
         "and rolls back at the first sign of trouble.\n")


def make_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "notes").mkdir(parents=True)
    (folder / "novels").mkdir()
    (folder / "valid.md").write_text(VALID, encoding="utf-8")
    (folder / "invalid.md").write_text(INVALID, encoding="utf-8")
    shutil.copy(WORKBENCH_FOLDER / "broken-yaml.md", folder / "broken-yaml.md")
    (folder / "notes" / "plain.md").write_text(PLAIN, encoding="utf-8")
    shutil.copy(STORY, folder / "novels" / "story.txt")
    return folder


def related_marks(tree: DocumentTree) -> list[str]:
    """The documents whose tree row shows ◆, as drawn."""
    shown = []
    for line in range(tree.last_line + 1):
        node = tree.get_node_at_line(line)
        if node is not None and isinstance(node.data, Path) and "◆" in tree.render_label(node, tree.rich_style, tree.rich_style).plain:
            shown.append(node.data.name)
    return shown


async def run_palette(app: WorkbenchApp, pilot, query: str) -> None:
    await pilot.press("ctrl+p")
    await pilot.pause()
    assert isinstance(app.screen, CommandPalette)
    await pilot.press(*query)
    await until(pilot, lambda: app.screen.query_one(CommandList).option_count > 0)
    assert str(app.screen.query_one(CommandList).get_option_at_index(0).prompt).startswith(query)
    await pilot.press("enter")


async def move_to(pilot, tree: SummaryTree, node_id: str) -> None:
    """Walk the summary tree's cursor with Up/Down to ``node_id`` (a chapter: shown closed)."""
    order = [tree.get_node_at_line(i).data for i in range(tree.last_line + 1)]
    steps = order.index(node_id) - tree.cursor_line
    await pilot.press(*(["down" if steps > 0 else "up"] * abs(steps)))
    assert tree.current is not None and tree.current.id == node_id


async def test_feedback_that_was_missing_or_wrong(tmp_path, monkeypatch):
    folder = make_folder(tmp_path)
    fake = BlockingStoryBackend()
    app = WorkbenchApp(folder, backend_factory=lambda settings: fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        told = notifications(app, monkeypatch)
        tree = screen.query_one(DocumentTree)

        def said(title: str) -> list[str]:
            return [text for t, text, _ in told if t == title]

        # (1) Validate folder: once the scan is over, what it found (not only "Validating the folder…")
        await run_palette(app, pilot, "Validate folder")
        await until(pilot, lambda: said("Validated"))
        await settle(app, pilot)
        expected = validation_summary({p: status_for(Document.load(p)) for p in tree.documents})
        assert said("Validated") == [expected]
        assert expected.startswith("5 documents checked: 2 with errors (") and "✗ and ▲ mark them" in expected

        # (2) the Entities tab marks the highlighted entity's documents with ◆ …
        await pilot.press("3")
        table = screen.query_one(EntityTable)
        await until(pilot, lambda: table.current is not None and related_marks(tree))
        assert "valid.md" in related_marks(tree)
        # (3) … an edit there, undone: back to the saved text, nothing to save
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: screen.session.dirty_paths)
        await settle(app, pilot)
        await pilot.press("u")
        await until(pilot, lambda: said("Undo"))
        undo = said("Undo")[-1]
        assert undo.startswith("Undone: ") and "back to the saved text, nothing to save" in undo, undo
        assert "not yet saved" not in undo and not screen.session.dirty_paths
        await settle(app, pilot)
        # (2) … and leaving the tab takes the ◆ away
        await pilot.press("1")
        await settle(app, pilot)
        assert screen.query_one(TabbedContent).active == "source-tab"
        assert related_marks(tree) == [] and tree.related == set()

        # (4) a frontmatter that exists but is broken: fix it first (as before)
        told.clear()
        await open_document(app, pilot, "broken-yaml.md")
        await pilot.press("ctrl+e")
        await pilot.pause()
        assert [text for _, text, _ in told] == ["broken-yaml.md: the frontmatter cannot be read; fix it first."]
        assert not isinstance(app.screen, ConfirmScreen)

        # (4) a plain note has no frontmatter to fix: it is offered the conversion
        told.clear()
        await open_document(app, pilot, "notes/plain.md")
        await pilot.press("ctrl+k")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = app.screen.question
        assert "notes/plain.md[/] is a plain note, not yet a CtxFST document" in question
        assert "then contextualize it" in question and "Convert it now, with the 1 chunk shown" in question
        assert "notes/plain.ctxfst.md" in question and "cannot be read" not in question
        assert not any("frontmatter" in text for _, text, _ in told)
        await pilot.press("y")  # its yes converts
        target = folder / "notes" / "plain.ctxfst.md"
        await until(pilot, lambda: said("Converted"))
        assert target.read_text(encoding="utf-8").startswith("---\n")
        # (5) the folder is listed again with the new file: the tree's cursor is on it, not at the top
        await until(pilot, lambda: target in tree.documents)
        await settle(app, pilot)
        assert tree.cursor_node is not None and tree.cursor_node.data == target and tree.cursor_line > 0

        # (6) a novel's first chunk (before any heading): its file name and first words
        await open_document(app, pilot, "novels/story.txt")
        await pilot.press("2")
        chunk_map = screen.query_one(ChunkMap)
        await until(pilot, lambda: chunk_map.spans and screen.spans == chunk_map.spans)
        first = chunk_map.spans[0].label
        assert first.startswith("story.txt · The Keeper of Gull Rock A short story"), first
        assert str(folder) not in first and "#" not in first
        assert all(s.label.startswith("story.txt · ") for s in chunk_map.spans)  # (no heading the chunker knows)
        assert len({s.label for s in chunk_map.spans}) == len(chunk_map.spans)  # each its own words
        # (4) … and ctrl+e on a plain .txt is offered the conversion too (no "not a CtxFST document")
        told.clear()
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = app.screen.question
        assert "novels/story.txt[/] is plain text, not yet a CtxFST document" in question, question
        assert "then extract entities from it." in question, question
        assert "novels/story.ctxfst.md" in question and not told
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert not (folder / "novels" / "story.ctxfst.md").exists()

        # (7) a summary cancelled after one of three nodes: how far it got, what was not reached
        await pilot.press("5")
        pane = screen.query_one(SummaryPane)
        await until(pilot, lambda: pane.view is not None and pane.path == folder / "novels" / "story.txt")
        await pilot.pause()
        await move_to(pilot, pane.tree, "c1")
        told.clear()
        fake.block_at = fake.calls + 2  # the first scene is summarized, the second call waits for escape
        await pilot.press("s")
        await until(pilot, fake.blocked.is_set)
        await pilot.press("escape")
        await until(pilot, lambda: app.job is None)
        await settle(app, pilot)
        [cancelled] = said("Cancelled")
        first_line = cancelled.splitlines()[0]
        assert re.fullmatch(r"Cancelled: 1 of 3 nodes done \([^;]*, 1 summarized, \d+ model calls?\); 2 not reached\.",
                            first_line), cancelled
        assert "nodes 3" not in cancelled and "model calls 0" not in cancelled
        assert cancelled.splitlines()[-1] == "What is done is kept; run it again to resume where it stopped."
