"""The analysed document, independent of the budget: normalised, parsed into content blocks, stripped, counted.

A document is parsed (``markdown.parse_normalized`` on mistune, or the plain-text / PDF
segmentation of ``plaintext``) while the calling thread encodes it once; every block's count is
read off that one encoding wherever its ends are certainly pre-token boundaries.
"""
from __future__ import annotations

import os
import re
import threading

from ctxfst_tui.core.chunking.headers import compose_headers
from ctxfst_tui.core.chunking.markdown import Block, OffsetMap, normalize_newlines, parse_normalized
from ctxfst_tui.core.chunking.options import ChunkOptions
from ctxfst_tui.core.chunking.plaintext import clean_pdf_text, detect_mode, parse_text_blocks
from ctxfst_tui.core.chunking.tokens import _np
from ctxfst_tui.core.chunking.tokens import TokenCounter

# Blocks whose text is prose (and plain text): split by sentences, a source of overlap.
PROSE_KINDS = frozenset(("paragraph", "list", "quote", "text"))
_EXCLUDED = frozenset(("frontmatter", "chunk_open", "chunk_close"))  # never content

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


class ContentBlock:
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
        self.prose = kind in PROSE_KINDS and not blank

    def norm_at(self, local: int, end: bool = False) -> int:
        """Offset in the normalised text of an offset in this block's (stripped) text."""
        return self.start + (self.bmap.to_source(local, end) if self.bmap is not None else local)


class ParsedDoc:
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
        self.build_cache: dict[tuple, tuple] = {}  # ChunkRecords of recent chunkings, by their pieces
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
            # GIL. (The encoding stays on one thread: two encodings at once gain less than the
            # hand-overs between the threads cost.)
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

    def _prepare(self, raw: list[Block], opts: ChunkOptions) -> list[ContentBlock]:
        norm = self.norm
        out: list[ContentBlock] = []
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
            blk = ContentBlock(kind, start, end, text, path, titles, section, heading or hard_next, hard_next, heading,
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
