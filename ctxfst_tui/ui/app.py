"""The workbench App: the screen to start on, app-wide keys, the workers, one error handler.

Blocking work (walking the folder, reading and validating files) runs in thread workers
owned by the App, grouped by name; results go back to the asking screen as Messages.
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
from ..core.preview import Budget, Previewer
from ..core.workspace import iter_documents
from .messages import ChunksComputed, DocumentConverted, DocumentLoaded, DocumentsListed, StatusesValidated
from .report import DocumentStatus, build_report, status_of
from .screens.workbench import WorkbenchScreen
from .themes import DEFAULT_THEME, load_themes

STYLES = Path(__file__).parent / "styles"
STATUS_BATCH_SECONDS = 0.1  # how often validation results are handed to the tree


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
    ]
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
    ]

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.sub_title = str(self.folder.resolve())
        self.previewer = Previewer()  # lives as long as the app: warm token caches
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

    # ------------------------------------------------------------ workers
    @work(thread=True, group="scan", exclusive=True, exit_on_error=False, name="scanning the folder")
    def scan_folder(self, root: Path, reply_to: MessagePump) -> None:
        """List the documents of ``root``, then validate each, posting statuses in timed batches."""
        worker = get_current_worker()
        paths = iter_documents(root)
        reply_to.post_message(DocumentsListed(root, paths))
        batch: dict[Path, DocumentStatus] = {}
        last = time.monotonic()
        for path in paths:
            if worker.is_cancelled:
                return
            batch[path] = status_of(path)
            if time.monotonic() - last >= STATUS_BATCH_SECONDS:
                reply_to.post_message(StatusesValidated(batch))
                batch, last = {}, time.monotonic()
        if batch:
            reply_to.post_message(StatusesValidated(batch))

    @work(thread=True, group="open", exclusive=True, exit_on_error=False, name="opening the document")
    def open_document(self, path: Path, root: Path, reply_to: MessagePump, reloaded: bool = False) -> None:
        """Load and validate one document; a newer request cancels this one."""
        worker = get_current_worker()
        report = build_report(path, root)
        if not worker.is_cancelled:
            reply_to.post_message(DocumentLoaded(report, reloaded))

    @work(thread=True, group="chunk", exclusive=True, exit_on_error=False, name="chunking the document")
    def chunk_document(self, path: Path, budget: Budget | None, reply_to: MessagePump, keep_selection: bool = False) -> None:
        """Spans for the preview: the document's own tags (budget None) or the chunker's proposal."""
        worker = get_current_worker()
        doc = Document.load(path)
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
