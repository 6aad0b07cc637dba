"""``ctxfst-tui doctor``: one screen for a bug report — versions, the CPU and the llama.cpp build, the
models with their self-test verdicts, the paths, the folder's index and journals. Self-tests run in
real child processes (the real probe, or a script that really dies of SIGSEGV)."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import sys
from pathlib import Path

import pytest

from ctxfst_tui.cli import main
from ctxfst_tui.core.llm import probe

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
needs_llama = pytest.mark.skipif(not HAS_LLAMA, reason="llama_cpp is not installed")

CRASH = """
import os, signal, sys
with open(sys.argv[1], "a") as fh:
    fh.write(" ".join(sys.argv[2:]) + "\\n")
os.kill(os.getpid(), signal.SIGSEGV)
"""


@pytest.fixture(autouse=True)
def _private_probe_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(probe.ENV_CACHE, str(tmp_path / "verdicts" / "probe.json"))
    monkeypatch.setenv("CTXFST_TUI_COMPLETION_CACHE", str(tmp_path / "completions.sqlite"))
    monkeypatch.delenv(probe.ENV_COMMAND, raising=False)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    f = tmp_path / "docs"
    f.mkdir()
    (f / "a.md").write_text("---\ntitle: A\n---\n\n<Chunk id=\"a:one\">\nText.\n</Chunk>\n", encoding="utf-8")
    return f


def crashing_probe(tmp_path: Path, monkeypatch) -> Path:
    script = tmp_path / "crash.py"
    script.write_text(CRASH, encoding="utf-8")
    counter = tmp_path / "crash.runs"
    monkeypatch.setenv(probe.ENV_COMMAND, f"{sys.executable} {script} {counter}")
    return counter


def configure_gguf(path: Path) -> Path:
    config = Path(os.environ["CTXFST_TUI_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[model]\nsource = "gguf"\nmodel_path = {json.dumps(str(path))}\nn_ctx = 2048\n', encoding="utf-8")
    return config


def doctor(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(["doctor", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_doctor_json_without_probes_names_versions_paths_and_the_folder(folder, capsys):
    (folder / ".ctxfst-index").mkdir()
    status, out, err = doctor(capsys, str(folder), "--no-probe", "--json")
    facts = json.loads(out)
    assert err == ""
    assert facts["python"]["version"] == platform.python_version() and facts["python"]["executable"] == sys.executable
    assert facts["textual"] == importlib.metadata.version("textual")
    assert facts["paths"]["config"] == str(Path(os.environ["CTXFST_TUI_CONFIG_DIR"]) / "config.toml")
    assert facts["paths"]["state"] == str(Path(os.environ["CTXFST_TUI_STATE_DIR"]) / "state.json")
    assert facts["paths"]["self_tests"] == os.environ[probe.ENV_CACHE]
    assert facts["paths"]["completions"] == os.environ["CTXFST_TUI_COMPLETION_CACHE"]
    assert facts["folder"]["path"] == str(folder.resolve())
    assert facts["folder"]["index"] == {"path": str(folder / ".ctxfst-index"), "exists": True}
    assert facts["models"]["configured"] == {"source": "bundled", "origin": None}
    assert facts["models"]["bundled"]["self_test"]["outcome"] == "not run"  # --no-probe runs no self-test
    assert not Path(os.environ[probe.ENV_CACHE]).exists()
    if HAS_LLAMA:
        llama = facts["llama_cpp"]
        assert llama["installed"] and llama["version"] == importlib.metadata.version("llama_cpp_python")
        assert any(name.startswith("libllama") for name in llama["libraries"])
        assert llama["system_info"] and "system_info_problem" not in llama
        assert status == 0


def test_doctor_reports_journals_of_unsaved_edits(folder, capsys):
    journal = pytest.importorskip("ctxfst_tui.core.workspace.journal")
    doc = folder / "a.md"
    entry = journal.JournalEntry(doc.resolve(), doc.read_bytes() + b"\nmore\n", journal.sha256(doc.read_bytes()), 1.0)
    target = journal.entry_file(folder, doc)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(entry.to_json()), encoding="utf-8")
    _, out, _ = doctor(capsys, str(folder), "--no-probe", "--json")
    journals = json.loads(out)["folder"]["journals"]
    assert journals["dir"] == str(journal.journal_dir(folder)) and journals["exists"]
    assert journals["pending"] == [{"document": "a.md", "conflict": False}]
    _, text, _ = doctor(capsys, str(folder), "--no-probe")
    assert f"  journals    1 with unsaved edits: a.md ({journal.journal_dir(folder)})" in text


@needs_llama
def test_doctor_shows_a_crashing_self_test_and_exits_1(folder, tmp_path, monkeypatch, capsys):
    counter = crashing_probe(tmp_path, monkeypatch)
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)
    config = configure_gguf(model)
    status, out, err = doctor(capsys, str(folder))
    assert status == 1 and err == ""
    assert (f"  configured  {model} (from {config})\n"
            f"              self-test: CRASHED: llama.cpp crashed (SIGSEGV) running mine.gguf on this CPU: "
            f"rebuild with `make rebuild-llama`, or use --endpoint URL") in out
    assert "built for: unknown (crashed (SIGSEGV))" in out  # the system info child crashed too
    runs = counter.read_text().splitlines()
    assert str(model) in runs and "--system-info" in runs
    # the verdict is kept: --no-probe shows it without a child
    status, out, _ = doctor(capsys, str(folder), "--no-probe", "--json")
    assert json.loads(out)["models"]["configured"]["self_test"]["outcome"] == "crashed"
    assert json.loads(out)["models"]["configured"]["self_test"]["cached"] is True
    assert counter.read_text().splitlines().count(str(model)) == 1
    # --reprobe tests again
    doctor(capsys, str(folder), "--reprobe")
    assert counter.read_text().splitlines().count(str(model)) == 2


def test_doctor_on_an_endpoint_and_a_missing_folder(folder, capsys):
    config = Path(os.environ["CTXFST_TUI_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[model]\nsource = "endpoint"\nendpoint = "http://127.0.0.1:8080/v1"\nmodel = "qwen"\n')
    _, out, _ = doctor(capsys, str(folder), "--no-probe")
    assert f"  configured  endpoint http://127.0.0.1:8080/v1 qwen (from {config})" in out
    status, out, err = doctor(capsys, str(folder / "nowhere"))
    assert status == 2 and out == "" and err.strip() == f"ctxfst-tui: {folder / 'nowhere'}: no such folder"


@needs_llama
def test_doctor_runs_the_real_self_test_of_the_bundled_model(folder, capsys):
    status, out, err = doctor(capsys, str(folder))
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith("ctxfst-tui ") and lines[0].endswith(" doctor")
    for label in ("python", "platform", "cpu", "textual", "llama_cpp"):
        assert any(line.startswith(f"{label} ") for line in lines), label
    assert any(line.strip().startswith("built for: ") and "= 1" in line for line in lines)
    bundled = next(i for i, line in enumerate(lines) if line.startswith("  bundled "))
    assert lines[bundled + 1].strip().startswith("self-test: ok in "), lines[bundled + 1]
    assert "  configured  the bundled model (nothing configured)" in lines
    for section in ("models", "paths", f"folder {folder.resolve()}"):
        assert section in lines
    assert f"  index       {folder / '.ctxfst-index'} absent" in lines
    assert status == 0
    assert len(lines) < 40  # one screen
    # the second run reads the kept verdict
    _, again, _ = doctor(capsys, str(folder), "--json")
    assert json.loads(again)["models"]["bundled"]["self_test"]["cached"] is True

