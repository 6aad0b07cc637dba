"""Markdown note → CtxFST document, with the chunker's boundaries.

The body text is kept exactly as written between the ``<Chunk>`` tags (only blank lines at
chunk borders move), so converting never rewrites what the author wrote; the frontmatter
gets one entry per chunk with tags from its heading path and an empty ``context`` to fill.
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any, Iterable

from ctxfst_tui.core.format import frontmatter as fmt

# First matching keyword in a heading chooses the id category; otherwise ``section``.
CATEGORY_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("about", ("about", "introduction", "intro", "overview", "summary", "background", "what is")),
    ("workflow", ("install", "setup", "set up", "getting started", "tutorial", "how to", "deploy", "build",
                  "run", "migrat", "upgrade", "usage", "quickstart", "step")),
    ("reference", ("reference", "api", "configuration", "config", "options", "parameters", "settings",
                   "cli", "command", "schema", "glossary", "faq", "troubleshoot", "error")),
    ("principle", ("principle", "design", "architecture", "philosophy", "why", "concept")),
    ("project", ("project", "case study", "example", "changelog", "release")),
)
MAX_TOPIC_WORDS = 6


class ConvertError(ValueError):
    """The input cannot be converted (e.g. it already is a CtxFST document)."""


def slug(text: str) -> str:
    """Lower-case ASCII kebab-case: ``Install on Windows 11`` → ``install-on-windows-11``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    ascii_text = re.sub(r"`|\*|_|\[|\]|\(.*?\)", " ", ascii_text)
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    return "-".join(words[:MAX_TOPIC_WORDS])


def category_for(heading: str) -> str:
    h = heading.lower()
    for category, words in CATEGORY_KEYWORDS:
        if any(re.search(r"\b" + re.escape(w), h) for w in words):
            return category
    return "section"


def chunk_id(heading: str, index: int, taken: set[str]) -> str:
    """A unique ``category:topic`` id for a chunk whose nearest heading is ``heading``."""
    topic = slug(heading) or f"part-{index + 1}"
    base = f"{category_for(heading)}:{topic}"
    cid, n = base, 2
    while cid in taken:
        cid, n = f"{base}-{n}", n + 1
    taken.add(cid)
    return cid


def _heading_texts(path: Any) -> list[str]:
    """Heading texts of a chunk's path (list of strings, or a breadcrumb string ``# A > ## B``)."""
    if isinstance(path, str):
        parts = [p.strip() for p in path.split(">")]
    else:
        parts = [str(p).strip() for p in (path or [])]
    return [re.sub(r"^#+\s*", "", p) for p in parts if p.strip("# ")]


def boundaries(chunks: Iterable[Any], text_len: int, body_start: int = 0) -> list[tuple[int, int, Any]]:
    """Partition [body_start, text_len) at the chunks' real starts; synthetic continuations merge."""
    starts: list[tuple[int, Any]] = []
    for c in chunks:
        if getattr(c, "synthetic", False) and starts:
            continue
        s = max(int(c.start), body_start)
        if starts and s <= starts[-1][0]:
            continue
        starts.append((s, c))
    if not starts:
        return []
    starts[0] = (body_start, starts[0][1])
    out = []
    for i, (s, c) in enumerate(starts):
        e = starts[i + 1][0] if i + 1 < len(starts) else text_len
        out.append((s, e, c))
    return out


def convert_text(text: str, chunks: Iterable[Any], title_hint: str = "") -> str:
    """The CtxFST document for ``text`` cut at ``chunks`` (objects with start, heading, path)."""
    if re.search(r"<\s*Chunk\s+id\s*=", text, re.IGNORECASE):
        raise ConvertError("already a CtxFST document (it has <Chunk> tags); re-chunk it in the workbench instead")
    # Chunk offsets index ``text`` as given (CRLF included): slice the original, normalise
    # each piece to LF for assembly, and restore the file's line ending at the end.
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    existing: dict = {}
    body_start = 0
    block = None
    try:
        block = fmt.find_block(lines)
    except fmt.FrontmatterError:
        block = None
    if block is not None:
        import yaml

        body_start = sum(len(l) for l in lines[: block[1] + 1])
        try:
            loaded = yaml.safe_load("".join(lines[1 : block[1]]).replace("\r\n", "\n"))
            existing = loaded if isinstance(loaded, dict) else {}
        except yaml.YAMLError:
            existing = {}
    parts = boundaries(chunks, len(text), body_start)
    title = existing.get("title") or _first_h1(text[body_start:].replace("\r\n", "\n")) or title_hint or "Untitled"
    taken: set[str] = set()
    entries, body = [], []
    for i, (s, e, c) in enumerate(parts):
        segment = text[s:e].replace("\r\n", "\n").strip("\n")
        if not segment.strip():
            continue
        headings = _heading_texts(getattr(c, "path", None) or getattr(c, "breadcrumb", None))
        heading = getattr(c, "heading", None) or (headings[-1] if headings else "")
        cid = chunk_id(heading or title, i, taken)
        tags = []
        for h in headings[-3:] or [heading or title]:
            if h and h not in tags:
                tags.append(h)
        entries.append({"id": cid, "tags": tags, "entities": [], "context": ""})
        body.append(f'<Chunk id="{cid}">\n{segment}\n</Chunk>\n')
    out = ["---"]
    out.extend(fmt.render_field("title", str(title), 0, quote='"'))
    for key, value in existing.items():
        if key not in ("title", "entities", "chunks"):
            out.extend(fmt.render_field(str(key), value, 0))
    out.extend(fmt.render_field("entities", existing.get("entities") or [], 0))
    out.append("chunks:")
    for entry in entries:
        out.extend(fmt.render_item(entry, 2))
    out.append("---")
    doc = "\n".join(out) + "\n\n" + "\n".join(body)
    return doc.replace("\n", newline) if newline != "\n" else doc


def convert_checked(text: str, chunks: Iterable[Any], target: Path, title_hint: str = "") -> str:
    """``convert_text``, then validated: a conversion we would reject is never written."""
    from ctxfst_tui.core.format.document import Document
    from ctxfst_tui.core.format.validate import validate

    out = convert_text(text, chunks, title_hint)
    errors = [f for f in validate(Document.from_text(out, target)) if f.severity == "error"]
    if errors:
        raise ConvertError(f"the converted document would not validate: {errors[0].message} (line {errors[0].line})")
    return out


def _first_h1(text: str) -> str | None:
    m = re.search(r"^#\s+(.+?)\s*#*\s*$", text, re.MULTILINE)
    return m.group(1).strip() if m else None


def default_target(source: Path) -> Path:
    """``note.md`` → ``note.ctxfst.md`` beside it."""
    name = source.name
    stem = name[: -len(".md")] if name.lower().endswith(".md") else source.stem
    return source.with_name(stem + ".ctxfst.md")
