"""Markdown → CtxFST conversion: ids, tags, unchanged text, validity, and the CLI around it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxfst_tui.cli import main
from ctxfst_tui.core.chunking.chunker import chunk_text
from ctxfst_tui.core.chunking.convert import (
    ConvertError,
    category_for,
    chunk_id,
    convert_checked,
    convert_text,
    slug,
)
from ctxfst_tui.core.chunking.options import ChunkOptions
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.validate import has_errors, validate
from conftest import SAMPLE_DOCS, SHARED

NOTE = """# Deploy guide

Intro paragraph about deploying.

## Install on Windows 11

Run the installer. It asks for admin rights.

## Configuration options

Set `PORT` and `HOST`.

## Install on Windows 11

The same heading twice gets a unique id.
"""


def test_slug_and_category():
    assert slug("Install on Windows 11") == "install-on-windows-11"
    assert slug("Café `config` (beta)") == "cafe-config"
    assert category_for("Install on Windows") == "workflow"
    assert category_for("Configuration options") == "reference"
    assert category_for("Overview") == "about"
    assert category_for("Kafka partitions") == "section"
    taken: set[str] = set()
    assert chunk_id("Overview", 0, taken) == "about:overview"
    assert chunk_id("Overview", 1, taken) == "about:overview-2"
    assert chunk_id("日本語", 2, taken) == "section:part-3"


def test_convert_keeps_text_and_validates(tmp_path):
    chunks = chunk_text(NOTE, ChunkOptions(unit="tokens", chunk_size=32, overlap=0))
    out = convert_checked(NOTE, chunks, tmp_path / "x.ctxfst.md", "x")
    doc = Document.from_text(out, "x.ctxfst.md")
    assert not has_errors(validate(doc))
    assert doc.title == "Deploy guide"
    ids = [c.id for c in doc.body_chunks]
    assert ids == ["workflow:deploy-guide", "workflow:install-on-windows-11", "reference:configuration-options",
                   "workflow:install-on-windows-11-2"]
    # every chunk's text is the note's text, unchanged, in order
    assert "\n\n".join(c.content for c in doc.body_chunks) == NOTE.strip()
    entry = doc.chunks[1].data
    assert entry["tags"] == ["Deploy guide", "Install on Windows 11"]
    assert entry["entities"] == [] and entry["context"] == ""
    assert doc.data["entities"] == []


def test_convert_refuses_ctxfst_input():
    text = (SAMPLE_DOCS / "frontend-notes.ctxfst.md").read_text()
    with pytest.raises(ConvertError, match="already a CtxFST document"):
        convert_text(text, [])


def test_existing_frontmatter_keys_are_kept(tmp_path):
    text = "---\ntitle: My note\nauthor: Ana\n---\n\n# Heading\n\nBody text.\n"
    out = convert_checked(text, chunk_text(text), tmp_path / "n.ctxfst.md")
    doc = Document.from_text(out)
    assert doc.data["title"] == "My note" and doc.data["author"] == "Ana"
    assert "<Chunk" not in doc.text.split("---")[1]
    assert not has_errors(validate(doc))


def test_cli_convert_and_refuse_overwrite(tmp_path, capsys):
    note = tmp_path / "note.md"
    note.write_text(NOTE)
    assert main(["convert", str(note), "--unit", "tokens", "--size", "48"]) == 0
    target = tmp_path / "note.ctxfst.md"
    assert target.exists()
    assert main(["validate", str(target)]) == 0
    before = target.read_bytes()
    capsys.readouterr()
    assert main(["convert", str(note)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert target.read_bytes() == before
    assert main(["convert", str(note), "--force", "-o", str(tmp_path / "other.md")]) == 0


def test_cli_chunk_table_and_json(capsys):
    assert main(["chunk", str(SAMPLE_DOCS / "plain-note.md"), "--unit", "tokens", "--size", "64"]) == 0
    out = capsys.readouterr().out
    assert "# Meeting note: search relevance > ## Actions" in out
    assert "budget 64 tokens" in out
    assert main(["chunk", str(SAMPLE_DOCS / "plain-note.md"), "--unit", "tokens", "--size", "64", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"id", "hash", "index", "total", "start", "end", "tokens", "breadcrumb", "content", "text"} <= set(data[0])


def test_cli_chunk_bad_encoding_is_one_line(capsys):
    assert main(["chunk", str(SAMPLE_DOCS / "plain-note.md"), "--unit", "tokens", "--encoding", "no-such-enc"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no-such-enc" in err[0]


CORPUS = SHARED / "corpus" / "markdown"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus not present")
def test_every_corpus_markdown_file_converts_to_a_valid_document(tmp_path):
    files = sorted(CORPUS.rglob("*.md"))
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8")
        chunks = chunk_text(text, ChunkOptions(unit="tokens", chunk_size=512), source=str(path))
        out = convert_checked(text, chunks, tmp_path / "out.ctxfst.md", path.stem)  # raises if invalid
        assert out.count("<Chunk id=") >= 1, path


def test_crlf_note_converts_with_crlf_and_the_same_text(tmp_path):
    crlf = NOTE.replace("\n", "\r\n")
    chunks = chunk_text(crlf, ChunkOptions(unit="tokens", chunk_size=32, overlap=0))
    out = convert_checked(crlf, chunks, tmp_path / "x.ctxfst.md", "x")
    assert "\r\n" in out and out.count("\n") == out.count("\r\n")
    doc = Document.from_text(out)
    assert "\n\n".join(c.content for c in doc.body_chunks) == NOTE.strip()
