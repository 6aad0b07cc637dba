"""A plain ``diagnose --apply`` leaves no document with a finding it did not have (issue #15, item 3).

Each document of the conformance suite and of ../shared/retrieval is copied, fixed by the CLI (in
process, so the run is the real one: load, fix, save) and read back from disk; the two diagnoses
are compared finding by finding here, without the fix checker's own comparison. A fix that would
leave a milder finding (the ``[DRAFT]`` context of an empty one) is listed for review and applied
only with ``--with-drafts``. One subprocess pins the CLI's text and exit status.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ctxfst_tui.cli import main
from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
from ctxfst_tui.core.format.document import Document
from conftest import SHARED

CONFORMANCE = SHARED / "conformance" / "docs"
RETRIEVAL = SHARED / "retrieval"
DOCUMENTS = sorted(CONFORMANCE.glob("*.md")) + sorted(RETRIEVAL.rglob("*.md"))
DRAFTS = CONFORMANCE / "diag-context-quality.md"
needs_shared = pytest.mark.skipif(not DRAFTS.is_file(), reason="../shared is not beside the checkout")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _copy(src: Path, dest: Path) -> Path:
    """A writable copy (the shared files are read-only, and a copy keeps their mode)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(src.read_bytes())
    return dest


def _findings(paths: list[Path]) -> tuple[Counter, dict]:
    """The findings of ``paths`` read from disk, diagnosed together: how many of each (document, rule,
    severity, chunks, entities; the message, its numbers aside, for a finding about neither), and
    the measures (``count``) of each, largest first."""
    reports = diagnose_workspace([Document.load(p) for p in paths], "diagnose")
    seen: Counter = Counter()
    measures: dict[tuple, list] = {}
    for rep in reports:
        for i in rep["issues"]:
            ids = (tuple(sorted(map(str, i.get("chunk_ids") or []))), json.dumps(i.get("entity_ids") or []))
            key = (Path(rep["filepath"]).name, i["rule"], i["severity"], *ids,
                   "" if any(ids[0]) or i.get("entity_ids") else _NUMBER.sub("#", i["message"]))
            seen[key] += 1
            measures.setdefault(key, []).append(i.get("count") or 0)
    return seen, {k: sorted(v, reverse=True) for k, v in measures.items()}


def _new_findings(paths: list[Path], *args: str, target: Path | None = None) -> list:
    """What ``diagnose TARGET --apply ARGS`` (TARGET: the one path, or their folder) added to ``paths``."""
    old, old_measures = _findings(paths)
    [one] = paths if target is None else [target]
    assert main(["diagnose", str(one), "--apply", *args]) == 0
    new, new_measures = _findings(paths)
    added = list((new - old).elements())
    # a finding still there but measuring more (a chunk with 8 links instead of 7) is made worse
    worse = [k for k, ms in new_measures.items() if any(m > o for m, o in zip(ms, old_measures.get(k, [])))]
    return sorted(added) + sorted(worse)


@needs_shared
@pytest.mark.parametrize("src", DOCUMENTS, ids=lambda p: str(p.relative_to(SHARED)))
def test_plain_apply_creates_no_finding_on_a_copy_of_each_reference_document(src: Path, tmp_path, capsys):
    doc = _copy(src, tmp_path / src.name)
    assert _new_findings([doc]) == []
    assert "created:" not in capsys.readouterr().out


@needs_shared
@pytest.mark.parametrize("folder", [CONFORMANCE, RETRIEVAL], ids=lambda p: p.name)
def test_plain_apply_creates_no_finding_on_a_copy_of_each_reference_folder(folder: Path, tmp_path, capsys):
    """Together, where a fix may reach another document (a merge, an entity declared once)."""
    docs = [_copy(p, tmp_path / folder.name / p.relative_to(folder)) for p in sorted(folder.rglob("*.md"))]
    assert _new_findings(docs, target=tmp_path / folder.name) == []
    assert "created:" not in capsys.readouterr().out


@needs_shared
def test_plain_apply_changes_what_it_can_without_creating(tmp_path, capsys):
    """Not vacuous: on these documents plain --apply does fix something, and what it fixed is gone."""
    changed = []
    for name in ("bad-unknown-refs.md", "diag-tags-entities.md"):
        doc = _copy(CONFORMANCE / name, tmp_path / name)
        old, _ = _findings([doc])
        assert _new_findings([doc]) == []
        assert doc.read_bytes() != (CONFORMANCE / name).read_bytes()
        changed.append(sum((old - _findings([doc])[0]).values()))
    assert all(n > 0 for n in changed)
    assert "applied: " in capsys.readouterr().out


@needs_shared
def test_plain_apply_leaves_the_draft_contexts_for_review(tmp_path, capsys):
    doc = _copy(DRAFTS, tmp_path / DRAFTS.name)
    assert _new_findings([doc]) == []
    assert doc.read_bytes() == DRAFTS.read_bytes()
    out, err = capsys.readouterr()
    review = [line for line in out.splitlines() if line.startswith("needs review (not applied): ")]
    assert [line.split(" — ")[0] for line in review] == [
        f"needs review (not applied): {doc}: error [context-empty] Context is empty (reference:metrics-empty)",
        f"needs review (not applied): {doc}: error [context-empty] Context is empty (reference:alerts)"]
    assert all(line.endswith(" would create warning [context-placeholder] Context is still a placeholder or a "
                             "draft; warning [context-echo] Context appears to just repeat the content opening")
               for line in review)
    assert "2 fixes to review, not applied (--with-drafts applies them)" in err

    # --dry-run shows the same partition, and --json names the findings and what they would create
    assert main(["diagnose", str(doc), "--apply", "--dry-run"]) == 0
    dry, _ = capsys.readouterr()
    assert dry == out
    assert main(["diagnose", str(doc), "--apply", "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["applied"] == [] and report["created"] == [] and report["dry_run"] is True
    assert [(n["rule"], n["document"], n["chunk_ids"], n["op"], n["would_create"]) for n in report["not_applied"]] == [
        ("context-empty", str(doc), ["reference:metrics-empty"], "set_context", ["context-placeholder", "context-echo"]),
        ("context-empty", str(doc), ["reference:alerts"], "set_context", ["context-placeholder", "context-echo"])]
    assert doc.read_bytes() == DRAFTS.read_bytes()


@needs_shared
def test_with_drafts_applies_the_draft_contexts_and_says_what_they_created(tmp_path, capsys):
    doc = _copy(DRAFTS, tmp_path / DRAFTS.name)
    new = _new_findings([doc], "--with-drafts")
    assert [k[1:4] for k in new] == [
        ("context-echo", "warning", ("reference:alerts",)),
        ("context-echo", "warning", ("reference:metrics-empty",)),
        ("context-placeholder", "warning", ("reference:alerts",)),
        ("context-placeholder", "warning", ("reference:metrics-empty",))]
    out, err = capsys.readouterr()
    assert "needs review" not in out and "to review" not in err
    assert [line for line in out.splitlines() if line.startswith("created: ")] == [
        f"created: {doc}: warning [context-placeholder] Context is still a placeholder or a draft (reference:metrics-empty)",
        f"created: {doc}: warning [context-echo] Context appears to just repeat the content opening (reference:metrics-empty)",
        f"created: {doc}: warning [context-placeholder] Context is still a placeholder or a draft (reference:alerts)",
        f"created: {doc}: warning [context-echo] Context appears to just repeat the content opening (reference:alerts)"]
    text = doc.read_text()
    assert 'context: "[DRAFT] Metrics: Every service exposes a /metrics endpoint' in text
    assert 'context: "[DRAFT] Alerts: Alerts page the on-call engineer' in text
    assert not [k for k in _findings([doc])[0] if k[1] == "context-empty"]


@needs_shared
def test_the_cli_text_and_exit_status(tmp_path):
    """The installed entry point, once: exit 0 (as the reference: --apply is not a check), the
    review lines on stdout, the summary on stderr, nothing written."""
    doc = _copy(DRAFTS, tmp_path / DRAFTS.name)
    p = subprocess.run([sys.executable, "-m", "ctxfst_tui", "diagnose", str(doc), "--apply"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("needs review (not applied): ") == 2 and "created:" not in p.stdout
    assert p.stderr == "0 fixes applied, 0 skipped; 2 fixes to review, not applied (--with-drafts applies them); 0 files written\n"
    assert doc.read_bytes() == DRAFTS.read_bytes()
