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
from textual.widgets import Footer, Header, TabbedContent, TabPane

from ...core.convert import default_target
from ...core.preview import Budget
from ..messages import (
    ChunksComputed,
    DocumentConverted,
    DocumentLoaded,
    DocumentSelected,
    DocumentsListed,
    FindingSelected,
    StatusesValidated,
)
from ..widgets.chunk_preview import ChunkPreview
from ..widgets.document_summary import DocumentSummary
from ..widgets.document_tree import DocumentTree
from ..widgets.findings_pane import FindingsPane
from ..widgets.source_view import SourceView
from .confirm import ConfirmScreen

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
        Binding("1", "show_tab('source-tab')", "Source", id="show-source"),
        Binding("2", "show_tab('chunks-tab')", "Chunks", id="show-chunks"),
    ]

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.current: Path | None = None  # the document the panes show (or are about to)
        self.budget: Budget | None = None  # None: preview the document's own tags
        self.current_has_tags = False

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
                with TabbedContent(id="lower", initial="source-tab"):
                    with TabPane("Source", id="source-tab"):
                        yield SourceView(id="source")
                    with TabPane("Chunks", id="chunks-tab"):
                        yield ChunkPreview(id="preview")
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
        self.current_has_tags = report.body_chunks > 0
        if not report.readable:
            self.query_one(ChunkPreview).show_message(report.problem or "Nothing to chunk.")
            return
        budget = None if (self.current_has_tags and self.budget is None) else (self.budget or Budget(*self.query_one(ChunkPreview).budget))
        self.workbench.chunk_document(report.path, budget, self, keep_selection=message.reloaded)

    @on(ChunksComputed)
    def _chunks_computed(self, message: ChunksComputed) -> None:
        if message.path != self.current:
            return
        self.query_one(ChunkPreview).show_spans(message.text, message.spans, message.what, message.keep_selection)

    @on(ChunkPreview.RechunkRequested)
    def _rechunk(self, message: ChunkPreview.RechunkRequested) -> None:
        self.budget = Budget(message.unit, message.size, message.overlap)
        if self.current is not None:
            self.workbench.chunk_document(self.current, self.budget, self, keep_selection=True)

    @on(ChunkPreview.ConvertRequested)
    def _convert(self) -> None:
        if self.current is None:
            self.notify("Select a document first.", severity="warning", timeout=2)
            return
        if self.current_has_tags:
            self.notify("This is already a CtxFST document: its <Chunk> tags are the boundaries.", severity="warning")
            return
        source = self.current
        target = default_target(source)
        budget = self.budget or Budget(*self.query_one(ChunkPreview).budget)
        n = len(self.query_one(ChunkPreview).query_one("#chunk-map").spans)
        question = f"Convert [b]{source.name}[/] to CtxFST with the {n} chunks shown ({budget.size} {budget.unit})?\n\nIt will be written to [b]{target}[/]."
        if target.exists():
            question += "\n\n[b $warning]That file exists and will be overwritten.[/]"

        def answered(yes: bool | None) -> None:
            if yes:
                self.workbench.convert_document(source, budget, target, self)

        self.app.push_screen(ConfirmScreen(question, yes="Convert"), answered)

    @on(DocumentConverted)
    def _converted(self, message: DocumentConverted) -> None:
        if message.error:
            self.notify(f"{message.source.name}: {message.error}", title="Not converted", severity="error", timeout=8)
            return
        self.notify(f"Wrote {message.target} ({message.chunks} chunks).", title="Converted", timeout=5)
        self.workbench.scan_folder(self.root, self)

    # ------------------------------------------------------------ intents from panes
    @on(DocumentSelected)
    def _document_selected(self, message: DocumentSelected) -> None:
        self._open(message.path)

    @on(FindingSelected)
    def _finding_selected(self, message: FindingSelected) -> None:
        source = self.query_one(SourceView)
        source.goto(message.line, message.column)
        self.query_one(ChunkPreview).query_one("#chunk-map").select_line(message.line)
        if message.focus:
            self.query_one(TabbedContent).active = "source-tab"
            source.focus()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        target = self.query_one(SourceView) if tab == "source-tab" else self.query_one("#chunk-map")
        target.focus()

    def action_reload(self) -> None:
        if self.current is None:
            self.notify("Select a document first.", severity="warning", timeout=2)
            return
        self._open(self.current, reloaded=True)

    def _open(self, path: Path, reloaded: bool = False) -> None:
        if path != self.current:
            self.budget = None  # a newly opened document first shows its own boundaries
        self.current = path
        self.query_one(DocumentTree).mark_opened(path)
        if not reloaded:
            self.query_one(DocumentSummary).show_loading(path)
        self.workbench.open_document(path, self.root, self, reloaded)
