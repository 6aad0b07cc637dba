"""The Summary tab: the open document as a novel's summary tree, and the summary jobs run on it.

The App segments the manuscript in a worker (only while the tab is shown); this controller
holds the NovelSession, and a summary job runs on it in the ``model`` worker; the pane gets
copies of the nodes as they start and finish.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ctxfst_tui.core.summary import NovelSession, RefreshPlan, SummarySettings, refresh_plan
from ctxfst_tui.core.summary.manuscript import is_manuscript
from ctxfst_tui.core.text.plural import count
from ctxfst_tui.services.jobs import (Job, SummaryOutcome, format_duration, has_summary_tree, novel_view,
                                     refresh_job, summarize_job)
from ctxfst_tui.ui.messages import JobFinished, NovelChecked, NovelOpened, SummaryNodeChanged
from ctxfst_tui.ui.widgets.summary.tree import EMPTY as NO_NOVEL
from ctxfst_tui.ui.widgets.summary.tree import SummaryPane
from ctxfst_tui.ui.screens.workbench.controller import Controller

if TYPE_CHECKING:
    from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen


class Summaries(Controller):
    """The novel the Summary tab shows, and summarizing it."""

    def __init__(self, screen: "WorkbenchScreen") -> None:
        super().__init__(screen)
        self.novel: NovelSession | None = None  # the novel the Summary tab shows (None while it is read)
        self.novel_path: Path | None = None  # its path (set as soon as it is asked for)
        self.job_session: NovelSession | None = None  # the novel a summary job is working on
        self.focus_pending = False  # focus the summary tree once the novel is shown (the user pressed 5)
        self.following: set[Path] = set()  # saved novels being read again, to re-summarize what went stale
        self.waiting: set[Path] = set()  # saved novels to read again once the running model job ends

    @property
    def pane(self) -> SummaryPane:
        return self.screen.query_one(SummaryPane)

    # ------------------------------------------------------------ showing a novel
    def show(self, path: Path | None) -> None:
        """Show ``path`` as a novel in the Summary tab: segmented in a worker, or the novel a job runs on."""
        pane = self.pane
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
        job = self.screen.workbench.job
        if job is not None and job.kind == "summarize" and job.path == path and self.job_session is not None:
            # The job's own tree (it only changes node states; a copy of each state is taken here).
            self.novel = self.job_session
            pane.show_novel(novel_view(self.novel), label)
            pane.job_started(job)
            self.focus_tree()
            return
        self.novel = None
        pane.show_message(f"Reading and segmenting {label}…")
        self.screen.workbench.open_novel(path, self.screen)

    def reload(self) -> None:
        """Read the novel shown again (after its file changed): stale summaries are marked."""
        path = self.novel_path
        if path is None:
            return
        job = self.screen.workbench.job
        if job is not None and job.kind == "summarize" and job.path == path:
            self.notify("The novel is being summarized: escape cancels the job, then r reads it again.",
                        severity="warning", timeout=4)
            return
        session, self.novel = self.novel, None  # nothing runs on it while it is read again
        if session is None:
            self.novel_path = None
            self.show(path)
            return
        self.screen.workbench.open_novel(path, self.screen, session)

    def focus_tree(self) -> None:
        if self.focus_pending and self.screen.summary_tab_shown:
            self.focus_pending = False
            self.pane.tree.focus()

    def opened(self, message: NovelOpened) -> None:
        if message.path != self.novel_path:
            return  # another document was chosen since
        pane = self.pane
        label = self.session.label(message.path)
        if message.error or message.session is None or message.view is None:
            self.novel = None
            error = message.error or f"{label}: cannot be read"
            error = error.replace(str(message.path), label, 1)  # one line, the file as the tree names it
            pane.show_message(f"✗ {' '.join(error.split())}", error=True)
            return
        self.novel = message.session
        pane.show_novel(message.view, label, keep=message.reloaded)
        if message.path in self.following:
            self.following.discard(message.path)
            plan = refresh_plan(message.session.manuscript)
            if plan.nodes:
                self._refresh(message.session, plan)
                return
        if message.reloaded:
            stale = sum(1 for v in message.view.nodes if v.status == "stale")
            what = f"{stale} stale node{'s' if stale != 1 else ''} (~): s makes them again" if stale else "no stale nodes"
            self.notify(f"Read {label} again: {what}.", timeout=4)
        self.focus_tree()

    # ------------------------------------------------------------ following saves
    def saved(self, path: Path) -> None:
        """``path`` was saved, here or by another program. The Summary tab's novel is read again
        (its stale summaries marked ~); and a summarized manuscript, shown or not, has its stale
        scenes re-summarized in the background: the summaries follow the writing (the spec's
        trigger; ``[summary] resummarize_on_save = false`` leaves it to ``s``)."""
        follow = self.screen.app.config.resummarize_on_save and has_summary_tree(path)
        job = self.screen.workbench.job
        if follow and job is not None:
            self.waiting.add(path)  # one model job at a time: followed again when this one ends
            if path == self.novel_path and job.path != path:
                self.reload()  # reading it is no model job: its ~ marks show now, not after the job
            return
        if follow:
            self.following.add(path)
        if path == self.novel_path:
            self.reload()
        elif follow:
            self.screen.workbench.read_saved_novel(path, self.screen)

    def checked(self, message: NovelChecked) -> None:
        """A saved novel (not the one shown) was read again: re-summarize what went stale."""
        if message.path not in self.following:
            return
        self.following.discard(message.path)
        if message.error or message.session is None or message.plan is None:
            error = (message.error or "cannot be read").replace(str(message.path), self.session.label(message.path), 1)
            self.notify(f"{' '.join(error.split())} — its summaries were not brought up to date.",
                        severity="warning", timeout=6)
            return
        if message.plan.nodes:
            self._refresh(message.session, message.plan)

    def _refresh(self, session: NovelSession, plan: RefreshPlan) -> None:
        workbench = self.screen.workbench
        if workbench.job is not None:
            self.waiting.add(session.path)
            return
        job = refresh_job(session, plan, self.session.label(session.path))
        models = workbench.models
        settings = SummarySettings()
        if workbench.start_job(job, lambda post: summarize_job(models, job, session, settings, post), self.screen):
            self.job_session = session
            self.screen.model_jobs.started(job)
            if session is self.novel:
                self.pane.job_started(job)
            self.notify(f"{job.title} in the background (escape cancels it).", title="Saved", timeout=4)

    def _after_job(self, ended: Job) -> None:
        """The model is free again: read the novels saved while it was busy. (The App frees it when
        the job's worker stops, which may come just after the job's last message.)"""
        running = self.screen.workbench.job
        if running is ended:
            self.screen.set_timer(0.05, lambda: self._after_job(ended))
            return
        if running is not None:
            return  # another job started meanwhile: its end comes here again
        waiting, self.waiting = sorted(self.waiting), set()
        for path in waiting:
            self.saved(path)

    # ------------------------------------------------------------ summarizing
    def summarize(self, book: bool) -> None:
        """The palette's "Summarize selected node" / "Summarize book": on the Summary tab's novel."""
        screen = self.screen
        if not screen.summary_tab_shown:
            screen.action_show_tab("summary-tab")
        pane = self.pane
        if pane.view is None or self.novel is None:
            what = "the book" if book else "a node"
            self.notify(f"Select a novel (.txt or .md manuscript); once its tree shows, summarize {what} "
                        f"({'b' if book else 's'}).", severity="warning", timeout=4)
            return
        if book:
            pane.action_summarize_book()
        else:
            pane.action_summarize_node()

    def requested(self, node_id: str | None, scope: str) -> None:
        workbench = self.screen.workbench
        if workbench.model_busy():
            return
        session = self.novel
        pane = self.pane
        if session is None or pane.view is None or pane.path != session.path:
            self.notify("The novel is still being read; try again in a moment.", severity="warning", timeout=3)
            return
        label = self.session.label(session.path)
        total = pane.view.scope_sizes.get(node_id or pane.view.root.id, 0)
        job = Job("summarize", session.path, label, total=total, node=node_id, scope=scope)
        models = workbench.models
        settings = SummarySettings()
        if workbench.start_job(job, lambda post: summarize_job(models, job, session, settings, post), self.screen):
            self.job_session = session
            self.screen.model_jobs.started(job)
            pane.job_started(job)

    def node_changed(self, message: SummaryNodeChanged) -> None:
        pane = self.pane
        if pane.job is message.job and pane.path == message.job.path:
            pane.update_node(message.view)

    def finished(self, message: JobFinished) -> None:
        job = message.job
        pane = self.pane
        outcome = message.result if isinstance(message.result, SummaryOutcome) else None
        self.job_session = None
        if self.waiting:
            self.screen.call_after_refresh(self._after_job, job)
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
        early = bool(message.error or report.cancelled)
        if early:
            # What was done and what was not reached; never the whole run's counts line, whose
            # "nodes N" is the scope asked for, not what was done.
            how = [took, f"{report.computed} summarized", count(report.model_calls, "model call")]
            if report.reused:
                how.append(f"{report.reused} reused")
            rest = report.nodes - handled
            done = (f"{handled} of {count(report.nodes, 'node')} done ({', '.join(how)})"
                    + (f"; {rest} not reached." if rest else "."))
            lines.append(f"Cancelled: {done}" if not message.error else f"Stopped by an error: {done}\n{message.error}")
        else:
            lines.append(f"{job.scope[:1].upper() + job.scope[1:]} of {job.label} in {took}.")
            lines.append(report.counts_line())
        if report.failed:
            lines.append(f"{count(report.failed, 'node')} failed (✗): see the flags beside the summary.")
        if early:
            lines.append("What is done is kept; run it again to resume where it stopped.")
        trouble = bool(report.failed or report.cancelled or message.error)
        self.notify("\n".join(lines), title="Cancelled" if report.cancelled and not message.error else "Summarized",
                    severity="warning" if trouble else "information", timeout=8 if trouble else 5)
