"""The source view: the document's text, read-only, with line numbers and a jumpable cursor."""
from __future__ import annotations

from textual import on
from textual.binding import Binding
from textual.widgets import TextArea

# Characters Python's str.splitlines() breaks on, other than "\n" and "\r\n". The core counts
# lines by "\n" only, so they are shown as visible one-character stand-ins: line and column
# numbers in the view then match the ones findings report.
_LINE_BREAK_STANDINS = str.maketrans({
    "\r": "␍",  # a lone CR (a CRLF pair is restored below)
    "\x0b": "␋",
    "\x0c": "␌",
    "\x1c": "␜",
    "\x1d": "␝",
    "\x1e": "␞",
    "\x85": "␤",
    "\u2028": "␤",
    "\u2029": "¶",
})


def displayable(text: str) -> str:
    """``text`` with the same lines as the core sees (one line per "\\n"), CRLF kept as CRLF."""
    if not any(c in text for c in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        return text
    return text.translate(_LINE_BREAK_STANDINS).replace("␍\n", "\r\n")


class SourceView(TextArea):
    """A read-only TextArea; the screen loads text into it and moves its cursor."""

    # Undo/redo here mean the session's edits (the text itself is read-only).
    BINDINGS = [
        Binding("ctrl+z", "app.undo", "Undo", show=False, id="source.undo"),
        Binding("ctrl+y", "app.redo", "Redo", show=False, id="source.redo"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            "",
            read_only=True,
            show_line_numbers=False,  # on once a document is shown
            placeholder="No document open.",
            soft_wrap=False,
            highlight_cursor_line=True,
            tab_behavior="focus",
            id=id,
        )
        self.border_title = "Source"
        self._doc_name = ""

    # ------------------------------------------------------------ what the screen hands down
    def show_text(self, text: str, name: str, keep_position: bool = False, note: str | None = None) -> None:
        """Show ``text`` (``note`` explains an empty view, e.g. for a binary file)."""
        where = self.cursor_location
        scroll = self.scroll_offset
        self._doc_name = name
        self.placeholder = note or "The file has no text."
        self.load_text(displayable(text))
        self.show_line_numbers = bool(text)
        self.border_title = f"Source — {name}" if name else "Source"
        if keep_position:
            self.move_cursor(self.clamp_visitable(where))
            self.scroll_to(scroll.x, scroll.y, animate=False, immediate=True)
        else:
            self.move_cursor((0, 0))
            self.scroll_home(animate=False, immediate=True)
        self._show_position()

    def goto(self, line: int, column: int) -> None:
        """Put the cursor at 1-based ``line``/``column`` (0 = start), centred on screen."""
        row = max(line - 1, 0)
        col = max(column - 1, 0)
        self.move_cursor(self.clamp_visitable((row, col)), center=True)

    # ------------------------------------------------------------ rendering
    @on(TextArea.SelectionChanged)
    def _show_position(self) -> None:
        row, col = self.cursor_location
        self.border_subtitle = f"Ln {row + 1}, Col {col + 1}" if self._doc_name else ""
