"""Which files of a folder are documents: the tree the workbench shows and the CLI walks."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ctxfst_tui.core.workspace.files import regular_file

DOCUMENT_SUFFIXES = (".md", ".txt")  # .ctxfst.md ends in .md
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".tox"}


@dataclass(frozen=True)
class Skipped:
    """A path named like a document that is not a regular file, and why (never opened)."""

    path: Path
    reason: str

    def one_line(self) -> str:
        return f"{self.path}: {self.reason}, skipped"


@dataclass
class FolderScan:
    """The documents of a folder, and the document-named paths left out (pipes, loops, folders…)."""

    documents: list[Path] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def is_document(path: Path, suffixes: tuple[str, ...] = DOCUMENT_SUFFIXES) -> bool:
    return path.name.lower().endswith(suffixes) and not path.name.startswith(".")


def scan_documents(root: str | os.PathLike, suffixes: tuple[str, ...] = DOCUMENT_SUFFIXES) -> FolderScan:
    """Regular document files under ``root`` (or ``root`` itself if it is one), sorted, hidden and
    tool folders skipped; document-named special files (named pipes, sockets, devices, symlink
    loops, dangling links) are listed in ``skipped`` with the reason."""
    root = Path(root)
    scan = FolderScan()
    if not os.path.isdir(root):
        why = regular_file(root)
        if why is None:
            scan.documents.append(root)
        elif os.path.lexists(root):
            scan.skipped.append(Skipped(root, why))
        return scan
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        # A folder named "x.md" is walked like any folder; a symlink loop is among the filenames.
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if not is_document(p, suffixes):
                continue
            why = regular_file(p)
            if why is None:
                scan.documents.append(p)
            else:
                scan.skipped.append(Skipped(p, why))
    return scan


def iter_documents(root: str | os.PathLike, suffixes: tuple[str, ...] = DOCUMENT_SUFFIXES) -> list[Path]:
    """Document files under ``root`` (or ``root`` itself if it is a file), sorted, hidden and tool
    folders skipped, special files left out (``scan_documents`` says which and why)."""
    return scan_documents(root, suffixes).documents
