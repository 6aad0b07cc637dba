"""Extractive summaries: the stand-in when every model answer for a node was rejected.

The node's own sentences, chosen without a model and given back in source order:

1. the text is cut into paragraphs (blank lines) and sentences (:func:`~ctxfst_tui.core.text.sentences.split_sentences`);
   each sentence is scored by the cosine of its TF-IDF vector (stemmed terms without stop words,
   sublinear tf, idf over the text's sentences) with the vector of the whole text: the sentences
   that carry the text's main terms score highest. Dialogue weighs less (the score × 1 − half the
   sentence's quoted share) and so do sentences of fewer than :data:`MIN_SENTENCE_WORDS` words,
   which are only taken when nothing else fits; a sentence repeated word for word counts once;
2. names first: for each named character of the text (:func:`~.text.top_names`: the most frequent
   names, honorifics left out), most frequent first, the best-scored sentence naming them is taken
   when no chosen sentence names them yet and it fits;
3. then the best-scored other sentences, while they fit;
4. the budget is the node's word limit, but at most a third of the text (at least
   :data:`MIN_BUDGET` words), so an extract stays a summary; sentences are never cut, except when
   every sentence is longer than the budget: then the best one is cut at a word and ends in ``...``.

Deterministic (ties go to the earlier sentence); stdlib only.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ctxfst_tui.core.summary.text import mentions, quoted_share, top_names
from ctxfst_tui.core.text.sentences import split_sentences
from ctxfst_tui.core.text.tfidf import TfIdf
from ctxfst_tui.core.text.words import count_words, stemmed_terms

MIN_SENTENCE_WORDS = 6
MIN_BUDGET = 40
SHARE = 1 / 3
MAX_NAMES = 5


@dataclass
class Extract:
    text: str
    chosen: int  # sentences taken
    of: int  # sentences of the text
    names: list[str] = field(default_factory=list)  # the text's names that the extract keeps

    def describe(self, what: str) -> str:
        """The node's flag: ``extractive: 3 of 17 sentences of the scene (...)``."""
        return (f"extractive: {self.chosen} of {self.of} sentence{'s' if self.of != 1 else ''} of the {what}, "
                f"chosen by TF-IDF weight and names (the model's answers were rejected)")


def sentences_of(text: str) -> list[str]:
    """The sentences of ``text``, never across a blank line (a heading or a line of dialogue ends one)."""
    out: list[str] = []
    for para in re.split(r"\n[ \t]*\n", text):
        out.extend(s for s in split_sentences(para) if count_words(s))
    return out


def budget_for(total_words: int, limit: int) -> int:
    return max(1, min(limit, max(MIN_BUDGET, int(total_words * SHARE))))


def extractive_summary(text: str, limit: int) -> Extract | None:
    """The extract of ``text`` within ``limit`` words (see the module doc); None when it has no words."""
    every = sentences_of(text)
    if not every:
        return None
    seen: set[str] = set()
    sents = []  # a sentence repeated word for word is taken once
    for sent in every:
        key = re.sub(r"\W+", " ", sent.casefold()).strip()
        if key not in seen:
            seen.add(key)
            sents.append(sent)
    lengths = [count_words(s) for s in sents]
    budget = budget_for(sum(lengths), limit)
    counts = [stemmed_terms(s)[0] for s in sents]
    whole: Counter = Counter()
    for c in counts:
        whole.update(c)
    tfidf = TfIdf(counts + [whole], sublinear=True, normalize=True)
    scores = []
    for i, s in enumerate(sents):
        score = tfidf.cosine(i, len(sents)) * (1.0 - 0.5 * quoted_share(s))
        if lengths[i] < MIN_SENTENCE_WORDS:
            score *= 0.5
        scores.append(score)
    order = sorted(range(len(sents)), key=lambda i: (-scores[i], i))
    chosen: set[int] = set()
    used = 0
    names = top_names(text, MAX_NAMES, min_count=2) or top_names(text, 3, min_count=1)
    for name in names:
        if any(mentions(sents[j], name) for j in chosen):
            continue
        for i in order:
            if i not in chosen and used + lengths[i] <= budget and mentions(sents[i], name):
                chosen.add(i)
                used += lengths[i]
                break
    for i in order:  # short sentences ("Yes.", "The gulls cried.") only fill an otherwise empty extract
        if i not in chosen and used + lengths[i] <= budget and (lengths[i] >= MIN_SENTENCE_WORDS or not chosen):
            chosen.add(i)
            used += lengths[i]
    if not chosen:  # every sentence is longer than the budget: the best one, cut at a word
        best = order[0]
        cut = " ".join(sents[best].split()[:budget]) + " ..."
        return Extract(cut, 1, len(every), [n for n in names if mentions(cut, n)])
    out = " ".join(sents[i] for i in sorted(chosen))
    return Extract(out, len(chosen), len(every), [n for n in names if mentions(out, n)])
