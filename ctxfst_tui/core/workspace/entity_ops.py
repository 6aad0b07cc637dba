"""Entity operations across a workspace of CtxFST documents: merge, rename, retype, aliases, delete.

Every operation works on all documents of a :class:`Workspace` at once and returns an
:class:`UndoRecord` (the text of each affected document before and after), or with
``dry_run=True`` the unified diff it would apply, changing nothing. Edits go through the
:class:`~ctxfst_tui.core.format.document.Document` line primitives, so only the lines of the
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
import re
from typing import Any, Callable, Iterable

from ctxfst_tui.core.format import frontmatter as fmt
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.schema import CHUNK_LINK_FIELD, ENTITY_ID, ENTITY_TYPES, NEGATION, STATE_REF_FIELDS
from ctxfst_tui.core.workspace.undo import DocChange, EntityOpError, UndoRecord
from ctxfst_tui.core.workspace.workspace import (
    Workspace,
    _editable,
    _ref_target,
    _references,
)


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
            keys = ((CHUNK_LINK_FIELD,) if section == "chunks" else ()) + STATE_REF_FIELDS
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
                    for key in STATE_REF_FIELDS:
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
    if type is not None and type not in ENTITY_TYPES:
        raise EntityOpError(f"unknown entity type {type!r}: expected one of {', '.join(sorted(ENTITY_TYPES))}")
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
