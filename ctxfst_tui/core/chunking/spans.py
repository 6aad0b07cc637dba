"""Chunk spans as the preview pane draws them: lines, token counts and size flags.

The same shape comes from two places: a CtxFST document's existing ``<Chunk>`` tags (the
current boundaries) and the structural chunker's output (proposed boundaries), so the
preview and its tests need not know which one they show.
"""
from __future__ import annotations

import statistics
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ctxfst_tui.core.format.schema import CHUNK_TOKENS_MAX, CHUNK_TOKENS_MIN, CHUNK_TOKENS_TARGET
from ctxfst_tui.core.format.source import LineIndex


def size_flag(tokens: int) -> str | None:
    """'small' / 'large' outside the CtxFST size guidelines (cl100k tokens), else None."""
    if tokens < CHUNK_TOKENS_MIN:
        return "small"
    if tokens > CHUNK_TOKENS_MAX:
        return "large"
    return None


@dataclass(frozen=True)
class ChunkSpan:
    """One chunk as drawn: 1-based first/last line, its real token count, and why it stands out."""

    index: int
    id: str
    start: int
    end: int
    line: int
    end_line: int
    tokens: int
    label: str
    synthetic: bool = False
    oversize: bool = False  # an atomic unit over the budget (cannot be split further)

    @property
    def flag(self) -> str | None:
        return size_flag(self.tokens)


def _last_line(index: LineIndex, start: int, end: int) -> int:
    """Last line that holds content of [start, end) (a span ending at a line start stops above it)."""
    if end <= start:
        return index.line_of(start)
    return index.line_of(max(end - 1, start))


FIRST_WORDS = 40  # characters of a chunk's first words in a label without a heading


def first_words(text: str, width: int = FIRST_WORDS) -> str:
    """The first words of ``text`` on one line, cut at a word with … past ``width`` characters
    (``textwrap.shorten``; a first word longer than the line is cut inside)."""
    short = textwrap.shorten(text, width, placeholder="…") if text.strip() else ""
    return short if short != "…" else " ".join(text.split())[: width - 1] + "…"


def _file_name(chunk_id: str) -> str:
    """The file name in a chunker id (``/abs/path/story.txt#0-1a2b3c4d``), "" when it has none."""
    source, sep, _ = chunk_id.rpartition("#")
    return Path(source).name if sep and source else ""


def spans_from_chunks(chunks: Iterable[Any], text: str, index: LineIndex | None = None, name: str = "") -> list[ChunkSpan]:
    """Spans from chunker output (objects with index, id, start, end, tokens, breadcrumb, synthetic).

    A chunk under no heading (a novel's first chunk, a note without headings) is labelled with
    the file's ``name`` (by default the one in the chunk's id) and its first words, never with
    the id (an absolute path and a hash)."""
    index = index or LineIndex(text)
    out = []
    for c in chunks:
        meta = getattr(c, "metadata", None) or {}
        label = str(getattr(c, "breadcrumb", "") or getattr(c, "heading", "") or "")
        if not label:
            words = first_words(text[int(c.start):int(c.end)])
            label = " · ".join(part for part in (name or _file_name(str(c.id)), words) if part)
        out.append(
            ChunkSpan(
                index=int(c.index),
                id=str(c.id),
                start=int(c.start),
                end=int(c.end),
                line=index.line_of(int(c.start)),
                end_line=_last_line(index, int(c.start), int(c.end)),
                tokens=int(c.tokens),
                label=label,
                synthetic=bool(getattr(c, "synthetic", False)),
                oversize=bool(meta.get("oversize", False)) if isinstance(meta, dict) else False,
            )
        )
    return out


def spans_from_tags(doc: Any, count_tokens) -> list[ChunkSpan]:
    """Spans of a CtxFST document's own ``<Chunk>`` tags, tokens counted on their content."""
    chunks = list(doc.body_chunks)
    counts = count_tokens([c.content for c in chunks]) if chunks else []
    out = []
    for i, (c, n) in enumerate(zip(chunks, counts)):
        end = c.close.end if c.close else len(doc.text)
        out.append(
            ChunkSpan(
                index=i,
                id=c.id,
                start=c.open.start,
                end=end,
                line=c.open.line,
                end_line=c.close.line if c.close else doc.index.line_count,
                tokens=n,
                label=c.id,
            )
        )
    return out


def size_summary(spans: list[ChunkSpan]) -> dict[str, Any]:
    """Count, min/median/max tokens and how many chunks fall outside the guidelines."""
    if not spans:
        return {"count": 0, "min": 0, "median": 0, "max": 0, "small": 0, "large": 0, "in_target": 0}
    tokens = [s.tokens for s in spans]
    return {
        "count": len(spans),
        "min": min(tokens),
        "median": int(statistics.median(tokens)),
        "max": max(tokens),
        "small": sum(s.flag == "small" for s in spans),
        "large": sum(s.flag == "large" for s in spans),
        "in_target": sum(CHUNK_TOKENS_TARGET[0] <= t <= CHUNK_TOKENS_TARGET[1] for t in tokens),
    }
