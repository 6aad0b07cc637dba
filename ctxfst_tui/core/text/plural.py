"""Counts in messages: "1 chunk", "2 chunks", "1 entity", "3 entities" — written once.

Every count the UI or the CLI prints goes through :func:`count`, so no message says "1 chunks"
or hedges with "chunk(s)".
"""
from __future__ import annotations

IRREGULAR = {"entity": "entities", "summary": "summaries", "fix": "fixes", "match": "matches", "was": "were",
             "has": "have", "is": "are", "this": "these", "child": "children"}


def plural(word: str) -> str:
    """The plural of a lower-case English noun as the messages use them (entity → entities)."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def noun(n: int, word: str, many: str | None = None) -> str:
    """``word`` for one, its plural (or ``many``) for any other count, 0 included."""
    return word if n == 1 else (many or plural(word))


def count(n: int, word: str, many: str | None = None, *, grouped: bool = False) -> str:
    """``"1 chunk"``, ``"0 chunks"``, ``"2 entities"``; ``grouped``: ``"1,234 words"``.

    Only the last word is inflected: ``count(2, "model call")`` is ``"2 model calls"``.
    """
    head, _, last = word.rpartition(" ")
    inflected = (head + " " if head else "") + noun(n, last, many)
    return f"{n:,} {inflected}" if grouped else f"{n} {inflected}"
