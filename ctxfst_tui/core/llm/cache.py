"""A persistent cache of completions, so a job re-run on unchanged input makes no model call.

Entries live in one SQLite file, by default ``<user cache dir>/ctxfst-tui/completions.sqlite``
(``CTXFST_TUI_COMPLETION_CACHE`` overrides the path). The key is the sha256 of (backend name,
model id, prompt, generation parameters); the model id of a GGUF is the file's sha256, itself
cached by (path, mtime, size) in the same file so a 250 MB model is hashed once.

:class:`CachedBackend` wraps any backend: a hit returns the stored text with
``cached=True`` and counts in ``hits``; a miss calls the model (``calls``) and stores the
result unless the call was cancelled or failed.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import platformdirs

from ctxfst_tui.core.llm.base import Backend, Completion, TokenCallback, cache_params

ENV_CACHE = "CTXFST_TUI_COMPLETION_CACHE"
SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS file_hashes (
    path TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL
);
"""


def default_cache_path() -> Path:
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("ctxfst-tui")) / "completions.sqlite"


class CompletionCache:
    """Thread-safe SQLite store of completions and of file hashes."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=10, check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.DatabaseError:  # pragma: no cover - e.g. a network file system
                pass
            conn.executescript(SCHEMA)
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # ------------------------------------------------------------ completions
    @staticmethod
    def key(backend: str, model: str, prompt: str, params: dict[str, Any]) -> str:
        blob = json.dumps({"backend": backend, "model": model, "prompt": prompt, "params": params},
                          sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db().execute(
                "SELECT text, prompt_tokens, completion_tokens, finish_reason FROM completions WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return Completion(row[0], row[1], row[2], row[3], cached=True)

    def put(self, key: str, backend: str, model: str, c: Completion) -> None:
        with self._lock:
            db = self._db()
            db.execute(
                "INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, backend, model, c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason, time.time()),
            )
            db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db().execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def clear(self) -> None:
        with self._lock:
            db = self._db()
            db.execute("DELETE FROM completions")
            db.commit()

    # ------------------------------------------------------------ file hashes
    def file_sha256(self, path: str | os.PathLike) -> str:
        """sha256 of a file, recomputed only when its path, mtime or size changed."""
        p = Path(path).resolve()
        st = p.stat()
        with self._lock:
            row = self._db().execute("SELECT mtime_ns, size, sha256 FROM file_hashes WHERE path = ?", (str(p),)).fetchone()
        if row is not None and row[0] == st.st_mtime_ns and row[1] == st.st_size:
            return row[2]
        h = hashlib.sha256()
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        digest = h.hexdigest()
        with self._lock:
            db = self._db()
            db.execute("INSERT OR REPLACE INTO file_hashes VALUES (?, ?, ?, ?)", (str(p), st.st_mtime_ns, st.st_size, digest))
            db.commit()
        return digest


_default: CompletionCache | None = None
_default_lock = threading.Lock()


def default_cache() -> CompletionCache:
    """The process-wide cache at :func:`default_cache_path` (re-opened if the env var changed)."""
    global _default
    with _default_lock:
        if _default is None or _default.path != default_cache_path():
            _default = CompletionCache()
        return _default


class CachedBackend:
    """A backend whose completions are served from a :class:`CompletionCache` when possible.

    ``calls`` counts real model calls, ``hits`` the calls answered by the cache.
    Attributes other than ``complete`` are those of the wrapped backend.
    """

    def __init__(self, inner: Backend, cache: CompletionCache | None = None):
        self.inner = inner
        self.cache = cache if cache is not None else default_cache()
        self.calls = 0
        self.hits = 0
        self._count_lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def context_size(self) -> int:
        return self.inner.context_size

    @property
    def chat(self) -> bool:
        return self.inner.chat

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def cache_key(self, prompt: str, *, max_tokens: int | None = None, stop: Sequence[str] | None = None,
                  temperature: float | None = None) -> str:
        params = {
            "max_tokens": max_tokens, "stop": list(stop) if stop is not None else None,
            "temperature": temperature, "chat": self.inner.chat, **cache_params(self.inner),
        }
        return CompletionCache.key(self.inner.name, self.inner.model_id, prompt, params)

    def complete(self, prompt: str, *, max_tokens: int | None = None, stop: Sequence[str] | None = None,
                 temperature: float | None = None, cancel=None, on_token: TokenCallback | None = None) -> Completion:
        key = self.cache_key(prompt, max_tokens=max_tokens, stop=stop, temperature=temperature)
        hit = self.cache.get(key)
        if hit is not None:
            with self._count_lock:
                self.hits += 1
            if on_token is not None and hit.text:
                on_token(hit.text)
            return hit
        with self._count_lock:
            self.calls += 1
        result = self.inner.complete(prompt, max_tokens=max_tokens, stop=stop, temperature=temperature,
                                     cancel=cancel, on_token=on_token)
        self.cache.put(key, self.inner.name, self.inner.model_id, result)
        return result
