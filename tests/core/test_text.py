"""The shared text building blocks: words, stop words, stems, sentences, TF-IDF."""
from __future__ import annotations

import math
from collections import Counter

from ctxfst_tui.core.text.sentences import ABBREVIATIONS, sentence_spans, sentence_starts, split_sentences
from ctxfst_tui.core.text.stems import prefix_stem, stem
from ctxfst_tui.core.text.stopwords import (ACRONYM_SKIPPED_WORDS, ENGLISH_STOPWORDS, NOTE_FILLER_WORDS,
                                            REFERENCE_STOPWORDS)
from ctxfst_tui.core.text.tfidf import CosineMemo, TfIdf
from ctxfst_tui.core.text.words import count_words, note_words, one_line, reference_terms, stemmed_terms


# ---------------------------------------------------------------- sentences (prose view)


def test_abbreviations_and_initials_do_not_end_a_sentence():
    text = "Mr. Darcy met Dr. Watson at St. Paul. J. R. Smith waved. They left."
    assert split_sentences(text) == ["Mr. Darcy met Dr. Watson at St. Paul.", "J. R. Smith waved.", "They left."]


def test_latin_abbreviations_before_a_capital_stay_inside():
    text = "Tools exist, e.g. Docker and Podman. See Fig. 3 for the layout. Next one."
    assert split_sentences(text) == ["Tools exist, e.g. Docker and Podman.", "See Fig. 3 for the layout.", "Next one."]


def test_a_lower_case_word_after_a_full_stop_continues_the_sentence():
    assert split_sentences("It costs 3 dollars etc. and more. Done.") == ["It costs 3 dollars etc. and more.", "Done."]


def test_closing_quotes_stay_with_their_sentence_and_opening_quotes_start_one():
    text = "He said, “Go home.” “Now?” she asked. 'Yes!' It was late."
    assert split_sentences(text) == ["He said, “Go home.”", "“Now?” she asked.", "'Yes!'", "It was late."]


def test_cjk_full_stops_need_no_space():
    text = "今日は晴れです。明日は雨でしょう！本当に？「はい。」そうです。"
    assert split_sentences(text) == ["今日は晴れです。", "明日は雨でしょう！", "本当に？", "「はい。」", "そうです。"]


def test_spans_are_trimmed_offsets_into_the_text_and_respect_a_window():
    text = "  One here.   Two there.\n\nThree.  "
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == ["One here.", "Two there.", "Three."]
    start = text.index("Two")
    assert [text[a:b] for a, b in sentence_spans(text, start, text.index("\n"))] == ["Two there."]


def test_one_line_per_sentence():
    assert split_sentences("A line\nbroken in\tthe middle. Next.") == ["A line broken in the middle.", "Next."]


# ---------------------------------------------------------------- sentences (cut view)


def test_cut_offsets_keep_the_leading_space_and_split_before_any_word():
    text = "First one. second one! Third?"
    cuts = sentence_starts(text)
    assert [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])] == ["First one.", " second one!", " Third?"]


def test_cut_after_the_line_break_and_never_after_an_abbreviation():
    text = "See e.g. this (cf. that). Then\nmore.\nLast, approx. ten."
    cuts = sentence_starts(text)
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    assert pieces == ["See e.g. this (cf. that).", " Then\nmore.\n", "Last, approx. ten."]
    assert "".join(pieces) == text


def test_cut_view_splits_cjk():
    text = "第一句。第二句！第三句"
    cuts = sentence_starts(text)
    assert [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])] == ["第一句。", "第二句！", "第三句"]


def test_one_abbreviation_list_for_both_views():
    for word in ("mr", "e.g", "i.e", "approx", "sra", "fig", "al"):
        assert word in ABBREVIATIONS
        assert len(split_sentences(f"Ask {word.capitalize()}. Jones now. Done.")) == 2
        assert len(sentence_starts(f"Ask {word}. jones now. done.")) == 1


# ---------------------------------------------------------------- words, stop words, stems


def test_word_count_ignores_rules_and_dashes():
    assert count_words("state-of-the-art tools * * * — and 3 more") == 5
    assert one_line(" a\n b\t\tc ") == "a b c"


def test_reference_terms_are_the_reference_scripts_tokens():
    # ASCII letter first, at least two characters, lower-cased, the reference's stop words out
    assert reference_terms("The Kafka-Streams API is x2 and C in ñandú v2_beta") == ["kafka-streams", "api", "x2", "v2_beta"]
    assert "are" in REFERENCE_STOPWORDS and "with" in REFERENCE_STOPWORDS and len(REFERENCE_STOPWORDS) == 23


def test_stemmed_terms_join_inflections_and_keep_surface_forms():
    counts, surface = stemmed_terms("Deploying deployments: we deployed; deploys and the 2024 x")
    assert counts == Counter({"deploy": 4})
    assert surface["deploy"] == Counter({"deploying": 1, "deployments": 1, "deployed": 1, "deploys": 1})


def test_stem_rules():
    assert [stem(w) for w in ("running", "libraries", "classes", "status", "creation", "cache", "go")] == [
        "run", "library", "class", "status", "creat", "cach", "go"]
    assert stem("ações") == "ações"  # non-ASCII words are left alone
    assert prefix_stem("deployment") == "deplo"


def test_stop_word_lists_nest_as_documented():
    assert ACRONYM_SKIPPED_WORDS <= ENGLISH_STOPWORDS and REFERENCE_STOPWORDS <= ENGLISH_STOPWORDS
    assert {"chunk", "section", "document"} <= NOTE_FILLER_WORDS
    assert all(len(w) >= 4 for w in NOTE_FILLER_WORDS)


def test_note_words_keep_versions_and_symbols():
    assert note_words("Use C++ and node.js v1.2, 'quoted'.") == ["use", "c++", "and", "node.js", "v1.2", "quoted"]


# ---------------------------------------------------------------- TF-IDF


def _counts(*texts: str) -> list[Counter]:
    return [Counter(t.split()) for t in texts]


def test_relative_tf_cosine_by_hand():
    tf = TfIdf(_counts("a b", "a c", "d"), sublinear=False, normalize=False)
    idf_a, idf_b = math.log(4 / 3) + 1, math.log(4 / 2) + 1
    assert tf.idf["a"] == idf_a and tf.idf["b"] == idf_b
    dot = (0.5 * idf_a) ** 2
    norm = math.sqrt((0.5 * idf_a) ** 2 + (0.5 * idf_b) ** 2)
    assert math.isclose(tf.cosine(0, 1), dot / (norm * norm))
    assert tf.cosine(0, 2) == 0.0 and tf.cosine(0, 0) > 0.999999


def test_sublinear_normalised_vectors_are_unit_and_symmetric():
    tf = TfIdf(_counts("x x x y", "x y y", ""), sublinear=True, normalize=True)
    assert math.isclose(sum(w * w for w in tf.vectors[0].values()), 1.0)
    assert tf.vectors[2] == {} and tf.cosine(0, 2) == 0.0
    assert math.isclose(tf.cosine(0, 1), tf.cosine(1, 0))
    assert tf.vectors[0]["x"] > tf.vectors[0]["y"]  # 1 + log 3 against 1


class _CountingTfIdf(TfIdf):
    computed: list[tuple[int, int]]

    def cosine(self, i: int, j: int) -> float:
        self.computed.append((i, j))
        return super().cosine(i, j)


def _scored(memo: CosineMemo, texts: list[str]) -> tuple[dict, list]:
    tf = _CountingTfIdf(_counts(*texts), sublinear=False, normalize=False)
    tf.computed = []
    return memo.cosines(tf), tf.computed


def test_the_cosine_memo_recomputes_only_pairs_whose_vectors_moved_and_gives_the_same_floats():
    texts = ["alpha beta gamma", "beta gamma delta delta", "gamma epsilon", "zeta eta", "alpha zeta theta"]
    memo = CosineMemo()
    first, computed = _scored(memo, texts)
    assert len(computed) == 10  # every pair once
    again, computed = _scored(memo, texts)
    assert again == first and computed == []
    # one more 'delta' in text 1: its length and counts change, no term's document frequency does,
    # so only text 1's vector moves and only its four pairs are scored again
    edited = texts[:1] + ["beta gamma delta delta delta"] + texts[2:]
    scores, computed = _scored(memo, edited)
    assert sorted(computed) == [(0, 1), (1, 2), (1, 3), (1, 4)]
    fresh = TfIdf(_counts(*edited), sublinear=False, normalize=False)
    assert scores == {(i, j): fresh.cosine(i, j) for i in range(5) for j in range(i + 1, 5)}  # exact floats
    # a new word in text 3 that texts 0 and 4 have: their idf moves, so do the vectors of 0, 3 and 4
    scores, computed = _scored(memo, edited[:3] + ["zeta eta alpha"] + edited[4:])
    assert sorted(computed) == [(i, j) for i in range(5) for j in range(i + 1, 5) if (i, j) != (1, 2)]
    # one text more: the idf of every term moves, so every pair is scored again
    more = ["iota"] + edited[:3] + ["zeta eta alpha"] + edited[4:]
    scores, computed = _scored(memo, more)
    assert len(computed) == 15
    fresh = TfIdf(_counts(*more), sublinear=False, normalize=False)
    assert scores == {(i, j): fresh.cosine(i, j) for i in range(6) for j in range(i + 1, 6)}


def test_shared_terms_and_candidate_pairs():
    tf = TfIdf(_counts("rare common", "rare common", "common other", "common"), sublinear=True, normalize=True)
    assert tf.shared_terms(0, 1) == ["rare", "common"]
    assert tf.candidates(limit=10, max_df=0.5) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    # above the limit only pairs sharing a term found in at most half of the texts are scored
    assert tf.candidates(limit=2, max_df=0.5) == [(0, 1)]
