"""The workbench screen: tree on the left; summary and findings over Source / Chunks / Entities / Diagnosis / Summary.

The screen mediates: it lays the panes out, switches tabs, opens documents and keeps the
panes' highlights in step (a chunk, a finding, an entity). Panes post intents (a document
chosen, a merge asked for…); the screen's thin handlers hand them to one controller per
feature, each holding a reference to the screen:

* :class:`~.editing.Editing` – entity merges and edits, aliases, fixes, undo/redo, save, convert;
* :class:`~.model_jobs.ModelJobs` – contextualize and extract-entities jobs, and every job's end;
* :class:`~.summary.Summaries` – the Summary tab's novel and its summary jobs;
* :class:`~.disk.DiskReactions` – what other programs change in the folder;
* :class:`~.retrieval.Retrieval` – the Retrieval tab's index, kept up to date with every edit.

Handlers live here because Textual dispatches messages and actions to DOM nodes only. The
palette's commands are this screen's (``COMMANDS``); the App's keys for screen actions name
them as ``screen.…``.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Header, Input, TabbedContent, TabPane

from ctxfst_tui.core.chunking.preview import Budget
from ctxfst_tui.core.chunking.spans import ChunkSpan
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.entity_links import chunks_linking
from ctxfst_tui.services.analysis import DiagnosisItem, EntityInfo
from ctxfst_tui.services.report import DocumentStatus, validation_summary
from ctxfst_tui.ui.messages import (
    ChunksComputed,
    DiskChanged,
    DocumentConverted,
    DocumentLoaded,
    DocumentsListed,
    JobFinished,
    JobProgressed,
    NovelChecked,
    NovelOpened,
    StatusesValidated,
    SummaryNodeChanged,
    WorkspaceAnalysed,
    WorkspaceLoaded,
    WorkspaceSaved,
)
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.screens.workbench.commands import WorkbenchCommands
from ctxfst_tui.ui.screens.workbench.disk import DiskReactions
from ctxfst_tui.ui.screens.workbench.editing import Editing
from ctxfst_tui.ui.screens.workbench.model_jobs import ModelJobs
from ctxfst_tui.ui.screens.workbench.retrieval import Retrieval
from ctxfst_tui.ui.screens.workbench.summary import Summaries
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.chunks.preview import ChunkPreview
from ctxfst_tui.ui.widgets.diagnosis.findings import FindingsPane
from ctxfst_tui.ui.widgets.diagnosis.pane import DiagnosisPane
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from ctxfst_tui.ui.widgets.document.summary import DocumentSummary
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.entities.panel import ClusterList, EntityPanel, EntityTable
from ctxfst_tui.ui.widgets.footer import KeyFooter
from ctxfst_tui.ui.widgets.jobs.status import JobStatus
from ctxfst_tui.ui.widgets.retrieval.pane import RetrievalPane
from ctxfst_tui.ui.widgets.status_bar import StatusBar
from ctxfst_tui.ui.widgets.summary.tree import SummaryPane

if TYPE_CHECKING:
    from ctxfst_tui.services.jobs import Job
    from ctxfst_tui.services.session import Session
    from ctxfst_tui.ui.app import WorkbenchApp

WORKSPACE_TABS = {"entities-tab", "diagnosis-tab"}
FULL_HEIGHT_TABS = WORKSPACE_TABS | {"summary-tab", "retrieval-tab"}  # the open document's summary and findings step aside
TABS = {"source-tab": "#source", "chunks-tab": "#chunk-map", "entities-tab": "#entity-table", "diagnosis-tab": "#diagnosis-tree",
        "summary-tab": "#summary-tree", "retrieval-tab": "#retrieval-query"}
MODEL_ACTIONS = ("contextualize", "extract_entities")  # the App's priority keys for them stand aside in inputs


class WorkbenchScreen(Screen[None]):
    """One folder's documents, and the one that is open."""

    # Below 140 columns the summary stacks above the findings instead of beside them; below 36
    # rows the overview steps aside (the status bar carries the verdict) unless the user asks for it.
    HORIZONTAL_BREAKPOINTS = [(0, "-compact"), (90, "-narrow"), (140, "-wide")]  # -compact: 80×24
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]
    TREE_WIDTH = (16, 80)  # what [ and ] may set the tree's width to
    COMMANDS = {WorkbenchCommands}

    PANES = Binding.Group("Pane")
    UNDO = Binding.Group("Undo/redo")
    MODEL = Binding.Group("Model")
    TABS = Binding.Group("Tab", compact=True)
    BINDINGS = [
        Binding("r", "reload", "Reload", id="reload", tooltip="Read the selected document again from disk"),
        Binding("tab", "app.focus_next", "Next pane", id="next-pane", group=PANES),
        Binding("shift+tab", "app.focus_previous", "Previous pane", id="previous-pane", group=PANES),
        Binding("1", "show_tab('source-tab')", "Source", id="show-source", group=TABS),
        Binding("2", "show_tab('chunks-tab')", "Chunks", id="show-chunks", group=TABS),
        Binding("3", "show_tab('entities-tab')", "Entities", id="show-entities", group=TABS),
        Binding("4", "show_tab('diagnosis-tab')", "Diagnosis", id="show-diagnosis", group=TABS),
        Binding("5", "show_tab('summary-tab')", "Summary", id="show-summary", group=TABS),
        Binding("6", "show_tab('retrieval-tab')", "Retrieval", id="show-retrieval", group=TABS),
        Binding("ctrl+b", "toggle_tree", "Tree", id="toggle-tree", show=False,
                tooltip="Hide or show the document tree (the views take the whole width)"),
        Binding("o", "toggle_overview", "Overview", id="toggle-overview", show=False,
                tooltip="Hide or show the open document's summary and findings above the views"),
        Binding("[", "tree_width(-4)", "Narrower tree", id="tree-narrower", show=False),
        Binding("]", "tree_width(4)", "Wider tree", id="tree-wider", show=False),
        Binding("u,ctrl+z", "undo", "Undo", id="undo", tooltip="Undo the last edit of the session", group=UNDO),
        Binding("U,ctrl+y", "redo", "Redo", id="redo", tooltip="Redo the last undone edit", group=UNDO),
        Binding("ctrl+s", "save", "Save", id="save", tooltip="Save every document with unsaved changes"),
        # The model keys are priority bindings (the source view and inputs would take ctrl+k / ctrl+e),
        # the workbench's: in a modal the key is the focused widget's again.
        Binding("ctrl+k", "contextualize", "Contextualize", id="contextualize", group=MODEL, priority=True,
                tooltip="Write a retrieval note into each chunk's context with the model"),
        Binding("ctrl+e", "extract_entities", "Extract entities", id="extract-entities", group=MODEL, priority=True,
                tooltip="Propose entities and chunk links for the open document, then review them"),
    ]

    def __init__(self, root: Path, restore: Path | None = None, tab: str | None = None,
                 layout: dict[str, Any] | None = None) -> None:
        """``restore``: the document to open once the folder is listed; ``tab``: source, chunks, …;
        ``layout``: ``tree_width``, ``tree`` (shown), ``overview`` (auto / shown / hidden), as saved."""
        super().__init__()
        self._layout = dict(layout or {})
        self.root = root
        self._restore = restore
        self._initial_tab = f"{tab}-tab" if f"{tab}-tab" in TABS else "source-tab"
        self.current: Path | None = None  # the document the panes show (or are about to)
        self.current_doc: Document | None = None  # a worker-side copy of it, for re-chunking
        self.budget: Budget | None = None  # None: preview the document's own tags
        self.current_has_tags = False
        self.documents: list[Path] = []  # the documents the tree lists (what "Open …" in the palette offers)
        self.spans: list[ChunkSpan] = []  # the open document's chunks as the preview shows them
        self.tree_width: int | None = None  # set by [ ] (or the saved layout); None: the stylesheet's
        self._jump: DiagnosisItem | None = None  # a finding to show once its document is open
        self.discard: Path | None = None  # a document whose unsaved edits the user agreed to drop
        self.validating: dict[Path, DocumentStatus] | None = None  # "Validate folder": the statuses found so far
        self.cursor_to: Path | None = None  # a document the tree's cursor goes to once it is listed (a converted file)
        self._analysed_version = -1
        self.editing = Editing(self)
        self.model_jobs = ModelJobs(self)
        self.summary = Summaries(self)
        self.disk = DiskReactions(self)
        self.retrieval = Retrieval(self)

    @property
    def workbench(self) -> "WorkbenchApp":
        return cast("WorkbenchApp", self.app)

    @property
    def session(self) -> "Session":
        return self.workbench.session

    @property
    def analysed_version(self) -> int:
        """The workspace version the shown statuses, entities and findings are of (-1: none yet)."""
        return self._analysed_version

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="workbench"):
            yield DocumentTree(self.root, id="document-tree")
            with Vertical(id="document-panes"):
                with Horizontal(id="overview"):
                    yield DocumentSummary(id="summary")
                    yield FindingsPane(id="findings")
                with TabbedContent(id="lower", initial=self._initial_tab):
                    with TabPane("Source", id="source-tab"):
                        yield SourceView(id="source")
                    with TabPane("Chunks", id="chunks-tab"):
                        yield ChunkPreview(id="preview")
                    with TabPane("Entities", id="entities-tab"):
                        yield EntityPanel(id="entities")
                    with TabPane("Diagnosis", id="diagnosis-tab"):
                        yield DiagnosisPane(id="diagnosis")
                    with TabPane("Summary", id="summary-tab"):
                        yield SummaryPane(id="summary-pane")
                    with TabPane("Retrieval", id="retrieval-tab"):
                        yield RetrievalPane(id="retrieval")
        yield JobStatus(id="job-status")
        yield StatusBar(id="status-bar")
        yield KeyFooter()

    def on_mount(self) -> None:
        width = self._layout.get("tree_width")
        if isinstance(width, int) and not isinstance(width, bool):
            self.action_tree_width(0, width)
        if self._layout.get("tree") is False:
            self.add_class("-tree-hidden")
        overview = self._layout.get("overview")
        if overview in ("shown", "hidden"):
            self.add_class(f"-overview-{overview}")
        self.query_one(DocumentTree).focus()
        self.workbench.scan_folder(self.root, self)
        if self.workbench.watch_disk:
            self.workbench.watch_folder(self.root, self)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MODEL_ACTIONS:
            return not isinstance(self.focused, Input)  # inputs keep ctrl+e / ctrl+k
        return True

    # ------------------------------------------------------------ results from workers
    @on(DocumentsListed)
    def _listed(self, message: DocumentsListed) -> None:
        listed = set(message.paths)
        gone = sorted(p for p in self.session.dirty_paths if p not in listed)  # deleted on disk, edits kept
        self.documents = [*message.paths, *gone]
        if self.validating is not None:
            self.validating = {}  # this listing's scan is the one that reports (an earlier one was cancelled)
        tree = self.query_one(DocumentTree)
        cursor = self.cursor_to if self.cursor_to in listed else None
        if cursor is not None:
            self.cursor_to = None
        tree.show_documents(message.root, self.documents, cursor=cursor)
        for path in gone:
            tree.mark_deleted(path)
        self.editing.show_unsaved()
        restore, self._restore = self._restore, None
        if restore is not None and self.current is None and restore in message.paths:
            self.open(restore)  # what was open when the app last closed on this folder

    @on(StatusesValidated)
    def _validated(self, message: StatusesValidated) -> None:
        # Statuses read from disk are stale for documents edited in memory (the analysis has them).
        dirty = self.session.dirty_paths
        self.query_one(DocumentTree).set_statuses({p: s for p, s in message.statuses.items() if p not in dirty})
        if self.validating is not None:
            self.validating.update(message.statuses)

    @on(WorkspaceLoaded)
    def _workspace_loaded(self, message: WorkspaceLoaded) -> None:
        replaced = self.session.adopt(message.workspace)
        if self.validating is not None:  # the scan "Validate folder" started is over: what it found
            found, self.validating = self.validating, None
            listed = set(self.documents)
            statuses = {p: s for p, s in found.items() if p in listed}
            unsaved = len(self.session.dirty_paths & set(statuses))
            trouble = any(s.errors or s.warnings for s in statuses.values())
            self.notify(validation_summary(statuses, unsaved), title="Validated",
                        severity="warning" if trouble else "information", timeout=10 if trouble else 5)
        if self.current in replaced:
            self.open(self.current, reloaded=True)  # changed on disk while held without edits
        self.editing.analyse()
        self.retrieval.loaded()
        self.workbench.journal.offer(self)  # the first time: unsaved edits a crash left behind

    @on(WorkspaceAnalysed)
    def _analysed(self, message: WorkspaceAnalysed) -> None:
        analysis = message.analysis
        if analysis.version != self.session.version:
            return  # the workspace changed since; a newer analysis is on its way
        self._analysed_version = analysis.version
        self.query_one(DocumentTree).set_statuses(analysis.statuses)
        self.query_one(EntityPanel).show(analysis.entities, analysis.clusters)
        self.query_one(DiagnosisPane).show_findings(analysis.findings, len(analysis.statuses))

    @on(DocumentLoaded)
    def _loaded(self, message: DocumentLoaded) -> None:
        report = message.report
        if report.path != self.current:
            return  # the user has moved on to another document
        if message.from_disk and report.document is not None and self.session.document(report.path) is not None:
            if self.session.is_dirty(report.path) and self.discard != report.path:
                self.open(report.path, reloaded=message.reloaded)  # stale disk read: show the edits instead
                return
            self.discard = None
            if report.readable and self.session.replace_document(Document(report.document.raw, report.path)):
                self.editing.edited(refresh_open=False)
        self.current_doc = report.document
        self.query_one(DocumentTree).set_statuses({report.path: report.status})
        self.query_one(StatusBar).show_document(report.display_path, report.status)
        self.query_one(DocumentSummary).show_report(report)
        self.query_one(FindingsPane).show_findings(report.findings, keep_cursor=message.reloaded)
        name = report.display_path + (" ●" if report.unsaved else "")
        self.query_one(SourceView).show_text(report.text, name, keep_position=message.reloaded, note=report.source_note)
        if message.reloaded and message.from_disk:
            self.notify(f"Reloaded {report.display_path}", timeout=2)
        self.current_has_tags = report.body_chunks > 0
        if self._jump is not None and self._jump.path == report.path:
            self._show_place(self._jump, chunks_ready=False)
        preview = self.query_one(ChunkPreview)
        if not report.readable or report.document is None:
            self.spans = []
            preview.show_message(report.problem or "Nothing to chunk.")
            return
        budget = None if (self.current_has_tags and self.budget is None) else (self.budget or Budget(*preview.budget))
        self.workbench.chunk_document(report.document, budget, self, keep_selection=message.reloaded)

    @on(ChunksComputed)
    def _chunks_computed(self, message: ChunksComputed) -> None:
        if message.path != self.current:
            return
        self.spans = list(message.spans)
        self.query_one(ChunkPreview).show_spans(message.text, message.spans, message.what, message.keep_selection)
        self.query_one(StatusBar).show_chunks(len(message.spans), sum(s.tokens for s in message.spans), message.what)
        if self._jump is not None and self._jump.path == message.path:
            self._select_chunk(self._jump)
            self._jump = None

    @on(DocumentConverted)
    def _converted(self, message: DocumentConverted) -> None:
        self.editing.converted(message)

    @on(WorkspaceSaved)
    def _saved(self, message: WorkspaceSaved) -> None:
        self.editing.saved(message)

    @on(DiskChanged)
    def _disk_changed(self, message: DiskChanged) -> None:
        self.disk.changed(message)

    @on(JobProgressed)
    def _job_progressed(self, message: JobProgressed) -> None:
        self.model_jobs.progressed(message)

    @on(JobFinished)
    def _job_finished(self, message: JobFinished) -> None:
        self.model_jobs.finished(message)

    @on(NovelOpened)
    def _novel_opened(self, message: NovelOpened) -> None:
        self.summary.opened(message)

    @on(NovelChecked)
    def _novel_checked(self, message: NovelChecked) -> None:
        self.summary.checked(message)

    @on(SummaryNodeChanged)
    def _summary_node_changed(self, message: SummaryNodeChanged) -> None:
        self.summary.node_changed(message)

    # ------------------------------------------------------------ intents from panes
    @on(DocumentTree.DocumentSelected)
    def on_document_tree_document_selected(self, message: DocumentTree.DocumentSelected) -> None:
        self.open(message.path)

    @on(FindingsPane.FindingSelected)
    def on_findings_pane_finding_selected(self, message: FindingsPane.FindingSelected) -> None:
        source = self.query_one(SourceView)
        source.goto(message.line, message.column)
        self.query_one(ChunkMap).select_line(message.line)
        if message.focus:
            self.query_one(TabbedContent).active = "source-tab"
            source.focus()

    @on(DiagnosisPane.DiagnosisChosen)
    def on_diagnosis_pane_diagnosis_chosen(self, message: DiagnosisPane.DiagnosisChosen) -> None:
        item = message.item
        if item.entity_ids and isinstance(item.entity_ids[0], str):
            self.query_one(EntityTable).highlight(item.entity_ids[0])
        if item.path == self.current and self.current_doc is not None:
            self._show_place(item, chunks_ready=True)
            return
        self._jump = item
        self.query_one(DocumentTree).mark_opened(item.path)
        self.open(item.path)

    @on(DiagnosisPane.FixRequested)
    def on_diagnosis_pane_fix_requested(self, message: DiagnosisPane.FixRequested) -> None:
        self.editing.fix(message.item)

    @on(ClusterList.MergeRequested)
    def on_cluster_list_merge_requested(self, message: ClusterList.MergeRequested) -> None:
        self.editing.merge(message.into, message.merged, message.tier)

    @on(EntityTable.EntityEditRequested)
    def on_entity_table_entity_edit_requested(self, message: EntityTable.EntityEditRequested) -> None:
        self.editing.edit_requested(message.entity, message.what)

    @on(SummaryPane.SummarizeRequested)
    def on_summary_pane_summarize_requested(self, message: SummaryPane.SummarizeRequested) -> None:
        self.summary.requested(message.node_id, message.label)

    @on(RetrievalPane.ChunkOpenRequested)
    def on_retrieval_pane_chunk_open_requested(self, message: RetrievalPane.ChunkOpenRequested) -> None:
        self.retrieval.open_chunk(message.path, message.chunk_id)

    @on(RetrievalPane.ScoreboardChanged)
    def on_retrieval_pane_scoreboard_changed(self, message: RetrievalPane.ScoreboardChanged) -> None:
        self.retrieval.scoreboard_changed(message.changes)

    @on(ChunkPreview.RechunkRequested)
    def _rechunk(self, message: ChunkPreview.RechunkRequested) -> None:
        if message.document != self.current:
            return  # typed for a document that is no longer open (the preview kept it for that one)
        self.budget = Budget(message.unit, message.size, message.overlap)
        if self.current is not None and self.current_doc is not None:
            self.workbench.chunk_document(self.current_doc, self.budget, self, keep_selection=True)

    @on(ChunkPreview.ConvertRequested)
    def _convert_requested(self) -> None:
        self.editing.convert()

    def show_item(self, item: DiagnosisItem) -> None:
        """Open ``item``'s document at its line, its chunk selected in the preview (a search result)."""
        if item.path == self.current and self.current_doc is not None:
            self._show_place(item, chunks_ready=True)
            return
        self._jump = item
        self.query_one(DocumentTree).mark_opened(item.path)
        self.open(item.path)

    def _show_place(self, item: DiagnosisItem, chunks_ready: bool) -> None:
        """Source view at the finding's line (Source tab, focused); chunk map on its chunk."""
        source = self.query_one(SourceView)
        source.goto(item.line, item.column)
        self.query_one(TabbedContent).active = "source-tab"
        source.focus()
        if chunks_ready:
            self._select_chunk(item)
            self._jump = None

    def _select_chunk(self, item: DiagnosisItem) -> None:
        chunk_map = self.query_one(ChunkMap)
        if not (item.chunk_ids and chunk_map.select_id(item.chunk_ids[0])):
            chunk_map.select_line(item.line)

    # ------------------------------------------------------------ tabs
    @on(TabbedContent.TabActivated, "#lower")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # The workspace-wide panes and the summary tree get the whole height: the open document's summary steps aside.
        self.set_class(event.pane.id in FULL_HEIGHT_TABS, "-workspace-tab")
        if event.pane.id != "entities-tab":
            # ◆ in the tree is the highlighted entity's documents: only while the Entities tab shows it
            self.query_one(DocumentTree).mark_related(set())
        if event.pane.id == "summary-tab":
            self.summary.show(self.current)
        elif event.pane.id == "entities-tab":
            self._mark_entity(self.query_one(EntityTable).current)
        elif event.pane.id == "retrieval-tab":
            self.retrieval.shown()

    @property
    def summary_tab_shown(self) -> bool:
        return self.query_one(TabbedContent).active == "summary-tab"

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        if tab == "summary-tab":
            self.summary.show(self.current)  # before the tab-activated message: the tree may be shown at once
            if self.query_one(SummaryPane).view is None:
                self.summary.focus_pending = True  # once the novel is read
                return
        self.query_one(TABS[tab]).focus()

    # ------------------------------------------------------------ cross-highlighting
    @on(ChunkMap.ChunkHighlighted)
    def _chunk_highlighted(self, message: ChunkMap.ChunkHighlighted) -> None:
        """The chunk selected in the preview is the band highlighted in the source."""
        span = message.span
        source = self.query_one(SourceView)
        if span is None:
            source.clear_highlight()
        else:
            source.highlight_lines(span.line, span.end_line)

    @on(SourceView.CursorMoved)
    def _source_cursor_moved(self, message: SourceView.CursorMoved) -> None:
        """Moving through the source selects the chunk under the cursor in the preview."""
        if message.source_view.has_focus:
            self.query_one(ChunkMap).select_line(message.line)

    @on(EntityTable.RowHighlighted)
    def _entity_highlighted(self, message: EntityTable.RowHighlighted) -> None:
        """The entity under the cursor: its documents marked in the tree, the open document's
        chunks that link it marked in the preview and highlighted in the source."""
        if isinstance(message.data_table, EntityTable) and self.query_one(TabbedContent).active == "entities-tab":
            self._mark_entity(message.data_table.current)  # (not while the table fills in unseen)

    def _mark_entity(self, entity: EntityInfo | None) -> None:
        tree, chunk_map = self.query_one(DocumentTree), self.query_one(ChunkMap)
        if entity is None:
            tree.mark_related(set())
            chunk_map.mark_ids(set())
            return
        tree.mark_related({self.root / d for d in entity.documents})
        linking = chunks_linking(self.session.document(self.current) or self.current_doc, entity.id)
        chunk_map.mark_ids(linking)
        ranges = [(s.line, s.end_line) for s in self.spans if s.id in linking]
        if ranges:
            self.query_one(SourceView).highlight_ranges(ranges)

    # ------------------------------------------------------------ opening
    def open(self, path: Path, reloaded: bool = False, from_disk: bool = False) -> None:
        """Show ``path`` in the panes: validated in a worker (its in-memory text when held)."""
        if path != self.current:
            # Each document keeps its own chunk budget; until one is set it shows its own tags
            # (a CtxFST document) or the chunker's defaults (a plain note): None.
            self.budget = self.query_one(ChunkPreview).use_document(path)
            self.current_doc = None
        self.current = path
        self.query_one(DocumentTree).mark_opened(path)
        if self.summary_tab_shown:
            self.summary.show(path)
        if not reloaded:
            self.query_one(DocumentSummary).show_loading(path)
        data = None if from_disk else self.session.snapshot(path)
        self.workbench.open_document(path, self.root, self, reloaded, data, self.session.is_dirty(path))

    def open_path(self, path: Path) -> None:
        """The palette's "Open …"."""
        self.query_one(DocumentTree).mark_opened(path)
        self.open(path)

    def action_reload(self) -> None:
        if self.current is None:
            self.notify("Select a document first.", severity="warning", timeout=2)
            return
        path = self.current
        if self.summary_tab_shown and path == self.summary.novel_path:
            self.summary.reload()
        if not self.session.is_dirty(path):
            self.open(path, reloaded=True, from_disk=True)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.discard = path
                self.open(path, reloaded=True, from_disk=True)

        question = f"[b]{self.session.label(path)}[/] has unsaved changes. Read it again from disk and drop them?"
        self.app.push_screen(ConfirmScreen(question, yes="Reload", focus_yes=False), answered)

    # ------------------------------------------------------------ actions (keys and palette)
    def action_undo(self) -> None:
        self.editing.undo()

    def action_redo(self) -> None:
        self.editing.redo()

    def action_save(self) -> None:
        self.editing.save()

    def action_convert(self) -> None:
        self.editing.convert()

    def action_contextualize(self) -> None:
        self.model_jobs.contextualize()

    def action_extract_entities(self) -> None:
        self.model_jobs.extract_entities()

    def action_summarize_node(self) -> None:
        self.summary.summarize(book=False)

    def action_summarize_book(self) -> None:
        self.summary.summarize(book=True)

    def job_cancelling(self, job: "Job") -> None:
        """The App's escape set the job's cancel event: say so until it stops."""
        self.model_jobs.cancelling(job)

    def action_rechunk(self) -> None:
        """The Chunks tab with the size field focused: type a budget and the document re-chunks."""
        if self.current is None:
            self.notify("Select a document first.", severity="warning", timeout=2)
            return
        self.query_one(TabbedContent).active = "chunks-tab"
        self.query_one(ChunkPreview).action_edit_size()

    def action_validate(self) -> None:
        """Validate every document of the folder again (the tree's marks) and the open one."""
        self.validating = {}  # filled by the scan's batches; said once it ends (WorkspaceLoaded)
        self.workbench.scan_folder(self.root, self)  # the open document follows if its text changed
        self.notify("Validating the folder…", timeout=2)

    def action_diagnose(self) -> None:
        self.editing.analyse()
        self.action_show_tab("diagnosis-tab")

    def action_apply_fix(self) -> None:
        """The fix of the finding highlighted in the Diagnosis tab (as `f` there)."""
        self.action_show_tab("diagnosis-tab")
        self.query_one(DiagnosisPane).action_fix()

    def action_merge(self) -> None:
        """The merge suggestion highlighted in the Entities tab (as `m` there): its diff, then merge."""
        self.query_one(TabbedContent).active = "entities-tab"
        clusters = self.query_one(ClusterList)
        clusters.focus()
        clusters.action_merge()

    # ------------------------------------------------------------ layout
    def layout_state(self) -> dict[str, Any]:
        """What ``layout`` restores next time: the tree's width and visibility, the overview's mode."""
        state: dict[str, Any] = {"tree": not self.has_class("-tree-hidden")}
        if self.tree_width is not None:
            state["tree_width"] = self.tree_width
        overview = "shown" if self.has_class("-overview-shown") else "hidden" if self.has_class("-overview-hidden") else "auto"
        state["overview"] = overview
        return state

    def action_tree_width(self, delta: int, absolute: int | None = None) -> None:
        tree = self.query_one(DocumentTree)
        current = self.tree_width if self.tree_width is not None else tree.outer_size.width or 30
        low, high = self.TREE_WIDTH
        self.tree_width = max(low, min(high, absolute if absolute is not None else current + delta))
        tree.styles.width = self.tree_width

    def action_toggle_tree(self) -> None:
        tree = self.query_one(DocumentTree)
        hidden = not self.has_class("-tree-hidden")
        if hidden and tree.has_focus:
            self.query_one(TABS[str(self.query_one(TabbedContent).active)]).focus()
        self.set_class(hidden, "-tree-hidden")

    def action_toggle_overview(self) -> None:
        overview = self.query_one("#overview")
        visible = overview.display and not self.has_class("-workspace-tab")
        self.remove_class("-overview-shown", "-overview-hidden")
        self.add_class("-overview-hidden" if visible else "-overview-shown")
        if self.has_class("-workspace-tab") and not visible:
            self.action_show_tab("source-tab")  # the overview belongs to the document views
