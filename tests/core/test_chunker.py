"""The structural chunker: each option on a small document whose chunks are written out here."""
from __future__ import annotations

import hashlib
import json

import pytest

from ctxfst_tui.core.chunking.cache import clear_caches
from ctxfst_tui.core.chunking.chunk import Chunk, compose_text
from ctxfst_tui.core.chunking.chunker import Chunker, chunk_text
from ctxfst_tui.core.chunking.markdown import parse_blocks
from ctxfst_tui.core.chunking.options import ChunkOptions
from ctxfst_tui.core.chunking.tokens import get_counter
from conftest import SAMPLE_DOCS, SHARED

ENC = get_counter().encoding

GUIDE = """# Guide

Intro to the guide.

## Install

Install it with pip. Then run the tool. It prints a greeting.

### Windows

Use the installer. Click next until done.

## Usage

Run `tool --help` to see options.
"""


def chunks_of(text: str, **options) -> list[Chunk]:
    source = options.pop("source", "doc")
    return chunk_text(text, ChunkOptions(**options), source=source)


def contents(chunks: list[Chunk]) -> list[str]:
    return [c.content for c in chunks]


def check_invariants(text: str, chunks: list[Chunk], opts: ChunkOptions) -> None:
    """Spans in order, real content = source slice (no stripping here), budget kept, exact tokens."""
    prev_end = 0
    for c in chunks:
        assert c.start >= prev_end and c.end > c.start
        prev_end = c.end
        assert c.real_content() == text[c.start : c.end].replace("\r\n", "\n")
        measure = c.tokens if opts.unit == "tokens" else c.length
        assert measure <= opts.size or c.over_budget
        assert c.tokens == len(ENC.encode_ordinary(c.text))
        assert c.length == len(c.text)
        assert c.overlap <= opts.overlap_size * (1 if opts.unit == "chars" else 20)


# -- options ------------------------------------------------------------------------------------------


def test_option_defaults_and_clamping():
    o = ChunkOptions()
    assert (o.unit, o.size, o.overlap_size, o.min_size) == ("chars", 1024, 128, 256)
    t = ChunkOptions(unit="tokens")
    assert (t.size, t.overlap_size, t.min_size) == (256, 32, 64)
    assert ChunkOptions(chunk_size=10).size == 32
    assert ChunkOptions(chunk_size=10**9).size == 200_000
    assert ChunkOptions(chunk_size=100, overlap=90).overlap_size == 50  # at most half the size
    assert ChunkOptions(chunk_size=100, min_chunk_size=500).min_size == 100
    assert ChunkOptions(unit="TOKENS", embed="Content").unit == "tokens"
    for bad in ({"unit": "words"}, {"mode": "html"}, {"embed": "all"}, {"chunk_size": -1}, {"overlap": 1.5}):
        with pytest.raises(ValueError):
            ChunkOptions(**bad)


def test_headings_start_chunks_with_full_paths():
    chunks = chunks_of(GUIDE, chunk_size=200, overlap=0, min_chunk_size=0)
    assert contents(chunks) == [
        "# Guide\n\nIntro to the guide.\n\n",
        "## Install\n\nInstall it with pip. Then run the tool. It prints a greeting.\n\n",
        "### Windows\n\nUse the installer. Click next until done.\n\n",
        "## Usage\n\nRun `tool --help` to see options.\n",
    ]
    assert [c.breadcrumb for c in chunks] == [
        "# Guide",
        "# Guide > ## Install",
        "# Guide > ## Install > ### Windows",
        "# Guide > ## Usage",
    ]
    assert chunks[2].path == ["# Guide", "## Install", "### Windows"]
    assert [(c.heading, c.heading_level) for c in chunks] == [
        ("Guide", 1), ("Install", 2), ("Windows", 3), ("Usage", 2)
    ]
    assert [(c.start, c.end) for c in chunks] == [(0, 30), (30, 105), (105, 161), (161, 205)]
    assert "".join(GUIDE[c.start : c.end] for c in chunks) == GUIDE
    assert chunks[2].header == "# Guide > ## Install > ### Windows"
    assert chunks[2].text == "# Guide > ## Install > ### Windows\n\n### Windows\n\nUse the installer. Click next until done.\n\n"
    assert [c.blocks for c in chunks] == [["heading", "paragraph"]] * 4
    assert [(c.index, c.total, c.type) for c in chunks] == [(i, 4, "markdown") for i in range(4)]
    check_invariants(GUIDE, chunks, ChunkOptions(chunk_size=200, overlap=0))


def test_small_budget_splits_by_sentences_and_never_leaves_a_heading_alone():
    chunks = chunks_of(GUIDE, chunk_size=64, overlap=0, min_chunk_size=0)
    assert contents(chunks) == [
        "# Guide\n\nIntro to the guide.\n\n",
        "## Install\n\nInstall it with pip. Then run the tool.",
        " It prints a greeting.\n\n",  # cut where BPE cuts too: token counts of the parts add up
        "### Windows\n\nUse the installer.",
        " Click next until done.\n\n",
        "## Usage\n\nRun `tool --help` to see options.\n",
    ]
    # a long path would take more than a third of the budget: the header falls back to the nearest heading
    assert chunks[3].header == "### Windows" and chunks[3].breadcrumb == "# Guide > ## Install > ### Windows"
    assert all(c.length <= 64 for c in chunks)
    check_invariants(GUIDE, chunks, ChunkOptions(chunk_size=64, overlap=0))


def test_split_on_headings_off_packs_greedily_but_never_ends_on_a_heading():
    on = chunks_of(GUIDE, chunk_size=200, overlap=0)
    off = chunks_of(GUIDE, chunk_size=200, overlap=0, split_on_headings=False)
    assert contents(on) == [
        "# Guide\n\nIntro to the guide.\n\n## Install\n\nInstall it with pip. Then run the tool. It prints a greeting.\n\n",
        "### Windows\n\nUse the installer. Click next until done.\n\n",
        "## Usage\n\nRun `tool --help` to see options.\n",
    ]
    assert contents(off) == [
        "# Guide\n\nIntro to the guide.\n\n## Install\n\nInstall it with pip. Then run the tool. It prints a greeting.\n\n"
        "### Windows\n\nUse the installer. Click next until done.\n\n",
        "## Usage\n\nRun `tool --help` to see options.\n",
    ]
    for c in off:
        assert not c.content.rstrip().splitlines()[-1].startswith("#")
    assert off[0].sections == ["# Guide", "# Guide > ## Install", "# Guide > ## Install > ### Windows"]


def test_min_chunk_size_absorbs_small_chunks():
    # with no minimum, the intro is a chunk of its own; by default (a quarter) it joins its subsection
    small = chunks_of(GUIDE, chunk_size=200, overlap=0, min_chunk_size=0)
    merged = chunks_of(GUIDE, chunk_size=200, overlap=0)
    assert len(small) == 4 and len(merged) == 3
    assert merged[0].content == small[0].content + small[1].content
    assert merged[0].path == ["# Guide"]
    assert merged[0].sections == ["# Guide", "# Guide > ## Install"]
    # the tail of a long section is rebalanced with the part before it
    prose = "## Notes\n\n" + " ".join(f"Sentence {i} ends here." for i in range(20)) + "\n"
    parts = chunks_of(prose, chunk_size=200, overlap=0, min_chunk_size=120)
    assert all(c.length >= 120 for c in parts), [c.length for c in parts]
    assert "".join(c.content for c in parts) == prose


def test_fenced_code_split_by_lines_with_fence_reopened():
    code = "# Code\n\n```python title=\"x.py\"\n" + "".join(f"print({i})  # line {i}\n" for i in range(12)) + "```\n"
    chunks = chunks_of(code, chunk_size=130, overlap=0, min_chunk_size=0)
    assert contents(chunks) == [
        '# Code\n\n```python title="x.py"\nprint(0)  # line 0\nprint(1)  # line 1\nprint(2)  # line 2\n'
        "print(3)  # line 3\n```\n",
        '```python title="x.py"\nprint(4)  # line 4\nprint(5)  # line 5\nprint(6)  # line 6\nprint(7)  # line 7\n```\n',
        '```python title="x.py"\nprint(8)  # line 8\nprint(9)  # line 9\nprint(10)  # line 10\nprint(11)  # line 11\n```\n',
    ]
    assert [c.synthetic for c in chunks] == [True, True, True]
    opening = len('```python title="x.py"\n')
    assert chunks[0].synthetic_ranges == [(len(chunks[0].content) - 4, len(chunks[0].content))]
    assert chunks[1].synthetic_ranges == [(0, opening), (len(chunks[1].content) - 4, len(chunks[1].content))]
    assert chunks[2].synthetic_ranges == [(0, opening)]
    assert "".join(c.real_content() for c in chunks) == code
    assert [c.blocks for c in chunks] == [["heading", "code"], ["code"], ["code"]]
    check_invariants(code, chunks, ChunkOptions(chunk_size=130, overlap=0))


def test_tilde_fence_and_unclosed_fence():
    code = "~~~~ js\n" + "".join(f"let v{i} = {i};\n" for i in range(10)) + "~~~~\n"
    chunks = chunks_of(code, chunk_size=80, overlap=0, min_chunk_size=0)
    assert len(chunks) > 1
    for c in chunks:
        assert c.content.startswith("~~~~ js\n") and c.content.endswith("~~~~\n")
    assert "".join(c.real_content() for c in chunks) == code
    unclosed = "```\n" + "".join(f"line {i}\n" for i in range(30))
    parts = chunks_of(unclosed, chunk_size=60, overlap=0, min_chunk_size=0)
    assert parts[-1].content.startswith("```\n") and not parts[-1].content.endswith("```\n")
    assert "".join(c.real_content() for c in parts) == unclosed


def test_table_split_by_rows_with_header_repeated():
    table = "## Table\n\n| a | b |\n|---|---|\n" + "".join(f"| row {i} | value {i} |\n" for i in range(10))
    chunks = chunks_of(table, chunk_size=90, overlap=0, min_chunk_size=0)
    head = "| a | b |\n|---|---|\n"
    assert contents(chunks) == [
        "## Table\n\n" + head + "| row 0 | value 0 |\n| row 1 | value 1 |\n",
        head + "| row 2 | value 2 |\n| row 3 | value 3 |\n| row 4 | value 4 |\n",
        head + "| row 5 | value 5 |\n| row 6 | value 6 |\n| row 7 | value 7 |\n",
        head + "| row 8 | value 8 |\n| row 9 | value 9 |\n",
    ]
    assert [c.synthetic for c in chunks] == [False, True, True, True]
    assert all(c.synthetic_ranges == [(0, len(head))] for c in chunks[1:])
    assert [c.blocks for c in chunks] == [["heading", "table"], ["table"], ["table"], ["table"]]
    check_invariants(table, chunks, ChunkOptions(chunk_size=90, overlap=0))


def test_list_split_by_items():
    doc = "## Steps\n\n" + "".join(f"- Step {i}: do the thing number {i}.\n" for i in range(8))
    chunks = chunks_of(doc, chunk_size=100, overlap=0, min_chunk_size=0)
    assert contents(chunks) == [
        "## Steps\n\n- Step 0: do the thing number 0.\n- Step 1: do the thing number 1.\n",
        "- Step 2: do the thing number 2.\n- Step 3: do the thing number 3.\n",
        "- Step 4: do the thing number 4.\n- Step 5: do the thing number 5.\n",
        "- Step 6: do the thing number 6.\n- Step 7: do the thing number 7.\n",
    ]
    assert [c.blocks for c in chunks] == [["heading", "list"], ["list"], ["list"], ["list"]]


def test_overlap_is_whole_sentences_of_the_previous_chunk():
    prose = "# Notes\n\n" + " ".join(f"Sentence number {i} is here." for i in range(12)) + "\n"
    chunks = chunks_of(prose, chunk_size=120, overlap=40, min_chunk_size=0)
    assert [c.overlap for c in chunks] == [0, 27, 27, 27, 27, 27]
    assert contents(chunks)[:3] == [
        "# Notes\n\nSentence number 0 is here. Sentence number 1 is here.",
        " Sentence number 1 is here. Sentence number 2 is here. Sentence number 3 is here.",
        " Sentence number 3 is here. Sentence number 4 is here. Sentence number 5 is here.",
    ]
    for prev, c in zip(chunks, chunks[1:]):
        ov = c.content[: c.overlap]
        assert prev.content.endswith(ov)  # literally the previous chunk's end
        assert ov[0] == " " and ov[1].isupper() and prev.content[-len(ov) - 1] == "."  # whole sentences
        assert prose[c.overlap_start : c.overlap_start + c.overlap] == ov
        assert c.length <= 120
    # no overlap into a chunk that starts at a heading
    assert all(c.overlap == 0 for c in chunks_of(GUIDE, chunk_size=200, overlap=60))
    assert "".join(c.body for c in chunks) == prose
    check_invariants(prose, chunks, ChunkOptions(chunk_size=120, overlap=40))


def test_overlap_in_tokens_fits_the_budget():
    prose = "# Notes\n\n" + " ".join(f"Fact {i} is stated in this sentence." for i in range(40)) + "\n"
    opts = ChunkOptions(unit="tokens", chunk_size=48, overlap=12, min_chunk_size=0)
    chunks = chunk_text(prose, opts)
    assert len(chunks) > 3 and all(c.tokens <= 48 for c in chunks)
    assert all(0 < len(ENC.encode_ordinary(c.content[: c.overlap])) <= 12 for c in chunks[1:])
    check_invariants(prose, chunks, opts)


def test_heading_path_off_uses_the_nearest_heading():
    chunks = chunks_of(GUIDE, chunk_size=200, overlap=0, min_chunk_size=0, heading_path=False)
    assert [c.path for c in chunks] == [["# Guide"], ["## Install"], ["### Windows"], ["## Usage"]]
    assert [c.header for c in chunks] == ["# Guide", "## Install", "### Windows", "## Usage"]
    assert chunks[2].text.startswith("### Windows\n\n### Windows\n\n")
    assert chunks[2].sections == ["### Windows"]


def test_embed_modes_and_context():
    doc = "# G\n\n## I\n\nBody text.\n"
    full = chunks_of(doc, chunk_size=200)[0]
    assert full.text == "# G\n\n# G\n\n## I\n\nBody text.\n" and full.embed == "full"
    content = chunks_of(doc, chunk_size=200, embed="content")[0]
    assert content.text == content.content == "# G\n\n## I\n\nBody text.\n"
    context = chunks_of(doc, chunk_size=200, embed="context")[0]
    assert context.text == full.text  # no context yet: the body is embedded all the same
    assert chunks_of(doc, chunk_size=200, prepend_heading=False)[0].text == doc
    counter = get_counter()
    note = "How to install the tool on Windows.\nTerms: installer, setup.exe"
    with_note = context.with_context(note, counter)
    assert with_note.text == "# G\n\n" + note and with_note.content == doc
    assert with_note.tokens == len(ENC.encode_ordinary(with_note.text))
    assert full.with_context(note).text == "# G\n\n" + note + "\n\n" + doc
    assert compose_text("H", "C", "B", "content") == "B"
    assert compose_text("", "", "B", "full") == "B"


def test_budget_includes_the_header():
    doc = "# A very long heading about installation\n\n" + " ".join(f"Word{i} is here." for i in range(30)) + "\n"
    opts = ChunkOptions(unit="tokens", chunk_size=40, overlap=0, min_chunk_size=0)
    chunks = chunk_text(doc, opts)
    assert all(c.tokens <= 40 for c in chunks)
    assert all(c.text.startswith("# A very long heading about installation\n\n") for c in chunks)
    check_invariants(doc, chunks, opts)


def test_context_reserve_keeps_room():
    prose = " ".join(f"Sentence {i} is here." for i in range(60)) + "\n"
    chunks = chunks_of(prose, chunk_size=200, overlap=0, context_reserve=50, min_chunk_size=0)
    assert all(c.length <= 150 for c in chunks)


def test_strip_data_uri_and_html_comments_but_not_in_code():
    b64 = "iVBORw0KGgo" + "A" * 200
    doc = (
        "Some text <!-- hidden --> here.\n\n<!-- a comment\nover lines -->\n\n"
        "```html\n<!-- kept -->\n```\n\n"
        f"![img](data:image/png;base64,{b64})\n\n`<!-- inline code keeps it -->`\n"
    )
    c = chunks_of(doc)[0]
    assert c.content == (
        "Some text here.\n\n```html\n<!-- kept -->\n```\n\n![img](data:image/png)\n\n`<!-- inline code keeps it -->`\n"
    )
    assert (c.start, c.end) == (0, len(doc))
    kept = chunks_of(doc, strip_data_uri=False, strip_html_comments=False)[0]
    assert kept.content == doc
    assert b64 in chunks_of(doc, strip_data_uri=False)[0].content
    assert "<!-- hidden -->" in chunks_of(doc, strip_html_comments=False)[0].content


def test_atomic_units_over_budget_are_flagged():
    doc = "A single sentence that goes on and on without any stop " * 4 + "\n"
    (c,) = chunks_of(doc, chunk_size=64, overlap=0)
    assert c.over_budget and c.length > 64 and c.metadata["oversize"] is True
    code = "```\n" + "x = '" + "y" * 200 + "'\n" + "z = 1\n" * 3 + "```\n"
    parts = chunks_of(code, chunk_size=64, overlap=0, min_chunk_size=0)
    assert [c.over_budget for c in parts] == [True, False]
    assert "".join(c.real_content() for c in parts) == code


# -- plain text and PDF --------------------------------------------------------------------------------

PLAIN = """1 Introduction

This is the intro. It has two sentences.

2 Setup

2.1 Install

Run the installer. Then reboot.

2.2 Configure

Edit the file.
"""


def test_plain_text_mode_numbered_headings():
    chunks = chunks_of(PLAIN, chunk_size=64, overlap=0, min_chunk_size=0)
    assert [c.type for c in chunks] == ["text"] * 4
    assert contents(chunks) == [
        "1 Introduction\n\nThis is the intro.",
        " It has two sentences.\n\n",
        "2 Setup\n\n2.1 Install\n\nRun the installer. Then reboot.\n\n",  # a heading never stands alone
        "2.2 Configure\n\nEdit the file.\n",
    ]
    assert [c.breadcrumb for c in chunks] == ["1 Introduction", "1 Introduction", "2 Setup", "2 Setup > 2.2 Configure"]
    assert chunks[2].sections == ["2 Setup", "2 Setup > 2.1 Install"]
    assert [c.heading_level for c in chunks] == [1, 1, 1, 2]
    check_invariants(PLAIN, chunks, ChunkOptions(chunk_size=64, overlap=0))


def test_plain_text_keeps_paragraphs_whole_within_budget():
    text = "First paragraph. It has two sentences.\n\nSecond one is short.\n\n1. Buy milk\n2. Eat\n"
    chunks = chunks_of(text, chunk_size=1024, mode="text")
    assert contents(chunks) == [text] and chunks[0].path == []  # a numbered list is not a heading
    big = "\n\n".join(" ".join(f"Para {p} sentence {i}." for i in range(6)) for p in range(4)) + "\n"
    parts = chunks_of(big, chunk_size=120, overlap=0, min_chunk_size=0, mode="text")
    # each paragraph is split by sentences only because it is over the budget; parts start at sentences
    assert all(c.content.lstrip().startswith("Para ") for c in parts)
    assert "".join(c.content for c in parts) == big


PDF = (
    "ACME Manual\nThe system is designed for infor-\nmation retrieval.\n\n1\n"
    "\fACME Manual\nIt also sup-\nports search and more.\nPage 2\n"
    "\fACME Manual\nThe end of the docu-\n- 3 -\n\fACME Manual\nment is here.\n4\n"
)


def test_pdf_mode_cleans_and_pages():
    chunks = chunks_of(PDF, chunk_size=64, overlap=0, min_chunk_size=0, mode="pdf")
    assert [c.type for c in chunks] == ["pdf"] * len(chunks)
    assert contents(chunks) == [
        "The system is designed for information retrieval.\n\n",  # hyphen joined, "1" and header gone
        "It also supports search and more.\n",  # "Page 2" gone; the paragraph is over budget: sentences
        "The end of the document is here.\n",  # a word split across a page break, "- 3 -" gone
    ]
    assert [(c.page, c.pages) for c in chunks] == [(1, [1]), (2, [2]), (3, [3, 4])]
    first = chunks[0]
    assert PDF[first.start : first.start + 10] == "The system"
    assert PDF[chunks[1].start :].startswith("It also sup-")
    # auto-detection: form feeds mean PDF text
    assert contents(chunks_of(PDF, chunk_size=64, overlap=0, min_chunk_size=0)) == contents(chunks)


def test_pdf_without_page_breaks_has_no_pages():
    text = "Intro text that is hyphen-\nated across lines.\n\n12\n\nMore text.\n"
    (c,) = chunks_of(text, mode="pdf")
    assert c.content == "Intro text that is hyphenated across lines.\n\n\nMore text.\n"
    assert (c.page, c.pages) == (None, [])


def test_auto_detection():
    assert chunks_of("# Title\n\nText.\n")[0].type == "markdown"
    assert chunks_of("Title\n=====\n\nText.\n")[0].type == "markdown"
    assert chunks_of("Just prose here.\n\nAnd a second paragraph.\n")[0].type == "text"
    assert chunks_of("a\fb\n")[0].type == "pdf"
    assert Chunker().mode_of("```\ncode\n```\n") == "markdown"


# -- identity, offsets, CtxFST ---------------------------------------------------------------------


def test_ids_are_deterministic_and_content_addressed():
    a = chunks_of(GUIDE, chunk_size=64, source="manual-v1")
    clear_caches()
    b = chunks_of(GUIDE, chunk_size=64, source="manual-v1")
    assert [c.to_json() for c in a] == [c.to_json() for c in b]
    for c in a:
        digest = hashlib.sha256(c.content.encode()).hexdigest()
        assert c.hash == digest and c.id == f"manual-v1#{c.index}-{digest[:8]}"
    assert len({c.id for c in a}) == len(a)
    json.dumps([c.to_json() for c in a])  # serialisable


def test_offsets_point_into_a_crlf_source():
    doc = "# A\r\n\r\nText one.\r\n\r\n## B\r\n\r\nText two.\r\n"
    chunks = chunks_of(doc, chunk_size=32, min_chunk_size=0)
    assert [(c.start, c.end) for c in chunks] == [(0, 20), (20, 39)]
    assert contents(chunks) == ["# A\n\nText one.\n\n", "## B\n\nText two.\n"]
    assert [b.kind for b in parse_blocks(doc)] == ["heading", "paragraph", "heading", "paragraph"]
    assert parse_blocks(doc)[-1].end == len(doc)


def test_ctxfst_document_frontmatter_and_tags_stay_out():
    text = (SAMPLE_DOCS / "platform-runbook.ctxfst.md").read_text(encoding="utf-8")
    opts = ChunkOptions(unit="tokens", chunk_size=256)
    chunks = chunk_text(text, opts)
    assert [c.breadcrumb for c in chunks] == ["## Build the image", "## Deploy with Helm", "## Database"]
    body_start = text.index('<Chunk id="workflow:build-image">')
    for c in chunks:
        assert c.start > body_start
        assert "entities:" not in c.content and '<Chunk id="workflow' not in c.content and "</Chunk>" not in c.content
    # the tag inside the code block is text, and the code block stays in its chunk
    assert '# the <Chunk id="not-a-tag"> below is text inside a code block, not a tag' in chunks[1].content
    assert chunks[1].blocks == ["heading", "paragraph", "code"]
    # tags are hard boundaries even when everything would fit in one chunk
    assert len(chunk_text(text, ChunkOptions(unit="tokens", chunk_size=4000))) == 3
    assert len(chunk_text(text, ChunkOptions(unit="tokens", chunk_size=4000, chunk_tags=False))) == 1


def test_inline_chunk_tags_and_tag_lines_do_not_swallow_headings():
    doc = '<Chunk id="a:b">\n## Title\n\nText.\n</Chunk>\n\n< Chunk  id = \'c:d\' >Inline start.</Chunk>\n'
    chunks = chunks_of(doc, chunk_size=1024)
    assert contents(chunks) == ["## Title\n\nText.\n", "Inline start.\n"]
    assert chunks[0].path == ["## Title"]


def test_empty_and_blank_documents():
    assert chunk_text("") == []
    assert chunk_text("  \n\n\t\n") == []
    assert chunk_text("---\ntitle: x\n---\n") == []


def test_metadata_and_source_are_copied():
    opts = ChunkOptions(source="kb", metadata={"lang": "pt"})
    chunks = Chunker(opts).chunk(GUIDE)
    assert all(c.id.startswith("kb#") and c.metadata == {"lang": "pt"} and c.source == "kb" for c in chunks)
    chunks[0].metadata["x"] = 1
    assert opts.metadata == {"lang": "pt"}


def test_rechunk_with_another_budget_reuses_parse_and_counts():
    text = "\n\n".join(f"## Section {i}\n\n" + " ".join(f"Line {i}.{j} of text." for j in range(30)) for i in range(20))
    base = Chunker(ChunkOptions(unit="tokens", chunk_size=256))
    counter = get_counter()
    first = base.chunk(text)
    assert counter.encoded_chars >= len(text)
    base.with_options(chunk_size=64).chunk(text)  # the first split by sentences counts each sentence once
    encoded = counter.encoded_chars
    for size in (48, 96, 128, 384, 512):
        again = base.with_options(chunk_size=size, overlap=size // 4).chunk(text)
        assert again and all(c.tokens <= size for c in again)
    # nothing is parsed or encoded again: every count comes from the line, sentence and header caches
    assert counter.encoded_chars - encoded < len(text) // 20
    assert [c.to_json() for c in base.chunk(text)] == [c.to_json() for c in first]


def test_tokens_are_exact_for_what_is_embedded():
    text = (SAMPLE_DOCS / "plain-note.md").read_text(encoding="utf-8") * 3
    for opts in (
        ChunkOptions(unit="tokens", chunk_size=48, overlap=8),
        ChunkOptions(unit="chars", chunk_size=200),
        ChunkOptions(unit="tokens", chunk_size=64, embed="content"),
    ):
        chunks = chunk_text(text, opts)
        assert chunks
        check_invariants(text, chunks, opts)


# -- blocks -------------------------------------------------------------------------------------------


def test_parse_blocks_kinds_and_lossless_tiling():
    doc = (
        "---\ntitle: t\n---\n\n# H1\n\nPara line one\nline two.\n\n"
        "| a | b |\n| - | - |\n| 1 | 2 |\n\n"
        "- item\n- item 2\n\n> quote\n> more\n\n    indented code\n\n<div>\nhtml\n</div>\n\n---\n\n"
        "```\n# not a heading\n```\n\nSetext\n------\n\n[ref]: https://example.com\n"
    )
    blocks = parse_blocks(doc)
    assert [b.kind for b in blocks] == [
        "frontmatter", "heading", "paragraph", "table", "list", "quote", "code", "html", "rule", "code", "heading",
    ]
    assert "".join(doc[b.start : b.end] for b in blocks) == doc
    assert all(a.end == b.start for a, b in zip(blocks, blocks[1:]))
    assert (blocks[1].level, blocks[1].title) == (1, "H1")
    assert (blocks[-1].level, blocks[-1].title) == (2, "Setext")
    assert doc[blocks[-1].start : blocks[-1].end].endswith("[ref]: https://example.com\n")


# -- real data ------------------------------------------------------------------------------------------

CORPUS = SHARED / "corpus" / "markdown"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus not present")
def test_corpus_chunks_without_loss_or_overflow():
    files = sorted(CORPUS.rglob("*.md"))
    assert len(files) > 100
    opts = ChunkOptions(unit="tokens", chunk_size=256, overlap=32, strip_html_comments=False, strip_data_uri=False)
    for path in files[::3]:
        text = path.read_text(encoding="utf-8")
        chunks = chunk_text(text, opts, source=path.name)
        blocks = parse_blocks(text)
        body = [b for b in blocks if b.kind not in ("frontmatter", "chunk_open", "chunk_close")]
        if body:
            assert chunks[0].start == body[0].start and chunks[-1].end == body[-1].end
        for prev, c in zip(chunks, chunks[1:]):
            assert prev.end == c.start, path
        for c in chunks:
            assert c.real_content() == text[c.start : c.end], path
            assert c.tokens <= 256 or c.over_budget, path
            assert c.content.count("```") % 2 == 0 or "~~~" in c.content or "````" in c.content, path


# -- the fast paths: counts read off one encoding, composed headers, reuse across budgets -------------

HEADINGS = """# Guide { #guide }

Intro text. Second sentence here.

## What's new?

Text under a question.

### `tool --help` (CLI)

Run it.

## Café — naïve 日本語

Unicode heading.

##  Two spaces before ##

Closing hashes and spaces.

Setext title
============

Under a setext heading.

## Ends with emoji 👍

More text.

## <|endoftext|> as text

Special token spelling.

## x

Short.
"""


@pytest.mark.parametrize("heading_path", [True, False])
@pytest.mark.parametrize("size", [32, 48, 512])
def test_header_counts_are_exact_for_any_heading(heading_path, size):
    clear_caches()
    opts = ChunkOptions(unit="tokens", chunk_size=size, overlap=8, heading_path=heading_path)
    chunks = chunk_text(HEADINGS, opts, source="h")
    assert chunks
    for c in chunks:
        assert c.tokens == len(ENC.encode_ordinary(c.text)), c.text
    sections = [s for c in chunks for s in c.sections]
    assert any(s.endswith("## What's new?") for s in sections)
    assert "# Setext title" in sections


def test_rechunk_with_other_budgets_equals_a_cold_chunking():
    text = (SAMPLE_DOCS / "plain-note.md").read_text(encoding="utf-8") * 3 + HEADINGS * 2
    base = Chunker(ChunkOptions(unit="tokens", chunk_size=512, overlap=32))
    base.chunk(text)
    for size, overlap in ((384, 32), (96, 24), (512, 32), (200, 0), (384, 32)):
        warm = [c.to_json() for c in base.with_options(chunk_size=size, overlap=overlap).chunk(text)]
        clear_caches()
        cold = [c.to_json() for c in Chunker(ChunkOptions(unit="tokens", chunk_size=size, overlap=overlap)).chunk(text)]
        assert warm == cold, size
        base.chunk(text)  # the caches hold the 512 chunking again


def test_counts_are_exact_with_the_parallel_parse_and_odd_white_space():
    # large enough to be parsed beside the encoding; lines made of white space that a line-based
    # split would get wrong (NBSP, tabs, blank lines with spaces)
    long_line = "Ünïcödé text, with words and more words. " * 12
    para = long_line + "\u00a0\n\u00a0\n\tindented " + long_line + "\n  \n\n"
    text = ("## Section ✓\n\n" + para * 20 + "```py\nx = 1\n\n\n```\n\n") * 6
    clear_caches()
    for opts in (ChunkOptions(unit="tokens", chunk_size=64, overlap=16), ChunkOptions(unit="chars", chunk_size=300)):
        chunks = chunk_text(text, opts)
        check_invariants(text, chunks, opts)
        assert "".join(c.real_content() for c in chunks) == text


def test_without_numpy_the_counts_are_the_same(monkeypatch):
    from ctxfst_tui.core.chunking import blocks as blocks_mod
    from ctxfst_tui.core.chunking import packer as packer_mod
    from ctxfst_tui.core.chunking import tokens as tokens_mod

    text = (SAMPLE_DOCS / "plain-note.md").read_text(encoding="utf-8") * 2 + HEADINGS
    opts = ChunkOptions(unit="tokens", chunk_size=64, overlap=16)
    clear_caches()
    expected = [c.to_json() for c in chunk_text(text, opts)]
    monkeypatch.setattr(tokens_mod, "_np", None)
    monkeypatch.setattr(blocks_mod, "_np", None)
    monkeypatch.setattr(packer_mod, "_np", None)
    clear_caches()
    assert [c.to_json() for c in chunk_text(text, opts)] == expected


def test_parse_shortcuts_keep_mistune_extents():
    doc = (
        "Para one\nstill para\n- item\n  lazy\ncontinued\n\n"
        "[ref]: https://example.com\n  'title'\n[r2]: <x> \"t\" junk\n\n"
        "Setext\n> quoted\n---\n\n"
        "1. one\n2) other\n\n   ```\n   code\n   ```\n\n"
        "text\u00a0\n\n    indented code\n\n<div>\nhtml\n\n"
        "* a\n* b\n\n***\n\n# H\n"
    )
    blocks = parse_blocks(doc)
    assert "".join(doc[b.start : b.end] for b in blocks) == doc
    assert all(a.end == b.start for a, b in zip(blocks, blocks[1:]))
    import mistune
    from mistune.block_parser import BlockParser
    from mistune.core import BlockState

    state = BlockState()
    state.process(doc)
    BlockParser().parse(state)
    expected = [t["type"] for t in state.tokens if t["type"] not in ("blank_line",)]
    kinds = {"heading": "heading", "paragraph": "paragraph", "block_code": "code", "block_quote": "quote",
             "list": "list", "block_html": "html", "thematic_break": "rule"}
    assert [b.kind for b in blocks if b.kind != "table"] == [kinds[t] for t in expected]
    assert mistune.__version__


def test_chunk_fields_built_when_read_behave_as_plain_fields():
    opts = ChunkOptions(unit="tokens", chunk_size=64, overlap=0, metadata={"team": "docs"})
    chunks = chunk_text(GUIDE, opts, source="g")
    a, b = chunks[0], chunks[1]
    assert a.text == a.header + "\n\n" + a.content and a.length == len(a.text)
    a.path.append("x")  # each chunk has its own lists and metadata
    a.metadata["k"] = 1
    assert "x" not in b.path and "k" not in b.metadata and opts.metadata == {"team": "docs"}
    again = chunk_text(GUIDE, opts, source="g")
    assert "x" not in again[0].path and "k" not in again[0].metadata
    assert again[1] == b and again[0] != a
    b.text = "replaced"
    b.synthetic_ranges = [(0, 1)]
    assert b.to_json()["text"] == "replaced" and b.to_json()["synthetic_ranges"] == [[0, 1]]
    note = again[0].with_context("A note.")
    assert note.context == "A note." and note.path is not again[0].path and note.path == again[0].path
    assert repr(note).startswith("Chunk(id=")
