"""Id-naming checks: chunk ids outside ``category:topic-name``, and prefixes used only once.

The prefix is the chunk's category (``stats`` counts them), so ids must follow the pattern for
categories to mean anything.
"""
from __future__ import annotations

import re
from collections import Counter

from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis
from ctxfst_tui.core.format.schema import CHUNK_ID


def _suggest_id(chunk_id: str) -> str:
    """A ``category:topic-name`` id close to ``chunk_id``, for the suggestion text."""
    raw = chunk_id.strip().lower()
    if ":" in raw:
        prefix, rest = raw.split(":", 1)
    else:
        parts = re.split(r"[\s_\-./]+", raw, maxsplit=1)
        prefix, rest = (parts[0], parts[1]) if len(parts) == 2 else ("chunk", parts[0])
    prefix = re.sub(r"[^a-z]", "", prefix) or "chunk"
    rest = re.sub(r"[^a-z0-9]+", "-", rest).strip("-") or "topic"
    return f"{prefix}:{rest}"


def id_naming(d: DocumentDiagnosis) -> None:
    """Ids outside ``category:topic-name``, and category prefixes used only once."""
    prefixes: Counter = Counter()
    for c in d.chunks:
        if CHUNK_ID.match(c.id):
            prefixes[c.id.split(":")[0]] += 1
            continue
        d.add("id_naming", "id-format", [c.id],
              "ID format should be 'category:topic-name' (lowercase, kebab-case)",
              f"Rename to follow the pattern, e.g. '{_suggest_id(c.id)}' "
              "(and rename its <Chunk> tag and any dependencies to match).",
              at=d.at(c.entry, "id"))
    if len(prefixes) > 1:
        singles = [p for p, n in prefixes.items() if n == 1]
        if singles and len(singles) < len(prefixes):
            members = [c for c in d.chunks if c.id.split(":")[0] in singles]
            d.add("id_naming", "id-rare-prefix", [c.id for c in members],
                  f"Uncommon category prefixes: {', '.join(singles)}",
                  "Consider grouping related chunks under the same category prefix "
                  "for better organization.", at=d.at(members[0].entry, "id"))
