"""The summary tree: book → parts → chapters → scenes, spans into the manuscript text, and summaries.

A :class:`Node` covers ``text[start:end]`` of its :class:`Manuscript` (a scene: exactly its
words; a chapter or part: its content after the heading). Ids are positional and stable
for an unchanged structure: ``book``, ``p2`` (part 2), ``c14`` (chapter 14, numbered across
the whole book), ``c14.s3`` (its third scene), ``s1`` / ``p2.s1`` (scenes directly under
the book or a part), ``front`` (front matter: title page, contents — kept, not summarized).

Node status: ``pending`` (no summary yet), ``running``, ``done``, ``failed`` (no summary:
both attempts rejected and nothing to extract, or the extractive stand-in turned off; ``flags``
says why), ``stale`` (a stored summary whose source changed since), and ``skipped`` for front
matter, which is never sent to the model.

A ``done`` node whose model answers were all rejected carries an *extractive* summary instead
(its own sentences, :mod:`.extractive`): ``extractive`` is True (``"extractive": true`` in the
JSON, absent otherwise, so trees stored before it load as model summaries), a flag says so, and
its mark is ``¶`` instead of ``✓`` (:func:`status_mark`). Parents merge it like any summary.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

STATUSES = ("pending", "running", "done", "failed", "stale", "skipped")
KINDS = ("book", "part", "chapter", "scene")
STATUS_MARKS = {"pending": "·", "running": "…", "done": "✓", "failed": "✗", "stale": "~", "skipped": "-"}
EXTRACTIVE_MARK = "¶"  # a done node whose summary is its own sentences (the model's answers were rejected)


def status_mark(status: str, extractive: bool = False) -> str:
    """The mark of a node: :data:`STATUS_MARKS`, ``¶`` for a done node with an extractive summary."""
    if extractive and status == "done":
        return EXTRACTIVE_MARK
    return STATUS_MARKS.get(status, "?")


@dataclass
class Node:
    kind: str
    title: str
    start: int
    end: int
    words: int = 0
    children: list["Node"] = field(default_factory=list)
    id: str = ""
    heading: tuple[int, int] | None = None  # span of the heading line(s) in the manuscript
    front_matter: bool = False
    # summary state
    status: str = "pending"
    summary: str | None = None
    flags: list[str] = field(default_factory=list)
    source_hash: str = ""
    input_hash: str | None = None
    groups: list[dict[str, Any]] = field(default_factory=list)  # intermediate merges (dynamic tree)
    stats: dict[str, Any] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)  # texts of rejected attempts (for inspection)
    extractive: bool = False  # the summary is the node's own sentences (both model answers rejected)

    # ------------------------------------------------------------ navigation
    def walk(self) -> Iterator["Node"]:
        """This node and its descendants, pre-order."""
        yield self
        for c in self.children:
            yield from c.walk()

    def post_order(self) -> Iterator["Node"]:
        for c in self.children:
            yield from c.post_order()
        yield self

    def scenes(self) -> list["Node"]:
        return [n for n in self.walk() if n.kind == "scene"]

    def chapters(self) -> list["Node"]:
        return [n for n in self.walk() if n.kind == "chapter"]

    def find(self, node_id: str) -> "Node | None":
        for n in self.walk():
            if n.id == node_id:
                return n
        return None

    # ------------------------------------------------------------ serialisation
    def outline_json(self) -> dict[str, Any]:
        """``{"title", "words", "children": [...]}`` (children with ``kind``) — the ``--outline --json`` shape."""
        out: dict[str, Any] = {}
        if self.kind != "book":
            out["kind"] = self.kind
        out["title"] = self.title
        out["words"] = self.words
        out["children"] = [c.outline_json() for c in self.children]
        return out

    def to_json(self, *, with_text: str | None = None) -> dict[str, Any]:
        """Every field, for the summary store and ``--format json``."""
        out: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "title": self.title, "words": self.words,
            "start": self.start, "end": self.end, "status": self.status, "summary": self.summary,
        }
        if self.extractive:
            out["extractive"] = True
        if self.front_matter:
            out["front_matter"] = True
        if self.heading is not None:
            out["heading"] = list(self.heading)
        if self.flags:
            out["flags"] = list(self.flags)
        out["source_hash"] = self.source_hash
        out["input_hash"] = self.input_hash
        if self.groups:
            out["groups"] = [dict(g) for g in self.groups]
        if self.stats:
            out["stats"] = dict(self.stats)
        if self.rejected:
            out["rejected"] = list(self.rejected)
        out["children"] = [c.to_json() for c in self.children]
        return out


@dataclass
class Manuscript:
    """A segmented manuscript: the normalized text and its tree (``root`` is the book node)."""

    text: str
    root: Node
    path: Path | None = None
    title: str = ""
    body: tuple[int, int] = (0, 0)  # span of the text after Project Gutenberg boilerplate is removed
    removed: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, why) of stripped regions

    def node_text(self, node: Node) -> str:
        return self.text[node.start:node.end]

    def source_text(self, node: Node) -> str:
        """The words a node stands for: its scenes' text, in order (headings and markers left out)."""
        if node.kind == "scene":
            return self.node_text(node)
        return "\n\n".join(self.node_text(s) for s in node.scenes() if not s.front_matter)

    def outline_json(self) -> dict[str, Any]:
        return self.root.outline_json()


# ---------------------------------------------------------------- text renderings


def _fmt_words(n: int) -> str:
    return f"{n:,} word{'s' if n != 1 else ''}"


def outline_text(ms: Manuscript, *, status: bool = False) -> str:
    """The tree as an indented outline with word counts (and status marks when ``status``)."""
    root = ms.root
    n_ch = len(root.chapters())
    n_sc = len([s for s in root.scenes() if not s.front_matter])
    n_parts = sum(1 for n in root.walk() if n.kind == "part")
    head = f"{root.title} — {_fmt_words(root.words)}"
    bits = []
    if n_parts:
        bits.append(f"{n_parts} part{'s' if n_parts != 1 else ''}")
    bits.append(f"{n_ch} chapter{'s' if n_ch != 1 else ''}")
    bits.append(f"{n_sc} scene{'s' if n_sc != 1 else ''}")
    lines = [head + ", " + ", ".join(bits)]

    def rec(node: Node, depth: int) -> None:
        for c in node.children:
            mark = (status_mark(c.status, c.extractive) + " ") if status else ""
            extra = " (front matter)" if c.front_matter else ""
            lines.append(f"{'  ' * depth}{mark}{c.title} — {_fmt_words(c.words)}{extra}")
            rec(c, depth + 1)

    rec(root, 1)
    return "\n".join(lines) + "\n"


def markdown_outline(ms: Manuscript, *, model: str = "", counts: str = "") -> str:
    """A readable outline: the book summary, then each part / chapter summary and its scenes."""
    root = ms.root
    out = [f"# {root.title}", ""]
    meta = [_fmt_words(root.words), f"{len(root.chapters())} chapters"]
    if model:
        meta.append(f"model {model}")
    out += ["*" + " · ".join(meta) + "*", ""]
    out += _summary_block(root)

    def rec(node: Node, level: int) -> None:
        for c in node.children:
            if c.front_matter:
                continue
            if c.kind == "scene":
                text = c.summary if c.summary else f"*({c.status})*"
                flag = f" *[{'; '.join(c.flags)}]*" if c.flags else ""
                out.append(f"- **{c.title}** ({_fmt_words(c.words)}): {text}{flag}")
                continue
            if out and out[-1] != "":
                out.append("")
            out.append(f"{'#' * min(6, level)} {c.title} ({_fmt_words(c.words)})")
            out.append("")
            out.extend(_summary_block(c))
            rec(c, level + 1)
            if out and out[-1] != "":
                out.append("")

    rec(root, 2)
    if counts:
        out += ["", f"<!-- {counts} -->"]
    return "\n".join(out).rstrip() + "\n"


def _summary_block(node: Node) -> list[str]:
    lines: list[str] = []
    if node.summary:
        lines.append(node.summary)
    else:
        lines.append(f"*({node.status})*")
    if node.flags:
        lines.append("")
        lines.append(f"*flags: {'; '.join(node.flags)}*")
    lines.append("")
    return lines
