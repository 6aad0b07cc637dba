"""YAML frontmatter: locating it, parsing it with positions, and rendering minimal edits.

PyYAML is used for the values (the reference scripts use it, so ``yes``, dates and numbers
mean the same thing here as there) and its composed node tree gives every entry's and
field's exact line, which the validator reports and the writer replaces.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

try:  # the C loader keeps marks too and is ~10x faster on big frontmatter
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader

FENCE_LINE = re.compile(r"^---[ \t]*\r?$")
CLOSE_LINE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$")


class FrontmatterError(Exception):
    """Frontmatter that cannot be read; line/column are 1-based in the file."""

    def __init__(self, rule: str, message: str, line: int, column: int = 0):
        super().__init__(message)
        self.rule, self.message, self.line, self.column = rule, message, line, column


@dataclass
class FieldPos:
    """Where one ``key: value`` of a mapping sits: key line/column and the line range of the field."""

    line: int
    column: int
    end_line: int  # exclusive
    flow: bool = False  # the value is a flow collection ``[a, b]``
    quote: str | None = None  # the scalar's quote style, if quoted


@dataclass
class EntryPos:
    """One item of the ``entities`` or ``chunks`` sequence: its line range and its fields' positions."""

    index: int
    line: int
    end_line: int  # exclusive
    indent: int  # column (0-based) of the item's keys
    fields: dict[str, FieldPos] = field(default_factory=dict)


@dataclass
class SectionPos:
    """A top-level key (``entities``/``chunks``/...) and, for sequences, its items."""

    key_line: int
    end_line: int  # exclusive
    items: list[EntryPos] = field(default_factory=list)
    flow: bool = False
    is_sequence: bool = False


@dataclass
class Frontmatter:
    """The parsed frontmatter: data plus positions. Lines are 1-based file lines."""

    data: Any
    open_line: int  # the ``---`` line (1)
    close_line: int  # the closing ``---`` line
    sections: dict[str, SectionPos] = field(default_factory=dict)

    @property
    def body_start_line(self) -> int:
        return self.close_line + 1


def find_block(lines: list[str]) -> tuple[int, int] | None:
    """(open, close) 0-based line indexes of a frontmatter block, or None if there is none.

    Raises FrontmatterError when the opening fence has no closing fence (a truncated file).
    """
    if not lines or not FENCE_LINE.match(lines[0]):
        return None
    for i in range(1, len(lines)):
        if CLOSE_LINE.match(lines[i]):
            return 0, i
    raise FrontmatterError(
        "frontmatter-unclosed", "frontmatter opened by '---' at line 1 is never closed by a '---' line", 1, 1
    )


def _end_line(mark_line: int, mark_col: int, first: int) -> int:
    """Exclusive 1-based end line from a 0-based end mark inside the YAML text (starting at file line ``first``)."""
    return first + mark_line + (1 if mark_col > 0 else 0)


def _trim_end(lines: list[str], start: int, end: int) -> int:
    """Move an exclusive end line back over trailing blank and comment-only lines (they belong to what follows)."""
    while end - 1 > start:
        s = lines[end - 2].strip()
        if s and not s.startswith("#"):
            break
        end -= 1
    return end


def _map_fields(node: yaml.MappingNode, first: int, lines: list[str], stop: int) -> dict[str, FieldPos]:
    fields: dict[str, FieldPos] = {}
    pairs = node.value
    for i, (k, v) in enumerate(pairs):
        if not isinstance(k, yaml.ScalarNode):
            continue
        line = first + k.start_mark.line
        if i + 1 < len(pairs):
            end = first + pairs[i + 1][0].start_mark.line
        else:
            end = min(_end_line(v.end_mark.line, v.end_mark.column, first), stop)
        end = max(_trim_end(lines, line, end), line + 1)
        flow = bool(getattr(v, "flow_style", False)) and not isinstance(v, yaml.ScalarNode)
        quote = v.style if isinstance(v, yaml.ScalarNode) and v.style in ("'", '"') else None
        fields.setdefault(str(k.value), FieldPos(line, k.start_mark.column + 1, end, flow, quote))
    return fields


def parse(text: str, lines: list[str], block: tuple[int, int]) -> Frontmatter:
    """Parse the frontmatter block; raise FrontmatterError naming the YAML line and column."""
    open_i, close_i = block
    first = open_i + 2  # file line of the first YAML line
    yaml_text = "".join(lines[open_i + 1 : close_i])
    loader = _Loader(yaml_text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first + mark.line if mark else first
        col = mark.column + 1 if mark else 0
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise FrontmatterError("yaml-syntax", f"YAML does not parse: {what} (YAML line {line}, column {col})", line, col) from None
    except yaml.YAMLError as exc:
        raise FrontmatterError("yaml-syntax", f"YAML does not parse: {exc}", first) from None
    finally:
        loader.dispose()
    fm = Frontmatter(data=data, open_line=open_i + 1, close_line=close_i + 1)
    stop = close_i + 1  # exclusive bound: the closing fence line
    if isinstance(node, yaml.MappingNode):
        keys = node.value
        for i, (k, v) in enumerate(keys):
            if not isinstance(k, yaml.ScalarNode):
                continue
            key_line = first + k.start_mark.line
            end = first + keys[i + 1][0].start_mark.line if i + 1 < len(keys) else stop
            sec = SectionPos(key_line, _trim_end(lines, key_line, end))
            sec.flow = bool(getattr(v, "flow_style", False))
            if isinstance(v, yaml.SequenceNode):
                sec.is_sequence = True
                items = v.value
                for j, item in enumerate(items):
                    line = first + item.start_mark.line
                    if j + 1 < len(items):
                        iend = first + items[j + 1].start_mark.line
                    else:
                        iend = min(_end_line(item.end_mark.line, item.end_mark.column, first), sec.end_line)
                    iend = max(_trim_end(lines, line, iend), line + 1)
                    entry = EntryPos(j, line, iend, item.start_mark.column)
                    if isinstance(item, yaml.MappingNode):
                        entry.fields = _map_fields(item, first, lines, iend)
                    sec.items.append(entry)
            fm.sections.setdefault(str(k.value), sec)
    return fm


# ---------------------------------------------------------------- rendering edits

_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_./][A-Za-z0-9_ ./:@()+-]*$")


def render_scalar(value: Any, quote: str | None = None) -> str:
    """A scalar as YAML text, plain when that reads back as the same value, else double-quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    s = str(value)
    if quote == "'" and "\n" not in s:
        return "'" + s.replace("'", "''") + "'"
    if quote != '"' and _PLAIN_SAFE.match(s) and not s.endswith(":") and ": " not in s and " #" not in s:
        try:
            if yaml.load(s, Loader=_Loader) == s:
                return s
        except yaml.YAMLError:
            pass
    return json.dumps(s, ensure_ascii=False)


def _is_scalar(v: Any) -> bool:
    return not isinstance(v, (list, dict))


def render_field(key: str, value: Any, indent: int, flow: bool | None = None, quote: str | None = None) -> list[str]:
    """Lines (without newlines) for ``key: value`` at ``indent`` columns, in the file's style."""
    pad = " " * indent
    k = render_scalar(key)
    if isinstance(value, list):
        if not value:
            return [f"{pad}{k}: []"]
        if all(_is_scalar(v) for v in value) and flow is not False:
            return [f"{pad}{k}: [" + ", ".join(render_scalar(v) for v in value) + "]"]
        out = [f"{pad}{k}:"]
        for v in value:
            out.extend(render_item(v, indent + 2))
        return out
    if isinstance(value, dict):
        if not value:
            return [f"{pad}{k}: {{}}"]
        out = [f"{pad}{k}:"]
        for kk, vv in value.items():
            out.extend(render_field(str(kk), vv, indent + 2))
        return out
    return [f"{pad}{k}: {render_scalar(value, quote)}"]


def render_item(value: Any, indent: int) -> list[str]:
    """Lines for one ``- item`` of a block sequence whose dash sits at ``indent``."""
    pad = " " * indent
    if isinstance(value, dict) and value:
        lines: list[str] = []
        for i, (k, v) in enumerate(value.items()):
            sub = render_field(str(k), v, indent + 2)
            if i == 0:
                sub[0] = pad + "- " + sub[0][indent + 2 :]
            lines.extend(sub)
        return lines
    if isinstance(value, list):
        return [pad + "- [" + ", ".join(render_scalar(v) for v in value) + "]"]
    return [pad + "- " + render_scalar(value)]


def render_flow_mapping(value: dict) -> str | None:
    """``{k: v, ...}`` on one line, or None when a value is nested too deeply for that."""
    parts = []
    for k, v in value.items():
        if isinstance(v, dict):
            return None
        if isinstance(v, list):
            if not all(not isinstance(x, (list, dict)) for x in v):
                return None
            rendered = "[" + ", ".join(render_scalar(x) for x in v) + "]"
        else:
            rendered = render_scalar(v)
        parts.append(f"{render_scalar(str(k))}: {rendered}")
    return "{" + ", ".join(parts) + "}"
