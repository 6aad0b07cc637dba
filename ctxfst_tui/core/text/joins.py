"""Similarity joins: every pair of texts above a cosine or Jaccard threshold, without scoring every pair.

Both use prefix filtering (Bayardo et al., "Scaling up all pairs similarity search", 2007): terms
are ordered rarest first; each text indexes only its *prefix*, the rare terms that hold enough of
its weight that a pair sharing none of them cannot reach the threshold. Two texts are scored only
when their prefixes share a term, so the work follows the rare terms, not the square of the count.
The joins are exact: they return every pair at or above the threshold (a small float margin lets
a few just below it through; callers score the pairs they get with their own measure).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Hashable, Mapping, Sequence

MARGIN = 1e-6  # relative slack on thresholds, so float rounding never loses a pair


def _rarest_first(items: Sequence[Sequence[Hashable]] | Sequence[Mapping]) -> dict:
    df: Counter = Counter()
    for x in items:
        df.update(x)
    return {t: k for k, t in enumerate(sorted(df, key=lambda t: (df[t], str(t))))}


def cosine_pairs(vectors: Sequence[Mapping[str, float]], threshold: float) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of L2-normalised sparse vectors whose dot product is >= ``threshold``.

    A vector's suffix (its commonest terms) has norm < threshold, so by Cauchy-Schwarz a pair that
    shares no prefix term has a dot product below the threshold.
    """
    bound = threshold * (1 - MARGIN)
    rank = _rarest_first(vectors)
    top: dict[str, float] = defaultdict(float)  # a term's largest weight in any vector
    for vec in vectors:
        for t, w in vec.items():
            if w > top[t]:
                top[t] = w
    index: dict[str, list[tuple[int, float]]] = defaultdict(list)
    rest_of: dict[int, tuple[int, float]] = {}  # rank where the suffix starts, bound on its dot products
    out: set[tuple[int, int]] = set()
    for i, vec in enumerate(vectors):
        if not vec:
            continue
        terms = sorted(vec, key=rank.__getitem__)
        k, sq, mw, rest = len(terms), 0.0, 0.0, 0.0
        while k > 1:
            w = vec[terms[k - 1]]
            nsq, nmw = sq + w * w, mw + w * top[terms[k - 1]]
            reach = min(math.sqrt(nsq), nmw)  # Cauchy-Schwarz, or each term at its largest weight
            if reach >= bound:
                break
            k, sq, mw, rest = k - 1, nsq, nmw, reach
        cut = rank[terms[k]] if k < len(terms) else len(rank)
        acc: dict[int, float] = defaultdict(float)
        for t in terms[:k]:
            w = vec[t]
            for j, wj in index[t]:
                acc[j] += w * wj
        for j, partial in acc.items():
            cut_j, rest_j = rest_of[j]
            # terms outside both prefixes lie in the suffix of the one cut earlier
            if partial + (rest if cut <= cut_j else rest_j) < bound:
                continue
            other = vectors[j]
            a, b = (vec, other) if len(vec) <= len(other) else (other, vec)
            if sum(w * b[t] for t, w in a.items() if t in b) >= bound:
                out.add((j, i))
        for t in terms[:k]:
            index[t].append((i, vec[t]))
        rest_of[i] = (cut, rest)
    return out


def jaccard_pairs(sets: Sequence[set], threshold: float) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of sets whose Jaccard index is >= ``threshold`` (empty sets never pair).

    Two sets with Jaccard >= t share at least ceil(t * |x|) items, so they share one of the
    ``|x| - ceil(t * |x|) + 1`` rarest items of each; sizes further than a factor t apart cannot pair.
    """
    t = threshold * (1 - MARGIN)
    rank = _rarest_first(sets)
    index: dict[Hashable, list[int]] = defaultdict(list)
    out: set[tuple[int, int]] = set()
    for i, s in enumerate(sets):
        if not s:
            continue
        items = sorted(s, key=rank.__getitem__)
        n = len(items)
        prefix = items[: n - math.ceil(t * n) + 1]
        seen: set[int] = set()
        for x in prefix:
            for j in index[x]:
                if j in seen:
                    continue
                seen.add(j)
                m = len(sets[j])
                if min(n, m) < t * max(n, m):
                    continue
                inter = len(s & sets[j])
                if inter >= t * (n + m - inter):
                    out.add((j, i))
        for x in prefix:
            index[x].append(i)
    return out


def rare_term_neighbours(vectors: Sequence[Mapping[str, float]], per_text: int = 12, max_df: int = 100,
                         k: int = 10) -> set[tuple[int, int]]:
    """Candidate pairs ``(i, j)``, ``i < j``, for collections too large for an exact join (blocking).

    Each text is blocked by its ``per_text`` rarest terms found in 2 to ``max_df`` texts; of the
    earlier texts sharing a block it keeps the ``k`` with the largest weight on the shared blocks.
    Near-duplicates share many rare terms, so they are found; pairs alike only in common words may
    not be. Work and memory grow with the number of texts, not its square.
    """
    import numpy as np  # here, not at the top: only collections too large for an exact join need it

    df: Counter = Counter()
    for v in vectors:
        df.update(v)
    # the block terms ranked once, rarest first (ties by term), instead of a sort key per text
    rank = {t: r for r, t in enumerate(sorted((t for t, n in df.items() if 2 <= n <= max_df), key=lambda t: (df[t], t)))}
    blocks_of = [sorted((t for t in vec if t in rank), key=rank.__getitem__)[:per_text] for vec in vectors]
    # each block's texts (ascending) and weights as arrays: text i meets the texts before it
    # in one slice per block, and numpy adds their products in the order a dict would
    ids: dict[str, list[int]] = defaultdict(list)
    weights: dict[str, list[float]] = defaultdict(list)
    for i, blocks in enumerate(blocks_of):
        vec = vectors[i]
        for t in blocks:
            ids[t].append(i)
            weights[t].append(vec[t])
    id_arr = {t: np.array(v, dtype=np.int64) for t, v in ids.items()}
    w_arr = {t: np.array(v, dtype=np.float64) for t, v in weights.items()}
    seen: Counter = Counter()  # texts so far in each block
    out: set[tuple[int, int]] = set()
    for i, blocks in enumerate(blocks_of):
        vec = vectors[i]
        js, ws = [], []
        for t in blocks:
            p = seen[t]
            seen[t] = p + 1
            if p:
                js.append(id_arr[t][:p])
                ws.append(w_arr[t][:p] * vec[t])
        if not js:
            continue
        # per earlier text, the sum of its products in block order (bincount adds in input order)
        cand, where = np.unique(np.concatenate(js), return_inverse=True)
        if len(cand) > k:  # the k largest weights, ties by index
            acc = np.bincount(where, weights=np.concatenate(ws))
            cand = cand[np.lexsort((cand, -acc))[:k]]
        out.update((j, i) for j in cand.tolist())
    return out
