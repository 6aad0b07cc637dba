"""Words and terms the similarity, size and link checks compare chunks by.

Two measures on purpose: the reference's set of "meaningful words" (kept so its Jaccard findings
match), and stemmed, stop-word-free TF-IDF vectors over every chunk of the workspace, which tell
chunks apart better and say which terms they share. Both are built from :mod:`ctxfst_tui.core.text`.
"""
from __future__ import annotations

from operator import itemgetter

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
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)  # the size of a | b, without building it


class ChunkVectors:
    """TF-IDF of chunk texts (1 + log tf, smoothed idf, L2-normalised) that remembers how each
    stem was written, so shared terms can be shown as the chunks spell them."""

    def __init__(self, texts: list[str]):
        # the forms of every stem over all texts, in order of first appearance (ties of
        # shared_terms go to the first written)
        self.surface: dict[str, dict[str, int]] = {}
        counts = [stemmed_terms(t, self.surface)[0] for t in texts]
        self.tfidf = TfIdf(counts, sublinear=True, normalize=True)
        self.terms: list[set[str]] = self.tfidf.terms
        self._form: dict[str, str] = {}

    def cosine(self, i: int, j: int) -> float:
        return self.tfidf.cosine(i, j)

    def shared_terms(self, i: int, j: int, limit: int = 8) -> list[str]:
        """The shared terms that weigh most in both chunks, as written."""
        return [self._written(t) for t in self.tfidf.shared_terms(i, j, limit)]

    def _written(self, stem: str) -> str:
        """The commonest form of ``stem`` (the first written on a tie), looked up once per stem."""
        form = self._form.get(stem)
        if form is None:
            form = self._form[stem] = max(self.surface[stem].items(), key=itemgetter(1))[0]
        return form

    def candidates(self) -> list[tuple[int, int]]:
        """Pairs worth scoring: all of them for a small workspace, else those sharing a rarer term."""
        return self.tfidf.candidates(ALL_PAIRS_LIMIT, CANDIDATE_MAX_DF)
