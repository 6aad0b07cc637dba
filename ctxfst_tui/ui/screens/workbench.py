"""The workbench screen: tree on the left; summary, findings and source on the right.

The screen mediates: panes post intents (DocumentSelected, FindingSelected), the screen asks
the App's workers to call the core, and hands the results (Messages) down to the panes.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header

from ..messages import DocumentLoaded, DocumentSelected, DocumentsListed, FindingSelected, StatusesValidated
from ..widgets.document_summary import DocumentSummary
from ..widgets.document_tree import DocumentTree
from ..widgets.findings_pane import FindingsPane
from ..widgets.source_view import SourceView

if TYPE_CHECKING:
    from ..app import WorkbenchApp


class WorkbenchScreen(Screen[None]):
    """One folder's documents, and the one that is open."""

    # Below 140 columns the summary stacks above the findings instead of beside them.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]

    BINDINGS = [
        Binding("r", "reload", "Reload", id="reload", tooltip="Read the selected document again from disk"),
        Binding("tab", "app.focus_next", "Next pane", id="next-pane"),
        Binding("shift+tab", "app.focus_previous", "Previous pane", id="previous-pane"),
    ]

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.current: Path | None = None  # the document the panes show (or are about to)

    @property
    def workbench(self) -> "WorkbenchApp":
        return cast("WorkbenchApp", self.app)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="workbench"):
            yield DocumentTree(self.root, id="document-tree")
            with Vertical(id="document-panes"):
                with Horizontal(id="overview"):
                    yield DocumentSummary(id="summary")
                    yield FindingsPane(id="findings")
                yield SourceView(id="source")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DocumentTree).focus()
        self.workbench.scan_folder(self.root, self)

    # ------------------------------------------------------------ results from workers
    @on(DocumentsListed)
    def _listed(self, message: DocumentsListed) -> None:
        self.query_one(DocumentTree).show_documents(message.root, message.paths)

    @on(StatusesValidated)
    def _validated(self, message: StatusesValidated) -> None:
        self.query_one(DocumentTree).set_statuses(message.statuses)

    @on(DocumentLoaded)
    def _loaded(self, message: DocumentLoaded) -> None:
        report = message.report
        if report.path != self.current:
            return  # the user has moved on to another document
        self.query_one(DocumentTree).set_statuses({report.path: report.status})
        self.query_one(DocumentSummary).show_report(report)
        self.query_one(FindingsPane).show_findings(report.findings, keep_cursor=message.reloaded)
        self.query_one(SourceView).show_text(
            report.text, report.display_path, keep_position=message.reloaded, note=report.source_note
        )
        if message.reloaded:
            self.notify(f"Reloaded {report.display_path}", timeout=2)

    # ------------------------------------------------------------ intents from panes
    @on(DocumentSelected)
    def _document_selected(self, message: DocumentSelected) -> None:
        self._open(message.path)

    @on(FindingSelected)
    def _finding_selected(self, message: FindingSelected) -> None:
        source = self.query_one(SourceView)
        source.goto(message.line, message.column)
        if message.focus:
            source.focus()

    def action_reload(self) -> None:
        if self.current is None:
            self.notify("Select a document first.", severity="warning", timeout=2)
            return
        self._open(self.current, reloaded=True)

    def _open(self, path: Path, reloaded: bool = False) -> None:
        self.current = path
        self.query_one(DocumentTree).mark_opened(path)
        if not reloaded:
            self.query_one(DocumentSummary).show_loading(path)
        self.workbench.open_document(path, self.root, self, reloaded)
