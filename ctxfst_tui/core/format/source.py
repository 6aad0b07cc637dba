"""Decoding a file's bytes into text, and mapping offsets to lines, columns and bytes.

Every span the core reports (frontmatter entries, chunk tags) is computed here, so the
UI can jump to the exact place and the writer can replace exactly the right lines.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

BOM = "\ufeff"

# What ends a line: exactly what YAML 1.1 (PyYAML and libyaml, whose marks the frontmatter
# line map is built from) calls a line break. Not Python's str.splitlines, which also breaks
# on \v, \f and \x1c-\x1e; not a bare "\n", which misses CR-only files and NEL/LS/PS.
LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
_RARE_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


def _break_ends(text: str) -> list[int]:
    """Offsets just past every line break of ``text``, in order."""
    if not any(c in text for c in _RARE_BREAKS):  # the common case: str.find is cheaper than the regex
        out, pos = [], text.find("\n")
        while pos != -1:
            out.append(pos + 1)
            pos = text.find("\n", pos + 1)
        return out
    return [m.end() for m in LINE_BREAK.finditer(text)]


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """``text`` cut into lines at YAML's line breaks (like str.splitlines: no empty last line)."""
    out, prev = [], 0
    for end in _break_ends(text):
        out.append(text[prev:end] if keepends else strip_break(text[prev:end]))
        prev = end
    if prev < len(text):
        out.append(text[prev:])
    return out


def strip_break(line: str) -> str:
    """``line`` without the one line break that ends it, if any."""
    if line.endswith("\r\n"):
        return line[:-2]
    if line and line[-1] in "\n\r\x85\u2028\u2029":
        return line[:-1]
    return line


def ends_with_break(text: str) -> bool:
    return bool(text) and text[-1] in "\n\r\x85\u2028\u2029"


class DecodeProblem(Exception):
    """The bytes are not a text document we can read; ``line`` is 1-based (0 = whole file)."""

    def __init__(self, rule: str, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.rule = rule
        self.message = message
        self.line = line
        self.column = column


# Byte-order marks of the other Unicode encodings; UTF-32 first (its LE mark starts like UTF-16's).
UNICODE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32", "utf-32"),
    (b"\x00\x00\xfe\xff", "UTF-32", "utf-32"),
    (b"\xff\xfe", "UTF-16", "utf-16"),
    (b"\xfe\xff", "UTF-16", "utf-16"),
)


def unicode_bom(raw: bytes) -> tuple[str, str] | None:
    """(name, Python codec) of the UTF-16/UTF-32 byte-order mark ``raw`` starts with, if any."""
    for mark, name, codec in UNICODE_BOMS:
        if raw.startswith(mark):
            return name, codec
    return None


def decode(raw: bytes) -> tuple[str, bool]:
    """Return (text without BOM, had_bom); raise DecodeProblem for empty, binary, UTF-16/32 or
    non-UTF-8 input (never rewritten in another encoding: the user converts it)."""
    if not raw.strip():
        raise DecodeProblem("file-empty", "the file is empty" if not raw else "the file holds only whitespace")
    other = unicode_bom(raw)
    if other is not None:
        raise DecodeProblem("file-encoding", f"the file is {other[0]} text: save it as UTF-8", 1, 1)
    if b"\x00" in raw[:8192]:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise DecodeProblem("file-binary", "the file is binary (it contains NUL bytes), not a text document", line)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DecodeProblem(
            "file-encoding",
            f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at line {line}, column {column})",
            line,
            column,
        ) from None
    had_bom = text.startswith(BOM)
    if had_bom:
        text = text[1:]
        if not text.strip():
            raise DecodeProblem("file-empty", "the file holds only a byte-order mark")
    return text, had_bom


def detect_newline(text: str) -> str:
    """The file's dominant line ending (LF, CRLF or a lone CR), kept on write-back."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    if cr > lf and cr > crlf:
        return "\r"
    return "\r\n" if crlf > lf else "\n"


@dataclass(frozen=True)
class Span:
    """A region of the source: char offsets into the decoded text, bytes into the file, 1-based line/column."""

    start: int
    end: int
    line: int
    column: int
    end_line: int
    end_column: int
    byte_start: int
    byte_end: int


class LineIndex:
    """Maps char offsets of a text to (line, column) and to byte offsets in the encoded file.

    Lines end at YAML's line breaks (``LINE_BREAK``), so a line number here is the line
    number PyYAML's marks give, in the frontmatter and in the body alike.
    """

    def __init__(self, text: str, byte_offset: int = 0):
        self.text = text
        self.line_starts = [0] + _break_ends(text)
        self._byte_offset = byte_offset  # e.g. 3 for a BOM
        self._line_byte_starts: list[int] | None = None

    @property
    def line_count(self) -> int:
        return len(self.line_starts)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def position(self, offset: int) -> tuple[int, int]:
        line = self.line_of(offset)
        return line, offset - self.line_starts[line - 1] + 1

    def offset_of_line(self, line: int) -> int:
        """Char offset of the start of 1-based ``line`` (len(text) past the end)."""
        if line - 1 >= len(self.line_starts):
            return len(self.text)
        return self.line_starts[line - 1]

    def byte_of(self, offset: int) -> int:
        if self._line_byte_starts is None:
            starts, total, prev = [], self._byte_offset, 0
            for s in self.line_starts:
                total += len(self.text[prev:s].encode("utf-8"))
                starts.append(total)
                prev = s
            self._line_byte_starts = starts
        line = self.line_of(offset)
        start = self.line_starts[line - 1]
        return self._line_byte_starts[line - 1] + len(self.text[start:offset].encode("utf-8"))

    def span(self, start: int, end: int) -> Span:
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        return Span(start, end, line, col, end_line, end_col, self.byte_of(start), self.byte_of(end))

    def line_text(self, line: int) -> str:
        start = self.offset_of_line(line)
        end = self.offset_of_line(line + 1)
        return strip_break(self.text[start:end])
