"""The Workspace: the documents edited together (one file, or every document of a folder).

It answers the questions every entity operation, fix and pane asks of many documents at once:
where an entity is declared, which chunks link it, which documents are unsaved.
"""
from __future__ import annotations

import os
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.schema import CHUNK_LINK_FIELD, NEGATION, STATE_REF_FIELDS
from ctxfst_tui.core.workspace.files import same_file
from ctxfst_tui.core.workspace.scan import iter_documents

if TYPE_CHECKING:
    from ctxfst_tui.core.workspace.undo import DocChange




@dataclass
class EntityRow:
    """One entity id across the workspace (``declared_in`` empty: referenced but declared nowhere)."""

    id: str
    name: str | None
    type: str | None
    aliases: list[str]
    chunks: int  # chunks (in all documents) whose ``entities`` list links this id
    declared_in: list[str]
    linked_from: list[str]  # documents with a chunk link or a state reference to it

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "type": self.type, "aliases": list(self.aliases),
            "chunks": self.chunks, "declared_in": list(self.declared_in), "linked_from": list(self.linked_from),
        }

    def to_entity(self) -> dict[str, Any]:
        """The entity as a frontmatter-like dict (what ``aliases.suggest_clusters`` takes)."""
        return {"id": self.id, "name": self.name, "type": self.type, "aliases": list(self.aliases)}


def _editable(doc: Document) -> bool:
    return doc.readable and doc.frontmatter_error is None and doc.data is not None


def _str_id(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _ref_target(item: Any, negatable: bool) -> str | None:
    if not isinstance(item, str):
        return None
    if negatable:
        item = NEGATION.sub("", item)
    return item.strip()


def reference_lists(doc: Document) -> Iterator[tuple[str, set[str]]]:
    """(field, ids) for every chunk-link list and state-reference list of one document."""
    for section in ("entities", "chunks"):
        for e in doc.entries(section):
            if not isinstance(e.data, dict):
                continue
            keys = ((CHUNK_LINK_FIELD,) if section == "chunks" else ()) + STATE_REF_FIELDS
            for key in keys:
                refs = e.data.get(key)
                if isinstance(refs, list):
                    yield key, {t for t in (_ref_target(r, key != CHUNK_LINK_FIELD) for r in refs) if t}


def _references(doc: Document) -> set[str]:
    """Entity ids referenced by chunk links and state references in one document."""
    return {t for _key, ids in reference_lists(doc) for t in ids}


class Workspace:
    """The documents the entity operations act on (one file, or every ``.md`` of a folder)."""

    def __init__(self, docs: Iterable[Document], root: str | os.PathLike | None = None):
        self.docs: list[Document] = list(docs)
        self.root = Path(root) if root is not None else None

    @classmethod
    def load(cls, path: str | os.PathLike, suffixes: tuple[str, ...] = (".md",)) -> "Workspace":
        return cls([Document.load(p) for p in iter_documents(path, suffixes)], path)

    # ------------------------------------------------------------ lookups
    def document(self, path: str | os.PathLike) -> Document | None:
        p = Path(path)
        for doc in self.docs:
            if doc.path is not None and (doc.path == p or _same_file(doc.path, p)):
                return doc
        return None

    def document_for(self, change: DocChange) -> Document | None:
        if change.path is not None:
            return self.document(change.path)
        return self.docs[change.index] if change.index < len(self.docs) else None

    def declarations(self, entity_id: str) -> list[tuple[Document, int]]:
        """(document, entity index) of every declaration of ``entity_id``."""
        out = []
        for doc in self.docs:
            if _editable(doc):
                out.extend((doc, e.index) for e in doc.entities if e.id == entity_id)
        return out

    def entity_data(self, entity_id: str) -> dict | None:
        """The first declaration's data."""
        for doc, i in self.declarations(entity_id):
            return doc.entities[i].data
        return None

    def referenced(self, entity_id: str) -> bool:
        return any(entity_id in _references(d) for d in self.docs if _editable(d))

    def entity_ids(self) -> set[str]:
        return {e.id for d in self.docs if _editable(d) for e in d.entities if isinstance(e.id, str)}

    def entity_table(self) -> list[EntityRow]:
        """Every entity id declared or referenced anywhere, in first-seen order."""
        rows: dict[str, EntityRow] = {}

        def row(eid: str) -> EntityRow:
            if eid not in rows:
                rows[eid] = EntityRow(eid, None, None, [], 0, [], [])
            return rows[eid]

        for doc in self.docs:
            if not _editable(doc):
                continue
            label = doc.label
            for e in doc.entities:
                eid = _str_id(e.id)
                if eid is None:
                    continue
                r = row(eid)
                d = e.data
                if r.name is None and d.get("name") is not None:
                    r.name = str(d.get("name"))
                if r.type is None and d.get("type") is not None:
                    r.type = str(d.get("type"))
                aliases = d.get("aliases")
                for a in aliases if isinstance(aliases, list) else []:
                    if isinstance(a, (str, int, float)) and str(a) not in r.aliases:
                        r.aliases.append(str(a))
                if label not in r.declared_in:
                    r.declared_in.append(label)
            for key, targets in reference_lists(doc):
                for t in sorted(targets):
                    r = row(t)
                    if key == CHUNK_LINK_FIELD:
                        r.chunks += 1
                    if label not in r.linked_from:
                        r.linked_from.append(label)
        return list(rows.values())

    def entity_dicts(self) -> list[dict[str, Any]]:
        """One dict per declared id (first declaration's name/type, aliases from all) for alias suggestions."""
        return [r.to_entity() for r in self.entity_table() if r.declared_in]

    def chunk_dicts(self) -> list[dict[str, Any]]:
        return [c.data for d in self.docs if _editable(d) for c in d.chunks if isinstance(c.data, dict)]

    # ------------------------------------------------------------ saving
    @property
    def dirty(self) -> list[Document]:
        return [d for d in self.docs if d.readable and d.dirty]

    def save(self, force: bool = False) -> list[Path]:
        """Save every changed document, all or nothing; returns the paths written.

        ``safe_write.write_files`` writes and syncs every temp file first, then renames them
        all. A file changed on disk since it was read (its bytes differ from ``Document.raw``),
        a read-only file (unless ``force``), a non-regular file or a full disk stops the whole
        save before anything is replaced: ``WriteError`` names each file and what happened to it.
        """
        from ctxfst_tui.core.safe_write import WritePlan, write_files

        snapshots = [(d, d.text, d.encoded()) for d in self.dirty if d.path is not None]
        todo = [(d, data) for d, _text, data in snapshots if not (data == d.raw and d.path.exists())]
        write_files([WritePlan(d.path, data, expected=d.raw, force=force) for d, data in todo])
        for d, text, data in snapshots:
            d.mark_saved(text, data)
        return [d.path for d, _data in todo]


def _same_file(a: Path, b: Path) -> bool:
    return same_file(a, b)  # never raises: a symlink loop is compared as its path

