"""A chunk as the chunker returns it, the record it is made from, and the text that gets embedded."""
from __future__ import annotations

from typing import Any, NamedTuple

from ctxfst_tui.core.chunking.tokens import TokenCounter

__all__ = ["Chunk", "ChunkRecord", "compose_text"]

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


class ChunkRecord(NamedTuple):
    """What a chunk holds apart from its place (id, index, total, over-budget flag).

    It depends only on the chunk's pieces, overlap and header, not on the budget, so the records
    of recent chunkings are kept with the document and reused when another budget packs the same
    chunk. The field names are the Chunk's.
    """

    content: str
    hash: str  # sha256 of ``content``
    text: str | None  # None: the header and the body (``header + "\n\n" + content``), built when read
    tokens: int  # of what gets embedded; 0 when tokens are not counted
    heading: str
    heading_level: int
    path: tuple[str, ...]
    breadcrumb: str
    sections: tuple[str, ...]
    blocks: tuple[str, ...]
    synthetic_ranges: tuple[tuple[int, int], ...]
    start: int
    end: int
    overlap_start: int | None
    page: int | None
    pages: tuple[int, ...]
    header: str
    length: int


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
