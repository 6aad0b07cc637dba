"""Model discovery against a real ``llama_cpp.server`` (the bundled model) on 127.0.0.1: the
server is found, its ``/v1/models`` listed, the pick tried and used for a real completion, and
``ctxfst-tui models`` prints it. Marked ``model`` (conftest MODEL_FILES)."""
from __future__ import annotations

import httpx
import pytest
from real_model import MODEL_THREADS

from ctxfst_tui import config as cfg
from ctxfst_tui.cli import main
from ctxfst_tui.core.llm.discovery import ask_servers, discover, try_model
from ctxfst_tui.core.llm.openai import OpenAIBackend
from llama_server import llama_server
from model_home import private_home

ALIAS = "gemma-3-270m-test"


@pytest.fixture(scope="module")
def server(bundled_gguf):
    """A real llama_cpp.server serving the bundled model under an alias, as people run it."""
    with llama_server(bundled_gguf, ["--n_ctx", "512", "--n_threads", str(MODEL_THREADS), "--n_threads_batch", str(MODEL_THREADS), "--model_alias", ALIAS]) as base:
        yield base


def test_a_real_llama_cpp_server_is_found_listed_tried_and_used(server, tmp_path, monkeypatch):
    private_home(monkeypatch, tmp_path / "home")
    served = [d["id"] for d in httpx.get(f"{server}/v1/models", timeout=10).json()["data"]]
    assert served == [ALIAS]  # what the server itself says
    found = discover(ports=False, endpoint=server)
    [model] = [m for m in found.models if m.kind == "server"]
    assert (model.name, model.served, model.location, model.place, model.usable) == (
        ALIAS, ALIAS, f"{server}/v1", "configured endpoint", True)
    assert found.servers == [f"{server}/v1"] and found.notes == []
    # on a usual port it is found the same way, by its answer
    models, asked, notes = ask_servers([("llama.cpp server port 8080", f"{server}/v1", False)])
    assert [(m.served, m.place) for m in models] == [(ALIAS, "llama.cpp server port 8080")] and notes == []
    # the pick: asked again, then its settings run a real completion
    tried = try_model(model)
    assert tried.ok and tried.message == f"{ALIAS} answers at {server}/v1"
    settings = model.settings()
    backend = OpenAIBackend(settings.endpoint, settings.model, api="completions", retries=0)
    answer = backend.complete("Q: What is the capital of France?\nA: The capital of France is", max_tokens=4)
    assert "paris" in answer.text.lower()
    assert found.current(settings) is model


def test_ctxfst_tui_models_prints_the_real_server(server, tmp_path, monkeypatch, capsys):
    private_home(monkeypatch, tmp_path / "home")
    path = cfg.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[discovery]\nports = false\nendpoint = "{server}"\n', encoding="utf-8")
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert f"  server   {ALIAS}\n           {server}/v1 (configured endpoint)\n" in out
    assert f"Asked GET /v1/models of {server.removeprefix('http://')}: 1 answered." in out
