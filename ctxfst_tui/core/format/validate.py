"""Validation of a CtxFST document: every rule of the reference ``validate_chunks.py``.

Each finding carries a stable rule code and the exact line and column of the offending
entry or field (the reference says "Line 2" for any frontmatter problem). Unlike the
reference, frontmatter that does not parse is an error naming the YAML line and column.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from ctxfst_tui.core.format.chunk_tags import MAX_KEPT_DEPTH
from ctxfst_tui.core.format.document import Document, Entry
from ctxfst_tui.core.format.findings import Finding
from ctxfst_tui.core.format.rules import severity_of
from ctxfst_tui.core.format.schema import (CHUNK_ID, CHUNK_TYPES, COSTS, ENTITY_TYPES, NEGATION, PRIORITIES,
                                          STATE_REF_FIELDS, WORLD_MODEL_LISTS)
from ctxfst_tui.core.text.plural import count, noun



def _tname(v: Any) -> str:
    return type(v).__name__


class _Validator:
    def __init__(self, doc: Document):
        self.doc = doc
        self.findings: list[Finding] = list(doc.load_findings)

    def add(self, rule: str, message: str, line: int, column: int = 0, **extra: Any) -> None:
        """Record a finding; its severity is the rule's (core/format/rules.py)."""
        self.findings.append(Finding(severity_of(rule), rule, message, line, column, self.doc.label, extra))

    def at(self, entry: Entry, key: str | None = None) -> tuple[int, int]:
        return entry.field_line(self.doc, key) if key else entry.field_line(self.doc, "id")

    # ------------------------------------------------------------ frontmatter
    def frontmatter(self) -> tuple[set, dict[str, Entry]]:
        doc = self.doc
        entity_types: dict[Any, Any] = {}
        fm_chunks: dict[str, Entry] = {}
        if doc.frontmatter_error is not None:
            return set(), fm_chunks
        if doc.frontmatter is None:
            if doc.readable:
                self.add("no-frontmatter", "No YAML frontmatter found", 1, 1)
            return set(), fm_chunks
        data = doc.frontmatter.data
        if not isinstance(data, dict):
            line = doc.frontmatter.open_line + 1
            self.add("frontmatter-not-mapping", f"frontmatter must be a mapping of keys, got {_tname(data)}", line, 1)
            return set(), fm_chunks
        self.entities(data, entity_types)
        entity_ids = set(entity_types)
        if "chunks" not in data:
            self.add("missing-chunks", "Frontmatter missing 'chunks' array", 1, 1)
        elif not isinstance(data["chunks"], list):
            sec = doc.section_pos("chunks")
            self.add("chunks-not-list", f"'chunks' must be a list, got {_tname(data['chunks'])}", sec.key_line if sec else 1, 1)
        else:
            self.chunks(entity_types, fm_chunks)
        self.world_model_refs(doc.entities, entity_types, "Entity")
        self.world_model_refs(doc.chunks, entity_types, "Chunk")
        return entity_ids, fm_chunks

    def entities(self, data: dict, entity_types: dict) -> None:
        if "entities" not in data:
            return
        if not isinstance(data["entities"], list):
            sec = self.doc.section_pos("entities")
            self.add("entities-not-list", f"'entities' must be a list, got {_tname(data['entities'])}", sec.key_line if sec else 1, 1)
            return
        for e in self.doc.entities:
            line, col = self.at(e)
            if not isinstance(e.data, dict):
                self.add("entity-not-mapping", f"Entity {e.index + 1} must be an object", line, col)
                continue
            missing = [k for k in ("id", "name", "type") if k not in e.data]
            if missing:
                self.add("entity-missing-field", f"Entity definition {e.index + 1} missing required {noun(len(missing), 'field')} {', '.join(map(repr, missing))}", line, col)
                continue
            ent_id = e.data["id"]
            try:
                seen = ent_id in entity_types
            except TypeError:  # an unhashable id
                self.add("entity-id-invalid", f"Entity {e.index + 1}: 'id' must be a string, got {_tname(ent_id)}", *self.at(e, "id"))
                continue
            if seen:
                self.add("entity-duplicate-id", f"Duplicate entity ID '{ent_id}' in frontmatter", *self.at(e, "id"), entity_id=ent_id)
            else:
                entity_types[ent_id] = e.data.get("type")
            ent_type = e.data.get("type")
            if ent_type and (not isinstance(ent_type, str) or ent_type not in ENTITY_TYPES):
                self.add("entity-unknown-type", f"Entity '{ent_id}': unknown type '{ent_type}', expected one of {sorted(ENTITY_TYPES)}", *self.at(e, "type"), entity_id=ent_id)
            self.world_model_fields(e, ent_id, "Entity")

    def chunks(self, entity_types: dict, fm_chunks: dict[str, Entry]) -> None:
        entries = self.doc.chunks
        all_ids = {c.data.get("id") for c in entries if isinstance(c.data, dict) and isinstance(c.data.get("id"), str)}
        for c in entries:
            line, col = self.at(c)
            if not isinstance(c.data, dict):
                self.add("chunk-not-mapping", f"Chunk definition {c.index + 1} must be an object, got {_tname(c.data)}", line, col)
                continue
            if "id" not in c.data:
                self.add("chunk-missing-id", f"Chunk definition {c.index + 1} missing 'id' field", line, col)
                continue
            cid = c.data["id"]
            if not isinstance(cid, str):
                self.add("chunk-id-invalid", f"Chunk definition {c.index + 1}: 'id' must be a string, got {_tname(cid)}", *self.at(c, "id"))
                continue
            if cid in fm_chunks:
                self.add("chunk-duplicate-id", f"Duplicate chunk ID '{cid}' in frontmatter (first at line {fm_chunks[cid].line})", *self.at(c, "id"), chunk_id=cid)
            else:
                fm_chunks[cid] = c
            if "context" not in c.data:
                self.add("chunk-missing-context", f"Chunk '{cid}' missing 'context' field", line, col, chunk_id=cid)
            self.chunk_entities(c, cid, entity_types)
            self.chunk_fields(c, cid, all_ids)
            self.world_model_fields(c, cid, "Chunk")

    def chunk_entities(self, c: Entry, cid: str, entity_types: dict) -> None:
        if "entities" not in c.data:
            return
        refs = c.data["entities"]
        pos = self.at(c, "entities")
        if not isinstance(refs, list):
            self.add("chunk-entities-not-list", f"Chunk '{cid}': 'entities' must be a list of entity IDs", *pos, chunk_id=cid)
            return
        for ref in refs:
            if not isinstance(ref, str):
                self.add("entity-ref-not-string", f"Chunk '{cid}': entity reference must be a string ID, got {_tname(ref)} {ref!r}", *pos, chunk_id=cid)
            elif ref not in entity_types:
                self.add("entity-ref-unknown", f"Chunk '{cid}': entity reference '{ref}' not found in document entities", *pos, chunk_id=cid, entity_id=ref)

    def chunk_fields(self, c: Entry, cid: str, all_ids: set) -> None:
        d = c.data
        if "created_at" in d:
            v = d["created_at"]
            ok = isinstance(v, (_dt.date, _dt.datetime))
            if isinstance(v, str):
                try:
                    _dt.datetime.fromisoformat(v)
                    ok = True
                except ValueError:
                    pass
            if not ok:
                self.add("created-at-invalid", f"Chunk '{cid}': Invalid 'created_at' {v!r} (use YYYY-MM-DD)", *self.at(c, "created_at"), chunk_id=cid)
        if "version" in d:
            v = d["version"]
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                self.add("version-invalid", f"Chunk '{cid}': 'version' must be a positive integer, got {v!r}", *self.at(c, "version"), chunk_id=cid)
        if "priority" in d and d["priority"] not in PRIORITIES:
            self.add("priority-invalid", f"Chunk '{cid}': 'priority' must be one of {sorted(PRIORITIES)}, got {d['priority']!r}", *self.at(c, "priority"), chunk_id=cid)
        if "dependencies" in d:
            deps = d["dependencies"]
            pos = self.at(c, "dependencies")
            if not isinstance(deps, list):
                self.add("dependencies-not-list", f"Chunk '{cid}': 'dependencies' must be a list of chunk IDs, got {_tname(deps)}", *pos, chunk_id=cid)
            else:
                for dep in deps:
                    if not isinstance(dep, str):
                        self.add("dependency-not-string", f"Chunk '{cid}': dependency must be string ID, got {_tname(dep)}", *pos, chunk_id=cid)
                    elif dep not in all_ids:
                        self.add("dependency-unknown", f"Chunk '{cid}': dependency '{dep}' not found in chunks", *pos, chunk_id=cid)
        if "type" in d and d["type"] not in CHUNK_TYPES:
            self.add("type-invalid", f"Chunk '{cid}': 'type' must be one of {list(CHUNK_TYPES)}, got {d['type']!r}", *self.at(c, "type"), chunk_id=cid)
        if "content_path" in d:
            pos = self.at(c, "content_path")
            if d.get("type") in ("image", "video", "audio"):
                base = self.doc.path.parent if self.doc.path else Path(".")
                if not (base / str(d["content_path"])).exists():
                    self.add("content-path-missing", f"Chunk '{cid}': content_path '{d['content_path']}' does not exist", *pos, chunk_id=cid)
            else:
                self.add("content-path-misused", f"Chunk '{cid}': content_path should only be used with type=[image,video,audio]", *pos, chunk_id=cid)

    def world_model_fields(self, e: Entry, def_id: Any, context: str) -> None:
        d = e.data
        for key in WORLD_MODEL_LISTS:
            if key not in d:
                continue
            if not isinstance(d[key], list):
                self.add("world-model-not-list", f"{context} '{def_id}': '{key}' must be a list of strings", *self.at(e, key))
                continue
            for item in d[key]:
                if not isinstance(item, str):
                    self.add("world-model-item-not-string", f"{context} '{def_id}': '{key}' items must be strings, got {_tname(item)}", *self.at(e, key))
        if "cost" in d and d["cost"] not in COSTS:
            self.add("cost-invalid", f"{context} '{def_id}': 'cost' must be one of {list(COSTS)}, got {d['cost']!r}", *self.at(e, "cost"))
        if "idempotent" in d and not isinstance(d["idempotent"], bool):
            self.add("idempotent-invalid", f"{context} '{def_id}': 'idempotent' must be a boolean, got {d['idempotent']!r}", *self.at(e, "idempotent"))

    def world_model_refs(self, entries: list[Entry], entity_types: dict, context: str) -> None:
        """Pre/postconditions and state_refs must name declared entities of type ``state``."""
        for e in entries:
            if not isinstance(e.data, dict):
                continue
            def_id = e.data.get("id")
            for key in STATE_REF_FIELDS:
                refs = e.data.get(key)
                if not isinstance(refs, list):
                    continue
                for ref in refs:
                    if not isinstance(ref, str):
                        continue
                    target = NEGATION.sub("", ref).strip()
                    if target not in entity_types:
                        self.add("state-ref-unknown", f"{context} '{def_id}': {key} entry '{ref}' names no entity of this document", *self.at(e, key), ref=target)
                    elif entity_types[target] != "state":
                        self.add("state-ref-not-state", f"{context} '{def_id}': {key} entry '{ref}' must name a 'state' entity, but '{target}' is a '{entity_types[target]}'", *self.at(e, key), ref=target)

    # ------------------------------------------------------------ body
    def body(self, fm_chunks: dict[str, Entry]) -> None:
        seen: dict[str, int] = {}
        stack: list[tuple[str, int]] = []
        deep: list[tuple[str, int, int]] = []  # the first tag nested below MAX_KEPT_DEPTH
        deep_count = 0
        for ev in self.doc.tag_events:
            line, col = ev.span.line, ev.span.column
            if ev.kind == "open" and len(stack) > MAX_KEPT_DEPTH:
                # Deeper nesting is one error, not one per tag: 10,000 nested tags stay cheap.
                cid = ev.chunk_id or ""
                seen.setdefault(cid, line)
                if not deep:
                    deep.append((cid, line, col))
                deep_count += 1
                stack.append((cid, line))
                continue
            if ev.kind == "open":
                cid = ev.chunk_id or ""
                if fm_chunks and cid not in fm_chunks:
                    self.add("tag-unknown-id", f"Chunk ID '{cid}' not found in frontmatter", line, col, chunk_id=cid)
                if cid in seen:
                    self.add("tag-duplicate-id", f"Duplicate chunk ID '{cid}' (first seen at line {seen[cid]})", line, col, chunk_id=cid)
                else:
                    seen[cid] = line
                if stack:
                    self.add("tag-nested", f"Nested chunk '{cid}' inside '{stack[-1][0]}' (opened at line {stack[-1][1]})", line, col, chunk_id=cid)
                stack.append((cid, line))
                if not CHUNK_ID.match(cid):
                    self.add("tag-id-format", f"Invalid chunk ID format '{cid}' - use 'category:topic-name'", line, col, chunk_id=cid)
            elif stack:
                stack.pop()
            else:
                self.add("tag-stray-close", "Closing </Chunk> without matching opening tag", line, col)
        if deep:
            cid, line, col = deep[0]
            self.add(
                "tag-nested",
                f"Chunk '{cid}' is nested {MAX_KEPT_DEPTH + 1} levels deep; it and {count(deep_count - 1, 'more chunk tag')} "
                "nested as deep or deeper are not checked further (chunks do not nest)",
                line, col, chunk_id=cid, count=deep_count,
            )
        for cid, line in stack[: MAX_KEPT_DEPTH + 1]:
            self.add("tag-unclosed", f"Unclosed chunk '{cid}' (no </Chunk> before the end of the file)", line, 1, chunk_id=cid)
        for cid, entry in fm_chunks.items():
            if cid not in seen:
                line, col = self.at(entry, "id")
                self.add("chunk-not-in-body", f"Frontmatter chunk '{cid}' not found in document body", line, col, chunk_id=cid)


def validate(doc: Document) -> list[Finding]:
    """All findings for one document, in file order within each pass."""
    v = _Validator(doc)
    if doc.readable:
        _, fm_chunks = v.frontmatter()
        v.body(fm_chunks)
    return sorted(v.findings, key=lambda f: (f.line, f.column))


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)


def report_json(doc: Document, findings: list[Finding]) -> dict:
    """The ``validate --json`` object for one file."""
    return {"file": doc.label, "valid": not has_errors(findings), "findings": [f.to_json() for f in findings]}
