"""The document model: exact spans, tolerant tag syntax, hostile files, byte-exact saves, minimal edits."""
from __future__ import annotations

import datetime as dt
import difflib
import os
import shutil
from pathlib import Path

import pytest

from ctxfst_tui.core.format.document import Document, jsonable
from conftest import FIXTURES, HOSTILE_FILES, SAMPLE_DOCS, conformance_docs

QUIRKS = FIXTURES / "quirks.ctxfst.md"
CRLF_BOM = FIXTURES / "crlf-bom.ctxfst.md"


def test_tag_spans_are_exact():
    doc = Document.load(QUIRKS)
    py, go = doc.body_chunks
    assert (py.id, py.open.line, py.open.column) == ("skill:python", 34, 1)
    assert doc.text[py.open.start : py.open.end] == "<Chunk  id = 'skill:python' >"
    assert doc.raw[py.open.byte_start : py.open.byte_end] == b"<Chunk  id = 'skill:python' >"
    assert doc.text[py.close.start : py.close.end] == "</Chunk>"
    assert py.close.line == 44
    assert py.content.startswith("## Python") and py.content.endswith("Python services use uv.")
    # lower/upper-case tags are accepted like the reference (re.IGNORECASE)
    assert (go.id, go.open.line, go.close.line) == ("skill:go", 46, 50)


def test_tags_in_code_are_text():
    doc = Document.load(QUIRKS)
    ids = [c.id for c in doc.body_chunks]
    assert "fenced:example" not in ids and "inline:code" not in ids
    assert "<Chunk id=\"fenced:example\">" in doc.body_chunk("skill:python").content


def test_frontmatter_positions_and_unknown_keys():
    doc = Document.load(QUIRKS)
    assert doc.title == "Quirks: quotes, dates and code"
    assert doc.data["custom_key"] == {"kept": True}
    ents = doc.entities
    assert [e.id for e in ents] == ["entity:python", "entity:go"]
    assert [e.line for e in ents] == [6, 10]
    chunks = doc.chunks
    assert [c.line for c in chunks] == [14, 21]
    assert chunks[1].field_line(doc, "context") == (26, 5)
    assert chunks[1].data["context"] == "Go services, folded over two lines"


def test_unquoted_dates_are_dates_and_export_as_strings():
    doc = Document.load(QUIRKS)
    assert doc.data["created"] == dt.date(2026, 3, 8)
    assert jsonable(doc.chunks[0].data)["created_at"] == "2026-03-08"


def test_crlf_and_bom():
    doc = Document.load(CRLF_BOM)
    assert doc.had_bom and doc.newline == "\r\n"
    chunk = doc.body_chunks[0]
    assert chunk.content == "Café — body"
    assert chunk.open.line == 14 and chunk.open.byte_start == doc.raw.index(b"<Chunk")
    assert doc.chunks[0].data["context"] == "Ünïcode context"


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_hostile_files_give_findings_not_exceptions(hostile_dir, name):
    doc = Document.load(hostile_dir / name)
    from ctxfst_tui.core.format.validate import validate

    findings = validate(doc)
    assert findings, f"{name}: expected at least one finding"
    assert all(f.line >= 0 and f.message for f in findings)


def test_specific_bad_inputs_are_named():
    assert Document(b"").load_findings[0].rule == "file-empty"
    assert Document(b"ab\x00cd").load_findings[0].rule == "file-binary"
    bad = Document(b"line one\nline \xff two\n")
    assert bad.load_findings[0].rule == "file-encoding" and bad.load_findings[0].line == 2
    cut = Document(HOSTILE_FILES["truncated.md"])
    assert cut.load_findings[0].rule == "frontmatter-unclosed"
    broken = Document(b"---\ntitle: x\n  bad: [\n---\nbody\n")
    f = broken.load_findings[0]
    assert f.rule == "yaml-syntax" and f.line >= 2 and "YAML line" in f.message


def _round_trip_files() -> list[Path]:
    files = sorted(SAMPLE_DOCS.rglob("*.md")) + sorted(FIXTURES.glob("*.md")) + conformance_docs()
    return files


@pytest.mark.parametrize("path", _round_trip_files(), ids=lambda p: p.name)
def test_load_save_without_edits_is_byte_identical(tmp_path, path):
    target = tmp_path / path.name
    shutil.copyfile(path, target)
    before = target.read_bytes()
    mtime = os.stat(target).st_mtime_ns
    doc = Document.load(target)
    assert not doc.dirty
    assert doc.save() is False  # nothing to write
    assert target.read_bytes() == before
    assert os.stat(target).st_mtime_ns == mtime
    doc.save(tmp_path / "copy.md")
    assert (tmp_path / "copy.md").read_bytes() == before


def _changed_lines(before: str, after: str) -> list[str]:
    return [l for l in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if l[:1] in "+-" and not l.startswith(("+++", "---"))]


def test_field_edit_changes_only_that_field(tmp_path):
    target = tmp_path / "q.md"
    shutil.copyfile(QUIRKS, target)
    doc = Document.load(target)
    before = doc.text
    doc.set_field("chunks", 0, "entities", ["entity:python", "entity:go"])
    assert _changed_lines(before, doc.text) == [
        "-    entities: [entity:python]",
        "+    entities: [entity:python, entity:go]",
    ]
    assert doc.chunks[0].data["entities"] == ["entity:python", "entity:go"]
    assert doc.save() is True
    reread = Document.load(target)
    assert reread.chunks[0].data["entities"] == ["entity:python", "entity:go"]
    assert "# a comment that must survive edits" in reread.text
    assert "# a comment between entries" in reread.text


def test_block_list_edit_keeps_block_style_and_quotes():
    doc = Document.load(QUIRKS)
    before = doc.text
    doc.set_field("chunks", 1, "tags", ["Go", "Backend", "Services"])
    assert _changed_lines(before, doc.text) == ["+      - Services"]
    doc2 = Document.load(QUIRKS)
    b2 = doc2.text
    doc2.set_field("entities", 0, "name", "CPython")
    assert _changed_lines(b2, doc2.text) == ["-    name: Python", "+    name: CPython"]


def test_entity_update_add_remove_field_and_entries():
    doc = Document.load(QUIRKS)
    before = doc.text
    new = dict(doc.entities[1].data)
    new["aliases"] = ["golang"]
    doc.update_entry("entities", 1, new)
    assert _changed_lines(before, doc.text) == ["+    aliases: [golang]"]
    doc.remove_field("entities", 1, "aliases")
    assert doc.text == before
    doc.append_entry("entities", {"id": "entity:rust", "name": "Rust", "type": "skill", "aliases": []})
    assert _changed_lines(before, doc.text) == [
        "+  - id: entity:rust", "+    name: Rust", "+    type: skill", "+    aliases: []",
    ]
    assert doc.entities[2].data["name"] == "Rust"
    doc.remove_entry("entities", 2)
    assert doc.text == before


def test_edit_keeps_crlf_and_bom(tmp_path):
    target = tmp_path / "c.md"
    shutil.copyfile(CRLF_BOM, target)
    doc = Document.load(target)
    doc.set_field("chunks", 0, "context", "New context")
    doc.save()
    raw = target.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert b"    context: \"New context\"\r\n" in raw
    assert raw.count(b"\r\n") == raw.count(b"\n")


def test_save_is_atomic_and_keeps_mode(tmp_path, monkeypatch):
    target = tmp_path / "a.md"
    shutil.copyfile(QUIRKS, target)
    os.chmod(target, 0o640)
    doc = Document.load(target)
    doc.set_field("entities", 0, "name", "CPython")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        doc.save()
    assert target.read_bytes() == QUIRKS.read_bytes()  # the original is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["a.md"]  # no temp file left behind
    monkeypatch.undo()
    doc.save()
    assert "name: CPython" in target.read_text()
    assert (os.stat(target).st_mode & 0o777) == 0o640


FLOW_AND_DASH = """---
entities:
  - id: entity:a   # the first key shares the dash line
    name: A  # a trailing comment
    type: tool
  - {id: entity:b, name: B, type: tool}
chunks: [{id: ref:x, entities: [entity:a], context: "x"}]
---
"""


def test_first_key_on_the_dash_line_keeps_the_dash():
    doc = Document.from_text(FLOW_AND_DASH)
    doc.set_field("entities", 0, "id", "entity:alpha")
    assert "  - id: entity:alpha   # the first key shares the dash line\n" in doc.text
    assert doc.entities[0].data == {"id": "entity:alpha", "name": "A", "type": "tool"}
    doc.remove_field("entities", 0, "id")
    assert doc.entities[0].data == {"name": "A", "type": "tool"}


def test_trailing_comment_survives_a_field_edit():
    doc = Document.from_text(FLOW_AND_DASH)
    doc.set_field("entities", 0, "name", "Alpha")
    assert "    name: Alpha  # a trailing comment\n" in doc.text


def test_flow_entries_and_sections_are_rewritten_as_a_unit():
    doc = Document.from_text(FLOW_AND_DASH)
    before = doc.text
    doc.set_field("entities", 1, "name", "Bee")
    assert _changed_lines(before, doc.text) == [
        "-  - {id: entity:b, name: B, type: tool}",
        "+  - {id: entity:b, name: Bee, type: tool}",
    ]
    doc.set_field("chunks", 0, "entities", ["entity:a", "entity:b"])
    assert doc.chunks[0].data["entities"] == ["entity:a", "entity:b"]
    doc.remove_entry("entities", 1)
    assert [e.id for e in doc.entities] == ["entity:a"]
    assert "# the first key shares the dash line" in doc.text
