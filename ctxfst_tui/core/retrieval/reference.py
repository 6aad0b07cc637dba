"""The public CtxFST benchmark's two retrieval methods, re-implemented from their description in
``../shared/retrieval/README.md``, so that ``eval`` can print the published numbers beside ours.

- ``reference-tfidf`` ("Pure RAG"): TF-IDF cosine over each chunk's context, content, tags and
  linked entity names, ASCII words only.
- ``reference-entity`` ("CtxFST entity-aware"): TF-IDF over entity profiles picks up to 4 seed
  entities, one hop over the entity graph fans them out, and a chunk's score mixes the baseline,
  the entity coverage and how many of its entities were hit.

Both depend on hand-written Chinese → English expansion tables that belong to the reference's
script, not to us: ``load_expansions`` reads them at run time from a file the user names (the
script itself, parsed without running it, or a YAML/JSON file with ``baseline`` and ``entity``
maps). Without them the methods run with no expansion, which is what they score on their own.
"""
from __future__ import annotations

import ast
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

STOP_WORDS = frozenset(
    "a an and are as at be by for from in is it its of on or that the their this to with".split()
)
ASCII_WORD = re.compile(r"\b[a-zA-Z][a-zA-Z0-9_-]{1,}\b")  # \b on str: a CJK letter next to it is no boundary
SEEDS, SEED_FLOOR, HOP_DECAY = 4, 0.01, 0.65
WEIGHTS = (0.35, 0.55, 0.10)  # baseline, entity coverage, entity density
TABLE_NAMES = {"baseline": "BASELINE_QUERY_EXPANSIONS", "entity": "ENTITY_QUERY_EXPANSIONS"}

Expansion = dict[str, list[str]]
Vector = dict[str, float]


class ExpansionsError(ValueError):
    """The expansions file cannot be used; the message names the file (and line)."""


@dataclass
class Expansions:
    baseline: Expansion = field(default_factory=dict)
    entity: Expansion = field(default_factory=dict)
    source: str = ""  # the file they came from; "" when there are none

    def __bool__(self) -> bool:
        return bool(self.baseline or self.entity)


def _table(value: Any, where: str) -> Expansion:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(w, str) for w in v) for k, v in value.items()
    ):
        raise ExpansionsError(f"{where}: an expansion table maps phrases to lists of words")
    return {k: list(v) for k, v in value.items()}


def load_expansions(path: str | Path) -> Expansions:
    """The two tables from ``path``: a Python file (its two dict literals, read with ``ast``,
    never executed) or a YAML/JSON mapping with ``baseline`` and ``entity`` keys."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpansionsError(f"{path}: cannot read: {exc}") from None
    if path.suffix == ".py":
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError as exc:
            raise ExpansionsError(f"{path}:{exc.lineno}: not Python: {exc.msg}") from None
        found: dict[str, Expansion] = {}
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for key, name in TABLE_NAMES.items():
                        if isinstance(target, ast.Name) and target.id == name and node.value is not None:
                            try:
                                value = ast.literal_eval(node.value)
                            except ValueError:
                                raise ExpansionsError(f"{path}:{node.lineno}: {name} is not a plain literal") from None
                            found[key] = _table(value, f"{path}:{node.lineno}")
        missing = [TABLE_NAMES[k] for k in TABLE_NAMES if k not in found]
        if missing:
            raise ExpansionsError(f"{path}: no {' and no '.join(missing)} found")
        return Expansions(found["baseline"], found["entity"], str(path))
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        line = line + 1 if line is not None else getattr(exc, "lineno", 1)
        raise ExpansionsError(f"{path}:{line}: cannot parse: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict) or not ({"baseline", "entity"} & set(data)):
        raise ExpansionsError(f"{path}: expected a mapping with 'baseline' and/or 'entity' tables")
    return Expansions(_table(data.get("baseline") or {}, f"{path}: baseline"),
                      _table(data.get("entity") or {}, f"{path}: entity"), str(path))


def words(text: str) -> list[str]:
    return [w for w in ASCII_WORD.findall(text.lower()) if w not in STOP_WORDS]


def expand(query: str, table: Expansion) -> str:
    """The query followed by the words of every phrase it contains (case-insensitively)."""
    lowered = query.lower()
    extra = [w for phrase, more in table.items() if phrase.lower() in lowered or phrase in query for w in more]
    return " ".join([query, *extra])


class TfIdf:
    """Smoothed IDF (ln((1 + n) / (1 + df)) + 1) over term frequencies divided by length."""

    def __init__(self, texts: dict[str, str]):
        tokens = {key: words(text) for key, text in texts.items()}
        df: Counter[str] = Counter()
        for ws in tokens.values():
            df.update(set(ws))
        n = len(tokens)
        self.idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
        self.vectors = {key: self.vector(ws) for key, ws in tokens.items()}

    def vector(self, ws: list[str]) -> tuple[Vector, float]:
        counts = Counter(ws)
        total = sum(counts.values()) or 1
        vec = {w: c / total * self.idf.get(w, math.log(2.0)) for w, c in counts.items()}
        return vec, math.sqrt(sum(v * v for v in vec.values()))

    def scores(self, query: str) -> dict[str, float]:
        q, qn = self.vector(words(query))
        out = {}
        for key, (vec, norm) in self.vectors.items():
            out[key] = sum(w * vec.get(t, 0.0) for t, w in q.items()) / (qn * norm) if qn and norm else 0.0
        return out


def _joined(value: Any) -> str:
    return " ".join(str(v) for v in value) if isinstance(value, list) else ""


def chunk_text(chunk: dict[str, Any], names: dict[str, str]) -> str:
    parts = [chunk.get("context", ""), chunk.get("content", ""), _joined(chunk.get("tags", []))]
    parts += [names.get(eid, "") for eid in chunk.get("entities", []) or []]
    return "\n".join(str(p) for p in parts if p)


def profile_text(profile: dict[str, Any]) -> str:
    parts = [profile.get("name", ""), profile.get("type", "")]
    parts += [_joined(profile.get(k, [])) for k in ("aliases", "tags", "keywords", "contexts", "related_entities")]
    parts.append(profile.get("representation", ""))
    return "\n".join(str(p) for p in parts if p)


def _degree_damping(adjacency: dict[str, list], entity: str) -> float:
    return 1.0 / math.log2(2 + len(adjacency.get(entity, [])))


class ReferenceMethods:
    """Both methods over one export (``{"entities", "chunks"}``), its profiles and its graph.
    ``keys`` names each export chunk as the caller's ranking wants it (same order as the chunks)."""

    def __init__(self, export: dict[str, Any], profiles: dict[str, Any], graph: dict[str, Any],
                 expansions: Expansions | None = None, keys: list[str] | None = None):
        self.expansions = expansions or Expansions()
        self.chunks = [c for c in export.get("chunks", []) if isinstance(c, dict) and isinstance(c.get("id"), str)]
        self.keys = keys if keys is not None else [c["id"] for c in self.chunks]
        self.ids = {key: c["id"] for key, c in zip(self.keys, self.chunks)}
        names = {e["id"]: e.get("name", "") for e in export.get("entities", []) if isinstance(e, dict) and "id" in e}
        self.chunk_index = TfIdf({key: chunk_text(c, names) for key, c in zip(self.keys, self.chunks)})
        self.entity_index = TfIdf({p["id"]: profile_text(p) for p in profiles.get("entities", []) if "id" in p})
        self.adjacency: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for edge in graph.get("edges", []):
            score = float(edge.get("score", 0.0))
            self.adjacency[edge["source"]].append((edge["target"], score))
            self.adjacency[edge["target"]].append((edge["source"], score))

    def _order(self, scores: dict[str, float]) -> list[str]:
        """Best first; ties by chunk id, as the reference sorts."""
        return sorted(scores, key=lambda key: (-scores[key], self.ids[key]))

    def baseline_scores(self, query: str) -> dict[str, float]:
        return self.chunk_index.scores(expand(query, self.expansions.baseline))

    def tfidf(self, query: str) -> list[str]:
        return self._order(self.baseline_scores(query))

    def entity_scores(self, query: str) -> dict[str, float]:
        """Seed entities and their one-hop neighbours with their propagated scores."""
        ranked = sorted(self.entity_index.scores(expand(query, self.expansions.entity)).items(),
                        key=lambda item: item[1], reverse=True)
        seeds = {e: s * _degree_damping(self.adjacency, e) for e, s in ranked[:SEEDS] if s > SEED_FLOOR}
        hop: dict[str, float] = {}
        for entity, base in seeds.items():
            for neighbour, edge in self.adjacency.get(entity, []):
                passed = base * edge * HOP_DECAY * _degree_damping(self.adjacency, neighbour)
                if passed > hop.get(neighbour, 0.0):
                    hop[neighbour] = passed
        out = dict(seeds)
        for entity, passed in hop.items():
            out[entity] = max(out.get(entity, 0.0), passed)
        return out

    def entity(self, query: str) -> list[str]:
        baseline = self.baseline_scores(query)
        reached = self.entity_scores(query)
        top_baseline = max(baseline.values(), default=0.0) or 1.0
        top_entity = max(reached.values(), default=0.0) or 1.0
        w_base, w_entity, w_density = WEIGHTS
        scores = {}
        for key, chunk in zip(self.keys, self.chunks):
            linked = chunk.get("entities", []) or []
            coverage = sum(reached.get(e, 0.0) for e in linked) / math.sqrt(len(linked) or 1)
            density = sum(1 for e in linked if e in reached)
            scores[key] = (w_base * baseline.get(key, 0.0) / top_baseline + w_entity * coverage / top_entity
                           + w_density * min(density, 3) / 3.0)
        return self._order(scores)


def for_corpus(corpus: Any, expansions: Expansions | None = None) -> ReferenceMethods:
    """The methods over a loaded corpus, with profiles and graph built as the reference's documented
    pipeline does (export → profiles → graph from the profiles), keyed as the index keys chunks."""
    from ctxfst_tui.core.entities.graph import build_entity_graph
    from ctxfst_tui.core.entities.profiles import build_entity_profiles

    label = str(corpus.root)
    profiles = build_entity_profiles(corpus.export, label) if corpus.export["entities"] else {"entities": []}
    graph = build_entity_graph(profiles, label) if profiles["entities"] else {"edges": []}
    keys = [c.key for c in corpus.chunks]
    return ReferenceMethods(corpus.export, profiles, graph, expansions, keys)
