"""Where a block's text may be cut: sentence, line, paragraph and list-item starts, outside fenced code.

Every cut is placed where BPE pre-tokenisation cuts anyway, so the token counts of the parts add
up to the count of the whole.
"""
from __future__ import annotations

import re

from ctxfst_tui.core.text.sentences import CHUNKER_ABBREVIATIONS
from ctxfst_tui.core.text.sentences import sentence_starts as _sentence_starts

_SEG = re.compile(r"[^\n]*\n(?:[ \t\v\f]*\n)*|[^\n]+")  # a line and the blank lines after it


def sentence_starts(text: str) -> list[int]:
    """Offsets where a sentence starts (0 excluded), cut where BPE pre-tokenisation cuts anyway,
    with the chunker's own abbreviation list (see :data:`CHUNKER_ABBREVIATIONS`)."""
    return _sentence_starts(text, CHUNKER_ABBREVIATIONS)


_FENCE_LINE = re.compile(r"[ \t]*(?:>[ \t]?)*[ \t]*(`{3,}|~{3,})([^\n]*)")


def fence_regions(text: str) -> list[tuple[int, int]]:
    """(start, end) of fenced code inside a list or a quote (markers and indentation allowed)."""
    if "```" not in text and "~~~" not in text:
        return []
    regions = []
    pos = 0
    open_at, fence = -1, ""
    for line in text.splitlines(keepends=True):
        m = _FENCE_LINE.match(line)
        if m:
            run = m.group(1)
            if open_at < 0:
                if not (run[0] == "`" and "`" in m.group(2)):
                    open_at, fence = pos, run
            elif run[0] == fence[0] and len(run) >= len(fence) and not m.group(2).strip():
                regions.append((open_at, pos + len(line)))
                open_at = -1
        pos += len(line)
    if open_at >= 0:
        regions.append((open_at, len(text)))
    return regions


def line_starts(text: str) -> list[int]:
    """Starts of the lines of ``text`` after the first, blank lines kept with the line before."""
    return [m.start() for m in _SEG.finditer(text) if m.start()]


# After a line break: a blank line before a line with text (the paragraph starts after it), or
# a list item. (A line break first lets the search skip ahead; same matches as
# ``(?<=\n)[ \t]*\n(?=[ \t]*\S)|(?<=\n)(?=[ \t]*(?:[*+-]|\d{1,9}[.)])[ \t])``.)
_PARA_START = re.compile(r"\n(?:(?=([ \t]*\n)[ \t]*\S)|(?=[ \t]*(?:[*+-]|\d{1,9}[.)])[ \t]))")


def _paragraph_starts(text: str) -> list[int]:
    """Starts of paragraphs (after a blank line) and of list items inside ``text``."""
    out = []
    for m in _PARA_START.finditer(text):
        blank = m.group(1)
        out.append(m.end() + len(blank) if blank is not None else m.end())
    return out


_LIST_MARK = re.compile(r"( {0,3})([*+-]|\d{1,9}[.)])(?:[ \t]|$)")


def _item_starts(text: str) -> list[int]:
    m = _LIST_MARK.match(text)
    if not m:
        return []
    indent = m.group(1)
    # (a line break first lets the search skip ahead; the same starts as
    # ``(?<=\n)INDENT(?:[*+-]|\d{1,9}[.)])(?:[ \t]|$)``)
    pat = re.compile(r"\n(?=" + re.escape(indent) + r"(?:[*+-]|\d{1,9}[.)])(?:[ \t]|$))", re.M)
    return [x.end() for x in pat.finditer(text)]


def cut_points(text: str, level: str) -> list[int]:
    """Where ``text`` may be cut at one level ("line", "sentence" or "item"; 0 excluded)."""
    if level == "line":
        return line_starts(text)
    if level == "sentence":
        return sentence_starts(text)
    if level == "item":
        return _item_starts(text)
    return []


# The levels a block of each kind is split at, in order: a unit still over the budget after one
# level is split at the next.
SPLIT_LEVELS = {
    "paragraph": ("sentence", "line"),
    "text": ("sentence", "line"),
    "list": ("item", "line", "sentence"),
    "quote": ("line", "sentence"),
    "html": ("line",),
    "code": ("line",),
    "table": ("line",),
}


def window_starts(src: str, lo: int) -> list[int]:
    """Sentence and paragraph starts found in ``src[lo:]`` alone (offsets into ``src``)."""
    tail = src[lo:]
    starts = {lo + x for x in sentence_starts(tail)} | {lo + x for x in _paragraph_starts(tail)}
    if lo == 0:
        starts.add(0)
    return sorted(x for x in starts if x < len(src))


def window_start(src: str, lo: int) -> int:
    """An offset past which the sentence and paragraph starts found in ``src[lo:]`` alone are those
    found in any longer tail of ``src``: past the first word boundary after ``lo`` (the abbreviation
    test looks back to it), past the white space run that a sentence end begun before ``lo`` may
    reach, and past a blank line that a paragraph break may straddle."""
    n = len(src)
    q = n
    for ch in " \n(":
        x = src.find(ch, lo)
        if x != -1 and x < q:
            q = x
    w = q + 1
    m = _WS_RUN.search(src, lo)  # the first run of spaces, tabs and line breaks at or after lo
    if m is not None and m.end() > w:
        w = m.end()
    m = _WS_RUN.match(src, q)
    if m is not None and m.end() > w:
        w = m.end()
    ls = src.rfind("\n", 0, lo) + 1
    if not src[ls:lo].strip(" \t"):  # lo at a line start or in its indentation
        le = src.find("\n", lo)
        if le != -1 and not src[lo:le].strip(" \t"):  # a blank line: a paragraph break may straddle lo
            w = max(w, le + 1)
        else:
            w = max(w, lo + 1)
    return w


_WS_RUN = re.compile(r"[ \t\n]+")
