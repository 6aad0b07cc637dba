"""The chunk map: the document's lines with each chunk's span drawn as a coloured band.

A Line-API ScrollView (only visible rows are rendered), so a 1 MB document scrolls as fast
as a small one. A header row above each chunk gives its number, id/breadcrumb and real token
count; chunks outside the CtxFST size guidelines are marked.
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual.actions import SkipAction
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ctxfst_tui.core.chunking.spans import ChunkSpan
from ctxfst_tui.core.format.source import split_lines

# Control characters left inside a line (\v, \f, ESC, ...) drawn as visible stand-ins, never sent raw.
_CONTROL_STANDINS = str.maketrans({chr(c): chr(0x2400 + c) for c in range(0x20)} | {"\x7f": "␡"})

GUTTER = 8  # band (1) + line number (6) + space (1)


class ChunkMap(ScrollView, can_focus=True):
    """Rows: a header per chunk, then its source lines with a band in the chunk's colour."""

    COMPONENT_CLASSES = {
        "chunk-map--band-a",
        "chunk-map--band-b",
        "chunk-map--header",
        "chunk-map--header-selected",
        "chunk-map--flag",
        "chunk-map--line-number",
        "chunk-map--outside",
        "chunk-map--marked",
    }
    BINDINGS = [
        Binding("n,j", "next_chunk", "Next chunk", id="preview.next-chunk"),
        Binding("p,k", "previous_chunk", "Prev chunk", id="preview.previous-chunk"),
        Binding("home", "first_chunk", "First", show=False, id="preview.first-chunk"),
        Binding("end", "last_chunk", "Last", show=False, id="preview.last-chunk"),
    ]

    selected: reactive[int] = reactive(0, layout=False)

    @dataclass(eq=False)
    class ChunkHighlighted(Message):
        """The selected chunk changed (for the status line)."""

        span: ChunkSpan | None

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[str] = []
        self._spans: list[ChunkSpan] = []
        self._rows: list[tuple[str, int, int]] = []  # ("header", span_i, 0) | ("line", line_no, span_i or -1)
        self._header_rows: list[int] = []
        self.marked: frozenset[str] = frozenset()  # chunk ids another view points at (e.g. an entity's links)

    # ------------------------------------------------------------ data from the screen
    def show(self, text: str, spans: list[ChunkSpan], keep_selection: bool = False) -> None:
        self._lines = split_lines(text)  # YAML's line breaks, as the spans' line numbers count them
        self._spans = spans
        self._build_rows()
        old = self.selected
        self.selected = min(old, len(spans) - 1) if keep_selection and spans else 0
        if not keep_selection:
            self._jump(0, 0)
        self.refresh()
        self.post_message(self.ChunkHighlighted(self.current_span))

    def mark_ids(self, ids: set[str] | frozenset[str]) -> None:
        """Mark the chunks with these ids (◆ on their headers); an empty set clears the marks."""
        ids = frozenset(ids)
        if ids != self.marked:
            self.marked = ids
            self.refresh()

    @property
    def spans(self) -> list[ChunkSpan]:
        return self._spans

    @property
    def text(self) -> str:
        """The lines shown, joined (what a screen reader, or a test, would read)."""
        return "\n".join(self._lines)

    @property
    def current_span(self) -> ChunkSpan | None:
        return self._spans[self.selected] if 0 <= self.selected < len(self._spans) else None

    def _build_rows(self) -> None:
        rows: list[tuple[str, int, int]] = []
        headers: list[int] = []
        owner = [-1] * (len(self._lines) + 2)
        starts: dict[int, list[int]] = {}
        for i, s in enumerate(self._spans):
            starts.setdefault(s.line, []).append(i)
            for ln in range(s.line, min(s.end_line, len(self._lines)) + 1):
                if owner[ln] == -1 or not s.synthetic:
                    owner[ln] = i
        for ln in range(1, len(self._lines) + 1):
            for i in starts.get(ln, ()):
                headers.append(len(rows))
                rows.append(("header", i, 0))
            rows.append(("line", ln, owner[ln]))
        self._rows = rows
        self._header_rows = headers
        width = max((len(l) for l in self._lines), default=0) + GUTTER
        self.virtual_size = Size(max(width, 40), len(rows))

    # ------------------------------------------------------------ rendering
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if row >= len(self._rows):
            return Strip.blank(width, base)
        kind, a, b = self._rows[row]
        text_width = self.scrollable_content_region.width - GUTTER  # (the scrollbar is not for text)
        if kind == "header":
            segments = self._header_segments(a)
            return Strip(segments).adjust_cell_length(width, base)
        band_style = self._band_style(b)
        number = self.get_component_rich_style("chunk-map--line-number")
        text = self._lines[a - 1].expandtabs(4).translate(_CONTROL_STANDINS)
        body = Strip([Segment(text, base)]).crop(scroll_x, scroll_x + text_width)
        segments = [Segment("▌", band_style), Segment(f"{a:>6} ", number), *body]
        return Strip(segments).adjust_cell_length(width, base)

    def _band_style(self, span_i: int) -> Style:
        if span_i < 0:
            return self.get_component_rich_style("chunk-map--outside")
        return self.get_component_rich_style("chunk-map--band-a" if span_i % 2 == 0 else "chunk-map--band-b")

    def _header_segments(self, span_i: int) -> list[Segment]:
        s = self._spans[span_i]
        selected = span_i == self.selected
        style = self.get_component_rich_style("chunk-map--header-selected" if selected else "chunk-map--header")
        band = self._band_style(span_i)
        marker = "▶" if selected else " "
        segs = [Segment("▌", band), Segment(marker, style)]
        if s.id in self.marked:
            segs.append(Segment("◆", self.get_component_rich_style("chunk-map--marked") + Style(bold=True)))
        else:
            segs.append(Segment(" ", style))
        segs += [Segment(f"#{s.index + 1:<4}", style), Segment(f"{s.tokens:>6} tok  ", style)]
        flag = s.flag
        if flag or s.oversize:
            note = "over budget, atomic" if s.oversize else ("< 100 tokens" if flag == "small" else "> 1,500 tokens")
            segs.append(Segment(f"⚠ {note}  ", self.get_component_rich_style("chunk-map--flag") + Style(bold=True)))
        label = s.label or s.id
        if s.synthetic:
            label += "  (synthetic part)"
        segs.append(Segment(label, style))
        return segs

    # ------------------------------------------------------------ scrolling (never animated)
    # ScrollView's keys animate the scroll (several frames per page), so a key press would cost
    # many renders; like Tree, the map jumps straight to the new offset.
    def _jump(self, x: float | None = None, y: float | None = None) -> None:
        self.scroll_to(x, y, animate=False, immediate=True)

    def action_scroll_up(self) -> None:
        if not self.allow_vertical_scroll:
            raise SkipAction()
        self._jump(y=self.scroll_y - 1)

    def action_scroll_down(self) -> None:
        if not self.allow_vertical_scroll:
            raise SkipAction()
        self._jump(y=self.scroll_y + 1)

    def action_page_up(self) -> None:
        if not self.allow_vertical_scroll:
            raise SkipAction()
        self._jump(y=self.scroll_y - self.scrollable_content_region.height)

    def action_page_down(self) -> None:
        if not self.allow_vertical_scroll:
            raise SkipAction()
        self._jump(y=self.scroll_y + self.scrollable_content_region.height)

    def action_scroll_left(self) -> None:
        if not self.allow_horizontal_scroll:
            raise SkipAction()
        self._jump(x=self.scroll_x - 1)

    def action_scroll_right(self) -> None:
        if not self.allow_horizontal_scroll:
            raise SkipAction()
        self._jump(x=self.scroll_x + 1)

    def action_page_left(self) -> None:
        if not self.allow_horizontal_scroll:
            raise SkipAction()
        self._jump(x=self.scroll_x - self.scrollable_content_region.width)

    def action_page_right(self) -> None:
        if not self.allow_horizontal_scroll:
            raise SkipAction()
        self._jump(x=self.scroll_x + self.scrollable_content_region.width)

    def action_scroll_home(self) -> None:
        self._jump(0, 0)

    def action_scroll_end(self) -> None:
        self._jump(0, self.max_scroll_y)

    # ------------------------------------------------------------ stepping
    def watch_selected(self, old: int, new: int) -> None:
        self.refresh()

    def _select(self, i: int) -> None:
        if not self._spans:
            return
        i = max(0, min(i, len(self._spans) - 1))
        self.selected = i
        row = self._header_rows[i] if i < len(self._header_rows) else 0
        self._jump(y=max(row - 1, 0))
        self.post_message(self.ChunkHighlighted(self.current_span))

    def action_next_chunk(self) -> None:
        self._select(self.selected + 1)

    def action_previous_chunk(self) -> None:
        self._select(self.selected - 1)

    def action_first_chunk(self) -> None:
        self._select(0)

    def action_last_chunk(self) -> None:
        self._select(len(self._spans) - 1)

    def select_id(self, chunk_id: str) -> bool:
        """Select the chunk with this id (used when jumping from a diagnosis finding)."""
        for i, s in enumerate(self._spans):
            if s.id == chunk_id:
                self._select(i)
                return True
        return False

    def select_line(self, line: int) -> None:
        """Select the chunk holding 1-based ``line`` (used when jumping from a finding)."""
        for i, s in enumerate(self._spans):
            if s.line <= line <= s.end_line:
                self._select(i)
                return
