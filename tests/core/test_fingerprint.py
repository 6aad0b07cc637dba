"""The fingerprint's fast paths (ASCII, non-ASCII runs, cached short names) give the plain definition."""
from __future__ import annotations

import random
import string
import unicodedata

from ctxfst_tui.core.entities.aliases import fingerprint


def _plain(text: str) -> str:
    s = unicodedata.normalize("NFKD", text)
    s = "".join(ch for ch in s if not unicodedata.combining(ch)).casefold()
    s = s.replace("+", " plus ").replace("#", " sharp ").replace("&", " and ")
    return "".join(ch for ch in s if ch.isalnum())


def test_known_keys() -> None:
    assert fingerprint("C++") == "cplusplus" and fingerprint("C#") == "csharp" and fingerprint("R&D") == "randd"
    assert fingerprint("Café Crème") == "cafecreme"
    assert fingerprint("Straße") == "strasse"
    assert fingerprint(42) == "42"


def test_matches_the_definition_on_mixed_text() -> None:
    rnd = random.Random(7)
    alphabet = string.printable + "éèçñüßſﬁǄ①—’Å İ K̈中文ـ\u0301\u0308"
    for n in list(range(12)) + [250, 1000]:  # long texts take the uncached path
        for _ in range(300 if n < 12 else 5):
            text = "".join(rnd.choice(alphabet) for _ in range(n))
            assert fingerprint(text) == _plain(text), repr(text)
