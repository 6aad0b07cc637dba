"""Markdown block segmentation with exact source offsets, on mistune's block parser.

mistune's tokens carry no positions, but its block state's cursor does: the parser here records
the cursor when each top-level token is appended (and, for containers appended after their
content was scanned, when the rule that made them started). A token then spans from its start
to the next token's start, so the blocks tile the source with no gap and no overlap:
``"".join(text[b.start:b.end] for b in parse_blocks(text)) == text``.

Only top-level blocks are needed for chunking, so container contents (list items, quotes) are
not parsed further; their extent comes from mistune's own line scanning. mistune's rules run
as they are; only its loops are replaced by ones that give the same tokens with less work
(lines no rule can start at are skipped, paragraph text is not built): the parse runs in a
worker beside the tokenizer and is the larger half of a chunking's cost.

Besides mistune's blocks this module recognises GFM tables (a paragraph line followed by a
delimiter row), a YAML frontmatter block at the top, and CtxFST ``<Chunk id="...">`` /
``</Chunk>`` tag lines (outside code), so a tag line never swallows the heading below it.
"""
from __future__ import annotations

import bisect
import re
import string
from dataclasses import dataclass

from mistune.block_parser import BlockParser
from mistune.core import BlockState

try:  # mistune's helpers for link reference definitions
    from mistune.block_parser import _BLANK_TO_LINE, _find_next_blank_line
    from mistune.helpers import parse_link_href, parse_link_title
    from mistune.util import unikey
except ImportError:  # pragma: no cover - another mistune: use its rule as it is
    _find_next_blank_line = None

try:  # mistune's list helpers, to run its list rule without rebuilding item contents
    from mistune import list_parser as _lp

    for _name in ("_create_list_marker", "_get_list_bullet", "_compile_continue_width",
                  "_compile_list_item_pattern", "_compile_list_break_sc", "_collect_list_item_lines"):
        getattr(_lp, _name)
except (ImportError, AttributeError):  # pragma: no cover - another mistune: use its rule as it is
    _lp = None

__all__ = ["Block", "OffsetMap", "parse_blocks", "parse_normalized", "heading_marker", "FENCE_OPEN"]


@dataclass(slots=True)
class Block:
    """One top-level block: ``text[start:end]`` of the parsed source, trailing blank lines included.

    kind: heading | paragraph | code | table | list | quote | html | rule | blank |
          frontmatter | chunk_open | chunk_close (| text for plain-text paragraphs)
    """

    kind: str
    start: int
    end: int
    level: int = 0  # heading level (1-6 in Markdown, depth of the number in plain text)
    title: str = ""  # heading text
    fence: str = ""  # fenced code: the fence run (``` or ~~~~); "" for indented code
    info: str = ""  # fenced code: the info string
    chunk_id: str = ""  # chunk_open: the CtxFST chunk id
    marker: str = ""  # heading: how it is written in a path ("## Install", "3.1 Install")

    @property
    def length(self) -> int:
        return self.end - self.start


# -- offsets through normalisation ------------------------------------------------------------------


class OffsetMap:
    """Maps offsets of a normalised text back to the text it was made from.

    Built from non-overlapping edits ``(start, end, replacement)`` on the original text. An offset
    inside a replacement maps to the replaced region's start (or end, for end offsets), so a span
    of the normalised text maps to the span of the original that produced it.
    """

    __slots__ = ("_nstarts", "_edits", "parent")

    def __init__(self, edits: list[tuple[int, int, str]], parent: "OffsetMap | None" = None):
        nstarts: list[int] = []
        table: list[tuple[int, int, int, int]] = []
        shift = 0  # normalised - original, before the current edit
        for ostart, oend, repl in edits:
            ns = ostart + shift
            nstarts.append(ns)
            table.append((ns, len(repl), ostart, oend))
            shift += len(repl) - (oend - ostart)
        self._nstarts = nstarts
        self._edits = table
        self.parent = parent

    @staticmethod
    def apply(text: str, edits: list[tuple[int, int, str]]) -> str:
        if not edits:
            return text
        parts = []
        pos = 0
        for ostart, oend, repl in edits:
            parts.append(text[pos:ostart])
            parts.append(repl)
            pos = oend
        parts.append(text[pos:])
        return "".join(parts)

    def to_source(self, n: int, end: bool = False) -> int:
        i = bisect.bisect_right(self._nstarts, n) - 1
        if i < 0:
            o = n
        else:
            ns, nl, os_, oe = self._edits[i]
            if n >= ns + nl:
                o = oe + (n - ns - nl)
            elif n == ns:
                o = os_
            else:
                o = oe if end else os_
        return self.parent.to_source(o, end) if self.parent is not None else o

    @property
    def identity(self) -> bool:
        return not self._edits and (self.parent is None or self.parent.identity)


def normalize_newlines(text: str) -> tuple[str, OffsetMap | None]:
    """LF line endings (and no byte-order mark) for parsing, with the map back to ``text``."""
    if "\r" not in text and not text.startswith("\ufeff"):
        return text, None
    edits: list[tuple[int, int, str]] = []
    if text.startswith("\ufeff"):
        edits.append((0, 1, ""))
    if "\r" in text:
        for m in _CR.finditer(text):
            if m.group() == "\r\n":
                edits.append((m.start(), m.start() + 1, ""))
            else:
                edits.append((m.start(), m.end(), "\n"))
    edits.sort()
    return OffsetMap.apply(text, edits), OffsetMap(edits)


_CR = re.compile(r"\r\n?")


# -- mistune with positions ---------------------------------------------------------------------------


class _State(BlockState):
    """Records where each top-level token starts (``tok["_start"]``).

    A paragraph's text is not built, only where its parts are (``tok["_parts"]``): it is read
    only for the title of a setext heading.
    """

    def add_paragraph(self, text: str) -> None:  # pragma: no cover - the parser calls add_text
        self.add_text(self.cursor, self.cursor + len(text))

    def add_text(self, start: int, end: int) -> None:
        tokens = self.tokens
        if tokens and tokens[-1]["type"] == "paragraph":
            tokens[-1]["_parts"].append((start, end))
        else:
            tokens.append({"type": "paragraph", "_parts": [(start, end)], "_start": start})

    def append_paragraph(self) -> int | None:
        tokens = self.tokens
        if tokens and tokens[-1]["type"] == "paragraph":
            pos = self.find_line_end()
            tokens[-1]["_parts"].append((self.cursor, pos))
            return pos
        return None

    def append_token(self, token) -> None:
        # leaf rules append their token before moving the cursor: the cursor is the token's start
        token.setdefault("_start", self.cursor)
        self.tokens.append(token)


# Where a top-level rule or a blank line can start: a line beginning with white space or with a
# character that starts a rule (fences, headings, setext underlines, rules, quotes, list markers,
# link reference definitions, HTML). Other lines always continue a plain paragraph.
_RULE_LINE = re.compile(r"\n(?=[\s`~#=_*>+\[<\d-])")
_RULE_START = frozenset("`~#=_*>+[<-")
_BLANK_TOKEN = {"type": "blank_line"}  # (read only)
_PUNCTUATION = frozenset(string.punctuation)

# Rules that append (or insert) their token after the cursor moved on, sometimes after a block
# that interrupted them was appended: their token starts where the rule started.
_LATE_RULES = {"list": "list", "block_quote": "block_quote", "block_html": "block_html", "raw_html": "block_html"}


_NEXT_BLANK = re.compile(r"\n(?=[ \t\v\f]*\n)")


def _search_rule(src: str, cursor: int, match):
    """``sc.search(src, cursor)`` for the top-level rules, which only match at a line start: only
    the line starts where a rule can begin (``_RULE_LINE``) are tried."""
    if cursor == 0 or src[cursor - 1] == "\n":
        m = match(src, cursor)
        if m:
            return m
    candidate = _RULE_LINE.search
    pos = cursor
    while True:
        c = candidate(src, pos)
        if c is None:
            return None
        pos = c.end()
        m = match(src, pos)
        if m:
            return m


class _BlankLines:
    """mistune's blank-line pattern with a faster ``search`` (same matches): it looks for the line
    break before a blank line instead of trying ``^`` at every position."""

    def __init__(self, rx: re.Pattern) -> None:
        self.rx = rx
        self.match = rx.match
        self.finditer = rx.finditer
        self.pattern = rx.pattern
        self.flags = rx.flags

    def search(self, src: str, pos: int = 0, endpos: int | None = None):
        if endpos is not None:  # pragma: no cover - mistune does not pass it
            return self.rx.search(src, pos, endpos)
        if pos <= 0:
            m = self.rx.match(src, 0)
            if m:
                return m
            pos = 1
        m = _NEXT_BLANK.search(src, pos - 1)
        return self.rx.match(src, m.end()) if m else None


class _Parser(BlockParser):
    state_cls = _State

    def __init__(self) -> None:
        super().__init__()
        self.BLANK_LINE = _BlankLines(BlockParser.BLANK_LINE)
        self._list_patterns: dict = {}
        self._methods["list"] = self.parse_list
        for rule, token_type in _LATE_RULES.items():
            self._methods[rule] = self._starting_at_entry(self._methods[rule], token_type)

    @staticmethod
    def _starting_at_entry(method, token_type: str):
        def run(m, state):
            start = state.cursor
            tokens = state.tokens
            n = len(tokens)
            end = method(m, state)
            for i in range(n, len(tokens)):
                tok = tokens[i]
                if tok["type"] == token_type or "_start" not in tok:
                    tok["_start"] = start
            return end

        return run

    def parse(self, state, rules=None):  # type: ignore[override]
        """mistune's block loop (top level only), with shortcuts that give the same tokens: an
        empty line is a blank line (no other rule can start with a line break; one shared token
        stands for it), a line starting with a character no rule starts with is not matched
        against the rules, a plain paragraph and the search for the next rule skip the lines
        that no rule could start at, and a paragraph's text is not built."""
        if state.parent is not None:  # container content: its extent is already known
            return
        if rules is not None and list(rules) != self.rules:  # pragma: no cover - not used here
            return super().parse(state, rules)
        sc = self.compile_sc()
        match = sc.match
        src = state.src
        cmax = state.cursor_max
        blank = self.BLANK_LINE.match
        tokens = state.tokens
        indent_fast = self._parse_indent_code_fast
        plain = self._parse_plain_paragraph
        method = self.parse_method
        while state.cursor < cmax:
            cursor = state.cursor
            c = src[cursor]
            if c == "\n" and (cursor == 0 or src[cursor - 1] == "\n"):
                # one shared token without a start: blank lines stay with the block before them
                tokens.append(_BLANK_TOKEN)
                state.cursor = blank(src, cursor).end()
                continue
            if c == " " or c == "\t":
                end_pos = indent_fast(state)
                if end_pos is not None:
                    state.cursor = end_pos
                    continue
            if c in _RULE_START or c.isspace() or c.isdigit():
                m = match(src, cursor)
            else:  # no rule starts with this character
                m = None
            if not m and plain(state, sc):
                continue
            if not m:
                m = _search_rule(src, cursor, match)
            if not m:
                break
            end_pos = m.start()
            if end_pos > cursor:
                state.add_text(cursor, end_pos)
                state.cursor = end_pos
            end_pos2 = method(m, state)
            if end_pos2:
                state.cursor = end_pos2
            else:
                end_pos3 = state.find_line_end()
                state.add_text(state.cursor, end_pos3)
                state.cursor = end_pos3
        if state.cursor < cmax:
            state.add_text(state.cursor, cmax)
            state.cursor = cmax

    def _parse_plain_paragraph(self, state, sc):  # type: ignore[override]
        """mistune's plain paragraph: its lines up to the first line where a rule matches or that
        is blank; only lines starting with a character a rule (or a blank line) can start with
        are tried."""
        src = state.src
        cursor = state.cursor
        c = src[cursor : cursor + 1]
        if not c or c.isspace() or c.isdigit() or c in _PUNCTUATION:
            return False
        cmax = state.cursor_max
        pos = src.find("\n", cursor)
        pos = cmax if pos < 0 else pos + 1
        candidate = _RULE_LINE.search
        match = sc.match
        while pos < cmax:
            m = candidate(src, pos - 1)
            if m is None:
                pos = cmax
                break
            pos = m.end()
            if match(src, pos):
                break
            e = src.find("\n", pos)
            if not src[pos : (cmax if e < 0 else e + 1)].strip():
                break
            pos += 1
        else:
            pos = min(pos, cmax)
        state.add_text(cursor, pos)
        state.cursor = pos
        return True

    def parse_ref_link(self, m, state):  # type: ignore[override]
        """mistune's rule for link reference definitions, without the link data (never used here)
        and with the next blank line found by a search rather than a list of every blank line."""
        if _find_next_blank_line is None:  # pragma: no cover - another mistune
            return super().parse_ref_link(m, state)
        end_pos = state.append_paragraph()
        if end_pos:
            return end_pos
        if not unikey(m.group("reflink_1")):
            return None
        src = state.src
        href, href_pos = parse_link_href(src, m.end(), block=True, max_nested_level=self.max_nested_level)
        if href is None:
            return None
        if href_pos > 0 and not src[href_pos - 1].isspace():  # its line is not blank: the next run is found
            blank = self.BLANK_LINE.search(src, href_pos)
            max_pos = state.cursor_max if blank is None else blank.start()
        else:  # pragma: no cover - defensive
            blank_pos = _find_next_blank_line(state, href_pos, BlockParser.BLANK_LINE)
            max_pos = state.cursor_max if blank_pos is None else blank_pos
        title, title_pos = parse_link_title(src, href_pos, max_pos)
        if title_pos:
            m2 = _BLANK_TO_LINE.match(src, title_pos)
            title_pos = m2.end() if m2 else None
        if title_pos is None:
            m3 = _BLANK_TO_LINE.match(src, href_pos)
            href_pos = m3.end() if m3 else None
        return title_pos or href_pos or None

    def parse_list(self, m, state):  # type: ignore[override]
        """mistune's list rule, top level only: the item patterns are compiled once, and the items'
        contents are not rebuilt (they are never parsed here). Same extents as mistune's own."""
        if _lp is None:  # pragma: no cover - mistune changed its private helpers
            return super().parse_list(m, state)
        item = _lp._create_list_marker(m, "list")
        if not item.text.strip():
            end_pos = state.append_paragraph()  # an empty item cannot interrupt a paragraph
            if end_pos:
                return end_pos
        token = {"type": "list", "children": [], "tight": True, "bullet": item.bullet,
                 "attrs": {"depth": state.depth(), "ordered": item.ordered}}
        if item.ordered:
            start = int(item.marker[:-1])
            if start != 1:  # only lists starting with 1 interrupt paragraphs
                end_pos = state.append_paragraph()
                if end_pos:
                    return end_pos
                token["attrs"]["start"] = start
        state.cursor = m.end() + 1
        bullet = _lp._get_list_bullet(item.bullet)
        cache = self._list_patterns
        while item:
            width = item.leading_width
            text = item.text
            if text[:1] == " " and text[1:2] and not text[1].isspace():  # "- item": the common case
                continue_width = width + 1
            else:
                text, continue_width = _lp._compile_continue_width(text, width)
            pats = cache.get((bullet, width))
            if pats is None:
                pats = cache[(bullet, width)] = (
                    re.compile(_lp._compile_list_item_pattern(bullet, width)),
                    _lp._compile_list_break_sc(self, width),
                )
            item, end_pos, tok_index = self._collect_item_lines(pats[0], pats[1], state, text, continue_width)
            if end_pos is not None:
                token["_tok_index"] = tok_index
                token["_end_pos"] = end_pos
        end_pos = token.pop("_end_pos", None)
        if end_pos:
            state.tokens.insert(token.pop("_tok_index"), token)
            return end_pos
        state.append_token(token)
        return state.cursor

    def _collect_item_lines(self, item_re, break_sc, state, text, continue_width):
        """mistune's ``_collect_list_item_lines`` without building the item's text (never parsed
        here): the same cursor moves, next item and interrupting block. Returns
        ``(next item, end_pos, token index)``."""
        src = state.src
        cmax = state.cursor_max
        blank = self.BLANK_LINE.match
        has_indent = _lp._has_continuation_indent
        expand = _lp._expand_leading_tabs
        indent = " " * continue_width
        prev_blank = False
        has_text = False  # the item's collected lines hold more than white space
        cursor = state.cursor
        while cursor < cmax:
            e = src.find("\n", cursor)
            next_pos = cmax if e < 0 else e + 1
            raw_line = src[cursor:next_pos]
            c = raw_line[0]
            if c in " \t\n\v\f" and blank(raw_line):
                prev_blank = True
                cursor = next_pos
                continue
            if c == " " or c == "\t":
                cont = raw_line.startswith(indent) or has_indent(raw_line, continue_width)
            else:
                cont = False
            if cont:
                if prev_blank and not text and not has_text:
                    break  # a list item can begin with at most one blank line
                if not has_text and raw_line.strip():
                    has_text = True
                prev_blank = False
                cursor = next_pos
                continue
            line = expand(raw_line) if c == " " or c == "\t" else raw_line
            state.cursor = cursor
            m = break_sc.match(src, cursor)
            if m and m.lastgroup == "thematic_break":
                tok_index = len(state.tokens)
                end_pos = self.parse_method(m, state)
                if end_pos:
                    return None, end_pos, tok_index
            else:
                m2 = item_re.match(line)
                if m2:
                    state.cursor = next_pos
                    return _lp._create_list_marker(m2, "listitem"), None, None
                if m:
                    if m.lastgroup == "list":
                        break
                    tok_index = len(state.tokens)
                    end_pos = self.parse_method(m, state)
                    if end_pos:
                        return None, end_pos, tok_index
            if prev_blank:
                break  # not a continuation line, and the previous line is blank
            if not has_text and raw_line.strip():
                has_text = True
            cursor = next_pos
        state.cursor = cursor
        return None, None, None

    def _parse_indent_code_fast(self, state):  # type: ignore[override]
        c = state.src[state.cursor : state.cursor + 1]
        if c != " " and c != "\t":  # an indented code line starts with a space or a tab
            return None
        return super()._parse_indent_code_fast(state)


_parser = _Parser()

FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^\n]*)")
_DELIM_ROW = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_FRONTMATTER_OPEN = re.compile(r"---[ \t]*\n")
_FRONTMATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$\n?", re.M)
_BLANK_RUN = re.compile(r"(?:[ \t]*\n)*")
_TAG_HINT = re.compile(r"<\s*/?\s*chunk\b", re.I)
_TAG_LINE = re.compile(
    r"""^[ \t]*(?:<\s*Chunk\s+id\s*=\s*(?:"([^"\n]*)"|'([^'\n]*)')\s*>|<\s*/\s*Chunk\s*>)[ \t]*$""", re.I
)
_HEADING_TRIM = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")

_KINDS = {
    "heading": "heading",
    "paragraph": "paragraph",
    "block_code": "code",
    "block_quote": "quote",
    "list": "list",
    "block_html": "html",
    "thematic_break": "rule",
    "blank_line": "blank",
}


def heading_marker(level: int, title: str) -> str:
    return ("#" * level + " " + title) if title else "#" * level


def _cell_count(line: str) -> int:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return len(re.split(r"(?<!\\)\|", s))


def _split_table(block: Block, src: str) -> list[Block]:
    """A paragraph token that holds a GFM table: [paragraph lines before it], [table]."""
    text = src[block.start : block.end]
    lines = text.splitlines(keepends=True)
    pos = block.start
    offsets = []
    for line in lines:
        offsets.append(pos)
        pos += len(line)
    for i in range(1, len(lines)):
        row = lines[i].rstrip("\n")
        if "-" not in row or not _DELIM_ROW.match(row):
            continue
        header = lines[i - 1].rstrip("\n")
        if "|" not in row and "|" not in header:
            continue
        if "|" not in header or _cell_count(header) != _cell_count(row):
            continue
        out = []
        if i - 1 > 0:
            out.append(Block("paragraph", block.start, offsets[i - 1]))
        out.append(Block("table", offsets[i - 1], block.end))
        return out
    return [block]


def _parse_markdown(src: str, base: int, out: list[Block]) -> None:
    """mistune over ``src`` (LF newlines); blocks appended to ``out`` with offsets + ``base``."""
    if not src:
        return
    state = _State()
    state.process(src)
    _parser.parse(state)
    n = len(src)
    local: list[Block] = []
    kinds = _KINDS
    pending: int | None = None  # start of text no block has claimed yet
    block: Block | None = None  # the block being extended
    prev_tok = None
    prev_start = -1
    toks = state.tokens
    toks.append(None)
    blank_token = _BLANK_TOKEN
    # one pass: a token ends where the next one starts
    for tok in toks:
        if tok is blank_token:
            continue  # blank lines stay with the block before them
        if tok is not None:
            s = tok.get("_start")
            if s is None or s <= prev_start or s >= n:
                continue  # defensive: its text stays with the token before
        else:
            s = n
        if prev_tok is None:
            if s > 0:
                pending = 0  # text before the first token (e.g. a link reference definition)
        else:
            e = s
            ps = prev_start
            kind = kinds.get(prev_tok["type"], "paragraph")
            if kind == "paragraph" and e == n and not src[ps:e].strip():
                kind = "blank"  # whitespace with no newline at the very end
            if kind == "blank":
                if block is not None and block.end == ps:
                    block.end = e
                elif pending is None:
                    pending = ps
            else:
                start = ps if pending is None else pending
                pending = None
                block = Block(kind, start, e)
                if kind == "heading":
                    block.level = level = prev_tok["attrs"]["level"]
                    title = prev_tok.get("text", "")
                    if prev_tok.get("style") == "setext":
                        parts = prev_tok.get("_parts", ())
                        title = " ".join("".join([src[a:b] for a, b in parts]).split())
                    block.title = title = title.strip()
                    block.marker = heading_marker(level, title)
                elif kind == "code":
                    if prev_tok.get("style") == "fenced":
                        m = FENCE_OPEN.match(src, ps)
                        block.fence = m.group(2) if m else prev_tok.get("marker", "```")
                        block.info = m.group(3).strip() if m else ""
                elif kind == "paragraph" and src.find("|", ps, e) != -1 and src.find("-", ps, e) != -1:
                    parts = _split_table(block, src)
                    local.extend(parts)
                    block = parts[-1]
                    prev_tok, prev_start = tok, s
                    continue
                local.append(block)
        prev_tok, prev_start = tok, s
    if pending is not None:  # text (blank lines, a link definition) that no block took
        if block is not None and block.end == pending:
            block.end = n
        else:
            local.append(Block("paragraph" if src[pending:].strip() else "blank", pending, n))
    if base:
        for b in local:
            b.start += base
            b.end += base
    out.extend(local)


def _frontmatter_end(text: str) -> int:
    """End offset (after the closing line and the blank lines after it) of a frontmatter block, or 0."""
    if not text.startswith("---"):
        return 0
    m = _FRONTMATTER_OPEN.match(text)
    if not m:
        return 0
    c = _FRONTMATTER_CLOSE.search(text, m.end())
    if not c:
        return 0
    end = c.end()
    return _BLANK_RUN.match(text, end).end()


def _tag_lines(text: str, start: int) -> list[tuple[int, int, str, str]]:
    """``(line_start, line_end_with_blank_lines, kind, id)`` for whole-line <Chunk> tags outside code."""
    if not _TAG_HINT.search(text, start):
        return []
    from ctxfst_tui.core.format.chunk_tags import scan_tags
    from ctxfst_tui.core.format.source import LineIndex

    found = []
    for ev in scan_tags(text, start, LineIndex(text)):
        ls = text.rfind("\n", 0, ev.span.start) + 1
        le = text.find("\n", ev.span.end)
        le = len(text) if le == -1 else le + 1
        m = _TAG_LINE.match(text[ls:le].rstrip("\n"))
        if not m:
            continue  # a tag inside other text: left to the chunker's inline stripping
        if found and found[-1][0] == ls:
            continue
        end = _BLANK_RUN.match(text, le).end()
        if ev.kind == "open":
            found.append((ls, end, "chunk_open", ev.chunk_id or ""))
        else:
            found.append((ls, end, "chunk_close", ""))
    return found


def parse_normalized(text: str) -> list[Block]:
    """Blocks of a text that already has LF newlines and no BOM; they tile ``text`` exactly."""
    out: list[Block] = []
    pos = _frontmatter_end(text)
    if pos:
        out.append(Block("frontmatter", 0, pos))
    for ls, le, kind, cid in _tag_lines(text, pos):
        if ls < pos:
            continue
        _parse_markdown(text[pos:ls], pos, out)
        out.append(Block(kind, ls, le, chunk_id=cid))
        pos = le
    if pos == 0:
        _parse_markdown(text, 0, out)
    else:
        _parse_markdown(text[pos:], pos, out)
    return out


def parse_blocks(text: str) -> list[Block]:
    """Top-level Markdown blocks of ``text`` with char offsets into ``text`` itself.

    Blank lines belong to the block before them (leading ones to the first block), so the
    blocks tile the text: consecutive, non-overlapping, covering every character. CRLF / CR
    newlines and a byte-order mark are handled; offsets still point into ``text``.
    """
    norm, omap = normalize_newlines(text)
    blocks = parse_normalized(norm)
    if omap is not None:
        for b in blocks:
            b.start = omap.to_source(b.start)
            b.end = omap.to_source(b.end, end=True)
        if blocks:
            blocks[0].start = 0
            blocks[-1].end = len(text)
    return blocks
