"""What the workbench shows about the whole workspace: entities, merge suggestions, diagnosis, statuses.

Plain data, no Textual. ``Analyser.analyse`` runs in a worker over snapshots (bytes) of the
in-memory documents; it keeps each document's parse and validation status keyed by its
bytes, so after an edit only the documents that changed are parsed and validated again.
The diagnosis runs over the whole workspace each time (it has cross-document checks).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ctxfst_tui.core.entities.aliases import Cluster, suggest_clusters
from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.workspace.fixes import describe_fix
from ctxfst_tui.services.report import DocumentStatus, display_path, status_for

SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class DiagnosisItem:
    """One diagnosis finding of one document, with what is needed to jump to it and fix it."""

    path: Path
    display: str  # the document, relative to the workspace root
    category: str
    severity: str
    rule: str
    message: str
    suggestion: str
    line: int
    column: int
    chunk_ids: tuple[str, ...] = ()
    entity_ids: tuple[Any, ...] = ()
    fix: dict = field(default_factory=dict, compare=False, hash=False)
    fix_description: str = ""
    fix_withheld: str = ""  # why the diagnosis offers no fix (it would create a finding as bad), if so

    @property
    def key(self) -> tuple:
        """Stable across edits that move lines (used to keep the cursor on a finding)."""
        return (self.path, self.rule, self.chunk_ids, self.entity_ids, self.message)

    @property
    def fixable(self) -> bool:
        return bool(self.fix)


@dataclass(frozen=True)
class EntityInfo:
    """One row of the entity table."""

    id: str
    name: str | None
    type: str | None
    aliases: tuple[str, ...]
    chunks: int
    documents: tuple[str, ...]  # relative paths of the documents declaring or linking it
    declared: bool


@dataclass
class WorkspaceAnalysis:
    version: int
    entities: list[EntityInfo]
    clusters: list[Cluster]
    findings: list[DiagnosisItem]
    statuses: dict[Path, DocumentStatus]


def describe(fix: dict) -> str:
    if not fix:
        return ""
    try:
        return describe_fix(fix)
    except Exception:  # noqa: BLE001 - a description is a nicety, never a failure
        return ""


def _items(doc: Document, report: dict, root: Path) -> list[DiagnosisItem]:
    shown = display_path(doc.path, root) if doc.path is not None else doc.label
    out = []
    for issue in report["issues"]:
        fix = issue.get("fix") or {}
        out.append(DiagnosisItem(
            path=doc.path or Path(doc.label),
            display=shown,
            category=issue["category"],
            severity=issue["severity"],
            rule=issue.get("rule", ""),
            message=issue["message"],
            suggestion=issue.get("suggestion", ""),
            line=issue.get("line", 0) or 0,
            column=issue.get("column", 0) or 0,
            chunk_ids=tuple(issue.get("chunk_ids") or ()),
            entity_ids=tuple(issue.get("entity_ids") or ()),
            fix=fix,
            fix_description=describe(fix),
            fix_withheld=str(issue.get("fix_withheld") or ""),
        ))
    return out


class Analyser:
    """Analyses workspace snapshots, reusing the work done for documents that did not change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[bytes, Document, DocumentStatus]] = {}

    def _document(self, path: Path, data: bytes) -> tuple[Document, DocumentStatus]:
        with self._lock:
            hit = self._cache.get(path)
        if hit is not None and hit[0] == data:
            return hit[1], hit[2]
        doc = Document(data, path)
        status = status_for(doc)
        with self._lock:
            self._cache[path] = (data, doc, status)
        return doc, status

    def analyse(self, snapshots: list[tuple[Path, bytes]], root: Path, version: int,
                cancelled: Callable[[], bool] = lambda: False) -> WorkspaceAnalysis | None:
        docs: list[Document] = []
        statuses: dict[Path, DocumentStatus] = {}
        for path, data in snapshots:
            if cancelled():
                return None
            doc, status = self._document(path, data)
            docs.append(doc)
            statuses[path] = status
        with self._lock:
            for gone in set(self._cache) - set(statuses):
                del self._cache[gone]
        findings: list[DiagnosisItem] = []
        for doc, report in zip(docs, diagnose_workspace(docs, "fix")):
            findings.extend(_items(doc, report, root))
        if cancelled():
            return None
        ws = Workspace(docs, root)
        table = ws.entity_table()
        if cancelled():
            return None
        clusters = suggest_clusters(ws.entity_dicts(), ws.chunk_dicts())

        def rel(label: str) -> str:
            return display_path(Path(label), root)

        entities = [
            EntityInfo(
                id=r.id, name=r.name, type=r.type, aliases=tuple(r.aliases), chunks=r.chunks,
                documents=tuple(dict.fromkeys(rel(x) for x in [*r.declared_in, *r.linked_from])),
                declared=bool(r.declared_in),
            )
            for r in table
        ]
        return WorkspaceAnalysis(version, entities, clusters, findings, statuses)
