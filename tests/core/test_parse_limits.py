"""Parsing hostile frontmatter and bodies: YAML's line breaks, duplicate keys, alias bombs,
exotic types, deep nesting and 10,000 nested <Chunk> tags — each on real bytes, through the
core API and through the real CLI process, with the CLI's peak memory measured."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxfst_tui.core.format import frontmatter as fmt
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.workspace.entity_ops import merge_entities
from ctxfst_tui.core.format.export import ExportRefused, export_documents
from ctxfst_tui.core.format.source import LineIndex, split_lines
from ctxfst_tui.core.format.validate import validate

_SCRIPT = Path(sys.executable).with_name("ctxfst-tui")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "ctxfst_tui"]
MAX_RSS_MB = 300

# A document whose merge of entity:reactjs into entity:react touches three places. TITLE is
# where a line break other than LF goes: before every entry, so a shifted line map shows.
BEFORE = """---
title: "TITLE"
entities:
  - id: entity:react
    name: React
    type: framework
    aliases: [ReactJS]
  - id: entity:reactjs
    name: React.js
    type: framework
  - id: entity:beta
    name: Beta
    type: concept
chunks:
  - id: a:one
    tags: [x]
    entities: [entity:react, entity:reactjs]
    context: "Context NOTE here"
---

<Chunk id="a:one">
Some text about React.
</Chunk>
"""
AFTER = """---
title: "TITLE"
entities:
  - id: entity:react
    name: React
    type: framework
    aliases: [ReactJS, React.js]
  - id: entity:beta
    name: Beta
    type: concept
chunks:
  - id: a:one
    tags: [x]
    entities: [entity:react]
    context: "Context NOTE here"
---

<Chunk id="a:one">
Some text about React.
</Chunk>
"""

VARIANTS = {
    # name: (title, note, newline)
    "line-separator": ("Intro\u2028to React", "with\u2028a break", "\n"),
    "next-line": ("Intro\x85to React", "with\x85a break", "\n"),
    "paragraph-separator": ("Intro\u2029to React", "plain", "\n"),
    "cr-only": ("Intro", "plain", "\r"),
    "cr-only-with-ls": ("Intro\u2028to React", "plain", "\r"),
    "crlf": ("Intro\u2028to React", "plain", "\r\n"),
}


def variant(template: str, name: str) -> bytes:
    title, note, nl = VARIANTS[name]
    return template.replace("TITLE", title).replace("NOTE", note).replace("\n", nl).encode("utf-8")


def cli(*args, cwd: Path | None = None, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run the real CLI in a fresh measuring parent: (result, peak RSS in MB, seconds)."""
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.monotonic()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "dt = time.monotonic() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps({'rc': p.returncode, 'out': p.stdout, 'err': p.stderr, 'rss': rss, 'dt': dt}))\n"
    )
    raw = subprocess.run([sys.executable, "-c", probe, *CLI, *map(str, args)], capture_output=True, text=True,
                         cwd=cwd, timeout=timeout)
    data = json.loads(raw.stdout)
    done = subprocess.CompletedProcess(args, data["rc"], data["out"], data["err"])
    return done, data["rss"], data["dt"]


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


# ---------------------------------------------------------------- line breaks


def test_lines_end_where_yaml_says():
    text = "a\u2028b\x85c\rd\r\ne\nf\x0bg\x0ch\x1ci"
    assert split_lines(text) == ["a", "b", "c", "d", "e", "f\x0bg\x0ch\x1ci"]
    index = LineIndex(text)
    assert index.line_count == 6
    assert index.position(text.index("e")) == (5, 1)
    assert index.line_text(4) == "d"


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_frontmatter_line_map_matches_the_yaml_marks(name):
    doc = Document(variant(BEFORE, name))
    assert doc.load_findings == []
    shift = 0 if VARIANTS[name][0] == "Intro" else 1  # the title's own line break
    assert [e.line for e in doc.entities] == [4 + shift, 8 + shift, 11 + shift]
    assert [e.id for e in doc.entities] == ["entity:react", "entity:reactjs", "entity:beta"]
    assert doc.index.line_text(doc.entities[1].line) == "  - id: entity:reactjs"
    assert doc.body_chunk("a:one").content == "Some text about React."
    assert [f.rule for f in validate(doc) if f.severity == "error"] == []


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_merge_changes_only_the_intended_lines(tmp_path, name):
    path = write(tmp_path, "doc.md", variant(BEFORE, name))
    ws = Workspace.load(tmp_path)
    merge_entities(ws, "entity:react", ["entity:reactjs"])
    assert ws.docs[0].encoded() == variant(AFTER, name)


@pytest.mark.parametrize("name", ["line-separator", "next-line", "cr-only"])
def test_cli_merge_writes_exactly_the_intended_bytes(tmp_path, name):
    path = write(tmp_path, "docs/doc.md", variant(BEFORE, name))
    done, _, _ = cli("entities", "merge", tmp_path / "docs", "entity:reactjs", "--into", "entity:react")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == variant(AFTER, name)
    done, _, _ = cli("validate", path)
    assert done.returncode == 0 and "valid" in done.stdout


def test_cli_exports_a_cr_only_document(tmp_path):
    path = write(tmp_path, "doc.md", variant(BEFORE, "cr-only"))
    out = tmp_path / "chunks.json"
    done, _, _ = cli("export", path, "--output", out)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert [c["id"] for c in data["chunks"]] == ["a:one"]
    assert data["chunks"][0]["content"] == "Some text about React."
    assert data["chunks"][0]["entities"] == ["entity:react", "entity:reactjs"]


def test_cr_only_edit_keeps_cr_line_endings():
    doc = Document(variant(BEFORE, "cr-only"))
    assert doc.newline == "\r"
    doc.append_entry("entities", {"id": "entity:new", "name": "New", "type": "concept"})
    assert "\n" not in doc.text
    assert doc.entities[-1].id == "entity:new"
    assert doc.index.line_text(doc.entities[-1].line) == "  - id: entity:new"
    assert doc.body_chunk("a:one").content == "Some text about React."


def test_unedited_documents_save_byte_identical(tmp_path):
    for name in VARIANTS:
        path = write(tmp_path, f"{name}.md", variant(BEFORE, name))
        doc = Document.load(path)
        assert not doc.dirty
        assert doc.save() is False
        assert path.read_bytes() == variant(BEFORE, name)


def test_a_value_holding_a_line_separator_is_written_escaped():
    doc = Document(variant(BEFORE, "line-separator"))
    doc.set_field("entities", 2, "name", "Be\u2028ta\x85")
    assert doc.index.line_text(doc.entities[2].line + 1) == '    name: "Be\\u2028ta\\u0085"'
    assert doc.entities[2].data["name"] == "Be\u2028ta\x85"
    assert [e.line for e in doc.entities] == [5, 9, 12]


# ---------------------------------------------------------------- duplicate keys

DUP_TOP = BEFORE.replace("chunks:\n", "entities:\n  - id: entity:gamma\n    name: Gamma\n    type: concept\nchunks:\n")
DUP_ENTRY = BEFORE.replace("    name: Beta\n", "    name: Beta\n    name: Beta Two\n")


@pytest.mark.parametrize("text, key, line, first", [(DUP_TOP, "entities", 14, 3), (DUP_ENTRY, "name", 13, 12)])
def test_duplicate_keys_are_an_error_naming_both_lines(tmp_path, text, key, line, first):
    doc = Document(text.replace("TITLE", "T").replace("NOTE", "n").encode())
    errors = [f for f in validate(doc) if f.severity == "error"]
    assert [(f.rule, f.line) for f in errors] == [("yaml-duplicate-key", line)]
    assert f"duplicate key '{key}' at line {line} (first at line {first})" in errors[0].message
    with pytest.raises(ValueError, match=f"duplicate key '{key}'"):
        doc.set_field("entities", 0, "name", "X")
    with pytest.raises(ValueError, match="duplicate key"):
        doc.append_entry("entities", {"id": "entity:z", "name": "Z", "type": "concept"})
    with pytest.raises(ValueError, match="duplicate key"):
        doc.remove_entry("entities", 0)

    path = write(tmp_path, "docs/doc.md", text.replace("TITLE", "T").replace("NOTE", "n").encode())
    before = path.read_bytes()
    done, _, _ = cli("validate", path)
    assert done.returncode == 1
    assert f"doc.md:{line}:" in done.stdout and f"first at line {first}" in done.stdout
    done, _, _ = cli("entities", "merge", tmp_path / "docs", "entity:reactjs", "--into", "entity:react")
    assert done.returncode != 0
    assert path.read_bytes() == before  # entity:beta and everything else untouched


DECLARES_BOTH = """---
title: A
entities:
  - id: entity:js
    name: JS
    type: skill
  - id: entity:javascript
    name: JavaScript
    type: skill
chunks: []
---
body
"""
DUPLICATE_MENTIONS_JS = """---
entities:
  - id: entity:beta
    name: Beta
    type: skill
chunks: []
entities:
  - id: entity:js
    name: JS
    type: skill
---
body
"""


@pytest.mark.parametrize("merged, into", [("entity:js", "entity:javascript"), ("entity:js", "entity:beta")])
def test_cli_merge_names_the_document_whose_frontmatter_did_not_load(tmp_path, merged, into):
    a = write(tmp_path, "docs/a.md", DECLARES_BOTH.encode())
    b = write(tmp_path, "docs/b.md", DUPLICATE_MENTIONS_JS.encode())
    before = a.read_bytes(), b.read_bytes()
    done, _, _ = cli("entities", "merge", "docs", merged, "--into", into, cwd=tmp_path)
    assert done.returncode == 1
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert "b.md:7: cannot edit the frontmatter: duplicate key 'entities'" in message
    assert "(first at line 2)" in message and "unknown entity" not in message
    assert (a.read_bytes(), b.read_bytes()) == before


def test_a_broken_document_that_does_not_mention_the_ids_does_not_block_a_merge(tmp_path):
    a = write(tmp_path, "docs/a.md", DECLARES_BOTH.encode())
    write(tmp_path, "docs/b.md", DUPLICATE_MENTIONS_JS.replace("entity:js", "entity:ts").encode())
    done, _, _ = cli("entities", "merge", "docs", "entity:js", "--into", "entity:javascript", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"entity:js\n" not in a.read_bytes() and b"entity:javascript" in a.read_bytes()


def test_keys_equal_as_json_keys_are_duplicates():
    doc = Document(b"---\ntitle: t\nextra: {1: a, \"1\": b}\n---\n")
    assert [f.rule for f in doc.load_findings] == ["yaml-duplicate-key"]


# ---------------------------------------------------------------- alias bomb


def bomb() -> bytes:
    lines = ["---", "title: bomb", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join(["*" + prev] * 9) + "]")
        prev = name
    lines += ["entities: []", "chunks:", "  - id: a:one", "    context: x", "    tags: *i", "---", "",
              '<Chunk id="a:one">', "text", "</Chunk>", ""]
    return "\n".join(lines).encode()


def test_alias_bomb_is_refused_before_it_is_built():
    t = time.monotonic()
    doc = Document(bomb())
    assert time.monotonic() - t < 5
    assert [(f.rule, f.line) for f in doc.load_findings] == [("yaml-alias-expansion", 8)]
    assert "alias *e" in doc.load_findings[0].message
    with pytest.raises(ExportRefused):
        export_documents([doc])


def test_a_few_aliases_are_fine():
    doc = Document(b"---\nbase: &b [x, y]\nchunks:\n  - id: a:one\n    context: c\n    tags: *b\n---\n\n<Chunk id=\"a:one\">\nx\n</Chunk>\n")
    assert doc.load_findings == []
    assert doc.chunks[0].data["tags"] == ["x", "y"]


def test_recursive_alias_is_refused():
    doc = Document(b"---\na: &a [1, *a]\n---\n")
    assert [(f.rule, f.line) for f in doc.load_findings] == [("yaml-alias-recursive", 2)]


@pytest.mark.parametrize("command", ["validate", "export", "diagnose"])
def test_cli_alias_bomb_memory_stays_small(tmp_path, command):
    path = write(tmp_path, "doc.md", bomb())
    args = [command, path] + (["--output", tmp_path / "out.json"] if command == "export" else [])
    done, rss, seconds = cli(*args)
    assert "internal error" not in done.stderr
    assert "doc.md:8:8: error [yaml-alias-expansion]" in done.stdout + done.stderr
    assert rss < MAX_RSS_MB, f"{command} peaked at {rss:.0f} MB"
    assert seconds < 60
    if command != "diagnose":
        assert done.returncode == 1
    assert not (tmp_path / "out.json").exists()


# ---------------------------------------------------------------- exotic types and nesting

EXOTIC = {
    "set": ("!!set {a, b}", "yaml-type-unsupported"),
    "binary": ("!!binary aGVsbG8=", "yaml-type-unsupported"),
    "python": ("!!python/object/apply:os.system ['echo hi']", "yaml-type-unsupported"),
    "omap": ("!!omap [a: 1]", "yaml-type-unsupported"),
    "local-tag": ("!thing value", "yaml-type-unsupported"),
    "deep-990": ("[" * 990 + "]" * 990, "yaml-too-deep"),
    "bad-date": ("2026-02-30", "yaml-value-invalid"),
    "huge-int": ("9" * 5000, "yaml-value-invalid"),
    "nan": (".nan", "yaml-value-invalid"),  # JSON has no NaN or infinity: export would write "NaN"
    "inf": ("-.Inf", "yaml-value-invalid"),
    "overflowing-float": ("1.0e+999", "yaml-value-invalid"),
    "nan-in-a-list": ("[1, 2.5, .NaN]", "yaml-value-invalid"),
}


def exotic(value: str) -> bytes:
    return BEFORE.replace('title: "TITLE"', "title: T\nextra: " + value).replace("NOTE", "n").encode()


@pytest.mark.parametrize("name", sorted(EXOTIC))
def test_exotic_values_are_findings_naming_the_line(tmp_path, name):
    value, rule = EXOTIC[name]
    doc = Document(exotic(value))
    assert [(f.rule, f.line) for f in doc.load_findings] == [(rule, 3)]
    path = write(tmp_path, "doc.md", exotic(value))
    out = tmp_path / "out.json"
    done, _, _ = cli("export", path, "--output", out)
    assert done.returncode == 1
    assert "internal error" not in done.stderr
    assert f"doc.md:3:" in done.stderr and f"[{rule}]" in done.stderr
    assert not out.exists()


def test_nan_and_infinity_name_their_line_and_quoted_they_are_text(tmp_path):
    doc = Document(BEFORE.replace("NOTE", "n").replace('title: "TITLE"', "title: T\nscore: .inf").encode())
    [finding] = doc.load_findings
    assert (finding.rule, finding.line) == ("yaml-value-invalid", 3)
    assert "'.inf' is infinite, which JSON cannot hold" in finding.message
    quoted = Document(BEFORE.replace("NOTE", "n").replace('title: "TITLE"', 'title: T\nscore: ".nan"').encode())
    assert quoted.load_findings == [] and quoted.data["score"] == ".nan"
    finite = Document(BEFORE.replace("NOTE", "n").replace('title: "TITLE"', "title: T\nscore: 1.5e+3").encode())
    assert finite.load_findings == [] and finite.data["score"] == 1500.0


def test_dates_stay_dates():
    doc = Document(b"---\nchunks:\n  - id: a:one\n    context: c\n    created_at: 2026-03-08\n---\n\n<Chunk id=\"a:one\">\nx\n</Chunk>\n")
    assert doc.load_findings == []
    assert export_documents([doc]).chunks[0]["created_at"] == "2026-03-08"


def test_nesting_at_the_limit_loads_and_beyond_is_refused():
    ok = Document(("---\nx: " + "[" * (fmt.MAX_DEPTH - 1) + "]" * (fmt.MAX_DEPTH - 1) + "\n---\n").encode())
    assert ok.load_findings == []
    t = time.monotonic()
    deep = Document(("---\nx: " + "[" * 200_000 + "]" * 200_000 + "\n---\n").encode())
    assert time.monotonic() - t < 5  # libyaml is quadratic in flow depth: we stop reading at the limit
    assert [f.rule for f in deep.load_findings] == ["yaml-too-deep"]


DEEP_SHAPES = {
    "flow": "x: " + "[" * 100_000 + "]" * 100_000 + "\n",
    "compact-sequence": "x:\n" + "- " * 100_000 + "v\n",
    "braces": "x: " + "{a: " * 100_000 + "1" + "}" * 100_000 + "\n",
}


@pytest.mark.parametrize("shape", sorted(DEEP_SHAPES))
def test_deep_nesting_never_reaches_an_unbounded_c_composer(shape):
    """libyaml before 0.2.5 composes without a depth limit and overflows the C stack; with
    that libyaml (simulated in a child, so a crash fails this test only) the bound sends the
    frontmatter to the checked composer, which names the rule."""
    probe = (
        "import sys\n"
        "from ctxfst_tui.core.format import frontmatter as fmt\n"
        "from ctxfst_tui.core.format.document import Document\n"
        "fmt._LIBYAML_BOUNDED = False\n"
        "doc = Document(sys.stdin.buffer.read())\n"
        "print(' '.join(f.rule for f in doc.load_findings))\n"
    )
    text = ("---\n" + DEEP_SHAPES[shape] + "---\n").encode()
    done = subprocess.run([sys.executable, "-c", probe], input=text, capture_output=True, timeout=120)
    assert done.returncode == 0, f"child died with {done.returncode}: {done.stderr[-400:]!r}"
    assert done.stdout.decode().split() == ["yaml-too-deep"]


def test_the_depth_bound_is_conservative_and_lets_real_frontmatter_through():
    real = "title: T\nentities:\n  - id: entity:a\n    aliases: [A, B]\nchunks:\n  - id: a:one\n    tags: [x]\n"
    assert not fmt._may_nest_deeper(real, 1000)
    nested = "a:\n" + "".join("  " * i + "- b:\n" for i in range(12)) + "  " * 12 + "- c\n"
    assert fmt._may_nest_deeper(nested, 20) and not fmt._may_nest_deeper(nested, 60)
    assert fmt._may_nest_deeper("x: " + "[" * 1200 + "]" * 1200, 1000)
    assert fmt._may_nest_deeper("- " * 1200 + "v", 1000)
    assert fmt._may_nest_deeper("? " * 300 + "- " * 300 + "v", 1000)


def test_control_character_names_its_line():
    doc = Document("---\ntitle: café\nname: a\x1cb\n---\n".encode())
    assert [(f.rule, f.line) for f in doc.load_findings] == [("yaml-syntax", 3)]


# ---------------------------------------------------------------- nested chunk tags

NESTED = 10_000


def nested_tags() -> bytes:
    fm = "---\ntitle: nested\nentities: []\nchunks:\n" + "".join(f"  - id: n:c{i}\n    context: c\n" for i in range(3)) + "---\n\n"
    body = "".join(f'<Chunk id="n:c{i}">\nline {i}\n' for i in range(NESTED)) + "</Chunk>\n" * NESTED
    return (fm + body).encode()


def test_nested_tags_are_one_error_and_cost_no_copies():
    doc = Document(nested_tags())
    assert len(doc.tag_events) == 2 * NESTED
    assert [c.id for c in doc.body_chunks] == ["n:c0", "n:c1"]  # a top chunk and the one inside it
    assert doc.body_chunks[0].close is not None and doc.body_chunks[0].close.line == doc.index.line_count - 1
    nested = [f for f in validate(doc) if f.rule == "tag-nested"]
    assert [f.line for f in nested] == [15, 17]
    assert f"{NESTED - 3} more chunk tags nested" in nested[1].message


def test_nested_siblings_keep_their_own_chunks():
    doc = Document(b'---\nchunks: []\n---\n<Chunk id="a:a">\n<Chunk id="a:b">\nx\n</Chunk>\n<Chunk id="a:c">\ny\n</Chunk>\n</Chunk>\n')
    assert [(c.id, c.parent, c.content) for c in doc.body_chunks][1:] == [("a:b", "a:a", "x"), ("a:c", "a:a", "y")]


@pytest.mark.parametrize("command", ["validate", "export", "diagnose"])
def test_cli_nested_tags_memory_stays_small(tmp_path, command):
    path = write(tmp_path, "doc.md", nested_tags())
    args = [command, path] + (["--output", tmp_path / "out.json"] if command == "export" else [])
    done, rss, seconds = cli(*args)
    assert "internal error" not in done.stderr
    assert ("[tag-nested]" if command != "diagnose" else "1 file diagnosed") in done.stdout + done.stderr
    assert rss < MAX_RSS_MB, f"{command} peaked at {rss:.0f} MB"
    assert seconds < 90
    assert not (tmp_path / "out.json").exists()


# ---------------------------------------------------------------- other Unicode encodings


@pytest.mark.parametrize("codec, name", [("utf-16", "UTF-16"), ("utf-16-be", "UTF-16"), ("utf-32", "UTF-32"),
                                         ("utf-32-be", "UTF-32")])
def test_utf16_and_utf32_with_a_bom_are_named_and_never_edited(tmp_path, codec, name):
    text = BEFORE.replace("TITLE", "T").replace("NOTE", "n")
    data = ("\ufeff" if codec.endswith("-be") else "").encode(codec) + text.encode(codec)
    doc = Document(data)
    assert not doc.readable
    assert [(f.rule, f.line, f.message) for f in doc.load_findings] == [
        ("file-encoding", 1, f"the file is {name} text: save it as UTF-8")]
    path = write(tmp_path, "docs/wide.md", data)
    done, _, _ = cli("validate", path)
    assert done.returncode == 1
    assert f"wide.md:1:1: error [file-encoding] the file is {name} text: save it as UTF-8" in done.stdout
    assert "binary" not in done.stdout
    done, _, _ = cli("entities", "merge", tmp_path / "docs", "entity:reactjs", "--into", "entity:react")
    assert done.returncode != 0
    assert path.read_bytes() == data
