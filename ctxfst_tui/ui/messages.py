"""Messages that cross from panes and workers to the screen.

Panes post intents (``DocumentSelected``, ``FindingSelected``, ``MergeRequested``,
``FixRequested``…); workers post results (``DocumentsListed``, ``StatusesValidated``,
``WorkspaceLoaded``, ``DocumentLoaded``, ``WorkspaceAnalysed``…). The screen decides.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message

from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.workspace.watch import DiskChange
from ctxfst_tui.services.analysis import DiagnosisItem, EntityInfo, WorkspaceAnalysis
from ctxfst_tui.services.report import DocumentReport, DocumentStatus

if TYPE_CHECKING:
    from ctxfst_tui.core.summary import NovelSession
    from ctxfst_tui.services.jobs import Job, NovelView, SummaryNodeView


class DocumentSelected(Message):
    """The user chose a document in the tree (Enter or click)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class FindingSelected(Message):
    """The user chose a finding: show its place in the source (1-based; line 0 = whole file)."""

    def __init__(self, line: int, column: int, focus: bool = True) -> None:
        super().__init__()
        self.line = line
        self.column = column
        self.focus = focus  # False when only previewing (cursor moving over the list)


class DocumentsListed(Message):
    """A worker found the documents of the workspace folder."""

    def __init__(self, root: Path, paths: list[Path]) -> None:
        super().__init__()
        self.root = root
        self.paths = paths


class StatusesValidated(Message):
    """A worker validated a batch of documents (batched in time, so the tree redraws rarely)."""

    def __init__(self, statuses: dict[Path, DocumentStatus]) -> None:
        super().__init__()
        self.statuses = statuses


class DocumentLoaded(Message):
    """A worker loaded and validated the selected document.

    ``reloaded``: shown again (positions kept); ``from_disk``: read from the file on purpose (``r``).
    """

    def __init__(self, report: DocumentReport, reloaded: bool = False, from_disk: bool = False) -> None:
        super().__init__()
        self.report = report
        self.reloaded = reloaded
        self.from_disk = from_disk


class ChunksComputed(Message):
    """A worker computed the chunk spans to preview for one document."""

    def __init__(self, path: Path, text: str, spans: list, what: str, keep_selection: bool = False) -> None:
        super().__init__()
        self.path = path
        self.text = text
        self.spans = spans
        self.what = what
        self.keep_selection = keep_selection


class DocumentConverted(Message):
    """A worker wrote a converted CtxFST document (or failed to, with ``error``)."""

    def __init__(self, source: Path, target: Path | None, chunks: int = 0, error: str | None = None) -> None:
        super().__init__()
        self.source = source
        self.target = target
        self.chunks = chunks
        self.error = error


class WorkspaceLoaded(Message):
    """The scan worker read the workspace's CtxFST documents into memory."""

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace


class WorkspaceAnalysed(Message):
    """A worker computed the entity table, merge suggestions, diagnosis and statuses."""

    def __init__(self, analysis: WorkspaceAnalysis) -> None:
        super().__init__()
        self.analysis = analysis


class WorkspaceSaved(Message):
    """A worker wrote the unsaved documents (or failed to, with ``error``)."""

    def __init__(self, written: list[Path], error: str | None = None) -> None:
        super().__init__()
        self.written = written
        self.error = error


class MergeRequested(Message):
    """Merge ``merged`` into ``into`` (after the diff has been shown and confirmed)."""

    def __init__(self, into: str, merged: list[str], tier: str) -> None:
        super().__init__()
        self.into = into
        self.merged = merged
        self.tier = tier


class EntityEditRequested(Message):
    """Edit an entity: ``what`` is "entity" (id, name, type), "aliases" or "delete"."""

    def __init__(self, entity: EntityInfo, what: str) -> None:
        super().__init__()
        self.entity = entity
        self.what = what


class DiagnosisChosen(Message):
    """The user chose a diagnosis finding: open its document and show its place."""

    def __init__(self, item: DiagnosisItem) -> None:
        super().__init__()
        self.item = item


class FixRequested(Message):
    """Apply the fix of a diagnosis finding."""

    def __init__(self, item: DiagnosisItem) -> None:
        super().__init__()
        self.item = item


class JobProgress(Message):
    """A model job's progress: ``done`` units (chunks, or nodes of a summary tree) of ``total``;
    ``phase`` starting / loading / running; ``eta`` seconds left when the job can tell, ``current``
    what it works on as shown.

    Posted at most ~10 times a second by the worker; a queued one is replaced by a newer one.
    """

    def __init__(self, job: "Job", phase: str = "running", done: int = 0, total: int = 0, chunk_id: str = "",
                 tokens_per_second: float = 0.0, model_calls: int = 0, cache_hits: int = 0, live_tokens: int = 0,
                 unit: str = "chunk", eta: float | None = None, current: str = "") -> None:
        super().__init__()
        self.job = job
        self.phase = phase
        self.done = done
        self.total = total
        self.chunk_id = chunk_id
        self.tokens_per_second = tokens_per_second
        self.model_calls = model_calls
        self.cache_hits = cache_hits
        self.live_tokens = live_tokens
        self.unit = unit
        self.eta = eta
        self.current = current

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobProgress) and message.job is self.job


class JobFinished(Message):
    """A model job ended: ``result`` (a ContextualizeReport or Proposals, maybe partial) and/or a
    one-line ``error``; both None when the worker itself failed (the App's error handler reports it)."""

    def __init__(self, job: "Job", result: Any = None, error: str | None = None) -> None:
        super().__init__()
        self.job = job
        self.result = result
        self.error = error


class NovelOpened(Message):
    """A worker segmented a manuscript and read its summary store (``reloaded``: after ``r``),
    or could not (``error``, one line)."""

    def __init__(self, path: Path, session: "NovelSession | None" = None, view: "NovelView | None" = None,
                 error: str | None = None, reloaded: bool = False) -> None:
        super().__init__()
        self.path = path
        self.session = session
        self.view = view
        self.error = error
        self.reloaded = reloaded


class SummaryNodeChanged(Message):
    """A summary job started or finished one node (a copy of it). Never dropped or replaced."""

    def __init__(self, job: "Job", view: "SummaryNodeView") -> None:
        super().__init__()
        self.job = job
        self.view = view


class SummarizeRequested(Message):
    """Summarize the subtree of ``node_id`` (None: the whole book) of the novel shown;
    ``label`` says which as the user sees it ("Chapter Two › Scene 1")."""

    def __init__(self, node_id: str | None, label: str) -> None:
        super().__init__()
        self.node_id = node_id
        self.label = label


class DiskChanged(Message):
    """The folder watcher saw documents added, changed or deleted on disk by another program."""

    def __init__(self, changes: list[DiskChange]) -> None:
        super().__init__()
        self.changes = changes
