"""What the model is given about a document: its clean body, outline, and one job per chunk.

A :class:`DocMaterial` is read once per run from a snapshot of the document: the body without
frontmatter and ``<Chunk>`` tags, the outline of its headings, and for each chunk to note a
:class:`ChunkJob` (its text, its heading, the breadcrumb of headings down to it, and where it
sits in the body, so the prompt can cut the document around it). Chunks that cannot or need
not be noted are set aside as :class:`SetAside` with the reason.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ctxfst_tui.core.contextualize.options import ContextualizeError, ContextualizeOptions
from ctxfst_tui.core.format.document import Document

_CHUNK_TAG = re.compile(r"""<\s*/?\s*Chunk\b[^>\n]*>[ \t]*\n?""", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass
class ChunkJob:
    """One chunk to note: its text, its place in the headings and in the clean body."""

    index: int  # frontmatter chunk index
    chunk_id: str
    content: str  # chunk text without its heading line(s)
    raw: str  # chunk text as in the body (tags stripped)
    heading: str
    breadcrumb: str
    start: int  # offset of the chunk in the cleaned body
    end: int
    previous: str | None


@dataclass
class SetAside:
    """A chunk the run will not send to the model: ``status`` skipped or failed, and why."""

    chunk_id: str
    status: str
    reason: str
    previous: str | None


@dataclass
class DocMaterial:
    """The document as the prompts see it: title, clean body, outline (headings down to level 3), jobs."""

    title: str
    body: str  # body without frontmatter and chunk tags
    outline: list[str]
    jobs: list[ChunkJob]
    skipped: list[SetAside]


def headings(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, title) of the ATX headings of ``text`` outside fenced code."""
    out = []
    fence: str | None = None
    pos = 0
    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line)
        if m:
            run = m.group(1)
            if fence is None:
                fence = run
            elif run[0] == fence[0] and len(run) >= len(fence):
                fence = None
        elif fence is None:
            h = _HEADING.match(line.rstrip("\r\n"))
            if h:
                out.append((pos, len(h.group(1)), h.group(2).strip()))
        pos += len(line)
    return out


def breadcrumb(heads: list[tuple[int, int, str]], start: int, end: int) -> tuple[str, str]:
    """(heading of the chunk, path of headings down to it)."""
    stack: list[tuple[int, str]] = []
    own = ""
    for off, level, title in heads:
        if off >= end:
            break
        if off >= start and own:
            break
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        if off >= start:
            own = title
    heading = own or (stack[-1][1] if stack else "")
    return heading, " > ".join(t for _, t in stack)


def strip_chunk_tags(body: str) -> tuple[str, list[tuple[int, int]]]:
    """Body without chunk tags, and a map of (clean offset, raw offset) anchors."""
    out, anchors, last = [], [(0, 0)], 0
    clean_len = 0
    for m in _CHUNK_TAG.finditer(body):
        out.append(body[last:m.start()])
        clean_len += m.start() - last
        last = m.end()
        anchors.append((clean_len, last))
    out.append(body[last:])
    return "".join(out), anchors


def content_without_heading(text: str) -> str:
    """The chunk text without its heading line(s); the whole text if that would leave nothing."""
    lines = text.strip().splitlines()
    kept = [ln for ln in lines if not _HEADING.match(ln.strip())] if lines else []
    return "\n".join(kept).strip() or text.strip()


def read_material(doc: Document, options: ContextualizeOptions) -> DocMaterial:
    """The material of ``doc`` for the chunks ``options`` asks for (all, ``chunk_ids``, without ``skip_present`` ones)."""
    if not doc.readable or doc.frontmatter_error is not None or doc.data is None:
        raise ContextualizeError(f"{doc.label}: the frontmatter cannot be read; fix it before contextualizing")
    body_raw = doc.text[doc.body_start:]
    body, _ = strip_chunk_tags(body_raw)
    body = body.replace("\r\n", "\n")
    heads = headings(body)
    outline = [t for _, lvl, t in heads if lvl <= 3]
    wanted = set(options.chunk_ids) if options.chunk_ids else None
    jobs: list[ChunkJob] = []
    skipped: list[SetAside] = []
    cursor = 0
    for entry in doc.chunks:
        cid = entry.id if isinstance(entry.id, str) else None
        if cid is None:
            continue
        if wanted is not None and cid not in wanted:
            continue
        data = entry.data if isinstance(entry.data, dict) else {}
        prev = data.get("context")
        prev_s = prev if isinstance(prev, str) else None
        if options.skip_present and isinstance(prev, str) and prev.strip():
            skipped.append(SetAside(cid, "skipped", "already has a context (--skip-present)", previous=prev_s))
            continue
        bc = doc.body_chunk(cid)
        if bc is None:
            skipped.append(SetAside(cid, "failed", "no <Chunk> with this id in the body", previous=prev_s))
            continue
        raw = _CHUNK_TAG.sub("", bc.raw_content).replace("\r\n", "\n").strip()
        if not raw:
            skipped.append(SetAside(cid, "skipped", "the chunk is empty", previous=prev_s))
            continue
        start = body.find(raw, cursor if body.find(raw, cursor) >= 0 else 0)
        if start < 0:
            start = max(0, body.find(raw[:80]))
        end = start + len(raw)
        cursor = end if start >= 0 else cursor
        heading, crumb = breadcrumb(heads, start, end)
        jobs.append(ChunkJob(entry.index, cid, content_without_heading(raw), raw, heading, crumb, start, end, prev_s))
    return DocMaterial(doc.title or (doc.path.stem if doc.path else "untitled document"), body, outline, jobs, skipped)


def document_window(body: str, start: int, end: int, max_chars: int) -> str:
    """The document text cut to ``max_chars`` around [start, end), with ``[...]`` at the cuts."""
    body = body.strip("\n")
    if max_chars <= 0 or len(body) <= max_chars:
        return body
    span = end - start
    if span >= max_chars:
        a, b = start, start + max_chars
    else:
        room = max_chars - span
        a = max(0, start - room // 2)
        b = min(len(body), end + (room - (start - a)))
        a = max(0, b - max_chars)
    # snap to line boundaries when that does not lose much
    nl = body.rfind("\n", a, min(len(body), a + 200))
    if a > 0 and nl >= 0:
        a = nl + 1
    nl = body.find("\n", max(a, b - 200), b)
    if b < len(body) and nl >= 0:
        b = nl
    return ("[...]\n" if a > 0 else "") + body[a:b].strip("\n") + ("\n[...]" if b < len(body) else "")


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (at a line break when one is past the middle), marked ``[...]``."""
    if limit <= 0 or len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + "\n[...]"
