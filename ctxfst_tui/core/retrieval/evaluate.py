"""Scoring retrieval against a queries file: Hit@k, relevant recovered, Recall@k, MRR, nDCG@k.

A query file is the reference benchmark's ``queries.yaml`` (``queries: [{id, query,
expected_entities}]``: a chunk is relevant when it links one of the expected entities — the
reference's definition) or the stricter form with ``expected_chunks: [chunk ids]``. Ranks are
looked at ``DEPTH`` deep, so a query that misses the top k still shows where its first relevant
chunk came (MRR is over that depth too).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from ctxfst_tui.core.retrieval.query import Searcher

DEPTH = 20
OUR_METHODS = {"bm25": "bm25", "vector": "vector", "entity": "entity", "hybrid": "hybrid", "default": "auto"}


class QueriesError(ValueError):
    """The queries file cannot be used; the message names the file and the line."""


@dataclass
class EvalQuery:
    id: str
    query: str
    expected_entities: list[str] = field(default_factory=list)
    expected_chunks: list[str] = field(default_factory=list)
    line: int = 0

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "query": self.query}
        if self.expected_entities:
            out["expected_entities"] = list(self.expected_entities)
        if self.expected_chunks:
            out["expected_chunks"] = list(self.expected_chunks)
        return out


def load_queries(path: str | Path) -> list[EvalQuery]:
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise QueriesError(f"{path}: cannot read: {exc}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise QueriesError(f"{path}{where}: not YAML: {getattr(exc, 'problem', exc)}") from None
    items = data.get("queries") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise QueriesError(f"{path}:1: expected a 'queries' list")
    lines = _item_lines(node)
    out, seen = [], set()
    for i, item in enumerate(items):
        line = lines[i] if i < len(lines) else 1
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
            raise QueriesError(f"{path}:{line}: each query needs a 'query' text")
        qid = str(item.get("id") or f"q{i + 1}")
        if qid in seen:
            raise QueriesError(f"{path}:{line}: query id {qid!r} appears twice")
        seen.add(qid)
        ents, chunks = item.get("expected_entities") or [], item.get("expected_chunks") or []
        if not isinstance(ents, list) or not isinstance(chunks, list) or not (ents or chunks):
            raise QueriesError(f"{path}:{line}: query {qid!r} needs expected_entities or expected_chunks (a list)")
        out.append(EvalQuery(qid, item["query"], [str(e) for e in ents], [str(c) for c in chunks], line))
    return out


def _item_lines(node: Any) -> list[int]:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if getattr(k, "value", None) == "queries":
                node = v
                break
    if isinstance(node, yaml.SequenceNode):
        return [n.start_mark.line + 1 for n in node.value]
    return []


def relevant_keys(searcher: Searcher, q: EvalQuery) -> set[str]:
    """The chunks that answer ``q``: its expected chunks (by id or key) when given, else the chunks
    linking one of its expected entities."""
    if q.expected_chunks:
        want = set(q.expected_chunks)
        return {k for k, r in searcher.rows.items() if k in want or r["chunk_id"] in want}
    want = set(q.expected_entities)
    return {k for k, r in searcher.rows.items() if want & set(r["entities"] or [])}


@dataclass
class QueryScore:
    id: str
    hit: bool
    first_rank: int | None  # 1-based, within DEPTH; None: no relevant chunk that deep
    recovered: int
    relevant: int
    top: list[str]  # chunk ids of the top k

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "hit": self.hit, "first_rank": self.first_rank, "recovered": self.recovered,
                "relevant": self.relevant, "top": self.top}


@dataclass
class MethodScore:
    name: str
    k: int
    per_query: list[QueryScore] = field(default_factory=list)
    recall: float = 0.0
    mrr: float = 0.0
    ndcg: float = 0.0

    @property
    def hits(self) -> int:
        return sum(q.hit for q in self.per_query)

    @property
    def recovered(self) -> int:
        return sum(q.recovered for q in self.per_query)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "hits": self.hits, "recovered": self.recovered, "recall": round(self.recall, 4),
                "mrr": round(self.mrr, 4), "ndcg": round(self.ndcg, 4), "per_query": [q.to_json() for q in self.per_query]}


Ranker = Callable[[EvalQuery], list[str]]  # keys, best first


def score_method(name: str, ranker: Ranker, searcher: Searcher, queries: list[EvalQuery], k: int) -> MethodScore:
    out = MethodScore(name, k)
    recall = mrr = ndcg = 0.0
    for q in queries:
        rel = relevant_keys(searcher, q)
        ranked = ranker(q)[:DEPTH]
        flags = [key in rel for key in ranked]
        first = next((i + 1 for i, f in enumerate(flags) if f), None)
        got = sum(flags[:k])
        out.per_query.append(QueryScore(q.id, got > 0, first, got, len(rel), [searcher.rows[key]["chunk_id"] for key in ranked[:k]]))
        recall += got / len(rel) if rel else 0.0
        mrr += 1.0 / first if first else 0.0
        dcg = sum(1.0 / math.log2(i + 2) for i, f in enumerate(flags[:k]) if f)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), k)))
        ndcg += dcg / ideal if ideal else 0.0
    n = len(queries) or 1
    out.recall, out.mrr, out.ndcg = recall / n, mrr / n, ndcg / n
    return out


def our_ranker(searcher: Searcher, mode: str, translations: dict[str, str | None]) -> Ranker:
    def rank(q: EvalQuery) -> list[str]:
        return [r.key for r in searcher.search(q.query, mode=mode, k=DEPTH, translated=translations.get(q.id)).results]

    return rank
