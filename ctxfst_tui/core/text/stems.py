"""Stems: one light English suffix stripper, so inflected forms of a word count as one term.

Not a Porter stemmer: it only joins the forms a technical text uses side by side
(``deploy``/``deploys``/``deploying``/``deployment``/``deployed``) and leaves short and
non-ASCII words alone, which keeps it predictable for names and other languages.
"""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The stem of a lower-case ``word``: plural, ``-ing``/``-ed``/``-ment``/``-ion`` and a final ``e`` removed."""
    w = word
    if len(w) <= 3 or not w.isascii():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ments", "ment", "ings", "ing", "ions", "ion", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix.startswith("ion") and w[-len(suffix) - 1] not in "ts":
                continue
            w = w[: -len(suffix)]
            if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # running -> run
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def prefix_stem(word: str, length: int = 5) -> str:
    """The first ``length`` characters: the contextualize gate's coarse stem (``deploy``/``deployment`` -> ``deplo``)."""
    return word[:length]
