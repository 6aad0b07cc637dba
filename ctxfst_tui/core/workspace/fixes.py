"""Applying the machine-applicable ``fix`` of a diagnosis (``diagnose --level fix``).

A fix is a dict with an ``op`` and its arguments, never free text:

========================  ==========================================================  =============
op                        arguments                                                    acts on
========================  ==========================================================  =============
``merge_entities``        ``into``, ``merged`` (list of ids)                           workspace
``add_alias``             ``entity_id``, ``alias``                                     workspace
``update_entity``         ``entity_id``, ``name`` and/or ``type``                      workspace
``delete_entity``         ``entity_id`` (its links and state references go too)        workspace
``declare_entity``        ``entity`` (id, name, type[, aliases]), ``chunk_id``          one document
``link_entity``           ``chunk_id``, ``entity_id``                                  one chunk
``unlink_entity``         ``chunk_id``, ``entity_id`` (any value, e.g. ``42``)          one chunk
``relink_entity``         ``chunk_id``, ``entity_id`` (old), ``into`` (new)             one chunk
``set_context``           ``chunk_id``, ``context``, optional ``replaces`` (expected)  one chunk
``move_context_comment``  ``chunk_id``, ``context`` (the comment's), ``replaces``      one chunk
``remove_dependency``     ``chunk_id``, ``dependency``                                 one chunk
========================  ==========================================================  =============

:func:`apply_fix` applies one fix through the entity operations of :mod:`.entities` or the
field primitives of :class:`~ctxfst_tui.core.format.document.Document` (only the lines of the
field concerned change) and returns an :class:`~ctxfst_tui.core.workspace.undo.UndoRecord`, so
the workbench's :class:`~ctxfst_tui.core.workspace.undo.UndoStack` can undo it byte for byte.
A fix that no longer fits the document (the chunk is gone, the link already removed, the
context rewritten since) raises :class:`FixError` with a one-line message and changes nothing.

``path`` names the document a chunk-level fix was reported for (the report's ``filepath``);
without it the chunk id must be unique in the workspace.

:func:`apply_fixes` applies many fixes in a safe order (entity merges before links, deletes
last), skipping duplicates and stale ones, and follows merges (a later ``link_entity`` to a
merged id links the merge target instead).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ctxfst_tui.core.format.document import Document, jsonable
from ctxfst_tui.core.workspace.undo import DocChange, UndoRecord
from ctxfst_tui.core.workspace.entity_ops import (
    EntityOpError,
    add_alias,
    delete_entity,
    merge_entities,
    update_entity,
)
from ctxfst_tui.core.workspace.workspace import Workspace

# The order apply_fixes uses: identities first, then links, then text, deletions last.
FIX_OPS = (
    "declare_entity", "relink_entity", "merge_entities", "add_alias", "update_entity",
    "unlink_entity", "link_entity", "set_context", "move_context_comment", "remove_dependency", "delete_entity",
)
WORKSPACE_OPS = frozenset({"merge_entities", "add_alias", "update_entity", "delete_entity"})


class FixError(ValueError):
    """A fix that cannot be applied (unknown op, malformed, or stale); the message is one line."""


# ---------------------------------------------------------------- helpers


def _editable(doc: Document) -> bool:
    return doc.readable and doc.frontmatter_error is None and doc.data is not None


def _arg(fix: dict, key: str, kind: type | tuple[type, ...] = str) -> Any:
    if key not in fix:
        raise FixError(f"fix '{fix.get('op')}' needs '{key}'")
    value = fix[key]
    if kind is str and (not isinstance(value, str) or not value.strip()):
        raise FixError(f"fix '{fix.get('op')}': '{key}' must be a non-empty string, not {value!r}")
    if kind is not str and not isinstance(value, kind):
        raise FixError(f"fix '{fix.get('op')}': '{key}' has the wrong type ({type(value).__name__})")
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal as the report wrote them (dates as ISO text; 1 is not true)."""
    a, b = jsonable(a), jsonable(b)
    return type(a) is type(b) and a == b


def _short(text: Any, limit: int = 60) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _doc_index(ws: Workspace, path: str | os.PathLike | None) -> int | None:
    if path is None:
        return None
    doc = ws.document(path)
    if doc is None:
        raise FixError(f"{path}: not a document of this workspace")
    return next(i for i, d in enumerate(ws.docs) if d is doc)


def _find_chunk(ws: Workspace, chunk_id: Any, path: str | os.PathLike | None) -> tuple[int, int]:
    """(document index, chunk entry index) of ``chunk_id`` in ``path`` (or anywhere, if unique)."""
    if not isinstance(chunk_id, str) or not chunk_id:
        raise FixError(f"invalid chunk id {chunk_id!r}")
    only = _doc_index(ws, path)
    hits = [
        (i, e.index)
        for i, doc in enumerate(ws.docs)
        if (only is None or i == only) and _editable(doc)
        for e in doc.chunks
        if e.id == chunk_id
    ]
    where = ws.docs[only].label if only is not None else "the workspace"
    if not hits:
        raise FixError(f"stale fix: no chunk '{chunk_id}' in {where}")
    if len(hits) > 1:
        if len({i for i, _ in hits}) == 1:
            raise FixError(f"chunk id '{chunk_id}' appears {len(hits)} times in {where}; fix the duplicate first")
        raise FixError(f"chunk '{chunk_id}' is in several documents; say which document the fix is for")
    return hits[0]


def _edit(ws: Workspace, i: int, op: str, description: str, edit: Callable[[Document], None]) -> UndoRecord:
    """Apply ``edit`` to a scratch copy of document ``i``, then commit it as one undoable change."""
    doc = ws.docs[i]
    scratch = Document.from_text(doc.text, doc.path)
    edit(scratch)
    if scratch.text == doc.text:
        raise FixError(f"stale fix: '{description}' would change nothing")
    change = DocChange(doc.path, i, doc.text, scratch.text)
    doc.replace_text(scratch.text)
    return UndoRecord(op, description, [change])


def _chunk_data(doc: Document, index: int) -> dict:
    return doc.chunks[index].data


def _declared(doc: Document, entity_id: str) -> bool:
    return any(e.id == entity_id for e in doc.entities)


def _list_field(doc: Document, index: int, key: str, missing_ok: bool) -> list:
    value = _chunk_data(doc, index).get(key)
    if value is None and missing_ok:
        return []
    if not isinstance(value, list):
        raise FixError(f"chunk '{doc.chunks[index].id}': '{key}' is not a list; fix it by hand")
    return list(value)


# ---------------------------------------------------------------- chunk-level ops


def _link(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    cid, eid = _arg(fix, "chunk_id"), _arg(fix, "entity_id")
    i, k = _find_chunk(ws, cid, path)
    doc = ws.docs[i]
    refs = _list_field(doc, k, "entities", missing_ok=True)
    if any(_same(r, eid) for r in refs):
        raise FixError(f"stale fix: chunk '{cid}' already links '{eid}'")
    if not _declared(doc, eid):
        raise FixError(f"stale fix: '{eid}' is not declared in {doc.label}; declare it before linking it")
    return _edit(ws, i, "link_entity", f"link {eid} from {cid}",
                 lambda d: d.set_field("chunks", k, "entities", refs + [eid]))


def _unlink(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    cid = _arg(fix, "chunk_id")
    if "entity_id" in fix:
        targets = [fix["entity_id"]]
    elif isinstance(fix.get("entity_ids"), list) and fix["entity_ids"]:
        targets = list(fix["entity_ids"])
    else:
        raise FixError("fix 'unlink_entity' needs 'entity_id'")
    i, k = _find_chunk(ws, cid, path)
    refs = _list_field(ws.docs[i], k, "entities", missing_ok=False)
    kept = [r for r in refs if not any(_same(r, t) for t in targets)]
    if len(kept) == len(refs):
        raise FixError(f"stale fix: chunk '{cid}' does not link {', '.join(json.dumps(jsonable(t)) for t in targets)}")
    shown = ", ".join(t if isinstance(t, str) else json.dumps(jsonable(t)) for t in targets)
    return _edit(ws, i, "unlink_entity", f"unlink {shown} from {cid}",
                 lambda d: d.set_field("chunks", k, "entities", kept))


def _relink(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    cid, old, new = _arg(fix, "chunk_id"), _arg(fix, "entity_id"), _arg(fix, "into")
    i, k = _find_chunk(ws, cid, path)
    doc = ws.docs[i]
    refs = _list_field(doc, k, "entities", missing_ok=False)
    if not any(_same(r, old) for r in refs):
        raise FixError(f"stale fix: chunk '{cid}' does not link '{old}'")
    if not _declared(doc, new):
        raise FixError(f"stale fix: '{new}' is not declared in {doc.label}")
    out: list = []
    for r in refs:
        r = new if _same(r, old) else r
        if not (isinstance(r, str) and r == new and new in out):
            out.append(r)
    return _edit(ws, i, "relink_entity", f"link {new} instead of {old} from {cid}",
                 lambda d: d.set_field("chunks", k, "entities", out))


def _context_text(value: Any) -> str:
    if value is None or isinstance(value, (list, dict)):
        return ""
    return value if isinstance(value, str) else str(value)


def _set_context(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    cid = _arg(fix, "chunk_id")
    context = _arg(fix, "context")
    i, k = _find_chunk(ws, cid, path)
    current = _context_text(_chunk_data(ws.docs[i], k).get("context"))
    if "replaces" in fix and current != _context_text(fix["replaces"]):
        raise FixError(f"stale fix: the context of '{cid}' changed since the diagnosis")
    if current == context:
        raise FixError(f"stale fix: chunk '{cid}' already has that context")
    return _edit(ws, i, "set_context", f"set the context of {cid} to '{_short(context, 40)}'",
                 lambda d: d.set_field("chunks", k, "context", context))


def _move_context_comment(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    """The chunk's ``<!-- Context: -->`` comment into its ``context`` field (kept if it already says
    the same), the comment and its blank line out of the body; no other line changes."""
    from ctxfst_tui.core.format.context_comment import find_context_comment, same_context, without_comment

    cid = _arg(fix, "chunk_id")
    context = _arg(fix, "context")
    i, k = _find_chunk(ws, cid, path)
    doc = ws.docs[i]
    body = doc.body_chunk(cid)
    comment = find_context_comment(body) if body is not None else None
    if comment is None or not same_context(comment.text, context):
        raise FixError(f"stale fix: chunk '{cid}' no longer opens with that context comment")
    current = _context_text(_chunk_data(doc, k).get("context"))
    keep = same_context(current, context)
    if not keep and current.strip() and current != _context_text(fix.get("replaces", "")):
        raise FixError(f"stale fix: the context of '{cid}' changed since the diagnosis")

    def edit(d: Document) -> None:
        d.replace_text(without_comment(d.text, comment))  # the body first: frontmatter lines stay put
        if not keep:
            d.set_field("chunks", k, "context", comment.text)

    what = "remove the context comment of" if keep else "move the context comment into the context of"
    return _edit(ws, i, "move_context_comment", f"{what} {cid}", edit)


def _remove_dependency(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    cid = _arg(fix, "chunk_id")
    if "dependency" not in fix:
        raise FixError("fix 'remove_dependency' needs 'dependency'")
    dep = fix["dependency"]
    i, k = _find_chunk(ws, cid, path)
    deps = _list_field(ws.docs[i], k, "dependencies", missing_ok=False)
    kept = [x for x in deps if not _same(x, dep)]
    if len(kept) == len(deps):
        raise FixError(f"stale fix: chunk '{cid}' does not depend on {json.dumps(jsonable(dep))}")
    shown = dep if isinstance(dep, str) else json.dumps(jsonable(dep))
    return _edit(ws, i, "remove_dependency", f"remove the dependency of {cid} on {shown}",
                 lambda d: d.set_field("chunks", k, "dependencies", kept))


def _declare(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    entity = _arg(fix, "entity", dict)
    eid = entity.get("id")
    if not isinstance(eid, str) or not eid.strip():
        raise FixError(f"fix 'declare_entity': the entity needs a string id, not {eid!r}")
    for key in ("name", "type"):
        if not isinstance(entity.get(key), str) or not entity[key].strip():
            raise FixError(f"fix 'declare_entity': the entity needs a '{key}'")
    if fix.get("chunk_id") is not None:
        i, _ = _find_chunk(ws, fix["chunk_id"], path)
    else:
        i = _doc_index(ws, path)
        if i is None:
            if len(ws.docs) != 1:
                raise FixError("fix 'declare_entity' needs the document to declare the entity in")
            i = 0
    doc = ws.docs[i]
    if not _editable(doc):
        raise FixError(f"{doc.label}: the frontmatter cannot be edited")
    if _declared(doc, eid):
        raise FixError(f"stale fix: '{eid}' is already declared in {doc.label}")
    value = {k: entity[k] for k in ("id", "name", "type", "aliases") if k in entity}
    value.update({k: v for k, v in entity.items() if k not in value})
    return _edit(ws, i, "declare_entity", f"declare {eid} ('{entity['name']}', {entity['type']}) in {doc.label}",
                 lambda d: d.append_entry("entities", value))


# ---------------------------------------------------------------- workspace-level ops


def _entity_op(call: Callable[[], Any]) -> UndoRecord:
    try:
        record = call()
    except EntityOpError as exc:
        raise FixError(f"cannot apply: {exc}") from None
    assert isinstance(record, UndoRecord)
    return record


def _merge(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    into = _arg(fix, "into")
    merged = fix.get("merged")
    if isinstance(merged, str):
        merged = [merged]
    if not isinstance(merged, list) or not merged:
        raise FixError("fix 'merge_entities' needs 'merged' (a list of entity ids)")
    return _entity_op(lambda: merge_entities(ws, into, list(merged)))


def _add_alias(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    eid, alias = _arg(fix, "entity_id"), _arg(fix, "alias")
    return _entity_op(lambda: add_alias(ws, eid, alias))


def _update(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    eid = _arg(fix, "entity_id")
    if fix.get("name") is None and fix.get("type") is None:
        raise FixError("fix 'update_entity' needs 'name' or 'type'")
    return _entity_op(lambda: update_entity(ws, eid, name=fix.get("name"), type=fix.get("type")))


def _delete(ws: Workspace, fix: dict, path: Any) -> UndoRecord:
    eid = _arg(fix, "entity_id")
    return _entity_op(lambda: delete_entity(ws, eid))


_HANDLERS: dict[str, Callable[[Workspace, dict, Any], UndoRecord]] = {
    "merge_entities": _merge,
    "add_alias": _add_alias,
    "update_entity": _update,
    "delete_entity": _delete,
    "declare_entity": _declare,
    "link_entity": _link,
    "unlink_entity": _unlink,
    "relink_entity": _relink,
    "set_context": _set_context,
    "move_context_comment": _move_context_comment,
    "remove_dependency": _remove_dependency,
}
assert set(_HANDLERS) == set(FIX_OPS)


# ---------------------------------------------------------------- public API


def apply_fix(ws: Workspace, fix: dict, path: str | os.PathLike | None = None) -> UndoRecord:
    """Apply one diagnosis fix to the workspace (in memory; ``ws.save()`` writes it).

    Returns the :class:`UndoRecord` of the change. Raises :class:`FixError` (one line) for a
    malformed fix, an unknown ``op``, or a fix that no longer applies; nothing changes then.
    """
    if not isinstance(fix, dict):
        raise FixError(f"a fix must be a mapping with an 'op', not {type(fix).__name__}")
    op = fix.get("op")
    handler = _HANDLERS.get(op) if isinstance(op, str) else None
    if handler is None:
        raise FixError(f"unknown fix op {op!r} (known: {', '.join(FIX_OPS)})")
    return handler(ws, fix, path)


def describe_fix(fix: Any) -> str:
    """The fix in one line for the user interface, e.g. 'merge entity:js into entity:javascript'."""
    if not isinstance(fix, dict):
        return f"not a fix: {_short(fix)}"
    op = fix.get("op")
    g = fix.get

    def show(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(jsonable(v), ensure_ascii=False)

    if op == "merge_entities":
        merged = g("merged")
        merged = ", ".join(map(show, merged)) if isinstance(merged, list) else show(merged)
        return f"merge {merged} into {show(g('into'))}"
    if op == "add_alias":
        return f"add alias '{show(g('alias'))}' to {show(g('entity_id'))}"
    if op == "update_entity":
        parts = [f"{k} '{show(g(k))}'" for k in ("name", "type") if g(k) is not None]
        return f"set {' and '.join(parts) or 'nothing'} of {show(g('entity_id'))}"
    if op == "delete_entity":
        return f"delete {show(g('entity_id'))} and its links"
    if op == "declare_entity":
        e = g("entity") if isinstance(g("entity"), dict) else {}
        return f"declare {show(e.get('id'))} ('{show(e.get('name'))}', {show(e.get('type'))})" + (
            f" for {show(g('chunk_id'))}" if g("chunk_id") else "")
    if op == "link_entity":
        return f"link {show(g('entity_id'))} from {show(g('chunk_id'))}"
    if op == "unlink_entity":
        target = g("entity_id") if "entity_id" in fix else ", ".join(map(show, g("entity_ids") or []))
        return f"unlink {show(target)} from {show(g('chunk_id'))}"
    if op == "relink_entity":
        return f"link {show(g('into'))} instead of {show(g('entity_id'))} from {show(g('chunk_id'))}"
    if op == "set_context":
        return f"set the context of {show(g('chunk_id'))} to \"{_short(g('context'), 50)}\""
    if op == "move_context_comment":
        return f"move the <!-- Context: --> comment of {show(g('chunk_id'))} into its context"
    if op == "remove_dependency":
        return f"remove the dependency of {show(g('chunk_id'))} on {show(g('dependency'))}"
    return f"unknown fix {op!r}"


def collect_fixes(reports: dict | list[dict]) -> list[tuple[Path | None, dict]]:
    """(document path, fix) of every issue that has a fix, from one report or a list of them."""
    out: list[tuple[Path | None, dict]] = []
    for rep in [reports] if isinstance(reports, dict) else list(reports):
        fp = rep.get("filepath")
        path = Path(fp) if isinstance(fp, str) and fp != "<input>" else None
        out.extend((path, i["fix"]) for i in rep.get("issues", []) if isinstance(i.get("fix"), dict) and i["fix"].get("op"))
    return out


@dataclass
class FixRun:
    """What :func:`apply_fixes` did: the applied fixes with their records, and the skipped ones with why."""

    applied: list[tuple[dict, UndoRecord]] = field(default_factory=list)
    skipped: list[tuple[dict, str]] = field(default_factory=list)

    @property
    def records(self) -> list[UndoRecord]:
        return [r for _, r in self.applied]


def _follow(fix: dict, renamed: dict[str, str]) -> dict | None:
    """The fix with merged ids replaced by their merge target (None: nothing left to do)."""
    op = fix.get("op")
    if op in ("link_entity", "add_alias") and fix.get("entity_id") in renamed:
        return {**fix, "entity_id": renamed[fix["entity_id"]]}
    if op == "merge_entities" and isinstance(fix.get("merged"), list):
        into = renamed.get(fix.get("into"), fix.get("into"))
        merged = [m for m in dict.fromkeys(renamed.get(m, m) for m in fix["merged"]) if m != into]
        return {**fix, "into": into, "merged": merged} if merged else None
    return fix


def apply_fixes(ws: Workspace, fixes: Iterable[dict | tuple[Any, dict]], path: str | os.PathLike | None = None,
                check: Callable[[dict, Any, UndoRecord], str | None] | None = None) -> FixRun:
    """Apply many fixes (bare dicts for ``path``, or ``(path, fix)`` pairs as :func:`collect_fixes`
    gives) in a safe order; duplicates are applied once, stale fixes are skipped with the reason.

    ``check(fix, path, record)``, called after each fix is applied, may refuse it by returning why:
    the fix is then undone and skipped with that reason (``diagnose --apply`` refuses a fix that,
    after the fixes before it, would create a finding as bad as its own)."""
    items: list[tuple[Any, dict]] = []
    seen: set[tuple[str, str]] = set()
    for item in fixes:
        p, fix = item if isinstance(item, tuple) else (path, item)
        if not isinstance(fix, dict):
            continue
        key = ("" if fix.get("op") in WORKSPACE_OPS else str(p), json.dumps(fix, sort_keys=True, default=str))
        if key not in seen:
            seen.add(key)
            items.append((p, fix))
    rank = {op: k for k, op in enumerate(FIX_OPS)}
    items.sort(key=lambda pf: rank.get(pf[1].get("op"), len(rank)))
    run = FixRun()
    renamed: dict[str, str] = {}
    for p, fix in items:
        followed = _follow(fix, renamed)
        if followed is None:
            run.skipped.append((fix, "already merged"))
            continue
        try:
            record = apply_fix(ws, followed, p)
        except FixError as exc:
            run.skipped.append((fix, str(exc)))
            continue
        refused = check(followed, p, record) if check is not None else None
        if refused:
            record.undo(ws)
            run.skipped.append((fix, refused))
            continue
        run.applied.append((followed, record))
        if followed.get("op") == "merge_entities":
            for m in followed["merged"]:
                renamed[m] = followed["into"]
            for k, v in list(renamed.items()):
                renamed[k] = renamed.get(v, v)
    return run
