"""Text measures of the summarizer, its segmentation and the benchmark.

Words, sentences and stop words come from :mod:`ctxfst_tui.core.text` (every count in the
summary tree is :func:`~ctxfst_tui.core.text.words.count_words`). Here:

* sentence windows: the first / last sentences of a text, clipped to a number of words;
* quotes: :func:`open_quote_after` tells whether a paragraph leaves a quotation open
  (multi-paragraph speeches), so a scene boundary can avoid cutting a line of dialogue.
* names: capitalised tokens that are not ordinary words of the source (their lower-case
  form does not occur in it) and not in a small stop list — used to forbid invented names
  and to measure faithfulness and coverage.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any, Iterable

from ctxfst_tui.core.text.sentences import split_sentences
from ctxfst_tui.core.text.stopwords import HONORIFICS, NAME_STOPWORDS
from ctxfst_tui.core.text.words import WORD, count_words

_NAME_TOKEN = re.compile(r"(?<![\w'’])[A-ZÀ-ÖØ-Þ][\w'’-]*\w|(?<![\w'’])[A-ZÀ-ÖØ-Þ](?![\w'’])", re.UNICODE)
_LOWER_WORD = re.compile(r"(?<![\w'’-])[a-zà-öø-ÿ][\w'’-]*", re.UNICODE)


def sha(obj: Any) -> str:
    """sha256 (hex, 32 chars) of a JSON-serialisable object or a string."""
    blob = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


# ---------------------------------------------------------------- sentences


def first_sentences(text: str, n: int, max_words: int = 60) -> str:
    """The first ``n`` sentences of ``text`` (a sentence longer than ``max_words`` is cut at a word, marked ``...``)."""
    return _clip_words(" ".join(split_sentences(_head(text, 4000))[:n]), max_words, tail=False)


def last_sentences(text: str, n: int, max_words: int = 60) -> str:
    """The last ``n`` sentences of ``text`` (see :func:`first_sentences`)."""
    if n <= 0:
        return ""
    return _clip_words(" ".join(split_sentences(_tail(text, 4000))[-n:]), max_words, tail=True)


def _head(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    cut = text.rfind("\n\n", 0, chars)
    return text[: cut if cut > chars // 2 else chars]


def _tail(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    cut = text.find("\n\n", len(text) - chars)
    return text[cut if 0 <= cut < len(text) - chars // 2 else len(text) - chars:]


def _clip_words(text: str, max_words: int, *, tail: bool) -> str:
    ws = text.split()
    if len(ws) <= max_words:
        return text
    return ("... " + " ".join(ws[-max_words:])) if tail else (" ".join(ws[:max_words]) + " ...")


# ---------------------------------------------------------------- quotes


def quote_balance(text: str) -> int:
    """How many quotations ``text`` leaves open (curly quotes counted, straight ``"`` by parity)."""
    opened = text.count("“") + text.count("«")
    closed = text.count("”") + text.count("»")
    bal = opened - closed
    if bal <= 0 and text.count('"') % 2 == 1:
        bal = 1
    return max(0, bal)


def open_quote_after(paragraph: str) -> bool:
    """True when the paragraph opens a quotation it does not close (a speech going on in the next one)."""
    return quote_balance(paragraph) > 0


def quoted_share(text: str) -> float:
    """Share of the words of ``text`` that stand inside quotation marks."""
    total = count_words(text)
    if not total:
        return 0.0
    inside = 0
    for m in re.finditer(r"[“\"«]([^”\"»]{1,2000})[”\"»]", text):
        inside += count_words(m.group(1))
    return min(1.0, inside / total)


# ---------------------------------------------------------------- names


def lower_vocabulary(text: str) -> set[str]:
    """Words of ``text`` written in lower case (so a capitalised form of them is an ordinary word)."""
    return {w.casefold().strip("'’-") for w in _LOWER_WORD.findall(text)}


def name_tokens(text: str, vocabulary: set[str] | None = None) -> list[str]:
    """Capitalised tokens of ``text`` that look like names.

    A token is not a name when it is in :data:`NAME_STOPWORDS`, is a single letter, is all
    capitals and long (a shouted word or a heading), or its lower-case form is in
    ``vocabulary`` (the lower-case words of the source: ``The``/``the``).
    """
    vocab = vocabulary if vocabulary is not None else lower_vocabulary(text)
    out = []
    for tok in _NAME_TOKEN.findall(text):
        t = tok.strip("'’-")
        if len(t) < 2:
            continue
        if t.endswith(("'s", "’s")):
            t = t[:-2]
        low = t.casefold()
        if low in NAME_STOPWORDS or low in vocab:
            continue
        if t.isupper() and len(t) > 3:
            t = t.capitalize()
            if t.casefold() in vocab:
                continue
        if len(t) < 2:
            continue
        out.append(t)
    return out


def source_names(text: str) -> Counter:
    """Counter of the name tokens of a source text."""
    return Counter(name_tokens(text))


def top_names(text: str, k: int = 5, min_count: int = 2) -> list[str]:
    """The ``k`` most frequent names of ``text`` (honorifics excluded) mentioned at least ``min_count`` times."""
    counts = source_names(text)
    return [n for n, c in counts.most_common() if c >= min_count and n.casefold() not in HONORIFICS][:k]


def ungrounded_names(summary: str, source: str, source_vocab: set[str] | None = None,
                     known: Iterable[str] = ()) -> list[str]:
    """Names of ``summary`` that occur neither in ``source`` nor in ``known`` (case-insensitive, whole words)."""
    vocab = (source_vocab if source_vocab is not None else lower_vocabulary(source)) | lower_vocabulary(summary)
    present = {k.casefold() for k in known}
    missing = []
    for name in name_tokens(summary, vocab):
        if name.casefold() in present:
            continue
        if re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", source, re.IGNORECASE):
            present.add(name.casefold())
            continue
        missing.append(name)
    return missing


def name_faithfulness(summary: str, source: str, source_vocab: set[str] | None = None) -> tuple[int, int]:
    """(names of ``summary`` found in ``source``, names of ``summary``) — the faithfulness ratio's parts."""
    vocab = (source_vocab if source_vocab is not None else lower_vocabulary(source)) | lower_vocabulary(summary)
    names = name_tokens(summary, vocab)
    found = sum(1 for n in names if re.search(r"(?<![\w])" + re.escape(n) + r"(?![\w])", source, re.IGNORECASE))
    return found, len(names)


def mentions(summary: str, name: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", summary, re.IGNORECASE) is not None


# ---------------------------------------------------------------- overlap


def ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    ws = [w.casefold().strip(".,;:!?\"'“”‘’()[]—–-") for w in WORD.findall(text)]
    ws = [w for w in ws if w]
    return [tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)]


def overlap(candidate: str, reference: str, n: int = 6) -> float:
    """Share of the word ``n``-grams of ``candidate`` that occur in ``reference``."""
    cand = ngrams(candidate, n)
    if not cand:
        return 0.0
    ref = set(ngrams(reference, n))
    return sum(1 for g in cand if g in ref) / len(cand)
