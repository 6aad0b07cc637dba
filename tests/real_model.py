"""The guard every test of the real model goes through: the model's self-test runs in a child
process first (:mod:`ctxfst_tui.core.llm.probe`), so a native crash of llama.cpp on this machine
fails those tests with the probe's one-line message instead of ending the whole run with
``Fatal Python error: Segmentation fault``."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from ctxfst_tui.core.llm import ModelUnavailable
from ctxfst_tui.core.llm.probe import ensure_trusted


def require_llama() -> None:
    """Skip when llama-cpp-python is not installed (found without importing it)."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not installed")


def trusted(model: Any, hash_cache: Any = None) -> Any:
    """``model`` (a GGUF path or a backend with ``self_test``) once its self-test passed; else fail.
    ``hash_cache`` (a ``CompletionCache``) keeps a GGUF path's sha256 for the next call."""
    require_llama()
    try:
        if isinstance(model, (str, Path)):
            ensure_trusted(Path(model), hash_cache=hash_cache)
        else:
            getattr(model, "inner", model).self_test()
    except ModelUnavailable as exc:
        pytest.fail(f"the model cannot run here: {exc}", pytrace=False)
    return model


# One llama.cpp thread in tests: ggml's threads spin at each barrier, so two of them on two cores
# shared with other tests slow every token many times over; one thread keeps token times steady
# under load, which the cancel and latency bounds need.
MODEL_THREADS = 1

