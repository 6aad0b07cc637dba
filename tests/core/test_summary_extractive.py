"""Summaries are never empty (issue #16, item 2): a node whose model answers are both rejected gets an
extractive summary — its own most informative sentences, names kept, within the word limit — marked
``extractive`` in the tree, the JSON, the CLI's counts line and the Summary pane (``¶``); its chapter
and book merge it like any summary. Stores written before the mark existed still load, hashes and all.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

from textual.app import App, ComposeResult

from conftest import FIXTURES, SAMPLE_DOCS
from ctxfst_tui.cli import summary as cli_summary
from ctxfst_tui.core.summary.extractive import extractive_summary, sentences_of
from ctxfst_tui.core.summary.session import NovelSession
from ctxfst_tui.core.summary.store import load_store
from ctxfst_tui.core.summary.summarizer import Summarizer, SummarySettings
from ctxfst_tui.core.summary.text import top_names
from ctxfst_tui.core.summary.tree import outline_text
from ctxfst_tui.core.text.words import count_words, one_line
from ctxfst_tui.services.jobs import novel_view
from ctxfst_tui.ui.widgets.summary.tree import SummaryPane
from fakes import StoryBackend
from pilot import SIZE

STORY = SAMPLE_DOCS / "novels" / "the-keeper-of-gull-rock.txt"
OLD_STORE = FIXTURES / "summary" / "story-before-extractive.summary.json"  # written by the code before extracts
GOOD = " Nora keeps the lamp lit in a gale while her father Elias lies ill."


def copy_story(tmp_path: Path) -> Path:
    p = tmp_path / "story.txt"
    shutil.copy(STORY, p)
    return p


def echo_of(ms, node_id: str) -> str:
    """An answer the gate rejects: the scene's own first 300 characters."""
    return " " + ms.node_text(ms.root.find(node_id))[:300]


def assert_is_extract_of(summary: str, source: str, limit: int) -> None:
    """Whole sentences of ``source``, in its order, within ``limit`` words."""
    assert 0 < count_words(summary) <= limit, (count_words(summary), limit)
    flat = one_line(source)
    pos = -1
    for sentence in sentences_of(summary):
        at = flat.find(sentence, pos + 1)
        assert at > pos, f"not a sentence of the source in order: {sentence!r}"
        pos = at


def test_extractive_summary_picks_whole_sentences_with_the_names_within_the_limit():
    text = ("The fog lay thick on the harbour at dawn. " * 3
            + "Marta Quell rowed out alone to the wreck of the old schooner before anyone was awake. "
            + "\"Is anyone there?\" she called. " * 4
            + "Inside the cabin she found Tomas Brand, half frozen, holding a sealed letter for the governor. "
            + "She wrapped Tomas in her coat and rowed him back while the bells of the town began to ring. "
            + "Marta hid the letter under a loose board in her kitchen and told no one what it said.\n\n"
            + "The gulls cried. " * 6)
    ext = extractive_summary(text, 150)
    assert_is_extract_of(ext.text, text, 150)
    assert count_words(ext.text) <= max(40, count_words(text) // 3)  # at most a third of the text
    assert set(top_names(text, 5, min_count=2)) == {"Marta", "Tomas"} and ext.names == ["Marta", "Tomas"]
    assert "Marta Quell rowed out alone" in ext.text and "letter" in ext.text
    assert "The gulls cried." not in ext.text and "Is anyone there" not in ext.text  # filler and dialogue weigh less
    assert ext.of == len(sentences_of(text)) and ext.chosen == len(sentences_of(ext.text))
    assert ext.describe("scene").startswith(f"extractive: {ext.chosen} of {ext.of} sentences of the scene")
    # a tight limit is kept at a sentence boundary; a text of one over-long sentence is cut at a word
    tight = extractive_summary(text, 20)
    assert_is_extract_of(tight.text, text, 20)
    long = "Marta " + " ".join(["rowed"] * 90) + " home."
    cut = extractive_summary(long, 30)
    assert cut.text.endswith(" ...") and count_words(cut.text) == 30 and cut.chosen == 1
    assert extractive_summary(" \n* * *\n ", 150) is None


def test_a_scene_rejected_twice_gets_an_extract_and_its_chapter_and_book_merge_it(tmp_path):
    ms = NovelSession.open(copy_story(tmp_path)).manuscript
    echo = echo_of(ms, "c1.s2")
    fake = StoryBackend(script=[GOOD, echo, echo])
    report = Summarizer(fake, SummarySettings(subject_prefix=False)).run(ms)
    s2, c1, book = ms.root.find("c1.s2"), ms.root.find("c1"), ms.root
    scene_text = ms.node_text(s2)
    assert s2.status == "done" and s2.extractive and len(s2.rejected) == 2
    assert s2.flags[0] == "rejected: echoes the source text" and s2.flags[1].startswith("extractive: ")
    assert_is_extract_of(s2.summary, scene_text, 150)
    names = top_names(scene_text, 5, min_count=2)
    assert names and all(re.search(rf"\b{n}\b", s2.summary) for n in names), (names, s2.summary)
    assert s2.stats["extractive"]["names"] == names
    # the chapter is merged by the model from both scene summaries, the extract included; no "built without"
    chapter_prompt = fake.prompts[3]
    assert "Chapter One: The Lamp" in chapter_prompt and one_line(s2.summary) in chapter_prompt
    assert c1.status == "done" and not c1.extractive and not any("built without" in f for f in c1.flags)
    assert book.status == "done" and book.summary and not book.extractive
    assert [n.id for n in ms.root.walk() if n.extractive] == ["c1.s2"]
    assert report.failed == 0 and report.extractive == 1
    assert report.counts_line() == "nodes 10, model calls 11, cache hits 0, failed 0, extractive 1"
    assert report.to_json()["extractive"] == 1
    # the JSON marks it, and only it
    tree = ms.root.to_json()
    scene_json = tree["children"][1]["children"][1]
    assert scene_json["id"] == "c1.s2" and scene_json["extractive"] is True and scene_json["status"] == "done"
    assert "extractive" not in tree and "extractive" not in tree["children"][1]
    # the outline's status marks: ¶ instead of ✓
    outline = outline_text(ms, status=True)
    assert "  ¶ Scene 2 — " in outline and "  ✓ Scene 1 — " in outline
    # a tighter scene limit binds the extract
    ms2 = NovelSession.open(copy_story(tmp_path)).manuscript
    Summarizer(StoryBackend(script=[GOOD, echo, echo]), SummarySettings(subject_prefix=False, scene_words=30)).run(ms2)
    assert_is_extract_of(ms2.root.find("c1.s2").summary, scene_text, 30)


def test_extracts_are_stored_and_reused_and_can_be_turned_off(tmp_path):
    path = copy_story(tmp_path)
    s = NovelSession.open(path)
    echo = echo_of(s.manuscript, "c1.s2")
    report = s.summarize(StoryBackend(script=[GOOD, echo, echo]), SummarySettings(subject_prefix=False))
    assert report.extractive == 1
    stored = load_store(s.store)
    assert stored["counts"]["extractive"] == 1
    assert stored["tree"]["children"][1]["children"][1]["extractive"] is True
    # reopened: the mark comes back from the store; a second run reuses everything, the extract too
    again = NovelSession.open(path)
    assert again.manuscript.root.find("c1.s2").extractive
    fake = StoryBackend()
    second = again.summarize(fake, SummarySettings(subject_prefix=False))
    assert fake.calls == 0 and second.reused == 10 and again.manuscript.root.find("c1.s2").extractive
    assert second.counts_line() == "nodes 10, model calls 0, cache hits 0, failed 0, extractive 1"
    # turned off: the old behaviour (failed, the chapter built without it), and other hashes
    (tmp_path / "off").mkdir()
    ms = NovelSession.open(copy_story(tmp_path / "off")).manuscript
    off = SummarySettings(subject_prefix=False, extractive_fallback=False)
    rep = Summarizer(StoryBackend(script=[GOOD, echo, echo]), off).run(ms)
    s2 = ms.root.find("c1.s2")
    assert s2.status == "failed" and s2.summary is None and not s2.extractive and rep.failed == 1 and rep.extractive == 0
    assert any("built without the summaries of c1.s2" in f for f in ms.root.find("c1").flags)
    assert rep.counts_line() == "nodes 10, model calls 11, cache hits 0, failed 1"
    assert "extractive" not in SummarySettings().hash_params("fewshot")  # stores made before keep their hashes
    assert off.hash_params("fewshot")["extractive"] is False


def test_a_merge_rejected_twice_without_the_join_gets_an_extract_of_the_chapter(tmp_path):
    ms = NovelSession.open(copy_story(tmp_path)).manuscript
    fake = StoryBackend(script=[GOOD, " Silas Crane brings the doctor across.", " Kael meets Erebus.",
                                " Kael meets Erebus again."])
    report = Summarizer(fake, SummarySettings(subject_prefix=False, merge_fallback=False)).run(ms, only="c1")
    c1 = ms.root.find("c1")
    assert c1.status == "done" and c1.extractive and report.extractive == 1 and report.failed == 0
    assert c1.flags[0].startswith("rejected: invents names") and c1.flags[-1].startswith("extractive: ")
    assert "sentences of the chapter" in c1.flags[-1]
    assert_is_extract_of(c1.summary, ms.source_text(c1), 300)
    assert not ms.root.find("c1.s1").extractive and not ms.root.find("c1.s2").extractive


def test_a_piece_of_a_long_scene_rejected_twice_is_extracted(tmp_path):
    ms = NovelSession.open(copy_story(tmp_path)).manuscript
    text = ms.node_text(ms.root.find("c1.s1"))
    fake = StoryBackend(context_size=1000, script=[" " + text[:300], " " + text[:300]])  # the scene: 2 pieces
    Summarizer(fake, SummarySettings(subject_prefix=False, scene_words=50)).run(ms, only="c1.s1")
    s1 = ms.root.find("c1.s1")
    assert [g["kind"] for g in s1.groups] == ["piece", "piece"] and "summarized in 2 pieces" in s1.flags[0]
    first, second = s1.groups
    assert first["status"] == "done" and first["extractive"] is True and first["flags"][-1].startswith("extractive: ")
    assert "extractive" not in second
    assert_is_extract_of(first["summary"], text[:len(text) // 2 + 400], 50)
    assert one_line(first["summary"]) in "\n".join(fake.prompts[2:])  # the pieces' merge was given the extract
    assert s1.status == "done" and s1.summary and not s1.extractive  # the scene itself is the model's merge
    # the pieces are remembered: a new run on the same text (another scene prompt) reuses the extract
    memo = {"__memo__": True, first["hash"]: {"summary": first["summary"], "flags": first["flags"], "extractive": True}}
    fake2 = StoryBackend(context_size=1000)
    Summarizer(fake2, SummarySettings(subject_prefix=False, scene_words=50)).run(ms, only="c1.s1", previous=memo)
    again = ms.root.find("c1.s1").groups[0]
    assert again["reused"] and again["extractive"] is True and again["summary"] == first["summary"]
    assert fake2.calls == 2  # the second piece and the merge


def test_a_store_written_before_extracts_loads_and_keeps_its_hashes(tmp_path):
    path = copy_story(tmp_path)
    shutil.copy(OLD_STORE, tmp_path / "story.summary.json")
    s = NovelSession.open(path)
    root = s.manuscript.root
    assert [(n.id, n.status) for n in root.walk() if n.status != "done"] == [("front", "skipped"), ("c1.s2", "failed")]
    assert not any(n.extractive for n in root.walk())
    assert "built without the summaries of c1.s2" in root.find("c1").flags[0]
    # a run recomputes only the failed scene (now with a summary), its chapter and the book
    fake = StoryBackend()
    report = s.summarize(fake, SummarySettings(subject_prefix=False))
    assert fake.calls == 3 and report.reused == 7 and report.failed == 0
    assert all(n.status == "done" for n in root.walk() if not n.front_matter)
    assert not any("built without" in f for f in root.find("c1").flags)


def parse(argv):
    p = argparse.ArgumentParser()
    cli_summary.add_summarize_arguments(p)
    return p.parse_args(argv)


def test_cli_counts_the_extractive_nodes_and_marks_them_in_the_json(tmp_path, capsys):
    path = copy_story(tmp_path)
    ms = NovelSession.open(path, store=tmp_path / "probe.json").manuscript
    echo = echo_of(ms, "c1.s2")
    out = tmp_path / "tree.json"
    status = cli_summary.run_summarize_cli(parse([str(path), "-o", str(out)]), backend=StoryBackend(script=[GOOD, echo, echo]))
    assert status == 0  # every node has a summary
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1] == "nodes 10, model calls 11, cache hits 0, failed 0, extractive 1"
    assert re.search(r"^\[2/10\] c1\.s2 Scene 2: done \(extractive\) \(calls 3,", captured.err, re.M), captured.err
    assert "[1/10] c1.s1 Scene 1: done (calls 1," in captured.err
    data = json.loads(out.read_text())
    assert data["counts"]["extractive"] == 1
    assert data["tree"]["children"][1]["children"][1]["extractive"] is True


class PaneApp(App):
    def compose(self) -> ComposeResult:
        yield SummaryPane(id="summary")


async def test_the_pane_marks_an_extractive_node(tmp_path):
    path = copy_story(tmp_path)
    session = NovelSession.open(path)
    echo = echo_of(session.manuscript, "c1.s2")
    session.summarize(StoryBackend(script=[GOOD, echo, echo]), SummarySettings(subject_prefix=False), only="c1")
    app = PaneApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(SummaryPane)
        pane.show_novel(novel_view(session), "novels/story.txt")
        tree = pane.tree
        tree.root.expand_all()
        await pilot.pause()
        labels = {}
        for line in range(tree.last_line + 1):
            node = tree.get_node_at_line(line)
            labels[node.data] = tree.render_label(node, tree.rich_style, tree.rich_style)
        assert labels["c1.s2"].plain.startswith("¶ Scene 2 ⚑"), labels["c1.s2"].plain
        assert labels["c1.s1"].plain.startswith("✓ Scene 1") and labels["c1"].plain.startswith("▼ ✓ Chapter One")
        mark_style = labels["c1.s2"].get_style_at_offset(app.console, 0)
        assert mark_style.color is not None and mark_style != labels["c1.s1"].get_style_at_offset(app.console, 0)
        assert "✓ 3 done" in pane.status_text and "¶ 1 extractive" in pane.status_text
        tree.select("c1.s2")
        await pilot.pause()
        assert pane.summary_text.startswith("¶ Extractive: the model's answers were rejected; these are the scene's own sentences.")
        assert session.manuscript.root.find("c1.s2").summary in pane.summary_text
        assert "Rejected answers:" in pane.summary_text and "⚑ extractive: " in pane.summary_text
