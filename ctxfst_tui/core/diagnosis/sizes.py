"""Chunk-size checks: chunks too small to stand alone or too large to retrieve precisely.

Sizes are cl100k tokens (what embedding models see), estimated from words when no tokenizer is
installed; a small chunk is told which neighbour to merge with, a large one where to split.
"""
from __future__ import annotations

import math

from ctxfst_tui.core.diagnosis.contexts import HEADING
from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis, IndexedChunk, WorkspaceIndex
from ctxfst_tui.core.diagnosis.wording import quote_list
from ctxfst_tui.core.format.schema import CHUNK_TOKENS_MAX, CHUNK_TOKENS_MIN, CHUNK_TOKENS_TARGET


def count_tokens(ws: WorkspaceIndex) -> None:
    """Token counts of every chunk body in one batch (one tokenizer load for the workspace)."""
    chunks = [c for c in ws.chunks if c.body is not None and c.content]
    texts = [c.content for c in chunks]
    try:
        from ctxfst_tui.core.chunking.tokens import get_counter

        counts = get_counter().count_many(texts)
    except Exception:  # no tokenizer here: estimate (about 3/4 of a word per token)
        ws.exact_tokens = False
        counts = [round(len(t.split()) * 4 / 3) for t in texts]
    ws.tokens = {c.order: n for c, n in zip(chunks, counts)}


def chunk_size(d: DocumentDiagnosis) -> None:
    """Chunks too small to carry meaning alone, or too large to retrieve precisely (cl100k tokens)."""
    if d.ws is None:
        return
    lo, hi = CHUNK_TOKENS_TARGET
    in_body = [c for c in sorted(d.chunks, key=lambda c: c.body.open.start if c.body else 0) if c.body is not None]
    for k, c in enumerate(in_body):
        n = d.ws.tokens.get(c.order)
        if n is None or not c.content:
            continue
        unit = "tokens" if d.ws.exact_tokens else "tokens (estimated)"
        if n < CHUNK_TOKENS_MIN:
            neighbours = [x for x in (in_body[k - 1] if k else None, in_body[k + 1] if k + 1 < len(in_body) else None) if x]
            best = None
            if neighbours:
                def rank(x: IndexedChunk) -> tuple:
                    return (-d.ws.cosine(c, x), d.ws.tokens.get(x.order, 0))
                best = min(neighbours, key=rank)
            if best is not None:
                together = n + d.ws.tokens.get(best.order, 0)
                how = f"Merge it with the {'previous' if best.body.open.start < c.body.open.start else 'next'} chunk '{best.id}' ({together} {unit.split()[0]} together)"
            else:
                how = "Add the background a reader needs to use it alone"
            d.add("chunk_size", "chunk-small", [c.id],
                  f"Chunk is small ({n} {unit}; aim for {lo}-{hi}): retrieved alone it carries little context",
                  f"{how}, or expand it to {lo}-{hi} tokens.", at=d.body_at(c),
                  tokens=n, merge_with=best.id if best is not None else None)
        elif n > CHUNK_TOKENS_MAX:
            parts = max(2, math.ceil(n / hi))
            headings = [h for h in (HEADING.match(line) for line in c.content.splitlines()[1:]) if h]
            where = (f"at its headings ({quote_list([h.group(1) for h in headings], 4)})" if headings
                     else "at paragraph breaks")
            d.add("chunk_size", "chunk-large", [c.id],
                  f"Chunk is large ({n} {unit}; aim for {lo}-{hi}): one embedding blurs its topics",
                  f"Split it into about {parts} chunks of {lo}-{hi} tokens {where}, each with its own id and context "
                  "(ctxfst-tui chunk can propose the cuts).", at=d.body_at(c), tokens=n)
