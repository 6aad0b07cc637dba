"""The workbench screen: tree on the left; summary and findings over Source / Chunks / Entities / Diagnosis / Summary.

The screen mediates: panes post intents (DocumentSelected, FindingSelected, MergeRequested,
FixRequested…), the screen calls the core (entity operations and fixes directly, on the
session's in-memory workspace: they are fast; everything else through the App's workers)
and hands the results (Messages) down to the panes. After every edit, undo or redo it
refreshes what depends on the workspace: the open document, the entity table and the
suggested merges, the diagnosis, the tree's statuses and unsaved markers.

Model jobs run in the App's ``model`` worker on a snapshot of the open document; their progress
shows in the job status line, and their results come back here: notes are applied at once (one
undoable edit), proposed entities only after the review screen confirms them.

The Summary tab shows the open document as a novel's summary tree: the App segments it in a
worker (only while the tab is shown), this screen holds the NovelSession, and a summary job
runs on it in the ``model`` worker; the pane gets copies of the nodes as they start and finish.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, TabbedContent, TabPane

from ctxfst_tui.core.contextualize.options import ContextualizeOptions
from ctxfst_tui.core.contextualize.run import ContextualizeReport
from ctxfst_tui.core.chunking.convert import default_target
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.entity_ops import (
    EntityOpError,
    add_alias,
    delete_entity,
    merge_entities,
    remove_alias,
    rename_entity_id,
    update_entity,
)
from ctxfst_tui.core.workspace.undo import UndoRecord
from ctxfst_tui.core.entities.extract import Proposals
from ctxfst_tui.core.workspace.fixes import FixError, apply_fix
from ctxfst_tui.core.chunking.preview import Budget
from ctxfst_tui.core.workspace.watch import plan_reactions
from ctxfst_tui.services.analysis import DiagnosisItem, EntityInfo
from ctxfst_tui.core.summary import NovelSession, SummarySettings
from ctxfst_tui.services.jobs import (
    Job,
    SummaryOutcome,
    chunk_counts,
    contextualize_job,
    extract_job,
    format_duration,
    novel_view,
    summarize_job,
    write_notes,
    write_proposals,
)
from ctxfst_tui.ui.messages import (
    ChunksComputed,
    DiagnosisChosen,
    DiskChanged,
    DocumentConverted,
    DocumentLoaded,
    DocumentSelected,
    DocumentsListed,
    EntityEditRequested,
    FindingSelected,
    FixRequested,
    JobFinished,
    JobProgress,
    MergeRequested,
    NovelOpened,
    StatusesValidated,
    SummarizeRequested,
    SummaryNodeChanged,
    WorkspaceAnalysed,
    WorkspaceLoaded,
    WorkspaceSaved,
)
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.chunks.preview import ChunkPreview
from ctxfst_tui.ui.widgets.diagnosis.pane import DiagnosisPane
from ctxfst_tui.ui.widgets.document.summary import DocumentSummary
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.entities.panel import ClusterList, EntityPanel, EntityTable
from ctxfst_tui.ui.widgets.diagnosis.findings import FindingsPane
from ctxfst_tui.ui.widgets.jobs.status import JobStatus
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from ctxfst_tui.ui.widgets.status_bar import StatusBar
from ctxfst_tui.ui.widgets.summary.tree import EMPTY as NO_NOVEL
from ctxfst_tui.ui.widgets.summary.tree import SummaryPane
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.screens.modals.contextualize import ContextualizeScreen
from ctxfst_tui.ui.screens.modals.diff import DiffScreen
from ctxfst_tui.ui.screens.modals.entity_edit import AliasEditScreen, EntityEditScreen
from ctxfst_tui.ui.screens.modals.proposals import ProposalsScreen

if TYPE_CHECKING:
    from ctxfst_tui.ui.app import WorkbenchApp
    from ctxfst_tui.services.session import Session

WORKSPACE_TABS = {"entities-tab", "diagnosis-tab"}
FULL_HEIGHT_TABS = WORKSPACE_TABS | {"summary-tab"}  # the open document's summary and findings step aside
TABS = {"source-tab": "#source", "chunks-tab": "#chunk-map", "entities-tab": "#entity-table", "diagnosis-tab": "#diagnosis-tree",
        "summary-tab": "#summary-tree"}
MANUSCRIPT_SUFFIXES = (".txt", ".md")  # what the Summary tab opens as a novel (not .ctxfst.md)


def is_manuscript(path: Path | None) -> bool:
    name = path.name.lower() if path is not None else ""
    return name.endswith(MANUSCRIPT_SUFFIXES) and not name.endswith(".ctxfst.md")


def _fold(s: str) -> str:
    return s.strip().casefold()


class WorkbenchScreen(Screen[None]):
    """One folder's documents, and the one that is open."""

    # Below 140 columns the summary stacks above the findings instead of beside them; below 36
    # rows the overview steps aside (the status bar carries the verdict) unless the user asks for it.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]
    TREE_WIDTH = (16, 80)  # what [ and ] may set the tree's width to

    PANES = Binding.Group("Pane")
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
        Binding("ctrl+b", "toggle_tree", "Tree", id="toggle-tree", show=False,
                tooltip="Hide or show the document tree (the views take the whole width)"),
        Binding("o", "toggle_overview", "Overview", id="toggle-overview", show=False,
                tooltip="Hide or show the open document's summary and findings above the views"),
        Binding("[", "tree_width(-4)", "Narrower tree", id="tree-narrower", show=False),
        Binding("]", "tree_width(4)", "Wider tree", id="tree-wider", show=False),
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
        self._jump: DiagnosisItem | None = None  # a finding to show once its document is open
        self._discard: Path | None = None  # a document whose unsaved edits the user agreed to drop
        self._analysed_version = -1
        self._asking: set[Path] = set()  # documents changed on disk whose "reload?" question is open
        self.novel: NovelSession | None = None  # the novel the Summary tab shows (None while it is read)
        self.novel_path: Path | None = None  # its path (set as soon as it is asked for)
        self._summary_session: NovelSession | None = None  # the novel a summary job is working on
        self._focus_summary = False  # focus the summary tree once the novel is shown (the user pressed 5)

    @property
    def workbench(self) -> "WorkbenchApp":
        return cast("WorkbenchApp", self.app)

    @property
    def session(self) -> "Session":
        return self.workbench.session

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
        yield JobStatus(id="job-status")
        yield StatusBar(id="status-bar")
        yield Footer()

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

    # ------------------------------------------------------------ results from workers
    @on(DocumentsListed)
    def _listed(self, message: DocumentsListed) -> None:
        tree = self.query_one(DocumentTree)
        listed = set(message.paths)
        gone = sorted(p for p in self.session.dirty_paths if p not in listed)  # deleted on disk, edits kept
        tree.show_documents(message.root, message.paths + gone)
        for path in gone:
            tree.mark_deleted(path)
        self._show_unsaved()
        restore, self._restore = self._restore, None
        if restore is not None and self.current is None and restore in message.paths:
            self._open(restore)  # what was open when the app last closed on this folder

    @on(StatusesValidated)
    def _validated(self, message: StatusesValidated) -> None:
        # Statuses read from disk are stale for documents edited in memory (the analysis has them).
        dirty = self.session.dirty_paths
        self.query_one(DocumentTree).set_statuses({p: s for p, s in message.statuses.items() if p not in dirty})

    @on(WorkspaceLoaded)
    def _workspace_loaded(self, message: WorkspaceLoaded) -> None:
        replaced = self.session.adopt(message.workspace)
        if self.current in replaced:
            self._open(self.current, reloaded=True)  # changed on disk while held without edits
        self._analyse()
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
            if self.session.is_dirty(report.path) and self._discard != report.path:
                self._open(report.path, reloaded=message.reloaded)  # stale disk read: show the edits instead
                return
            self._discard = None
            if report.readable and self.session.replace_document(Document(report.document.raw, report.path)):
                self._edited(refresh_open=False)
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
        if not report.readable or report.document is None:
            self.query_one(ChunkPreview).show_message(report.problem or "Nothing to chunk.")
            return
        budget = None if (self.current_has_tags and self.budget is None) else (self.budget or Budget(*self.query_one(ChunkPreview).budget))
        self.workbench.chunk_document(report.document, budget, self, keep_selection=message.reloaded)

    @on(ChunksComputed)
    def _chunks_computed(self, message: ChunksComputed) -> None:
        if message.path != self.current:
            return
        self.query_one(ChunkPreview).show_spans(message.text, message.spans, message.what, message.keep_selection)
        self.query_one(StatusBar).show_chunks(len(message.spans), sum(s.tokens for s in message.spans), message.what)
        if self._jump is not None and self._jump.path == message.path:
            self._select_chunk(self._jump)
            self._jump = None

    @on(ChunkPreview.RechunkRequested)
    def _rechunk(self, message: ChunkPreview.RechunkRequested) -> None:
        if message.document != self.current:
            return  # typed for a document that is no longer open (the preview kept it for that one)
        self.budget = Budget(message.unit, message.size, message.overlap)
        if self.current is not None and self.current_doc is not None:
            self.workbench.chunk_document(self.current_doc, self.budget, self, keep_selection=True)

    @on(ChunkPreview.ConvertRequested)
    def convert(self) -> None:
        if self.current is None:
            self.notify("Select a document first.", severity="warning", timeout=2)
            return
        if self.current_has_tags:
            self.notify("This is already a CtxFST document: its <Chunk> tags are the boundaries.", severity="warning")
            return
        source = self.current
        target = default_target(source)
        budget = self.budget or Budget(*self.query_one(ChunkPreview).budget)
        n = len(self.query_one(ChunkMap).spans)
        question = f"Convert [b]{source.name}[/] to CtxFST with the {n} chunks shown ({budget.size} {budget.unit})?\n\nIt will be written to [b]{target}[/]."
        if target.exists():
            question += "\n\n[b $warning]That file exists and will be overwritten.[/]"
            if self.session.is_dirty(target):
                question += "\n[b $error]It also has unsaved edits here, which will be lost.[/]"

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
        held = self.session.document(message.target)
        if held is not None and message.target is not None:
            # The file was overwritten on disk: hold the new text (the old edits are gone).
            self.session.replace_document(Document.load(message.target))
        self.workbench.scan_folder(self.root, self)

    @on(WorkspaceSaved)
    def _saved(self, message: WorkspaceSaved) -> None:
        edited = self.workbench.save_finished(message)  # only documents still holding the written text are clean
        self._show_unsaved()
        if edited:
            self.notify(f"{', '.join(self.session.label(p) for p in edited)}: edited while saving; "
                        "those edits are not saved yet (ctrl+s saves them).", severity="warning", timeout=6)
        if message.error:
            self.notify(message.error, title="Not saved", severity="error", timeout=8)
        elif message.written:
            names = ", ".join(self.session.label(p) for p in message.written[:3]) + (" …" if len(message.written) > 3 else "")
            count = len(message.written)
            self.notify(f"Saved {count} document{'s' if count != 1 else ''}: {names}", title="Saved", timeout=4)
        if self.current is not None and (message.written and self.current in message.written):
            self._open(self.current, reloaded=True)

    # ------------------------------------------------------------ changes made by other programs
    @on(DiskChanged)
    def _disk_changed(self, message: DiskChanged) -> None:
        tree = self.query_one(DocumentTree)
        for reaction in plan_reactions(message.changes, self.current, self.session.dirty_paths):
            path = reaction.path
            if reaction.action == "rescan":
                self.workbench.scan_folder(self.root, self)
            elif path is None:
                continue
            elif reaction.action == "mark-deleted":
                tree.mark_deleted(path)
                if reaction.is_open:
                    self.query_one(StatusBar).show_document(self.session.label(path), deleted=True)
                kept = self.session.is_dirty(path)
                self.session.drop(path)  # a clean held copy goes; unsaved edits stay (ctrl+s writes them again)
                if reaction.is_open or kept:
                    more = " Its unsaved edits are kept; ctrl+s writes it again." if kept else ""
                    self.notify(f"{self.session.label(path)} was deleted on disk.{more}", severity="warning", timeout=6)
                if not kept:
                    self._analyse()
            elif reaction.action == "reload":
                tree.mark_deleted(path, False)
                self._reload_from_disk(path)
            elif reaction.action == "ask":
                tree.mark_deleted(path, False)
                self._ask_reload(path)

    def _reload_from_disk(self, path: Path) -> None:
        """Take the file's new text: the open document through the open worker, any other held one here."""
        if path == self.novel_path:
            self._reload_novel()  # the Summary tab's tree: its stale summaries get marked
        if path == self.current:
            self._open(path, reloaded=True, from_disk=True)
            return
        if self.session.document(path) is None:
            return  # not held (e.g. a .txt): the tree's status is refreshed when it is opened
        try:
            doc = Document.load(path)
        except OSError:
            return  # gone again: its "deleted" follows
        if self.session.replace_document(doc):
            self._edited(refresh_open=False)

    def _ask_reload(self, path: Path) -> None:
        if path in self._asking:
            return
        self._asking.add(path)

        def answered(yes: bool | None) -> None:
            self._asking.discard(path)
            if not yes:
                self.notify(f"Kept your edits of {self.session.label(path)}; saving will overwrite the file.", timeout=4)
                return
            if path == self.current:
                self._discard = path  # _loaded may drop the edits now
                self._open(path, reloaded=True, from_disk=True)
                return
            try:
                doc = Document.load(path)
            except OSError as exc:
                self.notify(f"{self.session.label(path)}: {exc.strerror or exc}", title="Not reloaded", severity="error")
                return
            if self.session.replace_document(doc):
                self._edited(refresh_open=False)

        question = (f"[b]{self.session.label(path)}[/] was changed on disk by another program, "
                    "and it has unsaved changes here.\n\nRead it again from disk and drop your edits?")
        self.app.push_screen(ConfirmScreen(question, yes="Reload from disk", no="Keep my edits", focus_yes=False), answered)

    # ------------------------------------------------------------ intents from panes
    @on(DocumentSelected)
    def _document_selected(self, message: DocumentSelected) -> None:
        self._open(message.path)

    @on(FindingSelected)
    def _finding_selected(self, message: FindingSelected) -> None:
        source = self.query_one(SourceView)
        source.goto(message.line, message.column)
        self.query_one(ChunkMap).select_line(message.line)
        if message.focus:
            self.query_one(TabbedContent).active = "source-tab"
            source.focus()

    @on(DiagnosisChosen)
    def _diagnosis_chosen(self, message: DiagnosisChosen) -> None:
        item = message.item
        if item.entity_ids and isinstance(item.entity_ids[0], str):
            self.query_one(EntityTable).highlight(item.entity_ids[0])
        if item.path == self.current and self.current_doc is not None:
            self._show_place(item, chunks_ready=True)
            return
        self._jump = item
        self.query_one(DocumentTree).mark_opened(item.path)
        self._open(item.path)

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

    @on(MergeRequested)
    def _merge_requested(self, message: MergeRequested) -> None:
        into, merged = message.into, message.merged
        try:
            diff = self.session.preview(merge_entities, into, merged)
        except EntityOpError as exc:
            self.notify(str(exc), title="Cannot merge", severity="error", timeout=8)
            return
        title = f"Merge [b]{', '.join(merged)}[/] into [b]{into}[/]?"
        note = None
        if message.tier != "sure":
            note = "A suggestion to review: these entities only look alike. Check the diff before merging."

        def answered(yes: bool | None) -> None:
            if yes:
                self._apply("Merged", lambda: self.session.run(merge_entities, into, merged))

        self.app.push_screen(DiffScreen(title, diff, yes="Merge", note=note), answered)

    @on(EntityEditRequested)
    def _entity_edit_requested(self, message: EntityEditRequested) -> None:
        entity = message.entity
        if message.what == "entity":
            self.app.push_screen(EntityEditScreen(entity), lambda result: self._edit_entity(entity, result))
        elif message.what == "aliases":
            if not entity.declared:
                self.notify(f"{entity.id} is declared nowhere: it has no aliases to edit.", severity="warning", timeout=4)
                return
            self.app.push_screen(AliasEditScreen(entity), lambda result: self._edit_aliases(entity, result))
        elif message.what == "delete":
            links = f"{entity.chunks} chunk link{'s' if entity.chunks != 1 else ''}"
            question = (
                f"Delete [b]{entity.id}[/]? Its declarations and {links} (and any state references) "
                f"are removed from {len(entity.documents)} document{'s' if len(entity.documents) != 1 else ''}.\n\n"
                "Nothing is written until you save; u undoes it."
            )

            def answered(yes: bool | None) -> None:
                if yes:
                    self._apply("Deleted", lambda: self.session.run(delete_entity, entity.id))

            self.app.push_screen(ConfirmScreen(question, yes="Delete"), answered)

    def _edit_entity(self, entity: EntityInfo, result: dict | None) -> None:
        if not result:
            return
        steps: list[tuple[Callable[..., Any], tuple, dict]] = []
        what = []
        if "name" in result or "type" in result:
            steps.append((update_entity, (entity.id,), {"name": result.get("name"), "type": result.get("type")}))
            what += [f"{k} '{result[k]}'" for k in ("name", "type") if k in result]
        if "id" in result:
            steps.append((rename_entity_id, (entity.id, result["id"]), {}))
            what.append(f"id '{result['id']}'")
        description = f"set {' and '.join(what)} of {entity.id}"
        self._apply("Edited", lambda: self.session.run_all(description, steps))

    def _edit_aliases(self, entity: EntityInfo, result: dict | None) -> None:
        if result is None:
            return
        new: list[str] = result.get("aliases", [])
        old = list(entity.aliases)
        removed = [a for a in old if _fold(a) not in {_fold(n) for n in new}]
        added = [a for a in new if _fold(a) not in {_fold(o) for o in old}]
        if not removed and not added:
            return
        steps: list[tuple[Callable[..., Any], tuple, dict]] = []
        steps += [(remove_alias, (entity.id, a), {}) for a in removed]
        steps += [(add_alias, (entity.id, a), {}) for a in added]
        parts = ([f"add {', '.join(added)}"] if added else []) + ([f"remove {', '.join(removed)}"] if removed else [])
        self._apply("Aliases", lambda: self.session.run_all(f"{'; '.join(parts)} (aliases of {entity.id})", steps))

    @on(FixRequested)
    def _fix_requested(self, message: FixRequested) -> None:
        item = message.item
        self._apply("Fixed", lambda: self.session.run(apply_fix, dict(item.fix), path=item.path))

    # ------------------------------------------------------------ editing
    def _apply(self, verb: str, edit: Callable[[], UndoRecord | None], what: str = "", detail: str = "") -> None:
        """Run one edit of the session; a refused edit is a notification, never a traceback.

        ``detail``: a line added to the notification (e.g. how a model job went).
        """
        try:
            record = edit()
        except (EntityOpError, FixError) as exc:
            self.notify(str(exc), title=f"Not {verb.lower()}" if verb not in ("Undo", "Redo") else f"Cannot {verb.lower()}",
                        severity="error", timeout=8)
            return
        if record is None:
            self.notify(what or "Nothing to do.", timeout=2)
            return
        if not record.changes:
            self.notify(f"Nothing changed ({record.description})." + (f"\n{detail}" if detail else ""), timeout=6 if detail else 3)
            return
        hint = "U or ctrl+y redoes it" if verb == "Undo" else "u undoes it"
        count = len(record.changes)
        self.notify(f"{record.description} — {count} document{'s' if count != 1 else ''} changed, not yet saved; {hint}."
                    + (f"\n{detail}" if detail else ""), title=verb, timeout=6 if detail else 4)
        self._edited(paths=set(record.paths))

    def _edited(self, paths: set[Path | None] | None = None, refresh_open: bool = True) -> None:
        """Refresh everything that depends on the workspace after it changed."""
        self._show_unsaved()
        if refresh_open and self.current is not None and (paths is None or self.current in paths):
            self._open(self.current, reloaded=True)
        self._analyse()

    def _analyse(self) -> None:
        if self.session.ready:
            self.workbench.analyse_workspace(self.session.snapshots(), self.root, self.session.version, self)

    def _show_unsaved(self) -> None:
        dirty = self.session.dirty_paths
        self.query_one(DocumentTree).set_unsaved(dirty)
        base = str(self.root.resolve())
        n = len(dirty)
        self.query_one(StatusBar).show_unsaved(n)
        self.app.sub_title = f"{base}  ·  ● {n} unsaved (ctrl+s saves)" if n else base

    def undo(self) -> None:
        self._apply("Undo", self.session.undo_last, "Nothing to undo.")

    def redo(self) -> None:
        self._apply("Redo", self.session.redo_last, "Nothing to redo.")

    def save(self) -> None:
        if not self.session.ready or not self.session.dirty_paths:
            self.notify("Nothing to save: every document matches its file.", timeout=2)
            return
        self.workbench.save_workspace(self.session.workspace, self)

    # ------------------------------------------------------------ model jobs
    def _job_document(self, what: str) -> tuple[Path, Document] | None:
        """The open document, held in memory and readable, or a notification saying why not."""
        path = self.current
        doc = self.session.document(path)
        if path is None:
            self.notify(f"Open a document first, then {what} it.", severity="warning", timeout=3)
        elif not self.session.ready:
            self.notify("The workspace is still loading; try again in a moment.", severity="warning", timeout=3)
        elif doc is None:
            self.notify(f"{self.session.label(path)} is not a CtxFST document of the workspace (.md).", severity="warning", timeout=4)
        elif not doc.readable or doc.data is None:
            self.notify(f"{self.session.label(path)}: the frontmatter cannot be read; fix it first.", severity="warning", timeout=4)
        elif not chunk_counts(doc)[0]:
            self.notify(f"{self.session.label(path)} has no chunks to {what}.", severity="warning", timeout=4)
        else:
            return path, doc
        return None

    def contextualize(self) -> None:
        """Ask (skip chunks with a context?), then start the contextualize job on the open document."""
        if self.workbench.model_busy():
            return
        found = self._job_document("contextualize")
        if found is None:
            return
        path, doc = found
        label = self.session.label(path)
        chunks, present = chunk_counts(doc)

        def answered(choice: dict | None) -> None:
            if choice is None:
                return
            data = self.session.snapshot(path)
            if data is None:
                return
            options = ContextualizeOptions(skip_present=bool(choice.get("skip_present")))
            models = self.workbench.models
            job = Job("contextualize", path, label, total=chunks)
            if self.workbench.start_job(job, lambda post: contextualize_job(models, job, data, options, post), self):
                self._job_started(job)

        model = self.workbench.models.settings.describe()
        self.app.push_screen(ContextualizeScreen(label, chunks, present, model), answered)

    def extract_entities(self) -> None:
        """Start the entity-extraction job on the open document; its proposals are reviewed before anything is written."""
        if self.workbench.model_busy():
            return
        found = self._job_document("extract entities from")
        if found is None:
            return
        path, doc = found
        data = self.session.snapshot(path)
        if data is None:
            return
        others = self.session.snapshots()
        models = self.workbench.models
        job = Job("extract", path, self.session.label(path), total=chunk_counts(doc)[0])
        if self.workbench.start_job(job, lambda post: extract_job(models, job, data, others, post), self):
            self._job_started(job)

    def _job_started(self, job: Job) -> None:
        self.query_one(JobStatus).start(job)
        self.query_one(StatusBar).show_job(job.title)

    def job_cancelling(self, job: Job) -> None:
        self.query_one(JobStatus).show_cancelling()
        pane = self.query_one(SummaryPane)
        if pane.job is job:
            pane.show_cancelling()

    @on(JobProgress)
    def _job_progress(self, message: JobProgress) -> None:
        self.query_one(JobStatus).show_progress(message)
        self.query_one(SummaryPane).show_progress(message)

    @on(JobFinished)
    def _job_finished(self, message: JobFinished) -> None:
        job = message.job
        self.query_one(JobStatus).finish()
        self.query_one(StatusBar).show_job(None)
        if job.kind == "summarize":
            self._summary_finished(message)
            return
        result = message.result
        if message.error and not (isinstance(result, ContextualizeReport) and result.notes):
            self.notify(message.error, title=f"{job.title}: model error", severity="error", timeout=10)
            return
        if isinstance(result, ContextualizeReport):
            self._notes_ready(job, result, message.error)
        elif isinstance(result, Proposals):
            self._proposals_ready(job, result)

    def _notes_ready(self, job: Job, report: ContextualizeReport, error: str | None) -> None:
        done = report.ok + report.failed
        took = format_duration(job.elapsed)
        failed = [r for r in report.results if r.status == "failed"]
        lines = []
        if report.cancelled:
            lines.append(f"Cancelled after {done} of {len(report.results)} chunks ({took}).")
        if error:
            lines.append(f"Stopped: {error}")
        if failed:
            lines.append(f"{len(failed)} chunk{'s' if len(failed) != 1 else ''} failed: {failed[0].chunk_id}: {failed[0].reason}")
        notes = report.notes
        if not notes:
            if report.cancelled:
                lines[0] = lines[0][:-1] + ": nothing written."
            elif not failed:
                lines.append("Every chunk was skipped: nothing to write." if report.skipped else "No notes.")
            reasons = {r.reason for r in failed}
            if failed and len(reasons) == 1 and not report.cancelled and not failed[0].reason.startswith("rejected"):
                # one cause for every chunk: the model (or its server), not the chunks
                self.notify(failed[0].reason, title=f"{job.title}: model error", severity="error", timeout=10)
                return
            self.notify("\n".join(lines), title="Cancelled" if report.cancelled else "Contextualize",
                        severity="warning" if (failed or report.cancelled) else "information", timeout=8)
            return
        calls = f"{report.model_calls} model call{'s' if report.model_calls != 1 else ''}, {report.cache_hits} cached"
        lines.append(f"{len(notes)} note{'s' if len(notes) != 1 else ''} from {job.model} in {took} ({calls}).")
        self._apply("Cancelled" if report.cancelled else "Contextualized",
                    lambda: self.session.run(write_notes, job.path, notes, job.label), detail="\n".join(lines))

    def _proposals_ready(self, job: Job, proposals: Proposals) -> None:
        if not proposals.entities and not proposals.links:
            why = "cancelled before any proposal" if proposals.cancelled else "no new entities or chunk links found"
            extra = f"\nThe model failed: {proposals.model_errors[0]}" if proposals.model_errors else ""
            self.notify(f"{job.label}: {why}.{extra}", title="Cancelled" if proposals.cancelled else "Extract entities",
                        severity="warning" if proposals.cancelled or proposals.model_errors else "information", timeout=6)
            return

        def answered(chosen: set[str] | None) -> None:
            if not chosen:
                if chosen is not None:
                    self.notify("Nothing ticked: nothing added.", timeout=3)
                return
            self._apply("Entities", lambda: self.session.run(write_proposals, job.path, proposals, chosen))

        self.app.push_screen(ProposalsScreen(job.label, proposals), answered)

    # ------------------------------------------------------------ summary trees (the Summary tab)
    def is_manuscript(self, path: Path | None) -> bool:
        return is_manuscript(path)

    @property
    def summary_tab_shown(self) -> bool:
        return self.query_one(TabbedContent).active == "summary-tab"

    def _show_novel(self, path: Path | None) -> None:
        """Show ``path`` as a novel in the Summary tab: segmented in a worker, or the novel a job runs on."""
        pane = self.query_one(SummaryPane)
        if not is_manuscript(path) or path is None:
            self.novel, self.novel_path = None, None
            text = NO_NOVEL if path is None else (
                f"{self.session.label(path)} is a CtxFST document, not a manuscript. {NO_NOVEL}")
            pane.show_message(text)
            return
        if path == self.novel_path:
            return  # shown, or on its way
        self.novel_path = path
        label = self.session.label(path)
        job = self.workbench.job
        if job is not None and job.kind == "summarize" and job.path == path and self._summary_session is not None:
            # The job's own tree (it only changes node states; a copy of each state is taken here).
            self.novel = self._summary_session
            pane.show_novel(novel_view(self.novel), label)
            pane.job_started(job)
            self._focus_summary_tree()
            return
        self.novel = None
        pane.show_message(f"Reading and segmenting {label}…")
        self.workbench.open_novel(path, self)

    def _reload_novel(self) -> None:
        """Read the novel shown again (after its file changed): stale summaries are marked."""
        path = self.novel_path
        if path is None:
            return
        job = self.workbench.job
        if job is not None and job.kind == "summarize" and job.path == path:
            self.notify("The novel is being summarized: escape cancels the job, then r reads it again.",
                        severity="warning", timeout=4)
            return
        session, self.novel = self.novel, None  # nothing runs on it while it is read again
        if session is None:
            self.novel_path = None
            self._show_novel(path)
            return
        self.workbench.open_novel(path, self, session)

    def _focus_summary_tree(self) -> None:
        if self._focus_summary and self.summary_tab_shown:
            self._focus_summary = False
            self.query_one(SummaryPane).tree.focus()

    @on(NovelOpened)
    def _novel_opened(self, message: NovelOpened) -> None:
        if message.path != self.novel_path:
            return  # another document was chosen since
        pane = self.query_one(SummaryPane)
        label = self.session.label(message.path)
        if message.error or message.session is None or message.view is None:
            self.novel = None
            error = message.error or f"{label}: cannot be read"
            error = error.replace(str(message.path), label, 1)  # one line, the file as the tree names it
            pane.show_message(f"✗ {' '.join(error.split())}", error=True)
            return
        self.novel = message.session
        pane.show_novel(message.view, label, keep=message.reloaded)
        if message.reloaded:
            stale = sum(1 for v in message.view.nodes if v.status == "stale")
            what = f"{stale} stale node{'s' if stale != 1 else ''} (~): s makes them again" if stale else "no stale nodes"
            self.notify(f"Read {label} again: {what}.", timeout=4)
        self._focus_summary_tree()

    def summarize(self, book: bool) -> None:
        """The palette's "Summarize selected node" / "Summarize book": on the Summary tab's novel."""
        if not self.summary_tab_shown:
            self.action_show_tab("summary-tab")
        pane = self.query_one(SummaryPane)
        if pane.view is None or self.novel is None:
            what = "the book" if book else "a node"
            self.notify(f"Select a novel (.txt or .md manuscript); once its tree shows, summarize {what} "
                        f"({'b' if book else 's'}).", severity="warning", timeout=4)
            return
        if book:
            pane.action_summarize_book()
        else:
            pane.action_summarize_node()

    @on(SummarizeRequested)
    def _summarize_requested(self, message: SummarizeRequested) -> None:
        if self.workbench.model_busy():
            return
        session = self.novel
        pane = self.query_one(SummaryPane)
        if session is None or pane.view is None or pane.path != session.path:
            self.notify("The novel is still being read; try again in a moment.", severity="warning", timeout=3)
            return
        label = self.session.label(session.path)
        total = pane.view.scope_sizes.get(message.node_id or pane.view.root.id, 0)
        job = Job("summarize", session.path, label, total=total, node=message.node_id, scope=message.label)
        models = self.workbench.models
        settings = SummarySettings()
        if self.workbench.start_job(job, lambda post: summarize_job(models, job, session, settings, post), self):
            self._summary_session = session
            self._job_started(job)
            pane.job_started(job)

    @on(SummaryNodeChanged)
    def _summary_node_changed(self, message: SummaryNodeChanged) -> None:
        pane = self.query_one(SummaryPane)
        if pane.job is message.job and pane.path == message.job.path:
            pane.update_node(message.view)

    def _summary_finished(self, message: JobFinished) -> None:
        job = message.job
        pane = self.query_one(SummaryPane)
        outcome = message.result if isinstance(message.result, SummaryOutcome) else None
        self._summary_session = None
        if pane.job is job:
            pane.job_ended()
            if outcome is not None and self.novel_path == job.path:
                pane.show_novel(outcome.view, job.label, keep=True)
        report = outcome.report if outcome is not None else None
        took = format_duration(job.elapsed)
        if report is None:
            self.notify(message.error or "The job stopped.", title=f"{job.title}: model error", severity="error", timeout=10)
            return
        handled = report.computed + report.reused
        if message.error and not handled:
            self.notify(message.error, title=f"{job.title}: model error", severity="error", timeout=10)
            return
        lines = []
        if message.error:
            lines.append(f"Stopped after {handled} of {report.nodes} nodes: {message.error}")
        elif report.cancelled:
            lines.append(f"Cancelled after {handled} of {report.nodes} nodes ({took}); what is done is kept.")
        else:
            lines.append(f"{job.scope[:1].upper() + job.scope[1:]} of {job.label} in {took}.")
        lines.append(report.counts_line())
        if report.failed:
            lines.append(f"{report.failed} node{'s' if report.failed != 1 else ''} failed (✗): see the flags beside the summary.")
        if report.cancelled or message.error:
            lines.append("Run it again to resume where it stopped.")
        trouble = bool(report.failed or report.cancelled or message.error)
        self.notify("\n".join(lines), title="Cancelled" if report.cancelled and not message.error else "Summarized",
                    severity="warning" if trouble else "information", timeout=8 if trouble else 5)

    # ------------------------------------------------------------ keys
    @on(TabbedContent.TabActivated, "#lower")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # The workspace-wide panes and the summary tree get the whole height: the open document's summary steps aside.
        self.set_class(event.pane.id in FULL_HEIGHT_TABS, "-workspace-tab")
        if event.pane.id == "summary-tab":
            self._show_novel(self.current)
        elif event.pane.id == "entities-tab":
            self._mark_entity(self.query_one(EntityTable).current)

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
        tree, chunk_map, source = self.query_one(DocumentTree), self.query_one(ChunkMap), self.query_one(SourceView)
        if entity is None:
            tree.mark_related(set())
            chunk_map.mark_ids(set())
            return
        tree.mark_related({self.root / d for d in entity.documents})
        doc = self.session.document(self.current) or self.current_doc
        linking = set()
        if doc is not None and doc.readable:
            for entry in doc.entries("chunks"):
                links = entry.data.get("entities") if isinstance(entry.data, dict) else None
                if isinstance(links, list) and entity.id in links and isinstance(entry.id, str):
                    linking.add(entry.id)
        chunk_map.mark_ids(linking)
        spans = [s for s in chunk_map.spans if s.id in linking]
        if spans:
            source.highlight_ranges([(s.line, s.end_line) for s in spans])

    # ------------------------------------------------------------ palette commands
    @property
    def documents(self) -> list[Path]:
        """The documents the tree lists (what "Open …" in the palette offers)."""
        return list(self.query_one(DocumentTree)._doc_nodes)

    def open_path(self, path: Path) -> None:
        self.query_one(DocumentTree).mark_opened(path)
        self._open(path)

    def rechunk(self) -> None:
        """The Chunks tab with the size field focused: type a budget and the document re-chunks."""
        if self.current is None:
            self.notify("Select a document first.", severity="warning", timeout=2)
            return
        self.query_one(TabbedContent).active = "chunks-tab"
        self.query_one(ChunkPreview).action_edit_size()

    def validate(self) -> None:
        """Validate every document of the folder again (the tree's marks) and the open one."""
        self.workbench.scan_folder(self.root, self)  # the open document follows if its text changed
        self.notify("Validating the folder…", timeout=2)

    def diagnose(self) -> None:
        self._analyse()
        self.action_show_tab("diagnosis-tab")

    def apply_fix(self) -> None:
        """The fix of the finding highlighted in the Diagnosis tab (as `f` there)."""
        self.action_show_tab("diagnosis-tab")
        self.query_one(DiagnosisPane).action_fix()

    def merge_suggestion(self) -> None:
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

    @property
    def tree_width(self) -> int | None:
        width = self.query_one(DocumentTree).styles.inline.width  # set by [ ] (the stylesheet's is not a choice)
        return int(width.value) if width is not None and width.is_cells else None

    def action_tree_width(self, delta: int, absolute: int | None = None) -> None:
        tree = self.query_one(DocumentTree)
        current = self.tree_width if self.tree_width is not None else tree.outer_size.width or 30
        low, high = self.TREE_WIDTH
        tree.styles.width = max(low, min(high, absolute if absolute is not None else current + delta))

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

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        if tab == "summary-tab":
            self._show_novel(self.current)  # before the tab-activated message: the tree may be shown at once
            if self.query_one(SummaryPane).view is None:
                self._focus_summary = True  # once the novel is read
                return
        self.query_one(TABS[tab]).focus()

    def action_reload(self) -> None:
        if self.current is None:
            self.notify("Select a document first.", severity="warning", timeout=2)
            return
        path = self.current
        if self.summary_tab_shown and path == self.novel_path:
            self._reload_novel()
        if not self.session.is_dirty(path):
            self._open(path, reloaded=True, from_disk=True)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._discard = path
                self._open(path, reloaded=True, from_disk=True)

        question = f"[b]{self.session.label(path)}[/] has unsaved changes. Read it again from disk and drop them?"
        self.app.push_screen(ConfirmScreen(question, yes="Reload", focus_yes=False), answered)

    def _open(self, path: Path, reloaded: bool = False, from_disk: bool = False) -> None:
        if path != self.current:
            # Each document keeps its own chunk budget; until one is set it shows its own tags
            # (a CtxFST document) or the chunker's defaults (a plain note): None.
            self.budget = self.query_one(ChunkPreview).use_document(path)
            self.current_doc = None
        self.current = path
        self.query_one(DocumentTree).mark_opened(path)
        if self.summary_tab_shown:
            self._show_novel(path)
        if not reloaded:
            self.query_one(DocumentSummary).show_loading(path)
        data = None if from_disk else self.session.snapshot(path)
        self.workbench.open_document(path, self.root, self, reloaded, data, self.session.is_dirty(path))
