"""The chunker's options: units, budgets, modes and what gets embedded, checked on creation."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxfst_tui.core.chunking.tokens import DEFAULT_ENCODING

__all__ = ["ChunkOptions", "UNITS", "MODES", "EMBEDS", "MIN_SIZE", "MAX_SIZE"]

UNITS = ("chars", "tokens")
MODES = ("auto", "markdown", "text", "pdf")
EMBEDS = ("full", "context", "content")
MIN_SIZE, MAX_SIZE = 32, 200_000
_DEFAULTS = {"chars": (1024, 128), "tokens": (256, 32)}


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
