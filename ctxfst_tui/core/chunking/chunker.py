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

The steps live in their own modules: ``options`` (ChunkOptions), ``blocks`` (the analysed
document: parsed, stripped, counted), ``cuts`` (where a block's text may be cut), ``headers``
(header counts), ``packer`` (everything that depends on the budget), ``chunk`` (the Chunk) and
``cache`` (what is kept between calls); this module turns the packed runs into chunks.

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
import hashlib
from dataclasses import replace
from operator import attrgetter
from typing import Any

from ctxfst_tui.core.chunking.blocks import ContentBlock, ParsedDoc
from ctxfst_tui.core.chunking.cache import DocCache, default_cache, gc_paused
from ctxfst_tui.core.chunking.chunk import Chunk, ChunkRecord
from ctxfst_tui.core.chunking.options import ChunkOptions
from ctxfst_tui.core.chunking.packer import Packer, Run, merge_blank
from ctxfst_tui.core.chunking.tokens import TokenCounter, get_counter

__all__ = ["Chunker", "chunk_text"]


_new_chunk = object.__new__


class Chunker:
    """Chunks texts with one set of options; keeps the parse and counts of recent texts.

    ``Chunker(options).chunk(text, source)``; ``chunker.with_options(chunk_size=512)`` gives a
    chunker with other options that shares the caches, so re-chunking the same text with another
    budget reuses its parse and token counts.
    """

    def __init__(self, options: ChunkOptions | None = None, *, cache_size: int = 1024, _cache: DocCache | None = None, **changes: Any):
        options = options or ChunkOptions()
        if changes:
            options = replace(options, **changes)
        self.options = options
        self._cache = _cache if _cache is not None else DocCache(cache_size)

    def with_options(self, **changes: Any) -> "Chunker":
        return Chunker(replace(self.options, **changes), _cache=self._cache)

    @property
    def counter(self) -> TokenCounter | None:
        return get_counter(self.options.encoding) if self.options.needs_tokens else None

    def count_tokens(self, text: str) -> int:
        return get_counter(self.options.encoding).count(text)

    def _doc(self, text: str) -> ParsedDoc:
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
            doc = ParsedDoc(text, opts.mode, opts, counter)
            self._cache.put(key, doc)
        return doc

    def mode_of(self, text: str) -> str:
        """The mode the text is chunked in (auto-detection resolved)."""
        return self._doc(text).mode

    def chunk(self, text: str, source: str | None = None) -> list[Chunk]:
        """The chunks of ``text``; ``source`` (default: the options' source) prefixes the ids."""
        opts = self.options
        src = opts.source if source is None else source
        with gc_paused():
            # (what the chunking leaves behind is freed before the collector is back on, so that
            # its first pass does not walk through it)
            return self._chunk(text, src)

    def _chunk(self, text: str, src: str) -> list[Chunk]:
        doc = self._doc(text)
        if not doc.blocks:
            return []
        packer = Packer(doc, self.options, self.counter)
        runs = merge_blank(packer.absorb_small(packer.pack(packer.pieces())))
        overlaps, overlap_toks = packer.overlaps(runs)
        return self._build(doc, packer, runs, overlaps, overlap_toks, src)

    def _build(
        self, doc: ParsedDoc, packer: Packer, runs: list[Run], overlaps: list[str], overlap_toks: list[int], src: str
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
        known: dict[tuple, ChunkRecord] = {}
        flags = (packer.header_in_text and embed != "content", embed, opts.heading_path)
        made: list[ChunkRecord | None] = [None] * len(runs)  # each run's record (None: nothing but white space)
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

    def _records(self, doc: ParsedDoc, packer: Packer, runs: list[Run], overlaps: list[str], overlap_toks: list[int],
                 which: list[tuple[Run, int]]) -> list[ChunkRecord | None]:
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
        out: list[ChunkRecord | None] = []
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
            fb = blocks[fp.bi] if fp.__class__ is not ContentBlock else fp
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
            lb = blocks[lp.bi] if lp.__class__ is not ContentBlock else lp
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
            # (positional: a NamedTuple's keywords are slow on this path; its fields are strings,
            # numbers and tuples of them, which the collector stops tracking)
            rec = ChunkRecord(
                content, sha(content.encode("utf-8")).hexdigest(), text, toks if counting else 0, title, level,
                got[0], got[1], tuple(sections), kinds, synth, start, end, ov_start, page, pages, header,
                len(text) if text is not None else len(header) + 2 + len(content),
            )
            if inexact and counting:
                recount.append(len(out))
            out.append(rec)
        if recount:
            recs = [out[i] for i in recount]
            texts = [rec.text if rec.text is not None else rec.header + "\n\n" + rec.content for rec in recs]
            for i, rec, t in zip(recount, recs, counter.count_many(texts)):
                out[i] = rec._replace(tokens=t)
        return out


_PIECE_FIELDS = tuple(attrgetter(f) for f in ("text", "toks", "kind", "path", "midline", "synth"))


def _crumb(path: tuple[str, ...], heading_path: bool) -> tuple[tuple[str, ...], str]:
    """(path, breadcrumb) of a heading path."""
    plist = path if heading_path else path[-1:]
    return plist, " > ".join(plist)


def chunk_text(text: str, options: ChunkOptions | None = None, source: str = "") -> list[Chunk]:
    """Chunk ``text`` with ``options`` (defaults when None).

    Parses and token counts are cached per text for the life of the process (bounded), so calling
    again on the same text with only another budget is cheap; ``clear_caches()`` forgets them.
    """
    return Chunker(options, _cache=default_cache).chunk(text, source or (options.source if options else ""))
