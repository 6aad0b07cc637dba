"""Entity graph: entity -> entity edges derived from an export or from profiles.

Reproduces the output of the CtxFST reference ``build_entity_graph.py``:
SIMILAR edges from TF-IDF cosine similarity of entity representations (top-k
neighbours per entity above a minimum score), REQUIRES / LEADS_TO edges
inferred from world-model pre/postconditions, and optional hand-written extra
edges.  The result is a plain JSON-able dict (the entity-graph.json object);
``to_networkx`` turns it into a graph the workbench can query and
``write_graphml`` exports it for other tools.
"""

from __future__ import annotations

import copy
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable
from os import PathLike
from typing import TYPE_CHECKING, Any

from ctxfst_tui.core.entities.profiles import (
    check_export,
    co_mentioned_entities,
    collect_mentions,
    index_entities,
    truncate_words,
)
from ctxfst_tui.core.format.schema import EDGE_RELATIONS, WORLD_MODEL_FIELDS
from ctxfst_tui.core.text.tfidf import CosineMemo, TfIdf
from ctxfst_tui.core.text.words import reference_terms

if TYPE_CHECKING:  # networkx is imported by the two functions that use it (a CLI call need not load it)
    import networkx as nx

__all__ = [
    "DEFAULT_MIN_SCORE",
    "DEFAULT_MODE",
    "DEFAULT_TOP_K",
    "GRAPH_MODES",
    "GraphInputError",
    "build_entity_graph",
    "detect_input_type",
    "dumps",
    "infer_operational_edges",
    "to_networkx",
    "validate_extra_edges",
    "write_graphml",
]

GRAPH_MODES = ("contextual", "metadata")
DEFAULT_MODE = "contextual"
DEFAULT_TOP_K = 3
DEFAULT_MIN_SCORE = 0.15
SCORE_DECIMALS = 4

_log = logging.getLogger(__name__)
# The index rebuilds the graph after every edit: pairs of unchanged profiles keep their cosine.
_COSINES = CosineMemo()

WarningSink = Callable[[str], None]


class GraphInputError(ValueError):
    """The input, an option or the extra edges are unusable; the message is one line."""


# ---------------------------------------------------------------- input kinds


def detect_input_type(data: Any) -> str:
    """Return "export" (has a ``chunks`` list) or "profiles", as the reference decides."""
    if not isinstance(data, dict):
        raise GraphInputError("input root must be a JSON object")
    if not isinstance(data.get("entities", []), list):
        raise GraphInputError("input JSON must contain a list field 'entities'")
    return "export" if isinstance(data.get("chunks"), list) else "profiles"


def _metadata_text(entity: dict[str, Any]) -> str:
    """Representation from canonical identity only (name, type, aliases)."""
    lines = [f"name {entity.get('name', '')}", f"type {entity.get('type', '')}"]
    aliases = entity.get("aliases", [])
    if isinstance(aliases, list) and aliases:
        lines.append("aliases " + " ".join(str(alias) for alias in aliases))
    return "\n".join(lines)


def _contextual_text(
    entity: dict[str, Any],
    mentions: list[dict[str, Any]],
    entities_by_id: dict[str, dict[str, Any]],
) -> str:
    """Identity plus the tags/context/content of each distinct mentioning chunk."""
    lines = [_metadata_text(entity)]
    seen_chunk_keys: set[Any] = set()
    related_names: set[str] = set()
    for chunk in mentions:
        chunk_key = _hashable(chunk.get("id", ""))
        if chunk_key in seen_chunk_keys:
            continue
        seen_chunk_keys.add(chunk_key)

        tags = chunk.get("tags", [])
        if isinstance(tags, list) and tags:
            lines.append("tags " + " ".join(str(tag) for tag in tags))
        context = chunk.get("context", "")
        if context:
            lines.append("context " + str(context))
        content = chunk.get("content", "")
        excerpt = truncate_words(content) if isinstance(content, str) else ""
        if excerpt:
            lines.append("content " + excerpt)
        for other in co_mentioned_entities(entity["id"], chunk, entities_by_id):
            related_names.add(str(other.get("name", other["id"])))
    if related_names:
        lines.append("related " + " ".join(sorted(related_names)))
    return "\n".join(lines)


def _hashable(value: Any) -> Any:
    """Dedup key for chunk ids of any JSON type."""
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _node(entity: dict[str, Any], mention_count: Any, chunk_ids: list[str]) -> dict[str, Any]:
    """A graph node in the reference's key order, world-model fields passed through."""
    node: dict[str, Any] = {
        "id": entity["id"],
        "name": copy.deepcopy(entity.get("name", "")),
        "type": copy.deepcopy(entity.get("type", "")),
        "aliases": copy.deepcopy(entity.get("aliases", [])),
        "mention_count": copy.deepcopy(mention_count),
        "chunk_ids": chunk_ids,
    }
    for field_name in WORLD_MODEL_FIELDS:
        if field_name in entity:
            node[field_name] = copy.deepcopy(entity[field_name])
    return node


def _graph_parts_from_export(data: dict[str, Any], mode: str) -> dict[str, Any]:
    """Representations, mention sets, nodes and world-model entities of a chunks.json."""
    try:
        entities, chunks = check_export(data)
    except ValueError as exc:
        raise GraphInputError(str(exc)) from None
    entities_by_id = index_entities(entities)
    mentions, dangling = collect_mentions(chunks, entities_by_id)

    texts: dict[str, str] = {}
    chunk_id_sets: dict[str, set[str]] = {}
    for entity_id, entity in entities_by_id.items():
        entity_mentions = mentions.get(entity_id, [])
        if mode == "metadata":
            texts[entity_id] = _metadata_text(entity)
        else:
            texts[entity_id] = _contextual_text(entity, entity_mentions, entities_by_id)
        chunk_id_sets[entity_id] = {
            chunk["id"]
            for chunk in entity_mentions
            if isinstance(chunk.get("id"), str) and chunk["id"]
        }

    nodes = []
    for entity_id in sorted(entities_by_id):
        chunk_ids = sorted(chunk_id_sets[entity_id])
        nodes.append(_node(entities_by_id[entity_id], len(chunk_ids), chunk_ids))
    return {
        "input_type": "ctxfst-export",
        "texts": texts,
        "chunk_id_sets": chunk_id_sets,
        "nodes": nodes,
        "world_model_entities": entities_by_id,
        "dangling": dangling,
    }


def _graph_parts_from_profiles(data: dict[str, Any], mode: str) -> dict[str, Any]:
    """Representations, mention sets, nodes and world-model entities of an entity-profiles.json."""
    profiles = data.get("entities", [])
    for position, profile in enumerate(profiles):
        if not isinstance(profile, dict):
            raise GraphInputError(f"profiles entities[{position}] is not an object")

    texts: dict[str, str] = {}
    chunk_id_sets: dict[str, set[str]] = {}
    nodes = []
    for profile in profiles:
        entity_id = profile.get("id")
        if not isinstance(entity_id, str) or not entity_id:
            continue
        mentioned = profile.get("mentioned_chunks", [])
        if not isinstance(mentioned, list):
            mentioned = []
        # A list, not a set: the profile's repeats are kept, as in the reference.
        chunk_ids = sorted(c for c in mentioned if isinstance(c, str) and c)
        chunk_id_sets[entity_id] = set(chunk_ids)
        stored_text = str(profile.get("representation", "")).strip()
        if mode == "metadata" or not stored_text:
            texts[entity_id] = _metadata_text(profile)
        else:
            texts[entity_id] = stored_text
        nodes.append(_node(profile, profile.get("mention_count", len(chunk_ids)), chunk_ids))
    nodes.sort(key=lambda node: node["id"])

    meta = data.get("meta", {})
    dangling = meta.get("dangling_chunk_entity_refs", []) if isinstance(meta, dict) else []
    return {
        "input_type": "entity-profiles",
        "texts": texts,
        "chunk_id_sets": chunk_id_sets,
        "nodes": nodes,
        "world_model_entities": {
            profile.get("id"): profile
            for profile in profiles
            if isinstance(profile.get("id"), str)
        },
        "dangling": copy.deepcopy(dangling),
    }


# ---------------------------------------------------------------- similarity


def _similarity_edges(
    texts: dict[str, str],
    chunk_id_sets: dict[str, set[str]],
    top_k: int,
    min_score: float,
) -> list[dict[str, Any]]:
    """Undirected SIMILAR edges: a pair is kept if either end ranks the other in its top k."""
    entity_ids = sorted(texts)
    # As the reference: tf = count / length, smoothed idf, cosine = dot / (|a| |b|).
    tfidf = TfIdf([Counter(reference_terms(texts[e])) for e in entity_ids], sublinear=False, normalize=False)
    pair_scores: dict[tuple[str, str], float] = {}
    candidates: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (position, offset), score in _COSINES.cosines(tfidf).items():
        first, second = entity_ids[position], entity_ids[offset]
        pair_scores[(first, second)] = score
        candidates[first].append((second, score))
        candidates[second].append((first, score))

    kept_pairs: set[tuple[str, str]] = set()
    for entity_id, neighbours in candidates.items():
        ranked = sorted(neighbours, key=lambda item: (-item[1], item[0]))
        for neighbour, score in ranked[:top_k]:
            if score >= min_score:
                kept_pairs.add((min(entity_id, neighbour), max(entity_id, neighbour)))

    edges = []
    for source, target in sorted(kept_pairs):
        shared = chunk_id_sets.get(source, set()) & chunk_id_sets.get(target, set())
        edges.append(
            {
                "source": source,
                "target": target,
                "relation": "SIMILAR",
                "score": round(pair_scores[(source, target)], SCORE_DECIMALS),
                "shared_chunk_count": len(shared),
                "properties": {},
            }
        )
    edges.sort(key=lambda edge: (-edge["score"], edge["source"], edge["target"]))
    return edges


# ---------------------------------------------------------------- world model


def _condition_list(value: Any) -> list[str]:
    """State ids of a pre/postcondition field; a non-list field states nothing."""
    if not isinstance(value, list):
        return []
    return [state for state in value if isinstance(state, str)]


def infer_operational_edges(entities_by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """LEADS_TO / REQUIRES edges between entities linked through a shared state.

    If A has postcondition S and B has precondition S (not a ``NOT `` one),
    A LEADS_TO B and B REQUIRES A, each recorded with ``inferred_via: S``.
    """
    producers: dict[str, list[str]] = defaultdict(list)
    consumers: dict[str, list[str]] = defaultdict(list)
    for entity_id, entity in entities_by_id.items():
        for state in _condition_list(entity.get("postconditions", [])):
            producers[state].append(entity_id)
        for state in _condition_list(entity.get("preconditions", [])):
            if not state.startswith("NOT "):
                consumers[state].append(entity_id)

    edges: list[dict[str, Any]] = []
    emitted: set[tuple[str, str, str]] = set()

    def emit(source: str, target: str, relation: str, state: str) -> None:
        if (source, target, relation) in emitted:
            return
        emitted.add((source, target, relation))
        edges.append(
            {
                "source": source,
                "target": target,
                "relation": relation,
                "properties": {"inferred_via": state},
            }
        )

    for state, producer_ids in producers.items():
        for producer in producer_ids:
            for consumer in consumers.get(state, []):
                if producer != consumer:
                    emit(producer, consumer, "LEADS_TO", state)
                    emit(consumer, producer, "REQUIRES", state)
    return edges


# ---------------------------------------------------------------- extra edges


def validate_extra_edges(raw: Any, on_warning: WarningSink | None = None) -> list[dict[str, Any]]:
    """Normalise hand-written edges (the parsed ``--extra-edges`` file).

    As in the reference ``build_entity_graph.py``, the file must be a JSON array,
    and an edge whose relation is not one of ``EDGE_RELATIONS`` (a missing
    relation included) is an error: GraphInputError naming the edge and the
    relation, raised before any graph is built, so no output is written.  Items
    that are not objects or lack source/target are skipped with a warning
    (through ``on_warning``), as there.
    """
    warn = on_warning or _log.warning
    if not isinstance(raw, list):
        raise GraphInputError("extra-edges JSON must be an array of edge objects")

    edges: list[dict[str, Any]] = []
    for position, item in enumerate(raw):
        if not isinstance(item, dict):
            warn(f"extra-edges[{position}] is not an object, skipping")
            continue
        source, target = item.get("source"), item.get("target")
        # Stricter than the reference: ids must be strings so they can be graph nodes.
        if not (isinstance(source, str) and source and isinstance(target, str) and target):
            warn(f"extra-edges[{position}] missing source/target, skipping")
            continue
        relation = item.get("relation", "")
        if not isinstance(relation, str) or relation not in EDGE_RELATIONS:
            raise GraphInputError(
                f"extra-edges[{position}] has unknown relation {relation!r}, "
                f"allowed: {', '.join(sorted(EDGE_RELATIONS))}"
            )
        edge: dict[str, Any] = {"source": source, "target": target, "relation": relation}
        for optional in ("score", "shared_chunk_count"):
            if optional in item:
                edge[optional] = copy.deepcopy(item[optional])
        edge["properties"] = copy.deepcopy(item.get("properties", {}))
        edges.append(edge)
    return edges


# ---------------------------------------------------------------- public build


def _check_options(mode: Any, top_k: Any, min_score: Any) -> float:
    """Refuse options the reference CLI refuses; returns min_score as a float."""
    if mode not in GRAPH_MODES:
        raise GraphInputError(f"mode must be one of {', '.join(GRAPH_MODES)} (got {mode!r})")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise GraphInputError(f"top_k must be an integer >= 1 (got {top_k!r})")
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)):
        raise GraphInputError(f"min_score must be a number (got {min_score!r})")
    if not 0.0 <= min_score <= 1.0:
        raise GraphInputError(f"min_score must be between 0.0 and 1.0 (got {min_score!r})")
    return float(min_score)


def build_entity_graph(
    data: dict[str, Any],
    input_label: str,
    *,
    mode: str = DEFAULT_MODE,
    top_k: int = DEFAULT_TOP_K,
    min_score: float = DEFAULT_MIN_SCORE,
    extra_edges: list | dict | None = None,
    on_warning: WarningSink | None = None,
) -> dict[str, Any]:
    """Build the entity-graph.json object from a chunks.json or entity-profiles.json object.

    ``extra_edges`` is the parsed content of an extra-edges file (a JSON
    array; anything else, or an edge with an unknown relation, raises
    GraphInputError).  Skipped extra edges are reported through ``on_warning``
    (default: this module's logger).
    """
    min_score = _check_options(mode, top_k, min_score)
    if detect_input_type(data) == "export":
        parts = _graph_parts_from_export(data, mode)
    else:
        parts = _graph_parts_from_profiles(data, mode)
    # Validate before the (quadratic) similarity pass so bad files fail fast.
    extra = validate_extra_edges(extra_edges, on_warning) if extra_edges is not None else []

    edges = _similarity_edges(parts["texts"], parts["chunk_id_sets"], top_k, min_score)
    inferred = infer_operational_edges(parts["world_model_entities"])
    edges.extend(inferred)
    edges.extend(extra)
    return {
        "meta": {
            "input": str(input_label),
            "input_type": parts["input_type"],
            "mode": mode,
            "vectorizer": "tfidf-cosine",
            "top_k": top_k,
            "min_score": min_score,
            "entity_count": len(parts["nodes"]),
            "edge_count": len(edges),
            "inferred_edge_count": len(inferred),
            "dangling_chunk_entity_refs": parts["dangling"],
            "extra_edge_count": len(extra),
        },
        "nodes": parts["nodes"],
        "edges": edges,
    }


def dumps(graph_dict: dict[str, Any]) -> str:
    """entity-graph.json text exactly as the reference writes it.

    ``json.dump(graph, f, indent=2, ensure_ascii=False)``: two-space indent, non-ASCII
    unescaped, no trailing newline, so a re-run reproduces the reference's committed files.
    """
    return json.dumps(graph_dict, indent=2, ensure_ascii=False)


# ---------------------------------------------------------------- networkx


def to_networkx(graph_dict: dict[str, Any]) -> nx.MultiDiGraph:
    """The graph dict as a MultiDiGraph: node attrs = node fields, edge attrs = edge fields.

    A multigraph because two entities may be linked by several relations
    (e.g. SIMILAR and LEADS_TO); SIMILAR edges are stored source -> target only.
    Extra edges may name unknown entities; those become attribute-less nodes.
    """
    import networkx as nx

    graph = nx.MultiDiGraph()
    graph.graph.update(copy.deepcopy(graph_dict.get("meta", {})))
    for node in graph_dict.get("nodes", []):
        attrs = {key: copy.deepcopy(value) for key, value in node.items() if key != "id"}
        graph.add_node(node["id"], **attrs)
    for edge in graph_dict.get("edges", []):
        attrs = {
            key: copy.deepcopy(value)
            for key, value in edge.items()
            if key not in ("source", "target")
        }
        graph.add_edge(edge["source"], edge["target"], **attrs)
    return graph


def _scalar_attrs(attrs: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """GraphML-safe attributes: lists joined with ", ", dicts flattened to dotted keys, None dropped."""
    flat: dict[str, Any] = {}
    for key, value in attrs.items():
        name = f"{prefix}{key}"
        if value is None:
            continue
        if isinstance(value, dict):
            flat.update(_scalar_attrs(value, prefix=f"{name}."))
        elif isinstance(value, (list, tuple, set)):
            flat[name] = ", ".join(str(item) for item in value if item is not None)
        elif isinstance(value, (str, int, float, bool)):
            flat[name] = value
        else:
            flat[name] = str(value)
    return flat


def _unify_types(attr_dicts: list[dict[str, Any]]) -> None:
    """Give each attribute one GraphML type: mixed ints/floats -> float, other mixes -> str."""
    types_by_name: dict[str, set[type]] = defaultdict(set)
    for attrs in attr_dicts:
        for name, value in attrs.items():
            types_by_name[name].add(type(value))
    for name, seen_types in types_by_name.items():
        if len(seen_types) < 2:
            continue
        target = float if seen_types <= {int, float} else str
        for attrs in attr_dicts:
            if name in attrs:
                attrs[name] = target(attrs[name])


def write_graphml(graph_dict: dict[str, Any], path: str | PathLike[str]) -> None:
    """Write the graph dict as GraphML (for Gephi, yEd, Cytoscape...)."""
    import networkx as nx

    source = to_networkx(graph_dict)
    export = nx.MultiDiGraph()
    graph_attrs = _scalar_attrs(source.graph)
    node_attrs = {node: _scalar_attrs(attrs) for node, attrs in source.nodes(data=True)}
    edge_rows = [(u, v, _scalar_attrs(attrs)) for u, v, attrs in source.edges(data=True)]
    _unify_types([graph_attrs])
    _unify_types(list(node_attrs.values()))
    _unify_types([attrs for _u, _v, attrs in edge_rows])

    export.graph.update(graph_attrs)
    for node, attrs in node_attrs.items():
        export.add_node(node, **attrs)
    for u, v, attrs in edge_rows:
        export.add_edge(u, v, **attrs)
    nx.write_graphml(export, path)
