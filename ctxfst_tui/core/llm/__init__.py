"""Model runtime: the :class:`Backend` protocol, the in-process llama.cpp backend (default,
bundled Gemma 3 270M), OpenAI-compatible endpoints and a persistent completion cache.

llama_cpp is imported only when a llama backend loads its model, so importing this package
is cheap.

Typical use::

    backend = make_backend()                                   # bundled model, cached
    backend = make_backend(model_path="qwen2.5-3b-instruct-q4_k_m.gguf", n_ctx=8192)
    backend = make_backend(endpoint="http://gpu-box:8000/v1", model="Qwen/Qwen2.5-7B-Instruct")
    completion = backend.complete(prompt, max_tokens=120, cancel=event)
"""
from __future__ import annotations

from typing import Any

from ctxfst_tui.core.llm.base import (
    Backend,
    Cancelled,
    Completion,
    ContextOverflow,
    EndpointError,
    GenerationDefaults,
    ModelError,
    ModelNotFound,
    ModelUnavailable,
)
from ctxfst_tui.core.llm.cache import CachedBackend, CompletionCache, default_cache, default_cache_path

__all__ = [
    "Backend", "Cancelled", "Completion", "ContextOverflow", "EndpointError", "GenerationDefaults",
    "ModelError", "ModelNotFound", "ModelUnavailable", "CachedBackend", "CompletionCache", "default_cache", "default_cache_path",
    "LlamaBackend", "OpenAIBackend", "make_backend", "backend_info",
]


def __getattr__(name: str) -> Any:
    if name == "LlamaBackend":
        from ctxfst_tui.core.llm.llama import LlamaBackend

        return LlamaBackend
    if name == "OpenAIBackend":
        from ctxfst_tui.core.llm.openai import OpenAIBackend

        return OpenAIBackend
    raise AttributeError(name)


def make_backend(
    *,
    model_path: str | None = None,
    endpoint: str | None = None,
    model: str | None = None,
    api: str | None = None,
    api_key: str | None = None,
    n_ctx: int | None = None,
    n_threads: int | None = None,
    max_tokens: int | None = None,
    temperature: float = 0.0,
    timeout: float | None = None,
    retries: int | None = None,
    concurrency: int | None = None,
    cache: bool | CompletionCache = True,
) -> Any:
    """The backend the CLI/app options describe, wrapped in the completion cache unless ``cache=False``.

    ``endpoint`` selects the ``openai`` backend (``model`` names the served model); otherwise
    the ``llama`` backend runs ``model_path`` (or ``model`` when it ends in ``.gguf``), or the
    bundled model when neither is given.
    """
    if endpoint:
        from ctxfst_tui.core.llm.openai import OpenAIBackend

        kw: dict[str, Any] = {"api": api, "api_key": api_key, "temperature": temperature}
        if n_ctx:
            kw["context_size"] = n_ctx
        if max_tokens:
            kw["max_tokens"] = max_tokens
        if timeout is not None:
            kw["timeout"] = timeout
        if retries is not None:
            kw["retries"] = retries
        if concurrency:
            kw["concurrency"] = concurrency
        inner: Any = OpenAIBackend(endpoint, model, **kw)
    else:
        from ctxfst_tui.core.llm.llama import LlamaBackend

        if model_path is None and model and model.lower().endswith(".gguf"):
            model_path = model
        elif model is not None and model_path is None:
            raise ModelError(f"--model {model!r} is not a .gguf file; to use a served model give --endpoint URL as well")
        kw = {"temperature": temperature}
        if n_ctx:
            kw["n_ctx"] = n_ctx
        if n_threads:
            kw["n_threads"] = n_threads
        if max_tokens:
            kw["max_tokens"] = max_tokens
        inner = LlamaBackend(model_path, **kw)
    if cache is False:
        return inner
    return CachedBackend(inner, cache if isinstance(cache, CompletionCache) else None)


def backend_info(backend: Any) -> dict[str, Any]:
    """What a model-settings screen shows: backend, model, context size, threads, ..."""
    inner = getattr(backend, "inner", backend)
    info = inner.info() if hasattr(inner, "info") else {"backend": getattr(inner, "name", "?")}
    if isinstance(backend, CachedBackend):
        info["cache"] = str(backend.cache.path)
        info["model_calls"] = backend.calls
        info["cache_hits"] = backend.hits
    return info
