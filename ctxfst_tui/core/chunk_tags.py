"""Finding ``<Chunk id="...">`` / ``</Chunk>`` tags in a Markdown body with exact spans.

Tags inside fenced code blocks and inline code spans are text, not tags, so a document
that *documents* the format is not misread. Quotes may be double or single and the tag
may carry extra whitespace (``< Chunk  id = 'x' >``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .source import LineIndex, Span

OPEN_TAG = re.compile(r"""<\s*Chunk\s+id\s*=\s*(?:"([^"\n]*)"|'([^'\n]*)')\s*>""", re.IGNORECASE)
CLOSE_TAG = re.compile(r"<\s*/\s*Chunk\s*>", re.IGNORECASE)
ANY_TAG = re.compile(OPEN_TAG.pattern + "|" + CLOSE_TAG.pattern, re.IGNORECASE)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
BACKTICKS = re.compile(r"`+")


@dataclass
class TagEvent:
    """One open or close tag as it appears in the body."""

    kind: str  # "open" | "close"
    span: Span
    chunk_id: str | None = None


@dataclass
class BodyChunk:
    """A ``<Chunk>`` element: its open tag, its inner content and its close tag (None if unclosed)."""

    id: str
    open: Span
    close: Span | None
    content_span: Span
    raw_content: str
    parent: str | None = None  # id of the enclosing chunk when nested (an error)

    @property
    def line(self) -> int:
        return self.open.line

    @property
    def content(self) -> str:
        """The inner text, stripped and with LF newlines, as the reference exports it."""
        return self.raw_content.replace("\r\n", "\n").strip()


def _code_span_ranges(line: str) -> list[tuple[int, int]]:
    """Ranges (in the line) covered by inline code spans: a run of N backticks to the next run of N."""
    ranges, pos = [], 0
    while True:
        m = BACKTICKS.search(line, pos)
        if not m:
            return ranges
        n = len(m.group())
        close = m.end()
        while True:
            c = BACKTICKS.search(line, close)
            if not c:
                return ranges  # an unmatched run is literal text
            if len(c.group()) == n:
                ranges.append((m.start(), c.end()))
                pos = c.end()
                break
            close = c.end()


def scan_tags(text: str, start: int, index: LineIndex) -> list[TagEvent]:
    """All tag events in ``text[start:]`` outside code, in order."""
    events: list[TagEvent] = []
    fence: str | None = None
    pos = start
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        end = n if nl == -1 else nl
        line = text[pos:end]
        m = FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end():].strip():
                fence = None
        elif m and not (m.group(1)[0] == "`" and "`" in line[m.end():]):
            fence = m.group(1)
        elif "<" in line:
            code = _code_span_ranges(line) if "`" in line else []
            for t in ANY_TAG.finditer(line):
                if any(a <= t.start() < b for a, b in code):
                    continue
                span = index.span(pos + t.start(), pos + t.end())
                if t.group(0).lstrip("< \t").startswith("/"):
                    events.append(TagEvent("close", span))
                else:
                    cid = t.group(1) if t.group(1) is not None else t.group(2)
                    events.append(TagEvent("open", span, cid))
        pos = end + 1
    return events


def pair_tags(text: str, events: list[TagEvent], index: LineIndex) -> list[BodyChunk]:
    """Pair opens with closes like a stack; unclosed chunks run to the end of the text."""
    chunks: list[BodyChunk] = []
    stack: list[tuple[TagEvent, BodyChunk]] = []
    for ev in events:
        if ev.kind == "open":
            chunk = BodyChunk(
                id=ev.chunk_id or "",
                open=ev.span,
                close=None,
                content_span=ev.span,
                raw_content="",
                parent=stack[-1][1].id if stack else None,
            )
            chunks.append(chunk)
            stack.append((ev, chunk))
        elif stack:
            _, chunk = stack.pop()
            chunk.close = ev.span
            chunk.content_span = index.span(chunk.open.end, ev.span.start)
            chunk.raw_content = text[chunk.open.end : ev.span.start]
    for _, chunk in stack:
        chunk.content_span = index.span(chunk.open.end, len(text))
        chunk.raw_content = text[chunk.open.end :]
    return chunks
