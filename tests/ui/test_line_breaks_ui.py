"""The workbench counts lines as the core does (YAML's line breaks), so findings land on their line.

Documents with CR-only endings or a U+2028 inside a frontmatter value used to be drawn with one
line per "\\n": a finding's line then pointed at another line of the Source view and chunk map.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.validate import validate
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.services.report import report_for
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.diagnosis.findings import FindingsPane
from ctxfst_tui.ui.widgets.diagnosis.pane import DiagnosisTree
from ctxfst_tui.ui.widgets.document.source_view import SourceView, display_lines

from pilot import open_document, settle

SIZE = (160, 45)
NESTED_TAG = '  <Chunk id="skill:inner">'


def nested_document(context: str) -> list[str]:
    """A document whose second chunk is nested in the first (a tag-nested finding, with a line)."""
    return [
        "---",
        'title: "Line breaks"',
        "entities:",
        "  - id: entity:python",
        "    name: Python",
        "    type: skill",
        "chunks:",
        "  - id: skill:outer",
        "    entities: [entity:python]",
        f'    context: "{context}"',
        "  - id: skill:inner",
        '    context: "Inner chunk"',
        "---",
        "",
        '<Chunk id="skill:outer">',
        "Outer text.",
        NESTED_TAG,
        "Inner text.",
        "</Chunk>",
        "</Chunk>",
        "",
    ]


CR_ONLY = "\r".join(nested_document("Outer chunk"))
LINE_SEPARATOR = "\n".join(nested_document("Outer\u2028chunk"))  # U+2028: a line break to YAML


STYLES = Path(__file__).resolve().parents[2] / "ctxfst_tui" / "ui" / "styles"


class Host(App[None]):
    """The source view alone."""

    CSS_PATH = STYLES / "source_view.tcss"

    def compose(self) -> ComposeResult:
        yield SourceView(id="source")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "cr-only.md").write_bytes(CR_ONLY.encode("utf-8"))
    (tmp_path / "line-separator.md").write_bytes(LINE_SEPARATOR.encode("utf-8"))
    return tmp_path


def test_display_lines_break_where_yaml_does_and_keep_other_controls_in_the_line() -> None:
    text = "a\u2028b\x0cc\rd\r\ne\x85f\u2029g\x0bh\x1ci\n"
    assert display_lines(text) == ["a", "b\x0cc", "d", "e", "f", "g\x0bh\x1ci", ""]
    assert len(display_lines(text)) == Document.from_text(text).index.line_count
    assert display_lines("") == [""]
    assert display_lines("no break") == ["no break"]


async def test_form_feed_and_vertical_tab_are_stand_ins_not_breaks(tmp_path: Path) -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        source = app.query_one(SourceView)
        source.show_text("one\x0ctwo\rthree\u2028four\x1dfive\n", "ff.txt")
        await pilot.pause()
        source.move_cursor((3, 0))
        assert source.line_count == 4
        assert source.render_line(0).text.startswith(" 1 one␌two")
        assert source.render_line(1).text.startswith(" 2 three")
        assert source.render_line(2).text.startswith(" 3 four␝five")


def test_report_names_a_cr_only_document_cr(folder: Path, tmp_path: Path) -> None:
    assert report_for(Document.load(folder / "cr-only.md"), folder).newline == "CR"
    assert report_for(Document.load(folder / "line-separator.md"), folder).newline == "LF"
    crlf = tmp_path / "crlf.md"
    crlf.write_bytes(CR_ONLY.replace("\r", "\r\n").encode("utf-8"))
    assert report_for(Document.load(crlf), folder).newline == "CRLF"
    report = report_for(Document.load(folder / "cr-only.md"), folder)
    assert report.line_count == len(nested_document("")) - 1  # the last "" is the final break


def test_a_utf16_document_is_shown_decoded_and_named(tmp_path: Path) -> None:
    path = tmp_path / "wide.md"
    path.write_bytes(CR_ONLY.replace("\r", "\n").encode("utf-16"))
    report = report_for(Document.load(path), tmp_path)
    assert not report.readable
    assert report.problem == "cannot read it: the file is UTF-16 text: save it as UTF-8"
    assert report.text.splitlines()[16] == NESTED_TAG  # the text, not its bytes as UTF-8 with NULs
    assert [(f.rule, f.line) for f in report.findings] == [("file-encoding", 1)]


async def test_enter_on_a_finding_or_in_the_diagnosis_lands_on_its_source_line(folder: Path) -> None:
    """For each document: Enter on the tag-nested finding (the findings table), then Enter on the
    inner chunk's chunk-small item (the Diagnosis view), lands the Source view on the tag's line."""
    app = WorkbenchApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for name in ("cr-only.md", "line-separator.md"):
            doc = Document.load(folder / name)
            nested = next(f for f in validate(doc) if f.rule == "tag-nested")
            assert doc.index.line_text(nested.line) == NESTED_TAG, name  # the core's line is the tag's line
            await open_document(app, pilot, folder / name)
            screen = app.screen
            source = screen.query_one(SourceView)

            # -- the findings table
            await pilot.press("1")  # the Source view, where the findings table is (the Diagnosis view may be up)
            table = screen.query_one(FindingsPane)
            assert source.line_count == doc.index.line_count, name  # as many lines as the core counts
            table.focus()
            await pilot.pause()
            row = next(i for i, f in enumerate(table.findings) if f.rule == "tag-nested")
            for _ in range(abs(row - table.cursor_row)):
                await pilot.press("down" if row > table.cursor_row else "up")
            assert table.cursor_row == row, name
            await pilot.press("enter")
            await pilot.pause()
            assert app.focused is source, name
            cursor_row, cursor_col = source.cursor_location
            assert cursor_row == nested.line - 1, name
            assert source.render_line(cursor_row - source.scroll_offset.y).text.split(" ", 2)[2].startswith(NESTED_TAG), name
            # The chunk map draws the same lines: the inner chunk's line shows its tag.
            chunk_map = screen.query_one(ChunkMap)
            assert chunk_map.text.split("\n")[nested.line - 1] == NESTED_TAG, name
            inner = next(s for s in chunk_map.spans if s.id == "skill:inner")
            assert inner.line == nested.line, name
            assert chunk_map.current_span is not None and chunk_map.current_span.line <= nested.line <= chunk_map.current_span.end_line, name

            # -- the Diagnosis view
            source.move_cursor((0, 0))  # away from the line, so landing on it is the Enter's doing
            await pilot.press("4")
            await settle(app, pilot)
            tree = app.screen.query_one(DiagnosisTree)
            assert app.focused is tree, name
            # The inner chunk is small: the diagnosis names its tag's line (after the U+2028 or CRs).
            targets = [i for i in tree.items if i.rule == "chunk-small" and i.line == nested.line]
            assert targets, (name, [(i.rule, i.line) for i in tree.items])
            for _ in range(len(tree.items) + 1):
                if tree.current == targets[0]:
                    break
                await pilot.press("n")
            assert tree.current == targets[0], name
            await pilot.press("enter")
            await settle(app, pilot)
            assert app.focused is source, name
            row = source.cursor_location[0]
            assert row == nested.line - 1, name
            assert source.render_line(row - source.scroll_offset.y).text.split(" ", 2)[2].startswith(NESTED_TAG), name
