"""Finding ``<Chunk id="...">`` / ``</Chunk>`` tags in a Markdown body with exact spans.

Tags inside fenced code blocks and inline code spans are text, not tags, so a document
that *documents* the format is not misread. Quotes may be double or single and the tag
may carry extra whitespace (``< Chunk  id = 'x' >``).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from ctxfst_tui.core.format.source import LineIndex, Span, strip_break

OPEN_TAG = re.compile(r"""<\s*Chunk\s+id\s*=\s*(?:"([^"\n\r\x85\u2028\u2029]*)"|'([^'\n\r\x85\u2028\u2029]*)')\s*>""", re.IGNORECASE)
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
    """A ``<Chunk>`` element: its open tag, its inner content and its close tag (None if unclosed).

    The content is a view into the document's text, cut out only when asked for: a chunk
    holds offsets, not a copy, so nested chunks cost no memory each.
    """

    id: str
    open: Span
    close: Span | None
    content_span: Span
    source: str = field(repr=False)  # the whole document text the spans point into
    parent: str | None = None  # id of the enclosing chunk when nested (an error)

    @property
    def line(self) -> int:
        return self.open.line

    @property
    def raw_content(self) -> str:
        """The text between the tags, exactly as in the file."""
        return self.source[self.content_span.start : self.content_span.end]

    @property
    def content(self) -> str:
        """The inner text, stripped and with LF newlines (a CRLF or lone CR becomes LF), as the
        reference exports it (it reads files with Python's universal newlines)."""
        return self.raw_content.replace("\r\n", "\n").replace("\r", "\n").strip()


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
    """All tag events in ``text[start:]`` outside code, in order (lines as ``index`` cuts them)."""
    events: list[TagEvent] = []
    fence: str | None = None
    starts = index.line_starts
    n = len(text)
    for i in range(max(bisect.bisect_right(starts, start) - 1, 0), len(starts)):
        pos = max(starts[i], start)
        if pos >= n:
            break
        line = strip_break(text[pos : starts[i + 1] if i + 1 < len(starts) else n])
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
    return events


# Chunks do not nest (the CtxFST spec); a chunk opened inside another is an error. Pairing keeps
# the top-level chunks and the ones directly inside them (so the error can be shown), and only
# counts tags nested deeper, so 10,000 nested tags cost as little as 10,000 sibling ones.
MAX_KEPT_DEPTH = 1


def pair_tags(text: str, events: list[TagEvent], index: LineIndex) -> list[BodyChunk]:
    """Pair opens with closes like a stack; unclosed chunks run to the end of the text."""
    chunks: list[BodyChunk] = []
    stack: list[BodyChunk] = []
    deeper = 0  # open tags nested below MAX_KEPT_DEPTH still waiting for their close
    for ev in events:
        if ev.kind == "open":
            if len(stack) > MAX_KEPT_DEPTH:
                deeper += 1
                continue
            chunk = BodyChunk(
                id=ev.chunk_id or "",
                open=ev.span,
                close=None,
                content_span=ev.span,
                source=text,
                parent=stack[-1].id if stack else None,
            )
            chunks.append(chunk)
            stack.append(chunk)
        elif deeper:
            deeper -= 1
        elif stack:
            chunk = stack.pop()
            chunk.close = ev.span
            chunk.content_span = index.span(chunk.open.end, ev.span.start)
    for chunk in stack:
        chunk.content_span = index.span(chunk.open.end, len(text))
    return chunks
