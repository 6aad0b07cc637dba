"""Semantic-similarity checks: chunk pairs retrieval cannot tell apart, across the workspace.

A pair is similar by the reference's word Jaccard or by TF-IDF cosine; each document of the
pair reports it at its own chunk. The reference scores every pair of a document; here two exact
similarity joins (:mod:`ctxfst_tui.core.text.joins`) find the same pairs while scoring only those
that share a rare term. Past ``EXACT_LIMIT`` chunks even those approach all pairs (chunks of one
field share most words), so candidates come from blocking on each chunk's rarest terms: every
near-duplicate is still found, and a workspace of 20,000 chunks is not 200 million comparisons.
"""
from __future__ import annotations

from dataclasses import dataclass

from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis, IndexedChunk, WorkspaceIndex
from ctxfst_tui.core.diagnosis.terms import ChunkVectors, jaccard, word_set
from ctxfst_tui.core.text.joins import cosine_pairs, jaccard_pairs, rare_term_neighbours

SIMILARITY_THRESHOLD = 0.6  # the reference's Jaccard of context+content word sets
COSINE_THRESHOLD = 0.5  # TF-IDF cosine of context+content (stemmed, stopwords removed)
NEAR_DUPLICATE_COSINE = 0.9
EXACT_LIMIT = 1_000  # up to this many chunks every pair above a threshold is found; above, by blocking


@dataclass
class SimilarPair:
    """Two chunks retrieval may confuse, with both scores and the terms they share (as written)."""

    a: IndexedChunk
    b: IndexedChunk
    cosine: float
    jaccard: float
    terms: list[str]


def similarity(ws: WorkspaceIndex) -> None:
    """Every pair of the workspace at or above either threshold, scored once (in chunk order)."""
    chunks = ws.chunks
    texts = [c.context + "\n" + c.content for c in chunks]
    ws.tfidf = tf = ChunkVectors(texts)
    words = [word_set(t.replace("\n", " ")) for t in texts]
    if len(chunks) <= EXACT_LIMIT:
        pairs = cosine_pairs(tf.tfidf.vectors, COSINE_THRESHOLD) | jaccard_pairs(words, SIMILARITY_THRESHOLD)
    else:  # exact joins approach all pairs when chunks share a vocabulary: block on rare terms
        pairs = rare_term_neighbours(tf.tfidf.vectors)
    for i, j in sorted(pairs):
        if chunks[i].doc == chunks[j].doc and chunks[i].id == chunks[j].id:
            continue  # one id twice in a document: validation reports it
        cos = tf.cosine(i, j)
        a, b = words[i], words[j]
        if cos < COSINE_THRESHOLD and (not a or not b or min(len(a), len(b)) / max(len(a), len(b)) < SIMILARITY_THRESHOLD):
            continue  # a Jaccard is at most the smaller set over the larger: neither threshold is reached
        jac = jaccard(a, b)
        if cos >= COSINE_THRESHOLD or jac >= SIMILARITY_THRESHOLD:
            pair = SimilarPair(chunks[i], chunks[j], cos, jac, tf.shared_terms(i, j))
            ws.similar_pairs.append(pair)
            for k in dict.fromkeys((pair.a.doc, pair.b.doc)):
                ws.pairs_of.setdefault(k, []).append(pair)


def semantic_similarity(d: DocumentDiagnosis) -> None:
    """Chunk pairs that retrieval cannot tell apart: the reference's word Jaccard, or TF-IDF cosine."""
    for pair in d.ws.pairs_of.get(d.number, []) if d.ws else []:
        a, b = pair.a, pair.b
        here = b if b.doc == d.number else a
        other = a if here is b else b
        cross = a.doc != b.doc
        score = max(pair.cosine, pair.jaccard)
        near = pair.cosine >= NEAR_DUPLICATE_COSINE
        terms = ", ".join(pair.terms) if pair.terms else "none"
        where = f" (in {d.ws.labels[other.doc]})" if cross else ""
        suggestion = (f"Differentiate contexts: emphasize what makes '{a.id}' unique vs '{b.id}'{where}. "
                      "Consider different use cases or examples.")
        if near:
            suggestion += " They are near-duplicates: if they say the same thing, keep one and delete the other."
        d.add("semantic_similarity", "similar-chunks", [a.id, b.id],
              f"Chunks may confuse retrieval (similarity: {score:.0%}; TF-IDF cosine {pair.cosine:.2f}, "
              f"word overlap {pair.jaccard:.0%}){where}. Shared distinctive terms: {terms}",
              suggestion, at=d.at(here.entry, "context"),
              cosine=round(pair.cosine, 4), jaccard=round(pair.jaccard, 4), shared_terms=list(pair.terms),
              files=[d.ws.labels[a.doc], d.ws.labels[b.doc]] if cross else None)
