"""TF-IDF vectors and their cosine over a small collection of texts (stdlib, sparse dicts).

One implementation with the two weightings this project needs:

* ``sublinear=True, normalize=True`` (diagnosis): tf = 1 + log(count), vectors L2-normalised
  once, so a cosine is a plain dot product;
* ``sublinear=False, normalize=False`` (the entity graph, as the reference computes it):
  tf = count / length, cosine = dot / (|a| |b|) — the same floats as the reference.

Both use the smoothed idf ``log((1 + n) / (1 + df)) + 1`` and walk the smaller vector of a
pair (the first on ties), which fixes the order of the float sums.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from itertools import combinations
from operator import mul, neg
from typing import Mapping, Sequence


class TfIdf:
    """Vectors of ``term_counts`` (one Counter of terms per text, in a fixed order)."""

    def __init__(self, term_counts: Sequence[Mapping[str, int]], *, sublinear: bool, normalize: bool):
        self.n = len(term_counts)
        self.normalized = normalize
        self.df: Counter = Counter()
        for counts in term_counts:
            self.df.update(counts.keys())
        self.idf = {t: math.log((1 + self.n) / (1 + df)) + 1.0 for t, df in self.df.items()}
        self.terms: list[set[str]] = [set(counts) for counts in term_counts]
        self.vectors: list[dict[str, float]] = []
        self.norms: list[float] = []
        for counts in term_counts:
            if sublinear:
                vec = {t: (1.0 + math.log(c)) * self.idf[t] for t, c in counts.items()}
            else:
                length = sum(counts.values()) or 1
                vec = {t: (c / length) * self.idf[t] for t, c in counts.items()}
            norm = math.sqrt(sum(w * w for w in vec.values()))
            if normalize:
                vec = {t: w / norm for t, w in vec.items()} if norm else {}
                norm = 1.0 if vec else 0.0
            self.vectors.append(vec)
            self.norms.append(norm)

    def cosine(self, i: int, j: int) -> float:
        """Cosine of texts ``i`` and ``j``; 0 when either has no terms."""
        a, b = self.vectors[i], self.vectors[j]
        na, nb = self.norms[i], self.norms[j]
        if len(a) > len(b):
            a, b = b, a
        shared = list(filter(b.__contains__, a))  # in a's order, summed in C in that order
        dot = sum(map(mul, map(a.__getitem__, shared), map(b.__getitem__, shared)))
        if self.normalized:
            return dot
        if na == 0.0 or nb == 0.0:
            return 0.0
        return dot / (na * nb)

    def shared_terms(self, i: int, j: int, limit: int = 8) -> list[str]:
        """The terms of both texts that weigh most in both (ties by term)."""
        a, b = self.vectors[i], self.vectors[j]
        shared = list(filter(b.__contains__, a))
        weights = map(neg, map(mul, map(a.__getitem__, shared), map(b.__getitem__, shared)))
        return [t for _, t in sorted(zip(weights, shared))[:limit]]  # (-weight, term) compared in C

    def candidates(self, limit: int, max_df: float) -> list[tuple[int, int]]:
        """Pairs worth scoring: all of them up to ``limit`` texts, else the pairs sharing a term
        found in at most ``max_df`` of the texts (an inverted index; common terms skipped)."""
        if self.n <= limit:
            return list(combinations(range(self.n), 2))
        postings: dict[str, list[int]] = defaultdict(list)
        for i, vec in enumerate(self.vectors):
            for t in vec:
                postings[t].append(i)
        cap = max(2, int(self.n * max_df))
        pairs: set[tuple[int, int]] = set()
        for ids in postings.values():
            if 2 <= len(ids) <= cap:
                pairs.update(combinations(ids, 2))
        return sorted(pairs)


class CosineMemo:
    """The pair cosines of the last collection scored, keyed by the pair's vectors (their exact
    weights and norms), not by their texts' names: scoring a collection again after one text
    changed recomputes only the pairs whose vectors moved, and every float is the one a full pass
    gives (the same two vectors, walked in the same order). One collection is kept, so memory stays
    that of one pass; a stale or concurrent one only costs recomputation."""

    def __init__(self) -> None:
        self._last: tuple[dict[bytes, int], dict[tuple[int, int], float]] = ({}, {})

    @staticmethod
    def _fingerprint(tfidf: TfIdf, i: int) -> bytes:
        content = repr((tfidf.normalized, tfidf.norms[i], tuple(tfidf.vectors[i].items())))
        return hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def cosines(self, tfidf: TfIdf) -> dict[tuple[int, int], float]:
        """``tfidf.cosine(i, j)`` of every pair ``i < j``."""
        fingerprints = [self._fingerprint(tfidf, i) for i in range(tfidf.n)]
        old_ids, old_scores = self._last
        was = [old_ids.get(f) for f in fingerprints]
        scores: dict[tuple[int, int], float] = {}
        for i in range(tfidf.n):
            wi = was[i]
            for j in range(i + 1, tfidf.n):
                wj = was[j]
                score = old_scores.get((wi, wj)) if wi is not None and wj is not None else None
                scores[(i, j)] = tfidf.cosine(i, j) if score is None else score
        self._last = ({f: i for i, f in enumerate(fingerprints)}, scores)
        return scores
