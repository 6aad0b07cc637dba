"""Validation: rule codes, severities and exact lines, including where the reference is wrong."""
from __future__ import annotations

import json

import pytest

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.validate import has_errors, report_json, validate
from conftest import CONFORMANCE_DOCS, SHARED, conformance_docs


def rules(findings):
    return sorted((f.rule, f.line) for f in findings)


def check(text: str):
    return validate(Document.from_text(text, "t.md"))


BASE = """---
title: t
entities:
  - id: entity:a
    name: A
    type: tool
  - id: entity:s
    name: S
    type: state
chunks:
  - id: ref:one
    tags: [A]
    entities: [entity:a]
    context: "One"
{extra}---

<Chunk id="ref:one">
one
</Chunk>
"""


def test_valid_document_has_no_findings():
    assert check(BASE.format(extra="")) == []


@pytest.mark.parametrize(
    "extra, rule, line",
    [
        ("    created_at: 08/03/2026\n", "created-at-invalid", 15),
        ("    version: 0\n", "version-invalid", 15),
        ("    version: true\n", "version-invalid", 15),
        ("    priority: urgent\n", "priority-invalid", 15),
        ("    type: hologram\n", "type-invalid", 15),
        ("    dependencies: ref:x\n", "dependencies-not-list", 15),
        ("    dependencies: [3]\n", "dependency-not-string", 15),
        ("    state_refs: [entity:a]\n", "state-ref-not-state", 15),
        ("    state_refs: [entity:nope]\n", "state-ref-unknown", 15),
        ("    cost: huge\n", "cost-invalid", 15),
        ("    idempotent: 'yes'\n", "idempotent-invalid", 15),
        ("    preconditions: entity:s\n", "world-model-not-list", 15),
    ],
)
def test_chunk_field_errors_point_at_the_field(extra, rule, line):
    findings = check(BASE.format(extra=extra))
    assert [(f.rule, f.line, f.column, f.severity) for f in findings] == [(rule, line, 5, "error")]


def test_warnings_are_not_errors():
    findings = check(BASE.format(extra="    dependencies: [ref:missing]\n"))
    assert rules(findings) == [("dependency-unknown", 15)]
    assert not has_errors(findings)


def test_unquoted_date_is_valid():
    assert check(BASE.format(extra="    created_at: 2026-03-08\n")) == []


def test_negated_precondition_names_a_state():
    text = BASE.replace("    type: state\n", "    type: state\n  - id: entity:act\n    name: Act\n    type: action\n    preconditions: [\"NOT entity:s\"]\n")
    assert check(text.format(extra="")) == []


def test_entity_problems_point_at_their_lines():
    text = """---
entities:
  - id: entity:a
    name: A
    type: tool
  - id: entity:a
    name: A2
    type: gizmo
  - name: no id
chunks: []
---
"""
    assert rules(check(text)) == [
        ("entity-duplicate-id", 6),
        ("entity-missing-field", 9),
        ("entity-unknown-type", 8),
    ]


def test_body_tag_rules():
    text = """---
chunks:
  - id: ref:a
    context: a
  - id: ref:b
    context: b
---
<Chunk id="ref:a">
<Chunk id="ref:b">
</Chunk>
</Chunk>
</Chunk>
<Chunk id="Bad Id">
"""
    got = rules(check(text))
    assert ("tag-nested", 9) in got
    assert ("tag-stray-close", 12) in got
    assert ("tag-unknown-id", 13) in got
    assert ("tag-id-format", 13) in got
    assert ("tag-unclosed", 13) in got


def test_yaml_error_names_yaml_line_and_column():
    findings = check("---\ntitle: t\nentities:\n  - id: a\n     name: b\n---\n")
    assert len(findings) == 1
    f = findings[0]
    assert (f.rule, f.severity, f.line) == ("yaml-syntax", "error", 5)
    assert "line 5" in f.message and f.column > 0


def test_chunks_mapping_is_an_error_not_a_crash():
    findings = check("---\nchunks:\n  a:b:\n    context: x\n---\n")
    assert rules(findings) == [("chunks-not-list", 2)]


def test_report_json_shape():
    doc = Document.from_text(BASE.format(extra="    priority: urgent\n"), "x.md")
    data = report_json(doc, validate(doc))
    assert data["file"] == "x.md" and data["valid"] is False
    f = data["findings"][0]
    assert {"severity", "line", "column", "rule", "message"} <= set(f)


@pytest.mark.parametrize("path", conformance_docs(), ids=lambda p: p.stem)
def test_conformance_counts(path):
    expected = json.loads((SHARED / "conformance" / "expected" / f"{path.stem}.json").read_text())["validate"]
    findings = validate(Document.load(path))
    assert sum(f.severity == "error" for f in findings) == expected["errors"]
    assert sum(f.severity == "warning" for f in findings) == expected["warnings"]
    assert {f.line for f in findings} >= set(expected["body_lines"])


def test_conformance_frontmatter_lines_are_exact():
    if not CONFORMANCE_DOCS.is_dir():
        pytest.skip("../shared not present")
    findings = validate(Document.load(CONFORMANCE_DOCS / "bad-field-values.md"))
    by_rule = {f.rule: f.line for f in findings}
    assert by_rule["cost-invalid"] == 11 and by_rule["idempotent-invalid"] == 12
    assert by_rule["created-at-invalid"] == 18 and by_rule["dependencies-not-list"] == 22
    assert by_rule["entity-unknown-type"] == 6
