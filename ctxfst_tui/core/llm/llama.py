"""The in-process backend: llama-cpp-python on a GGUF file (by default the bundled Gemma 3 270M).

* The default model is a *base* model without a chat template: prompts are sent as raw
  completion text (few-shot formats). A GGUF whose metadata holds ``tokenizer.chat_template``
  is prompted through that template instead (one user message), unless ``chat=False``.
* llama.cpp is not safe for concurrent calls on one context: every call holds the
  instance's lock; a call waiting for the lock still honours its cancel event.
* Cancellation is checked between prompt-evaluation slices (``prefill_slice`` tokens, 64 by
  default: a cancel waits for one slice at most, whose time grows with the model) and
  between generated tokens, so a set event stops the call within a second.
* Temperature 0 is reproducible: a prompt is always evaluated in the same batches,
  whatever was evaluated before (see :meth:`LlamaBackend._prefill`).
* Before the first in-process load of a GGUF with this llama.cpp build on this CPU, the model
  runs a one-token self-test in a child process (:mod:`.probe`); a crash, hang or error there
  is a :class:`ModelUnavailable` and the model is never loaded in-process.
* llama.cpp's own log lines are routed to the ``ctxfst_tui.llm.llama_cpp`` logger instead of
  stderr, where they would corrupt the terminal UI.
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from ctxfst_tui.core.llm.base import (Cancelled, Completion, ContextOverflow, GenerationDefaults, ModelError, ModelNotFound, ModelUnavailable,
                   TokenCallback, check_cancel)

log = logging.getLogger("ctxfst_tui.llm.llama_cpp")
_LOG_LEVELS = {0: logging.CRITICAL, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.DEBUG, 5: logging.DEBUG}
_log_callback = None  # keep a reference: llama.cpp holds a raw pointer to it
_last_level = logging.DEBUG


def _install_log_callback() -> None:
    """Send llama.cpp's log lines to Python logging (they used to go straight to stderr)."""
    global _log_callback
    if _log_callback is not None:
        return
    import llama_cpp

    @llama_cpp.llama_log_callback
    def _callback(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:  # pragma: no cover - C callback
        global _last_level
        lvl = _last_level if level == 5 else _LOG_LEVELS.get(level, logging.DEBUG)
        _last_level = lvl
        try:
            msg = text.decode("utf-8", "replace").rstrip("\n")
        except Exception:
            return
        if msg and log.isEnabledFor(logging.DEBUG):  # everything llama.cpp says is detail for us
            log.debug(msg)

    _log_callback = _callback
    llama_cpp.llama_log_set(_callback, ctypes.c_void_p(0))


def default_threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


class LlamaBackend:
    """llama-cpp-python in-process. The model is loaded on first use (or by :meth:`load`)."""

    name = "llama"

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int = 256,
        prefill_slice: int = 64,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        repeat_penalty: float = 1.1,
        seed: int = 0,
        chat: bool | None = None,
        chat_template: str | None = None,
        hash_cache: Any = None,
        probe_timeout: float | None = None,
    ):
        self.model_path = Path(model_path).expanduser() if model_path is not None else None
        self.bundled = model_path is None
        self.n_ctx = int(n_ctx)
        self.n_threads = int(n_threads) if n_threads else default_threads()
        self.n_batch = int(n_batch)
        self.prefill_slice = max(8, min(int(prefill_slice), self.n_batch))
        self.defaults = GenerationDefaults(max_tokens, temperature, tuple(stop))
        self.repeat_penalty = float(repeat_penalty)
        self.seed = int(seed)
        self._chat_setting = chat
        self._template_override = chat_template
        self._hash_cache = hash_cache
        self.probe_timeout = probe_timeout  # None: CTXFST_TUI_PROBE_TIMEOUT or 60 s
        self.verdict: Any = None  # the last self-test verdict (probe.Verdict), None before the first
        self._lock = threading.Lock()
        self._llm: Any = None
        self._formatter: Any = None
        self._model_id: str | None = None
        self.load_seconds: float | None = None
        if self.n_ctx < 64:
            raise ModelError(f"context size {self.n_ctx} is too small (at least 64 tokens)")

    # ------------------------------------------------------------ loading
    def resolve_path(self) -> Path:
        if self.model_path is None:
            from ctxfst_tui.core.llm.bundled import bundled_model_path

            self.model_path = bundled_model_path()  # ModelUnavailable (a ModelNotFound) when it cannot be had
        p = self.model_path
        if not p.exists():
            raise ModelNotFound(f"model file not found: {p} (give the path of a .gguf file with --model)")
        if not p.is_file():
            raise ModelNotFound(f"model path is not a file: {p}")
        return p

    def load(self, cancel: threading.Event | None = None) -> float:
        """Load the model now (normally done on first use); returns the load time in seconds.
        A set ``cancel`` stops the wait for the lock and the self-test (:class:`Cancelled`)."""
        self._acquire(cancel)
        try:
            self._ensure_loaded(cancel)
        finally:
            self._lock.release()
        return self.load_seconds or 0.0

    def _hashes(self) -> Any:
        if self._hash_cache is None:
            from ctxfst_tui.core.llm.cache import default_cache

            return default_cache()
        return self._hash_cache

    def self_test(self, cancel: threading.Event | None = None) -> Any:
        """The model's self-test verdict (:mod:`.probe`): kept from an earlier run, or a one-token
        completion in a child process now. Raises :class:`ModelUnavailable` unless it passed, and
        :class:`ModelNotFound` for a missing file or one that is not a GGUF, :class:`Cancelled` when
        ``cancel`` is set while the child runs (it is killed; no verdict). Loads nothing in-process."""
        path = self.resolve_path()
        try:
            with open(path, "rb") as fh:
                magic = fh.read(4)
        except OSError as exc:
            raise ModelNotFound(f"{path}: cannot read: {exc.strerror or exc}") from exc
        if magic != b"GGUF":
            raise ModelNotFound(f"{path} is not a GGUF model file (llama.cpp needs .gguf)")
        from ctxfst_tui.core.llm import probe

        self.verdict = probe.self_test(path, timeout=self.probe_timeout, hash_cache=self._hashes(), cancel=cancel)
        if not self.verdict.ok:
            raise ModelUnavailable(self.verdict.message)
        return self.verdict

    def _ensure_loaded(self, cancel: threading.Event | None = None) -> Any:
        if self._llm is not None:
            return self._llm
        path = self.resolve_path()
        if self.verdict is None or not self.verdict.ok or Path(self.verdict.model) != path:
            self.self_test(cancel)  # before llama_cpp is even imported: a failed test never runs native code here
        try:
            import llama_cpp
        except ImportError as exc:  # pragma: no cover - a hard dependency
            raise ModelError("llama-cpp-python is not installed (pip install llama-cpp-python)") from exc
        _install_log_callback()
        t0 = time.perf_counter()
        try:
            llm = llama_cpp.Llama(
                model_path=str(path), n_ctx=self.n_ctx, n_threads=self.n_threads, n_threads_batch=self.n_threads,
                n_batch=self.n_batch, seed=self.seed, verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelNotFound(f"llama.cpp could not load {path}: {exc}") from exc
        try:  # warm up: the first decode pages the weights in and sizes the compute graph
            bos = llm.token_bos()
            llm.eval([bos if bos >= 0 else 0])
            llm.reset()
        except Exception:  # pragma: no cover - a model that cannot decode fails on first use instead
            pass
        self.load_seconds = time.perf_counter() - t0
        template = self._template_override or llm.metadata.get("tokenizer.chat_template")
        use_chat = bool(template) if self._chat_setting is None else bool(self._chat_setting and template)
        if self._chat_setting and not template:
            raise ModelError(f"{path.name} has no chat template (tokenizer.chat_template); run it without chat")
        if use_chat:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text_of(token_id: int) -> str:
                return llm._model.token_get_text(token_id) if token_id >= 0 else ""

            self._formatter = Jinja2ChatFormatter(template, eos_token=text_of(llm.token_eos()), bos_token=text_of(llm.token_bos()))
            self._template = template
        else:
            self._template = None
        self._llm = llm
        return llm

    def close(self) -> None:
        with self._lock:
            if self._llm is not None:
                try:
                    self._llm.close()
                except Exception:  # pragma: no cover
                    pass
                self._llm = None

    # ------------------------------------------------------------ protocol
    @property
    def loaded(self) -> bool:
        return self._llm is not None

    @property
    def model_id(self) -> str:
        if self._model_id is None:
            path = self.resolve_path()
            self._model_id = "gguf-sha256:" + self._hashes().file_sha256(path)
        return self._model_id

    @property
    def context_size(self) -> int:
        return self.n_ctx

    @property
    def chat(self) -> bool:
        if self._llm is None:
            self.load()
        return self._formatter is not None

    def cache_params(self) -> dict[str, Any]:
        d = self.defaults
        out: dict[str, Any] = {"repeat_penalty": self.repeat_penalty, "seed": self.seed,
                               "defaults": [d.max_tokens, d.temperature, list(d.stop)]}
        if self.chat:
            out["chat_template"] = hashlib.sha256(self._template.encode("utf-8")).hexdigest()[:16]
        return out

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name, "model": str(self.model_path) if self.model_path else "(bundled Gemma 3 270M)",
            "bundled": self.bundled, "context_size": self.n_ctx, "threads": self.n_threads,
            "chat": (self._formatter is not None) if self._llm is not None else None,
            "loaded": self._llm is not None, "load_seconds": self.load_seconds,
            "self_test": (self.verdict.outcome if self.verdict.ok else self.verdict.message) if self.verdict is not None else None,
            "max_tokens": self.defaults.max_tokens, "temperature": self.defaults.temperature,
        }

    def count_tokens(self, text: str) -> int:
        llm = self._llm
        if llm is None:
            self.load()
            llm = self._llm
        return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _prompt_tokens(self, llm: Any, prompt: str) -> tuple[list[int], list[str]]:
        if self._formatter is None:
            return llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True), []
        resp = self._formatter(messages=[{"role": "user", "content": prompt}])
        rendered = resp.prompt
        bos = llm._model.token_get_text(llm.token_bos()) if llm.token_bos() >= 0 else ""
        has_bos = bool(bos) and rendered.startswith(bos)
        tokens = llm.tokenize(rendered.encode("utf-8"), add_bos=not has_bos, special=True)
        stops = [s for s in (resp.stop if isinstance(resp.stop, list) else [resp.stop]) if s]
        return tokens, stops

    def _acquire(self, cancel: threading.Event | None) -> None:
        while not self._lock.acquire(timeout=0.1):
            check_cancel(cancel)

    def _prefill(self, llm: Any, tokens: list[int], cancel: threading.Event | None) -> None:
        """Evaluate the prompt (all but its last token) in slices, checking ``cancel`` between them.

        llama-cpp-python then finds the prefix in its KV cache and only evaluates the last
        token. The slices sit at fixed positions (multiples of ``prefill_slice``) and a cached
        prefix is reused only up to such a boundary, so a prompt is always evaluated in the
        same batches whatever ran before: llama.cpp's arithmetic depends on the batch shape,
        and temperature 0 must give the same text every time.
        """
        target = tokens[:-1]
        try:
            cached = list(llm._input_ids)
        except AttributeError:  # pragma: no cover - internals changed: no sliced prefill
            return
        step = self.prefill_slice
        prefix = 0
        for a, b in zip(cached, target):
            if a != b:
                break
            prefix += 1
        prefix -= prefix % step
        if prefix != llm.n_tokens:
            if prefix == 0 or not llm._ctx.kv_cache_seq_rm(-1, prefix, -1):
                llm.reset()
                prefix = 0
            llm.n_tokens = prefix
        while llm.n_tokens < len(target):
            check_cancel(cancel)
            start = llm.n_tokens
            llm.eval(target[start:start - start % step + step])

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        temperature: float | None = None,
        cancel: threading.Event | None = None,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        max_tokens, temperature, stops = self.defaults.resolve(max_tokens, temperature, stop)
        check_cancel(cancel)
        self._acquire(cancel)
        try:
            llm = self._ensure_loaded(cancel)
            t0 = time.perf_counter()
            tokens, extra_stops = self._prompt_tokens(llm, prompt)
            stops += [s for s in extra_stops if s not in stops]
            if len(tokens) + max_tokens > self.n_ctx:
                raise ContextOverflow(
                    f"context overflow: the prompt is {len(tokens)} tokens and {max_tokens} more are to be generated, "
                    f"but the model context is {self.n_ctx} tokens; shorten the document part of the prompt "
                    f"(--document-max-chars) or raise the context size (--n-ctx)"
                )
            try:
                self._prefill(llm, tokens, cancel)
                stream = llm.create_completion(
                    tokens, max_tokens=max_tokens, temperature=temperature, stop=stops or None, stream=True,
                    repeat_penalty=self.repeat_penalty, seed=self.seed,
                )
                parts: list[str] = []
                finish = "stop"
                first: float | None = None
                try:
                    for chunk in stream:
                        check_cancel(cancel)
                        choice = chunk["choices"][0]
                        piece = choice.get("text") or ""
                        if first is None:
                            first = time.perf_counter()
                        if piece:
                            parts.append(piece)
                            if on_token is not None:
                                on_token(piece)
                        if choice.get("finish_reason"):
                            finish = choice["finish_reason"]
                finally:
                    stream.close()
            except (Cancelled, ModelError):
                raise
            except (ValueError, RuntimeError) as exc:
                msg = str(exc)
                if "exceed context window" in msg or "context" in msg.lower() and "exceed" in msg.lower():
                    raise ContextOverflow(f"context overflow: {msg}; lower --document-max-chars or raise --n-ctx") from exc
                raise ModelError(f"llama.cpp failed: {msg}") from exc
            text = "".join(parts)
            end = time.perf_counter()
            n_out = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)) if text else 0
            return Completion(text, len(tokens), n_out, finish, False, end - t0, (first or end) - t0)
        finally:
            self._lock.release()
