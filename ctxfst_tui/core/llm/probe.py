"""The model self-test: a one-token completion in a child process before llama.cpp is trusted in-process.

Native code can always crash: a CPU the build was not made for (ggml's AMX kernel segfaults on
current Xeons when built with ``-march=native``), a corrupt GGUF, the OOM killer. In-process, such
a crash kills the workbench with every unsaved edit. So before the first in-process use of a GGUF
with a given llama.cpp build, :func:`ensure_trusted` runs ``python -m ctxfst_tui.core.llm.probe
MODEL`` and judges how it ended: ``ok``; ``crashed`` (killed by a signal, named: SIGSEGV, SIGILL,
SIGBUS, SIGKILL from the OOM killer…); ``hang`` (no answer within the timeout: the child is killed);
``error`` (a non-zero exit, with the child's last stderr line). Anything but ``ok`` raises
:class:`ModelUnavailable` with one line naming the cause and the way out.

Verdicts are kept in ``probe.json`` in the user cache dir (``CTXFST_TUI_PROBE_CACHE`` names another
file), keyed by the llama_cpp version, the sha256 of its shared libraries, the model's sha256 and the
CPU flags, so the test costs about a second once per model, build and machine. A hang is not kept
(a later try, maybe with a longer ``CTXFST_TUI_PROBE_TIMEOUT``, gets its chance).

``CTXFST_TUI_PROBE_COMMAND`` replaces the child's command (split like a shell line, the model path
appended): tests point it at scripts that really kill themselves with SIGSEGV, hang or fail. The
command is part of the verdict key, so such verdicts never stand for the real probe.

llama_cpp is never imported here in the parent: its version and library come from package metadata
and the files on disk, so even a build that crashes when loaded is judged from outside.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import platformdirs

from ctxfst_tui.core.llm.base import Cancelled, ModelError, ModelUnavailable
from ctxfst_tui.core.safe_write import write_text

ENV_COMMAND = "CTXFST_TUI_PROBE_COMMAND"
ENV_TIMEOUT = "CTXFST_TUI_PROBE_TIMEOUT"
ENV_CACHE = "CTXFST_TUI_PROBE_CACHE"
DEFAULT_TIMEOUT = 60.0
PROBE_VERSION = 2  # bump when what the child checks changes: old verdicts no longer count
MAX_VERDICTS = 64
WAY_OUT = "rebuild with `make rebuild-llama`, or use --endpoint URL"
_LIB_SUFFIXES = (".so", ".dylib", ".dll")

__all__ = [
    "ModelUnavailable", "Verdict", "LlamaBuild", "llama_build", "cpu_flags", "probe_cache_path", "verdict_key",
    "cached_verdict", "kept_verdicts", "describe", "run_probe", "self_test", "ensure_trusted", "preflight", "forget", "system_info",
    "file_sha256", "run_embedding_probe", "EMBEDDING",
]
COMPLETION = "completion"
EMBEDDING = "embedding"  # the child loads the GGUF with ``embedding=True`` and embeds one word


# ---------------------------------------------------------------- what a verdict is about


@dataclass(frozen=True)
class LlamaBuild:
    """The installed llama-cpp-python, found without importing it."""

    version: str
    package_dir: Path
    libraries: tuple[Path, ...]  # the shared libraries under llama_cpp/lib, sorted


def llama_build() -> LlamaBuild:
    """The llama_cpp package on disk; :class:`ModelError` when it is not installed."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("llama-cpp-python is not installed (pip install llama-cpp-python), or use --endpoint URL")
    package_dir = Path(list(spec.submodule_search_locations)[0])
    try:
        version = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    lib_dir = package_dir / "lib"
    found = sorted(p for p in lib_dir.iterdir() if p.is_file() and any(s in p.name for s in _LIB_SUFFIXES)) \
        if lib_dir.is_dir() else []
    libs = [p for p in found if not p.is_symlink()] or found  # libllama.so -> .so.0 -> .so.0.5.0: each file once
    return LlamaBuild(version, package_dir, tuple(libs))


def library_names(build: LlamaBuild) -> list[str]:
    """The libraries by their shortest name (a wheel holds libllama.so, .so.0 and .so.0.5.0 as copies)."""
    shortest: dict[str, str] = {}
    for lib in build.libraries:
        stem = lib.name
        for suffix in _LIB_SUFFIXES:
            stem = stem.split(suffix)[0]
        if stem not in shortest or len(lib.name) < len(shortest[stem]):
            shortest[stem] = lib.name
    return sorted(shortest.values())


def _sha256(path: Path, hash_cache: Any) -> str:
    if hash_cache is not None:
        return hash_cache.file_sha256(path)
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: Path, hash_cache: Any = None) -> str:
    """The sha256 of a file (a model's identity in verdict keys and in a retrieval index's embedder name)."""
    return _sha256(Path(path), hash_cache)


def libraries_sha256(build: LlamaBuild, hash_cache: Any = None) -> str:
    """One sha256 over every shared library of the build (ggml's CPU kernels live beside libllama)."""
    h = hashlib.sha256()
    for lib in build.libraries:
        h.update(f"{lib.name}\0{_sha256(lib, hash_cache)}\n".encode())
    return h.hexdigest()


def cpu_flags() -> str:
    """The CPU's feature flags (``/proc/cpuinfo``), else what the platform says about the CPU."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return " ".join(sorted(value.split()))
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor()}".strip()


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def probe_cache_path() -> Path:
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("ctxfst-tui")) / "probe.json"


def probe_timeout(timeout: float | None = None) -> float:
    if timeout is not None:
        return float(timeout)
    try:
        value = float(os.environ.get(ENV_TIMEOUT, "") or DEFAULT_TIMEOUT)
    except ValueError:
        value = DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


def probe_command(model: Path, mode: str = COMPLETION) -> list[str]:
    """The child's argv: ``CTXFST_TUI_PROBE_COMMAND`` + MODEL, or this Python running this module
    (``--embedding`` before MODEL for the embedding self-test)."""
    flags = ["--embedding"] if mode == EMBEDDING else []
    override = os.environ.get(ENV_COMMAND)
    if override:
        return [*shlex.split(override), *flags, str(model)]
    return [sys.executable, "-m", "ctxfst_tui.core.llm.probe", *flags, str(model)]


def key_parts(model: Path, hash_cache: Any = None, mode: str = COMPLETION) -> dict[str, str]:
    """What a verdict depends on (the mode only when not the completion test, so its keys stay as
    they were). Raises :class:`ModelError` when llama-cpp-python is missing."""
    build = llama_build()
    parts = {
        "probe": str(PROBE_VERSION),
        "llama_cpp": build.version,
        "libraries_sha256": libraries_sha256(build, hash_cache),
        "model_sha256": _sha256(Path(model), hash_cache),
        "cpu_flags_sha256": hashlib.sha256(cpu_flags().encode()).hexdigest(),
        "command": os.environ.get(ENV_COMMAND, ""),
    }
    if mode != COMPLETION:
        parts["mode"] = mode
    return parts


def verdict_key(model: Path, hash_cache: Any = None, mode: str = COMPLETION) -> str:
    blob = json.dumps(key_parts(model, hash_cache, mode), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


# ---------------------------------------------------------------- verdicts


@dataclass
class Verdict:
    """How one self-test ended. ``outcome``: ``ok``, ``crashed``, ``hang`` or ``error``; ``message``:
    one line for the user (empty when ok); ``cached``: read from probe.json, no child ran."""

    outcome: str
    model: str
    message: str = ""
    signal: str | None = None
    seconds: float = 0.0
    checked: float = field(default_factory=time.time)
    system_info: str = ""
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("cached")
        d["seconds"] = round(self.seconds, 3)
        return d

    @classmethod
    def from_json(cls, data: Any) -> Verdict | None:
        if not isinstance(data, dict) or data.get("outcome") not in ("ok", "crashed", "hang", "error"):
            return None
        try:
            return cls(str(data["outcome"]), str(data.get("model", "")), str(data.get("message", "")),
                       data.get("signal") if isinstance(data.get("signal"), str) else None,
                       float(data.get("seconds", 0.0)), float(data.get("checked", 0.0)),
                       str(data.get("system_info", "")), cached=True)
        except (TypeError, ValueError):
            return None


def describe(verdict: Verdict | None) -> str:
    """The verdict in a few words, for a settings screen: ``ok (kept 2026-12-01 22:54)``,
    ``crashed (SIGSEGV)``, ``not run yet``…"""
    if verdict is None:
        return "not run yet"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(verdict.checked))
    if verdict.ok:
        return f"ok ({'kept' if verdict.cached else 'tested'} {when})"
    if verdict.outcome == "crashed":
        return f"crashed ({verdict.signal or 'a signal'})"
    if verdict.outcome == "hang":
        return "hung (stopped at the time limit; not kept, tried again next time)"
    return f"error: {verdict.message}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[-1] if lines else ""
    return line if len(line) <= 300 else line[:297] + "..."


def judge(model: Path, returncode: int | None, stdout: str, stderr: str, seconds: float, timeout: float) -> Verdict:
    """The verdict on a finished (or, ``returncode=None``, timed-out and killed) child."""
    name = Path(model).name
    if returncode is None:
        return Verdict("hang", str(model), f"llama.cpp did not finish a one-token test of {name} within {timeout:g} s "
                       f"(the test was stopped): {WAY_OUT} (or raise {ENV_TIMEOUT})", seconds=seconds)
    if returncode < 0:
        sig = _signal_name(-returncode)
        if sig == "SIGKILL":
            msg = (f"llama.cpp was killed (SIGKILL, out of memory?) running {name}: use a smaller model "
                   f"with --model, or use --endpoint URL")
        else:
            detail = _last_line(stderr) if sig == "SIGABRT" else ""
            msg = f"llama.cpp crashed ({sig}) running {name} on this CPU{': ' + detail if detail else ''}: {WAY_OUT}"
        return Verdict("crashed", str(model), msg, signal=sig, seconds=seconds)
    if returncode != 0:
        detail = _last_line(stderr) or _last_line(stdout) or f"exit status {returncode}"
        what = detail if detail.startswith("could not ") else f"could not run {name}: {detail}"
        return Verdict("error", str(model), f"llama.cpp {what}: use another model with --model, or use --endpoint URL",
                       seconds=seconds)
    info = ""
    for line in reversed(stdout.splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            info = str(data.get("system_info", ""))
            break
    return Verdict("ok", str(model), seconds=seconds, system_info=info)


POLL_SECONDS = 0.2  # how often a waiting parent looks at its cancel event


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover
            proc.kill()
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _run(argv: Sequence[str], timeout: float,
         cancel: threading.Event | None = None) -> tuple[int | None, str, str, float]:
    """Run ``argv`` in its own session; on timeout kill its whole process group. (returncode or None, out, err, s).
    A set ``cancel`` kills the group too (within :data:`POLL_SECONDS`) and raises :class:`Cancelled`."""
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=(os.name == "posix"))
    try:
        while True:
            left = deadline - time.monotonic()
            try:
                out, err = proc.communicate(timeout=max(0.0, min(POLL_SECONDS, left) if cancel is not None else left))
                code: int | None = proc.returncode
                break
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    raise Cancelled("cancelled during the model self-test") from None
                if time.monotonic() >= deadline:
                    _kill_group(proc)
                    out, err = proc.communicate()
                    code = None
                    break
    except BaseException:  # cancelled, ctrl+c in the CLI: the child (its own session) must not outlive us
        _kill_group(proc)
        proc.communicate()
        raise
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.perf_counter() - t0


def run_probe(model: Path, *, timeout: float | None = None, cancel: threading.Event | None = None,
              mode: str = COMPLETION) -> Verdict:
    """Run the self-test child on ``model`` now (no cache) and judge it; :class:`Cancelled` (the child's
    process group killed) when ``cancel`` is set meanwhile."""
    limit = probe_timeout(timeout)
    try:
        code, out, err, seconds = _run(probe_command(Path(model), mode), limit, cancel)
    except OSError as exc:
        return Verdict("error", str(model), f"the model self-test could not start: {exc}: use --endpoint URL")
    return judge(Path(model), code, out, err, seconds, limit)


# ---------------------------------------------------------------- probe.json


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    verdicts = data.get("verdicts") if isinstance(data, dict) else None
    return dict(verdicts) if isinstance(verdicts, dict) else {}


def _write_cache(path: Path, verdicts: dict[str, Any]) -> None:
    """Through ``core.safe_write`` (temp file + rename); a cache that cannot be written only costs another probe."""
    if len(verdicts) > MAX_VERDICTS:
        newest = sorted(verdicts.items(), key=lambda kv: kv[1].get("checked", 0) if isinstance(kv[1], dict) else 0)
        verdicts = dict(newest[-MAX_VERDICTS:])
    try:
        write_text(path, json.dumps({"version": 1, "verdicts": verdicts}, indent=1, sort_keys=True),
                   new_mode=0o600, parents=True)
    except OSError:
        pass


_lock = threading.Lock()  # one self-test at a time in this process: two jobs never probe the same model twice


def cached_verdict(model: Path, *, hash_cache: Any = None) -> Verdict | None:
    """The verdict kept for ``model`` with this build on this CPU, or None (never runs a child)."""
    key = verdict_key(Path(model), hash_cache)
    return Verdict.from_json(_read_cache(probe_cache_path()).get(key))


def kept_verdicts() -> dict[str, Verdict]:
    """Every verdict kept in probe.json, by key (none when the file is missing or damaged); never runs a child."""
    kept = {key: Verdict.from_json(data) for key, data in _read_cache(probe_cache_path()).items()}
    return {key: v for key, v in kept.items() if v is not None}


def self_test(model: Path, *, timeout: float | None = None, hash_cache: Any = None, refresh: bool = False,
              cancel: threading.Event | None = None, mode: str = COMPLETION) -> Verdict:
    """The verdict on ``model``: the kept one, or a new probe (kept unless it hung). Never raises for
    a failed probe; :class:`ModelError` only when llama-cpp-python is not installed at all, and
    :class:`Cancelled` when ``cancel`` is set before the verdict (nothing is kept then)."""
    model = Path(model)
    while not _lock.acquire(timeout=POLL_SECONDS):  # another job's probe: still cancellable while waiting
        if cancel is not None and cancel.is_set():
            raise Cancelled("cancelled while waiting for the model self-test")
    try:
        key = verdict_key(model, hash_cache, mode)
        path = probe_cache_path()
        if not refresh:
            kept = Verdict.from_json(_read_cache(path).get(key))
            if kept is not None:
                return kept
        verdict = run_probe(model, timeout=timeout, cancel=cancel, mode=mode)
        if verdict.outcome != "hang":
            verdicts = _read_cache(path)
            verdicts[key] = verdict.to_json()
            _write_cache(path, verdicts)
        return verdict
    finally:
        _lock.release()


def run_embedding_probe(model: Path, *, timeout: float | None = None, hash_cache: Any = None,
                        cancel: threading.Event | None = None) -> Verdict:
    """:func:`self_test` of ``model`` as an embedder (``embedding=True``, one word embedded in the child),
    kept apart from its completion verdict: a GGUF may pass one and crash in the other."""
    return self_test(model, timeout=timeout, hash_cache=hash_cache, cancel=cancel, mode=EMBEDDING)


def ensure_trusted(model: Path, *, timeout: float | None = None, hash_cache: Any = None,
                   cancel: threading.Event | None = None) -> Verdict:
    """:func:`self_test`, raising :class:`ModelUnavailable` (its one-line message) unless it passed."""
    verdict = self_test(model, timeout=timeout, hash_cache=hash_cache, cancel=cancel)
    if not verdict.ok:
        raise ModelUnavailable(verdict.message)
    return verdict


def preflight(backend: Any) -> None:
    """Self-test ``backend``'s in-process model now, if it has one (an endpoint has none): a command
    then stops with the one-line :class:`ModelUnavailable` before any work, not once per chunk."""
    inner = getattr(backend, "inner", backend)
    test = getattr(type(inner), "self_test", None)
    if callable(test):
        inner.self_test()


def forget(model: Path, *, hash_cache: Any = None) -> bool:
    """Drop the kept verdict on ``model`` (the next use probes again); True when there was one."""
    with _lock:
        key = verdict_key(Path(model), hash_cache)
        path = probe_cache_path()
        verdicts = _read_cache(path)
        if verdicts.pop(key, None) is None:
            return False
        _write_cache(path, verdicts)
        return True


def system_info(timeout: float = 30.0) -> tuple[str | None, str | None]:
    """(``llama_print_system_info()`` of the installed build, None) or (None, why not), asked of a
    child so a build that crashes on load is reported, not suffered."""
    override = os.environ.get(ENV_COMMAND)
    argv = [*shlex.split(override), "--system-info"] if override else \
        [sys.executable, "-m", "ctxfst_tui.core.llm.probe", "--system-info"]
    try:
        code, out, err, _ = _run(argv, timeout)
    except OSError as exc:
        return None, f"could not start: {exc}"
    if code is None:
        return None, f"no answer within {timeout:g} s"
    if code < 0:
        return None, f"crashed ({_signal_name(-code)})"
    if code != 0:
        return None, _last_line(err) or f"exit status {code}"
    for line in reversed(out.splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and "system_info" in data:
            return str(data["system_info"]), None
    return None, "no system info in the answer"


# ---------------------------------------------------------------- the child


def _quiet_llama(llama_cpp: Any) -> Any:
    """Drop llama.cpp's log lines (they would only repeat on stderr what the exit status says)."""
    import ctypes

    @llama_cpp.llama_log_callback
    def _discard(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:  # pragma: no cover - C callback
        return None

    llama_cpp.llama_log_set(_discard, ctypes.c_void_p(0))
    return _discard  # keep a reference: llama.cpp holds a raw pointer


_keep_callback: Any = None


def load_embedding_llama(llama_cpp: Any, model: str, *, n_ctx: int, n_threads: int | None = None) -> Any:
    """``Llama(embedding=True)`` with the GGUF's own pooling, or mean pooling when it has none (a
    completion model): one vector per text either way. The probe's child and the embedder load alike."""
    kwargs: dict[str, Any] = {"model_path": model, "embedding": True, "n_ctx": n_ctx, "verbose": False}
    if n_threads:
        kwargs.update(n_threads=n_threads, n_threads_batch=n_threads)
    llm = llama_cpp.Llama(**kwargs)
    if llm.pooling_type() == llama_cpp.LLAMA_POOLING_TYPE_NONE:
        llm.close()
        llm = llama_cpp.Llama(**kwargs, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN)
    return llm


def _child(argv: Sequence[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m ctxfst_tui.core.llm.probe",
                                description="One-token completion of a GGUF model (the self-test run by ctxfst-tui).")
    p.add_argument("model", nargs="?")
    p.add_argument("--system-info", action="store_true", help="only print llama_print_system_info()")
    p.add_argument("--n-ctx", type=int, default=256)
    p.add_argument("--embedding", action="store_true", help="load with embedding=True and embed one word instead")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    step = "start llama.cpp"
    try:
        import llama_cpp

        global _keep_callback
        _keep_callback = _quiet_llama(llama_cpp)
        info = llama_cpp.llama_print_system_info()
        info = (info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)).strip()
        if args.system_info or not args.model:
            print(json.dumps({"ok": True, "system_info": info, "llama_cpp": getattr(llama_cpp, "__version__", "")}))
            return 0
        name = Path(args.model).name
        step = f"load {name}"
        # one thread: the same kernels (ggml picks them by CPU feature, not by thread count), and no
        # OpenMP spin-wait, which costs seconds on a busy machine
        if args.embedding:
            llm = load_embedding_llama(llama_cpp, args.model, n_ctx=args.n_ctx, n_threads=1)
            step = f"embed with {name}"
            vector = llm.embed("hello", normalize=True, truncate=True)
            print(json.dumps({"ok": True, "dim": len(vector), "system_info": info,
                              "seconds": round(time.perf_counter() - t0, 3)}))
            return 0
        llm = llama_cpp.Llama(model_path=args.model, n_ctx=args.n_ctx, n_threads=1, n_threads_batch=1, verbose=False, seed=0)
        step = f"run {name}"
        out = llm.create_completion("The", max_tokens=1, temperature=0.0)
        text = out["choices"][0]["text"]
        print(json.dumps({"ok": True, "text": text, "system_info": info, "seconds": round(time.perf_counter() - t0, 3)}))
        return 0
    except Exception as exc:  # noqa: BLE001 - the parent shows this line
        print(f"could not {step}: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
