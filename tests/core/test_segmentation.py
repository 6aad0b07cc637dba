"""Segmentation of manuscripts into parts / chapters / scenes (no model involved)."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import SAMPLE_DOCS, SHARED
from ctxfst_tui.core.summary.segment import (SegmentSettings, load_manuscript, read_manuscript_text, segment,
                                             uncovered_text)
from ctxfst_tui.core.summary.text import open_quote_after
from ctxfst_tui.core.text.sentences import sentence_spans
from ctxfst_tui.core.summary.tree import outline_text

NOVELS = SHARED / "corpus" / "novels"
PP = NOVELS / "pride_and_prejudice.txt"
FRANK = NOVELS / "frankenstein_84-0.txt"
needs_corpus = pytest.mark.skipif(not FRANK.exists() or not PP.exists(), reason="../shared/corpus/novels not found")


def words(text: str) -> Counter:
    """Independent of the segmenter's word function: whitespace tokens with a letter or digit."""
    return Counter(t for t in text.split() if re.search(r"\w", t))


def scene_words(ms) -> Counter:
    c: Counter = Counter()
    for s in ms.root.scenes():
        c += words(ms.node_text(s))
    return c


def heading_words(ms) -> Counter:
    c: Counter = Counter()
    for n in ms.root.walk():
        if n.heading:
            c += words(ms.text[n.heading[0]:n.heading[1]])
    return c


def check_tiling(ms) -> None:
    """Scenes are disjoint, in order, start and end at paragraph (or sentence) boundaries, and nothing is left over."""
    scenes = ms.root.scenes()
    for a, b in zip(scenes, scenes[1:]):
        assert a.end <= b.start, (a.id, b.id)
    for s in scenes:
        text = ms.text
        assert s.start == 0 or text[s.start - 1] in "\n \t" or text[s.start - 1] in ".!?\"”", s.id
        assert s.end == len(text) or text[s.end] in "\n \t", s.id
        assert s.words > 0
    assert uncovered_text(ms) == []
    for node in ms.root.walk():
        if node.kind != "scene":
            assert node.words == sum(c.words for c in node.children)


# ---------------------------------------------------------------- the corpus novels


@needs_corpus
def test_pride_and_prejudice_61_chapters_every_word_once():
    ms = load_manuscript(PP)
    chapters = ms.root.chapters()
    assert [c.title for c in chapters] == [f"Chapter {i}" for i in range(1, 62)]
    assert not any(n.kind == "part" for n in ms.root.walk())
    check_tiling(ms)
    raw = read_manuscript_text(PP)
    # nothing stripped here (no Gutenberg header in this copy): scenes + headings == the whole text
    assert ms.removed == []
    assert scene_words(ms) + heading_words(ms) == words(raw)
    sizes = [s.words for s in ms.root.scenes()]
    assert max(sizes) <= 1000
    # short chapters stay one scene; long ones are paragraph groups of 200-1,000 words
    for ch in chapters:
        if ch.words > 1000:
            assert all(200 <= s.words <= 1000 for s in ch.children), ch.title


@needs_corpus
def test_frankenstein_letters_and_chapters_contents_and_boilerplate():
    ms = load_manuscript(FRANK)
    titles = [c.title for c in ms.root.chapters()]
    assert titles == [f"Letter {i}" for i in range(1, 5)] + [f"Chapter {i}" for i in range(1, 25)]
    assert ms.root.title == "Frankenstein"
    check_tiling(ms)
    # the table of contents is front matter, not chapters
    front = ms.root.children[0]
    assert front.front_matter and front.id == "front"
    assert "CONTENTS" in ms.node_text(front) and "Chapter 24" in ms.node_text(front)
    # Gutenberg boilerplate is gone from every scene
    all_scenes = "\n".join(ms.node_text(s) for s in ms.root.scenes())
    for junk in ("Project Gutenberg", "PROJECT GUTENBERG", "*** START", "*** END", "LICENSE", "Produced by", "gutenberg.org"):
        assert junk not in all_scenes, junk
    last = ms.root.chapters()[-1].children[-1]
    assert ms.node_text(last).rstrip().endswith("lost in darkness and distance.")
    first = ms.root.chapters()[0].children[0]
    assert ms.node_text(first).startswith("_To Mrs. Saville, England._")
    # no word lost or duplicated: body between the Gutenberg markers, computed independently
    raw = read_manuscript_text(FRANK)
    start = raw.index("\n", raw.index("*** START OF THIS PROJECT GUTENBERG")) + 1
    end = raw.index("End of the Project Gutenberg EBook")
    body = raw[start:end]
    credits = body[: body.index("Frankenstein;")]  # "Produced by ..." credits right after the START line
    assert credits.strip().startswith("Produced by")
    assert scene_words(ms) + heading_words(ms) + words(credits) == words(body)


@needs_corpus
def test_corpus_scene_boundaries_rarely_inside_a_speech():
    # Frankenstein's creature tells six chapters as one quotation, so some cuts must fall inside it;
    # Pride and Prejudice cuts land inside an open quotation only for multi-paragraph letters.
    ms = load_manuscript(PP)
    inside = 0
    cuts = 0
    for ch in ms.root.chapters():
        for s in ch.children[:-1]:
            cuts += 1
            last_para = ms.node_text(s).rsplit("\n\n", 1)[-1]
            inside += open_quote_after(last_para)
    assert cuts > 100 and inside <= 0.05 * cuts


def test_sample_docs_novels():
    story = load_manuscript(SAMPLE_DOCS / "novels" / "the-keeper-of-gull-rock.txt")
    assert story.root.title == "The Keeper of Gull Rock"
    assert [c.title for c in story.root.chapters()] == [
        "Chapter One: The Lamp", "Chapter Two: What Elias Told", "Chapter Three: The Inquiry"]
    assert [len(c.children) for c in story.root.chapters()] == [2, 2, 2]
    assert 1200 <= story.root.words <= 1700
    check_tiling(story)
    pp = load_manuscript(SAMPLE_DOCS / "novels" / "pride-and-prejudice-ch1-3.txt")
    assert [c.title for c in pp.root.chapters()] == ["Chapter 1", "Chapter 2", "Chapter 3"]
    check_tiling(pp)


# ---------------------------------------------------------------- synthetic manuscripts


def para(n: int, seed: str = "word") -> str:
    """A paragraph of ``n`` words made of short sentences."""
    ws = []
    for i in range(n):
        w = f"{seed}{i}"
        if i % 10 == 0:
            w = w.capitalize()
        ws.append(w + ("." if i % 10 == 9 or i == n - 1 else ""))
    return " ".join(ws)


def test_gutenberg_header_footer_and_markers_are_not_scenes():
    text = (
        "The Project Gutenberg EBook of Test\n\nTitle: A Test Novel\n\nAuthor: Nobody\n\n"
        "*** START OF THE PROJECT GUTENBERG EBOOK A TEST NOVEL ***\n\nProduced by Some Volunteers.\n\n\n"
        f"Chapter 1\n\n{para(150, 'a')}\n\n* * *\n\n{para(150, 'b')}\n\n"
        f"Chapter 2\n\n{para(160, 'c')}\n\n***\n\n{para(170, 'd')}\n\n"
        "End of the Project Gutenberg EBook of A Test Novel\n\n*** END OF THE PROJECT GUTENBERG EBOOK A TEST NOVEL ***\n\n"
        "*** START: FULL LICENSE ***\n\nTHE FULL PROJECT GUTENBERG LICENSE\n\nLots of legal text here.\n"
    )
    ms = segment(text)
    assert ms.root.title == "A Test Novel"
    assert [c.title for c in ms.root.chapters()] == ["Chapter 1", "Chapter 2"]
    assert [[s.words for s in c.children] for c in ms.root.chapters()] == [[150, 150], [160, 170]]
    assert not any(s.front_matter for s in ms.root.scenes())
    check_tiling(ms)
    assert "Produced" not in "".join(ms.node_text(s) for s in ms.root.scenes())


@pytest.mark.parametrize("marker", ["***", "* * *", "* * * * *", "#", "~", "---", "   * * * * *"])
def test_scene_markers(marker):
    text = f"Chapter 1\n\n{para(200, 'a')}\n\n{marker}\n\n{para(220, 'b')}\n\n{marker}\n\n{para(240, 'c')}\n"
    ms = segment(text)
    ch = ms.root.chapters()[0]
    assert [s.words for s in ch.children] == [200, 220, 240]
    assert all(marker.strip() not in ms.node_text(s) for s in ch.children)
    check_tiling(ms)


def test_portuguese_headings_parts_and_markdown():
    text = (
        "# O Farol\n\n"
        f"# Parte I\n\n## Capítulo 1\n\n{para(300, 'a')}\n\n## Capítulo 2\n\n{para(250, 'b')}\n\n"
        f"# Parte II\n\n## Capítulo 3\n\n{para(260, 'c')}\n\n## Capítulo Quatro\n\n{para(270, 'd')}\n"
    )
    ms = segment(text, path=Path("o-farol.md"))
    parts = [n for n in ms.root.children if n.kind == "part"]
    assert [p.title for p in parts] == ["Parte I", "Parte II"]
    assert [[c.title for c in p.children] for p in parts] == [["Capítulo 1", "Capítulo 2"], ["Capítulo 3", "Capítulo Quatro"]]
    assert ms.root.title == "O Farol"
    check_tiling(ms)
    plain = segment(f"CAPÍTULO I\n\n{para(120, 'a')}\n\nCAPÍTULO II\n\n{para(130, 'b')}\n\nCarta 3\n\n{para(140, 'c')}\n")
    assert [c.title for c in plain.root.chapters()] == ["CAPÍTULO I", "CAPÍTULO II", "Carta 3"]


@pytest.mark.parametrize("headings,titles", [
    (["CHAPTER I.", "CHAPTER II.", "CHAPTER IV."], ["CHAPTER I.", "CHAPTER II.", "CHAPTER IV."]),
    (["Chapter XII", "Chapter XIII", "Chapter XIV"], ["Chapter XII", "Chapter XIII", "Chapter XIV"]),
    (["CHAPTER 1. Loomings.", "CHAPTER 2. The Carpet-Bag.", "CHAPTER 3. The Spouter-Inn."],
     ["CHAPTER 1. Loomings.", "CHAPTER 2. The Carpet-Bag.", "CHAPTER 3. The Spouter-Inn."]),
    (["# Chapter 3", "# Chapter 4", "# Capítulo 5"], ["Chapter 3", "Chapter 4", "Capítulo 5"]),
    (["Letter 1", "Letter 2", "Chapter 1"], ["Letter 1", "Letter 2", "Chapter 1"]),
    (["I.", "II.", "III."], ["I.", "II.", "III."]),
    (["Chapter One", "Chapter Twenty-One", "Chapter Thirty"], ["Chapter One", "Chapter Twenty-One", "Chapter Thirty"]),
])
def test_chapter_heading_forms(headings, titles):
    text = "".join(f"{h}\n\n{para(150, f's{i}')}\n\n" for i, h in enumerate(headings))
    ms = segment(text)
    assert [c.title for c in ms.root.chapters()] == titles
    check_tiling(ms)


def test_book_parts_above_chapters():
    text = (f"BOOK ONE: 1805\n\nCHAPTER I\n\n{para(150, 'a')}\n\nCHAPTER II\n\n{para(150, 'b')}\n\n"
            f"BOOK TWO: 1806\n\nCHAPTER I\n\n{para(150, 'c')}\n\nPART II\n\n{para(40, 'x')}\n\nChapter 3\n\n{para(150, 'd')}\n")
    ms = segment(text)
    parts = [n for n in ms.root.children if n.kind == "part"]
    assert [p.title for p in parts] == ["BOOK ONE: 1805", "BOOK TWO: 1806", "PART II"]
    assert [len(p.chapters()) for p in parts] == [2, 1, 1]
    assert parts[2].children[0].kind == "scene"  # the part's own text before its first chapter
    assert [c.id for c in ms.root.chapters()] == ["c1", "c2", "c3", "c4"]
    check_tiling(ms)


def test_contents_entries_are_not_chapters():
    toc = "CONTENTS\n\n" + "".join(f"Chapter {i}\n\n" for i in range(1, 4)) + "\n\n"
    toc2 = "PART I\nChapter 1\nChapter 2\nPART II\nChapter 3\n\n"
    body = f"PART I\n\nChapter 1\n\n{para(150, 'a')}\n\nChapter 2\n\n{para(150, 'b')}\n\nPART II\n\nChapter 3\n\n{para(150, 'c')}\n"
    for front in (toc, toc2):
        ms = segment("My Novel\n\n" + front + body)
        assert [c.title for c in ms.root.chapters()] == ["Chapter 1", "Chapter 2", "Chapter 3"]
        assert [p.title for p in ms.root.children if p.kind == "part"] == ["PART I", "PART II"]
        assert ms.root.children[0].front_matter
        check_tiling(ms)


def test_tiny_scenes_merge_and_huge_ones_split():
    text = (f"Chapter 1\n\n{para(300, 'a')}\n\n***\n\n{para(30, 'tiny')}\n\n***\n\n{para(400, 'b')}\n\n"
            "Chapter 2\n\n" + "\n\n".join(para(100, f"p{i}") for i in range(30)) + "\n")
    ms = segment(text)
    c1, c2 = ms.root.chapters()
    assert len(c1.children) == 2 and sum(s.words for s in c1.children) == 730
    assert all(s.words >= 100 for s in c1.children)
    assert c2.words == 3000
    assert 3 <= len(c2.children) <= 15
    assert all(200 <= s.words <= 1000 for s in c2.children)
    check_tiling(ms)


def test_a_paragraph_longer_than_a_scene_is_cut_between_sentences():
    sentences = [f"Sentence number {i} tells of the long night and of the sea beyond the point." for i in range(220)]
    text = "Chapter 1\n\n" + " ".join(sentences) + "\n"
    ms = segment(text)
    scenes = ms.root.chapters()[0].children
    assert len(scenes) >= 2 and all(s.words <= 1000 for s in scenes)
    for s in scenes:
        t = ms.node_text(s)
        assert t.startswith("Sentence number") and t.endswith("the point.")
    check_tiling(ms)


def test_a_multi_paragraph_speech_is_not_cut():
    narr = [para(150, f"n{i}") for i in range(3)]
    speech = ["\u201c" + para(150, "s0"), "\u201c" + para(150, "s1"), "\u201c" + para(150, "s2"),
              "\u201c" + para(150, "s3") + "\u201d"]
    tail = [para(150, f"t{i}") for i in range(3)]
    paragraphs = narr + speech + tail
    ms = segment("Chapter 1\n\n" + "\n\n".join(paragraphs) + "\n")
    scenes = ms.root.chapters()[0].children
    assert len(scenes) >= 2
    for s in scenes[:-1]:
        last_para = ms.node_text(s).rsplit("\n\n", 1)[-1]
        assert not open_quote_after(last_para), "a scene ends inside a speech"
    check_tiling(ms)


def test_dialogue_lines_inside_a_huge_paragraph_are_not_cut():
    lines = []
    for i in range(120):
        lines.append(f"\u201cWe sail at dawn. Bring the charts. Say nothing to the crew,\u201d said the captain {i}.")
        lines.append(f"The mate nodded and went below for the {i} time.")
    ms = segment("Chapter 1\n\n" + " ".join(lines) + "\n")
    scenes = ms.root.chapters()[0].children
    assert len(scenes) >= 2
    for s in scenes:
        t = ms.node_text(s)
        assert t.count("\u201c") == t.count("\u201d"), "a scene cuts a line of dialogue"
        spans = sentence_spans(t)
        assert spans and spans[-1][1] == len(t)


def test_no_chapters_scenes_under_the_book_and_outline_json(tmp_path):
    text = f"{para(300, 'a')}\n\n* * *\n\n{para(350, 'b')}\n"
    p = tmp_path / "story.txt"
    p.write_text(text, encoding="utf-8")
    ms = load_manuscript(p)
    assert ms.root.title == "story"
    assert [n.kind for n in ms.root.children] == ["scene", "scene"]
    data = ms.outline_json()
    assert set(data) == {"title", "words", "children"}
    assert data["words"] == 650
    for child in data["children"]:
        assert set(child) == {"kind", "title", "words", "children"} and child["kind"] == "scene"
    assert "story — 650 words, 0 chapters, 2 scenes" in outline_text(ms)


def test_crlf_bom_and_cp1252(tmp_path):
    body = f"Chapter 1\r\n\r\n{para(150, 'a')}\r\n\r\nChapter 2\r\n\r\n{para(150, 'b')} caf\u00e9\r\n"
    p = tmp_path / "a.txt"
    p.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    q = tmp_path / "b.txt"
    q.write_bytes(body.encode("cp1252"))
    for f in (p, q):
        ms = load_manuscript(f)
        assert [c.title for c in ms.root.chapters()] == ["Chapter 1", "Chapter 2"]
        assert "\r" not in ms.text and "café" in ms.text
        check_tiling(ms)


def test_settings_change_scene_sizes():
    text = "Chapter 1\n\n" + "\n\n".join(para(100, f"p{i}") for i in range(20)) + "\n"
    small = segment(text, settings=SegmentSettings(target_scene_words=300, max_scene_words=400))
    large = segment(text)
    assert len(small.root.scenes()) > len(large.root.scenes())
    assert all(s.words <= 400 for s in small.root.scenes())


def test_cli_outline_makes_no_model_call(monkeypatch, capsys):
    import argparse

    from ctxfst_tui.cli import summary as cli_support

    def boom(*a, **k):  # pragma: no cover - must not be called
        raise AssertionError("the outline loaded a model")

    monkeypatch.setattr(cli_support, "make_backend_from_args", boom)
    p = argparse.ArgumentParser()
    cli_support.add_summarize_arguments(p)
    story = str(SAMPLE_DOCS / "novels" / "the-keeper-of-gull-rock.txt")
    assert cli_support.run_summarize_cli(p.parse_args([story, "--outline"])) == 0
    out = capsys.readouterr().out
    assert out.startswith("The Keeper of Gull Rock — 1,")
    assert "  Chapter Two: What Elias Told — 457 words" in out
    assert cli_support.run_summarize_cli(p.parse_args([story, "--outline", "--json"])) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["kind"] for c in data["children"]] == ["scene", "chapter", "chapter", "chapter"]
    assert cli_support.run_summarize_cli(p.parse_args(["/nonexistent/novel.txt", "--outline"])) == 2
    assert "no such file" in capsys.readouterr().err
