"""Words and terms the similarity, size and link checks compare chunks by.

Two measures on purpose: the reference's set of "meaningful words" (kept so its Jaccard findings
match), and stemmed, stop-word-free TF-IDF vectors over every chunk of the workspace, which tell
chunks apart better and say which terms they share.
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from functools import lru_cache
from itertools import combinations

WORD = re.compile(r"\b[a-zA-Z]{3,}\b")  # the reference's proxy for "meaningful word"
ALL_PAIRS_LIMIT = 400  # above this many chunks, similarity candidates come from an inverted index
CANDIDATE_MAX_DF = 0.3  # ... using only terms found in at most this share of the chunks


def word_set(text: str) -> set[str]:
    """The reference's words of ``text``: lower-cased runs of 3+ ASCII letters."""
    return set(WORD.findall(text.lower()))


def jaccard(a: set, b: set) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


STOPWORDS = frozenset("""
a about above after again against all almost also although always am among an and another any anyone
anything are around as at be became because been before being below between both but by can cannot
could did do does doing done down during each either else enough etc even ever every few for from
further get gets got had has have having he her here hers him his how however i if in into is it its
itself just least less let like made make makes many may me might more most much must my near need
needs neither never no nor not now of off often on once one only onto or other others our ours out
over own per perhaps quite rather really said same say says see seen several shall she should since
so some something still such than that the their theirs them then there these they thing things this
those though through thus to too toward under until up upon us use used uses using very via was way
we well were what whatever when where whether which while who whom whose why will with within without
would yet you your yours
""".split())
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A small suffix stripper, enough to join 'deploy/deploys/deploying/deployment/deployed'."""
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


def stemmed_terms(text: str) -> tuple[Counter, dict[str, Counter]]:
    """Stemmed term counts of ``text`` (stopwords and 1-letter tokens dropped) and their surface forms."""
    counts: Counter = Counter()
    surface: dict[str, Counter] = {}
    for tok in _TOKEN.findall(text.casefold()):
        if len(tok) < 2 or tok.isdigit() or tok in STOPWORDS:
            continue
        s = stem(tok)
        counts[s] += 1
        surface.setdefault(s, Counter())[tok] += 1
    return counts, surface


class TfIdf:
    """L2-normalised TF-IDF vectors (sublinear tf, smoothed idf) over a list of texts."""

    def __init__(self, texts: list[str]):
        parsed = [stemmed_terms(t) for t in texts]
        self.n = len(texts)
        self.df: Counter = Counter()
        for counts, _ in parsed:
            self.df.update(counts.keys())
        self.surface: dict[str, Counter] = {}
        self.vectors: list[dict[str, float]] = []
        self.terms: list[set[str]] = [set(counts) for counts, _ in parsed]
        for counts, surface in parsed:
            for s, c in surface.items():
                self.surface.setdefault(s, Counter()).update(c)
            vec = {t: (1.0 + math.log(c)) * (math.log((1 + self.n) / (1 + self.df[t])) + 1.0) for t, c in counts.items()}
            norm = math.sqrt(sum(w * w for w in vec.values()))
            self.vectors.append({t: w / norm for t, w in vec.items()} if norm else {})

    def cosine(self, i: int, j: int) -> float:
        a, b = self.vectors[i], self.vectors[j]
        if len(a) > len(b):
            a, b = b, a
        return sum(w * b[t] for t, w in a.items() if t in b)

    def shared_terms(self, i: int, j: int, limit: int = 8) -> list[str]:
        """The shared terms that weigh most in both chunks, as written."""
        a, b = self.vectors[i], self.vectors[j]
        shared = sorted((t for t in a if t in b), key=lambda t: (-a[t] * b[t], t))[:limit]
        return [self.surface[t].most_common(1)[0][0] for t in shared]

    def candidates(self, limit: int = ALL_PAIRS_LIMIT) -> list[tuple[int, int]]:
        """Pairs worth scoring: all of them for a small workspace, else those sharing a rarer term."""
        if self.n <= limit:
            return list(combinations(range(self.n), 2))
        postings: dict[str, list[int]] = defaultdict(list)
        for i, vec in enumerate(self.vectors):
            for t in vec:
                postings[t].append(i)
        cap = max(2, int(self.n * CANDIDATE_MAX_DF))
        pairs: set[tuple[int, int]] = set()
        for ids in postings.values():
            if 2 <= len(ids) <= cap:
                pairs.update(combinations(ids, 2))
        return sorted(pairs)
