"""Entity-linking checks: the links between chunks and entities, both ways.

Links to undeclared entities (with the most likely repair), too many links, entities named but
not linked, linked but never named, abbreviations a chunk defines that are not aliases yet, and
entities nothing links.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterator

from rapidfuzz.distance import OSA

from ctxfst_tui.core.diagnosis.catalog import GENERIC_ENTITY_NAMES
from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis, IndexedChunk, IndexedEntity
from ctxfst_tui.core.diagnosis.mentions import (Mentions, appears, fold_form, fold_text, folded_word_runs, leading_run, run_starts,
                                                slug_words)
from ctxfst_tui.core.diagnosis.wording import json_ref, quote_list, show_ref
from ctxfst_tui.core.entities.aliases import acronym_of, fingerprint, numeronym_of
from ctxfst_tui.core.format.document import jsonable
from ctxfst_tui.core.format.schema import OPERATIONAL_TYPES
from ctxfst_tui.core.text.words import stemmed_terms
from ctxfst_tui.core.text.plural import noun

MAX_CHUNK_ENTITIES = 6


def entity_linking(d: DocumentDiagnosis) -> None:
    """Links that point nowhere, too many links, unused entities, missing, weak and alias links."""
    if d.ok:
        start = len(d.issues)
        _missing_and_weak(d)  # first: the many-links suggestion names the weak links
        later = d.issues[start:]
        del d.issues[start:]
        _undefined_and_many(d)
        d.issues.extend(later)
        _alias_candidates(d)
    _unused(d)


def _undefined_and_many(d: DocumentDiagnosis) -> None:
    defined = {e.id: e for e in d.ents}
    for c in d.chunks:
        refs = c.entities
        if not isinstance(refs, list):
            continue
        at = d.at(c.entry, "entities")
        if len(refs) > MAX_CHUNK_ENTITIES:
            weak = [e for e in d.ws.weak.get(c.order, [])] if d.ws else []
            d.add("entity_linking", "entity-links-many", [c.id],
                  f"Chunk links to many entities ({len(refs)}). Recommend 1-{MAX_CHUNK_ENTITIES}.",
                  "Only link the most central entities discussed in this chunk"
                  + (f"; these are not named in it: {quote_list(weak)}." if weak else "."), at=at, count=len(refs))
        for ref in refs:
            if isinstance(ref, str) and ref in defined:
                continue
            _undefined(d, c, ref, at)


def _undefined(d: DocumentDiagnosis, c: IndexedChunk, ref: Any, at: tuple[int, int]) -> None:
    raw = jsonable(ref)
    fix: dict[str, Any] = {"op": "unlink_entity", "chunk_id": c.id, "entity_id": raw}
    how = "unlinks it"
    if isinstance(ref, str) and d.ws is not None:
        other = d.ws.first_decl.get(ref)
        near = _near_entity(d, ref)
        named = _named_in(d, c, slug_words(ref))
        if other is not None:
            ident = {"id": ref, "name": other.name or slug_words(ref), "type": other.type or "concept"}
            if other.aliases:
                ident["aliases"] = list(other.aliases)
            fix = {"op": "declare_entity", "chunk_id": c.id, "entity": ident}
            how = f"declares it here as {d.ws.docs[other.doc].label} does"
        elif near is not None:
            fix = {"op": "relink_entity", "chunk_id": c.id, "entity_id": ref, "into": near}
            how = f"links '{near}' instead (probably meant)"
        elif named is not None:
            fix = {"op": "declare_entity", "chunk_id": c.id,
                   "entity": {"id": ref, "name": named, "type": "concept"}}
            how = f"declares it (the chunk names '{named}'; the type 'concept' is a guess)"
    d.add("entity_linking", "entity-undefined", [c.id],
          f"Chunk links to undefined entities: {show_ref(ref)}",
          f"Make sure all chunk entities are defined in the document-level entities catalog (the fix {how}).",
          fix, at, entity_ids=[json_ref(ref)])


def _near_entity(d: DocumentDiagnosis, ref: str) -> str | None:
    """A declared entity ``ref`` probably means: same name/alias/slug key, or a one-letter typo of its id."""
    key = fingerprint(slug_words(ref))
    hits = set()
    for e in d.ents:
        keys = {fingerprint(f) for f in e.forms} | {fingerprint(slug_words(e.id))}
        if key and key in keys:
            hits.add(e.id)
        elif len(ref) >= 6 and OSA.distance(ref, e.id) <= 1:
            hits.add(e.id)
    return hits.pop() if len(hits) == 1 else None


def _named_in(d: DocumentDiagnosis, c: IndexedChunk, words: str) -> str | None:
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


def _missing_and_weak(d: DocumentDiagnosis) -> None:
    """Chunks naming a declared entity without linking it, and links to entities the chunk never names."""
    ents = {e.id: e for e in d.ents}
    candidates = [e for e in d.ents if e.type not in OPERATIONAL_TYPES and e.name.lower() not in GENERIC_ENTITY_NAMES]
    matcher = Mentions(candidates)
    for c in d.chunks:
        links = c.links()
        linked = set(links)
        mates = set().union(*(d.ws.mates.get(x, set()) for x in linked)) if d.ws else set()
        linked_forms = {fold_form(f) for x in linked if x in ents for f in ents[x].forms}
        found: dict[str, dict[str, Any]] = {}
        for where, text in (("context", c.context), ("content", c.body.raw_content if c.body else "")):
            for off, written, ids in matcher.find(text):
                if fold_form(written) in linked_forms:
                    continue
                for eid in ids:
                    if eid in linked or eid in mates:
                        continue
                    hit = found.setdefault(eid, {"count": 0, "context": False, "first": None})
                    hit["count"] += 1
                    hit["context"] |= where == "context"
                    if hit["first"] is None:
                        line, col = d.at(c.entry, "context") if where == "context" else d.offset_at(c, off)
                        hit["first"] = {"text": written, "line": line, "column": col, "in": where}
        at = d.at(c.entry, "entities")
        for eid, hit in found.items():
            strong = hit["context"] or hit["count"] >= 2
            first = hit["first"]
            times = f"{hit['count']} time{'s' if hit['count'] != 1 else ''}"
            # named in its context or twice: a missing link; once in the content: a mention to review
            d.add("entity_linking", "entity-missing-link" if strong else "entity-unlinked-mention", [c.id],
                  f"Chunk names '{first['text']}' ({eid}) {times}"
                  f"{' in its context' if hit['context'] else ''} but does not link it",
                  f"Add '{eid}' to the chunk's entities so graph retrieval finds it"
                  + (f" (it already links {len(links)}; keep the most central {MAX_CHUNK_ENTITIES})"
                     if len(links) >= MAX_CHUNK_ENTITIES else "") + ".",
                  {"op": "link_entity", "chunk_id": c.id, "entity_id": eid}, at,
                  entity_ids=[eid], mention=first)
        # weak links: linked, declared, descriptive, yet never named
        raw = " ".join([c.context, c.content, *c.tags])
        terms = (d.ws.tfidf.terms[c.order] if d.ws and d.ws.tfidf else set(stemmed_terms(raw)[0]))
        terms = terms | _tag_terms(" ".join(c.tags))
        fp_text: list[str] = []
        for eid in dict.fromkeys(links):
            e = ents.get(eid)
            if e is None or e.type in OPERATIONAL_TYPES:
                continue
            if not appears(e, terms, raw, fp_text):
                if d.ws is not None:
                    d.ws.weak.setdefault(c.order, []).append(eid)
                d.add("entity_linking", "entity-weak-link", [c.id],
                      f"Chunk links '{eid}' but never names it ('{e.name or slug_words(eid)}' "
                      "and its aliases appear nowhere in its context, content or tags)",
                      "Unlink it if the chunk is not about it, or mention it (or add the name used here as an alias).",
                      {"op": "unlink_entity", "chunk_id": c.id, "entity_id": eid}, at, entity_ids=[eid])


@lru_cache(maxsize=20_000)
def _tag_terms(tags: str) -> frozenset[str]:
    """The stemmed terms of a chunk's tags (a workspace has few distinct tag lists)."""
    return frozenset(stemmed_terms(tags)[0])


@lru_cache(maxsize=20_000)
def _alias_patterns(form: str) -> tuple[re.Pattern, re.Pattern]:
    """'Form (ABBR)' and 'ABBR (Form)' for one entity form (forms recur in every document)."""
    x = r"\s+".join(re.escape(p) for p in form.split())
    short = r"([A-Za-z][A-Za-z0-9.+#-]{1,11})"
    return (re.compile(r"(?<!\w)(?i:" + x + r")\s*\(\s*" + short + r"\s*\)"),
            re.compile(r"(?<!\w)" + short + r"\s*\(\s*(?i:" + x + r")\s*\)"))


def _after_paren(text: str, q: int) -> bool:
    """Whether ``(`` and nothing but white space come right before offset ``q``."""
    q -= 1
    while q >= 0 and text[q].isspace():
        q -= 1
    return q >= 0 and text[q] == "("


def _alias_matches(form: str, text: str, starts: list[int] | None) -> Iterator[re.Match]:
    """The matches of 'Form (ABBR)', then of 'ABBR (Form)', in ``text``. ``starts``: where the
    form's leading word run is a whole run of the text (see leading_run), the only places the
    form can begin; there the first pattern is tried alone, and the second one searched for only
    when one of them follows a parenthesis."""
    form_first, abbr_first = _alias_patterns(form)
    if starts is None:
        yield from form_first.finditer(text)
        yield from abbr_first.finditer(text)
        return
    cursor = 0
    for q in starts:
        if q >= cursor:
            m = form_first.match(text, q)
            if m is not None:
                yield m
                cursor = m.end()
    if any(_after_paren(text, q) for q in starts):
        yield from abbr_first.finditer(text)


def _alias_candidates(d: DocumentDiagnosis) -> None:
    """Chunks that define an abbreviation of an entity ('Google Kubernetes Engine (GKE)') it lacks as alias."""
    if d.ws is None:
        return
    known = d.ws.form_keys
    seen: set[tuple[str, str]] = set()
    forms: list[tuple[IndexedEntity, str, str]] | None = None  # (entity, form, first word folded), once
    for c in d.chunks:
        text = c.context + "\n" + c.content
        if "(" not in text:
            continue
        if forms is None:
            forms = [(e, form, form.split()[0].casefold()) for e in d.ents for form in e.forms if len(form) >= 4]
            # both patterns match a form only where the text has its leading word run (see leading_run)
            runs = [leading_run(form) for _, form, _ in forms]
            by_run: dict[str | None, list[int]] = {}
            for k, r in enumerate(runs):
                by_run.setdefault(r, []).append(k)
            anywhere = by_run.pop(None, [])
        folded, low = text.casefold(), fold_text(text)
        present: dict[str, bool] = {}
        starts: dict[str, list[int]] = {}
        maybe = [k for r in by_run.keys() & set(folded_word_runs(low)) for k in by_run[r]]
        for k in sorted(maybe + anywhere):
            e, form, first = forms[k]
            if first not in present:
                present[first] = first in folded
            if not present[first]:
                continue
            r = runs[k]
            if r is not None and r not in starts:
                starts[r] = run_starts(low, r)
            for m in _alias_matches(form, text, None if r is None else starts[r]):
                alias = m.group(1).rstrip(".")
                if fingerprint(alias) in known or (e.id, fingerprint(alias)) in seen:
                    continue
                if not (acronym_of(alias, form) or numeronym_of(alias, form)):
                    continue
                seen.add((e.id, fingerprint(alias)))
                d.add("entity_linking", "entity-alias-candidate", [c.id],
                      f"Chunk writes '{m.group(0)}' but '{alias}' is not an alias of {e.id}",
                      f"Add '{alias}' to the aliases of '{e.id}' so mentions of it are recognised.",
                      {"op": "add_alias", "entity_id": e.id, "alias": alias},
                      at=d.at(e.entry, "aliases"), entity_ids=[e.id])


def _unused(d: DocumentDiagnosis) -> None:
    """Entities no chunk links and no state reference names, anywhere in the workspace."""
    if d.ws is None:
        return
    for e in d.ents:
        if e.id in d.ws.used:
            continue
        mentioned = d.ws.mentioned_by.get(e.id, [])
        if mentioned:
            d.add("entity_linking", "entity-unused", [],
                  f"Entity '{e.id}' is declared but no chunk links it",
                  f"Link it from the {noun(len(mentioned), 'chunk')} that name it: {quote_list(mentioned)}.",
                  at=d.at(e.entry, "id"), entity_ids=[e.id])
        else:
            d.add("entity_linking", "entity-unused", [],
                  f"Entity '{e.id}' is declared but no chunk links or names it",
                  "Delete it, or link it from the chunks that are about it.",
                  {"op": "delete_entity", "entity_id": e.id}, at=d.at(e.entry, "id"), entity_ids=[e.id])
