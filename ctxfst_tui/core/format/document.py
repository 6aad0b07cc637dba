"""The parsed CtxFST document: frontmatter entries and body chunks with exact source spans.

A Document never raises on bad input: decoding and YAML problems become ``load_findings``
so every front end can show them. Edits rewrite only the lines of the field or entry
they concern; ``save`` is atomic and leaves an unedited file byte-identical.
"""
from __future__ import annotations

import copy
import datetime as _dt
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ctxfst_tui.core.format import frontmatter as fmt
from ctxfst_tui.core.format.chunk_tags import BodyChunk, TagEvent, pair_tags, scan_tags
from ctxfst_tui.core.format.findings import Finding
from ctxfst_tui.core.format.rules import severity_of
from ctxfst_tui.core.safe_write import write_file
from ctxfst_tui.core.format.source import (
    BOM,
    DecodeProblem,
    LineIndex,
    decode,
    detect_newline,
    ends_with_break,
    split_lines,
)

SECTIONS = ("entities", "chunks")
TRAILING_COMMENT = re.compile(r"\s+#.*$")
BLOCK_ITEM = re.compile(r"^(\s*-\s+)(.*?)(\s+#.*)?$")


def jsonable(value: Any) -> Any:
    """Frontmatter data made JSON-safe: dates become ISO strings (``2026-03-08``), keys strings."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    return value


@dataclass
class Entry:
    """One item of ``entities`` or ``chunks`` in the frontmatter, with its position."""

    section: str
    index: int
    data: Any
    line: int
    end_line: int

    @property
    def id(self) -> Any:
        return self.data.get("id") if isinstance(self.data, dict) else None

    def field_line(self, doc: "Document", key: str) -> tuple[int, int]:
        """(line, column) of ``key`` in this entry, or of the entry itself if the key is absent."""
        pos = doc.entry_pos(self.section, self.index)
        if pos and key in pos.fields:
            f = pos.fields[key]
            return f.line, f.column
        return self.line, (pos.indent + 1 if pos else 1)


class Document:
    """A CtxFST (or plain Markdown/text) document as read from disk or from text."""

    def __init__(self, raw: bytes, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else None
        self.raw = raw
        self.load_findings: list[Finding] = []
        self.text = ""
        self.had_bom = False
        self._saved_text = ""  # the text as last read or written: dirty compares against it, no re-encoding
        self.newline = "\n"
        self.frontmatter: fmt.Frontmatter | None = None
        self.frontmatter_error: fmt.FrontmatterError | None = None
        self.readable = False
        self._parse_raw()

    # ------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | os.PathLike) -> "Document":
        """The document in the file ``path``; never raises. A named pipe, socket, device, folder or
        symlink loop is never opened: the document is empty and unreadable with a
        ``file-not-regular`` finding naming what the path is ("a named pipe")."""
        from ctxfst_tui.core.workspace.files import NotRegularFile, read_regular

        p = Path(path)
        try:
            raw = read_regular(p)
        except NotRegularFile as exc:
            return cls._unreadable(p, "file-not-regular", f"{exc.reason}, not read")
        except OSError as exc:
            return cls._unreadable(p, "file-unreadable", f"cannot read the file: {exc.strerror or exc}")
        return cls(raw, p)

    @classmethod
    def _unreadable(cls, path: Path, rule: str, message: str) -> "Document":
        doc = cls(b"", path)
        doc.readable = False  # nothing was read: never saved over, never edited
        doc.load_findings = [Finding(severity_of(rule), rule, message, 0, 0, str(path))]
        return doc

    @classmethod
    def from_text(cls, text: str, path: str | os.PathLike | None = None) -> "Document":
        return cls(text.encode("utf-8"), path)

    @property
    def label(self) -> str:
        return str(self.path) if self.path is not None else "<input>"

    def _finding(self, rule: str, message: str, line: int = 0, column: int = 0) -> Finding:
        return Finding(severity_of(rule), rule, message, line, column, self.label)

    def _parse_raw(self) -> None:
        try:
            self.text, self.had_bom = decode(self.raw)
        except DecodeProblem as exc:
            self.load_findings.append(self._finding(exc.rule, exc.message, exc.line, exc.column))
            self.text, self.readable = "", False
            self._reindex()
            return
        self.readable = True
        self._saved_text = self.text
        self.newline = detect_newline(self.text)
        self._reindex()

    def _reindex(self) -> None:
        """Recompute everything derived from ``self.text``."""
        self.index = LineIndex(self.text, 3 if self.had_bom else 0)
        self.lines = split_lines(self.text, keepends=True)  # the same lines as the index and YAML's marks
        self.frontmatter = None
        self.frontmatter_error = None
        self.load_findings = [f for f in self.load_findings if f.rule.startswith("file-")]
        body_line = 1
        block = None
        try:
            block = fmt.find_block(self.lines)
            if block is not None:
                self.frontmatter = fmt.parse(self.text, self.lines, block)
                body_line = self.frontmatter.body_start_line
        except fmt.FrontmatterError as exc:
            self.frontmatter_error = exc
            self.load_findings.append(self._finding(exc.rule, exc.message, exc.line, exc.column))
            if block is not None:  # the block is delimited: its body can still be read
                body_line = block[1] + 2
            else:
                body_line = len(self.lines) + 1
        self.body_start_line = body_line
        self.body_start = self.index.offset_of_line(body_line)
        self.tag_events: list[TagEvent] = scan_tags(self.text, self.body_start, self.index) if self.readable else []
        self.body_chunks: list[BodyChunk] = pair_tags(self.text, self.tag_events, self.index)
        self._body_by_id: dict[str, BodyChunk] = {}  # the first of each id: a lookup per chunk entry
        for c in self.body_chunks:
            self._body_by_id.setdefault(c.id, c)

    # ------------------------------------------------------------ reading
    @property
    def has_frontmatter(self) -> bool:
        return self.frontmatter is not None

    @property
    def data(self) -> dict | None:
        """The frontmatter mapping (None if absent, broken or not a mapping)."""
        if self.frontmatter is not None and isinstance(self.frontmatter.data, dict):
            return self.frontmatter.data
        return None

    @property
    def title(self) -> str | None:
        t = (self.data or {}).get("title")
        return str(t) if t is not None else None

    def section_pos(self, section: str) -> fmt.SectionPos | None:
        return self.frontmatter.sections.get(section) if self.frontmatter else None

    def entry_pos(self, section: str, index: int) -> fmt.EntryPos | None:
        sec = self.section_pos(section)
        if sec and index < len(sec.items):
            return sec.items[index]
        return None

    def entries(self, section: str) -> list[Entry]:
        """The items of ``entities`` or ``chunks`` (empty when absent or not a list)."""
        values = (self.data or {}).get(section)
        if not isinstance(values, list):
            return []
        sec = self.section_pos(section)
        out = []
        for i, v in enumerate(values):
            pos = sec.items[i] if sec and i < len(sec.items) else None
            line = pos.line if pos else (sec.key_line if sec else 1)
            out.append(Entry(section, i, v, line, pos.end_line if pos else line + 1))
        return out

    @property
    def entities(self) -> list[Entry]:
        return self.entries("entities")

    @property
    def chunks(self) -> list[Entry]:
        return self.entries("chunks")

    def body_chunk(self, chunk_id: str) -> BodyChunk | None:
        """The first body chunk with this id (later duplicates are reported by validation)."""
        return self._body_by_id.get(chunk_id)

    def entry_by_id(self, section: str, entry_id: str) -> Entry | None:
        for e in self.entries(section):
            if e.id == entry_id:
                return e
        return None

    # ------------------------------------------------------------ editing
    @property
    def dirty(self) -> bool:
        return self.text != self._saved_text

    def encoded(self) -> bytes:
        return ((BOM if self.had_bom else "") + self.text).encode("utf-8")

    def mark_saved(self, text: str, data: bytes) -> bool:
        """Record that ``data`` (the encoding of ``text``) is now in the file, as a save made
        elsewhere (a worker) reports. Only a document still holding ``text`` becomes clean:
        an edit made while the bytes were written stays unsaved. Returns True when clean."""
        self.raw = data
        self._saved_text = text  # a later edit is dirty against what the file holds now
        return self.text == text

    def _replace_lines(self, start: int, end: int, new_lines: list[str]) -> None:
        """Replace 1-based lines [start, end) with ``new_lines`` (no newlines), keeping line endings."""
        nl = self.newline
        chunk = "".join(line + nl for line in new_lines)
        a = self.index.offset_of_line(start)
        b = self.index.offset_of_line(end)
        if b == len(self.text) and not ends_with_break(self.text) and chunk and end > start:
            chunk = chunk[: -len(nl)]  # the replaced last line had no newline
        self.text = self.text[:a] + chunk + self.text[b:]
        self._reindex()

    def _require_editable(self) -> None:
        """Refuse to edit a frontmatter that did not load (a duplicate key, an alias bomb...)."""
        err = self.frontmatter_error
        if err is not None:
            raise ValueError(f"{self.label}:{err.line}: cannot edit the frontmatter: {err.message}")

    def _require_entry(self, section: str, index: int) -> fmt.EntryPos:
        self._require_editable()
        pos = self.entry_pos(section, index)
        if pos is None or not isinstance(self.entries(section)[index].data, dict):
            raise ValueError(f"{self.label}: no {section} entry #{index + 1} to edit")
        return pos

    # Three layouts need care. The first key of a block item shares its line with the ``- ``
    # dash (the dash must stay); a single-line field may carry a trailing ``# comment`` (kept);
    # flow-style entries and sections (``- {id: a}``, ``entities: [...]``) share lines between
    # fields, so they are rewritten as a unit.

    def _is_flow_entry(self, pos: fmt.EntryPos) -> bool:
        if not pos.fields:
            return False
        lines = [f.line for f in pos.fields.values()]
        return len(set(lines)) < len(lines) or self.index.line_text(pos.line).lstrip(" -").startswith("{")

    def _section_items(self, section: str) -> list:
        return copy.deepcopy(list((self.data or {}).get(section) or []))

    def _rewrite_section(self, section: str, items: list) -> None:
        sec = self.section_pos(section)
        assert sec is not None
        key_line = self.index.line_text(sec.key_line)
        indent = len(key_line) - len(key_line.lstrip())
        lines = fmt.render_field(section, items, indent, flow=False) if items else [" " * indent + f"{section}: []"]
        self._replace_lines(sec.key_line, sec.end_line, lines)

    def _rewrite_entry(self, section: str, index: int, new: dict) -> None:
        """Rewrite one entry as a unit, keeping a one-line flow entry on one line."""
        sec = self.section_pos(section)
        pos = self.entry_pos(section, index)
        if sec is None or pos is None or sec.flow:
            items = self._section_items(section)
            items[index] = new
            self._rewrite_section(section, items)
            return
        line = self.index.line_text(pos.line)
        dash = line.index("-") if line.lstrip().startswith("-") else max(pos.indent - 2, 0)
        flow = fmt.render_flow_mapping(new) if pos.end_line == pos.line + 1 else None
        if flow is not None:
            self._replace_lines(pos.line, pos.end_line, [" " * dash + "- " + flow])
        else:
            self._replace_lines(pos.line, pos.end_line, fmt.render_item(new, dash))

    def set_field(self, section: str, index: int, key: str, value: Any) -> None:
        """Set ``key`` of one entry, rewriting only that field's lines (or inserting one field)."""
        pos = self._require_entry(section, index)
        sec = self.section_pos(section)
        if (sec is not None and sec.flow) or self._is_flow_entry(pos):
            new = dict(self.entries(section)[index].data)
            new[key] = value
            self._rewrite_entry(section, index, new)
            return
        f = pos.fields.get(key)
        if f is None:
            end = max((x.end_line for x in pos.fields.values()), default=pos.end_line)
            self._replace_lines(end, end, fmt.render_field(key, value, pos.indent))
            return
        line = self.index.line_text(f.line)
        col = f.column - 1
        old_value = self.entries(section)[index].data.get(key)
        on_dash = bool(line[:col].strip())
        if not on_dash and not f.flow and self._set_block_list(f, old_value, value):
            return
        comment = ""
        rest = line[col:]
        if f.end_line == f.line + 1 and f.quote is None and '"' not in rest and "'" not in rest:
            m = TRAILING_COMMENT.search(rest)
            comment = m.group(0) if m else ""
        rendered = fmt.render_field(key, value, col, flow=f.flow if isinstance(value, list) else None, quote=f.quote)
        rendered[0] = line[:col] + rendered[0][col:] + comment
        self._replace_lines(f.line, f.end_line, rendered)

    def _set_block_list(self, f: fmt.FieldPos, old: Any, new: Any) -> bool:
        """Edit a block list of scalars item by item (unchanged items keep their text). False: not applicable."""
        def scalar(v: Any) -> bool:
            return not isinstance(v, (list, dict))

        if not (isinstance(old, list) and isinstance(new, list) and old and new):
            return False
        if not all(scalar(v) for v in old) or not all(scalar(v) for v in new):
            return False
        lines = [self.index.line_text(n) for n in range(f.line + 1, f.end_line)]
        matches = [BLOCK_ITEM.match(s) for s in lines]
        if len(lines) != len(old) or not all(matches):
            return False
        pad = matches[0].group(1)
        out: list[str] = []
        sm = difflib.SequenceMatcher(a=[repr(v) for v in old], b=[repr(v) for v in new], autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                out.extend(lines[i1:i2])
                continue
            for k, v in enumerate(new[j1:j2]):
                src = matches[i1 + k] if i1 + k < i2 else None
                quote = src.group(2)[:1] if src and src.group(2)[:1] in ("'", '"') else None
                out.append((src.group(1) if src else pad) + fmt.render_scalar(v, quote) + ((src.group(3) or "") if src else ""))
        self._replace_lines(f.line + 1, f.end_line, out)
        return True

    def remove_field(self, section: str, index: int, key: str) -> None:
        pos = self._require_entry(section, index)
        if key not in pos.fields:
            return
        f = pos.fields[key]
        sec = self.section_pos(section)
        on_dash = bool(self.index.line_text(f.line)[: f.column - 1].strip())
        if on_dash or (sec is not None and sec.flow) or self._is_flow_entry(pos):
            new = {k: v for k, v in self.entries(section)[index].data.items() if k != key}
            self._rewrite_entry(section, index, new)
        else:
            self._replace_lines(f.line, f.end_line, [])

    def update_entry(self, section: str, index: int, new: dict) -> None:
        """Bring one entry to ``new`` field by field, so unchanged fields keep their exact text."""
        old = self.entries(section)[index].data
        for key in [k for k in old if k not in new]:
            self.remove_field(section, index, key)
        for key, value in new.items():
            current = self.entries(section)[index].data
            if key not in current or current[key] != value or type(current[key]) is not type(value):
                self.set_field(section, index, key, value)

    def remove_entry(self, section: str, index: int) -> None:
        self._require_editable()
        pos = self.entry_pos(section, index)
        if pos is None:
            raise ValueError(f"{self.label}: no {section} entry #{index + 1}")
        sec = self.section_pos(section)
        if sec is not None and sec.flow:
            items = [x for i, x in enumerate(self._section_items(section)) if i != index]
            self._rewrite_section(section, items)
        elif sec and len(sec.items) == 1:
            self._replace_lines(sec.key_line, sec.end_line, [f"{section}: []"])
        else:
            self._replace_lines(pos.line, pos.end_line, [])

    def remove_entries(self, section: str, indexes: "Iterable[int]") -> None:
        """Remove several entries (highest index first, so positions stay valid)."""
        for i in sorted(set(indexes), reverse=True):
            self.remove_entry(section, i)

    def append_entry(self, section: str, value: dict) -> None:
        """Add an entry at the end of ``section``, creating the section if the frontmatter lacks it."""
        self._require_editable()
        if self.frontmatter is None:
            raise ValueError(f"{self.label}: no frontmatter to add to")
        sec = self.section_pos(section)
        if sec is None or not sec.is_sequence or sec.flow or not sec.items:
            items = list((self.data or {}).get(section) or []) if sec is not None else []
            items.append(value)
            lines = [f"{section}:"]
            for item in items:
                lines.extend(fmt.render_item(item, 2))
            if sec is None:
                self._replace_lines(self.frontmatter.close_line, self.frontmatter.close_line, lines)
            else:
                self._replace_lines(sec.key_line, sec.end_line, lines)
            return
        last = sec.items[-1]
        dash = max(last.indent - 2, 0)
        self._replace_lines(last.end_line, last.end_line, fmt.render_item(value, dash))

    def replace_text(self, text: str) -> None:
        """Replace the whole text (e.g. a reload); positions are recomputed."""
        self.text = text
        self._reindex()

    # ------------------------------------------------------------ saving
    def save(self, path: str | os.PathLike | None = None, *, force: bool = False) -> bool:
        """Write through ``safe_write`` (temp file + rename, links followed, owner and mode kept).
        Returns False when nothing changed and nothing was written. Saving to its own path, the
        file must still hold ``raw`` (the bytes read): else ``WriteError`` "changed on disk since
        it was read" and nothing is written. ``force``: write over a read-only file."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("no path to save to")
        data = self.encoded()
        own = target == self.path
        if own and data == self.raw and target.exists():
            return False
        write_file(target, data, expected=self.raw if own else None, force=force)
        self.raw = data
        self._saved_text = self.text
        self.path = target
        return True
