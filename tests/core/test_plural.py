"""The one helper every counted word goes through: one chunk, two chunks, no "1 chunks"."""
from __future__ import annotations

import pytest

from ctxfst_tui.core.text.plural import count, noun, plural


@pytest.mark.parametrize(("word", "many"), [
    ("chunk", "chunks"), ("document", "documents"), ("finding", "findings"), ("entity", "entities"),
    ("summary", "summaries"), ("fix", "fixes"), ("alias", "aliases"), ("key", "keys"), ("node", "nodes"),
])
def test_plural_of_the_nouns_the_messages_count(word, many):
    assert plural(word) == many


def test_count_says_one_for_one_and_the_plural_otherwise():
    assert count(1, "chunk") == "1 chunk"
    assert count(0, "chunk") == "0 chunks"
    assert count(2, "entity") == "2 entities"
    assert count(1, "model call") == "1 model call" and count(3, "model call") == "3 model calls"
    assert count(1234, "word", grouped=True) == "1,234 words" and count(1234, "word") == "1234 words"
    assert count(1, "person", "people") == "1 person" and count(2, "person", "people") == "2 people"
    assert noun(1, "has") == "has" and noun(2, "has") == "have"
