"""Embedders: text → unit vectors, from the bundled MiniLM, any embedding GGUF, or an HTTP endpoint.

Every embedder has a ``name`` that an index records; querying an index with another embedder
is refused (vectors of two models live in different spaces). ``embed_passages`` takes a cancel
event and a progress callback because a corpus takes minutes; ``embed_query`` is one short text.
"""
from __future__ import annotations

import concurrent.futures
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ctxfst_tui.core.retrieval.bundled_embedder import EmbedderUnavailable, bundled_digest, bundled_model_dir

Progress = Callable[[int, int], None]  # (texts embedded so far, total)


class EmbedCancelled(Exception):
    """The cancel event was set between two batches."""


class Embedder(Protocol):
    name: str  # what made the vectors: an index refuses vectors of another name
    dim: int
    source: str  # how to make it again (see embedder_for_index): "bundled", "gguf:PATH", "endpoint"

    def embed_passages(self, texts: Sequence[str], *, cancel: threading.Event | None = None,
                       progress: Progress | None = None) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def _pooled(embedding: Any) -> tuple[np.ndarray, bool]:
    """One vector from an answer's ``embedding`` and whether it came per token: a server running a
    model without pooling (llama.cpp with a completion GGUF) sends one vector per token, which are
    averaged as llama.cpp's mean pooling would."""
    vector = np.asarray(embedding, dtype=np.float32)
    per_token = vector.ndim == 2
    if per_token:
        vector = vector.mean(axis=0)
    if vector.ndim != 1 or not vector.size:
        raise ValueError(f"an embedding of shape {vector.shape}")
    return vector, per_token


def _batched(texts: Sequence[str], size: int) -> list[tuple[int, Sequence[str]]]:
    return [(i, texts[i:i + size]) for i in range(0, len(texts), size)]


class BundledEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) run by candding on the CPU."""

    batch_size = 32

    def __init__(self, folder: Path | None = None):
        self.folder = folder or bundled_model_dir()
        try:
            import candding
        except ImportError as exc:  # pragma: no cover - a hard dependency
            raise EmbedderUnavailable("candding is not installed (pip install candding)") from exc
        try:
            self._model = candding.TextEmbedding(str(self.folder), device="cpu")
        except Exception as exc:  # candding raises its own error type for a bad folder
            raise EmbedderUnavailable(f"could not load the embedding model in {self.folder}: {exc}") from None
        self.dim = int(self._model.dim)
        self.name = f"bundled:all-MiniLM-L6-v2:{bundled_digest()[:12]}"
        self.source = "bundled"

    def embed_passages(self, texts: Sequence[str], *, cancel: threading.Event | None = None,
                       progress: Progress | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start, batch in _batched(list(texts), self.batch_size):
            if cancel is not None and cancel.is_set():
                raise EmbedCancelled()
            out[start:start + len(batch)] = self._model.passage_embed(list(batch))
            if progress:
                progress(start + len(batch), len(texts))
        return _unit(out) if len(texts) else out

    def embed_query(self, text: str) -> np.ndarray:
        return _unit(self._model.query_embed([text]))[0]


class GgufEmbedder:
    """Any embedding GGUF through llama-cpp-python (``embedding=True``), after a self-test in a child."""

    def __init__(self, path: Path):
        from ctxfst_tui.core.llm import probe

        self.path = Path(path)
        if not self.path.is_file():
            raise EmbedderUnavailable(f"{self.path}: no such embedding model file")
        verdict = probe.run_embedding_probe(self.path)
        if not verdict.ok:
            raise EmbedderUnavailable(f"{self.path}: the embedding self-test {probe.describe(verdict)}")
        import llama_cpp

        self._lock = threading.Lock()
        from ctxfst_tui.core.llm.llama import _install_log_callback

        _install_log_callback()  # llama.cpp's log lines to Python logging, not onto the TUI's stderr
        self._llm = probe.load_embedding_llama(llama_cpp, str(self.path), n_ctx=512)
        self.dim = int(self._llm.n_embd())
        self.name = f"gguf:{self.path.name}:{probe.file_sha256(self.path)[:12]}"
        self.source = f"gguf:{self.path.resolve()}"

    def _embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            got = self._llm.embed(texts, normalize=True, truncate=True)
        return _unit(np.asarray(got, dtype=np.float32).reshape(len(texts), -1))

    def embed_passages(self, texts: Sequence[str], *, cancel: threading.Event | None = None,
                       progress: Progress | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start, batch in _batched(list(texts), 16):
            if cancel is not None and cancel.is_set():
                raise EmbedCancelled()
            out[start:start + len(batch)] = self._embed(list(batch))
            if progress:
                progress(start + len(batch), len(texts))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text])[0]


@dataclass
class EndpointOptions:
    url: str
    model: str = ""
    batch_size: int = 64
    in_flight: int = 4
    retries: int = 4
    timeout: float = 60.0
    api_key: str | None = None


class EndpointEmbedder:
    """Any OpenAI-compatible ``/v1/embeddings`` (llama.cpp server, vLLM, TEI, Ollama).

    Batches are sent several at a time (``in_flight``) so a GPU server stays busy; a 429, a 5xx or
    a dropped connection is retried with exponential backoff, a 4xx is reported at once.
    ``per_token``: the server answered one vector per token (no pooling); see :func:`_pooled`.
    """

    def __init__(self, options: EndpointOptions, *, client: Any = None):
        import httpx

        self.options = options
        base = options.url.rstrip("/")
        if not base.endswith("/embeddings"):
            base = base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")
        self.url = base
        headers = {"Authorization": f"Bearer {options.api_key}"} if options.api_key else {}
        self._client = client or httpx.Client(timeout=options.timeout, headers=headers)
        self.per_token = False
        probe = self._post(["dimension probe"])
        self.dim = int(probe.shape[1])
        self.name = f"endpoint:{options.model or 'default'}@{options.url}"
        self.source = "endpoint"

    def _post(self, texts: list[str]) -> np.ndarray:
        import httpx

        body: dict[str, Any] = {"input": texts}
        if self.options.model:
            body["model"] = self.options.model
        delay = 0.5
        for attempt in range(self.options.retries + 1):
            try:
                r = self._client.post(self.url, json=body)
            except httpx.HTTPError as exc:
                if attempt == self.options.retries:
                    raise EmbedderUnavailable(f"{self.url}: {type(exc).__name__}: {exc}") from None
            else:
                if r.status_code == 200:
                    try:
                        data = sorted(r.json()["data"], key=lambda d: d.get("index", 0))
                        pooled = [_pooled(d["embedding"]) for d in data]
                        self.per_token = self.per_token or any(flag for _, flag in pooled)
                        return _unit(np.stack([v for v, _ in pooled]))
                    except (ValueError, KeyError, TypeError) as exc:
                        raise EmbedderUnavailable(f"{self.url}: not an embeddings answer ({exc})") from None
                if r.status_code != 429 and r.status_code < 500 or attempt == self.options.retries:
                    raise EmbedderUnavailable(f"{self.url}: HTTP {r.status_code}: {r.text[:200].strip()}")
            time.sleep(delay)
            delay = min(delay * 2, 8.0)
        raise AssertionError("unreachable")

    def embed_passages(self, texts: Sequence[str], *, cancel: threading.Event | None = None,
                       progress: Progress | None = None) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        done = 0
        # a server without pooling lets the texts of one request see each other's tokens (llama-cpp-python
        # 0.3.36 with a completion GGUF): it gets one text per request, still several in flight
        batches = _batched(texts, 1 if self.per_token else self.options.batch_size)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, self.options.in_flight)) as pool:
            pending: dict[concurrent.futures.Future, tuple[int, int]] = {}
            queue = list(batches)
            while queue or pending:
                while queue and len(pending) < self.options.in_flight:
                    if cancel is not None and cancel.is_set():
                        queue.clear()
                        break
                    start, batch = queue.pop(0)
                    pending[pool.submit(self._post, list(batch))] = (start, len(batch))
                if not pending:
                    break
                finished, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for fut in finished:
                    start, n = pending.pop(fut)
                    out[start:start + n] = fut.result()
                    done += n
                    if progress:
                        progress(done, len(texts))
        if cancel is not None and cancel.is_set():
            raise EmbedCancelled()
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._post([text])[0]


def make_embedder(spec: str, *, endpoint: str | None = None, model: str | None = None) -> Embedder | None:
    """``bundled`` (default), ``none`` (full-text and entity signals only), ``gguf:FILE``, ``endpoint``."""
    spec = (spec or "bundled").strip()
    if spec == "none":
        return None
    if spec == "bundled":
        return BundledEmbedder()
    if spec.startswith("gguf:"):
        return GgufEmbedder(Path(spec[5:]).expanduser())
    if spec == "endpoint":
        if not endpoint:
            raise EmbedderUnavailable("--embed endpoint needs --endpoint URL")
        return EndpointEmbedder(EndpointOptions(url=endpoint, model=model or ""))
    raise EmbedderUnavailable(f"unknown embedder {spec!r}: use bundled, none, gguf:FILE or endpoint")


def embedder_for_index(meta: dict | None, *, endpoint: str | None = None, model: str | None = None) -> Embedder | None:
    """The embedder an index was built with, made again from its ``meta`` row, so that querying or
    updating it never mixes vectors of two models. No index yet: the bundled one. ``endpoint`` /
    ``model``: an endpoint index's server reached at another address or model name.

    Raises EmbedderUnavailable naming what the index needs when it cannot be made here (a GGUF
    moved or changed, an index from before the source was recorded)."""
    if not meta:
        return make_embedder("bundled")
    name = str(meta.get("embedder") or "none")
    source = str(meta.get("embedder_source") or "")
    if name == "none":
        return None
    if name.startswith("bundled:"):
        return make_embedder("bundled")
    if name.startswith("endpoint:"):  # endpoint:MODEL@URL
        recorded, _, url = name[len("endpoint:"):].partition("@")
        return EndpointEmbedder(EndpointOptions(url=endpoint or url,
                                                model=model or ("" if recorded == "default" else recorded)))
    if name.startswith("gguf:") and source.startswith("gguf:"):
        made = GgufEmbedder(Path(source[len("gguf:"):]))
        if made.name != name:
            raise EmbedderUnavailable(f"the index was built with {name}, but {made.path} is now {made.name}")
        return made
    raise EmbedderUnavailable(f"the index was built with {name}; give the same embedder to use it")
