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
ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd=ROOT):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


def run_here(capsys, *args) -> subprocess.CompletedProcess:
    """:func:`run` without a child process: ``main`` in this one, its output read from capsys (an
    uncaught exception fails the test). The entry point itself runs as a process in the graph,
    pipe and terminal tests below."""
    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), status, out, err)


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
@pytest.mark.parametrize("command", ["validate", "export", "diagnose"])
def test_no_traceback_on_hostile_files(hostile_dir, tmp_path, capsys, name, command):
    path = hostile_dir / name
    args = [command, path]
    if command == "export":
        args += ["--output", tmp_path / "out.json"]
    p = run_here(capsys, *args)
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


# ------------------------------------------------ byte layout, exit status and options of the reference

def test_export_bytes_are_the_references(tmp_path):
    """json.dump(data, f, ensure_ascii=False): compact, UTF-8 unescaped, no trailing newline;
    --pretty: indent 2. A script diffing against the reference's chunks.json sees no change."""
    doc = tmp_path / "doc.md"
    doc.write_text((SAMPLE_DOCS / "platform-runbook.ctxfst.md").read_text(encoding="utf-8").replace(
        "name: Kubernetes", "name: Kubernetes – 쿠버네티스", 1), encoding="utf-8")
    out, pretty = tmp_path / "chunks.json", tmp_path / "pretty.json"
    assert main(["export", str(doc), "--output", str(out)]) == 0
    assert main(["export", str(doc), "--output", str(pretty), "--pretty"]) == 0
    data = json.loads(out.read_bytes())
    assert "Kubernetes – 쿠버네티스" in [e["name"] for e in data["entities"]]
    assert out.read_bytes() == json.dumps(data, ensure_ascii=False).encode("utf-8")
    assert pretty.read_bytes() == json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8")
    assert not out.read_bytes().endswith(b"\n") and not pretty.read_bytes().endswith(b"\n")
    assert "쿠버네티스".encode("utf-8") in out.read_bytes()


def test_jsonl_lines_still_end_with_a_newline(tmp_path):
    out = tmp_path / "chunks.jsonl"
    assert main(["export", str(SAMPLE_DOCS / "platform-runbook.ctxfst.md"), "-o", str(out), "--format", "jsonl"]) == 0
    raw = out.read_bytes()
    assert raw.endswith(b"}\n") and raw.count(b"\n") == 3


def _pipeline(tmp_path, doc=SAMPLE_DOCS / "platform-runbook.ctxfst.md"):
    chunks, prof, graph = tmp_path / "chunks.json", tmp_path / "profiles.json", tmp_path / "graph.json"
    assert main(["export", str(doc), "-o", str(chunks)]) == 0
    assert main(["profiles", str(chunks), "-o", str(prof)]) == 0
    assert main(["graph", str(prof), "-o", str(graph)]) == 0
    return chunks, prof, graph


def test_profiles_and_graph_files_are_laid_out_as_the_reference(tmp_path):
    _chunks, prof, graph = _pipeline(tmp_path)
    for path in (prof, graph):
        text = path.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        assert text.endswith("\n}") and not text.endswith("\n")


def test_dash_writes_the_same_bytes_to_a_pipe(tmp_path):
    chunks, prof, graph = _pipeline(tmp_path)
    doc = SAMPLE_DOCS / "platform-runbook.ctxfst.md"
    for args, same_as in ((["export", doc], chunks), (["profiles", chunks], prof), (["graph", prof], graph)):
        p = subprocess.run([*CLI, *map(str, args), "--output", "-"], capture_output=True, cwd=tmp_path, timeout=120)
        assert p.returncode == 0, p.stderr
        got, want = p.stdout, same_as.read_bytes()
        if args[0] != "export":  # meta.input is the input path as given: relative here
            got = got.replace(f'"input": "{chunks.name}"'.encode(), f'"input": "{chunks}"'.encode())
            got = got.replace(f'"input": "{prof.name}"'.encode(), f'"input": "{prof}"'.encode())
        assert got == want
        assert b"to stdout" in p.stderr
    assert not (tmp_path / "-").exists()


def test_dash_on_a_terminal_ends_with_a_newline(tmp_path):
    """Only on a terminal: the shell prompt must not be glued to the closing brace."""
    import pty

    chunks, _prof, _graph = _pipeline(tmp_path)
    master, slave = pty.openpty()
    try:
        p = subprocess.run([*CLI, "profiles", str(chunks), "-o", "-"], stdout=slave, stderr=subprocess.PIPE, timeout=120)
        os.close(slave)
        slave = -1
        out = b""
        while True:
            try:
                piece = os.read(master, 65536)
            except OSError:  # EIO: the child closed its side
                break
            if not piece:
                break
            out += piece
    finally:
        os.close(master)
        if slave != -1:
            os.close(slave)
    assert p.returncode == 0
    text = out.decode("utf-8").replace("\r\n", "\n")
    assert text.endswith("\n}\n")
    assert json.loads(text)["meta"]["max_contexts"] == 3


def test_profiles_max_contexts_and_top_keywords(tmp_path):
    chunks, prof, _graph = _pipeline(tmp_path)
    default = json.loads(prof.read_text())
    assert (default["meta"]["max_contexts"], default["meta"]["top_keywords"]) == (3, 8)
    small = tmp_path / "small.json"
    assert main(["profiles", str(chunks), "-o", str(small), "--max-contexts", "1", "--top-keywords", "2"]) == 0
    got = json.loads(small.read_text())
    assert (got["meta"]["max_contexts"], got["meta"]["top_keywords"]) == (1, 2)
    assert max(len(e["contexts"]) for e in got["entities"]) == 1
    assert max(len(e["keywords"]) for e in got["entities"]) == 2
    assert max(len(e["keywords"]) for e in default["entities"]) > 2  # the option is what cut them
    assert any(len(e["contexts"]) > 1 for e in default["entities"])


@pytest.mark.parametrize("option", ["--max-contexts", "--top-keywords"])
def test_profiles_option_below_one_is_exit_1_and_writes_nothing(tmp_path, capsys, option):
    chunks, _prof, _graph = _pipeline(tmp_path)
    capsys.readouterr()
    out = tmp_path / "p.json"
    assert main(["profiles", str(chunks), "-o", str(out), option, "0"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [f"ctxfst-tui: {option} must be >= 1 (got 0)"]
    assert not out.exists()


def test_graph_unknown_extra_relation_is_exit_1_naming_it_and_writes_nothing(tmp_path):
    chunks, _prof, graph = _pipeline(tmp_path)
    before = graph.read_bytes()
    edges = tmp_path / "edges.json"
    edges.write_text(json.dumps([
        {"source": "entity:helm", "target": "entity:kubernetes", "relation": "REQUIRES"},
        {"source": "entity:helm", "target": "entity:kubernetes", "relation": "DEPENDS_ON"},
    ]))
    fresh = tmp_path / "fresh.json"
    for out in (fresh, graph):  # neither a new file nor a replaced one
        p = run("graph", chunks, "--extra-edges", edges, "--output", out)
        assert p.returncode == 1
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and str(edges) in err[0] and "extra-edges[1] has unknown relation 'DEPENDS_ON'" in err[0]
        assert "Traceback" not in p.stderr
    assert not fresh.exists() and graph.read_bytes() == before


def test_graph_known_extra_relations_are_merged_and_bad_items_warned(tmp_path):
    chunks, _prof, _graph = _pipeline(tmp_path)
    edges = tmp_path / "edges.json"
    edges.write_text(json.dumps([{"source": "entity:helm", "relation": "REQUIRES"},
                                 {"source": "entity:helm", "target": "entity:kubernetes", "relation": "EVIDENCE"}]))
    out = tmp_path / "g.json"
    p = run("graph", chunks, "--extra-edges", edges, "--output", out)
    assert p.returncode == 0, p.stderr
    assert f"warning: {edges}: extra-edges[0] missing source/target, skipping" in p.stderr
    g = json.loads(out.read_text())
    assert g["edges"][-1]["relation"] == "EVIDENCE" and g["meta"]["extra_edge_count"] == 1


@pytest.mark.parametrize("args, message", [
    (["--top-k", "0"], "--top-k must be >= 1 (got 0)"),
    (["--min-score", "1.5"], "--min-score must be between 0.0 and 1.0 (got 1.5)"),
])
def test_graph_bad_option_is_exit_1_naming_the_option(tmp_path, capsys, args, message):
    chunks, _prof, _graph = _pipeline(tmp_path)
    capsys.readouterr()
    assert main(["graph", str(chunks), "-o", str(tmp_path / "g.json"), *args]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [f"ctxfst-tui: {message}"]
    assert not (tmp_path / "g.json").exists()


def _write_doc(tmp_path, undefined_link: bool) -> Path:
    """A document whose only possible error is a chunk linking an undefined entity."""
    link = "entity:nowhere" if undefined_link else "entity:helm"
    doc = tmp_path / ("bad.md" if undefined_link else "good.md")
    doc.write_text(
        "---\ntitle: t\nentities:\n  - id: entity:helm\n    name: Helm\n    type: tool\n"
        "chunks:\n  - id: workflow:deploy\n    tags: [Helm]\n"
        f"    entities: [{link}]\n"
        "    context: How the team deploys a release of the service to the cluster with Helm charts.\n"
        "---\n\n<Chunk id=\"workflow:deploy\">\n## Deploy\n\nRun helm upgrade --install with the values file.\n</Chunk>\n",
        encoding="utf-8")
    return doc


@pytest.mark.parametrize("mode", [[], ["--json"], ["-j"], ["--level", "fix"], ["-j", "-l", "suggest"]])
def test_diagnose_exits_1_iff_an_error_finding(tmp_path, capsys, mode):
    bad, good = _write_doc(tmp_path, True), _write_doc(tmp_path, False)
    for doc, want in ((bad, 1), (good, 0)):
        p = run_here(capsys, "diagnose", doc, *mode, "--json")  # read the findings from JSON whatever the mode
        severities = {i["severity"] for i in json.loads(p.stdout)["issues"]}
        assert ("error" in severities) == (want == 1), severities
        q = run_here(capsys, "diagnose", doc, *mode)
        assert q.returncode == want, (doc.name, mode, q.stdout[-500:])
    folder = run_here(capsys, "diagnose", tmp_path, *mode)  # a folder: 1 when any document has an error
    assert folder.returncode == 1


def test_diagnose_short_options_are_the_long_ones(capsys):
    doc = str(SAMPLE_DOCS / "broken-example.ctxfst.md")
    assert main(["diagnose", doc, "--json", "--level", "fix"]) == 1
    long = capsys.readouterr().out
    assert main(["diagnose", doc, "-j", "-l", "fix"]) == 1
    assert capsys.readouterr().out == long and any("fix" in i for i in json.loads(long)["issues"])
    assert main(["diagnose", doc, "-l", "suggest"]) == 1
    assert "suggestion:" in capsys.readouterr().out


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
    from ctxfst_tui.cli import build_parser
    from ctxfst_tui.cli.workbench import serve_command

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
