"""Plain-text and PDF-text segmentation, and telling Markdown from plain text.

Plain text is cut into paragraphs (runs of non-blank lines, the blank lines after them included),
and numbered headings such as ``3.1 Install`` (or ``Chapter 4``) become heading blocks that feed
the heading path. Text extracted from a PDF is cleaned first — words hyphenated across a line
break are joined, page-number lines and headers/footers repeated across pages are dropped — and
the edits are kept as an :class:`~ctxfst_tui.core.chunking.markdown.OffsetMap`, so chunk offsets still
point into the text as extracted. Form feeds (``\\f``) separate pages.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ctxfst_tui.core.chunking.markdown import Block, OffsetMap

__all__ = ["parse_text_blocks", "clean_pdf_text", "PdfText", "detect_mode", "numbered_heading"]

_PARA_BREAK = re.compile(r"\n(?:[ \t\v]*\n)+")
_NUMBERED = re.compile(r"[ \t]*(\d{1,3}(?:\.\d{1,3}){0,5})(\.?)[ \t]+(\S[^\n]{0,150})")
_NAMED = re.compile(
    r"[ \t]*((?:chapter|part|book|letter|section|appendix)[ \t]+(?:\d{1,4}|[IVXLCDM]{1,8}|[ivxlcdm]{1,8})\b[^\n]{0,120})",
    re.I,
)
_SENTENCE_END = (".", ",", ";", ":", "!", "?")


def numbered_heading(line: str) -> tuple[int, str] | None:
    """(level, title as written) when ``line`` reads as a numbered or named heading, else None."""
    if len(line) > 160:
        return None
    m = _NUMBERED.fullmatch(line)
    if m:
        number, dot, rest = m.group(1), m.group(2), m.group(3).rstrip()
        if not rest[0].isalpha() or not rest[0].isupper():
            return None
        if rest.endswith(_SENTENCE_END) or len(rest.split()) > 14:
            return None
        if "." not in number and not dot and len(number) > 2:
            return None  # "1999 Something" is a year, not a heading
        return number.count(".") + 1, f"{number}{dot} {rest}"
    m = _NAMED.fullmatch(line)
    if m:
        title = " ".join(m.group(1).split())
        if title.endswith((",", ";")):
            return None
        return 1, title
    return None


def parse_text_blocks(text: str) -> list[Block]:
    """Paragraph and numbered-heading blocks that tile ``text`` (LF newlines)."""
    blocks: list[Block] = []
    n = len(text)
    if not n:
        return blocks
    pos = 0
    lead = re.match(r"(?:[ \t\v]*\n)+", text)
    starts_blank = lead.end() if lead else 0
    spans = []
    for m in _PARA_BREAK.finditer(text, starts_blank):
        spans.append((pos, m.end()))
        pos = m.end()
    if pos < n:
        if spans and not text[pos:].strip():  # trailing whitespace stays with the last paragraph
            spans[-1] = (spans[-1][0], n)
        else:
            spans.append((pos, n))
    for s, e in spans:
        body_start = s if s else starts_blank
        nl = text.find("\n", body_start, e)
        first = text[body_start : nl if nl != -1 else e]
        head = numbered_heading(first) if first[:1] not in ("", " ") or first.strip() else None
        if head is not None:
            rest_start = nl + 1 if nl != -1 else e
            rest = text[rest_start:e]
            single = not rest.strip()
            if not single:
                second = rest.split("\n", 1)[0]
                if numbered_heading(second) is not None or _NUMBERED.match(second):
                    head = None  # a numbered list, not a heading
        if head is None:
            blocks.append(Block("paragraph", s, e))
            continue
        level, title = head
        if not text[rest_start:e].strip():
            blocks.append(Block("heading", s, e, level=level, title=title, marker=title))
        else:
            blocks.append(Block("heading", s, rest_start, level=level, title=title, marker=title))
            blocks.append(Block("paragraph", rest_start, e))
    return blocks


# -- PDF text ------------------------------------------------------------------------------------------

_PAGE_NUMBER = re.compile(
    r"[ \t]*(?:[-–—][ \t]*)?(?:(?:page|p\.|pg\.?|página|pagina|seite)[ \t]*)?\d{1,4}"
    r"(?:[ \t]*(?:/|of|de|von)[ \t]*\d{1,4})?(?:[ \t]*[-–—])?[ \t]*",
    re.I,
)
_ROMAN_PAGE = re.compile(r"[ \t]*[ivxlc]{1,7}[ \t]*")
_HYPHENATED = re.compile(r"[^\W\d_]-$")


@dataclass
class PdfText:
    """Cleaned PDF text with the map back to the extracted text and where each page starts there."""

    text: str
    offset_map: OffsetMap | None
    page_starts: list[int]  # offsets (in the extracted text) where pages 1, 2, ... start
    dropped_lines: int = 0
    joined_words: int = 0


def _line_key(line: str) -> str:
    return re.sub(r"\d+", "#", " ".join(line.split())).lower()


def clean_pdf_text(text: str) -> PdfText:
    """Join hyphenated words, drop page numbers and repeated headers/footers; pages from ``\\f``.

    ``text`` must have LF newlines. The result keeps the paragraphs' own line breaks.
    """
    n = len(text)
    # pages and their lines: (start, end without newline, end with newline)
    page_bounds = []
    pos = 0
    while True:
        ff = text.find("\f", pos)
        if ff == -1:
            page_bounds.append((pos, n))
            break
        page_bounds.append((pos, ff))
        pos = ff + 1
    page_starts = [s for s, _ in page_bounds]
    pages: list[list[tuple[int, int, int]]] = []
    for ps, pe in page_bounds:
        lines = []
        p = ps
        while p < pe:
            nl = text.find("\n", p, pe)
            if nl == -1:
                lines.append((p, pe, pe))
                break
            lines.append((p, nl, nl + 1))
            p = nl + 1
        pages.append(lines)

    def edges(lines):
        idx = [i for i, (s, e, _) in enumerate(lines) if text[s:e].strip()]
        return idx[:2] + [i for i in idx[-2:] if i not in idx[:2]]

    dropped: set[tuple[int, int]] = set()  # (page, line index)
    n_pages = len(pages)
    if n_pages >= 2:
        seen: Counter[str] = Counter()
        page_edge_keys = []
        for lines in pages:
            keys = {}
            for i in edges(lines):
                s, e, _ = lines[i]
                k = _line_key(text[s:e])
                if k and k != "#":
                    keys[i] = k
            page_edge_keys.append(keys)
            seen.update(set(keys.values()))
        threshold = max(2, (n_pages + 1) // 2)
        for pi, keys in enumerate(page_edge_keys):
            for i, k in keys.items():
                if seen[k] >= threshold:
                    dropped.add((pi, i))
    for pi, lines in enumerate(pages):
        candidates = edges(lines) if n_pages >= 2 else range(len(lines))
        for i in candidates:
            s, e, _ = lines[i]
            line = text[s:e]
            if not (_PAGE_NUMBER.fullmatch(line) or (n_pages >= 2 and _ROMAN_PAGE.fullmatch(line))):
                continue
            if n_pages < 2:  # no page breaks: only a number standing alone between blank lines
                before = text[lines[i - 1][0] : lines[i - 1][1]] if i > 0 else ""
                after = text[lines[i + 1][0] : lines[i + 1][1]] if i + 1 < len(lines) else ""
                if before.strip() or after.strip():
                    continue
            dropped.add((pi, i))

    edits: list[tuple[int, int, str]] = []
    for pi, i in dropped:
        s, _, le = pages[pi][i]
        edits.append((s, le, ""))
    for ps, _ in page_bounds[1:]:
        ff = ps - 1
        edits.append((ff, ps, "" if ff == 0 or text[ff - 1] == "\n" else "\n"))

    # hyphenated words across a line (or page) break: join with the next kept line (a blank line
    # in between is kept, so it stops the join: a paragraph break is not a hyphenation)
    joined = 0
    kept = [
        (s, e, le)
        for pi, lines in enumerate(pages)
        for i, (s, e, le) in enumerate(lines)
        if (pi, i) not in dropped
    ]
    for (s, e, _), (s2, e2, _) in zip(kept, kept[1:]):
        line = text[s:e].rstrip()
        if not line.endswith("-") or not _HYPHENATED.search(line) or line.endswith("--"):
            continue
        nxt = text[s2:e2]
        stripped = nxt.lstrip()
        if not stripped or not stripped[0].islower():
            continue
        hyphen = s + len(line) - 1
        edits.append((hyphen, s2 + len(nxt) - len(stripped), ""))
        joined += 1

    merged = _merge_edits(edits)
    clean = OffsetMap.apply(text, merged)
    return PdfText(clean, OffsetMap(merged) if merged else None, page_starts, len(dropped), joined)


def _merge_edits(edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Sort edits; an edit that overlaps another is merged into one deletion of their union."""
    out: list[tuple[int, int, str]] = []
    for s, e, r in sorted(edits, key=lambda x: (x[0], -x[1])):
        if out and s < out[-1][1]:
            ps, pe, pr = out[-1]
            out[-1] = (ps, max(pe, e), "" if (r == "" or pr == "" or e > pe) else pr)
            continue
        out.append((s, e, r))
    return out


# -- Markdown or plain text? -----------------------------------------------------------------------

_STRONG_MD = re.compile(
    r"^(?:#{1,6}[ \t]+\S|[ \t]{0,3}(?:```|~~~)|[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*\||---[ \t]*\n[\w\"']+:"
    r"|[ \t]*<\s*chunk\s+id|[^\s\n][^\n]*\n(?:={3,}|-{3,})[ \t]*$)",
    re.M | re.I,
)
_WEAK_MD = re.compile(
    r"\[[^\]\n]+\]\([^)\s]+\)|`[^`\n]+`|\*\*[^*\n]+\*\*|^[ \t]{0,3}(?:[-*+]|\d{1,3}\.)[ \t]+\S|^>[ \t]?\S|^[=-]{3,}[ \t]*$",
    re.M,
)


def detect_mode(text: str) -> str:
    """"pdf" when the text has page breaks (form feeds), "markdown" when it shows Markdown, else "text"."""
    sample = text[:200_000]
    if "\f" in sample:
        return "pdf"
    if _STRONG_MD.search(sample):
        return "markdown"
    weak = 0
    for _ in _WEAK_MD.finditer(sample):
        weak += 1
        if weak >= 3:
            return "markdown"
    return "text"
