"""The status bar: the open document's verdict, its chunks and tokens, unsaved edits, the model job.

One line at the bottom of the workbench that answers "where am I and is it all right?" without
the overview being on screen (on short terminals it is not). It renders what the screen hands
it; it computes nothing. When the line is wider than the terminal (80 columns), the document's
name gives way first (its folder, then its middle, cut with …), so the counts stay whole.
"""
from __future__ import annotations

from rich.cells import cell_len
from textual.content import Content
from textual.widgets import Static

from ctxfst_tui.core.text import plural
from ctxfst_tui.services.report import DocumentStatus

STATE_STYLE = {"valid": "$text-success", "warnings": "$text-warning", "errors": "$text-error"}
GLYPH = {"valid": "✓", "warnings": "▲", "errors": "✗"}



class StatusBar(Static, can_focus=False):
    """``✓ runbook.ctxfst.md · valid │ 14 chunks · 5,210 tokens │ ● 2 unsaved │ model: Contextualizing``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self.document: str | None = None
        self.status: DocumentStatus | None = None
        self.deleted = False
        self.chunks: tuple[int, int, str] | None = None  # count, total tokens, what they are
        self.unsaved = 0
        self.job: str | None = None
        self.text = ""  # the line as plain text (for tests and screen readers)

    def on_mount(self) -> None:
        self._render_line()

    def on_resize(self) -> None:
        self._render_line()

    # ------------------------------------------------------------ what the screen hands down
    def show_document(self, name: str | None, status: DocumentStatus | None = None, deleted: bool = False) -> None:
        if name != self.document:
            self.chunks = None
        self.document, self.status, self.deleted = name, status, deleted
        self._render_line()

    def show_chunks(self, count: int, tokens: int, what: str = "") -> None:
        self.chunks = (count, tokens, what)
        self._render_line()

    def show_unsaved(self, count: int) -> None:
        self.unsaved = count
        self._render_line()

    def show_job(self, title: str | None) -> None:
        self.job = title
        self._render_line()

    # ------------------------------------------------------------ rendering
    def _render_line(self) -> None:
        line = self._line(self.document or "")
        width = self.content_region.width
        if width and self.document and cell_len(line.plain) > width:
            short = self.document.rsplit("/", 1)[-1]  # the file's name without its folder
            line = self._line(short)
            over = cell_len(line.plain) - width
            if over > 0 and len(short) - over >= 8:  # the name's middle gives way: "paragr…ne.txt"
                keep = len(short) - over - 1
                short = short[: keep - keep // 3] + "…" + short[len(short) - keep // 3:]
                line = self._line(short)
        self.text = line.plain
        self.update(line)

    def _line(self, name: str) -> Content:
        """The line with the open document called ``name``."""
        parts: list[Content] = []
        if self.document is None:
            parts.append(Content.styled("No document open", "$text-muted"))
        elif self.deleted:
            parts.append(Content.assemble(("✗ ", "$text-error bold"), (name, "bold"),
                                          (" · deleted on disk", "$text-error")))
        else:
            doc = Content.styled(name, "bold")
            if self.status is not None:
                s = self.status
                detail = ["valid" if s.valid else "invalid"]
                if s.errors:
                    detail.append(plural.count(s.errors, "error", grouped=True))
                if s.warnings:
                    detail.append(plural.count(s.warnings, "warning", grouped=True))
                style = STATE_STYLE[s.state]
                doc = Content.assemble((GLYPH[s.state] + " ", f"{style} bold"), doc, (" · " + ", ".join(detail), style))
            parts.append(doc)
            if self.chunks is not None:
                count, tokens, _what = self.chunks
                parts.append(Content(f"{plural.count(count, 'chunk', grouped=True)} · {plural.count(tokens, 'token', grouped=True)}"))
        if self.unsaved:
            parts.append(Content.styled(f"● {self.unsaved} unsaved (ctrl+s)", "$text-warning"))
        if self.job:
            parts.append(Content.styled(f"model: {self.job}", "$text-accent"))
        return Content(" │ ").join(parts)
