"""Which files of a folder are documents: the tree the workbench shows and the CLI walks."""
from __future__ import annotations

import os
from pathlib import Path

DOCUMENT_SUFFIXES = (".md", ".txt")  # .ctxfst.md ends in .md
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".tox"}


def is_document(path: Path, suffixes: tuple[str, ...] = DOCUMENT_SUFFIXES) -> bool:
    return path.name.lower().endswith(suffixes) and not path.name.startswith(".")


def iter_documents(root: str | os.PathLike, suffixes: tuple[str, ...] = DOCUMENT_SUFFIXES) -> list[Path]:
    """Document files under ``root`` (or ``root`` itself if it is a file), sorted, hidden and tool folders skipped."""
    root = Path(root)
    if root.is_file():
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if is_document(p, suffixes):
                found.append(p)
    return found
