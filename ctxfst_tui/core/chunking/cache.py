"""What the chunker keeps between calls: analysed documents (least recently used out), and the
collector paused while chunking."""
from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from contextlib import contextmanager

from ctxfst_tui.core.chunking.blocks import ParsedDoc

__all__ = ["DocCache", "clear_caches", "default_cache", "gc_paused"]


class DocCache:
    """Parsed and counted documents by text and normalisation options, least recently used out.

    Bounded by a number of documents and by their total size in chars.
    """

    def __init__(self, size: int = 1024, max_chars: int = 32_000_000):
        self.size = size
        self.max_chars = max_chars
        self._items: OrderedDict[tuple, ParsedDoc] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> ParsedDoc | None:
        with self._lock:
            doc = self._items.get(key)
            if doc is not None:
                self._items.move_to_end(key)
            return doc

    def put(self, key: tuple, doc: ParsedDoc) -> None:
        if self.size <= 0 or len(key[0]) > self.max_chars:
            return
        with self._lock:
            if key in self._items:
                self._chars -= len(key[0])
            self._items[key] = doc
            self._items.move_to_end(key)
            self._chars += len(key[0])
            while self._items and (len(self._items) > self.size or self._chars > self.max_chars):
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old[0])

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._items)


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextmanager
def gc_paused():
    """No cyclic garbage collection while chunking (other threads' chunkings included).

    Chunking allocates many small containers (parser tokens, blocks, pieces) and creates no
    reference cycles: everything it drops is freed by reference counting, so the collector's
    passes over the young objects would find nothing and only cost time. The collector is
    switched back on as it was when the last chunking ends.
    """
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


default_cache = DocCache()


def clear_caches() -> None:
    """Forget cached parses and token counts (for cold measurements)."""
    default_cache.clear()
    from ctxfst_tui.core.chunking import tokens as _tokens

    for counter in list(_tokens._counters.values()):
        counter.clear_cache()
