"""Token counts of chunk headers (heading markers joined by `` > ``), composed from the markers' counts."""
from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from ctxfst_tui.core.chunking.tokens import TokenCounter

_JOINTS: dict[str, tuple[int, int, dict[int, int]]] = {}
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _joint_counts(counter: TokenCounter) -> tuple[int, int, dict[int, int]]:
    """(tokens of " >", tokens of a line-break pair, extra tokens of " ###" over "###" per level)."""
    got = _JOINTS.get(counter.encoding_name)
    if got is None:
        enc = counter.encoding

        def t(x: str) -> int:
            return len(enc.encode_ordinary(x))

        got = _JOINTS[counter.encoding_name] = (
            t(" >"), t("\n\n"), {lv: t(" " + "#" * lv) - t("#" * lv) for lv in range(1, 7)}
        )
    return got


def _marker_level(m: str) -> int:
    """The level of a Markdown heading marker ``## Title`` (a title that does not start or end with
    white space), else 0: the markers whose counts compose into a header's count."""
    lv = len(m) - len(m.lstrip("#"))
    if 1 <= lv <= 6 and len(m) > lv + 1 and m[lv] == " " and not m[lv + 1].isspace() and not m[-1].isspace():
        return lv
    return 0


def _letter_or_digit(c: str) -> bool:
    return c.isalnum() if c.isascii() else unicodedata.category(c)[0] in "LN"


def _last_pretoken(m: str) -> str | None:
    """The part of a marker that a following line break joins in pre-tokenisation: "" when it
    ends with a letter or digit (the line breaks are a pre-token of their own), `` }`` when it
    ends with ASCII punctuation (`` ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*``); None when not sure."""
    if not m:
        return None
    i = len(m)
    while i and m[i - 1] in _ASCII_PUNCT:
        i -= 1
    if i == len(m):
        return "" if _letter_or_digit(m[-1]) else None
    if i == 0:
        return None
    c = m[i - 1]
    if c == " ":
        return m[i - 1 :]
    if c in "\t" or _letter_or_digit(c):
        return m[i:]
    return None


def compose_headers(counter: TokenCounter, need: Mapping[str, tuple[str, ...]], known: dict[str, int],
                    blocks: list) -> list[str]:  # blocks: the document's headings
    """Counts of ``header + "\n\n"`` for headers that are Markdown markers joined by `` > ``,
    composed from the markers' counts, into ``known``; returns the headers left to encode.

    Pre-tokenisation cuts before `` > `` (a marker ends with a character that is not white space)
    and between `` >`` and the next marker's `` ###``, so: tokens(header + "\n\n") = the sum of
    tokens(marker) + per joint (tokens(" >") + tokens(" ###") - tokens("###")) + what the final
    line breaks add to the marker's last pre-token. A marker's count is read off the document's
    encoding when its heading is written as the marker followed by line breaks: the heading block's
    count minus what the line breaks add to its last pre-token (`` }`` + "\n\n" vs `` }``).
    """
    gt, _, delta = _joint_counts(counter)
    info: dict[str, tuple[int, str | None]] = {}  # marker -> (level, last pre-token) for composable ones
    bad: set[str] = set()
    direct = []
    composed = []
    for h, path in need.items():
        ok = True
        for m in path:
            if m not in info and m not in bad:
                lv = _marker_level(m)
                tail = _last_pretoken(m) if lv else None
                if lv and tail is not None:
                    info[m] = (lv, tail)
                elif lv:
                    info[m] = (lv, None)  # fine inside a path, not at its end
                else:
                    bad.add(m)
            if m in bad:
                ok = False
        if ok and info[path[-1]][1] is not None:
            composed.append((h, path))
        else:
            direct.append(h)
    if not composed:
        return direct
    small: dict[str, None] = {}  # short texts whose counts are needed: last pre-tokens, with line breaks
    for _, tail in info.values():
        if tail is not None:
            small[tail] = None
            small[tail + "\n\n"] = None
    from_doc = []
    for b in blocks:  # (the heading blocks)
        if b.seg:
            m = b.path[-1]
            got = info.get(m)
            if got is not None and got[1] is not None:
                text = b.text
                j = len(text) - len(m)
                if j >= 0 and text.startswith(m) and text.count("\n", len(m)) == j:
                    tail_nl = got[1] + "\n" * j
                    small[tail_nl] = None
                    from_doc.append((m, b.toks, got[1], tail_nl))
    small.pop("", None)
    texts = list(small)
    sc = dict(zip(texts, counter.count_many(texts)))
    sc[""] = 0
    toks_of: dict[str, int] = {}
    for m, toks, tail, tail_nl in from_doc:
        toks_of[m] = toks - sc[tail_nl] + sc[tail]
    rest = [m for m in info if m not in toks_of]
    if rest:
        toks_of.update(zip(rest, counter.count_many(rest)))
    for h, path in composed:
        total = toks_of[path[0]]
        for m in path[1:]:
            total += toks_of[m] + gt + delta[info[m][0]]
        tail = info[path[-1]][1]
        known[h] = total + sc[tail + "\n\n"] - sc[tail]
    return direct
