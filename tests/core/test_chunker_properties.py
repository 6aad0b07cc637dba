"""Properties of the chunker over generated Markdown: nothing lost, budget kept, deterministic."""
from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfst_tui.core.chunking.cache import clear_caches
from ctxfst_tui.core.chunking.chunker import chunk_text
from ctxfst_tui.core.chunking.options import ChunkOptions
from ctxfst_tui.core.chunking.tokens import get_counter

ENC = get_counter().encoding
WORDS = [
    "the", "tool", "runs", "fast", "config", "file", "server", "naïve", "café", "日本語", "x1", "API",
    "token", "budget", "chunk", "deploy", "`code`", "**bold**", "a", "long-word", "42", "über", "emoji👍",
]

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
sentence = words.map(lambda w: w[0].upper() + w[1:] + ".")


@st.composite
def paragraph(draw):
    lines = draw(st.lists(st.lists(sentence, min_size=1, max_size=4).map(" ".join), min_size=1, max_size=4))
    if draw(st.integers(0, 9)) == 0:  # now and then one over-long line with no full stop: an atomic unit
        lines.append(" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=40, max_size=80))))
    return "\n".join(lines) + "\n"


@st.composite
def heading(draw):
    level = draw(st.integers(1, 4))
    return "#" * level + " " + draw(words) + "\n"


@st.composite
def fenced(draw):
    fence = draw(st.sampled_from(["```", "~~~", "````"]))
    info = draw(st.sampled_from(["", "python", "js title=\"a.js\"", "text"]))
    body = draw(st.lists(st.one_of(words, st.just(""), words.map(lambda w: "    " + w)), min_size=0, max_size=25))
    return f"{fence}{info}\n" + "".join(line + "\n" for line in body) + fence + "\n"


@st.composite
def table(draw):
    cols = draw(st.integers(1, 4))
    header = "| " + " | ".join(draw(st.lists(words, min_size=cols, max_size=cols))) + " |\n"
    delim = "|" + "|".join(["---"] * cols) + "|\n"
    rows = draw(st.lists(st.lists(words, min_size=cols, max_size=cols), min_size=0, max_size=15))
    return header + delim + "".join("| " + " | ".join(r) + " |\n" for r in rows)


@st.composite
def listing(draw):
    marker = draw(st.sampled_from(["-", "*", "1."]))
    items = draw(st.lists(st.lists(sentence, min_size=1, max_size=3).map(" ".join), min_size=1, max_size=10))
    out = "".join(f"{marker} {it}\n" for it in items)
    if draw(st.booleans()):
        out += "\n   ```\n   nested code\n   ```\n"
    return out


@st.composite
def quote(draw):
    lines = draw(st.lists(st.lists(sentence, min_size=1, max_size=3).map(" ".join), min_size=1, max_size=6))
    return "".join(f"> {line}\n" for line in lines)


block = st.one_of(paragraph(), paragraph(), heading(), heading(), fenced(), table(), listing(), quote())


@st.composite
def document(draw):
    blocks = draw(st.lists(block, min_size=1, max_size=14))
    seps = draw(st.lists(st.sampled_from(["\n", "\n\n", "\n  \n"]), min_size=len(blocks), max_size=len(blocks)))
    text = "".join(b + s for b, s in zip(blocks, seps))
    if draw(st.booleans()):
        text = text.rstrip("\n")  # no final newline
    if draw(st.integers(0, 4)) == 0:
        text = text.replace("\n", "\r\n")  # Windows line endings: offsets still point into this text
    return text


@st.composite
def options(draw):
    unit = draw(st.sampled_from(["chars", "tokens"]))
    size = draw(st.integers(32, 160)) if unit == "tokens" else draw(st.integers(32, 600))
    return ChunkOptions(
        unit=unit,
        chunk_size=size,
        overlap=draw(st.integers(0, size // 2)),
        min_chunk_size=draw(st.one_of(st.none(), st.integers(0, size))),
        split_on_headings=draw(st.booleans()),
        heading_path=draw(st.booleans()),
        embed=draw(st.sampled_from(["full", "content", "context"])),
        strip_html_comments=False,
        strip_data_uri=False,
    )


FENCE_LINE = re.compile(r"^[ \t]*(?:>[ \t]?)*[ \t]*(`{3,}|~{3,})")
DELIM_ROW = re.compile(r"^\|?[ \t:|-]+\|?$")


def atomic(chunk) -> bool:
    """An over-budget chunk holds a single unit: one line (fences and a repeated table header aside)."""
    lines = [l for l in chunk.real_content().splitlines() if l.strip() and not FENCE_LINE.match(l)]
    if chunk.blocks == ["table"] and len(lines) >= 2 and DELIM_ROW.match(lines[1]):
        lines = lines[2:] if len(lines) > 2 else lines[:1]
    if chunk.synthetic and chunk.blocks == ["table"]:
        lines = [l for l in chunk.content[chunk.synthetic_ranges[0][1] :].splitlines() if l.strip()]
    return len(lines) <= 1


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(document(), options())
def test_chunks_rebuild_the_source_and_keep_the_budget(text, opts):
    chunks = chunk_text(text, opts, source="gen")
    norm = text.replace("\r\n", "\n")  # what chunks hold; their offsets point into ``text``
    assert chunks, repr(text)
    # lossless: the real content of the chunks, in order, is the source; spans tile it
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    for prev, c in zip(chunks, chunks[1:]):
        assert prev.end == c.start
    assert "".join(c.real_content() for c in chunks) == norm
    for c in chunks:
        assert c.real_content() == text[c.start : c.end].replace("\r\n", "\n")
        if c.overlap:
            prev = chunks[c.index - 1]
            assert prev.content.endswith(c.content[: c.overlap])
            assert text[c.overlap_start : c.start].replace("\r\n", "\n") == c.content[: c.overlap]
        # what is embedded is counted exactly, and stays within the budget unless one atomic unit is too big
        assert c.tokens == len(ENC.encode_ordinary(c.text))
        measure = c.tokens if opts.unit == "tokens" else c.length
        if measure > opts.size:
            assert c.over_budget and c.overlap == 0 and atomic(c), (opts, c.content)
        # code fences are balanced in every chunk
        fences = [l for l in c.content.splitlines() if FENCE_LINE.match(l)]
        assert len(fences) % 2 == 0 or c.index == len(chunks) - 1 and text.count("\n") >= 0
    # deterministic: same input, same options, same chunks and ids (also with cold caches)
    clear_caches()
    again = chunk_text(text, opts, source="gen")
    assert [c.to_json() for c in again] == [c.to_json() for c in chunks]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(document(), options(), st.integers(32, 200), st.integers(0, 40))
def test_rechunking_with_another_budget_equals_chunking_cold(text, opts, size, overlap):
    """What is kept between chunkings of one text (counts, headers, sentence starts, built chunks)
    never changes the chunks: re-chunking with another budget gives what a cold chunking gives."""
    from ctxfst_tui.core.chunking.chunker import Chunker

    clear_caches()
    chunker = Chunker(opts)
    chunker.chunk(text, "gen")
    other = chunker.with_options(chunk_size=size, overlap=min(overlap, size // 2))
    warm = [c.to_json() for c in other.chunk(text, "gen")]
    clear_caches()
    cold = [c.to_json() for c in Chunker(other.options).chunk(text, "gen")]
    assert warm == cold
    for c in other.chunk(text, "gen"):
        assert c.tokens == len(ENC.encode_ordinary(c.text))
