"""The LanceDB index of a corpus: chunks, entities and the entity graph's edges, kept incrementally.

Tables: ``chunks`` (one row per chunk: where it is, its text, context, tags, linked entities
with their names and aliases, the embedded text, its hash, its tokens, the vector), ``entities``
(id, name, type, aliases, profile text, vector), ``edges`` (the entity graph) and ``meta`` (one
row: the embedder, the dimension, the chunker options, the format version). A full-text index
covers each chunk's text plus the names and aliases of the entities it links.

Re-indexing re-embeds only rows whose embedded text changed (same hash → the stored vector is
kept) and deletes rows that are gone, so one edited chunk costs one embedding.

LanceDB's Rust core writes WARN lines straight to stderr (where Textual draws): ``LANCEDB_LOG``
is set to ``error`` before the library is first imported.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ctxfst_tui.core.entities.graph import build_entity_graph
from ctxfst_tui.core.entities.profiles import build_entity_profiles
from ctxfst_tui.core.retrieval.analyzer import analyze
from ctxfst_tui.core.retrieval.corpus import Corpus
from ctxfst_tui.core.retrieval.embedders import Embedder

FORMAT_VERSION = 1
INDEX_DIRNAME = ".ctxfst-index"
CHUNKS, ENTITIES, EDGES, META = "chunks", "entities", "edges", "meta"

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class IndexError_(RuntimeError):
    """The index cannot be opened or written; the message names the URI and the way out."""


def lancedb():
    """The lancedb module, imported quietly (its Rust core logs only errors)."""
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb as _lancedb

    return _lancedb


def default_uri(path: str | os.PathLike) -> str:
    p = Path(path)
    return str((p if p.is_dir() else p.parent) / INDEX_DIRNAME)


@dataclass
class IndexStats:
    uri: str
    embedder: str
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    deleted: int = 0
    entities: int = 0
    edges: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def one_line(self) -> str:
        return (f"indexed {self.chunks} chunks ({self.embedded} embedded, {self.reused} unchanged, "
                f"{self.deleted} removed), {self.entities} entities, {self.edges} edges "
                f"in {self.seconds:.1f} s → {self.uri}")


def _schema(pa: Any, dim: int | None) -> tuple[Any, Any, Any, Any]:
    strs = pa.list_(pa.string())
    vec = [("vector", pa.list_(pa.float32(), dim))] if dim else []
    chunks = pa.schema([
        ("key", pa.string()), ("chunk_id", pa.string()), ("document", pa.string()), ("breadcrumb", pa.string()),
        ("content", pa.string()), ("context", pa.string()), ("tags", strs), ("entities", strs),
        ("entity_names", strs), ("embed_text", pa.string()), ("search_text", pa.string()), ("fts_text", pa.string()),
        ("tokens", pa.int32()), ("embed_hash", pa.string()), *vec,
    ])
    entities = pa.schema([
        ("id", pa.string()), ("name", pa.string()), ("type", pa.string()), ("aliases", strs),
        ("chunks", strs), ("profile", pa.string()), *vec,
    ])
    edges = pa.schema([("source", pa.string()), ("target", pa.string()), ("relation", pa.string()),
                       ("score", pa.float64())])
    meta = pa.schema([("format", pa.int32()), ("embedder", pa.string()), ("dim", pa.int32()),
                      ("chunker", pa.string()), ("built_at", pa.float64()), ("embedder_source", pa.string())])
    return chunks, entities, edges, meta


def read_meta(db: Any) -> dict[str, Any] | None:
    if META not in table_names(db):
        return None
    rows = db.open_table(META).to_arrow().to_pylist()
    return rows[0] if rows else None


def index_meta(uri: str) -> dict[str, Any] | None:
    """The meta row of the index at ``uri``; None when there is no index there (nothing created)."""
    if "://" not in uri and not Path(uri).is_dir():
        return None
    try:
        return read_meta(lancedb().connect(uri))
    except Exception as exc:
        raise IndexError_(f"{uri}: cannot open the index: {exc}") from None


def table_names(db: Any) -> set[str]:
    try:
        return set(db.list_tables().tables)
    except AttributeError:  # older lancedb
        return set(db.table_names())


def _profile_texts(corpus: Corpus) -> dict[str, str]:
    """Profile text per entity: name, aliases, type, tags and contexts of the chunks that link it."""
    if not corpus.export["chunks"]:
        return {}
    try:
        profiles = build_entity_profiles(corpus.export, str(corpus.root))
    except ValueError:
        return {}
    out = {}
    for p in profiles["entities"]:
        parts = [p.get("name") or "", " ".join(p.get("aliases") or []), p.get("type") or "",
                 " ".join(p.get("tags") or []), " ".join(p.get("contexts") or []),
                 " ".join(p.get("keywords") or []) if isinstance(p.get("keywords"), list) else ""]
        out[p["id"]] = "\n".join(x for x in parts if x)
    return out


def _edges(corpus: Corpus) -> list[dict[str, Any]]:
    if not corpus.export["chunks"] or not corpus.entities:
        return []
    try:
        graph = build_entity_graph(corpus.export, str(corpus.root))
    except ValueError:
        return []
    return [{"source": e["source"], "target": e["target"], "relation": str(e.get("relation", "")),
             "score": float(e.get("score") or 0.0)} for e in graph["edges"]]


def _old_vectors(db: Any, table: str, key: str, dim: int | None) -> dict[tuple[str, str], np.ndarray]:
    """(key, hash) → stored vector, to reuse what did not change."""
    if not dim or table not in table_names(db):
        return {}
    t = db.open_table(table)
    hash_col = "embed_hash" if table == CHUNKS else "profile"
    try:
        data = t.to_arrow().select([key, hash_col, "vector"]).to_pydict()
    except Exception:  # an index with another schema: nothing to reuse
        return {}
    return {(k, h): np.asarray(v, dtype=np.float32) for k, h, v in zip(data[key], data[hash_col], data["vector"])}


def build_index(corpus: Corpus, uri: str, embedder: Embedder | None, *,
                cancel: threading.Event | None = None, progress: Progress | None = None) -> IndexStats:
    """Write (or bring up to date) the index at ``uri`` for ``corpus``."""
    t0 = time.perf_counter()
    ldb = lancedb()
    import pyarrow as pa

    try:
        db = ldb.connect(uri)
    except Exception as exc:
        raise IndexError_(f"{uri}: cannot open the index: {exc}") from None
    name = embedder.name if embedder else "none"
    dim = embedder.dim if embedder else None
    meta = read_meta(db)
    chunker = json.dumps(corpus.chunker, sort_keys=True) if corpus.chunker else ""
    if meta and (meta.get("embedder") != name or meta.get("format") != FORMAT_VERSION):
        meta = None  # another embedder or format: rebuilt from scratch (vectors are not comparable)
    stats = IndexStats(uri=uri, embedder=name, warnings=list(corpus.warnings))
    chunk_schema, entity_schema, edge_schema, meta_schema = _schema(pa, dim)

    old = _old_vectors(db, CHUNKS, "key", dim) if meta else {}
    rows = []
    todo: list[int] = []
    for c in corpus.chunks:
        search_text = corpus.search_text(c)
        row = {"key": c.key, "chunk_id": c.chunk_id, "document": c.document, "breadcrumb": c.breadcrumb,
               "content": c.content, "context": c.context, "tags": c.tags, "entities": c.entities,
               "entity_names": corpus.entity_names(c), "embed_text": c.embed_text,
               "search_text": search_text,
               "fts_text": analyze(search_text), "tokens": c.tokens, "embed_hash": c.embed_hash}
        if dim:
            vec = old.get((c.key, c.embed_hash))
            if vec is not None and len(vec) == dim:
                row["vector"] = vec
                stats.reused += 1
            else:
                todo.append(len(rows))
        rows.append(row)
    if dim and todo:
        e0 = time.perf_counter()
        vectors = embedder.embed_passages(
            [rows[i]["embed_text"] for i in todo], cancel=cancel,
            progress=(lambda d, n: progress("embedding chunks", d, n)) if progress else None)
        for i, v in zip(todo, vectors):
            rows[i]["vector"] = v
        stats.embed_seconds += time.perf_counter() - e0
    stats.embedded = len(todo)
    old_keys = set(k for k, _ in old) if old else _keys(db)
    stats.deleted = len(old_keys - {r["key"] for r in rows})
    stats.chunks = len(rows)
    if progress:
        progress("writing chunks", 0, len(rows))
    _write(db, CHUNKS, pa.Table.from_pylist(rows, schema=chunk_schema))
    _fts(db)

    profiles = _profile_texts(corpus)
    old_ent = _old_vectors(db, ENTITIES, "id", dim) if meta else {}
    ent_rows, ent_todo = [], []
    for e in corpus.entities.values():
        text = profiles.get(e.id) or "\n".join(e.names)
        row = {"id": e.id, "name": e.name, "type": e.type, "aliases": e.aliases, "chunks": e.chunks, "profile": text}
        if dim:
            vec = old_ent.get((e.id, text))
            if vec is not None:
                row["vector"] = vec
            else:
                ent_todo.append(len(ent_rows))
        ent_rows.append(row)
    if dim and ent_todo:
        e0 = time.perf_counter()
        vectors = embedder.embed_passages([ent_rows[i]["profile"] for i in ent_todo], cancel=cancel)
        for i, v in zip(ent_todo, vectors):
            ent_rows[i]["vector"] = v
        stats.embed_seconds += time.perf_counter() - e0
    _write(db, ENTITIES, pa.Table.from_pylist(ent_rows, schema=entity_schema))
    edges = _edges(corpus)
    _write(db, EDGES, pa.Table.from_pylist(edges, schema=edge_schema))
    source = getattr(embedder, "source", "") if embedder else "none"  # how to make the embedder again
    _write(db, META, pa.Table.from_pylist([{"format": FORMAT_VERSION, "embedder": name, "dim": dim or 0,
                                            "chunker": chunker, "built_at": time.time(),
                                            "embedder_source": source}], schema=meta_schema))
    stats.entities, stats.edges = len(ent_rows), len(edges)
    stats.seconds = time.perf_counter() - t0
    return stats


def _keys(db: Any) -> set[str]:
    if CHUNKS not in table_names(db):
        return set()
    try:
        return set(db.open_table(CHUNKS).to_arrow().column("key").to_pylist())
    except Exception:
        return set()


def _write(db: Any, name: str, table: Any) -> None:
    """Replace a table's rows (a new LanceDB version: readers of the old one are not disturbed)."""
    db.create_table(name, data=table, schema=table.schema, mode="overwrite")


def _fts(db: Any) -> None:
    from lancedb.index import FTS

    t = db.open_table(CHUNKS)
    if t.count_rows():
        t.create_index("fts_text", config=FTS(with_position=False, lower_case=True, stem=True,
                                               remove_stop_words=True, ascii_folding=True), replace=True)
