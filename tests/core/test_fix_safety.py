"""A fix never makes a document worse (issue #15, item 3).

A fix is offered only when applying it creates no finding of its own finding's severity or worse;
``diagnose --apply`` checks each fix again after the ones before it and diagnoses the workspace
again at the end. Run on the reference's ch22 benchmark (where the old --apply linked an 8th
entity to a chunk already flagged for 7) and on every document of ../shared/conformance and
../shared/retrieval, alone and as folders.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ctxfst_tui.cli import main
from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
from ctxfst_tui.core.diagnosis.fix_safety import RANK, apply_checked_fixes, created_findings
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.fixes import apply_fixes, collect_fixes
from ctxfst_tui.core.workspace.workspace import Workspace
from conftest import SHARED

CONFORMANCE = SHARED / "conformance" / "docs"
RETRIEVAL = SHARED / "retrieval"
CH22 = RETRIEVAL / "ch22" / "benchmark.ctxfst.md"
DOCUMENTS = sorted(CONFORMANCE.glob("*.md")) + sorted(RETRIEVAL.rglob("*.md"))
needs_shared = pytest.mark.skipif(not CH22.is_file(), reason="../shared is not beside the checkout")

# What --apply --with-drafts creates on these documents, all milder than the fix that creates it:
# the draft context written for an empty one (error) is a draft (context-placeholder) taken from
# the chunk's first sentence (context-echo), two warnings that ask for it to be rewritten. A plain
# --apply leaves these fixes for review and creates nothing.
MILDER = {
    "diag-context-quality.md": sorted([
        ("warning", "context-placeholder", ("reference:metrics-empty",)),
        ("warning", "context-echo", ("reference:metrics-empty",)),
        ("warning", "context-placeholder", ("reference:alerts",)),
        ("warning", "context-echo", ("reference:alerts",)),
    ]),
}


def _issues(reports: list[dict], rule: str, chunk: str | None = None) -> list[dict]:
    return [i for r in reports for i in r["issues"] if i["rule"] == rule and (chunk is None or chunk in i["chunk_ids"])]


@needs_shared
def test_ch22_offers_no_eighth_link_to_the_chunk_flagged_for_seven(tmp_path, capsys):
    reports = diagnose_workspace([Document.load(CH22)], "fix")
    many = _issues(reports, "entity-links-many", "about:backend-summary")
    assert [i["message"] for i in many] == ["Chunk links to many entities (7). Recommend 1-6."]
    missing = [i for i in _issues(reports, "entity-missing-link", "about:backend-summary")
               if i["entity_ids"] == ["entity:service-deployment"]]
    assert len(missing) == 1 and missing[0]["severity"] == "warning"
    assert "fix" not in missing[0]
    assert missing[0]["fix_withheld"] == (
        "'link entity:service-deployment from about:backend-summary' would create warning "
        "[entity-links-many] Chunk links to many entities (8). Recommend 1-6.")
    # the fixes still offered there do not touch that chunk's links
    assert all(i["fix"].get("chunk_id") != "about:backend-summary" for r in reports for i in r["issues"] if "fix" in i)

    doc = tmp_path / "benchmark.ctxfst.md"
    shutil.copyfile(CH22, doc)
    capsys.readouterr()
    assert main(["diagnose", str(doc), "-l", "fix"]) == 0
    assert ("    no fix: 'link entity:service-deployment from about:backend-summary' would create warning "
            "[entity-links-many] Chunk links to many entities (8). Recommend 1-6.\n") in capsys.readouterr().out
    assert main(["diagnose", str(doc), "--apply", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "0 fixes would be applied" in err
    assert main(["diagnose", str(doc), "--apply"]) == 0
    assert doc.read_bytes() == CH22.read_bytes()


def _replay(reports: list[dict], run) -> list[tuple[str, str, list[tuple[str, dict]]]]:
    """(fix op, its issue's severity, the findings it created) for each applied fix, in order,
    by diagnosing the texts before and after it."""
    severity = {}
    for r in reports:
        for i in r["issues"]:
            if "fix" in i:
                severity.setdefault(repr(sorted(i["fix"].items())), i["severity"])
    out = []
    for fix, record in run.applied:
        before = [Document.from_text(c.before, c.path) for c in sorted(record.changes, key=lambda c: c.index)]
        after = [Document.from_text(c.after, c.path) for c in sorted(record.changes, key=lambda c: c.index)]
        created = created_findings(diagnose_workspace(before), diagnose_workspace(after))
        out.append((fix["op"], severity.get(repr(sorted(fix.items())), "info"), created))
    return out


def _check_apply(paths: list[Path], with_drafts: bool = False) -> list[tuple[str, str, tuple]]:
    ws = Workspace([Document.load(p) for p in paths])
    reports = diagnose_workspace(ws.docs, "fix")
    run, created, review = apply_checked_fixes(ws, reports, ("error", "warning"), with_drafts=with_drafts)
    # a fix left for review made something, and only milder than the finding it fixes
    for r in review:
        assert r.would_create and r.finding is not None
        assert all(RANK[i["severity"]] > RANK[r.finding[1]["severity"]] for _, i in r.would_create)
    assert [r.fix for r in review] == [f for f, why in run.skipped if why.startswith("needs review: ")]
    assert not (with_drafts and review)
    # every fix, checked in the state the ones before it left: nothing as bad as its own finding
    for op, severity, made in _replay(reports, run):
        worse = [(i["severity"], i["rule"], i["message"]) for _, i in made if RANK[i["severity"]] <= RANK[severity]]
        assert worse == [], f"{op} ({severity}) created {worse}"
    # the whole workspace diagnosed again: what the run reports it created is what is there
    after = diagnose_workspace(ws.docs)
    assert created == created_findings(reports, after)
    return sorted((i["severity"], i["rule"], tuple(i["chunk_ids"])) for _, i in created)


@needs_shared
@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(SHARED)))
def test_apply_creates_no_finding_on_any_reference_document(path: Path):
    assert _check_apply([path]) == []


@needs_shared
@pytest.mark.parametrize("folder", [CONFORMANCE, RETRIEVAL / "ch22", RETRIEVAL], ids=lambda p: p.name)
def test_apply_creates_no_finding_on_the_reference_folders(folder: Path):
    assert _check_apply(sorted(folder.rglob("*.md"))) == []


@needs_shared
@pytest.mark.parametrize("name", sorted(MILDER))
def test_with_drafts_applies_the_fixes_that_leave_milder_findings(name: str):
    assert _check_apply([CONFORMANCE / name], with_drafts=True) == MILDER[name]


@needs_shared
def test_plain_apply_leaves_the_draft_contexts_for_review():
    """The two empty contexts of diag-context-quality.md: their [DRAFT] fixes are not applied, each
    named with the finding it fixes and what it would create (the CLI's text: tests/cli/test_apply_clean.py)."""
    ws = Workspace([Document.load(CONFORMANCE / "diag-context-quality.md")])
    text = ws.docs[0].text
    run, created, review = apply_checked_fixes(ws, diagnose_workspace(ws.docs, "fix"))
    assert run.applied == [] and created == [] and ws.docs[0].text == text
    assert [(r.fix["op"], r.finding[1]["rule"], r.finding[1]["chunk_ids"]) for r in review] == [
        ("set_context", "context-empty", ["reference:metrics-empty"]),
        ("set_context", "context-empty", ["reference:alerts"])]
    assert [sorted(i["rule"] for _, i in r.would_create) for r in review] == [["context-echo", "context-placeholder"]] * 2


def test_a_fix_that_would_make_a_finding_worse_is_not_offered():
    """Six links and a chunk naming a seventh entity in its context: linking it would flag the chunk."""
    ents = "".join(f"  - id: entity:e{k}\n    name: Thing{k}\n    type: concept\n" for k in range(7))
    text = (
        "---\nentities:\n" + ents + "chunks:\n"
        "  - id: topic:all\n"
        "    entities: [" + ", ".join(f"entity:e{k}" for k in range(6)) + "]\n"
        "    context: \"How Thing0 Thing1 Thing2 Thing3 Thing4 Thing5 and Thing6 fit together in one system\"\n"
        "---\n\n<Chunk id=\"topic:all\">\nThing0 Thing1 Thing2 Thing3 Thing4 Thing5 Thing6.\n</Chunk>\n"
    )
    reports = diagnose_workspace([Document.from_text(text, "all.md")], "fix")
    [missing] = _issues(reports, "entity-missing-link")
    assert missing["entity_ids"] == ["entity:e6"] and missing["severity"] == "warning"
    assert "fix" not in missing
    assert "would create warning [entity-links-many] Chunk links to many entities (7)" in missing["fix_withheld"]
    assert "keep the most central 6" in missing["suggestion"]  # the suggestion still says what to do


def test_apply_refuses_a_fix_that_the_fixes_before_it_made_harmful(tmp_path):
    """Two missing links on a chunk with five: each alone is fine, both make seven (too many)."""
    ents = "".join(f"  - id: entity:e{k}\n    name: Thing{k}\n    type: concept\n" for k in range(7))
    text = (
        "---\nentities:\n" + ents + "chunks:\n"
        "  - id: topic:all\n"
        "    entities: [" + ", ".join(f"entity:e{k}" for k in range(5)) + "]\n"
        "    context: \"How Thing0 Thing1 Thing2 Thing3 Thing4 Thing5 and Thing6 fit together in one system\"\n"
        "---\n\n<Chunk id=\"topic:all\">\nThing0 Thing1 Thing2 Thing3 Thing4 Thing5 Thing6.\n</Chunk>\n"
    )
    path = tmp_path / "all.md"
    path.write_text(text)
    ws = Workspace.load(path)
    reports = diagnose_workspace(ws.docs, "fix")
    offered = [f for _, f in collect_fixes(reports)]
    assert sorted(f["entity_id"] for f in offered if f["op"] == "link_entity") == ["entity:e5", "entity:e6"]
    run, created, review = apply_checked_fixes(ws, reports)
    assert [f["entity_id"] for f, _ in run.applied] == ["entity:e5"] and review == []
    [(fix, why)] = run.skipped
    assert fix["entity_id"] == "entity:e6"
    assert why.startswith("after the fixes before it, it would create warning [entity-links-many]")
    assert "entities: [entity:e0, entity:e1, entity:e2, entity:e3, entity:e4, entity:e5]\n" in ws.docs[0].text
    assert created == []
    # without the check both would go in
    plain = Workspace.load(path)
    assert len(apply_fixes(plain, collect_fixes(diagnose_workspace(plain.docs, "fix"))).applied) == 2


def test_created_findings_compares_findings_not_their_numbers():
    def rep(*issues):
        return [{"filepath": "a.md", "issues": [dict(i) for i in issues]}]

    many7 = {"rule": "entity-links-many", "severity": "warning", "chunk_ids": ["x:y"], "message": "(7)", "count": 7}
    many8 = {**many7, "message": "(8)", "count": 8}
    small = {"rule": "chunk-small", "severity": "info", "chunk_ids": ["x:y"], "message": "86 tokens"}
    assert created_findings(rep(many7), rep(many8)) == [("a.md", many8)]  # worse: more links
    assert created_findings(rep(many8), rep(many7)) == []  # better
    assert created_findings(rep(small), rep({**small, "message": "91 tokens"})) == []  # a measure, not a finding
    assert created_findings(rep(small), rep({**small, "severity": "warning"})) != []  # graver
    assert created_findings(rep(), rep(small)) == [("a.md", small)]
    assert created_findings(rep(small, small), rep(small)) == []


def test_a_second_diagnosis_tries_again_only_the_fixes_of_a_changed_document(tmp_path, monkeypatch):
    """The workbench diagnoses at level fix after every edit: trying every fix again each time would
    cost a diagnosis per fix. A fix's answer depends only on the texts it was tried on."""
    from ctxfst_tui.core.diagnosis import fix_safety

    if not CONFORMANCE.is_dir():
        pytest.skip("../shared is not beside the checkout")
    base = (CONFORMANCE / "diag-tags-entities.md").read_text()
    docs = [Document.from_text(base, tmp_path / f"{k}.md") for k in range(3)]
    a, b, c = (d.path for d in docs)
    tried: list[Path] = []
    real = fix_safety.copy_document
    monkeypatch.setattr(fix_safety, "copy_document", lambda d: tried.append(d.path) or real(d))
    first = diagnose_workspace(docs, "fix")
    first_tries = tried.count(a)
    assert first_tries and tried.count(a) == tried.count(b) == tried.count(c)
    tried.clear()
    assert diagnose_workspace(docs, "fix") == first and tried == []  # nothing changed: nothing tried
    docs[1].replace_text(docs[1].text.replace("\n---\n", "\nnote: edited\n---\n", 1))
    diagnose_workspace(docs, "fix")
    # b's own fixes and the workspace-wide ones (they read b too) are tried again; a's and c's
    # own fixes are not
    assert tried.count(a) == tried.count(c) < tried.count(b) and tried.count(a) < first_tries


def test_a_merge_renames_findings_instead_of_creating_them(tmp_path, capsys):
    """The weak link of entity:js is the same finding as the weak link of entity:javascript after
    the merge: a plain --apply applies the merge and reports nothing created."""
    from conftest import SAMPLE_DOCS

    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    before = diagnose_workspace(Workspace.load(docs).docs)
    weak = [i["entity_ids"] for r in before for i in r["issues"] if i["rule"] == "entity-weak-link"]
    assert ["entity:js"] in weak
    capsys.readouterr()
    assert main(["diagnose", str(docs), "--apply"]) == 0
    out = capsys.readouterr().out
    assert "applied: merge entity:js into entity:javascript" in out
    assert "created:" not in out and "needs review" not in out
    after = diagnose_workspace(Workspace.load(docs).docs)
    weak = [i["entity_ids"] for r in after for i in r["issues"] if i["rule"] == "entity-weak-link"]
    assert ["entity:javascript"] in weak and ["entity:js"] not in weak
