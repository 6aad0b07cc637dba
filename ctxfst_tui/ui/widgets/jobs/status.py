"""The job status line: what the model is doing, chunk (or node) i of n, ETA, tokens/s, elapsed, a progress bar.

Shown only while a model job runs; it renders what the screen hands it (JobProgress) and
ticks the elapsed time itself, so a long model call never looks frozen.

Cheap while a job streams tokens (the rest of the app must stay as fast as when idle): the
label is repainted only when its text changed, at most every ``PAINT_EVERY`` seconds, and
without a layout pass (it is one fixed-size line); the progress bar appears once the job
knows its total. Until then the label says what happens ("starting…", "loading the model…")
and the ticking elapsed time shows it is alive: Textual's indeterminate bar would animate at
15 frames a second. "esc cancels" has a place of its own at the right end: on a narrow terminal
the label is cut with … before it, never the way out of the job.
"""
from __future__ import annotations

import time
from pathlib import PurePath

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.timer import Timer
from textual.widgets import ProgressBar, Static

from ctxfst_tui.services.jobs import Job, JobProgress, format_duration

PAINT_EVERY = 0.25  # s between two repaints of the label for progress alone
CANCEL_HINT = "esc cancels"


def phase_parts(job: Job, progress: JobProgress | None, cancelling: bool) -> list[Content]:
    """What a job line says before its counts: cancelling…, starting… or loading the model…
    (the job line here and the Summary tab's top line say it the same way)."""
    if cancelling:
        return [Content.styled("cancelling…", "$text-warning")]
    if progress is None or progress.phase == "starting":
        return [Content("starting…")]
    if progress.phase == "loading":
        model = PurePath(job.model).name if job.model else "the model"  # the file, not its folders
        return [Content(f"loading {model}…")]
    return []


def position(progress: JobProgress) -> int:
    """The item being worked on, 1-based (the last one once all are done)."""
    return min(progress.done + (0 if progress.done >= progress.total else 1), progress.total)


class JobStatus(Horizontal, can_focus=False):
    """One line above the footer: ``Contextualizing x · chunk 2 of 9 · 14.1 tok/s · 0:12 · esc cancels``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.job: Job | None = None
        self.progress: JobProgress | None = None
        self.cancelling = False
        self.text = ""  # the line as plain text (for tests and screen readers), always current
        self._timer: Timer | None = None
        self._flush: Timer | None = None  # a repaint put off by PAINT_EVERY
        self._shown = ""  # the text the label shows
        self._painted = 0.0  # when the label was last repainted
        self._bar: tuple[float, float] | None = None  # (total, done) the bar shows

    def compose(self) -> ComposeResult:
        yield Static(id="job-label")
        # Determinate from the start (an indeterminate bar animates); hidden until a total is known.
        yield ProgressBar(total=1, show_eta=False, id="job-bar")
        yield Static(Content.styled(CANCEL_HINT, "$text-muted"), id="job-hint")

    # ------------------------------------------------------------ what the screen hands down
    def start(self, job: Job) -> None:
        self.job, self.progress, self.cancelling = job, None, False
        self._bar = None
        self.query_one(ProgressBar).update(total=1, progress=0)
        self.remove_class("-cancelling", "-determinate")
        self.add_class("-running")
        if self._timer is None:
            self._timer = self.set_interval(1.0, self._render_line)  # the elapsed time is shown in seconds
        else:
            self._timer.resume()
        self._render_line(now=True)

    def show_progress(self, progress: JobProgress) -> None:
        if progress.job is not self.job:
            return
        self.progress = progress
        if progress.total and self._bar != (progress.total, progress.done):
            self._bar = (progress.total, progress.done)
            self.query_one(ProgressBar).update(total=progress.total, progress=progress.done)
            self.add_class("-determinate")
        self._render_line()

    def show_cancelling(self) -> None:
        self.cancelling = True
        self.add_class("-cancelling")
        self._render_line(now=True)

    def finish(self) -> None:
        self.job, self.progress = None, None
        self.remove_class("-running", "-cancelling", "-determinate")
        if self._timer is not None:
            self._timer.pause()
        if self._flush is not None:
            self._flush.stop()
            self._flush = None
        self.text = ""

    # ------------------------------------------------------------ rendering
    def _render_line(self, now: bool = False) -> None:
        job, p = self.job, self.progress
        if job is None:
            return
        parts: list[Content] = [Content.styled(job.title, "bold"), *phase_parts(job, p, self.cancelling)]
        if p is not None and p.total and p.phase == "running":
            current = position(p)
            parts.append(Content(f"{p.unit} {current} of {p.total}"))
            if p.eta is not None and p.done < p.total:
                parts.append(Content(f"ETA {format_duration(p.eta)}"))
        if p is not None and p.tokens_per_second:
            parts.append(Content(f"{p.tokens_per_second:.1f} tok/s"))
        if p is not None and p.cache_hits:
            parts.append(Content(f"{p.cache_hits} cached"))
        parts.append(Content(format_duration(job.elapsed)))
        line = Content(" · ").join(parts)
        self.text = line.plain + ("" if self.cancelling else f" · {CANCEL_HINT}")  # as the line reads
        if self.text == self._shown:
            return
        wait = self._painted + PAINT_EVERY - time.monotonic()
        if wait > 0 and not now:
            if self._flush is None:
                self._flush = self.set_timer(wait, self._paint_later)
            return
        self._paint(line)

    def _paint_later(self) -> None:
        self._flush = None
        self._render_line(now=True)

    def _paint(self, line: Content) -> None:
        self._shown, self._painted = self.text, time.monotonic()
        self.query_one("#job-hint", Static).display = not self.cancelling
        # One fixed-size line (width 1fr, height 1): a repaint, never a layout of the screen.
        self.query_one("#job-label", Static).update(line, layout=False)
