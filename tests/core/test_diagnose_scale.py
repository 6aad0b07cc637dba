"""Diagnosis at scale: the sparse similarity paths find what comparing every pair finds, and
repeated findings read as one."""
from __future__ import annotations

import random
import re
from collections import Counter
from itertools import combinations

import pytest

from ctxfst_tui.core.diagnosis.grouping import GROUP_OVER, Group, group_findings, group_report_issues
from ctxfst_tui.core.diagnosis.terms import ChunkVectors, jaccard, word_set
from ctxfst_tui.core.text.joins import cosine_pairs, jaccard_pairs, rare_term_neighbours

WORDS = [f"{a}{b}" for a in ("graph", "vector", "token", "cluster", "index", "shard", "query", "cache")
         for b in ("ing", "er", "ion", "ness", "ure", "ment", "ity", "ism", "ist", "ive")]


def _texts(seed: int, n: int) -> list[str]:
    """Texts over one vocabulary (Zipf-like), a tenth of them edited copies of an earlier one."""
    rnd = random.Random(seed)
    weights = [1 / (k + 1) for k in range(len(WORDS))]
    out: list[str] = []
    for _ in range(n):
        if out and rnd.random() < 0.1:
            base = rnd.choice(out).split()
            base[rnd.randrange(len(base))] = rnd.choice(WORDS)
            out.append(" ".join(base))
        else:
            out.append(" ".join(rnd.choices(WORDS, weights, k=rnd.randint(3, 25))))
    return out


def _dense(tf: ChunkVectors, words: list[set], cos_t: float, jac_t: float) -> set[tuple[int, int]]:
    n = len(words)
    return {(i, j) for i, j in combinations(range(n), 2)
            if tf.cosine(i, j) >= cos_t or jaccard(words[i], words[j]) >= jac_t}


@pytest.mark.parametrize("seed", range(4))
def test_exact_joins_find_every_pair_the_dense_scan_finds(seed: int) -> None:
    texts = _texts(seed, 300)
    tf = ChunkVectors(texts)
    words = [word_set(t) for t in texts]
    for cos_t, jac_t in ((0.5, 0.6), (0.3, 0.4), (0.9, 0.9)):
        found = cosine_pairs(tf.tfidf.vectors, cos_t) | jaccard_pairs(words, jac_t)
        exact = {p for p in found if tf.cosine(*p) >= cos_t or jaccard(words[p[0]], words[p[1]]) >= jac_t}
        assert exact == _dense(tf, words, cos_t, jac_t)


def test_joins_skip_empty_texts() -> None:
    tf = ChunkVectors(["", "alpha beta", "", "alpha beta"])
    assert cosine_pairs(tf.tfidf.vectors, 0.5) == {(1, 3)}
    assert jaccard_pairs([set(), {"a"}, set(), {"a"}], 0.6) == {(1, 3)}


@pytest.mark.parametrize("seed", range(3))
def test_blocking_finds_every_near_duplicate(seed: int) -> None:
    texts = _texts(seed + 10, 400)
    tf = ChunkVectors(texts)
    words = [word_set(t) for t in texts]
    near = _dense(tf, words, 0.9, 2.0)
    assert near  # the sample has edited copies
    assert near <= rare_term_neighbours(tf.tfidf.vectors)


def _issue(rule: str, chunk: str, message: str, **extra) -> dict:
    return {"category": "c", "severity": "info", "chunk_ids": [chunk], "message": message, "rule": rule,
            "line": 3, "column": 5, **extra}


def test_few_repeats_are_shown_as_they_are() -> None:
    items = [("a.md", _issue("entity-weak-link", f"c{k}", "Chunk links 'e' but never names it")) for k in range(GROUP_OVER)]
    assert group_findings(items) == items
    assert group_report_issues([i for _, i in items], "a.md") == [i for _, i in items]


def test_a_finding_repeated_over_many_chunks_is_one_group() -> None:
    same = [("a.md" if k % 2 else "b.md", _issue("entity-weak-link", f"c{k}", "Chunk links 'e' but never names it"))
            for k in range(50)]
    other = ("a.md", _issue("chunk-small", "x", "Chunk is small (5 tokens)"))
    out = group_findings([same[0], other, *same[1:]])
    assert [type(x) for x in out] == [Group, tuple]
    g = out[0]
    assert len(g.members) == 50 and g.message() == "Chunk links 'e' but never names it"
    names, what = g.names()
    assert what == "chunks" and names[:2] == ["b.md c0", "a.md c1"]
    grouped = group_report_issues([i for _, i in same], "a.md")
    assert len(grouped) == 1 and grouped[0]["count"] == 50 and len(grouped[0]["members"]) == 50
    assert grouped[0]["chunk_ids"] == [f"c{k}" for k in range(50)]


def test_missing_links_group_by_entity_whatever_the_spelling() -> None:
    items = [("a.md", _issue("entity-missing-link", f"c{k}", f"Chunk names '{w}' (entity:rust) {k} times but does not link it",
                             entity_ids=["entity:rust"])) for k, w in enumerate(["Rust", "rust"] * 15)]
    [g] = group_findings(items)
    assert g.message() == "Chunks name entity:rust in their context or twice but do not link it"
    assert Counter(type(x) for x in group_findings(items[:GROUP_OVER])) == Counter({tuple: GROUP_OVER})


def test_a_catalog_finds_the_mentions_one_pattern_of_its_forms_finds() -> None:
    from types import SimpleNamespace

    from ctxfst_tui.core.diagnosis import mentions

    names = WORDS[:45] + ["Go", "graph ing", "vector er cache", "C++", "ſhard", ".NET", "İstanbul", "\u212aelvin", "café"]
    rnd = random.Random(3)
    texts = [" ".join(rnd.choices(WORDS[:50] + ["go", "Go", "C++", "GRAPH", "ing", "shard", ".net", "istanbul",
                                                "KELVIN", "CAFÉ", "(", "-"], k=60)) for _ in range(40)]
    texts.append("graph  ing graphing vector er cache Go go C++ c++ SHARD")
    for some in (names, names[-12:]):
        ents = [SimpleNamespace(id=f"entity:{k}", forms=[n]) for k, n in enumerate(some)]
        m = mentions.Mentions(ents)
        one = re.compile(r"(?<!\w)(?:" + "|".join(mentions._form_pattern(f) for f in m.forms) + r")(?!\w)")
        expected = [[(x.start(), x.group(), m.by_form[mentions.fold_form(x.group())]) for x in one.finditer(t)
                     if mentions.fold_form(x.group()) in m.by_form] for t in texts]
        assert [m.find(t) for t in texts] == expected
        assert any(expected)
