"""What the workbench shows about one document, computed from the core.

Plain data, no Textual: built in a worker thread (``build_report``/``status_for``), handed to
the screen in a Message and from there down to the panes, which only render it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.findings import Finding
from ctxfst_tui.core.format.rules import severity_of
from ctxfst_tui.core.format.source import split_lines, unicode_bom
from ctxfst_tui.core.format.validate import validate
from ctxfst_tui.core.text.plural import count

VALID, WARNINGS, ERRORS = "valid", "warnings", "errors"


@dataclass(frozen=True)
class DocumentStatus:
    """The verdict the document tree marks a file with."""

    state: str  # VALID | WARNINGS | ERRORS
    errors: int = 0
    warnings: int = 0
    infos: int = 0

    @classmethod
    def of(cls, findings: list[Finding]) -> "DocumentStatus":
        errors = sum(f.severity == "error" for f in findings)
        warnings = sum(f.severity == "warning" for f in findings)
        infos = sum(f.severity == "info" for f in findings)
        state = ERRORS if errors else WARNINGS if warnings else VALID
        return cls(state, errors, warnings, infos)

    @property
    def valid(self) -> bool:
        return self.errors == 0


@dataclass
class DocumentReport:
    """Everything the summary, findings and source panes show about one document."""

    path: Path
    display_path: str
    title: str | None
    readable: bool
    has_frontmatter: bool
    problem: str | None  # why the document cannot be read as CtxFST, if it cannot
    entities: int
    chunks: int
    body_chunks: int
    newline: str  # "LF" | "CRLF" | "CR"
    bom: bool
    size: int  # bytes on disk
    line_count: int
    text: str  # what the source view shows (a lossy decode for a non-UTF-8 file)
    source_note: str | None = None  # why there is no text to show, if there is none
    findings: list[Finding] = field(default_factory=list)
    unsaved: bool = False  # the text shown differs from the file on disk
    document: Document | None = field(default=None, repr=False, compare=False)  # the parsed copy

    @property
    def status(self) -> DocumentStatus:
        return DocumentStatus.of(self.findings)


def display_path(path: Path, root: Path) -> str:
    """``path`` relative to the workspace root when it is inside it."""
    base = root if root.is_dir() else root.parent
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _findings(doc: Document) -> list[Finding]:
    """Validation that cannot take the workbench down: a validator crash becomes a finding."""
    try:
        return validate(doc)
    except Exception as exc:  # noqa: BLE001 - shown to the user, never a traceback
        crash = Finding(severity_of("internal-error"), "internal-error", f"validation failed: {type(exc).__name__}: {exc}",
                        0, 0, doc.label)
        return [*doc.load_findings, crash]


def _problem(doc: Document) -> str | None:
    if not doc.readable:
        first = doc.load_findings[0] if doc.load_findings else None
        return f"cannot read it: {first.message}" if first else "cannot read it"
    if doc.frontmatter_error is not None:
        err = doc.frontmatter_error
        where = f" (line {err.line})" if err.line else ""
        return f"frontmatter is broken{where}: {err.message}"
    if doc.frontmatter is not None and doc.data is None:
        return "frontmatter is not a mapping of keys"
    return None


def _display_text(doc: Document) -> tuple[str, str | None]:
    """The text to show and, when there is none, why."""
    if doc.readable:
        return doc.text, None
    rules = {f.rule for f in doc.load_findings}
    if "file-encoding" in rules:
        other = unicode_bom(doc.raw)
        if other is not None:  # UTF-16/32: readable here, but never edited until saved as UTF-8
            return doc.raw.decode(other[1], errors="replace").lstrip("\ufeff"), None
        # Show the bytes decoded with U+FFFD for the bad ones, so the finding's place can be seen.
        return doc.raw.decode("utf-8", errors="replace").lstrip("\ufeff"), None
    if "file-binary" in rules:
        return "", "A binary file: there is no text to show."
    if "file-empty" in rules:
        return "", "The file is empty." if not doc.raw else "The file holds only whitespace."
    return "", "The file could not be read."


def report_for(doc: Document, root: Path, unsaved: bool = False) -> DocumentReport:
    path = doc.path or Path("<input>")
    text, source_note = _display_text(doc)
    return DocumentReport(
        path=path,
        display_path=display_path(path, root),
        title=doc.title,
        readable=doc.readable,
        has_frontmatter=doc.has_frontmatter,
        problem=_problem(doc),
        entities=len(doc.entities),
        chunks=len(doc.chunks),
        body_chunks=len(doc.body_chunks),
        newline={"\r\n": "CRLF", "\r": "CR"}.get(doc.newline, "LF"),
        bom=doc.had_bom,
        size=len(doc.raw),
        line_count=len(split_lines(text)),
        text=text,
        source_note=source_note,
        findings=_findings(doc),
        unsaved=unsaved,
        document=doc,
    )


def build_report(path: str | os.PathLike, root: str | os.PathLike, data: bytes | None = None,
                 unsaved: bool = False) -> DocumentReport:
    """Validate one document: its in-memory ``data`` when given, else the file (never raises for a bad file)."""
    doc = Document(data, path) if data is not None else Document.load(path)
    return report_for(doc, Path(root), unsaved)


def status_for(doc: Document) -> DocumentStatus:
    """The tree's verdict for one parsed document."""
    return DocumentStatus.of(_findings(doc))


def validation_summary(statuses: dict[Path, DocumentStatus], unsaved: int = 0) -> str:
    """What "Validate folder" found, in two or three lines: how many documents, with errors and
    warnings (and how many of each), and where to see them."""
    n = len(statuses)
    if not n:
        return "No documents in the folder (.md or .txt files)."
    with_errors = [s for s in statuses.values() if s.errors]
    with_warnings = [s for s in statuses.values() if s.warnings and not s.errors]
    valid = n - len(with_errors) - len(with_warnings)
    errors = sum(s.errors for s in statuses.values())
    warnings = sum(s.warnings for s in statuses.values())
    parts = []
    if with_errors:
        parts.append(f"{len(with_errors)} with errors ({count(errors, 'error')})")
    if with_warnings:
        parts.append(f"{len(with_warnings)} with warnings only ({count(warnings - sum(s.warnings for s in with_errors), 'warning')})")
    parts.append("all valid" if valid == n else f"{valid} valid")
    lines = [f"{count(n, 'document')} checked: {', '.join(parts)}."]
    if with_errors or with_warnings:
        lines.append("✗ and ▲ mark them in the tree; 4 (Diagnosis) lists every finding.")
    if unsaved:
        marks = "its mark shows" if unsaved == 1 else "their marks show"
        lines.append(f"{count(unsaved, 'document')} with unsaved edits: {marks} the edits, not the file.")
    return "\n".join(lines)
