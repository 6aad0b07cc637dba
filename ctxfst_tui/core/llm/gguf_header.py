"""The key-value section of a GGUF file's header, read without llama.cpp and without reading the file.

Model discovery lists GGUF files by the dozen, some of them many gigabytes: it needs their
architecture, name, training context and whether ``tokenizer.chat_template`` is set, and nothing
else. This reader walks the header's key-value pairs only (the tensor data is never touched), skips
values it does not keep (a 256k-entry token list is skipped by seeking over each string), and turns
any damage — not GGUF, an unknown value type, a length past the end of the file — into one
:class:`GGUFError` line.

Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (version 2 and 3; little- or
big-endian).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAGIC = b"GGUF"
MAX_VERSION = 255  # versions are small numbers (3 in 2026); a larger field is not a version
STRING, ARRAY = 8, 9
SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
MAX_KEYS = 1 << 20  # more pairs than any real model has: the counts are garbage
MAX_KEPT_STRING = 1 << 16  # general.name and friends are short; longer values are skipped, not read
CHAT_TEMPLATE = "tokenizer.chat_template"

__all__ = ["GGUFError", "GGUFHeader", "read_gguf_header", "MAGIC"]


class GGUFError(ValueError):
    """The file is not a GGUF file, or its header is cut short or damaged (one line, no path)."""


@dataclass(frozen=True)
class GGUFHeader:
    """What discovery shows of a GGUF: ``chat_template`` is True when ``tokenizer.chat_template``
    is a non-empty string."""

    version: int
    tensors: int
    keys: int
    architecture: str = ""
    name: str = ""
    context_length: int | None = None
    chat_template: bool = False
    split_count: int | None = None  # ``split.count``: the model is cut into that many files


class _Reader:
    def __init__(self, fh: BinaryIO, size: int, order: str) -> None:
        self.fh = fh
        self.size = size
        self.order = order

    def _left(self) -> int:
        return self.size - self.fh.tell()

    def read(self, n: int) -> bytes:
        if n > self._left():
            raise GGUFError(f"cut short: {n} bytes wanted at byte {self.fh.tell()}, the file ends at {self.size}")
        return self.fh.read(n)

    def skip(self, n: int) -> None:
        if n > self._left():
            raise GGUFError(f"cut short: {n} bytes wanted at byte {self.fh.tell()}, the file ends at {self.size}")
        self.fh.seek(n, os.SEEK_CUR)

    def scalar(self, kind: int) -> object:
        fmt = self.order + SCALAR_FORMATS[kind]
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def u32(self) -> int:
        return struct.unpack(self.order + "I", self.read(4))[0]

    def u64(self) -> int:
        return struct.unpack(self.order + "Q", self.read(8))[0]

    def string(self, keep: bool) -> str | None:
        length = self.u64()
        if not keep or length > MAX_KEPT_STRING:
            self.skip(length)
            return None
        return self.read(length).decode("utf-8", "replace")

    def skip_strings(self, count: int) -> None:
        """Skip ``count`` strings (a vocabulary: 256k of them) walking a block in memory: one read and
        one seek per string would cost half a second per model."""
        fmt = self.order + "Q"
        buf, pos = b"", 0
        for _ in range(count):
            if len(buf) - pos < 8:
                buf, pos = buf[pos:] + self.fh.read(1 << 20), 0
                if len(buf) < 8:
                    raise GGUFError(f"cut short: the file ends at byte {self.size}, inside a string list")
            pos += 8 + struct.unpack_from(fmt, buf, pos)[0]
            if pos > len(buf):  # a string longer than what is in memory: seek past its end
                self.skip(pos - len(buf))
                buf, pos = b"", 0
        self.fh.seek(pos - len(buf), os.SEEK_CUR)  # give back what was read past the list

    def value(self, kind: int, keep: bool) -> object:
        """The value of type ``kind`` (None when skipped: strings not kept, every array)."""
        if kind in SCALAR_FORMATS:
            return self.scalar(kind)
        if kind == STRING:
            return self.string(keep)
        if kind == ARRAY:
            item, count = self.u32(), self.u64()
            if item in SCALAR_FORMATS:
                self.skip(count * struct.calcsize(SCALAR_FORMATS[item]))
            elif item in (STRING, ARRAY):
                if count > self._left():  # every item takes at least one byte
                    raise GGUFError(f"damaged: an array of {count} items at byte {self.fh.tell()} cannot fit")
                if item == STRING:
                    self.skip_strings(count)
                else:
                    for _ in range(count):
                        self.value(item, False)
            else:
                raise GGUFError(f"damaged: unknown array item type {item} at byte {self.fh.tell()}")
            return None
        raise GGUFError(f"damaged: unknown value type {kind} at byte {self.fh.tell()}")


def read_gguf_header(path: str | os.PathLike[str]) -> GGUFHeader:
    """The header of the GGUF at ``path``; :class:`GGUFError` (one line) when it is not one or is
    damaged, :class:`OSError` when it cannot be opened."""
    path = Path(path)
    with open(path, "rb", buffering=1 << 16) as fh:
        size = os.fstat(fh.fileno()).st_size
        start = fh.read(8)
        if len(start) < 4 or start[:4] != MAGIC:
            raise GGUFError(f"not a GGUF file (it starts with {start[:4]!r})")
        if len(start) < 8:
            raise GGUFError(f"cut short: the file ends at byte {size}, inside the header")
        order = "<"
        version = struct.unpack("<I", start[4:8])[0]
        if version not in (2, 3) and struct.unpack(">I", start[4:8])[0] in (2, 3):
            order, version = ">", struct.unpack(">I", start[4:8])[0]
        if version == 1:
            raise GGUFError("GGUF version 1, which llama.cpp no longer reads")
        if version > MAX_VERSION:  # "GGUF" then text: a version no format ever had
            raise GGUFError(f"not a GGUF file (it starts with {start!r}: no GGUF version)")
        if version not in (2, 3):
            raise GGUFError(f"unknown GGUF version {version}")
        reader = _Reader(fh, size, order)
        tensors, keys = reader.u64(), reader.u64()
        if keys > MAX_KEYS:
            raise GGUFError(f"damaged: the header claims {keys} key-value pairs")
        values: dict[str, object] = {}
        for _ in range(keys):
            key = reader.string(True) or ""
            kind = reader.u32()
            keep = key.startswith("general.") or key.endswith(".context_length") or key in (CHAT_TEMPLATE, "split.count")
            if key == CHAT_TEMPLATE and kind == STRING:  # kept as "present", whatever its length
                length = reader.u64()
                reader.skip(length)
                values[key] = length > 0
                continue
            value = reader.value(kind, keep)
            if keep and value is not None:
                values[key] = value
    arch = values.get("general.architecture")
    arch = arch if isinstance(arch, str) else ""
    name = values.get("general.name")
    context = values.get(f"{arch}.context_length")
    split = values.get("split.count")
    return GGUFHeader(
        version, tensors, keys, arch, name if isinstance(name, str) else "",
        int(context) if isinstance(context, int) and not isinstance(context, bool) else None,
        values.get(CHAT_TEMPLATE) is True,
        int(split) if isinstance(split, int) and not isinstance(split, bool) else None,
    )
