"""Words: the token shapes this project counts, matches and compares, each named once.

They differ on purpose — a word count wants ``state-of-the-art`` as one word, a similarity
wants its letter runs, the reference scripts want their exact ASCII pattern — so each shape
has one name and one definition here, and every module that splits text imports it.
"""
from __future__ import annotations

import re
from collections import Counter

from ctxfst_tui.core.text.stems import stem
from ctxfst_tui.core.text.stopwords import ENGLISH_STOPWORDS, REFERENCE_STOPWORDS

# A run of non-space holding a letter or digit (``* * *`` and a lone dash are not words).
WORD = re.compile(r"\S*\w\S*", re.UNICODE)
# Letters and digits only (``graph-aware_retrieval`` -> graph, aware, retrieval).
TERM_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# The reference scripts' token: an ASCII letter then 1+ word-ish characters, bounded by
# (Unicode) word boundaries; profiles/graph conformance depends on it exactly.
REFERENCE_TOKEN = re.compile(r"\b[a-zA-Z][a-zA-Z0-9_-]{1,}\b")
# The reference diagnosis's proxy for a "meaningful word".
REFERENCE_MEANINGFUL_WORD = re.compile(r"\b[a-zA-Z]{3,}\b")
# A word of a model's note: keeps versions, paths and ``C++``/``C#`` whole.
NOTE_WORD = re.compile(r"[\w][\w'.+#/-]*", re.UNICODE)


def words(text: str) -> list[str]:
    return WORD.findall(text)


def count_words(text: str) -> int:
    return len(WORD.findall(text))


def one_line(text: str) -> str:
    """``text`` with every run of white space (line breaks too) turned into one space."""
    return " ".join(text.split())


def reference_terms(text: str) -> list[str]:
    """Lower-case reference tokens without the reference's stop words (profiles and graph)."""
    return [token for token in REFERENCE_TOKEN.findall(text.lower()) if token not in REFERENCE_STOPWORDS]


_TERM_STEMS: dict[str, str | None] = {}  # token -> its stem, None when the token is dropped


def _term_stem(tok: str) -> str | None:
    if len(tok) < 2 or tok.isdigit() or tok in ENGLISH_STOPWORDS:
        return None
    return stem(tok)


def stemmed_terms(text: str, surface: dict[str, dict[str, int]] | None = None) -> tuple[Counter, dict[str, Counter]]:
    """Stemmed term counts of ``text`` and the surface forms of each stem.

    Terms are casefolded letter/digit runs; one-character tokens, numbers and
    :data:`~ctxfst_tui.core.text.stopwords.ENGLISH_STOPWORDS` are dropped. Given ``surface``,
    the forms are added to it (plain dicts, many texts into one) and it is what is returned.
    A token's stem is looked up once per distinct token: most words repeat across chunks.
    """
    counts: dict[str, int] = {}
    forms_of: dict = {} if surface is None else surface
    cache = _TERM_STEMS
    # counted by token first (in order of first appearance, so every dict keeps the order it had)
    for tok, n in Counter(TERM_TOKEN.findall(text.casefold())).items():
        try:
            s = cache[tok]
        except KeyError:
            s = cache[tok] = _term_stem(tok)
        if s is None:
            continue
        counts[s] = counts.get(s, 0) + n
        forms = forms_of.get(s)
        if forms is None:
            forms_of[s] = {tok: n}
        else:
            forms[tok] = forms.get(tok, 0) + n
    if surface is None:
        forms_of = {s: Counter(f) for s, f in forms_of.items()}
    return Counter(counts), forms_of


def note_words(text: str) -> list[str]:
    """The casefolded :data:`NOTE_WORD` words of ``text``, outer dots and apostrophes stripped."""
    return [w.casefold().strip(".'") for w in NOTE_WORD.findall(text)]
