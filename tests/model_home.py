"""Models where people keep them, for the model discovery tests of the core, the CLI and the settings
screen: real GGUF files, small (a valid GGUF v3 header written byte by byte from the format's own
layout, no library), a home folder laid out as Hugging Face, LM Studio, Ollama and ``~/models`` lay
theirs out, and a real HTTP server on 127.0.0.1 that lists models as an OpenAI-compatible one does."""
from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import socket
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

UINT32, BOOL, STRING, ARRAY, UINT64 = 4, 7, 8, 9, 10


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def _value(value: Any) -> bytes:
    """(type, payload) of a metadata value: str, bool, int (uint32), list of str or of int."""
    if isinstance(value, bool):
        return struct.pack("<I", BOOL) + struct.pack("<?", value)
    if isinstance(value, int):
        return struct.pack("<I", UINT32) + struct.pack("<I", value)
    if isinstance(value, str):
        return struct.pack("<I", STRING) + _string(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return struct.pack("<IIQ", ARRAY, STRING, len(value)) + b"".join(_string(v) for v in value)
    if isinstance(value, list):
        return struct.pack("<IIQ", ARRAY, UINT32, len(value)) + b"".join(struct.pack("<I", v) for v in value)
    raise TypeError(value)


def gguf_bytes(metadata: dict[str, Any], *, tensors: int = 0, payload: int = 0) -> bytes:
    """A GGUF v3 file: magic, version, tensor and key counts, the key-value pairs, then ``payload``
    bytes standing for the tensor data (never read by discovery)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, tensors, len(metadata))
    body = b"".join(_string(k) + _value(v) for k, v in metadata.items())
    data = head + body
    data += b"\0" * (-len(data) % 32)  # general.alignment's default
    return data + bytes(range(256)) * (payload // 256) + b"\0" * (payload % 256)


VOCAB = [f"tok{n}" for n in range(3000)]  # a token list to skip, as in every real model


def model_metadata(name: str, *, template: bool, arch: str = "llama", context: int = 4096) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "general.architecture": arch,
        "general.name": name,
        f"{arch}.context_length": context,
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": VOCAB,
        "tokenizer.ggml.token_type": [1] * len(VOCAB),
    }
    if template:
        meta["tokenizer.chat_template"] = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
    return meta


def write_gguf(path: Path, name: str = "tiny", *, template: bool = True, payload: int = 4096, **kw: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gguf_bytes(model_metadata(name, template=template, **kw), payload=payload))
    return path


@dataclass
class ModelHome:
    """Where each file of :func:`model_home` is."""

    home: Path
    hf_snapshot: Path  # Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf, a symlink into blobs/
    hf_blob: Path
    lmstudio: Path  # without a chat template
    ollama_blob: Path
    ollama_manifests: Path
    broken: Path  # ~/models/broken.gguf: cut short in its token list
    garbage: Path  # ~/models/garbage.gguf: not GGUF at all
    mine: Path  # ~/models/mine/base-q8.gguf, no template
    linked: Path  # ~/models/same-as-hf.gguf -> the HF blob


def model_home(root: Path) -> ModelHome:
    """A home folder with models where the tools people use keep them (no environment needed:
    ``HOME`` pointed at it finds them all)."""
    home = root / "home"
    hub = home / ".cache" / "huggingface" / "hub" / "models--Qwen--Tiny-Instruct-GGUF"
    data = gguf_bytes(model_metadata("Tiny Instruct", template=True), payload=8192)
    blob = hub / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True)
    blob.write_bytes(data)
    snapshots = []
    for rev in ("1111111", "2222222"):  # two revisions, one blob: listed once
        snap = hub / "snapshots" / rev / "tiny-instruct-q4.gguf"
        snap.parent.mkdir(parents=True)
        os.symlink(os.path.relpath(blob, snap.parent), snap)
        snapshots.append(snap)
    (hub / "refs").mkdir()
    (hub / "refs" / "main").write_text("2222222")

    lmstudio = write_gguf(home / ".lmstudio" / "models" / "lmstudio-community" / "Base-GGUF" / "base-q4.gguf",
                          "Base", template=False, payload=2048)
    write_gguf(home / ".lmstudio" / "models" / "lmstudio-community" / "Vision-GGUF" / "mmproj-vision.gguf",
               "Projector", template=False, arch="clip")  # the image half of a vision model: not listed

    ollama = home / ".ollama" / "models"
    odata = gguf_bytes(model_metadata("Llama Chat", template=True, context=8192), payload=16384)
    digest = hashlib.sha256(odata).hexdigest()
    oblob = ollama / "blobs" / f"sha256-{digest}"
    oblob.parent.mkdir(parents=True)
    oblob.write_bytes(odata)
    (ollama / "blobs" / "sha256-aaaa").write_text('{"template": "not a model"}')
    manifests = ollama / "manifests" / "registry.ollama.ai" / "library"
    manifest = {"schemaVersion": 2, "layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": len(odata)},
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:aaaa", "size": 27}]}
    for tag in ("latest", "1b"):  # two tags, one blob: listed once, the other as an alias
        (manifests / "llama-chat").mkdir(parents=True, exist_ok=True)
        (manifests / "llama-chat" / tag).write_text(json.dumps(manifest))
    (manifests / "gone").mkdir()
    gone = dict(manifest, layers=[{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + "0" * 64}])
    (manifests / "gone" / "latest").write_text(json.dumps(gone))

    models = home / "models"
    whole = gguf_bytes(model_metadata("Broken", template=True), payload=0)
    broken = models / "broken.gguf"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(whole[: len(whole) // 2])  # cut inside the token list
    garbage = models / "garbage.gguf"
    garbage.write_bytes(b"<html>not a model</html>")
    mine = write_gguf(models / "mine" / "base-q8.gguf", "Mine", template=False, payload=1024)
    linked = models / "same-as-hf.gguf"
    os.symlink(blob, linked)
    return ModelHome(home, snapshots[0], blob, lmstudio, oblob, ollama / "manifests", broken, garbage, mine, linked)


def private_home(monkeypatch, home: Path) -> None:
    """Point HOME at ``home`` and drop what would send discovery elsewhere."""
    monkeypatch.setenv("HOME", str(home))
    for var in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS"):
        monkeypatch.delenv(var, raising=False)


def isolated_model_home(tmp_path: Path, monkeypatch) -> ModelHome:
    """``model_home`` under ``tmp_path`` as HOME, with private self-test verdicts and completion
    cache: what every discovery test starts from."""
    from ctxfst_tui.core.llm import probe

    layout = model_home(tmp_path)
    private_home(monkeypatch, layout.home)
    monkeypatch.setenv(probe.ENV_CACHE, str(tmp_path / "verdicts" / "probe.json"))
    monkeypatch.setenv("CTXFST_TUI_COMPLETION_CACHE", str(tmp_path / "completions.sqlite"))
    return layout


class _ListsModels(http.server.BaseHTTPRequestHandler):
    ids: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path.rstrip("/") != "/v1/models":
            self.send_error(404)
            return
        body = json.dumps({"object": "list", "data": [{"id": i, "object": "model", "owned_by": "test"} for i in self.ids]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def models_server(ids: list[str]) -> Iterator[str]:
    """A real HTTP server on a free port of 127.0.0.1 answering ``GET /v1/models`` with ``ids``
    (what Ollama or vLLM answer); yields its base URL ``http://127.0.0.1:PORT/v1``."""
    handler = type("Handler", (_ListsModels,), {"ids": list(ids)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a server stuck loading a model)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()
