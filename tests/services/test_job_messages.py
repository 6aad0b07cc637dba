"""A job body reports plain events (services, no Textual); the UI turns them into Messages:
progress of one job replaces its queued predecessor, a node change is never replaced."""
from __future__ import annotations

from pathlib import Path

from ctxfst_tui.services.jobs import Job, JobProgress, NodeChanged, SummaryNodeView
from ctxfst_tui.ui.messages import JobProgressed, SummaryNodeChanged, job_message


def test_progress_of_the_same_job_replaces_the_queued_one_and_only_that() -> None:
    job, other = Job("contextualize", Path("a.md"), "a.md"), Job("extract", Path("b.md"), "b.md")
    first, second = job_message(JobProgress(job, done=1, total=3)), job_message(JobProgress(job, done=2, total=3))
    assert isinstance(second, JobProgressed) and second.job is job and second.progress.done == 2
    assert second.can_replace(first)
    assert not second.can_replace(job_message(JobProgress(other, done=1)))


def test_a_node_change_is_its_own_message_and_never_replaces_another() -> None:
    job = Job("summarize", Path("story.txt"), "story.txt")
    view = SummaryNodeView("c1", "chapter", "Chapter One", 1200, "running")
    message = job_message(NodeChanged(job, view))
    assert isinstance(message, SummaryNodeChanged) and message.job is job and message.view is view
    assert not message.can_replace(job_message(NodeChanged(job, view)))
