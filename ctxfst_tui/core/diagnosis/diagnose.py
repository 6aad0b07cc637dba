"""Chunk-quality diagnosis: the checks of the reference ``diagnose_chunks.py``, with positions, and more.

The report keeps the reference's JSON shape (``filepath``, ``stats``, ``issues`` of
``category``/``severity``/``chunk_ids``/``message`` plus ``suggestion`` and ``fix`` by level)
so tools written for the reference keep working. Each issue also carries a stable ``rule``
code, the ids it concerns (``chunk_ids``, ``entity_ids``) and the exact ``line``/``column``
of the frontmatter entry or field (or of the ``<Chunk>`` tag for body-only problems).

Categories and rules (severity in brackets)::

    structure            file-*, yaml-*, no-frontmatter, frontmatter-not-mapping, missing-chunks,
                         chunks-not-list, no-chunks [error]; chunk-not-mapping, chunk-missing-id [warning]
    semantic_similarity  similar-chunks [warning]: word Jaccard >= 0.6 (reference) or TF-IDF cosine >= 0.5
    context_quality      context-empty [error], context-short [warning], context-long [info],
                         context-echo [warning], context-placeholder [warning]
    chunk_size           chunk-small [info] (< 100 cl100k tokens), chunk-large [warning] (> 1,500)
    tag_overlap          tags-ubiquitous [info], tags-identical [warning]
    id_naming            id-format [warning], id-rare-prefix [info]
    entity_noise         entity-generic [warning]
    entity_duplication   entity-duplicate-name [warning] (the reference's case-insensitive name check),
                         entity-duplicate [warning] (a "sure" alias cluster), entity-possible-duplicate
                         [info] (a "review" cluster), entity-inconsistent [warning] (one id, several
                         names/types across documents)
    entity_linking       entity-undefined [error] (one per bad reference), entity-links-many [warning],
                         entity-unused [info], entity-missing-link [warning/info], entity-weak-link [info],
                         entity-alias-candidate [info]
    dependencies         dependency-unknown [warning], dependency-external [info], dependency-cycle [warning]

At ``--level fix`` an issue that can be repaired mechanically carries ``fix``: an operation
dict that :func:`ctxfst_tui.core.workspace.fixes.apply_fix` applies (``op`` is one of merge_entities,
add_alias, update_entity, delete_entity, declare_entity, link_entity, unlink_entity,
relink_entity, set_context, remove_dependency). ``set_context`` keeps the reference's own
patch key (``context``).

Workspaces: :func:`diagnose_workspace` diagnoses several documents as one workspace and
returns one report per document. Cross-document knowledge is used everywhere: TF-IDF
weights come from all chunks; a pair of similar chunks from two documents is reported in
the reports of **both** documents (each at its own chunk, with ``files`` naming the two);
an entity cluster spanning documents is reported in every document declaring a member
(the same ``merge_entities`` fix, which acts on the whole workspace); an entity counts as
used when any document links it; a dependency cycle is reported once, in the document
whose ``dependencies`` entry the fix removes.

Unlike the reference, diagnosis never raises: broken YAML, a missing frontmatter, entries
that are not mappings, non-string ids or entity references all become issues.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import Any

from rapidfuzz.distance import OSA

from ctxfst_tui.core.entities.aliases import (
    acronym_of,
    numeronym_of,
    fingerprint,
    suggest_clusters,
)
from ctxfst_tui.core.format.chunk_tags import BodyChunk
from ctxfst_tui.core.format.document import Document, Entry, jsonable
from ctxfst_tui.core.format.validate import NEGATION

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

# Our own thresholds.
COSINE_THRESHOLD = 0.5  # TF-IDF cosine of context+content (stemmed, stopwords removed)
NEAR_DUPLICATE_COSINE = 0.9
CHUNK_TOKENS_MIN = 100
CHUNK_TOKENS_MAX = 1500
CHUNK_TOKENS_TARGET = (300, 800)
ALL_PAIRS_LIMIT = 400  # above this many chunks, similarity candidates come from an inverted index
CANDIDATE_MAX_DF = 0.3  # ... using only terms found in at most this share of the chunks
DRAFT_MARK = "[DRAFT]"
TODO_MARK = "[TODO"
OPERATIONAL_TYPES = frozenset({"state", "action", "goal", "agent", "evidence"})
REF_FIELDS = ("preconditions", "postconditions", "state_refs")

CHUNK_ID_FORMAT = re.compile(r"^[a-z]+:[a-z0-9-]+\Z")
WORD = re.compile(r"\b[a-zA-Z]{3,}\b")  # the reference's proxy for "meaningful word"
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")

# Findings that the issue order follows: a report lists issues category by category.
CATEGORIES = (
    "structure", "semantic_similarity", "context_quality", "chunk_size", "tag_overlap", "id_naming",
    "entity_noise", "entity_duplication", "entity_linking", "dependencies",
)


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
    extra: dict[str, Any] = field(default_factory=dict)

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
        for k, v in self.extra.items():
            out.setdefault(k, v)
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
    body: BodyChunk | None = None
    doc: int = 0  # index of the document in the workspace
    order: int = 0  # position among all chunks of the workspace

    def links(self) -> list[str]:
        return [r for r in self.entities if isinstance(r, str)] if isinstance(self.entities, list) else []


@dataclass
class _Ent:
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


def _slug_words(entity_id: str) -> str:
    """The readable part of an id: 'entity:graph-aware_retrieval' -> 'graph aware retrieval'."""
    return re.sub(r"[-_./]+", " ", entity_id.rsplit(":", 1)[-1]).strip()


def _quote_list(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(f"'{x}'" for x in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


# ---------------------------------------------------------------- TF-IDF (stdlib)


STOPWORDS = frozenset("""
a about above after again against all almost also although always am among an and another any anyone
anything are around as at be became because been before being below between both but by can cannot
could did do does doing done down during each either else enough etc even ever every few for from
further get gets got had has have having he her here hers him his how however i if in into is it its
itself just least less let like made make makes many may me might more most much must my near need
needs neither never no nor not now of off often on once one only onto or other others our ours out
over own per perhaps quite rather really said same say says see seen several shall she should since
so some something still such than that the their theirs them then there these they thing things this
those though through thus to too toward under until up upon us use used uses using very via was way
we well were what whatever when where whether which while who whom whose why will with within without
would yet you your yours
""".split())
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    """A small suffix stripper, enough to join 'deploy/deploys/deploying/deployment/deployed'."""
    w = word
    if len(w) <= 3 or not w.isascii():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ments", "ment", "ings", "ing", "ions", "ion", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix.startswith("ion") and w[-len(suffix) - 1] not in "ts":
                continue
            w = w[: -len(suffix)]
            if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # running -> run
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def _terms(text: str) -> tuple[Counter, dict[str, Counter]]:
    """Stemmed term counts of ``text`` (stopwords and 1-letter tokens dropped) and their surface forms."""
    counts: Counter = Counter()
    surface: dict[str, Counter] = {}
    for tok in _TOKEN.findall(text.casefold()):
        if len(tok) < 2 or tok.isdigit() or tok in STOPWORDS:
            continue
        s = _stem(tok)
        counts[s] += 1
        surface.setdefault(s, Counter())[tok] += 1
    return counts, surface


class _TfIdf:
    """L2-normalised TF-IDF vectors (sublinear tf, smoothed idf) over a list of texts."""

    def __init__(self, texts: list[str]):
        parsed = [_terms(t) for t in texts]
        self.n = len(texts)
        self.df: Counter = Counter()
        for counts, _ in parsed:
            self.df.update(counts.keys())
        self.surface: dict[str, Counter] = {}
        self.vectors: list[dict[str, float]] = []
        self.terms: list[set[str]] = [set(counts) for counts, _ in parsed]
        for counts, surface in parsed:
            for s, c in surface.items():
                self.surface.setdefault(s, Counter()).update(c)
            vec = {t: (1.0 + math.log(c)) * (math.log((1 + self.n) / (1 + self.df[t])) + 1.0) for t, c in counts.items()}
            norm = math.sqrt(sum(w * w for w in vec.values()))
            self.vectors.append({t: w / norm for t, w in vec.items()} if norm else {})

    def cosine(self, i: int, j: int) -> float:
        a, b = self.vectors[i], self.vectors[j]
        if len(a) > len(b):
            a, b = b, a
        return sum(w * b[t] for t, w in a.items() if t in b)

    def shared_terms(self, i: int, j: int, limit: int = 8) -> list[str]:
        """The shared terms that weigh most in both chunks, as written."""
        a, b = self.vectors[i], self.vectors[j]
        shared = sorted((t for t in a if t in b), key=lambda t: (-a[t] * b[t], t))[:limit]
        return [self.surface[t].most_common(1)[0][0] for t in shared]

    def candidates(self, limit: int = ALL_PAIRS_LIMIT) -> list[tuple[int, int]]:
        """Pairs worth scoring: all of them for a small workspace, else those sharing a rarer term."""
        if self.n <= limit:
            return list(combinations(range(self.n), 2))
        postings: dict[str, list[int]] = defaultdict(list)
        for i, vec in enumerate(self.vectors):
            for t in vec:
                postings[t].append(i)
        cap = max(2, int(self.n * CANDIDATE_MAX_DF))
        pairs: set[tuple[int, int]] = set()
        for ids in postings.values():
            if 2 <= len(ids) <= cap:
                pairs.update(combinations(ids, 2))
        return sorted(pairs)


# ---------------------------------------------------------------- mention matching


ONE_LETTER_WORDS = frozenset({"A", "I", "a"})  # an entity named "A" is not mentioned by every sentence


def _form_pattern(form: str) -> str:
    """A form as a regex: case-insensitive when it has 3+ characters, exact for short ones (Go, JS)."""
    body = r"\s+".join(re.escape(part) for part in form.split())
    return f"(?i:{body})" if len(form.strip()) >= 3 else body


def _fold(form: str) -> str:
    form = " ".join(form.split())
    return form.casefold() if len(form) >= 3 else form


class _Mentions:
    """Finds word-bounded mentions of entity names and aliases; the longest form wins at a position."""

    def __init__(self, ents: list[_Ent]):
        self.by_form: dict[str, list[str]] = {}
        for e in ents:
            for f in e.forms:
                if f.strip() in ONE_LETTER_WORDS:
                    continue
                ids = self.by_form.setdefault(_fold(f), [])
                if e.id not in ids:
                    ids.append(e.id)
        forms = sorted({" ".join(f.split()) for e in ents for f in e.forms if f.strip() not in ONE_LETTER_WORDS},
                       key=lambda f: (-len(f), f))
        self.regex = re.compile(r"(?<!\w)(?:" + "|".join(_form_pattern(f) for f in forms) + r")(?!\w)") if forms else None

    def find(self, text: str) -> list[tuple[int, str, list[str]]]:
        """(offset, text as written, entity ids) of each mention."""
        if self.regex is None or not text:
            return []
        out = []
        for m in self.regex.finditer(text):
            ids = self.by_form.get(_fold(m.group(0)))
            if ids:
                out.append((m.start(), m.group(0), ids))
        return out


@lru_cache(maxsize=20_000)
def _form_stems(form: str) -> frozenset[str]:
    return frozenset(_terms(form)[0])


def _appears(e: _Ent, terms: set[str], raw: str, fp_text: list[str]) -> bool:
    """True when a name, alias or the id's words of ``e`` occur in a chunk (leniently: stems, any order).
    ``fp_text`` is a one-item cache of the chunk's fingerprint, computed only when needed."""
    forms = [*e.forms, _slug_words(e.id)]
    for form in forms:
        if len(form.strip()) < 3:
            if re.search(r"(?<!\w)" + re.escape(form.strip()) + r"(?!\w)", raw):
                return True
            continue
        stems = _form_stems(form)
        if stems and stems <= terms:
            return True
    for form in forms:
        fp = fingerprint(form)
        if len(fp) >= 5:
            if not fp_text:
                fp_text.append(fingerprint(raw))
            if fp in fp_text[0]:
                return True
    return False


# ---------------------------------------------------------------- one document


class _Diagnosis:
    """Runs every check over one document of a workspace and collects issues."""

    def __init__(self, doc: Document, ws: "_Workspace | None" = None, index: int = 0):
        self.doc = doc
        self.ws = ws
        self.index = index
        self.issues: list[Issue] = []
        self.chunks: list[_Chunk] = []
        self.ents: list[_Ent] = []
        self.ok = False

    def add(self, category: str, severity: str, rule: str, chunk_ids: list[str], message: str,
            suggestion: str = "", fix: dict | None = None, at: tuple[int, int] = (0, 0),
            entity_ids: list[Any] | None = None, **extra: Any) -> Issue:
        issue = Issue(category, severity, rule, chunk_ids, message, suggestion, fix or {}, at[0], at[1],
                      entity_ids, {k: v for k, v in extra.items() if v is not None})
        self.issues.append(issue)
        return issue

    def at(self, entry: Entry, key: str) -> tuple[int, int]:
        return entry.field_line(self.doc, key)

    def body_at(self, c: _Chunk, fallback: str = "id") -> tuple[int, int]:
        if c.body is not None:
            return c.body.open.line, c.body.open.column
        return self.at(c.entry, fallback)

    def offset_at(self, c: _Chunk, raw_offset: int) -> tuple[int, int]:
        """File position of an offset into the chunk's raw body content."""
        assert c.body is not None
        return self.doc.index.position(c.body.content_span.start + raw_offset)

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
        self.collect_entities()
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

    def collect_entities(self) -> None:
        for e in self.doc.entities:
            if not isinstance(e.data, dict) or not isinstance(e.data.get("id"), str):
                continue
            name = _text(e.data.get("name")).strip()
            aliases = e.data.get("aliases")
            aliases = [str(a).strip() for a in aliases if isinstance(a, (str, int, float)) and not isinstance(a, bool)
                       and str(a).strip()] if isinstance(aliases, list) else []
            t = e.data.get("type")
            self.ents.append(_Ent(e.data["id"], e, name, t if isinstance(t, str) else None, aliases, self.index))

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
                body=body,
                doc=self.index,
            ))

    # ------------------------------------------------------------ chunk checks

    def semantic_similarity(self) -> None:
        """Chunk pairs that retrieval cannot tell apart: the reference's word Jaccard, or TF-IDF cosine."""
        for pair in self.ws.similar_pairs if self.ws else []:
            a, b = pair.a, pair.b
            if self.index not in (a.doc, b.doc):
                continue
            here = b if b.doc == self.index else a
            other = a if here is b else b
            cross = a.doc != b.doc
            score = max(pair.cosine, pair.jaccard)
            near = pair.cosine >= NEAR_DUPLICATE_COSINE
            terms = ", ".join(pair.terms) if pair.terms else "none"
            where = f" (in {self.ws.docs[other.doc].label})" if cross else ""
            suggestion = (f"Differentiate contexts: emphasize what makes '{a.id}' unique vs '{b.id}'{where}. "
                          "Consider different use cases or examples.")
            if near:
                suggestion += " They are near-duplicates: if they say the same thing, keep one and delete the other."
            self.add("semantic_similarity", "warning", "similar-chunks", [a.id, b.id],
                     f"Chunks may confuse retrieval (similarity: {score:.0%}; TF-IDF cosine {pair.cosine:.2f}, "
                     f"word overlap {pair.jaccard:.0%}){where}. Shared distinctive terms: {terms}",
                     suggestion, at=self.at(here.entry, "context"),
                     cosine=round(pair.cosine, 4), jaccard=round(pair.jaccard, 4), shared_terms=list(pair.terms),
                     files=[self.ws.docs[a.doc].label, self.ws.docs[b.doc].label] if cross else None)

    def context_quality(self) -> None:
        """Contexts that are missing, too short, too long, placeholders, or only echo the chunk's first words."""
        lo, hi = CONTEXT_OPTIMAL
        for c in self.chunks:
            at = self.at(c.entry, "context")
            count = len(c.context.split())
            if count == 0:
                draft = _draft_context(c)
                self.add("context_quality", "error", "context-empty", [c.id], "Context is empty",
                         "Add a 15-25 word description that explains what this chunk covers "
                         "and how it differs from other chunks." + (" The fix writes a draft from the chunk's heading "
                                                                    "and first sentence: rewrite it." if draft.startswith(DRAFT_MARK) else ""),
                         {"op": "set_context", "chunk_id": c.id, "context": draft, "replaces": c.context}, at)
                continue
            if DRAFT_MARK in c.context or TODO_MARK in c.context:
                self.add("context_quality", "warning", "context-placeholder", [c.id],
                         "Context is still a placeholder or a draft",
                         "Rewrite it as a 15-25 word description of what this chunk covers and why someone would search for it.",
                         at=at)
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

    def chunk_size(self) -> None:
        """Chunks too small to carry meaning alone, or too large to retrieve precisely (cl100k tokens)."""
        if self.ws is None:
            return
        lo, hi = CHUNK_TOKENS_TARGET
        in_body = [c for c in sorted(self.chunks, key=lambda c: c.body.open.start if c.body else 0) if c.body is not None]
        for k, c in enumerate(in_body):
            n = self.ws.tokens.get(c.order)
            if n is None or not c.content:
                continue
            unit = "tokens" if self.ws.exact_tokens else "tokens (estimated)"
            if n < CHUNK_TOKENS_MIN:
                neighbours = [x for x in (in_body[k - 1] if k else None, in_body[k + 1] if k + 1 < len(in_body) else None) if x]
                best = None
                if neighbours:
                    def rank(x: _Chunk) -> tuple:
                        return (-self.ws.cosine(c, x), self.ws.tokens.get(x.order, 0))
                    best = min(neighbours, key=rank)
                if best is not None:
                    together = n + self.ws.tokens.get(best.order, 0)
                    how = f"Merge it with the {'previous' if best.body.open.start < c.body.open.start else 'next'} chunk '{best.id}' ({together} {unit.split()[0]} together)"
                else:
                    how = "Add the background a reader needs to use it alone"
                self.add("chunk_size", "info", "chunk-small", [c.id],
                         f"Chunk is small ({n} {unit}; aim for {lo}-{hi}): retrieved alone it carries little context",
                         f"{how}, or expand it to {lo}-{hi} tokens.", at=self.body_at(c),
                         tokens=n, merge_with=best.id if best is not None else None)
            elif n > CHUNK_TOKENS_MAX:
                parts = max(2, math.ceil(n / hi))
                headings = [h for h in (HEADING.match(line) for line in c.content.splitlines()[1:]) if h]
                where = (f"at its headings ({_quote_list([h.group(1) for h in headings], 4)})" if headings
                         else "at paragraph breaks")
                self.add("chunk_size", "warning", "chunk-large", [c.id],
                         f"Chunk is large ({n} {unit}; aim for {lo}-{hi}): one embedding blurs its topics",
                         f"Split it into about {parts} chunks of {lo}-{hi} tokens {where}, each with its own id and context "
                         "(ctxfst-tui chunk can propose the cuts).", at=self.body_at(c), tokens=n)

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
                fix = {"op": "delete_entity", "entity_id": eid} if isinstance(e.data.get("id"), str) else None
                self.add("entity_noise", "warning", "entity-generic", [],
                         f"Entity '{eid}' uses a generic term ('{name}')",
                         "Remove generic entities and focus on domain-specific concepts, skills, or tools "
                         "(the fix deletes it and its links).",
                         fix, at=self.at(e, "name"), entity_ids=[_jsonable(e.data.get("id"))])

    def entity_duplication(self) -> None:
        """Entities naming the same thing: alias clusters, the reference's same-name check, and
        one id declared differently in several documents."""
        covered: set[frozenset] = set()
        mine = {e.id for e in self.ents}
        for cl in self.ws.clusters if self.ws else []:
            here = [m for m in cl.members if m in mine]
            if not here:
                continue
            pairs = {frozenset(p) for p in combinations(cl.members, 2)}
            covered |= pairs
            same_name = self.ws.same_name_pairs & pairs
            rest = [m for m in cl.members if m != cl.canonical]
            anchor = next((m for m in cl.members if m in mine and m != cl.canonical), here[0])
            entry = next(e.entry for e in self.ents if e.id == anchor)
            names = ", ".join(f"{m} ('{self.ws.names.get(m, m)}')" for m in cl.members)
            elsewhere = sorted({self.ws.docs[d].label for m in cl.members for d in self.ws.declared_in.get(m, []) if d != self.index})
            where = f" (also declared in {', '.join(elsewhere)})" if elsewhere else ""
            why = "; ".join(cl.reasons)
            if same_name:
                rule, severity = "entity-duplicate-name", "warning"
                a, b = sorted(min(same_name, key=lambda p: sorted(self.ws.decl_rank(x) for x in p)), key=self.ws.decl_rank)
                msg = f"Entity '{b}' has a duplicate name '{self.ws.names.get(b, '').lower()}' already used by '{a}'"
                if len(cl.members) > 2:
                    msg += f"; the cluster also holds {_quote_list([m for m in cl.members if m not in (a, b)])}"
                msg += where
            elif cl.tier == "sure":
                rule, severity = "entity-duplicate", "warning"
                msg = f"Entities {names} name the same thing{where}"
            else:
                rule, severity = "entity-possible-duplicate", "info"
                msg = f"Entities {names} may name the same thing (review){where}"
            msg += f"; canonical candidate: {cl.canonical}"
            self.add("entity_duplication", severity, rule, [], msg,
                     f"Merge {_quote_list(rest)} into '{cl.canonical}' (their names become aliases). Why: {why}.",
                     {"op": "merge_entities", "into": cl.canonical, "merged": rest},
                     at=self.at(entry, "name"), entity_ids=list(cl.members),
                     tier=cl.tier, canonical=cl.canonical, reasons=list(cl.reasons))
        # the reference's check, for pairs no cluster joined (e.g. the same id declared twice)
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
            if frozenset((eid, first_id)) in covered:
                continue
            same_id = e.data.get("id") == first.data.get("id")
            self.add("entity_duplication", "warning", "entity-duplicate-name", [],
                     f"Entity '{eid}' has a duplicate name '{name}' already used by '{first_id}'",
                     "Remove the second declaration of the same id." if same_id else
                     "Merge these entities into a single canonical node and use 'aliases' if needed.",
                     None if same_id or not (isinstance(e.data.get("id"), str) and isinstance(first.data.get("id"), str))
                     else {"op": "merge_entities", "into": first_id, "merged": [eid]},
                     at=self.at(e, "name"),
                     entity_ids=[_jsonable(e.data.get("id")), _jsonable(first.data.get("id"))])
        # one id, different identities across documents
        for e in self.ents:
            first = self.ws.first_decl.get(e.id) if self.ws else None
            if first is None or first.doc == e.doc:
                continue
            diffs = {}
            if first.name and e.name != first.name:
                diffs["name"] = first.name
            if first.type and e.type != first.type:
                diffs["type"] = first.type
            if not diffs:
                continue
            here = " and ".join(f"{k} '{getattr(e, k)}'" for k in diffs)
            there = " and ".join(f"'{v}'" for v in diffs.values())
            self.add("entity_duplication", "warning", "entity-inconsistent", [],
                     f"Entity '{e.id}' has {here} here but {there} in {self.ws.docs[first.doc].label}",
                     "Declare one entity the same way in every document.",
                     {"op": "update_entity", "entity_id": e.id, **diffs},
                     at=self.at(e.entry, next(iter(diffs))), entity_ids=[e.id])

    def entity_linking(self) -> None:
        """Links that point nowhere, too many links, unused entities, missing, weak and alias links."""
        if self.ok:
            start = len(self.issues)
            self.missing_and_weak()  # first: the many-links suggestion names the weak links
            later = self.issues[start:]
            del self.issues[start:]
            self.undefined_and_many()
            self.issues.extend(later)
            self.alias_candidates()
        self.unused()

    def undefined_and_many(self) -> None:
        defined = {e.id: e for e in self.ents}
        for c in self.chunks:
            refs = c.entities
            if not isinstance(refs, list):
                continue
            at = self.at(c.entry, "entities")
            if len(refs) > MAX_CHUNK_ENTITIES:
                weak = [e for e in self.ws.weak.get(c.order, [])] if self.ws else []
                self.add("entity_linking", "warning", "entity-links-many", [c.id],
                         f"Chunk links to many entities ({len(refs)}). Recommend 1-{MAX_CHUNK_ENTITIES}.",
                         "Only link the most central entities discussed in this chunk"
                         + (f"; these are not named in it: {_quote_list(weak)}." if weak else "."), at=at)
            for ref in refs:
                if isinstance(ref, str) and ref in defined:
                    continue
                self.undefined(c, ref, at)

    def undefined(self, c: _Chunk, ref: Any, at: tuple[int, int]) -> None:
        raw = jsonable(ref)
        fix: dict[str, Any] = {"op": "unlink_entity", "chunk_id": c.id, "entity_id": raw}
        how = "unlinks it"
        if isinstance(ref, str) and self.ws is not None:
            other = self.ws.first_decl.get(ref)
            near = self.near_entity(ref)
            named = self.named_in(c, _slug_words(ref))
            if other is not None:
                ident = {"id": ref, "name": other.name or _slug_words(ref), "type": other.type or "concept"}
                if other.aliases:
                    ident["aliases"] = list(other.aliases)
                fix = {"op": "declare_entity", "chunk_id": c.id, "entity": ident}
                how = f"declares it here as {self.ws.docs[other.doc].label} does"
            elif near is not None:
                fix = {"op": "relink_entity", "chunk_id": c.id, "entity_id": ref, "into": near}
                how = f"links '{near}' instead (probably meant)"
            elif named is not None:
                fix = {"op": "declare_entity", "chunk_id": c.id,
                       "entity": {"id": ref, "name": named, "type": "concept"}}
                how = f"declares it (the chunk names '{named}'; the type 'concept' is a guess)"
        self.add("entity_linking", "error", "entity-undefined", [c.id],
                 f"Chunk links to undefined entities: {_show(ref)}",
                 f"Make sure all chunk entities are defined in the document-level entities catalog (the fix {how}).",
                 fix, at, entity_ids=[_jsonable(ref)])

    def near_entity(self, ref: str) -> str | None:
        """A declared entity ``ref`` probably means: same name/alias/slug key, or a one-letter typo of its id."""
        key = fingerprint(_slug_words(ref))
        hits = set()
        for e in self.ents:
            keys = {fingerprint(f) for f in e.forms} | {fingerprint(_slug_words(e.id))}
            if key and key in keys:
                hits.add(e.id)
            elif len(ref) >= 6 and OSA.distance(ref, e.id) <= 1:
                hits.add(e.id)
        return hits.pop() if len(hits) == 1 else None

    def named_in(self, c: _Chunk, words: str) -> str | None:
        """How a chunk writes a phrase (case-insensitive, spaces/hyphens/dots between its words), if it does."""
        parts = [re.escape(p) for p in words.split() if p]
        if not parts or len("".join(parts)) < 3:
            return None
        rx = re.compile(r"(?<!\w)" + r"[\s\-_.]*".join(parts) + r"(?!\w)", re.IGNORECASE)
        for text in (c.context, c.content):
            m = rx.search(text)
            if m:
                return m.group(0)
        return None

    def missing_and_weak(self) -> None:
        """Chunks naming a declared entity without linking it, and links to entities the chunk never names."""
        ents = {e.id: e for e in self.ents}
        candidates = [e for e in self.ents if e.type not in OPERATIONAL_TYPES and e.name.lower() not in GENERIC_ENTITY_NAMES]
        matcher = _Mentions(candidates)
        for c in self.chunks:
            links = c.links()
            linked = set(links)
            mates = set().union(*(self.ws.mates.get(x, set()) for x in linked)) if self.ws else set()
            linked_forms = {_fold(f) for x in linked if x in ents for f in ents[x].forms}
            found: dict[str, dict[str, Any]] = {}
            for where, text in (("context", c.context), ("content", c.body.raw_content if c.body else "")):
                for off, written, ids in matcher.find(text):
                    if _fold(written) in linked_forms:
                        continue
                    for eid in ids:
                        if eid in linked or eid in mates:
                            continue
                        hit = found.setdefault(eid, {"count": 0, "context": False, "first": None})
                        hit["count"] += 1
                        hit["context"] |= where == "context"
                        if hit["first"] is None:
                            line, col = self.at(c.entry, "context") if where == "context" else self.offset_at(c, off)
                            hit["first"] = {"text": written, "line": line, "column": col, "in": where}
            at = self.at(c.entry, "entities")
            for eid, hit in found.items():
                strong = hit["context"] or hit["count"] >= 2
                first = hit["first"]
                times = f"{hit['count']} time{'s' if hit['count'] != 1 else ''}"
                self.add("entity_linking", "warning" if strong else "info", "entity-missing-link", [c.id],
                         f"Chunk names '{first['text']}' ({eid}) {times}"
                         f"{' in its context' if hit['context'] else ''} but does not link it",
                         f"Add '{eid}' to the chunk's entities so graph retrieval finds it"
                         + (f" (it already links {len(links)}; keep the most central {MAX_CHUNK_ENTITIES})"
                            if len(links) >= MAX_CHUNK_ENTITIES else "") + ".",
                         {"op": "link_entity", "chunk_id": c.id, "entity_id": eid}, at,
                         entity_ids=[eid], mention=first)
            # weak links: linked, declared, descriptive, yet never named
            raw = " ".join([c.context, c.content, *c.tags])
            terms = (self.ws.tfidf.terms[c.order] if self.ws and self.ws.tfidf else set(_terms(raw)[0]))
            terms = terms | set(_terms(" ".join(c.tags))[0])
            fp_text: list[str] = []
            for eid in dict.fromkeys(links):
                e = ents.get(eid)
                if e is None or e.type in OPERATIONAL_TYPES:
                    continue
                if not _appears(e, terms, raw, fp_text):
                    if self.ws is not None:
                        self.ws.weak.setdefault(c.order, []).append(eid)
                    self.add("entity_linking", "info", "entity-weak-link", [c.id],
                             f"Chunk links '{eid}' but never names it ('{e.name or _slug_words(eid)}' "
                             "and its aliases appear nowhere in its context, content or tags)",
                             "Unlink it if the chunk is not about it, or mention it (or add the name used here as an alias).",
                             {"op": "unlink_entity", "chunk_id": c.id, "entity_id": eid}, at, entity_ids=[eid])

    def alias_candidates(self) -> None:
        """Chunks that define an abbreviation of an entity ('Google Kubernetes Engine (GKE)') it lacks as alias."""
        if self.ws is None:
            return
        known = self.ws.form_keys
        seen: set[tuple[str, str]] = set()
        for c in self.chunks:
            text = c.context + "\n" + c.content
            if "(" not in text:
                continue
            folded = text.casefold()
            for e in self.ents:
                for form in e.forms:
                    if len(form) < 4 or form.split()[0].casefold() not in folded:
                        continue
                    x = r"\s+".join(re.escape(p) for p in form.split())
                    short = r"([A-Za-z][A-Za-z0-9.+#-]{1,11})"
                    for rx in (re.compile(r"(?<!\w)(?i:" + x + r")\s*\(\s*" + short + r"\s*\)"),
                               re.compile(r"(?<!\w)" + short + r"\s*\(\s*(?i:" + x + r")\s*\)")):
                        for m in rx.finditer(text):
                            alias = m.group(1).rstrip(".")
                            if fingerprint(alias) in known or (e.id, fingerprint(alias)) in seen:
                                continue
                            if not (acronym_of(alias, form) or numeronym_of(alias, form)):
                                continue
                            seen.add((e.id, fingerprint(alias)))
                            self.add("entity_linking", "info", "entity-alias-candidate", [c.id],
                                     f"Chunk writes '{m.group(0)}' but '{alias}' is not an alias of {e.id}",
                                     f"Add '{alias}' to the aliases of '{e.id}' so mentions of it are recognised.",
                                     {"op": "add_alias", "entity_id": e.id, "alias": alias},
                                     at=self.at(e.entry, "aliases"), entity_ids=[e.id])

    def unused(self) -> None:
        """Entities no chunk links and no state reference names, anywhere in the workspace."""
        if self.ws is None:
            return
        for e in self.ents:
            if e.id in self.ws.used:
                continue
            mentioned = self.ws.mentioned_by.get(e.id, [])
            if mentioned:
                self.add("entity_linking", "info", "entity-unused", [],
                         f"Entity '{e.id}' is declared but no chunk links it",
                         f"Link it from the chunk(s) that name it: {_quote_list(mentioned)}.",
                         at=self.at(e.entry, "id"), entity_ids=[e.id])
            else:
                self.add("entity_linking", "info", "entity-unused", [],
                         f"Entity '{e.id}' is declared but no chunk links or names it",
                         "Delete it, or link it from the chunks that are about it.",
                         {"op": "delete_entity", "entity_id": e.id}, at=self.at(e.entry, "id"), entity_ids=[e.id])

    # ------------------------------------------------------------ dependencies

    def dependencies(self) -> None:
        """Dependencies on chunks that exist nowhere, on other documents, and dependency cycles."""
        mine = {c.id for c in self.chunks}
        for c in self.chunks:
            deps = c.entry.data.get("dependencies")
            if not isinstance(deps, list):
                continue
            at = self.at(c.entry, "dependencies")
            for dep in deps:
                if isinstance(dep, str) and dep in mine:
                    continue
                if isinstance(dep, str) and self.ws is not None and dep in self.ws.chunk_docs:
                    others = sorted({self.ws.docs[d].label for d in self.ws.chunk_docs[dep]})
                    self.add("dependencies", "info", "dependency-external", [c.id],
                             f"Dependency '{dep}' is a chunk of another document ({', '.join(others)})",
                             "Fine within this workspace, but the document alone does not resolve it "
                             "(validate warns); keep the documents together.", at=at, dependency=dep)
                    continue
                near = self.near_chunk(dep) if isinstance(dep, str) else None
                self.add("dependencies", "warning", "dependency-unknown", [c.id],
                         f"Dependency {_show(dep)} is not a chunk of this workspace",
                         (f"Did you mean '{near}'? " if near else "") + "Fix the id, or remove the dependency.",
                         {"op": "remove_dependency", "chunk_id": c.id, "dependency": jsonable(dep)}, at,
                         dependency=jsonable(dep))
        for cyc in self.ws.cycles if self.ws else []:
            if cyc.doc != self.index:
                continue
            loop = " -> ".join([*cyc.nodes, cyc.nodes[0]])
            files = sorted({self.ws.docs[d].label for n in cyc.nodes for d in self.ws.chunk_docs.get(n, [])})
            self.add("dependencies", "warning", "dependency-cycle", list(cyc.nodes),
                     f"Dependency cycle: {loop}" + (" (a chunk depends on itself)" if len(cyc.nodes) == 1 else ""),
                     f"A prerequisite order cannot be circular: remove the dependency of '{cyc.source}' on '{cyc.target}'"
                     + (" (it points forward in the document)" if cyc.forward else "") + ".",
                     {"op": "remove_dependency", "chunk_id": cyc.source, "dependency": cyc.target},
                     at=self.at(cyc.entry, "dependencies"), cycle=[*cyc.nodes, cyc.nodes[0]],
                     files=files if len(files) > 1 else None)

    def near_chunk(self, dep: str) -> str | None:
        ids = list(self.ws.chunk_docs) if self.ws else [c.id for c in self.chunks]
        close = [i for i in ids if OSA.distance(dep, i) <= 2]
        return close[0] if len(close) == 1 else None

    # ------------------------------------------------------------ report

    def stats(self) -> dict[str, Any]:
        chunks = self.chunks
        entities = (self.doc.data or {}).get("entities")
        by_sev = Counter(i.severity for i in self.issues)
        out = {
            "chunk_count": len(chunks),
            "entity_count": len(entities) if isinstance(entities, list) else 0,
            "avg_context_words": (sum(len(c.context.split()) for c in chunks) / len(chunks)) if chunks else 0,
            "unique_tags": len({t for c in chunks for t in c.tags}),
            "categories": sorted({c.id.split(":")[0] for c in chunks if ":" in c.id}),
            "issues_by_severity": {s: by_sev.get(s, 0) for s in ("error", "warning", "info")},
        }
        counts = [self.ws.tokens[c.order] for c in chunks if self.ws and c.order in self.ws.tokens]
        if counts:
            out["chunk_tokens"] = {"min": min(counts), "median": statistics.median(counts), "max": max(counts),
                                   "total": sum(counts)}
        return out

    def checks(self) -> None:
        steps = []
        if self.ok:
            steps += [self.semantic_similarity, self.context_quality, self.chunk_size, self.tag_overlap, self.id_naming]
        if self.doc.data is not None:  # the catalog is worth checking even without usable chunks
            steps += [self.entity_noise, self.entity_duplication, self.entity_linking]
        if self.ok:
            steps.append(self.dependencies)
        for step in steps:
            try:
                step()
            except Exception as exc:  # pragma: no cover - a bug must not take the whole workspace down
                self.add("structure", "error", "diagnose-internal-error", [],
                         f"Diagnosis step '{step.__name__}' stopped on an internal error: {type(exc).__name__}: {exc}",
                         "Please report this document; the other findings are still valid.")


def _draft_context(c: _Chunk) -> str:
    """A draft context from the chunk's heading and first sentence, marked as a draft (or the reference's TODO)."""
    heading, sentence = "", ""
    for block in re.split(r"\n\s*\n", c.content):
        prose = []
        for line in block.splitlines():
            h = HEADING.match(line)
            if h:
                heading = heading or _plain(h.group(1))
            elif line.strip() and not line.lstrip().startswith(("```", "~~~", "|", "<")):
                prose.append(line.strip())
        if prose and not sentence:
            text = _plain(" ".join(prose))
            sentence = re.split(r"(?<=[.!?])\s+", text, maxsplit=1)[0]
        if sentence:
            break
    words = " ".join(x for x in (heading + ":" if heading and sentence else heading, sentence) if x).split()
    if not words:
        return f"[TODO: Describe the purpose and unique aspects of {c.id}]"
    text = " ".join(words[:30]) + ("..." if len(words) > 30 else "")
    return f"{DRAFT_MARK} {text}"


def _plain(text: str) -> str:
    """Markdown inline syntax removed: links keep their text, emphasis/code marks and list markers go."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", text)
    text = re.sub(r"[`*_>]+", "", text)
    return " ".join(text.split())


# ---------------------------------------------------------------- the workspace


@dataclass
class _Pair:
    a: _Chunk
    b: _Chunk
    cosine: float
    jaccard: float
    terms: list[str]


@dataclass
class _Cycle:
    nodes: list[str]
    source: str
    target: str
    doc: int
    entry: Entry
    forward: bool


class _Workspace:
    """What every document's diagnosis needs to know about the others."""

    def __init__(self, docs: list[Document]):
        self.docs = docs
        self.diags = [_Diagnosis(d, self, i) for i, d in enumerate(docs)]
        self.similar_pairs: list[_Pair] = []
        self.clusters: list[Any] = []
        self.mates: dict[str, set[str]] = {}
        self.same_name_pairs: set[frozenset] = set()
        self.names: dict[str, str] = {}
        self.first_decl: dict[str, _Ent] = {}
        self.declared_in: dict[str, list[int]] = {}
        self.used: set[str] = set()
        self.mentioned_by: dict[str, list[str]] = {}
        self.form_keys: set[str] = set()
        self.chunk_docs: dict[str, list[int]] = {}
        self.tokens: dict[int, int] = {}  # by chunk order
        self.exact_tokens = True
        self.weak: dict[int, list[str]] = {}  # by chunk order
        self.cycles: list[_Cycle] = []
        self.tfidf: _TfIdf | None = None

    @property
    def chunks(self) -> list[_Chunk]:
        return [c for d in self.diags if d.ok for c in d.chunks]

    @property
    def ents(self) -> list[_Ent]:
        return [e for d in self.diags for e in d.ents]

    def run(self) -> None:
        for d in self.diags:
            try:
                d.ok = d.structure()
            except Exception as exc:  # pragma: no cover
                d.add("structure", "error", "diagnose-internal-error", [],
                      f"Diagnosis stopped early on an internal error: {type(exc).__name__}: {exc}",
                      "Please report this document; the findings above it are still valid.")
        for step in (self.index_chunks, self.index_entities, self.similarity, self.entity_clusters,
                     self.count_tokens, self.dependency_cycles):
            try:
                step()
            except Exception as exc:  # pragma: no cover - keep the per-document checks running
                self.diags[0].add("structure", "error", "diagnose-internal-error", [],
                                  f"Workspace step '{step.__name__}' failed: {type(exc).__name__}: {exc}",
                                  "Please report this workspace; per-document findings are still valid.")
        for d in self.diags:
            d.checks()

    # ------------------------------------------------------------ indexes
    def index_chunks(self) -> None:
        for k, c in enumerate(self.chunks):
            c.order = k
            docs = self.chunk_docs.setdefault(c.id, [])
            if c.doc not in docs:
                docs.append(c.doc)

    def index_entities(self) -> None:
        for e in self.ents:
            self.first_decl.setdefault(e.id, e)
            self.names.setdefault(e.id, e.name)
            docs = self.declared_in.setdefault(e.id, [])
            if e.doc not in docs:
                docs.append(e.doc)

        self.form_keys = {fingerprint(f) for e in self.ents for f in e.forms}
        for d in self.diags:
            if d.doc.data is None:
                continue
            for section in ("entities", "chunks"):
                for entry in d.doc.entries(section):
                    if not isinstance(entry.data, dict):
                        continue
                    keys = (("entities",) if section == "chunks" else ()) + REF_FIELDS
                    for key in keys:
                        refs = entry.data.get(key)
                        if isinstance(refs, list):
                            self.used.update(NEGATION.sub("", r).strip() for r in refs if isinstance(r, str))
        # who names each entity (for unused entities: link, rather than delete)
        for d in self.diags:
            if not d.ok:
                continue
            matcher = _Mentions([e for e in self.ents if e.doc == d.index])
            for c in d.chunks:
                ids = {i for _, _, hit in matcher.find(c.context + "\n" + c.content) for i in hit}
                for i in sorted(ids):
                    self.mentioned_by.setdefault(i, []).append(c.id)

    # ------------------------------------------------------------ similarity
    def similarity(self) -> None:
        chunks = self.chunks
        texts = [c.context + "\n" + c.content for c in chunks]
        self.tfidf = tf = _TfIdf(texts)
        words = [_words(t.replace("\n", " ")) for t in texts]
        pairs = set(tf.candidates())
        for d in self.diags:  # the reference compares every pair within a document
            ks = [c.order for c in d.chunks] if d.ok else []
            pairs.update(combinations(ks, 2))
        for i, j in sorted(pairs):
            if chunks[i].doc == chunks[j].doc and chunks[i].id == chunks[j].id:
                continue  # one id twice in a document: validation reports it
            cos = tf.cosine(i, j)
            jac = _jaccard(words[i], words[j])
            if cos >= COSINE_THRESHOLD or jac >= SIMILARITY_THRESHOLD:
                self.similar_pairs.append(_Pair(chunks[i], chunks[j], cos, jac, tf.shared_terms(i, j)))

    def decl_rank(self, entity_id: str) -> tuple[int, int]:
        e = self.first_decl.get(entity_id)
        return (e.doc, e.entry.index) if e is not None else (len(self.docs), 0)

    def cosine(self, a: _Chunk, b: _Chunk) -> float:
        if self.tfidf is None:
            return 0.0
        return self.tfidf.cosine(a.order, b.order)

    # ------------------------------------------------------------ entities
    def entity_clusters(self) -> None:
        ents = self.ents
        if len({e.id for e in ents}) < 2:
            return
        entity_dicts = [{"id": e.id, "name": e.name or None, "type": e.type, "aliases": list(e.aliases)} for e in ents]
        chunk_dicts = [{"id": c.id, "entities": c.entities, "context": c.context} for c in self.chunks]
        self.clusters = suggest_clusters(entity_dicts, chunk_dicts)
        for cl in self.clusters:
            for m in cl.members:
                self.mates.setdefault(m, set()).update(x for x in cl.members if x != m)
        by_name: dict[str, set[str]] = {}
        for e in ents:
            if e.name:
                by_name.setdefault(e.name.strip().lower(), set()).add(e.id)
        for ids in by_name.values():
            self.same_name_pairs.update(frozenset(p) for p in combinations(sorted(ids), 2))

    # ------------------------------------------------------------ sizes
    def count_tokens(self) -> None:
        chunks = [c for c in self.chunks if c.body is not None and c.content]
        texts = [c.content for c in chunks]
        try:
            from ctxfst_tui.core.chunking.tokens import get_counter

            counts = get_counter().count_many(texts)
        except Exception:  # no tokenizer here: estimate (about 3/4 of a word per token)
            self.exact_tokens = False
            counts = [round(len(t.split()) * 4 / 3) for t in texts]
        self.tokens = {c.order: n for c, n in zip(chunks, counts)}

    # ------------------------------------------------------------ dependencies
    def dependency_cycles(self) -> None:
        import networkx as nx

        g = nx.DiGraph()
        where: dict[tuple[str, str], tuple[_Chunk, int]] = {}
        order: dict[str, int] = {}
        for c in self.chunks:
            order.setdefault(c.id, c.order)
            deps = c.entry.data.get("dependencies")
            if not isinstance(deps, list):
                continue
            for dep in deps:
                if isinstance(dep, str) and dep in self.chunk_docs:
                    g.add_edge(c.id, dep)
                    where.setdefault((c.id, dep), (c, c.doc))
        for scc in sorted(nx.strongly_connected_components(g), key=lambda s: min(order.get(n, 0) for n in s)):
            start = min(scc, key=lambda n: order.get(n, 0))
            if len(scc) == 1 and not g.has_edge(start, start):
                continue
            edges = nx.find_cycle(g.subgraph(scc), source=start)
            nodes = [u for u, _ in edges]
            # remove the edge pointing furthest forward (prerequisites usually come first); else the last one
            forwards = [(a, b) for a, b in edges if order.get(b, 0) > order.get(a, 0)]
            forward = bool(forwards)
            u, v = max(forwards, key=lambda e: order.get(e[1], 0) - order.get(e[0], 0)) if forwards else edges[-1]
            chunk, doc = where[(u, v)]
            self.cycles.append(_Cycle(nodes, u, v, doc, chunk.entry, forward))


# ---------------------------------------------------------------- public API


def _report(d: _Diagnosis, level: str) -> dict[str, Any]:
    rank = {c: k for k, c in enumerate(CATEGORIES)}
    issues = sorted(d.issues, key=lambda i: rank.get(i.category, len(rank)))  # stable within a category
    d.issues = issues
    return {
        "filepath": d.doc.label,
        "stats": d.stats(),
        "issues": [i.to_json(level) for i in issues],
    }


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")


def diagnose(doc: Document, level: str = "diagnose") -> dict[str, Any]:
    """The reference-shaped report for one document; never raises on any document.

    ``level`` follows the reference: ``diagnose`` lists issues, ``suggest`` adds each
    ``suggestion``, ``fix`` also adds ``fix`` (an operation for :mod:`.fixes`) where one exists.
    """
    return diagnose_workspace([doc], level)[0]


def diagnose_workspace(docs: list[Document], level: str = "diagnose") -> list[dict[str, Any]]:
    """One report per document, in the order given, computed with knowledge of all of them
    (see the module docstring for where cross-document findings appear)."""
    _check_level(level)
    ws = _Workspace(list(docs))
    ws.run()
    return [_report(d, level) for d in ws.diags]
