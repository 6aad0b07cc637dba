"""chunks.json export, record for record the shape of the reference ``export_to_lancedb.py``.

Unlike the reference, a document with validation errors is refused (the reference writes
whatever its regex happened to match), so a vector store never ingests a broken document.

A chunk opening with the ``<!-- Context: -->`` comment of the reference's ``contextualize_chunks.py``
is exported as the reference exports it (the comment in ``content``, ``context`` from the
frontmatter only), with a warning naming the chunk: the bytes stay the reference's, and the user
learns that the comment's words are not in ``context`` (``diagnose --apply`` moves them there).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from ctxfst_tui.core.format.context_comment import find_context_comment, same_context
from ctxfst_tui.core.format.document import Document, jsonable
from ctxfst_tui.core.format.findings import Finding
from ctxfst_tui.core.format.schema import OPTIONAL_CHUNK_FIELDS
from ctxfst_tui.core.format.validate import validate


class ExportRefused(Exception):
    """The input has validation errors; ``finding`` is the first one."""

    def __init__(self, finding: Finding, count: int):
        super().__init__(finding.one_line())
        self.finding = finding
        self.count = count


@dataclass
class ExportResult:
    entities: list[dict] = field(default_factory=list)
    chunks: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"entities": self.entities, "chunks": self.chunks}


def chunk_records(doc: Document, source: str, warnings: list[str]) -> list[dict]:
    """One record per frontmatter chunk that has body content."""
    data = doc.data or {}
    if not isinstance(data.get("chunks"), list):
        return []
    body = {c.id: c.content for c in doc.body_chunks}
    bodies = {c.id: c for c in doc.body_chunks}
    records = []
    for entry in doc.chunks:
        d = entry.data
        if not isinstance(d, dict) or not d.get("id"):
            continue
        content = body.get(d["id"], "")
        if not content:
            warnings.append(f"{doc.label}:{entry.line}: chunk '{d['id']}' has no content in the body; not exported")
            continue
        _warn_context_comment(doc, bodies[d["id"]], d.get("context"), warnings)
        record: dict[str, Any] = {
            "id": d["id"],
            "context": d.get("context", ""),
            "content": content,
            "tags": d.get("tags", []),
            "source": source,
        }
        for key in OPTIONAL_CHUNK_FIELDS:
            if key in d:
                record[key] = d[key]
        records.append(jsonable(record))
    return records


def _warn_context_comment(doc: Document, chunk: Any, context: Any, warnings: list[str]) -> None:
    """A warning when the chunk opens with a ``<!-- Context: -->`` comment (see the module docstring)."""
    comment = find_context_comment(chunk)
    if comment is None:
        return
    where = f"{doc.label}:{doc.index.position(comment.start)[0]}: chunk '{chunk.id}'"
    field = context if isinstance(context, str) else ""
    if not field.strip():
        what = ("has its context only in a <!-- Context: --> comment: exported in its content, "
                "with an empty context; 'ctxfst-tui diagnose --apply' moves it into the frontmatter")
    elif same_context(field, comment.text):
        what = ("has its context both in the frontmatter and in a <!-- Context: --> comment; "
                "the comment is exported in its content")
    else:
        what = ("has a frontmatter context and a different <!-- Context: --> comment; "
                "the frontmatter's is exported, the comment stays in its content")
    warnings.append(f"{where} {what}")


def export_documents(docs: Iterable[Document]) -> ExportResult:
    """Export documents together; entities are de-duplicated by id (first wins). Raises ExportRefused."""
    result = ExportResult()
    seen: dict[Any, dict] = {}
    for doc in docs:
        findings = validate(doc)
        errors = [f for f in findings if f.severity == "error"]
        if errors:
            raise ExportRefused(errors[0], len(errors))
        data = doc.data or {}
        if "chunks" not in data:
            result.warnings.append(f"{doc.label}: no frontmatter chunks; nothing exported")
            continue
        result.chunks.extend(chunk_records(doc, doc.label, result.warnings))
        for e in doc.entities:
            if isinstance(e.data, dict) and e.data.get("id") and e.data["id"] not in seen:
                seen[e.data["id"]] = jsonable(dict(e.data))
    result.entities = list(seen.values())
    return result


def dumps(result: ExportResult, fmt: str = "json", pretty: bool = False) -> str:
    """Serialise as one JSON object, or as JSON Lines with one chunk record a line.

    "json" is byte for byte what the reference writes (``json.dump(data, f, ensure_ascii=False)``,
    ``--pretty``: ``indent=2``; no trailing newline), so its users' pipelines and diffs see no
    change. JSON Lines has no reference: each record ends with a newline, as that format requires.
    """
    if fmt == "jsonl":
        return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in result.chunks)
    return json.dumps(result.to_json(), ensure_ascii=False, indent=2 if pretty else None)
