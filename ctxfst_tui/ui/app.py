"""The workbench App: the screen to start on, app-wide keys, the workers, one error handler.

The App holds the editing session (the in-memory workspace and its undo stack). Blocking
work (walking the folder, reading, validating and diagnosing, saving) runs in thread
workers owned by the App, grouped by name; results go back to the asking screen as
Messages. Workers see the workspace only as snapshots (bytes), never the live documents.

Model jobs (contextualize, extract entities) share one resource, the model: they run one at a
time in the ``model`` worker group, on a backend the ModelService creates (and loads) in the
worker on first use and then reuses; ``escape`` sets the job's cancel ``threading.Event``.
"""
from __future__ import annotations

import time
from dataclasses import asdict
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.message_pump import MessagePump
from textual.screen import Screen
from textual.widgets import Input, TabbedContent
from textual.worker import Worker, WorkerFailed, WorkerState, get_current_worker

from ctxfst_tui.config import Config, State, load_config, load_state, save_state, write_default_config
from ctxfst_tui.core.chunking.convert import ConvertError
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.chunking.preview import Budget, Previewer
from ctxfst_tui.core.workspace.watch import FolderWatcher
from ctxfst_tui.core.workspace.scan import Skipped, scan_documents
from ctxfst_tui.services.analysis import Analyser
from ctxfst_tui.core.llm.settings import BackendFactory, ModelSettings
from ctxfst_tui.services.jobs import (
    Job,
    JobEvent,
    JobOutcome,
    ModelService,
    check_novel,
    open_novel,
)
from ctxfst_tui.ui.messages import (
    ChunksComputed,
    DiskChanged,
    DocumentConverted,
    DocumentLoaded,
    DocumentsListed,
    JobFinished,
    NovelChecked,
    NovelOpened,
    StatusesValidated,
    WorkspaceAnalysed,
    WorkspaceLoaded,
    WorkspaceSaved,
    job_message,
)
from ctxfst_tui.services.report import DocumentStatus, build_report, status_for
from ctxfst_tui.ui.screens.modals.quit import QuitScreen
from ctxfst_tui.ui.screens.modals.help import HelpScreen, binding_catalogue
from ctxfst_tui.ui.screens.modals.model_settings import ModelSettingsScreen
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.journaling import JournalKeeper
from ctxfst_tui.services.saving import PendingWrite, mark_saved, take, write
from ctxfst_tui.ui import safety_net
from ctxfst_tui.ui.error_log import log_failure
from ctxfst_tui.services.session import Session
from ctxfst_tui.ui.themes import DEFAULT_THEME, load_themes

STYLES = Path(__file__).parent / "styles"
FAILURE_STORM_COUNT = 20  # more failures than this within FAILURE_STORM_SECONDS: give up and exit
FAILURE_STORM_SECONDS = 10.0
STATUS_BATCH_SECONDS = 0.1  # how often validation results are handed to the tree
WORKSPACE_SUFFIXES = (".md",)  # the documents held in memory and edited (as Workspace.load)


safety_net.install()  # an exception in a handler is a notification (WorkbenchApp.survive_handler_error)


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
        STYLES / "job_status.tcss",
        STYLES / "summary_tree.tcss",
        STYLES / "retrieval_pane.tcss",
        STYLES / "retrieval_results.tcss",
        STYLES / "retrieval_scoreboard.tcss",
        STYLES / "status_bar.tcss",
    ]
    UNDO = Binding.Group("Undo/redo")
    MODEL = Binding.Group("Model")
    # The keys for the workbench screen's actions are declared here (``screen.…``), so they are
    # listed "Everywhere" in the help and last in the footer, as keys that work in every pane.
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("question_mark,f1", "help", "Help", id="help", tooltip="The keys of the focused pane"),
        Binding("ctrl+o", "model_settings", "Model", id="model-settings", show=False, priority=True,
                tooltip="Backend, model, context size, threads; which model the next job uses"),
        # Escape cancels only while a job runs (otherwise it is the focused widget's or the modal's).
        Binding("escape", "cancel_job", "Cancel job", id="cancel-job", priority=True, tooltip="Stop the running model job"),
    ]

    def __init__(self, folder: Path, backend_factory: BackendFactory | None = None,
                 model_settings: ModelSettings | None = None, config: Config | None = None,
                 state: State | None = None, watch_disk: bool = False) -> None:
        """``backend_factory(settings)`` makes the model backend (default: ``make_backend``).

        ``config`` / ``state``: default, the user's files (see ``ctxfst_tui.config``).
        ``watch_disk``: follow changes other programs make to the folder (the CLI turns it on, the
        config's ``[watch] enabled = false`` off; tests that wait for every worker leave it off:
        the watch worker never completes)."""
        super().__init__()
        self.folder = Path(folder)
        self.config = config if config is not None else load_config()
        self.watch_disk = watch_disk and self.config.watch
        self.watcher: FolderWatcher | None = None  # set by the watch worker once it runs
        self.state, state_problems = (state, []) if state is not None else load_state()
        self.startup_problems = [*self.config.problems, *state_problems]
        # The model: command-line options, else the config's [model], else the one last used.
        remembered = self.config.model or self.state.model
        if model_settings is None and remembered:
            model_settings = ModelSettings(**remembered)
        self.models = ModelService(backend_factory, model_settings)  # the one model, created on first use
        self.job: Job | None = None  # the model job running, if any
        self._job_worker: Worker | None = None
        self.sub_title = str(self.folder.resolve())
        self.previewer = Previewer()  # lives as long as the app: warm token caches
        self.session = Session(self.folder)  # the in-memory workspace and its undo stack
        self.journal = JournalKeeper(self, self.session)  # unsaved edits kept on disk against a crash
        self._saving: list[PendingWrite] | None = None  # the save being written (one at a time)
        self._save_again: MessagePump | None = None  # ctrl+s pressed during it: save again after
        self.analyser = Analyser()  # keeps per-document diagnosis between edits
        self._skipped_reported: list[str] = []  # the special files last named (see _report_skipped)
        self._failure_times: list[float] = []  # when handlers last failed (a storm ends the app)
        themes, self.theme_problems = load_themes()
        for theme in themes:
            self.register_theme(theme)
        theme = self.config.theme or self.state.theme or DEFAULT_THEME
        if theme not in self.available_themes:
            if self.config.theme:
                self.startup_problems.append(f"{self.config.path}: unknown theme '{theme}', using {DEFAULT_THEME}")
            theme = DEFAULT_THEME
        if theme in self.available_themes:
            self.theme = theme
        self.set_keymap(self.config.keymap)

    def on_mount(self) -> None:
        known = [binding_id for binding_id, _, _ in binding_catalogue()]
        for problem in [*self.theme_problems, *self.startup_problems, *self.config.keymap_problems(known)]:
            self.notify(problem, severity="warning", timeout=8)

    def get_default_screen(self) -> Screen:
        remembered = self.state.folder_state(self.folder)
        tab = self.config.layout.get("tab") or remembered.tab
        layout = {**remembered.layout, **{k: v for k, v in self.config.layout.items() if k != "tab"}}
        return WorkbenchScreen(self.folder, restore=self.state.document_in(self.folder), tab=tab, layout=layout)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen, self.config.path))

    def save_state(self) -> None:
        """Remember the folder, its open document and tab, the theme and the model (on exit)."""
        screen = next((s for s in reversed(self.screen_stack) if isinstance(s, WorkbenchScreen)), None)
        if screen is not None:
            tab = str(screen.query_one("#lower", TabbedContent).active).removesuffix("-tab")
            self.state.remember(self.folder, screen.current, tab=tab, layout=screen.layout_state())
        self.state.theme = self.theme
        self.state.model = {k: v for k, v in asdict(self.models.settings).items() if v not in (None, "")}
        if problem := save_state(self.state):
            self.log.warning(problem)

    # ------------------------------------------------------------ app-wide keys
    def _workbench(self) -> WorkbenchScreen | None:
        return self.screen if isinstance(self.screen, WorkbenchScreen) else None

    def action_write_config(self) -> None:
        """Write an example config.toml listing every setting and key id (never over an existing one)."""
        path = self.config.path
        try:
            wrote = write_default_config(path, binding_catalogue())
        except OSError as exc:
            self.notify(f"{path}: {exc.strerror or exc}", title="Config not written", severity="error", timeout=8)
            return
        self.notify(f"Wrote {path}" if wrote else f"{path} exists; left as it is.", title="Config", timeout=6)

    def action_cancel_job(self) -> None:
        job = self.job
        if job is None:
            self.notify("No model job is running.", timeout=2)
            return
        if job.cancel.is_set():
            return
        job.cancel.set()
        if (screen := self._workbench()) is not None:
            screen.job_cancelling(job)

    def action_model_settings(self) -> None:
        def chosen(settings: ModelSettings | None) -> None:
            if settings is not None and self.models.configure(settings):
                when = "after the running job" if self.job is not None else "from the next job"
                self.notify(f"Model: {settings.describe()} ({when} on).", title="Model settings", timeout=4)

        self.push_screen(ModelSettingsScreen(self.models.settings, self.models.info(), running=self.job is not None), chosen)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_job":  # escape belongs to the focused widget or modal unless a job runs
            return self.job is not None and self._workbench() is not None
        if action == "model_settings":
            return self._workbench() is not None and not isinstance(self.focused, Input)  # inputs keep ctrl+o
        return True

    def on_unmount(self) -> None:
        if self.job is not None:
            self.job.cancel.set()
        self.journal.release()  # an unmount without exit (as under Pilot) lets go of the journal's lock

    def exit(self, *args: Any, **kwargs: Any) -> None:
        self.save_state()
        self.journal.close()  # nothing unsaved: the journal goes; else it keeps the last edits
        if self.job is not None:  # a model call must not keep the process alive after the UI is gone
            self.job.cancel.set()
        super().exit(*args, **kwargs)

    async def action_quit(self) -> None:
        """Quit, asking first when edits have not been saved: save and quit (through the one save
        path, quitting only once everything is written), quit without saving, or stay."""
        dirty = sorted(self.session.dirty_paths)
        if not dirty:
            self.exit()
            return
        names = ", ".join(self.session.label(p) for p in dirty[:4]) + (" …" if len(dirty) > 4 else "")
        question = (
            f"[b]{len(dirty)} document{'s have' if len(dirty) != 1 else ' has'} unsaved changes[/]: {names}\n\n"
            "[b]s[/]/Enter save and quit · [b]y[/] quit without saving · [b]n[/]/esc stay"
        )

        def quit_if_saved(message: WorkspaceSaved) -> None:
            """After the workbench has handled the save (marked saved, said what was written)."""
            left = sorted(self.session.dirty_paths)
            if message.error:
                self.notify(f"The save failed, so the workbench stays open with your edits: {message.error}",
                            title="Not quit", severity="error", timeout=10, markup=False)
            elif left:
                self.notify(f"{', '.join(self.session.label(p) for p in left[:4])} still "
                            f"ha{'ve' if len(left) != 1 else 's'} unsaved changes (edited while saving); "
                            "q again to save them too.", title="Not quit", severity="warning", timeout=8, markup=False)
            else:
                self.exit()

        def save_then_quit() -> None:
            screen = next((s for s in reversed(self.screen_stack) if isinstance(s, WorkbenchScreen)), None)
            workspace = self.session.workspace
            if screen is None or workspace is None:
                self.notify("Nothing to save here.", title="Not quit", severity="warning", timeout=4)
                return
            if self._saving is not None:  # its reply goes to whoever asked; this one would never hear
                self.notify("A save is still running: q again when it has finished.", title="Not quit",
                            severity="warning", timeout=6)
                return

            def relay(message: WorkspaceSaved) -> bool:  # the save's reply (from its worker thread)
                screen.post_message(message)  # the workbench handles it as a ctrl+s save …
                return screen.call_later(quit_if_saved, message)  # … then this, queued behind it

            self.save_workspace(workspace, SimpleNamespace(post_message=relay))  # type: ignore[arg-type]

        def answered(answer: bool | str | None) -> None:
            if answer == QuitScreen.SAVE:
                save_then_quit()
            elif answer is True:
                self.journal.discard()  # lost on purpose: not offered back next time
                self.exit()

        self.push_screen(QuitScreen(question), answered)

    # ------------------------------------------------------------ workers
    @work(thread=True, group="scan", exclusive=True, exit_on_error=False, name="scanning the folder")
    def scan_folder(self, root: Path, reply_to: MessagePump) -> None:
        """List the documents of ``root``, read and validate each (statuses posted in timed
        batches), then hand the ``.md`` documents over as the workspace."""
        worker = get_current_worker()
        scan = scan_documents(root)  # named pipes, sockets, symlink loops: skipped, never opened
        paths = scan.documents
        self.call_from_thread(self._report_skipped, scan.skipped)
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

    @work(thread=True, group="watch", exclusive=True, exit_on_error=False, name="watching the folder")
    def watch_folder(self, root: Path, reply_to: MessagePump) -> None:
        """Post a DiskChanged for each batch of documents changed on disk, until the worker is cancelled."""
        worker = get_current_worker()
        watcher = FolderWatcher(root, stop_event=worker.cancelled_event)
        self.watcher = watcher
        try:
            for batch in watcher:
                reply_to.post_message(DiskChanged(batch))
        finally:
            if self.watcher is watcher:
                self.watcher = None

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

    @work(thread=True, group="novel", exclusive=True, exit_on_error=False, name="segmenting the novel")
    def open_novel(self, path: Path, reply_to: MessagePump, session: Any = None) -> None:
        """Segment a manuscript and read its summary store (a 700 KB novel takes a while); with
        ``session`` (a NovelSession no job is using): read it again, marking stale nodes."""
        worker = get_current_worker()
        opened, view, error = open_novel(path, session)
        if not worker.is_cancelled:
            reply_to.post_message(NovelOpened(path, opened, view, error, reloaded=session is not None))

    @work(thread=True, group="novel-check", exit_on_error=False, name="reading a saved novel")
    def read_saved_novel(self, path: Path, reply_to: MessagePump) -> None:
        """Read a summarized manuscript that was saved (its own session, not the Summary tab's):
        which summaries went stale and what re-summarizing them would visit."""
        worker = get_current_worker()
        session, plan, error = check_novel(path)
        if not worker.is_cancelled:
            reply_to.post_message(NovelChecked(path, session, plan, error))

    def model_busy(self) -> bool:
        """True (and says so) while a model job runs: the model does one job at a time."""
        if self.job is None:
            return False
        self.notify(f"{self.job.title} is still running (escape cancels it).", severity="warning", timeout=4)
        return True

    def start_job(self, job: Job, body: Callable[[Callable[[JobEvent], None]], JobOutcome], reply_to: MessagePump) -> bool:
        """Run a model job: ``body(post)`` in the ``model`` thread worker; one job at a time. What
        the body posts (plain events) and returns reach ``reply_to`` as Messages."""
        if self.model_busy():
            return False
        job.model = job.model or self.models.settings.describe()
        self.job = job
        self._job_worker = self.run_worker(partial(self._run_job, job, body, reply_to), name=job.name,
                                           group="model", thread=True, exclusive=True, exit_on_error=False)
        self.refresh_bindings()
        return True

    def _run_job(self, job: Job, body: Callable[[Callable[[JobEvent], None]], JobOutcome], reply_to: MessagePump) -> None:
        outcome = JobOutcome(job)  # a worker that fails still says the job ended (the error is reported below)

        def post(event: JobEvent) -> None:
            reply_to.post_message(job_message(event))

        try:
            outcome = body(post)
        finally:
            reply_to.post_message(JobFinished(outcome.job, outcome.result, outcome.error))

    def save_workspace(self, workspace: Workspace, reply_to: MessagePump) -> None:
        """Save every document with unsaved changes: what is written is snapshot here, on the UI
        thread; a worker writes those bytes; ``save_finished`` marks them saved. One save at a
        time: asked again meanwhile, it saves once more when this one is done."""
        if self._saving is not None:
            self._save_again = reply_to
            self.notify("Saving… the edits made since are saved right after.", timeout=2)
            return
        items = take(workspace)
        self._saving = items
        self._write_documents(items, reply_to)

    @work(thread=True, group="save", exclusive=False, exit_on_error=False, name="saving")
    def _write_documents(self, items: list[PendingWrite], reply_to: MessagePump) -> None:
        """Write the snapshot's bytes (all or nothing, ``services.saving.write``); always answers with a
        WorkspaceSaved, or no later save could start."""
        written: list[Path] = []
        error: str | None = None
        try:
            if (watcher := self.watcher) is not None:  # our own writes are not news: tell the watcher first
                for item in items:
                    watcher.remember(item.path, item.data)
            written, error = write(items, self.session.label)
        except Exception as exc:  # noqa: BLE001 - a save must always report back, or no save could follow
            error = f"{type(exc).__name__}: {exc}"
        reply_to.post_message(WorkspaceSaved(written, error=error))

    def save_finished(self, message: WorkspaceSaved) -> list[Path]:
        """On the UI thread, when a save's WorkspaceSaved arrives: mark saved the documents still
        holding the text written. Returns those edited during the save (still unsaved)."""
        items, self._saving = self._saving or [], None
        edited = mark_saved(items, message.written)
        self.journal.changed()  # saved documents leave the journal
        again, self._save_again = self._save_again, None
        if again is not None and self.session.dirty_paths and self.session.workspace is not None:
            self.save_workspace(self.session.workspace, again)
        return edited

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """The one place worker errors surface: a notification, never a traceback."""
        if event.worker is self._job_worker and event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self.job, self._job_worker = None, None  # the model is free for the next job
            self.refresh_bindings()
        if event.state is WorkerState.ERROR:
            error = event.worker.error
            self.log.error(f"worker {event.worker.name!r} failed: {error!r}")
            self.report_failure(event.worker.name or "working", error, title=f"Failed while {event.worker.name or 'working'}")

    # ------------------------------------------------------------ the safety net
    def report_failure(self, what: str, error: BaseException, title: str | None = None) -> None:
        """An unexpected exception: its traceback goes to the error log and a notification names
        what failed and where the traceback is; the app goes on (unsaved edits stay in memory)."""
        path = log_failure(what, error)
        where = f"\nTraceback in {path}" if path is not None else ""
        try:
            self.notify(f"{type(error).__name__}: {error}{where}", title=title or f"Failed: {what}",
                        severity="error", timeout=10, markup=False)
        except Exception:  # noqa: BLE001 - the report must never be a second failure
            pass

    def survive_handler_error(self, error: Exception, what: str) -> bool:
        """The safety net's question (see ``safety_net``): report ``error`` and go on? Yes, unless
        the app is closing or failures come in a storm (then Textual's exit, the journal keeping
        the edits). Under Pilot the first error is still kept for ``run_test`` to raise at the end,
        so a test never passes over a failure it did not expect."""
        if self._closing or not self.is_running:
            return False
        now = time.monotonic()
        self._failure_times = [t for t in self._failure_times if now - t < FAILURE_STORM_SECONDS] + [now]
        if len(self._failure_times) > FAILURE_STORM_COUNT:
            log_failure(f"{what} (the {FAILURE_STORM_COUNT + 1}th failure in {FAILURE_STORM_SECONDS} s: giving up)", error)
            return False
        if self.is_headless and self._exception is None:
            self._exception = error
        self.report_failure(what, error)
        return True

    def _handle_exception(self, error: Exception) -> None:
        """Textual's last resort (timers, compose, callbacks): report and go on as a handler error
        would; a worker's failure is reported by ``_worker_failed`` already."""
        if isinstance(error, WorkerFailed) and self.is_running and not self._closing:
            return
        if not self.survive_handler_error(error, "the workbench"):
            log_failure("the workbench (exiting)", error)
            super()._handle_exception(error)

    def _report_skipped(self, skipped: list[Skipped]) -> None:
        """Name the special files the folder scan skipped (once per change of that set)."""
        lines = [f"{s.path.name}: {s.reason}" for s in skipped]
        if lines == self._skipped_reported:
            return
        self._skipped_reported = lines
        if lines:
            shown = "\n".join(lines[:6]) + (f"\n… and {len(lines) - 6} more" if len(lines) > 6 else "")
            self.notify(f"{shown}\n(never opened: not regular files)", markup=False, severity="warning",
                        title=f"{len(lines)} file{'s' if len(lines) != 1 else ''} skipped", timeout=10)
