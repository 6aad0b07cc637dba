"""What the chunk preview shows for a document: its own tags, or the chunker's proposal.

Kept out of the UI so the CLI, the tests and the workbench agree on the spans, and so the
chunker and token caches live as long as the process (re-chunking with a new budget then
costs a fraction of the first run).
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

from ctxfst_tui.core.chunking.spans import ChunkSpan, spans_from_chunks, spans_from_tags
from ctxfst_tui.core.format.document import Document


DEFAULT_BUDGETS = {"tokens": (256, 32), "chars": (1024, 128)}  # (size, overlap): the chunker's defaults
_WHOLE_NUMBER = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Budget:
    unit: str = "tokens"
    size: int = 256
    overlap: int = 32

    @classmethod
    def default(cls, unit: str = "tokens") -> "Budget":
        size, overlap = DEFAULT_BUDGETS.get(unit, DEFAULT_BUDGETS["tokens"])
        return cls(unit, size, overlap)


def size_range() -> tuple[int, int]:
    """The chunk sizes the chunker accepts as they are (it clamps anything else)."""
    from ctxfst_tui.core.chunking.options import MAX_SIZE, MIN_SIZE

    return MIN_SIZE, MAX_SIZE


def parse_budget(unit: str, size_text: str, overlap_text: str) -> tuple[Budget | None, dict[str, str]]:
    """(the budget, None) when both fields hold values the chunker uses unchanged, else
    (None, {"size" | "overlap": a one-line reason with the allowed range}).

    Nothing is rounded, clamped or filtered: ``1.5e3``, ``-5``, ``5`` or an overlap above half the
    size are refused and said so, because the chunker would otherwise quietly use another value."""
    low, high = size_range()
    problems: dict[str, str] = {}
    size: int | None = None
    s, o = size_text.strip(), overlap_text.strip()
    if _WHOLE_NUMBER.fullmatch(s) and low <= int(s) <= high:
        size = int(s)
    else:
        problems["size"] = f"Size must be a whole number from {low} to {high} {unit}, not {s or 'empty'}."
    allowed = f"0 to {size // 2} (half the size)" if size is not None else "0 to half the size"
    if not (_WHOLE_NUMBER.fullmatch(o) and (size is None or int(o) <= size // 2)):
        problems["overlap"] = f"Overlap must be a whole number from {allowed}, not {o or 'empty'}."
    if problems or size is None:
        return None, problems
    return Budget(unit, size, int(o)), {}


class Previewer:
    """Computes preview spans; one instance per app keeps the token-count caches warm."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = None

    def counter(self):
        from ctxfst_tui.core.chunking.tokens import TokenCounter

        with self._lock:
            if self._counter is None:
                self._counter = TokenCounter()
            return self._counter

    def options(self, budget: Budget):
        from ctxfst_tui.core.chunking.options import ChunkOptions

        return ChunkOptions(unit=budget.unit, chunk_size=budget.size, overlap=budget.overlap)

    def chunks(self, text: str, budget: Budget, source: str = ""):
        from ctxfst_tui.core.chunking.chunker import chunk_text

        return chunk_text(text, self.options(budget), source=source)

    def spans(self, doc: Document, budget: Budget | None) -> tuple[list[ChunkSpan], str]:
        """(spans, a line saying what they are). ``budget`` None = the document's own tags if it has any."""
        if not doc.readable:
            return [], "nothing to chunk"
        if budget is None and doc.body_chunks:
            return spans_from_tags(doc, self.counter().count_many), f"current <Chunk> tags ({len(doc.body_chunks)})"
        budget = budget or Budget()
        chunks = self.chunks(doc.text, budget, str(doc.path or ""))
        return spans_from_chunks(chunks, doc.text, doc.index, doc.path.name if doc.path else ""), "chunker · " + self.options(budget).describe()

    def convert(self, path: Path, budget: Budget, target: Path) -> int:
        """Write ``path`` as a CtxFST document at ``target`` with this budget's boundaries; returns chunk count."""
        from ctxfst_tui.core.chunking.convert import convert_checked
        from ctxfst_tui.core.safe_write import write_file

        doc = Document.load(path)
        if not doc.readable:
            raise ValueError(doc.load_findings[0].one_line() if doc.load_findings else f"{path}: unreadable")
        out = convert_checked(doc.text, self.chunks(doc.text, budget, str(path)), target, title_hint=path.stem)
        write_file(target, out.encode("utf-8"))
        return out.count("<Chunk id=")
