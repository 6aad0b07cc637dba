"""Fixes that never make a document worse: each fix is tried before it is offered.

A ``fix`` is offered (``diagnose --level fix``, ``diagnose --apply``, the workbench's Diagnosis
view) only when applying it creates no finding of its own finding's severity or worse. The fix is
applied to scratch copies of the documents it changes, those documents are diagnosed before and
after, and the findings compared (:func:`created_findings`): a finding is *created* when nothing
like it was there before, or *made worse* when it was there with a smaller ``count`` (e.g.
``entity-links-many`` going from 7 links to 8). A fix that would do so is withheld: the issue keeps
its suggestion, loses its ``fix``, and says why in ``fix_withheld``.

A finding that measures how bad it is carries ``count`` (``entity-links-many``: the links); the
message's numbers are not compared, so "86 tokens" becoming "91 tokens" is the same finding.

The before/after diagnosis covers the documents the fix changes (one, for a chunk-level fix; those
naming its entity ids, for a merge or delete), diagnosed together; a cross-document effect on a
document the fix does not touch is not seen here, which is why ``diagnose --apply`` diagnoses the
whole workspace again after applying and reports any finding the fixes created. What a trial found
is kept by the fix and the texts it was tried on, so diagnosing again after an edit tries again only
the fixes that read a changed document.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple

from ctxfst_tui.core.format.document import Document

if TYPE_CHECKING:
    from ctxfst_tui.core.diagnosis.index import WorkspaceIndex

RANK = {"error": 0, "warning": 1, "info": 2}
# What trying a fix found, by the fix and the texts it was tried on (see try_fix).
_TRIED: OrderedDict[str, list | None] = OrderedDict()
_TRIED_LOCK = threading.Lock()
_TRIED_SIZE = 4096
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _key(label: str, issue: dict) -> tuple:
    """What makes two findings the same finding: the document, rule, severity and the chunks and
    entities it is about; the message only for a finding about no chunk or entity (and not its
    numbers: they are measures, compared by ``count``)."""
    chunks = tuple(sorted(str(c) for c in issue.get("chunk_ids") or []))
    entities = json.dumps(issue.get("entity_ids") or [], sort_keys=True, default=str)
    message = "" if chunks or issue.get("entity_ids") else _NUMBER.sub("#", str(issue.get("message", "")))
    return (label, issue.get("rule"), issue.get("severity"), chunks, entities, message)


def _measure(issue: dict) -> float:
    n = issue.get("count")
    return n if isinstance(n, (int, float)) and not isinstance(n, bool) else 0


def created_findings(before: Iterable[dict], after: Iterable[dict]) -> list[tuple[str, dict]]:
    """(filepath, issue) of every finding in the ``after`` reports that the ``before`` reports lack,
    or that got worse (a larger ``count``). Reports are ``diagnose`` report dicts."""
    had: dict[tuple, list[float]] = {}
    for rep in before:
        for issue in rep.get("issues", []):
            had.setdefault(_key(str(rep.get("filepath")), issue), []).append(_measure(issue))
    now: dict[tuple, list[tuple[float, str, dict]]] = {}
    for rep in after:
        label = str(rep.get("filepath"))
        for issue in rep.get("issues", []):
            now.setdefault(_key(label, issue), []).append((_measure(issue), label, issue))
    out: list[tuple[str, dict]] = []
    for key, items in now.items():
        old = sorted(had.get(key, []))
        items.sort(key=lambda t: t[0])
        # pair the worst with the worst: what is left over, or measures more than before, is new
        extra = len(items) - len(old)
        for k, (m, label, issue) in enumerate(items):
            if k < extra or m > old[k - extra]:
                out.append((label, issue))
    return out


def renamed_by(fix: dict, reports: list[dict]) -> list[dict]:
    """``reports`` as they would read after ``fix`` renamed entity ids (a merge): the same finding
    about ``entity:js`` before and ``entity:javascript`` after is not a new one."""
    into, merged = fix.get("into"), fix.get("merged")
    names = {m: into for m in (merged if isinstance(merged, list) else [merged]) if isinstance(m, str)}
    if not isinstance(into, str) or not names:
        return reports

    def rename(v: Any) -> Any:
        return names.get(v, v) if isinstance(v, str) else [rename(x) for x in v] if isinstance(v, list) else v

    return [{**r, "issues": [{**i, "entity_ids": rename(i["entity_ids"])} if i.get("entity_ids") else i
                             for i in r.get("issues", [])]} for r in reports]


def harmful(created: Iterable[tuple[str, dict]], severity: str) -> list[tuple[str, dict]]:
    """The created findings of ``severity`` or worse (what a fix of that severity may not create)."""
    limit = RANK.get(severity, len(RANK))
    return [(label, i) for label, i in created if RANK.get(i.get("severity"), len(RANK)) <= limit]


def copy_document(doc: Document) -> Document:
    """An independent copy of ``doc`` with its current (maybe unsaved) text."""
    copy = Document(doc.raw, doc.path)
    if doc.readable and copy.text != doc.text:
        copy.replace_text(doc.text)
    return copy


def describe_finding(label: str, issue: dict) -> str:
    """``file: severity [rule] message (ids)``, as ``diagnose`` prints a finding."""
    ids = ", ".join(map(str, issue.get("chunk_ids") or issue.get("entity_ids") or []))
    return (f"{label}: {issue.get('severity')} [{issue.get('rule') or issue.get('category')}] {issue.get('message')}"
            + (f" ({ids})" if ids else ""))


def _mentioning(docs: list[Document], fix: dict) -> list[int]:
    """The documents a workspace-wide fix can change: those whose text names one of its entity ids
    (every declaration and every reference does)."""
    ids = [v for k in ("entity_id", "into") if isinstance(v := fix.get(k), str)]
    merged = fix.get("merged")
    ids += [m for m in (merged if isinstance(merged, list) else [merged]) if isinstance(m, str)]
    if not ids:
        return list(range(len(docs)))
    return [i for i, d in enumerate(docs) if any(x in d.text for x in ids)]


def try_fix(docs: list[Document], fix: dict, path: Any, diagnose: Callable[[list[Document]], list[dict]],
            before: Callable[[tuple[int, ...]], list[dict]] | None = None) -> list[tuple[str, dict]] | None:
    """The findings applying ``fix`` (reported for the document ``path``) to copies of ``docs``
    would create in the documents it changes; None when the fix does not apply."""
    from ctxfst_tui.core.workspace.fixes import WORKSPACE_OPS, FixError, apply_fix
    from ctxfst_tui.core.workspace.workspace import Workspace

    if fix.get("op") in WORKSPACE_OPS or path is None:
        picked = _mentioning(docs, fix)
    else:
        picked = [i for i, d in enumerate(docs) if d.path is not None and d.path == path] or list(range(len(docs)))
    # The answer depends only on the texts of the picked documents: the workbench diagnoses again
    # after every edit, and only the fixes of the documents that changed are tried again.
    digest = hashlib.sha1(json.dumps([str(path), fix], sort_keys=True, default=str).encode())
    for i in picked:
        digest.update(b"\0" + docs[i].label.encode("utf-8", "replace") + b"\0" + docs[i].text.encode("utf-8", "replace"))
    key = digest.hexdigest()
    with _TRIED_LOCK:
        if key in _TRIED:
            _TRIED.move_to_end(key)
            return _TRIED[key]
    scratch = Workspace([copy_document(docs[i]) for i in picked])
    try:
        record = apply_fix(scratch, fix, path)
    except FixError:
        result = None
    else:
        changed = tuple(sorted({picked[c.index] for c in record.changes}))
        if not changed:
            result = []
        else:
            old = before(changed) if before is not None else diagnose([docs[i] for i in changed])
            new = diagnose([scratch.docs[picked.index(i)] for i in changed])
            result = created_findings(renamed_by(fix, old), new)
    with _TRIED_LOCK:
        _TRIED[key] = result
        while len(_TRIED) > _TRIED_SIZE:
            _TRIED.popitem(last=False)
    return result


def withhold_unsafe_fixes(ws: "WorkspaceIndex") -> None:
    """Drop, from the issues of every document of ``ws``, each fix that would create a finding of
    its issue's severity or worse (the reason goes into the issue's ``fix_withheld``)."""
    from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
    from ctxfst_tui.core.workspace.fixes import describe_fix

    docs = ws.docs
    cache: dict[tuple[int, ...], list[dict]] = {}

    def plain(sub: list[Document]) -> list[dict]:
        return diagnose_workspace(sub, "diagnose")

    def before(changed: tuple[int, ...]) -> list[dict]:
        if changed not in cache:
            cache[changed] = plain([docs[i] for i in changed])
        return cache[changed]

    from ctxfst_tui.core.workspace.fixes import WORKSPACE_OPS

    tried: dict[tuple[str, str], list[tuple[str, dict]] | None] = {}
    for d in ws.diags:
        for issue in d.issues:
            if not issue.fix:
                continue
            # a workspace-wide fix (a merge, a delete) is reported in every document it concerns: try it once
            where = "" if issue.fix.get("op") in WORKSPACE_OPS else str(d.doc.path)
            key = (where, json.dumps(issue.fix, sort_keys=True, default=str))
            if key not in tried:
                tried[key] = try_fix(docs, issue.fix, d.doc.path, plain, before)
            created = tried[key]
            bad = harmful(created or [], issue.severity)
            if bad:
                label, worst = min(bad, key=lambda li: RANK.get(li[1].get("severity"), len(RANK)))
                issue.extra["fix_withheld"] = (
                    f"'{describe_fix(issue.fix)}' would create {worst.get('severity')} [{worst.get('rule')}] "
                    f"{worst.get('message')}")
                issue.fix = {}


def _text_copy(doc: Document, text: str) -> Document:
    copy = copy_document(doc)
    if copy.text != text:
        copy.replace_text(text)
    return copy


REVIEW = "needs review: "  # the reason a fix that makes only milder findings was not applied


class _ForReview(str):
    """The reason a fix was left for review, carrying the findings it would create: ``apply_fixes``
    keeps the reason with the fix it skipped, so the two never have to be paired up afterwards."""

    made: list[tuple[str, dict]]


@dataclass
class Review:
    """A fix plain ``--apply`` left for review: it would create only findings milder than its own."""

    fix: dict
    finding: tuple[str, dict] | None  # (filepath, issue) that offered the fix
    would_create: list[tuple[str, dict]]


class CheckedFixes(NamedTuple):
    """What :func:`apply_checked_fixes` did."""

    run: Any  # the FixRun; ``run.skipped`` includes the fixes left for review (reason starts with REVIEW)
    created: list[tuple[str, dict]]  # findings of the new diagnosis the old one lacks
    review: list[Review]  # the fixes left for review, in the order apply_fixes tried them


def apply_checked_fixes(ws: Any, reports: list[dict], severities: Iterable[str] = ("error", "warning"),
                        with_drafts: bool = False) -> CheckedFixes:
    """``diagnose --apply``: apply the fixes the ``reports`` (of ``diagnose_workspace(ws.docs, "fix")``)
    offer for issues of ``severities``, each checked after the fixes applied before it; then
    diagnose the whole workspace again.

    A fix that would create a finding of its issue's severity or worse is refused. One that would
    create only milder findings (a ``[DRAFT]`` context is a placeholder to rewrite) is a draft: it
    is applied only ``with_drafts``, else skipped with a reason starting with :data:`REVIEW` and
    listed in ``review``, so a plain ``--apply`` leaves the documents with no finding they did not
    have. ``created`` lists what the new diagnosis has that the old lacks (with drafts, the milder
    findings they made)."""
    from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
    from ctxfst_tui.core.workspace.fixes import apply_fixes, collect_fixes

    wanted = set(severities)
    picked = [{**r, "issues": [i for i in r.get("issues", []) if i.get("severity") in wanted]} for r in reports]
    offered: dict[str, tuple[str, dict]] = {}  # the fix -> the worst finding offering it
    for rep in picked:
        for i in rep["issues"]:
            if isinstance(i.get("fix"), dict):
                k = json.dumps(i["fix"], sort_keys=True, default=str)
                if k not in offered or RANK.get(i["severity"], 9) < RANK.get(offered[k][1]["severity"], 9):
                    offered[k] = (str(rep.get("filepath")), i)

    def check(fix: dict, path: Any, record: Any) -> str | None:
        idx = sorted({c.index for c in record.changes})
        by_index = {c.index: c for c in record.changes}
        old = diagnose_workspace([_text_copy(ws.docs[i], by_index[i].before) for i in idx], "diagnose")
        new = diagnose_workspace([copy_document(ws.docs[i]) for i in idx], "diagnose")
        found = offered.get(json.dumps(fix, sort_keys=True, default=str))
        sev = found[1]["severity"] if found else "info"
        made = created_findings(renamed_by(fix, old), new)
        bad = harmful(made, sev)
        if bad:
            return "after the fixes before it, it would create " + _listed(bad)
        if made and not with_drafts:
            why = _ForReview(REVIEW + "it would create " + _listed(made))
            why.made = made
            return why
        return None

    run = apply_fixes(ws, collect_fixes(picked), check=check)
    # a skipped fix is the one apply_fixes was given (before any merge renamed its ids), as offered
    review = [Review(fix, offered.get(json.dumps(fix, sort_keys=True, default=str)), why.made)
              for fix, why in run.skipped if isinstance(why, _ForReview)]
    after = diagnose_workspace(ws.docs, "diagnose") if run.applied else reports
    for fix, _record in run.applied:
        reports = renamed_by(fix, reports)
    return CheckedFixes(run, created_findings(reports, after), review)


def _listed(found: list[tuple[str, dict]]) -> str:
    return "; ".join(f"{i.get('severity')} [{i.get('rule')}] {i.get('message')}" for _, i in found)
