"""The summary store: ``NOVEL.summary.json`` beside the manuscript (model, parameters, hashes, tree).

``novel.txt`` → ``novel.summary.json`` in the same folder; when that folder cannot be
written (a read-only corpus), the store goes to ``<user cache>/ctxfst-tui/summaries/``
under a name made from the manuscript's path (:func:`store_path` says which).

:func:`apply_stored` lays a stored tree over a freshly segmented manuscript for display:
nodes are matched by id; a stored summary whose node's source changed since is shown with
status ``stale``; a node that was ``running`` when the run stopped is ``pending`` again.

An extractive summary (the node's own sentences, after every model answer was rejected) is a
``done`` node with ``"extractive": true``; the key is absent otherwise, so stores written before
it existed load unchanged (their nodes are model summaries or ``failed``). The format version
stays 1: the key is additive.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import platformdirs

from ctxfst_tui.core.summary.tree import Manuscript, Node

FORMAT = "ctxfst-summary-tree"
VERSION = 1


class StoreError(ValueError):
    """The store cannot be read or written; the message is one line."""


def beside_path(manuscript: str | os.PathLike) -> Path:
    p = Path(manuscript)
    return p.with_name(p.stem + ".summary.json")


def fallback_path(manuscript: str | os.PathLike) -> Path:
    from ctxfst_tui.core.workspace.files import safe_resolve

    p = safe_resolve(manuscript)
    digest = hashlib.sha256(str(p).encode("utf-8")).hexdigest()[:12]
    return Path(platformdirs.user_cache_dir("ctxfst-tui")) / "summaries" / f"{p.stem}-{digest}.summary.json"


def _writable_dir(d: Path) -> bool:
    return d.is_dir() and os.access(d, os.W_OK)


def store_path(manuscript: str | os.PathLike, explicit: str | os.PathLike | None = None) -> Path:
    """Where the store of ``manuscript`` lives: ``explicit``, beside it, or the user cache."""
    if explicit is not None:
        return Path(explicit)
    beside = beside_path(manuscript)
    if beside.exists() or _writable_dir(beside.parent):
        return beside
    return fallback_path(manuscript)


def load_store(path: str | os.PathLike) -> dict[str, Any] | None:
    """The stored document, or None when there is none (a damaged file raises :class:`StoreError`)."""
    from ctxfst_tui.core.workspace.files import NotRegularFile, read_regular_text

    p = Path(path)
    try:
        text = read_regular_text(p)
    except NotRegularFile as exc:
        if exc.reason == "no such file":
            return None
        raise StoreError(f"{p}: {exc.reason}, not a summary store") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{p}: cannot read the summary store: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{p}:{exc.lineno}:{exc.colno}: the summary store is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("tree"), dict):
        raise StoreError(f"{p}: not a summary store (expected format {FORMAT!r})")
    return data


def store_document(ms: Manuscript, *, model: dict[str, Any] | None = None, parameters: dict[str, Any] | None = None,
                   counts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON document of the store (also what ``--format json`` writes)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "manuscript": str(ms.path.name) if ms.path is not None else None,
        "manuscript_sha256": hashlib.sha256(ms.text.encode("utf-8")).hexdigest(),
        "title": ms.root.title,
        "updated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": model or {},
        "parameters": parameters or {},
        "counts": counts or {},
        "tree": ms.root.to_json(),
    }


def save_store(path: str | os.PathLike, document: dict[str, Any]) -> Path:
    """Write ``document`` safely (``core.safe_write``: temp file + rename; a new store gets the
    mode the umask gives, a replaced one keeps its mode and owner)."""
    from ctxfst_tui.core.safe_write import write_file

    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        write_file(p, (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
    except OSError as exc:
        raise StoreError(f"{p}: cannot write the summary store: {exc.strerror or exc}") from None
    return p


def apply_stored(ms: Manuscript, tree: dict[str, Any] | None) -> dict[str, int]:
    """Copy stored summaries onto ``ms``'s nodes (by id); returns counts by resulting status."""
    stored: dict[str, dict[str, Any]] = {}

    def rec(d: dict[str, Any]) -> None:
        if isinstance(d.get("id"), str):
            stored[d["id"]] = d
        for c in d.get("children") or []:
            if isinstance(c, dict):
                rec(c)

    if isinstance(tree, dict):
        rec(tree)
    counts: dict[str, int] = {}
    for node in ms.root.walk():
        if node.front_matter:
            node.status = "skipped"
        else:
            d = stored.get(node.id)
            if d is not None and d.get("kind") == node.kind:
                _copy(node, d)
            else:
                node.status = "pending"
        counts[node.status] = counts.get(node.status, 0) + 1
    return counts


def _copy(node: Node, d: dict[str, Any]) -> None:
    node.summary = d.get("summary") if isinstance(d.get("summary"), str) else None
    node.flags = [str(f) for f in d.get("flags") or []]
    node.input_hash = d.get("input_hash") if isinstance(d.get("input_hash"), str) else None
    node.groups = [g for g in d.get("groups") or [] if isinstance(g, dict)]
    node.rejected = [str(r) for r in d.get("rejected") or []]
    node.extractive = d.get("extractive") is True and node.summary is not None
    status = d.get("status") if d.get("status") in ("done", "failed", "pending", "stale") else "pending"
    if d.get("source_hash") != node.source_hash and (node.summary or status in ("done", "failed")):
        status = "stale"
    node.status = status
