"""The source view: the document's text, read-only, with line numbers and a jumpable cursor line.

A Line-API ScrollView (like the chunk map): opening a document splits its text into lines once
and sets the virtual size; only the rows on screen are ever rendered. Tabs are expanded and
control characters replaced by visible stand-ins per rendered line, so opening a long novel costs
one split into lines and a key press costs the same on it as on a small file.

Soft wrap is on (``w`` turns it off): a line wider than the view (a novel's paragraph) is drawn
on as many rows as it needs, broken after a space where it can; its line number is on its first
row. The rows are worked out once per text and width (:func:`wrap_starts` on each line wider
than the view), and up/down/pageup/pagedown move by rows. With wrap off, long lines scroll
sideways (left/right move the cursor column and the view follows).

Keys: up/down, pageup/pagedown, home/end (start/end of the line), ctrl+home/ctrl+end (first/last
line), left/right; a click puts the cursor there; ``y`` / ``ctrl+c`` copy the cursor line (or
the highlighted range it is in). The screen can highlight ranges of lines (a chunk's span, an
entity's mentions) with :meth:`SourceView.highlight_lines` / :meth:`SourceView.highlight_ranges`;
the view posts :class:`SourceView.CursorMoved` when the cursor changes line.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Iterable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ctxfst_tui.core.format.source import ends_with_break, split_lines


def display_lines(text: str) -> list[str]:
    """``text`` cut into the lines the core counts (YAML's line breaks: LF, CRLF, a lone CR,
    NEL, LS, PS), so a finding's line is the view's line; the last line may be empty.

    Other characters Python's str.splitlines() breaks on (\\v, \\f, \\x1c-\\x1e) stay inside
    their line and are drawn as control stand-ins (␋ ␌ ␜ ␝ ␞)."""
    lines = split_lines(text)
    if not text or ends_with_break(text):
        lines.append("")
    return lines


def displayable(text: str) -> str:
    """The view's lines (:func:`display_lines`) joined by "\\n"."""
    return "\n".join(display_lines(text))


TAB_SIZE = 4
# What a rendered line must not hold as is: tabs (expanded to the next stop) and control
# characters (each shown as a one-cell stand-in, so columns still count characters).
_SPECIAL = re.compile(r"[\t\x00-\x1f\x7f-\x9f]")
_CONTROL_STANDINS = {chr(c): chr(0x2400 + c) for c in range(0x20)}  # ␀ … ␟
_CONTROL_STANDINS["\x7f"] = "␡"
_CONTROL_STANDINS.update({chr(c): "�" for c in range(0x80, 0xA0)})  # C1 controls


def _width(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)


def _pieces(line: str) -> tuple[list[tuple[str, bool]], int]:
    """``line`` as it is drawn: (text, is_control_standin) pieces with tabs expanded, and its cells."""
    if _SPECIAL.search(line) is None:
        return [(line, False)], _width(line)
    pieces: list[tuple[str, bool]] = []
    cells = pos = 0
    for m in _SPECIAL.finditer(line):
        start = m.start()
        if start > pos:
            chunk = line[pos:start]
            pieces.append((chunk, False))
            cells += _width(chunk)
        char = m.group()
        if char == "\t":
            n = TAB_SIZE - cells % TAB_SIZE
            pieces.append((" " * n, False))
            cells += n
        else:
            pieces.append((_CONTROL_STANDINS[char], True))
            cells += 1
        pos = m.end()
    if pos < len(line):
        chunk = line[pos:]
        pieces.append((chunk, False))
        cells += _width(chunk)
    return pieces, cells


def _cells_before(line: str, column: int) -> int:
    """The cell at which character ``column`` of ``line`` is drawn."""
    if line.isascii() and "\t" not in line:
        return column
    return _pieces(line[:column])[1]


def _column_at(line: str, cell: int) -> int:
    """The character of ``line`` drawn at ``cell`` (the line's length past its end)."""
    if line.isascii() and "\t" not in line:
        return min(cell, len(line))
    cells = 0
    for i, char in enumerate(line):
        if char == "\t":
            w = TAB_SIZE - cells % TAB_SIZE
        elif char in _CONTROL_STANDINS:
            w = 1
        else:
            w = cell_len(char)
        if cells + w > cell:
            return i
        cells += w
    return len(line)


# Characters not one cell wide (East Asian wide, emoji, combining marks, zero-width): a text
# without any is wrapped on its characters directly (one character, one cell).
_NOT_ONE_CELL = re.compile(
    "[\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0e31-\u0e3a\u0e47-\u0e4e"
    "\u1100-\u115f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u20d0-\u20ff\u231a-\u231b\u2329-\u232a"
    "\u23e9-\u23ff\u25fd-\u25fe\u2600-\u27bf\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua000-\ua4cf\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe00-\ufe0f\ufe10-\ufe19\ufe20-\ufe6f"
    "\uff00-\uff60\uffe0-\uffe6\U0001f000-\U0001faff\U00020000-\U0003fffd\U000e0000-\U000e01ef]"
)


def _drawn(line: str, one_cell: bool) -> str:
    """``line`` as one character per cell: tabs expanded, a wide character followed by a NUL for
    its second cell, zero-width ones left out (so an index in it is a cell)."""
    if one_cell or _NOT_ONE_CELL.search(line) is None:
        return line.expandtabs(TAB_SIZE) if "\t" in line else line
    out: list[str] = []
    cells = 0
    for char in line:
        if char == "\t":
            n = TAB_SIZE - cells % TAB_SIZE
            out.append(" " * n)
            cells += n
            continue
        w = 1 if char in _CONTROL_STANDINS else cell_len(char)
        if w:
            out.append(char + "\0" * (w - 1))
            cells += w
    return "".join(out)


def wrap_starts(drawn: str, width: int) -> list[int]:
    """The cells at which each row of a line begins when it is wrapped at ``width`` cells
    (``drawn``: the line as :func:`_drawn` gives it): after the last space that fits, else (a word
    wider than a row) at the width; a wide character is never split."""
    starts = [0]
    pos, n = 0, len(drawn)
    width = max(width, 2)
    while n - pos > width:
        space = drawn.rfind(" ", pos, pos + width)
        nxt = space + 1 if space > pos else pos + width
        if drawn[nxt:nxt + 1] == "\0":  # the second cell of a wide character: move it down whole
            nxt -= 1
        starts.append(nxt)
        pos = nxt
    return starts


def _text_width(lines: list[str], tabs: bool) -> int:
    """Cells of the widest line, cheaply: characters, plus the most a tab can add. Wide (CJK)
    characters are not counted here: a line drawn wider than this grows the view when shown."""
    width = max(map(len, lines), default=0)
    if tabs:
        width = max(width, max((len(l) + (TAB_SIZE - 1) * l.count("\t") for l in lines if "\t" in l), default=0))
    return width


class SourceView(ScrollView, can_focus=True):
    """The text of the open document, read-only; the screen loads it and moves its cursor."""

    COMPONENT_CLASSES = {
        "source-view--gutter",
        "source-view--cursor-gutter",
        "source-view--cursor-line",
        "source-view--cursor",
        "source-view--highlight",
        "source-view--highlight-gutter",
        "source-view--control",
        "source-view--placeholder",
    }

    # Undo/redo here mean the session's edits (the text itself is read-only).
    BINDINGS = [
        Binding("up", "cursor_up", "Up", show=False, id="source.cursor-up"),
        Binding("down", "cursor_down", "Down", show=False, id="source.cursor-down"),
        Binding("left", "cursor_left", "Left", show=False, id="source.cursor-left"),
        Binding("right", "cursor_right", "Right", show=False, id="source.cursor-right"),
        Binding("pageup", "page_up", "Page up", show=False, id="source.page-up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="source.page-down"),
        Binding("home", "line_start", "Line start", show=False, id="source.line-start"),
        Binding("end", "line_end", "Line end", show=False, id="source.line-end"),
        Binding("ctrl+home", "first_line", "First line", show=False, id="source.first-line"),
        Binding("ctrl+end", "last_line", "Last line", show=False, id="source.last-line"),
        Binding("y,ctrl+c", "copy", "Copy line", id="source.copy",
                tooltip="Copy the cursor line (or the highlighted lines it is in)"),
        Binding("w", "toggle_wrap", "Wrap", id="source.wrap",
                tooltip="Soft wrap on or off: long lines on several rows, or scrolling sideways"),
        Binding("ctrl+z", "app.undo", "Undo", show=False, id="source.undo"),
        Binding("ctrl+y", "app.redo", "Redo", show=False, id="source.redo"),
    ]

    @dataclass(eq=False)
    class CursorMoved(Message):
        """The cursor went to another line (or another text was shown). ``line`` is 1-based."""

        source_view: SourceView
        line: int

        @property
        def control(self) -> SourceView:
            return self.source_view

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Source"
        self.read_only = True  # always: the session edits documents, not this view
        self.show_line_numbers = False  # on once a document with text is shown
        self.placeholder = "No document open."
        self.text = ""
        self._lines: list[str] = [""]
        self._doc_name = ""
        self._row = 0
        self._col = 0
        self._highlights: list[tuple[int, int]] = []  # sorted, 0-based inclusive rows
        self._highlight_starts: list[int] = []
        self._center_pending = False
        self.soft_wrap = True  # long lines on several rows (w turns it off)
        self._one_cell = True  # every character of the text is one cell wide (wrapping is cheap)
        self._wrap_width = 0  # the text's cells per row the wrapping was worked out for (0: no wrap)
        self._wraps: dict[int, list[int]] = {}  # line -> the cells its rows start at (lines of 2+ rows)
        self._row_top: list[int] | None = None  # each line's first row, then the row count (None: a row each)

    # ------------------------------------------------------------ what the screen hands down
    def show_text(self, text: str, name: str, keep_position: bool = False, note: str | None = None) -> None:
        """Show ``text`` (``note`` explains an empty view, e.g. for a binary file)."""
        where = self.cursor_location
        scroll_x, scroll_y = self.scroll_offset
        self._doc_name = name
        self.placeholder = note or "The file has no text."
        self.text = text
        self._lines = display_lines(text)
        self.show_line_numbers = bool(text)
        self._highlights, self._highlight_starts = [], []
        self.border_title = f"Source — {name}" if name else "Source"
        self._one_cell = _NOT_ONE_CELL.search(text) is None
        self._rewrap()
        if keep_position:
            self._row, self._col = self._clamp(*where)
            self.scroll_to(0 if self._wrap_width else scroll_x, scroll_y, animate=False, immediate=True)
        else:
            self._row = self._col = 0
            self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()
        self._cursor_changed(line_changed=True)

    def goto(self, line: int, column: int) -> None:
        """Put the cursor at 1-based ``line``/``column`` (0 = start), centred on screen."""
        self.move_cursor((max(line - 1, 0), max(column - 1, 0)), center=True)

    @property
    def line_count(self) -> int:
        """Lines of the text shown (one per line break, plus the last, possibly empty, one)."""
        return len(self._lines)

    @property
    def cursor_location(self) -> tuple[int, int]:
        """The cursor's (row, column), 0-based; the column counts characters."""
        return self._row, self._col

    @cursor_location.setter
    def cursor_location(self, location: tuple[int, int]) -> None:
        self.move_cursor(location)

    def move_cursor(self, location: tuple[int, int], *, center: bool = False) -> None:
        """Move the cursor to 0-based (row, column), clamped to the text, and scroll it into view."""
        old_row, old_col = self._row, self._col
        self._row, self._col = self._clamp(*location)
        if center:
            self._scroll_center()
        else:
            self._scroll_cursor_visible()
        if (self._row, self._col) != (old_row, old_col):
            self._refresh_rows(old_row, self._row)
            self._cursor_changed(line_changed=self._row != old_row)

    # ------------------------------------------------------------ highlighted lines
    def highlight_lines(self, first: int, last: int | None = None) -> None:
        """Highlight 1-based lines ``first``..``last`` (inclusive), replacing any highlight."""
        self.highlight_ranges([(first, first if last is None else last)])

    def highlight_ranges(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Highlight several 1-based inclusive line ranges (an entity's mentions), replacing any highlight."""
        rows = sorted((max(a, 1) - 1, max(b, 1) - 1) for a, b in ((min(a, b), max(a, b)) for a, b in ranges))
        merged: list[tuple[int, int]] = []
        for a, b in rows:
            if merged and a <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        if merged != self._highlights:
            self._highlights = merged
            self._highlight_starts = [a for a, _ in merged]
            self.refresh()

    def clear_highlight(self) -> None:
        if self._highlights:
            self._highlights, self._highlight_starts = [], []
            self.refresh()

    @property
    def highlighted(self) -> list[tuple[int, int]]:
        """The highlighted ranges, 1-based inclusive."""
        return [(a + 1, b + 1) for a, b in self._highlights]

    def _highlight_at(self, row: int) -> tuple[int, int] | None:
        i = bisect_right(self._highlight_starts, row) - 1
        if i >= 0 and self._highlights[i][1] >= row:
            return self._highlights[i]
        return None

    # ------------------------------------------------------------ soft wrap
    def _text_cells(self) -> int:
        """Cells a row of text may take when wrapped: the view's width less the gutter, a scrollbar
        (always counted, so showing one never wraps the text again) and a cell for the cursor."""
        return self.content_region.width - self._gutter_width() - self.styles.scrollbar_size_vertical - 1

    def _rewrap(self) -> None:
        """Work out the rows of the lines wider than the view (all of them once per text and width)."""
        self._wraps, self._row_top = {}, None
        lines, gutter = self._lines, self._gutter_width()
        width = self._text_cells() if self.soft_wrap and self.text else 0
        self._wrap_width = max(width, 0)
        if width <= 0:
            self.virtual_size = Size(gutter + _text_width(lines, "\t" in self.text) + 1, len(lines))
            return
        one_cell = self._one_cell
        limit = width if one_cell else width // 2  # a line of no more characters fits for sure
        if "\t" in self.text:
            longer = [i for i, l in enumerate(lines) if len(l) > limit or ("\t" in l and len(l) + (TAB_SIZE - 1) * l.count("\t") > limit)]
        else:
            longer = [i for i, l in enumerate(lines) if len(l) > limit]
        wraps: dict[int, list[int]] = {}
        for i in longer:
            drawn = _drawn(lines[i], one_cell)
            if len(drawn) > width:
                wraps[i] = wrap_starts(drawn, width)
        self._wraps = wraps
        if wraps:
            counts = [1] * len(lines)
            for i, starts in wraps.items():
                counts[i] = len(starts)
            self._row_top = [0, *accumulate(counts)]
        self.virtual_size = Size(gutter + width + 1, self._row_count())

    def _row_count(self) -> int:
        return len(self._lines) if self._row_top is None else self._row_top[-1]

    def _top(self, line: int) -> int:
        """The first row of ``line`` (0-based)."""
        return line if self._row_top is None else self._row_top[line]

    def _starts(self, line: int) -> list[int]:
        return self._wraps.get(line, [0])

    def _at(self, row: int) -> tuple[int, int]:
        """(line, which of its rows) drawn at ``row``."""
        if self._row_top is None:
            return row, 0
        line = bisect_right(self._row_top, row) - 1
        return line, row - self._row_top[line]

    @property
    def cursor_row(self) -> int:
        """The row of the view (0-based, from the top of the text) the cursor is drawn on: its
        line's, unless lines above or its own are wrapped onto several rows."""
        return self._cursor_row()

    def _cursor_row(self) -> int:
        """The row the cursor is drawn on."""
        if self._row_top is None:
            return self._row
        starts = self._starts(self._row)
        return self._row_top[self._row] + bisect_right(starts, _cells_before(self._lines[self._row], self._col)) - 1

    def _move_rows(self, delta: int) -> None:
        """The cursor ``delta`` rows down (up when negative), keeping its place in the row."""
        if self._row_top is None:
            self.move_cursor((self._row + delta, self._col))
            return
        cell = _cells_before(self._lines[self._row], self._col)
        starts = self._starts(self._row)
        x = cell - starts[bisect_right(starts, cell) - 1]
        line, k = self._at(max(0, min(self._cursor_row() + delta, self._row_count() - 1)))
        starts = self._starts(line)
        target = starts[k] + x
        if k + 1 < len(starts):
            target = min(target, starts[k + 1] - 1)
        self.move_cursor((line, _column_at(self._lines[line], target)))

    def action_toggle_wrap(self) -> None:
        self.soft_wrap = not self.soft_wrap
        self._rewrap()
        self.scroll_to(x=0, animate=False, immediate=True)
        self._scroll_cursor_visible()
        self.refresh()
        self.notify("Soft wrap on: long lines on several rows." if self.soft_wrap
                    else "Soft wrap off: long lines scroll sideways.", timeout=2)

    # ------------------------------------------------------------ keys and mouse
    def action_cursor_up(self) -> None:
        self._move_rows(-1)

    def action_cursor_down(self) -> None:
        self._move_rows(1)

    def action_cursor_left(self) -> None:
        if self._col > 0:
            self.move_cursor((self._row, self._col - 1))
        elif self._row > 0:
            self.move_cursor((self._row - 1, len(self._lines[self._row - 1])))

    def action_cursor_right(self) -> None:
        if self._col < len(self._lines[self._row]):
            self.move_cursor((self._row, self._col + 1))
        elif self._row < len(self._lines) - 1:
            self.move_cursor((self._row + 1, 0))

    def action_page_up(self) -> None:
        page = self._page()
        self.scroll_to(y=self.scroll_offset.y - page, animate=False, immediate=True)
        self._move_rows(-page)

    def action_page_down(self) -> None:
        page = self._page()
        self.scroll_to(y=self.scroll_offset.y + page, animate=False, immediate=True)
        self._move_rows(page)

    def action_line_start(self) -> None:
        self.move_cursor((self._row, 0))

    def action_line_end(self) -> None:
        self.move_cursor((self._row, len(self._lines[self._row])))

    def action_first_line(self) -> None:
        self.move_cursor((0, 0))

    def action_last_line(self) -> None:
        self.move_cursor((len(self._lines) - 1, 0))

    def action_copy(self) -> None:
        """Copy the highlighted range the cursor is in, else the cursor line."""
        if not self.text:
            return
        first, last = self._highlight_at(self._row) or (self._row, self._row)
        self.app.copy_to_clipboard("\n".join(self._lines[first:last + 1]))
        what = f"line {first + 1}" if first == last else f"lines {first + 1}–{last + 1}"
        self.notify(f"Copied {what}.", timeout=2)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        x, y = offset
        if not self.text or self.scroll_offset.y + y >= self._row_count():
            return
        row, k = self._at(self.scroll_offset.y + y)
        starts = self._starts(row)
        cell = max(x - self._gutter_width(), 0) + self.scroll_offset.x + starts[k]
        if k + 1 < len(starts):
            cell = min(cell, starts[k + 1] - 1)
        self.move_cursor((row, _column_at(self._lines[row], cell)))

    def on_focus(self) -> None:
        self._refresh_rows(self._row)

    def on_blur(self) -> None:
        self._refresh_rows(self._row)

    def on_resize(self) -> None:
        if self.soft_wrap and self.text and self._text_cells() != self._wrap_width:
            self._rewrap()  # the rows follow the width; the cursor stays in view
            if not self._center_pending:
                self._scroll_cursor_visible()
            self.refresh()
        if self._center_pending:
            self._scroll_center()

    def on_show(self) -> None:
        # Jumped to while its tab was hidden: centre once it has a size again.
        if self._center_pending:
            self.call_after_refresh(self._scroll_center)

    # ------------------------------------------------------------ rendering
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        if not self.text:
            if y == 0:
                style = base + self.get_component_rich_style("source-view--placeholder")
                return Strip([Segment(self.placeholder, style)]).adjust_cell_length(width, base)
            return Strip.blank(width, base)
        if scroll_y + y >= self._row_count():
            return Strip.blank(width, base)
        row, part = self._at(scroll_y + y)

        is_cursor = row == self._row
        highlighted = self._highlight_at(row) is not None
        line_style = base
        if highlighted:
            line_style += self.get_component_rich_style("source-view--highlight")
        if is_cursor:
            line_style += self.get_component_rich_style("source-view--cursor-line")

        segments: list[Segment] = []
        gutter = self._gutter_width()
        if gutter:
            component = ("source-view--cursor-gutter" if is_cursor else
                         "source-view--highlight-gutter" if highlighted else "source-view--gutter")
            number = f"{row + 1:>{gutter - 2}}" if part == 0 else " " * (gutter - 2)  # a wrapped line's next rows
            segments.append(Segment(f" {number} ", base + self.get_component_rich_style(component)))

        line = self._lines[row]
        text_width = max(width - gutter, 0)
        starts = self._wraps.get(row)
        if starts is not None:  # one row of a wrapped line: its cells from starts[part] on
            scroll_x = starts[part]
            end = starts[part + 1] if part + 1 < len(starts) else None
            text_width = min(text_width, end - scroll_x) if end is not None else text_width
        if line.isascii() and _SPECIAL.search(line) is None and not (is_cursor and self.has_focus):
            body = Strip([Segment(line[scroll_x:scroll_x + text_width], line_style)])  # the common case
        else:
            pieces, cells = _pieces(line)
            if gutter + cells + 1 > self.virtual_size.width and not self._wrap_width:
                self.call_later(self._widen, gutter + cells + 1)  # wide characters: let it scroll that far
            control = line_style + self.get_component_rich_style("source-view--control", partial=True)
            body = Strip([Segment(text, control if is_control else line_style) for text, is_control in pieces])
            if is_cursor and self.has_focus:
                body = self._with_cursor(body, line, line_style)
            body = body.crop(scroll_x, scroll_x + text_width)
        text_width = max(width - gutter, 0)
        segments.extend(body.adjust_cell_length(text_width, line_style))
        strip = Strip(segments, gutter + text_width)
        return strip if gutter <= width else strip.crop(0, width)

    def _with_cursor(self, body: Strip, line: str, line_style: Style) -> Strip:
        """``body`` with the cursor cell drawn over character ``self._col`` (a space past the end)."""
        cursor = self.get_component_rich_style("source-view--cursor")
        at = _cells_before(line, self._col)
        if self._col >= len(line):
            return Strip([*body.adjust_cell_length(at, line_style), Segment(" ", line_style + cursor)])
        char = line[self._col]
        w = max(_pieces(char)[1] if char != "\t" else TAB_SIZE - at % TAB_SIZE, 1)
        before, under, after = body.divide([at, at + w, body.cell_length])[:3]
        return Strip([*before, *Segment.apply_style(under, post_style=cursor), *after])

    # ------------------------------------------------------------ helpers
    def _widen(self, width: int) -> None:
        if width > self.virtual_size.width:
            self.virtual_size = Size(width, self.virtual_size.height)

    def _gutter_width(self) -> int:
        return len(str(len(self._lines))) + 2 if self.show_line_numbers else 0

    def _page(self) -> int:
        return max(self.scrollable_content_region.height, 1)

    def _clamp(self, row: int, col: int) -> tuple[int, int]:
        row = max(0, min(row, len(self._lines) - 1))
        return row, max(0, min(col, len(self._lines[row])))

    def _refresh_rows(self, *rows: int) -> None:
        top = self.scroll_offset.y
        for row in set(rows):
            first = self._top(row)
            count = len(self._starts(row))
            if first + count > top:
                self.refresh_lines(first, count)

    def _scroll_cursor_visible(self) -> None:
        region = self.scrollable_content_region
        height, text_width = region.height, region.width - self._gutter_width()
        if height <= 0:
            self._center_pending = True
            return
        x, y = self.scroll_offset
        cursor = self._cursor_row()
        if cursor < y:
            y = cursor
        elif cursor >= y + height:
            y = cursor - height + 1
        cell = _cells_before(self._lines[self._row], self._col)
        if self._wrap_width:
            x = 0
        elif text_width > 0:
            if cell < x:
                x = max(cell - text_width // 4, 0)
            elif cell >= x + text_width:
                x = cell - text_width + 1 + text_width // 4
        if (x, y) != tuple(self.scroll_offset):
            self.scroll_to(x, y, animate=False, immediate=True)

    def _scroll_center(self) -> None:
        """Scroll the cursor line to the middle (when laid out; else as soon as it is)."""
        height = self.scrollable_content_region.height
        if height <= 0:
            self._center_pending = True
            return
        self._center_pending = False
        text_width = self.scrollable_content_region.width - self._gutter_width()
        cell = _cells_before(self._lines[self._row], self._col)
        x = 0 if cell < text_width or self._wrap_width else cell - text_width // 2
        self.scroll_to(x, max(self._cursor_row() - height // 2, 0), animate=False, immediate=True)

    def _cursor_changed(self, line_changed: bool) -> None:
        row, col = self._row, self._col
        self.border_subtitle = f"Ln {row + 1}, Col {col + 1}" if self._doc_name else ""
        if line_changed:
            self.post_message(self.CursorMoved(self, row + 1))
