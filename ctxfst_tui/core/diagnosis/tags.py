"""Tag-overlap checks: tags on nearly every chunk, and chunks with the very same tags.

Both defeat filtering by tag, which is what tags are for.
"""
from __future__ import annotations

from collections import Counter

from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis, IndexedChunk

UBIQUITOUS_SHARE = 0.8  # a tag on >= 80% of chunks no longer filters anything


def tag_overlap(d: DocumentDiagnosis) -> None:
    """Tags on nearly every chunk, and chunks with the very same tag set: both defeat filtering."""
    if len(d.chunks) < 2:
        return
    counts: Counter = Counter()
    for c in d.chunks:
        counts.update(list(dict.fromkeys(c.tags)))  # each tag once per chunk, in document order
    threshold = len(d.chunks) * UBIQUITOUS_SHARE
    ubiquitous = [t for t, n in counts.items() if n >= threshold]
    first_tagged = next((c for c in d.chunks if c.tags), d.chunks[0])
    if len(ubiquitous) > 1:
        d.add("tag_overlap", "tags-ubiquitous", [c.id for c in d.chunks],
              f"Tags appear in most chunks, reducing filtering effectiveness: {', '.join(ubiquitous)}",
              "Consider using more specific sub-tags or adding differentiating tags "
              "to enable precise filtering.", at=d.at(first_tagged.entry, "tags"))
    groups: dict[frozenset, list[IndexedChunk]] = {}
    for c in d.chunks:
        groups.setdefault(frozenset(c.tags), []).append(c)
    for tag_set, members in groups.items():
        if len(members) > 1 and tag_set:
            d.add("tag_overlap", "tags-identical", [c.id for c in members],
                  f"Identical tags: {sorted(tag_set)}",
                  "Add differentiating tags to each chunk based on their specific focus "
                  "(e.g., level:beginner vs level:advanced, or use:api vs use:cli).",
                  at=d.at(members[1].entry, "tags"))
