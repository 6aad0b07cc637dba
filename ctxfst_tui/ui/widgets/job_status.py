"""The job status line: what the model is doing, chunk (or node) i of n, ETA, tokens/s, elapsed, a progress bar.

Shown only while a model job runs; it renders what the screen hands it (JobProgress) and
ticks the elapsed time itself, so a long model call never looks frozen.
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.timer import Timer
from textual.widgets import ProgressBar, Static

from ..jobs import Job, format_duration
from ..messages import JobProgress


class JobStatus(Horizontal, can_focus=False):
    """One line above the footer: ``Contextualizing x · chunk 2 of 9 · 14.1 tok/s · 0:12 · esc cancels``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.job: Job | None = None
        self.progress: JobProgress | None = None
        self.cancelling = False
        self.text = ""  # the line as plain text (for tests and screen readers)
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="job-label")
        yield ProgressBar(total=None, show_eta=False, id="job-bar")

    # ------------------------------------------------------------ what the screen hands down
    def start(self, job: Job) -> None:
        self.job, self.progress, self.cancelling = job, None, False
        self.query_one(ProgressBar).update(total=None, progress=0)
        self.add_class("-running")
        self.remove_class("-cancelling")
        if self._timer is None:
            self._timer = self.set_interval(0.5, self._render_line)
        else:
            self._timer.resume()
        self._render_line()

    def show_progress(self, message: JobProgress) -> None:
        if message.job is not self.job:
            return
        self.progress = message
        if message.total:
            self.query_one(ProgressBar).update(total=message.total, progress=message.done)
        self._render_line()

    def show_cancelling(self) -> None:
        self.cancelling = True
        self.add_class("-cancelling")
        self._render_line()

    def finish(self) -> None:
        self.job, self.progress = None, None
        self.remove_class("-running", "-cancelling")
        if self._timer is not None:
            self._timer.pause()
        self.text = ""

    # ------------------------------------------------------------ rendering
    def _render_line(self) -> None:
        job, p = self.job, self.progress
        if job is None:
            return
        parts: list[Content] = [Content.styled(job.title, "bold")]
        if self.cancelling:
            parts.append(Content.styled("cancelling…", "$text-warning"))
        elif p is None or p.phase == "starting":
            parts.append(Content("starting…"))
        elif p.phase == "loading":
            parts.append(Content(f"loading {job.model or 'the model'}…"))
        if p is not None and p.total and p.phase == "running":
            current = min(p.done + (0 if p.done >= p.total else 1), p.total)
            parts.append(Content(f"{p.unit} {current} of {p.total}"))
            if p.eta is not None and p.done < p.total:
                parts.append(Content(f"ETA {format_duration(p.eta)}"))
        if p is not None and p.tokens_per_second:
            parts.append(Content(f"{p.tokens_per_second:.1f} tok/s"))
        if p is not None and p.cache_hits:
            parts.append(Content(f"{p.cache_hits} cached"))
        parts.append(Content(format_duration(job.elapsed)))
        if not self.cancelling:
            parts.append(Content.styled("esc cancels", "$text-muted"))
        line = Content(" · ").join(parts)
        self.text = line.plain
        self.query_one("#job-label", Static).update(line)
