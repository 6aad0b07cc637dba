"""Pilot tests for the workbench, driven by keys and clicks as a user would; each App walks several cases."""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.widgets import Header

from ctxfst_tui.core.workspace.scan import iter_documents
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.document.summary import DocumentSummary
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.footer import KeyFooter
from ctxfst_tui.ui.widgets.diagnosis.findings import FindingsPane
from ctxfst_tui.ui.widgets.document.source_view import SourceView, displayable

from pilot import INVALID, SIZE, VALID, open_document, settle, started, workbench_folder

NESTED_LINE = INVALID.splitlines().index('  <Chunk id="skill:inner">') + 1  # 1-based, column 3


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return workbench_folder(tmp_path)


def rules_in_table(table: FindingsPane) -> list[str]:
    return [str(table.get_row_at(i)[2]) for i in range(table.row_count)]


# ---------------------------------------------------------------- the tree, the frame, the keys
# Each test below starts the App once and walks its cases in turn (an App launch is most of a
# Pilot test's cost); the comments name the cases, each of which used to be a test of its own.

async def test_tree_frame_and_keys_then_the_valid_document_reload_and_quit(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        tree = screen.query_one(DocumentTree)

        # The app starts in the ctxfst-dark theme.
        assert app.theme == "ctxfst-dark"

        # The tree lists exactly the document files.
        shown = {p.relative_to(folder).as_posix() for p in tree.documents}
        assert shown == {
            "valid.md", "invalid.md", "broken-yaml.md", "empty.md", "binary.md", "latin1.md",
            "notes/plain.txt", "notes/crlf.md", "notes/deeper/bom.ctxfst.md",
        }
        assert sorted(tree.documents) == sorted(iter_documents(folder))
        assert len(tree.documents) == len(set(tree.documents))
        # Folders are branches holding their documents.
        labels = [str(tree.get_node_at_line(i).label) for i in range(tree.last_line + 1)]
        assert "notes/" in labels and "deeper/" in labels
        assert tree.border_subtitle == "9 documents"

        # The tree marks each document with its status.
        state = {p.name: tree.status(p).state for p in tree.documents}
        assert state["valid.md"] == "valid"
        assert state["invalid.md"] == "errors"
        assert state["broken-yaml.md"] == "errors"
        assert state["empty.md"] == "errors"
        assert state["plain.txt"] == "warnings"
        node = tree.get_node_at_line(next(i for i in range(tree.last_line + 1) if str(tree.get_node_at_line(i).label) == "valid.md"))
        assert tree.render_label(node, tree.rich_style, tree.rich_style).plain.startswith("✓ ")

        # Header and footer.
        assert screen.query(Header) and screen.query(KeyFooter)
        assert app.title == "CtxFST Workbench"
        assert str(folder.resolve()) in app.sub_title
        shown_keys = {b.key for _, b, enabled, _ in screen.active_bindings.values() if b.show}
        assert {"q", "r", "tab"} <= shown_keys

        # r without a document only warns.
        await pilot.press("r")
        await settle(app, pilot)
        assert screen.current is None
        assert app.is_running

        # Tab and shift+tab move between the panes.
        table, source = screen.query_one(FindingsPane), screen.query_one(SourceView)
        assert app.focused is tree
        await pilot.press("tab")
        assert app.focused is table
        await pilot.press("tab")  # the Source / Chunks tab strip
        assert type(app.focused).__name__ == "ContentTabs"
        await pilot.press("tab")
        assert app.focused is source
        await pilot.press("tab")
        assert app.focused is tree
        await pilot.press("shift+tab")
        assert app.focused is source

        # A valid document shows its summary, no findings and its source.
        await open_document(app, pilot, "valid.md")
        summary = screen.query_one(DocumentSummary).text
        assert "Title: A valid document" in summary
        assert "Path: valid.md" in summary
        assert "Status: ✓ valid — 0 errors, 0 warnings" in summary
        assert "Entities: 1" in summary
        assert "Chunks: 1 in frontmatter" in summary
        assert "Body chunks: 1" in summary
        assert "Line ending: LF" in summary
        assert "BOM: no" in summary
        assert table.findings == []
        assert "No findings" in str(table.get_row_at(0)[3])
        assert source.text == VALID
        assert source.show_line_numbers and source.read_only
        assert source.cursor_location == (0, 0)
        assert "valid.md" in str(source.border_title)

        # r reloads the selected document from disk.
        assert tree.status(folder / "valid.md").state == "valid"
        (folder / "valid.md").write_text(VALID.replace("[entity:python]", "[entity:python, entity:ghost]"), encoding="utf-8")
        await pilot.press("r")
        await settle(app, pilot)
        assert "entity-ref-unknown" in rules_in_table(screen.query_one(FindingsPane))
        assert "invalid" in screen.query_one(DocumentSummary).text
        assert tree.status(folder / "valid.md").state == "errors"
        assert "entity:ghost" in screen.query_one(SourceView).text

        # Another theme applies.
        app.theme = "ctxfst-light"
        await pilot.pause()
        assert app.current_theme.dark is False

        # q quits, even from the source view.
        await pilot.press("tab", "tab", "tab")
        assert app.focused is source
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


# ---------------------------------------------------------------- the documents: invalid, broken, unusual

BROKEN = [  # (name, rule, problem)
    ("broken-yaml.md", "yaml-syntax", "frontmatter is broken"),
    ("empty.md", "file-empty", "the file is empty"),
    ("binary.md", "file-binary", "binary"),
    ("latin1.md", "file-encoding", "not valid UTF-8"),
]


async def test_invalid_broken_text_crlf_and_bom_documents_and_a_failing_worker(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        tree = screen.query_one(DocumentTree)
        table = screen.query_one(FindingsPane)
        source = screen.query_one(SourceView)

        # Clicking a document in the tree opens it.
        line = next(i for i in range(tree.last_line + 1) if tree.get_node_at_line(i).data == folder / "invalid.md")
        # +1 for the pane's top border; the label starts after the status glyph.
        assert await pilot.click(DocumentTree, offset=(4, line + 1 - tree.scroll_offset.y))
        await settle(app, pilot)
        assert screen.current == folder / "invalid.md"

        # The invalid document lists its findings with rule codes.
        summary = screen.query_one(DocumentSummary).text
        assert "Title: An invalid document" in summary
        assert "Status: ✗ invalid — 2 errors" in summary
        assert "Entities: 1" in summary and "Chunks: 2 in frontmatter" in summary and "Body chunks: 2" in summary
        rules = rules_in_table(table)
        assert "entity-ref-unknown" in rules
        assert "tag-nested" in rules
        row = rules.index("tag-nested")
        assert str(table.get_row_at(row)[1]) == f"{NESTED_LINE}:3"
        assert str(table.get_row_at(row)[0]) == "✗"
        assert "2 ✗" in str(table.border_subtitle)

        # Clicking a finding moves the source cursor to its line.
        first = table.findings[0]
        # Row 0 sits under the top border and the header row.
        assert await pilot.click(FindingsPane, offset=(20, 2))
        await pilot.pause()
        assert source.cursor_location[0] == first.line - 1

        # Moving over the findings previews them in the source, without taking the focus.
        tree.focus()
        await pilot.pause()
        await pilot.press("tab")
        assert app.focused is table and table.cursor_row == 0
        await pilot.press("down")
        await pilot.pause()
        second = table.findings[1]
        assert second.line != first.line
        assert source.cursor_location[0] == second.line - 1
        assert app.focused is table  # previewing does not steal focus

        # Enter on a finding moves the source cursor to its line and the focus to the source.
        key = "down" if row > table.cursor_row else "up"
        for _ in range(abs(row - table.cursor_row)):
            await pilot.press(key)
        assert table.cursor_row == row
        await pilot.press("enter")
        await pilot.pause()
        assert source.cursor_location == (NESTED_LINE - 1, 2)
        assert app.focused is source
        # Scrolled so the line is on screen (it starts far below the first screenful).
        top = source.scroll_offset.y
        assert top > 0
        assert top <= NESTED_LINE - 1 < top + source.scrollable_content_region.height
        assert "Ln" in str(source.border_subtitle) and str(NESTED_LINE) in str(source.border_subtitle)

        # Broken documents still open and say why.
        for name, rule, problem in BROKEN:
            await open_document(app, pilot, name)
            summary = screen.query_one(DocumentSummary).text
            assert f"Path: {name}" in summary, name
            assert "invalid" in summary, name
            assert "Problem:" in summary and problem in summary, name
            assert rule in rules_in_table(screen.query_one(FindingsPane)), name
            # Selecting the finding never fails, even for a whole-file finding (line 0).
            await pilot.press("tab", "enter")
            await pilot.pause()
            assert app.focused is source, name

            if name == "latin1.md":  # a non-UTF-8 source is shown with replacement characters
                assert "caf\ufffd" in source.text

        # A text file, a CRLF document and one with a BOM.
        await open_document(app, pilot, "notes/plain.txt")
        summary = screen.query_one(DocumentSummary).text
        assert "Frontmatter: none" in summary and "Size: 32 B, 2 lines" in summary
        assert rules_in_table(screen.query_one(FindingsPane)) == ["no-frontmatter"]
        await open_document(app, pilot, "notes/crlf.md")
        summary = screen.query_one(DocumentSummary).text
        assert "Title: CRLF doc" in summary and "Line ending: CRLF" in summary and "BOM: no" in summary
        assert source.line_count == 7  # same lines as the file
        await open_document(app, pilot, "notes/deeper/bom.ctxfst.md")
        summary = screen.query_one(DocumentSummary).text
        assert "Title: BOM doc" in summary and "BOM: yes" in summary
        assert "Path: notes/deeper/bom.ctxfst.md" in summary

        # A failing worker is reported, not raised (build_report runs only when a document opens).
        def boom(*_args, **_kwargs):
            raise RuntimeError("disk on fire")

        monkeypatch.setattr("ctxfst_tui.ui.app.build_report", boom)
        notes: list[str] = []
        original = app.notify
        monkeypatch.setattr(app, "notify", lambda message, **kw: (notes.append(message), original(message, **kw)))
        await open_document(app, pilot, "valid.md")
        assert app.is_running
        assert any("disk on fire" in n for n in notes)


def test_every_binding_has_an_id() -> None:
    owners = [WorkbenchApp, WorkbenchScreen, DocumentTree, FindingsPane]
    for owner in owners:
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding) and binding.id, f"{owner.__name__}: {binding} has no id"


# ---------------------------------------------------------------- robustness

def test_source_lines_match_the_core_lines() -> None:
    """The source view breaks lines where YAML and the core do (LS, lone CR, CRLF, LF); a form
    feed stays inside its line (drawn as a stand-in when painted)."""
    text = "a\u2028b\x0cc\rd\r\ne\n"
    assert displayable(text).split("\n") == ["a", "b\x0cc", "d", "e", ""]


def test_themes_load_and_broken_file_is_skipped(tmp_path):
    from ctxfst_tui.ui.themes import load_themes

    good, problems = load_themes()
    assert {"ctxfst-dark", "ctxfst-light", "ctxfst-high-contrast"} <= {t.name for t in good}
    assert problems == []
    (tmp_path / "ok.toml").write_text('name = "mine"\nprimary = "#123456"\n')
    (tmp_path / "bad.toml").write_text('name = "broken"\nprimary = "not a colour"\n')
    (tmp_path / "junk.toml").write_text("this is = = not toml")
    themes, problems = load_themes(tmp_path)
    assert [t.name for t in themes] == ["mine"]
    assert len(problems) == 2 and all("theme skipped" in p for p in problems)
