"""What gets indexed: chunks and entities from a CtxFST document, a folder, or a reference export.

CtxFST documents keep their own chunks; plain ``.md``/``.txt`` notes in a folder are cut by our
chunker (its options are recorded in the index, so a re-index with other options re-chunks);
a ``chunks.json``/JSONL export (the career-kb benchmark has nothing else) is read as is. Each
chunk carries the text to embed as the chunker's ``embed`` modes compose it, and the names and
aliases of the entities it links, which the full-text index covers too.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ctxfst_tui.core.chunking.chunk import compose_text
from ctxfst_tui.core.chunking.chunker import chunk_text
from ctxfst_tui.core.chunking.options import ChunkOptions
from ctxfst_tui.core.chunking.tokens import get_counter
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.export import chunk_records
from ctxfst_tui.core.workspace.files import read_regular
from ctxfst_tui.core.workspace.scan import scan_documents

EXPORT_SUFFIXES = (".json", ".jsonl")
NOTE_SUFFIXES = (".md", ".markdown", ".txt")


class CorpusError(ValueError):
    """The path cannot be read as a corpus; the message names the file (and line)."""


@dataclass
class CorpusEntity:
    id: str
    name: str
    type: str
    aliases: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)  # keys of the chunks that link it

    @property
    def names(self) -> list[str]:
        """The name and every alias, without duplicates (case-insensitive), name first."""
        seen, out = set(), []
        for n in [self.name, *self.aliases]:
            if isinstance(n, str) and n.strip() and n.strip().casefold() not in seen:
                seen.add(n.strip().casefold())
                out.append(n.strip())
        return out


@dataclass
class CorpusChunk:
    key: str  # unique in the index: "<document>#<chunk id>"
    chunk_id: str
    document: str  # relative to the indexed path
    breadcrumb: str
    content: str
    context: str
    tags: list[str]
    entities: list[str]
    embed_text: str
    tokens: int = 0

    @property
    def embed_hash(self) -> str:
        return hashlib.sha256(self.embed_text.encode("utf-8")).hexdigest()[:32]


@dataclass
class Corpus:
    root: Path
    chunks: list[CorpusChunk] = field(default_factory=list)
    entities: dict[str, CorpusEntity] = field(default_factory=dict)
    export: dict[str, Any] = field(default_factory=lambda: {"entities": [], "chunks": []})
    chunker: dict[str, Any] | None = None  # options used for plain notes, when there were any
    warnings: list[str] = field(default_factory=list)

    def entity_names(self, chunk: CorpusChunk) -> list[str]:
        out: list[str] = []
        for eid in chunk.entities:
            ent = self.entities.get(eid)
            out.extend(ent.names if ent else [])
        return out

    def search_text(self, chunk: CorpusChunk) -> str:
        """What the full-text index sees: the chunk's text and its entities' names and aliases."""
        parts = [chunk.breadcrumb, chunk.context, chunk.content, " ".join(chunk.tags), " ".join(self.entity_names(chunk))]
        return "\n".join(p for p in parts if p)


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _add_entity(corpus: Corpus, data: Any) -> None:
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) or data["id"] in corpus.entities:
        return
    corpus.entities[data["id"]] = CorpusEntity(
        id=data["id"], name=str(data.get("name") or data["id"]), type=str(data.get("type") or ""),
        aliases=_strings(data.get("aliases")),
    )


def _add_chunk(corpus: Corpus, chunk: CorpusChunk, record: dict[str, Any]) -> None:
    corpus.chunks.append(chunk)
    corpus.export["chunks"].append(record)
    for eid in chunk.entities:
        if eid in corpus.entities:
            corpus.entities[eid].chunks.append(chunk.key)


def _heading_path(heads: list[tuple[int, int, str]], start: int, end: int) -> str:
    """The heading path (``A > B > C``) of the span ``start:end`` of a Markdown body, down to its
    own first heading when it has one."""
    from ctxfst_tui.core.contextualize.material import breadcrumb

    return breadcrumb(heads, start, end)[1]


def _headings(text: str) -> list[tuple[int, int, str]]:
    from ctxfst_tui.core.contextualize.material import headings

    return headings(text)


def _body_headings(doc: Document) -> list[tuple[int, int, str]]:
    """The body's headings, at offsets into the whole text: a YAML comment in the frontmatter
    (``# Entities are ...``) looks like an ATX heading and must not head every chunk."""
    return [(off + doc.body_start, level, title) for off, level, title in _headings(doc.text[doc.body_start:])]


def _from_document(corpus: Corpus, doc: Document, label: str, embed: str) -> None:
    warnings: list[str] = []
    records = chunk_records(doc, label, warnings)
    corpus.warnings.extend(warnings)
    for e in doc.entities:
        _add_entity(corpus, e.data)
        if isinstance(e.data, dict):
            corpus.export["entities"].append(e.data)
    spans = {c.id: (c.content_span.start, c.content_span.end) for c in doc.body_chunks}
    heads = _body_headings(doc)
    for rec in records:
        crumb = _heading_path(heads, *spans.get(rec["id"], (0, 1)))
        context = rec.get("context") if isinstance(rec.get("context"), str) else ""
        content = rec["content"] if isinstance(rec["content"], str) else ""
        chunk = CorpusChunk(
            key=f"{label}#{rec['id']}", chunk_id=str(rec["id"]), document=label, breadcrumb=crumb,
            content=content, context=context, tags=_strings(rec.get("tags")), entities=_strings(rec.get("entities")),
            embed_text=compose_text(crumb, context, content, embed),
        )
        _add_chunk(corpus, chunk, rec)


def _plain_path(path: list[str]) -> str:
    """``["# A", "## B"]`` → ``"A > B"`` (the chunker keeps the heading markers)."""
    return " > ".join(p.lstrip("#").strip() for p in path or [])


def _from_note(corpus: Corpus, text: str, label: str, options: ChunkOptions) -> None:
    for i, c in enumerate(chunk_text(text, options, source=label)):
        cid = f"{Path(label).stem}-{i + 1}"
        chunk = CorpusChunk(
            key=f"{label}#{cid}", chunk_id=cid, document=label, breadcrumb=_plain_path(c.path),
            content=c.content, context=c.context or "", tags=[], entities=[], embed_text=c.text,
        )
        _add_chunk(corpus, chunk, {"id": cid, "context": chunk.context, "content": c.content, "tags": [], "source": label})


def _from_export(corpus: Corpus, path: Path, embed: str) -> None:
    label = path.name
    try:
        raw = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read: {exc}") from None
    if path.suffix == ".jsonl":
        data: dict[str, Any] = {"entities": [], "chunks": []}
        for n, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise CorpusError(f"{path}:{n}: not JSON: {exc}") from None
            (data["entities"] if isinstance(rec, dict) and "name" in rec and "content" not in rec else data["chunks"]).append(rec)
    else:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise CorpusError(f"{path}:{exc.lineno if hasattr(exc, 'lineno') else 1}: not JSON: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("chunks"), list):
        raise CorpusError(f"{path}: not a chunks.json export (an object with a 'chunks' list)")
    for e in data.get("entities") or []:
        _add_entity(corpus, e)
        corpus.export["entities"].append(e)
    for i, rec in enumerate(data["chunks"]):
        if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
            corpus.warnings.append(f"{path}: chunk #{i + 1} has no string id; skipped")
            continue
        content = rec.get("content") if isinstance(rec.get("content"), str) else ""
        context = rec.get("context") if isinstance(rec.get("context"), str) else ""
        source = rec.get("source") if isinstance(rec.get("source"), str) else label
        crumb = _heading_path(_headings(content), 0, len(content)) if content.lstrip().startswith("#") else ""
        chunk = CorpusChunk(
            key=f"{source}#{rec['id']}", chunk_id=rec["id"], document=source, breadcrumb=crumb,
            content=content, context=context, tags=_strings(rec.get("tags")), entities=_strings(rec.get("entities")),
            embed_text=compose_text("", context, content, embed),
        )
        _add_chunk(corpus, chunk, rec)


def load_corpus(path: str | os.PathLike, *, options: ChunkOptions | None = None) -> Corpus:
    """Everything under ``path`` that can be indexed (see the module docstring)."""
    root = Path(path)
    options = options or ChunkOptions()
    if not root.exists():
        raise CorpusError(f"{root}: no such file or folder")
    corpus = Corpus(root=root if root.is_dir() else root.parent)
    if root.is_file() and root.suffix in EXPORT_SUFFIXES:
        _from_export(corpus, root, options.embed)
    elif root.is_file():
        _one_file(corpus, root, root.name, options)
    else:
        scan = scan_documents(root, suffixes=NOTE_SUFFIXES)
        for skipped in scan.skipped:
            corpus.warnings.append(skipped.one_line())
        for p in scan.documents:
            _one_file(corpus, p, p.relative_to(root).as_posix(), options)
    _count_tokens(corpus.chunks)
    _dedupe_keys(corpus)
    return corpus


def _one_file(corpus: Corpus, path: Path, label: str, options: ChunkOptions) -> None:
    try:
        raw = read_regular(path)
    except OSError as exc:
        corpus.warnings.append(f"{path}: cannot read: {exc}; skipped")
        return
    _add_document(corpus, Document(raw, path=path), label, options)


def _add_document(corpus: Corpus, doc: Document, label: str, options: ChunkOptions) -> None:
    if doc.readable and isinstance(doc.data, dict) and isinstance(doc.data.get("chunks"), list):
        _from_document(corpus, doc, label, options.embed)
    elif doc.readable:
        corpus.chunker = chunker_options_json(options)
        _from_note(corpus, doc.text, label, options)
    else:
        corpus.warnings.append(f"{doc.path or label}: cannot be decoded; skipped")


def corpus_from_documents(docs: Iterable[Document], root: str | os.PathLike, *,
                          options: ChunkOptions | None = None) -> Corpus:
    """The corpus of documents held in memory (the workbench's, with unsaved edits), labelled
    relative to ``root`` as :func:`load_corpus` labels the same files read from disk."""
    root = Path(root)
    options = options or ChunkOptions()
    corpus = Corpus(root=root)
    for doc in docs:
        if doc.path is None:
            continue
        try:
            label = doc.path.relative_to(root).as_posix()
        except ValueError:
            label = doc.path.name
        _add_document(corpus, doc, label, options)
    _count_tokens(corpus.chunks)
    _dedupe_keys(corpus)
    return corpus


def chunker_options_json(options: ChunkOptions) -> dict[str, Any]:
    """The options that decide plain notes' chunks (recorded in the index: other options re-chunk)."""
    keep = ("unit", "chunk_size", "overlap", "min_chunk_size", "encoding", "mode", "split_on_headings",
            "heading_path", "prepend_heading", "embed", "strip_data_uri", "strip_html_comments", "context_reserve")
    return {k: getattr(options, k) for k in keep}


def _count_tokens(chunks: Iterable[CorpusChunk]) -> None:
    chunks = list(chunks)
    for c, n in zip(chunks, get_counter().count_many([c.embed_text for c in chunks])):
        c.tokens = n


def _dedupe_keys(corpus: Corpus) -> None:
    seen: dict[str, int] = {}
    for c in corpus.chunks:
        if c.key in seen:
            seen[c.key] += 1
            c.key = f"{c.key}~{seen[c.key]}"
            corpus.warnings.append(f"{c.document}: chunk id '{c.chunk_id}' appears more than once; indexed as {c.key}")
        else:
            seen[c.key] = 1
