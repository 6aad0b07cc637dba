"""The status bar renders what it is handed: verdict, chunks and tokens, unsaved edits, the job."""
from __future__ import annotations

from textual.app import App, ComposeResult

from ctxfst_tui.services.report import DocumentStatus
from ctxfst_tui.ui.widgets.status_bar import StatusBar


class BarApp(App[None]):
    def compose(self) -> ComposeResult:
        yield StatusBar(id="bar")


async def test_status_bar_says_what_is_open_and_whether_it_is_all_right():
    app = BarApp()
    async with app.run_test(size=(120, 3)) as pilot:
        bar = app.query_one(StatusBar)
        assert bar.text == "No document open"
        bar.show_document("runbook.ctxfst.md", DocumentStatus("errors", errors=2, warnings=1))
        bar.show_chunks(14, 5210)
        bar.show_unsaved(2)
        bar.show_job("Contextualizing runbook.ctxfst.md")
        await pilot.pause()
        assert bar.text == ("✗ runbook.ctxfst.md · invalid, 2 errors, 1 warning │ 14 chunks · 5,210 tokens"
                            " │ ● 2 unsaved (ctrl+s) │ model: Contextualizing runbook.ctxfst.md")
        bar.show_document("other.md", DocumentStatus("valid"))  # another document: its chunks are not known yet
        bar.show_unsaved(0)
        bar.show_job(None)
        assert bar.text == "✓ other.md · valid"
        bar.show_document("other.md", deleted=True)
        assert "deleted on disk" in bar.text
