"""Fixes of a diagnosis: every op applies with a minimal diff and undoes to the exact bytes;
stale and malformed fixes are refused in one line; applying all fixes of a diagnosis leaves
valid documents on which those findings are gone."""
from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.undo import UndoStack
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.workspace.fixes import (
    FIX_OPS,
    FixError,
    apply_fix,
    apply_fixes,
    collect_fixes,
    describe_fix,
)
from ctxfst_tui.core.format.validate import has_errors, validate

PLATFORM = """\
---
title: Platform notes  # a comment that must survive
entities:
  - id: entity:kubernetes
    name: Kubernetes
    type: platform
    aliases: []
  - id: entity:k8s
    name: K8s
    type: platform
  - id: entity:helm
    name: Helm
    type: tool
  - id: entity:go
    name: Go
    type: skill
  - id: entity:postgresql
    name: PostgreSQL
    type: database
  - id: entity:system
    name: System
    type: concept
  - id: entity:gke
    name: Google Kubernetes Engine
    type: platform
  - id: entity:terraform
    name: Terraform
    type: tool
  - id: entity:ansible
    name: Ansible
    type: tool
chunks:
  - id: ops:deploy
    tags: [Deploy]
    entities: [entity:kubernetes, entity:postgresql, entity:pgbouncer, 42]
    context: "Deploying the web service to the Kubernetes cluster with Helm charts and rolling updates"
    dependencies: [ops:rollback, ops:missing]
  - id: ops:rollback
    tags: [Rollback]  # rollback notes
    entities: [entity:k8s]
    context: ""
    dependencies: [ops:deploy]
  - id: ops:build
    tags: [Build]
    entities:
      - entity:go
      - entity:system
    context: "Building the Go binaries in CI and pushing images for Google Kubernetes Engine (GKE) clusters"
  - id: ops:notes
    tags: [Notes]
---

<Chunk id="ops:deploy">
## Deploy

We deploy with Helm. Connections go through PgBouncer before they reach the database.
</Chunk>

<Chunk id="ops:rollback">
## Rolling back

When a release misbehaves on K8s we roll back to the previous revision and watch the pods.
</Chunk>

<Chunk id="ops:build">
## Build

Go binaries are built by Google Cloud Build. The pipeline is written in Go.
</Chunk>

<Chunk id="ops:notes">
## Notes

Terraform state lives in a bucket; Helm releases are tracked per cluster.
</Chunk>
"""

VARIANTS = {
    "lf": PLATFORM.encode("utf-8"),
    "crlf-bom": b"\xef\xbb\xbf" + PLATFORM.replace("\n", "\r\n").encode("utf-8"),
}


def workspace(tmp_path: Path, files: dict[str, bytes]) -> Workspace:
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return Workspace.load(tmp_path)


def one(tmp_path: Path, variant: str = "lf") -> tuple[Workspace, Document, bytes]:
    ws = workspace(tmp_path, {"platform.md": VARIANTS[variant]})
    return ws, ws.docs[0], VARIANTS[variant]


def changed_lines(before: str, after: str) -> int:
    sm = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal")


# (fix, what the document then contains, at most this many changed lines)
CASES = [
    ({"op": "merge_entities", "into": "entity:kubernetes", "merged": ["entity:k8s"]},
     ["aliases: [K8s]", "entities: [entity:kubernetes]\n"], 5),
    ({"op": "add_alias", "entity_id": "entity:gke", "alias": "GKE"}, ["    aliases: [GKE]"], 1),
    ({"op": "update_entity", "entity_id": "entity:helm", "type": "platform"}, ["name: Helm\n    type: platform"], 1),
    ({"op": "delete_entity", "entity_id": "entity:system"}, ["      - entity:go\n    context"], 4),
    ({"op": "declare_entity", "chunk_id": "ops:deploy",
      "entity": {"id": "entity:pgbouncer", "name": "PgBouncer", "type": "concept"}}, ["  - id: entity:pgbouncer"], 3),
    ({"op": "link_entity", "chunk_id": "ops:deploy", "entity_id": "entity:helm"},
     ["entities: [entity:kubernetes, entity:postgresql, entity:pgbouncer, 42, entity:helm]"], 1),
    ({"op": "link_entity", "chunk_id": "ops:build", "entity_id": "entity:gke"},
     ["      - entity:system\n      - entity:gke\n"], 1),
    ({"op": "link_entity", "chunk_id": "ops:notes", "entity_id": "entity:terraform"},
     ["tags: [Notes]\n    entities: [entity:terraform]\n---"], 1),
    ({"op": "unlink_entity", "chunk_id": "ops:deploy", "entity_id": 42},
     ["entities: [entity:kubernetes, entity:postgresql, entity:pgbouncer]\n"], 1),
    ({"op": "unlink_entity", "chunk_id": "ops:build", "entity_id": "entity:system"},
     ["      - entity:go\n    context"], 1),
    ({"op": "relink_entity", "chunk_id": "ops:rollback", "entity_id": "entity:k8s", "into": "entity:kubernetes"},
     ["tags: [Rollback]  # rollback notes\n    entities: [entity:kubernetes]"], 1),
    ({"op": "set_context", "chunk_id": "ops:rollback", "context": "[DRAFT] Rolling back: a draft", "replaces": ""},
     ['    context: "[DRAFT] Rolling back: a draft"'], 1),
    ({"op": "set_context", "chunk_id": "ops:notes", "context": "Where Terraform state and Helm releases are tracked"},
     ["tags: [Notes]\n    context: Where Terraform state and Helm releases are tracked\n---"], 1),
    ({"op": "remove_dependency", "chunk_id": "ops:deploy", "dependency": "ops:missing"},
     ["dependencies: [ops:rollback]\n"], 1),
]


# Ops whose minimal edit and undo need a document of their own, tested in their own file.
COVERED_ELSEWHERE = {"move_context_comment"}  # tests/core/test_context_comments.py


def test_every_op_is_covered() -> None:
    assert {c[0]["op"] for c in CASES} | COVERED_ELSEWHERE == set(FIX_OPS)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("fix, expect, max_lines", CASES, ids=[f"{c[0]['op']}-{n}" for n, c in enumerate(CASES)])
def test_fix_applies_minimally_and_undoes_to_the_exact_bytes(tmp_path: Path, variant: str, fix: dict,
                                                             expect: list[str], max_lines: int) -> None:
    ws, doc, raw = one(tmp_path, variant)
    before = doc.text
    record = apply_fix(ws, fix, doc.path)
    after = doc.text
    assert after != before and record.changes and record.changes[0].after == after
    for snippet in expect:
        assert snippet.replace("\n", "\r\n" if variant == "crlf-bom" else "\n") in after, (snippet, after)
    assert 0 < changed_lines(before, after) <= max_lines
    assert "# a comment that must survive" in after and "# rollback notes" in after
    assert not has_errors([f for f in validate(doc) if f.rule not in ("entity-ref-unknown", "entity-ref-not-string")])
    record.undo(ws)
    assert doc.encoded() == raw  # byte for byte, BOM and CRLF included
    record.redo(ws)
    assert doc.text == after
    assert "\n" not in describe_fix(fix) and describe_fix(fix) != f"unknown fix {fix['op']!r}"


def test_fixes_work_through_the_undo_stack_and_save(tmp_path: Path) -> None:
    ws, doc, raw = one(tmp_path)
    stack = UndoStack()
    stack.push(apply_fix(ws, {"op": "link_entity", "chunk_id": "ops:deploy", "entity_id": "entity:helm"}, doc.path))
    stack.push(apply_fix(ws, {"op": "merge_entities", "into": "entity:kubernetes", "merged": ["entity:k8s"]}))
    assert ws.save() == [doc.path] and doc.path.read_bytes() != raw
    stack.undo(ws)
    stack.undo(ws)
    assert doc.encoded() == raw
    ws.save()
    assert doc.path.read_bytes() == raw


@pytest.mark.parametrize(
    "fix, message",
    [
        ("merge", "must be a mapping"),
        ({"chunk_id": "ops:deploy"}, "unknown fix op None"),
        ({"op": "rename_chunk", "chunk_id": "ops:deploy"}, "unknown fix op 'rename_chunk'"),
        ({"op": "link_entity", "chunk_id": "ops:deploy"}, "needs 'entity_id'"),
        ({"op": "link_entity", "chunk_id": "ops:gone", "entity_id": "entity:helm"}, "stale fix: no chunk 'ops:gone'"),
        ({"op": "link_entity", "chunk_id": "ops:deploy", "entity_id": "entity:kubernetes"}, "already links"),
        ({"op": "link_entity", "chunk_id": "ops:deploy", "entity_id": "entity:nowhere"}, "not declared"),
        ({"op": "unlink_entity", "chunk_id": "ops:deploy", "entity_id": "entity:helm"}, "does not link"),
        ({"op": "unlink_entity", "chunk_id": "ops:deploy", "entity_id": "42"}, "does not link"),  # 42 is an int
        ({"op": "relink_entity", "chunk_id": "ops:deploy", "entity_id": "entity:x", "into": "entity:helm"}, "does not link"),
        ({"op": "set_context", "chunk_id": "ops:deploy", "context": "New", "replaces": ""}, "changed since the diagnosis"),
        ({"op": "remove_dependency", "chunk_id": "ops:deploy", "dependency": "ops:nope"}, "does not depend"),
        ({"op": "remove_dependency", "chunk_id": "ops:build", "dependency": "ops:deploy"}, "is not a list"),
        ({"op": "declare_entity", "chunk_id": "ops:deploy", "entity": {"id": "entity:helm", "name": "Helm", "type": "tool"}},
         "already declared"),
        ({"op": "declare_entity", "chunk_id": "ops:deploy", "entity": {"id": "entity:x"}}, "needs a 'name'"),
        ({"op": "merge_entities", "into": "entity:kubernetes", "merged": ["entity:gone"]}, "unknown entity 'entity:gone'"),
        ({"op": "merge_entities", "into": "entity:kubernetes"}, "needs 'merged'"),
        ({"op": "add_alias", "entity_id": "entity:kubernetes", "alias": "kubernetes"}, "already the name or an alias"),
        ({"op": "delete_entity", "entity_id": "entity:gone"}, "unknown entity"),
        ({"op": "update_entity", "entity_id": "entity:helm"}, "needs 'name' or 'type'"),
    ],
)
def test_bad_and_stale_fixes_are_refused_in_one_line(tmp_path: Path, fix, message: str) -> None:
    ws, doc, raw = one(tmp_path)
    with pytest.raises(FixError) as exc:
        apply_fix(ws, fix, doc.path)
    assert message in str(exc.value) and "\n" not in str(exc.value)
    assert doc.encoded() == raw


def test_chunk_fixes_need_the_document_when_the_id_is_ambiguous(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"a.md": VARIANTS["lf"], "b.md": VARIANTS["lf"]})
    fix = {"op": "link_entity", "chunk_id": "ops:deploy", "entity_id": "entity:helm"}
    with pytest.raises(FixError, match="several documents"):
        apply_fix(ws, fix)
    record = apply_fix(ws, fix, tmp_path / "b.md")
    assert [c.path for c in record.changes] == [tmp_path / "b.md"]
    with pytest.raises(FixError, match="not a document of this workspace"):
        apply_fix(ws, fix, tmp_path / "c.md")


def test_describe_fix_is_one_line_for_anything() -> None:
    assert describe_fix({"op": "merge_entities", "into": "entity:javascript", "merged": ["entity:js"]}) == \
        "merge entity:js into entity:javascript"
    assert describe_fix({"op": "unlink_entity", "chunk_id": "a:b", "entity_id": 42}) == "unlink 42 from a:b"
    long = {"op": "set_context", "chunk_id": "a:b", "context": "word " * 50}
    assert len(describe_fix(long)) < 100
    assert describe_fix({"op": "frobnicate"}) == "unknown fix 'frobnicate'"
    assert describe_fix(None).startswith("not a fix")


# ---------------------------------------------------------------- applying a whole diagnosis


def _keys(reports: list[dict], only_fixable: bool) -> set[tuple]:
    return {
        (r["filepath"], i["rule"], tuple(i["chunk_ids"]), json.dumps(i.get("entity_ids")))
        for r in reports for i in r["issues"] if "fix" in i or not only_fixable
    }


def fix_everything(ws: Workspace) -> tuple[set, set]:
    reports = diagnose_workspace(ws.docs, "fix")
    fixed = _keys(reports, only_fixable=True)
    run = apply_fixes(ws, collect_fixes(reports))
    assert run.skipped == [], run.skipped
    for doc in ws.docs:
        assert not has_errors(validate(doc)), [f.one_line() for f in validate(doc) if f.severity == "error"]
    return fixed, _keys(diagnose_workspace(ws.docs, "fix"), only_fixable=False)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_applying_every_fix_leaves_a_valid_document_without_those_findings(tmp_path: Path, variant: str) -> None:
    ws, doc, raw = one(tmp_path, variant)
    assert has_errors(validate(doc))  # 42 and entity:pgbouncer are errors before
    fixed, after = fix_everything(ws)
    rules = {k[1] for k in fixed}
    # entity-weak-link has no fix here: unlinking the only link of entity:postgresql (and of
    # entity:system) would leave it unused, a finding as bad as the weak link (fix_safety)
    assert rules >= {"context-empty", "entity-generic", "entity-duplicate", "entity-undefined", "entity-missing-link",
                     "entity-alias-candidate", "entity-unused", "dependency-unknown", "dependency-cycle"}
    assert fixed & after == set()
    assert "[DRAFT] Rolling back:" in doc.text and doc.had_bom == (variant == "crlf-bom")
    # the document is still in the file's own line endings
    assert ("\r\n" in doc.text) == (variant == "crlf-bom") and "\r\r" not in doc.text


def test_applying_every_fix_across_a_folder(tmp_path: Path) -> None:
    a = PLATFORM
    b = """\
---
title: Web
entities:
  - id: entity:k8s-platform
    name: k8s
    type: platform
chunks:
  - id: web:deploy
    tags: [Web]
    entities: [entity:k8s-platform, entity:helm]
    context: "How the web tier is deployed on the k8s platform and rolled back when health checks fail"
---

<Chunk id="web:deploy">
The web tier runs on k8s.
</Chunk>
"""
    ws = workspace(tmp_path, {"a.md": a.encode(), "b.md": b.encode()})
    reports = diagnose_workspace(ws.docs, "fix")
    # the cross-document duplicate (K8s / k8s) is in both reports, with one shared fix
    dups = [(r["filepath"], i["fix"]) for r in reports for i in r["issues"] if i["rule"] == "entity-duplicate-name"]
    assert len(dups) == 2 and dups[0][1] == dups[1][1]
    # entity:helm is declared in a.md: b.md gets a copy of its identity
    (undef,) = [i for i in reports[1]["issues"] if i["rule"] == "entity-undefined"]
    assert undef["fix"]["op"] == "declare_entity" and undef["fix"]["entity"]["name"] == "Helm"
    fixed, after = fix_everything(ws)
    assert fixed & after == set()
    assert "  - id: entity:helm" in ws.docs[1].text


def test_apply_fixes_orders_deduplicates_follows_merges_and_skips_stale(tmp_path: Path) -> None:
    ws, doc, raw = one(tmp_path)
    fixes = [
        {"op": "link_entity", "chunk_id": "ops:notes", "entity_id": "entity:k8s"},  # k8s is merged below: follows it
        {"op": "merge_entities", "into": "entity:kubernetes", "merged": ["entity:k8s"]},
        {"op": "merge_entities", "into": "entity:kubernetes", "merged": ["entity:k8s"]},  # the same fix twice
        {"op": "unlink_entity", "chunk_id": "ops:deploy", "entity_id": "entity:nowhere"},  # stale
        {"op": "delete_entity", "entity_id": "entity:terraform"},
    ]
    run = apply_fixes(ws, fixes, doc.path)
    assert [f["op"] for f, _ in run.applied] == ["merge_entities", "link_entity", "delete_entity"]
    assert run.applied[1][0]["entity_id"] == "entity:kubernetes"
    assert [(f["op"], why.split(":")[0]) for f, why in run.skipped] == [("unlink_entity", "stale fix")]
    assert "tags: [Notes]\n    entities: [entity:kubernetes]" in doc.text
    for record in reversed(run.records):
        record.undo(ws)
    assert doc.encoded() == raw
