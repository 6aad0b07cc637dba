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

Speed: each line of the document is encoded once, all lines in one native call (exact: BPE
pre-tokens never cross a line start), block counts are sums of line counts, and a chunk is never
re-encoded while it grows. The parse and the counts of a document are kept per text, so
re-chunking it with another budget costs a small fraction of the first run.
"""
from __future__ import annotations

import bisect
import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Any

from .markdown import FENCE_OPEN, Block, OffsetMap, normalize_newlines, parse_normalized
from .plaintext import clean_pdf_text, detect_mode, parse_text_blocks
from .tokens import DEFAULT_ENCODING, TokenCounter, get_counter

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


@dataclass
class Chunk:
    """One chunk. ``content`` is the real body; ``text`` is what gets embedded (see ``embed``)."""

    id: str
    hash: str
    index: int
    total: int
    start: int  # char offsets in the source of the chunk's own content (overlap excluded)
    end: int
    length: int  # chars of ``text``
    tokens: int  # tokens of ``text`` (0 when tokens are not counted)
    heading: str
    heading_level: int
    path: list[str]
    breadcrumb: str
    sections: list[str]
    header: str
    content: str
    context: str
    text: str
    embed: str
    type: str  # markdown | text | pdf
    blocks: list[str]  # kinds of the blocks it holds, in order of appearance
    overlap: int  # chars at the start of ``content`` repeated from the previous chunk
    page: int | None
    pages: list[int]
    metadata: dict[str, Any]
    synthetic: bool  # content is not a literal slice (a reopened fence, a repeated table header)
    synthetic_ranges: list[tuple[int, int]] = field(default_factory=list)  # in ``content``
    over_budget: bool = False  # over the budget because an atomic unit could not be split
    overlap_start: int | None = None  # source offset where the overlap text starts
    source: str = ""

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

    def with_context(self, context: str, counter: TokenCounter | None = None, prepend_heading: bool = True) -> "Chunk":
        """A copy with ``context`` set and ``text`` recomposed (tokens recounted when a counter is given)."""
        text = compose_text(self.header, context, self.content, self.embed, prepend_heading)
        tokens = counter.count(text) if counter is not None else self.tokens
        return replace(self, context=context, text=text, length=len(text), tokens=tokens)


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
    protected: list[tuple[int, int]] = []
    if not in_code and ((comments and "<!--" in text) or (tags and "<" in text)) and "`" in text:
        protected = [m.span() for m in _CODE_SPAN.finditer(text)]

    def free(a: int) -> bool:
        return not any(x <= a < y for x, y in protected)

    if comments and not in_code and "<!--" in text:
        for m in _COMMENT.finditer(text):
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
    if tags and not in_code and "<" in text:
        for m in _INLINE_TAG.finditer(text):
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

_SENT_END = re.compile(r"[.!?…]+[\"'”’)\]]*([ \t\n]+)(?=\S)|[。！？]+[」』”’)\]]*([ \t\n]*)(?=\S)")
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
            ws = max(text.rfind(" ", 0, a), text.rfind("\n", 0, a), text.rfind("(", 0, a))
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


_PARA_START = re.compile(r"(?<=\n)[ \t]*\n(?=[ \t]*\S)|(?<=\n)(?=[ \t]*(?:[*+-]|\d{1,9}[.)])[ \t])")


def _paragraph_starts(text: str) -> list[int]:
    """Starts of paragraphs (after a blank line) and of list items inside ``text``."""
    out = []
    for m in _PARA_START.finditer(text):
        out.append(m.end())
    return out


_LIST_MARK = re.compile(r"( {0,3})([*+-]|\d{1,9}[.)])(?:[ \t]|$)")


def _item_starts(text: str) -> list[int]:
    m = _LIST_MARK.match(text)
    if not m:
        return []
    indent = m.group(1)
    pat = re.compile(r"(?<=\n)" + re.escape(indent) + r"(?:[*+-]|\d{1,9}[.)])(?:[ \t]|$)", re.M)
    return [x.start() for x in pat.finditer(text)]


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
        "heading", "fence", "bmap", "seg", "bi", "pz", "cost", "midline", "prose",
    )
    # piece attributes that are the same for every whole block
    pa = 0
    first = True
    synth: tuple = ()
    over = False

    def __init__(self, kind, start, end, text, path, titles, section, sstart, hard, heading, fence, bmap, bi):
        self.kind = kind
        self.start = start  # offsets in the normalised text
        self.end = end
        self.text = text  # the block's text after stripping
        self.chars = self.pz = len(text)
        self.toks = 0
        self.cost = 0  # in the budget's unit (set once the document is counted)
        self.path = path
        self.titles = titles  # (level, title) along the path
        self.section = section
        self.sstart = sstart  # a heading, or the first block after a <Chunk> tag
        self.hard = hard  # must start a chunk (first block after a <Chunk> tag)
        self.heading = heading
        self.fence = fence
        self.bmap = bmap  # stripped text -> the block's slice of the normalised text
        self.seg = None  # its range of counted document lines, when unmodified
        self.bi = bi
        self.midline = bmap is not None and text[:1].isspace()  # may merge with the blank lines before
        self.prose = kind in _PROSE_OR_TEXT and bool(text.strip())

    def norm_at(self, local: int, end: bool = False) -> int:
        """Offset in the normalised text of an offset in this block's (stripped) text."""
        return self.start + (self.bmap.to_source(local, end) if self.bmap is not None else local)


class _Doc:
    """A parsed, normalised, counted document; shared by every budget."""

    __slots__ = (
        "mode", "norm", "omap", "blocks", "page_starts", "seg_starts", "seg_prefix", "tokens", "header_toks",
        "headers_primed", "crumbs", "unit_cache", "fence_cache",
    )

    def __init__(self, text: str, mode: str, opts: ChunkOptions, counter: TokenCounter | None):
        norm, nl_map = normalize_newlines(text)
        if mode == "auto":
            mode = detect_mode(norm)
        self.mode = mode
        self.page_starts: list[int] | None = None
        self.seg_starts: list[int] | None = None
        self.seg_prefix: list[int] | None = None
        self.tokens = opts.unit == "tokens"
        self.header_toks: dict[str, int] = {}  # header text -> tokens of header + "\n\n"
        self.headers_primed = False
        self.crumbs: dict[tuple[tuple[str, ...], bool], tuple[list[str], str]] = {}
        self.unit_cache: dict[tuple, tuple] = {}  # (block, start, end, level) -> (spans, costs, tokens)
        self.fence_cache: dict[int, list[tuple[int, int]]] = {}
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
        self.omap = omap
        if counter is None:
            self.blocks = self._prepare(self._parse(norm), opts)
            for b in self.blocks:
                b.cost = b.chars
            return
        if mode == "markdown" and len(norm) >= _PARALLEL_MIN:
            # mistune (Python) in a worker while this thread runs the tokenizer, which releases the GIL
            try:
                future = _parse_pool().submit(lambda: self._prepare(self._parse(norm), opts))
            except RuntimeError:  # interpreter shutting down
                future = None
            segs = _SEG.findall(norm)
            seg_counts = counter.count_segments(segs, norm)
            self.blocks = future.result() if future is not None else self._prepare(self._parse(norm), opts)
        else:
            self.blocks = self._prepare(self._parse(norm), opts)
            segs = _SEG.findall(norm)
            seg_counts = counter.count_segments(segs, norm)
        self._count(counter, segs, seg_counts)

    def _parse(self, norm: str) -> list[Block]:
        if self.mode == "markdown":
            return parse_normalized(norm)
        return parse_text_blocks(norm)

    def _prepare(self, raw: list[Block], opts: ChunkOptions) -> list[_Blk]:
        norm = self.norm
        out: list[_Blk] = []
        stack: list[tuple[int, str, str]] = []  # (level, marker, title)
        path: tuple[str, ...] = ()
        titles: tuple[tuple[int, str], ...] = ()
        section = 0
        hard_next = False
        markdown = self.mode == "markdown"
        strip_c = opts.strip_html_comments and markdown
        strip_d = opts.strip_data_uri
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
                stack.append((b.level, b.marker or b.title, b.title))
                path = tuple(x[1] for x in stack)
                titles = tuple((x[0], x[2]) for x in stack)
                section += 1
            text = norm[b.start : b.end]
            bmap = None
            if (strip_d and "data:" in text) or (markdown and kind != "code" and "<" in text):
                edits = _strip_block(text, kind, strip_c, strip_d, markdown)
                if edits:
                    stripped = OffsetMap.apply(text, edits)
                    if not stripped.strip():  # e.g. a comment alone: nothing of it is left
                        edits = [(0, len(text), "")]
                        stripped = ""
                    bmap = OffsetMap(edits)
                    text = stripped
            out.append(
                _Blk(kind, b.start, b.end, text, path, titles, section, heading or hard_next, hard_next, heading,
                     b.fence, bmap, len(out))
            )
            hard_next = False
        return out

    def _count(self, counter: TokenCounter, segs: list[str], seg_counts: list[int]) -> None:
        """Block counts as sums of line counts; stripped blocks are counted on their own text."""
        starts = list(accumulate(map(len, segs), initial=0))
        prefix = list(accumulate(seg_counts, initial=0))
        n = len(starts)
        own: list[_Blk] = []
        left = bisect.bisect_left
        for b in self.blocks:
            if b.bmap is None:
                i = left(starts, b.start)
                j = left(starts, b.end, i)
                if j < n and starts[i] == b.start and starts[j] == b.end:
                    b.seg = (i, j)
                    b.toks = prefix[j] - prefix[i]
                    continue
            own.append(b)
        if own:
            for b, c in zip(own, counter.count_many([b.text for b in own])):
                b.toks = c
        tokens = self.tokens
        for b in self.blocks:
            b.cost = b.toks if tokens else b.chars
        counter.remember({b.text: b.toks for b in self.blocks if b.seg is not None})
        self.seg_starts = starts
        self.seg_prefix = prefix

    def span_tokens(self, a: int, b: int) -> int | None:
        """Exact tokens of norm[a:b] when both ends are counted line starts, else None."""
        starts = self.seg_starts
        if starts is None:
            return None
        i = bisect.bisect_left(starts, a)
        j = bisect.bisect_left(starts, b, i)
        if j >= len(starts) or starts[i] != a or starts[j] != b:
            return None
        return self.seg_prefix[j] - self.seg_prefix[i]

    def to_source(self, n: int, end: bool = False) -> int:
        return n if self.omap is None else self.omap.to_source(n, end)


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


class _Run:
    """A chunk being packed."""

    __slots__ = ("pieces", "cost", "budget", "reserved", "header")

    def __init__(self, pieces: list[_Piece], budget: int, reserved: int, header: tuple):
        self.pieces = pieces
        self.cost = sum(p.cost for p in pieces)
        self.budget = budget  # room for the body: the size minus header and context reserve
        self.reserved = reserved  # part of that room kept for the overlap
        self.header = header  # (text, cost, tokens)


def _group(costs: list[int], limit: int, first_limit: int, first_bias: int = 0) -> list[tuple[int, int]]:
    """Consecutive groups of units, each within its limit when possible, balanced in size.

    ``first_bias``: how much more the first group's units may hold than the others' in a
    balanced split (e.g. it holds the real opening fence the others get as synthetic text).
    """

    def greedy(lim: int, first: int) -> list[tuple[int, int]]:
        groups = []
        gi, cur = 0, 0
        for k, c in enumerate(costs):
            cap = first if not groups else lim
            if k > gi and cur + c > cap:
                groups.append((gi, k))
                gi, cur = k, 0
            cur += c
        groups.append((gi, len(costs)))
        return groups

    g = greedy(limit, first_limit)
    if len(g) > 1:
        n = len(g)
        soft = -(-sum(costs) // n)
        for slack in (1.0, 1.05, 1.15, 1.3):
            s = min(limit, int(soft * slack) + 1)
            g2 = greedy(s, min(first_limit, max(1, s + first_bias)))
            if len(g2) <= n:
                return g2
    return g


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
        self._budgets: dict[tuple[str, ...], int] = {}

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
        got = self._headers.get(path)
        if got is not None:
            return got
        candidates = [" > ".join(path)] if self.opts.heading_path and len(path) > 1 else []
        if path:
            candidates.append(path[-1])
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

    def body_budget(self, path: tuple[str, ...]) -> int:
        got = self._budgets.get(path)
        if got is None:
            got = self._budgets[path] = max(1, self.size - self.opts.context_reserve - self.header(path)[1])
        return got

    # splitting
    def pieces(self) -> list[_Piece]:
        blocks = self.doc.blocks
        self.prime_headers(blocks)
        out: list = []
        last_path: tuple[str, ...] | None = None
        room = 0
        for bi, b in enumerate(blocks):
            if b.path is not last_path:
                last_path = b.path
                room = self.body_budget(last_path)
            if b.cost <= room:
                out.append(b)
                continue
            if b.kind in ("heading", "rule") or ("\n" not in b.text.rstrip("\n") and b.kind not in _PROSE_OR_TEXT):
                out.append(self.piece(bi, b, 0, b.chars, b.text, b.toks, b.cost, True, (), True))
                continue
            target = room
            if b.kind in _PROSE_OR_TEXT:
                target = max(room - self.ov, room // 2)
            first = target
            if bi and blocks[bi - 1].heading and blocks[bi - 1].section == b.section:
                hcost = blocks[bi - 1].cost
                if target - hcost >= target // 2:
                    first = target - hcost
            if b.kind == "code" and b.fence:
                out.extend(self.split_fenced(bi, b, target, first))
            elif b.kind == "table":
                out.extend(self.split_table(bi, b, target, first))
            else:
                out.extend(self.split_units(bi, b, target, first))
        return out

    def prime_headers(self, blocks: list[_Blk]) -> None:
        """Count every header candidate of the document in one batch (once per document)."""
        doc = self.doc
        if not self.header_in_text or self.counter is None or doc.headers_primed:
            return
        known = doc.header_toks
        texts: dict[str, None] = {}
        last = None
        for b in blocks:
            if b.path is not last:
                last = b.path
                if last:
                    if len(last) > 1:
                        texts[" > ".join(last)] = None
                    texts[last[-1]] = None
        todo = [h for h in texts if h not in known]
        if todo:
            known.update(zip(todo, self.counter.count_many([h + "\n\n" for h in todo])))
        doc.headers_primed = True

    def piece(self, bi: int, b: _Blk, pa: int, pz: int, text: str, toks: int, cost: int, first: bool,
              synth: tuple = (), over: bool = False, midline: bool = False) -> _Piece:
        return _Piece(bi, pa, pz, text, len(text), toks, cost, first, synth, over, midline,
                      b.kind, b.heading and first, b.sstart and first, b.hard and first, b.section, b.path,
                      b.kind in _PROSE_OR_TEXT and not synth and bool(text.strip()))

    def unit_costs(self, b: _Blk, spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
        text = b.text
        if self.counter is None:
            chars = [z - a for a, z in spans]
            return chars, [0] * len(spans)
        toks: list[int | None] = [None] * len(spans)
        if b.seg is not None:
            for k, (a, z) in enumerate(spans):
                toks[k] = self.doc.span_tokens(b.start + a, b.start + z)
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
            got = self.doc.unit_cache[key] = (spans, *self.unit_costs(b, spans))
        spans, costs, toks = got
        out = []
        for (x, y), c, t in zip(spans, costs, toks):
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
        units = self.units(b, 0, b.chars, levels, target)
        groups = _group([u[2] for u in units], target, first, first - target)
        text = b.text
        out = []
        last = len(groups) - 1
        for k, (i, j) in enumerate(groups):
            pa = 0 if k == 0 else units[i][0]
            pz = b.chars if k == last else units[j - 1][1]
            cost = sum(u[2] for u in units[i:j])
            toks = sum(u[3] for u in units[i:j])
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
            got = self.doc.unit_cache[(bi, "fenced")] = (spans, *self.unit_costs(b, spans))
        spans, costs, toks = got
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
            got = self.doc.unit_cache[(bi, "table")] = (spans, *self.unit_costs(b, spans))
        spans, costs, toks = got
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
        return out

    # packing
    def run_for(self, p: _Piece, prev: _Run | None) -> _Run:
        header = self.header(p.path)
        budget = self.body_budget(p.path)
        reserved = 0
        if self.ov and prev is not None and not p.sstart and prev.pieces[-1].prose and p.cost <= budget - self.ov:
            reserved = self.ov
        return _Run([p], budget, reserved, header)

    def pack(self, pieces: list[_Piece]) -> list[_Run]:
        """Greedy packing: a piece joins the current chunk if it fits, unless it starts a section
        (a heading, once the chunk is big enough) or must start a chunk (after a <Chunk> tag)."""
        runs: list[_Run] = []
        split = self.opts.split_on_headings
        min_body = self.min
        if not pieces:
            return runs
        cur = self.run_for(pieces[0], None)
        cost, cap, hcost, add = cur.cost, cur.budget - cur.reserved, cur.header[1], cur.pieces.append
        body = not cur.pieces[0].heading  # the chunk holds more than headings
        i = 1
        while i < len(pieces):
            p = pieces[i]
            i += 1
            hard = p.hard
            # a new section starts a new chunk, unless this one is still small or only headings
            if not (hard or (split and p.sstart and body and cost + hcost >= min_body)):
                if not p.heading:
                    body = True
                if p.cost <= cap - cost:  # the common case: it fits
                    add(p)
                    cost += p.cost
                    continue
                if p.first and all(q.heading for q in cur.pieces):
                    # only headings so far: split the block so that its first part follows them
                    parts = self.split_to_fit(p, cap - cost)
                    if parts:
                        add(parts[0])
                        cost += parts[0].cost
                        pieces[i:i] = parts[1:]
                        continue
            cur.cost = cost
            carry: list[_Piece] = []
            if not hard:  # a chunk does not end on a heading: the heading moves to the next chunk
                pcs = cur.pieces
                while len(pcs) > len(carry) + 1 and pcs[-1 - len(carry)].heading:
                    carry.insert(0, pcs[-1 - len(carry)])
                if carry:
                    del pcs[-len(carry):]
                    cur.cost -= sum(q.cost for q in carry)
            runs.append(cur)
            if carry:
                cur = self.run_for(carry[0], cur)
                for q in carry[1:]:
                    cur.pieces.append(q)
                    cur.cost += q.cost
                i -= 1  # p again, now after the carried headings
            else:
                cur = self.run_for(p, cur)
            cost, cap, hcost, add = cur.cost, cur.budget - cur.reserved, cur.header[1], cur.pieces.append
            body = not all(q.heading for q in cur.pieces)
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
        elif "\n" in b.text.rstrip("\n") or b.kind in _PROSE_OR_TEXT:
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
        sentences' counts (each sentence counted once, cached): no suffix is encoded again.
        """
        texts = [""] * len(runs)
        toks = [0] * len(runs)
        if not self.ov:
            return texts, toks
        wanted = []  # (run index, room, source text, sentence starts, index of its first unit)
        units: list[str] = []
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
            lo = max(0, len(src) - (room if not self.tokens else room * 16))
            tail = src[lo:]
            starts = {lo + x for x in _sentence_starts(tail)} | {lo + x for x in _paragraph_starts(tail)}
            if lo == 0:
                starts.add(0)
            starts = sorted(x for x in starts if x < len(src))
            if not starts:
                continue
            wanted.append((i, room, src, starts, len(units)))
            ends = starts[1:] + [len(src)]
            units.extend(src[a:z] for a, z in zip(starts, ends))
        if not wanted:
            return texts, toks
        counted = self.counter.count_many(units) if self.counter is not None else [0] * len(units)
        costs = counted if self.tokens else [len(u) for u in units]
        for i, room, src, starts, u0 in wanted:
            total = total_toks = 0
            best = None
            for k in range(len(starts) - 1, -1, -1):
                total += costs[u0 + k]
                total_toks += counted[u0 + k]
                if total > room:
                    break
                if src[starts[k] :].strip():
                    best = (starts[k], total_toks)
            if best is not None:
                texts[i] = src[best[0] :]
                toks[i] = best[1]
        return texts, toks


# -- the chunker -------------------------------------------------------------------------------------


def _merge_blank(runs: list[_Run]) -> list[_Run]:
    """A run with nothing but whitespace joins its neighbour rather than being lost."""
    if all(any(p.text.strip() for p in r.pieces) for r in runs):
        return runs
    out: list[_Run] = []
    pending: list[_Piece] = []
    for r in runs:
        if not any(p.text.strip() for p in r.pieces):
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
        doc = self._doc(text)
        if not doc.blocks:
            return []
        packer = _Packer(doc, opts, self.counter)
        runs = _merge_blank(packer.absorb_small(packer.pack(packer.pieces())))
        overlaps, overlap_toks = packer.overlaps(runs)
        return self._build(doc, packer, runs, overlaps, overlap_toks, src)

    def _build(
        self, doc: _Doc, packer: _Packer, runs: list[_Run], overlaps: list[str], overlap_toks: list[int], src: str
    ) -> list[Chunk]:
        opts = self.options
        blocks = doc.blocks
        counter = packer.counter
        embed = opts.embed
        metadata = dict(opts.metadata)
        heading_path = opts.heading_path
        size = opts.size
        tokens_unit = packer.tokens
        header_in_text = packer.header_in_text
        omap = doc.omap
        to_source = doc.to_source
        page_starts = doc.page_starts
        mode = doc.mode
        crumbs = doc.crumbs  # (path, heading_path) -> (path list, breadcrumb)
        chunks: list[Chunk] = []
        recount: list[int] = []
        sha = hashlib.sha256
        for ri, r in enumerate(runs):
            pieces = r.pieces
            ov = overlaps[ri]
            if len(pieces) == 1 and not ov:
                p0 = pieces[0]
                content = p0.text
                synth = list(p0.synth)
                toks = p0.toks
                inexact = p0.midline
                kinds = [p0.kind]
                paths = [p0.path]
            else:
                texts = [p.text for p in pieces]
                content = ov + "".join(texts) if ov else "".join(texts)
                toks = overlap_toks[ri]
                inexact = False
                kinds = []
                paths = []
                synth = []
                pos = len(ov)
                for p in pieces:
                    toks += p.toks
                    if p.midline:
                        inexact = True
                    if p.kind not in kinds:
                        kinds.append(p.kind)
                    if p.path not in paths:
                        paths.append(p.path)
                    if p.synth:
                        synth.extend((pos + a, pos + z) for a, z in p.synth)
                    pos += p.chars
            if not content or content.isspace():
                continue
            sections = []
            for pth in paths:
                if pth:
                    got = crumbs.get((pth, heading_path))
                    if got is None:
                        plist = list(pth) if heading_path else list(pth[-1:])
                        got = crumbs[(pth, heading_path)] = (plist, " > ".join(plist))
                    sections.append(got[1])
            fp, lp = pieces[0], pieces[-1]
            fb = blocks[fp.bi]
            got = crumbs.get((fp.path, heading_path))
            if got is None:
                plist = list(fp.path) if heading_path else list(fp.path[-1:])
                got = crumbs[(fp.path, heading_path)] = (plist, " > ".join(plist))
            path, breadcrumb = list(got[0]), got[1]
            level, title = fb.titles[-1] if fb.titles else (0, "")
            header, _, htoks = r.header
            if embed == "content" or not header or not header_in_text:
                text = content
            else:  # compose_text(header, "", content, embed): no context yet
                text = header + "\n\n" + content
                toks += htoks
                if content.lstrip(" \t")[:1] == "\n":  # blank lines right after the header's "\n\n"
                    inexact = True
            lb = blocks[lp.bi]
            if omap is None and fb.bmap is None and lb.bmap is None:
                start = fb.start + fp.pa
                end = lb.start + lp.pz
            else:
                start = to_source(fb.norm_at(fp.pa))
                end = to_source(lb.norm_at(lp.pz, True), True)
            ov_start = None
            if ov:
                pp = runs[ri - 1].pieces[-1]
                ov_start = to_source(blocks[pp.bi].norm_at(pp.pa + pp.chars - len(ov)))
            page, pages = None, []
            if page_starts:
                page = bisect.bisect_right(page_starts, start)
                last_norm = lb.norm_at(max(lp.pa, lp.pz - 1))  # the last real char, not dropped lines
                pages = list(range(page, bisect.bisect_right(page_starts, max(start, to_source(last_norm))) + 1))
            index = len(chunks)
            if inexact and counter is not None:
                recount.append(index)
            digest = sha(content.encode("utf-8")).hexdigest()
            chunks.append(
                Chunk(
                    f"{src}#{index}-{digest[:8]}", digest, index, 0, start, end, len(text),
                    toks if counter is not None else 0, title, level, path, breadcrumb, sections,
                    header, content, "", text, embed, mode, kinds, len(ov), page, pages, dict(metadata),
                    bool(synth), synth, (toks if tokens_unit else len(text)) > size, ov_start, src,
                )
            )
        if recount:
            for i, t in zip(recount, counter.count_many([chunks[i].text for i in recount])):
                c = chunks[i]
                c.tokens = t
                if tokens_unit:
                    c.over_budget = t > size
        total = len(chunks)
        for c in chunks:
            c.total = total
            if c.over_budget:
                c.metadata["oversize"] = True
        return chunks


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
    from . import tokens as _tokens

    for counter in list(_tokens._counters.values()):
        counter.clear_cache()
