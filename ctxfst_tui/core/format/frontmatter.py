"""YAML frontmatter: locating it, parsing it with positions, and rendering minimal edits.

PyYAML is used for the values (the reference scripts use it, so ``yes``, dates and numbers
mean the same thing here as there) and its composed node tree gives every entry's and
field's exact line, which the validator reports and the writer replaces.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent, MappingEndEvent, MappingStartEvent, ScalarEvent, SequenceEndEvent, SequenceStartEvent
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from ctxfst_tui.core.format.source import split_lines, strip_break

try:  # libyaml's parser keeps marks too and is much faster on big frontmatter
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - libyaml missing
    from yaml.parser import Parser as _Parser  # type: ignore[assignment]
    from yaml.reader import Reader as _Reader
    from yaml.scanner import Scanner as _Scanner
else:
    _Reader = _Scanner = None  # type: ignore[assignment,misc]

# Limits on what a frontmatter may ask of the loader. Real documents stay far below them; an
# alias bomb ("billion laughs"), a 990-deep nesting or a type no JSON can hold is a finding.
MAX_DEPTH = 100  # nested lists/mappings
MAX_ALIAS_EXPANSION = 100_000  # values that aliases add to the document, all aliases together
# The YAML types a frontmatter may hold: what JSON holds, plus dates (exported as ISO strings).
_T = "tag:yaml.org,2002:"
PLAIN_TAGS = frozenset(_T + t for t in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp", "merge"))

class _Refused(yaml.MarkedYAMLError):
    """A frontmatter the loader will not build: a limit or a type. ``rule`` is the finding's rule."""

    def __init__(self, rule: str, problem: str, mark: Any):
        super().__init__(None, None, problem, mark)
        self.rule = rule


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_T):] if tag.startswith(_T) else tag


class _LimitedComposer(Composer):
    """PyYAML's composer, refusing what would make the document huge, deep or not JSON.

    Counting happens while the node graph is built, before any Python object exists: an
    alias adds the size of the value it names, so a "billion laughs" stops at the alias that
    crosses ``MAX_ALIAS_EXPANSION`` after reading only its own few lines.
    """

    first_line = 1  # the file line of the YAML text's first line, for messages

    def __init__(self) -> None:
        Composer.__init__(self)
        self._depth = 0
        self._count = 0  # nodes composed so far, every alias counted as the value it names
        self._by_alias = 0
        self._sizes: dict[str, int] = {}  # anchor -> expanded size of its value, once complete

    def _line(self, mark: Any) -> int:
        return self.first_line + mark.line

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            event = self.peek_event()
            anchor = event.anchor
            if anchor in self.anchors and anchor not in self._sizes:
                raise _Refused("yaml-alias-recursive", f"alias *{anchor} refers to the value that contains it (a recursive value)", event.start_mark)
            size = self._sizes.get(anchor, 0)
            self._count += size
            self._by_alias += size
            if self._by_alias > MAX_ALIAS_EXPANSION:
                raise _Refused(
                    "yaml-alias-expansion",
                    f"alias *{anchor} makes the aliases expand to more than {MAX_ALIAS_EXPANSION:,} values "
                    "(aliases of aliases, a 'billion laughs'); the frontmatter is not loaded",
                    event.start_mark,
                )
            return Composer.compose_node(self, parent, index)
        event = self.peek_event()
        before = self._count
        node = Composer.compose_node(self, parent, index)
        if event.anchor is not None:
            self._sizes[event.anchor] = self._count - before
        return node

    def _check_tag(self, tag: str, mark: Any) -> None:
        if tag not in PLAIN_TAGS:
            raise _Refused(
                "yaml-type-unsupported",
                f"YAML type {_tag_name(tag)} is not supported here: a frontmatter value must be a string, "
                "number, boolean, null, date, list or mapping",
                mark,
            )

    def compose_scalar_node(self, anchor: Any) -> Any:
        node = Composer.compose_scalar_node(self, anchor)
        self._count += 1
        self._check_tag(node.tag, node.start_mark)
        return node

    def _enter(self) -> None:
        self._count += 1
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused("yaml-too-deep", f"lists and mappings are nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark)

    def compose_sequence_node(self, anchor: Any) -> Any:
        self._enter()
        node = Composer.compose_sequence_node(self, anchor)
        self._depth -= 1
        self._check_tag(node.tag, node.start_mark)
        return node

    def compose_mapping_node(self, anchor: Any) -> Any:
        self._enter()
        node = Composer.compose_mapping_node(self, anchor)
        self._depth -= 1
        self._check_tag(node.tag, node.start_mark)
        seen: dict[str, Any] = {}
        for key, _value in node.value:
            if not isinstance(key, ScalarNode):
                raise _Refused("yaml-key-not-scalar", "a mapping key must be a plain value, not a list or mapping", key.start_mark)
            name = self._key_name(key)
            if name in seen:
                raise _Refused(
                    "yaml-duplicate-key",
                    f"duplicate key {name!r} at line {self._line(key.start_mark)} "
                    f"(first at line {self._line(seen[name].start_mark)}); YAML keeps only one of them",
                    key.start_mark,
                )
            seen[name] = key
        return node

    def _key_name(self, key: ScalarNode) -> str:
        """The key as a JSON object key: ``1`` and ``"1"``, ``yes`` and ``true`` collide there."""
        if key.tag == _T + "str":
            return key.value
        if key.tag == _T + "merge":
            return "<<"
        value = self.construct_object(key)  # type: ignore[attr-defined]
        if isinstance(value, (_dt.date, _dt.datetime)):
            return value.isoformat()
        return str(value)


class _JsonConstructor(SafeConstructor):
    """SafeConstructor whose failures (a 30 February, a 5,000-digit integer) name the value's line,
    and which refuses what JSON cannot hold: ``.nan`` and ``.inf`` (or ``1.0e+999``)."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            value = SafeConstructor.construct_object(self, node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:
            exc = str(exc).split(";")[0]  # Python's advice on sys.set_int_max_str_digits is not the user's
            raise _Refused("yaml-value-invalid", f"the value {_quoted(node)}is not a valid {_tag_name(node.tag)}: {exc}", node.start_mark) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise _Refused(
                "yaml-value-invalid",
                f"the value {_quoted(node)}is {'not a number' if value != value else 'infinite'}, which JSON cannot "
                "hold: write a finite number, or quote it to keep it as text",
                node.start_mark,
            )
        return value


def _quoted(node: Any) -> str:
    """A scalar node's text, quoted and cut short, with a trailing space (nothing for a collection)."""
    value = node.value if isinstance(node, ScalarNode) else None
    return "" if value is None else (f"{value!r} " if len(value) <= 40 else f"{value[:37]!r}... ")


if _Reader is None:
    class _Loader(_Parser, _LimitedComposer, _JsonConstructor, Resolver):  # type: ignore[misc,valid-type]
        def __init__(self, stream: str) -> None:
            _Parser.__init__(self, stream)
            _LimitedComposer.__init__(self)
            _JsonConstructor.__init__(self)
            Resolver.__init__(self)

        def get_single_node(self) -> Any:  # the composer's, not libyaml's (which has no limits)
            return _LimitedComposer.get_single_node(self)
else:  # pragma: no cover - libyaml missing
    class _Loader(_Reader, _Scanner, _Parser, _LimitedComposer, _JsonConstructor, Resolver):  # type: ignore[misc,valid-type,no-redef]
        def __init__(self, stream: str) -> None:
            _Reader.__init__(self, stream)
            _Scanner.__init__(self)
            _Parser.__init__(self)
            _LimitedComposer.__init__(self)
            _JsonConstructor.__init__(self)
            Resolver.__init__(self)

_ScalarLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # reads back one rendered scalar

if _Reader is None:
    class _PlainLoader(_Parser, _JsonConstructor, Resolver):  # type: ignore[misc,valid-type]
        """libyaml composes the node tree (in C, several times faster than the checked composer);
        used only when :func:`_plain` finds nothing the limits would look at."""

        def __init__(self, stream: str) -> None:
            _Parser.__init__(self, stream)
            _JsonConstructor.__init__(self)
            Resolver.__init__(self)
else:  # pragma: no cover - libyaml missing
    _PlainLoader = None

# libyaml composes recursively in C: before 0.2.5 it had no nesting limit, and some 100,000
# levels overflow the C stack (a segfault, no exception). From 0.2.5 it stops at 1,000 levels.
try:
    from yaml._yaml import get_version as _libyaml_version

    _LIBYAML_BOUNDED = _libyaml_version() >= (0, 2, 5)
except ImportError:  # pragma: no cover - libyaml missing
    _LIBYAML_BOUNDED = False
_C_SAFE_DEPTH = 1000  # far below where an unbounded libyaml overflows the C stack
_BLOCK_PREFIX = re.compile(r"(?:[ \t]|[-?:](?=[ \t]|$)|[&!]\S*)*")


def _may_nest_deeper(yaml_text: str, limit: int) -> bool:
    """True unless ``yaml_text`` surely nests at most ``limit`` levels: every bracket opens a
    flow level, and a block level needs an indent or a compact indicator (``- ``, ``? ``,
    ``: ``), of which a line's prefix holds at most its length (two levels per column, for a
    sequence at its mapping's own indent)."""
    bound = yaml_text.count("[") + yaml_text.count("{")
    if bound > limit:
        return True
    prefix = max((len(_BLOCK_PREFIX.match(line).group()) for line in yaml_text.splitlines()), default=0)
    return bound + 2 * (prefix + 1) > limit


def _plain(root: Any) -> bool:
    """True when a composed tree holds nothing the checked composer refuses or counts: no alias
    (a node met twice), only plain types, string keys without duplicates, shallow nesting.
    False sends the frontmatter through the checked composer, which then says what it refuses."""
    seen: set[int] = set()
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen or node.tag not in PLAIN_TAGS:
            return False
        seen.add(id(node))
        if isinstance(node, ScalarNode):
            continue
        if depth >= MAX_DEPTH:
            return False
        if isinstance(node, SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)
            continue
        keys: set[str] = set()
        for key, value in node.value:
            if not isinstance(key, ScalarNode) or key.tag != _T + "str" or key.value in keys:
                return False
            keys.add(key.value)
            stack.append((key, depth + 1))
            stack.append((value, depth + 1))
    return True


FENCE_LINE = re.compile(r"---[ \t]*")
CLOSE_LINE = re.compile(r"(?:---|\.\.\.)[ \t]*")


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
    if not lines or not FENCE_LINE.fullmatch(strip_break(lines[0])):
        return None
    for i in range(1, len(lines)):
        if CLOSE_LINE.fullmatch(strip_break(lines[i])):
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
    if _PlainLoader is not None and (_LIBYAML_BOUNDED or not _may_nest_deeper(yaml_text, _C_SAFE_DEPTH)):
        # the common case first: libyaml composes, the tree is checked after
        loader = _PlainLoader(yaml_text)
        try:
            node = loader.get_single_node()
            if node is None or _plain(node):
                data = loader.construct_document(node) if node is not None else None
                return _positions(node, data, lines, block)
        except (yaml.YAMLError, RecursionError):
            pass  # the checked composer below says what is wrong, and where
        finally:
            loader.dispose()
    loader = _Loader(yaml_text)
    loader.first_line = first
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _Refused as exc:
        mark = exc.problem_mark
        raise FrontmatterError(exc.rule, str(exc.problem), first + mark.line, mark.column + 1) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first + mark.line if mark else first
        col = mark.column + 1 if mark else 0
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        if "maximum nesting depth" in what:  # libyaml's own limit (1,000 flow levels) came first
            raise FrontmatterError("yaml-too-deep", f"lists and mappings are nested more than {MAX_DEPTH} levels deep", line, col) from None
        raise FrontmatterError("yaml-syntax", f"YAML does not parse: {what} (YAML line {line}, column {col})", line, col) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow; libyaml gives a byte offset
        before = yaml_text.encode("utf-8")[: exc.position].decode("utf-8", "ignore") if _Reader is None else yaml_text[: exc.position]
        where = split_lines(before + "x")
        line, col = first + len(where) - 1, len(where[-1])
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        raise FrontmatterError("yaml-syntax", f"YAML does not parse: {exc.reason} ({char} at line {line}, column {col})", line, col) from None
    except yaml.YAMLError as exc:
        raise FrontmatterError("yaml-syntax", f"YAML does not parse: {exc}", first) from None
    except RecursionError:  # pragma: no cover - MAX_DEPTH stops nesting long before
        raise FrontmatterError("yaml-too-deep", f"lists and mappings are nested more than {MAX_DEPTH} levels deep", first) from None
    finally:
        loader.dispose()
    return _positions(node, data, lines, block)


def _positions(node: Any, data: Any, lines: list[str], block: tuple[int, int]) -> Frontmatter:
    """The frontmatter with the positions of its sections, entries and fields, from the node tree."""
    open_i, close_i = block
    first = open_i + 2
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
# Characters a quoted scalar must escape: line breaks (YAML folds a raw one) and what YAML
# does not allow in a stream at all. json.dumps escapes those below U+0020 already.
_MUST_ESCAPE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def _double_quoted(s: str) -> str:
    return _MUST_ESCAPE.sub(lambda m: "\\u%04x" % ord(m.group()), json.dumps(s, ensure_ascii=False))


def render_scalar(value: Any, quote: str | None = None) -> str:
    """A scalar as YAML text, plain when that reads back as the same value, else double-quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value != value:
        return ".nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    s = str(value)
    if quote == "'" and not _MUST_ESCAPE.search(s):
        return "'" + s.replace("'", "''") + "'"
    if quote != '"' and _PLAIN_SAFE.match(s) and not s.endswith(":") and ": " not in s and " #" not in s:
        try:
            if yaml.load(s, Loader=_ScalarLoader) == s:
                return s
        except yaml.YAMLError:
            pass
    return _double_quoted(s)


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
