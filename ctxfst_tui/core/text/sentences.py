"""Sentences: where one ends, written once for the summary, the chunker and the notes.

A sentence ends after ``.``/``!``/``?``/``…`` (and any closing quotes or brackets) followed by
white space, or after the CJK full stops ``。！？`` (and closing ``」』``), which need no space.
A full stop after a common abbreviation (:data:`ABBREVIATIONS`: ``Mr.``, ``e.g.``, ``Sra.``,
``approx.``) or a single initial (``J. Smith``) ends nothing.

Two views of the same rule, because their callers cut for different reasons:

* :func:`sentence_spans` (prose for people: summaries, notes) also wants the next sentence to
  start like one, with a capital, a digit or an opening quote — ``etc. and so on`` stays one;
* :func:`sentence_starts` (the chunker) cuts before any next word, and places the cut where a
  BPE tokenizer cuts anyway, so token counts of the parts add up exactly.
"""
from __future__ import annotations

import re
from typing import Iterable

ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr st mme mlle messrs prof rev hon capt col gen lt sgt jr sr sra srta dra esq
    vol no nos p pp cf etc e.g i.e vs viz co ch chap cap fig eq approx dept est inc ltd al ed
    ave mt ft
    """.split()
)

# The chunker's own, shorter list: its cuts (and so every chunk boundary already written into
# documents) were made with it; the longer list would keep "Gen." or "Col." from ending anything.
CHUNKER_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf mr mrs ms dr prof sr jr st no fig eq approx dept est inc ltd co al p pp vol ed".split()
)

# Prose: the next sentence starts with a capital (Latin-1 range), a digit, or an opening quote/dash.
_PROSE_END = re.compile(
    r"[.!?…]+[\"'”’»)\]]*(?=\s+[\"'“‘«(\[—–-]?[A-ZÀ-ÖØ-Þ0-9])"
    r"|[。！？]+[」』”’)\]]*(?=\s*\S)"
)
# Any next word; group 1 / 2: the white space after a Latin / CJK end (the leading
# look-ahead only lets the search skip ahead).
_ANY_END = re.compile(
    r"(?=[.!?…。！？])(?:[.!?…]+[\"'”’)\]]*([ \t\n]+)(?=\S)|[。！？]+[」』”’)\]]*([ \t\n]*)(?=\S))"
)
_LAST_WORD = re.compile(r"[\w.]+$")


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of ``text[start:end]`` (white space trimmed)."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    pos = start
    for m in _PROSE_END.finditer(text, start, end):
        cut = m.end()
        if text[m.start()] == "." and m.group(0) == ".":
            last = _LAST_WORD.findall(text[max(start, m.start() - 12):m.start()])
            token = last[0].lower().rstrip(".") if last else ""
            if token in ABBREVIATIONS or (len(token) == 1 and token.isalpha()):
                continue
        spans.append((pos, cut))
        pos = cut
    spans.append((pos, end))
    return trimmed_spans(text, spans)


def trimmed_spans(text: str, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans with surrounding white space removed; spans left empty are dropped."""
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
    """The sentences of ``text``, each on one line (runs of white space become one space)."""
    return [" ".join(text[a:b].split()) for a, b in sentence_spans(text)]


def sentence_starts(text: str, abbreviations: frozenset[str] = ABBREVIATIONS) -> list[int]:
    """Offsets in ``text`` where a sentence starts (0 excluded), for cutting text into pieces.

    The cut lies before the spaces that follow the full stop (the next sentence keeps its
    leading space, as in `` Next``), or after the line break when there is one.
    """
    out = []
    for m in _ANY_END.finditer(text):
        a = m.start()
        if text[a] == ".":
            ws = text.rfind(" ", 0, a)  # the last of " ", "\n", "(" before the full stop
            x = text.rfind("\n", ws + 1, a)
            if x > ws:
                ws = x
            x = text.rfind("(", ws + 1, a)
            if x > ws:
                ws = x
            word = text[ws + 1 : a].lower()
            if word in abbreviations or (len(word) == 1 and word.isalpha()) or (word[-2:-1] == "." and len(word) <= 4):
                continue
        g = 1 if m.start(1) != -1 else 2
        space_start, space = m.start(g), m.group(g)
        nl = space.rfind("\n")
        cut = space_start + nl + 1 if nl != -1 else space_start
        if cut > 0:
            out.append(cut)
    return out
