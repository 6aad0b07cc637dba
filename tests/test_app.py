"""Pilot tests for the workbench: one interaction each, driven by keys as a user would."""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.widgets import Footer, Header

from ctxfst_tui.core.workspace.scan import iter_documents
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.document.summary import DocumentSummary
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.diagnosis.findings import FindingsPane
from ctxfst_tui.ui.widgets.document.source_view import SourceView, displayable

from pilot import INVALID, SIZE, VALID, open_document, settle, started, workbench_folder

NESTED_LINE = INVALID.splitlines().index('  <Chunk id="skill:inner">') + 1  # 1-based, column 3


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return workbench_folder(tmp_path)


def rules_in_table(table: FindingsPane) -> list[str]:
    return [str(table.get_row_at(i)[2]) for i in range(table.row_count)]


# ---------------------------------------------------------------- the tree

async def test_tree_lists_exactly_the_document_files(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        tree = screen.query_one(DocumentTree)
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


async def test_tree_marks_each_document_with_its_status(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        tree = screen.query_one(DocumentTree)
        state = {p.name: tree.status(p).state for p in tree.documents}
        assert state["valid.md"] == "valid"
        assert state["invalid.md"] == "errors"
        assert state["broken-yaml.md"] == "errors"
        assert state["empty.md"] == "errors"
        assert state["plain.txt"] == "warnings"
        node = tree.get_node_at_line(next(i for i in range(tree.last_line + 1) if str(tree.get_node_at_line(i).label) == "valid.md"))
        assert tree.render_label(node, tree.rich_style, tree.rich_style).plain.startswith("✓ ")


# ---------------------------------------------------------------- opening documents

async def test_valid_document_shows_summary_findings_and_source(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
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
        table = screen.query_one(FindingsPane)
        assert table.findings == []
        assert "No findings" in str(table.get_row_at(0)[3])
        source = screen.query_one(SourceView)
        assert source.text == VALID
        assert source.show_line_numbers and source.read_only
        assert source.cursor_location == (0, 0)
        assert "valid.md" in str(source.border_title)


async def test_invalid_document_lists_findings_with_rule_codes(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "invalid.md")
        summary = screen.query_one(DocumentSummary).text
        assert "Title: An invalid document" in summary
        assert "Status: ✗ invalid — 2 errors" in summary
        assert "Entities: 1" in summary and "Chunks: 2 in frontmatter" in summary and "Body chunks: 2" in summary
        table = screen.query_one(FindingsPane)
        rules = rules_in_table(table)
        assert "entity-ref-unknown" in rules
        assert "tag-nested" in rules
        row = rules.index("tag-nested")
        assert str(table.get_row_at(row)[1]) == f"{NESTED_LINE}:3"
        assert str(table.get_row_at(row)[0]) == "✗"
        assert "2 ✗" in str(table.border_subtitle)


async def test_enter_on_a_finding_moves_the_source_cursor_to_its_line(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "invalid.md")
        table = screen.query_one(FindingsPane)
        source = screen.query_one(SourceView)
        await pilot.press("tab")
        assert app.focused is table
        row = rules_in_table(table).index("tag-nested")
        for _ in range(row - table.cursor_row):
            await pilot.press("down")
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


async def test_moving_over_findings_previews_them_in_the_source(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "invalid.md")
        table = screen.query_one(FindingsPane)
        source = screen.query_one(SourceView)
        await pilot.press("tab")
        first = table.findings[0]
        await pilot.press("down")
        await pilot.pause()
        second = table.findings[1]
        assert second.line != first.line
        assert source.cursor_location[0] == second.line - 1
        assert app.focused is table  # previewing does not steal focus


@pytest.mark.parametrize(
    ("name", "rule", "problem"),
    [
        ("broken-yaml.md", "yaml-syntax", "frontmatter is broken"),
        ("empty.md", "file-empty", "the file is empty"),
        ("binary.md", "file-binary", "binary"),
        ("latin1.md", "file-encoding", "not valid UTF-8"),
    ],
)
async def test_broken_documents_still_open_and_say_why(folder: Path, name: str, rule: str, problem: str) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, name)
        summary = screen.query_one(DocumentSummary).text
        assert f"Path: {name}" in summary
        assert "invalid" in summary
        assert "Problem:" in summary and problem in summary
        assert rule in rules_in_table(screen.query_one(FindingsPane))
        # Selecting the finding never fails, even for a whole-file finding (line 0).
        await pilot.press("tab", "enter")
        await pilot.pause()
        assert app.focused is screen.query_one(SourceView)


async def test_non_utf8_source_is_shown_with_replacement_characters(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "latin1.md")
        assert "caf\ufffd" in screen.query_one(SourceView).text


async def test_text_file_crlf_and_bom(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "notes/plain.txt")
        summary = screen.query_one(DocumentSummary).text
        assert "Frontmatter: none" in summary and "Size: 32 B, 2 lines" in summary
        assert rules_in_table(screen.query_one(FindingsPane)) == ["no-frontmatter"]
        await open_document(app, pilot, "notes/crlf.md")
        summary = screen.query_one(DocumentSummary).text
        assert "Title: CRLF doc" in summary and "Line ending: CRLF" in summary and "BOM: no" in summary
        assert screen.query_one(SourceView).line_count == 7  # same lines as the file
        await open_document(app, pilot, "notes/deeper/bom.ctxfst.md")
        summary = screen.query_one(DocumentSummary).text
        assert "Title: BOM doc" in summary and "BOM: yes" in summary
        assert "Path: notes/deeper/bom.ctxfst.md" in summary


# ---------------------------------------------------------------- keys

async def test_r_reloads_the_selected_document_from_disk(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await open_document(app, pilot, "valid.md")
        tree = screen.query_one(DocumentTree)
        assert tree.status(folder / "valid.md").state == "valid"
        (folder / "valid.md").write_text(VALID.replace("[entity:python]", "[entity:python, entity:ghost]"), encoding="utf-8")
        await pilot.press("r")
        await settle(app, pilot)
        assert "entity-ref-unknown" in rules_in_table(screen.query_one(FindingsPane))
        assert "invalid" in screen.query_one(DocumentSummary).text
        assert tree.status(folder / "valid.md").state == "errors"
        assert "entity:ghost" in screen.query_one(SourceView).text


async def test_r_without_a_document_only_warns(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        assert screen.current is None
        assert app.is_running


async def test_tab_and_shift_tab_move_between_panes(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        tree, table, source = screen.query_one(DocumentTree), screen.query_one(FindingsPane), screen.query_one(SourceView)
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


async def test_q_quits(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "valid.md")
        await pilot.press("tab", "tab", "tab")  # even from the source view
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


async def test_header_and_footer(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        assert screen.query(Header) and screen.query(Footer)
        assert app.title == "CtxFST Workbench"
        assert str(folder.resolve()) in app.sub_title
        shown = {b.key for _, b, enabled, _ in screen.active_bindings.values() if b.show}
        assert {"q", "r", "tab"} <= shown


def test_every_binding_has_an_id() -> None:
    owners = [WorkbenchApp, WorkbenchScreen, DocumentTree, FindingsPane]
    for owner in owners:
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding) and binding.id, f"{owner.__name__}: {binding} has no id"


# ---------------------------------------------------------------- robustness

async def test_a_failing_worker_is_reported_not_raised(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_args, **_kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("ctxfst_tui.ui.app.build_report", boom)
    app = WorkbenchApp(folder)
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        original = app.notify
        monkeypatch.setattr(app, "notify", lambda message, **kw: (notes.append(message), original(message, **kw)))
        await open_document(app, pilot, "valid.md")
        assert app.is_running
        assert any("disk on fire" in n for n in notes)


def test_source_lines_match_the_core_lines() -> None:
    """The source view breaks lines where YAML and the core do (LS, lone CR, CRLF, LF); a form
    feed stays inside its line (drawn as a stand-in when painted)."""
    text = "a\u2028b\x0cc\rd\r\ne\n"
    assert displayable(text).split("\n") == ["a", "b\x0cc", "d", "e", ""]


async def test_clicking_a_document_and_a_finding(folder: Path) -> None:
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        tree = screen.query_one(DocumentTree)
        line = next(i for i in range(tree.last_line + 1) if tree.get_node_at_line(i).data == folder / "invalid.md")
        # +1 for the pane's top border; the label starts after the status glyph.
        assert await pilot.click(DocumentTree, offset=(4, line + 1 - tree.scroll_offset.y))
        await settle(app, pilot)
        assert screen.current == folder / "invalid.md"
        table = screen.query_one(FindingsPane)
        first = table.findings[0]
        # Row 0 sits under the top border and the header row.
        assert await pilot.click(FindingsPane, offset=(20, 2))
        await pilot.pause()
        source = screen.query_one(SourceView)
        assert source.cursor_location[0] == first.line - 1


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


async def test_app_starts_in_the_ctxfst_dark_theme(tmp_path):
    from ctxfst_tui.ui.app import WorkbenchApp

    app = WorkbenchApp(tmp_path)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert app.theme == "ctxfst-dark"
        app.theme = "ctxfst-light"
        await pilot.pause()
        assert app.current_theme.dark is False
