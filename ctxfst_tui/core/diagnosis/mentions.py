"""Where a chunk names an entity: by its name, an alias, or the words of its id.

Two strictnesses: ``Mentions`` finds exact, word-bounded mentions (a missing link is only claimed
where the chunk really writes the name), ``appears`` is lenient (stems, any order, fingerprints),
so a link is only called weak when nothing resembling the entity occurs.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from ctxfst_tui.core.entities.aliases import fingerprint
from ctxfst_tui.core.text.words import stemmed_terms

if TYPE_CHECKING:
    from ctxfst_tui.core.diagnosis.index import IndexedEntity


ONE_LETTER_WORDS = frozenset({"A", "I", "a"})  # an entity named "A" is not mentioned by every sentence


def _form_pattern(form: str) -> str:
    """A form as a regex: case-insensitive when it has 3+ characters, exact for short ones (Go, JS)."""
    body = r"\s+".join(re.escape(part) for part in form.split())
    return f"(?i:{body})" if len(form.strip()) >= 3 else body


def fold_form(form: str) -> str:
    """A form as compared: spaces collapsed, case folded unless it is shorter than 3 characters."""
    form = " ".join(form.split())
    return form.casefold() if len(form) >= 3 else form


# characters that IGNORECASE matches to an ASCII letter although lower() does not give it
_ASCII_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_FOLDED = re.compile("[" + "".join(map(chr, _ASCII_FOLDS)) + "]")
_RUN = re.compile(r"\w+")
_WORD = re.compile(r"\w")


def fold_text(text: str) -> str:
    """``text`` in lower case, with the letters IGNORECASE takes for ASCII ones made ASCII (same length)."""
    return text.translate(_ASCII_FOLDS).lower() if _FOLDED.search(text) else text.lower()


def word_runs(text: str) -> list[str]:
    """The word runs of ``text`` as compared for the pre-filter (folded to lower case)."""
    return folded_word_runs(fold_text(text))


def folded_word_runs(folded: str) -> list[str]:
    """:func:`word_runs` of a text already through :func:`fold_text` (folding is the costly part)."""
    return _RUN.findall(folded)


def leading_run(form: str) -> str | None:
    """For an ASCII form starting with a word character, the folded word run any case-insensitive
    match of it starts with in a folded text (a whole run there); None for other forms."""
    m = _RUN.match(form) if form.isascii() else None
    return m.group().lower() if m else None


def run_starts(folded: str, run: str) -> list[int]:
    """Where ``run`` is a whole word run of ``folded``."""
    out, n, end = [], len(run), len(folded)
    p = folded.find(run)
    while p >= 0:
        if (p == 0 or not _WORD.match(folded, p - 1)) and (p + n == end or not _WORD.match(folded, p + n)):
            out.append(p)
        p = folded.find(run, p + n)
    return out


@lru_cache(maxsize=20_000)
def _form_regex(form: str) -> re.Pattern:
    """One form's matches at every start, overlapping ones too (a look-ahead captures it)."""
    return re.compile(r"(?<!\w)(?=(" + _form_pattern(form) + r")(?!\w))")


_form_fingerprint = lru_cache(maxsize=50_000)(fingerprint)


class Mentions:
    """Finds word-bounded mentions of entity names and aliases; the longest form wins at a position."""

    def __init__(self, ents: list[IndexedEntity]):
        self.by_form: dict[str, list[str]] = {}
        for e in ents:
            for f in e.forms:
                if f.strip() in ONE_LETTER_WORDS:
                    continue
                ids = self.by_form.setdefault(fold_form(f), [])
                if e.id not in ids:
                    ids.append(e.id)
        forms = sorted({" ".join(f.split()) for e in ents for f in e.forms if f.strip() not in ONE_LETTER_WORDS},
                       key=lambda f: (-len(f), f))
        self.forms = forms
        # a form can only match a text holding each of its word runs: index forms by their first
        self.by_run: dict[str, list[str]] = {}
        self.always: list[str] = []
        self.rank = {f: k for k, f in enumerate(forms)}
        self.runs_of = {f: word_runs(f) for f in forms}
        for f in forms:
            if self.runs_of[f] and f.isascii():
                self.by_run.setdefault(self.runs_of[f][0], []).append(f)
            else:
                self.always.append(f)
        self.first_runs = frozenset(self.by_run)
        self.at_runs = frozenset(f for f in forms if leading_run(f))

    def _starts(self, text: str) -> list[re.Match]:
        """The matches one word-bounded alternation of the forms (longest first) would find, without
        compiling one per catalog (every document of a workspace has its own): each form's matches
        at every start, then leftmost first, the earliest form on a tie (the pattern's order),
        resuming after each match.

        An ASCII form starting with a word character can only match where a word run of the folded
        text equals its first run (folding keeps lengths and which characters are word characters,
        and a case-insensitive ASCII letter matches no character the fold does not turn into it),
        so it is tried only there; other forms are searched for in the whole text."""
        folded = fold_text(text)
        present = set(_RUN.findall(folded))
        hits = []
        for run in self.first_runs.intersection(present):
            at = None
            for f in self.by_run[run]:
                if not all(r in present for r in self.runs_of[f]):
                    continue
                rank, rx = self.rank[f], _form_regex(f)
                if f not in self.at_runs:
                    hits += [(m.start(1), rank, m) for m in rx.finditer(text)]
                    continue
                if at is None:
                    at = run_starts(folded, run)
                for p in at:
                    m = rx.match(text, p)
                    if m is not None:
                        hits.append((p, rank, m))
        for f in self.always:
            rank = self.rank[f]
            hits += [(m.start(1), rank, m) for m in _form_regex(f).finditer(text)]
        out, cursor = [], 0
        for start, _, m in sorted(hits, key=lambda h: (h[0], h[1])):
            if start >= cursor:
                out.append(m)
                cursor = m.end(1)
        return out

    def find(self, text: str) -> list[tuple[int, str, list[str]]]:
        """(offset, text as written, entity ids) of each mention."""
        if not self.forms or not text:
            return []
        out = []
        for m in self._starts(text):
            written = m.group(1)
            ids = self.by_form.get(fold_form(written))
            if ids:
                out.append((m.start(1), written, ids))
        return out


def slug_words(entity_id: str) -> str:
    """The readable part of an id: 'entity:graph-aware_retrieval' -> 'graph aware retrieval'."""
    return re.sub(r"[-_./]+", " ", entity_id.rsplit(":", 1)[-1]).strip()


@lru_cache(maxsize=20_000)
def _form_stems(form: str) -> frozenset[str]:
    return frozenset(stemmed_terms(form)[0])


def appears(e: IndexedEntity, terms: set[str], raw: str, fp_text: list[str]) -> bool:
    """True when a name, alias or the id's words of ``e`` occur in a chunk (leniently: stems, any order).
    ``fp_text`` is a one-item cache of the chunk's fingerprint, computed only when needed."""
    forms = [*e.forms, slug_words(e.id)]
    for form in forms:
        if len(form.strip()) < 3:
            if re.search(r"(?<!\w)" + re.escape(form.strip()) + r"(?!\w)", raw):
                return True
            continue
        stems = _form_stems(form)
        if stems and stems <= terms:
            return True
    for form in forms:
        fp = _form_fingerprint(form)
        if len(fp) >= 5:
            if not fp_text:
                fp_text.append(fingerprint(raw))
            if fp in fp_text[0]:
                return True
    return False
