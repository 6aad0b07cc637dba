"""Structural chunking of Markdown, plain text and PDF text under a budget in chars or BPE tokens.

The document is cut into atomic blocks first (``markdown.parse_normalized`` on mistune, or the
plain-text / PDF segmentation in ``plaintext``), then the blocks are packed into chunks:

* a block is never cut at random: a block over the budget is split at its own joints — a code
  block by lines (the fence, with its info string, closed and reopened in each part), a table by
  rows (header and delimiter rows repeated), a list by items, prose by sentences — and what is
  left over budget is one atomic unit (a single over-long line or sentence), flagged;
* a new chunk prefers to start at a heading; a chunk never ends on a heading; chunks smaller than
  ``min_chunk_size`` are absorbed by a neighbour (or rebalanced with the previous part of their
  own section) when the result still fits;
* the budget holds for everything that is embedded (the heading-path header + the body + the
  overlap), and the overlap is the previous chunk's last whole sentences, never a part of a word;
* nothing is lost: every content block belongs to exactly one chunk, and a chunk's ``content``
  minus its overlap prefix and its synthetic lines is the source between ``start`` and ``end``
  (after the optional stripping of HTML comments and data URIs).

Speed: the document is encoded once, with plain ``encode_ordinary`` semantics, while mistune
parses it in a worker thread (the tokenizer releases the GIL). Every count is then read off that one encoding — the tokens that
end between two UTF-8 offsets — wherever both ends are certainly BPE pre-token boundaries (a line
start not before a blank line, the place between a word and the spaces after it) and token
boundaries of the encoding; anything else (stripped blocks, odd white space) is encoded on its
own, so every count is exact. Headers are composed from their headings' counts. A chunk is never
re-encoded while it grows. What does not depend on the budget is kept per text (blocks, counts,
headers, a block's units, sentence starts and counts of overlap windows, and the chunks of the
last chunking, reused when a new budget gives the same chunk), so re-chunking with another budget
costs a small fraction of the first run.
"""
from __future__ import annotations

import bisect
import gc
import hashlib
import os
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import accumulate, repeat
from operator import attrgetter
from typing import Any

from ctxfst_tui.core.chunking.markdown import (
    FENCE_OPEN,
    Block,
    OffsetMap,
    normalize_newlines,
    parse_normalized,
)
from ctxfst_tui.core.chunking.plaintext import clean_pdf_text, detect_mode, parse_text_blocks
from ctxfst_tui.core.chunking.tokens import _np
from ctxfst_tui.core.chunking.tokens import DEFAULT_ENCODING, TokenCounter, get_counter

__all__ = [
    "ChunkOptions",
    "Chunk",
    "Chunker",
    "chunk_text",
    "compose_text",
    "clear_caches",
    "UNITS",
    "MODES",
    "EMBEDS",
]

UNITS = ("chars", "tokens")
MODES = ("auto", "markdown", "text", "pdf")
EMBEDS = ("full", "context", "content")
MIN_SIZE, MAX_SIZE = 32, 200_000
_DEFAULTS = {"chars": (1024, 128), "tokens": (256, 32)}

# Blocks whose text is prose: split by sentences, a source of overlap.
_PROSE = frozenset(("paragraph", "list", "quote"))
_EXCLUDED = frozenset(("frontmatter", "chunk_open", "chunk_close"))


# -- options ----------------------------------------------------------------------------------------


@dataclass
class ChunkOptions:
    """Every option of the chunker; sizes left as None take the unit's defaults.

    unit: "chars" or "tokens" (real BPE tokens of ``encoding``).
    chunk_size: the budget of each chunk's embedded text; default 1024 chars / 256 tokens,
        clamped to [32, 200000].
    overlap: how much of the previous chunk's end is repeated (whole sentences only); default
        128 chars / 32 tokens, at most half the chunk size.
    min_chunk_size: smaller chunks are absorbed by a neighbour; default a quarter of the size.
    encoding: a tiktoken encoding name or an OpenAI model name.
    mode: "auto" (detect), "markdown", "text" or "pdf".
    split_on_headings: start a new chunk at each heading (once the current one is big enough).
    heading_path: path/breadcrumb/header with the full heading path, or the nearest heading only.
    prepend_heading: put the header in ``text`` (what gets embedded).
    embed: "full" (header + context + body), "context" (header + context; the body while the
        context is empty) or "content" (the body only).
    strip_data_uri: reduce ``data:...;base64,...`` payloads to their media type.
    strip_html_comments: remove ``<!-- -->`` comments (never inside code).
    chunk_tags: a CtxFST document's own ``<Chunk>`` tags are hard boundaries (tag lines are
        never content either way).
    context_reserve: room kept free in each chunk's budget for a context note added later.
    count_tokens: count tokens even when the unit is chars (for the ``tokens`` field).
    source, metadata: used for ids and copied into every chunk.
    """

    unit: str = "chars"
    chunk_size: int | None = None
    overlap: int | None = None
    min_chunk_size: int | None = None
    encoding: str = DEFAULT_ENCODING
    mode: str = "auto"
    split_on_headings: bool = True
    heading_path: bool = True
    prepend_heading: bool = True
    embed: str = "full"
    strip_data_uri: bool = True
    strip_html_comments: bool = True
    chunk_tags: bool = True
    context_reserve: int = 0
    count_tokens: bool = True
    source: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.unit = str(self.unit).lower()
        self.mode = str(self.mode).lower()
        self.embed = str(self.embed).lower()
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}, not {self.unit!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.embed not in EMBEDS:
            raise ValueError(f"embed must be one of {', '.join(EMBEDS)}, not {self.embed!r}")
        for name in ("chunk_size", "overlap", "min_chunk_size"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise ValueError(f"{name} must be a whole number, not {v!r}")
            if v is not None and v < 0:
                raise ValueError(f"{name} must not be negative ({v})")
        if not isinstance(self.context_reserve, int) or self.context_reserve < 0:
            raise ValueError(f"context_reserve must be a whole number >= 0, not {self.context_reserve!r}")
        if not isinstance(self.metadata, Mapping):
            raise ValueError("metadata must be a mapping")

    @property
    def size(self) -> int:
        """The effective chunk size."""
        v = self.chunk_size if self.chunk_size is not None else _DEFAULTS[self.unit][0]
        return max(MIN_SIZE, min(MAX_SIZE, v))

    @property
    def overlap_size(self) -> int:
        v = self.overlap if self.overlap is not None else _DEFAULTS[self.unit][1]
        return max(0, min(v, self.size // 2))

    @property
    def min_size(self) -> int:
        v = self.min_chunk_size if self.min_chunk_size is not None else self.size // 4
        return max(0, min(v, self.size))

    @property
    def needs_tokens(self) -> bool:
        return self.unit == "tokens" or self.count_tokens

    def describe(self) -> str:
        return f"{self.size} {self.unit}, overlap {self.overlap_size}, min {self.min_size}"


# -- chunks -----------------------------------------------------------------------------------------


_FIELDS = (
    "id", "hash", "index", "total", "start", "end", "length", "tokens", "heading", "heading_level", "path",
    "breadcrumb", "sections", "header", "content", "context", "text", "embed", "type", "blocks", "overlap",
    "page", "pages", "metadata", "synthetic", "synthetic_ranges", "over_budget", "overlap_start", "source",
)


class Chunk:
    """One chunk. ``content`` is the real body; ``text`` is what gets embedded (see ``embed``).

    Fields: id, hash, index, total, start/end (char offsets in the source of the chunk's own
    content, overlap excluded), length (chars of ``text``), tokens (of ``text``; 0 when tokens are
    not counted), heading, heading_level, path, breadcrumb, sections, header, content, context,
    text, embed, type (markdown | text | pdf), blocks (kinds of the blocks it holds, in order),
    overlap (chars at the start of ``content`` repeated from the previous chunk), page, pages,
    metadata, synthetic (content is not a literal slice: a reopened fence, a repeated table
    header), synthetic_ranges (in ``content``), over_budget (an atomic unit could not be split),
    overlap_start (source offset where the overlap text starts), source.

    The chunker makes many chunks and most of their fields are derived: ``text`` (header + body)
    and the list and dict fields are built when first read (each chunk gets its own lists), so
    chunking does not pay for fields nobody reads. Every field can be read and assigned as on a
    plain record.
    """

    __slots__ = (
        "id", "hash", "index", "total", "start", "end", "length", "tokens", "heading", "heading_level",
        "breadcrumb", "header", "content", "context", "embed", "type", "overlap", "page", "over_budget",
        "overlap_start", "source", "synthetic", "_text", "_path", "_sections", "_blocks", "_pages", "_metadata", "_synth",
    )
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value (as a dataclass)

    def __init__(self, id, hash, index, total, start, end, length, tokens, heading, heading_level, path,
                 breadcrumb, sections, header, content, context, text, embed, type, blocks, overlap, page,
                 pages, metadata, synthetic, synthetic_ranges=None, over_budget=False, overlap_start=None,
                 source=""):
        self.id = id
        self.hash = hash
        self.index = index
        self.total = total
        self.start = start
        self.end = end
        self.length = length
        self.tokens = tokens
        self.heading = heading
        self.heading_level = heading_level
        self._path = path
        self.breadcrumb = breadcrumb
        self._sections = sections
        self.header = header
        self.content = content
        self.context = context
        self._text = text
        self.embed = embed
        self.type = type
        self._blocks = blocks
        self.overlap = overlap
        self.page = page
        self._pages = pages
        self._metadata = metadata
        self.synthetic = synthetic
        self._synth = [] if synthetic_ranges is None else synthetic_ranges
        self.over_budget = over_budget
        self.overlap_start = overlap_start
        self.source = source

    # derived fields, built when first read: a tuple (or a shared mapping) until then
    @property
    def text(self) -> str:
        t = self._text
        if t is None:  # the header and the body (no context yet)
            t = self._text = self.header + "\n\n" + self.content
        return t

    @text.setter
    def text(self, value: str) -> None:
        self._text = value

    def _listed(name):  # noqa: N805 - a property factory used in the class body
        def get(self):
            v = getattr(self, name)
            if v.__class__ is not list:
                v = list(v)
                setattr(self, name, v)
            return v

        def put(self, value):
            setattr(self, name, value)

        return property(get, put)

    path = _listed("_path")
    sections = _listed("_sections")
    blocks = _listed("_blocks")
    pages = _listed("_pages")

    @property
    def metadata(self) -> dict[str, Any]:
        m = self._metadata
        if m.__class__ is tuple:  # (shared options metadata, oversize)
            base, oversize = m
            m = dict(base)
            if oversize:
                m["oversize"] = True
            self._metadata = m
        return m

    @metadata.setter
    def metadata(self, value) -> None:
        self._metadata = value

    synthetic_ranges = _listed("_synth")

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    def __repr__(self) -> str:
        return "Chunk(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS) + ")"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "hash": self.hash,
            "index": self.index,
            "total": self.total,
            "start": self.start,
            "end": self.end,
            "length": self.length,
            "tokens": self.tokens,
            "heading": self.heading,
            "heading_level": self.heading_level,
            "path": list(self.path),
            "breadcrumb": self.breadcrumb,
            "sections": list(self.sections),
            "header": self.header,
            "content": self.content,
            "context": self.context,
            "text": self.text,
            "embed": self.embed,
            "type": self.type,
            "blocks": list(self.blocks),
            "overlap": self.overlap,
            "page": self.page,
            "pages": list(self.pages),
            "metadata": dict(self.metadata),
            "synthetic": self.synthetic,
            "synthetic_ranges": [list(r) for r in self.synthetic_ranges],
            "over_budget": self.over_budget,
            "overlap_start": self.overlap_start,
            "source": self.source,
        }

    @property
    def body(self) -> str:
        """``content`` without the overlap prefix."""
        return self.content[self.overlap :]

    def real_content(self) -> str:
        """The body with synthetic lines removed: exactly the (normalised) source it covers."""
        out, pos = [], self.overlap
        for a, b in self.synthetic_ranges:
            out.append(self.content[pos:a])
            pos = b
        out.append(self.content[pos:])
        return "".join(out)

    del _listed

    def copy(self, **changes: Any) -> "Chunk":
        """A copy (its own lists) with some fields changed."""
        values = {f: getattr(self, f) for f in _FIELDS}
        for f in ("path", "sections", "blocks", "pages", "synthetic_ranges"):
            values[f] = list(values[f])
        values["metadata"] = dict(values["metadata"])
        values.update(changes)
        return Chunk(**values)

    def with_context(self, context: str, counter: TokenCounter | None = None, prepend_heading: bool = True) -> "Chunk":
        """A copy with ``context`` set and ``text`` recomposed (tokens recounted when a counter is given)."""
        text = compose_text(self.header, context, self.content, self.embed, prepend_heading)
        tokens = counter.count(text) if counter is not None else self.tokens
        return self.copy(context=context, text=text, length=len(text), tokens=tokens)


_new_chunk = object.__new__


def compose_text(header: str, context: str, content: str, embed: str = "full", prepend_heading: bool = True) -> str:
    """The string to embed: header, context note and body as the ``embed`` mode says."""
    if embed == "content":
        return content
    head = header if prepend_heading else ""
    if embed == "context" and context.strip():
        parts = [head, context]
    else:
        parts = [head, context, content]
    return "\n\n".join(p for p in parts if p)


# -- normalisation of block text --------------------------------------------------------------------

_SEG = re.compile(r"[^\n]*\n(?:[ \t\v\f]*\n)*|[^\n]+")  # a line and the blank lines after it
# A blank line at an offset: a line start there is not a place where counts can be split (BPE
# pre-tokenisation keeps a run of line breaks together).
_BLANK_AT = re.compile(r"[^\S\n]*\n").match
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
_DATA_URI = re.compile(
    r"data:([A-Za-z0-9][\w.+-]*/[\w.+-]+)((?:;[\w.+-]+=[^;,\s)\"'<>]*)*);base64,([A-Za-z0-9+/=%]{64,})"
)
_INLINE_TAG = re.compile(r"""<\s*Chunk\s+id\s*=\s*(?:"[^"\n]*"|'[^'\n]*')\s*>|<\s*/\s*Chunk\s*>""", re.I)


def _strip_block(text: str, kind: str, comments: bool, data_uri: bool, tags: bool) -> list[tuple[int, int, str]]:
    """Edits (start, end, replacement) on a block's text for the enabled stripping options."""
    edits: list[tuple[int, int, str]] = []
    in_code = kind == "code"
    found_comments = list(_COMMENT.finditer(text)) if comments and not in_code and "<!--" in text else ()
    found_tags = list(_INLINE_TAG.finditer(text)) if tags and not in_code and "<" in text else ()
    protected: list[tuple[int, int]] = []
    if (found_comments or found_tags) and "`" in text:  # (code spans keep their comments and tags)
        protected = [m.span() for m in _CODE_SPAN.finditer(text)]

    def free(a: int) -> bool:
        return not any(x <= a < y for x, y in protected)

    if found_comments:
        for m in found_comments:
            if free(m.start()):
                a, b = m.span()
                # a comment alone on its line(s) takes its line break with it
                ls = text.rfind("\n", 0, a) + 1
                le = text.find("\n", b)
                if not text[ls:a].strip() and not text[b : (le if le != -1 else len(text))].strip():
                    a, b = ls, (le + 1 if le != -1 else len(text))
                elif a and text[a - 1] == " " and text[b : b + 1] in (" ", "\n", ""):
                    a -= 1  # "word <!-- c --> word": one space is enough
                edits.append((a, b, ""))
    if found_tags:
        for m in found_tags:
            if free(m.start()):
                edits.append((m.start(), m.end(), ""))
    if data_uri and "data:" in text:
        for m in _DATA_URI.finditer(text):
            edits.append((m.start(), m.end(), f"data:{m.group(1)}"))
    if not edits:
        return edits
    edits.sort()
    merged: list[tuple[int, int, str]] = []
    for e in edits:
        if merged and e[0] < merged[-1][1]:
            continue  # inside a region already removed
        merged.append(e)
    return merged


# -- sentences -------------------------------------------------------------------------------------

_SENT_END = re.compile(  # (the leading look-ahead only lets the search skip ahead)
    r"(?=[.!?…。！？])(?:[.!?…]+[\"'”’)\]]*([ \t\n]+)(?=\S)|[。！？]+[」』”’)\]]*([ \t\n]*)(?=\S))"
)
_ABBREV = frozenset(
    "e.g i.e etc vs cf mr mrs ms dr prof sr jr st no fig eq approx dept est inc ltd co al p pp vol ed".split()
)


def _sentence_starts(text: str) -> list[int]:
    """Offsets in ``text`` where a sentence starts (0 excluded).

    The cut is placed where BPE pre-tokenisation would cut anyway, so token counts of the parts
    add up exactly: before the spaces that follow the full stop (the next sentence keeps its
    leading space, as in `` Next``), or after the line break when there is one.
    """
    out = []
    for m in _SENT_END.finditer(text):
        a = m.start()
        if text[a] == ".":
            ws = text.rfind(" ", 0, a)  # the last of " ", "\n", "(" before the full stop
            x = text.rfind("\n", ws + 1, a)
            if x > ws:
                ws = x
            x = text.rfind("(", ws + 1, a)
            if x > ws:
                ws = x
            word = text[ws + 1 : a].lower()
            if word in _ABBREV or (len(word) == 1 and word.isalpha()) or (word[-2:-1] == "." and len(word) <= 4):
                continue
        g = 1 if m.start(1) != -1 else 2
        space_start, space = m.start(g), m.group(g)
        nl = space.rfind("\n")
        cut = space_start + nl + 1 if nl != -1 else space_start
        if cut > 0:
            out.append(cut)
    return out


_FENCE_LINE = re.compile(r"[ \t]*(?:>[ \t]?)*[ \t]*(`{3,}|~{3,})([^\n]*)")


def _fence_regions(text: str) -> list[tuple[int, int]]:
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


def _line_starts(text: str) -> list[int]:
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


def _cuts(text: str, level: str) -> list[int]:
    if level == "line":
        return _line_starts(text)
    if level == "sentence":
        return _sentence_starts(text)
    if level == "item":
        return _item_starts(text)
    return []


_LEVELS = {
    "paragraph": ("sentence", "line"),
    "text": ("sentence", "line"),
    "list": ("item", "line", "sentence"),
    "quote": ("line", "sentence"),
    "html": ("line",),
    "code": ("line",),
    "table": ("line",),
}


# -- the analysed document (independent of the budget) ---------------------------------------------

_PROSE_OR_TEXT = _PROSE | {"text"}
_PARALLEL_MIN = 1024  # chars: from this size, parsing runs beside the (GIL-free) token encoding
_SENTENCE_CACHE_MAX = 100_000  # entries kept per document (sentence starts of overlap windows)


_executor = None
_executor_pid = 0
_executor_lock = threading.Lock()


def _parse_pool():
    """One worker thread for parsing while the calling thread runs the tokenizer (one per process)."""
    global _executor, _executor_pid
    pid = os.getpid()
    if _executor is None or _executor_pid != pid:  # a forked child does not inherit the thread
        with _executor_lock:
            if _executor is None or _executor_pid != pid:
                from concurrent.futures import ThreadPoolExecutor

                _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxfst-chunker")
                _executor_pid = pid
    return _executor


class _Blk:
    """A content block; it is also the piece that stands for the whole block in packing."""

    __slots__ = (
        "kind", "start", "end", "text", "chars", "toks", "path", "titles", "section", "sstart", "hard",
        "heading", "fence", "bmap", "seg", "bi", "pz", "cost", "midline", "prose", "blank", "bpos", "bend",
    )
    # piece attributes that are the same for every whole block
    pa = 0
    first = True
    synth: tuple = ()
    over = False

    def __init__(self, kind, start, end, text, path, titles, section, sstart, hard, heading, fence, bmap, bi,
                 bpos, bend, seg):
        self.kind = kind
        self.start = start  # offsets in the normalised text
        self.end = end
        self.text = text  # the block's text after stripping
        self.chars = self.pz = self.cost = len(text)  # cost: in the budget's unit (tokens once counted)
        self.toks = 0
        self.path = path
        self.titles = titles  # (level, title) along the path
        self.section = section
        self.sstart = sstart  # a heading, or the first block after a <Chunk> tag
        self.hard = hard  # must start a chunk (first block after a <Chunk> tag)
        self.heading = heading
        self.fence = fence
        self.bmap = bmap  # stripped text -> the block's slice of the normalised text
        self.seg = seg  # counted from the document's encoding (its ends are pre-token boundaries)
        self.bpos = bpos  # UTF-8 offsets of its start and end in the normalised text
        self.bend = bend
        self.bi = bi
        self.midline = bmap is not None and text[:1].isspace()  # may merge with the blank lines before
        self.blank = blank = text.isspace() or not text
        self.prose = kind in _PROSE_OR_TEXT and not blank

    def norm_at(self, local: int, end: bool = False) -> int:
        """Offset in the normalised text of an offset in this block's (stripped) text."""
        return self.start + (self.bmap.to_source(local, end) if self.bmap is not None else local)


class _Doc:
    """A parsed, normalised, counted document; shared by every budget."""

    __slots__ = (
        "mode", "norm", "omap", "blocks", "page_starts", "ends", "ascii", "tokens", "header_toks",
        "crumbs", "unit_cache", "fence_cache", "marks", "sentence_cache", "build_cache", "costs", "any_midline",
        "seg_blocks", "seg_bytes", "char_at", "header_candidates", "first_headers",
    )

    def __init__(self, text: str, mode: str, opts: ChunkOptions, counter: TokenCounter | None):
        norm, nl_map = normalize_newlines(text)
        if mode == "auto":
            mode = detect_mode(norm)
        self.mode = mode
        self.page_starts: list[int] | None = None
        self.ends = None  # byte offsets where the document's tokens end (numpy), when counted
        self.tokens = opts.unit == "tokens"
        self.header_toks: dict[str, int] = {}  # header text -> tokens of header + "\n\n"
        # heading_path -> heading path -> (path shown, breadcrumb)
        self.crumbs: dict[bool, dict[tuple[str, ...], tuple]] = {True: {}, False: {}}
        self.header_candidates: dict[bool, dict[tuple[str, ...], tuple[str, ...]]] = {True: {}, False: {}}
        self.first_headers: dict[tuple[bool, bool], dict] = {(a, b): {} for a in (True, False) for b in (True, False)}
        self.unit_cache: dict[tuple, tuple] = {}  # (block, start, end, level) -> (spans, costs, tokens, ...)
        self.fence_cache: dict[int, list[tuple[int, int]]] = {}
        self.sentence_cache: dict[tuple[int, int, int, int], list] = {}  # piece, window -> [starts, counts]
        self.build_cache: dict[tuple, tuple] = {}  # what the chunks of recent chunkings hold, by their pieces
        self.char_at: dict[int, object] = {}  # non-ASCII block -> where each char starts in its UTF-8 (numpy)
        self.costs: list[int] | None = None  # of the blocks, in the budget's unit
        self.any_midline = False
        self.marks: dict[tuple, object] = {}  # what was done once for the document (headers counted...)
        omap = nl_map
        if mode == "pdf":
            pdf = clean_pdf_text(norm)
            if len(pdf.page_starts) > 1:
                self.page_starts = [nl_map.to_source(p) if nl_map else p for p in pdf.page_starts]
            if pdf.offset_map is not None:
                pdf.offset_map.parent = nl_map
                omap = pdf.offset_map
            norm = pdf.text
        self.norm = norm
        self.ascii = norm.isascii()
        self.omap = omap
        if counter is None:
            self.blocks = self._prepare(self._parse(norm), opts)
            return
        if mode == "markdown" and len(norm) >= _PARALLEL_MIN and _np is not None:
            # mistune (Python) in a worker while this thread runs the tokenizer, which releases the
            # GIL. (Sharing the encoding between the two threads was tried and measured: two
            # tiktoken encodings at once run at 1.4x one, not 2x, on this kind of machine, and the
            # gain was lost to the hand-overs.)
            try:
                future = _parse_pool().submit(self._analyse, norm, opts)
            except RuntimeError:  # interpreter shutting down
                future = None
            if future is None:
                self._analyse(norm, opts)
                ends = counter.token_ends(norm)
            else:
                ends = counter.token_ends(norm)
                future.result()
        else:
            self._analyse(norm, opts)
            ends = counter.token_ends(norm)
        self._count(counter, ends)

    def _analyse(self, norm: str, opts: ChunkOptions) -> None:
        """Everything that does not need the document's tokens (blocks, paths)."""
        self.blocks = self._prepare(self._parse(norm), opts)

    def prime_headers(self, counter: TokenCounter, heading_path: bool) -> None:
        """Count the header of every heading path of the document (once per text and
        ``heading_path``): the full path, or the nearest heading. (The nearest heading as a fallback
        for a full path too long for the budget is counted when it is needed.)

        A header is Markdown heading markers joined by `` > ``; pre-tokenisation cuts before each
        `` > `` and the next marker, so its count is the sum of its markers' counts (read off the
        document's own encoding for headings written as their marker) plus a constant per joint.
        Headers that cannot be composed so are encoded, all in one batch.
        """
        key = ("headers", heading_path)
        if key in self.marks:
            return
        self.marks[key] = True
        known = self.header_toks
        need: dict[str, tuple[str, ...]] = {}
        heads = [b for b in self.blocks if b.heading]  # (a path starts at a heading)
        for b in heads:
            path = b.path
            if heading_path and len(path) > 1:
                h = " > ".join(path)
            else:
                h = path[-1]
                path = path[-1:]
            if h not in known and h not in need:
                need[h] = path
        if not need:
            return
        direct = compose_headers(counter, need, known, heads)
        if direct:
            known.update(zip(direct, counter.count_lines([h + "\n\n" for h in direct])))

    def _parse(self, norm: str) -> list[Block]:
        if self.mode == "markdown":
            return parse_normalized(norm)
        return parse_text_blocks(norm)

    def _prepare(self, raw: list[Block], opts: ChunkOptions) -> list[_Blk]:
        norm = self.norm
        out: list[_Blk] = []
        stack: list[tuple[int, str, tuple[int, str]]] = []  # (level, marker, (level, title))
        path: tuple[str, ...] = ()
        titles: tuple[tuple[int, str], ...] = ()
        section = 0
        hard_next = False
        markdown = self.mode == "markdown"
        # what stripping can find anywhere in the text: blocks are looked at only when it can
        strip_c = opts.strip_html_comments and markdown and "<!--" in norm
        strip_d = opts.strip_data_uri and "data:" in norm
        strip_t = markdown and "<" in norm and _INLINE_TAG.search(norm) is not None
        strip_lt = strip_c or strip_t
        blank_at = _BLANK_AT
        n = len(norm)
        last_end, last_ok = -1, False
        ascii_text = self.ascii
        bend = bpos_at = 0
        self.seg_blocks = seg_blocks = []  # the blocks whose counts can be read off the encoding,
        self.seg_bytes = seg_bytes = []  # and the UTF-8 offsets of their ends
        for b in raw:
            kind = b.kind
            if kind in _EXCLUDED:
                if kind != "frontmatter" and opts.chunk_tags:
                    hard_next = True
                    section += 1
                continue
            heading = kind == "heading"
            if heading:
                while stack and stack[-1][0] >= b.level:
                    stack.pop()
                stack.append((b.level, b.marker or b.title, (b.level, b.title)))
                path = tuple([x[1] for x in stack])
                titles = tuple([x[2] for x in stack])
                section += 1
            start, end = b.start, b.end
            text = norm[start:end]
            if ascii_text:
                bpos, bend = start, end
            else:  # UTF-8 offsets, for reading counts off the document's encoding
                if start != bpos_at:
                    gap = norm[bpos_at:start] if start > bpos_at else norm[start:bpos_at]
                    d = len(gap) if gap.isascii() else len(gap.encode("utf-8"))
                    bend += d if start > bpos_at else -d
                bpos = bend
                bend = bpos + (len(text) if text.isascii() else len(text.encode("utf-8")))
                bpos_at = end
            bmap = None
            if (strip_d and "data:" in text) or (strip_lt and kind != "code" and "<" in text):
                edits = _strip_block(text, kind, strip_c, strip_d, strip_t)
                if edits:
                    stripped = OffsetMap.apply(text, edits)
                    if not stripped.strip():  # e.g. a comment alone: nothing of it is left
                        edits = [(0, len(text), "")]
                        stripped = ""
                    bmap = OffsetMap(edits)
                    text = stripped
            seg = None
            if bmap is None:  # can its count be read off the document's encoding? (its ends are line
                # starts, not before a blank line: pre-token boundaries)
                if start == last_end:
                    ok = last_ok
                else:
                    ok = start == 0 or (norm[start - 1] == "\n" and not blank_at(norm, start))
                last_ok = end == n or (norm[end - 1] == "\n" and not blank_at(norm, end))
                last_end = end
                if ok and last_ok:
                    seg = True
            blk = _Blk(kind, start, end, text, path, titles, section, heading or hard_next, hard_next, heading,
                       b.fence, bmap, len(out), bpos, bend, seg)
            if blk.midline:
                self.any_midline = True
            if seg:
                seg_blocks.append(blk)
                seg_bytes.append(bpos)
                seg_bytes.append(bend)
            out.append(blk)
            hard_next = False
        return out

    def _count(self, counter: TokenCounter, ends) -> None:
        """Block counts from the one encoding of the document; stripped blocks and blocks whose
        ends are not pre-token boundaries are counted on their own text."""
        blocks = self.blocks
        tokens = self.tokens
        self.ends = ends
        if ends is None or not blocks:  # no numpy: every block on its own, in one batch
            for b, c in zip(blocks, counter.count_many([b.text for b in blocks]) if blocks else []):
                b.toks = c
                if tokens:
                    b.cost = c
            return
        if len(ends) and ends[-1] < 2**31:  # half the memory, for the documents kept
            ends = self.ends = ends.astype(_np.int32)
        cand = self.seg_blocks
        at = _np.array(self.seg_bytes, dtype=ends.dtype)
        idx = _np.searchsorted(ends, at, side="right")
        clean = (at == 0) | (ends[_np.maximum(idx, 1) - 1] == at)
        toks = (idx[1::2] - idx[0::2]).tolist()
        own = None
        if clean.all():
            if tokens:
                for b, t in zip(cand, toks):
                    b.toks = b.cost = t
            else:
                for b, t in zip(cand, toks):
                    b.toks = t
        else:
            for b, t, ok in zip(cand, toks, (clean[0::2] & clean[1::2]).tolist()):
                if ok:
                    b.toks = t
                    if tokens:
                        b.cost = t
                else:
                    b.seg = None
            own = [b for b in blocks if not b.seg]
        self.seg_blocks = self.seg_bytes = None
        if own is None and len(cand) < len(blocks):
            own = [b for b in blocks if not b.seg]
        if own:
            for b, c in zip(own, counter.count_many([b.text for b in own])):
                b.toks = c
                if tokens:
                    b.cost = c

    def span_tokens(self, spans: list[tuple[int, int]], bi: int = 0) -> list[int | None]:
        """Exact tokens of norm[a:b] for ascending spans in block ``bi``; None where not certain
        (see ``cut_tokens``)."""
        if self.ends is None or not spans:
            return [None] * len(spans)
        if all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1)):
            return self.cut_tokens([(bi, [a for a, _ in spans] + [spans[-1][1]])])[0]
        points = sorted({x for sp in spans for x in sp})
        got = self.cut_tokens([(bi, points)])[0]
        prefix = {points[0]: 0}
        run = 0
        for p, c in zip(points[1:], got):
            run = None if run is None or c is None else run + c
            prefix[p] = run
        out: list[int | None] = []
        for a, z in spans:
            ca, cz = prefix[a], prefix[z]
            out.append(cz - ca if ca is not None and cz is not None else None)
        return out

    def cut_tokens(self, groups: list[tuple[int, list[int]]]) -> list[list[int | None]]:
        """For groups of ascending offsets of the normalised text, each inside block ``bi`` (counted
        from the document's encoding): the exact tokens between
        consecutive offsets, read off the document's encoding, or None where an offset is not
        certainly a pre-token boundary. Certain: a line start not before a blank line (a run of line
        breaks is one pre-token), the place between a word (or a full stop) and the spaces after it
        (pre-tokens never take the space after them), the ends of the text; and a token ends there."""
        if self.ends is None:
            return [[None] * max(0, len(pts) - 1) for _, pts in groups]
        norm = self.norm
        n = len(norm)
        ends = self.ends
        if self.ascii:
            at = _np.fromiter([p for _, pts in groups for p in pts], dtype=ends.dtype)
        else:  # UTF-8 offsets, from each group's block
            parts = []
            blocks = self.blocks
            known = self.char_at  # (the same blocks are looked at again with each budget)
            for bi, pts in groups:
                b = blocks[bi]
                local = _np.fromiter(pts, dtype=_np.int64, count=len(pts)) - b.start
                text = b.text
                if text.isascii():
                    parts.append(local + b.bpos)
                else:  # where each char starts in the UTF-8 bytes (not a continuation byte)
                    char_at = known.get(bi)
                    if char_at is None:
                        raw = _np.frombuffer(text.encode("utf-8"), dtype=_np.uint8)
                        char_at = _np.append(_np.flatnonzero((raw & 0xC0) != 0x80), len(raw))
                        if len(raw) < 2**31:
                            char_at = char_at.astype(_np.int32)
                        known[bi] = char_at
                    parts.append(char_at[local] + b.bpos)
            at = _np.concatenate(parts).astype(ends.dtype) if parts else _np.zeros(0, dtype=ends.dtype)
        idx = _np.searchsorted(ends, at, side="right")
        clean = ((at == 0) | (ends[_np.maximum(idx, 1) - 1] == at)).tolist()
        cum = idx.tolist()
        blank_at = _BLANK_AT
        out: list[list[int | None]] = []
        k = 0
        for _, pts in groups:
            # the exact count at each offset, or None
            at_p: list[int | None] = []
            for p, c, ok in zip(pts, cum[k : k + len(pts)], clean[k : k + len(pts)]):
                if ok and 0 < p < n:
                    before, ch = norm[p - 1], norm[p]
                    if before == "\n":  # a line start, not before a blank line
                        ok = not ch.isspace() or not blank_at(norm, p)
                    else:  # before the spaces after a word
                        ok = (ch == " " or ch == "\t") and not before.isspace()
                at_p.append(c if ok else None)
            k += len(pts)
            out.append([
                z - a if a is not None and z is not None else None for a, z in zip(at_p, at_p[1:])
            ])
        return out

    def to_source(self, n: int, end: bool = False) -> int:
        return n if self.omap is None else self.omap.to_source(n, end)


# -- headers -----------------------------------------------------------------------------------------

_JOINTS: dict[str, tuple[int, int, dict[int, int]]] = {}
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _joint_counts(counter: TokenCounter) -> tuple[int, int, dict[int, int]]:
    """(tokens of " >", tokens of a line-break pair, extra tokens of " ###" over "###" per level)."""
    got = _JOINTS.get(counter.encoding_name)
    if got is None:
        enc = counter.encoding

        def t(x: str) -> int:
            return len(enc.encode_ordinary(x))

        got = _JOINTS[counter.encoding_name] = (
            t(" >"), t("\n\n"), {lv: t(" " + "#" * lv) - t("#" * lv) for lv in range(1, 7)}
        )
    return got


def _marker_level(m: str) -> int:
    """The level of a Markdown heading marker ``## Title`` (a title that does not start or end with
    white space), else 0: the markers whose counts compose into a header's count."""
    lv = len(m) - len(m.lstrip("#"))
    if 1 <= lv <= 6 and len(m) > lv + 1 and m[lv] == " " and not m[lv + 1].isspace() and not m[-1].isspace():
        return lv
    return 0


def _letter_or_digit(c: str) -> bool:
    return c.isalnum() if c.isascii() else unicodedata.category(c)[0] in "LN"


def _last_pretoken(m: str) -> str | None:
    """The part of a marker that a following line break joins in pre-tokenisation: "" when it
    ends with a letter or digit (the line breaks are a pre-token of their own), `` }`` when it
    ends with ASCII punctuation (`` ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*``); None when not sure."""
    if not m:
        return None
    i = len(m)
    while i and m[i - 1] in _ASCII_PUNCT:
        i -= 1
    if i == len(m):
        return "" if _letter_or_digit(m[-1]) else None
    if i == 0:
        return None
    c = m[i - 1]
    if c == " ":
        return m[i - 1 :]
    if c in "\t" or _letter_or_digit(c):
        return m[i:]
    return None


def compose_headers(counter: TokenCounter, need: Mapping[str, tuple[str, ...]], known: dict[str, int],
                    blocks: list) -> list[str]:  # blocks: the document's headings
    """Counts of ``header + "\n\n"`` for headers that are Markdown markers joined by `` > ``,
    composed from the markers' counts, into ``known``; returns the headers left to encode.

    Pre-tokenisation cuts before `` > `` (a marker ends with a character that is not white space)
    and between `` >`` and the next marker's `` ###``, so: tokens(header + "\n\n") = the sum of
    tokens(marker) + per joint (tokens(" >") + tokens(" ###") - tokens("###")) + what the final
    line breaks add to the marker's last pre-token. A marker's count is read off the document's
    encoding when its heading is written as the marker followed by line breaks: the heading block's
    count minus what the line breaks add to its last pre-token (`` }`` + "\n\n" vs `` }``).
    """
    gt, _, delta = _joint_counts(counter)
    info: dict[str, tuple[int, str | None]] = {}  # marker -> (level, last pre-token) for composable ones
    bad: set[str] = set()
    direct = []
    composed = []
    for h, path in need.items():
        ok = True
        for m in path:
            if m not in info and m not in bad:
                lv = _marker_level(m)
                tail = _last_pretoken(m) if lv else None
                if lv and tail is not None:
                    info[m] = (lv, tail)
                elif lv:
                    info[m] = (lv, None)  # fine inside a path, not at its end
                else:
                    bad.add(m)
            if m in bad:
                ok = False
        if ok and info[path[-1]][1] is not None:
            composed.append((h, path))
        else:
            direct.append(h)
    if not composed:
        return direct
    small: dict[str, None] = {}  # short texts whose counts are needed: last pre-tokens, with line breaks
    for _, tail in info.values():
        if tail is not None:
            small[tail] = None
            small[tail + "\n\n"] = None
    from_doc = []
    for b in blocks:  # (the heading blocks)
        if b.seg:
            m = b.path[-1]
            got = info.get(m)
            if got is not None and got[1] is not None:
                text = b.text
                j = len(text) - len(m)
                if j >= 0 and text.startswith(m) and text.count("\n", len(m)) == j:
                    tail_nl = got[1] + "\n" * j
                    small[tail_nl] = None
                    from_doc.append((m, b.toks, got[1], tail_nl))
    small.pop("", None)
    texts = list(small)
    sc = dict(zip(texts, counter.count_many(texts)))
    sc[""] = 0
    toks_of: dict[str, int] = {}
    for m, toks, tail, tail_nl in from_doc:
        toks_of[m] = toks - sc[tail_nl] + sc[tail]
    rest = [m for m in info if m not in toks_of]
    if rest:
        toks_of.update(zip(rest, counter.count_many(rest)))
    for h, path in composed:
        total = toks_of[path[0]]
        for m in path[1:]:
            total += toks_of[m] + gt + delta[info[m][0]]
        tail = info[path[-1]][1]
        known[h] = total + sc[tail + "\n\n"] - sc[tail]
    return direct


# -- pieces: blocks, or the parts of a block split at its joints ----------------------------------


@dataclass(slots=True)
class _Piece:
    bi: int  # block index
    pa: int  # the real part: [pa, pz) of the block's text
    pz: int
    text: str  # content (real part plus synthetic lines)
    chars: int
    toks: int
    cost: int  # in the budget's unit
    first: bool  # the block's first part
    synth: tuple[tuple[int, int], ...]
    over: bool  # one atomic unit over the budget
    midline: bool  # token sum is an upper bound (a cut inside a line, stripped text): recount
    kind: str
    heading: bool
    sstart: bool  # starts a section (first part of a heading or of a block after a tag)
    hard: bool  # must start a chunk
    section: int
    path: tuple[str, ...]
    prose: bool  # overlap can be taken from its end
    blank: bool  # white space only


class _Run:
    """A chunk being packed."""

    __slots__ = ("pieces", "cost", "budget", "reserved", "header")

    def __init__(self, pieces: list[_Piece], budget: int, reserved: int, header: tuple, cost: int):
        self.pieces = pieces
        self.cost = cost
        self.budget = budget  # room for the body: the size minus header and context reserve
        self.reserved = reserved  # part of that room kept for the overlap
        self.header = header  # (text, cost, tokens)


def _group(costs: list[int], limit: int, first_limit: int, first_bias: int = 0, prefix=None) -> list[tuple[int, int]]:
    """Consecutive groups of units, each within its limit when possible, balanced in size.

    ``first_bias``: how much more the first group's units may hold than the others' in a
    balanced split (e.g. it holds the real opening fence the others get as synthetic text).
    ``prefix``: the running sums of ``costs`` from 0, when known.
    """

    if prefix is None:
        prefix = list(accumulate(costs, initial=0))
    count = len(costs)
    right = bisect.bisect_right

    def greedy(lim: int, first: int) -> list[tuple[int, int]]:
        # a group takes units while they fit (at least one): it ends before the first unit whose
        # cost would take the running sum over the cap
        groups = []
        gi, cap = 0, first
        while True:
            j = right(prefix, prefix[gi] + cap, gi + 2)
            if j > count:
                groups.append((gi, count))
                return groups
            groups.append((gi, j - 1))
            gi, cap = j - 1, lim

    g = greedy(limit, first_limit)
    if len(g) > 1:
        n = len(g)
        soft = -(-prefix[-1] // n)
        for slack in (1.0, 1.05, 1.15, 1.3):
            s = min(limit, int(soft * slack) + 1)
            g2 = greedy(s, min(first_limit, max(1, s + first_bias)))
            if len(g2) <= n:
                return g2
    return g


def _flat_spans(spans: list[tuple[int, int]], costs: list[int], toks: list[int]) -> tuple:
    """Spans and their costs as flat tuples of numbers, to keep (the collector stops tracking them)."""
    return tuple([x for x, _ in spans]), tuple([y for _, y in spans]), tuple(costs), tuple(toks)


def _unflat_spans(got: tuple) -> tuple[list[tuple[int, int]], tuple, tuple]:
    xs, ys, costs, toks = got
    return list(zip(xs, ys)), costs, toks


class _Packer:
    """Everything that depends on the budget: splitting, packing, small chunks, overlap."""

    def __init__(self, doc: _Doc, opts: ChunkOptions, counter: TokenCounter | None):
        self.doc = doc
        self.opts = opts
        self.counter = counter
        self.tokens = opts.unit == "tokens"
        self.size = opts.size
        self.ov = opts.overlap_size
        self.min = opts.min_size
        self.header_in_text = opts.prepend_heading and opts.embed != "content"
        self._headers: dict[tuple[str, ...], tuple[str, int, int]] = {}
        self._runs_at: dict[tuple[str, ...], tuple] = {}  # path -> (header, body budget)
        self._candidates = doc.header_candidates[opts.heading_path]  # path -> header texts to try
        self._first = doc.first_headers[(opts.heading_path, self.header_in_text)]  # path -> (cost, header)
        self._third = self.size // 3  # the most a header may cost
        self._room = self.size - opts.context_reserve
        self.any_synth = False  # a piece with synthetic lines (a reopened fence, a repeated header)

    # measures
    def measure_many(self, texts: list[str]) -> tuple[list[int], list[int]]:
        """(costs in the unit, token counts) of texts; token counts are 0 when not counted."""
        toks = self.counter.count_many(texts) if self.counter is not None else [0] * len(texts)
        costs = toks if self.tokens else [len(t) for t in texts]
        return costs, toks

    def header(self, path: tuple[str, ...]) -> tuple[str, int, int]:
        """(header text, its cost in the budget, its tokens in ``text``) for a heading path.

        The full path when ``heading_path``, else the nearest heading; a header that would take
        more than a third of the budget falls back to the nearest heading, then to none.
        """
        first = self._first.get(path)
        if first is None:
            first = self.first_header(path)
        if first[0] <= self.size // 3:
            return first[1]
        got = self._headers.get(path)
        if got is not None:
            return got
        candidates = self._candidates.get(path)  # (kept with the document: the same for every budget)
        if candidates is None:
            candidates = [" > ".join(path)] if self.opts.heading_path and len(path) > 1 else []
            if path:
                candidates.append(path[-1])
            candidates = self._candidates[path] = tuple(candidates)
        result = ("", 0, 0)
        known = self.doc.header_toks
        for h in candidates:
            if not self.header_in_text:
                result = (h, 0, 0)
                break
            toks = 0
            if self.counter is not None:
                toks = known.get(h)
                if toks is None:
                    toks = known[h] = self.counter.count(h + "\n\n")
            cost = toks if self.tokens else len(h) + 2
            if cost <= self.size // 3:
                result = (h, cost, toks)
                break
        self._headers[path] = result
        return result

    def first_header(self, path: tuple[str, ...]) -> tuple[int, tuple[str, int, int]]:
        """(cost, header) of the first header tried for a path: the one taken when its cost is
        within a third of the budget (kept with the document: the same for every budget)."""
        if not path:
            got = (0, ("", 0, 0))
        else:
            h = " > ".join(path) if self.opts.heading_path and len(path) > 1 else path[-1]
            if not self.header_in_text:
                got = (0, (h, 0, 0))
            else:
                toks = 0
                if self.counter is not None:
                    known = self.doc.header_toks
                    toks = known.get(h)
                    if toks is None:
                        toks = known[h] = self.counter.count(h + "\n\n")
                cost = toks if self.tokens else len(h) + 2
                got = (cost, (h, cost, toks))
        self._first[path] = got
        return got

    def body_budget(self, path: tuple[str, ...]) -> int:
        got = self._runs_at.get(path)
        if got is None:
            got = self.run_at(path)
        return got[1]

    def run_at(self, path: tuple[str, ...]) -> tuple[tuple[str, int, int], int]:
        """(header, room for the body) of a chunk at a heading path."""
        header = self.header(path)
        got = self._runs_at[path] = (header, max(1, self.size - self.opts.context_reserve - header[1]))
        return got

    # splitting
    def pieces(self) -> list[_Piece]:
        """The blocks, each block over its room replaced by its parts. Only the blocks that may be
        over (costlier than the smallest room a header leaves) are looked at."""
        doc = self.doc
        blocks = doc.blocks
        self.prime_headers(blocks)
        costs = doc.costs
        if costs is None:
            costs = doc.costs = [b.cost for b in blocks]
        smallest_room = max(1, self.size - self.opts.context_reserve - self.size // 3)
        marks = doc.marks
        arr = marks.get("costs")
        if arr is not None and arr is not True:  # numpy, from the second budget on
            over = _np.flatnonzero(arr > smallest_room).tolist()
        else:
            over = [i for i, c in enumerate(costs) if c > smallest_room]
            if _np is not None:
                marks["costs"] = _np.array(costs) if arr else True
        out: list = []
        done = 0
        firsts = self._first
        third = self._third
        room0 = self._room
        for bi in over:
            b = blocks[bi]
            first = firsts.get(b.path)
            if first is not None and first[0] <= third:  # (body_budget, inline)
                room = room0 - first[0]
                if room < 1:
                    room = 1
            else:
                room = self.body_budget(b.path)
            if b.cost <= room:
                continue
            out += blocks[done:bi]
            done = bi + 1
            out.extend(self.split_block(bi, b, room))
        if done:
            out += blocks[done:]
            return out
        return list(blocks)

    def split_block(self, bi: int, b: _Blk, room: int) -> list[_Piece]:
        """A block over its room, split at its joints (or one atomic piece, flagged)."""
        if b.kind in ("heading", "rule") or (b.kind not in _PROSE_OR_TEXT and "\n" not in b.text.rstrip("\n")):
            return [self.piece(bi, b, 0, b.chars, b.text, b.toks, b.cost, True, (), True)]
        target = room
        if b.kind in _PROSE_OR_TEXT:
            target = max(room - self.ov, room // 2)
        first = target
        blocks = self.doc.blocks
        if bi and blocks[bi - 1].heading and blocks[bi - 1].section == b.section:
            hcost = blocks[bi - 1].cost
            if target - hcost >= target // 2:
                first = target - hcost
        if b.kind == "code" and b.fence:
            return self.split_fenced(bi, b, target, first)
        if b.kind == "table":
            return self.split_table(bi, b, target, first)
        return self.split_units(bi, b, target, first)

    def prime_headers(self, blocks: list[_Blk]) -> None:
        """Count every header of the document in one batch (once per document and heading_path)."""
        if self.header_in_text and self.counter is not None:
            self.doc.prime_headers(self.counter, self.opts.heading_path)

    def piece(self, bi: int, b: _Blk, pa: int, pz: int, text: str, toks: int, cost: int, first: bool,
              synth: tuple = (), over: bool = False, midline: bool = False) -> _Piece:
        blank = not text or text.isspace()
        return _Piece(bi, pa, pz, text, len(text), toks, cost, first, synth, over, midline,
                      b.kind, b.heading and first, b.sstart and first, b.hard and first, b.section, b.path,
                      b.kind in _PROSE_OR_TEXT and not synth and not blank, blank)

    def unit_costs(self, b: _Blk, spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
        text = b.text
        if self.counter is None:
            chars = [z - a for a, z in spans]
            return chars, [0] * len(spans)
        if b.seg is not None:
            bs = b.start
            toks = self.doc.span_tokens([(bs + a, bs + z) for a, z in spans], b.bi)
        else:
            toks = [None] * len(spans)
        todo = [k for k, t in enumerate(toks) if t is None]
        if todo:
            counted = self.counter.count_many([text[spans[k][0] : spans[k][1]] for k in todo])
            for k, c in zip(todo, counted):
                toks[k] = c
        costs = toks if self.tokens else [z - a for a, z in spans]
        return costs, toks  # type: ignore[return-value]

    def units(self, b: _Blk, a: int, z: int, levels: tuple[str, ...], limit: int) -> list[tuple[int, int, int, int, bool]]:
        """(start, end, cost, tokens, atomic-over) units of b.text[a:z], split level by level."""
        text = b.text
        if not levels:
            costs, toks = self.unit_costs(b, [(a, z)])
            return [(a, z, costs[0], toks[0], costs[0] > limit)]
        key = (b.bi, a, z, levels[0])
        got = self.doc.unit_cache.get(key)  # the joints of a block do not depend on the budget
        if got is None:
            cuts = [a + c for c in _cuts(text[a:z], levels[0])]
            regions = self.fences(b)
            if regions:
                cuts = [c for c in cuts if not any(x < c < y for x, y in regions)]
            bounds = [a] + cuts + [z]
            spans = [(x, y) for x, y in zip(bounds, bounds[1:]) if y > x]
            costs, toks = self.unit_costs(b, spans)
            # kept as flat tuples of numbers (the collector stops tracking them)
            got = self.doc.unit_cache[key] = (
                tuple([x for x, _ in spans]), tuple([y for _, y in spans]), tuple(costs), tuple(toks),
                max(costs, default=0),
            )
        xs, ys, costs, toks, most = got
        if most <= limit:  # no unit to split further
            return list(zip(xs, ys, costs, toks, repeat(False)))
        out = []
        for x, y, c, t in zip(xs, ys, costs, toks):
            if c > limit:
                out.extend(self.units(b, x, y, levels[1:], limit))
            else:
                out.append((x, y, c, t, False))
        return out

    def fences(self, b: _Blk) -> list[tuple[int, int]]:
        got = self.doc.fence_cache.get(b.bi)
        if got is None:
            got = self.doc.fence_cache[b.bi] = _fence_regions(b.text) if b.kind in ("list", "quote") else []
        return got

    def split_units(self, bi: int, b: _Blk, target: int, first: int) -> list[_Piece]:
        levels = _LEVELS.get(b.kind, ("sentence", "line"))
        text = b.text
        out = []
        cache = self.doc.unit_cache
        got = cache.get((bi, 0, b.chars, levels[0]))
        if got is not None and got[4] <= target:  # its units at the first level all fit (as units() gives them)
            xs, ys, costs, toks, _ = got
            sums = cache.get((bi, "sums", levels[0]))
            if sums is None:
                sums = cache[(bi, "sums", levels[0])] = (tuple(accumulate(costs, initial=0)),
                                                         tuple(accumulate(toks, initial=0)))
            cost_at, tok_at = sums
            groups = _group(costs, target, first, first - target, cost_at)
            last = len(groups) - 1
            for k, (i, j) in enumerate(groups):
                pa = 0 if k == 0 else xs[i]
                pz = b.chars if k == last else ys[j - 1]
                out.append(self.piece(bi, b, pa, pz, text[pa:pz], tok_at[j] - tok_at[i], cost_at[j] - cost_at[i],
                                      k == 0, (), False, b.midline and k == 0))
            return out
        units = self.units(b, 0, b.chars, levels, target)
        costs = [u[2] for u in units]
        groups = _group(costs, target, first, first - target)
        cost_at = list(accumulate(costs, initial=0))
        tok_at = list(accumulate([u[3] for u in units], initial=0))
        last = len(groups) - 1
        for k, (i, j) in enumerate(groups):
            pa = 0 if k == 0 else units[i][0]
            pz = b.chars if k == last else units[j - 1][1]
            cost = cost_at[j] - cost_at[i]
            toks = tok_at[j] - tok_at[i]
            over = j - i == 1 and units[i][4]
            # cuts are at line starts or where pre-tokenisation cuts: the sums are exact
            out.append(self.piece(bi, b, pa, pz, text[pa:pz], toks, cost, k == 0, (), over, b.midline and k == 0))
        return out

    def split_fenced(self, bi: int, b: _Blk, target: int, first: int) -> list[_Piece]:
        """A fenced code block by lines; each part closes the fence and the next reopens it."""
        text = b.text
        nl = text.find("\n")
        open_line = text[: nl + 1]
        m = FENCE_OPEN.match(open_line)
        fence = m.group(2) if m else b.fence
        indent = m.group(1) if m else ""
        body_start = nl + 1
        trimmed = text.rstrip()
        ls = trimmed.rfind("\n") + 1
        closed = ls >= body_start and re.fullmatch(
            r" {0,3}" + re.escape(fence[0]) + "{%d,}[ \t]*" % len(fence), trimmed[ls:]
        )
        close_start = ls if closed else len(text)
        close_line = f"{indent}{fence}\n"
        if close_start <= body_start:  # no line between the fences: nothing to split at
            return [self.piece(bi, b, 0, b.chars, text, b.toks, b.cost, True, (), b.cost > target, b.midline)]
        # units: the lines of the body, the first one with the opening line (and any blank lines
        # after it), so that every cut is at the start of a non-blank line and counts add up exactly
        got = self.doc.unit_cache.get((bi, "fenced"))
        if got is None:
            cuts = [body_start + c for c in _line_starts(text[body_start:close_start])]
            bounds = [0] + [c for c in cuts if c > body_start or text[body_start:c].strip()] + [close_start]
            spans = [(x, y) for x, y in zip(bounds, bounds[1:]) if y > x]
            got = self.doc.unit_cache[(bi, "fenced")] = _flat_spans(spans, *self.unit_costs(b, spans))
        spans, costs, toks = _unflat_spans(got)
        (oc, cc, rc), (ot, ct, rt) = self.measure_many([open_line, close_line, text[close_start:]])
        limit = max(1, target - oc - max(cc, rc))
        groups = _group(costs, limit, max(1, first - max(cc, rc)), oc - (target - first))
        out = []
        last = len(groups) - 1
        for k, (i, j) in enumerate(groups):
            pa = 0 if k == 0 else spans[i][0]
            pz = len(text) if k == last else spans[j - 1][1]
            real = text[pa:pz]
            prefix = open_line if k else ""
            suffix = close_line if k != last else ""
            synth = []
            if prefix:
                synth.append((0, len(prefix)))
            if suffix:
                synth.append((len(prefix) + len(real), len(prefix) + len(real) + len(suffix)))
            cost = (oc if k else 0) + sum(costs[i:j]) + (cc if k != last else rc)
            tk = (ot if k else 0) + sum(toks[i:j]) + (ct if k != last else rt)
            over = j - i == 1 and costs[i] > (limit + oc if k == 0 else limit)
            out.append(self.piece(bi, b, pa, pz, prefix + real + suffix, tk, cost, k == 0, tuple(synth), over))
            if synth:
                self.any_synth = True
        return out

    def split_table(self, bi: int, b: _Blk, target: int, first: int) -> list[_Piece]:
        """A table by rows; each part after the first repeats the header and delimiter rows."""
        text = b.text
        starts = _line_starts(text)
        if len(starts) < 2:
            return self.split_units(bi, b, target, first)
        head_end = starts[1]
        got = self.doc.unit_cache.get((bi, "table"))
        if got is None:
            bounds = starts[1:] + [len(text)]
            spans = [(x, y) for x, y in zip(bounds, bounds[1:]) if y > x]
            got = self.doc.unit_cache[(bi, "table")] = _flat_spans(spans, *self.unit_costs(b, spans))
        spans, costs, toks = _unflat_spans(got)
        if not spans:
            return self.split_units(bi, b, target, first)
        (hc,), (ht,) = self.unit_costs(b, [(0, head_end)])
        prefix_text = text[:head_end]
        limit = max(1, target - hc)
        groups = _group(costs, limit, max(1, first - hc), first - target)
        out = []
        last = len(groups) - 1
        for k, (i, j) in enumerate(groups):
            pa = 0 if k == 0 else spans[i][0]
            pz = len(text) if k == last else spans[j - 1][1]
            prefix = prefix_text if k else ""
            synth = ((0, len(prefix)),) if prefix else ()
            cost = hc + sum(costs[i:j])
            tk = ht + sum(toks[i:j])
            over = j - i == 1 and costs[i] > limit
            out.append(self.piece(bi, b, pa, pz, prefix + text[pa:pz], tk, cost, k == 0, synth, over))
            if synth:
                self.any_synth = True
        return out

    # packing
    def run_for(self, p: _Piece, prev: _Run | None) -> _Run:
        path = p.path
        first = self._first.get(path)
        if first is not None and first[0] <= self._third:  # the common case
            header = first[1]
            budget = self._room - header[1]
            if budget < 1:
                budget = 1
        else:
            header, budget = self.run_at(path)
        reserved = 0
        if self.ov and prev is not None and not p.sstart and prev.pieces[-1].prose and p.cost <= budget - self.ov:
            reserved = self.ov
        return _Run([p], budget, reserved, header, p.cost)

    def pack(self, pieces: list[_Piece]) -> list[_Run]:
        """Greedy packing: a piece joins the current chunk if it fits, unless it starts a section
        (a heading, once the chunk is big enough) or must start a chunk (after a <Chunk> tag)."""
        runs: list[_Run] = []
        split = self.opts.split_on_headings
        min_body = self.min
        if not pieces:
            return runs
        firsts, third, room0, ov = self._first, self._third, self._room, self.ov
        cur = self.run_for(pieces[0], None)
        cost, cap, hcost, add = cur.cost, cur.budget - cur.reserved, cur.header[1], cur.pieces.append
        body = not cur.pieces[0].heading  # the chunk holds more than headings
        i = 1
        n = len(pieces)
        while i < n:
            p = pieces[i]
            i += 1
            hard = p.hard
            # a new section starts a new chunk, unless this one is still small or only headings
            if not hard and not (p.sstart and split and body and cost + hcost >= min_body):
                if not body and not p.heading:
                    body = True
                c = p.cost
                if c <= cap - cost:  # the common case: it fits
                    add(p)
                    cost += c
                    continue
                if p.first and all(q.heading for q in cur.pieces):
                    # only headings so far: split the block so that its first part follows them
                    parts = self.split_to_fit(p, cap - cost)
                    if parts:
                        add(parts[0])
                        cost += parts[0].cost
                        pieces[i:i] = parts[1:]
                        n = len(pieces)
                        continue
            cur.cost = cost
            pcs = cur.pieces
            runs.append(cur)
            if not hard and len(pcs) > 1 and pcs[-1].heading:
                # a chunk does not end on a heading: the heading moves to the next chunk
                carry: list[_Piece] = []
                while len(pcs) > len(carry) + 1 and pcs[-1 - len(carry)].heading:
                    carry.insert(0, pcs[-1 - len(carry)])
                del pcs[-len(carry):]
                cur.cost -= sum(q.cost for q in carry)
                cur = self.run_for(carry[0], cur)
                for q in carry[1:]:
                    cur.pieces.append(q)
                    cur.cost += q.cost
                i -= 1  # p again, now after the carried headings
                body = False  # (headings only)
                cost, cap, hcost, add = cur.cost, cur.budget - cur.reserved, cur.header[1], cur.pieces.append
                continue
            # the next chunk starts with p (run_for, inline)
            first = firsts.get(p.path)
            if first is not None and first[0] <= third:
                header = first[1]
                budget = room0 - first[0]
                if budget < 1:
                    budget = 1
            else:
                header, budget = self.run_at(p.path)
            cost = p.cost
            cap = budget
            if ov and not p.sstart and pcs[-1].prose and cost <= budget - ov:
                cap = budget - ov
                cur = _Run([p], budget, ov, header, cost)
            else:
                cur = _Run([p], budget, 0, header, cost)
            hcost = header[1]
            add = cur.pieces.append
            body = not p.heading
        cur.cost = cost
        runs.append(cur)
        return runs

    def split_to_fit(self, p: _Piece, room: int) -> list[_Piece]:
        """A whole block split so that its first part fits in ``room`` (after a heading), or []."""
        b = self.doc.blocks[p.bi]
        if p is not b or room <= 0 or b.kind in ("heading", "rule"):
            return []
        full = self.body_budget(b.path)
        target = max(full - self.ov, full // 2) if b.kind in _PROSE_OR_TEXT else full
        if b.kind == "code" and b.fence:
            parts = self.split_fenced(p.bi, b, target, room)
        elif b.kind == "table":
            parts = self.split_table(p.bi, b, target, room)
        elif b.kind in _PROSE_OR_TEXT or "\n" in b.text.rstrip("\n"):
            parts = self.split_units(p.bi, b, target, room)
        else:
            return []
        if len(parts) < 2 or parts[0].cost > room:
            return []
        return parts

    def absorb_small(self, runs: list[_Run]) -> list[_Run]:
        """Chunks under the minimum: rebalanced within their section, or merged into a neighbour."""
        if self.min <= 0 or len(runs) < 2:
            return runs
        minimum = self.min
        i = 0
        while i < len(runs):
            r = runs[i]
            if r.cost + r.header[1] >= minimum or len(runs) < 2:
                i += 1
                continue
            first = r.pieces[0]
            prev = runs[i - 1] if i else None
            nxt = runs[i + 1] if i + 1 < len(runs) else None
            if prev is not None and not first.sstart and not first.hard:
                # the tail of a section: take whole pieces from the previous part of the section
                while r.cost + r.header[1] < minimum and len(prev.pieces) > 1:
                    q = prev.pieces[-1]
                    if q.heading or q.section != first.section or q.hard:
                        break
                    if prev.cost + prev.header[1] - q.cost < minimum or r.cost + q.cost > r.budget - r.reserved:
                        break
                    prev.pieces.pop()
                    prev.cost -= q.cost
                    r.pieces.insert(0, q)
                    r.cost += q.cost
                    first = q
                if r.cost + r.header[1] >= minimum:
                    i += 1
                    continue
            only_headings = all(q.heading for q in r.pieces)
            # (a heading belongs with what follows it, but a micro-chunk of headings alone is worse
            # than a chunk that ends on them: its text comes back in the next chunk's breadcrumb)
            can_prev = prev is not None and not first.hard and prev.cost + r.cost <= prev.budget - prev.reserved
            nfirst = nxt.pieces[0] if nxt is not None else None
            can_next = nfirst is not None and not nfirst.hard and r.cost + nxt.cost <= r.budget - r.reserved
            prefer_next = can_next and (
                only_headings
                or (len(nfirst.path) > len(first.path) and nfirst.path[: len(first.path)] == first.path)
                or (prev is None and not r.cost)
            )
            if can_next and (prefer_next or not can_prev):
                r.pieces.extend(nxt.pieces)
                r.cost += nxt.cost
                del runs[i + 1]
                continue
            if can_prev:
                prev.pieces.extend(r.pieces)
                prev.cost += r.cost
                del runs[i]
                continue
            i += 1
        return runs

    def overlaps(self, runs: list[_Run]) -> tuple[list[str], list[int]]:
        """The overlap of each chunk, the previous chunk's last whole sentences that fit, and its tokens.

        Sentences are cut where pre-tokenisation cuts, so a suffix's count is the sum of its
        sentences' counts (read off the document's encoding, or each sentence counted once,
        cached): no suffix is encoded again. The candidates are the sentence and paragraph starts
        found in the last ``room * 16`` chars (``room`` chars for a budget in chars). They are
        first looked for in a window half as long: past where that window begins, its
        starts are the long window's (``_window_start``); only a walk back to there needs the
        long window.
        """
        texts = [""] * len(runs)
        toks = [0] * len(runs)
        if not self.ov:
            return texts, toks
        cache = self.doc.sentence_cache  # (piece, window) -> [candidate starts, their sentences' counts]
        if len(cache) > _SENTENCE_CACHE_MAX:
            cache.clear()
        wanted = []  # (run index, room, last piece of the previous run, cache entry, long window key)
        for i in range(1, len(runs)):
            r, prev = runs[i], runs[i - 1]
            first = r.pieces[0]
            last = prev.pieces[-1]
            if first.sstart or first.hard or not last.prose:
                continue
            room = min(self.ov, r.budget - r.cost)
            if room <= 0:
                continue
            src = last.text
            n = len(src)
            lo = max(0, n - (room * 16 if self.tokens else room))
            key = (last.bi, last.pa, last.pz, lo)
            entry = cache.get(key)
            if entry is not None:
                if entry[0]:
                    wanted.append((i, room, last, entry, None))
                continue
            short = max(lo, n - room * 8) if self.tokens else lo
            if short > lo:
                skey = (last.bi, last.pa, last.pz, -short)
                entry = cache.get(skey)
                if entry is None:
                    w = _window_start(src, short)
                    entry = cache[skey] = [[x for x in _window_starts(src, short) if x > w], None]
                wanted.append((i, room, last, entry, key))
                continue
            entry = cache[key] = [_window_starts(src, lo), None]
            if entry[0]:
                wanted.append((i, room, last, entry, None))
        while wanted:
            self._unit_counts([w for w in wanted if w[3][1] is None])
            again = []
            for i, room, last, entry, long_key in wanted:
                starts, counted = entry
                src = last.text
                nonblank = len(src.rstrip())  # a suffix from before this holds more than white space
                costs = counted if self.tokens else [z - a for a, z in zip(starts, starts[1:] + [len(src)])]
                total = total_toks = 0
                best = None
                for k in range(len(starts) - 1, -1, -1):
                    total += costs[k]
                    total_toks += counted[k]
                    if total > room:
                        break
                    if starts[k] < nonblank:
                        best = (starts[k], total_toks)
                else:
                    if long_key is not None:  # walked back to where the short window begins
                        full = cache.get(long_key)
                        if full is None:
                            full = cache[long_key] = [_window_starts(src, long_key[3]), None]
                        if full[0]:
                            again.append((i, room, last, full, None))
                        continue
                if best is not None:
                    texts[i] = src[best[0] :]
                    toks[i] = best[1]
            wanted = again
        return texts, toks

    def _unit_counts(self, wanted: list[tuple]) -> None:
        """Token counts of the sentences from each overlap candidate to the next, into the cache
        entries: read off the document's encoding where their ends are pre-token boundaries, the
        others encoded (cached by text)."""
        if not wanted:
            return
        entries = []  # (last piece, cache entry), each entry once
        seen = set()
        for w in wanted:
            if id(w[3]) not in seen:
                seen.add(id(w[3]))
                entries.append((w[2], w[3]))
        if self.counter is None:
            for _, entry in entries:
                entry[1] = [0] * len(entry[0])
            return
        doc = self.doc
        blocks = doc.blocks
        out: list = [None] * len(entries)
        groups = []
        which = []
        if doc.ends is not None:
            for j, (last, entry) in enumerate(entries):
                b = blocks[last.bi]
                if b.seg and not last.synth:
                    base = b.start + last.pa
                    groups.append((last.bi, [base + x for x in entry[0]] + [base + len(last.text)]))
                    which.append(j)
        for j, got in zip(which, doc.cut_tokens(groups) if groups else []):
            out[j] = got
        texts = []
        for j, (last, entry) in enumerate(entries):
            got = out[j]
            if got is None:
                got = out[j] = [None] * len(entry[0])
            if None in got:
                src = last.text
                bounds = entry[0] + [len(src)]
                for k, c in enumerate(got):
                    if c is None:
                        texts.append(src[bounds[k] : bounds[k + 1]])
        if texts:
            counted = iter(self.counter.count_many(texts))
            for got in out:
                if None in got:
                    for k, c in enumerate(got):
                        if c is None:
                            got[k] = next(counted)
        for (_, entry), got in zip(entries, out):
            entry[1] = got


def _window_starts(src: str, lo: int) -> list[int]:
    """Sentence and paragraph starts found in ``src[lo:]`` alone (offsets into ``src``)."""
    tail = src[lo:]
    starts = {lo + x for x in _sentence_starts(tail)} | {lo + x for x in _paragraph_starts(tail)}
    if lo == 0:
        starts.add(0)
    return sorted(x for x in starts if x < len(src))


def _window_start(src: str, lo: int) -> int:
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


# -- the chunker -------------------------------------------------------------------------------------


def _merge_blank(runs: list[_Run]) -> list[_Run]:
    """A run with nothing but whitespace joins its neighbour rather than being lost."""
    for r in runs:
        for p in r.pieces:
            if not p.blank:
                break
        else:
            break
    else:
        return runs
    out: list[_Run] = []
    pending: list[_Piece] = []
    for r in runs:
        if all(p.blank for p in r.pieces):
            if out:
                out[-1].pieces.extend(r.pieces)
                out[-1].cost += r.cost
            else:
                pending.extend(r.pieces)
            continue
        if pending:
            r.pieces[:0] = pending
            r.cost += sum(p.cost for p in pending)
            pending = []
        out.append(r)
    return out


class _DocCache:
    """Parsed and counted documents by text and normalisation options, least recently used out.

    Bounded by a number of documents and by their total size in chars.
    """

    def __init__(self, size: int = 1024, max_chars: int = 32_000_000):
        self.size = size
        self.max_chars = max_chars
        self._items: OrderedDict[tuple, _Doc] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> _Doc | None:
        with self._lock:
            doc = self._items.get(key)
            if doc is not None:
                self._items.move_to_end(key)
            return doc

    def put(self, key: tuple, doc: _Doc) -> None:
        if self.size <= 0 or len(key[0]) > self.max_chars:
            return
        with self._lock:
            if key in self._items:
                self._chars -= len(key[0])
            self._items[key] = doc
            self._items.move_to_end(key)
            self._chars += len(key[0])
            while self._items and (len(self._items) > self.size or self._chars > self.max_chars):
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old[0])

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._items)


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextmanager
def _gc_paused():
    """No cyclic garbage collection while chunking (other threads' chunkings included).

    Chunking allocates many small containers (parser tokens, blocks, pieces) and creates no
    reference cycles: everything it drops is freed by reference counting, so the collector's
    passes over the young objects would find nothing (a corpus run then spends a sixth of its
    time in them). The collector is switched back on as it was when the last chunking ends.
    """
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


class Chunker:
    """Chunks texts with one set of options; keeps the parse and counts of recent texts.

    ``Chunker(options).chunk(text, source)``; ``chunker.with_options(chunk_size=512)`` gives a
    chunker with other options that shares the caches, so re-chunking the same text with another
    budget reuses its parse and token counts.
    """

    def __init__(self, options: ChunkOptions | None = None, *, cache_size: int = 1024, _cache: _DocCache | None = None, **changes: Any):
        options = options or ChunkOptions()
        if changes:
            options = replace(options, **changes)
        self.options = options
        self._cache = _cache if _cache is not None else _DocCache(cache_size)

    def with_options(self, **changes: Any) -> "Chunker":
        return Chunker(replace(self.options, **changes), _cache=self._cache)

    @property
    def counter(self) -> TokenCounter | None:
        return get_counter(self.options.encoding) if self.options.needs_tokens else None

    def count_tokens(self, text: str) -> int:
        return get_counter(self.options.encoding).count(text)

    def _doc(self, text: str) -> _Doc:
        opts = self.options
        counter = self.counter
        key = (
            text,
            opts.unit,
            opts.mode,
            opts.strip_data_uri,
            opts.strip_html_comments,
            opts.chunk_tags,
            counter.encoding_name if counter is not None else None,
        )
        doc = self._cache.get(key)
        if doc is None:
            doc = _Doc(text, opts.mode, opts, counter)
            self._cache.put(key, doc)
        return doc

    def mode_of(self, text: str) -> str:
        """The mode the text is chunked in (auto-detection resolved)."""
        return self._doc(text).mode

    def chunk(self, text: str, source: str | None = None) -> list[Chunk]:
        """The chunks of ``text``; ``source`` (default: the options' source) prefixes the ids."""
        opts = self.options
        src = opts.source if source is None else source
        with _gc_paused():
            # (what the chunking leaves behind is freed before the collector is back on, so that
            # its first pass does not walk through it)
            return self._chunk(text, src)

    def _chunk(self, text: str, src: str) -> list[Chunk]:
        doc = self._doc(text)
        if not doc.blocks:
            return []
        packer = _Packer(doc, self.options, self.counter)
        runs = _merge_blank(packer.absorb_small(packer.pack(packer.pieces())))
        overlaps, overlap_toks = packer.overlaps(runs)
        return self._build(doc, packer, runs, overlaps, overlap_toks, src)

    def _build(
        self, doc: _Doc, packer: _Packer, runs: list[_Run], overlaps: list[str], overlap_toks: list[int], src: str
    ) -> list[Chunk]:
        opts = self.options
        counting = packer.counter is not None
        embed = opts.embed
        metadata = dict(opts.metadata)  # (each chunk copies it when its metadata is first read)
        size = opts.size
        tokens_unit = packer.tokens
        mode = doc.mode
        # What a chunk holds depends only on its pieces, overlap and header (not on the budget):
        # the chunks of the last chunking of this text are kept, for the next budget's chunks
        # that come out the same.
        old = doc.build_cache
        known: dict[tuple, tuple] = {}
        flags = (packer.header_in_text and embed != "content", embed, opts.heading_path)
        made: list[tuple | None] = [None] * len(runs)  # each run's record (None: nothing but white space)
        todo: list[tuple[int, tuple | None]] = []
        get = old.get if old else None
        for ri, r in enumerate(runs):
            pieces = r.pieces
            fp = pieces[0]
            lp = pieces[-1]
            key = None
            if len(pieces) == lp.bi - fp.bi + 1:  # one piece per block: the pieces are their ends'
                key = (fp.bi, fp.pa, fp.pz, lp.bi, lp.pa, lp.pz, overlaps[ri], r.header[0], flags)
                if get is not None:
                    rec = get(key)
                    if rec is not None:
                        known[key] = rec
                        made[ri] = rec
                        continue
            todo.append((ri, key))
        if todo:
            recs = self._records(doc, packer, runs, overlaps, overlap_toks, [(runs[ri], ri) for ri, _ in todo])
            for (ri, key), rec in zip(todo, recs):
                made[ri] = rec
                if key is not None and rec is not None:
                    known[key] = rec
        if old and len(old) + len(known) <= 4 * len(known) + 64:  # (the records of about four chunkings)
            old.update(known)
        else:
            doc.build_cache = known
        chunks: list[Chunk] = []
        append = chunks.append
        new, cls = _new_chunk, Chunk
        meta_plain = (metadata, False)
        meta_over = (metadata, True)
        index = 0
        for rec, ov in zip(made, overlaps):
            if rec is None:  # nothing but white space
                continue
            (content, digest, text, toks, title, level, plist, breadcrumb, sections, kinds, synth, start, end,
             ov_start, page, pages, header, length) = rec
            over = (toks if tokens_unit else length) > size
            # The chunker's constructor, inline on this hot path: tuples for the list fields, text
            # None when it is the header and the body, metadata as (shared mapping, oversize).
            c = new(cls)
            c.id = f"{src}#{index}-{digest[:8]}"
            c.hash = digest
            c.index = index
            c.start = start
            c.end = end
            c.length = length
            c.tokens = toks if counting else 0
            c.heading = title
            c.heading_level = level
            c._path = plist
            c.breadcrumb = breadcrumb
            c._sections = sections
            c.header = header
            c.content = content
            c.context = ""
            c._text = text
            c.embed = embed
            c.type = mode
            c._blocks = kinds
            c.overlap = len(ov)
            c.page = page
            c._pages = pages
            c._metadata = meta_over if over else meta_plain
            c.synthetic = bool(synth)
            c._synth = synth
            c.over_budget = over
            c.overlap_start = ov_start
            c.source = src
            append(c)
            index += 1
        for c in chunks:
            c.total = index
        return chunks

    def _records(self, doc: _Doc, packer: _Packer, runs: list[_Run], overlaps: list[str], overlap_toks: list[int],
                 which: list[tuple[_Run, int]]) -> list[tuple | None]:
        """What the chunks of the given runs hold, apart from their place (index, id, budget flags)."""
        opts = self.options
        blocks = doc.blocks
        counter = packer.counter
        counting = counter is not None
        heading_path = opts.heading_path
        with_header = packer.header_in_text and opts.embed != "content"
        omap = doc.omap
        to_source = doc.to_source
        page_starts = doc.page_starts
        crumbs = doc.crumbs[heading_path]  # path -> (path shown, breadcrumb)
        any_midline = doc.any_midline  # (a piece whose count may merge with the blank lines before it)
        any_synth = packer.any_synth
        out: list[tuple | None] = []
        recount: list[int] = []
        sha = hashlib.sha256
        crumb_get = crumbs.get
        get_text, get_toks, get_kind, get_path, get_midline, get_synth = _PIECE_FIELDS
        simple = omap is None
        for r, ri in which:
            pieces = r.pieces
            ov = overlaps[ri]
            fp = pieces[0]
            if len(pieces) == 1:
                lp = fp
                if ov:
                    content = ov + fp.text
                    toks = overlap_toks[ri] + fp.toks
                    synth = tuple([(a + len(ov), z + len(ov)) for a, z in fp.synth])
                else:
                    content = fp.text
                    toks = fp.toks
                    synth = tuple(fp.synth)
                inexact = fp.midline
                kinds = (fp.kind,)
                paths = (fp.path,)
            else:
                lp = pieces[-1]
                content = "".join(map(get_text, pieces))
                toks = sum(map(get_toks, pieces))
                kinds = tuple(dict.fromkeys(map(get_kind, pieces)))
                paths = dict.fromkeys(map(get_path, pieces))
                inexact = any_midline and any(map(get_midline, pieces))
                synth = ()
                if any_synth and any(map(get_synth, pieces)):
                    pos = len(ov)
                    spans = []
                    for p in pieces:
                        if p.synth:
                            spans.extend([(pos + a, pos + z) for a, z in p.synth])
                        pos += p.chars
                    synth = tuple(spans)
                if ov:
                    content = ov + content
                    toks += overlap_toks[ri]
            if not content or content.isspace():
                out.append(None)
                continue
            sections = []
            for pth in paths:
                if pth:
                    got = crumb_get(pth)
                    if got is None:
                        got = crumbs[pth] = _crumb(pth, heading_path)
                    sections.append(got[1])
            got = crumb_get(fp.path)
            if got is None:
                got = crumbs[fp.path] = _crumb(fp.path, heading_path)
            fb = blocks[fp.bi] if fp.__class__ is not _Blk else fp
            titles = fb.titles
            level, title = titles[-1] if titles else (0, "")
            header, _, htoks = r.header
            if header and with_header:  # compose_text(header, "", content, embed): no context yet
                text = None  # header + "\n\n" + content, built when read
                toks += htoks
                c0 = content[:1]
                if c0 == "\n" or ((c0 == " " or c0 == "\t") and content.lstrip(" \t")[:1] == "\n"):
                    inexact = True  # blank lines right after the header's "\n\n"
            else:
                text = content
            lb = blocks[lp.bi] if lp.__class__ is not _Blk else lp
            if simple and fb.bmap is None and lb.bmap is None:
                start = fb.start + fp.pa
                end = lb.start + lp.pz
            else:
                start = to_source(fb.norm_at(fp.pa))
                end = to_source(lb.norm_at(lp.pz, True), True)
            ov_start = None
            if ov:
                pp = runs[ri - 1].pieces[-1]
                ov_start = to_source(blocks[pp.bi].norm_at(pp.pa + pp.chars - len(ov)))
            page, pages = None, ()
            if page_starts:
                page = bisect.bisect_right(page_starts, start)
                last_norm = lb.norm_at(max(lp.pa, lp.pz - 1))  # the last real char, not dropped lines
                pages = tuple(range(page, bisect.bisect_right(page_starts, max(start, to_source(last_norm))) + 1))
            # (tuples of strings and numbers: the collector stops tracking them)
            rec = (content, sha(content.encode("utf-8")).hexdigest(), text, toks if counting else 0, title, level,
                   got[0], got[1], tuple(sections), kinds, synth, start, end, ov_start, page, pages, header,
                   len(text) if text is not None else len(header) + 2 + len(content))
            if inexact and counting:
                recount.append(len(out))
            out.append(rec)
        if recount:
            texts = [out[i][2] if out[i][2] is not None else out[i][16] + "\n\n" + out[i][0] for i in recount]
            for i, t in zip(recount, counter.count_many(texts)):
                rec = out[i]
                out[i] = rec[:3] + (t,) + rec[4:]
        return out


_PIECE_FIELDS = tuple(attrgetter(f) for f in ("text", "toks", "kind", "path", "midline", "synth"))


def _crumb(path: tuple[str, ...], heading_path: bool) -> tuple[tuple[str, ...], str]:
    """(path, breadcrumb) of a heading path."""
    plist = path if heading_path else path[-1:]
    return plist, " > ".join(plist)


_default_cache = _DocCache()


def chunk_text(text: str, options: ChunkOptions | None = None, source: str = "") -> list[Chunk]:
    """Chunk ``text`` with ``options`` (defaults when None).

    Parses and token counts are cached per text for the life of the process (bounded), so calling
    again on the same text with only another budget is cheap; ``clear_caches()`` forgets them.
    """
    return Chunker(options, _cache=_default_cache).chunk(text, source or (options.source if options else ""))


def clear_caches() -> None:
    """Forget cached parses and token counts (for cold measurements)."""
    _default_cache.clear()
    from ctxfst_tui.core.chunking import tokens as _tokens

    for counter in list(_tokens._counters.values()):
        counter.clear_cache()
