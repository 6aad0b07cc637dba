"""The full-text analyzer: words for scripts with spaces, overlapping bigrams for scripts without.

LanceDB's tokenizer splits on spaces and punctuation, so a Chinese or Japanese run would be one
long token that no query matches. Both the indexed text and the query go through
:func:`analyze` first: CJK runs become overlapping character bigrams (the CJK analyzer of
Lucene does the same), a lone CJK character stays a token, everything else is left to
LanceDB's own lower-casing and stemming.
"""
from __future__ import annotations

import re

from ctxfst_tui.core.text.stopwords import ENGLISH_STOPWORDS

# Han, Hiragana, Katakana, Hangul, CJK punctuation is not included (it separates runs)
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
CJK_RUN = re.compile(f"[{_CJK}]+")


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join(run[i:i + 2] for i in range(len(run) - 1))


def analyze(text: str) -> str:
    """Text as the full-text index stores it (and as a query is matched against it)."""
    return CJK_RUN.sub(lambda m: f" {_bigrams(m.group(0))} ", text)


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query after analysis, lower-cased, in order, stop words left out
    (what "matched terms" lists)."""
    seen, out = set(ENGLISH_STOPWORDS), []
    for term in analyze(text).split():
        for part in re.findall(rf"[^\W_]+|[{_CJK}]+", term):
            t = part.casefold()
            if t not in seen:
                seen.add(t)
                out.append(t)
    return out
