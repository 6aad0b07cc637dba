"""The model runtime: the in-process llama.cpp backend on the bundled Gemma 3 270M (real calls),
its failure paths, streaming cancellation, the one-lock-per-model rule and the completion cache."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
import time

import pytest
from real_model import MODEL_THREADS

from ctxfst_tui.core.llm import (
    CachedBackend,
    Cancelled,
    CompletionCache,
    ContextOverflow,
    ModelError,
    ModelNotFound,
    backend_info,
    make_backend,
)

from fakes import CountingBackend  # noqa: E402

if importlib.util.find_spec("llama_cpp") is None:  # found, not imported: the self-test runs llama.cpp first
    pytest.skip("llama_cpp is not installed", allow_module_level=True)

from ctxfst_tui.core.llm.llama import LlamaBackend  # noqa: E402

PROMPT = "Q: What is the capital of France?\nA: The capital of France is"
GEMMA_CHAT = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{{ m['content'] }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


@pytest.fixture
def llama(bundled_llama) -> LlamaBackend:
    """The session's in-process bundled model (tests/conftest.py: context 2048, 2 threads, self-tested first)."""
    return bundled_llama


# ---------------------------------------------------------------- real llama.cpp calls


def test_real_completion_is_deterministic_and_accounted(llama):
    a = llama.complete(PROMPT, max_tokens=8)
    b = llama.complete(PROMPT, max_tokens=8)
    assert "paris" in a.text.lower()
    assert a.text == b.text  # temperature 0 by default
    assert a.prompt_tokens > 5 and 0 < a.completion_tokens <= 8
    assert a.finish_reason in ("stop", "length") and not a.cached
    assert a.seconds > 0 and 0 <= a.prompt_seconds <= a.seconds
    assert llama.chat is False  # the bundled base model has no chat template
    assert llama.model_id.startswith("gguf-sha256:") and len(llama.model_id) == len("gguf-sha256:") + 64


def test_stop_sequences_and_streamed_tokens(llama):
    pieces: list[str] = []
    c = llama.complete(PROMPT, max_tokens=16, stop=["\n"], on_token=pieces.append)
    assert "\n" not in c.text
    assert "".join(pieces) == c.text
    assert c.finish_reason == "stop"


def test_count_tokens_and_info(llama):
    assert llama.count_tokens("hello world") >= 2
    info = llama.info()
    assert info["backend"] == "llama" and info["context_size"] == 2048 and info["threads"] == MODEL_THREADS and info["loaded"]


def test_context_overflow_is_a_clear_error(llama):
    with pytest.raises(ContextOverflow) as exc:
        llama.complete("word " * 2500, max_tokens=16)
    msg = str(exc.value)
    assert "context" in msg and "2048" in msg and "--document-max-chars" in msg
    assert "\n" not in msg
    # the instance still works afterwards
    assert llama.complete(PROMPT, max_tokens=4).text


def test_cancel_mid_generation_within_a_second(llama):
    cancel = threading.Event()
    pieces: list[str] = []
    timer = threading.Timer(0.4, cancel.set)
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(Cancelled):
        llama.complete("1, 2, 3, 4, 5, 6, 7,", max_tokens=600, on_token=pieces.append, cancel=cancel)
    stopped = time.perf_counter() - t0
    timer.cancel()
    assert stopped < 0.4 + 1.0, f"cancel took {stopped - 0.4:.2f} s"
    assert llama.complete(PROMPT, max_tokens=4).text  # usable after a cancel


def test_cancel_during_a_long_prompt(llama):
    """A cancel stops the prompt's evaluation between slices, not after the whole prompt. Within a
    second on a quiet machine; on one so loaded that a slice takes longer, still long before the
    whole prompt (about 13 slices of 64 tokens) would have ended: a prompt of about two slices is
    timed first, and the cancel must come within twice that."""
    t0 = time.perf_counter()
    llama.complete("The lazy dog sleeps under the quick brown fox. " * 7, max_tokens=1)
    two_slices = time.perf_counter() - t0
    cancel = threading.Event()
    threading.Timer(0.05, cancel.set).start()
    t0 = time.perf_counter()
    with pytest.raises(Cancelled):
        llama.complete("The quick brown fox jumps over the lazy dog. " * 80, max_tokens=8, cancel=cancel)
    stopped = time.perf_counter() - t0
    assert stopped < max(1.05, 0.05 + 2 * two_slices), f"cancel took {stopped:.2f} s; two slices {two_slices:.2f} s"


def test_one_lock_per_model_serialises_threads(llama):
    expected = llama.complete(PROMPT, max_tokens=6).text
    results: list[str] = []
    errors: list[BaseException] = []

    def run():
        try:
            results.append(llama.complete(PROMPT, max_tokens=6).text)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and results == [expected] * 3


def test_waiting_for_the_lock_honours_cancel(llama):
    # a long generation in another thread holds the model; a second call waits for it, and its
    # cancel ends the wait while the first still runs (its tokens keep coming)
    first_cancel, first_started = threading.Event(), threading.Event()
    first_pieces: list[str] = []
    first_error: list[BaseException] = []

    def on_first_token(piece: str) -> None:
        first_pieces.append(piece)
        first_started.set()

    def first() -> None:
        try:
            llama.complete("1, 2, 3, 4, 5, 6, 7,", max_tokens=600, on_token=on_first_token, cancel=first_cancel)
        except BaseException as exc:
            first_error.append(exc)

    runner = threading.Thread(target=first)
    runner.start()
    try:
        assert first_started.wait(30), "the first call streamed nothing"
        cancel = threading.Event()
        second_pieces: list[str] = []
        threading.Timer(0.2, cancel.set).start()
        t0 = time.perf_counter()
        with pytest.raises(Cancelled):
            llama.complete(PROMPT, max_tokens=4, cancel=cancel, on_token=second_pieces.append)
        waited = time.perf_counter() - t0
        assert waited < 1.0, f"the cancelled wait took {waited:.2f} s"
        assert runner.is_alive() and not second_pieces, "the second call ran beside the first"
    finally:
        first_cancel.set()
        runner.join(30)
    assert len(first_error) == 1 and isinstance(first_error[0], Cancelled)
    assert llama.complete(PROMPT, max_tokens=4).text  # the lock was released by both


def test_chat_template_is_used_when_the_model_has_one(bundled_gguf, model_hashes):
    b = LlamaBackend(bundled_gguf, n_ctx=512, n_threads=MODEL_THREADS, chat_template=GEMMA_CHAT, hash_cache=model_hashes)
    assert b.chat is True
    c = b.complete("Say hello.", max_tokens=8)
    assert c.prompt_tokens > b.count_tokens("Say hello.") + 3  # the template's turn markers were added
    assert c.finish_reason in ("stop", "length")
    assert "chat_template" in b.cache_params()
    b.close()


# ---------------------------------------------------------------- failure paths


def test_missing_model_file(tmp_path):
    b = LlamaBackend(tmp_path / "nope.gguf")
    with pytest.raises(ModelNotFound) as exc:
        b.complete("x", max_tokens=1)
    assert "model file not found" in str(exc.value) and "nope.gguf" in str(exc.value)
    with pytest.raises(ModelNotFound):
        b.model_id


def test_a_file_that_is_not_gguf(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not a model at all" * 10)
    with pytest.raises(ModelNotFound) as exc:
        LlamaBackend(bad).load()
    assert "not a GGUF" in str(exc.value)


def test_a_truncated_gguf(tmp_path):
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelNotFound) as exc:
        LlamaBackend(bad).load()
    assert "could not load" in str(exc.value) and "\n" not in str(exc.value)


def test_make_backend_rejects_a_model_name_without_endpoint():
    with pytest.raises(ModelError) as exc:
        make_backend(model="llama3")
    assert "--endpoint" in str(exc.value)


def test_make_backend_kinds(tmp_path):
    b = make_backend(cache=CompletionCache(tmp_path / "c.sqlite"), n_ctx=512)
    assert isinstance(b, CachedBackend) and b.inner.name == "llama" and b.context_size == 512
    assert backend_info(b)["cache"].endswith("c.sqlite")
    o = make_backend(endpoint="http://127.0.0.1:9/v1/completions", model="m", cache=False)
    assert o.name == "openai" and o.chat is False
    g = make_backend(model=str(tmp_path / "x.gguf"), cache=False)
    assert g.name == "llama" and g.model_path == tmp_path / "x.gguf"


# ---------------------------------------------------------------- the completion cache


def test_cache_serves_repeats_without_a_model_call(tmp_path):
    fake = CountingBackend()
    cache = CompletionCache(tmp_path / "completions.sqlite")
    b = CachedBackend(fake, cache)
    a1 = b.complete("hello", max_tokens=10)
    a2 = b.complete("hello", max_tokens=10)
    assert fake.calls == 1 and b.calls == 1 and b.hits == 1
    assert a2.cached and not a1.cached and a2.text == a1.text
    b.complete("hello", max_tokens=11)  # other parameters: another entry
    b.complete("hello!", max_tokens=10)  # another prompt
    assert fake.calls == 3
    # persistent: a new cache object on the same file still knows the answers
    b2 = CachedBackend(CountingBackend(), CompletionCache(tmp_path / "completions.sqlite"))
    assert b2.complete("hello", max_tokens=10).cached and b2.calls == 0
    assert len(cache) == 3


def test_cache_key_depends_on_backend_and_model(tmp_path):
    cache = CompletionCache(tmp_path / "c.sqlite")
    f1, f2 = CountingBackend(), CountingBackend()
    f2.model_id = "fake-2"
    CachedBackend(f1, cache).complete("p")
    CachedBackend(f2, cache).complete("p")
    assert f1.calls == 1 and f2.calls == 1


def test_cancelled_or_failed_calls_are_not_cached(tmp_path):
    class Failing(CountingBackend):
        def complete(self, prompt, **kw):
            self.calls += 1
            raise Cancelled("cancelled")

    f = Failing()
    b = CachedBackend(f, CompletionCache(tmp_path / "c.sqlite"))
    for _ in range(2):
        with pytest.raises(Cancelled):
            b.complete("p")
    assert f.calls == 2 and len(b.cache) == 0


def test_file_hash_is_cached_by_mtime_and_size(tmp_path):
    cache = CompletionCache(tmp_path / "c.sqlite")
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF one")
    h1 = cache.file_sha256(f)
    assert h1 == hashlib.sha256(b"GGUF one").hexdigest() and cache.file_sha256(f) == h1
    # other bytes with the same size and mtime: the kept hash is served (the file is not read again),
    # also by a new cache object on the same file (the hash is stored)
    st = f.stat()
    f.write_bytes(b"GGUF owe")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cache.file_sha256(f) == h1
    assert CompletionCache(tmp_path / "c.sqlite").file_sha256(f) == h1
    f.write_bytes(b"GGUF two!")  # another size: hashed again
    assert cache.file_sha256(f) == hashlib.sha256(b"GGUF two!").hexdigest()
    f.write_bytes(b"GGUF ow!!")  # the same size, another mtime: hashed again
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000))
    assert cache.file_sha256(f) == hashlib.sha256(b"GGUF ow!!").hexdigest()


def test_env_var_moves_the_default_cache(tmp_path, monkeypatch):
    from ctxfst_tui.core.llm import default_cache, default_cache_path

    monkeypatch.setenv("CTXFST_TUI_COMPLETION_CACHE", str(tmp_path / "elsewhere.sqlite"))
    assert default_cache_path() == tmp_path / "elsewhere.sqlite"
    assert default_cache().path == tmp_path / "elsewhere.sqlite"


def test_real_model_second_call_is_served_by_the_cache(llama, tmp_path):
    b = CachedBackend(llama, CompletionCache(tmp_path / "c.sqlite"))
    first = b.complete(PROMPT, max_tokens=8)
    second = b.complete(PROMPT, max_tokens=8)
    assert b.calls == 1 and b.hits == 1
    assert second.cached and second.text == first.text
