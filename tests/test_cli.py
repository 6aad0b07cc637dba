"""The headless CLI: exit codes, JSON shapes, refusals, and no traceback on any input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from ctxfst_tui.cli import main
from conftest import FIXTURES, HOSTILE_FILES, SAMPLE_DOCS

CLI = [sys.executable, "-m", "ctxfst_tui"]
ROOT = Path(__file__).resolve().parents[1]


def run(*args, cwd=ROOT):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
@pytest.mark.parametrize("command", ["validate", "export", "diagnose"])
def test_no_traceback_on_hostile_files(hostile_dir, tmp_path, name, command):
    path = hostile_dir / name
    args = [command, path]
    if command == "export":
        args += ["--output", tmp_path / "out.json"]
    p = run(*args)
    assert "Traceback" not in p.stderr + p.stdout
    assert p.returncode in (0, 1)
    if command == "export" and p.returncode == 1:
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and str(path) in err[0]
        assert not (tmp_path / "out.json").exists()


def test_hostile_folder_validate_json(hostile_dir, capsys):
    status = main(["validate", str(hostile_dir), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert status == 1
    assert isinstance(out, list) and len(out) == len(HOSTILE_FILES)
    by_file = {Path(r["file"]).name: r for r in out}
    assert by_file["binary.md"]["findings"][0]["rule"] == "file-binary"
    assert by_file["latin1.md"]["findings"][0]["rule"] == "file-encoding"
    assert by_file["truncated.md"]["findings"][0]["rule"] == "frontmatter-unclosed"
    assert by_file["chunks-mapping.md"]["valid"] is False


def test_validate_exit_status(capsys):
    assert main(["validate", str(SAMPLE_DOCS / "platform-runbook.ctxfst.md")]) == 0
    assert main(["validate", str(SAMPLE_DOCS / "broken-example.ctxfst.md")]) == 1
    out = capsys.readouterr().out
    assert "broken-example.ctxfst.md:11:5: error [entity-ref-unknown]" in out
    assert main(["validate", str(SAMPLE_DOCS)]) == 1


def test_validate_json_single_file(capsys):
    main(["validate", str(FIXTURES / "quirks.ctxfst.md"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data == {"file": str(FIXTURES / "quirks.ctxfst.md"), "valid": True, "findings": []}


def test_missing_path_is_one_line(capsys):
    assert main(["validate", "/no/such/place"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ctxfst-tui: /no/such/place: no such file or folder"]


def test_export_json_and_jsonl(tmp_path):
    doc = SAMPLE_DOCS / "platform-runbook.ctxfst.md"
    out = tmp_path / "chunks.json"
    assert main(["export", str(doc), "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [c["id"] for c in data["chunks"]] == ["workflow:build-image", "workflow:deploy-helm", "reference:database"]
    first = data["chunks"][0]
    assert list(first)[:5] == ["id", "context", "content", "tags", "source"]
    assert first["created_at"] == "2026-03-08" and first["source"] == str(doc)
    assert "<Chunk" not in data["chunks"][1]["content"] or "not-a-tag" in data["chunks"][1]["content"]
    jl = tmp_path / "chunks.jsonl"
    assert main(["export", str(doc), "--output", str(jl), "--format", "jsonl"]) == 0
    lines = jl.read_text().splitlines()
    assert [json.loads(l)["id"] for l in lines] == [c["id"] for c in data["chunks"]]


def test_export_folder_dedupes_entities(tmp_path):
    for name in ("platform-runbook.ctxfst.md", "frontend-notes.ctxfst.md"):
        (tmp_path / name).write_bytes((SAMPLE_DOCS / name).read_bytes())
    (tmp_path / "again.md").write_bytes((SAMPLE_DOCS / "frontend-notes.ctxfst.md").read_bytes())
    out = tmp_path / "out.json"
    assert main(["export", str(tmp_path), "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    ids = [e["id"] for e in data["entities"]]
    assert len(ids) == len(set(ids)) and "entity:react" in ids and "entity:helm" in ids
    assert len(data["chunks"]) == 2 + 2 + 3


def test_export_refuses_invalid(tmp_path, capsys):
    out = tmp_path / "chunks.json"
    assert main(["export", str(SAMPLE_DOCS / "broken-example.ctxfst.md"), "--output", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "broken-example.ctxfst.md:11:5" in err[0] and "export refused" in err[0]
    assert not out.exists()


def test_profiles_graph_and_graphml(tmp_path):
    chunks = tmp_path / "chunks.json"
    main(["export", str(SAMPLE_DOCS / "platform-runbook.ctxfst.md"), "-o", str(chunks)])
    prof = tmp_path / "profiles.json"
    assert main(["profiles", str(chunks), "--output", str(prof)]) == 0
    profiles = json.loads(prof.read_text())
    assert any(e["id"] == "entity:kubernetes" for e in profiles["entities"])
    g = tmp_path / "graph.json"
    assert main(["graph", str(prof), "--output", str(g)]) == 0
    edges = json.loads(g.read_text())["edges"]
    assert any((e["source"], e["relation"], e["target"]) == ("entity:deploy-service", "REQUIRES", "entity:build-image") for e in edges)
    gml = tmp_path / "graph.graphml"
    assert main(["graph", str(chunks), "--output", str(gml), "--format", "graphml", "--mode", "metadata"]) == 0
    G = nx.read_graphml(gml)
    assert "entity:helm" in G.nodes


def test_graph_bad_json_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"chunks": [1,\n')
    assert main(["graph", str(bad), "--output", str(tmp_path / "g.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:2:1: not valid JSON" in err[0]


def test_diagnose_json_reference_shape(capsys):
    main(["diagnose", str(SAMPLE_DOCS / "frontend-notes.ctxfst.md"), "--json", "--level", "fix"])
    data = json.loads(capsys.readouterr().out)
    assert {"filepath", "stats", "issues"} <= set(data)
    for issue in data["issues"]:
        assert {"category", "severity", "chunk_ids", "message"} <= set(issue)


def _copy_samples(tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS, target)
    return target


def test_entities_list_suggest_merge(tmp_path, capsys):
    docs = _copy_samples(tmp_path)
    assert main(["entities", "list", str(docs), "--json"]) == 0
    ids = [e["id"] for e in json.loads(capsys.readouterr().out)["entities"]]
    assert "entity:js" in ids and "entity:javascript" in ids
    assert main(["entities", "suggest", str(docs), "--json"]) == 0
    clusters = json.loads(capsys.readouterr().out)["clusters"]
    assert {"tier": "sure", "canonical": "entity:javascript"}.items() <= clusters[0].items()
    assert clusters[0]["members"] == ["entity:javascript", "entity:js"] or set(clusters[0]["members"]) == {"entity:javascript", "entity:js"}
    before = (docs / "frontend-notes.ctxfst.md").read_bytes()
    assert main(["entities", "merge", str(docs), "--into", "entity:javascript", "entity:js", "--dry-run"]) == 0
    diff = capsys.readouterr().out
    assert "-    entities: [entity:react, entity:js]" in diff and "+    entities: [entity:react, entity:javascript]" in diff
    assert (docs / "frontend-notes.ctxfst.md").read_bytes() == before  # dry run wrote nothing
    assert main(["entities", "merge", str(docs), "--into", "entity:javascript", "entity:js"]) == 0
    text = (docs / "frontend-notes.ctxfst.md").read_text()
    assert "entity:js\n" not in text and "aliases: [ECMAScript, JS]" in text
    assert main(["validate", str(docs / "frontend-notes.ctxfst.md")]) == 0
    assert main(["entities", "merge", str(docs), "--into", "entity:javascript", "entity:nope"]) == 1
    assert "entity:nope" in capsys.readouterr().err


def test_diagnose_apply_fixes_errors_and_warnings_only(tmp_path, capsys):
    docs = _copy_samples(tmp_path)
    assert main(["diagnose", str(docs), "--apply", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "applied: merge entity:js into entity:javascript" in out
    assert "unlink entity:redis" not in out  # an info-level weak link is not fixed in bulk
    assert (docs / "frontend-notes.ctxfst.md").read_bytes() == (SAMPLE_DOCS / "frontend-notes.ctxfst.md").read_bytes()
    assert main(["diagnose", str(docs), "--apply"]) == 0
    capsys.readouterr()
    main(["diagnose", str(docs), "--json", "--level", "fix"])
    reports = json.loads(capsys.readouterr().out)
    rules = {i.get("rule") for r in reports for i in r["issues"]}
    assert "entity-duplicate" not in rules and "entity-undefined" not in rules


def test_entities_extract_proposes_and_writes_only_with_write(tmp_path, capsys):
    doc = tmp_path / "runbook.md"
    doc.write_bytes((SAMPLE_DOCS / "platform-runbook.ctxfst.md").read_bytes())
    before = doc.read_bytes()
    assert main(["entities", "extract", str(doc), "--no-model", "--json"]) == 0
    props = json.loads(capsys.readouterr().out)
    new_ids = [e["id"] for e in props["entities"]]
    assert new_ids and all(i.startswith("entity:") for i in new_ids)
    assert "entity:postgresql" not in new_ids  # existing entities are matched, not duplicated
    assert doc.read_bytes() == before
    assert main(["entities", "extract", str(doc), "--no-model", "--write"]) == 0
    assert doc.read_bytes() != before
    assert main(["validate", str(doc)]) == 0


def test_contextualize_endpoint_down_is_one_line(tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    doc = tmp_path / "notes.md"
    doc.write_bytes((SAMPLE_DOCS / "frontend-notes.ctxfst.md").read_bytes())
    before = doc.read_bytes()
    status = main(["contextualize", str(doc), "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "x", "--no-cache", "--fail-fast"])
    captured = capsys.readouterr()
    assert status == 1
    assert "Traceback" not in captured.err
    assert doc.read_bytes() == before


def test_contextualize_refuses_a_plain_note(capsys):
    assert main(["contextualize", str(SAMPLE_DOCS / "plain-note.md")]) == 1
    assert "no CtxFST frontmatter" in capsys.readouterr().err


def test_workbench_options_reach_the_app(monkeypatch, tmp_path, capsys):
    from ctxfst_tui.ui.app import WorkbenchApp

    seen = {}

    def fake_run(self):
        seen["settings"] = self.models.settings
        seen["folder"] = self.folder

    monkeypatch.setattr(WorkbenchApp, "run", fake_run)
    assert main([str(tmp_path), "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--n-ctx", "2048"]) == 0
    assert seen["folder"] == tmp_path
    s = seen["settings"]
    assert (s.source, s.endpoint, s.model, s.n_ctx) == ("endpoint", "http://127.0.0.1:9/v1", "m", 2048)
    assert main([str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip().endswith("no such folder")


def test_serve_command_is_this_python_on_the_folder_with_model_options(tmp_path):
    from ctxfst_tui.cli import build_parser, serve_command

    args = build_parser().parse_args(["serve", str(tmp_path), "--model", "m.gguf", "--threads", "2"])
    assert (args.host, args.port) == ("127.0.0.1", 8000)
    command = serve_command(args)
    assert "-m ctxfst_tui" in command and str(tmp_path.resolve()) in command
    assert command.endswith("--model m.gguf --threads 2")


def test_serve_of_a_missing_folder_is_one_line(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "nope")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no such folder" in err


def test_last_opens_the_folder_the_workbench_had_open_last(monkeypatch, tmp_path, capsys):
    from ctxfst_tui import config as cfg
    from ctxfst_tui.ui.app import WorkbenchApp

    seen = {}
    monkeypatch.setattr(WorkbenchApp, "run", lambda self: seen.setdefault("folder", self.folder))
    assert main(["--last"]) == 2
    assert "no folder remembered" in capsys.readouterr().err
    state = cfg.State()
    state.remember(tmp_path, None, tab="chunks")
    assert cfg.save_state(state) is None
    assert main(["--last"]) == 0
    assert seen["folder"].resolve() == tmp_path.resolve()
    assert main([str(tmp_path), "--last"]) == 2
