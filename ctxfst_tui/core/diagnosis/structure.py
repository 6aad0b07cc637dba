"""Structure checks: why a document has nothing to diagnose, and chunk entries that are skipped.

``no-valid-chunks`` (error, the reference diagnose's "No valid chunks found") is not validation's
``no-frontmatter`` or ``missing-chunks`` (warnings: a plain Markdown file is valid), and
``chunk-skipped`` (warning) is not validation's ``chunk-not-mapping`` / ``chunk-missing-id``
(errors): different findings, so different names, each with one severity (core/format/rules.py).

They run first and also build the document's records: a file that cannot be read, a broken or
missing frontmatter, or a missing ``chunks`` list become issues instead of exceptions.
"""
from __future__ import annotations

from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis, IndexedChunk, IndexedEntity, tags_of, text_of
from ctxfst_tui.core.diagnosis.wording import kind_of
from ctxfst_tui.core.format.schema import CHUNK_LINK_FIELD


def structure(d: DocumentDiagnosis) -> bool:
    """Report why there is nothing to diagnose; True when the chunks can be checked."""
    doc = d.doc
    if not doc.readable:
        f = doc.load_findings[0] if doc.load_findings else None
        why = f.message if f else "the file could not be read"
        d.add("structure", f.rule if f else "file-unreadable", [],
              f"No valid chunks found in document: {why}",
              "Save the document as UTF-8 Markdown with a YAML frontmatter.",
              at=(f.line, f.column) if f else (0, 0))
        return False
    err = doc.frontmatter_error
    if err is not None:
        d.add("structure", err.rule, [], f"Frontmatter cannot be read: {err.message}",
              "Fix the YAML at the line shown; until it parses no chunk can be diagnosed.",
              at=(err.line, err.column))
        return False
    if not doc.has_frontmatter:
        d.add("structure", "no-valid-chunks", [],
              "No valid chunks found in document: no YAML frontmatter",
              "Start the file with a '---' frontmatter block listing 'entities' and 'chunks'.",
              at=(1, 1), cause="no-frontmatter")
        return False
    data = doc.data
    if data is None:
        what = "empty" if doc.frontmatter.data is None else f"{kind_of(doc.frontmatter.data)}, not a mapping"
        d.add("structure", "frontmatter-not-mapping", [],
              f"No valid chunks found in document: the frontmatter is {what}",
              "Write the frontmatter as 'key: value' lines with a 'chunks' list.",
              at=(doc.frontmatter.open_line + 1, 1))
        return False
    _collect_entities(d)
    sec = doc.section_pos("chunks")
    if "chunks" not in data:
        d.add("structure", "no-valid-chunks", [],
              "No valid chunks found in document: the frontmatter has no 'chunks' list",
              "Add a 'chunks' list with one entry (id, context, tags) per <Chunk> in the body.",
              at=(doc.frontmatter.open_line, 1), cause="missing-chunks")
        return False
    if not isinstance(data["chunks"], list):
        d.add("structure", "chunks-not-list", [],
              f"No valid chunks found in document: 'chunks' is {kind_of(data['chunks'])}, not a list",
              "Write 'chunks' as a list of '- id: ...' entries.",
              at=(sec.key_line if sec else 1, 1))
        return False
    _collect_chunks(d)
    if not d.chunks:
        d.add("structure", "no-valid-chunks", [],
              "No valid chunks found in document",
              "Give every entry of 'chunks' a non-empty 'id' matching a <Chunk id=\"...\"> in the body.",
              at=(sec.key_line if sec else 1, 1), cause="no-chunks")
        return False
    return True


def _collect_entities(d: DocumentDiagnosis) -> None:
    """Entity records of declarations with a string id (others are the catalog checks' business)."""
    for e in d.doc.entities:
        if not isinstance(e.data, dict) or not isinstance(e.data.get("id"), str):
            continue
        name = text_of(e.data.get("name")).strip()
        aliases = e.data.get("aliases")
        aliases = [str(a).strip() for a in aliases if isinstance(a, (str, int, float)) and not isinstance(a, bool)
                   and str(a).strip()] if isinstance(aliases, list) else []
        t = e.data.get("type")
        d.ents.append(IndexedEntity(e.data["id"], e, name, t if isinstance(t, str) else None, aliases, d.number))


def _collect_chunks(d: DocumentDiagnosis) -> None:
    """Normalise chunk entries; entries the reference silently skips are noted as warnings."""
    for entry in d.doc.chunks:
        if not isinstance(entry.data, dict):
            d.add("structure", "chunk-skipped", [],
                  f"Chunk entry #{entry.index + 1} is {kind_of(entry.data)}, not a mapping; skipped",
                  "Write each chunk as a mapping with 'id', 'context' and 'tags'.",
                  at=(entry.line, 1))
            continue
        raw_id = entry.data.get("id")
        if not raw_id:  # the reference skips these silently
            d.add("structure", "chunk-skipped", [],
                  f"Chunk entry #{entry.index + 1} has no (or an empty) id; skipped",
                  "Give the chunk an id like 'skill:python-async' matching its <Chunk> tag.",
                  at=d.at(entry, "id"))
            continue
        cid = raw_id if isinstance(raw_id, str) else str(raw_id)
        body = d.doc.body_chunk(cid)
        d.chunks.append(IndexedChunk(
            id=cid,
            entry=entry,
            context=text_of(entry.data.get("context")),
            content=body.content if body is not None else "",
            tags=tags_of(entry.data.get("tags")),
            entities=entry.data.get(CHUNK_LINK_FIELD),
            body=body,
            doc=d.number,
        ))
