"""One severity per rule everywhere (issue #15, item 4).

The tree mark and the overview come from validation (services/report.py), the Diagnosis view from
the diagnosis (services/analysis.py), and the CLI's ``validate`` / ``diagnose`` from the same two;
every one takes a finding's severity from the table of core/format/rules.py. A document without
frontmatter is valid with one warning, ``no-frontmatter`` (the reference's validate), and has
nothing to diagnose, ``no-valid-chunks``, an error (the reference's diagnose): two findings, two
names, each with one severity in every pane and command.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ctxfst_tui.cli import main
from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.rules import PREFIX_SEVERITY, SEVERITY, severity_of
from ctxfst_tui.core.format.validate import validate
from ctxfst_tui.services.analysis import Analyser
from ctxfst_tui.services.report import WARNINGS, build_report, status_for
from conftest import CONFORMANCE_DOCS, FIXTURES, HOSTILE_FILES, ROOT, SAMPLE_DOCS

PLAIN = "# Meeting notes\n\nWe talked about the deploy.\n"


def _cli_json(capsys, *args) -> tuple[int, object]:
    capsys.readouterr()
    status = main([str(a) for a in args])
    return status, json.loads(capsys.readouterr().out)


def test_a_document_without_frontmatter_has_one_severity_per_rule_everywhere(tmp_path, capsys):
    path = tmp_path / "notes.md"
    path.write_text(PLAIN)
    seen: dict[str, set[tuple[str, str]]] = {}  # rule -> {(where, severity)}

    def saw(where: str, rule: str, severity: str) -> None:
        seen.setdefault(rule, set()).add((where, severity))

    # the tree's mark (as the workspace analysis computes it for the tree) and the overview
    doc = Document.load(path)
    assert status_for(doc).state == WARNINGS  # ▲ in the tree
    report = build_report(path, tmp_path)
    assert report.status.state == WARNINGS and report.status.errors == 0  # ▲ in the overview
    for f in report.findings:
        saw("overview", f.rule, f.severity)
    # the Diagnosis view
    analysis = Analyser().analyse([(path, path.read_bytes())], tmp_path, 1)
    assert analysis.statuses[path].state == WARNINGS
    for item in analysis.findings:
        saw("diagnosis view", item.rule, item.severity)
    # the CLI
    status, validated = _cli_json(capsys, "validate", path, "--json")
    assert status == 0 and validated["valid"] is True
    for f in validated["findings"]:
        saw("validate", f["rule"], f["severity"])
    status, diagnosed = _cli_json(capsys, "diagnose", path, "--json")
    assert status == 1  # the reference's diagnose: "No valid chunks found" is an error
    for i in diagnosed["issues"]:
        saw("diagnose", i["rule"], i["severity"])

    assert seen == {
        "no-frontmatter": {("overview", "warning"), ("validate", "warning")},
        "no-valid-chunks": {("diagnosis view", "error"), ("diagnose", "error")},
    }
    assert [i["message"] for i in diagnosed["issues"]] == ["No valid chunks found in document: no YAML frontmatter"]
    assert diagnosed["issues"][0]["cause"] == "no-frontmatter"
    # the text forms say the same
    capsys.readouterr()
    main(["validate", str(path)])
    assert f"{path}:1:1: warning [no-frontmatter] No YAML frontmatter found" in capsys.readouterr().out
    main(["diagnose", str(path)])
    assert f"{path}:1:1: error [no-valid-chunks] No valid chunks found in document" in capsys.readouterr().out


def _documents(tmp_path: Path) -> list[Document]:
    paths = sorted(CONFORMANCE_DOCS.glob("*.md")) + sorted(SAMPLE_DOCS.glob("*.md")) + sorted(FIXTURES.rglob("*.md"))
    docs = [Document.load(p) for p in paths]
    for name, data in HOSTILE_FILES.items():
        docs.append(Document(data, tmp_path / name))
    docs.append(Document.from_text(
        "---\nchunks:\n  - just a string\n  - context: no id\n  - id: a:b\n    context: x\n---\n"
        "<Chunk id=\"a:b\">\nText.\n</Chunk>\n", tmp_path / "odd.md"))
    return docs


def test_no_rule_has_two_severities_across_validation_and_diagnosis(tmp_path):
    docs = _documents(tmp_path)
    severities: dict[str, set[str]] = {}
    for doc in docs:
        for f in validate(doc):
            severities.setdefault(f.rule, set()).add(f.severity)
    for rep in diagnose_workspace(docs, "fix") + [r for d in docs for r in diagnose_workspace([d])]:
        for i in rep["issues"]:
            severities.setdefault(i["rule"], set()).add(i["severity"])
    assert {r: s for r, s in severities.items() if len(s) != 1} == {}
    assert {r: s.pop() for r, s in severities.items()} == {r: severity_of(r) for r in severities}
    # the cases the issue names, and the skipped chunk entries, are among them
    assert {"no-frontmatter", "no-valid-chunks", "chunk-skipped", "chunk-not-mapping", "chunk-missing-id"} <= set(severities)


CAUSES = {"no-chunks"}  # values of no-valid-chunks' ``cause`` that are not rules themselves


def test_every_rule_named_in_the_code_is_in_the_table():
    """Validation and diagnosis take severities from the table: a rule missing from it would raise."""
    files = [*(ROOT / "ctxfst_tui" / "core" / "diagnosis").glob("*.py"),
             *(ROOT / "ctxfst_tui" / "core" / "format" / n for n in ("validate.py", "document.py", "source.py",
                                                                    "frontmatter.py")),
             ROOT / "ctxfst_tui" / "services" / "report.py"]
    named = {m.group(1) for f in files for m in re.finditer(r'"([a-z]+(?:-[a-z]+)+)"', f.read_text())}
    missing = sorted(r for r in named - CAUSES if r not in SEVERITY and not r.startswith(tuple(PREFIX_SEVERITY)))
    assert missing == []
    assert sorted(set(SEVERITY) - named) == []  # and the table names no rule the code never reports
    assert set(SEVERITY.values()) == {"error", "warning", "info"}
    with pytest.raises(KeyError, match="rules.py"):
        severity_of("no-such-rule")
