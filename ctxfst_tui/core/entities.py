"""Entity operations across a workspace of CtxFST documents: merge, rename, retype, aliases, delete.

Every operation works on all documents of a :class:`Workspace` at once and returns an
:class:`UndoRecord` (the text of each affected document before and after), or with
``dry_run=True`` the unified diff it would apply, changing nothing. Edits go through the
:class:`~ctxfst_tui.core.document.Document` line primitives, so only the lines of the
fields concerned change and YAML comments elsewhere survive.

Merge semantics (``merge_entities(ws, into, merged)``):

* the names and aliases of the merged entities become aliases of every declaration of
  ``into`` (no duplicates, never the target's own name; compared case-insensitively);
* every chunk ``entities`` list and every entity/chunk ``preconditions``/``postconditions``/
  ``state_refs`` entry naming a merged id now names ``into`` (a ``NOT ``/``! `` prefix is
  kept), and duplicates created within one list collapse (first occurrence kept);
* the merged entities' declarations are removed;
* a document that does not declare ``into`` but declared a merged entity, or references
  ``into`` after the rewrite, gets a *copy* of the target's identity (id, name, type and the
  merged aliases) so that the document still validates on its own: the copy replaces the
  first merged declaration in place (keeping that entry's other fields, e.g. a
  description), or is appended when the document declared none;
* merging entities used as world-model states into a target that is not a ``state`` is
  refused (the result would not validate).

Documents that cannot be parsed (no frontmatter, YAML errors, not a mapping) are never
touched. No textual/rich import here: the CLI and scripts use this module too.
"""
from __future__ import annotations

import copy
import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from . import frontmatter as fmt
from .document import Document
from .validate import NEGATION, VALID_ENTITY_TYPES
from .files import same_file
from .workspace import iter_documents

REF_FIELDS = ("preconditions", "postconditions", "state_refs")  # lists of (optionally negated) entity ids
CHUNK_LINK_FIELD = "entities"
ENTITY_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/+#@-]*$")


class EntityOpError(ValueError):
    """An entity operation that cannot be applied; the message is one line."""


# ---------------------------------------------------------------- records


@dataclass
class DocChange:
    """One document's text before and after an operation (``index`` = position in the workspace)."""

    path: Path | None
    index: int
    before: str
    after: str

    @property
    def label(self) -> str:
        return str(self.path) if self.path is not None else f"<document {self.index + 1}>"

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.before.splitlines(), self.after.splitlines(), fromfile=self.label, tofile=self.label, lineterm=""
        )
        return "".join(line + "\n" for line in lines)


@dataclass
class UndoRecord:
    """What an operation changed, enough to undo and redo it in memory."""

    op: str
    description: str
    changes: list[DocChange] = field(default_factory=list)

    @property
    def paths(self) -> list[Path | None]:
        return [c.path for c in self.changes]

    def diff(self) -> str:
        return "".join(c.diff() for c in self.changes)

    def _apply(self, ws: "Workspace", undo: bool) -> None:
        docs = [(c, ws.document_for(c)) for c in self.changes]
        for c, doc in docs:  # check everything first: all or nothing
            expected = c.after if undo else c.before
            if doc is None:
                raise EntityOpError(f"{c.label} is no longer in the workspace")
            if doc.text != expected:
                raise EntityOpError(f"{c.label} changed since '{self.description}'; cannot {'undo' if undo else 'redo'} it")
        for c, doc in docs:
            doc.replace_text(c.before if undo else c.after)

    def undo(self, ws: "Workspace") -> None:
        self._apply(ws, undo=True)

    def redo(self, ws: "Workspace") -> None:
        self._apply(ws, undo=False)


class UndoStack:
    """Session undo/redo of entity operations; a new operation clears the redo side."""

    def __init__(self, limit: int = 200):
        self.limit = limit
        self._undo: list[UndoRecord] = []
        self._redo: list[UndoRecord] = []

    def push(self, record: UndoRecord) -> UndoRecord:
        if record.changes:
            self._undo.append(record)
            del self._undo[: -self.limit]
            self._redo.clear()
        return record

    def run(self, ws: "Workspace", op: Callable[..., UndoRecord], *args: Any, **kwargs: Any) -> UndoRecord:
        """Apply an operation (e.g. ``merge_entities``) and record it."""
        return self.push(op(ws, *args, **kwargs))

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def undo(self, ws: "Workspace") -> UndoRecord | None:
        if not self._undo:
            return None
        record = self._undo[-1]
        record.undo(ws)
        self._redo.append(self._undo.pop())
        return record

    def redo(self, ws: "Workspace") -> UndoRecord | None:
        if not self._redo:
            return None
        record = self._redo[-1]
        record.redo(ws)
        self._undo.append(self._redo.pop())
        return record

    def clear(self) -> None:
        self._undo.clear()
        self._redo.clear()

    def forget(self, path: Path) -> int:
        """Drop every record touching ``path`` (its text was replaced, e.g. re-read from disk):
        they could never apply again and would block the records below them. Returns how many."""
        before = len(self._undo) + len(self._redo)
        self._undo = [r for r in self._undo if path not in r.paths]
        self._redo = [r for r in self._redo if path not in r.paths]
        return before - len(self._undo) - len(self._redo)


def combine(description: str, records: list[UndoRecord]) -> UndoRecord:
    """One record for several applied in sequence: each document's first 'before', last 'after'."""
    changes: dict[Any, DocChange] = {}
    for record in records:
        for c in record.changes:
            key = c.path if c.path is not None else c.index
            if key in changes:
                changes[key].after = c.after
            else:
                changes[key] = DocChange(c.path, c.index, c.before, c.after)
    kept = [c for c in changes.values() if c.before != c.after]
    op = records[0].op if len(records) == 1 else "edit"
    return UndoRecord(op, description, kept)


# ---------------------------------------------------------------- workspace


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


def _references(doc: Document) -> set[str]:
    """Entity ids referenced by chunk links and state references in one document."""
    out: set[str] = set()
    for section in ("entities", "chunks"):
        for e in doc.entries(section):
            if not isinstance(e.data, dict):
                continue
            keys = ((CHUNK_LINK_FIELD,) if section == "chunks" else ()) + REF_FIELDS
            for key in keys:
                refs = e.data.get(key)
                if isinstance(refs, list):
                    out.update(t for t in (_ref_target(r, key != CHUNK_LINK_FIELD) for r in refs) if t)
    return out


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
            for section in ("entities", "chunks"):
                for e in doc.entries(section):
                    if not isinstance(e.data, dict):
                        continue
                    keys = ((CHUNK_LINK_FIELD,) if section == "chunks" else ()) + REF_FIELDS
                    for key in keys:
                        refs = e.data.get(key)
                        if not isinstance(refs, list):
                            continue
                        targets = {t for t in (_ref_target(x, key != CHUNK_LINK_FIELD) for x in refs) if t}
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
        from .safe_write import WritePlan, write_files

        snapshots = [(d, d.text, d.encoded()) for d in self.dirty if d.path is not None]
        todo = [(d, data) for d, _text, data in snapshots if not (data == d.raw and d.path.exists())]
        write_files([WritePlan(d.path, data, expected=d.raw, force=force) for d, data in todo])
        for d, text, data in snapshots:
            d.mark_saved(text, data)
        return [d.path for d, _data in todo]


def _same_file(a: Path, b: Path) -> bool:
    return same_file(a, b)  # never raises: a symlink loop is compared as its path


def _append_entry(doc: Document, section: str, value: dict) -> None:
    doc.append_entry(section, value)


# ---------------------------------------------------------------- reference rewriting


def _map_list(items: list, mapping: dict[str, str | None], negatable: bool) -> list | None:
    """The list with ids mapped (None: dropped) and duplicates collapsed, or None if untouched."""
    touched = False
    out: list[tuple[Any, Any]] = []
    for item in items:
        if not isinstance(item, str):
            out.append((None, item))
            continue
        m = NEGATION.match(item) if negatable else None
        prefix = m.group(0) if m else ""
        target = item[len(prefix):].strip()
        if target in mapping:
            touched = True
            new = mapping[target]
            if new is None:
                continue
            item = prefix + new
            target = new
        out.append(((bool(prefix), target), item))
    if not touched:
        return None
    seen: set = set()
    result = []
    for key, item in out:
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        result.append(item)
    return result


def _rewrite_refs(doc: Document, mapping: dict[str, str | None]) -> None:
    for section in ("entities", "chunks"):
        for index in range(len(doc.entries(section))):
            keys = ((CHUNK_LINK_FIELD,) if section == "chunks" else ()) + REF_FIELDS
            for key in keys:
                data = doc.entries(section)[index].data
                if not isinstance(data, dict) or not isinstance(data.get(key), list):
                    continue
                new = _map_list(data[key], mapping, negatable=key != CHUNK_LINK_FIELD)
                if new is not None and new != data[key]:
                    doc.set_field(section, index, key, new)


def _state_ref_ids(ws: Workspace) -> set[str]:
    out: set[str] = set()
    for doc in ws.docs:
        if not _editable(doc):
            continue
        for section in ("entities", "chunks"):
            for e in doc.entries(section):
                if isinstance(e.data, dict):
                    for key in REF_FIELDS:
                        refs = e.data.get(key)
                        if isinstance(refs, list):
                            out.update(t for t in (_ref_target(r, True) for r in refs) if t)
    return out


# ---------------------------------------------------------------- running an operation


def _run(ws: Workspace, op: str, description: str, edit: Callable[[Document], None], dry_run: bool) -> UndoRecord | str:
    """Apply ``edit`` to a scratch copy of each document; commit all changes only at the end."""
    changes: list[DocChange] = []
    for i, doc in enumerate(ws.docs):
        if not _editable(doc):
            continue
        scratch = Document.from_text(doc.text, doc.path)
        if not _editable(scratch):
            continue
        edit(scratch)
        if scratch.text != doc.text:
            changes.append(DocChange(doc.path, i, doc.text, scratch.text))
    record = UndoRecord(op, description, changes)
    if dry_run:
        return record.diff()
    for c in changes:
        ws.docs[c.index].replace_text(c.after)
    return record


def _check_id(value: Any, what: str = "entity id") -> str:
    if not isinstance(value, str) or not value.strip():
        raise EntityOpError(f"invalid {what} {value!r}: expected a non-empty string")
    return value


def _require_known(ws: Workspace, eid: Any, declared: bool = True) -> str:
    """``eid``, checked: declared (or, if not ``declared``, referenced) somewhere, and mentioned in
    no document whose frontmatter did not load (a duplicate key, an alias bomb): such a document
    cannot be edited, so an edit of ``eid`` would miss it and leave it stale."""
    eid = _check_id(eid)
    _refuse_unloaded_mentions(ws, eid)
    if ws.declarations(eid) or (not declared and ws.referenced(eid)):
        return eid
    raise EntityOpError(f"unknown entity '{eid}': no document of the workspace declares it")


def _refuse_unloaded_mentions(ws: Workspace, eid: str) -> None:
    """Raise, naming the file and line of the frontmatter problem, if a document whose frontmatter
    did not load mentions ``eid`` (as a whole id) in that frontmatter: an edit only ever touches
    the frontmatter, so a mention in the body (prose) does not make the document stale."""
    mention = re.compile(r"(?<![A-Za-z0-9_.:/+#@-])" + re.escape(eid) + r"(?![A-Za-z0-9_.:/+#@-])")
    for doc in ws.docs:
        err = doc.frontmatter_error
        if doc.readable and err is not None and mention.search(_frontmatter_text(doc)):
            raise EntityOpError(f"{doc.label}:{err.line}: cannot edit the frontmatter: {err.message}; "
                                f"it mentions {eid}, so nothing was changed")


def _frontmatter_text(doc: Document) -> str:
    """The text of ``doc``'s frontmatter block, fences included; all of it when the block is not
    closed (where it ends is unknown, so every line may belong to it)."""
    try:
        block = fmt.find_block(doc.lines)
    except fmt.FrontmatterError:
        return doc.text
    return "".join(doc.lines[: block[1] + 1]) if block is not None else ""


def _validate_new_id(new: Any) -> str:
    if not isinstance(new, str) or not ENTITY_ID.match(new) or NEGATION.match(new):
        raise EntityOpError(f"invalid entity id {new!r}: use letters, digits and _ . : / + # @ - without spaces (e.g. entity:kafka)")
    return new


def _fold(s: Any) -> str:
    return str(s).strip().casefold()


def _aliases_of(data: dict) -> list:
    a = data.get("aliases")
    if isinstance(a, list):
        return list(a)
    if isinstance(a, str) and a.strip():
        return [a]
    return []


def _with_aliases(name: Any, existing: list, additions: Iterable[Any]) -> list:
    out = list(existing)
    seen = {_fold(name)} if name is not None else set()
    seen.update(_fold(a) for a in existing if isinstance(a, (str, int, float)))
    for a in additions:
        if not isinstance(a, (str, int, float)) or isinstance(a, bool) or not str(a).strip():
            continue
        if _fold(a) not in seen:
            seen.add(_fold(a))
            out.append(str(a) if not isinstance(a, str) else a)
    return out


# ---------------------------------------------------------------- operations


def merge_entities(ws: Workspace, into: str, merged: list[str], dry_run: bool = False) -> UndoRecord | str:
    """Merge ``merged`` entities into ``into`` across the workspace (see the module docstring)."""
    into = _require_known(ws, into)
    if isinstance(merged, str):
        merged = [merged]
    merged = list(dict.fromkeys(_check_id(m) for m in merged))
    if not merged:
        raise EntityOpError("nothing to merge: give at least one entity id")
    if into in merged:
        raise EntityOpError(f"cannot merge '{into}' into itself")
    for m in merged:
        _require_known(ws, m, declared=False)
    target = ws.entity_data(into) or {}
    if target.get("type") != "state":
        used = sorted(set(merged) & _state_ref_ids(ws))
        if used:
            raise EntityOpError(
                f"'{used[0]}' is used as a world-model state but '{into}' is a '{target.get('type')}': retype the target to 'state' first"
            )
    additions: list[Any] = []
    for m in merged:
        for doc, i in ws.declarations(m):
            d = doc.entities[i].data
            if d.get("name") is not None:
                additions.append(d.get("name"))
            additions.extend(_aliases_of(d))
    canonical = {k: copy.deepcopy(target[k]) for k in ("id", "name", "type") if k in target}
    canonical["aliases"] = _with_aliases(target.get("name"), _aliases_of(target), additions)
    mapping: dict[str, str | None] = {m: into for m in merged}
    merged_set = set(merged)

    def edit(doc: Document) -> None:
        declared_merged = [e.index for e in doc.entities if isinstance(e.id, str) and e.id in merged_set]
        _rewrite_refs(doc, mapping)
        declares_target = False
        for e in doc.entities:
            if e.id != into:
                continue
            declares_target = True
            old = _aliases_of(e.data)
            new = _with_aliases(e.data.get("name"), old, additions)
            if new != old or (new and not isinstance(e.data.get("aliases"), list)):
                doc.set_field("entities", e.index, "aliases", new)
        if not declares_target and (declared_merged or into in _references(doc)):
            if declared_merged:
                first = declared_merged.pop(0)
                local = doc.entities[first].data
                for key, value in canonical.items():
                    if local.get(key) != value or type(local.get(key)) is not type(value):
                        doc.set_field("entities", first, key, value)
            else:
                _append_entry(doc, "entities", dict(canonical))
        doc.remove_entries("entities", declared_merged)

    names = ", ".join(merged)
    return _run(ws, "merge", f"merge {names} into {into}", edit, dry_run)


def rename_entity_id(ws: Workspace, old: str, new: str, dry_run: bool = False) -> UndoRecord | str:
    """Give an entity a new id, rewriting its declarations and every reference to it."""
    old = _require_known(ws, old, declared=False)
    new = _validate_new_id(new)
    if new == old:
        raise EntityOpError(f"'{old}' already has that id")
    if ws.declarations(new):
        raise EntityOpError(f"entity id '{new}' already exists; merge the two entities instead")

    def edit(doc: Document) -> None:
        _rewrite_refs(doc, {old: new})
        for e in doc.entities:
            if e.id == old:
                doc.set_field("entities", e.index, "id", new)

    return _run(ws, "rename", f"rename {old} to {new}", edit, dry_run)


def update_entity(ws: Workspace, id: str, name: str | None = None, type: str | None = None,
                  dry_run: bool = False) -> UndoRecord | str:
    """Rename (``name``) and/or retype (``type``) every declaration of an entity.

    A new name that was an alias is dropped from the aliases (it would repeat the name).
    """
    eid = _require_known(ws, id)
    if name is None and type is None:
        raise EntityOpError("nothing to update: give a name or a type")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise EntityOpError(f"invalid entity name {name!r}: expected a non-empty string")
    if type is not None and type not in VALID_ENTITY_TYPES:
        raise EntityOpError(f"unknown entity type {type!r}: expected one of {', '.join(sorted(VALID_ENTITY_TYPES))}")
    if type is not None and type != "state":
        if eid in _state_ref_ids(ws):
            raise EntityOpError(f"'{eid}' is used as a world-model state; it must stay of type 'state'")

    def edit(doc: Document) -> None:
        for e in doc.entities:
            if e.id != eid:
                continue
            if name is not None and e.data.get("name") != name:
                doc.set_field("entities", e.index, "name", name)
                old = _aliases_of(doc.entities[e.index].data)
                kept = [a for a in old if _fold(a) != _fold(name)]
                if kept != old:
                    doc.set_field("entities", e.index, "aliases", kept)
            if type is not None and doc.entities[e.index].data.get("type") != type:
                doc.set_field("entities", e.index, "type", type)

    what = " and ".join(x for x in (f"name '{name}'" if name is not None else "", f"type '{type}'" if type is not None else "") if x)
    return _run(ws, "update", f"set {what} of {eid}", edit, dry_run)


def add_alias(ws: Workspace, id: str, alias: str, dry_run: bool = False) -> UndoRecord | str:
    """Add ``alias`` to every declaration of the entity (unless it already is its name or an alias)."""
    eid = _require_known(ws, id)
    if not isinstance(alias, str) or not alias.strip():
        raise EntityOpError(f"invalid alias {alias!r}: expected a non-empty string")
    alias = alias.strip()
    decls = [doc.entities[i].data for doc, i in ws.declarations(eid)]
    if all(_fold(alias) in {_fold(d.get("name"))} | {_fold(a) for a in _aliases_of(d)} for d in decls):
        raise EntityOpError(f"'{alias}' is already the name or an alias of '{eid}'")

    def edit(doc: Document) -> None:
        for e in doc.entities:
            if e.id == eid:
                old = _aliases_of(e.data)
                new = _with_aliases(e.data.get("name"), old, [alias])
                if new != old:
                    doc.set_field("entities", e.index, "aliases", new)

    return _run(ws, "add-alias", f"add alias '{alias}' to {eid}", edit, dry_run)


def remove_alias(ws: Workspace, id: str, alias: str, dry_run: bool = False) -> UndoRecord | str:
    """Remove ``alias`` (matched case-insensitively) from every declaration of the entity."""
    eid = _require_known(ws, id)
    if not isinstance(alias, str) or not alias.strip():
        raise EntityOpError(f"invalid alias {alias!r}: expected a non-empty string")
    decls = [doc.entities[i].data for doc, i in ws.declarations(eid)]
    if not any(_fold(alias) == _fold(a) for d in decls for a in _aliases_of(d)):
        raise EntityOpError(f"'{alias}' is not an alias of '{eid}'")

    def edit(doc: Document) -> None:
        for e in doc.entities:
            if e.id == eid:
                old = _aliases_of(e.data)
                new = [a for a in old if _fold(a) != _fold(alias)]
                if new != old:
                    doc.set_field("entities", e.index, "aliases", new)

    return _run(ws, "remove-alias", f"remove alias '{alias}' from {eid}", edit, dry_run)


def delete_entity(ws: Workspace, id: str, dry_run: bool = False) -> UndoRecord | str:
    """Delete an entity's declarations and every link and state reference to it."""
    eid = _require_known(ws, id, declared=False)

    def edit(doc: Document) -> None:
        _rewrite_refs(doc, {eid: None})
        doc.remove_entries("entities", [e.index for e in doc.entities if e.id == eid])

    return _run(ws, "delete", f"delete {eid}", edit, dry_run)
