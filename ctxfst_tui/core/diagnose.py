"""Chunk-quality diagnosis: the checks of the reference ``diagnose_chunks.py``, with positions.

The report keeps the reference's JSON shape (``filepath``, ``stats``, ``issues`` of
``category``/``severity``/``chunk_ids``/``message`` plus ``suggestion`` and ``fix`` by level)
so tools written for the reference keep working. Each issue also carries a stable ``rule``
code and the exact ``line``/``column`` of the chunk or entity entry (or field) it concerns.

Unlike the reference, diagnosis never raises: broken YAML, a missing frontmatter, entries
that are not mappings, non-string ids or entity references all become issues.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .document import Document, Entry

LEVELS = ("diagnose", "suggest", "fix")

# Thresholds of the reference, kept so findings match it.
SIMILARITY_THRESHOLD = 0.6  # Jaccard of context+content word sets
ECHO_THRESHOLD = 0.7  # Jaccard of context words vs the content's first 15 words
ECHO_OPENER_WORDS = 15
CONTEXT_MIN_WORDS = 8
CONTEXT_MAX_WORDS = 50
CONTEXT_OPTIMAL = (12, 30)
UBIQUITOUS_SHARE = 0.8  # a tag on >= 80% of chunks no longer filters anything
MAX_CHUNK_ENTITIES = 6
GENERIC_ENTITY_NAMES = frozenset({
    "system", "project", "tool", "computer", "work", "experience", "technology",
    "feature", "application", "problem", "task",
})

CHUNK_ID_FORMAT = re.compile(r"^[a-z]+:[a-z0-9-]+\Z")
WORD = re.compile(r"\b[a-zA-Z]{3,}\b")  # the reference's proxy for "meaningful word"


# ---------------------------------------------------------------- data


@dataclass
class Issue:
    """One diagnosis; ``line``/``column`` are 1-based file positions (0 = whole file)."""

    category: str
    severity: str
    rule: str
    chunk_ids: list[str]
    message: str
    suggestion: str = ""
    fix: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    column: int = 0
    entity_ids: list[Any] | None = None

    def to_json(self, level: str) -> dict[str, Any]:
        """The reference's issue object for ``level``, plus our extra keys."""
        out: dict[str, Any] = {
            "category": self.category,
            "severity": self.severity,
            "chunk_ids": list(self.chunk_ids),
            "message": self.message,
        }
        if level in ("suggest", "fix"):
            out["suggestion"] = self.suggestion
        if level == "fix" and self.fix:
            out["fix"] = self.fix
        out["rule"] = self.rule
        out["line"] = self.line
        out["column"] = self.column
        if self.entity_ids is not None:
            out["entity_ids"] = list(self.entity_ids)
        return out


@dataclass
class _Chunk:
    """A frontmatter chunk normalised for the checks (the raw entry stays for positions)."""

    id: str
    entry: Entry
    context: str
    content: str
    tags: list[str]
    entities: Any


# ---------------------------------------------------------------- helpers


def _text(value: Any) -> str:
    """A scalar field as text; None and collections count as empty (the reference would crash)."""
    if value is None or isinstance(value, (list, dict)):
        return ""
    return value if isinstance(value, str) else str(value)


def _tags(value: Any) -> list[str]:
    """Tags as strings: a lone string is one tag (the reference would split it into letters)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return []
    return [t if isinstance(t, str) else json.dumps(t, default=str) for t in value]


def _kind(value: Any) -> str:
    """A YAML value's kind in words, for messages."""
    kinds = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
             (list, "a list"), (dict, "a mapping"), (type(None), "null"))
    return next((k for t, k in kinds if isinstance(value, t)), f"a {type(value).__name__}")


def _show(value: Any) -> str:
    """An entity reference for a message: strings as written, anything else marked as not an id."""
    if isinstance(value, str):
        return value
    return f"{json.dumps(value, default=str)} ({_kind(value)}, not an id string)"


def _jsonable(value: Any) -> Any:
    """A reference value safe for the JSON report."""
    return value if isinstance(value, (str, int, float, bool)) or value is None else json.dumps(value, default=str)


def _words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def _jaccard(a: set, b: set) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _suggest_id(chunk_id: str) -> str:
    """A ``category:topic-name`` id close to ``chunk_id``, for the suggestion text."""
    raw = chunk_id.strip().lower()
    if ":" in raw:
        prefix, rest = raw.split(":", 1)
    else:
        parts = re.split(r"[\s_\-./]+", raw, maxsplit=1)
        prefix, rest = (parts[0], parts[1]) if len(parts) == 2 else ("chunk", parts[0])
    prefix = re.sub(r"[^a-z]", "", prefix) or "chunk"
    rest = re.sub(r"[^a-z0-9]+", "-", rest).strip("-") or "topic"
    return f"{prefix}:{rest}"


class _Diagnosis:
    """Runs every check over one document and collects issues."""

    def __init__(self, doc: Document):
        self.doc = doc
        self.issues: list[Issue] = []
        self.chunks: list[_Chunk] = []

    def add(self, category: str, severity: str, rule: str, chunk_ids: list[str], message: str,
            suggestion: str = "", fix: dict | None = None, at: tuple[int, int] = (0, 0),
            entity_ids: list[Any] | None = None) -> None:
        self.issues.append(Issue(category, severity, rule, chunk_ids, message, suggestion,
                                 fix or {}, at[0], at[1], entity_ids))

    def at(self, entry: Entry, key: str) -> tuple[int, int]:
        return entry.field_line(self.doc, key)

    # ------------------------------------------------------------ structure

    def structure(self) -> bool:
        """Report why there is nothing to diagnose; True when the chunks can be checked."""
        doc = self.doc
        if not doc.readable:
            f = doc.load_findings[0] if doc.load_findings else None
            why = f.message if f else "the file could not be read"
            self.add("structure", "error", f.rule if f else "file-unreadable", [],
                     f"No valid chunks found in document: {why}",
                     "Save the document as UTF-8 Markdown with a YAML frontmatter.",
                     at=(f.line, f.column) if f else (0, 0))
            return False
        err = doc.frontmatter_error
        if err is not None:
            self.add("structure", "error", err.rule, [], f"Frontmatter cannot be read: {err.message}",
                     "Fix the YAML at the line shown; until it parses no chunk can be diagnosed.",
                     at=(err.line, err.column))
            return False
        if not doc.has_frontmatter:
            self.add("structure", "error", "no-frontmatter", [],
                     "No valid chunks found in document: no YAML frontmatter",
                     "Start the file with a '---' frontmatter block listing 'entities' and 'chunks'.",
                     at=(1, 1))
            return False
        data = doc.data
        if data is None:
            what = "empty" if doc.frontmatter.data is None else f"{_kind(doc.frontmatter.data)}, not a mapping"
            self.add("structure", "error", "frontmatter-not-mapping", [],
                     f"No valid chunks found in document: the frontmatter is {what}",
                     "Write the frontmatter as 'key: value' lines with a 'chunks' list.",
                     at=(doc.frontmatter.open_line + 1, 1))
            return False
        sec = doc.section_pos("chunks")
        if "chunks" not in data:
            self.add("structure", "error", "missing-chunks", [],
                     "No valid chunks found in document: the frontmatter has no 'chunks' list",
                     "Add a 'chunks' list with one entry (id, context, tags) per <Chunk> in the body.",
                     at=(doc.frontmatter.open_line, 1))
            return False
        if not isinstance(data["chunks"], list):
            self.add("structure", "error", "chunks-not-list", [],
                     f"No valid chunks found in document: 'chunks' is {_kind(data['chunks'])}, not a list",
                     "Write 'chunks' as a list of '- id: ...' entries.",
                     at=(sec.key_line if sec else 1, 1))
            return False
        self.collect_chunks()
        if not self.chunks:
            self.add("structure", "error", "no-chunks", [],
                     "No valid chunks found in document",
                     "Give every entry of 'chunks' a non-empty 'id' matching a <Chunk id=\"...\"> in the body.",
                     at=(sec.key_line if sec else 1, 1))
            return False
        return True

    def collect_chunks(self) -> None:
        """Normalise chunk entries; entries the reference silently skips are noted as warnings."""
        for entry in self.doc.chunks:
            if not isinstance(entry.data, dict):
                self.add("structure", "warning", "chunk-not-mapping", [],
                         f"Chunk entry #{entry.index + 1} is {_kind(entry.data)}, not a mapping; skipped",
                         "Write each chunk as a mapping with 'id', 'context' and 'tags'.",
                         at=(entry.line, 1))
                continue
            raw_id = entry.data.get("id")
            if not raw_id:  # the reference skips these silently
                self.add("structure", "warning", "chunk-missing-id", [],
                         f"Chunk entry #{entry.index + 1} has no (or an empty) id; skipped",
                         "Give the chunk an id like 'skill:python-async' matching its <Chunk> tag.",
                         at=self.at(entry, "id"))
                continue
            cid = raw_id if isinstance(raw_id, str) else str(raw_id)
            body = self.doc.body_chunk(cid)
            self.chunks.append(_Chunk(
                id=cid,
                entry=entry,
                context=_text(entry.data.get("context")),
                content=body.content if body is not None else "",
                tags=_tags(entry.data.get("tags")),
                entities=entry.data.get("entities"),
            ))

    # ------------------------------------------------------------ chunk checks

    def semantic_similarity(self) -> None:
        """Chunk pairs whose words overlap so much that retrieval cannot tell them apart."""
        words = [_words(c.context + " " + c.content) for c in self.chunks]
        for i, a in enumerate(self.chunks):
            for j in range(i + 1, len(self.chunks)):
                b = self.chunks[j]
                sim = _jaccard(words[i], words[j])
                if sim >= SIMILARITY_THRESHOLD:
                    shared = sorted(words[i] & words[j])[:10]
                    self.add("semantic_similarity", "warning", "similar-chunks", [a.id, b.id],
                             f"Chunks may confuse retrieval (similarity: {sim:.0%}). Shared keywords: {', '.join(shared)}",
                             f"Differentiate contexts: emphasize what makes '{a.id}' unique vs '{b.id}'. "
                             "Consider different use cases or examples.",
                             at=self.at(b.entry, "context"))

    def context_quality(self) -> None:
        """Contexts that are missing, too short, too long, or only echo the chunk's first words."""
        lo, hi = CONTEXT_OPTIMAL
        for c in self.chunks:
            at = self.at(c.entry, "context")
            count = len(c.context.split())
            if count == 0:
                self.add("context_quality", "error", "context-empty", [c.id], "Context is empty",
                         "Add a 15-25 word description that explains what this chunk covers "
                         "and how it differs from other chunks.",
                         {"context": f"[TODO: Describe the purpose and unique aspects of {c.id}]"}, at)
                continue
            if count < CONTEXT_MIN_WORDS:
                self.add("context_quality", "warning", "context-short", [c.id],
                         f"Context too short ({count} words, recommend {lo}-{hi})",
                         "Expand context with: what topic this covers, who would search for it, "
                         "and what makes it distinct from similar chunks.", at=at)
            if count > CONTEXT_MAX_WORDS:
                self.add("context_quality", "info", "context-long", [c.id],
                         f"Context may be too verbose ({count} words, recommend {lo}-{hi})",
                         "Consider condensing to key differentiating information only.", at=at)
            if c.content:
                opener = " ".join(c.content.split()[:ECHO_OPENER_WORDS])
                if _jaccard(_words(c.context), _words(opener)) > ECHO_THRESHOLD:
                    self.add("context_quality", "warning", "context-echo", [c.id],
                             "Context appears to just repeat the content opening",
                             "Rewrite context to explain the chunk's role in the document "
                             "rather than summarizing its content.", at=at)

    def tag_overlap(self) -> None:
        """Tags on nearly every chunk, and chunks with the very same tag set: both defeat filtering."""
        if len(self.chunks) < 2:
            return
        counts: Counter = Counter()
        for c in self.chunks:
            counts.update(list(dict.fromkeys(c.tags)))  # each tag once per chunk, in document order
        threshold = len(self.chunks) * UBIQUITOUS_SHARE
        ubiquitous = [t for t, n in counts.items() if n >= threshold]
        first_tagged = next((c for c in self.chunks if c.tags), self.chunks[0])
        if len(ubiquitous) > 1:
            self.add("tag_overlap", "info", "tags-ubiquitous", [c.id for c in self.chunks],
                     f"Tags appear in most chunks, reducing filtering effectiveness: {', '.join(ubiquitous)}",
                     "Consider using more specific sub-tags or adding differentiating tags "
                     "to enable precise filtering.", at=self.at(first_tagged.entry, "tags"))
        groups: dict[frozenset, list[_Chunk]] = {}
        for c in self.chunks:
            groups.setdefault(frozenset(c.tags), []).append(c)
        for tag_set, members in groups.items():
            if len(members) > 1 and tag_set:
                self.add("tag_overlap", "warning", "tags-identical", [c.id for c in members],
                         f"Identical tags: {sorted(tag_set)}",
                         "Add differentiating tags to each chunk based on their specific focus "
                         "(e.g., level:beginner vs level:advanced, or use:api vs use:cli).",
                         at=self.at(members[1].entry, "tags"))

    def id_naming(self) -> None:
        """Ids outside ``category:topic-name``, and category prefixes used only once."""
        prefixes: Counter = Counter()
        for c in self.chunks:
            if CHUNK_ID_FORMAT.match(c.id):
                prefixes[c.id.split(":")[0]] += 1
                continue
            self.add("id_naming", "warning", "id-format", [c.id],
                     "ID format should be 'category:topic-name' (lowercase, kebab-case)",
                     f"Rename to follow the pattern, e.g. '{_suggest_id(c.id)}' "
                     "(and rename its <Chunk> tag and any dependencies to match).",
                     at=self.at(c.entry, "id"))
        if len(prefixes) > 1:
            singles = [p for p, n in prefixes.items() if n == 1]
            if singles and len(singles) < len(prefixes):
                members = [c for c in self.chunks if c.id.split(":")[0] in singles]
                self.add("id_naming", "info", "id-rare-prefix", [c.id for c in members],
                         f"Uncommon category prefixes: {', '.join(singles)}",
                         "Consider grouping related chunks under the same category prefix "
                         "for better organization.", at=self.at(members[0].entry, "id"))

    # ------------------------------------------------------------ entity checks

    def entity_noise(self) -> None:
        """Entities named by a generic word add graph nodes that link everything to everything."""
        for e in self.doc.entities:
            if not isinstance(e.data, dict):
                continue
            name = _text(e.data.get("name")).strip().lower()
            if name in GENERIC_ENTITY_NAMES:
                eid = _text(e.data.get("id"))
                self.add("entity_noise", "warning", "entity-generic", [],
                         f"Entity '{eid}' uses a generic term ('{name}')",
                         "Remove generic entities and focus on domain-specific concepts, skills, or tools.",
                         at=self.at(e, "name"), entity_ids=[_jsonable(e.data.get("id"))])

    def entity_duplication(self) -> None:
        """Two entities with the same name (case-insensitive) split one concept in the graph."""
        seen: dict[str, Entry] = {}
        for e in self.doc.entities:
            if not isinstance(e.data, dict):
                continue
            name = _text(e.data.get("name")).strip().lower()
            if not name:
                continue
            if name not in seen:
                seen[name] = e
                continue
            first = seen[name]
            eid, first_id = _text(e.data.get("id")), _text(first.data.get("id"))
            self.add("entity_duplication", "warning", "entity-duplicate-name", [],
                     f"Entity '{eid}' has a duplicate name '{name}' already used by '{first_id}'",
                     "Merge these entities into a single canonical node and use 'aliases' if needed.",
                     at=self.at(e, "name"),
                     entity_ids=[_jsonable(e.data.get("id")), _jsonable(first.data.get("id"))])

    def entity_linking(self) -> None:
        """Chunks linking too many entities, or entities the catalog does not define."""
        defined = {e.id for e in self.doc.entities if isinstance(e.id, str)}
        for c in self.chunks:
            refs = c.entities
            if not isinstance(refs, list):
                continue
            at = self.at(c.entry, "entities")
            if len(refs) > MAX_CHUNK_ENTITIES:
                self.add("entity_linking", "warning", "entity-links-many", [c.id],
                         f"Chunk links to many entities ({len(refs)}). Recommend 1-{MAX_CHUNK_ENTITIES}.",
                         "Only link the most central entities discussed in this chunk.", at=at)
            bad = [r for r in refs if not isinstance(r, str) or r not in defined]
            if bad:
                kept = [r for r in refs if isinstance(r, str) and r in defined]
                self.add("entity_linking", "error", "entity-undefined", [c.id],
                         f"Chunk links to undefined entities: {', '.join(_show(r) for r in bad)}",
                         "Make sure all chunk entities are defined in the document-level entities catalog.",
                         {"entities": kept}, at, entity_ids=[_jsonable(r) for r in bad])

    # ------------------------------------------------------------ report

    def stats(self) -> dict[str, Any]:
        chunks = self.chunks
        entities = (self.doc.data or {}).get("entities")
        by_sev = Counter(i.severity for i in self.issues)
        return {
            "chunk_count": len(chunks),
            "entity_count": len(entities) if isinstance(entities, list) else 0,
            "avg_context_words": (sum(len(c.context.split()) for c in chunks) / len(chunks)) if chunks else 0,
            "unique_tags": len({t for c in chunks for t in c.tags}),
            "categories": sorted({c.id.split(":")[0] for c in chunks if ":" in c.id}),
            "issues_by_severity": {s: by_sev.get(s, 0) for s in ("error", "warning", "info")},
        }

    def run(self) -> None:
        ok = self.structure()
        if ok:
            self.semantic_similarity()
            self.context_quality()
            self.tag_overlap()
            self.id_naming()
        if self.doc.data is not None:  # the catalog is worth checking even without usable chunks
            self.entity_noise()
            self.entity_duplication()
        if ok:
            self.entity_linking()


# ---------------------------------------------------------------- public API


def diagnose(doc: Document, level: str = "diagnose") -> dict[str, Any]:
    """The reference-shaped report for one document; never raises on any document.

    ``level`` follows the reference: ``diagnose`` lists issues, ``suggest`` adds each
    ``suggestion``, ``fix`` also adds ``fix`` (a frontmatter patch) where one exists.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    d = _Diagnosis(doc)
    try:
        d.run()
    except Exception as exc:  # pragma: no cover - a bug must not take the whole workspace down
        d.add("structure", "error", "diagnose-internal-error", [],
              f"Diagnosis stopped early on an internal error: {type(exc).__name__}: {exc}",
              "Please report this document; the findings above it are still valid.")
    return {
        "filepath": doc.label,
        "stats": d.stats(),
        "issues": [i.to_json(level) for i in d.issues],
    }


def diagnose_workspace(docs: list[Document], level: str = "diagnose") -> list[dict[str, Any]]:
    """One report per document, in the order given (cross-document checks may come later)."""
    return [diagnose(doc, level) for doc in docs]
