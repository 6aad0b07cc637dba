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


@lru_cache(maxsize=4096)
def _forms_regex(forms: tuple[str, ...]) -> re.Pattern:
    """One pattern for the forms, longest first; cached, as documents of a workspace share their entities."""
    return re.compile(r"(?<!\w)(?:" + "|".join(_form_pattern(f) for f in forms) + r")(?!\w)")


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
        self.regex = _forms_regex(tuple(forms)) if forms else None

    def find(self, text: str) -> list[tuple[int, str, list[str]]]:
        """(offset, text as written, entity ids) of each mention."""
        if self.regex is None or not text:
            return []
        out = []
        for m in self.regex.finditer(text):
            ids = self.by_form.get(fold_form(m.group(0)))
            if ids:
                out.append((m.start(), m.group(0), ids))
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
