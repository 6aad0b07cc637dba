"""Which files are manuscripts: what the summary tree opens as a novel.

Plain text and Markdown, but not a CtxFST document (``.ctxfst.md``): that one is already
chunked, and the Summary tab says so instead of segmenting it.
"""
from __future__ import annotations

from pathlib import Path

MANUSCRIPT_SUFFIXES = (".txt", ".md")
CTXFST_SUFFIX = ".ctxfst.md"


def is_manuscript(path: Path | None) -> bool:
    name = path.name.lower() if path is not None else ""
    return name.endswith(MANUSCRIPT_SUFFIXES) and not name.endswith(CTXFST_SUFFIX)
