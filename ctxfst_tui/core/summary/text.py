"""Text helpers shared by segmentation, summarization and the benchmark.

* words: whitespace-separated tokens holding at least one letter or digit (``* * *`` and a
  lone dash are not words); every count in the summary tree uses :func:`count_words`.
* sentences: split after ``.``/``!``/``?`` (and any closing quotes) before a capital or an
  opening quote, never after a common abbreviation (``Mr.``, ``Sra.``...).
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

WORD = re.compile(r"\S*\w\S*", re.UNICODE)
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "st", "mme", "mlle", "messrs", "prof", "rev", "hon", "capt", "col", "gen", "lt", "sgt",
    "jr", "sr", "sra", "srta", "dra", "vol", "no", "nos", "p", "pp", "cf", "etc", "e.g", "i.e", "vs", "viz", "co",
    "ch", "chap", "cap", "fig", "esq", "ave", "mt", "ft",
}
_SENT_END = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s+[\"'“‘«(\[—–-]?[A-ZÀ-ÖØ-Þ0-9])")
_NAME_TOKEN = re.compile(r"(?<![\w'’])[A-ZÀ-ÖØ-Þ][\w'’-]*\w|(?<![\w'’])[A-ZÀ-ÖØ-Þ](?![\w'’])", re.UNICODE)
_LOWER_WORD = re.compile(r"(?<![\w'’-])[a-zà-öø-ÿ][\w'’-]*", re.UNICODE)

# capitalised words that are never names (sentence starters, pronouns, titles, labels)
NAME_STOPWORDS = frozenset(
    """
    a an the and but or nor for so yet if then than when while whilst where whence wherever whenever after before
    as at by from in into of off on onto out over to up upon with within without about above across against
    along among around because beside besides between beyond during except inside near since through throughout
    till under until unto via though although however therefore thus hence meanwhile moreover nevertheless
    still also even only just soon later later, finally first second third next last once twice now here there
    this that these those it its he him his she her hers they them their theirs we us our ours you your yours
    i me my mine myself yourself himself herself itself ourselves themselves who whom whose which what why how
    all any both each every either neither no none not some such many much more most few other another one two
    three four five six seven eight nine ten is are was were be been being am has have had do does did will
    would shall should may might must can could yes oh ah alas well indeed perhaps nothing everything someone
    something anyone anything everyone everybody nobody somebody
    mr mrs ms miss sir madam madame lady lord dr doctor master mistress captain colonel general lieutenant
    sergeant major king queen prince princess duke duchess count countess baron baronet father mother sister
    brother uncle aunt monsieur mademoiselle señor señora dom dona senhor senhora sr sra srta
    chapter letter scene part book volume summary story novel narrator prologue epilogue
    o a os as um uma uns umas e mas ou se quando enquanto onde como porque que quem qual de do da dos das em no
    na nos nas por pelo pela para com sem sobre entre ele ela eles elas eu tu nós vós você vocês seu sua seus
    suas meu minha este esta esse essa isso isto aquele aquela depois antes então também ainda já não sim
    capítulo cena parte livro carta resumo
    english french german italian spanish portuguese swiss european american christian catholic protestant
    january february march april may june july august september october november december monday tuesday
    wednesday thursday friday saturday sunday god heaven
    """.split()
)
HONORIFICS = frozenset("mr mrs ms miss sir madam madame lady lord dr captain colonel general king queen".split())


def count_words(text: str) -> int:
    return len(WORD.findall(text))


def words(text: str) -> list[str]:
    return WORD.findall(text)


def sha(obj: Any) -> str:
    """sha256 (hex, 32 chars) of a JSON-serialisable object or a string."""
    blob = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def one_line(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- sentences


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of ``text[start:end]`` (whitespace trimmed)."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    pos = start
    for m in _SENT_END.finditer(text, start, end):
        cut = m.end()
        # the word before the dot: an abbreviation or a single initial does not end a sentence
        before = text[max(start, m.start() - 12):m.start()]
        last = re.findall(r"[\w.]+$", before)
        token = last[0].lower().rstrip(".") if last else ""
        if text[m.start()] == "." and m.group(0) == "." and (token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha())):
            continue
        spans.append((pos, cut))
        pos = cut
    spans.append((pos, end))
    return trimmed_spans(text, spans)


def trimmed_spans(text: str, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans with surrounding whitespace removed; spans left empty are dropped."""
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            out.append((a, b))
    return out


def split_sentences(text: str) -> list[str]:
    return [one_line(text[a:b]) for a, b in sentence_spans(text)]


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
