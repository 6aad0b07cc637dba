"""Model jobs: the one shared backend, and the bodies of the jobs.

No Textual here. The App runs a job's body in its one ``model`` thread worker; the body
reports through a ``post`` callable taking plain events (:class:`JobProgress`, throttled so a
fast run cannot flood the UI; :class:`NodeChanged`), which the UI turns into its Messages, and
returns a :class:`JobOutcome`. A job reads a
snapshot (bytes) of its document and writes nothing: the screen applies the result on the
UI thread, as one undoable edit of the session.

* :class:`ModelService` – creates the backend of its
  :class:`~ctxfst_tui.core.llm.settings.ModelSettings` lazily (in the worker, where the model
  also loads), reuses it for every job, and retires it when the settings change.
* :class:`Job` – what runs, on which document, and its cancel ``threading.Event``.
* Summary trees: :func:`open_novel` (segment a manuscript, read its summary store) and
  :func:`summarize_job` (summarize a subtree or the whole book); the pane sees the tree only
  as :class:`SummaryNodeView` copies, made in the worker as each node starts and finishes.
  After a save, :func:`check_novel` says what is stale and :func:`refresh_job` re-summarizes it
  (the same body, ``Job.stale``).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ctxfst_tui.core.contextualize.options import ContextualizeError, ContextualizeOptions
from ctxfst_tui.core.contextualize.run import (
    ChunkResult,
    ContextualizeReport,
    Progress,
    apply_notes,
    generate_notes,
)
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.entity_ops import EntityOpError
from ctxfst_tui.core.workspace.undo import UndoRecord
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.entities.extract import Proposals, apply_proposals, extract_entities
from ctxfst_tui.core.llm import EndpointError, ModelError, ModelNotFound, backend_info
from ctxfst_tui.core.llm.base import Cancelled
from ctxfst_tui.core.llm.settings import BackendFactory, ModelSettings, build_backend, settings_info
from ctxfst_tui.core.summary import (NovelSession, RefreshPlan, SegmentError, StoreError, SummaryProgress, SummaryReport,
                                    SummarySettings, refresh_plan, store_path)
from ctxfst_tui.core.summary.manuscript import is_manuscript
from ctxfst_tui.core.summary.tree import Node

PROGRESS_INTERVAL = 0.5  # at most 2 progress messages a second: enough for a status line, and keys wait less during a job


# ---------------------------------------------------------------- the model


class ModelService:
    """The one model of the app: created on first use (in a worker), reused by every job.

    ``configure`` takes effect for the next job; the replaced backend is closed by the next
    worker that asks for a backend, never on the UI thread (closing waits for its lock).
    """

    def __init__(self, factory: BackendFactory | None = None, settings: ModelSettings | None = None) -> None:
        self.factory: BackendFactory = factory or build_backend
        self.settings = settings or ModelSettings()
        self._lock = threading.Lock()
        self._backend: Any = None
        self._retired: list[Any] = []

    @property
    def created(self) -> bool:
        return self._backend is not None

    def configure(self, settings: ModelSettings) -> bool:
        """Use ``settings`` from the next job on; False when they are the ones in use."""
        with self._lock:
            if settings == self.settings:
                return False
            self.settings = settings
            if self._backend is not None:
                self._retired.append(self._backend)
                self._backend = None
        return True

    def backend(self, loading: Callable[[], None] | None = None, cancel: threading.Event | None = None) -> Any:
        """The backend, created (and its model loaded) now if needed. Worker threads only. ``cancel``
        (the job's event) reaches the load and its self-test: set, it raises :class:`Cancelled`."""
        with self._lock:
            retired, self._retired = self._retired, []
            if self._backend is None:
                self._backend = self.factory(self.settings)
            backend = self._backend
        for old in retired:
            close = getattr(old, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - an old model that will not close is just dropped
                    pass
        load = getattr(backend, "load", None)
        if callable(load) and not getattr(backend, "loaded", True):
            if loading is not None:
                loading()
            load(cancel=cancel) if cancel is not None else load()
        return backend

    def info(self) -> dict[str, Any]:
        """For the settings screen: the live backend's info, or what the settings describe. Its
        ``self_test`` is the live model's verdict in words (None: not known here; see :func:`kept_self_test`)."""
        backend = self._backend
        if backend is not None:
            try:
                info = backend_info(backend)
            except Exception as exc:  # noqa: BLE001 - a fake or broken backend: say what we know
                return {"backend": getattr(backend, "name", "?"), "problem": str(exc)}
            verdict = getattr(getattr(backend, "inner", backend), "verdict", None)
            if verdict is not None and hasattr(verdict, "outcome"):
                from ctxfst_tui.core.llm import probe

                info["self_test"] = probe.describe(verdict)
            elif "self_test" in info:
                info["self_test"] = None
            return info
        return settings_info(self.settings)


# ---------------------------------------------------------------- a job and its progress


@dataclass(eq=False)
class Job:
    """One model job on one document. ``cancel`` is handed to the core (checked between tokens)."""

    kind: str  # "contextualize" | "extract" | "summarize"
    path: Path
    label: str  # the document as shown (relative to the workspace root)
    model: str = ""  # what runs it, for messages
    cancel: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)
    total: int = 0
    fatal: str | None = None  # a model error that made the job stop early (set by the worker)
    node: str | None = None  # summarize: the subtree's node id (None: the whole book)
    scope: str = ""  # summarize: the subtree as shown ("Chapter Two", "the book"), or "2 edited scenes"
    stale: bool = False  # summarize: only what edits made stale (the re-summary after a save)

    @property
    def title(self) -> str:
        if self.kind == "summarize" and self.stale:
            return f"Re-summarizing {self.scope} of {self.label}"
        if self.kind == "summarize":
            return f"Summarizing {self.scope or 'the book'} of {self.label}"
        return f"Contextualizing {self.label}" if self.kind == "contextualize" else f"Extracting entities from {self.label}"

    @property
    def name(self) -> str:
        if self.kind == "summarize":
            return "re-summarizing the novel" if self.stale else "summarizing the novel"
        return "contextualizing the document" if self.kind == "contextualize" else "extracting entities"

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set() and self.fatal is None


@dataclass(frozen=True)
class JobProgress:
    """A model job's progress: ``done`` units (chunks, or nodes of a summary tree) of ``total``;
    ``phase`` starting / loading / running; ``eta`` seconds left when the job can tell, ``current``
    what it works on as shown."""

    job: Job
    phase: str = "running"
    done: int = 0
    total: int = 0
    chunk_id: str = ""
    tokens_per_second: float = 0.0
    model_calls: int = 0
    cache_hits: int = 0
    live_tokens: int = 0
    unit: str = "chunk"
    eta: float | None = None
    current: str = ""


@dataclass(frozen=True)
class NodeChanged:
    """A summary job started or finished one node: a copy of it, made in the worker."""

    job: Job
    view: SummaryNodeView


JobEvent = JobProgress | NodeChanged  # what a job body hands its ``post`` callable


@dataclass
class JobOutcome:
    """What a job body returns: ``result`` (a ContextualizeReport, Proposals or SummaryOutcome,
    maybe partial) and/or a one-line ``error``."""

    job: Job
    result: Any = None
    error: str | None = None


class Reporter:
    """Progress of one job as :class:`JobProgress` events, at most one per ``interval``."""

    def __init__(self, job: Job, post: Callable[[Any], Any], interval: float = PROGRESS_INTERVAL) -> None:
        self.job = job
        self.post = post
        self.interval = interval
        self._lock = threading.Lock()
        self._last = 0.0
        self.state: dict[str, Any] = {"phase": "starting", "done": 0, "total": job.total, "chunk_id": "",
                                      "tokens_per_second": 0.0, "model_calls": 0, "cache_hits": 0, "live_tokens": 0}
        self._call_tokens = 0
        self._call_first: float | None = None

    def update(self, force: bool = False, **changes: Any) -> None:
        with self._lock:
            self.state.update(changes)
            now = time.monotonic()
            if not force and now - self._last < self.interval:
                return
            self._last = now
            message = JobProgress(self.job, **self.state)
        self.post(message)

    # ------------------------------------------------------------ hooks for the core
    def loading(self) -> None:
        self.update(force=True, phase="loading")

    def call_started(self) -> None:
        with self._lock:
            self._call_tokens, self._call_first = 0, None
        self.update(phase="running")

    def token(self, _text: str) -> None:
        with self._lock:
            now = time.monotonic()
            if self._call_first is None:
                self._call_first = now
            self._call_tokens += 1
            self.state["live_tokens"] += 1
            rate = None
            if self._call_tokens >= 4 and now > self._call_first:
                rate = (self._call_tokens - 1) / (now - self._call_first)
        self.update(**({"tokens_per_second": rate} if rate else {}))

    def chunk_done(self, p: Progress) -> None:
        self.job.total = p.total
        self.update(force=p.index >= p.total, phase="running", done=p.index, total=p.total, chunk_id=p.chunk_id,
                    tokens_per_second=p.tokens_per_second or self.state["tokens_per_second"],
                    model_calls=p.model_calls, cache_hits=p.cache_hits)

    def extract_done(self, index: int, total: int, chunk_id: str) -> None:
        self.job.total = total
        self.update(force=index >= total, phase="running", done=index, total=total, chunk_id=chunk_id)


class Metered:
    """A backend seen through a job: counts streamed tokens for the progress line, and turns a
    model that cannot be reached or loaded into one stop of the whole job (not a failure per chunk)."""

    def __init__(self, backend: Any, job: Job, reporter: Reporter) -> None:
        self._backend = backend
        self._job = job
        self._reporter = reporter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def complete(self, prompt: str, *, max_tokens: int | None = None, stop: Sequence[str] | None = None,
                 temperature: float | None = None, cancel: Any = None, on_token: Callable[[str], None] | None = None) -> Any:
        self._reporter.call_started()

        def token(text: str) -> None:
            self._reporter.token(text)
            if on_token is not None:
                on_token(text)

        try:
            return self._backend.complete(prompt, max_tokens=max_tokens, stop=stop, temperature=temperature,
                                          cancel=cancel, on_token=token)
        except (ModelNotFound, EndpointError) as exc:
            if self._job.fatal is None:
                self._job.fatal = str(exc)
                self._job.cancel.set()  # every other chunk would fail the same way
            raise


# ---------------------------------------------------------------- the job bodies (worker threads)


def _model(models: ModelService, job: Job, reporter: Reporter) -> Metered:
    """The job's model; :class:`Cancelled` when escape comes while it loads (or runs its self-test)."""
    return Metered(models.backend(loading=reporter.loading, cancel=job.cancel), job, reporter)


def contextualize_job(models: ModelService, job: Job, data: bytes, options: ContextualizeOptions,
                      post: Callable[[JobEvent], Any]) -> JobOutcome:
    """Notes for every chunk of the document in ``data``; nothing is written."""
    reporter = Reporter(job, post)
    reporter.update(force=True)
    try:
        doc = Document(data, job.path)
        backend = _model(models, job, reporter)
        report = generate_notes(doc, backend, options, progress=reporter.chunk_done, cancel=job.cancel)
    except Cancelled:  # before the model was ready: every chunk is left as it was
        skipped = [ChunkResult(c.id, "skipped", "cancelled") for c in doc.chunks if isinstance(c.id, str)]
        return JobOutcome(job, result=ContextualizeReport(doc.label, results=skipped, cancelled=True))
    except (ModelError, ContextualizeError, OSError) as exc:
        return JobOutcome(job, error=str(exc))
    if job.fatal is not None:
        return JobOutcome(job, result=report, error=job.fatal)
    return JobOutcome(job, result=report)


def extract_job(models: ModelService, job: Job, data: bytes, others: list[tuple[Path, bytes]],
                post: Callable[[JobEvent], Any]) -> JobOutcome:
    """Entity proposals for the document in ``data`` (the workspace's other entities matched)."""
    reporter = Reporter(job, post)
    reporter.update(force=True)
    try:
        doc = Document(data, job.path)
        existing = Workspace([Document(b, p) for p, b in others if p != job.path]).entity_dicts()
        backend = _model(models, job, reporter)
        proposals = extract_entities(doc, backend, existing=existing, cancel=job.cancel, progress=reporter.extract_done)
    except Cancelled:  # before the model was ready
        return JobOutcome(job, result=Proposals(doc.label, cancelled=True))
    except (ModelError, OSError) as exc:
        return JobOutcome(job, error=str(exc))
    if job.fatal is not None:
        return JobOutcome(job, result=proposals, error=job.fatal)
    return JobOutcome(job, result=proposals)


def chunk_counts(doc: Document | None) -> tuple[int, int]:
    """(chunks, chunks that already have a context) of a document, for the start dialog."""
    if doc is None or not doc.readable:
        return 0, 0
    ids = [c for c in doc.chunks if isinstance(c.id, str)]
    present = sum(1 for c in ids if isinstance(c.data, dict) and isinstance(c.data.get("context"), str) and c.data["context"].strip())
    return len(ids), present


# ---------------------------------------------------------------- summary trees of novels


@dataclass(frozen=True)
class SummaryNodeView:
    """One node of a summary tree as the pane shows it: a copy taken in the worker, so the UI never
    reads the tree a running job is changing. ``span``: the node's text in the manuscript, heading
    included; ``children``: the ids of its children, in order."""

    id: str
    kind: str
    title: str
    words: int
    status: str
    summary: str | None = None
    flags: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()
    span: tuple[int, int] = (0, 0)
    children: tuple[str, ...] = ()
    front_matter: bool = False
    extractive: bool = False  # the summary is the node's own sentences (the model's answers were rejected)


def node_view(node: Node) -> SummaryNodeView:
    start = node.heading[0] if node.heading is not None else node.start
    return SummaryNodeView(node.id, node.kind, node.title, node.words, node.status, node.summary, tuple(node.flags),
                           tuple(node.rejected), (min(start, node.start), node.end), tuple(c.id for c in node.children),
                           node.front_matter, node.extractive)


@dataclass(frozen=True)
class NovelView:
    """A whole summary tree for the pane: the manuscript's text (never changed) and every node, book first."""

    path: Path
    title: str
    text: str
    nodes: tuple[SummaryNodeView, ...]
    store: Path
    scope_sizes: dict[str, int] = field(default_factory=dict)  # node id -> nodes a run of its subtree visits

    @property
    def root(self) -> SummaryNodeView:
        return self.nodes[0]


def novel_view(session: NovelSession) -> NovelView:
    root = session.manuscript.root
    sizes: dict[str, int] = {}
    for node in root.post_order():
        if node.front_matter:
            sizes[node.id] = 0
        else:
            sizes[node.id] = 1 + sum(sizes[c.id] for c in node.children)
    return NovelView(session.path, root.title, session.manuscript.text, tuple(node_view(n) for n in root.walk()),
                     session.store, sizes)


def open_novel(path: Path, session: NovelSession | None = None) -> tuple[NovelSession | None, NovelView | None, str | None]:
    """Segment the manuscript at ``path`` and read its summary store (or ``session.reload()``, marking
    stale nodes): (session, view, None), or (None, None, a one-line error)."""
    try:
        if session is not None:
            session.reload()
        else:
            session = NovelSession.open(path)
    except (SegmentError, StoreError) as exc:
        return None, None, str(exc)
    except OSError as exc:
        return None, None, f"{path.name}: cannot read: {exc.strerror or exc}"
    except UnicodeDecodeError:
        return None, None, f"{path.name}: not UTF-8 text"
    return session, novel_view(session), None


def has_summary_tree(path: Path) -> bool:
    """Whether ``path`` is a manuscript with a summary store (a stat, no reading): what a save
    re-summarizes. Cheap enough for the UI thread."""
    if not is_manuscript(path):
        return False
    try:
        return store_path(path).is_file()
    except OSError:
        return False


def check_novel(path: Path, session: NovelSession | None = None
                ) -> tuple[NovelSession | None, RefreshPlan | None, str | None]:
    """After ``path`` was saved or changed on disk: its tree read again (``session.reload()``, or
    opened) with stale nodes marked, and what a re-summary would visit; or a one-line error."""
    opened, _view, error = open_novel(path, session)
    if opened is None:
        return None, None, error
    return opened, refresh_plan(opened.manuscript), None


def refresh_job(session: NovelSession, plan: RefreshPlan, label: str) -> Job:
    """The re-summary of ``session``'s stale nodes as a job: "Re-summarizing 2 edited scenes of novel.txt"."""
    return Job("summarize", session.path, label, total=plan.nodes, scope=plan.what, stale=True)


@dataclass
class SummaryOutcome:
    """What a summary job hands back: the run's counts and the whole tree as it ended."""

    report: SummaryReport | None
    view: NovelView


def summarize_job(models: ModelService, job: Job, session: NovelSession, settings: SummarySettings,
                  post: Callable[[JobEvent], Any]) -> JobOutcome:
    """Summarize ``job.node``'s subtree (or the book) of ``session``'s novel; the store is saved as it goes.

    Each node that starts or finishes is posted as a :class:`NodeChanged` (never dropped);
    the progress line (node i of n, ETA) as throttled :class:`JobProgress` events.
    """
    reporter = Reporter(job, post)
    reporter.update(force=True, unit="node")
    index = {n.id: n for n in session.manuscript.root.walk()}

    def progress(p: SummaryProgress) -> None:
        job.total = p.total
        running = p.status == "running"
        node = index.get(p.node_id)
        if running and node is not None:
            post(NodeChanged(job, node_view(node)))
        # forced when a node starts: a long model call must not leave the line on the node before
        reporter.update(force=running or p.index >= p.total, phase="running", done=p.index - (1 if running else 0),
                        total=p.total, chunk_id=p.node_id, eta=p.eta, model_calls=p.model_calls,
                        cache_hits=p.cache_hits, unit="node", current=p.title)

    def finished(node: Node) -> None:
        post(NodeChanged(job, node_view(node)))

    report: SummaryReport | None = None
    try:
        backend = _model(models, job, reporter)
        report = session.summarize(backend, settings, only=job.node, cancel=job.cancel, progress=progress,
                                   on_node=finished, stale=job.stale)
    except Cancelled:  # before the model was ready: the store is untouched
        view = novel_view(session)
        nodes = job.total if job.stale else view.scope_sizes.get(job.node or view.root.id, 0)
        report = SummaryReport(nodes=nodes, cancelled=True)
        return JobOutcome(job, result=SummaryOutcome(report, view))
    except (ModelError, StoreError, KeyError, OSError) as exc:
        error = str(exc) if not isinstance(exc, KeyError) else f"no node {exc.args[0]!r} in the tree"
        return JobOutcome(job, result=SummaryOutcome(report, novel_view(session)), error=error)
    error = job.fatal or (report.error or None)
    return JobOutcome(job, result=SummaryOutcome(report, novel_view(session)), error=error)


# ---------------------------------------------------------------- applying results (session operations)


def _held(ws: Workspace, path: Path) -> tuple[Document, int]:
    doc = ws.document(path)
    if doc is None:
        raise EntityOpError(f"{path.name} is no longer in the workspace")
    if not doc.readable or doc.data is None:
        raise EntityOpError(f"{path.name}: the frontmatter cannot be read any more")
    return doc, ws.docs.index(doc)


def write_notes(ws: Workspace, path: Path, notes: dict[str, str], label: str) -> UndoRecord:
    """Session operation: the notes into the chunks' ``context`` fields of the held document."""
    doc, index = _held(ws, path)
    try:
        record = apply_notes(doc, notes, doc_index=index)
    except (ValueError, KeyError, TypeError) as exc:
        raise EntityOpError(f"{label}: {exc}") from exc
    record.description = record.description.replace(doc.label, label)
    return record


def write_proposals(ws: Workspace, path: Path, proposals: Proposals, chosen: set[str]) -> UndoRecord:
    """Session operation: the chosen proposed entities and their chunk links."""
    doc, index = _held(ws, path)
    try:
        return apply_proposals(doc, proposals, entities=chosen, doc_index=index)
    except (ValueError, KeyError, TypeError) as exc:
        raise EntityOpError(f"{path.name}: {exc}") from exc


def format_duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
