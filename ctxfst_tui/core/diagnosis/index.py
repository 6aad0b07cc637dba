"""The workspace index: per-chunk and per-entity records, and the lookups the checks share.

Each document is normalised once (``IndexedChunk``, ``IndexedEntity`` keep the raw entry for
positions) into a ``DocumentDiagnosis``, which also collects that document's issues. The
``WorkspaceIndex`` holds what a document's checks need to know about the others; the check
families fill their own parts of it (similar pairs, clusters, token counts, cycles) in
workspace steps run before any per-document check.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxfst_tui.core.diagnosis.issue import Issue
from ctxfst_tui.core.diagnosis.mentions import Mentions
from ctxfst_tui.core.entities.aliases import fingerprint
from ctxfst_tui.core.format.chunk_tags import BodyChunk
from ctxfst_tui.core.format.document import Document, Entry
from ctxfst_tui.core.format.rules import severity_of
from ctxfst_tui.core.format.schema import CHUNK_LINK_FIELD, NEGATION, STATE_REF_FIELDS

if TYPE_CHECKING:
    from ctxfst_tui.core.diagnosis.dependencies import DependencyCycle
    from ctxfst_tui.core.diagnosis.similarity import SimilarPair
    from ctxfst_tui.core.diagnosis.terms import ChunkVectors


@dataclass
class IndexedChunk:
    """A frontmatter chunk normalised for the checks (the raw entry stays for positions)."""

    id: str
    entry: Entry
    context: str
    content: str
    tags: list[str]
    entities: Any
    body: BodyChunk | None = None
    doc: int = 0  # index of the document in the workspace
    order: int = 0  # position among all chunks of the workspace

    def links(self) -> list[str]:
        return [r for r in self.entities if isinstance(r, str)] if isinstance(self.entities, list) else []


@dataclass
class IndexedEntity:
    """An entity declaration normalised for the checks."""

    id: str
    entry: Entry
    name: str
    type: str | None
    aliases: list[str]
    doc: int

    @property
    def forms(self) -> list[str]:
        return [f for f in [self.name, *self.aliases] if f.strip()]


def text_of(value: Any) -> str:
    """A scalar field as text; None and collections count as empty (the reference would crash)."""
    if value is None or isinstance(value, (list, dict)):
        return ""
    return value if isinstance(value, str) else str(value)


def tags_of(value: Any) -> list[str]:
    """Tags as strings: a lone string is one tag (the reference would split it into letters)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return []
    return [t if isinstance(t, str) else json.dumps(t, default=str) for t in value]


class DocumentDiagnosis:
    """One document of the workspace: its records, where its entries are, and the issues found so far."""

    def __init__(self, doc: Document, ws: WorkspaceIndex | None = None, number: int = 0):
        self.doc = doc
        self.ws = ws
        self.number = number  # position of the document in the workspace (IndexedChunk.doc)
        self.issues: list[Issue] = []
        self.chunks: list[IndexedChunk] = []
        self.ents: list[IndexedEntity] = []
        self.ok = False

    def add(self, category: str, rule: str, chunk_ids: list[str], message: str,
            suggestion: str = "", fix: dict | None = None, at: tuple[int, int] = (0, 0),
            entity_ids: list[Any] | None = None, **extra: Any) -> Issue:
        """Record a finding; its severity is the rule's (core/format/rules.py)."""
        issue = Issue(category, severity_of(rule), rule, chunk_ids, message, suggestion, fix or {}, at[0], at[1],
                      entity_ids, {k: v for k, v in extra.items() if v is not None})
        self.issues.append(issue)
        return issue

    def at(self, entry: Entry, key: str) -> tuple[int, int]:
        return entry.field_line(self.doc, key)

    def body_at(self, c: IndexedChunk, fallback: str = "id") -> tuple[int, int]:
        if c.body is not None:
            return c.body.open.line, c.body.open.column
        return self.at(c.entry, fallback)

    def offset_at(self, c: IndexedChunk, raw_offset: int) -> tuple[int, int]:
        """File position of an offset into the chunk's raw body content."""
        assert c.body is not None
        return self.doc.index.position(c.body.content_span.start + raw_offset)


class WorkspaceIndex:
    """What every document's diagnosis needs to know about the others."""

    def __init__(self, docs: list[Document]):
        self.docs = docs
        self.labels = [d.label for d in docs]  # by document number; findings name other documents often
        self.diags = [DocumentDiagnosis(d, self, i) for i, d in enumerate(docs)]
        self.similar_pairs: list[SimilarPair] = []
        self.pairs_of: dict[int, list[SimilarPair]] = {}  # by document number, in similar_pairs order
        self.clusters: list[Any] = []
        self.mates: dict[str, set[str]] = {}
        self.same_name_pairs: set[frozenset] = set()
        self.names: dict[str, str] = {}
        self.first_decl: dict[str, IndexedEntity] = {}
        self.declared_in: dict[str, list[int]] = {}
        self.used: set[str] = set()
        self.mentioned_by: dict[str, list[str]] = {}
        self.form_keys: set[str] = set()
        self.chunk_docs: dict[str, list[int]] = {}
        self.tokens: dict[int, int] = {}  # by chunk order
        self.exact_tokens = True
        self.weak: dict[int, list[str]] = {}  # by chunk order
        self.cycles: list[DependencyCycle] = []
        self.tfidf: ChunkVectors | None = None

    @property
    def chunks(self) -> list[IndexedChunk]:
        return [c for d in self.diags if d.ok for c in d.chunks]

    @property
    def ents(self) -> list[IndexedEntity]:
        return [e for d in self.diags for e in d.ents]

    def decl_rank(self, entity_id: str) -> tuple[int, int]:
        e = self.first_decl.get(entity_id)
        return (e.doc, e.entry.index) if e is not None else (len(self.docs), 0)

    def cosine(self, a: IndexedChunk, b: IndexedChunk) -> float:
        if self.tfidf is None:
            return 0.0
        return self.tfidf.cosine(a.order, b.order)


def index_chunks(ws: WorkspaceIndex) -> None:
    """Number the usable chunks of the workspace (``order``) and note which documents hold each id."""
    for k, c in enumerate(ws.chunks):
        c.order = k
        docs = ws.chunk_docs.setdefault(c.id, [])
        if c.doc not in docs:
            docs.append(c.doc)


def index_entities(ws: WorkspaceIndex) -> None:
    """Entity lookups across documents: first declarations, names, forms, what is used and who names what."""
    for e in ws.ents:
        ws.first_decl.setdefault(e.id, e)
        ws.names.setdefault(e.id, e.name)
        docs = ws.declared_in.setdefault(e.id, [])
        if e.doc not in docs:
            docs.append(e.doc)

    ws.form_keys = {fingerprint(f) for e in ws.ents for f in e.forms}
    for d in ws.diags:
        if d.doc.data is None:
            continue
        for section in ("entities", "chunks"):
            for entry in d.doc.entries(section):
                if not isinstance(entry.data, dict):
                    continue
                keys = ((CHUNK_LINK_FIELD,) if section == "chunks" else ()) + STATE_REF_FIELDS
                for key in keys:
                    refs = entry.data.get(key)
                    if isinstance(refs, list):
                        ws.used.update(NEGATION.sub("", r).strip() for r in refs if isinstance(r, str))
    # who names each entity (for unused entities: link, rather than delete)
    for d in ws.diags:
        if not d.ok:
            continue
        matcher = Mentions(d.ents)
        for c in d.chunks:
            ids = {i for _, _, hit in matcher.find(c.context + "\n" + c.content) for i in hit}
            for i in sorted(ids):
                ws.mentioned_by.setdefault(i, []).append(c.id)
