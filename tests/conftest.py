"""Shared fixtures: the conformance folder beside the checkout and a set of hostile files."""
from __future__ import annotations

import inspect
import types
from pathlib import Path

import pytest
from real_model import MODEL_THREADS

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CONFORMANCE_DOCS = SHARED / "conformance" / "docs"
SAMPLE_DOCS = ROOT / "sample_docs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Files that must never make the tool print a traceback.
HOSTILE_FILES: dict[str, bytes] = {
    "empty.md": b"",
    "whitespace.md": b"  \n\n",
    "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01",
    "latin1.md": "---\ntitle: caf\xe9\n---\n\n<Chunk id=\"a:b\">x</Chunk>\n".encode("latin-1"),
    "truncated.md": b"---\ntitle: \"Cut short\"\nentities:\n  - id: entity:a\n    name: A\n",
    "chunks-mapping.md": b"---\ntitle: t\nchunks:\n  a:b:\n    context: x\n---\n\n<Chunk id=\"a:b\">\nx\n</Chunk>\n",
    "entities-scalar.md": b"---\nentities: 3\nchunks: [1, \"two\", {context: x}]\n---\n",
    "frontmatter-list.md": b"---\n- a\n- b\n---\nbody\n",
    "broken-yaml.md": b"---\ntitle: [unclosed\n---\nbody\n",
    "bom-only.md": b"\xef\xbb\xbf",
}


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    for name, data in HOSTILE_FILES.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


def conformance_docs() -> list[Path]:
    return sorted(CONFORMANCE_DOCS.glob("*.md")) if CONFORMANCE_DOCS.is_dir() else []


@pytest.fixture(autouse=True)
def _one_model_thread(monkeypatch):
    """Backends built with the default thread count (the CLI's, the app's) use MODEL_THREADS too."""
    monkeypatch.setattr("ctxfst_tui.core.llm.llama.default_threads", lambda: MODEL_THREADS)


@pytest.fixture(autouse=True)
def _private_config(tmp_path_factory, monkeypatch):
    """Every test gets its own config and state dirs: a developer's key remaps or theme must not
    change what tests see, and a test's quit must not write the real state file."""
    base = tmp_path_factory.mktemp("user-dirs")
    monkeypatch.setenv("CTXFST_TUI_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("CTXFST_TUI_STATE_DIR", str(base / "state"))


# ---------------------------------------------------------------- markers and xdist groups
# Markers: every test under tests/ui/ (and a Pilot test anywhere) is `ui`; the others by file name
# or fixture. `make test-fast` deselects ui, slow and model.
UI_FOLDER = Path(__file__).resolve().parent / "ui"
# Real processes, terminals, servers, wheel builds: seconds each.
SLOW_FILES = {"test_serve.py", "test_crash_guard.py", "test_packaging.py", "test_probe.py", "test_chunker_properties.py"}
# The real bundled model (llama.cpp in process or behind llama_cpp.server) or the real embedder.
# (test_openai_backend.py's fake-socket tests are plain tests; its real-server ones are marked by `server`.)
MODEL_FILES = {"test_llama_real.py", "test_model_discovery_server.py"}
# Module-scoped fixtures that load a model, start a server or build a wheel: their tests share one
# xdist worker (--dist loadgroup), so each is built once per run, not once per worker.
SHARED_FIXTURES = {"llama", "llm", "real_backend", "server", "embedder", "wheel", "served"}
MODEL_FIXTURES = {"llama", "llm", "real_backend", "server", "embedder", "embedding_server", "bundled_gguf",
                  "bundled_llama"}
# Session-scoped model fixtures (below): every test using one goes to the same xdist group.
SESSION_MODEL_FIXTURES = {"bundled_gguf", "bundled_llama"}


def _names(item: pytest.Item) -> frozenset[str]:
    """The global and attribute names a test's code uses, nested functions included (read from its
    code objects: getting and tokenizing every test's source cost a second a collection)."""
    code = getattr(getattr(item, "function", None), "__code__", None)
    names: set[str] = set()
    stack = [code] if code is not None else []
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return frozenset(names)


def _is_pilot_test(item: pytest.Item) -> bool:
    """A coroutine test that drives the App with Pilot (a few core files hold one or two)."""
    return inspect.iscoroutinefunction(getattr(item, "function", None)) and "run_test" in _names(item)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        name = item.path.name
        fixtures = set(getattr(item, "fixturenames", ()))
        if UI_FOLDER in item.path.parents or _is_pilot_test(item):
            item.add_marker(pytest.mark.ui)
        if name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if name in MODEL_FILES or fixtures & MODEL_FIXTURES or _uses_the_real_model(item):
            item.add_marker(pytest.mark.model)
        shared = sorted(fixtures & SHARED_FIXTURES)
        if fixtures & SESSION_MODEL_FIXTURES:
            item.add_marker(pytest.mark.xdist_group("bundled-model"))
        elif shared:
            item.add_marker(pytest.mark.xdist_group(f"{item.path.stem}-{shared[0]}"))
    # The Pilot tests first (seconds each), the quick ones after: xdist hands tests out in this
    # order, so the short ones fill the workers' ends instead of one long test running alone.
    items.sort(key=lambda item: item.get_closest_marker("ui") is None)


def _uses_the_real_model(item: pytest.Item) -> bool:
    """Tests that build the real backend themselves (no shared fixture): they go through
    ``real_model.trusted``, the guard every real-model test uses."""
    return not {"trusted", "ensure_trusted"}.isdisjoint(_names(item))


@pytest.fixture
def retrieval_folder(tmp_path: Path) -> Path:
    """A copy of tests/fixtures/retrieval (a small CtxFST document and its queries.yaml)."""
    import shutil

    shutil.copytree(FIXTURES / "retrieval", tmp_path, dirs_exist_ok=True)
    return tmp_path


def held_session(folder: Path):
    """A Session holding every document of ``folder``, as the workbench holds them."""
    from ctxfst_tui.core.workspace.workspace import Workspace
    from ctxfst_tui.services.session import Session

    session = Session(folder)
    session.adopt(Workspace.load(folder))
    return session


# ---------------------------------------------------------------- the real bundled model, once per session
@pytest.fixture(scope="session")
def model_hashes(tmp_path_factory):
    """One file-hash cache for the session: the 250 MB model is hashed once, not once per backend."""
    from ctxfst_tui.core.llm import CompletionCache

    return CompletionCache(tmp_path_factory.mktemp("model-hashes") / "hashes.sqlite")


@pytest.fixture(scope="session")
def bundled_gguf(model_hashes):
    """The bundled Gemma 3 270M GGUF (assembled and its sha256 checked once), after its self-test in
    a child: a native crash fails the tests using it, not the run."""
    from real_model import trusted

    from ctxfst_tui.core.llm.bundled import bundled_model_path

    return trusted(bundled_model_path(), model_hashes)


@pytest.fixture(scope="session")
def bundled_llama(bundled_gguf, model_hashes):
    """The bundled model loaded in-process once per session (no completion cache: every call reaches
    llama.cpp; wrap it in a fresh ``CachedBackend`` to test caching). Context 2048, 2 threads,
    temperature 0 (the defaults): outputs do not depend on what ran before (``LlamaBackend._prefill``)."""
    from real_model import trusted

    from ctxfst_tui.core.llm.llama import LlamaBackend

    backend = trusted(LlamaBackend(n_ctx=2048, n_threads=MODEL_THREADS, max_tokens=32, hash_cache=model_hashes))
    backend.load()
    yield backend
    backend.close()
