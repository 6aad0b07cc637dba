"""Part headings beyond BOOK and PART: prologues, interludes, epilogues, "BOOK THE FIRST", "PRIMEIRA PARTE".

The three excerpts in tests/fixtures/summary/ are cut verbatim from public-domain Project Gutenberg
texts (War and Peace #2600, Maude translation; A Tale of Two Cities #98; Alencar's O Guarany,
Garnier 1883): their headings, their contents blocks and the first or last paragraphs of a few
chapters, other paragraphs and chapters left out. Before this change the two epilogues' chapters
were filed under BOOK FIFTEEN, Dickens' books were no parts at all, and O Guarany was one part
"TOMO PRIMEIRO" (its title page) with no chapter.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT, SHARED
from ctxfst_tui.core.summary.segment import load_manuscript, segment, uncovered_text
from ctxfst_tui.core.summary.summarizer import Summarizer, SummarySettings
from ctxfst_tui.core.summary.tree import outline_text
from fakes import StoryBackend

FIXTURES = ROOT / "tests" / "fixtures" / "summary"
WAR_AND_PEACE = FIXTURES / "war-and-peace-excerpt.txt"
TWO_CITIES = FIXTURES / "tale-of-two-cities-excerpt.txt"
GUARANY = FIXTURES / "o-guarany-excerpt.txt"
NOVELS = SHARED / "corpus" / "novels"
needs_corpus = pytest.mark.skipif(not (NOVELS / "frankenstein_84-0.txt").exists()
                                  or not (NOVELS / "pride_and_prejudice.txt").exists(),
                                  reason="../shared/corpus/novels not found")


def words(text: str) -> Counter:
    return Counter(t for t in text.split() if re.search(r"\w", t))


def check_every_word_once(ms) -> None:
    """Scenes tile the text: in order, disjoint, and with headings and stripped boilerplate they hold every word."""
    scenes = ms.root.scenes()
    for a, b in zip(scenes, scenes[1:]):
        assert a.end <= b.start, (a.id, b.id)
    assert uncovered_text(ms) == []
    got = Counter()
    for s in scenes:
        got += words(ms.node_text(s))
    for n in ms.root.walk():
        if n.heading:
            got += words(ms.text[n.heading[0]:n.heading[1]])
    for a, b, _ in ms.removed:
        got += words(ms.text[a:b])
    assert got == words(ms.text)


def parts(ms):
    return [n for n in ms.root.children if n.kind == "part"]


def para(n: int, seed: str) -> str:
    return " ".join(f"{seed}{i}" + ("." if i % 10 == 9 or i == n - 1 else "") for i in range(n))


# ---------------------------------------------------------------- real texts


def test_war_and_peace_first_and_second_epilogue_are_parts_with_their_chapters():
    ms = load_manuscript(WAR_AND_PEACE)
    assert [p.title for p in parts(ms)] == ["BOOK ONE: 1805", "BOOK FIFTEEN: 1812 - 13",
                                           "FIRST EPILOGUE: 1813 - 20", "SECOND EPILOGUE"]
    assert [[c.title for c in p.children] for p in parts(ms)] == [
        ["CHAPTER I"],
        ["CHAPTER XI", "CHAPTER XII", "CHAPTER XX"],
        ["CHAPTER I", "CHAPTER II", "CHAPTER XVI"],
        ["CHAPTER I", "CHAPTER II", "CHAPTER III", "CHAPTER IV", "CHAPTER XII"],
    ]
    assert [n.kind for n in ms.root.children] == ["scene", "part", "part", "part", "part"]
    # the contents block (17 part entries, 365 chapter entries, the epilogues among them) is front matter
    front = ms.root.children[0]
    assert front.front_matter
    toc = ms.node_text(front)
    assert "SECOND EPILOGUE" in toc and toc.count("CHAPTER ") == 365
    assert ms.root.title == "War and Peace"
    assert outline_text(ms).splitlines()[0] == "War and Peace — 1,801 words, 4 parts, 12 chapters, 12 scenes"
    first_epilogue = parts(ms)[2]
    assert ms.node_text(first_epilogue.children[0].children[0]).startswith("Seven years had passed.")
    check_every_word_once(ms)


def test_a_tale_of_two_cities_book_the_first_and_book_the_second():
    ms = load_manuscript(TWO_CITIES)
    assert [p.title for p in parts(ms)] == ["Book the First--Recalled to Life", "Book the Second--the Golden Thread"]
    assert [[c.title for c in p.children] for p in parts(ms)] == [
        ["CHAPTER I. The Period", "CHAPTER II. The Mail", "CHAPTER VI. The Shoemaker"],
        ["CHAPTER I. Five Years Later", "CHAPTER II. A Sight", "CHAPTER III. A Disappointment"],
    ]
    # "Book the Third" is only listed in the contents: front matter, not an empty part
    assert "Book the Third--the Track of a Storm" in ms.node_text(ms.root.children[0])
    assert ms.root.children[0].front_matter
    last_of_book_one = parts(ms)[0].children[-1]
    assert ms.node_text(last_of_book_one).rstrip().endswith("The end of the first book.")
    assert outline_text(ms).splitlines()[0] == "A Tale of Two Cities — 760 words, 2 parts, 6 chapters, 6 scenes"
    check_every_word_once(ms)


def test_o_guarany_primeira_parte_with_numeral_chapters_and_its_title_page():
    ms = load_manuscript(GUARANY)
    assert [p.title for p in parts(ms)] == ["PRIMEIRA PARTE — OS AVENTUREIROS"]
    assert [c.title for c in parts(ms)[0].children] == ["I — SCENARIO", "II — LEALDADE"]
    # TOMO PRIMEIRO on the title page, the preface and the INDICE (listing SEGUNDA PARTE) are front matter
    front = ms.root.children[0]
    assert front.front_matter
    for bit in ("TOMO PRIMEIRO", "AO LEITOR", "INDICE", "SEGUNDA PARTE"):
        assert bit in ms.node_text(front), bit
    assert ms.node_text(parts(ms)[0].children[0].children[0]).startswith("De um dos cabeços")
    check_every_word_once(ms)


@needs_corpus
def test_the_corpus_novels_keep_their_counts():
    frank = load_manuscript(NOVELS / "frankenstein_84-0.txt")
    assert not parts(frank)
    assert len(frank.root.chapters()) == 28  # Letters 1-4 and Chapters 1-24
    assert len([s for s in frank.root.scenes() if not s.front_matter]) == 170
    pp = load_manuscript(NOVELS / "pride_and_prejudice.txt")
    assert not parts(pp)
    assert len(pp.root.chapters()) == 61
    assert len(pp.root.scenes()) == 295


# ---------------------------------------------------------------- heading forms


@pytest.mark.parametrize("heading", [
    "PROLOGUE", "EPILOGUE", "FIRST EPILOGUE", "SECOND EPILOGUE", "INTERLUDE", "Interlude II",
    "VOLUME I", "VOLUME ONE", "BOOK THE FIRST", "BOOK THE SECOND", "Book the First", "Volume the Third",
    "BOOK FIRST—A JUST MAN", "LIVRO PRIMEIRO", "LIVRO I", "PARTE I", "PRIMEIRA PARTE", "Segunda Parte",
    "EPÍLOGO", "PRÓLOGO", "EPILOGO", "PROLOGO", "INTERLÚDIO", "BOOK ONE: 1805", "EPILOGUE. 1813-1820",
    "EPILOGUE — Ten Years Later", "Epílogo: o regresso", "BOOK THE FIRST--Recalled to Life",
])
def test_part_heading_forms(heading):
    text = (f"PART XX\n\nChapter 1\n\n{para(60, 'a')}\n\n{heading}\n\nChapter 2\n\n{para(60, 'b')}\n\n"
            f"Chapter 3\n\n{para(60, 'c')}\n")
    ms = segment(text)
    assert [p.title for p in parts(ms)] == ["PART XX", heading]
    assert [[c.title for c in p.children] for p in parts(ms)] == [["Chapter 1"], ["Chapter 2", "Chapter 3"]]
    check_every_word_once(ms)


def test_markdown_epilogue_heading():
    text = (f"# Part One\n\n## Chapter 1\n\n{para(60, 'a')}\n\n# Epilogue\n\n## Chapter 2\n\n{para(60, 'b')}\n")
    ms = segment(text, path=Path("book.md"))
    assert [[p.title, [c.title for c in p.children]] for p in parts(ms)] == [
        ["Part One", ["Chapter 1"]], ["Epilogue", ["Chapter 2"]]]


# ---------------------------------------------------------------- where the chapters go


def test_prologue_and_epilogue_of_a_book_of_chapters_are_parts_of_their_own_text():
    text = (f"PROLOGUE\n\n{para(80, 'p')}\n\nChapter 1\n\n{para(90, 'a')}\n\nINTERLUDE\n\n{para(70, 'i')}\n\n"
            f"Chapter 2\n\n{para(90, 'b')}\n\nEPILOGUE\n\n{para(50, 'e')}\n")
    ms = segment(text)
    assert [(n.kind, n.title, n.id) for n in ms.root.children] == [
        ("part", "PROLOGUE", "p1"), ("chapter", "Chapter 1", "c1"), ("part", "INTERLUDE", "p2"),
        ("chapter", "Chapter 2", "c2"), ("part", "EPILOGUE", "p3")]
    prologue, interlude, epilogue = parts(ms)
    assert [s.kind for s in prologue.children] == ["scene"] and prologue.words == 80
    assert ms.node_text(prologue.children[0]).startswith("p0 p1")
    assert interlude.words == 70 and epilogue.words == 50
    assert "Chapter 1" not in ms.node_text(prologue.children[0])  # not merged into a chapter, nor one into it
    check_every_word_once(ms)
    assert outline_text(ms).splitlines()[0].endswith(" — 380 words, 3 parts, 2 chapters, 5 scenes")


def test_chapters_after_an_epilogue_belong_to_it():
    text = (f"Chapter 1\n\n{para(60, 'a')}\n\nChapter 2\n\n{para(60, 'b')}\n\nEPILOGUE\n\n"
            f"Chapter 1\n\n{para(60, 'c')}\n\nChapter 2\n\n{para(60, 'd')}\n")
    ms = segment(text)
    assert [n.kind for n in ms.root.children] == ["chapter", "chapter", "part"]
    assert [c.title for c in parts(ms)[0].children] == ["Chapter 1", "Chapter 2"]
    check_every_word_once(ms)


def test_a_prologue_right_under_a_part_heading_is_its_first_chapter():
    text = (f"PART ONE\n\nPROLOGUE\n\n{para(60, 'p')}\n\nChapter 1\n\n{para(60, 'a')}\n\n"
            f"PART TWO\n\nChapter 2\n\n{para(60, 'b')}\n\nEPILOGUE\n\n{para(60, 'e')}\n")
    ms = segment(text)
    assert [[p.title, [c.title for c in p.children if c.kind == "chapter"]] for p in parts(ms)] == [
        ["PART ONE", ["PROLOGUE", "Chapter 1"]], ["PART TWO", ["Chapter 2"]], ["EPILOGUE", []]]
    md = segment(f"# Part One\n\n## Chapter 1\n\n{para(60, 'a')}\n\n## Interlude\n\n{para(60, 'i')}\n\n"
                 f"## Chapter 2\n\n{para(60, 'b')}\n", path=Path("b.md"))
    assert [[p.title, [c.title for c in p.children]] for p in parts(md)] == [
        ["Part One", ["Chapter 1", "Interlude", "Chapter 2"]]]


def test_a_part_of_scenes_only_is_summarized():
    ms = segment(f"PROLOGUE\n\n{para(120, 'p')}\n\nChapter 1\n\n{para(120, 'a')}\n\nChapter 2\n\n{para(120, 'b')}\n\n"
                 f"EPILOGUE\n\n{para(120, 'e')}\n")
    report = Summarizer(StoryBackend(), SummarySettings()).run(ms)
    assert report.failed == 0 and not report.error
    for p in parts(ms):
        assert p.status == "done" and p.summary, p.title
    assert ms.root.status == "done"


# ---------------------------------------------------------------- what is not a heading


def test_sentences_that_begin_like_a_heading_stay_text():
    lines = ["Prologue to the tale was told.", "Book the first train left at dawn.", "First part of the day was calm.",
             "Epilogue and prologue are words.", "Volume of the sea rose."]
    inside = f"Chapter 1\n\n{para(40, 'a')}\n" + "\n".join(lines) + f"\n{para(40, 'b')}\n\n"
    alone = "".join(f"{line}\n\n{para(30, f's{i}')}\n\n" for i, line in enumerate(lines))
    ms = segment(inside + "Chapter 2\n\n" + alone)
    assert not parts(ms)
    assert [c.title for c in ms.root.chapters()] == ["Chapter 1", "Chapter 2"]
    scene_text = "\n".join(ms.node_text(s) for s in ms.root.scenes())
    for line in lines:
        assert scene_text.count(line) == 2, line
    check_every_word_once(ms)


def test_a_table_of_contents_with_prologue_and_epilogue_makes_no_empty_parts():
    body = (f"PROLOGUE\n\n{para(60, 'p')}\n\nCHAPTER I\n\n{para(60, 'a')}\n\nCHAPTER II\n\n{para(60, 'b')}\n\n"
            f"EPILOGUE\n\n{para(60, 'e')}\n")
    toc = "My Novel\n\nCONTENTS\n\nPROLOGUE\n\nCHAPTER I\n\nCHAPTER II\n\nEPILOGUE\n\n\n"
    ms = segment(toc + body)
    assert [(n.kind, n.title) for n in ms.root.children] == [
        ("scene", "Front matter"), ("part", "PROLOGUE"), ("chapter", "CHAPTER I"), ("chapter", "CHAPTER II"),
        ("part", "EPILOGUE")]
    assert all(p.words == 60 for p in parts(ms))
    # the contents lists the epilogue last and the text opens on a chapter: still one epilogue, at the end
    body2 = f"CHAPTER I\n\n{para(60, 'a')}\n\nCHAPTER II\n\n{para(60, 'b')}\n\nEPILOGUE\n\n{para(60, 'e')}\n"
    ms2 = segment("My Novel\n\nCONTENTS\n\nCHAPTER I\n\nCHAPTER II\n\nEPILOGUE\n\n\n" + body2)
    assert [(n.kind, n.title) for n in ms2.root.children] == [
        ("scene", "Front matter"), ("chapter", "CHAPTER I"), ("chapter", "CHAPTER II"), ("part", "EPILOGUE")]
    check_every_word_once(ms)
    check_every_word_once(ms2)



def test_a_volume_with_its_own_contents_stays_a_part():
    text = (f"VOLUME I\n\nCONTENTS\n\nCHAPTER I\n\nCHAPTER II\n\n\nCHAPTER I\n\n{para(60, 'a')}\n\n"
            f"CHAPTER II\n\n{para(60, 'b')}\n\nVOLUME II\n\nCHAPTER III\n\n{para(60, 'c')}\n")
    ms = segment(text)
    assert [[p.title, [c.title for c in p.children if c.kind == "chapter"]] for p in parts(ms)] == [
        ["VOLUME I", ["CHAPTER I", "CHAPTER II"]], ["VOLUME II", ["CHAPTER III"]]]
    check_every_word_once(ms)
