"""The model self-test before trust: a one-token completion in a child process.

The failure paths use real child processes, never mocks: scripts (``CTXFST_TUI_PROBE_COMMAND``)
that really kill themselves with SIGSEGV, hang until killed, or exit with an error. Each script
appends a line to a counter file, so "the second call ran no child" is read from that file, not
from timings. This machine's CPU does not crash the real build, so the self-killing child is the
proof of the crash path; the real probe of the bundled model runs too when llama_cpp is installed.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from real_model import MODEL_THREADS

from ctxfst_tui.cli import main
from ctxfst_tui.core.llm import CachedBackend, CompletionCache, ModelError, ModelNotFound, ModelUnavailable
from ctxfst_tui.core.llm import probe
from ctxfst_tui.core.llm.llama import LlamaBackend

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
needs_llama = pytest.mark.skipif(not HAS_LLAMA, reason="llama_cpp is not installed")

SCRIPTS = {
    # each gets: <counter file> <model path>
    "crash": """
        import os, signal, sys
        with open(sys.argv[1], "a") as fh:
            fh.write(f"{os.getpid()} {sys.argv[-1]}\\n")
        os.kill(os.getpid(), signal.SIGSEGV)
    """,
    "bus": """
        import os, signal, sys
        with open(sys.argv[1], "a") as fh:
            fh.write(f"{os.getpid()} {sys.argv[-1]}\\n")
        os.kill(os.getpid(), signal.SIGBUS)
    """,
    "oom": """
        import os, signal, sys
        with open(sys.argv[1], "a") as fh:
            fh.write(f"{os.getpid()} {sys.argv[-1]}\\n")
        os.kill(os.getpid(), signal.SIGKILL)
    """,
    "hang": """
        import os, subprocess, sys, time
        grandchild = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(3600)"])
        with open(sys.argv[1], "a") as fh:
            fh.write(f"{os.getpid()} {grandchild.pid} {sys.argv[-1]}\\n")
        time.sleep(3600)
    """,
    "error": """
        import os, sys
        with open(sys.argv[1], "a") as fh:
            fh.write(f"{os.getpid()} {sys.argv[-1]}\\n")
        print("loading tensors...", file=sys.stderr)
        print("ValueError: tensor 'blk.0.attn_q.weight' has wrong size", file=sys.stderr)
        sys.exit(3)
    """,
    "ok": """
        import json, os, sys
        with open(sys.argv[1], "a") as fh:
            fh.write(f"{os.getpid()} {sys.argv[-1]}\\n")
        print(json.dumps({"ok": True, "system_info": "CPU : FAKE = 1"}))
    """,
}

DOC = """\
---
title: "Orders service runbook"
chunks:
  - id: ops:deploy
    tags: [Deploy]
  - id: ops:cache
    tags: [Cache]
---

# Orders service runbook

<Chunk id="ops:deploy">
## Deploy

Run `helm upgrade --install orders ./chart --atomic`. The release rolls back by itself when pods are not ready.
</Chunk>

<Chunk id="ops:cache">
## Cache

Sessions live in Redis with the `allkeys-lru` eviction policy.
</Chunk>
"""


class Probe:
    """A scripted probe command installed through the environment, and its counter file. The scripts
    need only the standard library: ``python -S`` (no site-packages scan) starts them in a fraction
    of the time; they die, hang or fail just the same."""

    def __init__(self, tmp: Path, monkeypatch, kind: str) -> None:
        self.script = tmp / f"probe_{kind}.py"
        self.script.write_text(textwrap.dedent(SCRIPTS[kind]), encoding="utf-8")
        self.counter = tmp / f"probe_{kind}.runs"
        self.command = f"{sys.executable} -S {self.script} {self.counter}"
        monkeypatch.setenv(probe.ENV_COMMAND, self.command)

    @property
    def runs(self) -> list[list[str]]:
        if not self.counter.exists():
            return []
        return [line.split() for line in self.counter.read_text().splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def _private_probe_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(probe.ENV_CACHE, str(tmp_path / "verdicts" / "probe.json"))
    monkeypatch.setenv("CTXFST_TUI_COMPLETION_CACHE", str(tmp_path / "completions.sqlite"))
    monkeypatch.delenv(probe.ENV_COMMAND, raising=False)
    monkeypatch.delenv(probe.ENV_TIMEOUT, raising=False)


def fake_gguf(tmp: Path, name: str = "fake.gguf", body: bytes = b"\0" * 64) -> Path:
    """A file llama.cpp would refuse (or choke on): the GGUF magic, then nothing real."""
    path = tmp / name
    path.write_bytes(b"GGUF" + body)
    return path


def backend(path: Path, tmp: Path, **kw) -> LlamaBackend:
    return LlamaBackend(path, n_ctx=256, hash_cache=CompletionCache(tmp / "hashes.sqlite"), **kw)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for a reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


# ---------------------------------------------------------------- the outcomes


@needs_llama
def test_a_child_that_dies_of_sigsegv_makes_the_model_unavailable_and_it_is_never_loaded(tmp_path, monkeypatch):
    p = Probe(tmp_path, monkeypatch, "crash")
    model = fake_gguf(tmp_path)
    b = backend(model, tmp_path)
    with pytest.raises(ModelUnavailable) as exc:
        b.load()
    message = str(exc.value)
    assert message == ("llama.cpp crashed (SIGSEGV) running fake.gguf on this CPU: rebuild with `make rebuild-llama`, "
                       "or use --endpoint URL")
    assert isinstance(exc.value, ModelNotFound) and isinstance(exc.value, ModelError)
    assert not b.loaded and b.verdict.outcome == "crashed" and b.verdict.signal == "SIGSEGV"
    assert len(p.runs) == 1 and p.runs[0][-1] == str(model)
    # had llama.cpp loaded these 68 bytes in-process it would have said "could not load"; it never runs:
    # a complete() asks the kept verdict again and fails the same way, with no new child
    with pytest.raises(ModelUnavailable, match="SIGSEGV"):
        b.complete("hello", max_tokens=1)
    assert not b.loaded and len(p.runs) == 1
    kept = json.loads(Path(os.environ[probe.ENV_CACHE]).read_text())["verdicts"]
    assert [v["outcome"] for v in kept.values()] == ["crashed"]


@needs_llama
@pytest.mark.parametrize("kind, words", [("bus", "llama.cpp crashed (SIGBUS) running fake.gguf on this CPU"),
                                         ("oom", "llama.cpp was killed (SIGKILL, out of memory?) running fake.gguf")])
def test_other_signals_are_named(tmp_path, monkeypatch, kind, words):
    Probe(tmp_path, monkeypatch, kind)
    with pytest.raises(ModelUnavailable) as exc:
        backend(fake_gguf(tmp_path), tmp_path).load()
    assert str(exc.value).startswith(words) and "--endpoint URL" in str(exc.value)


@needs_llama
def test_a_hanging_child_is_killed_with_its_children_at_the_timeout(tmp_path, monkeypatch):
    p = Probe(tmp_path, monkeypatch, "hang")
    b = backend(fake_gguf(tmp_path), tmp_path, probe_timeout=1.0)
    t0 = time.monotonic()
    with pytest.raises(ModelUnavailable) as exc:
        b.load()
    took = time.monotonic() - t0
    assert str(exc.value) == ("llama.cpp did not finish a one-token test of fake.gguf within 1 s (the test was stopped): "
                              "rebuild with `make rebuild-llama`, or use --endpoint URL (or raise CTXFST_TUI_PROBE_TIMEOUT)")
    assert 0.9 < took < 20
    [(child, grandchild, _model)] = p.runs
    deadline = time.monotonic() + 5
    while (alive(int(child)) or alive(int(grandchild))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(int(child)) and not alive(int(grandchild))  # the whole process group went
    assert not b.loaded
    # a hang is not kept: the next try (maybe on a less busy machine) probes again
    monkeypatch.setenv(probe.ENV_TIMEOUT, "0.5")
    with pytest.raises(ModelUnavailable, match="within 0.5 s"):
        backend(fake_gguf(tmp_path), tmp_path).load()
    assert len(p.runs) == 2


@needs_llama
def test_a_child_that_exits_with_an_error_gives_its_last_line(tmp_path, monkeypatch):
    Probe(tmp_path, monkeypatch, "error")
    with pytest.raises(ModelUnavailable) as exc:
        backend(fake_gguf(tmp_path), tmp_path).load()
    assert str(exc.value) == ("llama.cpp could not run fake.gguf: ValueError: tensor 'blk.0.attn_q.weight' has wrong size: "
                              "use another model with --model, or use --endpoint URL")


def test_a_file_that_is_not_gguf_is_refused_before_any_child(tmp_path, monkeypatch):
    p = Probe(tmp_path, monkeypatch, "ok")
    bad = tmp_path / "notes.gguf"
    bad.write_text("just text")
    with pytest.raises(ModelNotFound, match="is not a GGUF model file"):
        backend(bad, tmp_path).self_test()
    assert p.runs == []


# ---------------------------------------------------------------- the kept verdicts


@needs_llama
def test_a_kept_verdict_spares_the_child_and_a_new_model_is_probed_again(tmp_path, monkeypatch):
    p = Probe(tmp_path, monkeypatch, "ok")
    model = fake_gguf(tmp_path)
    hashes = CompletionCache(tmp_path / "hashes.sqlite")
    first = probe.self_test(model, hash_cache=hashes)
    assert first.ok and not first.cached and first.system_info == "CPU : FAKE = 1" and len(p.runs) == 1
    again = probe.self_test(model, hash_cache=hashes)
    assert again.ok and again.cached and len(p.runs) == 1
    assert probe.cached_verdict(model, hash_cache=hashes).ok
    # a backend made later (another job, another process) reads the same file: no child
    b = LlamaBackend(model, hash_cache=hashes)
    assert b.self_test().cached and len(p.runs) == 1

    other = fake_gguf(tmp_path, "other.gguf", b"\1" * 64)  # another sha256: another verdict
    assert not probe.self_test(other, hash_cache=hashes).cached and len(p.runs) == 2
    model.write_bytes(b"GGUF" + b"\2" * 80)  # the same path with new bytes is a new model
    assert not probe.self_test(model, hash_cache=hashes).cached and len(p.runs) == 3
    assert probe.self_test(model, hash_cache=hashes).cached and len(p.runs) == 3
    assert probe.forget(model, hash_cache=hashes) and not probe.self_test(model, hash_cache=hashes).cached
    assert len(p.runs) == 4


@needs_llama
def test_the_verdict_key_follows_build_model_cpu_and_command(tmp_path, monkeypatch):
    model = fake_gguf(tmp_path)
    parts = probe.key_parts(model)
    assert parts["llama_cpp"] == probe.llama_build().version != "unknown"
    assert parts["model_sha256"] == CompletionCache(tmp_path / "h.sqlite").file_sha256(model)
    assert parts["libraries_sha256"] and probe.llama_build().libraries  # libllama and ggml found on disk
    assert any(lib.name.startswith("libllama") for lib in probe.llama_build().libraries)
    key = probe.verdict_key(model)
    monkeypatch.setattr(probe, "cpu_flags", lambda: "fpu sse2 avx2 amx_tile")
    assert probe.verdict_key(model) != key  # another CPU
    monkeypatch.undo()
    monkeypatch.setenv(probe.ENV_CACHE, str(tmp_path / "verdicts" / "probe.json"))
    assert probe.verdict_key(model) == key
    Probe(tmp_path, monkeypatch, "ok")
    assert probe.verdict_key(model) != key  # a test command never stands for the real probe


@needs_llama
def test_a_damaged_verdict_file_is_probed_again_and_rewritten(tmp_path, monkeypatch):
    p = Probe(tmp_path, monkeypatch, "ok")
    cache = Path(os.environ[probe.ENV_CACHE])
    cache.parent.mkdir(parents=True)
    cache.write_text("{not json")
    assert probe.self_test(fake_gguf(tmp_path)).ok and len(p.runs) == 1
    assert json.loads(cache.read_text())["version"] == 1
    assert not [f for f in cache.parent.iterdir() if f.name.endswith(".tmp")]  # written through a temp file


# ---------------------------------------------------------------- the command line


@needs_llama
@pytest.mark.parametrize("command", ["contextualize", "extract", "summarize"])
def test_the_cli_prints_one_line_and_exits_1(tmp_path, monkeypatch, capsys, command):
    p = Probe(tmp_path, monkeypatch, "crash")
    model = fake_gguf(tmp_path)
    doc = tmp_path / "runbook.md"
    doc.write_text(DOC, encoding="utf-8")
    before = doc.read_bytes()
    argv = {"contextualize": ["contextualize", str(doc)], "extract": ["entities", "extract", str(doc), "--write"],
            "summarize": ["summarize", str(doc), "-o", str(tmp_path / "out.json")]}[command]
    status = main([*argv, "--model", str(model), "--no-cache"])
    out, err = capsys.readouterr()
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "llama.cpp crashed (SIGSEGV) running fake.gguf on this CPU: rebuild with `make rebuild-llama`" in lines[0]
    assert out == "" and doc.read_bytes() == before and len(p.runs) == 1
    assert not (tmp_path / "out.json").exists()


@needs_llama
def test_the_cli_runs_as_before_when_the_probe_passes(tmp_path, monkeypatch, capsys):
    """A passing probe changes nothing: here llama.cpp itself then refuses the fake file, in-process."""
    Probe(tmp_path, monkeypatch, "ok")
    doc = tmp_path / "runbook.md"
    doc.write_text(DOC, encoding="utf-8")
    status = main(["contextualize", str(doc), "--model", str(fake_gguf(tmp_path)), "--no-cache"])
    out, err = capsys.readouterr()
    assert status == 1 and "could not load" in out + err and "crashed" not in out + err


# ---------------------------------------------------------------- a crash cannot end a test run


@needs_llama
def test_a_native_crash_fails_one_test_and_the_run_goes_on(tmp_path, monkeypatch):
    """A pytest run in a child: its first test meets a model whose self-test dies of SIGSEGV. Without
    the probe that would be ``Fatal Python error: Segmentation fault`` and the end of the run; with it
    the test fails with the probe's message and the next one runs."""
    p = Probe(tmp_path, monkeypatch, "crash")
    model = fake_gguf(tmp_path)
    suite = tmp_path / "test_inner.py"
    suite.write_text(textwrap.dedent(f"""
        from ctxfst_tui.core.llm.llama import LlamaBackend

        def test_uses_the_model():
            LlamaBackend({str(model)!r}, n_ctx=256).complete("The capital of France is", max_tokens=4)

        def test_after_it():
            assert True
    """), encoding="utf-8")
    # the child needs pytest alone: no plugin of this venv is loaded (they cost seconds to import)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                          "--rootdir", str(tmp_path), str(suite)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=240)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "Fatal Python error" not in out
    assert "1 failed, 1 passed" in out
    assert "ModelUnavailable: llama.cpp crashed (SIGSEGV) running fake.gguf on this CPU" in out
    assert len(p.runs) == 1


def test_pytest_timeout_bounds_every_test(pytestconfig):
    assert pytestconfig.getini("timeout") == "300" and pytestconfig.getini("timeout_method") == "signal"


# ---------------------------------------------------------------- the real probe


@needs_llama
def test_the_real_probe_passes_on_the_bundled_model_is_kept_and_a_backend_behind_it_completes(tmp_path):
    """One cold real probe (the costly child), then its kept verdict lets a real backend load and complete."""
    from ctxfst_tui.core.llm.bundled import bundled_model_path

    model = bundled_model_path()
    hashes = CompletionCache(tmp_path / "hashes.sqlite")
    hashes.file_sha256(model)  # hash the 250 MB once, outside the timings
    t0 = time.perf_counter()
    cold = probe.self_test(model, hash_cache=hashes)
    cold_s = time.perf_counter() - t0
    assert cold.ok, cold.message
    assert not cold.cached and cold.message == "" and cold.seconds > 0
    assert "CPU" in cold.system_info or "AVX" in cold.system_info  # llama_print_system_info() from the child
    t0 = time.perf_counter()
    kept = probe.self_test(model, hash_cache=hashes)
    kept_s = time.perf_counter() - t0
    assert kept.ok and kept.cached
    print(f"\nreal self-test of {model.name}: cold {cold_s:.2f} s (child {cold.seconds:.2f} s), kept {kept_s * 1000:.1f} ms")
    info, problem = probe.system_info()
    assert problem is None and info == cold.system_info

    # a real backend behind the passing probe (its kept verdict: no second model-loading child) completes
    b = CachedBackend(LlamaBackend(n_ctx=256, n_threads=MODEL_THREADS, hash_cache=hashes), CompletionCache(tmp_path / "c.sqlite"))
    try:
        b.inner.self_test()
    except ModelUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    c = b.complete("The capital of France is", max_tokens=2)
    assert b.inner.loaded and b.inner.verdict.ok and c.completion_tokens > 0
    assert b.info()["self_test"] == "ok"
    b.inner.close()


def test_probe_child_refuses_a_missing_model_in_one_line(tmp_path):
    if not HAS_LLAMA:
        pytest.skip("llama_cpp is not installed")
    run = subprocess.run([sys.executable, "-m", "ctxfst_tui.core.llm.probe", str(tmp_path / "none.gguf")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 3
    assert run.stderr.strip().splitlines()[-1].startswith("could not load none.gguf: ")


def test_the_probe_and_the_doctor_import_neither_textual_nor_llama_cpp():
    code = "import sys, ctxfst_tui.core.llm.probe, ctxfst_tui.core.doctor; print('textual' in sys.modules, 'llama_cpp' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["False", "False"], run.stderr


# ---------------------------------------------------------------- the workbench


# ---------------------------------------------------------------- cancelling a running self-test


def _wait_gone(*pids: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(alive(p) for p in pids)


@needs_llama
def test_a_cancel_event_kills_the_running_self_test_and_keeps_no_verdict(tmp_path, monkeypatch):
    import threading

    from ctxfst_tui.core.llm import Cancelled

    p = Probe(tmp_path, monkeypatch, "hang")
    b = backend(fake_gguf(tmp_path), tmp_path, probe_timeout=60)
    cancel = threading.Event()
    threading.Thread(target=lambda: (_wait_for_runs(p), cancel.set()), daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        b.load(cancel=cancel)
    took = time.monotonic() - t0
    [(child, grandchild, _model)] = p.runs
    assert took < 10  # the 60 s timeout was not waited for
    assert _wait_gone(int(child), int(grandchild))  # the whole process group went
    assert not b.loaded and b.verdict is None
    assert probe.kept_verdicts() == {}  # a cancelled test is no verdict


def _wait_for_runs(p: Probe, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not p.runs and time.monotonic() < deadline:
        time.sleep(0.02)


@needs_llama
async def test_the_workbench_cancels_a_running_self_test_then_shows_a_failed_one_as_one_notification(tmp_path, monkeypatch):
    """The real LlamaBackend (through the app's default backend factory) on a fake GGUF, in one app:
    (1) a probe child that sleeps (60 s timeout): escape ends the job as cancelled within about a
    second, the child and its own child are gone, and no verdict is kept (the next job probes again);
    (2) the next job's self-test child dies of SIGSEGV: one error notification, the job ends, the
    model is never loaded, a third job asks the kept verdict (no new child) and the app lives on."""
    from pilot import SIZE, open_document, settle, started
    from test_model_jobs import RUNBOOK, start_contextualize
    from pilot import notifications, until

    from ctxfst_tui.ui.app import WorkbenchApp
    from ctxfst_tui.core.llm.settings import ModelSettings

    hang = Probe(tmp_path, monkeypatch, "hang")
    monkeypatch.setenv(probe.ENV_TIMEOUT, "60")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "runbook.md").write_text(RUNBOOK, encoding="utf-8")
    model = fake_gguf(tmp_path)
    app = WorkbenchApp(folder, model_settings=ModelSettings("gguf", model_path=str(model), n_ctx=256))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await open_document(app, pilot, "runbook.md")
        seen = notifications(app, monkeypatch)

        # (1) escape while the self-test runs
        await start_contextualize(app, pilot)
        await until(pilot, lambda: bool(hang.runs), timeout=30)  # the self-test child is running
        [(child, grandchild, _model)] = hang.runs
        assert alive(int(child)) and app.job is not None
        await pilot.press("escape")
        took = await until(pilot, lambda: app.job is None, timeout=5)
        await settle(app, pilot)
        assert took < 2.0, took
        assert _wait_gone(int(child), int(grandchild), within=1.0)
        assert [t for t, _, s in seen if s == "error"] == []
        assert [t for t, _, _ in seen if t == "Cancelled"] == ["Cancelled"], seen
        assert not app.session.dirty_paths
        assert probe.kept_verdicts() == {}
        assert app.is_running and len(hang.runs) == 1

        # (2) the next job's self-test child dies of SIGSEGV
        crash = Probe(tmp_path, monkeypatch, "crash")
        seen.clear()
        await start_contextualize(app, pilot)
        await until(pilot, lambda: app.job is None, timeout=60)
        await settle(app, pilot)
        errors = [(t, m) for t, m, s in seen if s == "error"]
        assert errors == [("Contextualizing runbook.md: model error",
                           "llama.cpp crashed (SIGSEGV) running fake.gguf on this CPU: rebuild with `make rebuild-llama`, "
                           "or use --endpoint URL")]
        assert not app.session.dirty_paths and len(crash.runs) == 1
        info = app.models.info()  # the live backend's own info
        assert app.models.created and info["backend"] == "llama"
        assert info["loaded"] is False  # never loaded in-process
        # a second job asks the kept verdict: the same notification, no new child, still alive
        seen.clear()
        await start_contextualize(app, pilot)
        await until(pilot, lambda: app.job is None, timeout=60)
        await settle(app, pilot)
        assert [m for _, m, s in seen if s == "error"] == [errors[0][1]] and len(crash.runs) == 1
        assert len(hang.runs) == 1 and app.is_running
