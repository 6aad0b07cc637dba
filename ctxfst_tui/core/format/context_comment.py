"""The ``<!-- Context: ... -->`` comment the reference's ``contextualize_chunks.py`` writes.

That script puts each chunk's generated context into the body, as the first line of the chunk
(``<Chunk id="x">\\n<!-- Context: TEXT -->\\n\\nCONTENT\\n</Chunk>``), not into the frontmatter
``context`` field that export and retrieval read. Finding the comment lets diagnosis move it into
the frontmatter and export warn about it, so documents made with that script keep that work.

Only a comment that opens the chunk counts (after blank lines, at most), and only one that ends
its line: an HTML comment further down is the author's own. The text may span several lines (a
model's answer); it is read with its whitespace collapsed, as a frontmatter context is one line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ctxfst_tui.core.format.chunk_tags import BodyChunk

# The reference writes exactly "<!-- Context: " and " -->"; spacing is read loosely.
COMMENT = re.compile(r"<!--[ \t]*Context:[ \t]*((?:(?!-->).)*?)[ \t]*-->[ \t]*(\r\n|[\n\r\x85\u2028\u2029])", re.DOTALL)
BREAK = r"(?:\r\n|[\n\r\x85\u2028\u2029])"
LEADING = re.compile(rf"[ \t]*(?:{BREAK}[ \t]*)*")
BLANK_LINE = re.compile(rf"[ \t]*{BREAK}")


@dataclass(frozen=True)
class ContextComment:
    """A chunk's opening context comment: its text and the spans of the document text that go
    when it is moved out (the comment's line and the blank line after it)."""

    text: str  # whitespace collapsed
    start: int  # offset of "<!--" in the document text
    removal: tuple[tuple[int, int], ...]


def same_context(a: str, b: str) -> bool:
    """Equal once whitespace is collapsed: the comment and the field say the same thing."""
    return a.split() == b.split()


def find_context_comment(chunk: BodyChunk) -> ContextComment | None:
    """The context comment opening ``chunk``, or None."""
    text = chunk.source
    s, e = chunk.content_span.start, chunk.content_span.end
    p = LEADING.match(text, s, e).end()
    m = COMMENT.match(text, p, e)
    if m is None:
        return None
    words = " ".join(m.group(1).split())
    if not words:
        return None
    after = m.end()
    blank = BLANK_LINE.match(text, after, e)
    breaks = list(re.finditer(BREAK, text[s:p]))
    if breaks:  # the comment starts its own line: that line and the blank one after it go
        start = s + breaks[-1].end()
        removal = ((start, blank.end() if blank else after),)
    else:  # on the open tag's line: the tag keeps a line break, the next blank line's
        removal = ((s, after),) if blank else ((s, m.start(2)),)
    return ContextComment(words, m.start(), removal)


def without_comment(text: str, comment: ContextComment) -> str:
    """``text`` (the document text the comment was found in) with the comment removed."""
    for a, b in sorted(comment.removal, reverse=True):
        text = text[:a] + text[b:]
    return text
