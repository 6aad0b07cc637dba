"""What heads a chunk in the preview when it sits under no heading: the file's name and its first
words, never the chunker's id (an absolute path and a hash)."""
from __future__ import annotations

from pathlib import Path

from ctxfst_tui.core.chunking.preview import Budget, Previewer
from ctxfst_tui.core.format.document import Document

NOVEL = (
    "The lamp at Gull Rock had not failed in forty years, and Mara meant to keep it that way.\n\n"
    "She climbed the stairs each evening with the oil can and a rag.\n\n"
    "# Chapter One\n\nThe storm came in from the west on the third night.\n"
)


def test_a_novels_first_chunk_is_headed_by_its_file_name_and_first_words(tmp_path):
    path = (tmp_path / "novels" / "story.txt").resolve()
    path.parent.mkdir()
    path.write_text(NOVEL, encoding="utf-8")
    spans, _ = Previewer().spans(Document.load(path), Budget("tokens", 24, 0))
    first = spans[0]
    assert first.label == "story.txt · The lamp at Gull Rock had not failed in…"
    assert str(tmp_path) not in first.label and first.id.rpartition("-")[2] not in first.label
    assert spans[-1].label == "# Chapter One"  # a chunk under a heading keeps its heading


def test_first_words_are_one_line_cut_at_a_word():
    from ctxfst_tui.core.chunking.spans import first_words

    assert first_words("  Call me\nIshmael.  ") == "Call me Ishmael."
    assert first_words("one two three four", width=9) == "one two…"
    assert first_words("") == ""
    assert len(first_words("x" * 100)) == 40
