"""Model jobs on the open document: contextualize (notes into each chunk) and extract entities.

A job runs in the App's ``model`` worker on a snapshot of the document; its progress shows in
the job status line, and its result comes back here: notes are applied at once (one undoable
edit), proposed entities only after the review screen confirms them. Summary jobs start from
the Summary tab (``summary.py``); their progress and end pass through here too.
"""
from __future__ import annotations

from pathlib import Path

from ctxfst_tui.core.contextualize.options import ContextualizeOptions
from ctxfst_tui.core.contextualize.run import ContextualizeReport
from ctxfst_tui.core.entities.extract import Proposals
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.services.jobs import (
    Job,
    chunk_counts,
    contextualize_job,
    extract_job,
    format_duration,
    write_notes,
    write_proposals,
)
from ctxfst_tui.ui.messages import JobFinished, JobProgressed
from ctxfst_tui.ui.screens.modals.contextualize import ContextualizeScreen
from ctxfst_tui.ui.screens.modals.proposals import ProposalsScreen
from ctxfst_tui.ui.widgets.jobs.status import JobStatus
from ctxfst_tui.ui.widgets.status_bar import StatusBar
from ctxfst_tui.ui.widgets.summary.tree import SummaryPane
from ctxfst_tui.ui.screens.workbench.controller import Controller


class ModelJobs(Controller):
    """Starting the open document's model jobs, following them, and applying what they return."""

    def _job_document(self, what: str) -> tuple[Path, Document] | None:
        """The open document, held in memory and readable, or a notification saying why not."""
        path = self.screen.current
        doc = self.session.document(path)
        if path is None:
            self.notify(f"Open a document first, then {what} it.", severity="warning", timeout=3)
        elif not self.session.ready:
            self.notify("The workspace is still loading; try again in a moment.", severity="warning", timeout=3)
        elif doc is None and path.suffix.lower() == ".txt" and not self.screen.current_has_tags:
            # A plain-text note is not held as a document, but it converts just like a plain .md.
            self.screen.editing.convert(
                why=f"[b]{self.session.label(path)}[/] is plain text, not yet a CtxFST document: "
                    f"convert it to CtxFST first, then {what} it.")
        elif doc is None:
            self.notify(f"{self.session.label(path)} is not a CtxFST document of the workspace (.md).", severity="warning", timeout=4)
        elif doc.readable and doc.frontmatter is None and doc.frontmatter_error is None:
            # No frontmatter at all: a plain note, not a broken document. Offer the conversion.
            self.screen.editing.convert(
                why=f"[b]{self.session.label(path)}[/] is a plain note, not yet a CtxFST document: "
                    f"convert it to CtxFST first, then {what} it.")
        elif not doc.readable or doc.data is None:
            self.notify(f"{self.session.label(path)}: the frontmatter cannot be read; fix it first.", severity="warning", timeout=4)
        elif not chunk_counts(doc)[0]:
            self.notify(f"{self.session.label(path)} has no chunks to {what}.", severity="warning", timeout=4)
        else:
            return path, doc
        return None

    # ------------------------------------------------------------ starting
    def contextualize(self) -> None:
        """Ask (skip chunks with a context?), then start the contextualize job on the open document."""
        screen = self.screen
        workbench = screen.workbench
        if workbench.model_busy():
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
            models = workbench.models
            job = Job("contextualize", path, label, total=chunks)
            if workbench.start_job(job, lambda post: contextualize_job(models, job, data, options, post), screen):
                self.started(job)

        model = workbench.models.settings.describe()
        screen.app.push_screen(ContextualizeScreen(label, chunks, present, model), answered)

    def extract_entities(self) -> None:
        """Start the entity-extraction job on the open document; its proposals are reviewed before anything is written."""
        screen = self.screen
        workbench = screen.workbench
        if workbench.model_busy():
            return
        found = self._job_document("extract entities from")
        if found is None:
            return
        path, doc = found
        data = self.session.snapshot(path)
        if data is None:
            return
        others = self.session.snapshots()
        models = workbench.models
        job = Job("extract", path, self.session.label(path), total=chunk_counts(doc)[0])
        if workbench.start_job(job, lambda post: extract_job(models, job, data, others, post), screen):
            self.started(job)

    # ------------------------------------------------------------ following
    def started(self, job: Job) -> None:
        self.screen.query_one(JobStatus).start(job)
        self.screen.query_one(StatusBar).show_job(job.title)

    def cancelling(self, job: Job) -> None:
        self.screen.query_one(JobStatus).show_cancelling()
        pane = self.screen.query_one(SummaryPane)
        if pane.job is job:
            pane.show_cancelling()

    def progressed(self, message: JobProgressed) -> None:
        self.screen.query_one(JobStatus).show_progress(message.progress)
        self.screen.query_one(SummaryPane).show_progress(message.progress)

    def finished(self, message: JobFinished) -> None:
        job = message.job
        self.screen.query_one(JobStatus).finish()
        self.screen.query_one(StatusBar).show_job(None)
        if job.kind == "summarize":
            self.screen.summary.finished(message)
            return
        result = message.result
        if message.error and not (isinstance(result, ContextualizeReport) and result.notes):
            self.notify(message.error, title=f"{job.title}: model error", severity="error", timeout=10)
            return
        if isinstance(result, ContextualizeReport):
            self._notes_ready(job, result, message.error)
        elif isinstance(result, Proposals):
            self._proposals_ready(job, result)

    # ------------------------------------------------------------ applying
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
        self.screen.editing.apply("Cancelled" if report.cancelled else "Contextualized",
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
            self.screen.editing.apply("Entities", lambda: self.session.run(write_proposals, job.path, proposals, chosen))

        self.screen.app.push_screen(ProposalsScreen(job.label, proposals), answered)
