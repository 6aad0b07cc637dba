"""Words and terms the similarity, size and link checks compare chunks by.

Two measures on purpose: the reference's set of "meaningful words" (kept so its Jaccard findings
match), and stemmed, stop-word-free TF-IDF vectors over every chunk of the workspace, which tell
chunks apart better and say which terms they share. Both are built from :mod:`ctxfst_tui.core.text`.
"""
from __future__ import annotations

from collections import Counter

from ctxfst_tui.core.text.tfidf import TfIdf
from ctxfst_tui.core.text.words import REFERENCE_MEANINGFUL_WORD, stemmed_terms

ALL_PAIRS_LIMIT = 400  # above this many chunks, similarity candidates come from an inverted index
CANDIDATE_MAX_DF = 0.3  # ... using only terms found in at most this share of the chunks


def word_set(text: str) -> set[str]:
    """The reference's words of ``text``: lower-cased runs of 3+ ASCII letters."""
    return set(REFERENCE_MEANINGFUL_WORD.findall(text.lower()))


def jaccard(a: set, b: set) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


class ChunkVectors:
    """TF-IDF of chunk texts (1 + log tf, smoothed idf, L2-normalised) that remembers how each
    stem was written, so shared terms can be shown as the chunks spell them."""

    def __init__(self, texts: list[str]):
        parsed = [stemmed_terms(t) for t in texts]
        self.tfidf = TfIdf([counts for counts, _ in parsed], sublinear=True, normalize=True)
        self.terms: list[set[str]] = self.tfidf.terms
        self.surface: dict[str, Counter] = {}
        for _, surface in parsed:
            for s, c in surface.items():
                forms = self.surface.get(s)
                if forms is None:
                    self.surface[s] = Counter(c)
                else:
                    forms.update(c)

    def cosine(self, i: int, j: int) -> float:
        return self.tfidf.cosine(i, j)

    def shared_terms(self, i: int, j: int, limit: int = 8) -> list[str]:
        """The shared terms that weigh most in both chunks, as written."""
        return [self.surface[t].most_common(1)[0][0] for t in self.tfidf.shared_terms(i, j, limit)]

    def candidates(self) -> list[tuple[int, int]]:
        """Pairs worth scoring: all of them for a small workspace, else those sharing a rarer term."""
        return self.tfidf.candidates(ALL_PAIRS_LIMIT, CANDIDATE_MAX_DF)
