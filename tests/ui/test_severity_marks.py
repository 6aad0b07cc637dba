"""One severity per rule in every pane (issue #15, item 4), as the user sees the marks.

A document without frontmatter: ▲ in the tree, ▲ valid with ▲ no-frontmatter in the overview
(validation warns, as the reference's validate), and ✗ no-valid-chunks in the Diagnosis view
(nothing to diagnose, an error, as the reference's diagnose): two findings with two names, each
shown with one mark. The data behind the marks is tested in tests/services/test_severities.py.
"""
from __future__ import annotations

from pathlib import Path

from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.widgets.diagnosis.findings import FindingsPane
from ctxfst_tui.ui.widgets.diagnosis.pane import DiagnosisTree
from ctxfst_tui.ui.widgets.document.summary import DocumentSummary
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from pilot import SIZE, open_document, settle, started


async def test_a_plain_note_is_marked_the_same_way_for_the_same_rule_everywhere(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Meeting notes\n\nWe talked about the deploy.\n", encoding="utf-8")
    app = WorkbenchApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        tree = screen.query_one(DocumentTree)
        node = next(tree.get_node_at_line(i) for i in range(tree.last_line + 1)
                    if tree.get_node_at_line(i).data == tmp_path / "notes.md")
        assert tree.render_label(node, tree.rich_style, tree.rich_style).plain.startswith("▲")

        await open_document(app, pilot, "notes.md")
        summary = screen.query_one(DocumentSummary).text
        assert "Status: ▲ valid — 0 errors, 1 warning" in summary
        table = screen.query_one(FindingsPane)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [(r[0], r[2]) for r in rows] == [("▲", "no-frontmatter")]

        await pilot.press("4")
        await settle(app, pilot)
        diagnosis = screen.query_one(DiagnosisTree)
        assert [(i.severity, i.rule) for i in diagnosis.items] == [("error", "no-valid-chunks")]
        leaf = next(n for branch in diagnosis.root.children for n in branch.children)
        label = diagnosis.render_label(leaf, diagnosis.rich_style, diagnosis.rich_style).plain
        assert label.startswith("✗") and "no-valid-chunks" in label and "no-frontmatter" not in label
