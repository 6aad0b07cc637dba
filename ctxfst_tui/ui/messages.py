"""Worker results: the Messages the App's workers post to the asking screen.

Each is a dataclass (Textual's ``Message.__post_init__`` sets up the message once the fields
are in). Identity equality (``eq=False``): a message is an event, not a value. The intents
panes post (a document chosen, a merge asked for…) live nested in the widget that posts them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message

from ctxfst_tui.core.workspace.watch import DiskChange
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.services.analysis import WorkspaceAnalysis
from ctxfst_tui.services.jobs import Job, JobEvent, JobProgress, NodeChanged, SummaryNodeView
from ctxfst_tui.services.report import DocumentReport, DocumentStatus

if TYPE_CHECKING:
    from ctxfst_tui.core.summary import NovelSession, RefreshPlan
    from ctxfst_tui.services.jobs import NovelView


@dataclass(eq=False)
class DocumentsListed(Message):
    """A worker found the documents of the workspace folder."""

    root: Path
    paths: list[Path]


@dataclass(eq=False)
class StatusesValidated(Message):
    """A worker validated a batch of documents (batched in time, so the tree redraws rarely)."""

    statuses: dict[Path, DocumentStatus]


@dataclass(eq=False)
class DocumentLoaded(Message):
    """A worker loaded and validated the selected document.

    ``reloaded``: shown again (positions kept); ``from_disk``: read from the file on purpose (``r``).
    """

    report: DocumentReport
    reloaded: bool = False
    from_disk: bool = False


@dataclass(eq=False)
class ChunksComputed(Message):
    """A worker computed the chunk spans to preview for one document."""

    path: Path
    text: str
    spans: list
    what: str
    keep_selection: bool = False


@dataclass(eq=False)
class DocumentConverted(Message):
    """A worker wrote a converted CtxFST document (or failed to, with ``error``)."""

    source: Path
    target: Path | None
    chunks: int = 0
    error: str | None = None


@dataclass(eq=False)
class WorkspaceLoaded(Message):
    """The scan worker read the workspace's CtxFST documents into memory."""

    workspace: Workspace


@dataclass(eq=False)
class WorkspaceAnalysed(Message):
    """A worker computed the entity table, merge suggestions, diagnosis and statuses."""

    analysis: WorkspaceAnalysis


@dataclass(eq=False)
class WorkspaceSaved(Message):
    """A worker wrote the unsaved documents (or failed to, with ``error``)."""

    written: list[Path]
    error: str | None = None


@dataclass(eq=False)
class JobProgressed(Message):
    """A model job's progress (a :class:`~ctxfst_tui.services.jobs.JobProgress`).

    Posted at most a few times a second by the worker; a queued one is replaced by a newer one.
    """

    progress: JobProgress

    @property
    def job(self) -> Job:
        return self.progress.job

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobProgressed) and message.job is self.job


@dataclass(eq=False)
class JobFinished(Message):
    """A model job ended: ``result`` (a ContextualizeReport, Proposals or SummaryOutcome, maybe
    partial) and/or a one-line ``error``; both None when the worker itself failed (the App's
    error handler reports it)."""

    job: Job
    result: Any = None
    error: str | None = None


@dataclass(eq=False)
class NovelOpened(Message):
    """A worker segmented a manuscript and read its summary store (``reloaded``: after ``r``),
    or could not (``error``, one line)."""

    path: Path
    session: "NovelSession | None" = None
    view: "NovelView | None" = None
    error: str | None = None
    reloaded: bool = False


@dataclass(eq=False)
class NovelChecked(Message):
    """A worker read a summarized manuscript again after it was saved: its tree with stale nodes
    marked and what a re-summary would visit (``plan``), or a one-line ``error``."""

    path: Path
    session: "NovelSession | None" = None
    plan: "RefreshPlan | None" = None
    error: str | None = None


@dataclass(eq=False)
class SummaryNodeChanged(Message):
    """A summary job started or finished one node (a copy of it). Never dropped or replaced."""

    job: Job
    view: SummaryNodeView


@dataclass(eq=False)
class DiskChanged(Message):
    """The folder watcher saw documents added, changed or deleted on disk by another program."""

    changes: list[DiskChange]


def job_message(event: JobEvent) -> Message:
    """What a job body reports (a plain event, from the worker thread) as the Message the screen handles."""
    if isinstance(event, NodeChanged):
        return SummaryNodeChanged(event.job, event.view)
    return JobProgressed(event)
