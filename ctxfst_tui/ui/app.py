"""The workbench App: the screen to start on, app-wide keys, the workers, one error handler.

The App holds the editing session (the in-memory workspace and its undo stack). Blocking
work (walking the folder, reading, validating and diagnosing, saving) runs in thread
workers owned by the App, grouped by name; results go back to the asking screen as
Messages. Workers see the workspace only as snapshots (bytes), never the live documents.
"""
from __future__ import annotations

import time
from pathlib import Path

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.message_pump import MessagePump
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from ..core.convert import ConvertError
from ..core.document import Document
from ..core.entities import Workspace
from ..core.preview import Budget, Previewer
from ..core.workspace import iter_documents
from .analysis import Analyser
from .messages import (
    ChunksComputed,
    DocumentConverted,
    DocumentLoaded,
    DocumentsListed,
    StatusesValidated,
    WorkspaceAnalysed,
    WorkspaceLoaded,
    WorkspaceSaved,
)
from .report import DocumentStatus, build_report, status_for
from .screens.confirm import ConfirmScreen
from .screens.workbench import WorkbenchScreen
from .session import Session
from .themes import DEFAULT_THEME, load_themes

STYLES = Path(__file__).parent / "styles"
STATUS_BATCH_SECONDS = 0.1  # how often validation results are handed to the tree
WORKSPACE_SUFFIXES = (".md",)  # the documents held in memory and edited (as Workspace.load)


def in_workspace(path: Path) -> bool:
    return path.name.lower().endswith(WORKSPACE_SUFFIXES)


class WorkbenchApp(App[None]):
    """A full-screen workbench for the CtxFST documents of one folder."""

    TITLE = "CtxFST Workbench"
    CSS_PATH = [
        STYLES / "workbench.tcss",
        STYLES / "document_tree.tcss",
        STYLES / "document_summary.tcss",
        STYLES / "findings_pane.tcss",
        STYLES / "source_view.tcss",
        STYLES / "chunk_preview.tcss",
        STYLES / "entity_panel.tcss",
        STYLES / "diagnosis_pane.tcss",
    ]
    UNDO = Binding.Group("Undo/redo")
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("u,ctrl+z", "undo", "Undo", id="undo", tooltip="Undo the last edit of the session", group=UNDO),
        Binding("U,ctrl+y", "redo", "Redo", id="redo", tooltip="Redo the last undone edit", group=UNDO),
        Binding("ctrl+s", "save", "Save", id="save", tooltip="Save every document with unsaved changes"),
    ]

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.sub_title = str(self.folder.resolve())
        self.previewer = Previewer()  # lives as long as the app: warm token caches
        self.session = Session(self.folder)  # the in-memory workspace and its undo stack
        self.analyser = Analyser()  # keeps per-document diagnosis between edits
        themes, self.theme_problems = load_themes()
        for theme in themes:
            self.register_theme(theme)
        if DEFAULT_THEME in self.available_themes:
            self.theme = DEFAULT_THEME

    def on_mount(self) -> None:
        for problem in self.theme_problems:
            self.notify(problem, severity="warning", timeout=8)

    def get_default_screen(self) -> Screen:
        return WorkbenchScreen(self.folder)

    # ------------------------------------------------------------ app-wide keys
    def _workbench(self) -> WorkbenchScreen | None:
        return self.screen if isinstance(self.screen, WorkbenchScreen) else None

    def action_undo(self) -> None:
        if (screen := self._workbench()) is not None:
            screen.undo()

    def action_redo(self) -> None:
        if (screen := self._workbench()) is not None:
            screen.redo()

    def action_save(self) -> None:
        if (screen := self._workbench()) is not None:
            screen.save()

    async def action_quit(self) -> None:
        """Quit, asking first when edits have not been saved."""
        dirty = sorted(self.session.dirty_paths)
        if not dirty:
            self.exit()
            return
        names = ", ".join(self.session.label(p) for p in dirty[:4]) + (" …" if len(dirty) > 4 else "")
        question = (
            f"[b]{len(dirty)} document{'s have' if len(dirty) != 1 else ' has'} unsaved changes[/]: {names}\n\n"
            "Quit and lose them? (Cancel, then ctrl+s, saves them.)"
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.exit()

        self.push_screen(ConfirmScreen(question, yes="Quit without saving", focus_yes=False), answered)

    # ------------------------------------------------------------ workers
    @work(thread=True, group="scan", exclusive=True, exit_on_error=False, name="scanning the folder")
    def scan_folder(self, root: Path, reply_to: MessagePump) -> None:
        """List the documents of ``root``, read and validate each (statuses posted in timed
        batches), then hand the ``.md`` documents over as the workspace."""
        worker = get_current_worker()
        paths = iter_documents(root)
        reply_to.post_message(DocumentsListed(root, paths))
        batch: dict[Path, DocumentStatus] = {}
        docs: list[Document] = []
        last = time.monotonic()
        for path in paths:
            if worker.is_cancelled:
                return
            doc = Document.load(path)
            batch[path] = status_for(doc)
            if in_workspace(path):
                docs.append(doc)
            if time.monotonic() - last >= STATUS_BATCH_SECONDS:
                reply_to.post_message(StatusesValidated(batch))
                batch, last = {}, time.monotonic()
        if batch:
            reply_to.post_message(StatusesValidated(batch))
        if not worker.is_cancelled:
            reply_to.post_message(WorkspaceLoaded(Workspace(docs, root)))

    @work(thread=True, group="open", exclusive=True, exit_on_error=False, name="opening the document")
    def open_document(self, path: Path, root: Path, reply_to: MessagePump, reloaded: bool = False,
                      data: bytes | None = None, unsaved: bool = False) -> None:
        """Validate one document: its in-memory ``data``, or the file when None; a newer request cancels this one."""
        worker = get_current_worker()
        report = build_report(path, root, data, unsaved)
        if not worker.is_cancelled:
            reply_to.post_message(DocumentLoaded(report, reloaded, from_disk=data is None))

    @work(thread=True, group="chunk", exclusive=True, exit_on_error=False, name="chunking the document")
    def chunk_document(self, doc: Document, budget: Budget | None, reply_to: MessagePump, keep_selection: bool = False) -> None:
        """Spans for the preview: the document's own tags (budget None) or the chunker's proposal.

        ``doc`` is a worker-side copy (from a report), never a live workspace document.
        """
        worker = get_current_worker()
        path = doc.path
        spans, what = self.previewer.spans(doc, budget)
        if not worker.is_cancelled:
            reply_to.post_message(ChunksComputed(path, doc.text, spans, what, keep_selection))

    @work(thread=True, group="convert", exclusive=True, exit_on_error=False, name="converting the document")
    def convert_document(self, path: Path, budget: Budget, target: Path, reply_to: MessagePump) -> None:
        try:
            n = self.previewer.convert(path, budget, target)
        except (ConvertError, ValueError, OSError) as exc:
            reply_to.post_message(DocumentConverted(path, target, error=str(exc)))
            return
        reply_to.post_message(DocumentConverted(path, target, n))

    @work(thread=True, group="analyse", exclusive=True, exit_on_error=False, name="analysing the workspace")
    def analyse_workspace(self, snapshots: list[tuple[Path, bytes]], root: Path, version: int, reply_to: MessagePump) -> None:
        """Entities, merge suggestions, diagnosis and statuses of the workspace as it is in memory."""
        worker = get_current_worker()
        analysis = self.analyser.analyse(snapshots, root, version, cancelled=lambda: worker.is_cancelled)
        if analysis is not None and not worker.is_cancelled:
            reply_to.post_message(WorkspaceAnalysed(analysis))

    @work(thread=True, group="save", exclusive=False, exit_on_error=False, name="saving")
    def save_workspace(self, workspace: Workspace, reply_to: MessagePump) -> None:
        """Write every document with unsaved changes (each atomically: temp file + rename)."""
        try:
            written = workspace.save()
        except OSError as exc:
            reply_to.post_message(WorkspaceSaved([], error=f"{exc.filename or ''}: {exc.strerror or exc}"))
            return
        reply_to.post_message(WorkspaceSaved(written))

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """The one place worker errors surface: a notification, never a traceback."""
        if event.state is WorkerState.ERROR:
            error = event.worker.error
            self.log.error(f"worker {event.worker.name!r} failed: {error!r}")
            self.notify(
                f"{type(error).__name__}: {error}",
                title=f"Failed while {event.worker.name or 'working'}",
                severity="error",
                timeout=8,
            )
