"""Diagnosis: the conformance suite's expected findings, each category, levels, and inputs that must not crash."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxfst_tui.core.diagnose import diagnose, diagnose_workspace
from ctxfst_tui.core.document import Document

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CONFORMANCE = SHARED / "conformance"
EXPECTED = sorted((CONFORMANCE / "expected").glob("*.json")) if CONFORMANCE.is_dir() else []


def load(tmp_path: Path, text: str | bytes, name: str = "doc.md") -> Document:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return Document.load(p)


def run(tmp_path: Path, text: str | bytes, level: str = "fix") -> dict:
    report = diagnose(load(tmp_path, text), level)
    json.dumps(report)  # always JSON-serialisable
    assert not [i for i in report["issues"] if i["rule"] == "diagnose-internal-error"], report
    return report


def issues(report: dict, rule: str) -> list[dict]:
    return [i for i in report["issues"] if i["rule"] == rule]


def doc(chunks: str, entities: str = "", body: str = "") -> str:
    """A document from YAML snippets; ``chunks``/``entities`` are the list items, indented by 2."""
    fm = "---\ntitle: t\n"
    if entities:
        fm += "entities:\n" + entities
    fm += "chunks:\n" + chunks + "---\n\n" + body
    return fm


GOOD_CONTEXT = "A well sized context that explains what this chunk covers and why someone would look for it"


# ---------------------------------------------------------------- conformance


@pytest.mark.skipif(not EXPECTED, reason="shared conformance suite not present")
@pytest.mark.parametrize("expected", EXPECTED, ids=lambda p: p.stem)
def test_conformance_expected_issues_present(expected: Path) -> None:
    want = json.loads(expected.read_text(encoding="utf-8"))["diagnose_issues"]
    report = diagnose(Document.load(CONFORMANCE / "docs" / f"{expected.stem}.md"), "fix")
    have = [(i["category"], i["severity"], tuple(sorted(i["chunk_ids"]))) for i in report["issues"]]
    for w in want:
        key = (w["category"], w["severity"], tuple(sorted(w["chunk_ids"])))
        assert key in have, f"missing {key}; have {have}"
        have.remove(key)


# ---------------------------------------------------------------- report shape and levels


def test_report_shape_and_stats(tmp_path: Path) -> None:
    text = doc(
        f'  - id: skill:a\n    tags: [X, Y]\n    context: "{GOOD_CONTEXT}"\n'
        f'  - id: skill:b\n    tags: [Z]\n    context: "short one"\n',
        "  - id: entity:a\n    name: A\n",
        '<Chunk id="skill:a">\nAlpha text.\n</Chunk>\n<Chunk id="skill:b">\nBeta.\n</Chunk>\n',
    )
    r = run(tmp_path, text)
    assert set(r) == {"filepath", "stats", "issues"}
    assert r["filepath"] == str(tmp_path / "doc.md")
    s = r["stats"]
    assert s["chunk_count"] == 2 and s["entity_count"] == 1 and s["unique_tags"] == 3
    assert s["categories"] == ["skill"]
    assert s["avg_context_words"] == (len(GOOD_CONTEXT.split()) + 2) / 2
    assert s["issues_by_severity"] == {"error": 0, "warning": 1, "info": 0}


def test_levels_control_suggestion_and_fix(tmp_path: Path) -> None:
    text = doc('  - id: skill:a\n    context: ""\n', body='<Chunk id="skill:a">\nx\n</Chunk>\n')
    (d,) = issues(run(tmp_path, text, "diagnose"), "context-empty")
    assert "suggestion" not in d and "fix" not in d
    (s,) = issues(run(tmp_path, text, "suggest"), "context-empty")
    assert s["suggestion"] and "fix" not in s
    (f,) = issues(run(tmp_path, text, "fix"), "context-empty")
    assert f["fix"] == {"context": "[TODO: Describe the purpose and unique aspects of skill:a]"}
    for key in ("category", "severity", "chunk_ids", "message", "rule", "line", "column"):
        assert key in f


def test_unknown_level_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        diagnose(load(tmp_path, "x\n"), "repair")


def test_workspace_gives_one_report_per_document(tmp_path: Path) -> None:
    a = load(tmp_path, "no frontmatter\n", "a.md")
    b = load(tmp_path, doc(f'  - id: skill:a\n    context: "{GOOD_CONTEXT}"\n'), "b.md")
    reports = diagnose_workspace([a, b], "suggest")
    assert [r["filepath"] for r in reports] == [a.label, b.label]


# ---------------------------------------------------------------- categories


def test_semantic_similarity(tmp_path: Path) -> None:
    ctx = "Deploying the web service to the cluster with charts and rolling updates"
    text = doc(
        f'  - id: ops:one\n    tags: [A]\n    context: "{ctx}"\n'
        f'  - id: ops:two\n    tags: [B]\n    context: "{ctx}"\n',
        body='<Chunk id="ops:one">\nSame words here.\n</Chunk>\n<Chunk id="ops:two">\nSame words here.\n</Chunk>\n',
    )
    (i,) = issues(run(tmp_path, text), "similar-chunks")
    assert i["category"] == "semantic_similarity" and i["severity"] == "warning"
    assert i["chunk_ids"] == ["ops:one", "ops:two"]
    assert i["line"] == 9  # the second chunk's context line
    assert "similarity: 100%" in i["message"]


def test_context_quality_rules_and_lines(tmp_path: Path) -> None:
    long_ctx = " ".join(["word"] * 60)
    text = doc(
        '  - id: ref:empty\n    context: ""\n'          # lines 4-5
        '  - id: ref:missing\n    tags: [A]\n'          # lines 6-7
        '  - id: ref:short\n    context: "too short"\n'  # lines 8-9
        f'  - id: ref:long\n    context: "{long_ctx}"\n'  # lines 10-11
        '  - id: ref:echo\n    context: "Prometheus scrapes every service every fifteen seconds and keeps samples"\n',  # 12-13
        body='<Chunk id="ref:echo">\nPrometheus scrapes every service every fifteen seconds and keeps samples locally.\n</Chunk>\n',
    )
    r = run(tmp_path, text)
    empty = issues(r, "context-empty")
    assert [(i["chunk_ids"], i["severity"], i["line"]) for i in empty] == [
        (["ref:empty"], "error", 5),
        (["ref:missing"], "error", 6),  # no context field: the entry's own line
    ]
    (short,) = issues(r, "context-short")
    assert (short["chunk_ids"], short["severity"], short["line"]) == (["ref:short"], "warning", 9)
    (long_,) = issues(r, "context-long")
    assert (long_["chunk_ids"], long_["severity"], long_["line"]) == (["ref:long"], "info", 11)
    (echo,) = issues(r, "context-echo")
    assert (echo["chunk_ids"], echo["severity"], echo["line"]) == (["ref:echo"], "warning", 13)
    assert all(i["category"] == "context_quality" for i in empty + [short, long_, echo])


def test_tag_overlap(tmp_path: Path) -> None:
    chunks = "".join(
        f'  - id: skill:{n}\n    tags: [{tags}]\n    context: "{GOOD_CONTEXT} {n}"\n'
        for n, tags in [("a", "Web, JS, A"), ("b", "Web, JS, B"), ("c", "Web, JS"), ("d", "Web, JS")]
    )
    r = run(tmp_path, doc(chunks))
    (ubiq,) = issues(r, "tags-ubiquitous")
    assert ubiq["severity"] == "info" and ubiq["chunk_ids"] == ["skill:a", "skill:b", "skill:c", "skill:d"]
    assert "Web, JS" in ubiq["message"]
    (same,) = issues(r, "tags-identical")
    assert same["severity"] == "warning" and same["chunk_ids"] == ["skill:c", "skill:d"]
    assert same["category"] == "tag_overlap" and same["line"] == 14  # skill:d's tags line


def test_id_naming(tmp_path: Path) -> None:
    chunks = "".join(
        f'  - id: "{cid}"\n    context: "{GOOD_CONTEXT}"\n'
        for cid in ["skill:a", "skill:b", "about:me", "Skill_GraphQL Schema"]
    )
    r = run(tmp_path, doc(chunks))
    (fmt,) = issues(r, "id-format")
    assert fmt["category"] == "id_naming" and fmt["severity"] == "warning"
    assert fmt["chunk_ids"] == ["Skill_GraphQL Schema"] and fmt["line"] == 10
    assert "skill:graphql-schema" in fmt["suggestion"]
    (rare,) = issues(r, "id-rare-prefix")
    assert rare["severity"] == "info" and rare["chunk_ids"] == ["about:me"] and rare["line"] == 8


def test_entity_noise_duplication_and_linking(tmp_path: Path) -> None:
    entities = (
        "  - id: entity:js\n    name: JavaScript\n"      # 4-5
        "  - id: entity:js2\n    name: ' javascript'\n"  # 6-7
        "  - id: entity:sys\n    name: System\n"         # 8-9
    )
    many = ", ".join(["entity:js"] * 7)
    chunks = (
        f'  - id: skill:a\n    entities: [{many}]\n    context: "{GOOD_CONTEXT}"\n'           # 11-13
        f'  - id: skill:b\n    entities: [entity:js, entity:nope]\n    context: "{GOOD_CONTEXT} b"\n'  # 14-16
    )
    r = run(tmp_path, doc(chunks, entities))
    (noise,) = issues(r, "entity-generic")
    assert (noise["category"], noise["severity"], noise["chunk_ids"], noise["line"]) == ("entity_noise", "warning", [], 9)
    assert noise["entity_ids"] == ["entity:sys"]
    (dup,) = issues(r, "entity-duplicate-name")
    assert (dup["category"], dup["severity"], dup["line"]) == ("entity_duplication", "warning", 7)
    assert dup["entity_ids"] == ["entity:js2", "entity:js"]
    (many_,) = issues(r, "entity-links-many")
    assert (many_["category"], many_["severity"], many_["chunk_ids"], many_["line"]) == ("entity_linking", "warning", ["skill:a"], 12)
    (undef,) = issues(r, "entity-undefined")
    assert (undef["severity"], undef["chunk_ids"], undef["line"]) == ("error", ["skill:b"], 15)
    assert "entity:nope" in undef["message"] and undef["fix"] == {"entities": ["entity:js"]}


def test_integer_and_unhashable_entity_refs_are_errors_not_crashes(tmp_path: Path) -> None:
    entities = "  - id: entity:a\n    name: A\n  - id: 42\n    name: Answer\n"
    chunks = (
        f'  - id: skill:a\n    entities: [entity:a, 42]\n    context: "{GOOD_CONTEXT}"\n'
        f'  - id: skill:b\n    entities: [{{x: 1}}, [entity:a]]\n    context: "{GOOD_CONTEXT} b"\n'
    )
    r = run(tmp_path, doc(chunks, entities))
    undef = issues(r, "entity-undefined")
    assert [(i["chunk_ids"], i["category"], i["severity"]) for i in undef] == [
        (["skill:a"], "entity_linking", "error"),
        (["skill:b"], "entity_linking", "error"),
    ]
    assert "42 (an integer" in undef[0]["message"] and undef[0]["entity_ids"] == [42]


# ---------------------------------------------------------------- structure and inputs that must not crash


@pytest.mark.parametrize(
    "text, rule, line",
    [
        (b"", "file-empty", 0),
        (b"  \n\n", "file-empty", 0),
        (b"---\x00\x01binary", "file-binary", 1),
        (b"---\ntitle: caf\xe9\n---\n", "file-encoding", 2),
        ("# Just Markdown\n\nNo frontmatter here.\n", "no-frontmatter", 1),
        ("---\ntitle: t\nentities:\n  - id: a\n     name: b\n---\nbody\n", "yaml-syntax", 5),
        ("---\ntitle: never closed\nchunks: []\n", "frontmatter-unclosed", 1),
        ("---\n- a\n- b\n---\n", "frontmatter-not-mapping", 2),
        ("---\n---\nbody\n", "frontmatter-not-mapping", 2),
        ("---\ntitle: t\n---\nbody\n", "missing-chunks", 1),
        ("---\ntitle: t\nchunks:\n  skill:a:\n    context: x\n---\n", "chunks-not-list", 3),
        ("---\ntitle: t\nchunks: null\n---\n", "chunks-not-list", 3),
        ("---\ntitle: t\nchunks: []\n---\n", "no-chunks", 3),
        ("---\ntitle: t\nchunks:\n  - just a string\n  - 7\n---\n", "no-chunks", 3),
    ],
    ids=[
        "empty", "whitespace", "binary", "latin1", "no-frontmatter", "broken-yaml", "unclosed",
        "fm-list", "fm-empty", "no-chunks-key", "chunks-mapping", "chunks-null", "chunks-empty", "chunks-scalars",
    ],
)
def test_structure_errors(tmp_path: Path, text: str | bytes, rule: str, line: int) -> None:
    r = run(tmp_path, text)
    errors = [i for i in r["issues"] if i["category"] == "structure" and i["severity"] == "error"]
    assert [(i["rule"], i["line"], i["chunk_ids"]) for i in errors] == [(rule, line, [])]
    assert r["stats"]["chunk_count"] == 0
    assert r["stats"]["issues_by_severity"]["error"] == 1


def test_broken_yaml_message_names_the_line(tmp_path: Path) -> None:
    r = run(tmp_path, "---\ntitle: t\nentities:\n  - id: a\n     name: b\n---\nbody\n")
    (i,) = r["issues"]
    assert "YAML line 5" in i["message"] and "No YAML frontmatter" not in i["message"]


def test_odd_chunk_entries_are_skipped_with_a_warning(tmp_path: Path) -> None:
    text = doc(
        "  - just a string\n"                                  # 10 (entities take lines 3-8)
        "  - context: no id here\n"                            # 11
        f'  - id: 17\n    context: "{GOOD_CONTEXT}"\n'          # 12-13
        "  - id: skill:b\n    tags: Solo\n    context: 12\n"   # 14-16
        "  - id: skill:c\n    tags: null\n    context: [a, b]\n    entities: entity:x\n",
        "  - not a mapping\n  - id: entity:n\n    name: 5\n  - id: entity:m\n    name: null\n",
    )
    r = run(tmp_path, text)
    assert [i["line"] for i in issues(r, "chunk-not-mapping")] == [10]
    assert [i["line"] for i in issues(r, "chunk-missing-id")] == [11]
    assert r["stats"]["chunk_count"] == 3
    assert "17" in [cid for i in issues(r, "id-format") for cid in i["chunk_ids"]]
    # "Solo" is one tag, not four letters
    assert r["stats"]["unique_tags"] == 1
    # a numeric context has words; a list context counts as empty
    assert [i["chunk_ids"] for i in issues(r, "context-short")] == [["skill:b"]]
    assert [i["chunk_ids"] for i in issues(r, "context-empty")] == [["skill:c"]]


def test_entity_checks_still_run_without_usable_chunks(tmp_path: Path) -> None:
    r = run(tmp_path, "---\nentities:\n  - id: entity:t\n    name: Tool\nchunks: []\n---\n")
    assert [i["rule"] for i in r["issues"]] == ["no-chunks", "entity-generic"]
    assert r["stats"]["entity_count"] == 1


def test_bom_and_crlf(tmp_path: Path) -> None:
    text = doc('  - id: skill:a\n    context: ""\n', body='<Chunk id="skill:a">\nx\n</Chunk>\n')
    raw = ("\ufeff" + text).replace("\n", "\r\n").encode("utf-8")
    r = run(tmp_path, raw)
    (i,) = issues(r, "context-empty")
    assert i["line"] == 5
