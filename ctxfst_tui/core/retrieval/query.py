"""Queries over an index: full-text (BM25), vector, entity, and their fusion — each result explained.

The entity signal needs no expansion table: the query is matched against every entity's name
and aliases (word-bounded where the script separates words, by substring where it does not —
Chinese, Japanese), the matched entities' chunks are boosted, and one hop of the entity graph
fans out to related entities at a discount. The fused score is a weighted sum of each signal
normalised by its best candidate, so each result can say how much of its score each signal gave.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ctxfst_tui.core.retrieval.analyzer import analyze, has_cjk, query_terms
from ctxfst_tui.core.retrieval.translate import cjk_share, target_language
from ctxfst_tui.core.retrieval.index import CHUNKS, EDGES, ENTITIES, IndexError_, lancedb, read_meta, table_names

MODES = ("bm25", "vector", "entity", "hybrid", "auto")
WEIGHTS = {
    "bm25": {"bm25": 1.0},
    "vector": {"vector": 1.0},
    "entity": {"entity": 1.0},
    "hybrid": {"bm25": 0.5, "vector": 0.5},
    "auto": {"bm25": 0.2, "vector": 0.2, "entity": 0.6},
}
HOP_DISCOUNT = 0.5  # a neighbour entity counts this much of the seed that reached it, times the edge score
ENTITY_SEEDS = 4  # entities whose profile is nearest the query (besides those it names)
SEED_FLOOR = 0.3  # cosine below which a profile is not taken as meant by the query
CANDIDATES = 50  # per signal, before fusion


@dataclass
class EntityHit:
    id: str
    name: str
    matched: str  # the name or alias found in the query, or "" for a graph neighbour
    via: str = ""  # "entity:a -SIMILAR-> entity:b" when reached through an edge
    weight: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "matched": self.matched, "via": self.via,
                "weight": round(self.weight, 4)}


@dataclass
class Result:
    rank: int
    key: str
    chunk_id: str
    document: str
    breadcrumb: str
    score: float
    signals: dict[str, float]  # each signal's share of the score (sums to the score)
    raw: dict[str, float]  # each signal's own normalised value in [0, 1]
    terms: list[str]
    entities: list[EntityHit]
    content: str
    context: str

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "chunk_id": self.chunk_id, "document": self.document,
                "breadcrumb": self.breadcrumb, "score": round(self.score, 4),
                "signals": {k: round(v, 4) for k, v in self.signals.items()},
                "terms": self.terms, "entities": [e.to_json() for e in self.entities],
                "content": self.content, "context": self.context}


@dataclass
class Answer:
    query: str
    mode: str
    translated: str | None
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "translated": self.translated,
                "results": [r.to_json() for r in self.results]}


class QueryError(ValueError):
    """The query cannot be run against this index; the message says why and what to do."""


def _name_pattern(name: str) -> tuple[bool, Any]:
    """(substring?, matcher) for one entity name: CJK names match as substrings, others word-bounded."""
    folded = name.casefold().strip()
    if has_cjk(folded):
        return True, folded
    return False, re.compile(r"(?<![\w])" + re.escape(folded) + r"(?![\w])")


class Searcher:
    """An open index, held in memory for repeated queries (the Retrieval view keeps one)."""

    def __init__(self, uri: str, *, embedder_factory: Callable[[str], Any] | None = None):
        ldb = lancedb()
        try:
            self.db = ldb.connect(uri)
        except Exception as exc:
            raise IndexError_(f"{uri}: cannot open the index: {exc}") from None
        if CHUNKS not in table_names(self.db):
            raise IndexError_(f"{uri}: no index here (run `ctxfst-tui index` first)")
        self.uri = uri
        self.meta = read_meta(self.db) or {}
        self.chunks = self.db.open_table(CHUNKS)
        cols = ["key", "chunk_id", "document", "breadcrumb", "entities", "content", "context"]
        data = self.chunks.to_arrow().select(cols).to_pydict()
        self.rows = {k: {c: data[c][i] for c in cols} for i, k in enumerate(data["key"])}
        self.entities: dict[str, dict[str, Any]] = {}
        if ENTITIES in table_names(self.db):
            ed = self.db.open_table(ENTITIES).to_arrow().select(["id", "name", "aliases", "chunks"]).to_pydict()
            for i, eid in enumerate(ed["id"]):
                self.entities[eid] = {"name": ed["name"][i], "aliases": ed["aliases"][i] or [], "chunks": ed["chunks"][i] or []}
        self.neighbours: dict[str, list[tuple[str, str, float]]] = {}
        if EDGES in table_names(self.db):
            g = self.db.open_table(EDGES).to_arrow().to_pydict()
            for s, t, rel, sc in zip(g["source"], g["target"], g["relation"], g["score"]):
                self.neighbours.setdefault(s, []).append((t, rel, sc))
                self.neighbours.setdefault(t, []).append((s, rel, sc))
        self._patterns = [
            (eid, n, *_name_pattern(n))
            for eid, e in self.entities.items() for n in [e["name"], *e["aliases"]] if isinstance(n, str) and n.strip()
        ]
        # the script the corpus is matched in: its text, or its entity names when those are in
        # another script (career notes in Chinese naming English entities match in English)
        self.cjk_share = min(cjk_share(r["content"] or "" for r in self.rows.values()),
                             cjk_share(e["name"] or "" for e in self.entities.values()) if self.entities else 1.0)
        self._embedder_factory = embedder_factory
        self._embedder: Any = None
        # per query, not per signal: hybrid and auto ask for the same vector twice (chunks, entities)
        self._query_vectors: dict[str, np.ndarray] = {}
        self._entity_table = self.db.open_table(ENTITIES) if ENTITIES in table_names(self.db) else None

    # ------------------------------------------------------------ signals

    @property
    def has_vectors(self) -> bool:
        return bool(self.meta.get("dim")) and self.meta.get("embedder", "none") != "none"

    def embedder(self) -> Any:
        if self._embedder is None:
            if self._embedder_factory is None:
                raise QueryError(f"{self.uri}: vector search needs the index's embedder ({self.meta.get('embedder')})")
            emb = self._embedder_factory(self.meta.get("embedder", ""))
            if emb.name != self.meta.get("embedder"):
                raise QueryError(f"{self.uri} was indexed with {self.meta.get('embedder')}, not {emb.name}: "
                                 f"query with the same embedder or re-index")
            self._embedder = emb
        return self._embedder

    def translation_target(self, query: str) -> str | None:
        """The language to translate ``query`` into before searching, or None (same script)."""
        return target_language(query, self.cjk_share)

    def bm25(self, text: str, limit: int = CANDIDATES) -> dict[str, float]:
        q = analyze(text).strip()
        if not q:
            return {}
        try:
            got = self.chunks.search(q, query_type="fts", fts_columns="fts_text").select(["key"]).limit(limit).to_list()
        except Exception:  # no full-text index (an empty corpus)
            return {}
        return {r["key"]: float(r["_score"]) for r in got}

    def vector(self, text: str, limit: int = CANDIDATES) -> dict[str, float]:
        if not self.has_vectors:
            return {}
        vec = self._query_vector(text)
        got = (self.chunks.search(vec, vector_column_name="vector")
               .distance_type("cosine").select(["key"]).limit(limit).to_list())
        return {r["key"]: max(0.0, 1.0 - float(r["_distance"])) for r in got}

    def _query_vector(self, text: str) -> np.ndarray:
        vec = self._query_vectors.get(text)
        if vec is None:
            if len(self._query_vectors) >= 64:
                self._query_vectors.clear()
            vec = self._query_vectors[text] = np.asarray(self.embedder().embed_query(text), dtype=np.float32)
        return vec

    def match_entities(self, text: str) -> list[EntityHit]:
        folded = text.casefold()
        best: dict[str, EntityHit] = {}
        for eid, name, substring, pat in self._patterns:
            found = (pat in folded) if substring else bool(pat.search(folded))
            if found and (eid not in best or len(name) > len(best[eid].matched)):
                best[eid] = EntityHit(eid, self.entities[eid]["name"], name)
        return list(best.values())

    def nearest_entities(self, text: str) -> list[EntityHit]:
        """Entities whose profile embedding is nearest the query: what it means without naming it."""
        if not self.has_vectors or self._entity_table is None or not self.entities:
            return []  # no entities: no query embedding spent on an empty table
        vec = self._query_vector(text)
        got = (self._entity_table.search(vec, vector_column_name="vector").distance_type("cosine")
               .select(["id"]).limit(ENTITY_SEEDS).to_list())
        out = []
        for r in got:
            sim = 1.0 - float(r["_distance"])
            if sim >= SEED_FLOOR and r["id"] in self.entities:
                out.append(EntityHit(r["id"], self.entities[r["id"]]["name"], "", "profile", sim))
        return out

    def entity(self, text: str) -> tuple[dict[str, float], dict[str, list[EntityHit]]]:
        seeds = self.match_entities(text)
        named = {h.id for h in seeds}
        seeds += [h for h in self.nearest_entities(text) if h.id not in named]
        weights: dict[str, EntityHit] = {h.id: h for h in seeds}
        for h in seeds:
            for other, rel, sc in self.neighbours.get(h.id, []):
                w = HOP_DISCOUNT * h.weight * float(sc)
                if other in self.entities and (other not in weights or weights[other].weight < w):
                    if other in {s.id for s in seeds}:
                        continue
                    weights[other] = EntityHit(other, self.entities[other]["name"], "", f"{h.id} -{rel}-> {other}", w)
        scores: dict[str, float] = {}
        why: dict[str, list[EntityHit]] = {}
        for eid, hit in weights.items():
            # an entity linked from many chunks says less about each of them
            damp = 1.0 / math.log2(2 + len(self.entities[eid]["chunks"]))
            for key in self.entities[eid]["chunks"]:
                if key not in self.rows:
                    continue
                scores[key] = scores.get(key, 0.0) + hit.weight * damp
                why.setdefault(key, []).append(hit)
        for key in scores:
            scores[key] /= math.sqrt(max(1, len(self.rows[key]["entities"] or [])))
        return scores, why

    # ------------------------------------------------------------ fusion

    def search(self, query: str, *, mode: str = "auto", k: int = 5, translated: str | None = None) -> Answer:
        if mode not in MODES:
            raise QueryError(f"unknown mode {mode!r}: use {', '.join(MODES)}")
        if mode == "vector" and not self.has_vectors:
            raise QueryError(f"{self.uri} has no vectors (indexed with --embed none): use bm25, entity or auto")
        t0 = time.perf_counter()
        texts = [query] + ([translated] if translated and translated.strip() != query.strip() else [])
        weights = dict(WEIGHTS[mode])
        if not self.has_vectors:
            weights.pop("vector", None)
        raw: dict[str, dict[str, float]] = {}
        why: dict[str, list[EntityHit]] = {}
        for text in texts:
            if "bm25" in weights:
                _merge(raw.setdefault("bm25", {}), self.bm25(text))
            if "vector" in weights:
                _merge(raw.setdefault("vector", {}), self.vector(text))
            if "entity" in weights:
                got, reasons = self.entity(text)
                _merge(raw.setdefault("entity", {}), got)
                for key, hits in reasons.items():
                    have = {h.id for h in why.get(key, [])}
                    why.setdefault(key, []).extend(h for h in hits if h.id not in have)
        norm = {s: _normalise(v) for s, v in raw.items()}
        active = {s: w for s, w in weights.items() if norm.get(s)}
        total_w = sum(active.values()) or 1.0
        fused: dict[str, float] = {}
        shares: dict[str, dict[str, float]] = {}
        for s, w in active.items():
            for key, v in norm[s].items():
                part = w / total_w * v
                fused[key] = fused.get(key, 0.0) + part
                shares.setdefault(key, {})[s] = part
        order = sorted(fused, key=lambda key: (-fused[key], key))[:k]
        terms = query_terms(" ".join(texts))
        results = []
        for rank, key in enumerate(order, 1):
            row = self.rows[key]
            results.append(Result(
                rank=rank, key=key, chunk_id=row["chunk_id"], document=row["document"], breadcrumb=row["breadcrumb"],
                score=fused[key], signals=shares[key], raw={s: norm[s].get(key, 0.0) for s in active},
                terms=_matched_terms(terms, row), entities=why.get(key, []),
                content=row["content"], context=row["context"],
            ))
        return Answer(query=query, mode=mode, translated=translated, results=results, seconds=time.perf_counter() - t0)

    def explain(self, query: str, key: str, *, mode: str = "auto", translated: str | None = None) -> Result | None:
        """"Why not this one?": the score breakdown of one chunk, wherever it ranked."""
        if key not in self.rows:
            return None
        everything = self.search(query, mode=mode, k=len(self.rows), translated=translated)
        for r in everything.results:
            if r.key == key:
                return r
        row = self.rows[key]
        return Result(rank=0, key=key, chunk_id=row["chunk_id"], document=row["document"], breadcrumb=row["breadcrumb"],
                      score=0.0, signals={}, raw={}, terms=[], entities=[], content=row["content"], context=row["context"])


def _merge(into: dict[str, float], got: dict[str, float]) -> None:
    for k, v in got.items():
        into[k] = max(into.get(k, 0.0), v)


def _normalise(scores: dict[str, float]) -> dict[str, float]:
    top = max(scores.values(), default=0.0)
    return {k: v / top for k, v in scores.items() if v > 0} if top > 0 else {}


def _matched_terms(terms: list[str], row: dict[str, Any]) -> list[str]:
    hay = analyze(" ".join([row["breadcrumb"] or "", row["context"] or "", row["content"] or ""])).casefold()
    return [t for t in terms if t in hay]
